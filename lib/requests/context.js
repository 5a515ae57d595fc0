'use strict'
// When a sampled request's own code runs. The sampler cannot tag samples, so each sampled request
// records the intervals in which its code ran and its Recording keeps only the samples inside them.
//
// A request's code is: the listener/middleware call itself (entered explicitly), the events its
// IncomingMessage emits ('data', 'end': body parsing runs in the connection's async context, not the
// request's), and every callback of an async resource created inside the request's
// AsyncLocalStorage context (async_hooks `before`/`after`; promises included). The hook is enabled
// only while sampled requests are in flight (and for a second after the last one, so that its
// enabling and disabling does not churn), so unsampled traffic pays nothing otherwise.

const { AsyncLocalStorage, createHook } = require('node:async_hooks')
const { performance } = require('node:perf_hooks')
const { timeOriginUs } = require('../clock')

const als = new AsyncLocalStorage()
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
const hook = createHook({
  before() {
    const ctx = als.getStore()
    if (ctx !== undefined && !ctx.done) ctx.enter()
  },
  after() {
    const ctx = als.getStore()
    if (ctx !== undefined) ctx.leave()
  },
})

/** A new context; the async hook runs while any context is open. */
let hookEnabled = false
function openContext() {
  inFlight++
  if (!hookEnabled) {
    hookEnabled = true
    hook.enable()
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
        hook.disable()
      }
    }, HOOK_LINGER_MS)
    lingerTimer.unref()
  }
  return times
}

/** Runs `fn` as the request's code: inside its ALS context, its time recorded. */
function runIn(ctx, fn, thisArg, args) {
  return als.run(ctx, () => {
    ctx.enter()
    try {
      return fn.apply(thisArg, args)
    } finally {
      ctx.leave()
    }
  })
}

/** Makes the events `emitter` emits (request body 'data'/'end', …) count as the request's code. */
function bindEmitter(ctx, emitter) {
  const emit = emitter.emit
  const own = Object.prototype.hasOwnProperty.call(emitter, 'emit')
  emitter.emit = function (...args) {
    if (ctx.done) return emit.apply(this, args)
    return runIn(ctx, emit, this, args)
  }
  return () => {
    if (own) emitter.emit = emit
    else delete emitter.emit
  }
}

module.exports = { openContext, closeContext, runIn, bindEmitter, now, inFlightCount: () => inFlight }
