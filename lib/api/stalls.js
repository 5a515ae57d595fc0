'use strict'
// Event-loop stall traces: `watchStalls({ thresholdMs, onStall, dir, keepWarm, maxPerMinute })`.
//
// How a stall is seen and traced (docs/production.md#event-loop-stalls-watchstalls):
//   - The watched thread beats: an unref'd timer calls the native watcher's beat() every `beatMs` (a
//     quarter of the threshold, 10-100 ms). A native thread (src/stall_watcher.rs) wakes when the last
//     beat is `thresholdMs` old; if no beat came since, the loop is stalled, and it tells the helper worker
//     (./stalls-worker.js), whose event loop is free.
//   - The helper reaches this thread through its inspector session (V8 interrupts reach a thread that
//     spins, as `jsprof record` stops one): hook('detected') starts the stall's subscription of the
//     thread's sampler — from the last beat when the sampler was already running (continuous mode,
//     `keepWarm`: V8's samples of the whole stalled turn are still in its buffer, no harvest ran since),
//     else from now.
//   - The turn ends: the next beat finishes the subscription and the whole stall's trace goes to
//     `onStall` (and to `dir`). The turn does not end within `stuckMs` of the detection: the helper asks
//     hook('snapshot'), which harvests synchronously and hands back the trace so far (`ended: false`),
//     which the helper writes to `dir`: no turn of this loop is needed.
//   - A stall no interrupt reached (native code that never checks for one) is still noticed by the beat
//     after it; its trace then has the samples the sampler kept (keepWarm), else none.
// A stall inside the sampler's own work (a harvest) is the profiler's, never reported as the app's.

const path = require('node:path')
const { binding, rethrowTyped } = require('../native')
const { nowUs, timeOriginUs, traceClock } = require('../clock')
const { getSampler, effectiveIntervalUs, Subscription } = require('../sampler')
const { readOptions, number, func, boolean, string } = require('../args')
const { emptyTrace } = require('../trace')
const { isHookFrame } = require('../hook-expression')
const { stallFile, writeAtomic } = require('./stall-files')
const { watchContexts } = require('../labels')

const HOOK = 'jsprof.stalls'

const OPTIONS = {
  thresholdMs: number({ min: 10, max: 3_600_000, what: 'a number of ms' }),
  onStall: func(),
  onError: func(),
  dir: string(),
  prefix: string(),
  keepWarm: boolean(),
  maxPerMinute: number({ min: 0, max: 600, integer: true }),
  sampleInterval: number({ min: 0, max: 1000, what: 'a number of ms' }),
  maxBufferSize: number({ min: 1, max: 1_000_000, integer: true }),
  stuckMs: number({ min: 0, max: 60_000, what: 'a number of ms' }),
}
const DEFAULTS = {
  thresholdMs: 300,
  keepWarm: false,
  maxPerMinute: 6,
  sampleInterval: 10,
  maxBufferSize: 10_000,
  stuckMs: 100,
}

/**
 * How often the loop beats for a threshold (ms): a quarter of it, 10-100 ms. Each beat is a timer
 * wake-up (the watcher's whole cost on an idle loop: docs/bench.md#stall-traces); a stall's start and
 * length are known to a beat.
 */
function beatMsFor(thresholdMs) {
  return Math.min(100, Math.max(10, Math.floor(thresholdMs / 4)))
}

/** How often the native thread looks for the end of a stall it reported (ms). */
function checkMsFor(thresholdMs) {
  return Math.min(25, Math.max(2, Math.floor(thresholdMs / 20)))
}

let watching = null
/** The helper threads' ids (jsprof record does not count them as the app's workers). */
const helperThreadIds = new Set()

class StallWatch {
  #o
  #watcher
  #beatTimer
  #helper = null
  #intervalUs
  #warmSub = null
  /** performance.now() / nowUs() of the last beat. */
  #lastBeatMs
  #lastBeatUs
  /** The stall being traced: { seq, startMs, startUs, sub, snapshotSub, own }. */
  #current = null
  /** Times (ms) of the stalls reported in the last minute (the rate limit). */
  #recent = []
  #onExit
  #stopped = false
  #nextOwnSeq = 1_000_000
  #deliveries = new Set()
  /** The hook the helper calls (frames above it are the watcher's own). */
  #hookFn = null
  stats = { detected: 0, reported: 0, limited: 0, own: 0, snapshots: 0, errors: 0 }

