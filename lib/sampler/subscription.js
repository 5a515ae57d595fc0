'use strict'
// What the engine serves: a Subscription is one consumer of this thread's samples — a Profiler, a
// continuous chunk, the request profiler's collector. It has a window (from `startUs` until stopped),
// the interval it wants, and keeps its samples in a Rust Recording (window, interval, buffer:
// crates/jsprof-core/src/recording.rs), or only listens to every chunk (`onChunk`), or both.
//
// The Recording is made when a harvested chunk first can hold one of its samples: at 10 ms, most
// Profilers around a request see no sample at all, and then cost no native object. A subscription that
// says up front how its trace is wanted (`early`) and whose whole window lies in the last chunk it gets
// (a Profiler around a request: its window is shorter than the time between harvests) never has one:
// its trace is built from that chunk at the harvest: no native object, calls or finalizer for it
// (measured with the columns a small trace crosses as, docs/bench.md#building-a-small-trace).

const { binding } = require('../native')
const { buildTrace, windowTrace, emptyTrace, SYNC_BUILD_MAX_SAMPLES } = require('../trace')
const { MAX_V8_INTERVAL_US } = require('./schedule')

/** The index of the first of ascending `times` not below `from` (`after`: above it) (binary search). */
function firstFrom(times, from, after = false) {
  let lo = 0
  let hi = times.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (times[mid] < from || (after && times[mid] === from)) lo = mid + 1
    else hi = mid
  }
  return lo
}

class Subscription {
  /** µs on V8's clock (process.hrtime). */
  startUs
  /** Samples after this are not its own (µs); Infinity until stopped. */
  stopUs = Infinity
  /** The interval this subscription keeps samples at (µs). */
  intervalUs
  /** The interval it needs V8 to run at (V8 takes an int32 of µs; slower ones decimate). */
  v8IntervalUs
  /** The buffer limit (the spec's maxBufferSize); Infinity for a pure listener. */
  maxSamples
  /** The Rust Recording once it holds a chunk; null before, and always for a pure listener. */
  recording = null
  /**
   * 'live' (taking samples), 'stopping' (stopped: gets the samples of the harvests up to its stop),
   * 'ended' (full, or its owner was garbage-collected: gets nothing more).
   */
  state = 'live'
  /** When its buffer may be full (µs): the engine harvests by then to tell it. */
  checkAtUs = Infinity
  /**
   * The object whose garbage collection ends this subscription (a Profiler forgotten without stop()),
   * or null. Held strongly until a harvest finds the subscription still live; the engine then holds it
   * through a WeakRef and watches it for collection (`watched`). Most per-request Profilers stop before
   * any harvest and never cost a WeakRef or a registration.
   */
  owner = null
  watched = false
  /** Its trace, built at the harvest that completed it (see `early`); null otherwise. */
  #built = null
  /** `{ originUs, clock }`: what trace() will be called with, known up front (see the header). */
  #early
  #record
  #exclusiveStart
  #onFull
  #onChunk
  #streamOriginUs
  #inlined

  /**
   * `record`: keep samples in a Rust Recording (false: only `onChunk` sees the chunks).
   * `exclusiveStart`: a sample exactly at `startUs` belongs to the subscription this one takes over
   * from (continuous hand-off). `owner`: the object whose collection ends the subscription (see
   * `owner` above). `onFull(owner)` is called once when the buffer fills (with the owner, or undefined
   * when there is none or it was collected); `onChunk(harvested)`
   * with every harvested chunk ({ chunk, times: its sorted sample times, earliestUs, latestUs, harvestUs })
   * while subscribed. `streamOriginUs`: the Recording converts each chunk as it comes, timestamps
   * counting from there, and lets the chunk go (`jsprof record`, hours long: see
   * Recording.streamIntoTrace); its trace is then the Recording's buildFile(). `early`: `{ originUs,
   * clock }`, what trace() will be called with: its trace may then be built at the harvest that
   * completes it (see the header). `inlined`: the samples of code V8 inlined into a function go to the
   * inlined function (Recording.splitInlined; jsprof-core's convert/inlined.rs).
   */
  constructor({
    startUs,
    intervalUs,
    maxSamples = Infinity,
    record = true,
    exclusiveStart = false,
    owner,
    onFull,
    onChunk,
    streamOriginUs,
    early,
    inlined = false,
  }) {
    this.startUs = startUs
    if (owner !== undefined) this.owner = owner
    this.intervalUs = intervalUs
    this.v8IntervalUs = Math.min(intervalUs, MAX_V8_INTERVAL_US)
    this.maxSamples = record ? maxSamples : Infinity
    this.#record = record
    this.#exclusiveStart = exclusiveStart
    this.#onFull = onFull
    this.#onChunk = onChunk
    this.#streamOriginUs = streamOriginUs
    this.#inlined = inlined
    // Its calls are gathered from every chunk from now on; its trace is built by a Recording.
    if (inlined) binding.gatherInlinedCalls()
    if (streamOriginUs === undefined && !inlined) this.#early = early
  }

