// The steps of `jsprof attach` (lib/cli/attach/), each alone: the protocol client and its bounds,
// finding an inspector among a process's sockets, the recording's protocol, closing what it opened
// (and retrying when it reopens), writing the trace, the signals it keeps. The inspectors here are
// scripted in this process; cli-attach*.spec.mjs drive the whole command against real and fake
// processes.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { WebSocketServer } from 'ws'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const attachDir = path.join(root, 'lib', 'cli', 'attach')
const { BadReply, connect, evaluate, getJson } = require(path.join(attachDir, 'cdp.js'))
const target = require(path.join(attachDir, 'target.js'))
const { record } = require(path.join(attachDir, 'record.js'))
const { closeInspector, leftOpen } = require(path.join(attachDir, 'close.js'))
const { writeResult, MAX_READABLE_SAMPLES } = require(path.join(attachDir, 'write.js'))
const { interrupts } = require(path.join(attachDir, 'interrupts.js'))
const { CliError } = require(path.join(root, 'lib', 'cli', 'common.js'))
const { traceProblem, MAX_INPUT_BYTES } = require(path.join(root, 'lib', 'cli', 'input.js'))
const { TIME_ORIGIN_SOURCE } = require(path.join(root, 'lib', 'clock.js'))
const linux = process.platform === 'linux'
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-attach-parts-'))
const servers = new Set()
after(() => {
  for (const s of servers) s.close()
  fs.rmSync(tmp, { recursive: true, force: true })
})

/**
 * An inspector scripted in this process on 127.0.0.1: `/json/list` names a WebSocket elsewhere (only
 * its path may be used); each message goes to `answer(message, ws)`, whose return value (unless
 * undefined) is sent back as the result. `messages` holds what it was sent; `close()` stops it
 * listening and drops every connection, as the inspector does when the close expression runs.
 */
async function fakeInspector(answer = () => ({}), { list } = {}) {
  const messages = []
  const sockets = new Set()
  const wss = new WebSocketServer({ noServer: true })
  const server = http.createServer((req, res) => {
    res.end(list ?? JSON.stringify([{ webSocketDebuggerUrl: 'ws://elsewhere.invalid:1/the-target' }]))
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  server.on('upgrade', (req, socket, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data) => {
        const m = JSON.parse(data)
        messages.push(m)
        const result = answer(m, ws)
        if (result !== undefined) ws.send(JSON.stringify({ id: m.id, result }))
      })
    }),
  )
  servers.add(server)
  const listen = () => new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  await listen()
  const fake = {
    server,
    messages,
    port: server.address().port,
    get url() {
      return `ws://127.0.0.1:${fake.port}/the-target`
    },
    close() {
      for (const s of sockets) s.destroy()
      server.close()
    },
    /** Listens again (on the same port when it is free, as a reopened inspector does). */
    reopen: () => new Promise((resolve) => server.listen(fake.port, '127.0.0.1', resolve)),
  }
  return fake
}

const noInterrupts = { count: 0, pause: delay, next: () => new Promise(() => {}) }

