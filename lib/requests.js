'use strict'
// Request profiling: `profileRequests(options)` samples a fraction of the requests of a node:http,
// Express or Fastify server and gives each sampled request its own ProfilerTrace, holding only the
// samples taken while that request's own code ran (see requests/context.js), from its arrival to its
// response's 'finish' (or 'close').
//
// Each sampled request is a cheap subscription of the thread's shared sampler (no V8 restart while
// the sampler runs), and its stop is batched into the sampler's next harvest: `onProfile` is called at
// most `maxStopDelay` ms after the response finished (plus the harvest and the trace build).

const { binding, rethrowTyped } = require('./native')
const { timeOriginUs } = require('./clock')
const { assembleTrace } = require('./trace')
const { getSampler, effectiveIntervalUs, MAX_V8_INTERVAL_US } = require('./sampler')
const { openContext, closeContext, runIn, bindEmitter, now } = require('./requests/context')

/** Up to this many samples, a request's trace is built on the main thread (a few µs). */
const SYNC_BUILD_MAX_SAMPLES = 256

const DEFAULTS = {
  sampleRate: 0.1,
  sampleInterval: 1,
  maxBufferSize: 10_000,
  maxStopDelay: 100,
  keepWarm: 1000,
  maxInFlight: 100,
}

function number(options, name, min, max) {
  const value = options[name] === undefined ? DEFAULTS[name] : options[name]
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    throw new RangeError(`profileRequests: ${name} must be a number in [${min}, ${max}], got ${String(value)}`)
  }
  return value
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
  stats = { seen: 0, sampled: 0, profiled: 0, skippedBusy: 0, truncated: 0, errors: 0 }

  constructor(options) {
    if (options === null || typeof options !== 'object') throw new TypeError('profileRequests: options must be an object')
    if (typeof options.onProfile !== 'function') throw new TypeError('profileRequests: onProfile must be a function')
    if (options.onError !== undefined && typeof options.onError !== 'function') {
      throw new TypeError('profileRequests: onError must be a function')
    }
    this.#sampleRate = number(options, 'sampleRate', 0, 1)
    this.#intervalUs = effectiveIntervalUs(number(options, 'sampleInterval', 0, 2 ** 31 / 1000))
    this.#maxBufferSize = Math.floor(number(options, 'maxBufferSize', 0, 2 ** 32 - 1))
    this.#maxStopDelay = number(options, 'maxStopDelay', 0, 60_000)
    this.#maxInFlight = Math.floor(number(options, 'maxInFlight', 1, 1e6))
    const keepWarm = number(options, 'keepWarm', 0, 3_600_000)
    this.#onProfile = options.onProfile
    this.#onError = options.onError || ((err) => process.emitWarning(`jsprof-node: request profile failed: ${err && err.message}`))
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

  /** Starts profiling one request; `describe()` is called at the end for method/route/status. */
  #begin(req, res, describe) {
    this.stats.sampled++
    this.#inFlight++
    const startUs = now()
    const startTime = performance.now()
    const startUnixMs = Date.now()
    const ctx = openContext()
    const stats = this.stats
    const intervalUs = this.#intervalUs
    const sub = {
      recording: new binding.Recording(startUs, intervalUs, this.#maxBufferSize),
      intervalUs,
      v8IntervalUs: Math.min(intervalUs, MAX_V8_INTERVAL_US),
      maxSamples: this.#maxBufferSize,
      startUs,
      checkAtUs: Infinity,
      truncated: false,
      onFull() {
        sub.truncated = true
      },
    }
    const sampler = getSampler()
    if (this.#maxBufferSize > 0) sampler.add(sub)
    const unbind = bindEmitter(ctx, req)
    let ended = false
    const end = () => {
      if (ended) return
      ended = true
      const stopUs = now()
      const endTime = performance.now()
      this.#inFlight--
      unbind()
      res.removeListener('finish', end)
      res.removeListener('close', end)
      const times = closeContext(ctx, stopUs)
      const info = describe()
      const aborted = !res.writableFinished
      const recording = sub.recording
      recording.stopAt(stopUs)
      let done
      try {
        recording.keepIntervals(times)
        done = sampler
          .finish(sub, this.#maxStopDelay)
          .then(() =>
            // A request's few samples build faster here than through a thread-pool hop.
            recording.sampleCount <= SYNC_BUILD_MAX_SAMPLES
              ? assembleTrace(recording.buildSync(timeOriginUs()))
              : recording.build(timeOriginUs()).then(assembleTrace),
          )
          .catch(rethrowTyped)
      } catch (err) {
        done = Promise.reject(err)
      }
      done = done
        .then((trace) => {
          if (sub.truncated) stats.truncated++
          stats.profiled++
          return this.#onProfile({
            ...info,
            aborted,
            startTime,
            startUnixMs,
            durationMs: endTime - startTime,
            sampleInterval: intervalUs / 1000,
            truncated: sub.truncated,
            trace,
          })
        })
        .catch((err) => {
          stats.errors++
          try {
            this.#onError(err)
          } catch {}
        })
        .finally(() => this.#pending.delete(done))
      this.#pending.add(done)
    }
    res.once('finish', end)
    res.once('close', end)
    return ctx
  }

  /** Wraps a node:http request listener: `http.createServer(profiler.wrap((req, res) => …))`. */
  wrap(listener) {
    if (typeof listener !== 'function') throw new TypeError('profileRequests().wrap: listener must be a function')
    const self = this
    return function profiledListener(req, res) {
      if (!self.#shouldSample()) return listener.apply(this, arguments)
      const ctx = self.#begin(req, res, () => ({
        method: req.method,
        url: req.url,
        route: undefined,
        statusCode: res.statusCode,
      }))
      return runIn(ctx, listener, this, arguments)
    }
  }

  /** An Express middleware (install it first): `app.use(profiler.express())`. */
  express() {
    return (req, res, next) => {
      if (!this.#shouldSample()) return next()
      const url = req.originalUrl || req.url
      const ctx = this.#begin(req, res, () => ({
        method: req.method,
        url,
        route: req.route && typeof req.route.path === 'string' ? (req.baseUrl || '') + req.route.path : undefined,
        statusCode: res.statusCode,
      }))
      return runIn(ctx, next, undefined, [])
    }
  }

  /** A Fastify plugin (encapsulation skipped, so it sees every route): `fastify.register(profiler.fastify)`. */
  fastify(instance, _options, done) {
    instance.addHook('onRequest', (request, reply, next) => {
      if (!this.#shouldSample()) return next()
      const ctx = this.#begin(request.raw, reply.raw, () => ({
        method: request.method,
        url: request.url,
        route: (request.routeOptions && request.routeOptions.url) || undefined,
        statusCode: reply.raw.statusCode,
      }))
      return runIn(ctx, next, undefined, [])
    })
    done()
  }

  /** Stops sampling new requests; resolves when the profiles of requests in flight were delivered. */
  async close() {
    this.#closed = true
    getSampler().keepWarm(this, 0)
    while (this.#inFlight > 0 || this.#pending.size > 0) {
      if (this.#pending.size > 0) await Promise.all([...this.#pending])
      else await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
}

/**
 * Profiles a fraction of the requests of a server. Returns a RequestProfiler with `wrap(listener)`
 * (node:http), `express()` (middleware) and `fastify` (plugin).
 */
function profileRequests(options) {
  return new RequestProfiler(options)
}

module.exports = { profileRequests, RequestProfiler }
