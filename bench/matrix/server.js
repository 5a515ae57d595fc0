'use strict'
// One server of the benchmark matrix (bench/matrix/run.mjs), in a process of its own:
//
//   node bench/matrix/server.js <kind> <mode>
//
// kind: the application, each doing the same ~0.3-0.5 ms of CPU per request (150 small objects, string
// building, JSON.stringify), as users write it:
//   http-sync   a node:http listener that answers synchronously
//   http-async  a node:http listener with awaits (a fake database call on the next turn, then the work in
//               two halves with an await between)
//   express     Express 5, a route with a parameter behind one middleware
//   fastify     Fastify 5, a route with a parameter; Fastify serializes the reply
// mode: who profiles, the way a user would write it with the public API:
//   none        no profiler
//   prof10      `new Profiler({ sampleInterval: 10, maxBufferSize: 1000 })` around every 10th request,
//               stopped when the response finishes (in a middleware / hook for Express and Fastify)
//   profall     the same around every request
//   req10       profileRequests({ sampleRate: 0.1 }) (its wrap / express() / fastify plugin)
//   reqall      profileRequests({ sampleRate: 1 }): every request profiled, labels on
//   req10nolabels  the same as req10 with `labels: false`: no method/route label on every request (docs/labels.md),
//               so req10 against it is what the labels cost
//   contlabels  continuous profiling at 10 ms (chunks of 4 s, each encoded to pprof) with every request
//               labelled with its method and route (profileRequests({ sampleRate: 0 })): what the peers'
//               labelling below does
//   ddlabels    dd-trace's tracer and profiler, code hotspots and endpoint collection on (Datadog's labels;
//               installed on demand: bench/server/peers.mjs, DD_TRACE_MODULE from run.mjs)
//   pyrolabels  Pyroscope's Node SDK profiling, every request run in wrapWithLabels({ route })
//   heap        a HeapProfiler (V8's sampling heap profiler, 512 KiB between samples) for the whole run
//   heapalloc   the same in the 'allocated' view (collected objects' samples kept too)
//   sentry10    @sentry/profiling-node's native profiler per transaction, every 10th request:
//               CpuProfilerBindings.startProfiling(id) / stopProfiling(id, THREAD), as its SDK did for
//               transaction profiles
//   <mode>~<ms> the mode with the sampler engine's stop gap (schedule.js minStopGapUs) set to <ms>, so
//               two gaps can be compared in the same rounds (e.g. --modes none,prof10,prof10~250)
//   <mode>#<tag> the mode under another name: `none#2` paired with `none` is the benchmark's noise floor
//
// It prints {"port":N} when listening; an IPC 'measure' starts counting, 'report' answers with the
// requests served and the CPU time of the whole process (every thread) since 'measure', and that CPU
// time split by thread group (main / V8's profiler thread / others), and V8's collections since
// 'measure': scavenges with their mean pause, and mark-compacts. A server whose request objects V8 has
// pretenured shows long scavenges and many mark-compacts whatever its mode
// (bench/results/matrix-pretenuring.md).

const path = require('node:path')

const [kind = 'http-sync', modeArg = 'none'] = process.argv.slice(2)
const root = path.join(__dirname, '..', '..')
// `none#2`: a second `none` under another name, so the matrix shows none against none: the noise floor.
const [mode, stopGapMs] = modeArg.split('#')[0].split('~')
if (mode === 'ddlabels') {
  // Tracers first (before node:http is loaded), as their users start them: code hotspots and endpoint
  // collection on (DD_TRACE_MODULE from run.mjs).
  require('../server/datadog.cjs').startDatadog(process.env.DD_TRACE_MODULE, { labels: true, uploadSeconds: 12 })
}
const http = require('node:http')
if (stopGapMs !== undefined) {
  // The engine takes its options when first made: before any Profiler exists.
  require(path.join(root, 'lib', 'sampler')).getSampler({ minStopGapUs: Number(stopGapMs) * 1000 })
}

// --- the work of one request --------------------------------------------------------------------
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta']

function describe(word, i, id) {
  const parts = []
  for (let k = 0; k < 12; k++) parts.push(`${WORDS[(i * k + id) % WORDS.length]}${(i * 31 + k) % 97}`)
  return `${word}: ${parts.join(' ')}`.toUpperCase()
}

function makeItems(id, from, to) {
  const items = []
  for (let i = from; i < to; i++) {
    const word = WORDS[(i + id) % WORDS.length]
    items.push({
      id: i,
      sku: `${word}-${id}-${i}`,
      title: `${word[0].toUpperCase()}${word.slice(1)} item ${i} of order ${id}`,
      price: ((i * 7919 + id) % 10000) / 100,
      tags: [word, `group-${i % 7}`],
      inStock: (i + id) % 3 !== 0,
      description: describe(word, i, id),
    })
  }
  return items
}

