// jsprof-node/register (issue 45): production profiling with no code, configured by the environment.
// Apps with no line of jsprof-node in them (fixtures/register/) run with `--require
// jsprof-node/register` or `--import jsprof-node/register` and the variables a platform sets; a local
// collector (OTLP, decoded by the official generated classes) and a fake Pyroscope ingest (pprof,
// decoded by pprof-format) receive what they push. Checked: the service and resource as the variables
// say, every route's samples under its own route, the last chunk after SIGTERM and on every other way
// out with the exit status the app has without the agent, worker threads when asked, span ids, one
// warning and an unprofiled app for a bad configuration; and the configuration rules themselves.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const fixtures = path.join(root, '__test__', 'fixtures', 'register')
const autocannon = require('autocannon')
const { readConfiguration, settings, DEFAULTS, DEFAULT_APP_NAME } = require('../lib/register/config.js')

const VENV = path.join(root, '.cache', 'otlp-venv', 'bin', 'python')
const PYTHON = process.env.PYTHON || (fs.existsSync(VENV) ? VENV : 'python3')
const hasDecoder =
  spawnSync(PYTHON, ['-c', 'import opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2'])
    .status === 0
const NO_DECODER = 'the Python package opentelemetry-proto is not installed (.ci/run installs it)'

// Each OTLP body as { resource, sampleType, profileAttributes, samples: [{ names, attributes, link, count }] }.
const DECODER = `
import json, sys
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
def value(v):
    kind = v.WhichOneof('value')
    return getattr(v, kind) if kind else None
out = []
for file in sys.argv[1:]:
    r = ExportProfilesServiceRequest()
    r.ParseFromString(open(file, 'rb').read())
    d = r.dictionary
    s = d.string_table
    rp = r.resource_profiles[0]
    p = rp.scope_profiles[0].profiles[0]
    attr = lambda i: (s[d.attribute_table[i].key_strindex], value(d.attribute_table[i].value))
    samples = []
    for sample in p.samples:
        names = [s[d.function_table[d.location_table[li].lines[0].function_index].name_strindex] for li in d.stack_table[sample.stack_index].location_indices]
        link = d.link_table[sample.link_index].trace_id.hex() if sample.link_index else None
        samples.append({'names': names, 'attributes': dict(attr(a) for a in sample.attribute_indices), 'link': link, 'count': len(sample.timestamps_unix_nano)})
    out.append({'resource': {kv.key: value(kv.value) for kv in rp.resource.attributes},
                'sampleType': s[p.sample_type.type_strindex],
                'profileAttributes': dict(attr(a) for a in p.attribute_indices), 'samples': samples})
print(json.dumps(out))
`

