'use strict'
// When a sampled request's own code runs. The sampler cannot tag samples, so each sampled request
// records the intervals in which its code ran and its Recording keeps only the samples inside them.
//
// A request's code is: the listener/middleware call itself (entered explicitly), the events its
// IncomingMessage emits ('data', 'end': body parsing runs in the connection's async context, not the
// request's), and every callback of an async resource created inside the request's context
// (async_hooks `before`/`after`; promises included).
//
// The context is propagated the way AsyncLocalStorage does it (the creating context is stored on each
// new async resource by an `init` hook), but by our own hook, enabled only while sampled requests are
// in flight (and for a second after the last one, so that enabling does not churn). An
// AsyncLocalStorage would keep its init hook on for good once used, and writes its slot on *every*
// resource of the process: measured, that alone cost a small JSON API a clear share of its throughput
// (docs/bench.md#throughput). Ours
// writes only resources created while a sampled request's code runs; unsampled traffic pays a
// variable check per resource and callback while the hook is on, and nothing when it is off.
//
// Where AsyncLocalStorage is built on V8's continuation-preserved data (Node 24+: AsyncContextFrame)
// it costs no hook at all: propagation is V8's and Node's own, for every resource, whether we look or
// not. There the context rides in an AsyncLocalStorage of ours and the hook has no `init` (one call
// per resource and per promise while sampled requests are in flight; measured,
// bench/results/req10-express.md): `before` and `after` read the context of the
// callback from it.

const { AsyncLocalStorage, createHook, executionAsyncResource } = require('node:async_hooks')
const { performance } = require('node:perf_hooks')
const { timeOriginUs } = require('../../clock')
const { promiseHooksInstead, createPromiseHook } = require('../../promise-hooks')

/** The slot on async resources (and promises) holding the context of the request that created them. */
const kContext = Symbol('jsprof-node request context')
/** The context entered explicitly by runIn (listener call, request events); undefined outside. */
let current
/**
 * The context of the promise reaction running now (promise-hooks path only: there Node's async hooks
 * do not see promises, so executionAsyncResource() is not the promise), and the contexts it hides.
 */
let inPromise
const promiseStack = []

/**
 * Our AsyncLocalStorage for the context where it is AsyncContextFrame's (no `_propagate`: the hook-based
 * one has it, Node 20/22 or `--no-async-context-frame`); null elsewhere.
 */
const frames = typeof AsyncLocalStorage.prototype._propagate === 'function' ? null : new AsyncLocalStorage()

/** The context of the code running now: an explicit runIn, a promise reaction's, else the running async resource's. */
function runningContext() {
  if (current !== undefined) return current
  if (inPromise !== undefined) return inPromise
  const resource = executionAsyncResource()
  return resource !== null && typeof resource === 'object' ? resource[kContext] : undefined
}

const originUs = timeOriginUs()
/** µs on V8's sample clock, from performance.now() (cheaper than hrtime.bigint on the hot path). */
const now = () => performance.now() * 1000 + originUs

/** Beyond this many intervals a request's last interval is stretched instead (bounded memory). */
const MAX_INTERVALS = 50_000

class RequestContext {
  depth = 0
  begin = 0
  /** [begin0, end0, begin1, end1, …] µs. */
  times = []
  done = false

  enter() {
    if (this.depth++ === 0) this.begin = now()
  }

  leave() {
    if (this.depth === 0) return
    if (--this.depth === 0 && !this.done) this.#push(this.begin, now())
  }

  #push(begin, end) {
    const t = this.times
    if (t.length >= 2 * MAX_INTERVALS) t[t.length - 1] = end
    else t.push(begin, end)
  }

  /** The intervals so far (an open one counts up to now), for a harvest while the request runs. */
  snapshot() {
    const t = Float64Array.from(this.times)
    if (this.depth === 0 || this.done) return t
    const withOpen = new Float64Array(t.length + 2)
    withOpen.set(t)
    withOpen[t.length] = this.begin
    withOpen[t.length + 1] = now()
    return withOpen
  }

  /** Closes the context at `endUs` (an interval still open counts up to then) and returns its times. */
  close(endUs) {
    if (!this.done && this.depth > 0) this.#push(this.begin, endUs)
    this.done = true
    return Float64Array.from(this.times)
  }
}

let inFlight = 0

function adopt(resource) {
  const ctx = runningContext()
  if (ctx !== undefined && !ctx.done) resource[kContext] = ctx
}

