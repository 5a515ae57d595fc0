'use strict'
// The benchmark's server: a small JSON API with CPU work in its handler, run in its own process
// (see run.mjs) with one profiling mode:
//   none | continuous | req10 | reqall | prof10 | profall | datadog | sentry
//   | contlabels | contnolabels (labels on every request, and its pair without)
//   | pyrolabels | pyronolabels (Pyroscope's Node SDK with wrapWithLabels on every request, and without)
//   | ddlabels | ddnolabels (dd-trace with profiling, code hotspots and endpoint profiling on, and off)
//   | otelspans | otelnospans (the OpenTelemetry SDK tracing every request, labels with span ids, and without)
//   | switch | labelswitch | otelswitch | reqswitch (in-process.mjs: prof*, contlabels, otelspans and
//     the per-request modes in turns)
//   (and the diagnostics sampler1 | sampler10 | als | hook)
// It prints {"port":N} on stdout when listening, and answers an IPC 'report' message with its figures.

const mode = process.argv[2] || 'none'
const CHUNK_SECONDS = Number(process.env.CHUNK_SECONDS || 4)
const root = require('node:path').join(__dirname, '..', '..')

// Tracers first (before node:http is loaded), as their users start them.
if (mode === 'ddlabels' || mode === 'ddnolabels') {
  // dd-trace (installed on demand by run.mjs: DD_TRACE_MODULE); ddlabels: code hotspots and endpoint
  // profiling on, ddnolabels: off, its pair.
  require('./datadog.cjs').startDatadog(process.env.DD_TRACE_MODULE, {
    labels: mode === 'ddlabels',
    uploadSeconds: CHUNK_SECONDS * 3,
  })
} else if (mode === 'otelspans' || mode === 'otelnospans' || mode === 'otelswitch') {
  // The OpenTelemetry SDK as an app that already traces has it: a NodeTracerProvider (its
  // AsyncLocalStorage context manager), the http instrumentation making a server span per request,
  // spans batched to an exporter that drops them.
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node')
  const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base')
  const { registerInstrumentations } = require('@opentelemetry/instrumentation')
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http')
  const dropped = { export: (spans, done) => done({ code: 0 }), shutdown: async () => {} }
  const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropped)] })
  provider.register()
  registerInstrumentations({ instrumentations: [new HttpInstrumentation()] })
}

const http = require('node:http')
const { monitorEventLoopDelay } = require('node:perf_hooks')

// --- the application ---------------------------------------------------------------------------
const catalog = Array.from({ length: 1000 }, (_, i) => ({
  id: i,
  name: `item-${i}`,
  price: (i * 7919) % 1000,
  tags: ['a', 'b', 'c'].slice(0, (i % 3) + 1),
}))

function scoreItem(item, q) {
  let h = q
  for (let i = 0; i < item.name.length; i++) h = (h * 31 + item.name.charCodeAt(i)) | 0
  return (h ^ item.price) & 0xffff
}

function search(q) {
  const scored = []
  for (const item of catalog) scored.push({ item, score: scoreItem(item, q) })
  scored.sort((a, b) => b.score - a.score)
  return scored.slice(0, 20).map(({ item, score }) => ({ ...item, score }))
}

let served = 0
function handler(req, res) {
  served++
  const q = Number(new URL(req.url, 'http://x').searchParams.get('q') || 1)
  const body = JSON.stringify({ q, results: search(q) })
  res.setHeader('content-type', 'application/json')
  res.end(body)
}

/** The native profiler of @sentry/profiling-node (renamed from @sentry-internal/ in v10). */
function sentryCpuProfiler() {
  try {
    return require('@sentry/node-cpu-profiler')
  } catch {
    return require('@sentry-internal/node-cpu-profiler')
  }
}

// --- the profiling modes ------------------------------------------------------------------------
const figures = { mode, profiles: 0, chunks: 0, encodeErrors: 0 }
let listener = handler
let encodePprof = null
try {
  encodePprof = require(`${root}/lib/api/export.js`).toPprof
} catch {}
figures.ourChunksEncoded = typeof encodePprof === 'function'

