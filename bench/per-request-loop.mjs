// The plain Profiler around every 10th (and every) unit of work, as a user writes it from the spec's
// example: a loop doing some fib work and `await setImmediate` per iteration, one Profiler per sampled
// iteration whose stop() is not awaited by the loop (as a server does not wait for it before the
// next request). Interleaved rounds, medians of iterations per second, ratio to no Profiler.
//
//   node bench/per-request-loop.mjs [--rounds 5] [--seconds 1.5]

import { createRequire } from 'node:module'
import { median } from './stats.mjs'
import { num } from './args.mjs'
const require = createRequire(import.meta.url)
const { Profiler } = require('..')
const { getSampler } = require('../lib/sampler/index.js')

const ROUNDS = num('rounds', 5)
const SECONDS = num('seconds', 1.5)

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2)
}

async function run(every) {
  let n = 0
  const latencies = []
  const end = performance.now() + SECONDS * 1000
  while (performance.now() < end) {
    if (every && n % every === 0) {
      const profiler = new Profiler({ sampleInterval: 10, maxBufferSize: 1000 })
      fib(18)
      await new Promise((resolve) => setImmediate(resolve))
      const t0 = performance.now()
      profiler.stop().then(() => {
        latencies.push(performance.now() - t0)
      })
    } else {
      fib(18)
      await new Promise((resolve) => setImmediate(resolve))
    }
    n++
  }
  await new Promise((resolve) => setTimeout(resolve, 120)) // let the last stops resolve
  return { rate: n / SECONDS, latencies }
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]
const results = { 0: [], 10: [], 1: [] }
const lat = { 10: [], 1: [] }
await run(0) // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const every of round % 2 ? [1, 10, 0] : [0, 10, 1]) {
    const { rate, latencies } = await run(every)
    results[every].push(rate)
    if (every) lat[every].push(...latencies)
  }
}
const base = median(results[0])
console.log(
  `\n# plain Profiler per unit of work (fib(18) + await setImmediate), ${ROUNDS} interleaved rounds of ${SECONDS} s`,
)
console.log(`no Profiler: ${base.toFixed(0)} iterations/s`)
for (const every of [10, 1]) {
  const r = median(results[every])
  console.log(
    `a Profiler every ${every === 1 ? '' : `${every}th `}iteration: ${r.toFixed(0)}/s = ${(r / base).toFixed(3)}x; ` +
      `stop() latency p50 ${pct(lat[every], 0.5).toFixed(1)} ms, p99 ${pct(lat[every], 0.99).toFixed(1)} ms`,
  )
}
const s = getSampler().stats
console.log(
  `sampler: ${s.harvests} harvests (${(s.harvestMsTotal / s.harvests).toFixed(2)} ms main thread each), ${s.coldStarts} cold starts`,
)
