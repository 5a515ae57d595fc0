import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { startContinuous, pyroscopeExporter, otlpExporter } from 'jsprof-node'
import { burn, pprofEncoder, decodePprof } from './prod-helpers.mjs'

const { encode, name: encoderName } = pprofEncoder()

function backendWork(ms) {
  return burn(ms)
}

/** A local ingest endpoint: records each request (query + body), answers with `status(n)`. */
async function ingestServer(status = () => 200) {
  const received = []
  const server = http.createServer((req, res) => {
    const parts = []
    req.on('data', (d) => parts.push(d))
    req.on('end', () => {
      const url = new URL(req.url, 'http://x')
      received.push({
        method: req.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        body: Buffer.concat(parts),
      })
      res.statusCode = status(received.length)
      res.end()
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, received, url: `http://127.0.0.1:${server.address().port}` }
}

/** A port nothing listens on (bound then released). */
async function deadUrl() {
  const s = http.createServer()
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve))
  const { port } = s.address()
  await new Promise((resolve) => s.close(resolve))
  return `http://127.0.0.1:${port}`
}

const fakeChunk = (i = 0) => ({
  index: i,
  startUnixMs: 1_700_000_000_000 + i * 10_000,
  endUnixMs: 1_700_000_010_000 + i * 10_000,
  sampleInterval: 10,
  trace: {
    resources: ['file:///app.js'],
    frames: [{ name: 'handler', resourceId: 0, line: 3, column: 1 }],
    stacks: [{ frameId: 0 }],
    samples: [
      { timestamp: 1, stackId: 0, marker: 'script' },
      { timestamp: 11, stackId: 0, marker: 'script' },
    ],
  },
})

test(`continuous chunks arrive as pprof a real decoder reads (encoder: ${encoderName})`, async () => {
  const ingest = await ingestServer()
  const exporter = pyroscopeExporter({
    url: ingest.url,
    appName: 'shop.api',
    labels: { env: 'test', region: 'eu-1' },
    encode,
  })
  const handle = startContinuous({ sampleInterval: 2, chunkSeconds: 0.15, onChunk: exporter.push })
  const end = performance.now() + 500
  while (performance.now() < end) {
    backendWork(5)
    await new Promise((resolve) => setImmediate(resolve))
  }
  await handle.stop()
  await exporter.flush()
  ingest.server.close()
  assert.ok(ingest.received.length >= 3, `${ingest.received.length} pushes`)
  assert.equal(exporter.stats.sent, ingest.received.length)
  assert.equal(exporter.stats.dropped, 0)
  let total = 0
  for (const r of ingest.received) {
    assert.equal(r.method, 'POST')
    assert.equal(r.path, '/ingest')
    assert.equal(r.query.name, 'shop.api{env=test,region=eu-1}')
    assert.equal(r.query.format, 'pprof')
    assert.equal(r.query.spyName, 'nodespy')
    assert.equal(r.query.sampleRate, '500')
    assert.match(r.query.from, /^\d{10}$/)
    assert.ok(Number(r.query.until) > Number(r.query.from))
    const { profile, totals } = decodePprof(r.body)
    assert.ok(profile.sample.length >= 0)
    total += totals.get('backendWork') || 0
  }
  assert.ok(total > 0, 'backendWork is in the decoded profiles')
})

test('pushed pprof is timed on the wall clock of its chunk, where its from/until are, whatever the monotonic clock drifted', async () => {
  const ingest = await ingestServer()
  const exporter = pyroscopeExporter({ url: ingest.url, appName: 'shop.api' })
  let chunk
  const handle = startContinuous({
    sampleInterval: 2,
    chunkSeconds: 60,
    onChunk(c) {
      chunk = c
    },
  })
  const end = performance.now() + 150
  while (performance.now() < end) {
    backendWork(5)
    await new Promise((resolve) => setImmediate(resolve))
  }
  await handle.stop()
  assert.ok(chunk.trace.samples.length > 0)
  // As after days of uptime: the wall clock 10 s away from performance.timeOrigin + performance.now().
  const drifted = { ...chunk, startUnixMs: chunk.startUnixMs + 10_000, endUnixMs: chunk.endUnixMs + 10_000 }
  exporter.push(drifted)
  await exporter.flush()
  ingest.server.close()
  const [r] = ingest.received
  const { profile } = decodePprof(r.body)
  const first = chunk.trace.samples[0].timestamp
  const expected = drifted.startUnixMs + (first - chunk.startTime)
  assert.ok(
    Math.abs(Number(profile.timeNanos) / 1e6 - expected) < 1,
    `${Number(profile.timeNanos) / 1e6} vs ${expected}`,
  )
  assert.equal(Number(r.query.from), Math.floor(drifted.startUnixMs / 1000))
})

test("pushed pprof carries its time: go tool pprof shows the chunk's date, not 1970 (the default encoder)", async (t) => {
  const ingest = await ingestServer()
  const exporter = pyroscopeExporter({ url: ingest.url, appName: 'shop.api' })
  const chunks = []
  const handle = startContinuous({
    sampleInterval: 2,
    chunkSeconds: 0.15,
    onChunk(chunk) {
      chunks.push(chunk)
      exporter.push(chunk)
    },
  })
  const end = performance.now() + 400
  while (performance.now() < end) {
    backendWork(5)
    await new Promise((resolve) => setImmediate(resolve))
  }
  await handle.stop()
  await exporter.flush()
  ingest.server.close()
  assert.equal(ingest.received.length, chunks.length, `pushes: ${JSON.stringify(exporter.stats)}`)
  let withSamples
  for (const [i, r] of ingest.received.entries()) {
    const { profile } = decodePprof(r.body)
    if (profile.sample.length === 0) continue
    withSamples = r
    // The first sample's time on the Unix clock, within the chunk it came in (and the push's from/until).
    const ms = Number(profile.timeNanos) / 1e6
    assert.ok(
      ms >= chunks[i].startUnixMs - 50 && ms <= chunks[i].endUnixMs + 50,
      `${ms} in [${chunks[i].startUnixMs}, ${chunks[i].endUnixMs}]`,
    )
    assert.ok(
      ms / 1000 >= Number(r.query.from) - 1 && ms / 1000 <= Number(r.query.until),
      `${ms} in [${r.query.from}, ${r.query.until}] s`,
    )
  }
  assert.ok(withSamples, 'a chunk with samples')
  if (spawnSync('go', ['version']).status !== 0) return t.skip('go is not installed (.ci/run installs golang-go)')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-push-time-'))
  try {
    fs.writeFileSync(path.join(dir, 'pushed.pb.gz'), withSamples.body)
    const raw = spawnSync('go', ['tool', 'pprof', '-raw', 'pushed.pb.gz'], { cwd: dir, encoding: 'utf8' })
    assert.equal(raw.status, 0, raw.stderr)
    const year = new Date(chunks[0].startUnixMs).getUTCFullYear()
    assert.match(raw.stdout, new RegExp(`^Time: ${year}-`, 'm'), raw.stdout.slice(0, 300))
    assert.doesNotMatch(raw.stdout, /1970|epoch was not given/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('retries a 503 with backoff, then succeeds', async () => {
  const ingest = await ingestServer((n) => (n <= 2 ? 503 : 200))
  const exporter = pyroscopeExporter({
    url: `${ingest.url}/ingest`,
    appName: 'a',
    encode,
    retryBaseMs: 5,
    maxRetries: 3,
  })
  exporter.push(fakeChunk())
  await exporter.flush()
  ingest.server.close()
  assert.equal(ingest.received.length, 3)
  assert.deepEqual(
    { sent: exporter.stats.sent, retries: exporter.stats.retries, failed: exporter.stats.failed },
    { sent: 1, retries: 2, failed: 0 },
  )
  assert.equal(ingest.received[2].query.from, '1700000000')
  assert.equal(ingest.received[2].query.until, '1700000010')
  assert.equal(ingest.received[2].query.sampleRate, '100')
  assert.equal(decodePprof(ingest.received[2].body).totals.get('handler'), 2)
})

test('a 400 is not retried', async () => {
  const ingest = await ingestServer(() => 400)
  const exporter = pyroscopeExporter({ url: ingest.url, appName: 'a', encode, retryBaseMs: 1 })
  exporter.push(fakeChunk())
  await exporter.flush()
  ingest.server.close()
  assert.equal(ingest.received.length, 1)
  assert.equal(exporter.stats.failed, 1)
  assert.equal(exporter.stats.retries, 0)
})

for (const [name, make] of [
  ['pyroscope', (url) => pyroscopeExporter({ url, appName: 'a', encode, maxQueue: 4, maxRetries: 2, retryBaseMs: 2 })],
  // The OTLP exporter encodes real OTLP bodies here (no custom encode): memory stays bounded too.
  ['otlp', (url) => otlpExporter({ url, maxQueue: 4, maxRetries: 2, retryBaseMs: 2 })],
])
  test(`${name}: backend down: no crash, the queue stays bounded, drops and failures are counted`, async () => {
    const exporter = make(await deadUrl())
    let maxQueued = 0
    for (let i = 0; i < 200; i++) {
      exporter.push(fakeChunk(i))
      maxQueued = Math.max(maxQueued, exporter.stats.queued)
    }
    assert.ok(maxQueued <= 4, `queue held ${maxQueued}`)
    await exporter.flush()
    const { pushed, sent, failed, dropped, retries, queued } = exporter.stats
    assert.equal(pushed, 200)
    assert.equal(sent, 0)
    assert.equal(queued, 0)
    // Each chunk is either dropped from the full queue or failed after its retries.
    assert.equal(failed + dropped, 200)
    assert.ok(dropped >= 195, `dropped ${dropped}`)
    assert.equal(retries, failed * 2)
    assert.ok(exporter.lastError instanceof Error)
  })

test('the byte budget bounds the queue too; close() drops what is left', async () => {
  const exporter = pyroscopeExporter({
    url: await deadUrl(),
    appName: 'a',
    encode: () => Buffer.alloc(1000),
    maxQueueBytes: 3000,
    maxRetries: 100,
    retryBaseMs: 60_000,
    timeoutMs: 50,
  })
  for (let i = 0; i < 10; i++) exporter.push(fakeChunk(i))
  assert.ok(exporter.stats.queuedBytes <= 3000)
  // 3000 bytes hold 3 chunks (the 1st one left the queue to be sent): 10 - 1 - 3 dropped already.
  assert.equal(exporter.stats.dropped, 6)
  await exporter.close()
  assert.equal(exporter.stats.queued, 0)
  assert.equal(exporter.stats.sent, 0)
  // After close() the 4 left get one last try (no retries) or are dropped when time is up.
  assert.equal(exporter.stats.dropped + exporter.stats.failed, 10)
  const dropped = exporter.stats.dropped
  exporter.push(fakeChunk())
  assert.equal(exporter.stats.pushed, 11)
  assert.equal(exporter.stats.dropped, dropped + 1, 'a push after close() is dropped')
})

test('bad options throw TypeError/RangeError; a failing encoder is counted, not thrown', () => {
  assert.throws(() => pyroscopeExporter({ url: 'not a url', appName: 'a' }), TypeError)
  assert.throws(() => pyroscopeExporter({ url: 'ftp://x/', appName: 'a' }), TypeError)
  assert.throws(() => pyroscopeExporter({ url: 'http://x/', appName: '' }), TypeError)
  assert.throws(() => pyroscopeExporter({ url: 'http://x/', appName: 'a', labels: { 'bad name': 1 } }), TypeError)
  assert.throws(() => pyroscopeExporter({ url: 'http://x/', appName: 'a', labels: { ok: 'a,b' } }), TypeError)
  assert.throws(() => pyroscopeExporter({ url: 'http://x/', appName: 'a', maxQueue: 0 }), RangeError)
  const exporter = pyroscopeExporter({
    url: 'http://127.0.0.1:9/',
    appName: 'a',
    encode() {
      throw new Error('nope')
    },
  })
  exporter.push(fakeChunk())
  assert.equal(exporter.stats.encodeErrors, 1)
  assert.equal(exporter.stats.dropped, 1)
})

test("api: 'push' sends Pyroscope's push API (connect JSON): a series with its labels and the pprof", async () => {
  const ingest = await ingestServer()
  try {
    const exporter = pyroscopeExporter({
      url: `${ingest.url}/`,
      appName: 'shop.api',
      labels: { env: 'test' },
      api: 'push',
      encode,
    })
    exporter.push(fakeChunk(0))
    await exporter.flush()
    assert.equal(exporter.stats.sent, 1)
    const [r] = ingest.received
    assert.equal(r.path, '/push.v1.PusherService/Push')
    const body = JSON.parse(r.body.toString('utf8'))
    assert.deepEqual(body.series[0].labels, [
      { name: '__name__', value: 'process_cpu' },
      { name: 'service_name', value: 'shop.api' },
      { name: 'env', value: 'test' },
    ])
    const { totals } = decodePprof(Buffer.from(body.series[0].samples[0].rawProfile, 'base64'))
    assert.equal(totals.get('handler'), 2)
  } finally {
    ingest.server.close()
  }
})

test("api: 'auto' keeps the push API where the server has it, and falls back to /ingest (same chunk, no error) where not", async () => {
  const modern = await ingestServer()
  const legacy = await ingestServer((n) => (n === 1 ? 404 : 200))
  try {
    const a = pyroscopeExporter({ url: modern.url, appName: 'a', api: 'auto', encode })
    const b = pyroscopeExporter({ url: `${legacy.url}/ingest`, appName: 'a', api: 'auto', encode })
    for (const e of [a, b]) {
      e.push(fakeChunk(0))
      await e.flush()
      e.push(fakeChunk(1))
      await e.flush()
    }
    assert.deepEqual(
      modern.received.map((r) => r.path),
      ['/push.v1.PusherService/Push', '/push.v1.PusherService/Push'],
    )
    assert.equal(a.api, 'push')
    assert.deepEqual(
      legacy.received.map((r) => r.path),
      ['/push.v1.PusherService/Push', '/ingest', '/ingest'],
    )
    assert.equal(b.api, 'ingest')
    assert.deepEqual([b.stats.sent, b.stats.errors, b.stats.failed], [2, 0, 0])
    assert.throws(
      () => pyroscopeExporter({ url: modern.url, appName: 'a', api: 'grpc' }),
      /api must be one of 'ingest', 'push', 'auto'/,
    )
  } finally {
    modern.server.close()
    legacy.server.close()
  }
})

test('a stall trace (watchStalls: chunk.stall) goes labelled stall=true: /ingest, the push API, OTLP', async () => {
  const ingest = await ingestServer()
  const stall = { ...fakeChunk(1), stall: { durationMs: 1200, ended: true, start: 1, thresholdMs: 300 } }
  try {
    const legacy = pyroscopeExporter({ url: ingest.url, appName: 'shop.api', labels: { env: 'test' }, encode })
    legacy.push(fakeChunk(0))
    legacy.push(stall)
    await legacy.flush()
    assert.deepEqual(
      ingest.received.map((r) => r.query.name),
      ['shop.api{env=test}', 'shop.api{env=test,stall=true}'],
    )
    const push = pyroscopeExporter({ url: ingest.url, appName: 'shop.api', api: 'push', encode })
    push.push(stall)
    await push.flush()
    const body = JSON.parse(ingest.received[2].body.toString('utf8'))
    assert.deepEqual(body.series[0].labels.at(-1), { name: 'stall', value: 'true' })
    const otlp = otlpExporter({ url: ingest.url, serviceName: 'shop.api' })
    otlp.push(fakeChunk(0))
    otlp.push(stall)
    await otlp.flush()
    const [plain, stalled] = ingest.received.slice(3).map((r) => r.body.toString('latin1'))
    assert.ok(!plain.includes('stall'))
    assert.ok(stalled.includes('stall'), 'the OTLP profile carries the stall attribute')
  } finally {
    ingest.server.close()
  }
})
