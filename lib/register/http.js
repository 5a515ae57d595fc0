'use strict'
// jsprof-node/register's request labelling: the one place that decides *when* a request of any HTTP
// server of the process gets its context and learns its route, through what Node and the frameworks
// announce, with no code in the app. *What* a request's context is (one per request, its labels read
// at harvest: method, route template, span ids) is lib/labels.js's, as for profileRequests'
// integrations (beginRequest).
//
// - `http.server.request.start` (diagnostics_channel; Node 20, 22, 24, 26 have it, for http and https
//   servers): Node parsed a request and is about to emit the server's 'request' event. The request's
//   context begins and is entered there (Context.enter: AsyncLocalStorage.enterWith, so the 'request'
//   listeners and everything they start are in it), and Express's route is watched (requests/index.js
//   watchExpressRoute: the route template from the moment the router sets req.route) — while something
//   reads request contexts (the continuous profiler the register starts: contextsRead()).
// - The server's 'request' event: on a server's first request a listener is put first in it, which
//   makes the request's context follow a tracer's server span once it exists
//   (@opentelemetry/instrumentation-http starts it inside the event, after Node's announcement), so the
//   samples carry its span ids.
// - `fastify.initialization` (the channel Fastify publishes each new instance on, for tracers): an
//   onRequest hook on the root instance gives the request its route template (routeOptions.url)
//   before any hook the app adds later runs.
// - `http.server.response.finish`: Express's req.route at the latest when the response finishes, for a
//   request whose route the watch did not see.
//
// A route learned late (Express's router, the response's end) is the whole request's: every sample of
// its context from its entry on carries it in what is harvested afterwards (docs/labels.md).

const dc = require('node:diagnostics_channel')
const { beginRequest, contextsRead } = require('../labels')
const { watchExpressRoute } = require('../api/requests')

/** A request's context (lib/labels.js Context), on the request (node:http's IncomingMessage). */
const LABELS = Symbol('jsprof.register.context')
/** The servers whose 'request' event has the span listener. */
const servers = new WeakSet()

function onRequestStart({ request, server }) {
  if (request[LABELS] !== undefined || !contextsRead()) return
  const context = beginRequest(request, request.method)
  request[LABELS] = context
  watchExpressRoute(request, context)
  context.enter()
  if (server !== undefined && server !== null && !servers.has(server)) {
    servers.add(server)
    server.prependListener('request', enterWithSpan)
  }
}

/** The server's first 'request' listener: the request's context follows the tracer's span, active now. */
function enterWithSpan(request) {
  const context = request !== null && typeof request === 'object' ? request[LABELS] : undefined
  if (context !== undefined && context.followSpan()) context.relabel()
}

function onResponseFinish({ request }) {
  const context = request[LABELS]
  if (context === undefined || context.template !== undefined) return
  const route = request.route
  if (route && typeof route.path === 'string') context.route((request.baseUrl || '') + route.path)
}

function onFastify({ fastify }) {
  if (!fastify || typeof fastify.addHook !== 'function') return
  fastify.addHook('onRequest', function jsprofRoute(request, reply, done) {
    const context = request.raw && request.raw[LABELS]
    const url = request.routeOptions && request.routeOptions.url
    if (context !== undefined && typeof url === 'string') context.route(url)
    done()
  })
}

let labelling = false

/** Labels every request of every HTTP server of this thread from now on (once). */
function labelServers() {
  if (labelling) return
  labelling = true
  dc.subscribe('http.server.request.start', onRequestStart)
  dc.subscribe('http.server.response.finish', onResponseFinish)
  dc.subscribe('fastify.initialization', onFastify)
}

/**
 * Stops labelling new requests (a server keeps its first listener, which then finds no labels): for
 * bench/register.mjs, which measures this labelling and a hand-written one in turns in one process.
 */
function stopLabelling() {
  if (!labelling) return
  labelling = false
  dc.unsubscribe('http.server.request.start', onRequestStart)
  dc.unsubscribe('http.server.response.finish', onResponseFinish)
  dc.unsubscribe('fastify.initialization', onFastify)
}

module.exports = { labelServers, stopLabelling }
