// `jsprof record` end to end, on what real programs do to it: worker threads that never yield and are
// terminated (webpack's terser, jest-worker pools), an output that cannot be written at the end, `-o -`,
// an app that changes its umask, and frequent flushes that must leave no frame of their own.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { sampledNames, watchChild } from './helpers.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const { traceProblem } = require(path.join(root, 'lib', 'cli', 'input.js'))

let tmp
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-cli-record-'))
  // Another user (below) must be able to run apps from here.
  fs.chmodSync(tmp, 0o777)
})
after(() => {
  for (const dir of readOnly) makeWritable(dir)
  fs.rmSync(tmp, { recursive: true, force: true })
})

function jsprof(args, options = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: tmp, encoding: 'utf8', timeout: 60_000, ...options })
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

function dirWith(name, files) {
  const dir = fs.mkdtempSync(path.join(tmp, `${name}-`))
  fs.chmodSync(dir, 0o777)
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text)
  return dir
}

function readTrace(file) {
  const trace = JSON.parse(fs.readFileSync(file, 'utf8'))
  assert.equal(traceProblem(trace), null, `${file} is a valid trace`)
  return trace
}

/** Samples whose innermost frame is `name`. */
function selfSamples(trace, name) {
  return trace.samples.filter(
    (s) => s.stackId !== undefined && trace.frames[trace.stacks[s.stackId].frameId].name === name,
  ).length
}

const BURN =
  'function burnInWorker(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1); return x }'