function decodeOtlp(bodies) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-register-'))
  try {
    const files = bodies.map((body, i) => {
      const file = path.join(dir, `${i}.pb`)
      fs.writeFileSync(file, body)
      return file
    })
    const r = spawnSync(PYTHON, ['-c', DECODER, ...files], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** A pprof body's samples as { names, labels, count } (pprof-format). */
function decodePprofSamples(body) {
  const pf = require('pprof-format')
  const profile = pf.Profile.decode(body[0] === 0x1f && body[1] === 0x8b ? zlib.gunzipSync(body) : body)
  const strings = profile.stringTable.strings
  const fnName = new Map(profile.function.map((f) => [Number(f.id), strings[Number(f.name)]]))
  const locNames = new Map(
    profile.location.map((l) => [Number(l.id), l.line.map((x) => fnName.get(Number(x.functionId)))]),
  )
  return profile.sample.map((s) => ({
    names: s.locationId.flatMap((id) => locNames.get(Number(id)) || []),
    labels: Object.fromEntries(s.label.map((l) => [strings[Number(l.key)], strings[Number(l.str)]])),
    count: Number(s.value[0]),
  }))
}

/** A collector on 127.0.0.1: records every request (with its arrival time); answers 200. */
async function collector({ answer = true } = {}) {
  const state = { requests: [] }
  const server = http.createServer((req, res) => {
    const parts = []
    req.on('data', (d) => parts.push(d))
    req.on('end', () => {
      state.requests.push({ url: req.url, headers: req.headers, body: Buffer.concat(parts), at: Date.now() })
      if (answer) res.end()
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${server.address().port}`
  state.close = () => {
    server.closeAllConnections()
    return new Promise((resolve) => server.close(resolve))
  }
  return state
}

/** The environment of an app run: the test's, without any variable of the register's, plus `vars`. */
function envWith(vars) {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(OTEL_|PYROSCOPE_|JSPROF_)/.test(k) && k !== 'NODE_OPTIONS') env[k] = v
  }
  return { ...env, ...vars }
}

/**
 * Starts `node [preload] script ...args`; resolves with { child, port, out, err, exited } once it
 * printed its port (or at once, `waitPort: false`). `exited` resolves with { code, signal, at }.
 */
function startApp(
  script,
  { args = [], preload = ['--require', 'jsprof-node/register'], vars = {}, waitPort = true } = {},
) {
  const child = spawn(process.execPath, [...preload, script, ...args], { cwd: root, env: envWith(vars) })
  const run = { child, out: '', err: '' }
  child.stdout.on('data', (d) => (run.out += d))
  child.stderr.on('data', (d) => (run.err += d))
  run.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })))
  if (!waitPort) return Promise.resolve(run)
  return new Promise((resolve, reject) => {
    const seen = () => {
      const m = /\{"port":(\d+)\}/.exec(run.out)
      if (m) {
        child.stdout.off('data', seen)
        run.port = Number(m[1])
        resolve(run)
      }
    }
    child.stdout.on('data', seen)
    run.exited.then(({ code, signal }) =>
      reject(new Error(`the app ended (${code ?? signal}) before listening: ${run.err}`)),
    )
  })
}

/** autocannon against the app for `seconds`, cycling through `paths`. */
function load(port, paths, seconds) {
  return autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: 4,
    duration: seconds,
    requests: paths.map((p) => ({ method: 'GET', path: p })),
  })
}

/**
 * For each [function, label value] of `pairs`: at least `min` samples hold the function on their stack,
 * and ≥ 90% of them carry the value (`labelOf(sample)`): the work of each route under its own route.
 */
function assertUnderOwnLabel(samples, pairs, labelOf, min = 20) {
  for (const [fn, value] of pairs) {
    let total = 0
    let own = 0
    for (const s of samples) {
      if (!s.names.includes(fn)) continue
      total += s.count
      if (labelOf(s) === value) own += s.count
    }
    assert.ok(total >= min, `${total} samples of ${fn}`)
    assert.ok(own / total >= 0.9, `${((own / total) * 100).toFixed(1)}% of ${fn}'s ${total} samples under ${value}`)
  }
}

/**
 * The Express fixture with the register and `vars` (sampling at 1 ms, 1 s chunks) under load for 3 s,
 * then `signal`: { run, exited, killedAt, pushedBefore } (the pushes `backend` had got before it).
 */
async function expressUnderLoad(vars, signal, backend) {
  const run = await startApp(EXPRESS, { vars: { JSPROF_SAMPLE_INTERVAL_MS: '1', JSPROF_CHUNK_SECONDS: '1', ...vars } })
  await load(run.port, ['/a', '/b/7'], 3)
  const pushedBefore = backend.requests.length
  const killedAt = Date.now()
  run.child.kill(signal)
  return { run, exited: await run.exited, killedAt, pushedBefore }
}

/** How the same app ends on SIGTERM without the agent (once: the status a platform sees today). */
let plainSigterm
async function sigtermWithoutAgent() {
  if (!plainSigterm) {
    const run = await startApp(path.join(fixtures, 'express-app.cjs'), { preload: [] })
    run.child.kill('SIGTERM')
    const { code, signal } = await run.exited
    plainSigterm = { code, signal }
  }
  return plainSigterm
}

/** `sh -c` runs `command` and echoes its exit status as a shell sees it. */
function shellStatus(command, vars) {
  const r = spawnSync('sh', ['-c', `${command}; echo "status $?"`], { cwd: root, env: envWith(vars), encoding: 'utf8' })
  return { status: Number(/status (\d+)/.exec(r.stdout)?.[1]), out: r.stdout, err: r.stderr }
}

const EXPRESS = path.join(fixtures, 'express-app.cjs')
/** The Express fixture's work functions and the routes they run under. */
const EXPRESS_ROUTES = [
  ['routeAWork', 'GET /a'],
  ['routeBWork', 'GET /b/:id'],
]
/** The register's one warning line(s) in a child's stderr. */
const warnings = (err) => err.split('\n').filter((line) => line.includes('jsprof-node/register'))

// ---- End to end ---------------------------------------------------------------------------------

test('Express 5 under load, OTLP from the environment: service, resource, headers, each route under its own route, the last chunk after SIGTERM, the status as without the agent', async (t) => {
  const otlp = await collector()
  try {
    const vars = {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: 'shop-api',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,team=pay%2Cments',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-tenant=acme%20corp,authorization=Bearer abc==',
    }
    const { run, exited, killedAt, pushedBefore } = await expressUnderLoad(vars, 'SIGTERM', otlp)
    assert.deepEqual({ code: exited.code, signal: exited.signal }, await sigtermWithoutAgent(), run.err)
    assert.equal(warnings(run.err).length, 0, run.err)
    // The last chunk arrived after the signal, before the process was gone.
    assert.ok(otlp.requests.length > pushedBefore, 'a push after SIGTERM')
    const last = otlp.requests.at(-1)
    assert.ok(last.at >= killedAt && last.at <= exited.at, `the last push at ${last.at - killedAt} ms after the signal`)
    assert.ok(exited.at - killedAt < 10_000, `ended ${exited.at - killedAt} ms after SIGTERM`)
    for (const r of otlp.requests) {
      assert.equal(r.url, '/v1development/profiles')
      assert.equal(r.headers['content-type'], 'application/x-protobuf')
      assert.equal(r.headers['x-tenant'], 'acme corp')
      assert.equal(r.headers.authorization, 'Bearer abc==')
    }
    if (!hasDecoder) return t.skip(NO_DECODER)
    const decoded = decodeOtlp(otlp.requests.map((r) => r.body))
    for (const d of decoded) {
      assert.equal(d.resource['service.name'], 'shop-api')
      assert.equal(d.resource['deployment.environment.name'], 'test')
      assert.equal(d.resource.team, 'pay,ments')
    }
    const samples = decoded.flatMap((d) => d.samples)
    const routes = new Set(samples.map((s) => s.attributes.route).filter(Boolean))
    assert.ok(routes.has('GET /a') && routes.has('GET /b/:id'), [...routes].join(', '))
    assertUnderOwnLabel(samples, EXPRESS_ROUTES, (x) => x.attributes.route)
  } finally {
    await otlp.close()
  }
})

test("Pyroscope's variables against a fake ingest (basic auth, tenant, app name), with OTLP too: both receive, routes labelled, the last chunk after SIGINT", async () => {
  const ingest = await collector()
  const otlp = await collector()
  try {
    const vars = {
      PYROSCOPE_SERVER_ADDRESS: ingest.url,
      PYROSCOPE_APPLICATION_NAME: 'shop.api',
      PYROSCOPE_BASIC_AUTH_USER: 'user',
      PYROSCOPE_BASIC_AUTH_PASSWORD: 'p@ss:word',
      PYROSCOPE_TENANT_ID: 'tenant-1',
      OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: `${otlp.url}/custom/profiles`,
    }
    const { run, exited, killedAt, pushedBefore } = await expressUnderLoad(vars, 'SIGINT', ingest)
    assert.equal(exited.signal, 'SIGINT', run.err)
    assert.ok(ingest.requests.length > pushedBefore && ingest.requests.at(-1).at >= killedAt, 'a push after SIGINT')
    assert.ok(otlp.requests.length > 0 && otlp.requests.every((r) => r.url === '/custom/profiles'))
    const auth = `Basic ${Buffer.from('user:p@ss:word').toString('base64')}`
    const samples = []
    for (const r of ingest.requests) {
      const url = new URL(r.url, 'http://x')
      assert.equal(url.pathname, '/ingest')
      assert.equal(url.searchParams.get('name'), 'shop.api')
      assert.equal(url.searchParams.get('format'), 'pprof')
      assert.equal(r.headers.authorization, auth)
      assert.equal(r.headers['x-scope-orgid'], 'tenant-1')
      samples.push(...decodePprofSamples(r.body))
    }
    assertUnderOwnLabel(samples, EXPRESS_ROUTES, (x) => x.labels.route)
  } finally {
    await ingest.close()
    await otlp.close()
  }
})

test('--import for an ES module app that ends by itself: pushed, labelled, its exit status (5) kept', async (t) => {
  const otlp = await collector()
  try {
    const vars = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, JSPROF_SAMPLE_INTERVAL_MS: '1', JSPROF_CHUNK_SECONDS: '30' }
    const run = await startApp(path.join(fixtures, 'esm-app.mjs'), {
      preload: ['--import', 'jsprof-node/register'],
      vars,
      waitPort: false,
    })
    const exited = await run.exited
    assert.equal(exited.code, 5, run.err)
    assert.match(run.out, /esm app done/)
    assert.equal(warnings(run.err).length, 0, run.err)
    // One chunk of 30 s: the one cut when the app ended.
    assert.equal(otlp.requests.length, 1)
    if (!hasDecoder) return t.skip(NO_DECODER)
    const samples = decodeOtlp(otlp.requests.map((r) => r.body)).flatMap((d) => d.samples)
    assertUnderOwnLabel(samples, [['esmWork', 'GET']], (x) => x.attributes.method, 10)
  } finally {
    await otlp.close()
  }
})

test('Fastify: every route under its own route template (routeOptions.url)', async (t) => {
  const otlp = await collector()
  try {
    const run = await startApp(path.join(fixtures, 'fastify-app.cjs'), {
      vars: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, JSPROF_SAMPLE_INTERVAL_MS: '1', JSPROF_CHUNK_SECONDS: '1' },
    })
    await load(run.port, ['/items/3', '/list'], 2)
    run.child.kill('SIGTERM')
    assert.equal((await run.exited).signal, 'SIGTERM', run.err)
    if (!hasDecoder) return t.skip(NO_DECODER)
    const samples = decodeOtlp(otlp.requests.map((r) => r.body)).flatMap((d) => d.samples)
    const routes = [
      ['itemWork', 'GET /items/:id'],
      ['listWork', 'GET /list'],
    ]
    assertUnderOwnLabel(samples, routes, (x) => x.attributes.route, 10)
  } finally {
    await otlp.close()
  }
})

test('with the OpenTelemetry SDK tracing the app, samples carry the span ids of their request', async (t) => {
  const otlp = await collector()
  try {
    const run = await startApp(EXPRESS, {
      args: ['otel'],
      vars: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, JSPROF_SAMPLE_INTERVAL_MS: '1', JSPROF_CHUNK_SECONDS: '1' },
    })
    await load(run.port, ['/a', '/b/7'], 2)
    run.child.kill('SIGTERM')
    await run.exited
    if (!hasDecoder) return t.skip(NO_DECODER)
    const samples = decodeOtlp(otlp.requests.map((r) => r.body)).flatMap((d) => d.samples)
    const work = samples.filter((s) => s.names.includes('routeAWork') || s.names.includes('routeBWork'))
    // The span context is the sample's link (docs/labels.md#in-every-export).
    const linked = work.filter((s) => s.link !== null)
    assert.ok(work.length >= 20, `${work.length} samples of the routes' work`)
    assert.ok(linked.length / work.length >= 0.9, `${linked.length} of ${work.length} with a span`)
    assert.ok(new Set(linked.map((s) => s.link)).size > 10, 'many traces')
  } finally {
    await otlp.close()
  }
})

test('JSPROF_HEAP and JSPROF_STALLS: heap profiles with the chunks, and a stall traced and pushed labelled stall=true', async (t) => {
  const otlp = await collector()
  try {
    // Holds on to memory, then blocks its event loop for 400 ms in stallWork, then ends by itself.
    const script = `const { spin } = require('./__test__/fixtures/register/spin.cjs')
      const kept = []
      for (let i = 0; i < 20000; i++) kept.push({ i, text: 'x'.repeat(100) })
      function stallWork() { return spin(400) }
      setTimeout(() => { stallWork(); setTimeout(() => console.log('kept', kept.length), 300) }, 300)`
    const run = await startApp('-e', {
      args: [script],
      vars: {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        JSPROF_HEAP: 'true',
        JSPROF_STALLS: 'true',
        JSPROF_STALL_THRESHOLD_MS: '100',
      },
      waitPort: false,
    })
    const exited = await run.exited
    assert.equal(exited.code, 0, run.err)
    assert.match(run.out, /kept 20000/)
    if (!hasDecoder) return t.skip(NO_DECODER)
    const decoded = decodeOtlp(otlp.requests.map((r) => r.body))
    const types = decoded.map((d) => d.sampleType)
    assert.ok(types.includes('cpu'), types.join(', '))
    assert.ok(
      types.some((type) => type !== 'cpu'),
      `a heap profile among ${types.join(', ')}`,
    )
    const stalls = decoded.filter((d) => d.profileAttributes.stall === 'true')
    assert.ok(stalls.length >= 1, 'a stall trace')
    assert.ok(
      stalls.some((d) => d.samples.some((x) => x.names.includes('stallWork'))),
      'the stall names the function that held the loop',
    )
  } finally {
    await otlp.close()
  }
})

test("the app's own SIGTERM handler keeps the signal: it finishes as it decides (status 7), and its last chunk is pushed at exit", async () => {
  const otlp = await collector()
  try {
    const run = await startApp(EXPRESS, {
      args: ['handler'],
      vars: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, JSPROF_CHUNK_SECONDS: '60' },
    })
    await load(run.port, ['/a'], 1)
    run.child.kill('SIGTERM')
    const exited = await run.exited
    assert.equal(exited.code, 7, run.err)
    assert.match(run.out, /app: SIGTERM, finishing up/)
    // One chunk of 60 s: the one cut at the exit the app chose.
    assert.equal(otlp.requests.length, 1)
  } finally {
    await otlp.close()
  }
})

test('process.exit(3): the last chunk is pushed from the exit event, and the status is 3', async () => {
  const otlp = await collector()
  try {
    const run = await startApp(EXPRESS, { vars: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, JSPROF_CHUNK_SECONDS: '60' } })
    await load(run.port, ['/a'], 1)
    http.get(`http://127.0.0.1:${run.port}/exit`).on('error', () => {})
    const exited = await run.exited
    assert.equal(exited.code, 3, run.err)
    assert.equal(otlp.requests.length, 1)
  } finally {
    await otlp.close()
  }
})