  /** Whether it keeps samples (a trace of every sample in its window: their labels are read). */
  get records() {
    return this.#record
  }

  /** Samples kept so far. */
  get sampleCount() {
    if (this.#built !== null) return this.#built.samples.length
    return this.recording === null ? 0 : this.recording.sampleCount
  }

  /** Samples taken after `us` are not kept (the spec: samples after stop() are excluded). */
  stopAt(us) {
    if (us >= this.stopUs) return
    this.stopUs = us
    if (this.recording !== null) this.recording.stopAt(us)
  }

  /**
   * Offers a harvested chunk; true when this made the buffer full. `last`: the subscription is stopping
   * and gets no chunk after this one.
   */
  take(harvested, last = false) {
    let becameFull = false
    const { times } = harvested
    // The chunk's first sample in the window, if any.
    const first = this.#record ? firstFrom(times, this.startUs) : times.length
    if (first < times.length && times[first] <= this.stopUs) {
      if (
        last &&
        this.recording === null &&
        this.#early !== undefined &&
        firstFrom(times, this.stopUs, true) - first <= SYNC_BUILD_MAX_SAMPLES
      ) {
        const { originUs, clock } = this.#early
        try {
          this.#built = windowTrace(harvested.chunk, this, this.#exclusiveStart, originUs, clock, () => {
            becameFull = true
          })
        } catch {
          // Not in the harvest: through a Recording, whose trace() says what went wrong to its caller.
          this.#built = null
          becameFull = false
        }
      }
      if (this.#built === null) {
        if (this.recording === null) this.#makeRecording()
        becameFull = this.recording.addChunk(harvested.chunk).becameFull
      }
    }
    if (this.#onChunk) this.#onChunk(harvested)
    return becameFull
  }

  /** The buffer limit as the binding takes it: no limit (`jsprof record`) is as many as it counts. */
  get bufferLimit() {
    return Math.min(this.maxSamples, 2 ** 32 - 1)
  }

  #makeRecording() {
    const recording = new binding.Recording(this.startUs, this.intervalUs, this.bufferLimit)
    if (this.#exclusiveStart) recording.setStartExclusive(true)
    if (this.#inlined) recording.splitInlined()
    if (this.#streamOriginUs !== undefined) recording.streamIntoTrace(this.#streamOriginUs)
    if (this.stopUs !== Infinity) recording.stopAt(this.stopUs)
    this.recording = recording
  }

  /** Its owner, or undefined when it has none or it was collected. */
  ownerNow() {
    if (this.owner === null) return undefined
    return this.watched ? this.owner.deref() : this.owner
  }

  /** Holds the owner weakly from now on (the engine watches it for collection); returns the owner. */
  holdOwnerWeakly() {
    const owner = this.owner
    this.owner = new WeakRef(owner)
    this.watched = true
    return owner
  }

  /** No longer watched (stopped, or ended): the owner is held strongly again, if it is still there. */
  holdOwnerStrongly() {
    if (!this.watched) return
    this.owner = this.owner.deref() ?? null
    this.watched = false
  }

  /** The buffer filled: nothing samples on its behalf any more. */
  filled() {
    this.state = 'ended'
    if (this.#onFull) this.#onFull(this.ownerNow())
  }

  /**
   * Its trace, timestamps relative to `originUs` (a promise when large); the samples are released.
   * With `clock`, the trace has the `jsprof` member (see lib/trace.js buildTrace).
   */
  trace(originUs, clock) {
    return this.#takeTrace(originUs, clock, buildTrace)
  }

  /**
   * Its trace as trace() gives it, built at once on this thread whatever its size (the process's
   * synchronous 'exit' event has no turn of the thread pool to wait for); the samples are released.
   */
  traceSync(originUs, clock) {
    return this.#takeTrace(originUs, clock, (recording) => JSON.parse(recording.buildJson(originUs, clock)))
  }

  /** The trace built at its last harvest, else `build(recording, originUs, clock)` of its Recording. */
  #takeTrace(originUs, clock, build) {
    const built = this.#built
    if (built !== null) {
      this.#built = null
      return built
    }
    const recording = this.recording
    this.recording = null
    return recording === null ? emptyTrace(clock, this.intervalUs) : build(recording, originUs, clock)
  }
}

module.exports = { Subscription }