describe('jsprof record: a worker thread that never yields keeps what it sampled', () => {
  // The worker says it started, then burns synchronously; the main thread ends it while it burns.
  const app = (end) => `
const { Worker } = require('node:worker_threads')
const w = new Worker(\`${BURN}
require('node:worker_threads').parentPort.postMessage('burning')
burnInWorker(60000)\`, { eval: true })
w.on('message', () => setTimeout(() => { ${end} }, 1500))
`

  for (const [how, end] of [
    ['terminate()', "w.terminate().then((code) => console.log('terminated', code))"],
    ['process.exit() while it runs', 'process.exit(0)'],
  ]) {
    test(`ended by ${how}: its trace has the burning function's samples`, () => {
      const dir = dirWith('burn', { 'app.js': app(end) })
      const out = path.join(dir, 't.json')
      const r = jsprof(['record', '-o', out, '--', process.execPath, path.join(dir, 'app.js')])
      assert.equal(r.code, 0, r.stderr)
      const workers = fs.readdirSync(dir).filter((f) => /^t\.worker-\d+\.json$/.test(f))
      assert.equal(workers.length, 1, `${fs.readdirSync(dir)}\n${r.stderr}`)
      const trace = readTrace(path.join(dir, workers[0]))
      // ~1.5 s of burning at 1 ms: V8 on a loaded 2-core machine ticks every 1-5 ms, so hundreds.
      const burning = selfSamples(trace, 'burnInWorker')
      assert.ok(burning >= 50, `the worker's burning is in its trace: ${burning} of ${trace.samples.length} samples`)
      assert.ok(!sampledNames(readTrace(out)).has('burnInWorker'), "not in the main thread's trace")
      assert.match(
        r.stderr,
        /wrote .*t\.worker-\d+\.json \(worker thread \d+, \d+ samples, [^;]*; written when it was terminated, or its process ended\)/,
      )
      assert.doesNotMatch(r.stderr, /up to its last flush|no trace/)
    })
  }

  /** Records the app below with `flush` and SIGKILLs it once its worker burns; returns the CLI's result. */
  async function killedWhileWorkerBurns(dir, flush) {
    const out = path.join(dir, 't.json')
    const args = ['record', '-o', out, '--flush-every', flush, '--', process.execPath, path.join(dir, 'app.js')]
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    const { ready, exited } = watchChild(child)
    const pid = await ready
    // A few of the watcher's flushes.
    await new Promise((resolve) => setTimeout(resolve, 1000))
    process.kill(pid, 'SIGKILL')
    const r = await exited
    assert.equal(r.code, 137, r.stderr)
    return r
  }
  /** The killed recording left one worker trace, holding the worker's burning up to its last flush. */
  function assertWorkerBurned(dir, r) {
    const workers = fs.readdirSync(dir).filter((f) => /^t\.worker-\d+\.json$/.test(f))
    assert.equal(workers.length, 1, r.stderr)
    const burning = selfSamples(readTrace(path.join(dir, workers[0])), 'burnInWorker')
    assert.ok(burning > 0, `the worker's burning up to its last flush: ${burning} samples`)
  }
  const KILLED_APP = `
const { Worker } = require('node:worker_threads')
const w = new Worker(\`${BURN}
require('node:worker_threads').parentPort.postMessage('burning')
burnInWorker(60000)\`, { eval: true })
w.on('message', () => console.log('ready ' + process.pid))
setInterval(() => {}, 1000)
`

  test(
    'killed without warning (SIGKILL): the worker that never yields keeps its samples up to the last flush',
    { skip: process.platform === 'win32' && 'no SIGKILL' },
    async () => {
      // It never runs a timer of its own: the watcher thread asks it to flush, through an interrupt.
      const dir = dirWith('killed', { 'app.js': KILLED_APP })
      const r = await killedWhileWorkerBurns(dir, '100')
      assertWorkerBurned(dir, r)
      assert.match(
        r.stderr,
        /worker thread \d+, \d+ samples, [^;]*; it did not exit \(its process was killed by SIGKILL\): samples up to its last flush/,
      )
    },
  )

  test(
    'killed without warning (SIGKILL): a worker that yields keeps its samples up to its own last flush',
    { skip: process.platform === 'win32' && 'no SIGKILL' },
    async () => {
      // It burns in turns of its event loop: flushed when due (lib/record/spacing.js), by its own timer
      // or the watcher's ask, whichever comes first.
      const dir = dirWith('killed-yielding', {
        'app.js': KILLED_APP.replace('burnInWorker(60000)', 'setInterval(() => burnInWorker(20), 25)'),
      })
      const r = await killedWhileWorkerBurns(dir, '100')
      assertWorkerBurned(dir, r)
      assert.match(
        r.stderr,
        /worker thread \d+, \d+ samples, [^;]*; it did not exit \(its process was killed by SIGKILL\)/,
      )
    },
  )

  test(
    'with --flush-every 0 the killed worker has nothing: it leaves no file, and says so',
    { skip: process.platform === 'win32' && 'no SIGKILL' },
    async () => {
      const dir = dirWith('killed-no-flush', { 'app.js': KILLED_APP })
      const r = await killedWhileWorkerBurns(dir, '0')
      assert.deepEqual(
        fs.readdirSync(dir).filter((f) => f.includes('worker')),
        [],
        'no empty trace file for the worker',
      )
      assert.match(r.stderr, /worker thread \d+: no trace \(nothing was flushed before it ended\)/)
    },
  )
})

// Directories made read-only in a test, writable again at the end.
const readOnly = []
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0

/** Makes `dir` unwritable, also for root (an immutable directory); false when this system cannot. */
function makeReadOnly(dir) {
  if (!isRoot) {
    fs.chmodSync(dir, 0o555)
    readOnly.push(dir)
    return true
  }
  try {
    execFileSync('chattr', ['+i', dir], { stdio: 'ignore' })
    readOnly.push(dir)
    return true
  } catch {
    return false
  }
}

function makeWritable(dir) {
  try {
    if (isRoot) execFileSync('chattr', ['-i', dir], { stdio: 'ignore' })
    else fs.chmodSync(dir, 0o755)
  } catch {
    // Gone already.
  }
}

let readOnlyWorks
/** Whether this system can make a directory that this user cannot write (asked once). */
function canMakeReadOnly() {
  if (readOnlyWorks !== undefined) return readOnlyWorks
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-read-only-probe-'))
  readOnlyWorks = false
  if (makeReadOnly(probe)) {
    try {
      fs.writeFileSync(path.join(probe, 'x'), '')
    } catch {
      readOnlyWorks = true
    }
    makeWritable(probe)
  }
  fs.rmSync(probe, { recursive: true, force: true })
  return readOnlyWorks
}

