// `jsprof attach` against hostile targets (issue 24): a process whose main thread is blocked when
// SIGUSR1 arrives (it opens its inspector late: jsprof must close it), Ctrl-C while jsprof waits,
// a process that exits or is killed during the recording, and fake inspectors made here (a process
// that answers SIGUSR1 with a server of its own: slow handshake, no replies, huge replies, a target
// list naming another socket, malformed replies). Afterwards the target's inspector port is closed,
// checked through /proc. Linux only (attach reads /proc). Real child processes, killed on timeout.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const { traceProblem } = require(path.join(root, 'lib', 'cli', 'input.js'))
const { listening } = require(path.join(root, 'lib', 'cli', 'attach', 'target.js'))
const linux = process.platform === 'linux'

// A target that prints `ready <pid>`, then, per argv[2]:
//   block-exec <ms>    blocks its main thread in execSync (a child `sleep`), then idles
//   block-atomics <ms> blocks it in Atomics.wait, then idles
//   idle               idles
//   exit-after <ms>    exits with status 7 that long after its inspector opened
//   report-open        prints `open` when its inspector opened
const TARGET = `
const inspector = require('node:inspector')
const mode = process.argv[2], ms = Number(process.argv[3])
setInterval(() => {}, 1000)
console.log('ready ' + process.pid)
if (mode === 'block-exec') require('node:child_process').execSync('sleep ' + ms / 1000)
if (mode === 'block-atomics') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
if (mode === 'block-exec' || mode === 'block-atomics') console.log('unblocked')
function work() { let x = 0; for (let i = 0; i < 1e5; i++) x += Math.sqrt(i); return x }
if (mode === 'exit-after' || mode === 'report-open') {
  const poll = setInterval(() => {
    work()
    if (!inspector.url()) return
    clearInterval(poll)
    setInterval(work, 5)
    if (mode === 'exit-after') setTimeout(() => process.exit(7), ms)
    else console.log('open')
  }, 20)
}
`

// A process posing as an inspector: SIGUSR1 (its own listener, so Node opens nothing) makes it
// listen on a loopback port and answer as argv[2] says. It closes its server when asked to by
// jsprof's close expression (process._debugEnd), as a real inspector does.
const FAKE = `
const http = require('node:http')
const { WebSocketServer } = require(${JSON.stringify(require.resolve('ws'))})
const mode = process.argv[2]
const other = Number(process.argv[3] || 0)
let server
const sockets = new Set()
const profile = { nodes: [{ id: 1, callFrame: { functionName: '(root)', scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 }, children: [] }], startTime: 0, endTime: 1000, samples: [], timeDeltas: [] }
function answer(ws, m) {
  const reply = (result) => ws.send(JSON.stringify({ id: m.id, result }))
  if (m.method === 'Runtime.evaluate') {
    if (m.params.expression.includes('_debugEnd')) { for (const s of sockets) s.destroy(); server.close(); return }
    if (mode === 'no-reply') return
    if (mode === 'huge-reply') { ws._socket.write(Buffer.from([0x81, 127, 0, 0, 0, 2, 0, 0, 0, 0])); return }
    if (mode === 'bad-reply') return ws.send(JSON.stringify({ id: m.id, result: 'nonsense' }))
    if (m.params.expression === 'process.pid') return reply({ result: { type: 'number', value: process.pid } })
    return reply({ result: { type: 'number', value: m.params.expression.includes('timeOrigin') && !m.params.expression.includes('hrtime') ? Date.now() : 0 } })
  }
  if (m.method === 'Profiler.stop') {
    if (mode === 'bad-profile') return reply({ profile: 'nonsense' })
    return reply({ profile })
  }
  reply({})
}
process.on('SIGUSR1', () => {
  if (server) return
  server = http.createServer((req, res) => {
    const port = server.address().port
    if (mode === 'list-drip') { res.writeHead(200); const t = setInterval(() => res.write(' '), 300); res.on('close', () => clearInterval(t)); return }
    if (mode === 'list-huge') { res.writeHead(200); const chunk = Buffer.alloc(65536, 32); const pump = () => { while (res.write(chunk)); }; res.on('drain', pump); pump(); return }
    const where = mode === 'list-elsewhere' ? '127.0.0.1:' + other : '127.0.0.1:' + port
    res.end(JSON.stringify([{ id: 'x', webSocketDebuggerUrl: 'ws://' + where + '/fake-target' }]))
  })
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)) })
  const wss = new WebSocketServer({ noServer: true })
  server.on('upgrade', (req, socket, head) => {
    console.log('upgrade ' + req.url)
    if (mode === 'slow-handshake') return
    wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (d) => answer(ws, JSON.parse(d))))
  })
  server.listen(0, '127.0.0.1')
})
setInterval(() => {}, 1000)
console.log('ready ' + process.pid)
`

