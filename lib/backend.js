'use strict'
// A fleet backend: pushes each continuous-mode chunk as pprof to a Pyroscope-compatible HTTP ingest
// endpoint (`POST /ingest?name=<app>{k=v,…}&from=<unix s>&until=<unix s>&format=pprof&spyName=…&
// sampleRate=<Hz>`, body: the gzipped pprof profile).
//
// Pushing never blocks or throws into the profiler: chunks wait in a bounded queue (a count and a byte
// budget), sent one at a time; a failed push (network error, timeout, 429, 5xx) is retried a bounded
// number of times with exponential backoff, then dropped. When the queue is full the oldest chunk is
// dropped. Every outcome is counted in `stats`.

const http = require('node:http')
const https = require('node:https')
const { numberOption } = require('./options')

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_.]*$/
const FORBIDDEN_IN_VALUE = /[{},=]/

function defaultEncode(trace) {
  let exporters
  try {
    exporters = require('./export')
  } catch (cause) {
    throw new Error('jsprof-node: the pprof exporter (lib/export.js toPprof) is not available', { cause })
  }
  return exporters.toPprof(trace)
}

function appNameWithLabels(appName, labels) {
  if (typeof appName !== 'string' || appName === '' || /[{}]/.test(appName)) {
    throw new TypeError('pyroscopeExporter: appName must be a non-empty string without braces')
  }
  const parts = []
  for (const [name, value] of Object.entries(labels || {})) {
    if (!LABEL_NAME.test(name)) throw new TypeError(`pyroscopeExporter: invalid label name ${JSON.stringify(name)}`)
    const v = String(value)
    if (FORBIDDEN_IN_VALUE.test(v)) throw new TypeError(`pyroscopeExporter: label ${name} has a value with {},= in it`)
    parts.push(`${name}=${v}`)
  }
  return parts.length ? `${appName}{${parts.join(',')}}` : appName
}

const option = (options, name, fallback, min, max) => numberOption('pyroscopeExporter', options, name, fallback, min, max)

class PyroscopeExporter {
  #url
  #name
  #spyName
  #headers
  #encode
  #maxQueue
  #maxQueueBytes
  #maxRetries
  #retryBaseMs
  #timeoutMs
  #queue = []
  #queueBytes = 0
  #sending = false
  #idle = []
  #closed = false
  #timer = null
  stats = { pushed: 0, sent: 0, retries: 0, failed: 0, dropped: 0, queued: 0, queuedBytes: 0, encodeErrors: 0 }

  constructor(options) {
    if (options === null || typeof options !== 'object') throw new TypeError('pyroscopeExporter: options must be an object')
    let url
    try {
      url = new URL(options.url)
    } catch {
      throw new TypeError(`pyroscopeExporter: url must be an absolute http(s) URL, got ${String(options.url)}`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError('pyroscopeExporter: url must be http: or https:')
    }
    if (!url.pathname.endsWith('/ingest')) url.pathname = url.pathname.replace(/\/?$/, '/ingest')
    this.#url = url
    this.#name = appNameWithLabels(options.appName, options.labels)
    this.#spyName = options.spyName === undefined ? 'nodespy' : String(options.spyName)
    this.#headers = { ...(options.headers || {}) }
    if (options.encode !== undefined && typeof options.encode !== 'function') {
      throw new TypeError('pyroscopeExporter: encode must be a function')
    }
    this.#encode = options.encode || defaultEncode
    this.#maxQueue = Math.floor(option(options, 'maxQueue', 32, 1, 1e6))
    this.#maxQueueBytes = option(options, 'maxQueueBytes', 16 * 1024 * 1024, 1, 2 ** 40)
    this.#maxRetries = Math.floor(option(options, 'maxRetries', 3, 0, 100))
    this.#retryBaseMs = option(options, 'retryBaseMs', 500, 0, 3_600_000)
    this.#timeoutMs = option(options, 'timeoutMs', 10_000, 1, 3_600_000)
    this.push = this.push.bind(this)
  }

  /** Queues a chunk (from startContinuous's onChunk) for sending; never throws, never waits. */
  push(chunk) {
    this.stats.pushed++
    if (this.#closed) {
      this.stats.dropped++
      return
    }
    let body
    try {
      body = this.#encode(chunk.trace, chunk)
      if (!(body instanceof Uint8Array)) throw new TypeError('encode must return a Buffer/Uint8Array')
    } catch (err) {
      this.stats.encodeErrors++
      this.stats.dropped++
      return
    }
    const fromS = Math.floor(chunk.startUnixMs / 1000)
    const untilS = Math.max(fromS + 1, Math.ceil(chunk.endUnixMs / 1000))
    const query = new URLSearchParams({
      name: this.#name,
      from: String(fromS),
      until: String(untilS),
      format: 'pprof',
      spyName: this.#spyName,
      sampleRate: String(Math.round(1000 / chunk.sampleInterval)),
    })
    this.#queue.push({ body, query: query.toString(), attempts: 0 })
    this.#queueBytes += body.length
    while (this.#queue.length > this.#maxQueue || (this.#queueBytes > this.#maxQueueBytes && this.#queue.length > 1)) {
      // The oldest waiting chunk goes first (never the one being sent, which is not in the queue).
      const dropped = this.#queue.shift()
      this.#queueBytes -= dropped.body.length
      this.stats.dropped++
    }
    this.#updateGauges()
    this.#pump()
  }

  #updateGauges() {
    this.stats.queued = this.#queue.length
    this.stats.queuedBytes = this.#queueBytes
  }

