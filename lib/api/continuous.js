'use strict'
// Continuous profiling: `startContinuous({ sampleInterval, chunkSeconds, onChunk })` delivers one
// complete ProfilerTrace every `chunkSeconds`, for as long as it runs.
//
// Each chunk is a subscription of the thread's shared sampler. At a chunk boundary T the running
// recording is stopped at T (it keeps samples with t <= T) and the next one starts exclusively at T
// (it keeps samples with t > T), before any harvest: the hand-off loses and duplicates nothing. The
// sampler's bridged restarts keep V8 sampling across harvests, so there is no gap either.
//
// The main thread pays, per harvest (about every 1000 samples: 10 s at 10 ms, and once per chunk), a
// bridged V8 restart and the packing of V8's profile into Rust (docs/bench.md#main-thread-figures); the
// trace is built off the main thread and only its sample objects are zipped on it (see lib/trace.js).

const { rethrowTyped } = require('../native')
const { nowUs, timeOriginUs, traceClock } = require('../clock')
const { getSampler, effectiveIntervalUs, Subscription } = require('../sampler')
const { readOptions, mandatory, number, func, any, boolean } = require('../args')
const { getHeapSampler } = require('../heap/sampler')
const { readHeapOptions, infoOf } = require('./heap')
const { settleWithin } = require('./deliveries')

const OPTIONS = {
  onChunk: mandatory(func()),
  onError: func(),
  sampleInterval: number({ min: 0, max: 2 ** 31 / 1000 }),
  chunkSeconds: number({ min: 0.01, max: 86_400 }),
  maxBufferSize: number({ min: 1, max: 2 ** 32 - 1, integer: true }),
  // true, or HeapProfiler's options: each chunk also carries a heap profile (checked by readHeapOptions).
  heap: any(),
  // watchStalls' options: stall traces of this thread too, from the stalled turn's start (the sampler runs).
  stalls: any(),
  // The samples of code V8 inlined into a function go to the inlined function (docs/analysis.md).
  inlined: boolean(),
  // How long stop() waits for onChunk's promises (ms); those still pending then are counted, not awaited.
  stopTimeoutMs: number({ min: 0, max: 3_600_000, what: 'a number of ms' }),
}
const DEFAULTS = { sampleInterval: 10, chunkSeconds: 10, stopTimeoutMs: 5000 }

class ContinuousProfiler {
  #intervalUs
  #chunkMs
  #maxSamples
  #onChunk
  #onError
  #current = null
  #timer = null
  #index = 0
  /** Whether the last chunk was cut (by stop() or stopSync()); stop()'s one promise, once called. */
  #stopped = false
  #stopping = null
  #stopTimeoutMs
  #deliveries = new Set()
  #onBeforeExit = null
  #inlined = false
  /** The heap side (`options.heap`): its settings, its consumer of the thread's heap sampler, since when. */
  #heap = null
  /** The stall watcher (`options.stalls`), or null. */
  #stalls = null
  stats = { chunks: 0, samples: 0, truncated: 0, errors: 0, undelivered: 0 }

  constructor(options) {
    const o = readOptions('startContinuous', options, OPTIONS, { defaults: DEFAULTS, required: true })
    this.#intervalUs = effectiveIntervalUs(o.sampleInterval)
    this.#chunkMs = o.chunkSeconds * 1000
    // Room for twice the expected samples (timer lateness), never unbounded.
    const expected = Math.ceil((this.#chunkMs * 1000) / this.#intervalUs)
    this.#maxSamples = Math.min(2 ** 32 - 1, o.maxBufferSize ?? expected * 2 + 1000)
    this.#onChunk = o.onChunk
    this.#inlined = o.inlined === true
    this.#stopTimeoutMs = o.stopTimeoutMs
    this.#onError =
      o.onError || ((err) => process.emitWarning(`jsprof-node: continuous chunk failed: ${err && err.message}`))
    if (o.heap !== undefined && o.heap !== false) {
      const settings = readHeapOptions('startContinuous (options.heap)', o.heap === true ? undefined : o.heap)
      this.#heap = { settings, consumer: {}, startTime: performance.now() }
      getHeapSampler().acquire(this.#heap.consumer, settings)
    }
    if (o.stalls !== undefined && o.stalls !== false) {
      const { watchStalls } = require('./stalls')
      const given = o.stalls === true ? {} : o.stalls
      if (given === null || typeof given !== 'object') {
        throw new TypeError(`startContinuous: options.stalls must be true or watchStalls' options, got ${typeof given}`)
      }
      // Stall traces go where the chunks go (chunk.stall set: the exporters label them stall=true).
      this.#stalls = watchStalls({
        sampleInterval: o.sampleInterval,
        onError: o.onError,
        onStall: (stall) => this.#onChunk(stall),
        stopTimeoutMs: o.stopTimeoutMs,
        ...given,
      })
    }
    this.#current = this.#subscribe(nowUs(), false)
    this.#arm()
    // An app that ends by itself (its event loop empty) still gets its last, partial chunk: on
    // 'beforeExit' the chunk is cut and handed to onChunk, whose work (an exporter's push, bounded by
    // its own timeout) keeps the process alive until done. Once: stop() removes the listener.
    this.#onBeforeExit = () => {
      this.stop().catch(() => {})
    }
    process.on('beforeExit', this.#onBeforeExit)
  }

  get sampleInterval() {
    return this.#intervalUs / 1000
  }

  #subscribe(startUs, exclusive) {
    const chunk = {
      startTime: startUs / 1000 - timeOriginUs() / 1000,
      startUnixMs: Date.now(),
      truncated: false,
      sub: null,
    }
    chunk.sub = new Subscription({
      startUs,
      intervalUs: this.#intervalUs,
      maxSamples: this.#maxSamples,
      exclusiveStart: exclusive,
      inlined: this.#inlined,
      onFull() {
        chunk.truncated = true
      },
    })
    getSampler().add(chunk.sub)
    return chunk
  }

