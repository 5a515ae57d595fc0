'use strict'
// The HTTP transport of the fleet exporters (Pyroscope and OTLP pushes). A backend is someone else's
// server: it may never answer, answer one byte a second, send a 2 GB body, or say 429. So every
// request has a total deadline (connect + send + response, not socket inactivity), a response body is
// read up to a cap, close() aborts what is in flight, and no message ever shows the URL's password.
//
// Sockets are kept alive between pushes (one TCP/TLS handshake per backend, not per chunk); Node's
// agent unrefs an idle kept-alive socket, so it never keeps the process alive.
//
// The environment's proxy settings are respected, as curl and most HTTP clients read them:
// `https_proxy`/`HTTPS_PROXY` for https targets (a CONNECT tunnel through the proxy, TLS end to end),
// `http_proxy`/`HTTP_PROXY` for http targets (requests in absolute form), `no_proxy`/`NO_PROXY` (a list
// of hosts, `.domain` suffixes, `host:port`, or `*`) for targets to reach directly. A proxy URL's
// credentials go as Proxy-Authorization and, like the target's, never into a message.

const { received } = require('../../args')

// node:https loads node:tls and the crypto behind it (most of what `require('jsprof-node')` once cost:
// docs/bench.md#cold-and-warm-starts): loaded when a push first needs it, not by every require.
/** node:http or node:https for a URL's protocol (`http:` / `https:`), loaded on first use. */
const clientFor = (protocol) => (protocol === 'https:' ? require('node:https') : require('node:http'))

/** How much of a response body is read (enough for an error message; the rest is discarded). */
const MAX_RESPONSE_BYTES = 64 * 1024
/** The longest wait a `Retry-After` may ask for; longer asks are capped. */
const MAX_RETRY_AFTER_MS = 5 * 60 * 1000