let tmp
const children = new Set()

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-attach-hostile-'))
  fs.writeFileSync(path.join(tmp, 'target.js'), TARGET)
  fs.writeFileSync(path.join(tmp, 'fake.js'), FAKE)
})

after(() => {
  for (const child of children) child.kill('SIGKILL')
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

function start(script, args, nodeArgs = ['--inspect-port=127.0.0.1:0']) {
  const child = spawn(process.execPath, [...nodeArgs, path.join(tmp, script), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
  let stdout = ''
  let stderr = ''
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child)
      clearTimeout(timer)
      resolve({ code, signal })
    }),
  )
  child.stderr.on('data', (d) => (stderr += d))
  const waitFor = (pattern) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(stdout)
        if (m) resolve(m)
        return m
      }
      if (check()) return
      child.stdout.on('data', check)
      exited.then(() => check() || reject(new Error(`target exited: ${stderr}`)))
    })
  child.stdout.on('data', (d) => (stdout += d))
  const ready = waitFor(/ready (\d+)/).then((m) => Number(m[1]))
  return { child, ready, exited, waitFor, out: () => stdout, err: () => stderr }
}

function jsprof(args, { env = {}, onStart } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: tmp,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, JSPROF_NO_PROGRESS: '1', ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
    if (onStart) onStart(child, () => stderr)
  })
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The process's listening sockets settle: polled until two reads a while apart agree. */
async function settledSockets(pid) {
  let last = JSON.stringify(listening(pid))
  for (let i = 0; i < 10; i++) {
    await delay(300)
    const now = JSON.stringify(listening(pid))
    if (now === last) return JSON.parse(now)
    last = now
  }
  return JSON.parse(last)
}

describe('jsprof attach: a blocked target, Ctrl-C', { skip: !linux && 'attach reads /proc: Linux only' }, () => {
  test('blocked in execSync: the inspector opens after jsprof gave up recording; jsprof closes it', async () => {
    const target = start('target.js', ['block-exec', '7000'])
    const pid = await target.ready
    await delay(300)
    assert.deepEqual(listening(pid), [], 'no inspector before')
    const r = await jsprof(['attach', String(pid), '--duration', '1s', '-o', 'blocked.json'])
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, new RegExp(`pid ${pid} did not open its inspector within 5 s: its main thread is blocked`))
    assert.match(r.stderr, /it opened it later, and jsprof closed it again/)
    assert.doesNotMatch(r.stderr, /disable-sigusr1|internal error/)
    await target.waitFor(/unblocked/)
    assert.deepEqual(await settledSockets(pid), [], 'the inspector is closed (and stays closed)')
    target.child.kill()
  })

  test('a stopped target: said so; the inspector it opens when continued is closed', async () => {
    const target = start('target.js', ['idle', '0'])
    const pid = await target.ready
    await delay(300)
    target.child.kill('SIGSTOP')
    const r = await jsprof(['attach', String(pid), '--duration', '1s', '-o', 'stopped.json'], {
      onStart: (child, stderr) => {
        const poll = setInterval(() => {
          if (/waiting up to/.test(stderr())) {
            clearInterval(poll)
            target.child.kill('SIGCONT')
          }
        }, 100)
        child.on('exit', () => clearInterval(poll))
      },
    })
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, new RegExp(`pid ${pid} did not open its inspector within 5 s: it is stopped`))
    assert.match(r.stderr, /it opened it later, and jsprof closed it again/)
    assert.deepEqual(await settledSockets(pid), [], 'the inspector is closed')
    target.child.kill()
  })

  test('blocked in Atomics.wait: V8 interrupts reach it, so the recording works and the inspector is closed', async () => {
    const target = start('target.js', ['block-atomics', '4000'])
    const pid = await target.ready
    await delay(300)
    const r = await jsprof(['attach', String(pid), '--duration', '500ms', '-o', 'atomics.json'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /inspector closed again/)
    await target.waitFor(/unblocked/)
    assert.deepEqual(await settledSockets(pid), [], 'the inspector is closed (and stays closed)')
    target.child.kill()
  })

  test('Ctrl-C while jsprof waits: it stays to close the inspector, then exits non-zero', async () => {
    const target = start('target.js', ['block-exec', '4000'])
    const pid = await target.ready
    await delay(300)
    const r = await jsprof(['attach', String(pid), '--duration', '1s', '-o', 'int.json'], {
      onStart: (child) => setTimeout(() => child.kill('SIGINT'), 1000),
    })
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, new RegExp(`interrupted before pid ${pid} opened its inspector`))
    assert.match(r.stderr, /waiting up to \d+ s for it to open, to close it again/)
    assert.match(r.stderr, /it opened it later, and jsprof closed it again/)
    await target.waitFor(/unblocked/)
    assert.deepEqual(await settledSockets(pid), [], 'the inspector is closed')
    assert.equal(fs.existsSync(path.join(tmp, 'int.json')), false)
    target.child.kill()
  })

  test('past the deadline: a loud warning and exit 1; `attach --close` closes it later', async () => {
    const target = start('target.js', ['block-exec', '9000'])
    const pid = await target.ready
    await delay(300)
    const r = await jsprof(['attach', String(pid), '--duration', '1s'], {
      env: { JSPROF_ATTACH_CLOSE_DEADLINE_MS: '1000' },
    })
    assert.equal(r.code, 1, r.stderr)
    assert.match(
      r.stderr,
      new RegExp(`WARNING: the inspector of pid ${pid} that jsprof opened may still be open, or open later`),
    )
    assert.match(r.stderr, /its main thread is blocked/)
    assert.match(r.stderr, new RegExp(`jsprof attach --close ${pid}`))
    await target.waitFor(/unblocked/)
    // Nobody closed it: it opened (this is what the warning is about).
    let open = []
    for (let i = 0; i < 50 && open.length === 0; i++) {
      await delay(100)
      open = listening(pid)
    }
    assert.equal(open.length, 1, 'the inspector opened late')
    const c = await jsprof(['attach', '--close', String(pid)])
    assert.equal(c.code, 0, c.stderr)
    assert.match(c.stderr, new RegExp(`closed the inspector of pid ${pid} on port ${open[0].port}`))
    assert.deepEqual(await settledSockets(pid), [])
    target.child.kill()
  })
})