function summary(items) {
  let total = 0
  let text = ''
  for (const item of items) {
    total += item.price
    text += `${item.sku}:${item.price.toFixed(2)};`
  }
  const top = [...items].sort((a, b) => b.price - a.price || a.sku.localeCompare(b.sku)).slice(0, 10)
  return { count: items.length, total: Math.round(total * 100) / 100, digest: text.length, top: top.map((t) => t.sku) }
}

function pageSync(id) {
  const items = makeItems(id, 0, 150)
  return { id, summary: summary(items), items }
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

async function pageAsync(id) {
  await nextTurn() // the "database"
  const first = makeItems(id, 0, 75)
  await Promise.resolve()
  const second = makeItems(id, 75, 150)
  await nextTurn()
  const items = first.concat(second)
  return { id, summary: summary(items), items }
}

let served = 0
const idOf = (url) => Number(url.slice(url.lastIndexOf('/') + 1)) || 1

// --- who profiles ---------------------------------------------------------------------------------
/**
 * `around(req, res)` starts profiling the request if this mode samples it and arranges the stop when
 * the response finishes; a plain Profiler or Sentry's bindings, the way a user writes either.
 */
let around = null
let requestProfiler = null
/** `labelled(req, route, fn)` runs fn with a peer's labels for the request (pyrolabels); null: none. */
let labelled = null
if (mode === 'prof10' || mode === 'profall') {
  const { Profiler } = require(root)
  const every = mode === 'prof10' ? 10 : 1
  let seen = 0
  around = (req, res) => {
    if (seen++ % every !== 0) return
    const profiler = new Profiler({ sampleInterval: 10, maxBufferSize: 1000 })
    res.once('finish', () => {
      profiler.stop().then(() => {})
    })
  }
} else if (mode === 'req10' || mode === 'req10nolabels' || mode === 'reqall') {
  const { profileRequests } = require(root)
  const labels = mode !== 'req10nolabels'
  const sampleRate = mode === 'reqall' ? 1 : 0.1
  requestProfiler = profileRequests({ sampleRate, sampleInterval: 10, labels, onProfile() {} })
} else if (mode === 'contlabels') {
  const { profileRequests, startContinuous, toPprof } = require(root)
  startContinuous({ sampleInterval: 10, chunkSeconds: 4, onChunk: (chunk) => toPprof(chunk.trace) })
  requestProfiler = profileRequests({ sampleRate: 0, onProfile() {} })
} else if (mode === 'pyrolabels') {
  // Its labels hold for the synchronous part of what it wraps (not past an await).
  const Pyroscope = require('@pyroscope/nodejs').default
  Pyroscope.setLogger({ debug() {}, info() {}, warn() {}, error() {} })
  Pyroscope.init({ serverAddress: 'http://127.0.0.1:9', appName: 'bench', flushIntervalMs: 12_000 })
  Pyroscope.startCpuProfiling()
  labelled = (req, route, fn) => Pyroscope.wrapWithLabels({ route: `${req.method} ${route}` }, fn)
} else if (mode === 'ddlabels') {
  // dd-trace, started above, traces every request: its profiler labels samples by span and endpoint.
} else if (mode === 'sentry10') {
  let bindings
  try {
    bindings = require('@sentry/node-cpu-profiler')
  } catch {
    bindings = require('@sentry-internal/node-cpu-profiler')
  }
  const { CpuProfilerBindings, ProfileFormat } = bindings
  let seen = 0
  around = (req, res) => {
    if (seen++ % 10 !== 0) return
    const id = `tx-${seen}`
    CpuProfilerBindings.startProfiling(id)
    res.once('finish', () => {
      const profile = CpuProfilerBindings.stopProfiling(id, ProfileFormat.THREAD)
      if (profile) JSON.stringify(profile) // what the SDK does next: serialize it into the envelope
    })
  }
} else if (mode === 'heap' || mode === 'heapalloc') {
  // V8's sampling heap profiler for the whole run, as a user leaves it on (issue 26): 512 KiB between
  // samples; heapalloc keeps collected objects' samples too (the 'allocated' view).
  const { HeapProfiler } = require(root)
  globalThis.heapProfiler = new HeapProfiler({ includeCollected: mode === 'heapalloc' })
} else if (mode !== 'none') {
  throw new Error(`unknown mode ${mode}`)
}

// --- the servers --------------------------------------------------------------------------------
function send(res, body) {
  const text = JSON.stringify(body)
  res.setHeader('content-type', 'application/json')
  res.end(text)
}

function listen(server, then) {
  server.listen(0, '127.0.0.1', () => then(server.address().port))
}

function start(ready) {
  if (kind === 'http-sync' || kind === 'http-async') {
    const sync = kind === 'http-sync'
    let listener = (req, res) => {
      served++
      if (around) around(req, res)
      if (sync) return send(res, pageSync(idOf(req.url)))
      pageAsync(idOf(req.url)).then((body) => send(res, body))
    }
    if (requestProfiler) listener = requestProfiler.wrap(listener)
    if (labelled) {
      const plain = listener
      listener = (req, res) => labelled(req, '/api/orders/:id', () => plain(req, res))
    }
    return listen(http.createServer({ keepAlive: true }, listener), ready)
  }
  if (kind === 'express') {
    const express = require('express')
    const app = express()
    if (requestProfiler) app.use(requestProfiler.express())
    if (labelled) app.use((req, res, next) => labelled(req, '/api/orders/:id', next))
    if (around)
      app.use((req, res, next) => {
        around(req, res)
        next()
      })
    app.use((req, res, next) => {
      served++
      res.setHeader('x-served-by', 'bench')
      next()
    })
    app.get('/api/orders/:id', (req, res) => {
      res.json(pageSync(Number(req.params.id) || 1))
    })
    return listen(http.createServer({ keepAlive: true }, app), ready)
  }
  if (kind === 'fastify') {
    const fastify = require('fastify')({ logger: false })
    if (requestProfiler) fastify.register(requestProfiler.fastify)
    if (labelled)
      fastify.addHook('onRequest', (request, reply, done) => labelled(request.raw, request.routeOptions.url, done))
    if (around) fastify.addHook('onRequest', (request, reply, done) => (around(request.raw, reply.raw), done()))
    fastify.get('/api/orders/:id', async (request) => {
      served++
      return pageSync(Number(request.params.id) || 1)
    })
    fastify.listen({ port: 0, host: '127.0.0.1' }).then(() => ready(fastify.server.address().port))
    return
  }
  throw new Error(`unknown kind ${kind}`)
}

/**
 * CPU µs of each thread group so far (Linux: /proc/self/task/<tid>/stat, in clock ticks of 10 ms): the main
 * thread, V8's profiler thread (`v8:ProfEvntProc`, which also sends the sampling signals), and all others
 * (V8's GC and compiler helpers, the libuv pool, the inspector's I/O thread). Null where /proc is missing.
 */
function threadCpuUs() {
  const fs = require('node:fs')
  const groups = { main: 0, profiler: 0, other: 0 }
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) {
      let stat
      try {
        stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      } catch {
        continue // the thread ended meanwhile
      }
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // utime and stime are the 14th and 15th fields of stat, the 12th and 13th after the name.
      const us = (Number(fields[11]) + Number(fields[12])) * 10_000
      const group = Number(tid) === process.pid ? 'main' : name === 'v8:ProfEvntProc' ? 'profiler' : 'other'
      groups[group] += us
    }
  } catch {
    return null
  }
  return groups
}

