// Faults while profiling: each scenario runs in a child process with a timeout, so a crash shows as a
// signal or a non-zero status and a hang as a timeout. Where a trace is still due, the child prints it
// (or the rejection it got) as one JSON line.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const TIMEOUT_MS = 30000

/** Common prelude of every child: the package, a CPU burner and a JSON reporter. */
const PRELUDE = `
const { Profiler } = require(${JSON.stringify(root)})
const burn = (ms) => { const end = performance.now() + ms; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); return x }
const report = (o) => process.stdout.write(JSON.stringify(o) + '\\n')
const summary = (t) => ({ samples: t.samples.length, stacks: t.stacks.length, frames: t.frames.length })
`

/**
 * Runs `source` in a child node. `onLine(line, child)` sees each stdout line (to send signals at the
 * right moment). Resolves with { status, signal, stdout, stderr, lines, timedOut }.
 */
function runChild(source, { args = [], env = process.env, onLine = () => {}, timeout = TIMEOUT_MS } = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...args, '-e', PRELUDE + source], { cwd: root, env })
    let stdout = ''
    let stderr = ''
    let pending = ''
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, timeout)
    child.stdout.on('data', (d) => {
      stdout += d
      pending += d
      let nl
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl)
        pending = pending.slice(nl + 1)
        onLine(line, child)
      }
    })
    child.stderr.on('data', (d) => (stderr += d))
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      const lines = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l))
      resolve({ status, signal, stdout, stderr, lines, timedOut })
    })
  })
}

function assertNoCrash(r) {
  assert.equal(r.timedOut, false, `child hung (killed after ${TIMEOUT_MS} ms); stderr: ${r.stderr}`)
  assert.ok(
    !['SIGSEGV', 'SIGABRT', 'SIGBUS', 'SIGILL', 'SIGFPE'].includes(r.signal),
    `child crashed: ${r.signal}\n${r.stderr}`,
  )
  assert.doesNotMatch(r.stderr, /FATAL ERROR|panicked|Segmentation fault|internal error/i)
}

test('a worker terminated while its Profiler runs (and while its stop() is pending) harms no one', async () => {
  const r = await runChild(`
    const { Worker } = require('node:worker_threads')
    const workerSource = \`
      const { Profiler } = require(${JSON.stringify(root)})
      const { parentPort } = require('node:worker_threads')
      const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
      const burn = (ms) => { const end = performance.now() + ms; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); return x }
      parentPort.postMessage('running')
      burn(30)
      if (process.env.STOP_FIRST) p.stop().then(() => parentPort.postMessage('stopped'))
      setInterval(() => burn(5), 1)
    \`
    ;(async () => {
      const mine = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
      const codes = []
      for (const stopFirst of ['', '1', '', '1']) {
        const w = new Worker(workerSource, { eval: true, env: { ...process.env, STOP_FIRST: stopFirst } })
        await new Promise((res) => w.once('message', res))
        await new Promise((res) => setTimeout(res, 40))
        codes.push(await w.terminate())
      }
      burn(50)
      const t = await mine.stop()
      report({ codes, ...summary(t) })
    })()
  `)
  assertNoCrash(r)
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.lines.length, 1, r.stdout)
  assert.deepEqual(r.lines[0].codes, [1, 1, 1, 1], 'terminate() resolves with exit code 1')
  assert.ok(r.lines[0].samples > 0, 'the main thread profiler still gets its samples')
})

test('process.exit() inside samplebufferfull and with stops pending exits with the given code', async () => {
  const r = await runChild(`
    const p = new Profiler({ sampleInterval: 1, maxBufferSize: 5 })
    const q = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    p.addEventListener('samplebufferfull', () => { q.stop(); process.exit(3) })
    setInterval(() => burn(5), 1)
  `)
  assertNoCrash(r)
  assert.equal(r.status, 3, r.stderr)
  assert.equal(r.signal, null)
})

test('an uncaught exception while profiling exits with status 1 and the exception, nothing else', async () => {
  const r = await runChild(`
    const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    burn(30)
    p.stop()
    new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    setTimeout(() => { burn(10); throw new Error('boom from the app') }, 5)
  `)
  assertNoCrash(r)
  assert.equal(r.status, 1)
  assert.match(r.stderr, /boom from the app/)
  assert.doesNotMatch(r.stderr, /jsprof/)
})

test('an unhandled rejection while a stop() is pending exits like any other', async () => {
  const r = await runChild(`
    const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    burn(20)
    p.stop().then((t) => report(summary(t)))
    Promise.reject(new Error('rejected by the app'))
  `)
  assertNoCrash(r)
  assert.equal(r.status, 1)
  assert.match(r.stderr, /rejected by the app/)
})

