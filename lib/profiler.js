'use strict'
// `class Profiler extends EventTarget`: the WebIDL-faithful facade over this thread's sampler. The
// constructor starts sampling at once; stop() resolves with the spec's ProfilerTrace, built in Rust
// off the main thread.

const { binding, rethrowTyped } = require('./native')
const { nowUs, timeOriginUs } = require('./clock')
const { assembleTrace } = require('./trace')
const { convertProfilerInitOptions } = require('./webidl')
const { getSampler, effectiveIntervalUs, MAX_V8_INTERVAL_US } = require('./sampler')

// A Profiler collected without stop() releases its recording and, if it was the last, stops V8.
const collected = new FinalizationRegistry((sub) => getSampler().remove(sub))

function dispatchBufferFull(target) {
  setImmediate(() => target.dispatchEvent(new Event('samplebufferfull')))
}

class Profiler extends EventTarget {
  #sampleInterval
  #stopped = false
  #sub

  constructor(options) {
    // WebIDL converts the arguments before the object exists: errors here create nothing.
    const { maxBufferSize, sampleInterval } = convertProfilerInitOptions(options)
    const intervalUs = effectiveIntervalUs(sampleInterval)
    const sampler = getSampler()
    super()
    this.#sampleInterval = intervalUs / 1000
    const startUs = nowUs()
    const self = new WeakRef(this)
    const sub = {
      recording: new binding.Recording(startUs, intervalUs, maxBufferSize),
      intervalUs,
      v8IntervalUs: Math.min(intervalUs, MAX_V8_INTERVAL_US),
      maxSamples: maxBufferSize,
      startUs,
      checkAtUs: Infinity,
      onFull() {
        const profiler = self.deref()
        if (profiler) dispatchBufferFull(profiler)
      },
    }
    this.#sub = sub
    if (maxBufferSize === 0) {
      // Full before the first sample: nothing ever samples for this profiler.
      dispatchBufferFull(this)
      return
    }
    sampler.add(sub)
    collected.register(this, sub, sub)
  }

  /** Brand check: is `value` a Profiler made by this constructor (WebIDL's "implements")? */
  static #is(value) {
    return value !== null && typeof value === 'object' && #stopped in value
  }

  /** The interval really used, in ms (the requested one, in whole µs, at least 0.1 ms). */
  get sampleInterval() {
    if (!Profiler.#is(this)) throw new TypeError('Illegal invocation')
    return this.#sampleInterval
  }

  /** True from the moment stop() is called. */
  get stopped() {
    if (!Profiler.#is(this)) throw new TypeError('Illegal invocation')
    return this.#stopped
  }

  /** Resolves with the trace of the samples taken from construction until this call. */
  stop() {
    if (!Profiler.#is(this)) return Promise.reject(new TypeError('Illegal invocation'))
    if (this.#stopped) {
      return Promise.reject(new DOMException('The Profiler has already been stopped.', 'InvalidStateError'))
    }
    this.#stopped = true
    const sub = this.#sub
    this.#sub = null
    sub.recording.stopAt(nowUs())
    collected.unregister(sub)
    return getSampler()
      .finish(sub)
      .then(() => sub.recording.build(timeOriginUs()))
      .then(assembleTrace, rethrowTyped)
  }
}

// WebIDL: attributes and operations are enumerable; the class tag is 'Profiler'.
for (const name of ['sampleInterval', 'stopped', 'stop']) {
  const descriptor = Object.getOwnPropertyDescriptor(Profiler.prototype, name)
  Object.defineProperty(Profiler.prototype, name, { ...descriptor, enumerable: true })
}
Object.defineProperty(Profiler.prototype, Symbol.toStringTag, { value: 'Profiler', configurable: true })

module.exports = { Profiler }
