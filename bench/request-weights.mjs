// Request profiles against known ground truth (issue 23): one request burns a known time in a known
// function (`hotOrders`, 3 slices of 20 ms with awaits between), while 4 concurrent requests burn 8 ms
// slices in its gaps. What its profile says it burned, by the weighting rule (crates/jsprof-core/src/
// trace/weights.rs: gaps within the request's own windows, the last sample of a window one interval),
// against what it really burned, its duration, and the old rule (each sample weighs the gap to the next
// one, whatever lies between: the profile then reads about the request's duration). Three modes: the
// request profiler at 1 ms; at 10 ms; at 10 ms while a 1 ms Profiler runs (V8 at 1 ms, the request's
// recording keeping one sample per 10 ms of its own time).
//
// "V8 did not observe" is what the trace itself says V8 missed (gaps within a window longer than two
// intervals: its sampler thread starved); on a quiet machine it is ~0 and the profile ≈ what was burned.
//
//   node bench/request-weights.mjs [--runs 10]

import http from 'node:http'
import { createRequire } from 'node:module'
import { median } from './stats.mjs'

const require = createRequire(import.meta.url)
const { profileRequests, summarize, Profiler } = require('..')
const { binding } = require('../lib/native.js')

const args = process.argv.slice(2)
const RUNS = Number(args.includes('--runs') ? args[args.indexOf('--runs') + 1] : 10)

function burn(ms) {
  const end = performance.now() + ms
  let x = 0
  while (performance.now() < end) x += Math.sqrt(x + 1)
  return x
}
function hotOrders(ms) {
  return burn(ms)
}
function otherWork(ms) {
  return burn(ms)
}

async function once(sampleInterval, withFastProfiler) {
  const profiles = []
  let burned = 0
  const fast = withFastProfiler ? new Profiler({ sampleInterval: 1, maxBufferSize: 1e6 }) : null
  const rp = profileRequests({ sampleRate: 1, sampleInterval, onProfile: (p) => profiles.push(p) })
  const server = http.createServer(
    rp.wrap(async (req, res) => {
      if (req.url === '/orders') {
        for (let i = 0; i < 3; i++) {
          const t0 = performance.now()
          hotOrders(20)
          burned += performance.now() - t0
          await new Promise((resolve) => setTimeout(resolve, 2))
        }
      } else {
        for (let i = 0; i < 6; i++) {
          otherWork(8)
          await new Promise((resolve) => setImmediate(resolve))
        }
      }
      res.end('ok')
    }),
  )
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${server.address().port}`
  const others = Array.from({ length: 4 }, (_, i) => fetch(`${base}/other${i}`).then((r) => r.text()))
  await Promise.all([fetch(`${base}/orders`).then((r) => r.text()), ...others])
  await rp.close()
  server.close()
  if (fast) await fast.stop()
  const { trace, durationMs } = profiles.find((p) => p.url === '/orders')
  const rows = summarize(trace, { by: 'function' })
  const hot = rows.find((r) => r.name.startsWith('hotOrders ('))?.totalTime ?? 0
  const total = rows.reduce((s, r) => s + r.selfTime, 0)
  // The old rule: each sample weighs the gap to the next in time order, the last the median gap.
  const times = trace.samples.map((s) => s.timestamp).sort((a, b) => a - b)
  const gaps = times.slice(1).map((t, i) => t - times[i])
  const old = times.length > 1 ? times.at(-1) - times[0] + median(gaps) : 0
  // What the trace says V8 did not observe: gaps within a window beyond the two intervals a sample may
  // stand for (its sampler thread starved on a loaded machine).
  const { windows } = trace.jsprof
  // The rule's interval, as Rust works it out (the rate V8 delivered within the windows, or the one
  // asked for a trace with few gaps).
  const interval = binding.TraceHandle.fromTraceJson(Buffer.from(JSON.stringify(trace))).timing().intervalMs
  const windowOf = (t) => windows.findIndex(([b, e]) => b <= t && t <= e)
  let missed = 0
  for (let k = 0; k + 1 < times.length; k++) {
    if (windowOf(times[k]) === windowOf(times[k + 1])) missed += Math.max(0, gaps[k] - 2 * interval)
  }
  return { burned, hot, missed, total, old, durationMs, samples: trace.samples.length }
}

const fmt = (x) => x.toFixed(1)
console.log(`${RUNS} runs each; medians (min–max) in ms`)
console.log(
  '| request profiler | burned in hotOrders | hotOrders in its profile | V8 did not observe | whole profile | old rule (gaps) | request duration | samples |',
)
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (const [name, interval, fast] of [
  ['1 ms', 1, false],
  ['10 ms', 10, false],
  ['10 ms, a 1 ms Profiler running', 10, true],
]) {
  const runs = []
  for (let i = 0; i < RUNS; i++) runs.push(await once(interval, fast))
  const cell = (k) => {
    const xs = runs.map((r) => r[k])
    return `${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`
  }
  console.log(
    `| ${name} | ${cell('burned')} | ${cell('hot')} | ${cell('missed')} | ${cell('total')} | ${cell('old')} | ${cell('durationMs')} | ${median(runs.map((r) => r.samples))} |`,
  )
}