describe('cdp.js: the protocol client and its bounds', () => {
  test('results, events, and the errors of a reply, each said as what it is', async () => {
    const fake = await fakeInspector((m, ws) => {
      if (m.method === 'A.ok') {
        ws.send(JSON.stringify({ method: 'A.event', params: { n: 1 } }))
        return { value: 7 }
      }
      if (m.method === 'A.error') return ws.send(JSON.stringify({ id: m.id, error: { message: 'boom' } }))
      if (m.method === 'A.nonsense') return 'nonsense'
      if (m.method === 'A.silent') return undefined
      if (m.method === 'Runtime.evaluate') return { result: {}, exceptionDetails: { text: 'Uncaught' } }
    })
    const events = []
    const cdp = await connect(fake.url, {
      maxPayload: 1 << 20,
      onEvent: (method, params) => events.push([method, params]),
    })
    assert.deepEqual(await cdp.send('A.ok'), { value: 7 })
    assert.deepEqual(events, [['A.event', { n: 1 }]])
    await assert.rejects(
      cdp.send('A.error'),
      (e) => e instanceof BadReply && /answered A\.error with the error "boom"/.test(e.message),
    )
    await assert.rejects(
      cdp.send('A.nonsense'),
      (e) => e instanceof BadReply && /answered A\.nonsense without a result/.test(e.message),
    )
    await assert.rejects(
      cdp.send('A.silent', {}, 100),
      (e) => e instanceof BadReply && /no answer to A\.silent within 0\.1 s/.test(e.message),
    )
    await assert.rejects(
      evaluate(cdp, '1'),
      (e) => e instanceof BadReply && /evaluating in the process failed: Uncaught/.test(e.message),
    )
    cdp.close()
    assert.match(await cdp.closed, /the connection closed/)
    await assert.rejects(cdp.send('A.ok'), /the connection ended before A\.ok/)
    fake.close()
  })

  test('a message beyond maxPayload, or not JSON, ends what is pending with the reason', async () => {
    const fake = await fakeInspector((m, ws) => {
      if (m.method === 'A.huge') return { big: 'x'.repeat(2 << 20) }
      if (m.method === 'A.garbage') return ws.send('{not json')
    })
    const cdp = await connect(fake.url, { maxPayload: 1 << 20 })
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = timers()
    await assert.rejects(cdp.send('A.garbage'), (e) => e instanceof BadReply && /not JSON/.test(e.message))
    // No reply timer is left behind to hold jsprof's exit for its 15 s.
    assert.equal(timers(), before)
    await assert.rejects(cdp.send('A.huge'), /the connection ended: it sent a message larger than 1 MiB/)
    assert.match(await cdp.closed, /larger than 1 MiB/)
    fake.close()
  })

  test('getJson: the value, or why not (not JSON, too large)', async () => {
    for (const [body, expected] of [
      ['[1,2]', [1, 2]],
      ['<html>', { problem: 'its answer is not JSON' }],
      [`"${'x'.repeat(1100 * 1024)}"`, { problem: 'its answer exceeds 1024 KiB' }],
    ]) {
      const fake = await fakeInspector(undefined, { list: body })
      assert.deepEqual(await getJson('127.0.0.1', fake.port, '/json/list'), expected)
      fake.close()
    }
  })
})

describe('target.js: the process and its inspector', () => {
  test("inspector options from a command line's words", () => {
    const o = target.parseInspectOptions
    assert.deepEqual(o(['node', 'app.js']), { port: 9229, open: false, sigusr1Disabled: false })
    assert.deepEqual(o(['node', '--inspect=0.0.0.0:1234', 'app.js']), {
      port: 1234,
      open: true,
      sigusr1Disabled: false,
    })
    assert.deepEqual(o(['node', '--inspect-port', '127.0.0.1:0']), { port: 0, open: false, sigusr1Disabled: false })
    assert.deepEqual(o(['node', '--inspect-brk', '--disable-sigusr1']), {
      port: 9229,
      open: true,
      sigusr1Disabled: true,
    })
    assert.equal(o(['node', '--inspect-port=99999']).port, 9229, 'no such port: the default')
    assert.equal(o(['node', '--debug-port=4000']).port, 4000)
  })

  test('listening: the sockets this process listens on, from /proc', { skip: !linux && 'Linux only' }, async () => {
    const before = target.listening(process.pid)
    const fake = await fakeInspector()
    const now = target.listening(process.pid)
    assert.deepEqual(
      now.filter((s) => !before.some((b) => b.port === s.port)),
      [{ address: '127.0.0.1', port: fake.port }],
    )
    fake.close()
    await delay(50)
    assert.deepEqual(target.listening(process.pid), before)
    assert.deepEqual(target.listening(2 ** 30), [], 'no such process: none')
  })

  test("findInspector: the checked socket's host and port, the list's path only; or why not", async () => {
    const fake = await fakeInspector()
    const found = await target.findInspector([{ address: '127.0.0.1', port: fake.port }])
    assert.deepEqual(found, { host: '127.0.0.1', port: fake.port, url: `ws://127.0.0.1:${fake.port}/the-target` })
    // 0.0.0.0 listens on loopback too: connected there.
    assert.equal((await target.findInspector([{ address: '0.0.0.0', port: fake.port }])).host, '127.0.0.1')
    fake.close()
    const none = await fakeInspector(undefined, { list: '[{"title":"no socket"}]' })
    const problems = []
    assert.equal(await target.findInspector([{ address: '127.0.0.1', port: none.port }], problems), null)
    assert.deepEqual(problems, [`127.0.0.1:${none.port}: its target list names no WebSocket`])
    none.close()
  })

  test(
    'checkPid: a process id of a Node.js process, else one line saying what it is',
    { skip: !linux && 'Linux only' },
    async () => {
      assert.throws(
        () => target.checkPid('12x'),
        (e) => e instanceof CliError && e.code === 2 && /must be a process id/.test(e.message),
      )
      assert.throws(() => target.checkPid(String(process.pid)), /is jsprof itself/)
      assert.throws(() => target.checkPid(String(2 ** 30)), /no such process/)
      const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' })
      try {
        await delay(100)
        assert.throws(() => target.checkPid(String(sleeper.pid)), /is not a Node\.js process \(sleep\)/)
      } finally {
        sleeper.kill()
      }
      const node = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' })
      try {
        await delay(100)
        assert.equal(target.checkPid(String(node.pid)), node.pid)
      } finally {
        node.kill()
      }
    },
  )
})