test('the status a shell sees is the same with and without the agent: 143 after SIGTERM, 130 after SIGINT', () => {
  const spinner = `-e "setTimeout(() => process.kill(process.pid, process.argv[1]), 300); setInterval(() => {}, 1000)"`
  for (const [signal, status] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ]) {
    const plain = shellStatus(`${JSON.stringify(process.execPath)} ${spinner} ${signal}`, {})
    const agent = shellStatus(
      `${JSON.stringify(process.execPath)} --require jsprof-node/register ${spinner} ${signal}`,
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
      },
    )
    assert.equal(plain.status, status, plain.err)
    assert.equal(agent.status, status, agent.err)
  }
})

test('a process that spins when SIGTERM comes still dies of it, within the exit deadline', async () => {
  const run = await startApp('-e', {
    args: ['setTimeout(() => { console.log("spinning"); for (;;); }, 200)'],
    vars: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', JSPROF_EXIT_TIMEOUT_MS: '500' },
    waitPort: false,
  })
  await new Promise((resolve) => run.child.stdout.once('data', resolve))
  const killedAt = Date.now()
  run.child.kill('SIGTERM')
  const exited = await run.exited
  assert.equal(exited.signal, 'SIGTERM')
  // The register's handler had the signal (without it the process would have died at once), and the
  // native deadline ended the process though its main thread never ran the push.
  assert.ok(exited.at - killedAt >= 400, `${exited.at - killedAt} ms`)
  assert.ok(exited.at - killedAt < 10_000, `${exited.at - killedAt} ms`)
})

