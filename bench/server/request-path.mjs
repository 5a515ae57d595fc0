// One request's path through the request integration, without the network (docs/bench.md#labels-on-every-request):
// `profileRequests({ sampleRate: 0 }).wrap(handler)` called with a request-like emitter, the handler
// starting one async resource (a nextTick, as `res.end` does), the request's 'end' emitted later from
// the connection's context with node:http's own `clearIncoming` listener on it, as a GET's is, then the
// response's 'finish'.
// Each mode in a child process of its own (the async hook is process-wide), modes alternated over
// rounds; ns per request, median of rounds (each round the best of its batches). The server bench
// (bench/server/run.mjs) measures the whole server; this isolates what labels add per request.
//
//   node bench/server/request-path.mjs [--requests 200000] [--rounds 5] [--root DIR]
//   node bench/server/request-path.mjs --modes otelnospans,otelspans   (span ids' part)
//   modes: nolabels (labels: false), labels, labels+app-end (an app listener on 'end' too), als
//   (AsyncLocalStorage.run alone), sampled10 (every 10th request profiled, labels off: against nolabels,
//   profileRequests' own work per request; best batches, so the harvests between them mostly not);
//   otelspans / otelnospans: labels with the OpenTelemetry API's AsyncLocalStorage context manager and
//   one span per request (@opentelemetry/sdk-trace-base, no exporter), the listener run in the span's
//   context / in ROOT_CONTEXT (no span labels): their difference is what span ids add per request.

import { spawnSync } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { AsyncLocalStorage } from 'node:async_hooks'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg } from '../args.mjs'

const REQUESTS = Number(arg('requests', 200_000))
const ROUNDS = Number(arg('rounds', 5))
const ROOT = path.resolve(arg('root', path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')))
const mode = arg('mode', null)
const MODES = arg('modes', 'nolabels,labels,labels+app-end,als').split(',')

if (mode !== null) {
  const require = createRequire(path.join(ROOT, 'index.js'))
  const { profileRequests } = require(ROOT)
  const tick = () => {}
  const handler = () => process.nextTick(tick)
  // Named as node:http's listener is (the integration leaves it out of the request's context).
  const clearIncoming = () => {}
  const appEnd = () => {}
  let listener
  if (mode === 'als') {
    const als = new AsyncLocalStorage()
    listener = (req, res) => als.run(1, handler, req, res)
  } else if (mode === 'otelspans' || mode === 'otelnospans') {
    const api = require('@opentelemetry/api')
    const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
    const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base')
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    const tracer = new BasicTracerProvider().getTracer('bench')
    const wrapped = profileRequests({ sampleRate: 0, onProfile() {} }).wrap(handler)
    const spans = mode === 'otelspans'
    listener = (req, res) => {
      const span = tracer.startSpan('GET')
      const ctx = spans ? api.trace.setSpan(api.context.active(), span) : api.ROOT_CONTEXT
      api.context.with(ctx, wrapped, undefined, req, res)
      span.end()
    }
  } else if (mode === 'sampled10') {
    // Every 10th request profiled (labels off): the request tracker, recordings, deliveries.
    listener = profileRequests({ sampleRate: 0.1, labels: false, onProfile() {} }).wrap(handler)
  } else {
    listener = profileRequests({ sampleRate: 0, labels: mode !== 'nolabels', onProfile() {} }).wrap(handler)
  }
  const BATCH = 1000
  const batch = async () => {
    const reqs = []
    for (let i = 0; i < BATCH; i++) {
      const req = new EventEmitter()
      req.method = 'GET'
      const res = new EventEmitter()
      res.writableFinished = true
      listener(req, res)
      reqs.push([req, res])
    }
    await new Promise(setImmediate)
    for (const [req, res] of reqs) {
      req.on('end', clearIncoming)
      if (mode === 'labels+app-end') req.on('end', appEnd)
      req.emit('end')
      res.emit('finish')
    }
  }
  for (let i = 0; i < 50; i++) await batch() // warm-up
  let best = Infinity
  for (let done = 0; done < REQUESTS;) {
    const t = process.hrtime.bigint()
    for (let i = 0; i < 10; i++) await batch()
    best = Math.min(best, Number(process.hrtime.bigint() - t) / (10 * BATCH))
    done += 10 * BATCH
  }
  process.stdout.write(JSON.stringify({ ns: best }))
} else {
  const self = fileURLToPath(import.meta.url)
  const results = Object.fromEntries(MODES.map((m) => [m, []]))
  for (let r = 0; r < ROUNDS; r++) {
    for (const m of MODES) {
      const child = spawnSync(process.execPath, [self, '--mode', m, '--requests', String(REQUESTS), '--root', ROOT], {
        encoding: 'utf8',
      })
      if (child.status !== 0) throw new Error(child.stderr)
      results[m].push(JSON.parse(child.stdout).ns)
    }
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.log(
    `# one request's path, ${REQUESTS} requests x ${ROUNDS} rounds, Node ${process.version}, ${ROOT}, load average ${os.loadavg()[0].toFixed(2)}`,
  )
  const first = MODES[0]
  const base = median(results[first])
  for (const m of MODES) {
    const ns = median(results[m])
    console.log(
      `${m.padEnd(16)} ${ns.toFixed(0).padStart(6)} ns/request  (+${(ns - base).toFixed(0)} ns over ${first})`,
    )
  }
}
