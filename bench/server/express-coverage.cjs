'use strict'
// How much of a real Express app's request CPU carries its route (issue 41): an Express 5 app with
// helmet, compression and body-parser before its routes, the OpenTelemetry SDK tracing every request
// (its http and Express instrumentations), profileRequests on every 10th request with labels on, under
// a steady load from autocannon (a process of its own). A Profiler at 1 ms records the load; then:
//
// - of the samples whose stack holds the request's middleware or handler code (helmet, compression,
//   body-parser, the route handlers), the share that carries its route — the target: >= 95%;
// - of those with a span, the share whose span_name is the span's final name (the http
//   instrumentation names a server span `GET` and renames it `GET /api/users/:id` at the end);
// - the request profiles' samples with a route;
// - what carries no route, by where its stack is (the HTTP parser before a request object exists,
//   OpenTelemetry's incomingRequest, Express's router, ...), as a share of all samples with code.
//
//   node bench/server/express-coverage.cjs [--seconds 10] [--connections 10]
// Prints figures; asserts nothing (exit 1 only when the app or the load failed).

const path = require('node:path')
const { spawn } = require('node:child_process')
const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node')
const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base')
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http')
const { ExpressInstrumentation } = require('@opentelemetry/instrumentation-express')
const { registerInstrumentations } = require('@opentelemetry/instrumentation')

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const SECONDS = arg('seconds', 10)
const CONNECTIONS = arg('connections', 10)

// The final name of every root span, as the exporter gets it (the SDK's BatchSpanProcessor).
const finalNames = new Map()
const exporter = {
  export(spans, done) {
    for (const s of spans) if (!s.parentSpanContext && !s.parentSpanId) finalNames.set(s.spanContext().spanId, s.name)
    done({ code: 0 })
  },
  shutdown: async () => {},
}
const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] })
provider.register()
registerInstrumentations({
  instrumentations: [
    new HttpInstrumentation({ disableOutgoingRequestInstrumentation: true }),
    new ExpressInstrumentation(),
  ],
})

// Loaded after the instrumentations, as the OpenTelemetry docs ask.
const http = require('node:http')
const express = require('express')
const helmet = require('helmet')
const compression = require('compression')
const bodyParser = require('body-parser')
const root = path.join(__dirname, '..', '..')
const { Profiler, profileRequests, toPprof } = require(root)

const ITEMS = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}`, price: (i * 7919) % 1000 }))
function priceOrder(lines) {
  let total = 0
  for (const line of lines) total += (ITEMS[line.id % ITEMS.length].price * line.qty) / 100
  return Math.round(total * 100) / 100
}
function listUser(id) {
  return ITEMS.filter((item) => (item.id + id) % 3 === 0).map((item) => ({ ...item, label: `${item.name} for ${id}` }))
}

const profiles = []
const requests = profileRequests({ sampleRate: 0.1, onProfile: (p) => profiles.push(p) })
const app = express()
app.use(requests.express())
app.use(helmet())
app.use(compression({ threshold: 0 }))
app.use(bodyParser.json())
app.post('/api/orders/:id', function orderHandler(req, res) {
  res.json({ id: req.params.id, total: priceOrder(req.body.lines) })
})
app.get('/api/users/:id', function userHandler(req, res) {
  res.json({ id: req.params.id, items: listUser(Number(req.params.id)) })
})
const ROUTES = ['POST /api/orders/:id', 'GET /api/users/:id']

/** Whether a frame is the request's middleware or handler code (the denominator of the target). */
const MIDDLEWARE = /\/node_modules\/(helmet|compression|body-parser|raw-body)\//
const HANDLERS = new Set(['orderHandler', 'userHandler', 'priceOrder', 'listUser'])
const isMiddleware = (f, url) => MIDDLEWARE.test(url) || HANDLERS.has(f.name)
/** Where a sample without a route is: the place of the innermost frame of its stack that has one. */
const PLACES = [
  ['the request middleware or handlers', isMiddleware],
  ["Express's router", (f, url) => /\/node_modules\/(router|express)\//.test(url)],
  ['OpenTelemetry', (f, url) => /\/node_modules\/@opentelemetry\//.test(url)],
  ["node:http (the parser, the response's writes)", (f, url) => /^node:_http|^node:http/.test(url)],
  [
    "Node's streams, sockets and events",
    (f, url) => /^node:(internal\/streams|net|events|stream|internal\/stream_base)/.test(url),
  ],
  ['jsprof-node', (f, url) => url.startsWith(path.join(root, 'lib'))],
]

function load(port) {
  const autocannon = path.join(root, 'node_modules', 'autocannon', 'autocannon.js')
  const body = JSON.stringify({ lines: Array.from({ length: 20 }, (_, i) => ({ id: i * 7, qty: 1 + (i % 3) })) })
  // Two loads at once: orders (POST, a JSON body) and users (GET), half the connections each.
  const run = (args) =>
    new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [autocannon, '-c', String(Math.max(1, CONNECTIONS / 2)), '-d', String(SECONDS), '-j', ...args],
        {
          stdio: ['ignore', 'pipe', 'ignore'],
        },
      )
      let out = ''
      child.stdout.on('data', (d) => (out += d))
      child.once('exit', () => {
        try {
          const r = JSON.parse(out)
          resolve({ rps: r.requests.average, errors: r.errors + r.non2xx })
        } catch {
          reject(new Error('autocannon gave no result'))
        }
      })
    })
  return Promise.all([
    run(['-m', 'POST', '-H', 'content-type=application/json', '-b', body, `http://127.0.0.1:${port}/api/orders/7`]),
    run([`http://127.0.0.1:${port}/api/users/3`]),
  ])
}