test('a backend that never answers holds neither the app nor its exit longer than the exit deadline', async () => {
  const silent = await collector({ answer: false })
  try {
    // Ends by itself after ~600 ms of work; chunks every 0.2 s go to a backend that never answers.
    const script =
      'const e = performance.now() + 600; const t = setInterval(() => { if (performance.now() > e) clearInterval(t) }, 5)'
    const started = Date.now()
    const run = await startApp('-e', {
      args: [script],
      vars: { OTEL_EXPORTER_OTLP_ENDPOINT: silent.url, JSPROF_CHUNK_SECONDS: '0.2', JSPROF_EXIT_TIMEOUT_MS: '300' },
      waitPort: false,
    })
    const exited = await run.exited
    assert.equal(exited.code, 0, run.err)
    assert.ok(silent.requests.length >= 1, 'pushes were tried')
    // The exporter's push deadline is 10 s: the app did not wait for it.
    assert.ok(exited.at - started < 8000, `ended after ${exited.at - started} ms`)
  } finally {
    await silent.close()
  }
})

test('worker threads: profiled with JSPROF_WORKERS (their pushes say which thread), not without', async (t) => {
  const worker = path.join(fixtures, 'worker-app.cjs')
  for (const workers of [true, false]) {
    const otlp = await collector()
    try {
      const vars = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, JSPROF_SAMPLE_INTERVAL_MS: '1', JSPROF_CHUNK_SECONDS: '30' }
      if (workers) vars.JSPROF_WORKERS = 'true'
      const run = await startApp(worker, { args: ['800'], vars, waitPort: false })
      assert.equal((await run.exited).code, 0, run.err)
      assert.equal(warnings(run.err).length, 0, run.err)
      if (!hasDecoder) return t.skip(NO_DECODER)
      const decoded = decodeOtlp(otlp.requests.map((r) => r.body))
      const ofWorker = decoded.filter((d) => d.profileAttributes['thread.id'] !== undefined)
      if (!workers) {
        assert.equal(ofWorker.length, 0)
        assert.ok(decoded.length >= 1)
        continue
      }
      assert.ok(ofWorker.length >= 1, 'the worker pushed')
      assert.equal(
        ofWorker[0].profileAttributes['thread.name'],
        process.versions.node.split('.')[0] >= 22 ? 'cruncher' : 'worker',
      )
      assert.ok(ofWorker.flatMap((d) => d.samples).some((s) => s.names.includes('workerWork')))
      // The main thread's chunks hold the main thread's code.
      const main = decoded.filter((d) => d.profileAttributes['thread.id'] === undefined).flatMap((d) => d.samples)
      assert.ok(!main.some((s) => s.names.includes('workerWork')))
    } finally {
      await otlp.close()
    }
  }
})

