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
// Samples: V8's sampler cannot read JS state, so the thread records *when* its label set changes:
// an async hook's `before`/`after` (every callback of an async resource, promise reactions included)
// compares the id of the context it enters or returns to with the last one recorded and, when it
// differs, writes (time on V8's sample clock, id) into a preallocated ring of typed arrays — no
// allocation per context switch. A callback returning to the event loop itself (not to code that
// called it synchronously) records nothing: the loop runs no app code until the next callback's
// `before` records its set, and a sample with no code running (idle, native) carries no labels
// whatever the timeline says (jsprof-core Chunk::label_samples). So a run of callbacks of one label
// set — every `await` of one request — records nothing at all after the first (measured: the
// record on every return was most of the labels' cost per await, docs/bench.md#labels-on-every-request).
// The ring goes to Rust when it is full and before each harvest
// (flushLabels, called by the sampler), and Rust gives each harvested sample the set current at its
// time (jsprof-core label_recorder.rs and Chunk::label_samples). So labels reach every consumer of the
// sampler: Profiler traces, continuous chunks, request profiles, `jsprof record`.
//
// Label sets are interned once each (the native registry checks the label rule, jsprof-core
// trace/labels.rs: keys as label names, bounded counts and lengths; and caps the distinct sets it keeps:
// past the cap a new set's samples carry no labels and the trace counts them in `jsprof.labelsDropped`).
// A set past the cap is still the code's labels — getLabels(), nesting, propagation — held here only by
// the async contexts that run under it (a Transient with the dropped id), so it is forgotten with them.

const { AsyncLocalStorage, createHook } = require('node:async_hooks')
const { performance } = require('node:perf_hooks')
const { binding, callNative } = require('./native')
const { timeOriginUs } = require('./clock')
const { describe } = require('./args')
const { promiseHooksInstead, createPromiseHook } = require('./promise-hooks')

/** The native registry's id of a set it could not keep (past its cap). */
const DROPPED = 0xffffffff
/** Ring capacity (changes between two flushes). 12 bytes each. */
const RING = 16_384
/** Depth of nested callbacks tracked (deeper ones return to "no labels"). */
const STACK = 1024

