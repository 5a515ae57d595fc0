'use strict'
// Labels on samples, the JS half: `withLabels(labels, fn)` runs fn with labels, `setLabels(labels)`
// adds labels to the code running now and what it starts from here on, `getLabels()` reads them.
//
// Propagation: an AsyncLocalStorage holds the current label set — the id of a registered set (a
// number), or for a transient set (one request's span context) the Transient object naming it, which
// lives exactly as long as some async context still holds it (no table of them here) — so nothing is
// allocated per async resource beyond what AsyncLocalStorage itself does, and the labels follow
// promises, `await`, timers, event emitters' async resources and streams as Node's async context does.
//
// Samples: V8's sampler cannot read JS state, so the thread records *when* the context of the code
// running changes: an async hook's `before`/`after` (every callback of an async resource, promise
// reactions included) compares the id of the context it enters or returns to with the last one
// recorded and, when it differs, writes (time on V8's sample clock, id) into a preallocated ring of
// typed arrays — no allocation per context switch. The id is a registered label set's for code
// labelled outside a request, and a *request context*'s inside one (below): one record of which
// context runs, from which each sample gets its labels and a request profile its samples.
// A callback returning to the event loop itself (not to code that called it synchronously) records
// nothing: the loop runs no app code until the next callback's `before` records its context, and a
// sample with no code running (idle, native) carries no labels and is in no context, whatever the
// timeline says (jsprof-core Chunk::label_samples_by). So a run of callbacks of one context — every
// `await` of one request — records nothing at all after the first (measured: the record on every
// return was most of the labels' cost per await, docs/bench.md#labels-on-every-request).
// The ring goes to Rust when it is full and before each harvest (beforeHarvest, called by the
// sampler), and Rust gives each harvested sample the context current at its time (jsprof-core
// label_recorder.rs and Chunk::label_samples_by). So labels reach every consumer of the sampler:
// Profiler traces, continuous chunks, request profiles, stall traces, `jsprof record`.
//
// Request contexts: a request's integration (lib/api/requests) enters one context per request, a
// slot of the *context ring* — a Uint32Array written here, handed to each harvest — which says the
// request's label set *as the harvest finds it*: once the router knows the route, every sample of the
// request from its entry on (the middleware before the router, body parsing) carries it in every
// trace harvested afterwards. Labels the request's code adds (setLabels in a middleware) make a
// context of their own in the ring, which belongs to the request (its profile keeps its samples) and
// follows the route too.
//
// Pay only for what is read: the hooks run only while this thread's sampler takes samples (and a
// labelled context was entered), and the integrations enter request contexts only while something
// reads them — the sampler, or a stall watcher (docs/labels.md#cost).
//
// Label sets are interned once each (the native registry checks the label rule, jsprof-core
// trace/labels.rs: keys as label names, bounded counts and lengths; and caps the distinct sets it keeps:
// past the cap a new set's samples carry no labels and the trace counts them in `jsprof.labelsDropped`).
// A set past the cap is still the code's labels — getLabels(), nesting, propagation — held here only by
// the async contexts that run under it (a Transient with the dropped id), so it is forgotten with them.

const { AsyncLocalStorage, createHook } = require('node:async_hooks')
const { binding, callNative } = require('./native')
const { fastNowUs: now } = require('./clock')
const { describe } = require('./args')
const { promiseHooksInstead, createPromiseHook } = require('./promise-hooks')

/** The native registry's id of a set it could not keep (past its cap). */
const DROPPED = 0xffffffff
/** Ring capacity (changes between two flushes). 12 bytes each. */
const RING = 16_384
/** Depth of nested callbacks tracked (deeper ones return to "no labels"). */
const STACK = 1024

const storage = new AsyncLocalStorage()

const times = new Float64Array(RING)
const ids = new Uint32Array(RING)
let filled = 0
/** The id last recorded: the set current on the thread as the timeline says. */
let recorded = 0

