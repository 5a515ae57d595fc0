'use strict'
// Fleet backends: each continuous-mode chunk pushed over HTTP, by one push machinery (PushExporter)
// that both exporters share:
// - pyroscopeExporter: pprof to a Pyroscope-compatible ingest endpoint (`POST /ingest?name=<app>{k=v,…}&
//   from=<unix s>&until=<unix s>&format=pprof&spyName=…&sampleRate=<Hz>`, body: the gzipped profile);
// - otlpExporter: OpenTelemetry profiles over OTLP/HTTP (`POST /v1development/profiles`, body: an
//   ExportProfilesServiceRequest in protobuf), to an OpenTelemetry Collector or any OTLP receiver.
//
// Pushing never blocks or throws into the profiler: chunks wait in a bounded queue (a count and a byte
// budget), sent one at a time; a failed push (network error, timeout, or an answer the backend says
// to retry) is retried a bounded number of times with exponential backoff, then dropped. When the
// queue is full the oldest chunk is dropped; a Retry-After is honoured (up to 5 minutes). Every outcome
// is counted in `stats`, and every failed attempt is `lastError`. Requests go through transport.js:
// kept-alive sockets, a total deadline per request (`timeoutMs`), bounded response bodies, the
// environment's proxy settings, no password in any message.

const { readOptions, received, any, boolean, func, number, object, oneOf } = require('../../args')
const { Transport, parseUrl, retryAfterMs } = require('./transport')

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_.]*$/
const FORBIDDEN_IN_VALUE = /[{},=]/

/**
 * The trace as Pyroscope takes its sample labels: a span profile's `span_id` and `span_name` (Pyroscope
 * keeps span_id apart from its series), without `trace_id` (one series per trace otherwise; Grafana
 * finds the trace by the span). Other labels (route, …) are Pyroscope's dynamic labels.
 */
function forPyroscope(trace) {
  const sets = trace && trace.jsprof && trace.jsprof.labelSets
  if (!Array.isArray(sets) || !sets.some((set) => set && 'trace_id' in set)) return trace
  const labelSets = sets.map((set) => {
    if (!set || !('trace_id' in set)) return set
    const { trace_id: _traceId, ...rest } = set
    return rest
  })
  return { ...trace, jsprof: { ...trace.jsprof, labelSets } }
}

/**
 * The epoch a chunk's sample times count from, anchored on the wall clock at the chunk's start: a push's
 * from/until are Date.now() readings, while the samples are on the monotonic clock from
 * performance.timeOrigin, which drifts from the wall clock over a long uptime (NTP slews one, not the
 * other). So the profile's time lies where its from/until say. undefined when the chunk does not say.
 */
function wallClockOrigin(chunk) {
  const origin = chunk ? chunk.startUnixMs - chunk.startTime : NaN
  return Number.isFinite(origin) ? origin : undefined
}

function defaultEncode(trace, chunk) {
  trace = forPyroscope(trace)
  let exporters
  try {
    exporters = require('../export')
  } catch (cause) {
    throw new Error('jsprof-node: the pprof exporter (lib/api/export.js toPprof) is not available', { cause })
  }
  return exporters.toPprof(trace, { timeOrigin: wallClockOrigin(chunk) })
}

