'use strict'
// Request profiling: `profileRequests(options)` samples a fraction of the requests of a node:http,
// Express or Fastify server and gives each sampled request its own ProfilerTrace, holding only the
// samples taken while that request's own code ran, from its arrival to its response's 'finish' (or
// 'close'). Each request is one context (lib/labels.js beginRequest), entered once at the
// integration's entry; the thread's one record of which context runs (the labels' timeline) says which
// samples are whose, so a sampled request's profile is cut from it (Recording.keepContext), and every
// request is labelled with its method and route from the same context.
//
// Each sampled request is a cheap subscription of the thread's shared sampler (no V8 restart while
// the sampler runs), and its stop is batched into the sampler's next harvest: `onProfile` is called at
// most `maxStopDelay` ms after the response finished (plus the harvest and the trace build).

const { binding, rethrowTyped } = require('../../native')
const { timeOriginUs, traceClock, fastNowUs: now } = require('../../clock')
const { buildTrace, emptyTrace } = require('../../trace')
const { getSampler, effectiveIntervalUs, Subscription } = require('../../sampler')
const { readOptions, argument, mandatory, number, func, boolean } = require('../../args')
const { beginRequest, contextsRead } = require('../../labels')

// Express sets `req.route` when its router matches a route. The request's labels learn the template
// from a `route` accessor on the requests' prototype (Express's `request` object, see routeHolder),
// installed once, which finds the request's labels under a symbol. (An accessor of each request's own, with closures of its
// own, gave every request object a shape of its own, and Express's code went megamorphic: measured,
// bench/results/req10-express.md.)
const ROUTE = Symbol('jsprof.route')
const ROUTE_LABELS = Symbol('jsprof.routeLabels')
const routeAccessor = {
  configurable: true,
  enumerable: true,
  get() {
    return this[ROUTE]
  },
  set(value) {
    this[ROUTE] = value
    const labels = this[ROUTE_LABELS]
    if (labels !== undefined && value && value.path !== undefined)
      labels.route((this.baseUrl || '') + String(value.path))
  },
}
const watchedPrototypes = new WeakSet()

/** node:http's IncomingMessage.prototype, looked up at the first Express request (its server has loaded node:http). */
let incomingPrototype = null

/**
 * Where the accessor goes: the prototype of `req` just above node:http's IncomingMessage.prototype —
 * Express's `request` object, which every app's `app.request` (a mounted sub-app's too, which Express
 * swaps in mid-request) inherits from — else `req`'s own prototype (`own`).
 */
function routeHolder(own) {
  incomingPrototype ??= require('node:http').IncomingMessage.prototype
  for (let p = own; p !== null; p = Object.getPrototypeOf(p)) {
    if (Object.getPrototypeOf(p) === incomingPrototype) return p
  }
  return own
}

/**
 * The prototype of the last request watched, and its holder when the accessor is on it (else null).
 * An app's requests share their prototype: the walk, the accessor's install and the WeakSet lookups
 * run once per app, not per request (measured: per request they were most of the route watch's cost,
 * bench/results/req10-express.md).
 */
let lastOwn = null
let lastHolder = null

/** Lets `labels` learn `req`'s route template when Express's router sets `req.route`. */
function watchExpressRoute(req, labels) {
  const own = Object.getPrototypeOf(req)
  if (own !== lastOwn) {
    const proto = own === null ? null : routeHolder(own)
    if (proto !== null && !watchedPrototypes.has(proto)) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, 'route')
      // Someone else's `route` on the prototype: left alone, and the requests watched one by one.
      if (descriptor === undefined || descriptor.get === routeAccessor.get) {
        Object.defineProperty(proto, 'route', routeAccessor)
        watchedPrototypes.add(proto)
      }
    }
    lastOwn = own
    lastHolder = proto !== null && watchedPrototypes.has(proto) ? proto : null
  }
  if (lastHolder !== null && !Object.hasOwn(req, 'route')) {
    req[ROUTE_LABELS] = labels
    return
  }
  let route = req.route
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => route,
    set(value) {
      route = value
      if (value && value.path !== undefined) labels.route((req.baseUrl || '') + String(value.path))
    },
  })
}

