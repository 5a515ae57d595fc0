'use strict'
// The HTTP transport of the fleet exporters (the Pyroscope push today). A backend is someone else's
// server: it may never answer, answer one byte a second, send a 2 GB body, or say 429. So every
// request has a total deadline (connect + send + response, not socket inactivity), a response body is
// read up to a cap, close() aborts what is in flight, and no message ever shows the URL's password.
//
// Sockets are kept alive between pushes (one TCP/TLS handshake per backend, not per chunk); Node's
// agent unrefs an idle kept-alive socket, so it never keeps the process alive.

const http = require('node:http')
const https = require('node:https')

/** How much of a response body is read (enough for an error message; the rest is discarded). */
const MAX_RESPONSE_BYTES = 64 * 1024
/** The longest wait a `Retry-After` may ask for; longer asks are capped. */
const MAX_RETRY_AFTER_MS = 5 * 60 * 1000

/** Text with every URL's user-info (`user:password@`) replaced, for messages and logs. */
function redact(text) {
  return String(text).replace(/(\/\/)[^/?#@\s]*@/g, '$1***@')
}

/**
 * Parses an exporter's `url` option: an absolute http(s) URL whose credentials (if any) decode.
 * Every message is about the URL with its credentials redacted.
 */
function parseUrl(value, who) {
  let url
  try {
    url = new URL(value)
  } catch {
    throw new TypeError(`${who}: url must be an absolute http(s) URL, got ${redact(value)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`${who}: url must be http: or https:, got ${url.protocol}`)
  }
  let credentials = null
  if (url.username || url.password) {
    try {
      credentials = { user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) }
    } catch {
      throw new TypeError(`${who}: the url's user name or password is not valid percent-encoding (a '%' must start an escape such as %25)`)
    }
    url.username = ''
    url.password = ''
  }
  return { url, credentials }
}

/** Milliseconds a `Retry-After` header (seconds or an HTTP date) asks to wait, capped; null if none. */
function retryAfterMs(header, nowMs = Date.now(), maxMs = MAX_RETRY_AFTER_MS) {
  if (header === undefined || header === null || header === '') return null
  const text = String(header).trim()
  let ms
  if (/^\d+$/.test(text)) ms = Number(text) * 1000
  else {
    const at = Date.parse(text)
    if (Number.isNaN(at)) return null
    ms = at - nowMs
  }
  return Math.min(maxMs, Math.max(0, ms))
}

/** An error of a failed request: `retryable` says whether trying again may help. */
function failure(message, retryable, extra = {}) {
  return Object.assign(new Error(message), { retryable }, extra)
}

class Transport {
  #who
  #timeoutMs
  #agents
  #inFlight = new Set()

  /** `who` names the exporter in messages; `timeoutMs` is each request's total deadline. */
  constructor({ who, timeoutMs }) {
    this.#who = who
    this.#timeoutMs = timeoutMs
    this.#agents = {
      'http:': new http.Agent({ keepAlive: true, maxSockets: 1 }),
      'https:': new https.Agent({ keepAlive: true, maxSockets: 1 }),
    }
  }

  /**
   * POSTs `body` to `url` (a URL without credentials; pass them as `credentials`). Resolves with
   * `{ status, headers, body }` (body: at most 64 KiB) for any answer; rejects on a network error or
   * at the deadline (`retryable: true`), or when aborted (`retryable: false`).
   */
  post(url, { headers = {}, body, credentials = null }) {
    return new Promise((resolve, reject) => {
      const lib = url.protocol === 'https:' ? https : http
      let settled = false
      const done = (err, value) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        this.#inFlight.delete(entry)
        if (err) reject(err)
        else resolve(value)
      }
      const auth = credentials ? { authorization: `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}` } : {}
      const req = lib.request(url, {
        method: 'POST',
        agent: this.#agents[url.protocol],
        headers: { ...headers, ...auth, 'content-length': body.length },
      })
      const entry = {
        abort: (why) => {
          req.destroy()
          done(failure(`${this.#who}: ${why}`, false))
        },
      }
      this.#inFlight.add(entry)
      // The whole request, answer included, within the deadline: a backend that drips one byte a
      // second cannot hold a push (or the process) for longer.
      const deadline = setTimeout(() => {
        req.destroy()
        done(failure(`${this.#who}: no complete answer from ${redact(url.origin)} within ${this.#timeoutMs} ms`, true))
      }, this.#timeoutMs)
      req.on('error', (err) => done(failure(`${this.#who}: ${redact(err.message)}`, true, { code: err.code })))
      req.on('response', (res) => {
        const chunks = []
        let kept = 0
        res.on('data', (chunk) => {
          if (kept >= MAX_RESPONSE_BYTES) return
          const part = chunk.subarray(0, MAX_RESPONSE_BYTES - kept)
          chunks.push(part)
          kept += part.length
          // Enough read: a body larger than the cap is not read to its end.
          if (kept >= MAX_RESPONSE_BYTES) {
            res.destroy()
            done(null, { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), truncated: true })
          }
        })
        res.on('end', () => done(null, { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on('error', (err) => done(failure(`${this.#who}: ${redact(err.message)}`, true, { code: err.code })))
      })
      req.end(body)
    })
  }

  /** How many requests are in flight. */
  get inFlight() {
    return this.#inFlight.size
  }

  /** Aborts every request in flight and closes the kept-alive sockets. */
  close(why = 'closed') {
    for (const entry of [...this.#inFlight]) entry.abort(why)
    for (const agent of Object.values(this.#agents)) agent.destroy()
  }
}

module.exports = { Transport, parseUrl, redact, retryAfterMs, MAX_RESPONSE_BYTES, MAX_RETRY_AFTER_MS }