function appNameWithLabels(appName, labels) {
  if (typeof appName !== 'string' || appName === '' || /[{}]/.test(appName)) {
    throw new TypeError(
      `pyroscopeExporter: options.appName must be a non-empty string without braces, got ${received(appName)}`,
    )
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

// Set by the transport for each request: a caller's value would break it.
const RESERVED_HEADERS = new Set(['content-length', 'host', 'transfer-encoding', 'connection'])

/**
 * options.headers checked when the exporter is made (a TypeError now, not every push failing later):
 * names HTTP tokens, values strings or numbers Node can send, none the transport sets itself.
 * `what` names them in messages (`options.headers`, or the environment variable they came from).
 */
function checkHeaders(api, headers, what = 'options.headers') {
  if (headers === undefined) return
  const http = require('node:http')
  for (const [name, value] of Object.entries(headers)) {
    const shown = JSON.stringify(name).slice(0, 80)
    try {
      http.validateHeaderName(name)
    } catch {
      throw new TypeError(`${api}: ${what} has an invalid header name ${shown}`)
    }
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      throw new TypeError(`${api}: ${what} must not set ${name} (the exporter sets it)`)
    if (typeof value !== 'string' && !(typeof value === 'number' && Number.isFinite(value)))
      throw new TypeError(`${api}: ${what}[${shown}] must be a string, got ${received(value)}`)
    try {
      http.validateHeaderValue(name, String(value))
    } catch {
      throw new TypeError(
        `${api}: ${what}[${shown}] has a character a header value cannot hold (a line break or control character)`,
      )
    }
  }
}

/**
 * What a queued chunk keeps of itself for building its requests: its own fields, not its trace (the
 * payload holds what is sent); `stall` for a stall trace (watchStalls), whose labels say so.
 */
function chunkMeta(chunk) {
  const meta = { startUnixMs: chunk.startUnixMs, endUnixMs: chunk.endUnixMs, sampleInterval: chunk.sampleInterval }
  if (chunk.stall) meta.stall = true
  return meta
}

/** What `judge` returns to have the same chunk sent again at once, its request rebuilt (once). */
const AGAIN = Symbol('send again')

/** The options of the queue, retries and requests, which both exporters take. */
const PUSH_OPTIONS = {
  headers: object('of header names to values'),
  // false: leave chunks' heap profiles (startContinuous({ heap })) unsent.
  heap: boolean(),
  encode: func(),
  maxQueue: number({ min: 1, max: 1e6, integer: true }),
  maxQueueBytes: number({ min: 1, max: 2 ** 40 }),
  maxRetries: number({ min: 0, max: 100, integer: true }),
  retryBaseMs: number({ min: 0, max: 3_600_000 }),
  timeoutMs: number({ min: 1, max: 3_600_000 }),
  // true: a push in flight does not keep the process alive (jsprof-node/register: the app's life is the app's).
  unref: boolean(),
}
/** close()'s options: how long it waits for the queue to drain before aborting (default: timeoutMs). */
const CLOSE_OPTIONS = { timeoutMs: number({ min: 0, max: 3_600_000 }) }
const PUSH_DEFAULTS = {
  maxQueue: 32,
  maxQueueBytes: 16 * 1024 * 1024,
  maxRetries: 3,
  retryBaseMs: 500,
  timeoutMs: 10_000,
}

/**
 * The queue, retries, stats and shutdown of a push exporter. `encode(trace, chunk)` makes a chunk's
 * payload when the options have no `encode` of their own (bytes, counted in the queue's budget; may
 * throw: counted as an encode error); `request(body, chunk)`
 * builds each attempt's HTTP request (`{ url, headers, body }`); `judge(res)` says what an answer
 * means: `null` when accepted, an Error with `retryable` (and `retryAfterMs`), or AGAIN.
 */
class PushExporter {
  #encode
  #heap
  #request
  #judge
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
  stats = {
    pushed: 0,
    sent: 0,
    retries: 0,
    failed: 0,
    errors: 0,
    dropped: 0,
    queued: 0,
    queuedBytes: 0,
    encodeErrors: 0,
  }
  /** The last failed attempt's error (retried or not); its message never holds the password. */
  lastError = undefined

  /**
   * `o`: the exporter's options as readOptions read them (PUSH_OPTIONS among them); `who` names the
   * backend (in the transport's messages); `credentials` come from the url.
   */
  constructor(o, { who, credentials, encode, request, judge, heap = null }) {
    const encoder = o.encode || encode
    this.#encode = (chunk) => encoder(chunk.trace, chunk)
    this.#request = request
    // A chunk's heap profile (startContinuous({ heap })) goes as a request of its own, through the same
    // queue: `heap.encode(profile, chunk)` its body, `heap.request(body, chunk)` its HTTP request.
    this.#heap = o.heap === false ? null : heap
    this.#judge = judge
    this.#credentials = credentials
    this.#maxQueue = o.maxQueue
    this.#maxQueueBytes = o.maxQueueBytes
    this.#maxRetries = o.maxRetries
    this.#retryBaseMs = o.retryBaseMs
    this.#timeoutMs = o.timeoutMs
    this.#transport = new Transport({ who, timeoutMs: this.#timeoutMs, unref: o.unref === true })
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
      body = this.#encode(chunk)
      if (!(body instanceof Uint8Array)) throw new TypeError('encode must return a Buffer/Uint8Array')
    } catch (err) {
      this.stats.encodeErrors++
      this.stats.dropped++
      this.lastError = err
      return
    }
    const meta = chunkMeta(chunk)
    this.#queue.push({ body, chunk: meta, attempts: 0 })
    this.#queueBytes += body.length
    if (this.#heap && chunk.heap) {
      try {
        const heapBody = this.#heap.encode(chunk.heap, chunk)
        this.#queue.push({ body: heapBody, chunk: meta, attempts: 0, heap: true })
        this.#queueBytes += heapBody.length
      } catch (err) {
        this.stats.encodeErrors++
        this.lastError = err
      }
    }
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
    for (let again = 0; ; again++) {
      const { url, headers, body } = (item.heap ? this.#heap.request : this.#request)(item.body, item.chunk)
      const res = await this.#transport.post(url, { headers, body, credentials: this.#credentials })
      const verdict = this.#judge(res, this)
      if (verdict === AGAIN && again === 0) continue
      if (verdict === AGAIN)
        throw Object.assign(new Error(`the backend answered ${res.status} twice`), { retryable: false })
      if (verdict) throw verdict
      return
    }
  }

  /**
   * The HTTP requests `push(chunk)` would send for the chunk (its heap profile's too), built at once
   * and not queued: `[{ url, headers, body, credentials }]` (`url` a URL without credentials). For a
   * thread that cannot wait for the queue (jsprof-node/register at the 'exit' event sends them from
   * another thread). Throws what the encoder throws.
   */
  requestsFor(chunk) {
    const meta = chunkMeta(chunk)
    const requests = [{ ...this.#request(this.#encode(chunk), meta), credentials: this.#credentials }]
    if (this.#heap && chunk.heap) {
      requests.push({
        ...this.#heap.request(this.#heap.encode(chunk.heap, chunk), meta),
        credentials: this.#credentials,
      })
    }
    return requests
  }

  /** Resolves when every queued chunk was sent or given up on. */
  flush() {
    if (!this.#sending && !this.#timer && this.#queue.length === 0) return Promise.resolve()
    if (this.#timer) this.#timer.ref()
    return new Promise((resolve) => this.#idle.push(resolve))
  }

  /**
   * Stops accepting chunks; waits (at most `timeoutMs`: the exporter's, or `options.timeoutMs`) for the
   * queue to drain, then aborts the push in flight and drops the rest: the process can exit within
   * that long of this call.
   */
  async close(options) {
    const { timeoutMs = this.#timeoutMs } = readOptions('exporter.close', options, CLOSE_OPTIONS)
    this.#closed = true
    let timer
    await Promise.race([this.flush(), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
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

/**
 * An HTTP error of an answer that was not accepted: `<who> answered 503: <first 200 bytes, visible>`,
 * `retryable` as `retryableStatus` says, `retryAfterMs` from a Retry-After.
 */
function answerError(who, res, retryableStatus) {
  const said =
    res.body.length > 0 ? `: ${require('../../text').visible(res.body.subarray(0, 200).toString('utf8').trim())}` : ''
  const err = new Error(`${who} answered ${res.status}${said}`)
  err.status = res.status
  err.retryable = retryableStatus(res.status)
  const wait = retryAfterMs(res.headers['retry-after'])
  if (wait !== null) err.retryAfterMs = wait
  return err
}

/** Pyroscope's push API (connect RPC, JSON codec): one series of labels per chunk. */
const PUSH_PATH = '/push.v1.PusherService/Push'
const APIS = ['ingest', 'push', 'auto']

const PYROSCOPE_OPTIONS = {
  // url, appName (with labels) and spyName are checked by the constructor (parseUrl, appNameWithLabels).
  url: any(),
  appName: any(),
  labels: object('of label names to values'),
  spyName: any(),
  api: oneOf(APIS),
  ...PUSH_OPTIONS,
}

class PyroscopeExporter extends PushExporter {
  #api

  constructor(options) {
    const o = readOptions('pyroscopeExporter', options, PYROSCOPE_OPTIONS, {
      defaults: { ...PUSH_DEFAULTS, api: 'ingest' },
      required: true,
    })
    checkHeaders('pyroscopeExporter', o.headers)
    const { url, credentials } = parseUrl(o.url, 'pyroscopeExporter')
    // The server's base: what was given, without a trailing /ingest.
    const basePath = url.pathname.replace(/\/ingest\/?$/, '').replace(/\/+$/, '')
    const ingestUrl = new URL(url)
    ingestUrl.pathname = `${basePath}/ingest`
    const pushUrl = new URL(url)
    pushUrl.pathname = `${basePath}${PUSH_PATH}`
    const api = o.api
    const name = appNameWithLabels(o.appName, o.labels)
    // A stall trace (watchStalls, chunk.stall) goes as the same profile with the label stall=true.
    const stallName = appNameWithLabels(o.appName, { ...o.labels, stall: 'true' })
    // The push API's labels: the profile type, the service, then the caller's.
    const labels = [
      { name: '__name__', value: 'process_cpu' },
      { name: 'service_name', value: o.appName },
      ...Object.entries(o.labels || {}).map(([k, v]) => ({ name: k, value: String(v) })),
    ]
    const stallLabels = [...labels.filter((l) => l.name !== 'stall'), { name: 'stall', value: 'true' }]
    // A heap profile is Pyroscope's `memory` type (its Node SDK's: pprof sample type `space`/`bytes`).
    const heapLabels = [{ name: '__name__', value: 'memory' }, ...labels.slice(1)]
    const spyName = o.spyName === undefined ? 'nodespy' : String(o.spyName)
    const ingestHeaders = { ...o.headers, 'content-type': 'application/octet-stream' }
    const pushHeaders = { ...o.headers, 'content-type': 'application/json', 'connect-protocol-version': '1' }
    const who = 'pyroscope ingest'
    let exporter
    super(o, {
      who,
      credentials,
      encode: defaultEncode,
      request(body, chunk) {
        if (exporter.#api !== 'ingest') {
          const json = JSON.stringify({
            series: [
              {
                labels: chunk.stall ? stallLabels : labels,
                samples: [{ rawProfile: Buffer.from(body).toString('base64') }],
              },
            ],
          })
          return { url: pushUrl, headers: pushHeaders, body: Buffer.from(json) }
        }
        const fromS = Math.floor(chunk.startUnixMs / 1000)
        const untilS = Math.max(fromS + 1, Math.ceil(chunk.endUnixMs / 1000))
        const target = new URL(ingestUrl)
        target.search = new URLSearchParams({
          name: chunk.stall ? stallName : name,
          from: String(fromS),
          until: String(untilS),
          format: 'pprof',
          spyName,
          sampleRate: String(Math.round(1000 / chunk.sampleInterval)),
        }).toString()
        return { url: target, headers: ingestHeaders, body }
      },
      heap: {
        encode: (profile) => require('../export').toPprof(profile),
        request(body, chunk) {
          if (exporter.#api !== 'ingest') {
            const json = JSON.stringify({
              series: [{ labels: heapLabels, samples: [{ rawProfile: Buffer.from(body).toString('base64') }] }],
            })
            return { url: pushUrl, headers: pushHeaders, body: Buffer.from(json) }
          }
          const fromS = Math.floor(chunk.startUnixMs / 1000)
          const untilS = Math.max(fromS + 1, Math.ceil(chunk.endUnixMs / 1000))
          const target = new URL(ingestUrl)
          target.search = new URLSearchParams({
            name,
            from: String(fromS),
            until: String(untilS),
            format: 'pprof',
            spyName,
          }).toString()
          return { url: target, headers: ingestHeaders, body }
        },
      },
      judge: (res) => {
        if (res.status >= 200 && res.status < 300) {
          // 'auto' found the push API: keep it.
          if (exporter.#api === 'auto') exporter.#api = 'push'
          return null
        }
        // 'auto' on a server without the push API (an older Pyroscope, or another /ingest server):
        // the legacy ingest from now on, this chunk at once.
        if (exporter.#api === 'auto' && [404, 405, 415, 501].includes(res.status)) {
          exporter.#api = 'ingest'
          return AGAIN
        }
        return answerError(exporter.#api === 'ingest' ? who : 'pyroscope push', res, (s) => s === 429 || s >= 500)
      },
    })
    exporter = this
    this.#api = api
  }

  /** The API in use: 'ingest', 'push', or 'auto' until the first answer decides. */
  get api() {
    return this.#api
  }
}

/** The OTLP/HTTP path of the profiles signal, relative to a collector's base URL. */
const OTLP_PROFILES_PATH = 'v1development/profiles'

/** OTLP/HTTP's retryable answers (the OTLP specification: 429, 502, 503, 504); others are final. */
const OTLP_RETRYABLE = new Set([429, 502, 503, 504])

const OTLP_OPTIONS = {
  // url is checked by parseUrl.
  url: any(),
  // true: the url is used exactly as given, a bare address too (as OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT is).
  exactUrl: boolean(),
  serviceName: any(),
  resource: object('of attribute names to values'),
  attributes: object('of attribute names to values'),
  ...PUSH_OPTIONS,
}

class OtlpExporter extends PushExporter {
  constructor(options) {
    const o = readOptions('otlpExporter', options, OTLP_OPTIONS, { defaults: PUSH_DEFAULTS, required: true })
    checkHeaders('otlpExporter', o.headers)
    const { url, credentials } = parseUrl(o.url, 'otlpExporter')
    // A bare collector address gets the signal's path (as OTEL_EXPORTER_OTLP_ENDPOINT does); a URL
    // with a path is used as it is (as OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT is), and with exactUrl any URL.
    if (!o.exactUrl && (url.pathname === '/' || url.pathname === '')) url.pathname = `/${OTLP_PROFILES_PATH}`
    const exporters = require('../export')
    const resource = { ...o.resource }
    if (o.serviceName !== undefined) {
      if (typeof o.serviceName !== 'string' || o.serviceName === '')
        throw new TypeError(
          `otlpExporter: options.serviceName must be a non-empty string, got ${received(o.serviceName)}`,
        )
      resource['service.name'] = o.serviceName
    }
    const encodeOptions = { resource, attributes: o.attributes }
    // A stall trace (watchStalls, chunk.stall) carries the attribute stall=true.
    const stallOptions = { resource, attributes: { ...o.attributes, stall: 'true' } }
    // The attributes are checked now (a TypeError here, not a dropped chunk later).
    exporters.toOtlpProfiles({ resources: [], frames: [], stacks: [], samples: [] }, encodeOptions)
    const headers = { ...o.headers, 'content-type': 'application/x-protobuf' }
    const who = 'OTLP endpoint'
    super(o, {
      who,
      credentials,
      encode: (trace, chunk) => exporters.toOtlpProfiles(trace, chunk && chunk.stall ? stallOptions : encodeOptions),
      request: (body) => ({ url, headers, body }),
      heap: {
        encode: (profile) => exporters.toOtlpProfiles(profile, encodeOptions),
        request: (body) => ({ url, headers, body }),
      },
      judge: (res, exporter) => {
        if (res.status < 200 || res.status >= 300) return answerError(who, res, (s) => OTLP_RETRYABLE.has(s))
        // 200 with a partial success: the backend kept the request but rejected some profiles
        // (not retryable, by the specification); counted, and the reason kept.
        const partial = partialSuccess(res.body, res.truncated === true)
        if (partial && partial.rejectedProfiles > 0) {
          exporter.stats.rejected += partial.rejectedProfiles
          exporter.lastError = new Error(
            `${who} rejected ${partial.rejectedProfiles} profile(s): ${require('../../text').visible(partial.errorMessage)}`,
          )
        }
        return null
      },
    })
    this.stats.rejected = 0
  }

  get api() {
    return 'otlp'
  }
}

/**
 * The `partial_success` of an ExportProfilesServiceResponse body (protobuf), or null. `cut`: only its
 * first 64 KiB were read (a long error message): read as far as it goes.
 */
function partialSuccess(body, cut) {
  if (!body || body.length === 0) return null
  try {
    const { binding } = require('../../native')
    return binding.decodeOtlpPartialSuccess(body, cut)
  } catch {
    // Not a response we can read (a proxy's page, JSON): the 2xx stands.
    return null
  }
}

/** A Pyroscope push target; pass its `push` as `startContinuous`'s `onChunk`. */
function pyroscopeExporter(options) {
  return new PyroscopeExporter(options)
}

/** An OTLP/HTTP profiles push target; pass its `push` as `startContinuous`'s `onChunk`. */
function otlpExporter(options) {
  return new OtlpExporter(options)
}

module.exports = {
  pyroscopeExporter,
  otlpExporter,
  PyroscopeExporter,
  OtlpExporter,
  PushExporter,
  appNameWithLabels,
  checkHeaders,
  OTLP_PROFILES_PATH,
}
