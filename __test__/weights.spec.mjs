// One weight for a sample everywhere (issue 14, issue 23): the time it stands for, by the trace's one rule
// (crates/jsprof-core/src/trace/weights.rs: the gap to the next sample within its run, at most two
// intervals; the last of a run one interval). summarize, jsprof report's percentages, pprof's values and
// labels, OTLP, the Gecko sample weights, speedscope, collapsed stacks and both flame graphs agree on a
// trace whose samples have unequal gaps and whose leaf frames are builtins called by a dependency, and on
// a trace cut out of a longer run (a request profile), where they agree with the sample counts.

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

// Sampled every 5 ms (the median gap): handler (app) -> express router (dependency) -> JSON.parse
// (builtin, no resource): 3 samples 1 ms apart (V8 catching up after a late tick); then idle for 1 sample
// lasting 9 ms (a late tick: less than two intervals); then app code alone, 4 samples 5 ms apart (the last
// one weighs the interval).
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
    { timestamp: 17, stackId: 0 },
    { timestamp: 22, stackId: 0 },
    { timestamp: 27, stackId: 0 },
  ],
}

test('summarize, pprof values and pprof package labels give the same shares', () => {
  const rows = jsprof.summarize(trace, { by: 'package' })
  const total = rows.reduce((s, r) => s + r.selfTime, 0)
  const share = Object.fromEntries(rows.map((r) => [r.name, r.selfTime / total]))
  // The builtin's time is express's (its caller), by time: 3 ms of 32 (the idle gap weighs 9 ms).
  const rank = (name) => rows.findIndex((r) => r.name === name)
  assert.ok(rank('(idle)') < rank('express'), 'sorted by self time, not by samples')
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
  assert.deepEqual(samples.weight, [1, 1, 1, 9, 5, 5, 5, 5])
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
    /<title>route \(\/srv\/app\/node_modules\/express\/lib\/router\.js:5:1\) \(3 ms, 3 samples, 9\.38%/,
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
    assert.equal(selfPct, '9.4%', express) // 3 of 32 ms
    assert.equal(selfMs, '3.0')
    if (spawnSync('go', ['version']).status !== 0) return t.skip('go is not installed (.ci/run installs golang-go)')
    fs.writeFileSync(path.join(tmp, 't.pb.gz'), jsprof.toPprof(trace))
    const top = spawnSync('go', ['tool', 'pprof', '-top', '-tagfocus', 'package=express', 't.pb.gz'], {
      cwd: tmp,
      encoding: 'utf8',
    })
    assert.equal(top.status, 0, top.stderr)
    assert.match(top.stdout, /accounting for 3ms, 9\.38% of 32ms total/)
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
})

// A request profile's shape (issue 23): sampled every 1 ms, but only inside the request's own windows,
// which lie hundreds of ms apart (other requests ran between them). Six samples stand for ~6 ms, not
// for the 620 ms between the first and the last.
const cut = {
  frames: trace.frames,
  jsprof: {
    sampleInterval: 1,
    windows: [
      [0, 2.5],
      [300, 301.2],
      [620, 620.4],
    ],
  },
  resources: trace.resources,
  samples: [
    { timestamp: 0.5, stackId: 2 },
    { timestamp: 1.5, stackId: 2 },
    { timestamp: 2.4, stackId: 2 },
    { timestamp: 300.3, stackId: 0 },
    { timestamp: 301.1, stackId: 0 },
    { timestamp: 620.2 },
  ],
  stacks: trace.stacks,
}
// The rule by hand: gaps within a window, the last sample of a window (and of the trace) 1 ms.
const cutWeights = [1, 0.9, 1, 0.8, 1, 1]
const cutTotal = 5.7

test('a cut trace (a request profile): every view weighs what its samples stand for, as their count says', () => {
  const close = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} vs ${b}`)
  const rows = jsprof.summarize(cut, { by: 'package' })
  close(
    rows.reduce((s, r) => s + r.selfTime, 0),
    cutTotal,
    'summarize',
  )
  close(rows.find((r) => r.name === 'express').selfTime, 2.9, 'express in summarize')
  const { profile } = decodePprof(jsprof.toPprof(cut))
  close(profile.sample.reduce((s, x) => s + Number(x.value[1]), 0) / 1e6, cutTotal, 'pprof cpu')
  assert.equal(Number(profile.period), 1e6, 'pprof period: the trace interval')
  const { samples } = jsprof.toGeckoProfile(cut).threads[0]
  assert.deepEqual(samples.weight, cutWeights)
  const [sp] = jsprof.toSpeedscope(cut).profiles
  close(
    sp.weights.reduce((a, b) => a + b, 0),
    cutTotal,
    'speedscope',
  )
  const folded = jsprof
    .toCollapsed(cut)
    .trimEnd()
    .split('\n')
    .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)
  assert.equal(folded, cutTotal * 1000, 'collapsed µs')
  const html = jsprof.toFlameGraph(cut, { format: 'html' })
  const data = JSON.parse(/<script type="application\/json" id="data">(.*?)<\/script>/s.exec(html)[1])
  close(data.nodes.ms[0], cutTotal, 'HTML flame graph')
  assert.match(jsprof.toFlameGraph(cut), /<title>all \(5\.7 ms, 6 samples, 100%/)
  // Source maps keep the member (the samples keep their times).
  return jsprof.resolveSourceMaps(cut).then(({ trace: mapped }) => assert.deepEqual(mapped.jsprof, cut.jsprof))
})

test('jsprof report of a cut trace: the interval it was sampled at, and shares by what its samples stand for', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-weights-'))
  try {
    fs.writeFileSync(path.join(tmp, 'cut.json'), JSON.stringify(cut))
    const run = (...args) =>
      spawnSync(process.execPath, [path.join(root, 'bin', 'jsprof.js'), ...args], { cwd: tmp, encoding: 'utf8' })
    const r = run('report', 'cut.json')
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /^cut\.json: 6 samples over 619\.7 ms \(every 1\.00 ms\), 5\.7 ms sampled, by package/)
    const express = r.stdout.split('\n').find((l) => /express/.test(l))
    assert.deepEqual(express.trim().split(/\s+/).slice(0, 2), ['50.9%', '2.9'])
    const json = JSON.parse(run('report', 'cut.json', '--json').stdout)
    assert.equal(json.intervalMs, 1)
    assert.equal(json.sampledMs, cutTotal)
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
})

test('one naming across views: pprof labels name packages and kinds as summarize and jsprof report do', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-naming-'))
  try {
    fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'shop-api', version: '1.2.3' }))
    const app = `file://${path.join(tmp, 'server.js')}`
    const named = {
      resources: [app, 'node:internal/timers'],
      frames: [
        { name: 'handler', resourceId: 0, line: 1, column: 1 },
        { name: 'parse' },
        { name: 'listOnTimeout', resourceId: 1, line: 1, column: 1 },
      ],
      stacks: [{ frameId: 0 }, { frameId: 1 }, { frameId: 2 }],
      samples: [
        { timestamp: 0, stackId: 0, marker: 'script' },
        { timestamp: 1, stackId: 1, marker: 'script' },
        { timestamp: 2, stackId: 2, marker: 'script' },
        { timestamp: 3, marker: 'gc' },
        { timestamp: 4, marker: 'other' },
        { timestamp: 5 },
      ],
    }
    const rows = jsprof.summarize(named, { by: 'package' })
    const fromSummary = rows.map((r) => `${r.name}|${r.kind}`).sort()
    assert.deepEqual(fromSummary, [
      '(gc)|gc',
      '(idle)|idle',
      '(native)|native',
      '(node)|node',
      '(other)|other',
      'shop-api|app',
    ])
    const { profile } = decodePprof(jsprof.toPprof(named))
    const strings = profile.stringTable.strings
    const label = (s, key) => strings[Number(s.label.find((l) => strings[Number(l.key)] === key).str)]
    const fromPprof = profile.sample.map((s) => `${label(s, 'package')}|${label(s, 'kind')}`).sort()
    assert.deepEqual(fromPprof, fromSummary)
    // The flame graph's tooltips say the same kinds.
    const svg = jsprof.toFlameGraph(named)
    assert.match(svg, /<title>\(garbage collector\) \([^)]*; kind: gc\)<\/title>/)
    assert.match(svg, /<title>\(program\) \([^)]*; kind: other, VM work outside JS\)<\/title>/)
    assert.match(svg, /<title>handler \([^)]*\) \([^)]*; kind: app, package: shop-api\)<\/title>/)
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
})