function analyse(trace) {
  const { labelSets = [], sampleLabels = [] } = trace.jsprof ?? {}
  const places = new Map()
  let code = 0
  let middleware = 0
  let routed = 0
  let spanned = 0
  let finalName = 0
  let unrouted = 0
  trace.samples.forEach((s, i) => {
    if (s.stackId === undefined) return
    code++
    const set = sampleLabels[i] == null ? undefined : labelSets[sampleLabels[i]]
    const frames = []
    for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId) {
      const f = trace.frames[trace.stacks[id].frameId]
      frames.push([f, f.resourceId === undefined ? '' : trace.resources[f.resourceId]])
    }
    if (frames.some(([f, url]) => isMiddleware(f, url))) {
      middleware++
      if (set?.route !== undefined && ROUTES.includes(set.route)) routed++
      if (set?.span_id !== undefined) {
        spanned++
        if (finalNames.get(set.span_id) === set.span_name) finalName++
      }
    }
    if (set?.route === undefined) {
      unrouted++
      let place
      for (const [f, url] of frames) {
        place = PLACES.find(([, is]) => is(f, url))?.[0]
        if (place === undefined && url !== '') place = `elsewhere: ${url.replace(/^.*\/node_modules\//, '')}`
        if (place !== undefined) break
      }
      place ??= 'no frame with a script (native, builtins)'
      places.set(place, (places.get(place) || 0) + 1)
    }
  })
  return { code, middleware, routed, spanned, finalName, unrouted, places }
}

async function main() {
  const server = http.createServer(app)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  // Warm-up (JIT, the sampler's first start), then the measured load.
  await load(port).catch(() => {})
  const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 10_000_000 })
  const [orders, users] = await load(port)
  const trace = await profiler.stop()
  await requests.close()
  server.close()
  await provider.forceFlush()
  if (orders.errors + users.errors > 0) {
    console.error(`load errors: ${orders.errors + users.errors}`)
    process.exitCode = 1
  }
  const pct = (n, d) => (d === 0 ? 'n/a' : `${((100 * n) / d).toFixed(1)}%`)
  const a = analyse(trace)
  console.log(
    `# node ${process.version}, Express 5 + helmet + compression + body-parser + OpenTelemetry SDK, ` +
      `${CONNECTIONS} connections, ${SECONDS} s; ${orders.rps.toFixed(0)} + ${users.rps.toFixed(0)} req/s; ` +
      `load ${require('node:os').loadavg()[0].toFixed(2)}`,
  )
  console.log(`samples with code running: ${a.code}`)
  console.log(
    `samples holding the request's middleware or handler: ${a.middleware}; with its route: ${a.routed} (${pct(a.routed, a.middleware)}; target >= 95%)`,
  )
  console.log(
    `  of them with a span: ${a.spanned}; span_name the span's final name: ${a.finalName} (${pct(a.finalName, a.spanned)})`,
  )
  console.log(
    `samples with no route: ${a.unrouted} (${pct(a.unrouted, a.code)} of the samples with code), by where their stack is:`,
  )
  for (const [place, n] of [...a.places].sort((x, y) => y[1] - x[1]).slice(0, 12))
    console.log(`  ${place}: ${n} (${pct(n, a.code)} of the samples with code)`)
  let profiled = 0
  let profiledRouted = 0
  for (const p of profiles) {
    const { labelSets = [], sampleLabels = [] } = p.trace.jsprof ?? {}
    for (const i of sampleLabels) {
      profiled++
      if (i !== null && ROUTES.includes(labelSets[i].route)) profiledRouted++
    }
  }
  console.log(
    `request profiles: ${profiles.length}, their samples ${profiled}, with the route ${profiledRouted} (${pct(profiledRouted, profiled)})`,
  )
  toPprof(trace) // the exporters take it
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