/** A V8 CPU profile of two samples in `work`. */
const PROFILE = {
  nodes: [
    {
      id: 1,
      callFrame: { functionName: '(root)', scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 },
      children: [2],
    },
    {
      id: 2,
      callFrame: { functionName: 'work', scriptId: '1', url: 'file:///app.js', lineNumber: 3, columnNumber: 9 },
    },
  ],
  startTime: 1_000,
  endTime: 4_000,
  samples: [2, 2],
  timeDeltas: [1_000, 1_000],
}

describe('record.js: the recording over the connection', () => {
  /** An inspector of this process that answers what record asks. */
  const answers =
    ({ pid = process.pid, heapForeign = false, profile = PROFILE } = {}) =>
    (m, ws) => {
      if (m.method === 'Runtime.evaluate') {
        const e = m.params.expression
        const value =
          e === 'process.pid' ? pid : e === TIME_ORIGIN_SOURCE ? 500 : e === 'performance.timeOrigin' ? 1.7e12 : 42
        return { result: { type: 'number', value } }
      }
      if (m.method === 'HeapProfiler.getSamplingProfile' && !heapForeign)
        return ws.send(JSON.stringify({ id: m.id, error: { message: 'not sampling' } }))
      if (m.method === 'Profiler.stop') return { profile }
      if (m.method === 'HeapProfiler.stopSampling') return { profile: { head: {}, samples: [] } }
      return {}
    }
  const settings = { durationMs: 50, intervalMs: 1, heap: null, maxPayload: 1 << 20 }

  test("checks the pid, reads the clock, runs V8's profiler at the sampler's interval for the duration", async () => {
    const fake = await fakeInspector(answers())
    const ctx = { cdp: null }
    const r = await record(
      process.pid,
      { url: fake.url, port: fake.port },
      { ...settings, intervalMs: 0.25 },
      noInterrupts,
      ctx,
    )
    assert.deepEqual(r.profile, PROFILE)
    assert.equal(r.origin, 500)
    assert.equal(r.epochOrigin, 1.7e12)
    assert.equal(r.exited, false)
    assert.deepEqual(
      fake.messages.map((m) => m.method),
      [
        'Runtime.evaluate',
        'NodeRuntime.notifyWhenWaitingForDisconnect',
        'Runtime.evaluate',
        'Runtime.evaluate',
        'Profiler.enable',
        'Profiler.setSamplingInterval',
        'Profiler.start',
        'Profiler.stop',
        'Profiler.disable',
      ],
    )
    assert.deepEqual(fake.messages[5].params, { interval: 250 })
    assert.ok(ctx.cdp.open, 'the connection is left to the caller, to close the inspector on')
    ctx.cdp.close()
    fake.close()
  })

  test('another process behind the port: refused before anything runs', async () => {
    const fake = await fakeInspector(answers({ pid: 1 }))
    const ctx = { cdp: null }
    await assert.rejects(
      record(process.pid, { url: fake.url, port: fake.port }, settings, noInterrupts, ctx),
      (e) =>
        e instanceof CliError &&
        e.message === `the inspector on port ${fake.port} belongs to pid 1, not ${process.pid}`,
    )
    assert.deepEqual(
      fake.messages.map((m) => m.method),
      ['Runtime.evaluate'],
    )
    ctx.cdp.close()
    fake.close()
  })

  test("--heap: another client's heap sampler is not touched; the CPU profiler is stopped again", async () => {
    const fake = await fakeInspector(answers({ heapForeign: true }))
    const ctx = { cdp: null }
    const heap = { samplingInterval: 1024, stackDepth: 64 }
    await assert.rejects(
      record(process.pid, { url: fake.url, port: fake.port }, { ...settings, heap }, noInterrupts, ctx),
      /already runs V8's sampling heap profiler/,
    )
    const methods = fake.messages.map((m) => m.method)
    assert.deepEqual(methods.slice(-2), ['HeapProfiler.getSamplingProfile', 'Profiler.stop'])
    assert.ok(!methods.includes('HeapProfiler.startSampling'))
    ctx.cdp.close()
    fake.close()
  })

  test('--heap: the heap profile and the times it covers', async () => {
    const fake = await fakeInspector(answers())
    const ctx = { cdp: null }
    const heap = { samplingInterval: 1024, stackDepth: 64 }
    const r = await record(process.pid, { url: fake.url, port: fake.port }, { ...settings, heap }, noInterrupts, ctx)
    assert.deepEqual(r.heapProfile, { head: {}, samples: [] })
    assert.equal(r.heapStart, 42)
    assert.equal(r.heapEnd, 42)
    const start = fake.messages.find((m) => m.method === 'HeapProfiler.startSampling')
    assert.deepEqual(start.params, heap)
    assert.equal(fake.messages.at(-1).method, 'HeapProfiler.disable')
    ctx.cdp.close()
    fake.close()
  })

  test('the process exits while attached: what was recorded, and its exit is not held', async () => {
    const fake = await fakeInspector((m, ws) => {
      if (m.method === 'Profiler.start')
        setTimeout(() => ws.send(JSON.stringify({ method: 'NodeRuntime.waitingForDisconnect', params: {} })), 20)
      return answers()(m, ws)
    })
    const ctx = { cdp: null }
    const started = Date.now()
    const r = await record(
      process.pid,
      { url: fake.url, port: fake.port },
      { ...settings, durationMs: 60_000 },
      noInterrupts,
      ctx,
    )
    assert.ok(Date.now() - started < 30_000, 'not the whole duration')
    assert.equal(r.exited, true)
    assert.deepEqual(r.profile, PROFILE)
    assert.equal(ctx.cdp.open, false, 'disconnected at once')
    assert.ok(!fake.messages.some((m) => m.method === 'Profiler.disable'))
    fake.close()
  })
})

