'use strict'
// A fleet backend: pushes each continuous-mode chunk as pprof to a Pyroscope-compatible HTTP ingest
// endpoint (`POST /ingest?name=<app>{k=v,…}&from=<unix s>&until=<unix s>&format=pprof&spyName=…&
// sampleRate=<Hz>`, body: the gzipped pprof profile).
//
// Pushing never blocks or throws into the profiler: chunks wait in a bounded queue (a count and a byte
// budget), sent one at a time; a failed push (network error, timeout, 429, 5xx) is retried a bounded
// number of times with exponential backoff, then dropped. When the queue is full the oldest chunk is
// dropped; a 429/503's Retry-After is honoured (up to 5 minutes). Every outcome is counted in `stats`,
// and every failed attempt is `lastError`. Requests go through lib/transport.js: kept-alive sockets,
// a total deadline per request (`timeoutMs`), bounded response bodies, no password in any message.

const { numberOption } = require('./options')
const { Transport, parseUrl, retryAfterMs } = require('./transport')

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
  #credentials
  #transport
  #queue = []
  #queueBytes = 0
  #sending = false
  #idle = []
  #closed = false
  #timer = null
  stats = { pushed: 0, sent: 0, retries: 0, failed: 0, errors: 0, dropped: 0, queued: 0, queuedBytes: 0, encodeErrors: 0 }
  /** The last failed attempt's error (retried or not); its message never holds the password. */
  lastError = undefined

  constructor(options) {
    if (options === null || typeof options !== 'object') throw new TypeError('pyroscopeExporter: options must be an object')
    const { url, credentials } = parseUrl(options.url, 'pyroscopeExporter')
    if (!url.pathname.endsWith('/ingest')) url.pathname = url.pathname.replace(/\/?$/, '/ingest')
    this.#url = url
    this.#credentials = credentials
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
    this.#transport = new Transport({ who: 'pyroscope ingest', timeoutMs: this.#timeoutMs })
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
        this.stats.errors++
        this.lastError = err
        if (err.retryable && item.attempts < this.#maxRetries && !this.#closed) {
          item.attempts++
          this.stats.retries++
          // Exponential backoff with jitter, or longer if the server asked (Retry-After); the retried
          // chunk goes back to the front.
          const backoff = this.#retryBaseMs * 2 ** (item.attempts - 1) * (0.5 + Math.random() / 2)
          const delay = Math.max(backoff, err.retryAfterMs ?? 0)
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
          this.#pump()
        }
      },
    )
  }

  async #send(item) {
    const url = new URL(this.#url)
    url.search = item.query
    const res = await this.#transport.post(url, {
      headers: { ...this.#headers, 'content-type': 'application/octet-stream' },
      body: item.body,
      credentials: this.#credentials,
    })
    if (res.status >= 200 && res.status < 300) return
    const said = res.body.length > 0 ? `: ${require('./text').visible(res.body.subarray(0, 200).toString('utf8').trim())}` : ''
    const err = new Error(`pyroscope ingest answered ${res.status}${said}`)
    err.status = res.status
    err.retryable = res.status === 429 || res.status >= 500
    const wait = retryAfterMs(res.headers['retry-after'])
    if (wait !== null) err.retryAfterMs = wait
    throw err
  }

  /** Resolves when every queued chunk was sent or given up on. */
  flush() {
    if (!this.#sending && !this.#timer && this.#queue.length === 0) return Promise.resolve()
    if (this.#timer) this.#timer.ref()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  /**
   * Stops accepting chunks; waits (at most `timeoutMs`) for the queue to drain, then aborts the push in
   * flight and drops the rest: the process can exit within `timeoutMs` of this call.
   */
  async close() {
    this.#closed = true
    let timer
    await Promise.race([this.flush(), new Promise((resolve) => (timer = setTimeout(resolve, this.#timeoutMs)))])
    clearTimeout(timer)
    // What did not make it in time is dropped: the push in flight is aborted (its socket closed, so
    // nothing keeps the process alive), a waiting retry cancelled.
    clearTimeout(this.#timer)
    this.#timer = null
    this.#transport.close('closed before the push finished')
    for (const resolve of this.#idle.splice(0)) resolve()
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
