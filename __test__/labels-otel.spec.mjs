// Checks a user would believe (issue 25): an Express app instrumented with the OpenTelemetry SDK, two
// routes burning two known functions under concurrent load with awaits interleaving them
// (fixtures/otel-express-server.cjs). Then, with real tools: `go tool pprof -tagfocus route=…` gives
// each route its own function; the OTLP export, decoded with the official proto classes, links
// samples only to trace ids the span exporter recorded, and each root span has pyroscope.profile.id;
// `jsprof report --by route` ranks the expensive route first; `jsprof diff --by route` compares.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { toPprof, toOtlpProfiles, summarize } from 'jsprof-node'
import { chunkLabels } from './helpers.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..')
const SERVER = path.join(here, 'fixtures', 'otel-express-server.cjs')
const BIN = path.join(root, 'bin', 'jsprof.js')
const VENV = path.join(root, '.cache', 'otlp-venv', 'bin', 'python')
const PYTHON = process.env.PYTHON || (fs.existsSync(VENV) ? VENV : 'python3')
const USERS = 'GET /users/:id'
const ORDERS = 'GET /orders/:id'

const hasGo = spawnSync('go', ['version'], { encoding: 'utf8' }).status === 0
const hasProto =
  spawnSync(PYTHON, ['-c', 'import opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2'])
    .status === 0

/** Runs the instrumented server under load; its trace, spans and the folder they are in. */
function load() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-labels-otel-'))
  const r = spawnSync(process.execPath, [SERVER, dir], { encoding: 'utf8', timeout: 120_000 })
  assert.equal(r.status, 0, r.stderr)
  const trace = JSON.parse(fs.readFileSync(path.join(dir, 'trace.json'), 'utf8'))
  const spans = JSON.parse(fs.readFileSync(path.join(dir, 'spans.json'), 'utf8'))
  return { dir, trace, spans }
}

let cached
/** One load for every test (a few seconds of CPU), taken again when V8 got too few samples in. */
function capture() {
  for (let attempt = 0; cached === undefined || (attempt < 3 && !enough(cached.trace)); attempt++) cached = load()
  return cached
}
function enough(trace) {
  const rows = summarize(trace, { by: 'label:route' })
  return [USERS, ORDERS].every((route) => (rows.find((r) => r.name === route)?.selfSamples ?? 0) >= 20)
}

const TIME = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000 }