  #pump() {
    if (this.#sending || this.#timer) return
    const item = this.#queue.shift()
    if (!item) {
      for (const resolve of this.#idle.splice(0)) resolve()
      return
    }
    this.#queueBytes -= item.body.length
    this.#updateGauges()
    this.#sending = true
    this.#send(item).then(
      () => {
        this.#sending = false
        this.stats.sent++
        this.#pump()
      },
      (err) => {
        this.#sending = false
        if (err.retryable && item.attempts < this.#maxRetries && !this.#closed) {
          item.attempts++
          this.stats.retries++
          // Exponential backoff with jitter; the retried chunk goes back to the front.
          const delay = this.#retryBaseMs * 2 ** (item.attempts - 1) * (0.5 + Math.random() / 2)
          this.#queue.unshift(item)
          this.#queueBytes += item.body.length
          this.#updateGauges()
          this.#timer = setTimeout(() => {
            this.#timer = null
            this.#pump()
          }, delay)
          // A retry never keeps the process alive, unless someone awaits flush().
          if (this.#idle.length === 0) this.#timer.unref()
        } else {
          this.stats.failed++
          this.lastError = err
          this.#pump()
        }
      },
    )
  }

  #send(item) {
    return new Promise((resolve, reject) => {
      const url = this.#url
      const lib = url.protocol === 'https:' ? https : http
      const req = lib.request(
        {
          protocol: url.protocol,
          hostname: url.hostname,
          port: url.port,
          path: `${url.pathname}?${item.query}`,
          method: 'POST',
          agent: false,
          headers: {
            ...this.#headers,
            'content-type': 'application/octet-stream',
            'content-length': item.body.length,
            ...(url.username ? { authorization: `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}` } : {}),
          },
          timeout: this.#timeoutMs,
        },
        (res) => {
          res.resume()
          res.on('end', () => {
            const status = res.statusCode
            if (status >= 200 && status < 300) return resolve()
            const err = new Error(`pyroscope ingest answered ${status}`)
            err.retryable = status === 429 || status >= 500
            reject(err)
          })
          res.on('error', (err) => reject(Object.assign(err, { retryable: true })))
        },
      )
      req.on('timeout', () => req.destroy(Object.assign(new Error('pyroscope ingest timed out'), { retryable: true })))
      req.on('error', (err) => reject(Object.assign(err, { retryable: true })))
      req.end(item.body)
    })
  }

  /** Resolves when every queued chunk was sent or given up on. */
  flush() {
    if (!this.#sending && !this.#timer && this.#queue.length === 0) return Promise.resolve()
    if (this.#timer) this.#timer.ref()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  /** Stops accepting chunks; waits (at most `timeoutMs`) for the queue to drain, then drops the rest. */
  async close() {
    this.#closed = true
    let timer
    await Promise.race([this.flush(), new Promise((resolve) => (timer = setTimeout(resolve, this.#timeoutMs)))])
    clearTimeout(timer)
    this.stats.dropped += this.#queue.length
    this.#queue = []
    this.#queueBytes = 0
    this.#updateGauges()
  }
}

/** A Pyroscope push target; pass its `push` as `startContinuous`'s `onChunk`. */
function pyroscopeExporter(options) {
  return new PyroscopeExporter(options)
}

module.exports = { pyroscopeExporter, PyroscopeExporter, appNameWithLabels }
