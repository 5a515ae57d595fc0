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
//     thread's sampler — from the turn's start when the sampler was already running (continuous mode,
//     `keepWarm`: V8's samples of the whole stalled turn are still in its buffer, no harvest ran since),
//     else from now. The turn began when libuv last took the loop's time (it woke for the turn's I/O
//     callback, or was about to run its timers), which the hook reads inside the turn; a stall only a
//     beat saw is timed from the last beat plus the time the loop then slept (libuv's idle time).
//   - The turn ends: the next beat finishes the subscription and the whole stall's trace goes to
//     `onStall` (and to `dir`), within the rate limit. The turn does not end within `stuckMs` of the
//     detection: the helper asks hook('snapshot'), which harvests synchronously and hands back the trace
//     so far (`ended: false`), which the helper writes to `dir`: no turn of this loop is needed. That
//     one is taken whatever the rate limit (the hang nothing else diagnoses).
//   - A stall no interrupt reached (native code that never checks for one) is still noticed by the beat
//     after it; its trace then has the samples the sampler kept (keepWarm), else none. The last turn
//     of a thread that ends is seen on 'beforeExit' (the loop emptied) or 'exit' (process.exit).
// A stall inside the sampler's own work (a harvest) is the profiler's, never reported as the app's.

const path = require('node:path')
const { binding, rethrowTyped } = require('../native')
const { nowUs, timeOriginUs, traceClock } = require('../clock')
const { getSampler, effectiveIntervalUs, Subscription } = require('../sampler')
const { readOptions, number, func, boolean, string } = require('../args')
const { emptyTrace } = require('../trace')
const { isHookFrame } = require('../hook-expression')
const { stallFile, writeStallFile, stallFilePattern, removeStaleTemporaries, checkStallDir } = require('./stall-files')
const { settleWithin } = require('./deliveries')
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
  maxFiles: number({ min: 1, max: 1_000_000, integer: true }),
  stopTimeoutMs: number({ min: 0, max: 3_600_000, what: 'a number of ms' }),
}
const DEFAULTS = {
  thresholdMs: 300,
  keepWarm: false,
  maxPerMinute: 6,
  sampleInterval: 10,
  maxBufferSize: 10_000,
  stuckMs: 100,
  maxFiles: 100,
  stopTimeoutMs: 5000,
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
  /** performance.now() / nowUs() / the loop's idle time (ms) at the last beat. */
  #lastBeatMs
  #lastBeatUs
  #lastBeatIdleMs
  /** The start of the turn running now, when a detection read it and found it short yet (else null). */
  #seenTurn = null
  /**
   * The stall being traced: { seq, startMs, startUs, sub, snapshotSub, own, truncated, deferred, file,
   * stack, stackDelayMs }.
   */
  #current = null
  /** Times (ms) of the ended stalls' traces delivered in the last minute (the rate limit). */
  #recent = []
  #onExit
  #onBeforeExit
  /** The last 'beforeExit' found a stall (the next one only beats). */
  #stallAtExit = false
  #stopping = null
  #stopped = false
  /** The numbers of stalls no interrupt reached (the native watcher numbers the others from 1). */
  #nextOwnSeq = 1_000_000
  /** The number of the next stall trace delivered or written (its file's `<n>`, onStall's `index`). */
  #nextFile = 1
  /** Which files in `dir` are this watcher's kind, and how many it keeps. */
  #files = null
  #deliveries = new Set()
  /** The hook the helper calls (frames above it are the watcher's own). */
  #hookFn = null
  stats = { detected: 0, reported: 0, limited: 0, own: 0, snapshots: 0, errors: 0, undelivered: 0 }

  constructor(options) {
    const o = readOptions('watchStalls', options, OPTIONS, { defaults: DEFAULTS })
    if (!o.onStall && o.dir === undefined) {
      throw new TypeError('watchStalls: options.onStall or options.dir is required (where stall traces go)')
    }
    if (o.prefix !== undefined && (o.prefix === '' || /[\\/\0]/.test(o.prefix))) {
      throw new TypeError(`watchStalls: options.prefix must be a file name (no slash), got ${JSON.stringify(o.prefix)}`)
    }
    this.#files = { pattern: stallFilePattern(o.prefix, o.prefix === undefined), maxFiles: o.maxFiles }
    o.prefix ??= `stall-${process.pid}`
    if (o.dir !== undefined) {
      if (o.dir === '' || o.dir.includes('\0')) {
        throw new TypeError(`watchStalls: options.dir must be a directory's path, got ${JSON.stringify(o.dir)}`)
      }
      // Refused now, not at the first stall: a directory that cannot be made or written.
      o.dir = path.resolve(o.dir)
      checkStallDir('watchStalls', o.dir)
      removeStaleTemporaries(o.dir)
    }
    this.#o = o
    this.#intervalUs = effectiveIntervalUs(o.sampleInterval)
    const engine = getSampler()
    if (o.keepWarm) {
      // A listener that keeps V8 sampling: the samples of a stalled turn are in V8's buffer from its start.
      this.#warmSub = new Subscription({ startUs: nowUs(), intervalUs: this.#intervalUs, record: false })
      engine.add(this.#warmSub)
    }
    // The first beat is taken before the native watcher starts counting: a stall it reports from the
    // first instant is then never younger here than the threshold (the hook would call it over).
    this.#lastBeatMs = performance.now()
    this.#lastBeatUs = nowUs()
    this.#lastBeatIdleMs = performance.nodeTiming.idleTime
    try {
      this.#watcher = new binding.StallWatcher(o.thresholdMs, checkMsFor(o.thresholdMs))
    } catch (err) {
      this.#release()
      rethrowTyped(err)
    }
    // A stall's trace carries the labels of the code it caught (a request's route): the request
    // integrations enter their contexts while a watcher looks (lib/labels.js).
    watchContexts(1)
    this.#beatTimer = setInterval(() => this.#beat(), beatMsFor(o.thresholdMs))
    this.#beatTimer.unref()
    // The helper's way in (a non-enumerable global the inspector can call).
    // Run by a V8 interrupt, anywhere in the app's code (even inside Node's timers): see fromInterrupt.
    this.#hookFn = (what, seq, askedAt) => getSampler().fromInterrupt(() => this.#hook(what, seq, askedAt))
    Object.defineProperty(globalThis, Symbol.for(HOOK), {
      value: this.#hookFn,
      configurable: true,
      writable: true,
    })
    this.#startHelper()
    // The thread's last turn: the loop emptied ('beforeExit': the beat that ends a stall, its trace
    // delivered as any other), or process.exit() / an uncaught exception ('exit': written now).
    this.#onBeforeExit = () => {
      // Once per emptying of the loop: the delivery keeps it going, and the 'beforeExit' after that
      // must not take the delivery's own wait for another stall.
      const seen = this.stats.detected
      if (this.#stallAtExit) this.#beat({ look: false })
      else this.#beat()
      this.#stallAtExit = this.stats.detected > seen
    }
    this.#onExit = () => {
      this.#deliverAtExit()
      this.#exitHelper()
    }
    process.on('beforeExit', this.#onBeforeExit)
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
          files: this.#files,
          state: this.#exitState,
        },
      })
      helperThreadIds.add(this.#helper.threadId)
      this.#helper.on('error', (err) => this.#fail(err))
      // What the helper could not write (a full disk, a directory removed), once this loop turns.
      this.#helper.on('message', (message) => {
        if (message && message.error) this.#fail(Object.assign(new Error(message.error.message), message.error))
      })
      // After the listeners: a 'message' listener added later would hold the process open again.
      this.#helper.unref()
    } catch (err) {
      this.#helper = null
      this.#fail(err)
    }
  }

  #exitState = null

  #exitHelper(helper = this.#helper) {
    // Let the helper drop its inspector session before Node tears the process down (a session
    // connected to the main thread at exit makes Node wait for "the debugger").
    if (helper && this.#exitState && Atomics.load(this.#exitState, 0) === 1) {
      helper.postMessage('exit')
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

  /**
   * Whether an ended stall's trace may go out now (the rate limit: `maxPerMinute`); `take`: it goes,
   * and counts.
   */
  #allowed(nowMs, take) {
    while (this.#recent.length > 0 && nowMs - this.#recent[0] > 60_000) this.#recent.shift()
    if (this.#recent.length >= this.#o.maxPerMinute) return false
    if (take) this.#recent.push(nowMs)
    return true
  }

  /**
   * When the stalled turn began, `{ ms, us }` (performance.now()'s and nowUs()'s clocks). `inTurn`
   * (the detection, on this thread inside the turn): when the loop last took its time — it woke for
   * the turn's I/O callback, or was about to run its timers (binding.loopTurnAgeMs). Else, and where
   * libuv's clock cannot be read: the last beat plus the time the loop then slept (libuv's idle time:
   * the turn began when it woke); exact while V8 does not sample, else early by up to a beat (each
   * sampling signal that wakes the loop's wait drops that wait from libuv's count).
   */
  #turnStart(inTurn) {
    if (!inTurn && this.#seenTurn !== null) return this.#seenTurn
    const nowMs = performance.now()
    const slept = Math.max(0, performance.nodeTiming.idleTime - this.#lastBeatIdleMs)
    let ms = Math.min(this.#lastBeatMs + slept, nowMs)
    const age = inTurn ? binding.loopTurnAgeMs() : null
    if (age !== null) ms = Math.min(Math.max(ms, nowMs - age), nowMs)
    return { ms, us: this.#lastBeatUs + (ms - this.#lastBeatMs) * 1000 }
  }

  /**
   * Starts tracing a stall (its turn still running, unless `ended`: the beat after it saw it). The
   * rate limit applies once it ended (#finish): a stall seen while it runs may be the hang. With the
   * sampler running, its subscriptions start at the turn's start (V8's samples are in its buffer);
   * else V8 starts now — except past the rate limit, where that waits until the stall proves stuck
   * (hook 'snapshot'), so the ordinary stalls the limit drops cost no V8 start.
   */
  #begin(seq, { own = false, ended = false } = {}) {
    const engine = getSampler()
    const start = this.#turnStart(!ended)
    // At a detection through the interrupt this runs on the stalled thread inside the stalled code: a
    // sampler started here records the context of that code first (lib/labels.js), so the stall's
    // samples carry its labels (a request's route).
    const current = {
      seq,
      startMs: start.ms,
      startUs: start.us,
      sub: null,
      snapshotSub: null,
      own,
      truncated: false,
      deferred: false,
      file: null,
    }
    this.#current = current
    if (own) {
      this.stats.own++
      return current
    }
    if (engine.running) {
      this.#subscribe(current, start.us)
    } else if (!ended) {
      // (An ended one: V8 never ran during it, nothing to harvest.)
      if (this.#allowed(performance.now(), false)) this.#subscribe(current, nowUs())
      else current.deferred = true
    }
    return current
  }

  /** The stall's subscriptions of the thread's sampler, from `startUs`: the trace, and the snapshot's. */
  #subscribe(current, startUs) {
    const engine = getSampler()
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
  }

  /**
   * The trace of `sub` so far, harvested and built now on this thread (JSON text, `stall` in its
   * `jsprof`); `sub` leaves the sampler. Null, doing nothing, when the sampler is busy (an interrupt
   * landed inside its own work).
   */
  #traceNow(sub, stall) {
    const engine = getSampler()
    if (engine.busy) return null
    sub.stopAt(nowUs())
    if (!engine.flushSync()) return null
    engine.remove(sub)
    const recording = sub.recording
    sub.recording = null
    return recording === null
      ? JSON.stringify(withStall(emptyTrace(traceClock(), this.#intervalUs), stall))
      : recording.buildJson(timeOriginUs(), this.#sidecar(stall))
  }

  /**
   * Runs on this thread through a V8 interrupt (the helper's inspector session), or a task. `askedAt`:
   * this thread's CPU time (ms) when the helper asked, where it can be read (Linux).
   */
  #hook(what, seq, askedAt) {
    if (this.#stopped) return 'over'
    const engine = getSampler()
    const now = performance.now()
    if (what === 'detected') {
      if (this.#current !== null) return this.#current.seq === seq ? 'ok' : 'over'
      // The loop turned since: the stall is over, and the beat after it saw it.
      if (now - this.#lastBeatMs < this.#o.thresholdMs) return 'over'
      // No beat for the threshold, but the loop slept part of it: the turn is a stall once it ran that
      // long itself. Ask again then (ms).
      const turn = this.#turnStart(true)
      const early = this.#o.thresholdMs - (now - turn.ms)
      if (early >= 1) {
        // Should the turn end before that, the beat after it has its start.
        this.#seenTurn = turn
        return Math.ceil(early)
      }
      this.stats.detected++
      // First, before any work of ours (a cold V8 start): the stack, and how long the thread ran since
      // it was asked. Native code takes no interrupt: a stack taken after the thread ran on shows the
      // JS that ran once it returned. (CPU time, not wall time: a thread descheduled by a loaded
      // machine is late without having run.)
      const cpuMs = Number.isFinite(askedAt) ? binding.stallThreadCpuMs(this.#watcher.id) : null
      const stack = stackBelow(this.#hookFn)
      // The interrupt landed inside the sampler's own work: this stall is the profiler's.
      const current = this.#begin(seq, { own: engine.busy })
      if (current.own) return 'skip'
      current.stack = stack
      if (stack && cpuMs !== null) current.stackDelayMs = Math.max(0, Math.round(cpuMs - askedAt))
      return 'ok'
    }
    if (what === 'snapshot') {
      const current = this.#current
      if (current === null || current.seq !== seq || current.own) return 'over'
      if (current.deferred) {
        // Past the rate limit with V8 not running, and still stalled: the hang. Its trace from now.
        current.deferred = false
        this.#subscribe(current, nowUs())
        return 'later'
      }
      if (current.snapshotSub === null) return 'over'
      const stall = stallInfo(now - current.startMs, false, current, this.#o.thresholdMs)
      let json
      try {
        json = this.#traceNow(current.snapshotSub, stall)
      } catch (err) {
        this.#fail(err)
        return 'over'
      }
      if (json === null) return 'busy'
      current.snapshotSub = null
      this.stats.snapshots++
      current.file ??= this.#nextFile++
      return { file: current.file, json }
    }
    return 'over'
  }

  /** Whether the turn that is ending (or just ended) at `nowMs` ran for the threshold or longer. */
  #stalled(nowMs) {
    return nowMs - this.#turnStart(false).ms >= this.#o.thresholdMs
  }

  /** The loop turned: a stall being traced ends; a stall no interrupt reached is traced (`look`). */
  #beat({ look = true } = {}) {
    this.#watcher.beat()
    const nowMs = performance.now()
    const current = this.#current
    if (current === null && look && this.#stalled(nowMs)) {
      // A stall no interrupt reached: trace it now from the samples the sampler kept, if it ran.
      const own = ownShare(getSampler().stats.recentOwnWindows, this.#lastBeatUs, nowUs()) > 0.5
      this.stats.detected++
      this.#finish(this.#begin(this.#nextOwnSeq++, { own, ended: true }), nowMs)
    } else if (current !== null) {
      this.#finish(current, nowMs)
    }
    this.#lastBeatMs = nowMs
    this.#lastBeatUs = nowUs()
    this.#lastBeatIdleMs = performance.nodeTiming.idleTime
    this.#seenTurn = null
  }

  /**
   * Whether the ended stall `current` goes out: not the profiler's own, within the rate limit (else
   * counted, and its subscriptions leave the sampler).
   */
  #delivers(current, endUs) {
    const engine = getSampler()
    if (current.snapshotSub !== null) engine.remove(current.snapshotSub)
    current.snapshotSub = null
    // The profiler's own (counted when it began).
    let dropped = current.own
    // Mostly the sampler's own harvests (the interrupt came only once they were done): not the app's.
    if (!dropped && ownShare(engine.stats.recentOwnWindows, current.startUs, endUs) > 0.5) {
      this.stats.own++
      dropped = true
    }
    if (!dropped && !this.#allowed(performance.now(), true)) {
      this.stats.limited++
      dropped = true
    }
    if (!dropped) return true
    if (current.sub !== null) {
      current.sub.stopAt(endUs)
      engine.remove(current.sub)
    }
    return false
  }

  /** The stalled turn ended (at `endMs`): its trace goes to onStall and `dir`. */
  #finish(current, endMs) {
    this.#current = null
    const endUs = nowUs()
    if (!this.#delivers(current, endUs)) return
    const engine = getSampler()
    const { sub } = current
    if (sub !== null) sub.stopAt(endUs)
    const stall = stallInfo(endMs - current.startMs, true, current, this.#o.thresholdMs)
    this.stats.reported++
    current.file ??= this.#nextFile++
    const origin = timeOriginUs()
    const empty = () => withStall(emptyTrace(traceClock(), this.#intervalUs), stall)
    const built =
      sub === null
        ? Promise.resolve(empty())
        : engine
            .finish(sub)
            .then(() => (sub.recording === null ? empty() : sub.trace(origin, this.#sidecar(stall))))
            .catch(rethrowTyped)
    const done = built
      .then((trace) => this.#hand(current, endMs, stall, trace, JSON.stringify(trace)))
      .catch((err) => this.#fail(err))
      .finally(() => this.#deliveries.delete(done))
    this.#deliveries.add(done)
  }

  /** Writes a stall's trace to `dir` and hands it to onStall (the promise it returns, if any). */
  #hand(current, endMs, stall, trace, json) {
    if (this.#o.dir !== undefined) {
      writeStallFile(stallFile(this.#o.dir, this.#o.prefix, current.file), json, this.#files)
    }
    if (!this.#o.onStall) return
    // The shape of a continuous chunk, so an exporter's push takes it (and labels it stall=true).
    const origin = performance.timeOrigin
    return this.#o.onStall({
      index: current.file,
      startTime: current.startMs,
      endTime: endMs,
      startUnixMs: origin + current.startMs,
      endUnixMs: origin + endMs,
      sampleInterval: this.#intervalUs / 1000,
      truncated: current.truncated,
      trace,
      stall,
    })
  }

  /**
   * The thread ends with no turn to come (process.exit(), an uncaught exception; a worker's too): a
   * stall it was in, or that its last turn was, is built, written and handed to onStall now.
   */
  #deliverAtExit() {
    if (this.#stopped) return
    const nowMs = performance.now()
    let current = this.#current
    if (current === null && this.#stalled(nowMs)) {
      this.stats.detected++
      current = this.#begin(this.#nextOwnSeq++, { ended: true })
    }
    if (current === null) return
    this.#current = null
    try {
      if (!this.#delivers(current, nowUs())) return
      const stall = stallInfo(nowMs - current.startMs, true, current, this.#o.thresholdMs)
      const json =
        current.sub === null
          ? JSON.stringify(withStall(emptyTrace(traceClock(), this.#intervalUs), stall))
          : this.#traceNow(current.sub, stall)
      if (json === null) return // inside the sampler's own work: nothing can be harvested now
      this.stats.reported++
      current.file ??= this.#nextFile++
      this.#hand(current, nowMs, stall, this.#o.onStall ? JSON.parse(json) : null, json)
    } catch (err) {
      this.#fail(err)
    }
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

  /**
   * Stops watching; resolves once every stall trace taken was delivered (onStall's promises settled),
   * or `stopTimeoutMs` after the call: those still pending then are counted in `stats.undelivered`.
   */
  stop() {
    this.#stopping ??= this.#stop()
    return this.#stopping
  }

  async #stop() {
    // A stall this very turn is in (or the last one, not beaten yet) is delivered with the others.
    this.#beat()
    this.#stopped = true
    watchContexts(-1)
    clearInterval(this.#beatTimer)
    this.#watcher.stop()
    process.off('exit', this.#onExit)
    process.off('beforeExit', this.#onBeforeExit)
    if (globalThis[Symbol.for(HOOK)]) delete globalThis[Symbol.for(HOOK)]
    this.#release()
    const helper = this.#helper
    this.#helper = null
    if (helper) {
      this.#exitHelper(helper)
      await helper.terminate()
    }
    if (watching === this) watching = null
    this.stats.undelivered += await settleWithin(this.#deliveries, this.#o.stopTimeoutMs)
  }
}

/** `jsprof.stall`: its members in lexicographic (WebIDL's) order; `stack` (and its delay) only when known. */
function stallInfo(durationMs, ended, current, thresholdMs) {
  const stack = current.stack ? { stack: current.stack, stackDelayMs: current.stackDelayMs } : {}
  if (stack.stackDelayMs === undefined) delete stack.stackDelayMs
  return { durationMs, ended, ...stack, start: current.startMs, thresholdMs }
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

module.exports = { watchStalls, StallWatch, beatMsFor, helperThreadIds, ownShare, OPTIONS, DEFAULTS }