test('a bad configuration is one warning naming the variable, and the app runs unprofiled (--require and --import)', async () => {
  const cases = [
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_HEADERS: 'api-key' },
      'OTEL_EXPORTER_OTLP_HEADERS',
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_PROTOCOL',
    ],
    [{ PYROSCOPE_SERVER_ADDRESS: 'http://127.0.0.1:9', JSPROF_CHUNK_SECONDS: 'often' }, 'JSPROF_CHUNK_SECONDS'],
    [{ PYROSCOPE_SERVER_ADDRESS: 'http://127.0.0.1:9', JSPROF_HEAP: 'yes please' }, 'JSPROF_HEAP'],
    [
      { PYROSCOPE_SERVER_ADDRESS: 'http://127.0.0.1:9', PYROSCOPE_APPLICATION_NAME: 'a{b}' },
      'PYROSCOPE_APPLICATION_NAME',
    ],
    [{ JSPROF_SAMPLE_INTERVAL_MS: '5' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
  ]
  // A server that serves itself one request, says so and closes.
  const app = `const http = require('node:http')
    const server = http.createServer((q, s) => s.end('ok')).listen(0, () =>
      http.get('http://127.0.0.1:' + server.address().port, (r) => r.on('data', (d) => { console.log('served ' + d); server.close() })))`
  for (const [vars, variable] of cases) {
    for (const preload of ['--require', '--import']) {
      const r = spawnSync(process.execPath, [preload, 'jsprof-node/register', '-e', app], {
        cwd: root,
        env: envWith(vars),
        encoding: 'utf8',
      })
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stdout, /served ok/)
      const lines = warnings(r.stderr)
      assert.equal(lines.length, 1, `${preload} ${JSON.stringify(vars)}: ${r.stderr}`)
      assert.ok(lines[0].includes(variable), lines[0])
      assert.match(lines[0], /the app runs unprofiled/)
    }
  }
})

test('without any variable, or with JSPROF_ENABLED=false or OTEL_SDK_DISABLED=true, the register does nothing and says nothing', () => {
  for (const vars of [
    {},
    { JSPROF_DEBUG: '1', JSPROF_NO_PROGRESS: '1' },
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', JSPROF_ENABLED: 'false' },
    { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_SDK_DISABLED: 'true' },
  ]) {
    const r = spawnSync(
      process.execPath,
      [
        '--require',
        'jsprof-node/register',
        '-e',
        "console.log(Object.keys(require.cache).some((f) => f.endsWith('continuous.js')))",
      ],
      { cwd: root, env: envWith(vars), encoding: 'utf8' },
    )
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stderr, '')
    assert.equal(r.stdout.trim(), 'false', `${JSON.stringify(vars)}: continuous profiling was loaded`)
  }
})

// ---- The configuration's rules ------------------------------------------------------------------

test('OTLP endpoints as the specification builds them: the generic one a base for the signal path, the per-signal one as it is', () => {
  const url = (env) => readConfiguration(env).otlp.url
  assert.equal(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), 'http://c:4318/v1development/profiles')
  assert.equal(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }), 'http://c:4318/v1development/profiles')
  assert.equal(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/my/' }), 'http://c:4318/my/v1development/profiles')
  assert.equal(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c/my' }), 'https://c/my/v1development/profiles')
  // The per-signal one wins and is used as is: a bare address is its root path (the spec's example 2).
  const both = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: 'http://p:4318' }
  assert.equal(url(both), 'http://p:4318/')
  assert.equal(url({ OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: 'https://p/v1/x' }), 'https://p/v1/x')
  assert.equal(readConfiguration(both).otlp.exactUrl, true)
  // Blank is unset, as the SDKs read it.
  assert.equal(
    url({ OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT: '  ', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }),
    'http://c/v1development/profiles',
  )
})

