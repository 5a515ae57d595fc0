// Generated code (issue 14): fastify validates bodies with ajv's compiled validators and serializes
// replies with fast-json-stringify's generated serializers, both made with `new Function`. Their time is a
// row of its own, named by the package that called it, in summarize, the report, pprof labels and the
// flame graph, never silently the caller's. Which samples land where depends on V8's sampling, so the
// expected rows are computed from the trace itself, and the capture is retried until it holds
// generated code.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import vm from 'node:vm'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const jsprof = require('jsprof-node')
const { Profiler, summarize, toCollapsed, toFlameGraph, toPprof } = jsprof
const Fastify = require('fastify')
const { decodePprof } = await import('./prod-helpers.mjs')

const item = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    name: { type: 'string', maxLength: 64 },
    tags: { type: 'array', items: { type: 'string' } },
    score: { type: 'number' },
  },
  required: ['id', 'name'],
}
const body = { type: 'object', properties: { items: { type: 'array', items: item } }, required: ['items'] }

async function server() {
  const app = Fastify()
  const reply = {
    items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b', 'c'], score: i / 3 })),
  }
  app.post('/echo', { schema: { body, response: { 200: body } } }, async () => reply)
  await app.ready()
  return app
}

const payload = JSON.stringify({
  items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `n${i}`, tags: ['x'], score: i })),
})

/** A frame of V8's generated code: a position but no resource (see AttributionKind). */
const isGenerated = (f) => f.resourceId === undefined && f.line !== undefined

/** The package of a file URL under node_modules (the innermost one), else null. */
function packageOf(url) {
  const m = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  return m ? m[1] : null
}

/** Captures fastify requests until the trace holds samples in generated code (at most 6 tries). */
async function capture(app) {
  for (let attempt = 0; attempt < 6; attempt++) {
    const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    const until = Date.now() + 400
    while (Date.now() < until) {
      const r = await app.inject({
        method: 'POST',
        url: '/echo',
        payload,
        headers: { 'content-type': 'application/json' },
      })
      assert.equal(r.statusCode, 200, r.body)
    }
    const trace = await profiler.stop()
    const inGenerated = trace.samples.filter(
      (s) => s.stackId !== undefined && isGenerated(trace.frames[trace.stacks[s.stackId].frameId]),
    )
    if (inGenerated.length >= 3) return trace
  }
  assert.fail('six captures of 400 ms of fastify requests held fewer than 3 samples in generated code')
}

/**
 * Self time per generated row, computed here from the trace: a sample whose innermost code frame (app,
 * dependency or generated; builtins and node: internals charge their caller) is generated code is charged
 * to `(generated, called from <package of the nearest dependency frame above it>)`.
 */
function expectedGeneratedRows(trace) {
  const order = trace.samples.map((_, i) => i).sort((a, b) => trace.samples[a].timestamp - trace.samples[b].timestamp)
  const weight = new Map()
  for (let k = 0; k + 1 < order.length; k++)
    weight.set(order[k], trace.samples[order[k + 1]].timestamp - trace.samples[order[k]].timestamp)
  const expected = new Map()
  for (const [i, s] of trace.samples.entries()) {
    if (s.stackId === undefined || !weight.has(i)) continue
    const frames = []
    for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId)
      frames.push(trace.frames[trace.stacks[id].frameId])
    const isCode = (f) =>
      isGenerated(f) || (f.resourceId !== undefined && !trace.resources[f.resourceId].startsWith('node:'))
    const at = frames.findIndex(isCode)
    if (at < 0 || !isGenerated(frames[at])) continue
    const caller = frames
      .slice(at + 1)
      .find((f) => f.resourceId !== undefined && !trace.resources[f.resourceId].startsWith('node:'))
    const pkg = caller && packageOf(trace.resources[caller.resourceId])
    // App callers are named by their package.json; this test only checks dependency callers exactly.
    const name = pkg ? `(generated, called from ${pkg})` : caller ? 'app caller' : '(generated)'
    expected.set(name, (expected.get(name) ?? 0) + weight.get(i))
  }
  return expected
}

test("fastify's ajv validators and fast-json-stringify serializers: a generated row named by fastify, in every view", async () => {
  const app = await server()
  try {
    const trace = await capture(app)
    const rows = summarize(trace, { by: 'package', sampleInterval: 0 })
    const expected = expectedGeneratedRows(trace)
    const fromFastify = rows.find((r) => r.name === '(generated, called from fastify)')
    assert.ok(fromFastify, `a generated row named by fastify: ${JSON.stringify(rows.map((r) => r.name))}`)
    assert.equal(fromFastify.kind, 'generated')
    assert.ok(expected.get('(generated, called from fastify)') > 0)
    for (const [name, ms] of expected) {
      if (name === 'app caller') continue
      const row = rows.find((r) => r.name === name)
      assert.ok(
        row && Math.abs(row.selfTime - ms) < 0.01,
        `${name}: summarize ${row?.selfTime} ms, the trace says ${ms} ms`,
      )
    }
    // By function the generated functions are named with their position in their script.
    const functions = summarize(trace, { by: 'function' }).filter((r) => r.kind === 'generated')
    assert.ok(functions.length > 0)
    for (const r of functions) assert.match(r.name, / \(generated:\d+:\d+\)$/)
    // pprof labels charge the same row (go tool pprof -tagfocus package=...).
    const { profile } = decodePprof(toPprof(trace))
    const str = (i) => profile.stringTable.strings[Number(i)]
    const labelled = profile.sample.filter((s) =>
      s.label.some((l) => str(l.key) === 'package' && str(l.str) === '(generated, called from fastify)'),
    )
    assert.ok(labelled.length > 0)
    for (const s of labelled) assert.equal(str(s.label.find((l) => str(l.key) === 'kind').str), 'generated')
    // Collapsed stacks and the flame graph name the frames as generated, not as builtins.
    assert.match(toCollapsed(trace), /\(generated:\d+:\d+\)/)
    assert.match(toFlameGraph(trace), /\(generated:\d+:\d+\) \([^)]*kind: generated, called from: fastify\)/)
  } finally {
    await app.close()
  }
})

test('new Function, eval and vm without a filename are generated code; vm with a filename is not', async () => {
  const made = [
    new Function('n', 'let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i); return x'),

    (0, eval)('(function evalMade(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i) * 2; return x })'),
    vm.runInThisContext(
      '(function vmMade(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i) * 3; return x })',
    ),
    vm.runInThisContext(
      '(function vmNamed(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i) * 4; return x })',
      { filename: '/srv/templates/compiled.js' },
    ),
  ]
  const wanted = {
    'new Function': (r) => r.name.startsWith('(anonymous) (generated:') && r.kind === 'generated',
    eval: (r) => r.name.startsWith('evalMade (generated:') && r.kind === 'generated',
    'vm without a filename (evalmachine.<anonymous>)': (r) =>
      r.name.startsWith('vmMade (generated:') && r.kind === 'generated',
    'vm with a filename is attributed by it': (r) =>
      /^vmNamed \((file:\/\/)?\/srv\/templates\/compiled\.js:/.test(r.name) && r.kind === 'app',
  }
  let rows
  for (let attempt = 0; attempt < 6; attempt++) {
    const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    const until = Date.now() + 300
    while (Date.now() < until) for (const f of made) f(20000)
    const trace = await profiler.stop()
    rows = summarize(trace, { by: 'function' })
    if (Object.values(wanted).every((is) => rows.some(is))) break
  }
  for (const [what, is] of Object.entries(wanted))
    assert.ok(rows.some(is), `${what}: ${JSON.stringify(rows.map((r) => [r.name, r.kind]))}`)
})