const stack = new Uint32Array(STACK)
/** Callbacks entered and not left (async resources', promise reactions'). */
let depth = 0
/** withLabels/runWithLabels calls running: code at depth 0 inside one is app code, not the loop. */
let explicit = 0

/** The registered sets: id -> frozen labels object; canonical text -> id. */
const setsById = new Map()
const idsByText = new Map()

/**
 * A set not interned for good — a span context given to withLabels/setLabels outside a request
 * (jsprof-core label_recorder.rs), or a set past the registry's cap (id DROPPED: its samples carry
 * none) — as the AsyncLocalStorage holds it: its native id and its labels. Nothing else keeps it: it
 * goes when the last async context holding it does.
 */
class Transient {
  constructor(id, labels) {
    this.id = id
    this.frozen = labels
  }

  /** The id the timeline records for it. */
  current() {
    return this.id
  }

  labels() {
    return this.frozen
  }
}

/** `labels` as getLabels() gives them: frozen, keys in sorted order. */
const sortedFrozen = (labels) =>
  Object.freeze(
    Object.fromEntries(
      Object.keys(labels)
        .sort()
        .map((k) => [k, labels[k]]),
    ),
  )

/** The id the timeline records for what the storage holds (a registered set's id, a Transient, a Context, or nothing). */
const idOfStore = (store) => (typeof store === 'number' ? store : store === undefined ? 0 : store.current())
/** The labels of what the storage holds (undefined for none or an unknown set). */
const labelsOfStore = (store) =>
  typeof store === 'number' ? setsById.get(store) : store === undefined ? undefined : store.labels()

function record(id) {
  if (id === recorded || !sampling) return
  recorded = id
  if (filled === RING) flushLabels()
  times[filled] = now()
  ids[filled] = id
  filled++
}

/** The set of the code running now as the timeline should say (0 at the event loop: see leave). */
const running = () => (depth === 0 && explicit === 0 ? 0 : recorded)

/** Hands the ring to Rust (the sampler calls it before every harvest). */
function flushLabels() {
  if (filled === 0) return
  const n = filled
  filled = 0
  binding.labelTransitions(times, ids, n)
}

const currentId = () => idOfStore(storage.getStore())

/** Entering a callback: remember the set we return to, record the callback's. */
function enter(id) {
  if (depth < STACK) stack[depth] = recorded
  depth++
  record(id)
}
/**
 * Leaving it: back to the set recorded before it, when it returns to code that called it; back to the
 * event loop (no code running: see above), the set stays as it is until the next callback's `before`.
 */
function leave() {
  if (depth > 0) depth--
  if (depth === 0 && explicit === 0) return
  record(depth < STACK ? stack[depth] : 0)
}

/** No callback running any more: the thread is back at the event loop, with no labels. */
function backToLoop() {
  depth = 0
  record(0)
}

let hook = null
/** Stops V8's promise hook (where promises are followed by it: promiseHooksInstead). */
let stopPromiseHook = null
/** Whether the uncaught-exception reset below is installed (once, whatever enables and disables). */
let exceptionsWatched = false
/** Whether labelled code ran (withLabels, setLabels, a request context): the hooks are wanted. */
let wanted = false
/** Whether the app itself labelled (withLabels/setLabels): its storage stays on whatever reads it. */
let appLabelled = false
/** Whether this thread's sampler takes samples now (its V8 profile runs): the timeline is read. */
let sampling = false
/** Stall watchers of this thread: each reads the labels of the code a stall caught. */
let watchers = 0
/**
 * Whether a subscription of the sampler keeps every sample now (a Profiler, continuous mode, a stall's
 * trace, `jsprof record`): every request's labels are read. Request profiles alone read only the
 * samples of the requests they sample.
 */
let recording = false

/**
 * Whether every request's context is read now: a subscription keeps every sample, or a stall watcher
 * looks. (A sampled request has its context whatever this says: its profile reads it.)
 */