describe('jsprof record: -o that cannot be written never loses the recording', () => {
  const APP = `
function burnMain(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1); return x }
burnMain(300)
const [what, dir] = process.argv.slice(2)
if (what === 'remove') require('node:fs').rmSync(dir, { recursive: true })
if (what === 'read-only') {
  if (process.getuid() === 0) require('node:child_process').execFileSync('chattr', ['+i', dir])
  else require('node:fs').chmodSync(dir, 0o555)
}
require('node:fs').writeFileSync(process.argv[4], 'ran')
`

  /** Runs the app with -o dir/t.json; returns the result and the kept trace's path (named in stderr). */
  function runEnding(what, dir, name = 't.json') {
    const app = path.join(tmp, 'ending.js')
    fs.writeFileSync(app, APP)
    const marker = path.join(tmp, `ran-${what}-${Date.now()}`)
    const r = jsprof(['record', '-o', path.join(dir, name), '--', process.execPath, app, what, dir, marker])
    assert.ok(fs.existsSync(marker), `the app ran: ${r.stderr}`)
    const m = /could not write (.*t\.json) \(([^)]*)\): wrote (.*) instead \((\d+) samples/.exec(r.stderr)
    assert.ok(m, r.stderr)
    assert.equal(m[1], path.join(dir, name))
    return { r, kept: m[3], reason: m[2] }
  }

  test('the directory removed during the run: the trace is kept in the temporary directory, exit status 1', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'gone-'))
    // A name of 250 bytes, non-ASCII: the kept file's name must still fit.
    const { r, kept, reason } = runEnding('remove', dir, `${'é'.repeat(120)}t.json`)
    assert.equal(r.code, 1, r.stderr)
    assert.equal(reason, 'no such file or directory')
    assert.ok(kept.startsWith(os.tmpdir()), kept)
    assert.ok(sampledNames(readTrace(kept)).has('burnMain'), 'the kept trace is the recording')
    assert.match(r.stderr, /exit status 1: a trace could not be written where asked/)
    fs.rmSync(kept)
  })

  test(
    'the directory made read-only during the run: the same',
    { skip: !canMakeReadOnly() && 'cannot make a directory read-only here' },
    () => {
      const dir = fs.mkdtempSync(path.join(tmp, 'ro-'))
      readOnly.push(dir)
      const { r, kept } = runEnding('read-only', dir)
      assert.equal(r.code, 1, r.stderr)
      assert.ok(sampledNames(readTrace(kept)).has('burnMain'))
      fs.rmSync(kept)
    },
  )

  test('checked before the app runs: a read-only directory, a parent that is a file, a directory as -o', () => {
    const marker = path.join(tmp, 'must-not-run')
    const app = path.join(tmp, 'marker.js')
    fs.writeFileSync(app, `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`)
    const file = path.join(tmp, 'a-file')
    fs.writeFileSync(file, '')
    const cases = [
      // (Windows says there is no such directory.)
      [path.join(file, 't.json'), /cannot write .*a-file[\\/]t\.json: (a parent is not a directory|no such)/],
      [tmp, /cannot write .*: it is a directory/],
      [path.join(tmp, 'no', 'such', 't.json'), /cannot write .*: no such directory/],
    ]
    if (canMakeReadOnly()) {
      const ro = fs.mkdtempSync(path.join(tmp, 'ro-before-'))
      makeReadOnly(ro)
      cases.push([
        path.join(ro, 't.json'),
        /cannot write .*t\.json: (permission denied|operation not permitted|read-only file system)/,
      ])
    }
    for (const [out, message] of cases) {
      const r = jsprof(['record', '-o', out, '--', process.execPath, app])
      assert.equal(r.code, 1, r.stderr)
      assert.match(r.stderr, message)
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      assert.ok(!fs.existsSync(marker), `the app did not run for -o ${out}`)
    }
  })
})

