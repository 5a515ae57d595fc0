// The per-request part of jsprof-node/register's cost, next to the hand-written labelling it replaces,
// without sockets: the CPU time of one request through Node's own request objects and an Express 5
// app (one route with an await), labelled by profileRequests({ sampleRate: 0 }).express() ('hand') or
// by the register's adapter (lib/register/http.js: Node's http.server.request.start and
// http.server.response.finish channels published as node:http publishes them, the server's 'request'
// event emitted as it emits it) ('register'), or not at all ('none'), with continuous profiling at 10 ms
// running (the labels' consumer). Batches of requests alternate between the modes; the figure of a
// mode is its median CPU time per request over the batches (µs), and register − hand, paired per
// round, is what the register adds per request (the server figures: bench/register.mjs). Sockets,
// parsing and the network are the same in every mode and left out, which is why the figures are steady
// on a loaded machine.
//
//   node bench/register-micro.mjs [--rounds 30] [--batch 20000]

import http from 'node:http'
import net from 'node:net'
import dc from 'node:diagnostics_channel'
import { AsyncResource } from 'node:async_hooks'
import os from 'node:os'
import { createRequire } from 'node:module'
import { median, medianInterval } from './stats.mjs'
import { num } from './args.mjs'

const require = createRequire(import.meta.url)
const express = require('express')
const { startContinuous, profileRequests, getLabels } = require('..')
const { labelServers, stopLabelling } = require('../lib/register/http.js')

const ROUNDS = num('rounds', 30)
const BATCH = num('batch', 20000)

startContinuous({ sampleInterval: 10, chunkSeconds: 3600, onChunk() {} })
const middleware = profileRequests({ sampleRate: 0, onProfile() {} }).express()
let mode = 'none'
const app = express()
app.use((req, res, next) => (mode === 'hand' ? middleware(req, res, next) : next()))
let done = 0
/** Requests whose code after the await carried their route, by mode (the modes label as meant). */
const routed = { none: 0, hand: 0, register: 0 }
app.get('/items/:id', async (req, res) => {
  await null
  if (getLabels().route === 'GET /items/:id') routed[mode]++
  res.end(req.params.id)
  done++
})
const server = http.createServer(app)
const start = dc.channel('http.server.request.start')
const finish = dc.channel('http.server.response.finish')
const socket = new net.Socket()

/** One request as node:http runs it: announced, emitted, finished (its response goes nowhere). */
function request() {
  const req = new http.IncomingMessage(socket)
  req.method = 'GET'
  req.url = '/items/42'
  const res = new http.ServerResponse(req)
  if (start.hasSubscribers) start.publish({ request: req, response: res, socket, server })
  server.emit('request', req, res)
  if (finish.hasSubscribers) finish.publish({ request: req, response: res, socket, server })
}

/** CPU µs per request of a batch in `to` mode (its awaits run before the batch ends). */
async function batch(to) {
  mode = to
  if (to === 'register') labelServers()
  else stopLabelling()
  const before = process.cpuUsage()
  const target = done + BATCH
  // As node:http runs a request: in a callback of its connection's parser (an async resource of its
  // own, shared by the requests of a keep-alive connection: 100 here), never in this loop's context.
  let parser
  for (let i = 0; i < BATCH; i++) {
    if (i % 100 === 0) parser = new AsyncResource('HTTPINCOMINGMESSAGE')
    parser.runInAsyncScope(request)
    if ((i & 255) === 255) await new Promise((resolve) => setImmediate(resolve))
  }
  while (done < target) await new Promise((resolve) => setImmediate(resolve))
  const cpu = process.cpuUsage(before)
  return (cpu.user + cpu.system) / BATCH
}

const modes = ['none', 'hand', 'register']
for (const m of modes) await batch(m)
const figures = Object.fromEntries(modes.map((m) => [m, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (let i = 0; i < modes.length; i++) {
    const m = modes[(i + round) % modes.length]
    figures[m].push(await batch(m))
  }
}

const show = (xs) => {
  const interval = medianInterval(xs)
  return `${median(xs).toFixed(3)} [${interval ? interval.map((x) => x.toFixed(3)).join(', ') : 'n/a'}]`
}
const diff = (a, b) => figures[a].map((x, i) => x - figures[b][i])
console.log(`node ${process.version}, ${ROUNDS} rounds × ${BATCH} requests per mode`)
for (const m of modes) console.log(`${m.padEnd(9)} ${show(figures[m])} µs of CPU per request`)
console.log(`register − hand: ${show(diff('register', 'hand'))} µs per request (paired per round)`)
console.log(`hand − none:     ${show(diff('hand', 'none'))} µs`)
console.log(`register − none: ${show(diff('register', 'none'))} µs`)
const total = BATCH * (ROUNDS + 1)
const labelled = modes.map((m) => `${m} ${((100 * routed[m]) / total).toFixed(1)}%`).join(', ')
console.log(`requests whose code after an await carried their route: ${labelled}`)
console.log(
  `load average ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
)
process.exit(0)