test('the otlpExporter sends to the per-signal URL exactly, a bare root path included', async () => {
  const otlp = await collector()
  try {
    const { otlpExporter } = require('../lib/api/backend/index.js')
    const exporter = otlpExporter({ url: otlp.url, exactUrl: true })
    exporter.push({
      startUnixMs: 0,
      endUnixMs: 1,
      sampleInterval: 10,
      trace: { resources: [], frames: [], stacks: [], samples: [] },
    })
    await exporter.close()
    assert.deepEqual(
      otlp.requests.map((r) => r.url),
      ['/'],
    )
  } finally {
    await otlp.close()
  }
})

test('OTLP headers and resource attributes: key=value lists, percent-decoded, the per-signal headers winning key by key', () => {
  const c = readConfiguration({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
    OTEL_EXPORTER_OTLP_HEADERS: ' Authorization=Basic dXNlcjpw== , X-A=1,,x-b=a%3Db%2Cc ',
    OTEL_EXPORTER_OTLP_PROFILES_HEADERS: 'x-a=2',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs,k8s.pod.name=pod%201,empty=',
  })
  assert.deepEqual(c.otlp.headers, { authorization: 'Basic dXNlcjpw==', 'x-a': '2', 'x-b': 'a=b,c' })
  assert.deepEqual(c.otlp.resource, { 'service.name': 'from-attrs', 'k8s.pod.name': 'pod 1', empty: '' })
  // OTEL_SERVICE_NAME wins over the resource attribute.
  const named = readConfiguration({
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
    OTEL_SERVICE_NAME: 'svc',
    OTEL_RESOURCE_ATTRIBUTES: 'service.name=x',
  })
  assert.equal(named.otlp.resource['service.name'], 'svc')
  const bad = (env, re) =>
    assert.throws(() => readConfiguration({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', ...env }), re)
  bad(
    { OTEL_EXPORTER_OTLP_HEADERS: 'novalue' },
    /^TypeError: jsprof-node\/register: OTEL_EXPORTER_OTLP_HEADERS must be a list of key=value pairs/,
  )
  bad({ OTEL_EXPORTER_OTLP_HEADERS: '=v' }, /OTEL_EXPORTER_OTLP_HEADERS must be a list/)
  bad(
    { OTEL_EXPORTER_OTLP_PROFILES_HEADERS: 'a=%E0%A4%A' },
    /OTEL_EXPORTER_OTLP_PROFILES_HEADERS has an entry that is not valid percent-encoding/,
  )
  bad({ OTEL_EXPORTER_OTLP_HEADERS: 'bad name=1' }, /OTEL_EXPORTER_OTLP_HEADERS has an invalid header name "bad name"/)
  bad(
    { OTEL_EXPORTER_OTLP_HEADERS: 'x=a%0Ab' },
    /OTEL_EXPORTER_OTLP_HEADERS\["x"\] has a character a header value cannot hold/,
  )
  bad({ OTEL_EXPORTER_OTLP_HEADERS: 'content-length=1' }, /OTEL_EXPORTER_OTLP_HEADERS must not set content-length/)
  bad({ OTEL_RESOURCE_ATTRIBUTES: 'a=b=c' }, /OTEL_RESOURCE_ATTRIBUTES must be a list of key=value pairs/)
  bad(
    { OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' },
    /^RangeError: .*OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL is "http\/json"/,
  )
  // The per-signal protocol wins over the generic one.
  assert.ok(
    readConfiguration({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL: 'http/protobuf',
    }).otlp,
  )
  bad({ OTEL_SDK_DISABLED: 'yes' }, /OTEL_SDK_DISABLED must be true or false/)
  assert.equal(readConfiguration({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_SDK_DISABLED: 'True' }), null)
  assert.ok(readConfiguration({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_SDK_DISABLED: 'false' }).otlp)
  // A password in an endpoint never shows in a message.
  assert.throws(
    () => readConfiguration({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://u:secret@c' }),
    (err) => /OTEL_EXPORTER_OTLP_ENDPOINT must be http: or https:/.test(err.message) && !err.message.includes('secret'),
  )
})

test("Pyroscope's variables: address, application name (else OTEL_SERVICE_NAME, else a default), token, basic auth, tenant", () => {
  const p = (env) => readConfiguration({ PYROSCOPE_SERVER_ADDRESS: 'http://p:4040', ...env }).pyroscope
  assert.deepEqual(p({}), {
    url: 'http://p:4040/',
    appName: DEFAULT_APP_NAME,
    headers: {},
    from: 'PYROSCOPE_SERVER_ADDRESS',
  })
  assert.equal(p({ OTEL_SERVICE_NAME: 'svc' }).appName, 'svc')
  assert.equal(p({ OTEL_SERVICE_NAME: 'svc', PYROSCOPE_APPLICATION_NAME: 'app' }).appName, 'app')
  const basic = p({ PYROSCOPE_BASIC_AUTH_USER: 'u@x', PYROSCOPE_BASIC_AUTH_PASSWORD: 'p:w%' })
  assert.equal(basic.url, 'http://u%40x:p%3Aw%25@p:4040/')
  // A token goes as @pyroscope/nodejs sends it, and before basic auth.
  const token = p({ PYROSCOPE_AUTH_TOKEN: 'glc_x', PYROSCOPE_BASIC_AUTH_USER: 'u', PYROSCOPE_TENANT_ID: 't' })
  assert.deepEqual(token.headers, { authorization: 'Bearer glc_x', 'x-scope-orgid': 't' })
  assert.equal(token.url, 'http://p:4040/')
  assert.throws(() => p({ PYROSCOPE_TENANT_ID: 'a\u0001b' }), /PYROSCOPE_TENANT_ID/)
  assert.throws(
    () => readConfiguration({ PYROSCOPE_SERVER_ADDRESS: '/ingest' }),
    /PYROSCOPE_SERVER_ADDRESS must be an absolute http\(s\) URL/,
  )
})

test("JSPROF_* settings are checked by the very rule of the option they set: the same message, the variable's name", async () => {
  const { startContinuous } = require('../index.js')
  const { watchStalls } = require('../index.js')
  const dest = { PYROSCOPE_SERVER_ADDRESS: 'http://p:4040' }
  const pairs = [
    ['JSPROF_CHUNK_SECONDS', '0', () => startContinuous({ onChunk() {}, chunkSeconds: '0' })],
    ['JSPROF_SAMPLE_INTERVAL_MS', 'fast', () => startContinuous({ onChunk() {}, sampleInterval: 'fast' })],
    ['JSPROF_STALL_THRESHOLD_MS', '5', () => watchStalls({ onStall() {}, thresholdMs: '5' })],
  ]
  for (const [variable, value, api] of pairs) {
    let apiError
    try {
      api()
    } catch (err) {
      apiError = err
    }
    assert.ok(apiError, `${variable}: the API refuses ${value}`)
    assert.throws(
      () => readConfiguration({ ...dest, [variable]: value }),
      (err) =>
        err.constructor === apiError.constructor &&
        err.message === `jsprof-node/register: ${variable} ${apiError.message.replace(/^[^:]+: options\.\w+ /, '')}`,
    )
  }
  assert.throws(
    () => readConfiguration({ ...dest, JSPROF_STALLS: 'on' }),
    /^TypeError: .*JSPROF_STALLS must be true, false, 1 or 0, got "on"/,
  )
  assert.throws(
    () => readConfiguration({ ...dest, JSPROF_EXIT_TIMEOUT_MS: '-1' }),
    /^RangeError: .*JSPROF_EXIT_TIMEOUT_MS must be a number of ms in \[0, 60000\]/,
  )
  // A misspelt variable is named with the one it misspells; other tools' JSPROF_ variables are left alone.
  assert.throws(
    () => readConfiguration({ ...dest, JSPROF_WORKER: 'true' }),
    /unknown variable JSPROF_WORKER \(did you mean JSPROF_WORKERS\?\)/,
  )
  for (const other of [
    'JSPROF_RECORD',
    'JSPROF_DEBUG',
    'JSPROF_NO_PROGRESS',
    'JSPROF_ATTACH_CLOSE_DEADLINE_MS',
    'JSPROF_CHROMIUM',
  ]) {
    assert.ok(readConfiguration({ ...dest, [other]: '1' }))
  }
  const c = readConfiguration({
    ...dest,
    JSPROF_HEAP: 'TRUE',
    JSPROF_WORKERS: '1',
    JSPROF_STALLS: '0',
    JSPROF_CHUNK_SECONDS: ' 15 ',
  })
  assert.equal(c.settings.JSPROF_HEAP, true)
  assert.equal(c.settings.JSPROF_WORKERS, true)
  assert.equal(c.settings.JSPROF_STALLS, false)
  assert.equal(c.settings.JSPROF_CHUNK_SECONDS, 15)
  assert.equal(c.settings.JSPROF_SAMPLE_INTERVAL_MS, undefined, "unset: startContinuous's own default")
})

test('docs/production.md has the one table of the variables: every setting, with the default the code has', () => {
  const { DEFAULTS: continuous } = require('../lib/api/continuous.js')
  const { DEFAULTS: stalls } = require('../lib/api/stalls.js')
  const text = fs.readFileSync(path.join(root, 'docs', 'production.md'), 'utf8')
  const rows = new Map()
  for (const m of text.matchAll(/^\| `(JSPROF_[A-Z_]+)` \| `([^`]*)` \|/gm)) rows.set(m[1], m[2])
  const expected = {
    ...Object.fromEntries(Object.entries(DEFAULTS).map(([k, v]) => [k, String(v)])),
    JSPROF_SAMPLE_INTERVAL_MS: String(continuous.sampleInterval),
    JSPROF_CHUNK_SECONDS: String(continuous.chunkSeconds),
    JSPROF_STALL_THRESHOLD_MS: String(stalls.thresholdMs),
  }
  assert.deepEqual(Object.keys(expected).sort(), Object.keys(settings()).sort())
  assert.deepEqual(Object.fromEntries([...rows].sort()), Object.fromEntries(Object.entries(expected).sort()))
  for (const name of [
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT',
    'OTEL_EXPORTER_OTLP_HEADERS',
    'OTEL_EXPORTER_OTLP_PROFILES_HEADERS',
    'OTEL_SERVICE_NAME',
    'OTEL_RESOURCE_ATTRIBUTES',
    'OTEL_SDK_DISABLED',
    'PYROSCOPE_SERVER_ADDRESS',
    'PYROSCOPE_APPLICATION_NAME',
    'PYROSCOPE_AUTH_TOKEN',
    'PYROSCOPE_BASIC_AUTH_USER',
    'PYROSCOPE_BASIC_AUTH_PASSWORD',
    'PYROSCOPE_TENANT_ID',
  ]) {
    assert.ok(new RegExp(`^\\|[^|\\n]*\`${name}\`[^|\\n]*\\|`, 'm').test(text), `${name} in the table`)
  }
})

// ---- What the register added to the API it uses -------------------------------------------------

test('startContinuous().stopSync() cuts the last chunk with no turn of the event loop, and onChunk is not called', async () => {
  const { startContinuous } = require('../index.js')
  const delivered = []
  const handle = startContinuous({ sampleInterval: 1, chunkSeconds: 3600, onChunk: (c) => delivered.push(c) })
  function cutSyncWork() {
    const end = performance.now() + 150
    let x = 0
    while (performance.now() < end) x += Math.sqrt(x + 1)
    return x
  }
  cutSyncWork()
  const chunk = handle.stopSync()
  assert.ok(chunk, 'a chunk')
  assert.equal(chunk.index, 0)
  assert.ok(chunk.endUnixMs >= chunk.startUnixMs && chunk.endTime > chunk.startTime)
  assert.ok(
    chunk.trace.frames.some((f) => f.name === 'cutSyncWork'),
    'the work before the cut',
  )
  assert.equal(chunk.trace.jsprof.sampleInterval, 1)
  assert.equal(handle.stopSync(), null, 'once')
  await handle.stop()
  assert.equal(delivered.length, 0)
  assert.equal(handle.stats.chunks, 1)
})

test("an exporter's requestsFor(chunk) builds what push(chunk) sends, heap profile included, without queueing it", async () => {
  const { pyroscopeExporter, otlpExporter } = require('../lib/api/backend/index.js')
  const trace = {
    resources: [],
    frames: [{ name: 'f' }],
    stacks: [{ frameId: 0 }],
    samples: [{ timestamp: 1, stackId: 0 }],
  }
  const hp = new (require('../index.js').HeapProfiler)({ samplingInterval: 1024 })
  const kept = Array.from({ length: 2000 }, (_, i) => ({ i, s: 'x'.repeat(64) }))
  const heap = await hp.stop()
  assert.ok(kept.length > 0 && heap.samples.length > 0)
  const chunk = { startUnixMs: 1_700_000_000_000, endUnixMs: 1_700_000_010_000, sampleInterval: 10, trace, heap }
  const pyro = pyroscopeExporter({
    url: 'http://u:p%40ss@127.0.0.1:9/',
    appName: 'app',
    headers: { 'x-scope-orgid': 't' },
  })
  const requests = pyro.requestsFor(chunk)
  assert.equal(requests.length, 2)
  assert.equal(requests[0].url.pathname, '/ingest')
  assert.equal(requests[0].url.searchParams.get('name'), 'app')
  assert.equal(requests[0].url.searchParams.get('from'), '1700000000')
  assert.equal(requests[0].url.username, '')
  assert.deepEqual(requests[0].credentials, { user: 'u', password: 'p@ss' })
  assert.equal(requests[0].headers['x-scope-orgid'], 't')
  assert.ok(decodePprofSamples(Buffer.from(requests[0].body)).some((s) => s.names.includes('f')))
  assert.ok(decodePprofSamples(Buffer.from(requests[1].body)).length > 0, 'the heap profile')
  assert.equal(pyro.stats.pushed, 0)
  assert.equal(pyro.stats.queued, 0)
  const otlp = otlpExporter({ url: 'http://127.0.0.1:9', heap: false })
  const [one, ...rest] = otlp.requestsFor(chunk)
  assert.equal(rest.length, 0, 'heap: false')
  assert.equal(one.url.href, 'http://127.0.0.1:9/v1development/profiles')
  assert.equal(one.headers['content-type'], 'application/x-protobuf')
  await pyro.close()
  await otlp.close()
})

test('close({ timeoutMs }) bounds the wait for a backend that never answers, whatever the push deadline', async () => {
  const silent = await collector({ answer: false })
  try {
    const { otlpExporter } = require('../lib/api/backend/index.js')
    const exporter = otlpExporter({ url: silent.url, timeoutMs: 60_000 })
    exporter.push({
      startUnixMs: 0,
      endUnixMs: 1,
      sampleInterval: 10,
      trace: { resources: [], frames: [], stacks: [], samples: [] },
    })
    while (silent.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    const started = Date.now()
    await exporter.close({ timeoutMs: 100 })
    assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`)
    assert.equal(exporter.stats.sent, 0)
    await assert.rejects(exporter.close({ timeoutMs: -1 }), RangeError)
  } finally {
    await silent.close()
  }
})

test("stop() called twice (the app's and 'beforeExit''s): the second resolves only once the last chunk was delivered", async () => {
  const { startContinuous } = require('../index.js')
  const delivered = []
  // With a stall watcher, stop() first waits for the watcher's stop: the window the second call fell into.
  const handle = startContinuous({
    sampleInterval: 1,
    chunkSeconds: 3600,
    stalls: {},
    onChunk: (c) => delivered.push(c),
  })
  await new Promise((resolve) => setTimeout(resolve, 50))
  const first = handle.stop()
  await handle.stop()
  assert.equal(delivered.length, 1, 'the last chunk, before the second stop() resolved')
  await first
})