// No stack of our own for async resources: `before` and `after` both read the context off the
// resource whose callback runs (executionAsyncResource() is that resource in both), so an `after`
// skipped by an uncaught exception cannot leave a wrong context behind (at worst its interval stays
// open to the request's end).
const callbacks = {
  init(asyncId, type, triggerAsyncId, resource) {
    adopt(resource)
  },
  before() {
    const resource = executionAsyncResource()
    const ctx = resource !== null && typeof resource === 'object' ? resource[kContext] : undefined
    if (ctx !== undefined) ctx.enter()
  },
  after() {
    const resource = executionAsyncResource()
    const ctx = resource !== null && typeof resource === 'object' ? resource[kContext] : undefined
    if (ctx !== undefined) ctx.leave()
  },
}

let hook = null
let stopPromiseHooks = null
let usesPromiseHooks = false

/** With AsyncContextFrame: no `init`, the callback's context read from the frame it runs in. */
const frameCallbacks = {
  before() {
    const ctx = frames.getStore()
    if (ctx !== undefined) ctx.enter()
  },
  after() {
    const ctx = frames.getStore()
    if (ctx !== undefined) ctx.leave()
  },
}

/** Promise reactions, followed with V8's promise hooks (init-hook path). */
const promiseCallbacks = {
  init(promise) {
    adopt(promise)
  },
  before(promise) {
    promiseStack.push(inPromise)
    inPromise = promise[kContext]
    if (inPromise !== undefined) inPromise.enter()
  },
  after(promise) {
    const ctx = promise[kContext]
    if (ctx !== undefined) ctx.leave()
    inPromise = promiseStack.pop()
  },
}

function enableHooks() {
  if (hook === null) {
    // Where an async hook can leave promises out, the tracker follows them with V8's promise hooks.
    usesPromiseHooks = promiseHooksInstead()
    const resourceCallbacks = frames !== null ? frameCallbacks : callbacks
    hook = createHook(usesPromiseHooks ? { ...resourceCallbacks, trackPromises: false } : resourceCallbacks)
  }
  hook.enable()
  // With frames, a promise reaction runs in the frame its promise captured, V8's hooks included.
  if (usesPromiseHooks) stopPromiseHooks = createPromiseHook(frames !== null ? frameCallbacks : promiseCallbacks)
}

function disableHooks() {
  hook.disable()
  if (stopPromiseHooks !== null) {
    stopPromiseHooks()
    stopPromiseHooks = null
  }
  inPromise = undefined
  promiseStack.length = 0
}

/** A new context; the async hook runs while any context is open. */
let hookEnabled = false
function openContext() {
  inFlight++
  if (!hookEnabled) {
    hookEnabled = true
    enableHooks()
  }
  return new RequestContext()
}

/** The hook stays enabled this long after the last sampled request (no enable/disable churn). */
const HOOK_LINGER_MS = 1000
let lingerTimer = null

function closeContext(ctx, endUs) {
  const times = ctx.close(endUs)
  if (--inFlight === 0 && lingerTimer === null) {
    lingerTimer = setTimeout(() => {
      lingerTimer = null
      if (inFlight === 0 && hookEnabled) {
        hookEnabled = false
        disableHooks()
      }
    }, HOOK_LINGER_MS)
    lingerTimer.unref()
  }
  return times
}

/** Runs `fn` as the request's code: inside its context (resources it creates inherit it), timed. */
function runIn(ctx, fn, thisArg, args) {
  if (frames !== null) return frames.run(ctx, timed, ctx, fn, thisArg, args)
  const previous = current
  current = ctx
  try {
    return timed(ctx, fn, thisArg, args)
  } finally {
    current = previous
  }
}

/** `fn.apply(thisArg, args)` counted as `ctx`'s code. */
function timed(ctx, fn, thisArg, args) {
  ctx.enter()
  try {
    return fn.apply(thisArg, args)
  } finally {
    ctx.leave()
  }
}

/**
 * Makes the events `emitter` emits (request body 'data'/'end', …) count as the request's code.
 * Unbinding assigns the original back rather than deleting the own property: `delete` would turn the
 * request object into a slow dictionary-mode object (measured: the single hottest line of the
 * tracker in a CPU profile of the benchmark server).
 */
function bindEmitter(ctx, emitter) {
  const emit = emitter.emit
  emitter.emit = function boundEmit(...args) {
    if (ctx.done) return emit.apply(this, args)
    return runIn(ctx, emit, this, args)
  }
  return () => {
    emitter.emit = emit
  }
}

module.exports = {
  openContext,
  closeContext,
  runIn,
  bindEmitter,
  now,
  inFlightCount: () => inFlight,
  /** true when promises are followed with V8's promise hooks (Node with createHook trackPromises). */
  usesPromiseHooks: () => usesPromiseHooks,
}
