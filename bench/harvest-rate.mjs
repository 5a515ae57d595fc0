// What harvests cost, by how often they run: a busy loop (fib + setImmediate) with one long Profiler at
// 10 ms, and a harvest forced every `gap` ms (the engine's harvestWithin(0), as a stop does). CPU of the
// whole process per iteration, modes alternated in rounds, medians; and the engine's own count of
// main-thread ms per harvest. It is why stops share one harvest per 100 ms (schedule.js minStopGapUs).
//
//   node bench/harvest-rate.mjs [--gaps 0,100,50,20] [--rounds 3] [--seconds 3]

import { createRequire } from 'node:module'
import { median } from './stats.mjs'
import { arg } from './args.mjs'
const require = createRequire(import.meta.url)
const { Profiler } = require('..')
const { getSampler } = require('../lib/sampler/index.js')

const GAPS = String(arg('gaps', '0,100,50,20')).split(',').map(Number)
const ROUNDS = Number(arg('rounds', 3))
const SECONDS = Number(arg('seconds', 3))

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2)
}

const engine = getSampler()
const keep = new Profiler({ sampleInterval: 10, maxBufferSize: 1e7 })
let sink = 0

async function run(gapMs) {
  const end = performance.now() + SECONDS * 1000
  let next = performance.now() + gapMs
  let n = 0
  const c0 = process.cpuUsage()
  const h0 = engine.stats.harvests
  const m0 = engine.stats.harvestMsTotal
  while (performance.now() < end) {
    sink += fib(15)
    n++
    if (gapMs > 0 && performance.now() >= next) {
      engine.harvestWithin(0)
      next += gapMs
    }
    await new Promise((resolve) => setImmediate(resolve))
  }
  const c = process.cpuUsage(c0)
  const harvests = engine.stats.harvests - h0
  return {
    cpuPerIter: (c.user + c.system) / n,
    harvests,
    msEach: harvests ? (engine.stats.harvestMsTotal - m0) / harvests : 0,
  }
}

await run(0) // warm-up
const results = Object.fromEntries(GAPS.map((g) => [g, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const gap of round % 2 ? [...GAPS].reverse() : GAPS) results[gap].push(await run(gap))
}
await keep.stop()
if (sink < 0) console.log(sink) // never true: keeps fib's result alive
const base = median(results[0] ? results[0].map((r) => r.cpuPerIter) : [NaN])
console.log(`\n# harvest rate (busy loop, one Profiler at 10 ms; ${ROUNDS} rounds of ${SECONDS} s; CPU of all threads)`)
console.log('| harvests | per second | CPU µs/iteration | vs none | main-thread ms per harvest |')
console.log('| --- | ---: | ---: | ---: | ---: |')
for (const gap of GAPS) {
  const cpu = median(results[gap].map((r) => r.cpuPerIter))
  const perSecond = median(results[gap].map((r) => r.harvests)) / SECONDS
  const ms = median(results[gap].map((r) => r.msEach))
  console.log(
    `| ${gap ? `every ${gap} ms` : 'none (periodic only)'} | ${perSecond.toFixed(1)} | ${cpu.toFixed(2)} | ${(cpu / base).toFixed(3)}x | ${gap ? ms.toFixed(2) : '-'} |`,
  )
}
