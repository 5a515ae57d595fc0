'use strict'
// Request profiling: `profileRequests(options)` samples a fraction of the requests of a node:http,
// Express or Fastify server and gives each sampled request its own ProfilerTrace, holding only the
// samples taken while that request's own code ran (see context.js), from its arrival to its
// response's 'finish' (or 'close').
//
// Each sampled request is a cheap subscription of the thread's shared sampler (no V8 restart while
// the sampler runs), and its stop is batched into the sampler's next harvest: `onProfile` is called at
// most `maxStopDelay` ms after the response finished (plus the harvest and the trace build).

const { binding, rethrowTyped } = require('../../native')
const { timeOriginUs, traceClock } = require('../../clock')
const { buildTrace, emptyTrace } = require('../../trace')
const { getSampler, effectiveIntervalUs, Subscription } = require('../../sampler')
const { openContext, closeContext, runIn, bindEmitter, now } = require('./context')
const { readOptions, argument, mandatory, number, func, boolean } = require('../../args')
const { RequestLabels } = require('../../labels')

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
    // The requests whose window overlaps the chunk, and their intervals (so far), in one native call.
    const candidates = []
    const parts = []
    const ends = []
    let length = 0
    for (const rec of this.#open) {
      if (rec.startUs > last || (rec.stopUs !== undefined && rec.stopUs < first)) continue
      const times = rec.stopUs === undefined ? rec.ctx.snapshot() : rec.times
      if (times.length === 0) continue
      candidates.push(rec)
      parts.push(times)
      length += times.length
      ends.push(length)
    }
    if (candidates.length === 0) return
    const flat = new Float64Array(length)
    let offset = 0
    for (const times of parts) {
      flat.set(times, offset)
      offset += times.length
    }
    const counts = chunk.countInMany(flat, Uint32Array.from(ends))
    for (let i = 0; i < candidates.length; i++) {
      if (counts[i] === 0) continue
      const rec = candidates[i]
      if (rec.recording === null) {
        rec.recording = new binding.Recording(rec.startUs, this.#intervalUs, this.#maxBufferSize)
        if (rec.stopUs !== undefined) rec.recording.stopAt(rec.stopUs)
      }
      rec.recording.keepIntervals(parts[i])
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

  /** Starts profiling one request; `describe()` is called at the end for method/route/status. */
  #begin(req, res, describe) {
    this.stats.sampled++
    this.#inFlight++
    this.#ensureCollector()
    const ctx = openContext()
    const rec = {
      ctx,
      startUs: now(),
      stopUs: undefined,
      times: null,
      recording: null,
      truncated: false,
      info: null,
    }
    const startTime = performance.now()
    const startUnixMs = Date.now()
    this.#open.add(rec)
    const unbind = bindEmitter(ctx, req)
    const end = () => {
      if (rec.stopUs !== undefined) return
      const stopUs = now()
      const endTime = performance.now()
      this.#inFlight--
      unbind()
      res.removeListener('finish', end)
      res.removeListener('close', end)
      rec.stopUs = stopUs
      rec.times = closeContext(ctx, stopUs)
      if (rec.recording !== null) {
        rec.recording.stopAt(stopUs)
        rec.recording.keepIntervals(rec.times)
      }
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
    return ctx
  }

  /** Wraps a node:http request listener: `http.createServer(profiler.wrap((req, res) => …))`. */
  wrap(listener) {
    argument('profileRequests().wrap', 'listener', listener, func())
    const self = this
    return function profiledListener(req, res) {
      // Every request is labelled with its method (node:http knows no route template).
      if (!self.#labels) return self.#sampled(req, res, listener, this, arguments, undefined)
      const labels = new RequestLabels(req.method, req)
      return labels.run(self.#sampled, self, [req, res, listener, this, arguments, undefined])
    }
  }

  /** Calls `fn.apply(thisArg, args)` as a sampled request's code when this request is sampled. */
  #sampled(req, res, fn, thisArg, args, info) {
    if (!this.#shouldSample()) return fn.apply(thisArg, args)
    const ctx = this.#begin(
      req,
      res,
      info ?? (() => ({ method: req.method, url: req.url, route: undefined, statusCode: res.statusCode })),
    )
    return runIn(ctx, fn, thisArg, args)
  }

  /** An Express middleware (install it first): `app.use(profiler.express())`. */
  express() {
    return (req, res, next) => {
      const url = req.originalUrl || req.url
      const info = () => ({
        method: req.method,
        url,
        route: req.route && typeof req.route.path === 'string' ? (req.baseUrl || '') + req.route.path : undefined,
        statusCode: res.statusCode,
      })
      if (!this.#labels) return this.#sampled(req, res, next, undefined, [], info)
      // The route is known when the router matches it (it sets req.route): label from then on.
      const labels = new RequestLabels(req.method, req)
      watchExpressRoute(req, labels)
      return labels.run(this.#sampled, this, [req, res, next, undefined, [], info])
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
      if (!this.#labels) return this.#sampled(request.raw, reply.raw, next, undefined, [], info)
      // Fastify knows the route template before the first hook.
      const labels = new RequestLabels(request.method, request.raw, request.routeOptions && request.routeOptions.url)
      return labels.run(this.#sampled, this, [request.raw, reply.raw, next, undefined, [], info])
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