const contextsRead = () => recording || watchers > 0

/** Labels are wanted: the hooks run from now on whenever the sampler takes samples. */
function enableTracking() {
  if (wanted) return
  wanted = true
  if (sampling) hooksOn()
}

function hooksOn() {
  if (hook !== null) return
  const callbacks = {
    before() {
      enter(currentId())
    },
    after: leave,
  }
  if (promiseHooksInstead()) {
    hook = createHook({ ...callbacks, trackPromises: false })
    stopPromiseHook = createPromiseHook({ before: () => enter(currentId()), after: leave })
  } else {
    hook = createHook(callbacks)
  }
  hook.enable()
  // Whatever ran before: the timeline starts with the context of the code running now (inside a
  // request that began before the sampler started, its context from here on).
  depth = 0
  recorded = NaN
  record(currentId())
  if (exceptionsWatched) return
  exceptionsWatched = true
  // An uncaught exception skips the `after` of every callback it unwinds (Node clears its async
  // stack): back to the event loop, no labels.
  process.on('uncaughtExceptionMonitor', backToLoop)
}

function hooksOff() {
  if (hook === null) return
  hook.disable()
  hook = null
  if (stopPromiseHook !== null) stopPromiseHook()
  stopPromiseHook = null
  depth = 0
}

/**
 * The sampler's V8 profile started (true) or stopped (false): called by the sampler's V8 session
 * (sampler/inspector-session.js). While it is stopped nothing reads the timeline: the hooks go, and
 * so does the storage when only the request integrations used it (on Node 20/22 its own `init` hook
 * with it), so labelling costs nothing until the next start.
 */
function samplingChanged(on) {
  if (on === sampling) return
  if (on) {
    sampling = true
    if (wanted) hooksOn()
    return
  }
  flushLabels()
  sampling = false
  hooksOff()
  if (!appLabelled && watchers === 0) storage.disable()
}

/** The sampler's subscriptions that keep samples: some (true), or none any more (false). */
function recordingChanged(on) {
  recording = on
}

/** A stall watcher starts (+1) or stops (-1) looking: request contexts are read meanwhile. */
function watchContexts(delta) {
  watchers = Math.max(0, watchers + delta)
}

/**
 * Stops following labels until the next withLabels/setLabels/labelled request turns it on again: the
 * hooks off, the storage disabled (on Node 20/22 its own `init` hook goes with it), the timeline back
 * to no labels. For measuring labels on and off in turns in one process, on the same JIT state
 * (bench/server/in-process.mjs --set labels); call it where no labelled code is running. (The hooks
 * alone, without labelled code: enableTracking.)
 */
function disableTracking() {
  if (!wanted) return
  wanted = false
  hooksOff()
  storage.disable()
  backToLoop()
}

/** `labels` checked as an object of string values (a TypeError naming `what` otherwise). */
function checked(what, labels) {
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels)) {
    throw new TypeError(`${what}: labels must be an object of label names to string values, got ${describe(labels)}`)
  }
  for (const key of Object.keys(labels)) {
    const value = labels[key]
    if (typeof value !== 'string') {
      throw new TypeError(`${what}: the value of label ${JSON.stringify(key)} must be a string, got ${describe(value)}`)
    }
  }
  return labels
}

/**
 * What the storage holds for `labels` (a plain object of string values) merged over the set held now
 * (`base`): a registered set's id, or a Transient for a set with a span context; inside a request
 * (`base` a Context), a context of the request's own (see Context).
 */
function idOf(what, labels, base) {
  checked(what, labels)
  if (base instanceof Context && labels.span_id === undefined && labels.trace_id === undefined) {
    return base.request.entered(what, { ...base.extra, ...labels })
  }
  // No prototype: every key given is a label, `__proto__` too (which the label rule refuses).
  const merged = Object.assign(Object.create(null), labelsOfStore(base))
  for (const key of Object.keys(labels)) merged[key] = labels[key]
  return internSet(what, merged)
}

