'use strict'
// `class Profiler extends EventTarget`: the WebIDL-faithful facade over this thread's sampler engine.
// The constructor starts sampling at once; stop() resolves with the spec's ProfilerTrace, built in
// Rust. Conversions and messages are Chrome's (webidl.js).

const { callNative, rethrowTyped } = require('../../native')
const { nowUs, timeOriginUs } = require('../../clock')
const { emptyTrace } = require('../../trace')
const { convertProfilerInitOptions, notAFunctionCall } = require('./webidl')
const { getSampler, effectiveIntervalUs, Subscription } = require('../../sampler')

function dispatchBufferFull(target) {
  setImmediate(() => target.dispatchEvent(new Event('samplebufferfull')))
}

/** A subscription's onFull: the profiler is its owner (undefined once collected: no one to tell). */
function ownerBufferFull(profiler) {
  if (profiler !== undefined) dispatchBufferFull(profiler)
}

/** A Profiler's trace: timestamps from this thread's time origin, no `jsprof` member (made once). */
let early = null
const traceArgs = () => (early ??= { originUs: timeOriginUs(), clock: undefined })

/** A stopped subscription's trace (a promise when large), with the binding's errors typed. */
function traceOf(sub) {
  const trace = callNative(() => sub.trace(traceArgs().originUs))
  return trace instanceof Promise ? trace.catch(rethrowTyped) : trace
}

class Profiler extends EventTarget {
  #sampleInterval
  #stopped = false
  /** null once stopped, and for maxBufferSize 0 (full before the first sample). */
  #sub = null

  constructor(options) {
    // WebIDL converts the arguments before the object exists: errors here create nothing.
    const { maxBufferSize, sampleInterval } = convertProfilerInitOptions(arguments.length, options)
    const intervalUs = effectiveIntervalUs(sampleInterval)
    const sampler = getSampler()
    super()
    this.#sampleInterval = intervalUs / 1000
    if (maxBufferSize === 0) {
      // Full before the first sample: nothing ever samples for this profiler.
      dispatchBufferFull(this)
      return
    }
    // The sampler holds it weakly from the first harvest that finds it running (see Subscription's
    // owner): a forgotten Profiler is collected, releases its subscription, and V8 stops when nobody
    // needs it; one stopped before any harvest costs no WeakRef.
    const sub = new Subscription({
      startUs: nowUs(),
      intervalUs,
      maxSamples: maxBufferSize,
      owner: this,
      onFull: ownerBufferFull,
      // traceOf's arguments: the trace of a Profiler that lives between two harvests is built at the
      // second, with no Recording.
      early: traceArgs(),
    })
    sampler.add(sub)
    this.#sub = sub
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

  /**
   * Resolves with the trace of the samples taken from construction until this call. V8's samples are
   * collected by a harvest: at once for a lone stop, within ~250 ms when stops are frequent (shared).
   */
  stop() {
    if (!Profiler.#is(this)) return Promise.reject(new TypeError('Illegal invocation'))
    if (this.#stopped) return Promise.reject(new DOMException('Profiler already stopped.', 'InvalidStateError'))
    this.#stopped = true
    const sub = this.#sub
    this.#sub = null
    if (sub === null) return Promise.resolve(emptyTrace())
    sub.stopAt(nowUs())
    // One promise of its own: the engine's is shared by every stop served by the same harvest.
    return getSampler()
      .finish(sub)
      .then(() => traceOf(sub), rethrowTyped)
  }
}

// WebIDL: attributes and operations are enumerable; the class tag is 'Profiler'.
for (const name of ['sampleInterval', 'stopped', 'stop']) {
  const descriptor = Object.getOwnPropertyDescriptor(Profiler.prototype, name)
  Object.defineProperty(Profiler.prototype, name, { ...descriptor, enumerable: true })
}
Object.defineProperty(Profiler.prototype, Symbol.toStringTag, { value: 'Profiler', configurable: true })

// Called without `new`, a class throws V8's own message, where a DOM constructor throws Chrome's. So
// the public Profiler is a function that checks `new.target` and builds the class's instance (a Proxy
// or Reflect.construct would cost more than the call, docs/bench.md#cost-of-one-profiler; this, nothing). It shares
// the class's prototype, so instanceof, subclassing and the prototype's members are the class's own.
const ProfilerClass = Profiler
const PublicProfiler = {
  Profiler: function (options) {
    if (new.target === undefined) throw notAFunctionCall()
    // A subclass (`class X extends Profiler`) gets its own prototype; a plain `new` the fast path.
    if (new.target !== PublicProfiler) return Reflect.construct(ProfilerClass, arguments, new.target)
    return arguments.length === 0 ? new ProfilerClass() : new ProfilerClass(options)
  },
}.Profiler
Object.defineProperty(PublicProfiler, 'prototype', {
  value: ProfilerClass.prototype,
  writable: false,
  enumerable: false,
  configurable: false,
})
Object.setPrototypeOf(PublicProfiler, EventTarget)
Object.defineProperty(ProfilerClass.prototype, 'constructor', {
  value: PublicProfiler,
  writable: true,
  configurable: true,
})

module.exports = { Profiler: PublicProfiler }
