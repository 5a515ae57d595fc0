// `jsprof attach <pid>`: profiles a running server — idle or spinning — without restarting it; the
// server keeps running and serving after, with its inspector closed again. Each error case is one
// line and exit status 2. The targets open their inspector on a port of their own choosing
// (--inspect-port=127.0.0.1:0), so jsprof must find it, and nothing here depends on 9229 being free.
// Linux only (attach reads /proc). Real child processes, killed on timeout and cleaned up.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
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

// A server; mode 'spin' first spins in spinStep (too big to inline: its own code, on top of the
// stack) for SPIN_MS, then serves. It prints `ready <pid> <port>`.
const STEP = Array.from({ length: 60 }, (_, i) => `x += Math.sqrt(i + x + ${i})`).join('; ')
const APP = `
const http = require('node:http')
function spinStep() { let x = 0; for (let i = 0; i < 2000; i++) { ${STEP} } return x }
function handle(req, res) { let x = 0; for (let i = 0; i < 2e5; i++) x += Math.sqrt(i); res.end('ok ' + process.pid) }
const server = http.createServer(handle).listen(0, '127.0.0.1', () => {
  console.log('ready ' + process.pid + ' ' + server.address().port)
  if (process.argv[2] === 'spin') { const end = Date.now() + Number(process.argv[3]); while (Date.now() < end) spinStep() }
})
`

let tmp
let appFile
const children = new Set()

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-attach-test-'))
  appFile = path.join(tmp, 'server.js')
  fs.writeFileSync(appFile, APP)
})

after(() => {
  for (const child of children) child.kill('SIGKILL')
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

function startServer(args, nodeArgs = ['--inspect-port=127.0.0.1:0']) {
  const child = spawn(process.execPath, [...nodeArgs, appFile, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  child.on('exit', () => children.delete(child))
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
  child.on('exit', () => clearTimeout(timer))
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const ready = new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const m = /ready (\d+) (\d+)/.exec(out)
      if (m) resolve({ pid: Number(m[1]), port: Number(m[2]) })
    })
    child.on('exit', () => reject(new Error(`server exited: ${stderr}`)))
  })
  return { child, ready, stderr: () => stderr }
}

function jsprof(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

function get(port) {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', timeout: 20_000 }, (res) => {
        let body = ''
        res.on('data', (d) => (body += d))
        res.on('end', () => resolve(body))
      })
      .on('error', reject)
  })
}

function readTrace(file) {
  const t = JSON.parse(fs.readFileSync(file, 'utf8'))
  assert.equal(traceProblem(t), null)
  return t
}

function topFrameSamples(t, name) {
  const frame = t.frames.findIndex((f) => f.name === name)
  return t.samples.filter((s) => s.stackId !== undefined && t.stacks[s.stackId].frameId === frame).length
}