/** Text with every URL's user-info (`user:password@`) replaced, for messages and logs. */
function redact(text) {
  return String(text).replace(/(\/\/)[^/?#@\s]*@/g, '$1***@')
}

/**
 * Parses an exporter's `url` option (`name` says where it came from: `options.url`, or an environment
 * variable): an absolute http(s) URL whose credentials (if any) decode. Every message is about the
 * URL with its credentials redacted.
 */
function parseUrl(value, who, name = 'options.url') {
  let url
  try {
    url = new URL(value)
  } catch {
    const given = typeof value === 'string' ? received(redact(value)) : received(value)
    throw new TypeError(`${who}: ${name} must be an absolute http(s) URL, got ${given}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`${who}: ${name} must be http: or https:, got ${received(url.protocol)}`)
  }
  let credentials = null
  if (url.username || url.password) {
    try {
      credentials = { user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) }
    } catch {
      throw new TypeError(
        `${who}: ${name}'s user name or password is not valid percent-encoding (a '%' must start an escape such as %25)`,
      )
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

const env = (names, from) => {
  for (const name of names) if (from[name]) return from[name]
  return undefined
}

/** Whether `url`'s host is one NO_PROXY names (exactly, as a subdomain of a listed domain, or `*`). */
function bypassesProxy(url, noProxy) {
  if (!noProxy) return false
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  const port = url.port || (url.protocol === 'https:' ? '443' : '80')
  for (const raw of noProxy.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase()
    if (!entry) continue
    if (entry === '*') return true
    // A bare IPv6 literal (`::1`) has colons but no port.
    const m =
      entry.split(':').length > 2 && !entry.startsWith('[')
        ? [entry, entry]
        : /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(entry)
    if (!m) continue
    const name = (m[1] || m[2]).replace(/^\*?\./, '')
    if (m[3] && m[3] !== port) continue
    if (host === name || host.endsWith(`.${name}`)) return true
  }
  return false
}

/**
 * The proxy to reach `url` through, from the environment (`from`, default process.env): `{ url, auth }`
 * (auth: a Proxy-Authorization value or null), or null for a direct connection. A proxy setting that
 * is not a URL is a TypeError naming the variable (credentials redacted).
 */
function proxyFor(url, from = process.env) {
  if (bypassesProxy(url, env(['no_proxy', 'NO_PROXY'], from))) return null
  const names = url.protocol === 'https:' ? ['https_proxy', 'HTTPS_PROXY'] : ['http_proxy', 'HTTP_PROXY']
  const value = env(names, from)
  if (!value) return null
  let proxy
  try {
    proxy = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`)
  } catch {
    throw new TypeError(`${names.join('/')} is not a proxy URL: ${redact(value)}`)
  }
  if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') {
    throw new TypeError(`${names.join('/')} must be an http: or https: proxy, got ${proxy.protocol}`)
  }
  let auth = null
  if (proxy.username || proxy.password) {
    let user
    let password
    try {
      user = decodeURIComponent(proxy.username)
      password = decodeURIComponent(proxy.password)
    } catch {
      throw new TypeError(`${names.join('/')}: the proxy's user name or password is not valid percent-encoding`)
    }
    auth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
    proxy.username = ''
    proxy.password = ''
  }
  return { url: proxy, auth }
}

let TunnelAgent = null
/** The TunnelAgent class, defined on first use (it extends node:https's Agent, loaded then). */
function tunnelAgent() {
  if (TunnelAgent === null) TunnelAgent = defineTunnelAgent(require('node:https').Agent)
  return TunnelAgent
}

/**
 * An https agent whose connections are CONNECT tunnels through `proxy`: TLS runs end to end with the
 * target over the tunnel. Kept alive like a direct agent's; a CONNECT that does not answer within
 * `timeoutMs` fails the push, and close() destroys CONNECTs under way.
 */
const defineTunnelAgent = (Agent) =>
  class TunnelAgent extends Agent {
    #proxy
    #timeoutMs
    #pending = new Set()

    constructor(proxy, timeoutMs) {
      super({ keepAlive: true, maxSockets: 1 })
      this.#proxy = proxy
      this.#timeoutMs = timeoutMs
    }

    createConnection(options, callback) {
      const { url, auth } = this.#proxy
      const lib = clientFor(url.protocol)
      const target = `${options.host}:${options.port}`
      const req = lib.request({
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || (url.protocol === 'https:' ? 443 : 80),
        method: 'CONNECT',
        path: target,
        headers: { host: target, ...(auth ? { 'proxy-authorization': auth } : {}) },
        agent: false,
      })
      this.#pending.add(req)
      let called = false
      const done = (err, socket) => {
        this.#pending.delete(req)
        if (called) return
        called = true
        callback(err, socket)
      }
      req.setTimeout(this.#timeoutMs, () =>
        req.destroy(new Error(`the proxy ${redact(url.origin)} did not open a tunnel within ${this.#timeoutMs} ms`)),
      )
      req.once('connect', (res, socket) => {
        if (res.statusCode !== 200) {
          socket.destroy()
          done(new Error(`the proxy ${redact(url.origin)} answered ${res.statusCode} to CONNECT ${target}`))
          return
        }
        done(null, require('node:tls').connect({ ...options, socket, servername: options.servername || options.host }))
      })
      req.once('error', (err) => done(new Error(`proxy ${redact(url.origin)}: ${redact(err.message)}`)))
      req.end()
      return undefined
    }

    destroy() {
      for (const req of this.#pending) req.destroy()
      this.#pending.clear()
      super.destroy()
    }
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

  #environment
  #proxies = new Map()
  #unref

  /**
   * `who` names the exporter in messages; `timeoutMs` is each request's total deadline; `environment`
   * (default process.env, read now) holds the proxy settings; `unref`: a request in flight does not
   * keep the process alive (its socket and deadline are unref'd).
   */
  constructor({ who, timeoutMs, environment = process.env, unref = false }) {
    this.#who = who
    this.#timeoutMs = timeoutMs
    this.#unref = unref
    this.#environment = {}
    for (const name of ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY']) {
      if (environment[name]) this.#environment[name] = environment[name]
    }
    this.#agents = {}
  }

  /** The kept-alive agent of direct requests to `protocol`'s targets (one per protocol, made on first use). */
  #directAgent(protocol) {
    this.#agents[protocol] ??= new (clientFor(protocol).Agent)({ keepAlive: true, maxSockets: 1 })
    return this.#agents[protocol]
  }

  /** How to reach `url`: `{ agent, proxy }` (proxy: an http proxy for an http target, else null). */
  #route(url) {
    const key = `${url.protocol}//${url.host}`
    let route = this.#proxies.get(key)
    if (!route) {
      const proxy = proxyFor(url, this.#environment)
      if (!proxy) route = { agent: this.#directAgent(url.protocol), proxy: null }
      else if (url.protocol === 'https:') route = { agent: new (tunnelAgent())(proxy, this.#timeoutMs), proxy: null }
      else
        route = {
          agent: new (clientFor(proxy.url.protocol).Agent)({ keepAlive: true, maxSockets: 1 }),
          proxy,
        }
      this.#proxies.set(key, route)
    }
    return route
  }

  /**
   * POSTs `body` to `url` (a URL without credentials; pass them as `credentials`). Resolves with
   * `{ status, headers, body }` (body: at most 64 KiB) for any answer; rejects on a network error or
   * at the deadline (`retryable: true`), or when aborted (`retryable: false`).
   */
  post(url, { headers = {}, body, credentials = null }) {
    return new Promise((resolve, reject) => {
      let route
      try {
        route = this.#route(url)
      } catch (err) {
        reject(failure(`${this.#who}: ${err.message}`, false))
        return
      }
      const { agent, proxy } = route
      let settled = false
      const done = (err, value) => {
        if (settled) return
        settled = true
        clearTimeout(deadline)
        this.#inFlight.delete(entry)
        if (err) reject(err)
        else resolve(value)
      }
      const auth = credentials
        ? { authorization: `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}` }
        : {}
      const all = { ...headers, ...auth, 'content-length': body.length }
      // Through an http proxy: the request goes to the proxy, in absolute form.
      const req = proxy
        ? clientFor(proxy.url.protocol).request({
            host: proxy.url.hostname.replace(/^\[|\]$/g, ''),
            port: proxy.url.port || (proxy.url.protocol === 'https:' ? 443 : 80),
            method: 'POST',
            path: url.href,
            agent,
            headers: { ...all, host: url.host, ...(proxy.auth ? { 'proxy-authorization': proxy.auth } : {}) },
          })
        : clientFor(url.protocol).request(url, { method: 'POST', agent, headers: all })
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
      if (this.#unref) {
        deadline.unref()
        req.on('socket', (socket) => socket.unref())
      }
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
    for (const { agent } of this.#proxies.values()) agent.destroy()
    this.#proxies.clear()
  }
}

module.exports = {
  Transport,
  parseUrl,
  redact,
  retryAfterMs,
  proxyFor,
  bypassesProxy,
  MAX_RESPONSE_BYTES,
  MAX_RETRY_AFTER_MS,
}