  #arm() {
    this.#timer = setTimeout(() => this.#rotate(false), this.#chunkMs)
    // A profiler never keeps the process alive.
    this.#timer.unref()
  }

  /** Ends the current chunk now; starts the next one unless `last`. */
  #rotate(last) {
    const old = this.#current
    const endUs = nowUs()
    const endUnixMs = Date.now()
    old.sub.stopAt(endUs)
    const heap = this.#takeHeap(last)
    // The next chunk subscribes before the old one's final harvest: that harvest feeds both.
    this.#current = last ? null : this.#subscribe(endUs, true)
    if (!last) this.#arm()
    const index = this.#index++
    const origin = timeOriginUs()
    const done = getSampler()
      .finish(old.sub)
      .then(() => old.sub.trace(origin, traceClock()))
      .catch(rethrowTyped)
      .then((trace) => this.#onChunk(this.#chunk(old, index, endUs, endUnixMs, origin, trace, heap)))
      .catch((err) => {
        this.stats.errors++
        try {
          this.#onError(err)
        } catch {}
      })
      .finally(() => this.#deliveries.delete(done))
    this.#deliveries.add(done)
  }

  /** What onChunk gets for the chunk `old` (counted in stats). */
  #chunk(old, index, endUs, endUnixMs, origin, trace, heap) {
    this.stats.chunks++
    this.stats.samples += trace.samples.length
    if (old.truncated) this.stats.truncated++
    return {
      index,
      startTime: old.startTime,
      endTime: endUs / 1000 - origin / 1000,
      startUnixMs: old.startUnixMs,
      endUnixMs,
      sampleInterval: this.#intervalUs / 1000,
      truncated: old.truncated,
      trace,
      ...(this.#heap && { heap: heap.profile ?? null, heapError: heap.error }),
    }
  }

  /**
   * The chunk's heap profile, taken at its end on the main thread (V8 hands it over synchronously): the
   * live heap since continuous mode started ('inuse'), or the chunk's own allocations ('allocated', after
   * which V8 starts the next chunk afresh). `{ profile }`, or `{ error }` when the take failed (the chunk
   * still goes out, with `heap: null`).
   */
  #takeHeap(last) {
    if (!this.#heap) return null
    const { settings, consumer, startTime } = this.#heap
    const sampler = getHeapSampler()
    try {
      const { json, lastOrdinal } = sampler.take(consumer, infoOf(settings, startTime))
      if (settings.includeCollected && !last) {
        sampler.advance(consumer, lastOrdinal)
        this.#heap.startTime = performance.now()
      }
      return { profile: JSON.parse(json) }
    } catch (error) {
      return { error }
    } finally {
      if (last) sampler.release(consumer)
    }
  }

  /**
   * Ends the last chunk now, without a turn of the event loop (the process's synchronous 'exit' event,
   * when no stop() can finish), and returns it as onChunk would get it (onChunk is not called); null
   * when stopped already, or when the thread's sampler is inside its own work and cannot cut in. Chunks
   * still being built are not waited for; a stall watcher (options.stalls) ends with its thread.
   */
  stopSync() {
    if (this.#stopped) return null
    const old = this.#current
    const endUs = nowUs()
    const endUnixMs = Date.now()
    old.sub.stopAt(endUs)
    const engine = getSampler()
    if (!engine.flushSync()) return null
    this.#stopped = true
    process.off('beforeExit', this.#onBeforeExit)
    clearTimeout(this.#timer)
    this.#current = null
    engine.remove(old.sub)
    const origin = timeOriginUs()
    const heap = this.#takeHeap(true)
    return this.#chunk(old, this.#index++, endUs, endUnixMs, origin, old.sub.traceSync(origin, traceClock()), heap)
  }

  /**
   * Ends the last chunk and resolves once every chunk was handed to onChunk (and its promise settled),
   * or `stopTimeoutMs` after the call: chunks (and stall traces) still pending then are counted in
   * `stats.undelivered` (and the stall watcher's), not awaited. Every caller (the app's, beside
   * 'beforeExit''s) gets the one promise: it waits for the last chunk too.
   */
  stop() {
    this.#stopping ??= this.#stop()
    return this.#stopping
  }

  async #stop() {
    let stallsStopped = null
    // After stopSync() the last chunk is cut already: only the deliveries are left to wait for.
    if (!this.#stopped) {
      this.#stopped = true
      process.off('beforeExit', this.#onBeforeExit)
      stallsStopped = this.#stalls ? this.#stalls.stop() : null
      clearTimeout(this.#timer)
      this.#rotate(true)
    }
    const [, undelivered] = await Promise.all([stallsStopped, settleWithin(this.#deliveries, this.#stopTimeoutMs)])
    // A stall trace is one of this profiler's chunks: its loss is counted here too.
    this.stats.undelivered += undelivered + (this.#stalls && stallsStopped ? this.#stalls.stats.undelivered : 0)
  }
}

/** Starts continuous profiling of this thread; returns a handle with `stop()`. */
function startContinuous(options) {
  return new ContinuousProfiler(options)
}

module.exports = { startContinuous, ContinuousProfiler, OPTIONS, DEFAULTS }