/** Continuous mode at 10 ms, each chunk encoded as pprof as a user's exporter would (the modes below). */
function continuousAt10ms() {
  const { startContinuous } = require(root)
  startContinuous({
    sampleInterval: 10,
    chunkSeconds: CHUNK_SECONDS,
    onChunk(chunk) {
      figures.chunks++
      if (encodePprof) encodePprof(chunk.trace)
    },
  })
}

if (mode === 'continuous') {
  continuousAt10ms()
} else if (mode === 'contlabels' || mode === 'contnolabels') {
  // Continuous at 10 ms with the request integration on every request (sampleRate 0: no request
  // profiles), labelling each request (contlabels) or not (contnolabels, its pair): what labels cost.
  const { profileRequests } = require(root)
  continuousAt10ms()
  const rp = profileRequests({ sampleRate: 0, labels: mode === 'contlabels', onProfile() {} })
  listener = rp.wrap(handler)
} else if (mode === 'labelswitch') {
  // contlabels and contnolabels in turns in one process (in-process.mjs --set labels): 'nolabels' also
  // switches the labels' hooks and storage off, as in a process that never labelled; 'hook' (a
  // diagnostic) is nolabels with the labels' hooks on (every callback dispatched, no request labelled).
  const { profileRequests } = require(root)
  const { enableTracking, disableTracking } = require(`${root}/lib/labels.js`)
  continuousAt10ms()
  const labelled = profileRequests({ sampleRate: 0, labels: true, onProfile() {} }).wrap(handler)
  const plain = profileRequests({ sampleRate: 0, labels: false, onProfile() {} }).wrap(handler)
  listener = labelled
  figures.switchTo = (to) => {
    if (to !== 'labels' && to !== 'nolabels' && to !== 'hook') throw new Error(`cannot switch to ${to}`)
    listener = to === 'labels' ? labelled : plain
    if (to === 'nolabels') disableTracking()
    if (to === 'hook') enableTracking()
    server.removeAllListeners('request').on('request', listener)
  }
} else if (mode === 'otelspans' || mode === 'otelnospans' || mode === 'otelswitch') {
  // contlabels under the OpenTelemetry SDK: every request labelled with its route, and with its server
  // span's ids (otelspans), or run outside the span's context so that the integration finds no span
  // (otelnospans, its pair: the same context switch and span lookup, no span labels).
  const api = require('@opentelemetry/api')
  const { profileRequests } = require(root)
  continuousAt10ms()
  // The figure that shows the pair differs as meant: of every 64th request, those whose code saw span
  // labels (not every request: getLabels() builds the labels object of a span set, a cost of its own).
  const { getLabels } = require(root)
  figures.spanLabelled = 0
  figures.spanChecked = 0
  let seen = 0
  const counted = (req, res) => {
    if ((seen++ & 63) === 0) {
      figures.spanChecked++
      if (getLabels().span_id !== undefined) figures.spanLabelled++
    }
    return handler(req, res)
  }
  const wrapped = profileRequests({ sampleRate: 0, onProfile() {} }).wrap(counted)
  let spans = mode !== 'otelnospans'
  listener = function (req, res) {
    return api.context.with(spans ? api.context.active() : api.ROOT_CONTEXT, wrapped, this, req, res)
  }
  // otelswitch (in-process.mjs --set spans): the two in turns in one process.
  figures.switchTo = (to) => {
    if (to !== 'spans' && to !== 'nospans') throw new Error(`cannot switch to ${to}`)
    spans = to === 'spans'
  }
} else if (mode === 'req10' || mode === 'reqall') {
  const { profileRequests } = require(root)
  const rp = profileRequests({
    sampleRate: mode === 'req10' ? 0.1 : 1,
    ...(process.env.REQ_INTERVAL ? { sampleInterval: Number(process.env.REQ_INTERVAL) } : {}),
    onProfile() {
      figures.profiles++
    },
  })
  listener = rp.wrap(handler)
  figures.stats = rp.stats
} else if (mode === 'prof10' || mode === 'profall' || mode === 'switch') {
  // What a user writes from the spec's example: a plain Profiler around each sampled request.
  // 'switch' (bench/server/in-process.mjs) changes between none, sampler10, prof10 and profall on an
  // IPC message, so that every mode runs in the same process, on the same JIT state.
  const { Profiler } = require(root)
  let every = mode === 'prof10' ? 10 : mode === 'profall' ? 1 : 0
  let long = null
  figures.switchTo = (to) => {
    every = { none: 0, sampler10: 0, prof10: 10, profall: 1 }[to]
    if (every === undefined) throw new Error(`cannot switch to ${to}`)
    if (to === 'sampler10' && !long) long = new Profiler({ sampleInterval: 10, maxBufferSize: 1e7 })
    if (to !== 'sampler10' && long) {
      long.stop()
      long = null
    }
  }
  let seen = 0
  // stop() latency (ms from the call to the resolved trace), a bounded ring.
  const latencies = new Float64Array(1 << 16)
  let measured = 0
  figures.stopLatency = () => {
    const xs = Array.from(latencies.subarray(0, Math.min(measured, latencies.length))).sort((a, b) => a - b)
    const q = (p) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] : NaN)
    return { count: measured, p50: q(0.5), p99: q(0.99), max: xs.length ? xs[xs.length - 1] : NaN }
  }
  listener = (req, res) => {
    if (every === 0 || seen++ % every !== 0) return handler(req, res)
    const profiler = new Profiler({ sampleInterval: 10, maxBufferSize: 1000 })
    res.once('finish', () => {
      const t0 = performance.now()
      profiler.stop().then(() => {
        latencies[measured++ % latencies.length] = performance.now() - t0
        figures.profiles++
      })
    })
    handler(req, res)
  }
} else if (mode === 'reqswitch') {
  // in-process.mjs --set requests: every 10th request profiled by a plain Profiler (prof10), by
  // profileRequests at its defaults (req10: labels on), or by Sentry's native profiler per transaction
  // (sentry10, as bench/matrix/server.js), and none, in turns in one process. profileRequests keeps V8
  // warm for 0 ms here (its default 1 s would keep V8 sampling into the next `none` slice).
  const { Profiler, profileRequests } = require(root)
  const { CpuProfilerBindings, ProfileFormat } = sentryCpuProfiler()
  let seen = 0
  const listeners = {
    none: handler,
    prof10(req, res) {
      if (seen++ % 10 !== 0) return handler(req, res)
      const profiler = new Profiler({ sampleInterval: 10, maxBufferSize: 1000 })
      res.once('finish', () => profiler.stop().then(() => figures.profiles++))
      handler(req, res)
    },
    req10: profileRequests({ keepWarm: 0, onProfile: () => figures.profiles++ }).wrap(handler),
    sentry10(req, res) {
      if (seen++ % 10 !== 0) return handler(req, res)
      const id = `tx-${seen}`
      CpuProfilerBindings.startProfiling(id)
      res.once('finish', () => {
        const profile = CpuProfilerBindings.stopProfiling(id, ProfileFormat.THREAD)
        if (profile) JSON.stringify(profile)
        figures.profiles++
      })
      handler(req, res)
    },
  }
  figures.switchTo = (to) => {
    if (!listeners[to]) throw new Error(`cannot switch to ${to}`)
    listener = listeners[to]
    server.removeAllListeners('request').on('request', listener)
  }
} else if (mode === 'sampler1' || mode === 'sampler10') {
  // Diagnostic: only the sampler running (one long Profiler), no request tracking.
  const { Profiler } = require(root)
  figures.profiler = new Profiler({ sampleInterval: mode === 'sampler1' ? 1 : 10, maxBufferSize: 1e7 })
} else if (mode === 'als') {
  // Diagnostic: only AsyncLocalStorage.run per request (its init hook propagates the store).
  const { AsyncLocalStorage } = require('node:async_hooks')
  const als = new AsyncLocalStorage()
  listener = (req, res) => als.run({}, handler, req, res)
} else if (mode === 'hook') {
  // Diagnostic: only an async_hooks before/after hook like the request tracker's, always on.
  const { AsyncLocalStorage, createHook } = require('node:async_hooks')
  const als = new AsyncLocalStorage()
  createHook({
    before() {
      als.getStore()
    },
    after() {
      als.getStore()
    },
  }).enable()
  listener = (req, res) => als.run({}, handler, req, res)
} else if (mode === 'pyrolabels' || mode === 'pyronolabels') {
  // Pyroscope's Node SDK (@pyroscope/nodejs: @datadog/pprof's CPU profiler), its own 10 s flushes to a
  // server that is not there, every request run in wrapWithLabels (pyrolabels) or not (its pair). Its
  // labels only cover the synchronous handler (gone after the first await): this handler has none.
  const Pyroscope = require('@pyroscope/nodejs').default
  Pyroscope.setLogger({ debug() {}, info() {}, warn() {}, error() {} })
  Pyroscope.init({ serverAddress: 'http://127.0.0.1:9', appName: 'bench', flushIntervalMs: CHUNK_SECONDS * 1000 })
  Pyroscope.startCpuProfiling()
  if (mode === 'pyrolabels') {
    listener = (req, res) => Pyroscope.wrapWithLabels({ route: 'GET /search' }, () => handler(req, res))
  }
} else if (mode === 'ddlabels' || mode === 'ddnolabels') {
  // dd-trace started above; its http plugin traces every request (the server span its profiler's
  // code hotspots and endpoints label samples with).
  figures.ddTrace = require(`${process.env.DD_TRACE_MODULE}/package.json`).version
} else if (mode === 'datadog') {
  const pprof = require('@datadog/pprof')
  pprof.time.start({ intervalMicros: 10_000, durationMillis: CHUNK_SECONDS * 1000 })
  setInterval(() => {
    const profile = pprof.time.stop(true)
    figures.chunks++
    pprof.encode(profile).catch(() => figures.encodeErrors++)
  }, CHUNK_SECONDS * 1000).unref()
} else if (mode === 'sentry') {
  // The native profiler @sentry/profiling-node drives (fixed at 99 Hz, ~10 ms), rotated into chunks
  // as its continuous profiler does, without the SDK's HTTP instrumentation (which is not profiling).
  const { CpuProfilerBindings, ProfileFormat } = sentryCpuProfiler()
  let id = 0
  CpuProfilerBindings.startProfiling(`chunk-${id}`)
  setInterval(() => {
    const done = `chunk-${id++}`
    CpuProfilerBindings.startProfiling(`chunk-${id}`)
    const chunk = CpuProfilerBindings.stopProfiling(done, ProfileFormat.CHUNK)
    figures.chunks++
    JSON.stringify(chunk)
  }, CHUNK_SECONDS * 1000).unref()
} else if (mode === 'stalls' || mode === 'stallswarm') {
  // The stall watcher (watchStalls) alone: the loop's beat timer and the native watcher thread; no
  // stall happens here, so no trace is taken. 'stallswarm': with keepWarm (V8 sampling all along).
  const { watchStalls } = require(root)
  figures.stalls = watchStalls({ onStall() {}, keepWarm: mode === 'stallswarm' }).stats
} else if (mode !== 'none') {
  throw new Error(`unknown mode ${mode}`)
}