const OPTIONS = {
  onProfile: mandatory(func()),
  onError: func(),
  sampleRate: number({ min: 0, max: 1 }),
  sampleInterval: number({ min: 0, max: 2 ** 31 / 1000 }),
  maxBufferSize: number({ min: 0, max: 2 ** 32 - 1, integer: true }),
  maxStopDelay: number({ min: 0, max: 60_000 }),
  keepWarm: number({ min: 0, max: 3_600_000 }),
  maxInFlight: number({ min: 1, max: 1e6, integer: true }),
  labels: boolean(),
}
const DEFAULTS = {
  sampleRate: 0.1,
  sampleInterval: 10,
  maxBufferSize: 10_000,
  maxStopDelay: 1000,
  keepWarm: 1000,
  maxInFlight: 100,
  labels: true,
}

class RequestProfiler {
  #sampleRate
  #intervalUs
  #maxBufferSize
  #maxStopDelay
  #maxInFlight
  #onProfile
  #onError
  #seen = 0
  #inFlight = 0
  #closed = false
  #pending = new Set()
  /** Sampled requests in flight or waiting for their last harvest. */
  #open = new Set()
  #collector = null
  #deliveryQueued = false
  #harvestAsked = false
  #releaseTimer = null
  #keepWarm
  /** Whether every request (sampled or not) is labelled with its method and route (docs/labels.md). */
  #labels
  stats = { seen: 0, sampled: 0, profiled: 0, skippedBusy: 0, truncated: 0, errors: 0 }

  constructor(options) {
    const o = readOptions('profileRequests', options, OPTIONS, { defaults: DEFAULTS, required: true })
    this.#sampleRate = o.sampleRate
    this.#intervalUs = effectiveIntervalUs(o.sampleInterval)
    this.#maxBufferSize = o.maxBufferSize
    this.#maxStopDelay = o.maxStopDelay
    this.#maxInFlight = o.maxInFlight
    const keepWarm = o.keepWarm
    this.#keepWarm = keepWarm
    this.#labels = o.labels
    this.#onProfile = o.onProfile
    this.#onError =
      o.onError || ((err) => process.emitWarning(`jsprof-node: request profile failed: ${err && err.message}`))
    if (keepWarm > 0) getSampler().keepWarm(this, keepWarm)
    this.wrap = this.wrap.bind(this)
    this.express = this.express.bind(this)
    this.fastify = this.fastify.bind(this)
    this.fastify[Symbol.for('skip-override')] = true
    this.fastify[Symbol.for('fastify.display-name')] = 'jsprof-node'
  }

  /** The interval (ms) request traces are sampled at. */
  get sampleInterval() {
    return this.#intervalUs / 1000
  }

  /** Deterministic: exactly floor(n * sampleRate) of the first n requests are sampled. */
  #shouldSample() {
    const n = this.#seen++
    this.stats.seen++
    if (this.#closed) return false
    const rate = this.#sampleRate
    if (Math.floor((n + 1) * rate) <= Math.floor(n * rate)) return false
    if (this.#inFlight >= this.#maxInFlight) {
      this.stats.skippedBusy++
      return false
    }
    return true
  }