/**
 * The store of the set `merged` (checked string values): a registered set's id, or a Transient for one
 * with a span context or past the registry's cap.
 */
function internSet(what, merged) {
  const keys = Object.keys(merged).sort()
  const values = keys.map((k) => merged[k])
  // A set with a span context is one request's: transient, not interned for good.
  if (merged.span_id !== undefined) return internTransient(what, keys, values)
  const text = JSON.stringify([keys, values])
  const known = idsByText.get(text)
  if (known !== undefined) return known
  const id = callNative(() => {
    try {
      return binding.internLabels(keys, values)
    } catch (err) {
      if (err && /^(TypeError|RangeError): /.test(err.message)) err.message = err.message.replace(': ', `: ${what}: `)
      throw err
    }
  })
  // A dropped set is not remembered (the registry is full, and these maps must not grow past it): its
  // labels live in the contexts that run under it.
  if (id === DROPPED) return new Transient(DROPPED, frozenLabels(keys, values))
  idsByText.set(text, id)
  if (id !== 0) setsById.set(id, frozenLabels(keys, values))
  return id
}

/** The labels object of `keys[i]: values[i]`, frozen. */
const frozenLabels = (keys, values) => Object.freeze(Object.fromEntries(keys.map((k, i) => [k, values[i]])))

/** A transient set (see jsprof-core label_recorder.rs) as the storage holds it; 0 for an empty one. */
function internTransient(what, keys, values) {
  const id = callNative(() => {
    try {
      return binding.internTransientLabels(keys, values)
    } catch (err) {
      if (err && /^(TypeError|RangeError): /.test(err.message)) err.message = err.message.replace(': ', `: ${what}: `)
      throw err
    }
  })
  if (id === 0) return 0
  return new Transient(id, frozenLabels(keys, values))
}

/**
 * Runs `fn(...args)` with `labels` added to the labels current now: every sample taken while it, or
 * anything it starts, runs carries them. Returns what fn returns (a promise stays labelled to the end).
 */
function withLabels(labels, fn, ...args) {
  if (typeof fn !== 'function') throw new TypeError(`withLabels: fn must be a function, got ${describe(fn)}`)
  const store = idOf('withLabels', labels, storage.getStore())
  appLabelled = true
  enableTracking()
  const previous = running()
  record(idOfStore(store))
  explicit++
  try {
    return storage.run(store, fn, ...args)
  } finally {
    explicit--
    record(previous)
  }
}

/**
 * Adds `labels` to the labels of the code running now and of everything it starts from here on (as
 * AsyncLocalStorage.enterWith does): e.g. the route, once a router knows it.
 */
function setLabels(labels) {
  const store = idOf('setLabels', labels, storage.getStore())
  appLabelled = true
  enableTracking()
  // Inside a request, for the rest of the request: its own events (its body's) run with them too.
  if (store instanceof Context) store.request.latest = store
  storage.enterWith(store)
  record(idOfStore(store))
}

/** The labels current now (a frozen object; empty when none). */
function getLabels() {
  return labelsOfStore(storage.getStore()) ?? Object.freeze({})
}

// ---- For the request integrations (lib/api/requests): every request labelled with its route ----

/**
 * Label set ids by two keys (a plain Map of Maps: looked up without building a text per request), at
 * most `cap` of them: past that, callers give their bounded answer instead of a new set.
 */
class PairCache {
  #byFirst = new Map()
  #size = 0
  #cap

  constructor(cap) {
    this.#cap = cap
  }

  get(first, second) {
    return this.#byFirst.get(first)?.get(second)
  }

  get full() {
    return this.#size >= this.#cap
  }

  set(first, second, id) {
    if (this.full) return
    let bySecond = this.#byFirst.get(first)
    if (bySecond === undefined) this.#byFirst.set(first, (bySecond = new Map()))
    bySecond.set(second, id)
    this.#size++
  }
}