const delay = monitorEventLoopDelay({ resolution: 1 })
const server = http.createServer({ keepAlive: true }, listener)
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n')
})

process.on('message', (message) => {
  if (message && message.switchTo) {
    figures.switchTo(message.switchTo)
    process.send({ switched: message.switchTo })
  } else if (message === 'measure') {
    if (figures.spanChecked !== undefined) figures.spanChecked = figures.spanLabelled = 0
    delay.reset()
    delay.enable()
    figures.cpuStart = process.cpuUsage()
    figures.servedStart = served
    figures.measureStart = performance.now()
  } else if (message === 'report') {
    delay.disable()
    const cpu = process.cpuUsage(figures.cpuStart)
    const requests = served - figures.servedStart
    const { getSampler } = require(`${root}/lib/sampler/index.js`)
    if (figures.stopLatency) figures.stopMs = figures.stopLatency()
    process.send({
      ...figures,
      // All threads of the process (V8's sampler, the thread pool) per request served.
      cpuUsPerRequest: (cpu.user + cpu.system) / requests,
      requestsPerSecond: requests / ((performance.now() - figures.measureStart) / 1000),
      maxEventLoopDelayMs: delay.max / 1e6,
      p99EventLoopDelayMs: delay.percentile(99) / 1e6,
      rssMB: process.memoryUsage().rss / 2 ** 20,
      sampler: getSampler().stats,
    })
  }
})
