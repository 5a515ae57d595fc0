// `jsprof record` never makes a process harder to kill, and always leaves a trace: one SIGTERM or
// SIGINT — to the recorder, to the app, or to the whole process group as Ctrl-C sends it — ends an
// app that spins in a loop that never returns as well as one that yields, with the trace written and
// the exit status the signal gives; SIGKILL and abort() leave the trace up to the last flush.
// Real child processes, each in a process group of its own, killed on timeout and cleaned up.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { watchChild } from './helpers.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const { traceProblem } = require(path.join(root, 'lib', 'cli', 'input.js'))

// Generous: a loaded 2-core machine. The time to exit is printed by bench/record-signals.mjs.
const EXIT_BOUND_MS = 20_000

// mode (argv[2]): how the app behaves once ready.
const APP = `
function spinForever() { let x = 0; for (;;) { for (let i = 0; i < 1e5; i++) x += Math.sqrt(i) } }
function burnSome(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1); return x }
const mode = process.argv[2]
const ready = () => console.log('ready ' + process.pid)
if (mode === 'spin') { ready(); spinForever() }
if (mode === 'yield') { setInterval(() => burnSome(5), 10); ready() }
if (mode === 'handler-spin') { process.on('SIGTERM', () => process.exit(7)); ready(); spinForever() }
if (mode === 'handler-removed') {
  const h = () => process.exit(7)
  process.on('SIGTERM', h)
  process.removeListener('SIGTERM', h)
  ready(); spinForever()
}
if (mode === 'abort') { ready(); setTimeout(() => process.abort(), 1500); setInterval(() => burnSome(5), 10) }
`

let tmp
let appFile
const running = new Set()

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-signals-test-'))
  appFile = path.join(tmp, 'app.js')
  fs.writeFileSync(appFile, APP)
})

after(() => {
  for (const child of running) killGroup(child, 'SIGKILL')
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal)
  } catch {
    // Already gone.
  }
}

/** `jsprof record -o out -- node app.js mode` in a process group of its own; ready → the app's pid. */
function startRecording(out, mode, extra = []) {
  const child = spawn(process.execPath, [BIN, 'record', '-o', out, ...extra, '--', process.execPath, appFile, mode], {
    cwd: tmp,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  running.add(child)
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), EXIT_BOUND_MS + 10_000)
  child.on('exit', () => {
    clearTimeout(timer)
    running.delete(child)
  })
  return watchChild(child)
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits for the exit, failing (and killing the group) past the bound. */
async function exitWithin(run, since) {
  const bound = sleep(EXIT_BOUND_MS).then(() => null)
  const result = await Promise.race([run.exited, bound])
  if (!result) {
    killGroup(run.child, 'SIGKILL')
    assert.fail(`still running ${EXIT_BOUND_MS} ms after the signal`)
  }
  return { ...result, ms: result.at - since }
}

/** A valid trace whose samples are mostly in `hot` (its top frame), as the trace itself says. */
function assertHotTrace(file, hot) {
  assert.ok(fs.existsSync(file), `${file} was written`)
  const t = JSON.parse(fs.readFileSync(file, 'utf8'))
  assert.equal(traceProblem(t), null)
  const hotFrame = t.frames.findIndex((f) => f.name === hot)
  assert.ok(hotFrame >= 0, `${hot} is in the trace: ${t.frames.map((f) => f.name)}`)
  const onTop = t.samples.filter((s) => s.stackId !== undefined && t.stacks[s.stackId].frameId === hotFrame).length
  assert.ok(onTop > 0, `samples with ${hot} on top`)
  // No frame of jsprof-node's own code: its flushes ran inside the app through V8 interrupts.
  assert.deepEqual(
    t.resources.filter(
      (r) =>
        r.includes(`${path.sep}lib${path.sep}record`) ||
        r.includes('record-preload') ||
        r.includes(`${path.sep}lib${path.sep}sampler`),
    ),
    [],
  )
  assert.ok(!fs.readdirSync(path.dirname(file)).some((f) => f.endsWith('.tmp')), 'no temporary file left')
  return { trace: t, onTop }
}

const STATUS = { SIGTERM: 143, SIGINT: 130 }
// Windows has no such signals nor process groups (there the preload keeps JS handlers).
const skip = process.platform === 'win32' && 'POSIX signals and process groups'

describe('jsprof record: one signal ends the app, with its trace', { skip }, () => {
  for (const mode of ['spin', 'yield']) {
    for (const target of ['recorder', 'app', 'group']) {
      for (const signal of ['SIGTERM', 'SIGINT']) {
        test(`${signal} to the ${target}, ${mode === 'spin' ? 'app spinning in a loop' : 'app yielding'}: exit ${STATUS[signal]}, trace written`, async () => {
          const out = path.join(tmp, `${mode}-${target}-${signal}.trace.json`)
          const run = startRecording(out, mode)
          const pid = await run.ready
          await sleep(400)
          const since = Date.now()
          if (target === 'recorder') run.child.kill(signal)
          else if (target === 'app') process.kill(pid, signal)
          else killGroup(run.child, signal)
          const { code, stderr } = await exitWithin(run, since)
          assert.equal(code, STATUS[signal], stderr)
          assert.match(stderr, /jsprof: wrote .* written at exit in/)
          assertHotTrace(out, mode === 'spin' ? 'spinForever' : 'burnSome')
        })
      }
    }
  }
})

describe('jsprof record: killed without warning, the trace up to the last flush', { skip }, () => {
  test('SIGKILL of a spinning app leaves a readable trace', async () => {
    const out = path.join(tmp, 'sigkill.trace.json')
    const run = startRecording(out, 'spin', ['--flush-every', '200'])
    const pid = await run.ready
    await sleep(1500)
    process.kill(pid, 'SIGKILL')
    const { code, stderr } = await exitWithin(run, Date.now())
    assert.equal(code, 137, stderr)
    assert.match(stderr, /killed by SIGKILL: samples up to the last flush/)
    assertHotTrace(out, 'spinForever')
  })

  test('process.abort() leaves a readable trace', async () => {
    const out = path.join(tmp, 'abort.trace.json')
    const run = startRecording(out, 'abort', ['--flush-every', '200'])
    await run.ready
    const { code, stderr } = await exitWithin(run, Date.now())
    assert.equal(code, 134, stderr)
    assertHotTrace(out, 'burnSome')
  })

  test("under NODE_V8_COVERAGE (Node's own profiler session) nothing is cut and Node prints nothing extra", async () => {
    const out = path.join(tmp, 'coverage.trace.json')
    const { spawnSync } = await import('node:child_process')
    const r = spawnSync(
      process.execPath,
      [BIN, 'record', '-o', out, '--', process.execPath, '-e', 'const t = Date.now(); while (Date.now() - t < 1500);'],
      {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, NODE_V8_COVERAGE: path.join(tmp, 'coverage') },
      },
    )
    assert.equal(r.status, 0, r.stderr)
    assert.doesNotMatch(r.stderr, /Cannot retrieve id/)
    assert.match(r.stderr, /^jsprof: wrote .*written at exit in/)
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
    assert.ok(fs.existsSync(out))
  })

  test('--flush-every 0: nothing is flushed, so SIGKILL leaves no trace, and says so', async () => {
    const out = path.join(tmp, 'noflush.trace.json')
    const run = startRecording(out, 'spin', ['--flush-every', '0'])
    const pid = await run.ready
    await sleep(1200)
    process.kill(pid, 'SIGKILL')
    const { code, stderr } = await exitWithin(run, Date.now())
    assert.equal(code, 137)
    assert.match(stderr, /no trace was written: it was killed by SIGKILL/)
    assert.ok(!fs.existsSync(out))
  })
})