/** `go tool pprof -traces` of the samples tagged route=<route>: [{ ms, frames }]. */
function pprofTraces(file, route) {
  const r = spawnSync('go', ['tool', 'pprof', `-tagfocus=route=^${route}$`, '-traces', file], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  assert.equal(r.status, 0, r.stderr)
  const traces = []
  for (const block of r.stdout.split(/^-+\+-+$/m).slice(1)) {
    let current = null
    for (const line of block.split('\n')) {
      const head = /^\s*([\d.]+)(ns|us|µs|ms|s)\s{2,}(.*)$/.exec(line)
      if (head) {
        current = { ms: Number(head[1]) * TIME[head[2]], frames: [head[3].trim()] }
        traces.push(current)
      } else if (current && line.trim() !== '') current.frames.push(line.trim())
    }
  }
  return traces
}

test(
  'go tool pprof -tagfocus route=…: each route is its own function',
  { skip: !hasGo && 'go is not installed' },
  () => {
    const { dir, trace } = capture()
    const file = path.join(dir, 'cpu.pb.gz')
    fs.writeFileSync(file, toPprof(trace))
    for (const [route, own, other] of [
      [USERS, 'usersWork', 'ordersWork'],
      [ORDERS, 'ordersWork', 'usersWork'],
    ]) {
      const traces = pprofTraces(file, route)
      const sum = (pick) => traces.filter(pick).reduce((a, t) => a + t.ms, 0)
      const total = sum(() => true)
      const mine = sum((t) => t.frames.includes(own))
      const theirs = sum((t) => t.frames.includes(other))
      assert.ok(total > 0, `${route}: samples`)
      // Of the time in the two known functions, the route's own is at least 95%.
      assert.ok(mine / (mine + theirs) >= 0.95, `${route}: ${own} ${mine} ms, ${other} ${theirs} ms`)
      // And its own function is most of the route's time (the rest: Express, http, OpenTelemetry, GC;
      // more of it when the machine is loaded).
      assert.ok(mine / total >= 0.5, `${route}: ${own} ${mine} of ${total} ms`)
    }
  },
)

const DECODER = `
import json, sys
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
request = ExportProfilesServiceRequest()
request.ParseFromString(open(sys.argv[1], 'rb').read())
d = request.dictionary
s = d.string_table
profile = request.resource_profiles[0].scope_profiles[0].profiles[0]
out = []
for sample in profile.samples:
    link = d.link_table[sample.link_index]
    attrs = {s[d.attribute_table[a].key_strindex]: d.attribute_table[a].value.string_value for a in sample.attribute_indices}
    out.append({'traceId': link.trace_id.hex(), 'spanId': link.span_id.hex(), 'linkIndex': sample.link_index,
                'attributes': attrs, 'values': len(sample.values)})
print(json.dumps({'zeroLink': d.link_table[0].ByteSize(), 'samples': out}))
`

test(
  'OTLP, decoded with the official classes, links samples only to recorded traces',
  { skip: !hasProto && 'the Python package opentelemetry-proto is not installed (.ci/run installs it)' },
  () => {
    const { dir, trace, spans } = capture()
    const file = path.join(dir, 'profiles.pb')
    fs.writeFileSync(file, toOtlpProfiles(trace))
    const r = spawnSync(PYTHON, ['-c', DECODER, file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    assert.equal(r.status, 0, r.stderr)
    const decoded = JSON.parse(r.stdout)
    assert.equal(decoded.zeroLink, 0, 'link_table[0] is the zero link')
    const recorded = new Set(spans.map((s) => s.traceId))
    const roots = spans.filter((s) => !s.parentSpanId)
    const rootIds = new Set(roots.map((s) => s.spanId))
    const linked = decoded.samples.filter((s) => s.linkIndex !== 0)
    assert.ok(linked.length > 0, 'linked samples')
    for (const s of linked) {
      assert.ok(recorded.has(s.traceId), `trace ${s.traceId} was recorded by the span exporter`)
      assert.ok(rootIds.has(s.spanId), `span ${s.spanId} is a local root span`)
      assert.ok(!('trace_id' in s.attributes) && !('span_id' in s.attributes), 'the span context is the link')
    }
    // Samples of two spans are two Samples: one link each, and never two routes under one link.
    const routeOfLink = new Map()
    for (const s of linked) {
      if (!s.attributes.route) continue
      const seen = routeOfLink.get(s.linkIndex)
      assert.ok(seen === undefined || seen === s.attributes.route, 'one span, one route')
      routeOfLink.set(s.linkIndex, s.attributes.route)
    }
    assert.equal(
      decoded.samples.reduce((a, s) => a + s.values, 0),
      trace.samples.length,
    )
    // Every root (server) span says its profile id: its own span id.
    assert.ok(roots.length >= 20, `${roots.length} root spans`)
    for (const s of roots) assert.equal(s.attributes['pyroscope.profile.id'], s.spanId, s.name)
  },
)

test("a sample's span labels are its request's root span: ids, name and route", () => {
  const { trace, spans } = capture()
  const roots = new Map(spans.filter((s) => !s.parentSpanId).map((s) => [s.spanId, s]))
  const sets = trace.jsprof.labelSets.filter((set) => set.span_id !== undefined)
  assert.ok(sets.length > 0, 'samples with span labels')
  for (const set of sets) {
    const span = roots.get(set.span_id)
    assert.ok(span, `span ${set.span_id} is a recorded root span`)
    assert.equal(set.trace_id, span.traceId)
    assert.match(set.trace_id, /^[0-9a-f]{32}$/)
    assert.match(set.span_id, /^[0-9a-f]{16}$/)
    // The http instrumentation names a server span `GET` and renames it `GET /users/:id` when the
    // response finishes: the name a harvest found, the final one for a request harvested after its end.
    assert.ok(span.name.startsWith(set.span_name), `${set.span_name} / ${span.name}`)
    assert.equal(set.method, 'GET')
    assert.ok(set.route === undefined || [USERS, ORDERS].includes(set.route), `route ${set.route}`)
  }
  // Most samples are harvested after their request ended: its route, and its span's final name.
  const ext = trace.jsprof
  const spanned = ext.sampleLabels.filter((i) => i !== null && ext.labelSets[i].span_id !== undefined)
  const final = spanned.filter((i) => {
    const set = ext.labelSets[i]
    return set.route !== undefined && set.span_name === roots.get(set.span_id).name
  })
  assert.ok(final.length >= 0.9 * spanned.length, `${final.length} of ${spanned.length} samples`)
})

test('jsprof report --by route ranks the expensive route first; jsprof diff --by route compares', () => {
  const { dir } = capture()
  const file = path.join(dir, 'trace.json')
  const run = (...args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 })
  const json = run('report', file, '--by', 'route', '--json')
  assert.equal(json.status, 0, json.stderr)
  const rows = JSON.parse(json.stdout).rows
  assert.equal(rows.find((r) => r.kind === 'label').name, ORDERS, JSON.stringify(rows))
  assert.ok(rows.some((r) => r.name === USERS))
  const text = run('report', file, '--by', 'route')
  assert.equal(text.status, 0, text.stderr)
  assert.match(text.stdout, /by label:route/)
  assert.match(text.stdout, /GET \/orders\/:id/)
  const diff = run('diff', file, file, '--by', 'route', '--json')
  assert.equal(diff.status, 0, diff.stderr)
  const names = JSON.parse(diff.stdout).rows.map((r) => r.name)
  assert.ok(names.includes(ORDERS) && names.includes(USERS), names.join(', '))
  const bad = run('report', file, '--by', 'nope')
  assert.notEqual(bad.status, 0)
  assert.match(bad.stderr, /'route' or 'label:<key>'/)
})

test('jsprof report escapes hostile label values', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-labels-hostile-'))
  const file = path.join(dir, 'trace.json')
  const trace = {
    frames: [{ name: 'f' }],
    jsprof: { labelSets: [{ route: 'GET /\u001b[2J\u001b]0;pwned\u0007\n\u202eevil' }], sampleLabels: [0, 0] },
    resources: [],
    samples: [
      { stackId: 0, timestamp: 1 },
      { stackId: 0, timestamp: 2 },
    ],
    stacks: [{ frameId: 0 }],
  }
  fs.writeFileSync(file, JSON.stringify(trace))
  const r = spawnSync(process.execPath, [BIN, 'report', file, '--by', 'route'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/.test(r.stdout), JSON.stringify(r.stdout))
  assert.match(r.stdout, /GET \/\\x1b\[2J\\x1b\]0;pwned\\x07\\x0a\\u\{202e\}evil/)
})

/**
 * Runs `fn(inRequest)` with an OpenTelemetry SDK tracer; `inRequest(name, template, method)`: a request's
 * context begun in a new span of that name.
 */
async function withTracer(fn) {
  const { createRequire } = await import('node:module')
  const { EventEmitter } = await import('node:events')
  const require = createRequire(import.meta.url)
  const api = require('@opentelemetry/api')
  const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
  const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base')
  const { beginRequest } = require('../lib/labels.js')
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  try {
    const tracer = new BasicTracerProvider().getTracer('t')
    return fn((name, template, method = 'GET') => {
      const span = tracer.startSpan(name)
      const context = api.context.with(api.trace.setSpan(api.context.active(), span), () =>
        beginRequest(new EventEmitter(), method, template),
      )
      return { context, span }
    })
  } finally {
    api.context.disable()
  }
}

test('a request with an active span reads its route and span labels; a hostile span name drops only the name', async () => {
  const { getLabels } = await import('jsprof-node')
  await withTracer((inRequest) => {
    const named = (name) => {
      const { context, span } = inRequest(name)
      context.run(() => context.route('/users/:id'), null, [])
      span.end()
      return [context.run(getLabels, null, []), span]
    }
    const [got, span] = named('GET /users/:id')
    const { traceId, spanId } = span.spanContext()
    assert.deepEqual(got, {
      method: 'GET',
      route: 'GET /users/:id',
      span_id: spanId,
      span_name: 'GET /users/:id',
      trace_id: traceId,
    })
    assert.deepEqual(Object.keys(got), ['method', 'route', 'span_id', 'span_name', 'trace_id'])
    assert.ok(Object.isFrozen(got))
    assert.equal(span.attributes['pyroscope.profile.id'], spanId)
    // A span name past the value limit: the request keeps its route and the span's ids, not its name.
    const [hostile, hostileSpan] = named('x'.repeat(100_000))
    assert.deepEqual(hostile, {
      method: 'GET',
      route: 'GET /users/:id',
      span_id: hostileSpan.spanContext().spanId,
      trace_id: hostileSpan.spanContext().traceId,
    })
  })
})

test("a span renamed after the request began: what a harvest reads says the span's name then", async () => {
  const { createRequire } = await import('node:module')
  const require = createRequire(import.meta.url)
  const { beforeHarvest, contextRing, samplingChanged } = require('../lib/labels.js')
  const binding = require('../binding.js')
  // One chunk of one sample in `id`'s context, harvested now.
  const labelsOf = (id) => {
    const t = 5e6
    binding.clearLabelTransitions()
    binding.labelTransitions(Float64Array.of(t), Uint32Array.of(id), 1)
    return chunkLabels([t + 10], contextRing(), beforeHarvest)[0]
  }
  samplingChanged(true)
  try {
    await withTracer((inRequest) => {
      // The http instrumentation names a server span `GET` and renames it once the route is known.
      const { context, span } = inRequest('GET', undefined)
      assert.equal(labelsOf(context.id).span_name, 'GET')
      context.route('/users/:id')
      span.updateName('GET /users/:id')
      assert.deepEqual(labelsOf(context.id), {
        method: 'GET',
        route: 'GET /users/:id',
        span_id: span.spanContext().spanId,
        span_name: 'GET /users/:id',
        trace_id: span.spanContext().traceId,
      })
      // Once ended, a span is named for good: harvests no longer ask it.
      span.end()
      labelsOf(context.id)
      span.name = 'renamed behind its back'
      assert.equal(labelsOf(context.id).span_name, 'GET /users/:id')
    })
  } finally {
    samplingChanged(false)
    binding.clearLabelTransitions()
  }
})

test('past 10,000 distinct routes a new route is labelled by its method, past 10,000 span names a span by its ids', async () => {
  const { createRequire } = await import('node:module')
  const require = createRequire(import.meta.url)
  const { requestLabelsId } = require('../lib/labels.js')
  const method = requestLabelsId('PATCH', undefined)
  const routes = new Set()
  for (let i = 0; i < 10_000; i++) routes.add(requestLabelsId('PATCH', `/cap/${i}`))
  assert.ok(routes.size > 9_000, 'distinct routes, distinct sets, up to the cap')
  assert.equal(requestLabelsId('PATCH', '/cap/one-more'), method)
  assert.equal(requestLabelsId('PATCH', '/cap/7'), [...routes][7], 'a known route keeps its set')
  await withTracer((inRequest) => {
    for (let i = 0; i < 10_000; i++) inRequest(`name ${i}`, '/cap/0', 'PATCH').span.end()
    const { context, span } = inRequest('one more name', '/cap/0', 'PATCH')
    const labels = context.labels()
    assert.equal(labels.span_name, undefined)
    assert.equal(labels.span_id, span.spanContext().spanId)
    assert.equal(labels.route, 'PATCH /cap/0')
  })
})