const storage = new AsyncLocalStorage()
const originUs = timeOriginUs()
const now = () => performance.now() * 1000 + originUs

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
 * A set not interned for good — one request's span context (jsprof-core label_recorder.rs), or a set
 * past the registry's cap (id DROPPED: its samples carry none) — as the AsyncLocalStorage holds it: its
 * native id, and its labels — given, or built on first read from the store of the request's set `base`
 * and its span labels (getLabels() is rarely called per request). Nothing else keeps it: it goes when the
 * last async context holding it does (measured: a table of the last 65,536 of them, churned once per
 * request, cost span ids a share of their CPU, docs/bench.md#labels-on-every-request).
 */
class Transient {
  constructor(id, labels, base, span) {
    this.id = id
    this.frozen = labels
    this.base = base
    this.span = span
  }

  labels() {
    if (this.frozen === undefined) {
      const merged = { ...labelsOfStore(this.base), ...this.span }
      this.frozen = Object.freeze(
        Object.fromEntries(
          Object.keys(merged)
            .sort()
            .map((k) => [k, merged[k]]),
        ),
      )
    }
    return this.frozen
  }
}

/** The id of what the storage holds (a registered set's id, a Transient, or nothing). */
const idOfStore = (store) => (typeof store === 'number' ? store : store === undefined ? 0 : store.id)
/** The labels of what the storage holds (undefined for none or an unknown set). */
const labelsOfStore = (store) =>
  typeof store === 'number' ? setsById.get(store) : store === undefined ? undefined : store.labels()

function record(id) {
  if (id === recorded) return
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
function enableTracking() {
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
  if (exceptionsWatched) return
  exceptionsWatched = true
  // An uncaught exception skips the `after` of every callback it unwinds (Node clears its async
  // stack): back to the event loop, no labels.
  process.on('uncaughtExceptionMonitor', backToLoop)
}

/**
 * Stops following labels until the next withLabels/setLabels/labelled request turns it on again: the
 * hooks off, the storage disabled (on Node 20/22 its own `init` hook goes with it), the timeline back
 * to no labels. For measuring labels on and off in turns in one process, on the same JIT state
 * (bench/server/in-process.mjs --set labels); call it where no labelled code is running. (The hooks
 * alone, without labelled code: enableTracking.)
 */
function disableTracking() {
  if (hook === null) return
  hook.disable()
  hook = null
  if (stopPromiseHook !== null) stopPromiseHook()
  stopPromiseHook = null
  storage.disable()
  backToLoop()
}

/**
 * What the storage holds for `labels` (a plain object of string values) merged over the set held now
 * (`base`): a registered set's id, or a Transient for a set with a span context.
 */
function idOf(what, labels, base) {
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels)) {
    throw new TypeError(`${what}: labels must be an object of label names to string values, got ${describe(labels)}`)
  }
  // No prototype: every key given is a label, `__proto__` too (which the label rule refuses).
  const merged = Object.assign(Object.create(null), labelsOfStore(base))
  for (const key of Object.keys(labels)) {
    const value = labels[key]
    if (typeof value !== 'string') {
      throw new TypeError(`${what}: the value of label ${JSON.stringify(key)} must be a string, got ${describe(value)}`)
    }
    merged[key] = value
  }
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
  enableTracking()
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
 * Runs `fn.apply(thisArg, args)` with the label set `store` holds (a registered set's id, 0 for none,
 * or a Transient), as withLabels does.
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

/**
 * `{ trace_id, span_id, span_name? }` of the local root span active now (the request's server span,
 * else the active span), and the attribute `pyroscope.profile.id` set on it; null without
 * OpenTelemetry or a valid span. Never throws: a tracer's odd span is ignored.
 */
function rootSpanLabels() {
  const api = openTelemetry()
  if (api === null) return null
  try {
    const active = api.context.active()
    const rpc = active.getValue(RPC_METADATA)
    const span = (rpc && rpc.span) || api.trace.getSpan(active)
    if (!span || typeof span.spanContext !== 'function') return null
    const sc = span.spanContext()
    if (!api.isSpanContextValid(sc)) return null
    const labels = { trace_id: sc.traceId, span_id: sc.spanId }
    if (typeof span.name === 'string' && span.name !== '') labels.span_name = span.name
    if (typeof span.setAttribute === 'function') span.setAttribute(PROFILE_ID_ATTRIBUTE, sc.spanId)
    return labels
  } catch {
    return null
  }
}

// The span ring (jsprof-core label_recorder.rs): each request's span context as numbers, written
// here with no call into Rust per request; the sampler hands the array to each harvest, which builds
// the sets of the slots a sample lands in, and only those. Measured: a native call per request
// building its set cost span ids most of their CPU
// (docs/bench.md#span-ids-built-only-where-a-sample-lands).
const SPAN_SLOTS = binding.SPAN_RING_SLOTS
const SPAN_WORDS = binding.SPAN_RING_WORDS
const SPAN_ID_BASE = binding.SPAN_RING_ID_BASE
const SPAN_GENERATIONS = binding.SPAN_RING_GENERATIONS
let spanRing = null
let spanSlot = 0
let spanGeneration = 0

/** Writes the `words` 8-digit groups of `hex` at `ring[at…]`; false when it is not that many hex digits. */
function hexWords(hex, ring, at, words) {
  if (typeof hex !== 'string' || hex.length !== words * 8) return false
  // By char code: no substring per group (cheaper: bench/labels.mjs prints what writing a span costs,
  // docs/bench.md#span-ids-built-only-where-a-sample-lands).
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

/**
 * A request's labels with its span's: a Transient naming a slot of the span ring, which holds the
 * request's registered set (with the span's name; none past the registry's cap) and the span's ids as
 * numbers. Never throws: a span whose ids are not 32 and 16 hex digits is ignored (the request's set).
 */
function spanLabels(method, template, span) {
  const base = namedSetId(requestLabelsId(method, template), span.span_name)
  if (spanRing === null) spanRing = new Uint32Array(SPAN_SLOTS * SPAN_WORDS)
  const at = spanSlot * SPAN_WORDS
  spanRing[at] = 0 // not this slot's old span while it is written
  if (!hexWords(span.trace_id, spanRing, at + 2, 4) || !hexWords(span.span_id, spanRing, at + 6, 2)) return base
  spanRing[at + 1] = idOfStore(base)
  spanRing[at] = spanGeneration + 1
  const id = SPAN_ID_BASE + spanGeneration * SPAN_SLOTS + spanSlot
  if (++spanSlot === SPAN_SLOTS) {
    spanSlot = 0
    spanGeneration = (spanGeneration + 1) % SPAN_GENERATIONS
  }
  return new Transient(id, undefined, base, { trace_id: span.trace_id, span_id: span.span_id })
}

/**
 * The store of the labels `running` holds with those of `own` (a request's set) over them. Never
 * throws: a merge the label rule refuses (too many labels) keeps the request's own set.
 */
function mergedStore(running, own) {
  try {
    return idOf('requests', labelsOfStore(own) ?? {}, running)
  } catch {
    return own
  }
}

/**
 * A request's labels: `id` now, and `route(template)` once the router knows the route; with
 * OpenTelemetry, the span context of the request's local root span too. The request's own events
 * (body 'data'/'end', which Node emits in the connection's async context, not the request's) run with
 * them (the emitter stays wrapped for the request's life: it is the request's own object).
 */
class RequestLabels {
  /** What the storage holds for the request's set (see runWithLabels). */
  store
  #method
  #span
  /** The route template the store holds (undefined until known). */
  #template
  /** Whether enter() entered the store. */
  #entered = false

  /** `template`: the route template when it is known from the start (Fastify). */
  constructor(method, emitter, template) {
    this.#method = method
    this.#span = rootSpanLabels()
    this.#template = typeof template === 'string' ? template : undefined
    this.store = this.#storeOf(this.#template)
    const self = this
    const emit = emitter.emit
    emitter.emit = function labelledEmit(event, ...args) {
      if (!runsAppCode(this, event)) return emit.call(this, event, ...args)
      return runWithLabels(self.store, emit, this, [event, ...args])
    }
  }

  #storeOf(template) {
    return this.#span === null
      ? requestLabelsId(this.#method, template)
      : spanLabels(this.#method, template, this.#span)
  }

  /**
   * The router matched `template` (inside run()): the request, and the code running now, carry it
   * from here on, beside the labels that code added meanwhile (a middleware's
   * `setLabels({ tenant })` before the route was known stays).
   */
  route(template) {
    // Express's router sets req.route twice per request (at the match, then in Route#dispatch).
    if (typeof template !== 'string' || template === this.#template) return
    this.#template = template
    const running = storage.getStore()
    const own = this.#storeOf(template)
    this.store = running === this.store ? own : mergedStore(running, own)
    storage.enterWith(this.store)
    record(idOfStore(this.store))
  }

  run(fn, thisArg, args) {
    return runWithLabels(this.store, fn, thisArg, args)
  }

  /** The route template the labels carry (undefined until known). */
  get template() {
    return this.#template
  }

  /**
   * Enters the request's labels for the code running now and what it starts (as setLabels does, the
   * request's own set, nothing merged), where no wrapper runs the request's code: jsprof-node/register
   * enters them where Node announces the request, then in its server's 'request' event. A span that
   * became active since (a tracer's server span, started inside that event) joins them then.
   */
  enter() {
    const first = !this.#entered
    let changed = first
    this.#entered = true
    // The constructor looked for a span just before the first entry: look again only on a later one.
    if (!first && this.#span === null) {
      this.#span = rootSpanLabels()
      if (this.#span !== null) {
        this.store = this.#storeOf(this.#template)
        changed = true
      }
    }
    if (!changed) return
    enableTracking()
    storage.enterWith(this.store)
    record(idOfStore(this.store))
  }
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
  /** This thread's span ring for a harvest (null before the first span). */
  spanRing: () => spanRing,
  withLabels,
  setLabels,
  getLabels,
  flushLabels,
  DROPPED,
  RequestLabels,
  requestLabelsId,
  rootSpanLabels,
  spanLabels,
  enableTracking,
  disableTracking,
}