/** Past this many distinct (method, route) pairs, new ones are labelled by method only. */
const MAX_REQUEST_SETS = 10_000
/** Request label sets by method, then by route template (`undefined`: no route known). */
const requestIds = new PairCache(MAX_REQUEST_SETS)

/**
 * The id of `{ method, route: 'GET /users/:id' }` (route omitted when `template` is undefined). Never
 * throws: a method or template the label rule refuses (too long) labels by what is valid, or not at all.
 */
function requestLabelsId(method, template) {
  const m = typeof method === 'string' ? method : ''
  let id = requestIds.get(m, template)
  if (id !== undefined) return id
  // Past the cap a new route is labelled by its method alone: the cache and the registry stay bounded.
  if (requestIds.full && template !== undefined) return requestLabelsId(method, undefined)
  const labels = template === undefined ? { method: m } : { method: m, route: `${m} ${template}` }
  try {
    id = idOf('requests', labels, undefined)
  } catch {
    id = template === undefined ? 0 : requestLabelsId(method, undefined)
  }
  requestIds.set(m, template, id)
  return id
}

/**
 * Runs `fn.apply(thisArg, args)` with the labels `store` holds (a registered set's id, 0 for none, a
 * Transient or a Context), as withLabels does.
 */
function runWithLabels(store, fn, thisArg, args) {
  enableTracking()
  const id = idOfStore(store)
  // Already in that set inside a callback (a request's event emitted by its own code): nothing to
  // enter, nothing to record (its callback's `before` recorded the set, its `after` records the return).
  if (depth > 0 && recorded === id && storage.getStore() === store) return Reflect.apply(fn, thisArg, args)
  const previous = running()
  record(id)
  explicit++
  try {
    return storage.run(store, Reflect.apply, fn, thisArg, args)
  } finally {
    explicit--
    record(previous)
  }
}

// ---- Span profiles: the local root span of the request, when OpenTelemetry is there ----

/** @opentelemetry/api when the app can load it (an optional peer, looked up once), else null. */
let otel
function openTelemetry() {
  if (otel === undefined) {
    try {
      otel = require('@opentelemetry/api')
    } catch {
      otel = null
    }
  }
  return otel
}

/**
 * The context key under which @opentelemetry/instrumentation-http keeps the request's server span
 * (`@opentelemetry/core`'s RPC metadata; createContextKey makes keys with Symbol.for): the local root
 * span of an incoming request, whatever child span is active where the integration runs.
 */
const RPC_METADATA = Symbol.for('OpenTelemetry SDK Context Key RPC_METADATA')

/** The attribute that tells Grafana a span has a profile (its value: the span id). */
const PROFILE_ID_ATTRIBUTE = 'pyroscope.profile.id'

/** A span's name when it has one (the SDK's spans expose it), else undefined. */
function spanName(span) {
  try {
    const name = span.name
    return typeof name === 'string' && name !== '' ? name : undefined
  } catch {
    return undefined
  }
}

/** Whether a span still records (may still be renamed): OpenTelemetry's `isRecording()`. */
function isRecording(span) {
  try {
    return typeof span.isRecording === 'function' && span.isRecording() === true
  } catch {
    return false
  }
}

/**
 * The local root span active now (the request's server span, else the active span) when its span
 * context is valid, with the attribute `pyroscope.profile.id` set on it; null without OpenTelemetry or
 * a valid span. Never throws: a tracer's odd span is ignored.
 */
function rootSpan() {
  const api = openTelemetry()
  if (api === null) return null
  try {
    const active = api.context.active()
    const rpc = active.getValue(RPC_METADATA)
    const span = (rpc && rpc.span) || api.trace.getSpan(active)
    if (!span || typeof span.spanContext !== 'function') return null
    const sc = span.spanContext()
    if (!api.isSpanContextValid(sc)) return null
    if (typeof span.setAttribute === 'function') span.setAttribute(PROFILE_ID_ATTRIBUTE, sc.spanId)
    return { span, traceId: sc.traceId, spanId: sc.spanId }
  } catch {
    return null
  }
}

