// Benchmark: what the source-map cache really holds (issue 24), measured as the process's RSS, for the
// two pathological inputs of the issue: two maps of minimal segments (`A,` repeated: 2 bytes of text,
// one decoded mapping each), and a generated file of bare newlines naming a small map (its text and
// line index are what the cache would keep). Each case runs in a child process of its own: RSS before,
// right after resolveSourceMaps (the cache still holding what it kept) and after a GC, and the longest
// the call took. The cache's budget is 512 MiB, counted in decoded memory.
//
// `node bench/sourcemap-memory.mjs`. Knobs: BENCH_SMM_MB (200: each minimal map's size, half of it
// for the newlines file), BENCH_SMM_CASE (minimal|newlines|fits: one case only).

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const MB = Number(process.env.BENCH_SMM_MB || 200)
const ONLY = process.env.BENCH_SMM_CASE

/** Writes `count` repetitions of `unit` between `head` and `tail`, in chunks. */
function writeRepeated(file, head, unit, count, tail) {
  const fd = fs.openSync(file, 'w')
  fs.writeSync(fd, head)
  const chunk = unit.repeat(Math.max(1, Math.floor((1 << 20) / unit.length)))
  const per = chunk.length / unit.length
  let left = count
  while (left >= per) {
    fs.writeSync(fd, chunk)
    left -= per
  }
  if (left > 0) fs.writeSync(fd, unit.repeat(left))
  fs.writeSync(fd, tail)
  fs.closeSync(fd)
}

const CHILD = `
const { resolveSourceMaps } = require(${JSON.stringify(ROOT)})
const trace = JSON.parse(process.argv[1])
const rss = () => Math.round(process.memoryUsage.rss() / 2 ** 20)
;(async () => {
  const before = rss()
  const t0 = performance.now()
  const { stats } = await resolveSourceMaps(trace)
  const ms = performance.now() - t0
  const after = rss()
  globalThis.gc()
  await new Promise((r) => setTimeout(r, 200))
  const reasons = stats.resources.map((r) => (r.error ? r.error.reason : 'mapped')).join(',')
  console.log(JSON.stringify({ before, after, gc: rss(), ms: Math.round(ms), mapped: stats.mapped, reasons }))
})()
`

function run(name, dir, resources, lines) {
  const trace = {
    resources,
    frames: resources.map((_, i) => ({ name: 'f', resourceId: i, line: lines[i], column: 1 })),
    stacks: resources.map((_, i) => ({ frameId: i })),
    samples: [],
  }
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', CHILD, JSON.stringify(trace)], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  })
  if (r.status !== 0) throw new Error(`${name}: ${r.stderr}`)
  const m = JSON.parse(r.stdout)
  console.log(
    `${name.padEnd(34)} RSS before ${m.before} MiB, after ${m.after} MiB, after GC ${m.gc} MiB; ${m.ms} ms; ${m.reasons}`,
  )
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-smm-'))
try {
  console.log(
    `load: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ${MB} MB inputs`,
  )
  if (!ONLY || ONLY === 'minimal') {
    const resources = []
    for (const name of ['a', 'b']) {
      const script = path.join(dir, `${name}.js`)
      fs.writeFileSync(script, 'f()\n')
      writeRepeated(
        `${script}.map`,
        '{"version":3,"sources":["a.ts"],"names":[],"mappings":"AAAA',
        ',A',
        (MB << 20) / 2,
        '"}',
      )
      resources.push(pathToFileURL(script).href)
    }
    run(`two ${MB} MB maps of minimal segments`, dir, resources, [1, 1])
  }
  if (!ONLY || ONLY === 'newlines') {
    const script = path.join(dir, 'lines.js')
    writeRepeated(script, 'f()\n', '\n', (MB << 20) / 2, '//# sourceMappingURL=lines.js.map\n')
    fs.writeFileSync(`${script}.map`, '{"version":3,"sources":["l.ts"],"names":[],"mappings":"AAAA"}')
    run(`a ${MB / 2} MB file of bare newlines`, dir, [pathToFileURL(script).href], [1])
  }
  if (!ONLY || ONLY === 'fits') {
    // A map within the budget, for comparison: 12 M segments (~24 MB of text, ~360 MiB decoded).
    const script = path.join(dir, 'fits.js')
    fs.writeFileSync(script, 'f()\n')
    writeRepeated(
      `${script}.map`,
      '{"version":3,"sources":["a.ts"],"names":[],"mappings":"AAAA',
      ',A',
      12_000_000,
      '"}',
    )
    run('one 24 MB map of 12 M segments', dir, [pathToFileURL(script).href], [1])
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
