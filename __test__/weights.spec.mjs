// One weight for a sample everywhere (issue 14): its time (the gap to the next sample). summarize,
// jsprof report's percentages, pprof's values and labels, the Gecko sample weights, collapsed stacks and
// both flame graphs agree on a
// trace whose samples have unequal gaps and whose leaf frames are builtins called by a dependency.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { decodePprof } from './prod-helpers.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const jsprof = require(root)

// handler (app) -> express router (dependency) -> JSON.parse (builtin, no resource): 3 samples 1 ms
// apart; then idle for 1 sample lasting 9 ms; then app code alone, 2 samples of 1 ms.
const trace = {
  resources: ['file:///srv/app/server.js', 'file:///srv/app/node_modules/express/lib/router.js'],
  frames: [
    { name: 'handler', resourceId: 0, line: 1, column: 1 },
    { name: 'route', resourceId: 1, line: 5, column: 1 },
    { name: 'parse' },
  ],
  stacks: [{ frameId: 0 }, { frameId: 1, parentId: 0 }, { frameId: 2, parentId: 1 }],
  samples: [
    { timestamp: 0, stackId: 2 },
    { timestamp: 1, stackId: 2 },
    { timestamp: 2, stackId: 2 },
    { timestamp: 3 },
    { timestamp: 12, stackId: 0 },
    { timestamp: 13, stackId: 0 },
  ],
}

test('summarize, pprof values and pprof package labels give the same shares', () => {
  const rows = jsprof.summarize(trace, { by: 'package' })
  const total = rows.reduce((s, r) => s + r.selfTime, 0)
  const share = Object.fromEntries(rows.map((r) => [r.name, r.selfTime / total]))
  // The builtin's time is express's (its caller), by time: 3 ms of 14 (the idle gap weighs 9 ms).
  assert.equal(rows[0].name, '(idle)', 'sorted by self time, not by samples')
  const { profile } = decodePprof(jsprof.toPprof(trace))
  const strings = profile.stringTable.strings
  const byLabel = new Map()
  let cpu = 0
  for (const s of profile.sample) {
    const pkg = strings[Number(s.label.find((l) => strings[Number(l.key)] === 'package').str)]
    byLabel.set(pkg, (byLabel.get(pkg) || 0) + Number(s.value[1]))
    cpu += Number(s.value[1])
  }
  assert.ok(
    Math.abs(byLabel.get('express') / cpu - share.express) < 1e-9,
    `${byLabel.get('express') / cpu} vs ${share.express}`,
  )
  assert.ok(Math.abs(byLabel.get('(idle)') / cpu - share['(idle)']) < 1e-9)
  // The Firefox Profiler weighs each sample by its time too.
  const { samples } = jsprof.toGeckoProfile(trace).threads[0]
  assert.equal(samples.weightType, 'tracing-ms')
  assert.deepEqual(samples.weight, [1, 1, 1, 9, 1, 1])
  assert.equal(
    samples.weight.reduce((a, b) => a + b, 0),
    total,
  )
  // Collapsed stacks weigh the same time (in µs): the stacks through express's frame hold its share.
  const lines = jsprof
    .toCollapsed(trace)
    .trimEnd()
    .split('\n')
    .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))])
  const all = lines.reduce((a, [, n]) => a + n, 0)
  const viaExpress = lines.filter(([stack]) => stack.includes(';route (')).reduce((a, [, n]) => a + n, 0)
  assert.equal(all, total * 1000)
  assert.ok(Math.abs(viaExpress / all - share.express) < 1e-9, `${viaExpress / all} vs ${share.express}`)
  // So do both flame graphs: the SVG's tooltip and the HTML page's widths.
  assert.match(
    jsprof.toFlameGraph(trace),
    /<title>route \(\/srv\/app\/node_modules\/express\/lib\/router\.js:5:1\) \(3 ms, 3 samples, 21\.43%/,
  )
  const html = jsprof.toFlameGraph(trace, { format: 'html' })
  const data = JSON.parse(/<script type="application\/json" id="data">(.*?)<\/script>/s.exec(html)[1])
  const route = data.labels.findIndex((l) => l.startsWith('route ('))
  const node = data.nodes.label.indexOf(route)
  assert.ok(Math.abs(data.nodes.weight[node] / data.nodes.weight[0] - share.express) < 1e-9)
})

test('jsprof report: % and ms columns agree, and go tool pprof -tagfocus gives the same share', (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-weights-'))
  try {
    fs.writeFileSync(path.join(tmp, 't.json'), JSON.stringify(trace))
    const r = spawnSync(process.execPath, [path.join(root, 'bin', 'jsprof.js'), 'report', 't.json'], {
      cwd: tmp,
      encoding: 'utf8',
    })
    assert.equal(r.status, 0, r.stderr)
    const express = r.stdout.split('\n').find((l) => /express/.test(l))
    const [selfPct, selfMs] = express.trim().split(/\s+/)
    assert.equal(selfPct, '21.4%', express) // 3 of 14 ms
    assert.equal(selfMs, '3.0')
    if (spawnSync('go', ['version']).status !== 0) return t.skip('go is not installed (.ci/run installs golang-go)')
    fs.writeFileSync(path.join(tmp, 't.pb.gz'), jsprof.toPprof(trace))
    const top = spawnSync('go', ['tool', 'pprof', '-top', '-tagfocus', 'package=express', 't.pb.gz'], {
      cwd: tmp,
      encoding: 'utf8',
    })
    assert.equal(top.status, 0, top.stderr)
    assert.match(top.stdout, /accounting for 3ms, 21\.43% of 14ms total/)
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
})
