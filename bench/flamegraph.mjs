// Flame graph export time and size: SVG vs the HTML page, next to toCollapsed, on a real profile.
//   node bench/flamegraph.mjs [seconds=2]
// Records `node --cpu-prof --cpu-prof-interval 100` of a small workload (recursion, sorting, JSON) for
// the given seconds, reads it with fromCpuProfile, then times each call: mean of 10 after 3 warm-ups,
// interleaved, 3 rounds. Prints ms per call and output bytes.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const jsprof = createRequire(import.meta.url)('..')
const seconds = Number(process.argv[2] ?? 2)
const dir = mkdtempSync(join(tmpdir(), 'jsprof-flame-bench-'))
writeFileSync(
  join(dir, 'work.js'),
  `function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) }
   function sortIt(n) { const a = Array.from({ length: n }, (_, i) => (i * 7919) % n); return a.sort((x, y) => x - y) }
   function json(n) { return JSON.parse(JSON.stringify(Array.from({ length: n }, (_, i) => ({ i, s: 'x' + i })))) }
   const end = Date.now() + ${seconds * 1000}
   while (Date.now() < end) { fib(20); sortIt(2000); json(500) }`,
)
spawnSync(process.execPath, ['--cpu-prof', '--cpu-prof-interval', '100', '--cpu-prof-dir', dir, join(dir, 'work.js')], {
  stdio: 'inherit',
})
const profile = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))
const trace = jsprof.fromCpuProfile(readFileSync(join(dir, profile)))
rmSync(dir, { recursive: true, force: true })
console.log(`trace: ${trace.samples.length} samples, ${trace.frames.length} frames, ${trace.stacks.length} stacks`)

const cases = {
  toCollapsed: () => jsprof.toCollapsed(trace),
  'toFlameGraph svg': () => jsprof.toFlameGraph(trace),
  'toFlameGraph html': () => jsprof.toFlameGraph(trace, { format: 'html' }),
}
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]))
for (let round = 0; round < 3; round++) {
  for (const [name, fn] of Object.entries(cases)) {
    for (let i = 0; i < 3; i++) fn()
    const t0 = performance.now()
    for (let i = 0; i < 10; i++) fn()
    times[name].push((performance.now() - t0) / 10)
  }
}
for (const [name, fn] of Object.entries(cases)) {
  const t = times[name].sort((a, b) => a - b)
  console.log(
    `${name.padEnd(18)} ${t[0].toFixed(2)} – ${t[2].toFixed(2)} ms per call, ${Buffer.byteLength(fn()).toLocaleString('en')} bytes`,
  )
}
