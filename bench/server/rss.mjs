// RSS of continuous mode over a long run: continuous profiling at 10 ms (chunks of 10 s) of a light,
// steady workload that keeps compiling fresh code; prints RSS after 1 minute and after 10 minutes
// (--minutes N to change; --no-profiler for the baseline). Run alone: node bench/server/rss.mjs
import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const { startContinuous } = require('../../index.js')

const at = process.argv.indexOf('--minutes')
const minutes = at > 0 ? Number(process.argv[at + 1]) : 10
let samples = 0
let chunks = 0
// --no-profiler: the same workload alone, for comparison.
const withProfiler = !process.argv.includes('--no-profiler')
const handle = !withProfiler
  ? { stop: async () => {} }
  : startContinuous({
      sampleInterval: 10,
      chunkSeconds: 10,
      onChunk(chunk) {
        chunks++
        samples += chunk.trace.samples.length
      },
    })

// --no-fresh-code: the same work without compiling a new function each time.
const freshCode = !process.argv.includes('--no-fresh-code')
const fixed = (x) => x * 3 + 1
function work(i) {
  // ~3 ms of work every 20 ms, part of it fresh code, so V8's profile tree keeps changing.
  const f = freshCode ? new Function('x', `return x * ${i % 500} + ${i % 7}`) : fixed
  let x = 0
  const end = performance.now() + 3
  while (performance.now() < end) x = f(x) % 1e9
  return x
}
let i = 0
const timer = setInterval(() => work(i++), 20)

const mb = () => (process.memoryUsage().rss / 2 ** 20).toFixed(1)
const start = Date.now()
const report = (label) =>
  console.log(
    `${label}: RSS ${mb()} MB (chunks ${chunks}, samples ${samples}, heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)} MB)`,
  )
setTimeout(() => report('after 1 min'), 60_000)
for (let m = 2; m < minutes; m++) setTimeout(() => report(`after ${m} min`), m * 60_000)
setTimeout(async () => {
  report(`after ${minutes} min`)
  clearInterval(timer)
  await handle.stop()
  console.log(`ran ${((Date.now() - start) / 60000).toFixed(1)} min`)
}, minutes * 60_000)
