'use strict'
// Main-thread figures of production profiling, without load (run by run.mjs, or alone:
// node bench/server/micro.js).

const { monitorEventLoopDelay } = require('node:perf_hooks')
const root = require('node:path').join(__dirname, '..', '..')
const { Profiler, startContinuous } = require(root)
const { getSampler } = require(`${root}/lib/sampler/index.js`)

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const fmt = (ms) => `${ms.toFixed(3)} ms`

function manyFunctions(n) {
  // Distinct code, so V8's profile tree has many nodes to pack at each harvest.
  let total = 0
  for (let i = 0; i < n; i++) total += new Function('x', `return x * ${i} + ${i % 7}`)(i)
  return total
}

async function main() {
  const sampler = getSampler()
  console.log('\n# main-thread figures (no load)')

  // 1. The first Profiler starts V8 (code logging): the cost a cold sampler pays.
  let t = performance.now()
  const anchor = new Profiler({ sampleInterval: 1, maxBufferSize: 1e6 })
  console.log(`first new Profiler() (cold: V8 start, code logging): ${fmt(performance.now() - t)}`)

  // 2. new Profiler() while the sampler runs.
  const costs = []
  const profilers = []
  for (let i = 0; i < 2000; i++) {
    t = performance.now()
    profilers.push(new Profiler({ sampleInterval: 1, maxBufferSize: 1000 }))
    costs.push(performance.now() - t)
    if (i % 100 === 99) await sleep(1)
  }
  console.log(
    `new Profiler() while the sampler runs (2000): median ${fmt(pct(costs, 50))}, p99 ${fmt(pct(costs, 99))} (target <= 0.2 ms)`,
  )

  // 3. Batched stops: 2000 stop() calls; how long until each resolves, and how many harvests.
  const harvestsBefore = sampler.stats.harvests
  const stopCosts = []
  const waits = []
  await Promise.all(
    profilers.map((p) => {
      const t0 = performance.now()
      const done = p.stop().then(() => waits.push(performance.now() - t0))
      stopCosts.push(performance.now() - t0)
      return done
    }),
  )
  console.log(
    `Profiler.stop() call: median ${fmt(pct(stopCosts, 50))}; 2000 stops of one tick shared ${sampler.stats.harvests - harvestsBefore} harvest(s)`,
  )

  // 4. Request-style stops (batched, maxStopDelay 100 ms), one every 2 ms: latency and harvests.
  const { profileRequests } = require(root)
  const latencies = []
  const rp = profileRequests({ sampleRate: 1, maxStopDelay: 100, onProfile() {} })
  const http = require('node:http')
  const harvests0 = sampler.stats.harvests
  const t1 = performance.now()
  await new Promise((resolve) => {
    let n = 0
    const handler = rp.wrap((req, res) => res.end())
    const tick = setInterval(() => {
      const req = new http.IncomingMessage(null)
      const res = new http.ServerResponse(req)
      res.assignSocket(new (require('node:stream').Writable)({ write: (c, e, cb) => cb() }))
      handler(req, res)
      const t0 = performance.now()
      res.end()
      // The profile is delivered after the harvest that serves the stop.
      const before = rp.stats.profiled
      const check = () => (rp.stats.profiled > before ? latencies.push(performance.now() - t0) : setImmediate(check))
      check()
      if (++n === 500) {
        clearInterval(tick)
        setTimeout(resolve, 300)
      }
    }, 2)
  })
  const elapsed = performance.now() - t1
  await rp.close()
  console.log(
    `request stop -> profile delivered (maxStopDelay 100 ms, 500 requests over ${(elapsed / 1000).toFixed(1)} s): ` +
      `median ${fmt(pct(latencies, 50))}, max ${fmt(Math.max(...latencies))}; ${sampler.stats.harvests - harvests0} harvests`,
  )

  await anchor.stop()

  // 5. Keep-warm: the cost of the next Profiler after the last one stopped, warm vs cold.
  sampler.keepWarm('bench', 1000)
  let p = new Profiler({ sampleInterval: 1, maxBufferSize: 100 })
  await p.stop()
  await sleep(50)
  t = performance.now()
  p = new Profiler({ sampleInterval: 1, maxBufferSize: 100 })
  const warm = performance.now() - t
  await p.stop()
  sampler.keepWarm('bench', 0)
  await sleep(1100)
  t = performance.now()
  p = new Profiler({ sampleInterval: 1, maxBufferSize: 100 })
  const cold = performance.now() - t
  await p.stop()
  await sleep(50)
  console.log(
    `new Profiler() 50 ms after the last stopped: kept warm ${fmt(warm)}, cold (sampler stopped) ${fmt(cold)}`,
  )

  // 6. The labels' async hooks: cost per `await` in a request's context and (the other code's price
  //    while the sampler runs) outside any, vs the hooks off.
  const { beginRequest, enableTracking, disableTracking } = require(`${root}/lib/labels.js`)
  const { promiseHooksInstead } = require(`${root}/lib/promise-hooks.js`)
  const { EventEmitter } = require('node:events')
  const running = new Profiler({ sampleInterval: 10, maxBufferSize: 1e6 })
  const N = 200_000
  async function ticks() {
    for (let i = 0; i < N; i++) await null
  }
  let plain = Infinity
  let hooked = Infinity
  let bystander = Infinity
  for (let round = 0; round < 4; round++) {
    disableTracking()
    t = performance.now()
    await ticks()
    plain = Math.min(plain, performance.now() - t)
    enableTracking()
    const context = beginRequest(new EventEmitter(), 'GET', '/bench')
    t = performance.now()
    await context.run(ticks, null, [])
    hooked = Math.min(hooked, performance.now() - t)
    t = performance.now()
    await ticks()
    bystander = Math.min(bystander, performance.now() - t)
  }
  await running.stop()
  const ns = (ms) => `${((ms / N) * 1e6).toFixed(0)} ns`
  console.log(
    `labels' async hook (${promiseHooksInstead() ? 'promises via v8.promiseHooks' : 'promises via async_hooks'}), per await: ` +
      `${ns(hooked)} in a request's context, ${ns(bystander)} in other code while the sampler runs, ${ns(plain)} with the hooks off (best of 4)`,
  )

  // 7. The longest event-loop stall of continuous mode at 10 ms, with a workload that compiles
  //    fresh code all along (so each harvest has a big V8 profile to pack), vs the same without.
  async function stallRun(withProfiler) {
    const h = monitorEventLoopDelay({ resolution: 1 })
    const handle = withProfiler ? startContinuous({ sampleInterval: 10, chunkSeconds: 2, onChunk() {} }) : null
    h.enable()
    const end = performance.now() + 8000
    while (performance.now() < end) {
      manyFunctions(50)
      await sleep(2)
    }
    h.disable()
    if (handle) await handle.stop()
    return h.max / 1e6
  }
  const without = await stallRun(false)
  sampler.stats.harvestMsMax = 0
  const before = { ...sampler.stats }
  const withCont = await stallRun(true)
  const harvests = sampler.stats.harvests - before.harvests
  console.log(
    `longest event-loop delay over 8 s (1 ms resolution): continuous 10 ms ${fmt(withCont)}, no profiler ${fmt(without)}`,
  )
  console.log(
    // The engine times each turn of its work: a harvest, and each conversion of a chunk after it. So the
    // mean per harvest counts its conversions, and the longest turn may be shorter than that mean.
    `continuous 10 ms, chunks of 2 s, workload compiling fresh code: ${harvests} harvests, main-thread time per harvest ` +
      `(its conversions included) mean ${fmt((sampler.stats.harvestMsTotal - before.harvestMsTotal) / harvests)}, ` +
      `longest single turn ${fmt(sampler.stats.harvestMsMax)}`,
  )
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
