'use strict'
// The app bench/register.mjs loads: an Express 5 app with two routes that do a little CPU work each
// (score and sort a catalogue, serialize the top), in one of these modes (argv[2]):
//   none      no profiler;
//   hand      what jsprof-node/register starts, written by hand as docs/production.md shows it:
//             startContinuous (10 ms, CHUNK_SECONDS) pushing to an otlpExporter (OTLP_URL), and
//             profileRequests({ sampleRate: 0 }).express() labelling every request with its route;
//   (none, started with `--require jsprof-node/register` and the OTLP variables: the register's mode;)
//   switch    hand's continuous profiling and exporter, every request labelled by the hand-written
//             middleware or by the register's own adapter (lib/register/http.js), in turns (IPC switchTo).
// Prints {"port":N} when listening; answers the parent's IPC 'measure' (start counting) and 'report'
// (CPU time of the process per request served since, all threads, and requests per second).

const path = require('node:path')
const express = require('express')

const mode = process.argv[2] || 'none'
const root = path.join(__dirname, '..')
const app = express()
/** The 'switch' mode's labelling now: 'hand' or 'register'. */
let labelling = 'hand'
if (mode === 'hand' || mode === 'switch') {
  const { startContinuous, otlpExporter, profileRequests } = require(root)
  const exporter = otlpExporter({ url: process.env.OTLP_URL, serviceName: 'bench', headers: { 'x-bench-mode': mode } })
  startContinuous({ sampleInterval: 10, chunkSeconds: Number(process.env.CHUNK_SECONDS || 10), onChunk: exporter.push })
  const middleware = profileRequests({ sampleRate: 0, onProfile() {} }).express()
  if (mode === 'hand') app.use(middleware)
  else app.use((req, res, next) => (labelling === 'hand' ? middleware(req, res, next) : next()))
} else if (mode !== 'none') {
  throw new Error(`bench/register-app.cjs: mode none, hand or switch, got ${mode}`)
}

const catalogue = Array.from({ length: 600 }, (_, i) => ({ id: i, name: `product-${i}`, price: (i * 7919) % 997 }))
function rank(q) {
  return catalogue
    .map((item) => ({ item, score: (item.price * 31 + q * 17 + item.name.length) % 1009 }))
    .sort((a, b) => b.score - a.score)
    .slice(0, 10)
}

let served = 0
app.get('/search', (req, res) => {
  served++
  res.json(rank(Number(req.query.q) || 1))
})
app.get('/items/:id', async (req, res) => {
  served++
  await null
  res.json({ item: catalogue[Number(req.params.id) % catalogue.length], related: rank(Number(req.params.id)) })
})

let since = null
process.on('message', (message) => {
  if (message && message.switchTo) {
    // The register's labelling (its diagnostics-channel adapter, as jsprof-node/register starts it)
    // or the hand-written middleware, in turns on one process's JIT state and heap.
    const { labelServers, stopLabelling } = require(path.join(root, 'lib', 'register', 'http.js'))
    labelling = message.switchTo
    if (labelling === 'register') labelServers()
    else stopLabelling()
    process.send('switched')
  } else if (message === 'measure') {
    since = { cpu: process.cpuUsage(), served, at: performance.now() }
    process.send('measuring')
  } else if (message === 'report') {
    const cpu = process.cpuUsage(since.cpu)
    const requests = served - since.served
    process.send({
      cpuUsPerRequest: (cpu.user + cpu.system) / requests,
      requestsPerSecond: requests / ((performance.now() - since.at) / 1000),
    })
  }
})

const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })))
