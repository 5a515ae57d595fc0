// Hostile backends (issue 16): a push target is someone else's server. It may drip one byte a second,
// never answer, reset, send a huge body or say 429; the exporter must neither hang a push nor keep
// the process alive past close(), must count every failure, and must never show the password.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { pyroscopeExporter, otlpExporter } from 'jsprof-node'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

const chunk = (i = 0) => ({
  index: i,
  startUnixMs: 1_700_000_000_000,
  endUnixMs: 1_700_000_010_000,
  sampleInterval: 10,
  trace: { resources: [], frames: [{ name: 'f' }], stacks: [{ frameId: 0 }], samples: [{ timestamp: 1, stackId: 0 }] },
})
const encode = () => Buffer.from('pprof')

/** A server on 127.0.0.1 whose handler misbehaves; `hits` counts requests, `sockets` stay tracked. */
async function server(handler) {
  const state = { hits: 0, sockets: new Set() }
  const s = http.createServer((req, res) => {
    state.hits++
    req.resume()
    req.on('end', () => handler(req, res, state))
  })
  s.on('connection', (socket) => {
    state.sockets.add(socket)
    socket.on('close', () => state.sockets.delete(socket))
  })
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${s.address().port}`
  state.close = () => {
    for (const socket of state.sockets) socket.destroy()
    return new Promise((resolve) => s.close(resolve))
  }
  return state
}

const drip = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' })
  const timer = setInterval(() => res.write('.'), 200)
  res.on('close', () => clearInterval(timer))
}

/** Runs `script` in a child and resolves with how long after close() it exited (or kills it at 20 s). */
function exitTime(script, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const kill = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.on('exit', (code, signal) => {
      clearTimeout(kill)
      resolve({ code, signal, out, err })
    })
  })
}

// Each exporter the same way: they share the push machinery and the transport.
const EXPORTERS = [
  {
    name: 'pyroscope',
    factory: 'pyroscopeExporter',
    extra: "appName: 'a',",
    who: 'pyroscope ingest',
    make: (o) => pyroscopeExporter({ appName: 'a', ...o }),
  },
  { name: 'otlp', factory: 'otlpExporter', extra: '', who: 'OTLP endpoint', make: (o) => otlpExporter(o) },
]

for (const E of EXPORTERS) {
  test(`${E.name}: a backend that answers 200 and then drips: each push ends at the deadline, counted, the next ones still go`, async () => {
    const srv = await server(drip)
    try {
      const exporter = E.make({ url: srv.url, encode, timeoutMs: 500, maxRetries: 0 })
      const started = Date.now()
      exporter.push(chunk(0))
      exporter.push(chunk(1))
      await exporter.flush()
      const took = Date.now() - started
      assert.equal(srv.hits, 2, 'the second push was sent, not dropped')
      assert.equal(exporter.stats.failed, 2)
      assert.equal(exporter.stats.errors, 2)
      assert.match(exporter.lastError.message, /no complete answer from http:\/\/127\.0\.0\.1:\d+ within 500 ms/)
      assert.ok(took < 30_000)
    } finally {
      await srv.close()
    }
  })

  test(`${E.name}: a backend that resets connections: every push fails, counted, retried, and the exporter goes on`, async () => {
    const srv = await server((req) => req.socket.destroy())
    try {
      const exporter = E.make({ url: srv.url, encode, retryBaseMs: 1, maxRetries: 1 })
      exporter.push(chunk(0))
      exporter.push(chunk(1))
      await exporter.flush()
      assert.equal(srv.hits, 4, 'two pushes, one retry each')
      assert.deepEqual([exporter.stats.failed, exporter.stats.retries, exporter.stats.errors], [2, 2, 4])
      assert.match(exporter.lastError.message, new RegExp(`^${E.who}: socket hang up|ECONNRESET`))
    } finally {
      await srv.close()
    }
  })

  test(`${E.name}: a huge response body is not read to its end`, async () => {
    let written = 0
    const srv = await server((req, res) => {
      res.writeHead(500)
      const chunk = Buffer.alloc(1 << 20, 120)
      const more = () => {
        while (written < 2 ** 31) {
          written += chunk.length
          if (!res.write(chunk)) return res.once('drain', more)
        }
        res.end()
      }
      res.on('close', () => (written = Infinity))
      more()
    })
    try {
      const exporter = E.make({ url: srv.url, encode, timeoutMs: 20_000, maxRetries: 0 })
      exporter.push(chunk())
      await exporter.flush()
      assert.equal(exporter.stats.failed, 1)
      assert.match(exporter.lastError.message, new RegExp(`^${E.who} answered 500: x{20}`))
      assert.ok(exporter.lastError.message.length < 300)
    } finally {
      await srv.close()
    }
  })

  test(`${E.name}: 429 with Retry-After waits as asked before the retry; every attempt counted with lastError`, async () => {
    const times = []
    const srv = await server((req, res, state) => {
      times.push(Date.now())
      if (state.hits === 1) {
        res.writeHead(429, { 'retry-after': '1' })
        return res.end('slow down')
      }
      res.writeHead(200)
      res.end()
    })
    try {
      const exporter = E.make({ url: srv.url, encode, retryBaseMs: 1, maxRetries: 2 })
      exporter.push(chunk())
      await exporter.flush()
      assert.equal(exporter.stats.sent, 1)
      assert.equal(exporter.stats.errors, 1)
      assert.match(exporter.lastError.message, /answered 429: slow down/)
      assert.ok(times[1] - times[0] >= 990, `retried after ${times[1] - times[0]} ms`)
    } finally {
      await srv.close()
    }
  })

  test(`${E.name}: connections are kept alive between pushes`, async () => {
    const srv = await server((req, res) => {
      res.writeHead(200)
      res.end()
    })
    let connections = 0
    try {
      const exporter = E.make({ url: srv.url, encode })
      for (let i = 0; i < 5; i++) {
        exporter.push(chunk(i))
        await exporter.flush()
        connections = Math.max(connections, srv.sockets.size)
      }
      assert.equal(exporter.stats.sent, 5)
      assert.equal(connections, 1)
      await exporter.close()
    } finally {
      await srv.close()
    }
  })

  test(`${E.name}: the password is in no message, constructor checks included; undecodable credentials are refused`, async () => {
    for (const url of ['http://user:secret@host:99999', 'http://user:secret@', 'ftp://user:secret@host/']) {
      assert.throws(
        () => E.make({ url }),
        (err) => err instanceof TypeError && !err.message.includes('secret'),
        url,
      )
    }
    assert.throws(
      () => E.make({ url: 'http://user:sec%zzret@127.0.0.1:1' }),
      (err) =>
        err instanceof TypeError && /not valid percent-encoding/.test(err.message) && !err.message.includes('sec'),
    )
    const srv = await server((req, res) => {
      res.writeHead(401)
      res.end(req.headers.authorization)
    })
    try {
      const exporter = E.make({ url: srv.url.replace('//', '//u%40x:p%3Aw@'), encode, maxRetries: 0 })
      exporter.push(chunk())
      await exporter.flush()
      // Decoded once: the server got u@x:p:w.
      assert.equal(
        exporter.lastError.message,
        `${E.who} answered 401: Basic ${Buffer.from('u@x:p:w').toString('base64')}`,
      )
      const dead = E.make({ url: 'http://u:topsecret@127.0.0.1:1/', encode, maxRetries: 0 })
      dead.push(chunk())
      await dead.flush()
      assert.ok(dead.lastError)
      assert.ok(!dead.lastError.message.includes('topsecret'), dead.lastError.message)
    } finally {
      await srv.close()
    }
  })

  for (const [kind, handler] of [
    ['drips', drip],
    ['never answers', () => {}],
  ]) {
    test(`${E.name}: a backend that ${kind}: close() lets the process exit within timeoutMs`, async () => {
      const srv = await server(handler)
      try {
        const r = await exitTime(
          `const jsprof = require(${JSON.stringify(root)})
           const e = jsprof.${E.factory}({ url: process.env.URL, ${E.extra} encode: () => Buffer.from('x'), timeoutMs: 3000, maxRetries: 5, retryBaseMs: 100 })
           e.push({ startUnixMs: 0, endUnixMs: 1000, sampleInterval: 10, trace: {} })
           setTimeout(() => { globalThis.closedAt = Date.now(); e.close().then(() => console.log('closed')) }, 300)
           process.on('exit', () => console.log('exit ' + (Date.now() - globalThis.closedAt)))`,
          { URL: srv.url },
        )
        assert.equal(r.signal, null, `killed: the process did not exit (${r.err})`)
        const exitMs = Number(/exit (\d+)/.exec(r.out)?.[1])
        // close() waits up to timeoutMs (3 s) for the queue to drain, then aborts the push and the
        // retries: the process ends within timeoutMs of close(), whatever the backend does.
        assert.match(r.out, /closed/)
        assert.ok(exitMs < 3000 + 1500, r.out)
      } finally {
        await srv.close()
      }
    })
  }
}

test('startContinuous hands its last partial chunk to onChunk when the app ends by itself', async () => {
  const srv = await server((req, res) => {
    res.writeHead(200)
    res.end()
  })
  try {
    const r = await exitTime(
      `const { startContinuous, pyroscopeExporter } = require(${JSON.stringify(root)})
       const e = pyroscopeExporter({ url: process.env.URL, appName: 'a', timeoutMs: 5000 })
       const chunks = []
       startContinuous({ sampleInterval: 1, chunkSeconds: 3600, onChunk: (c) => { chunks.push(c); e.push(c) } })
       const t = Date.now(); let x = 0; while (Date.now() - t < 300) x += Math.sqrt(x + 1)
       process.on('exit', () => console.log(JSON.stringify({ chunks: chunks.length, samples: chunks[0] && chunks[0].trace.samples.length, sent: e.stats.sent })))`,
      { URL: srv.url },
    )
    assert.equal(r.code, 0, r.err)
    const got = JSON.parse(r.out.trim().split('\n').pop())
    assert.equal(got.chunks, 1, 'the partial chunk was delivered')
    assert.ok(got.samples > 0)
    assert.equal(got.sent, 1, 'and the exporter sent it before the process exited')
    assert.equal(srv.hits, 1)
  } finally {
    await srv.close()
  }
})