/** Writes the `words` 8-digit groups of `hex` at `ring[at…]`; false when it is not that many hex digits. */
function hexWords(hex, ring, at, words) {
  if (typeof hex !== 'string' || hex.length !== words * 8) return false
  // By char code: no substring per group (measured: 640 → 548 ns a span, bench/labels.mjs).
  for (let w = 0, i = 0; w < words; w++) {
    let value = 0
    for (const end = i + 8; i < end; i++) {
      const c = hex.charCodeAt(i)
      const digit = c <= 57 ? c - 48 : (c | 32) - 87 // 0-9, then a-f and A-F
      if (c <= 57 ? digit < 0 : digit < 10 || digit > 15) return false
      value = value * 16 + digit
    }
    ring[at + w] = value
  }
  return true
}

/** Past this many distinct (request set, span name) pairs, new ones are labelled without the name. */
const MAX_NAMED_SETS = 10_000
/**
 * Request sets with a span name, by registered set, then by name. A tracer names spans after the
 * route ("GET /users/:id"), so a handful; past the cap, spans are labelled without their name.
 */
const namedIds = new PairCache(MAX_NAMED_SETS)

/**
 * The store of the request's set `base` (a registered set's id, or a set past the registry's cap) with
 * `span_name: name` (base itself when refused or past the cap of names).
 */
function namedSetId(base, name) {
  if (name === undefined) return base
  let id = namedIds.get(base, name)
  if (id !== undefined) return id
  if (namedIds.full) return base
  try {
    id = idOf('requests', { span_name: name }, base)
  } catch {
    id = base
  }
  namedIds.set(base, name, id)
  return id
}

// ---- Request contexts: the context ring ----
//
// One slot per context (jsprof-core label_recorder.rs says the words): a request's own, and one per
// label set its code entered. Written here, with no call into Rust per request; each harvest hands
// the array over and reads only the slots some sample landed in. A slot is reused 65,536 contexts
// later: a context still running then records its registered set from then on (its labels without
// span ids, in no request's profile), never another's.
const RING_SLOTS = binding.CONTEXT_RING_SLOTS
const RING_WORDS = binding.CONTEXT_RING_WORDS
const RING_ID_BASE = binding.CONTEXT_RING_ID_BASE
const RING_GENERATIONS = binding.CONTEXT_RING_GENERATIONS
/** Allocated at the first request context (2.6 MB, written a slot per context). */
let ring = null
let ringSlot = 0
let ringGeneration = 0
/** Past this many label sets entered by one request's code, more are labelled outside the request. */
const MAX_ENTERED = 256
const NO_LABELS = Object.freeze({})
/** Request contexts with a live span whose name a harvest reads again (the tracer renames spans). */
let spanned = []

/**
 * A context in the ring, as the AsyncLocalStorage holds it: a request's own (`request === this`,
 * entered once at the integration's entry), or one its code entered with setLabels/withLabels
 * (`extra`: the labels it added over the request's). `set` is its registered label set, rewritten
 * in the ring when the request learns its route or its span a new name: the timeline records the
 * context, a harvest reads what it says then.
 */
class Context {
  constructor(set, request) {
    if (ring === null) ring = new Uint32Array(RING_SLOTS * RING_WORDS)
    const at = ringSlot * RING_WORDS
    this.id = RING_ID_BASE + ringGeneration * RING_SLOTS + ringSlot
    this.at = at
    this.mark = ringGeneration + 1
    this.set = set
    this.request = request ?? this
    /** A context the request's code entered: the labels it added (else undefined). */
    this.extra = undefined
    // A request's own: its method (undefined: not labelled), route template, span and the contexts
    // its code entered (by their labels' text).
    this.method = undefined
    this.template = undefined
    this.span = null
    this.spanLabels = null
    this.spanName = undefined
    this.entries = undefined
    /** A request's own: the context its code entered last with setLabels, where its events run. */
    this.latest = this
    /** getLabels()'s object, and the set it was built from. */
    this.frozen = NO_LABELS
    this.frozenSet = -1
    ring[at] = 0 // not the slot's old context while it is written
    ring[at + 1] = idOfStore(set)
    ring[at + 2] = this.request.id
    ring[at + 3] = 0
    ring[at] = this.mark
    if (++ringSlot === RING_SLOTS) {
      ringSlot = 0
      ringGeneration = (ringGeneration + 1) % RING_GENERATIONS
    }
  }