let cpuStart = null
let threadsStart = null
let servedStart = 0
/** V8's collections since 'measure' (a PerformanceObserver: one entry per collection, read off the hot path). */
let gc = null
const { PerformanceObserver, constants: perfConstants } = require('node:perf_hooks')
new PerformanceObserver((list) => {
  if (gc === null) return
  for (const entry of list.getEntries()) {
    const kind = entry.detail ? entry.detail.kind : entry.kind
    if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) {
      gc.scavenges++
      gc.scavengeMs += entry.duration
    } else if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) {
      gc.markCompacts++
    }
  }
}).observe({ entryTypes: ['gc'] })

process.on('message', (message) => {
  if (message === 'measure') {
    cpuStart = process.cpuUsage()
    threadsStart = threadCpuUs()
    servedStart = served
    gc = { scavenges: 0, scavengeMs: 0, markCompacts: 0 }
  } else if (message === 'report') {
    const cpu = process.cpuUsage(cpuStart)
    const threadsEnd = threadCpuUs()
    const requests = served - servedStart
    const threadsUs =
      threadsStart && threadsEnd
        ? Object.fromEntries(Object.keys(threadsEnd).map((k) => [k, threadsEnd[k] - threadsStart[k]]))
        : null
    process.send({ requests, cpuUs: cpu.user + cpu.system, threadsUs, rssMB: process.memoryUsage().rss / 2 ** 20, gc })
  }
})

start((port) => process.stdout.write(JSON.stringify({ port, node: process.version }) + '\n'))
