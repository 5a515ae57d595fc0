'use strict'
// Recording over the inspector's connection: the process id checked, its clock read, V8's CPU
// profiler (and with --heap its sampling heap profiler) run for the duration, until Ctrl-C or until
// the process exits, and the profiles taken.

const { CliError, info, statusLine, formatDuration } = require('../common')
const { TIME_ORIGIN_SOURCE } = require('../../clock')
const { visible } = require('../../text')
const { effectiveIntervalUs } = require('../../sampler/schedule')
const { BadReply, connect, evaluate } = require('./cdp')
const { endsWithin, GONE_WAIT_MS } = require('./target')

const PROFILE_TIMEOUT_MS = 120_000 // Profiler.stop and HeapProfiler.stopSampling (V8 builds them)
// A reply's size: the profile's nodes (the process's code) plus its samples (the recording's length).
const PROFILE_BASE_BYTES = 64 * 1024 * 1024
const PROFILE_BYTES_PER_SAMPLE = 48
// V8's longest string (2^29 - 24 UTF-16 units; a reply is one string before it is parsed).
const MAX_STRING_BYTES = 2 ** 29 - 24

/** The largest inspector message a recording of up to `maxSamples` samples takes (its profile). */
const maxReplyBytes = (maxSamples) =>
  // And never more than one JS string holds (the reply is parsed as one).
  Math.min(PROFILE_BASE_BYTES + 2 * maxSamples * PROFILE_BYTES_PER_SAMPLE, MAX_STRING_BYTES)

/**
 * Connects to the inspector, checks it is pid's, records for the duration (or until Ctrl-C, or the
 * process exits) and returns what was recorded. The connection is left in ctx.cdp for the caller to
 * close the inspector on.
 */
async function record(pid, inspector, { durationMs, intervalMs, heap, maxPayload }, intr, ctx) {
  let exiting
  const onExit = new Promise((resolve) => (exiting = resolve))
  try {
    ctx.cdp = await connect(inspector.url, {
      maxPayload,
      onEvent: (method) => method === 'NodeRuntime.waitingForDisconnect' && exiting(),
    })
  } catch (err) {
    throw new CliError(`cannot connect to the inspector of pid ${pid} on port ${inspector.port}: ${err.message}`)
  }
  const cdp = ctx.cdp
  const seen = await evaluate(cdp, 'process.pid')
  if (seen !== pid) {
    throw new CliError(
      `the inspector on port ${inspector.port} belongs to pid ${visible(JSON.stringify(seen) ?? 'undefined').slice(0, 40)}, not ${pid}`,
    )
  }
  // Told when the process ends while attached: Node then waits for the debugger to disconnect,
  // which jsprof does at once (after taking the profile), so the process's exit is not held.
  await cdp.send('NodeRuntime.notifyWhenWaitingForDisconnect', { enabled: true }).catch(() => {})
  // The process's performance.now() origin, measured there as lib/clock.js measures it in-process.
  const origin = await evaluate(cdp, TIME_ORIGIN_SOURCE)
  const epochOrigin = await evaluate(cdp, 'performance.timeOrigin')
  if (intr.count > 0) throw new CliError(`interrupted before the recording of pid ${pid} started`)
  await cdp.send('Profiler.enable')
  // V8 there samples at the interval a Profiler here would (the sampler's rule: whole µs, at least 0.1 ms).
  await cdp.send('Profiler.setSamplingInterval', { interval: effectiveIntervalUs(intervalMs) })
  await cdp.send('Profiler.start')
  let heapStart
  let heapInliningOff = false
  if (heap) {
    await cdp.send('HeapProfiler.enable')
    // Another client's sampler (node --heap-prof, DevTools) answers: neither shared nor stopped.
    const foreign = await cdp.send('HeapProfiler.getSamplingProfile').then(
      () => true,
      () => false,
    )
    if (foreign) {
      await cdp.send('Profiler.stop', {}, PROFILE_TIMEOUT_MS).catch(() => {})
      throw new CliError(
        `pid ${pid} already runs V8's sampling heap profiler (node --heap-prof, DevTools): not touched`,
      )
    }
    if (heap.inlining === false) {
      // V8 inlines nothing while sampling, and the code optimized before is deoptimized (docs/heap.md).
      const { remoteInliningOff } = require('../../heap/inlining')
      heapInliningOff = await remoteInliningOff(
        (expression) => evaluate(cdp, expression),
        (method, params) => cdp.send(method, params),
      )
    }
    heapStart = await evaluate(cdp, 'performance.now()')
    await cdp.send('HeapProfiler.startSampling', {
      samplingInterval: heap.samplingInterval,
      stackDepth: heap.stackDepth,
    })
  }
  const started = Date.now()
  const status = statusLine()
  const ended = await new Promise((resolve) => {
    const tick = status.on
      ? setInterval(
          () =>
            status.update(
              `recording pid ${pid}: ${formatDuration(Date.now() - started)} of ${formatDuration(durationMs)} (Ctrl-C to stop)`,
            ),
          250,
        )
      : null
    const timer = setTimeout(() => finish(null), durationMs)
    const finish = (why) => {
      clearInterval(tick)
      clearTimeout(timer)
      resolve(why)
    }
    if (intr.count > 0) finish(null)
    intr.next().then(() => finish(null))
    onExit.then(() => finish({ exited: true }))
    cdp.closed.then((why) => finish({ gone: why }))
  })
  status.clear()
  const after = formatDuration(Date.now() - started)
  if (ended && ended.gone) {
    if (await endsWithin(pid, GONE_WAIT_MS)) {
      throw new CliError(
        `pid ${pid} ended during the recording, after ${after} (killed or crashed): its samples went with it, no trace written`,
      )
    }
    throw new CliError(
      `the inspector connection of pid ${pid} ended during the recording, after ${after} (${ended.gone}): no trace written`,
    )
  }
  if (ended && ended.exited) info(`pid ${pid} exited during the recording, after ${after}: writing what was recorded`)
  const stopped = await cdp.send('Profiler.stop', {}, PROFILE_TIMEOUT_MS)
  if (stopped.profile === null || typeof stopped.profile !== 'object')
    throw new BadReply('it answered Profiler.stop without a profile')
  const profile = stopped.profile
  let heapProfile = null
  let heapEnd
  if (ended && ended.exited) {
    // Taking the heap profile would not change what the process ends with; its exit is waiting.
    if (heap) {
      heapEnd = await evaluate(cdp, 'performance.now()').catch(() => undefined)
      heapProfile = (await cdp.send('HeapProfiler.stopSampling', {}, PROFILE_TIMEOUT_MS)).profile ?? null
    }
    cdp.close()
  } else {
    await cdp.send('Profiler.disable')
    if (heap) {
      heapEnd = await evaluate(cdp, 'performance.now()')
      heapProfile = (await cdp.send('HeapProfiler.stopSampling', {}, PROFILE_TIMEOUT_MS)).profile
      if (heap.inlining === false) await require('../../heap/inlining').remoteInliningOn((e) => evaluate(cdp, e))
      if (heapProfile === null || typeof heapProfile !== 'object')
        throw new BadReply('it answered HeapProfiler.stopSampling without a profile')
      await cdp.send('HeapProfiler.disable')
    }
  }
  return {
    profile,
    heapProfile,
    origin,
    epochOrigin,
    heapStart,
    heapEnd,
    heapInlining: !heapInliningOff,
    exited: Boolean(ended && ended.exited),
  }
}

module.exports = { record, maxReplyBytes }
