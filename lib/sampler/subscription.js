'use strict'
// What the engine serves: a Subscription is one consumer of this thread's samples — a Profiler, a
// continuous chunk, the request profiler's collector. It has a window (from `startUs`, until stopped),
// the interval it wants, and either a Rust Recording that keeps its own samples (window, interval,
// buffer: crates/jsprof-core/src/recording.rs) or a raw chunk listener (`onChunk`), or both.

const { binding } = require('../native')
const { MAX_V8_INTERVAL_US } = require('./schedule')

class Subscription {
  /** µs on V8's clock (process.hrtime). */
  startUs
  /** The interval this subscription keeps samples at (µs). */
  intervalUs
  /** The interval it needs V8 to run at (V8 takes an int32 of µs; slower ones decimate). */
  v8IntervalUs
  /** The buffer limit (the spec's maxBufferSize); Infinity for a listener without a recording. */
  maxSamples
  /** The Rust Recording, or null for a pure listener. */
  recording
  /**
   * 'live' (taking samples), 'stopping' (stopped: gets the samples of the harvests up to its stop),
   * 'ended' (full, or its owner was garbage-collected: gets nothing more).
   */
  state = 'live'
  /** When its buffer may be full (µs): the engine harvests by then to tell it. */
  checkAtUs = Infinity
  #onFull
  #onChunk

  /**
   * `record`: keep samples in a Rust Recording (false: only `onChunk` sees the chunks).
   * `exclusiveStart`: a sample exactly at `startUs` belongs to the subscription this one takes over
   * from (continuous hand-off). `onFull()` is called once when the buffer fills; `onChunk(chunk,
   * harvestUs)` with every chunk harvested while subscribed.
   */
  constructor({ startUs, intervalUs, maxSamples = Infinity, record = true, exclusiveStart = false, onFull, onChunk }) {
    this.startUs = startUs
    this.intervalUs = intervalUs
    this.v8IntervalUs = Math.min(intervalUs, MAX_V8_INTERVAL_US)
    this.maxSamples = record ? maxSamples : Infinity
    this.recording = record ? new binding.Recording(startUs, intervalUs, maxSamples) : null
    if (exclusiveStart) this.recording.setStartExclusive(true)
    this.#onFull = onFull
    this.#onChunk = onChunk
  }

  /** Samples kept so far (0 for a listener). */
  get sampleCount() {
    return this.recording ? this.recording.sampleCount : 0
  }

  /** Offers a harvested chunk; true when this made the buffer full. */
  take(chunk, harvestUs) {
    const becameFull = this.recording !== null && this.recording.addChunk(chunk).becameFull
    if (this.#onChunk) this.#onChunk(chunk, harvestUs)
    return becameFull
  }

  /** The buffer filled: nothing samples on its behalf any more. */
  filled() {
    this.state = 'ended'
    if (this.#onFull) this.#onFull()
  }
}

module.exports = { Subscription }
