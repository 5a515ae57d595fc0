'use strict'
// The heap side of the sampler: V8's sampling heap profiler of this thread (one per isolate, so a
// worker thread profiles its own heap), driven through an in-process node:inspector session, shared by
// every consumer of the thread (HeapProfilers, continuous mode's heap chunks, `jsprof record --heap`).
//
//   acquire(settings)  V8 samples with these settings (started now, or already running with the same
//                      ones); the consumer keeps what V8 samples from now on: V8 numbers its samples
//                      (`ordinal`), and a consumer's profiles hold the samples after its start ordinal
//   take(consumer)     V8's profile now (HeapProfiler.getSamplingProfile: V8 goes on sampling),
//                      converted in Rust by the V8 -> trace rules (jsprof-node's own frames hidden) into
//                      a heap profile of the consumer's samples
//   advance(consumer)  the consumer's next take starts after this one (continuous mode's 'allocated'
//                      chunks); when it is alone, V8 restarts instead, so the samples of allocations V8
//                      keeps in that view (collected ones included) never pile up
//   release(consumer)  V8 stops when the last consumer leaves
//
// V8 runs with one setting at a time: a consumer asking for others while it runs is refused
// (InvalidStateError naming the running ones), as is any while another client (node --heap-prof,
// DevTools) runs V8's sampler: stopping or reconfiguring it would break that client's profile.
// Everything here is synchronous (an in-process session answers at once), so `jsprof record` can
// take the last profile inside 'exit'.
//
// A consumer may ask V8 not to inline while it samples (`inlining: false`: lib/heap/inlining.js) —
// not a setting of V8's sampler, so consumers that differ in it share it; every profile says whether
// V8 inlined nothing of the thread while it was sampled (`jsprof.heap.inlining`).

const { binding, callNative } = require('../native')
const { InspectorUnavailableError, postSync } = require('../sampler/inspector-session')
const inlining = require('./inlining')

/** What V8 samples with: average bytes between samples, frames kept, collected objects kept. */
const DEFAULT_SETTINGS = Object.freeze({
  samplingInterval: 512 * 1024,
  stackDepth: 64,
  includeCollected: false,
  inlining: true,
})

const sameSettings = (a, b) =>
  a.samplingInterval === b.samplingInterval &&
  a.stackDepth === b.stackDepth &&
  a.includeCollected === b.includeCollected

const describeSettings = (s) =>
  `samplingInterval ${s.samplingInterval}, stackDepth ${s.stackDepth}, includeCollected ${s.includeCollected}`

class HeapSampler {
  #inspector
  #session = null
  #settings = null
  #consumers = new Set()
  stats = { starts: 0, takes: 0, restarts: 0, takeMs: 0 }

  constructor(inspector) {
    this.#inspector = inspector
  }

  get settings() {
    return this.#settings
  }

  #post(method, params) {
    return postSync(this.#session, method, params)
  }

  #connect() {
    if (this.#session) return
    try {
      const inspector = typeof this.#inspector === 'function' ? this.#inspector() : this.#inspector
      const session = new inspector.Session()
      session.connect()
      this.#session = session
    } catch (cause) {
      throw new InspectorUnavailableError(cause)
    }
    this.#post('HeapProfiler.enable')
  }