  /** Whether the ring's slot still holds this context. */
  get live() {
    return ring[this.at] === this.mark
  }

  /** The id the timeline records: the context's, or its set's once its slot was reused. */
  current() {
    return ring[this.at] === this.mark ? this.id : idOfStore(this.set)
  }

  labels() {
    const set = this.set
    if (this.frozenSet !== set) {
      const own = labelsOfStore(set) ?? NO_LABELS
      const span = this.request.spanLabels
      this.frozen = span === null ? own : sortedFrozen({ ...own, ...span })
      this.frozenSet = set
    }
    return this.frozen
  }

  #write(set) {
    this.set = set
    if (ring[this.at] === this.mark) ring[this.at + 1] = idOfStore(set)
  }

  /** A request's own: its set from its method, route template and span name now, in every context of it. */
  relabel() {
    if (this.method === undefined) return
    const set = namedSetId(requestLabelsId(this.method, this.template), this.spanName)
    if (set === this.set) return
    this.#write(set)
    if (this.entries === undefined) return
    for (const entered of this.entries.values()) {
      try {
        entered.#write(internSet('requests', { ...labelsOfStore(set), ...entered.extra }))
      } catch {} // past the cap of labels: it keeps what it had
    }
  }

  /**
   * A request's own: follows the local root span active now (OpenTelemetry), when it follows none yet
   * and its slot still holds it: the span's ids in the ring, its name read again at each harvest while
   * it records. Returns whether it follows one now (then `relabel()` gives the request its name).
   */
  followSpan() {
    if (this.span !== null) return true
    if (this.method === undefined || !this.live) return false
    const root = rootSpan()
    if (root === null || !hexWords(root.traceId, ring, this.at + 4, 4) || !hexWords(root.spanId, ring, this.at + 8, 2))
      return false
    ring[this.at + 3] = 1
    this.span = root.span
    this.spanLabels = { trace_id: root.traceId, span_id: root.spanId }
    this.spanName = spanName(root.span)
    this.frozenSet = -1 // getLabels() gives the span's ids from now on
    // Read again at each harvest while it records; harvests come only while the sampler runs.
    if (sampling) {
      if (spanned.length >= RING_SLOTS) {
        spanned = spanned.filter((c) => c.live && isRecording(c.span))
        // As many spans open at once as the ring holds: the oldest are named as they are.
        if (spanned.length >= RING_SLOTS / 2) spanned = spanned.slice(-RING_SLOTS / 4)
      }
      spanned.push(this)
    }
    return true
  }

  /**
   * The router matched `template`: every sample of the request, from its entry on, carries it in
   * what is harvested from now on, beside the labels its code added (a middleware's
   * `setLabels({ tenant })` before the route was known stays).
   */
  route(template) {
    // Express's router sets req.route twice per request (at the match, then in Route#dispatch).
    if (typeof template !== 'string' || template === this.template) return
    this.template = template
    this.relabel()
  }

  /**
   * The context of the request's labels with `extra` (checked string values, no span ids) over them:
   * one per distinct `extra` and request, in the request (its profile keeps its samples).
   */
  entered(what, extra) {
    const keys = Object.keys(extra).sort()
    const text = JSON.stringify([keys, keys.map((k) => extra[k])])
    const known = this.entries?.get(text)
    if (known !== undefined && known.live) return known
    const set = internSet(what, { ...labelsOfStore(this.set), ...extra })
    // A span context given (a Transient) is labelled outside the request; one past the cap stays in it.
    if (
      (set instanceof Transient && set.id !== DROPPED) ||
      (this.entries !== undefined && this.entries.size >= MAX_ENTERED)
    )
      return set
    const context = new Context(set, this)
    context.extra = Object.freeze(extra)
    ;(this.entries ??= new Map()).set(text, context)
    return context
  }

  /** Runs `fn.apply(thisArg, args)` in this context (its code, and what it starts). */
  run(fn, thisArg, args) {
    return runWithLabels(this, fn, thisArg, args)
  }

  /**
   * Enters this context for the rest of the code running now and what it starts (as
   * AsyncLocalStorage.enterWith does): for an entry point that cannot wrap the request's listener
   * (a diagnostics_channel subscriber to 'http.server.request.start').
   */
  enter() {
    enableTracking()
    storage.enterWith(this)
    record(this.current())
  }
}