describe('jsprof record: -o - and the umask', () => {
  test("-o - writes the trace to stdout (the command's own output goes to stderr), no file named '-'", () => {
    const dir = dirWith('stdout', {
      'app.js': `console.log('the app says hi')
function burnMain(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1); return x }
burnMain(200)`,
    })
    const r = jsprof(['record', '-o', '-', '--', process.execPath, path.join(dir, 'app.js')], { cwd: dir })
    assert.equal(r.code, 0, r.stderr)
    const trace = JSON.parse(r.stdout)
    assert.equal(traceProblem(trace), null)
    assert.ok(sampledNames(trace).has('burnMain'))
    assert.match(r.stderr, /the app says hi/)
    assert.match(r.stderr, /wrote stdout \(\d+ samples/)
    assert.ok(!fs.existsSync(path.join(dir, '-')), "no file named '-'")
    // --heap writes a file beside the trace: with -o - it would have nowhere to go.
    const heap = jsprof(['record', '-o', '-', '--heap', '--', process.execPath, path.join(dir, 'app.js')], { cwd: dir })
    assert.equal(heap.code, 2, heap.stderr)
    assert.match(heap.stderr, /--heap writes files beside the trace: give -o a file, not -/)
    assert.equal(heap.stdout, '')
  })

  test(
    "an app that sets its umask to 0o777: the trace is written with the user's permissions and reported",
    {
      skip: process.platform === 'win32' && 'no umask on Windows',
    },
    () => {
      const dir = dirWith('umask', {
        'app.js': `process.umask(0o777)
function burnMain(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1); return x }
burnMain(200)`,
      })
      const out = path.join(dir, 't.json')
      // As another user than root when the tests run as root: root reads a file of mode 000, others do not.
      const asUser = isRoot ? { uid: 65534, gid: 65534 } : {}
      const r = spawnSync(
        '/bin/sh',
        [
          '-c',
          'umask 022; exec "$@"',
          'sh',
          process.execPath,
          BIN,
          'record',
          '-o',
          out,
          '--',
          process.execPath,
          path.join(dir, 'app.js'),
        ],
        {
          cwd: dir,
          encoding: 'utf8',
          timeout: 60_000,
          ...asUser,
        },
      )
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stderr, /wrote .*t\.json \(\d+ samples/)
      assert.doesNotMatch(r.stderr, /no trace was written/)
      assert.equal(fs.statSync(out).mode & 0o777, 0o644)
      assert.ok(sampledNames(readTrace(out)).has('burnMain'))
    },
  )
})

describe('jsprof record: no frame of its own flushes', () => {
  test('a long recording with a flush every 50 ms has no frame of the hook the watcher evaluates', () => {
    const dir = dirWith('flushes', {
      'app.js': `
function work(n) { let x = 0; for (let i = 0; i < n; i++) x += Math.sqrt(i) * Math.sin(i); return x }
function step() { const a = []; for (let i = 0; i < 2000; i++) a.push({ i, s: String(i) }); return JSON.stringify(a).length + work(20000) }
const t = Date.now(); let r = 0; while (Date.now() - t < 2500) r += step()
`,
    })
    const out = path.join(dir, 't.json')
    const r = jsprof(['record', '-o', out, '--flush-every', '50', '--', process.execPath, path.join(dir, 'app.js')])
    assert.equal(r.code, 0, r.stderr)
    const trace = readTrace(out)
    assert.ok(sampledNames(trace).has('step'))
    // The hook's script (Runtime.evaluate) had no URL: an anonymous frame at 1:1 without a resource,
    // on the stack of ~1-2% of samples. It is jsprof's own code now, which no trace shows.
    const anonymousAt11 = (id) => {
      const f = trace.frames[trace.stacks[id].frameId]
      return f.name === '' && f.resourceId === undefined && f.line === 1 && f.column === 1
    }
    const own = trace.samples.filter((s) => {
      for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId) if (anonymousAt11(id)) return true
      return false
    })
    assert.equal(own.length, 0, `${own.length} samples with the flush's anonymous frame`)
    assert.ok(!trace.resources.some((url) => url.includes(path.join('lib', 'record'))), 'no frame of lib/record')
  })
})