describe("jsprof record: an app's own handler decides, as without jsprof", { skip }, () => {
  test('a spinning app with a SIGTERM handler ignores one SIGTERM (as plain node does); a second one to jsprof kills it, with the flushed trace', async () => {
    const out = path.join(tmp, 'handler-spin.trace.json')
    const run = startRecording(out, 'handler-spin', ['--flush-every', '200'])
    const pid = await run.ready
    await sleep(400)
    run.child.kill('SIGTERM')
    await sleep(1500)
    assert.doesNotThrow(
      () => process.kill(pid, 0),
      'the app still runs: its handler waits for the loop, as in plain node',
    )
    run.child.kill('SIGTERM')
    const { code, stderr } = await exitWithin(run, Date.now())
    assert.equal(code, 137, stderr)
    assert.match(stderr, /with SIGKILL after a second SIGTERM/)
    assertHotTrace(out, 'spinForever')
  })

  test('a handler added and removed again leaves the signal to jsprof (not to a bare default)', async () => {
    const out = path.join(tmp, 'handler-removed.trace.json')
    const run = startRecording(out, 'handler-removed')
    const pid = await run.ready
    await sleep(400)
    process.kill(pid, 'SIGTERM')
    const { code, stderr } = await exitWithin(run, Date.now())
    assert.equal(code, 143, stderr)
    assert.match(stderr, /written at exit in/)
    assertHotTrace(out, 'spinForever')
  })

  test('--flush-every: bad values are one line, exit 2', async () => {
    const { spawnSync } = await import('node:child_process')
    for (const bad of ['soon', '-1', '', '1e400']) {
      const r = spawnSync(process.execPath, [BIN, 'record', `--flush-every=${bad}`, '--', 'node', appFile], {
        encoding: 'utf8',
        timeout: 30_000,
      })
      assert.equal(r.status, 2, r.stderr)
      assert.match(
        r.stderr,
        /^jsprof: --flush-every must be a number of ms >= 0 \(0: never\), got '.*' \(see 'jsprof record --help'\)\n$/,
      )
    }
  })
})