  /**
   * The one subscription that keeps the sampler running for sampled requests and sees each harvested
   * chunk. Requests themselves cost no native object until a chunk holds one of their samples.
   */
  #ensureCollector() {
    if (this.#collector) return
    // A listener: it keeps no samples itself, it hands each chunk to the requests that have samples in it.
    this.#collector = new Subscription({
      startUs: now(),
      intervalUs: this.#intervalUs,
      record: false,
      onChunk: (harvested) => this.#onChunk(harvested),
    })
    getSampler().add(this.#collector)
  }

  /**
   * Gives a harvested chunk to every request (in flight or finished) that has samples in it.
   * `harvestUs` is when V8's profile was taken (the chunk is converted a turn later).
   */
  #onChunk({ chunk, earliestUs: first, latestUs: last, harvestUs }) {
    this.#harvestAsked = false
    // Every request that ended before this harvest has all its samples after it: deliver then.
    if (!this.#deliveryQueued) {
      this.#deliveryQueued = true
      queueMicrotask(() => {
        this.#deliveryQueued = false
        this.#deliver(harvestUs)
      })
    }
    if (Number.isNaN(first)) return
    // The requests whose window overlaps the chunk, and how many of its samples are in each one's
    // context, in one native call.
    const candidates = []
    for (const rec of this.#open) {
      if (rec.startUs > last || (rec.stopUs !== undefined && rec.stopUs < first)) continue
      candidates.push(rec)
    }
    if (candidates.length === 0) return
    const counts = chunk.countInRequests(Uint32Array.from(candidates, (rec) => rec.context))
    for (let i = 0; i < candidates.length; i++) {
      if (counts[i] === 0) continue
      const rec = candidates[i]
      if (rec.recording === null) {
        rec.recording = new binding.Recording(rec.startUs, this.#intervalUs, this.#maxBufferSize)
        rec.recording.keepRequest(rec.context)
        if (rec.stopUs !== undefined) rec.recording.stopAt(rec.stopUs)
      }
      if (rec.recording.addChunk(chunk).becameFull) rec.truncated = true
    }
  }

  /** Delivers the requests that ended by `uptoUs` (a harvest took every sample up to then). */
  #deliver(uptoUs) {
    for (const rec of this.#open) {
      if (rec.stopUs === undefined || rec.stopUs > uptoUs) continue
      this.#open.delete(rec)
      let trace
      try {
        trace =
          rec.recording === null
            ? emptyTrace(traceClock(), this.#intervalUs, true)
            : buildTrace(rec.recording, timeOriginUs(), traceClock())
      } catch (err) {
        trace = Promise.reject(err)
      }
      this.#hand(rec, trace)
    }
    this.#maybeRelease()
  }

  #hand(rec, trace) {
    const stats = this.stats
    const fail = (err) => {
      stats.errors++
      try {
        this.#onError(err)
      } catch {}
    }
    const give = (trace) => {
      if (rec.truncated) stats.truncated++
      stats.profiled++
      const info = rec.info
      info.truncated = rec.truncated
      info.trace = trace
      return this.#onProfile(info)
    }
    if (!(trace instanceof Promise)) {
      // The common case: built here, handed over at once (no promise unless onProfile returns one).
      try {
        const result = give(trace)
        if (result && typeof result.then === 'function') this.#track(Promise.resolve(result).catch(fail))
      } catch (err) {
        fail(err)
      }
      return
    }
    this.#track(trace.catch(rethrowTyped).then(give).catch(fail))
  }

  /** Keeps `promise` until it settles, for close(). */
  #track(promise) {
    const done = promise.finally(() => this.#pending.delete(done))
    this.#pending.add(done)
  }

  /**
   * With no request in flight or waiting for `keepWarm` ms, the collector leaves and the sampler may
   * stop or slow down (its interval stays put meanwhile: no V8 restart between two requests, also
   * when a slower continuous profiler shares the sampler).
   */
  #maybeRelease() {
    if (this.#open.size > 0 || !this.#collector || this.#releaseTimer) return
    const release = () => {
      this.#releaseTimer = null
      if (this.#open.size === 0 && this.#collector) {
        getSampler().remove(this.#collector)
        this.#collector = null
      }
    }
    if (this.#keepWarm === 0 || this.#closed) return release()
    this.#releaseTimer = setTimeout(release, this.#keepWarm)
    this.#releaseTimer.unref()
  }

  /**
   * Starts profiling one request, whose code runs in `context` (its samples are the context's);
   * `describe()` is called at the end for method/route/status.
   */
  #begin(res, describe, context) {
    this.stats.sampled++
    this.#inFlight++
    const rec = {
      context: context.id,
      startUs: now(),
      stopUs: undefined,
      recording: null,
      truncated: false,
      info: null,
    }
    const startTime = performance.now()
    const startUnixMs = Date.now()
    this.#open.add(rec)
    const end = () => {
      if (rec.stopUs !== undefined) return
      const stopUs = now()
      const endTime = performance.now()
      this.#inFlight--
      res.removeListener('finish', end)
      res.removeListener('close', end)
      rec.stopUs = stopUs
      if (rec.recording !== null) rec.recording.stopAt(stopUs)
      // describe() returns a fresh object: filled in place (no spread copies on the hot path).
      const info = describe()
      info.aborted = !res.writableFinished
      info.startTime = startTime
      info.startUnixMs = startUnixMs
      info.durationMs = endTime - startTime
      info.sampleInterval = this.#intervalUs / 1000
      info.truncated = false
      info.trace = null
      rec.info = info
      // Delivered after the next harvest (which takes every sample up to now), at most maxStopDelay
      // from now; with no sampler running there is nothing to wait for.
      const sampler = getSampler()
      if (!sampler.running) queueMicrotask(() => this.#deliver(Infinity))
      else if (!this.#harvestAsked) {
        // One ask per harvest: the first stop after a harvest sets the deadline for the next.
        this.#harvestAsked = true
        sampler.harvestWithin(this.#maxStopDelay)
      }
    }
    res.once('finish', end)
    res.once('close', end)
  }

  /** Wraps a node:http request listener: `http.createServer(profiler.wrap((req, res) => …))`. */
  wrap(listener) {
    argument('profileRequests().wrap', 'listener', listener, func())
    const self = this
    return function profiledListener(req, res) {
      // node:http knows no route template: every request is labelled with its method.
      return self.#enter(req, res, listener, this, arguments, undefined, undefined)
    }
  }

  /**
   * Calls `fn.apply(thisArg, args)` as the request's code: in the request's context (labelled with
   * its method, and `template` when known), and profiled when this request is sampled. `info`
   * describes a sampled request at its end (default: node:http's view); `onLabelled(context)` is told
   * a labelled request's context before its code runs. A request that is not sampled, while nothing
   * reads every request's labels (a Profiler, continuous mode, a stall watcher), enters no context at
   * all (docs/labels.md#cost). Returns what `fn` returns.
   */
  #enter(req, res, fn, thisArg, args, info, template, onLabelled) {
    const sampled = this.#shouldSample()
    // The collector first: the sampler runs from here, so the request's profile reads its context.
    if (sampled) this.#ensureCollector()
    const labelled = this.#labels && (sampled || contextsRead())
    if (!sampled && !labelled) return Reflect.apply(fn, thisArg, args)
    const context = beginRequest(req, labelled ? req.method : undefined, template)
    if (labelled && onLabelled !== undefined) onLabelled(context)
    if (sampled) {
      this.#begin(
        res,
        info ?? (() => ({ method: req.method, url: req.url, route: undefined, statusCode: res.statusCode })),
        context,
      )
    }
    return context.run(fn, thisArg, args)
  }

  /** An Express middleware (install it first): `app.use(profiler.express())`. */
  express() {
    // The route is known when the router matches it (it sets req.route): the request's context
    // learns it then, and every sample of the request carries it.
    return (req, res, next) => {
      const url = req.originalUrl || req.url
      const info = () => ({
        method: req.method,
        url,
        route: req.route && typeof req.route.path === 'string' ? (req.baseUrl || '') + req.route.path : undefined,
        statusCode: res.statusCode,
      })
      return this.#enter(req, res, next, undefined, [], info, undefined, (context) => watchExpressRoute(req, context))
    }
  }

  /** A Fastify plugin (encapsulation skipped, so it sees every route): `fastify.register(profiler.fastify)`. */
  fastify(instance, _options, done) {
    instance.addHook('onRequest', (request, reply, next) => {
      const info = () => ({
        method: request.method,
        url: request.url,
        route: (request.routeOptions && request.routeOptions.url) || undefined,
        statusCode: reply.raw.statusCode,
      })
      // Fastify knows the route template before the first hook.
      const template = request.routeOptions && request.routeOptions.url
      return this.#enter(request.raw, reply.raw, next, undefined, [], info, template)
    })
    done()
  }

  /** Stops sampling new requests; resolves when the profiles of requests in flight were delivered. */
  async close() {
    this.#closed = true
    getSampler().keepWarm(this, 0)
    while (this.#inFlight > 0 || this.#open.size > 0 || this.#pending.size > 0) {
      if (this.#pending.size > 0) await Promise.all([...this.#pending])
      else {
        if (this.#open.size > this.#inFlight) getSampler().harvestWithin(0)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    clearTimeout(this.#releaseTimer)
    this.#releaseTimer = null
    this.#maybeRelease()
  }
}

/**
 * Profiles a fraction of the requests of a server. Returns a RequestProfiler with `wrap(listener)`
 * (node:http), `express()` (middleware) and `fastify` (plugin).
 */
function profileRequests(options) {
  return new RequestProfiler(options)
}

module.exports = { profileRequests, RequestProfiler, watchExpressRoute }