  constructor(options) {
    const o = readOptions('watchStalls', options, OPTIONS, { defaults: DEFAULTS })
    if (!o.onStall && o.dir === undefined) {
      throw new TypeError('watchStalls: options.onStall or options.dir is required (where stall traces go)')
    }
    if (o.prefix !== undefined && (o.prefix === '' || /[\\/\0]/.test(o.prefix))) {
      throw new TypeError(`watchStalls: options.prefix must be a file name (no slash), got ${JSON.stringify(o.prefix)}`)
    }
    o.prefix ??= `stall-${process.pid}`
    if (o.dir !== undefined) {
      const fs = require('node:fs')
      fs.mkdirSync(o.dir, { recursive: true })
      o.dir = path.resolve(o.dir)
    }
    this.#o = o
    this.#intervalUs = effectiveIntervalUs(o.sampleInterval)
    const engine = getSampler()
    if (o.keepWarm) {
      // A listener that keeps V8 sampling: the samples of a stalled turn are in V8's buffer from its start.
      this.#warmSub = new Subscription({ startUs: nowUs(), intervalUs: this.#intervalUs, record: false })
      engine.add(this.#warmSub)
    }
    try {
      this.#watcher = new binding.StallWatcher(o.thresholdMs, checkMsFor(o.thresholdMs))
    } catch (err) {
      this.#release()
      rethrowTyped(err)
    }
    // A stall's trace carries the labels of the code it caught (a request's route): the request
    // integrations enter their contexts while a watcher looks (lib/labels.js).
    watchContexts(1)
    this.#lastBeatMs = performance.now()
    this.#lastBeatUs = nowUs()
    this.#beatTimer = setInterval(() => this.#beat(), beatMsFor(o.thresholdMs))
    this.#beatTimer.unref()
    // The helper's way in (a non-enumerable global the inspector can call).
    // Run by a V8 interrupt, anywhere in the app's code (even inside Node's timers): see fromInterrupt.
    this.#hookFn = (what, seq) => getSampler().fromInterrupt(() => this.#hook(what, seq))
    Object.defineProperty(globalThis, Symbol.for(HOOK), {
      value: this.#hookFn,
      configurable: true,
      writable: true,
    })
    this.#startHelper()
    this.#onExit = () => this.#exitHelper()
    process.on('exit', this.#onExit)
  }

  get thresholdMs() {
    return this.#o.thresholdMs
  }

  #startHelper() {
    const { isMainThread, Worker } = require('node:worker_threads')
    // A worker's own stalls are seen by its beats (the helper's inspector session reaches only the
    // main thread): traced when the turn ends, with the samples kept (keepWarm), never while it spins.
    if (!isMainThread) return
    this.#exitState = new Int32Array(new SharedArrayBuffer(8))
    try {
      this.#helper = new Worker(path.join(__dirname, 'stalls-worker.js'), {
        name: 'jsprof stalls',
        execArgv: [],
        stdout: false,
        workerData: {
          id: this.#watcher.id,
          hook: HOOK,
          stuckMs: this.#o.stuckMs,
          dir: this.#o.dir ?? null,
          name: this.#o.prefix,
          state: this.#exitState,
        },
      })
      helperThreadIds.add(this.#helper.threadId)
      this.#helper.unref()
      this.#helper.on('error', (err) => this.#fail(err))
    } catch (err) {
      this.#helper = null
      this.#fail(err)
    }
  }

  #exitState = null

  #exitHelper() {
    // Let the helper drop its inspector session before Node tears the process down (a session
    // connected to the main thread at exit makes Node wait for "the debugger").
    if (this.#helper && this.#exitState && Atomics.load(this.#exitState, 0) === 1) {
      this.#helper.postMessage('exit')
      Atomics.wait(this.#exitState, 1, 0, 250)
    }
  }

