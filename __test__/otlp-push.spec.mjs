// otlpExporter (issue 13): continuous chunks pushed as OTLP/HTTP profiles to a local endpoint, the
// OTLP answers (retryable or final, partial success), and the proxy settings of the environment (an
// http proxy in absolute form, an https target through a CONNECT tunnel, NO_PROXY). The hostile-backend
// cases (drips, resets, huge bodies, Retry-After, keep-alive, passwords, close() and exit) run for both
// exporters in backend-hostile.spec.mjs.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { otlpExporter, startContinuous } from 'jsprof-node'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const VENV = path.join(root, '.cache', 'otlp-venv', 'bin', 'python')
const PYTHON = process.env.PYTHON || (fs.existsSync(VENV) ? VENV : 'python3')
const hasDecoder =
  spawnSync(PYTHON, ['-c', 'import opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2'])
    .status === 0

const chunk = (i = 0) => ({
  index: i,
  startUnixMs: 1_700_000_000_000,
  endUnixMs: 1_700_000_010_000,
  sampleInterval: 10,
  trace: { resources: [], frames: [{ name: 'f' }], stacks: [{ frameId: 0 }], samples: [{ timestamp: 1, stackId: 0 }] },
})

/** An OTLP endpoint on 127.0.0.1: records each request; `answer(req, state)` gives [status, body]. */
async function endpoint(answer = () => [200, '']) {
  const state = { requests: [] }
  const server = http.createServer((req, res) => {
    const parts = []
    req.on('data', (d) => parts.push(d))
    req.on('end', () => {
      state.requests.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(parts) })
      const [status, body, headers] = answer(req, state)
      res.writeHead(status, headers)
      res.end(body)
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${server.address().port}`
  state.close = () => {
    server.closeAllConnections?.()
    return new Promise((resolve) => server.close(resolve))
  }
  return state
}

function decode(body) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-otlp-push-'))
  try {
    fs.writeFileSync(path.join(dir, 'b.pb'), body)
    const r = spawnSync(
      PYTHON,
      [
        '-c',
        `import sys, json
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
r = ExportProfilesServiceRequest(); r.ParseFromString(open(sys.argv[1], 'rb').read())
p = r.resource_profiles[0].scope_profiles[0].profiles[0]
times = [t for s in p.samples for t in s.timestamps_unix_nano]
print(json.dumps({'service': [kv.value.string_value for kv in r.resource_profiles[0].resource.attributes if kv.key == 'service.name'][0],
  'samples': sum(len(s.timestamps_unix_nano) for s in p.samples), 'names': sorted(set(r.dictionary.string_table)),
  'timeMs': p.time_unix_nano / 1e6, 'firstMs': min(times) / 1e6 if times else None, 'lastMs': max(times) / 1e6 if times else None}))`,
        path.join(dir, 'b.pb'),
      ],
      { encoding: 'utf8' },
    )
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

test('continuous chunks arrive as OTLP/HTTP protobuf at /v1development/profiles, decodable by the official classes', async (t) => {
  const srv = await endpoint()
  try {
    const exporter = otlpExporter({
      url: srv.url,
      serviceName: 'checkout',
      resource: { 'deployment.environment.name': 'test' },
    })
    const chunks = []
    const profiler = startContinuous({
      sampleInterval: 1,
      chunkSeconds: 0.3,
      onChunk(chunk) {
        chunks.push(chunk)
        exporter.push(chunk)
      },
    })
    const t0 = Date.now()
    function otlpBusyWork() {
      let x = 0
      for (let i = 0; i < 2e5; i++) x += Math.sqrt(i)
      return x
    }
    while (Date.now() - t0 < 700) {
      otlpBusyWork()
      await new Promise((resolve) => setImmediate(resolve))
    }
    await profiler.stop()
    await exporter.flush()
    await exporter.close()
    assert.ok(srv.requests.length >= 2, `${srv.requests.length} pushes`)
    for (const r of srv.requests) {
      assert.equal(r.method, 'POST')
      assert.equal(r.url, '/v1development/profiles')
      assert.equal(r.headers['content-type'], 'application/x-protobuf')
    }
    assert.equal(exporter.stats.sent, srv.requests.length)
    if (!hasDecoder) return t.skip('the Python package opentelemetry-proto is not installed (.ci/run installs it)')
    const decoded = srv.requests.map((r) => decode(r.body))
    assert.ok(decoded.every((d) => d.service === 'checkout'))
    assert.ok(decoded.reduce((n, d) => n + d.samples, 0) > 0)
    // This file's code ran all along: some frame of it is in some chunk (by its file name, whatever
    // V8 inlined).
    assert.ok(
      decoded.some((d) => d.names.some((n) => n.endsWith('otlp-push.spec.mjs'))),
      'this file is in some chunk',
    )
    // Each push carries its time: its samples on the Unix clock, within the chunk they came in.
    for (const [i, d] of decoded.entries()) {
      if (d.samples === 0) continue
      const { startUnixMs: from, endUnixMs: until } = chunks[i]
      for (const ms of [d.timeMs, d.firstMs, d.lastMs]) {
        assert.ok(ms >= from - 50 && ms <= until + 50, `${ms} in [${from}, ${until}]`)
      }
    }
  } finally {
    await srv.close()
  }
})

test('OTLP answers: 503 is retried, 500 and 400 are final, a partial success is counted with its reason', async () => {
  // ExportProfilesServiceResponse { partial_success { rejected_profiles: 2, error_message: "too old" } }
  const message = Buffer.from('too old')
  const inner = Buffer.concat([Buffer.from([0x08, 0x02, 0x12, message.length]), message])
  const partial = Buffer.concat([Buffer.from([0x0a, inner.length]), inner])
  const plan = [
    [503, 'busy'],
    [200, partial],
    [500, 'bug'],
    [400, 'bad request'],
  ]
  const srv = await endpoint((req, state) => plan[state.requests.length - 1] ?? [200, ''])
  try {
    const exporter = otlpExporter({ url: `${srv.url}/custom/path`, retryBaseMs: 1, maxRetries: 3 })
    exporter.push(chunk(0))
    await exporter.flush()
    assert.equal(srv.requests[0].url, '/custom/path', 'a URL with a path is used as it is')
    assert.deepEqual([exporter.stats.sent, exporter.stats.retries, exporter.stats.rejected], [1, 1, 2])
    assert.match(exporter.lastError.message, /^OTLP endpoint rejected 2 profile\(s\): too old$/)
    exporter.push(chunk(1))
    exporter.push(chunk(2))
    await exporter.flush()
    assert.equal(srv.requests.length, 4, '500 and 400 are not retried')
    assert.deepEqual([exporter.stats.failed, exporter.stats.sent], [2, 1])
    assert.match(exporter.lastError.message, /^OTLP endpoint answered 400: bad request$/)
    await exporter.close()
  } finally {
    await srv.close()
  }
})

test('a partial success whose message goes past the 64 KiB read is still a partial success', async () => {
  // rejected_profiles: 5, error_message: 70,000 bytes (a varint length): the answer is read to 64 KiB.
  const message = Buffer.alloc(70_000, 'y')
  const varint = (n) => {
    const out = []
    while (n > 0x7f) {
      out.push((n & 0x7f) | 0x80)
      n >>>= 7
    }
    out.push(n)
    return Buffer.from(out)
  }
  const inner = Buffer.concat([Buffer.from([0x08, 0x05, 0x12]), varint(message.length), message])
  const body = Buffer.concat([Buffer.from([0x0a]), varint(inner.length), inner])
  const srv = await endpoint(() => [200, body])
  try {
    const exporter = otlpExporter({ url: srv.url, retryBaseMs: 1 })
    exporter.push(chunk(0))
    await exporter.flush()
    assert.deepEqual([exporter.stats.sent, exporter.stats.rejected], [1, 5])
    assert.match(exporter.lastError.message, /^OTLP endpoint rejected 5 profile\(s\): y{1000,}…$/)
    await exporter.close()
  } finally {
    await srv.close()
  }
})

test('bad options are TypeErrors at construction, not dropped chunks later', () => {
  for (const headers of [{ 'a b': 'x' }, { 'x-ok': 'a\r\nb' }, { 'content-length': '1' }, { x: { y: 1 } }]) {
    assert.throws(() => otlpExporter({ url: 'http://x', headers }), TypeError, JSON.stringify(headers))
  }
  assert.throws(() => otlpExporter({ url: 'http://x', headers: { 'a b': 'x' } }), /invalid header name "a b"/)
  assert.throws(() => otlpExporter({ url: 'ftp://x' }), TypeError)
  assert.throws(() => otlpExporter({ url: 'http://x', resource: { a: { nested: 1 } } }), /resource\["a"\]/)
  assert.throws(() => otlpExporter({ url: 'http://x', serviceName: '' }), TypeError)
  assert.throws(() => otlpExporter({ url: 'http://x', maxQueue: 0 }), RangeError)
})

/** An HTTP proxy on 127.0.0.1: absolute-form requests forwarded, CONNECT tunnels opened; all recorded. */
async function proxy() {
  const state = { seen: [] }
  const server = http.createServer((req, res) => {
    state.seen.push({ method: req.method, url: req.url, auth: req.headers['proxy-authorization'] })
    const target = new URL(req.url)
    const headers = { ...req.headers }
    delete headers['proxy-authorization']
    const out = http.request(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, method: req.method, headers },
      (answer) => {
        res.writeHead(answer.statusCode, answer.headers)
        answer.pipe(res)
      },
    )
    req.pipe(out)
  })
  server.on('connect', (req, socket, head) => {
    state.seen.push({ method: 'CONNECT', url: req.url, auth: req.headers['proxy-authorization'] })
    const [host, port] = req.url.split(':')
    const upstream = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      upstream.write(head)
      upstream.pipe(socket)
      socket.pipe(upstream)
    })
    upstream.on('error', () => socket.destroy())
    socket.on('error', () => upstream.destroy())
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${server.address().port}`
  state.close = () => {
    server.closeAllConnections?.()
    return new Promise((resolve) => server.close(resolve))
  }
  return state
}

/** Runs `fn` with proxy variables set (the transport reads them when the exporter is made). */
async function withEnv(vars, fn) {
  const saved = {}
  for (const name of ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY']) {
    saved[name] = process.env[name]
    delete process.env[name]
  }
  Object.assign(process.env, vars)
  try {
    return await fn()
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}

test('HTTP_PROXY: pushes go through the proxy (with its credentials, never in a message); NO_PROXY bypasses it', async () => {
  const srv = await endpoint()
  const px = await proxy()
  try {
    await withEnv({ HTTP_PROXY: px.url.replace('//', '//pu:p%40ss@') }, async () => {
      const exporter = otlpExporter({ url: srv.url })
      exporter.push(chunk())
      await exporter.flush()
      await exporter.close()
      assert.equal(exporter.stats.sent, 1, exporter.lastError?.message)
    })
    assert.equal(px.seen.length, 1)
    assert.equal(px.seen[0].url, `${srv.url}/v1development/profiles`, 'absolute form')
    assert.equal(px.seen[0].auth, `Basic ${Buffer.from('pu:p@ss').toString('base64')}`)
    assert.equal(srv.requests.length, 1)
    assert.equal(srv.requests[0].headers['proxy-authorization'], undefined)
    await withEnv({ HTTP_PROXY: px.url, NO_PROXY: 'localhost,127.0.0.1' }, async () => {
      const exporter = otlpExporter({ url: srv.url })
      exporter.push(chunk())
      await exporter.flush()
      await exporter.close()
      assert.equal(exporter.stats.sent, 1)
    })
    assert.equal(px.seen.length, 1, 'NO_PROXY: the proxy saw nothing more')
    assert.equal(srv.requests.length, 2)
    // A proxy that is down: counted and retried like a backend that is down, its password in no message.
    await withEnv({ HTTP_PROXY: 'http://pu:topsecret@127.0.0.1:1' }, async () => {
      const exporter = otlpExporter({ url: srv.url, maxRetries: 0 })
      exporter.push(chunk())
      await exporter.flush()
      await exporter.close()
      assert.equal(exporter.stats.failed, 1)
      assert.ok(!exporter.lastError.message.includes('topsecret'), exporter.lastError.message)
    })
    await withEnv({ HTTP_PROXY: 'http://u:topsecret@[not a url' }, async () => {
      const exporter = otlpExporter({ url: srv.url, maxRetries: 0 })
      exporter.push(chunk())
      await exporter.flush()
      assert.match(exporter.lastError.message, /not a proxy URL/)
      assert.ok(!exporter.lastError.message.includes('topsecret'))
    })
  } finally {
    await px.close()
    await srv.close()
  }
})

const hasOpenssl = spawnSync('openssl', ['version']).status === 0

test(
  'HTTPS_PROXY: an https target is reached through a CONNECT tunnel, TLS end to end',
  { skip: hasOpenssl ? false : 'openssl is not installed' },
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-tls-'))
    const key = path.join(dir, 'key.pem')
    const cert = path.join(dir, 'cert.pem')
    const made = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { encoding: 'utf8' },
    )
    assert.equal(made.status, 0, made.stderr)
    const got = []
    const server = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
      req.resume()
      req.on('end', () => {
        got.push({ url: req.url, auth: req.headers['proxy-authorization'], type: req.headers['content-type'] })
        res.writeHead(200)
        res.end()
      })
    })
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
    const px = await proxy()
    try {
      // A child process, so the test's own CA applies (NODE_EXTRA_CA_CERTS is read at start-up).
      const script = `const { otlpExporter } = require(${JSON.stringify(root)})
      const e = otlpExporter({ url: process.env.TARGET, maxRetries: 0 })
      e.push({ startUnixMs: 0, endUnixMs: 1000, sampleInterval: 10, trace: { resources: [], frames: [{ name: 'f' }], stacks: [{ frameId: 0 }], samples: [{ timestamp: 1, stackId: 0 }] } })
      e.flush().then(() => { console.log(JSON.stringify({ stats: e.stats, error: e.lastError && e.lastError.message })); return e.close() })`
      const child = spawn(process.execPath, ['-e', script], {
        env: {
          ...process.env,
          NODE_EXTRA_CA_CERTS: cert,
          TARGET: `https://localhost:${server.address().port}`,
          HTTPS_PROXY: px.url.replace('//', '//pu:pp@'),
          NO_PROXY: '',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      let err = ''
      child.stdout.on('data', (d) => (out += d))
      child.stderr.on('data', (d) => (err += d))
      const code = await new Promise((resolve) => child.on('exit', resolve))
      assert.equal(code, 0, err)
      const result = JSON.parse(out)
      assert.equal(result.stats.sent, 1, result.error)
      assert.deepEqual(px.seen, [
        {
          method: 'CONNECT',
          url: `localhost:${server.address().port}`,
          auth: `Basic ${Buffer.from('pu:pp').toString('base64')}`,
        },
      ])
      assert.deepEqual(got, [{ url: '/v1development/profiles', auth: undefined, type: 'application/x-protobuf' }])
    } finally {
      await px.close()
      server.closeAllConnections?.()
      await new Promise((resolve) => server.close(resolve))
      fs.rmSync(dir, { recursive: true, force: true })
    }
  },
)
