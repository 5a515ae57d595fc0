// What building one small trace on the main thread costs (a Profiler's around a request, a request
// profile's): many subscriptions over the same window of a workload with server-like stacks (~20 frames
// deep, a few leaves), so each holds a Recording of the same samples after one harvest; then half of
// them are built as JSON text + JSON.parse (`Recording.buildJson`, the road before) and half through
// lib/trace.js (`Recording.buildColumns`: numbers over this thread's string table), alternating which
// goes first. µs per trace, median and spread over rounds. Prints figures; asserts nothing (it checks
// once that both roads give the same trace).
//
//   node bench/trace-build.mjs [--rounds 7] [--traces 2000] [--window 40] [--clock no|yes]
//
// --window: ms of workload each trace covers (10 ms sampling: ~window/10 samples); --clock yes: the
// traces have the `jsprof` member, as a request profile's do.

import { createRequire } from 'node:module'
import assert from 'node:assert/strict'
import { medianSpread } from './stats.mjs'
import { num, arg } from './args.mjs'
const require = createRequire(import.meta.url)
const { getSampler, Subscription } = require('../lib/sampler/index.js')
const { buildTrace } = require('../lib/trace.js')
const { nowUs, timeOriginUs, traceClock } = require('../lib/clock.js')

const ROUNDS = num('rounds', 7)
const TRACES = num('traces', 2000)
const WINDOW_MS = num('window', 40)
const CLOCK = arg('clock', 'no') === 'yes'

// Server-like work: a request handler ~20 frames below the event loop, a few different leaves.
const leaves = [
  (n) => JSON.stringify({ n, items: Array.from({ length: 20 }, (_, i) => ({ i, s: `x${i}` })) }).length,
  (n) => `${n}`.padStart(40, '0').toUpperCase().length,
  (n) => [...Array(50).keys()].map((k) => k * n).reduce((a, b) => a + b, 0),
]
function layer(depth, n) {
  if (depth === 0) return leaves[n % leaves.length](n)
  return layer(depth - 1, n) + 1
}
function spin(ms) {
  const end = performance.now() + ms
  let n = 0
  while (performance.now() < end) layer(18, n++)
  return n
}

const sampler = getSampler()
const origin = timeOriginUs()
const clock = CLOCK ? traceClock() : undefined

/** TRACES Recordings of the same `WINDOW_MS` of work. */
async function recordings() {
  const subs = []
  const startUs = nowUs()
  for (let i = 0; i < TRACES; i++) {
    const sub = new Subscription({ startUs, intervalUs: 10_000, maxSamples: 1000 })
    sampler.add(sub)
    subs.push(sub)
  }
  spin(WINDOW_MS)
  const stopUs = nowUs()
  let done
  for (const sub of subs) {
    sub.stopAt(stopUs)
    done = sampler.finish(sub)
  }
  await done
  return subs.map((s) => s.recording).filter((r) => r !== null)
}

function time(recs, build) {
  const t0 = performance.now()
  for (const r of recs) build(r)
  return ((performance.now() - t0) * 1000) / recs.length
}
const viaJson = (r) => JSON.parse(r.buildJson(origin, clock))
const viaColumns = (r) => buildTrace(r, origin, clock)

const json = []
const columns = []
let shape = null
for (let round = 0; round < ROUNDS; round++) {
  const recs = await recordings()
  if (recs.length < 4) {
    round--
    continue
  }
  const [a, b] = [recs.pop(), recs.pop()]
  const sample = viaColumns(a)
  assert.deepEqual(sample, viaJson(b))
  shape = `${sample.samples.length} samples, ${sample.frames.length} frames, ${sample.stacks.length} stacks, ${sample.resources.length} resources, ${JSON.stringify(sample).length} bytes of JSON`
  const half = recs.length >> 1
  const [first, second] = [recs.slice(0, half), recs.slice(half)]
  if (round % 2 === 0) {
    json.push(time(first, viaJson))
    columns.push(time(second, viaColumns))
  } else {
    columns.push(time(first, viaColumns))
    json.push(time(second, viaJson))
  }
}
console.log(
  `# one small trace built on the main thread, Node ${process.version}${CLOCK ? ', with the jsprof member' : ''}`,
)
console.log(`each trace: ${shape}; ${ROUNDS} rounds of ${TRACES} traces`)
console.log(`buildJson + JSON.parse: ${medianSpread(json, 2)} µs per trace`)
console.log(`buildColumns (lib/trace.js): ${medianSpread(columns, 2)} µs per trace`)
