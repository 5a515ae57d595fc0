// Benchmark 1: the event-loop stalls a profiler causes. jsprof-node's `Profiler` against a bare
// node:inspector session profiling the same workload at 1 ms.
//
// "bare": session.connect, Profiler.enable, setSamplingInterval 1000, Profiler.start, workload, then
// the synchronous `session.post('Profiler.stop', cb)`: V8 serialises the profile, Node parses the
// JSON reply and calls cb, all before post() returns. That is what a user of bare inspector pays.
// "ours": `new Profiler({ sampleInterval: 1 })`, workload, `await profiler.stop()`. We measure
//  (a) the synchronous time of the stop() call,
//  (b) the longest single event-loop turn from the stop() call until its promise resolves (a
//      setImmediate ticker records every turn; the harvest and the trace hand-over are turns),
//  (c) the longest time the event loop spent between two slices of the workload over the whole run
//      (the periodic harvests run there: they are stalls the profiler causes).
// Every stall is taken twice: wall-clock time (what the application feels), and the CPU time the
// process used over the same span (process.cpuUsage(), all threads: mostly the main thread's work,
// plus V8's sampler and GC helper threads), which leaves out the time the main thread spent
// descheduled on a busy machine or blocked waiting (e.g. for V8's profiler thread to stop).

import inspector from 'node:inspector'
import { createRequire } from 'node:module'
import { Profiler } from 'jsprof-node'

const require = createRequire(import.meta.url)
const { getSampler } = require('../lib/sampler/index.js')

/** CPU time used by the process so far, in ms (user + system, all threads). */
function cpuMs() {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

const yieldToLoop = () => new Promise((resolve) => setImmediate(resolve))

/**
 * Runs the workload in slices of `sliceMs`, yielding to the event loop between slices as a server
 * would. Returns the gaps between slices (time the loop spent outside the workload), in ms.
 */
async function runYielding(workload, ms, sliceMs) {
  const gaps = []
  const end = performance.now() + ms
  let lastEnd = -1
  let lastEndCpu = 0
  while (performance.now() < end) {
    await yieldToLoop()
    const startCpu = cpuMs()
    const start = performance.now()
    if (lastEnd >= 0) gaps.push([start - lastEnd, startCpu - lastEndCpu])
    workload.runFor(sliceMs)
    lastEnd = performance.now()
    lastEndCpu = cpuMs()
  }
  return gaps
}

function summariseGaps(gaps) {
  let max = 0
  let maxCpu = 0
  let total = 0
  let totalCpu = 0
  let over2 = 0
  for (const [wall, cpu] of gaps) {
    if (wall > max) max = wall
    if (cpu > maxCpu) maxCpu = cpu
    total += wall
    totalCpu += cpu
    if (wall > 2) over2++
  }
  return {
    maxGapMs: max,
    maxGapCpuMs: maxCpu,
    totalGapMs: total,
    totalGapCpuMs: totalCpu,
    gapsOver2Ms: over2,
    slices: gaps.length + 1,
  }
}

/** One run with a bare inspector session. `yielding`: slices with event-loop turns, or one block. */
export async function runBare(workload, { ms, sliceMs, yielding }) {
  const session = new inspector.Session()
  const post = (method, params) => {
    let out
    session.post(method, params, (err, res) => {
      if (err) throw err
      out = res
    })
    return out
  }
  const t0 = performance.now()
  session.connect()
  post('Profiler.enable')
  post('Profiler.setSamplingInterval', { interval: 1000 })
  post('Profiler.start')
  const startMs = performance.now() - t0
  const runStart = performance.now()
  const gaps = yielding ? await runYielding(workload, ms, sliceMs) : (workload.runFor(ms), [])
  const runS = (performance.now() - runStart) / 1000
  const c0 = cpuMs()
  const s0 = performance.now()
  let profile
  session.post('Profiler.stop', (err, res) => {
    if (err) throw err
    profile = res.profile
  })
  const stopMs = performance.now() - s0
  const stopCpuMs = cpuMs() - c0
  post('Profiler.disable')
  session.disconnect()
  return {
    startMs,
    stopSyncMs: stopMs,
    stopSyncCpuMs: stopCpuMs,
    stopMaxTurnMs: stopMs,
    stopMaxTurnCpuMs: stopCpuMs,
    stopTotalMs: stopMs,
    stopTotalCpuMs: stopCpuMs,
    ...summariseGaps(gaps),
    samples: profile.samples.length,
    samplesPerS: profile.samples.length / runS,
    nodes: profile.nodes.length,
    harvests: 0,
  }
}

/** One run with jsprof-node's Profiler. */
export async function runOurs(workload, { ms, sliceMs, yielding }) {
  const stats = getSampler().stats
  const harvestsBefore = stats.harvests
  const t0 = performance.now()
  const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 1_000_000 })
  const startMs = performance.now() - t0
  const runStart = performance.now()
  const gaps = yielding ? await runYielding(workload, ms, sliceMs) : (workload.runFor(ms), [])
  const runS = (performance.now() - runStart) / 1000

  let maxTurn = 0
  let maxTurnCpu = 0
  let done = false
  const c0 = cpuMs()
  const s0 = performance.now()
  const stopping = profiler.stop()
  const s1 = performance.now()
  const c1 = cpuMs()
  let last = s1
  let lastCpu = c1
  const turn = () => {
    const now = performance.now()
    const cpu = cpuMs()
    if (now - last > maxTurn) maxTurn = now - last
    if (cpu - lastCpu > maxTurnCpu) maxTurnCpu = cpu - lastCpu
    last = now
    lastCpu = cpu
  }
  const tick = () => {
    turn()
    if (!done) setImmediate(tick)
  }
  setImmediate(tick)
  const trace = await stopping
  done = true
  turn()
  const end = last
  return {
    startMs,
    stopSyncMs: s1 - s0,
    stopSyncCpuMs: c1 - c0,
    stopMaxTurnMs: maxTurn,
    stopMaxTurnCpuMs: maxTurnCpu,
    stopTotalMs: end - s0,
    stopTotalCpuMs: lastCpu - c0,
    ...summariseGaps(gaps),
    samples: trace.samples.length,
    samplesPerS: trace.samples.length / runS,
    frames: trace.frames.length,
    stacks: trace.stacks.length,
    harvests: stats.harvests - harvestsBefore,
  }
}
