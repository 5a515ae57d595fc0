'use strict'
// jsprof-node/register's request labelling: the one place that decides *when* a request of any HTTP
// server of the process gets its labels and learns its route, through what Node and the frameworks
// announce, with no code in the app. *What* the labels are (method, route template, span ids, how they
// reach the samples) is lib/labels.js's RequestLabels, as for profileRequests' integrations.
//
// - `http.server.request.start` (diagnostics_channel; Node 20, 22, 24, 26 have it, for http and https
//   servers): Node parsed a request and is about to emit the server's 'request' event. The request's
//   labels are made and entered there (RequestLabels.enter: AsyncLocalStorage.enterWith, so the
//   'request' listeners and everything they start carry them), and Express's route is watched
//   (requests/index.js watchExpressRoute: the route template from the moment the router sets req.route).
// - The server's 'request' event: on a server's first request a listener is put first in it, which
//   enters the labels again once a tracer's server span exists (@opentelemetry/instrumentation-http
//   starts it inside the event, after Node's announcement), so the samples carry its span ids.
// - `fastify.initialization` (the channel Fastify publishes each new instance on, for tracers): an
//   onRequest hook on the root instance gives the request its route template (routeOptions.url)
//   before any hook the app adds later runs.
// - `http.server.response.finish`: Express's req.route at the latest when the response finishes, for a
//   request whose route the watch did not see.
//
// Issue 41 (one context per request, labels resolved at harvest) replaces the labels' entry function:
// this module is the one place to port.

const dc = require('node:diagnostics_channel')
const { RequestLabels } = require('../labels')
const { watchExpressRoute } = require('../api/requests')

/** A request's RequestLabels, on the request (node:http's IncomingMessage). */
const LABELS = Symbol('jsprof.register.labels')
/** The servers whose 'request' event has the span listener. */
const servers = new WeakSet()

function onRequestStart({ request, server }) {
  if (request[LABELS] !== undefined) return
  const labels = new RequestLabels(request.method, request)
  request[LABELS] = labels
  watchExpressRoute(request, labels)
  labels.enter()
  if (server !== undefined && server !== null && !servers.has(server)) {
    servers.add(server)
    server.prependListener('request', enterWithSpan)
  }
}

/** The server's first 'request' listener: the labels again, with the tracer's span now active. */
function enterWithSpan(request) {
  const labels = request !== null && typeof request === 'object' ? request[LABELS] : undefined
  if (labels !== undefined) labels.enter()
}

function onResponseFinish({ request }) {
  const labels = request[LABELS]
  if (labels === undefined || labels.template !== undefined) return
  const route = request.route
  if (route && typeof route.path === 'string') labels.route((request.baseUrl || '') + route.path)
}

function onFastify({ fastify }) {
  if (!fastify || typeof fastify.addHook !== 'function') return
  fastify.addHook('onRequest', function jsprofRoute(request, reply, done) {
    const labels = request.raw && request.raw[LABELS]
    const url = request.routeOptions && request.routeOptions.url
    if (labels !== undefined && typeof url === 'string') labels.route(url)
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