describe('jsprof attach: an inspector opened beyond loopback', { skip: !linux && 'Linux only' }, () => {
  test('refused, and closed again (it was jsprof that opened it)', async () => {
    const target = start('target.js', ['idle', '0'], ['--inspect-port=0.0.0.0:0'])
    const pid = await target.ready
    await delay(300)
    const r = await jsprof(['attach', String(pid), '--duration', '300ms', '-o', 'wide.json'])
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, new RegExp(`pid ${pid} opened its inspector on 0\\.0\\.0\\.0:\\d+, beyond loopback`))
    assert.equal(fs.existsSync(path.join(tmp, 'wide.json')), false)
    assert.deepEqual(await settledSockets(pid), [], 'closed again')
    target.child.kill()
  })
})

describe('jsprof attach: the target ends during the recording', { skip: !linux && 'Linux only' }, () => {
  test('process.exit() is not held: jsprof says so and writes what it has', async () => {
    const target = start('target.js', ['exit-after', '1500'])
    const pid = await target.ready
    const out = path.join(tmp, 'exit.trace.json')
    // The recording would last 10 minutes; the harness kills jsprof after 90 s.
    const r = await jsprof(['attach', String(pid), '--duration', '10m', '-o', out])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, new RegExp(`pid ${pid} exited during the recording, after .*: writing what was recorded`))
    assert.match(r.stderr, /wrote .*exit\.trace\.json \(\d+ samples, .*; the process exited\)/)
    assert.deepEqual(await target.exited, { code: 7, signal: null }, 'the exit status is the process own')
    const t = JSON.parse(fs.readFileSync(out, 'utf8'))
    assert.equal(traceProblem(t), null)
    assert.equal(t.jsprof.pid, pid)
  })

  test('a target killed mid-recording: a clear message at once, no trace', async () => {
    const target = start('target.js', ['report-open', '0'])
    const pid = await target.ready
    const out = path.join(tmp, 'killed.trace.json')
    target.waitFor(/open/).then(() => setTimeout(() => target.child.kill('SIGKILL'), 1000))
    const r = await jsprof(['attach', String(pid), '--duration', '10m', '-o', out])
    assert.equal(r.code, 2, r.stderr)
    assert.match(r.stderr, new RegExp(`pid ${pid} ended during the recording, after .* \\(killed or crashed\\)`))
    assert.doesNotMatch(r.stderr, /internal error/)
    assert.equal(fs.existsSync(out), false)
    assert.equal((await target.exited).signal, 'SIGKILL')
  })
})