/**
 * Begins a request's context: one per request, entered once at its integration's entry (its listener
 * call, `run`, or `enter`). `method` labels it (undefined: a context without labels, for a sampled
 * request's profile alone), `template` its route when known from the start (Fastify); with
 * OpenTelemetry, the span context of the request's local root span too. The request's own events
 * (`req`'s body 'data'/'end', which Node emits in the connection's async context, not the request's)
 * run in it for the request's life (the emitter is the request's own object) — with the labels its
 * code added with setLabels since (a middleware's tenant). Never throws.
 */
function beginRequest(req, method, template) {
  const context = new Context(0, undefined)
  if (typeof method === 'string') {
    context.method = method
    context.template = typeof template === 'string' ? template : undefined
    context.followSpan()
    context.relabel()
  }
  const emit = req.emit
  req.emit = function emitInContext(event, ...args) {
    if (!(sampling || watchers > 0) || !runsAppCode(this, event)) return emit.call(this, event, ...args)
    return runWithLabels(context.latest, emit, this, [event, ...args])
  }
  return context
}

/**
 * Before each harvest (the sampler calls it): the spans of request contexts named again (a tracer
 * renames a server span once it knows the route: `GET` becomes `GET /users/:id`), so what is
 * harvested says the span's name now; then the timeline to Rust.
 */
function beforeHarvest() {
  if (spanned.length > 0) {
    const still = []
    for (const context of spanned) {
      if (!context.live) continue
      const name = spanName(context.span)
      if (name !== context.spanName) {
        context.spanName = name
        context.relabel()
      }
      // An ended span is named for good (it records no more); one that cannot tell is read once.
      if (isRecording(context.span)) still.push(context)
    }
    spanned = still
  }
  flushLabels()
}

/**
 * Whether emitting `event` on a request runs code other than Node's own bookkeeping: not when nobody
 * listens, nor when the only listener is node:http's `clearIncoming` (which the server adds to every
 * request's 'end' when its response finishes; it only drops the parser's reference to the request).
 * Measured: entering the request's labels for that 'end' was a second context entry on every request,
 * docs/bench.md#labels-on-every-request.
 */
function runsAppCode(emitter, event) {
  const count = emitter.listenerCount(event)
  if (count !== 1 || event !== 'end') return count > 0
  const listener = emitter._events?.end
  return typeof listener !== 'function' || listener.name !== 'clearIncoming'
}

module.exports = {
  /** This thread's context ring for a harvest (null before the first request context). */
  contextRing: () => ring,
  withLabels,
  setLabels,
  getLabels,
  flushLabels,
  beforeHarvest,
  samplingChanged,
  recordingChanged,
  watchContexts,
  contextsRead,
  /** Whether the hooks run now (tests, benches). */
  tracking: () => hook !== null,
  DROPPED,
  Context,
  beginRequest,
  requestLabelsId,
  enableTracking,
  disableTracking,
}