  /** V8's profile now, as JSON text (UTF-8 bytes) for Rust. */
  #profileText() {
    const { profile } = this.#post('HeapProfiler.getSamplingProfile')
    return Buffer.from(JSON.stringify(profile))
  }

  #start(settings) {
    this.#post('HeapProfiler.startSampling', {
      samplingInterval: settings.samplingInterval,
      // Honoured from Node 26 on; earlier majors keep V8's default of 128 frames (docs/heap.md).
      stackDepth: settings.stackDepth,
      includeObjectsCollectedByMajorGC: settings.includeCollected,
      includeObjectsCollectedByMinorGC: settings.includeCollected,
    })
    this.stats.starts++
  }

  /** With `settings.inlining === false`, `consumer` keeps V8's inlining off until it is released. */
  #holdInlining(consumer, settings) {
    if (settings.inlining !== false) return
    inlining.enter((method, params) => this.#post(method, params))
    consumer.holdsInlining = true
  }

  #dropInlining(consumer) {
    if (!consumer.holdsInlining) return
    consumer.holdsInlining = false
    inlining.leave()
  }

  /** Starts (or joins) sampling with `settings` for `consumer`, which gets its start ordinal. */
  acquire(consumer, settings) {
    this.#connect()
    if (this.#settings === null) {
      // Someone else's sampler (node --heap-prof, DevTools) answers getSamplingProfile: leave it be.
      let foreign = false
      try {
        this.#post('HeapProfiler.getSamplingProfile')
        foreign = true
      } catch {
        // Not running: ours to start.
      }
      if (foreign) {
        throw new DOMException(
          "V8's sampling heap profiler is already running in this thread, started by another client " +
            '(node --heap-prof, DevTools, another profiler): jsprof-node neither shares nor stops it',
          'InvalidStateError',
        )
      }
      this.#holdInlining(consumer, settings)
      try {
        this.#start(settings)
      } catch (err) {
        this.#dropInlining(consumer)
        throw err
      }
      this.#settings = { ...settings }
      consumer.afterOrdinal = 0
    } else if (!sameSettings(this.#settings, settings)) {
      throw new DOMException(
        `V8's sampling heap profiler of this thread already runs with ${describeSettings(this.#settings)}; ` +
          `it cannot run with ${describeSettings(settings)} at the same time`,
        'InvalidStateError',
      )
    } else {
      // Joining: only what V8 samples from now on.
      this.#holdInlining(consumer, settings)
      try {
        consumer.afterOrdinal = callNative(() =>
          binding.heapProfileFromV8(this.#profileText(), 0, undefined, true),
        ).lastOrdinal
      } catch (err) {
        this.#dropInlining(consumer)
        throw err
      }
    }
    // The stretch of inlining off the consumer started in (null: V8 may inline).
    consumer.inliningOffSince = inlining.current()
    this.#consumers.add(consumer)
  }

  /**
   * The consumer's heap profile now, as JSON text (a string: src/heap.rs says why not a Buffer), and the
   * last ordinal V8 had. `info` is the profile's `jsprof` member.
   */
  take(consumer, info) {
    if (!this.#consumers.has(consumer)) throw new Error('jsprof-node: heap take by a consumer that left')
    const started = performance.now()
    // Whether V8 could inline the thread's code while this consumer sampled.
    info.heap.inlining = !inlining.heldSince(consumer.inliningOffSince)
    const text = this.#profileText()
    const out = callNative(() => binding.heapProfileFromV8(text, consumer.afterOrdinal, JSON.stringify(info), true))
    this.stats.takes++
    this.stats.takeMs += performance.now() - started
    return out
  }

  /** The consumer's next take starts after `lastOrdinal`; alone, it restarts V8 instead (see above). */
  advance(consumer, lastOrdinal) {
    // Only the 'allocated' view restarts: an 'inuse' sampler's samples are the live heap, bounded by it.
    if (this.#settings.includeCollected && this.#consumers.size === 1 && this.#consumers.has(consumer)) {
      this.#post('HeapProfiler.stopSampling')
      this.#start(this.#settings)
      this.stats.restarts++
      consumer.afterOrdinal = 0
    } else {
      consumer.afterOrdinal = lastOrdinal
    }
  }

  release(consumer) {
    if (!this.#consumers.delete(consumer)) return
    this.#dropInlining(consumer)
    if (this.#consumers.size > 0) return
    this.#settings = null
    try {
      this.#post('HeapProfiler.stopSampling')
    } catch {
      // Already stopped (the session went away at exit): nothing to free.
    }
  }
}

let sampler = null

/** This thread's heap sampler (module state is per thread: a worker has its own). */
function getHeapSampler() {
  if (sampler === null) sampler = new HeapSampler(() => require('node:inspector'))
  return sampler
}

module.exports = { getHeapSampler, HeapSampler, DEFAULT_SETTINGS }