describe('close.js: closing the inspector jsprof opened', { skip: !linux && 'reads /proc: Linux only' }, () => {
  /** A fake that closes when the close expression comes; `reopens` times it listens again a moment later. */
  async function closable(reopens = 0) {
    let closes = 0
    const fake = await fakeInspector((m) => {
      if (m.method !== 'Runtime.evaluate' || !m.params.expression.includes('_debugEnd')) return {}
      closes++
      fake.close()
      if (reopens-- > 0) setTimeout(() => fake.reopen(), 50)
      return undefined
    })
    return Object.assign(fake, { closes: () => closes })
  }

  /** closeInspector on this process, for the sockets opened since `before`, with `options` over the defaults. */
  const closing = (before, options = {}) =>
    closeInspector({
      pid: process.pid,
      before,
      known: null,
      cdp: null,
      deadline: Date.now() + 10_000,
      intr: noInterrupts,
      maxPayload: 1 << 20,
      ...options,
    })

  test('an inspector that closes when asked: closed, on its port', async () => {
    const before = target.listening(process.pid)
    const fake = await closable()
    const r = await closing(before)
    assert.deepEqual(r, { closed: true, port: fake.port })
    assert.equal(fake.closes(), 1)
  })

  test('one that opens again (a spinning process yielding): asked again, then closed', async () => {
    const before = target.listening(process.pid)
    const fake = await closable(1)
    const r = await closing(before)
    assert.deepEqual(r, { closed: true, port: fake.port })
    assert.equal(fake.closes(), 2)
  })

  test('one that does not close: not closed at the deadline, or at a second Ctrl-C', async () => {
    const before = target.listening(process.pid)
    const fake = await fakeInspector(() => undefined)
    const known = { host: '127.0.0.1', port: fake.port }
    let started = Date.now()
    let r = await closing(before, { known, deadline: started + 500 })
    assert.deepEqual(r, { closed: false, port: fake.port })
    assert.ok(Date.now() - started >= 500)
    const evaluations = fake.messages.filter((m) => m.method === 'Runtime.evaluate').length
    assert.equal(evaluations, 1, 'asked once per connection')
    started = Date.now()
    r = await closing(before, { known, deadline: started + 60_000, intr: { ...noInterrupts, count: 2 } })
    assert.deepEqual(r, { closed: false, port: fake.port })
    assert.ok(Date.now() - started < 30_000)
    fake.close()
    assert.match(
      leftOpen(7, fake.port, 'it did not close when asked'),
      new RegExp(
        `^WARNING: the inspector of pid 7 that jsprof opened may still be open, or open later, on port ${fake.port} \\(it did not close when asked\\)`,
      ),
    )
    assert.match(leftOpen(7, null, null), /on its --inspect-port \(default 127\.0\.0\.1:9229\): while/)
  })
})