describe('jsprof attach', { skip: !linux && 'attach reads /proc: Linux only' }, () => {
  test('an idle server: a trace of the requests served meanwhile; it keeps serving, inspector closed', async () => {
    const server = startServer([])
    const { pid, port } = await server.ready
    const socketsBefore = listening(pid)
    const out = path.join(tmp, 'idle.trace.json')
    const attached = jsprof(['attach', String(pid), '--duration', '1500ms', '-o', out])
    let served = 0
    let done = false
    const load = (async () => {
      while (!done) {
        assert.equal(await get(port), `ok ${pid}`)
        served++
      }
    })()
    const r = await attached
    done = true
    await load
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /jsprof: wrote .*idle\.trace\.json \(\d+ samples, .*; inspector closed again\)/)
    const t = readTrace(out)
    assert.ok(t.samples.length > 0)
    assert.ok(served > 0)
    // The sidecar, as in `record`'s traces: whose trace, and its clock (the process's time origin).
    assert.deepEqual(Object.keys(t), ['frames', 'jsprof', 'resources', 'samples', 'stacks'])
    assert.equal(t.jsprof.pid, pid)
    assert.ok(
      Math.abs(t.jsprof.timeOrigin - Date.now()) < 10 * 60_000,
      `timeOrigin is an epoch in ms: ${t.jsprof.timeOrigin}`,
    )
    assert.ok(
      t.frames.some((f) => f.name === 'handle'),
      `the request handler was sampled: ${t.samples.length} ${JSON.stringify(t.frames)} ${r.stderr}`,
    )
    assert.equal(await get(port), `ok ${pid}`, 'still serving after detach')
    assert.deepEqual(listening(pid), socketsBefore, 'the inspector port is closed again')
    assert.match(server.stderr(), /Debugger listening on ws:\/\/127\.0\.0\.1:\d+\//)
    server.child.kill()
  })

  test('a spinning server: its inspector opens through the loop, the trace shows the loop; then it serves', async () => {
    const server = startServer(['spin', '15000'])
    const { pid, port } = await server.ready
    const out = path.join(tmp, 'spin.trace.json')
    const r = await jsprof(['attach', String(pid), '--duration', '1s', '-o', out])
    assert.equal(r.code, 0, r.stderr)
    const t = readTrace(out)
    assert.ok(topFrameSamples(t, 'spinStep') > 0, `spinStep on top: ${t.frames.map((f) => f.name)}`)
    assert.equal(await get(port), `ok ${pid}`, 'serves once the loop is over')
    // SIGUSR1's queued open runs when the loop yields, and the deferred close right after it.
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.deepEqual(
      listening(pid).map((s) => s.port),
      [port],
      'only the server port is open',
    )
    server.child.kill()
  })

  test('an inspector open before jsprof came stays open', async () => {
    const server = startServer([], ['--inspect=127.0.0.1:0'])
    const { pid } = await server.ready
    const before = listening(pid)
    const out = path.join(tmp, 'open.trace.json')
    const r = await jsprof(['attach', String(pid), '--duration', '300ms', '-o', out])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /inspector was open before and stays open/)
    assert.deepEqual(listening(pid), before)
    readTrace(out)
    server.child.kill()
  })

  test('errors: one line, exit 2', async () => {
    const oneLine = (r, pattern) => {
      assert.equal(r.code, 2, r.stderr)
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr)
      assert.match(r.stderr, pattern)
    }
    // A pid that does not exist (beyond pid_max).
    oneLine(await jsprof(['attach', '4194305']), /^jsprof: no such process: 4194305$/m)
    oneLine(await jsprof(['attach', 'node']), /<pid> must be a process id, got 'node'/)
    oneLine(await jsprof(['attach']), /missing the process id/)
    oneLine(await jsprof(['attach', '1', '--duration', 'forever']), /--duration must be a time/)
    // Not Node: a shell.
    const sh = spawn('sleep', ['60'])
    children.add(sh)
    oneLine(await jsprof(['attach', String(sh.pid)]), new RegExp(`pid ${sh.pid} is not a Node.js process \\(sleep\\)`))
    sh.kill()
    // Not ours to signal: a process of another user (as root: jsprof run as nobody against ours).
    if (process.getuid && process.getuid() !== 0) {
      oneLine(await jsprof(['attach', '1']), /not ours \(EPERM/)
    } else {
      const { spawnSync } = await import('node:child_process')
      const asNobody = { uid: 65534, gid: 65534, cwd: os.tmpdir(), encoding: 'utf8', timeout: 60_000 }
      // Only where nobody can read this checkout (a clone under /root cannot be).
      const readable =
        spawnSync(
          process.execPath,
          ['-e', `require(${JSON.stringify(path.join(root, 'lib', 'cli', 'common.js'))})`],
          asNobody,
        ).status === 0
      if (readable) {
        const r = spawnSync(process.execPath, [BIN, 'attach', String(process.pid)], asNobody)
        oneLine(
          { code: r.status, stderr: r.stderr },
          new RegExp(`^jsprof: cannot signal pid ${process.pid}: not ours \\(EPERM`),
        )
      }
    }
    // The inspector port is taken by another process.
    const blocker = net.createServer().listen(0, '127.0.0.1')
    await new Promise((resolve) => blocker.once('listening', resolve))
    const taken = blocker.address().port
    const server = startServer([], [`--inspect-port=127.0.0.1:${taken}`])
    const { pid, port } = await server.ready
    oneLine(
      await jsprof(['attach', String(pid), '--duration', '300ms']),
      new RegExp(`port ${taken} is taken by another process`),
    )
    assert.equal(await get(port), `ok ${pid}`, 'the server is unharmed')
    blocker.close()
    server.child.kill()
  })
})