  #fail(err) {
    this.stats.errors++
    const onError = this.#o.onError
    try {
      if (onError) onError(err)
      else process.emitWarning(`jsprof-node: stall watcher: ${err && err.message}`)
    } catch {}
  }

  #sidecar(stall) {
    const clock = traceClock()
    return { pid: clock.pid, threadId: clock.threadId, timeOrigin: clock.timeOrigin, stall }
  }

  #allowed(nowMs) {
    while (this.#recent.length > 0 && nowMs - this.#recent[0] > 60_000) this.#recent.shift()
    if (this.#recent.length >= this.#o.maxPerMinute) return false
    this.#recent.push(nowMs)
    return true
  }

  /** Starts tracing a stall that began at the last beat; false when rate-limited or the profiler's own. */
  #begin(seq, { own = false } = {}) {
    const engine = getSampler()
    const fromStart = engine.running
    const startUs = fromStart ? this.#lastBeatUs : nowUs()
    // At a detection through the interrupt this runs on the stalled thread inside the stalled code: a
    // sampler started here records the context of that code first (lib/labels.js), so the stall's
    // samples carry its labels (a request's route).
    const current = { seq, startMs: this.#lastBeatMs, startUs, sub: null, snapshotSub: null, own, truncated: false }
    this.#current = current
    if (own) {
      this.stats.own++
      return current
    }
    if (!this.#allowed(performance.now())) {
      this.stats.limited++
      current.own = true // nothing to deliver
      return current
    }
    const make = () =>
      new Subscription({
        startUs,
        intervalUs: this.#intervalUs,
        maxSamples: this.#o.maxBufferSize,
        onFull() {
          current.truncated = true
        },
      })
    current.sub = make()
    engine.add(current.sub)
    if (this.#helper) {
      current.snapshotSub = make()
      engine.add(current.snapshotSub)
    }
    return current
  }

  /** Runs on this thread through a V8 interrupt (the helper's inspector session), or a task. */
  #hook(what, seq) {
    if (this.#stopped) return 'over'
    const engine = getSampler()
    const now = performance.now()
    if (what === 'detected') {
      if (this.#current !== null) return this.#current.seq === seq ? 'ok' : 'over'
      // The loop turned since: the stall is over, and the beat after it saw it.
      if (now - this.#lastBeatMs < this.#o.thresholdMs) return 'over'
      this.stats.detected++
      // The interrupt landed inside the sampler's own work: this stall is the profiler's.
      const current = this.#begin(seq, { own: engine.busy })
      if (!current.own) current.stack = stackBelow(this.#hookFn)
      return current.own ? 'skip' : 'ok'
    }
    if (what === 'snapshot') {
      const current = this.#current
      if (current === null || current.seq !== seq || current.own || current.snapshotSub === null) return 'over'
      if (engine.busy) return 'busy'
      const snap = current.snapshotSub
      snap.stopAt(nowUs())
      if (!engine.flushSync()) return 'busy'
      current.snapshotSub = null
      engine.remove(snap)
      this.stats.snapshots++
      const stall = stallInfo(now - current.startMs, false, current, this.#o.thresholdMs)
      const recording = snap.recording
      snap.recording = null
      try {
        return recording === null
          ? JSON.stringify(withStall(emptyTrace(traceClock(), this.#intervalUs), stall))
          : recording.buildJson(timeOriginUs(), this.#sidecar(stall))
      } catch (err) {
        this.#fail(err)
        return 'over'
      }
    }
    return 'over'
  }

  #beat() {
    this.#watcher.beat()
    const nowMs = performance.now()
    const gapMs = nowMs - this.#lastBeatMs
    const current = this.#current
    if (current === null && gapMs >= this.#o.thresholdMs) {
      // A stall no interrupt reached: trace it now from the samples the sampler kept, if it ran.
      const own = ownShare(getSampler().stats.recentOwnWindows, this.#lastBeatUs, nowUs()) > 0.5
      this.stats.detected++
      this.#finish(this.#begin(this.#nextOwnSeq++, { own }), nowMs)
    } else if (current !== null) {
      this.#finish(current, nowMs)
    }
    this.#lastBeatMs = nowMs
    this.#lastBeatUs = nowUs()
  }

  /** The stalled turn ended (at `endMs`): its trace goes to onStall and `dir`. */
  #finish(current, endMs) {
    this.#current = null
    const engine = getSampler()
    if (current.snapshotSub !== null) engine.remove(current.snapshotSub)
    if (current.own || current.sub === null) return
    const { sub } = current
    const endUs = nowUs()
    // Mostly the sampler's own harvests (the interrupt came only once they were done): not the app's.
    if (ownShare(engine.stats.recentOwnWindows, this.#lastBeatUs, endUs) > 0.5) {
      this.stats.own++
      sub.stopAt(endUs)
      engine.remove(sub)
      return
    }
    sub.stopAt(endUs)
    const stall = stallInfo(endMs - current.startMs, true, current, this.#o.thresholdMs)
    this.stats.reported++
    const origin = timeOriginUs()
    const done = engine
      .finish(sub)
      .then(() =>
        sub.recording === null
          ? withStall(emptyTrace(traceClock(), this.#intervalUs), stall)
          : sub.trace(origin, this.#sidecar(stall)),
      )
      .catch(rethrowTyped)
      .then((trace) => {
        if (this.#o.dir !== undefined) {
          writeAtomic(stallFile(this.#o.dir, this.#o.prefix, current.seq), JSON.stringify(trace))
        }
        if (!this.#o.onStall) return
        // The shape of a continuous chunk, so an exporter's push takes it (and labels it stall=true).
        const origin = performance.timeOrigin
        return this.#o.onStall({
          index: current.seq,
          startTime: current.startMs,
          endTime: endMs,
          startUnixMs: origin + current.startMs,
          endUnixMs: origin + endMs,
          sampleInterval: this.#intervalUs / 1000,
          truncated: current.truncated,
          trace,
          stall,
        })
      })
      .catch((err) => this.#fail(err))
      .finally(() => this.#deliveries.delete(done))
    this.#deliveries.add(done)
  }

  #release() {
    if (this.#warmSub) {
      const sub = this.#warmSub
      this.#warmSub = null
      sub.stopAt(nowUs())
      getSampler()
        .finish(sub)
        .catch(() => {})
    }
  }

  /** Stops watching; resolves once every stall trace taken was delivered. */
  async stop() {
    if (!this.#stopped) {
      this.#stopped = true
      watchContexts(-1)
      clearInterval(this.#beatTimer)
      this.#watcher.stop()
      process.off('exit', this.#onExit)
      if (globalThis[Symbol.for(HOOK)]) delete globalThis[Symbol.for(HOOK)]
      const current = this.#current
      if (current !== null) this.#finish(current, performance.now())
      this.#release()
      if (this.#helper) {
        this.#exitHelper()
        await this.#helper.terminate()
        this.#helper = null
      }
      if (watching === this) watching = null
    }
    while (this.#deliveries.size > 0) await Promise.all([...this.#deliveries])
  }
}

/** `jsprof.stall`: its members in lexicographic (WebIDL's) order; `stack` only when known. */
function stallInfo(durationMs, ended, current, thresholdMs) {
  return current.stack
    ? { durationMs, ended, stack: current.stack, start: current.startMs, thresholdMs }
    : { durationMs, ended, start: current.startMs, thresholdMs }
}

/** The most frames of the stack at the detection kept, and the longest frame (characters). */
const MAX_FRAMES = 32
const MAX_FRAME_CHARS = 500

/**
 * The JS stack of this thread below `fn` (the helper's hook: it runs through a V8 interrupt inside the
 * stalled code), innermost first, as `Error.stack` writes its frames without "at "; undefined when it
 * cannot be had. The app's `Error.prepareStackTrace` (source-map-support and the like) is set aside for
 * the capture.
 */
function stackBelow(fn) {
  const { stackTraceLimit, prepareStackTrace } = Error
  try {
    Error.stackTraceLimit = MAX_FRAMES + 1
    Error.prepareStackTrace = undefined
    const holder = {}
    Error.captureStackTrace(holder, fn)
    const lines = String(holder.stack).split('\n').slice(1)
    const frames = lines.map((line) => line.trim().replace(/^at /, '').slice(0, MAX_FRAME_CHARS))
    // The inspector's evaluated expression is the outermost frame above the stalled code.
    if (frames.length > 0 && isHookFrame(frames[0])) frames.shift()
    return frames.length > 0 ? frames.slice(0, MAX_FRAMES) : undefined
  } catch {
    return undefined
  } finally {
    Error.stackTraceLimit = stackTraceLimit
    Error.prepareStackTrace = prepareStackTrace
  }
}

/** The share of [fromUs, toUs] the sampler's own recent harvests took. */
function ownShare(windows, fromUs, toUs) {
  if (!(toUs > fromUs)) return 0
  let own = 0
  for (const [a, b] of windows) own += Math.max(0, Math.min(b, toUs) - Math.max(a, fromUs))
  return own / (toUs - fromUs)
}

/** `trace` with `jsprof.stall` set, its members in lexicographic (WebIDL's) order. */
function withStall(trace, stall) {
  const jsprof = { ...trace.jsprof, stall }
  const ordered = {}
  for (const key of Object.keys(jsprof).sort()) ordered[key] = jsprof[key]
  return { ...trace, jsprof: ordered }
}

/** Watches this thread's event loop for stalls (one watcher per thread); returns a handle with `stop()`. */
function watchStalls(options) {
  if (watching !== null) throw new TypeError('watchStalls: this thread is already watched (stop() the first watcher)')
  const watch = new StallWatch(options)
  watching = watch
  return watch
}

module.exports = { watchStalls, StallWatch, beatMsFor, helperThreadIds, ownShare }