for (const signal of ['SIGTERM', 'SIGINT']) {
  const skip = process.platform === 'win32' && 'no POSIX signals on Windows (kill() terminates at once)'
  test(
    `${signal} while profiling: default action kills promptly; a handler still gets its trace`,
    { skip },
    async () => {
      const killed = await runChild(
        `
      new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
      report({ ready: true })
      setInterval(() => burn(5), 1)
    `,
        { onLine: (line, child) => line.includes('ready') && child.kill(signal) },
      )
      assert.equal(killed.timedOut, false)
      assert.equal(killed.signal, signal, `status ${killed.status} ${killed.stderr}`)

      const handled = await runChild(
        `
      const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
      process.once(${JSON.stringify(signal)}, async () => {
        clearInterval(timer)
        try { report({ trace: summary(await p.stop()) }) } catch (e) { report({ rejected: String(e) }) }
        process.exit(0)
      })
      burn(30)
      report({ ready: true })
      const timer = setInterval(() => burn(5), 1)
    `,
        { onLine: (line, child) => line.includes('ready') && child.kill(signal) },
      )
      assertNoCrash(handled)
      assert.equal(handled.status, 0, handled.stderr)
      const last = handled.lines.at(-1)
      assert.ok(last.trace, `a trace, got ${JSON.stringify(last)}`)
      assert.ok(last.trace.samples > 0)
    },
  )
}

test('stop() racing a full buffer always resolves with at most maxBufferSize samples', async () => {
  // Each round stops at a different moment around the harvest that fills the buffer: before it, in
  // the same tick, between the harvest and the samplebufferfull event, and after the event.
  const r = await runChild(`
    ;(async () => {
      const results = []
      for (let round = 0; round < 40; round++) {
        const max = 1 + (round % 7)
        const p = new Profiler({ sampleInterval: 1, maxBufferSize: max })
        let fired = 0
        p.addEventListener('samplebufferfull', () => fired++)
        burn(round % 5 * 2)
        const wait = round % 4
        if (wait === 1) await new Promise((res) => setImmediate(res))
        if (wait === 2) await new Promise((res) => setTimeout(res, max + 2))
        if (wait === 3) { burn(max + 3); await new Promise((res) => setTimeout(res, 1)) }
        const stopping = p.stop()
        // A second stop() in the same race must reject, not disturb the first.
        const second = await p.stop().then(() => 'resolved', (e) => e.name)
        try {
          const t = await stopping
          results.push({ max, samples: t.samples.length, fired, second })
        } catch (e) {
          results.push({ max, rejected: String(e), second })
        }
      }
      await new Promise((res) => setTimeout(res, 20))
      report({ results })
    })()
  `)
  assertNoCrash(r)
  assert.equal(r.status, 0, r.stderr)
  const { results } = r.lines[0]
  assert.equal(results.length, 40)
  for (const x of results) {
    assert.equal(x.rejected, undefined, JSON.stringify(x))
    assert.ok(x.samples <= x.max, JSON.stringify(x))
    assert.ok(x.fired <= 1, `samplebufferfull fires at most once: ${JSON.stringify(x)}`)
    assert.equal(x.second, 'InvalidStateError')
  }
})

test("the user's console.profile() while profiling: both the user's profile and the trace survive", async () => {
  const r = await runChild(`
    const inspector = require('node:inspector')
    ;(async () => {
      const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
      // Listen the way a user's tool would, on a session of its own.
      const s = new inspector.Session()
      s.connect()
      const finished = []
      s.on('Profiler.consoleProfileFinished', (m) => finished.push(m.params.title))
      s.post('Profiler.enable')
      console.profile('users-own')
      burn(30)
      const q = new Profiler({ sampleInterval: 0.5, maxBufferSize: 100000 }) // forces a restart
      burn(30)
      console.profileEnd('users-own')
      console.profile() // untitled, and never ended by the user
      burn(30)
      const [a, b] = await Promise.all([p.stop(), q.stop()])
      console.profileEnd()
      report({ a: summary(a), b: summary(b), finished })
    })()
  `)
  assertNoCrash(r)
  assert.equal(r.status, 0, r.stderr)
  const { a, b, finished } = r.lines[0]
  assert.ok(a.samples > 0 && b.samples > 0, JSON.stringify(r.lines[0]))
  assert.ok(finished.includes('users-own'), `the user's console profile finished: ${JSON.stringify(finished)}`)
})

