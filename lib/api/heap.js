'use strict'
// Heap profiles: `new HeapProfiler(options)` samples this thread's heap with V8's sampling heap profiler
// (lib/heap/sampler.js) until stop(); `profile()` takes the heap profile at any time. A heap profile is
// plain data — the trace's resources, frames and stacks, with bytes and V8 samples per stack
// (crates/jsprof-core/src/heap) — which summarize() and the exporters take where they take a trace.
// `fromHeapProfile` reads V8's own format (`.heapprofile`: DevTools, node --heap-prof), `toHeapProfile`
// writes it.

const { binding, callNative } = require('../native')
const { readOptions, number, boolean, describe } = require('../args')
const { getHeapSampler, DEFAULT_SETTINGS } = require('../heap/sampler')

const OPTIONS = {
  samplingInterval: number({ min: 1, max: 2 ** 31 - 1, integer: true, what: 'a number of bytes' }),
  stackDepth: number({ min: 1, max: binding.MAX_HEAP_STACK_DEPTH, integer: true, what: 'a number of frames' }),
  includeCollected: boolean(),
  // false: V8 does not inline while this profiler samples, so a small helper keeps its allocations
  // (lib/heap/inlining.js; docs/heap.md#inlining-off).
  inlining: boolean(),
}

/** Whether `value` is a heap profile (its `jsprof` member has `heap`), which the exporters draw by bytes. */
function isHeapProfile(value) {
  const jsprof = value !== null && typeof value === 'object' ? value.jsprof : undefined
  return jsprof !== null && typeof jsprof === 'object' && jsprof.heap !== null && typeof jsprof.heap === 'object'
}

/** A heap profile's JSON text for the binding (Rust validates it once). */
function heapText(api, profile) {
  try {
    return JSON.stringify(profile)
  } catch (cause) {
    throw new TypeError(`${api}: malformed heap profile: cannot be serialized: ${cause && cause.message}`, { cause })
  }
}

/** JSON text from the binding (a string, or UTF-8 bytes) as its object. */
const parse = (text) => JSON.parse(typeof text === 'string' ? text : text.toString('utf8'))

/** The `jsprof` member of a profile taken now in this thread. */
function infoOf(settings, startTime) {
  const { threadId } = require('node:worker_threads')
  return {
    heap: {
      samplingInterval: settings.samplingInterval,
      stackDepth: settings.stackDepth,
      view: settings.includeCollected ? 'allocated' : 'inuse',
      startTime,
      endTime: performance.now(),
    },
    pid: process.pid,
    threadId,
    timeOrigin: performance.timeOrigin,
  }
}

// A forgotten HeapProfiler releases the sampler when collected, so V8 stops when nobody needs it.
const released = new FinalizationRegistry((consumer) => getHeapSampler().release(consumer))

/** HeapProfiler's options (also `startContinuous`'s `heap`), by the one option rule. */
function readHeapOptions(api, options) {
  return Object.freeze({ ...readOptions(api, options, OPTIONS, { defaults: DEFAULT_SETTINGS }) })
}

class HeapProfiler {
  #settings
  #consumer = {}
  #startTime
  #stopped = false

  constructor(options) {
    this.#settings = readHeapOptions('HeapProfiler', options)
    this.#startTime = performance.now()
    getHeapSampler().acquire(this.#consumer, this.#settings)
    released.register(this, this.#consumer, this.#consumer)
  }

  /** Average bytes between V8's samples. */
  get samplingInterval() {
    return this.#settings.samplingInterval
  }

  get stackDepth() {
    return this.#settings.stackDepth
  }

  /** Whether profiles count collected objects too (the 'allocated' view) or only live ones ('inuse'). */
  get includeCollected() {
    return this.#settings.includeCollected
  }

  /** false: V8 does not inline while this profiler samples (its code was deoptimized at the start). */
  get inlining() {
    return this.#settings.inlining
  }

  get stopped() {
    return this.#stopped
  }

  #take() {
    const { json } = getHeapSampler().take(this.#consumer, infoOf(this.#settings, this.#startTime))
    return parse(json)
  }

  /** The heap profile now: what was sampled since this profiler started and (inuse) is still alive. */
  profile() {
    if (this.#stopped) {
      return Promise.reject(
        new DOMException('profile() after stop(): the heap profiler is stopped', 'InvalidStateError'),
      )
    }
    try {
      return Promise.resolve(this.#take())
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /** The last heap profile; V8 stops sampling when no other consumer of this thread needs it. */
  stop() {
    if (this.#stopped) {
      return Promise.reject(new DOMException('stop() was already called', 'InvalidStateError'))
    }
    this.#stopped = true
    released.unregister(this.#consumer)
    try {
      return Promise.resolve(this.#take())
    } catch (err) {
      return Promise.reject(err)
    } finally {
      getHeapSampler().release(this.#consumer)
    }
  }

  get [Symbol.toStringTag]() {
    return 'HeapProfiler'
  }
}

/**
 * A heap profile of V8's sampling heap profile (`.heapprofile` as DevTools and `node --heap-prof` write
 * it, or `HeapProfiler.getSamplingProfile`'s reply): an object, its JSON text or its bytes. Text that is
 * not JSON is a SyntaxError, a malformed profile a TypeError saying what is wrong.
 */
function fromHeapProfile(profile) {
  let bytes
  if (typeof profile === 'string') bytes = Buffer.from(profile)
  else if (profile instanceof Uint8Array) bytes = profile
  else if (profile !== null && typeof profile === 'object' && !Array.isArray(profile)) {
    bytes = Buffer.from(heapText('fromHeapProfile', profile))
  } else {
    throw new TypeError(
      `fromHeapProfile: expected a V8 heap profile (object, JSON text or bytes), got ${describe(profile)}`,
    )
  }
  return parse(callNative(() => binding.heapProfileFromV8(bytes, undefined, undefined, false)).json)
}

/**
 * V8's `.heapprofile` JSON text of a heap profile, as UTF-8 bytes (the CLI writes them as they are, at
 * any depth); `asObject`: for toHeapProfile's object, refused past the depth JSON.stringify serializes.
 */
function heapProfileText(profile, asObject = false) {
  if (!isHeapProfile(profile)) {
    const got = profile !== null && typeof profile === 'object' ? 'an object without jsprof.heap' : describe(profile)
    throw new TypeError(`toHeapProfile: expected a heap profile (with jsprof.heap), got ${got}`)
  }
  return callNative(() => binding.heapProfileToV8(heapText('toHeapProfile', profile), asObject))
}

/** V8's `.heapprofile` object of a heap profile: DevTools' Memory panel loads it; fromHeapProfile reads it back. */
const toHeapProfile = (profile) => parse(heapProfileText(profile, true))

module.exports = {
  HeapProfiler,
  fromHeapProfile,
  toHeapProfile,
  heapProfileText,
  isHeapProfile,
  heapText,
  infoOf,
  readHeapOptions,
}