describe('write.js: the files', () => {
  test("the trace as jsprof record writes it, readable by jsprof, with the process's pid and clock", () => {
    const output = path.join(tmp, 'w.trace.json')
    writeResult(
      7,
      { output, heap: null },
      { profile: PROFILE, origin: 500, epochOrigin: 1.7e12, exited: false },
      true,
      true,
    )
    const t = JSON.parse(fs.readFileSync(output, 'utf8'))
    assert.equal(traceProblem(t), null)
    assert.equal(t.samples.length, 2)
    assert.deepEqual([t.samples[0].timestamp, t.jsprof.pid, t.jsprof.timeOrigin], [1.5, 7, 1.7e12])
  })

  test('--heap: the heap profile beside the trace, with what it holds', () => {
    const frame = (functionName, url, lineNumber) => ({ functionName, scriptId: '1', url, lineNumber, columnNumber: 4 })
    const heapProfile = {
      head: {
        callFrame: frame('(root)', '', -1),
        selfSize: 0,
        id: 1,
        children: [{ callFrame: frame('keep', 'file:///app.js', 2), selfSize: 3072, id: 2, children: [] }],
      },
      samples: [1, 2, 3].map((ordinal) => ({ size: 1024, nodeId: 2, ordinal })),
    }
    const output = path.join(tmp, 'h.trace.json')
    const heap = { samplingInterval: 1024, stackDepth: 64 }
    const r = { profile: PROFILE, heapProfile, heapStart: 10, heapEnd: 20, epochOrigin: 1.7e12, exited: false }
    writeResult(7, { output, heap }, r, true, true)
    const written = JSON.parse(fs.readFileSync(path.join(tmp, 'h.heap.json'), 'utf8'))
    assert.equal(
      written.samples.reduce((sum, s) => sum + s.size, 0),
      3072,
    )
    assert.equal(written.jsprof.pid, 7)
    assert.deepEqual([written.jsprof.heap.startTime, written.jsprof.heap.endTime], [10, 20])
  })

  test('a profile that cannot be read: one line, no file', () => {
    const output = path.join(tmp, 'bad.trace.json')
    assert.throws(
      () => writeResult(7, { output, heap: null }, { profile: { nodes: 'x' }, exited: false }, true, true),
      (e) => e instanceof CliError && /^the profile the inspector of pid 7 sent cannot be read: /.test(e.message),
    )
    assert.equal(fs.existsSync(output), false)
  })

  test('the most samples a readable trace holds', () => {
    assert.ok(MAX_READABLE_SAMPLES > 1e6 && MAX_READABLE_SAMPLES * 48 <= MAX_INPUT_BYTES)
  })
})

describe('interrupts.js: the signals attach keeps', () => {
  test('counted, never fatal; next() and pause() wake at one; dispose lets them go', async () => {
    const listeners = process.listenerCount('SIGINT')
    const intr = interrupts()
    try {
      assert.equal(process.listenerCount('SIGINT'), listeners + 1)
      const next = intr.next()
      const started = Date.now()
      const paused = intr.pause(60_000)
      process.emit('SIGINT', 'SIGINT')
      await next
      await paused
      assert.ok(Date.now() - started < 30_000)
      process.emit('SIGHUP', 'SIGHUP')
      process.emit('SIGTERM', 'SIGTERM')
      assert.equal(intr.count, 3)
    } finally {
      intr.dispose()
    }
    assert.equal(process.listenerCount('SIGINT'), listeners)
    assert.equal(process.listenerCount('SIGHUP'), 0)
  })
})