test('another inspector session running Profiler.start/stop concurrently, under --inspect', async () => {
  const r = await runChild(
    `
    const inspector = require('node:inspector')
    ;(async () => {
      const other = new inspector.Session()
      other.connect()
      const post = (m, p) => new Promise((res, rej) => other.post(m, p, (e, r) => (e ? rej(e) : res(r))))
      const traces = []
      const theirs = []
      for (let round = 0; round < 6; round++) {
        const p = new Profiler({ sampleInterval: 1 + round, maxBufferSize: 100000 })
        await post('Profiler.enable')
        await post('Profiler.setSamplingInterval', { interval: 250 })
        await post('Profiler.start')
        burn(20)
        const { profile } = await post('Profiler.stop')
        theirs.push(profile.samples.length)
        if (round % 2) await post('Profiler.disable')
        burn(10)
        traces.push(summary(await p.stop()))
      }
      report({ url: inspector.url(), traces, theirs })
    })()
  `,
    { args: ['--inspect=127.0.0.1:0'] },
  )
  assertNoCrash(r)
  assert.equal(r.status, 0, r.stderr)
  const { url, traces, theirs } = r.lines[0]
  assert.match(url, /^ws:\/\/127\.0\.0\.1:\d+\//)
  assert.equal(traces.length, 6)
  for (const t of traces) assert.ok(t.samples > 0, JSON.stringify(traces))
  for (const n of theirs) assert.ok(n > 0, `the other session's profiles have samples: ${theirs}`)
})

for (const [what, options, expectFile] of [
  ['node --cpu-prof', (dir) => ({ args: ['--cpu-prof', `--cpu-prof-dir=${dir}`] }), /\.cpuprofile$/],
  [
    'NODE_V8_COVERAGE (c8, --experimental-test-coverage)',
    (dir) => ({ env: { ...process.env, NODE_V8_COVERAGE: dir } }),
    /^coverage-.*\.json$/,
  ],
]) {
  test(`under ${what}: no inspector noise on stderr, and both Node's output and our traces are complete`, async () => {
    // V8 reports console profiles to every session with the Profiler domain on: Node's own session
    // would print "Cannot retrieve id from the response message" for each bridged restart. So these
    // harvests restart V8 without the bridge. "Complete" is checked against what V8 itself sampled:
    // every sample V8 took inside a Profiler's window (outside the engine's own harvests) is in its
    // trace. A window in which V8 took no sample at all (its sampler thread starved on a loaded machine:
    // seen both with and without the bridge, docs/bench.md#sampler-starvation) says nothing: that
    // capture is run again, never accepted as complete.
    let last
    for (let attempt = 1; attempt <= 4; attempt++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-nodeprof-'))
      try {
        const r = await runChild(
          `
        const { getSampler } = require(${JSON.stringify(root)} + '/lib/sampler/index.js')
        const { timeOriginUs } = require(${JSON.stringify(root)} + '/lib/clock.js')
        // What V8 itself handed out at each harvest (sample times, ms): the engine's session, watched
        // from before the first Profiler.
        const v8Samples = []
        {
          const session = getSampler().session
          for (const m of ['take', 'stop']) {
            const own = session[m].bind(session)
            session[m] = () => {
              const taken = own()
              for (const p of taken) {
                let t = p.startTime
                for (const d of p.timeDeltas || []) v8Samples.push(((t += d) - timeOriginUs()) / 1000)
              }
              return taken
            }
          }
        }
        ;(async () => {
          const traces = []
          for (let round = 0; round < 4; round++) {
            const a = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
            const aFrom = performance.now()
            const b = new Profiler({ sampleInterval: 2, maxBufferSize: 100000 })
            const bFrom = performance.now()
            burn(15)
            const bTo = performance.now()
            const tb = await b.stop()
            traces.push({ ...summary(tb), interval: 2, from: bFrom, to: bTo, times: tb.samples.map((s) => s.timestamp) })
            burn(15)
            const aTo = performance.now()
            const ta = await a.stop()
            traces.push({ ...summary(ta), interval: 1, from: aFrom, to: aTo, times: ta.samples.map((s) => s.timestamp) })
          }
          // The engine's own harvest windows (ms), whose samples it drops from every trace.
          const harvests = getSampler().stats.recentOwnWindows.map((w) => w.map((us) => (us - timeOriginUs()) / 1000))
          report({ traces, stats: getSampler().session.stats, v8Samples, harvests })
        })()
      `,
          options(dir),
        )
        assertNoCrash(r)
        assert.equal(r.status, 0, r.stderr)
        assert.equal(r.stderr, '', 'nothing on stderr')
        const { traces, stats, v8Samples, harvests } = r.lines[0]
        assert.equal(stats.bridgedRestarts, 0, JSON.stringify(stats))
        const written = fs.readdirSync(dir).filter((f) => expectFile.test(f))
        assert.equal(written.length, 1, `node wrote its own output: ${fs.readdirSync(dir)}`)
        assert.ok(fs.statSync(path.join(dir, written[0])).size > 0)
        let starved = false
        for (const t of traces) {
          const ours = (x) => harvests.some(([from, to]) => x >= from - 0.001 && x <= to + 0.001)
          const taken = v8Samples.filter((x) => x > t.from && x < t.to && !ours(x))
          const kept = new Set(t.times.map((x) => Math.round(x * 1000)))
          const missing = taken.filter((x) => !kept.has(Math.round(x * 1000)))
          if (t.interval === 1)
            assert.deepEqual(missing, [], `samples V8 took that the trace lost: ${JSON.stringify(t)}`)
          else if (taken.length > 0) assert.ok(t.samples > 0, `V8 sampled ${taken.length} times, the trace kept none`)
          if (t.samples === 0 && taken.length === 0) starved = true
          else assert.ok(t.samples > 0, JSON.stringify(traces.map((x) => x.samples)))
        }
        last = traces.map((t) => t.samples)
        if (!starved) return
      } finally {
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }
    assert.fail(
      `V8 took no sample in some Profiler's window in 4 captures (a starved sampler): ${JSON.stringify(last)}`,
    )
  })
}