describe('jsprof attach: fake inspectors', { skip: !linux && 'Linux only' }, () => {
  const cases = [
    ['list-drip', 2, /opened a socket that does not answer as an inspector \(127\.0\.0\.1:\d+: no answer within 3 s\)/],
    ['list-huge', 2, /does not answer as an inspector \(127\.0\.0\.1:\d+: its answer exceeds 1024 KiB\)/],
    ['slow-handshake', 2, /cannot connect to the inspector of pid \d+ on port \d+: no WebSocket handshake within 5 s/],
    ['no-reply', 2, /port \d+: no answer to Runtime\.evaluate within 15 s/],
    ['huge-reply', 2, /port \d+: the connection ended: it sent a message larger than \d+ MiB/],
    ['bad-reply', 2, /port \d+: it answered Runtime\.evaluate without a result/],
    ['bad-profile', 2, /port \d+: it answered Profiler\.stop without a profile/],
  ]
  for (const [mode, code, pattern] of cases) {
    test(`${mode}: ${pattern.source.slice(0, 60)}`, async () => {
      const fake = start('fake.js', [mode], [])
      const pid = await fake.ready
      const r = await jsprof(['attach', String(pid), '--duration', '300ms', '-o', `${mode}.json`], {
        env: { JSPROF_ATTACH_CLOSE_DEADLINE_MS: '1500' },
      })
      // A socket that is no inspector cannot be closed as one: said loudly (exit 1) after the error.
      const broken = mode.startsWith('list-') || mode === 'slow-handshake'
      assert.equal(r.code, broken ? 1 : code, r.stderr)
      assert.match(r.stderr, pattern)
      if (broken) assert.match(r.stderr, /WARNING: the inspector of pid \d+ that jsprof opened may still be open/)
      assert.doesNotMatch(r.stderr, /internal error/)
      assert.equal(fs.existsSync(path.join(tmp, `${mode}.json`)), false)
      if (!broken) assert.deepEqual(await settledSockets(pid), [], 'closed through the close expression')
      fake.child.kill()
    })
  }

  test('a target list naming another socket: only the checked one is connected to', async () => {
    // The "other" socket: a fake inspector that must never see a connection.
    const other = start('fake.js', ['ok'], [])
    const otherPid = await other.ready
    other.child.kill('SIGUSR1')
    let otherPort
    for (let i = 0; i < 50 && !otherPort; i++) {
      await delay(100)
      otherPort = listening(otherPid)[0]?.port
    }
    assert.ok(otherPort)
    const fake = start('fake.js', ['list-elsewhere', String(otherPort)], [])
    const pid = await fake.ready
    const out = path.join(tmp, 'elsewhere.trace.json')
    const r = await jsprof(['attach', String(pid), '--duration', '300ms', '-o', out])
    assert.equal(r.code, 0, r.stderr)
    assert.match(fake.out(), /upgrade \/fake-target/)
    assert.doesNotMatch(other.out(), /upgrade/)
    const t = JSON.parse(fs.readFileSync(out, 'utf8'))
    assert.equal(traceProblem(t), null)
    fake.child.kill()
    other.child.kill()
  })
})

describe('jsprof attach: an inspector the target opened earlier on its port', { skip: !linux && 'Linux only' }, () => {
  test('is the target own (not "taken by another process"): used and left open', async () => {
    const free = await new Promise((resolve) => {
      const s = require('node:net')
        .createServer()
        .listen(0, '127.0.0.1', () => {
          const { port } = s.address()
          s.close(() => resolve(port))
        })
    })
    const target = start('target.js', ['idle', '0'], [`--inspect-port=127.0.0.1:${free}`])
    const pid = await target.ready
    target.child.kill('SIGUSR1')
    for (let i = 0; i < 50 && listening(pid).length === 0; i++) await delay(100)
    const before = listening(pid)
    assert.deepEqual(
      before.map((s) => s.port),
      [free],
    )
    const out = path.join(tmp, 'earlier.trace.json')
    const r = await jsprof(['attach', String(pid), '--duration', '300ms', '-o', out])
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stderr, /taken by another process/)
    assert.match(r.stderr, /inspector was open before and stays open/)
    assert.equal(traceProblem(JSON.parse(fs.readFileSync(out, 'utf8'))), null)
    assert.deepEqual(listening(pid), before)
    target.child.kill()
  })
})
