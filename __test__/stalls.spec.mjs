// watchStalls (issue 27): event-loop stall traces. No timed assertion: each test asserts what the
// traces say (their stall, their frames), and deliveries are awaited with generous bounds, so they
// hold on a loaded 2-core machine.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'
import { burn, sampledFunctions } from './prod-helpers.mjs'
import { labelsByFunction } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { watchStalls, summarize, startContinuous } = require('..')

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Resolves with the first `n` deliveries of `onStall` that `which` accepts (or rejects after `ms`): on a
 * loaded machine the test process may stall by itself too (module loading, a cold V8 start).
 */
function collector(n, which = () => true, ms = 30_000) {
  const got = []
  let done
  const all = new Promise((resolve, reject) => {
    done = resolve
    setTimeout(() => reject(new Error(`only ${got.length} of ${n} stall traces in ${ms} ms`)), ms).unref()
  })
  return {
    onStall(stall) {
      if (!which(stall)) return
      got.push(stall)
      if (got.length === n) done(got)
    },
    all,
    got,
  }
}

/** Accepts a stall whose trace samples the function `name`. */
const holding = (name) => (stall) => sampledFunctions(stall.trace).get(name) > 0

test('options: bad input is a TypeError or RangeError naming the option', () => {
  assert.throws(() => watchStalls({ thresholdMs: 100 }), { name: 'TypeError', message: /onStall or options.dir/ })
  assert.throws(() => watchStalls({ onStall() {}, thresholdMs: 1 }), { name: 'RangeError', message: /thresholdMs/ })
  assert.throws(() => watchStalls({ onStall() {}, thresholdMs: 'abc' }), { name: 'TypeError', message: /thresholdMs/ })
  assert.throws(() => watchStalls({ onStall() {}, maxPerMinute: -1 }), { name: 'RangeError' })
  assert.throws(() => watchStalls({ onStall: 1 }), { name: 'TypeError', message: /onStall must be a function/ })
  assert.throws(() => watchStalls({ onStall() {}, treshold: 5 }), {
    name: 'TypeError',
    message: /did you mean 'thresholdMs'/,
  })
  assert.throws(() => watchStalls({ onStall() {}, keepWarm: 1 }), { name: 'TypeError', message: /keepWarm/ })
  assert.throws(() => watchStalls('x'), { name: 'TypeError' })
  assert.throws(() => startContinuous({ onChunk() {}, stalls: 5 }), { name: 'TypeError', message: /stalls/ })
})

test('one watcher per thread; stop() lets another start', async () => {
  const first = watchStalls({ onStall() {} })
  assert.throws(() => watchStalls({ onStall() {} }), { name: 'TypeError', message: /already watched/ })
  await first.stop()
  await first.stop()
  const second = watchStalls({ onStall() {} })
  await second.stop()
})

test('a stalled turn that ends: its whole trace, how long it was, the function that held the loop', async () => {
  const c = collector(1, holding('holdTheLoop'))
  const watch = watchStalls({ thresholdMs: 150, keepWarm: true, onStall: c.onStall })
  try {
    await sleep(100)
    setTimeout(function holdTheLoop() {
      burn(700)
    }, 20)
    const [stall] = await c.all
    assert.equal(stall.stall.ended, true)
    assert.ok(stall.stall.durationMs >= 150, `a stall of ${stall.stall.durationMs} ms`)
    assert.deepEqual(stall.trace.jsprof.stall, stall.stall)
    assert.equal(stall.stall.thresholdMs, 150)
    // A continuous chunk's shape, so an exporter's push takes it.
    for (const key of ['index', 'startTime', 'endTime', 'startUnixMs', 'endUnixMs', 'sampleInterval', 'truncated'])
      assert.ok(key in stall, key)
    // The trace is valid (summarize validates it) and names the function that held the loop.
    const counts = sampledFunctions(stall.trace)
    assert.ok(counts.get('holdTheLoop') > 0, `frames: ${[...counts.keys()].join(', ')}`)
    assert.ok(summarize(stall.trace, { by: 'function' }).some((row) => row.name.startsWith('holdTheLoop')))
    // jsprof's members in lexicographic order (as WebIDL orders a dictionary).
    const keys = Object.keys(stall.trace.jsprof)
    assert.deepEqual(keys, [...keys].sort())
  } finally {
    await watch.stop()
  }
})

test('nothing stalls: no stall trace; at most maxPerMinute traces when it stalls often', async () => {
  let traces = 0
  const quiet = watchStalls({ thresholdMs: 2000, onStall: () => traces++ })
  try {
    // Short turns only, for a second.
    for (let i = 0; i < 50; i++) {
      burn(2)
      await sleep(20)
    }
  } finally {
    await quiet.stop()
  }
  assert.equal(traces, 0)
  assert.equal(quiet.stats.detected, 0)

  const c = collector(1)
  const limited = watchStalls({ thresholdMs: 100, maxPerMinute: 1, onStall: c.onStall })
  try {
    for (let i = 0; i < 3; i++) {
      burn(400)
      await sleep(150)
    }
    await c.all
    await sleep(300)
  } finally {
    await limited.stop()
  }
  assert.equal(c.got.length, 1)
  assert.ok(limited.stats.limited >= 1, JSON.stringify(limited.stats))
})

test('a worker thread is watched the same way: its stalled turn is traced when it ends', async () => {
  const source = `
    const { parentPort } = require('node:worker_threads')
    const { watchStalls } = require(${JSON.stringify(require.resolve('..'))})
    const watch = watchStalls({
      thresholdMs: 150,
      keepWarm: true,
      onError: (err) => parentPort.postMessage({ error: String(err && err.stack) }),
      onStall({ trace, stall }) {
        const names = new Set()
        for (const s of trace.samples)
          for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId)
            names.add(trace.frames[trace.stacks[id].frameId].name)
        parentPort.postMessage({ stall, names: [...names], threadId: trace.jsprof.threadId })
        clearInterval(work)
        watch.stop().then(() => parentPort.close())
      },
    })
    // The worker has work to do after the stall (else its loop empties and it ends first).
    const work = setInterval(() => {}, 100)
    setTimeout(function workerHoldsItsLoop() {
      const end = performance.now() + 600
      while (performance.now() < end) {}
    }, 100)
  `
  const worker = new Worker(source, { eval: true })
  const failed = once(worker, 'error').then(([err]) => {
    throw err
  })
  const [message] = await Promise.race([
    once(worker, 'message'),
    failed,
    sleep(30_000).then(() => {
      throw new Error('no stall trace from the worker')
    }),
  ])
  await worker.terminate()
  assert.equal(message.error, undefined)
  assert.equal(message.stall.ended, true)
  assert.ok(message.threadId > 0)
  assert.ok(message.names.includes('workerHoldsItsLoop'), message.names.join(', '))
})

/** Starts the Express fixture; resolves with { child, port, lines, next(pred) }. */
async function startServer(env) {
  const child = spawn(process.execPath, [path.join(import.meta.dirname, 'fixtures', 'stall-server.cjs')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = []
  const waiters = []
  let buffer = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (data) => {
    buffer += data
    let i
    while ((i = buffer.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffer.slice(0, i))
      buffer = buffer.slice(i + 1)
      lines.push(line)
      for (const w of [...waiters]) if (w.pred(line)) w.resolve(line)
    }
  })
  const next = (pred, ms = 60_000) =>
    new Promise((resolve, reject) => {
      const found = lines.find(pred)
      if (found) return resolve(found)
      const w = { pred, resolve }
      waiters.push(w)
      setTimeout(() => reject(new Error(`timed out; lines: ${JSON.stringify(lines)}`)), ms).unref()
    })
  const { listening: port } = await next((l) => l.listening)
  return { child, port, lines, next }
}

test('an Express server: ReDoS names its RegExp: frame, JSON.parse its handler, while(true) is traced while it spins and one SIGTERM ends it', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-stalls-'))
  const { child, port, next } = await startServer({ STALL_DIR: dir, THRESHOLD_MS: '200', KEEP_WARM: '1' })
  const base = `http://127.0.0.1:${port}`
  try {
    // Traffic first: the shared validation pattern is compiled to native code (a `RegExp:` frame).
    for (let i = 0; i < 3; i++) await fetch(`${base}/ok?name=aaaa`).then((r) => r.text())
    const load = setInterval(() => fetch(`${base}/ok`).catch(() => {}), 50)
    try {
      // ReDoS: a stall of ~1 s (its length grows 2x per character: n adapts to the machine's speed).
      let redos
      for (const n of [25, 26, 27]) {
        await fetch(`${base}/redos?n=${n}`).then((r) => r.text())
        redos = await next((l) => l.stall !== undefined && l.leaf?.[0]?.startsWith('RegExp: '), 5_000).catch(() => null)
        if (redos) break
      }
      assert.ok(redos, 'a stall trace whose most sampled frame is the RegExp: frame')
      assert.equal(redos.leaf[1], 'handleRedos', JSON.stringify(redos))
      assert.equal(redos.ended, true)

      // JSON.parse of a large body: V8 gives its C++ builtin no frame, so its time is the handler's.
      const body = JSON.stringify(Array.from({ length: 400_000 }, (_, i) => ({ id: i, name: `item${i}`, tags: ['a'] })))
      await fetch(`${base}/parse`, { method: 'POST', body }).then((r) => r.text())
      const parse = await next((l) => l.stall !== undefined && l.leaf?.[0] === 'handleParse')
      assert.ok(parse.stall >= 200)
    } finally {
      clearInterval(load)
    }

    // while (true) {}: the trace so far is written while the loop still spins.
    const before = new Set(fs.readdirSync(dir))
    fetch(`${base}/spin`).catch(() => {})
    // (The trace of the JSON.parse stall may still be on its way to the directory: not this one.)
    const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))
    let trace
    for (let waited = 0; !trace && waited < 30_000; waited += 50) {
      await sleep(50)
      const file = fs.readdirSync(dir).find((f) => f.endsWith('.json') && !before.has(f) && !read(f).jsprof.stall.ended)
      trace = file && read(file)
    }
    assert.ok(trace, 'a stall trace file while the loop spins')
    assert.equal(trace.jsprof.stall.ended, false)
    // The stack at the detection, taken inside the spinning code.
    assert.match(trace.jsprof.stall.stack[0], /^handleSpin \(.*stall-server\.cjs:\d+:\d+\)$/)
    assert.ok(sampledFunctions(trace).get('handleSpin') > 0, JSON.stringify(trace.frames.map((f) => f.name)))
    // The helper's hook ran inside the spinning code (an evaluated script): jsprof's own, never a frame.
    assert.deepEqual(
      trace.frames.filter((f) => f.resourceId === undefined && f.line !== undefined),
      [],
      'no generated frame',
    )
    assert.equal(child.exitCode, null, 'still running (spinning)')
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    const [code, signal] = await exited
    assert.equal(signal, 'SIGTERM', `exit code ${code}`)
  } finally {
    child.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('jsprof record --stalls: each stall beside the trace, also one still spinning at SIGTERM; jsprof report names who held the loop', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-record-stalls-'))
  const app = path.join(dir, 'app.js')
  fs.writeFileSync(
    app,
    `setTimeout(function holdTheLoop() { const end = performance.now() + 700; while (performance.now() < end) {} }, 200)
     setTimeout(function spinForever() { while (true) {} }, 1500)`,
  )
  const cli = path.join(import.meta.dirname, '..', 'bin', 'jsprof.js')
  const output = path.join(dir, 't.trace.json')
  const child = spawn(process.execPath, [cli, 'record', '--stalls', '-o', output, '--', process.execPath, app], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  try {
    // Both stalls' files appear (the second while the app still spins), then one SIGTERM ends it.
    const second = path.join(dir, 't.trace.stall-2.json')
    for (let waited = 0; !fs.existsSync(second) && waited < 60_000; waited += 100) await sleep(100)
    assert.ok(fs.existsSync(second), `no second stall trace; stderr: ${stderr}`)
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    const [code] = await exited
    assert.equal(code, 143, stderr)
    assert.match(stderr, /t\.trace\.stall-1\.json \(an event-loop stall/)
    const report = (file) =>
      new Promise((resolve) => {
        const r = spawn(process.execPath, [cli, 'report', file, '--by', 'function'], {
          stdio: ['ignore', 'pipe', 'inherit'],
        })
        let out = ''
        r.stdout.on('data', (d) => (out += d))
        r.on('exit', () => resolve(out))
      })
    assert.match(
      await report(path.join(dir, 't.trace.stall-1.json')),
      /event-loop stall: blocked .*the loop then turned again\); held by holdTheLoop/,
    )
    const spinning = await report(second)
    assert.match(spinning, /event-loop stall: blocked .*still blocked when this trace was taken\); held by spinForever/)
    // The stack at the detection, taken inside the spinning code.
    assert.match(spinning, /stack at the detection \(innermost first\): Timeout\.spinForever/)
  } finally {
    child.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('continuous mode with stalls: a stall trace goes to onChunk beside the chunks, marked by its stall', async () => {
  const c = collector(1, holding('continuousHolds'))
  const continuous = startContinuous({
    chunkSeconds: 60,
    stalls: { thresholdMs: 150 },
    onChunk(chunk) {
      if (chunk.stall) c.onStall(chunk)
    },
  })
  try {
    await sleep(100)
    setTimeout(function continuousHolds() {
      burn(600)
    }, 20)
    const [stall] = await c.all
    assert.equal(stall.stall.ended, true)
    assert.deepEqual(stall.trace.jsprof.stall, stall.stall)
    // The sampler ran all along: the trace holds the stalled turn from its start.
    assert.ok(sampledFunctions(stall.trace).get('continuousHolds') > 0)
  } finally {
    await continuous.stop()
  }
})

test("a gap made mostly of the sampler's own harvests is the profiler's, not the app's", () => {
  const { ownShare } = require('../lib/api/stalls.js')
  // [from, to] µs of recent harvests against a gap between two beats.
  assert.equal(ownShare([], 0, 1000), 0)
  assert.equal(ownShare([[100, 700]], 0, 1000), 0.6)
  assert.equal(
    ownShare(
      [
        [-500, 100],
        [900, 5000],
      ],
      0,
      1000,
    ),
    0.2,
  )
  assert.equal(ownShare([[0, 1000]], 500, 500), 0)
})

// --- Issue 40 and 42: stalls from the first instant, the hang past the rate limit, durations, dir. ---

const index = JSON.stringify(require.resolve('..'))
const cli = path.join(import.meta.dirname, '..', 'bin', 'jsprof.js')

/** A temporary directory, removed after the test. */
function tempDir(t, name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `jsprof-${name}-`))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * Runs `source` (CommonJS) in a child Node; resolves with { code, signal, stdout, stderr }.
 * `fileLimitKb`: the child's files can be at most that large (a shell's `ulimit -f`).
 */
function runNode(source, { fileLimitKb, timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const [file, args] =
      fileLimitKb === undefined
        ? [process.execPath, ['-e', source]]
        : ['/bin/sh', ['-c', `ulimit -f ${fileLimitKb} && exec "$0" -e "$1"`, process.execPath, source]]
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`timed out; stdout: ${stdout}; stderr: ${stderr}`))
    }, timeoutMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** Waits (at most `ms`) for a file in `dir` whose name `which` accepts and whose JSON `ok` accepts. */
async function fileIn(dir, which, ok = () => true, ms = 30_000) {
  for (let waited = 0; waited < ms; waited += 50) {
    for (const name of fs.readdirSync(dir).filter(which)) {
      try {
        const trace = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'))
        if (ok(trace)) return { name, trace }
      } catch {}
    }
    await sleep(50)
  }
  return null
}

test('a stall from the first instant (watchStalls, then an endless loop at once) is traced while it spins', async (t) => {
  const dir = tempDir(t, 'stall-first')
  // The helper thread comes up while the loop already spins: the stall told before it listened still
  // reaches it.
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require(${index}).watchStalls({ thresholdMs: 50, keepWarm: true, stuckMs: 50, dir: ${JSON.stringify(dir)} })
       ;(function spinFromStart() { for (;;) {} })()`,
    ],
    { stdio: 'ignore' },
  )
  t.after(() => child.kill('SIGKILL'))
  const found = await fileIn(dir, (n) => n.endsWith('.json'))
  assert.ok(found, 'a stall trace while the loop spins from the start')
  assert.equal(found.name, `stall-${child.pid}-1.json`)
  assert.equal(found.trace.jsprof.stall.ended, false)
  assert.match(found.trace.jsprof.stall.stack[0], /^spinFromStart /)
})

test('jsprof record --stalls: a stall from start-up is traced as t.stall-1.json, and named', async (t) => {
  const dir = tempDir(t, 'record-first')
  const app = path.join(dir, 'spin.js')
  fs.writeFileSync(app, 'function spin() { for (;;) {} }\nspin()\n')
  const output = path.join(dir, 't.json')
  // A file of an earlier run with this -o is not this run's stall.
  fs.writeFileSync(path.join(dir, 't.stall-7.json'), '{}')
  fs.utimesSync(path.join(dir, 't.stall-7.json'), new Date(2000, 0, 1), new Date(2000, 0, 1))
  const args = [cli, 'record', '--stalls', '--stall-threshold', '50', '-o', output, '--', process.execPath, app]
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  t.after(() => child.kill('SIGKILL'))
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const found = await fileIn(dir, (n) => /^t\.stall-\d+\.json$/.test(n) && n !== 't.stall-7.json')
  assert.ok(found, `no stall trace; stderr: ${stderr}`)
  assert.equal(found.name, 't.stall-1.json')
  assert.equal(found.trace.jsprof.stall.ended, false)
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const [code] = await exited
  assert.equal(code, 143, stderr)
  assert.match(stderr, /wrote .*t\.stall-1\.json \(an event-loop stall/)
  assert.doesNotMatch(stderr, /no event-loop stall/)
  assert.doesNotMatch(stderr, /stall-7/)
})

test('past the rate limit, a stall still running is traced: the hang (issue 42 script)', async (t) => {
  const dir = tempDir(t, 'stall-limit')
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const w = require(${index}).watchStalls({ thresholdMs: 100, dir: ${JSON.stringify(dir)} })
       function block(ms) { const e = Date.now() + ms; while (Date.now() < e); }
       let n = 0
       const t = setInterval(() => { block(150); if (++n === 8) { clearInterval(t); setTimeout(function spinForever() { for (;;); }, 200) } }, 300)`,
    ],
    { stdio: 'ignore' },
  )
  t.after(() => child.kill('SIGKILL'))
  const found = await fileIn(
    dir,
    (n) => n.endsWith('.json'),
    (trace) => trace.jsprof.stall.ended === false,
    60_000,
  )
  assert.ok(found, `no trace of the endless loop; files: ${fs.readdirSync(dir).join(', ')}`)
  assert.match(found.trace.jsprof.stall.stack[0], /spinForever/)
  // The ended ones within the limit (6 a minute), numbered from 1 with the hang after them.
  const ended = fs.readdirSync(dir).filter((n) => n !== found.name && n.endsWith('.json'))
  assert.ok(ended.length <= 6, ended.join(', '))
  assert.equal(found.name, `stall-${child.pid}-${ended.length + 1}.json`)
})

/**
 * Runs `stalls` blocking calls in a child, each in its own timer, measured around the call, under
 * watchStalls; resolves with [{ measured, stall, samples: [timestamps] }]. `size`: code run first that
 * sets `n` for `call` (sizes it to this machine's speed).
 */
async function measuredStalls(call, { keepWarm, thresholdMs, stalls = 4, size = '' }) {
  const { stdout, stderr, code } = await runNode(
    `const { watchStalls } = require(${index})
     const crypto = require('node:crypto')
     let n = 0
     ${size}
     const out = []
     const w = watchStalls({ thresholdMs: ${thresholdMs}, keepWarm: ${keepWarm}, maxPerMinute: 600, onStall(s) {
       out.push({ stall: s.stall, samples: s.trace.samples.map((x) => x.timestamp) })
     } })
     const measured = []
     let done = 0
     function next() {
       // At a random point between two beats (a quarter threshold apart).
       setTimeout(function stalls() {
         const t0 = performance.now()
         ${call}
         measured.push({ t0, ms: performance.now() - t0 })
         if (++done < ${stalls}) next()
         else setTimeout(() => w.stop().then(() => console.log(JSON.stringify({ measured, out }))), 300)
       }, 200 + Math.random() * ${thresholdMs / 4})
     }
     next()`,
  )
  assert.equal(code, 0, stderr)
  const { measured, out } = JSON.parse(stdout)
  // Each stall's trace is the one whose start is nearest the call's.
  return measured.map((m) => {
    const near = (x) => Math.abs(x.stall.start - m.t0)
    const mine = out.reduce((a, b) => (a === null || near(b) < near(a) ? b : a), null)
    return { measured: m.ms, stall: null, samples: [], ...mine }
  })
}

/** Whether a stall's reported duration is the measured one within 5% or 10 ms, and its samples within it. */
function agrees({ measured, stall, samples }) {
  if (stall === null) return false
  const tolerance = Math.max(10, 0.05 * measured)
  const end = stall.start + stall.durationMs
  return (
    Math.abs(stall.durationMs - measured) <= tolerance &&
    samples.every((time) => time >= stall.start - 0.5 && time <= end + 0.5)
  )
}

/** Sets `n`: the iterations of pbkdf2Sync that take about `ms` on this machine now. */
const pbkdf2Size = (ms) => `
  for (n = 10_000; ; n *= 2) {
    const t0 = performance.now()
    crypto.pbkdf2Sync('secret', 'salt', n, 64, 'sha512')
    const took = performance.now() - t0
    if (took >= 50) { n = Math.ceil((n * ${ms}) / took); break }
  }`
const pbkdf2 = "crypto.pbkdf2Sync('secret', 'salt', n, 64, 'sha512')"

// The stalls: 150 ms blocks at a 100 ms threshold (beats 25 ms apart), a pbkdf2Sync of about
// 450 ms at the default 300 ms (beats 75 ms apart: more than 5% of the call).
for (const keepWarm of [true, false]) {
  for (const [what, call, thresholdMs, stalls, size] of [
    ['150 ms blocks', 'const e = Date.now() + 150; while (Date.now() < e);', 100, 4, ''],
    ['crypto.pbkdf2Sync', pbkdf2, 300, 5, pbkdf2Size(450)],
  ]) {
    test(`durations (keepWarm: ${keepWarm}): ${what} reported as long as measured around the call, samples within the turn`, async () => {
      // A descheduled test process can lengthen one turn without the call: up to three captures.
      let last
      for (let attempt = 0; attempt < 3; attempt++) {
        last = await measuredStalls(call, { keepWarm, thresholdMs, stalls, size })
        if (last.every(agrees)) break
      }
      const shown = last.map(({ measured, stall, samples }) =>
        stall === null
          ? `${measured.toFixed(1)} ms measured, no stall trace`
          : `${measured.toFixed(1)} ms measured, ${stall.durationMs.toFixed(1)} reported; samples ${samples
              .map((s) => (s - stall.start).toFixed(1))
              .join(' ')}`,
      )
      assert.ok(last.every(agrees), shown.join('\n'))
    })
  }
}

test("the detection's stack in native code says how late it was taken (stackDelayMs), and jsprof report what it is", async (t) => {
  let stalls
  for (let attempt = 0; attempt < 3; attempt++) {
    stalls = await measuredStalls(pbkdf2, { keepWarm: true, thresholdMs: 100, stalls: 1, size: pbkdf2Size(800) })
    // The interrupt waited for the native call to return: the thread ran on for 50 ms or more (its CPU
    // time: load does not count), well past the 10 ms from which jsprof report calls it native code.
    if (stalls[0].stall?.stackDelayMs >= 50) break
  }
  const [{ stall, measured }] = stalls
  assert.ok(stall, 'no stall trace')
  assert.ok(stall.stackDelayMs >= 50, `${stall.stackDelayMs} ms after, of ${measured}`)
  assert.ok(
    stall.stack.some((frame) => frame.startsWith('Object.pbkdf2Sync ')),
    stall.stack.join(' < '),
  )
  // jsprof report says what that stack is.
  const dir = tempDir(t, 'stall-native')
  const file = path.join(dir, 'stall.json')
  fs.writeFileSync(file, JSON.stringify({ frames: [], jsprof: { stall }, resources: [], samples: [], stacks: [] }))
  const report = spawn(process.execPath, [cli, 'report', file], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  report.stdout.on('data', (d) => (out += d))
  await once(report, 'exit')
  assert.match(out, /\nstack [\d.]+ (ms|s) after the detection, once native code returned \(innermost first\): /)
})

test("a worker's last stalled turn is delivered before the thread ends (its loop empties, or process.exit)", async () => {
  const worker = (exit) =>
    new Promise((resolve, reject) => {
      const source = `
        const { parentPort } = require('node:worker_threads')
        require(${index}).watchStalls({
          thresholdMs: 50,
          keepWarm: true,
          onStall: ({ stall, trace }) => parentPort.postMessage({ stall, samples: trace.samples.length }),
        })
        setTimeout(function lastTurn() {
          const end = performance.now() + 400
          while (performance.now() < end) {}
          ${exit ? 'process.exit(0)' : ''}
        }, 100)`
      const w = new Worker(source, { eval: true })
      const got = []
      w.on('message', (m) => got.push(m))
      w.on('error', reject)
      w.on('exit', () => resolve(got))
    })
  const results = await Promise.all([worker(false), worker(false), worker(false), worker(true), worker(true)])
  for (const [i, got] of results.entries()) {
    const last = got.find((m) => m.stall.durationMs >= 350)
    assert.ok(last, `worker ${i}: ${JSON.stringify(got)}`)
    assert.equal(last.stall.ended, true)
    assert.ok(last.samples > 0, `worker ${i}: no samples`)
  }
})

test("the main thread's last stalled turn is written before it exits by itself; the watcher never holds it open", async (t) => {
  for (const keepWarm of [false, true]) {
    const dir = tempDir(t, 'stall-last')
    const { code, stderr } = await runNode(
      `require(${index}).watchStalls({ thresholdMs: 50, keepWarm: ${keepWarm}, dir: ${JSON.stringify(dir)} })
       setTimeout(function lastTurn() { const end = performance.now() + 300; while (performance.now() < end) {} }, 100)`,
      { timeoutMs: 30_000 },
    )
    assert.equal(code, 0, stderr)
    // Numbered 1, 2, … (a loaded machine may stall the child's start-up too), each the whole turn's
    // (a snapshot, written when the turn ran past stuckMs, replaced); the last one is the last turn.
    const files = fs.readdirSync(dir)
    assert.ok(files.length > 0, `keepWarm ${keepWarm}: no stall trace`)
    const numbers = files.map((f) => Number(/^stall-\d+-(\d+)\.json$/.exec(f)?.[1])).sort((a, b) => a - b)
    assert.deepEqual(
      numbers,
      files.map((_, i) => i + 1),
      `keepWarm ${keepWarm}: ${files.join(', ')}`,
    )
    const stalls = numbers.map((n) =>
      JSON.parse(
        fs.readFileSync(
          path.join(
            dir,
            files.find((f) => f.endsWith(`-${n}.json`)),
          ),
          'utf8',
        ),
      ),
    )
    for (const trace of stalls) assert.equal(trace.jsprof.stall.ended, true)
    const last = stalls.at(-1)
    assert.ok(last.jsprof.stall.durationMs >= 250, JSON.stringify(last.jsprof.stall))
    const named =
      last.jsprof.stall.stack?.some((frame) => frame.includes('lastTurn')) || sampledFunctions(last).get('lastTurn') > 0
    assert.ok(named, JSON.stringify(last.jsprof.stall))
  }
})

test('stop() has a deadline (stopTimeoutMs): an onStall or onChunk that never settles is counted, not awaited', async () => {
  assert.throws(() => watchStalls({ onStall() {}, stopTimeoutMs: -1 }), {
    name: 'RangeError',
    message: /stopTimeoutMs/,
  })
  assert.throws(() => startContinuous({ onChunk() {}, stopTimeoutMs: 'x' }), { name: 'TypeError' })
  const never = () => new Promise(() => {})
  const bound = (promise, what) =>
    Promise.race([
      promise,
      sleep(20_000).then(() => {
        throw new Error(`${what}.stop() did not resolve`)
      }),
    ])

  let called = 0
  const watch = watchStalls({ thresholdMs: 100, stopTimeoutMs: 300, onStall: () => (called++, never()) })
  await sleep(50)
  burn(300)
  for (let waited = 0; called === 0 && waited < 20_000; waited += 20) await sleep(20)
  assert.ok(called >= 1)
  await bound(watch.stop(), 'watchStalls')
  // (The test process may have stalled by itself too: each delivery is counted.)
  assert.equal(watch.stats.undelivered, called)
  await bound(watch.stop(), 'watchStalls (again)')

  const continuous = startContinuous({
    chunkSeconds: 60,
    stopTimeoutMs: 300,
    stalls: { thresholdMs: 100 },
    onChunk: never,
  })
  await sleep(50)
  burn(300)
  await sleep(300)
  await bound(continuous.stop(), 'startContinuous')
  // Its last chunk and the stall's trace.
  assert.ok(continuous.stats.undelivered >= 1, JSON.stringify(continuous.stats))
})

test('dir: refused up front when unusable; "" a TypeError; stale temporaries of ours cleaned; at most maxFiles kept', async (t) => {
  const dir = tempDir(t, 'stall-dir')
  assert.throws(() => watchStalls({ dir: '' }), { name: 'TypeError', message: /options\.dir/ })
  assert.throws(() => watchStalls({ dir: 'a\0b' }), { name: 'TypeError', message: /options\.dir/ })
  assert.throws(() => watchStalls({ dir: dir, maxFiles: 0 }), { name: 'RangeError', message: /maxFiles/ })
  // A path under a file, and a directory where no file can be created (root writes anywhere else).
  fs.writeFileSync(path.join(dir, 'file'), '')
  assert.throws(() => watchStalls({ dir: path.join(dir, 'file', 'sub') }), {
    code: 'ENOTDIR',
    message: /^watchStalls: cannot write stall traces to .*file[\\/]sub/,
  })
  let readOnly = path.join(dir, 'read-only')
  fs.mkdirSync(readOnly, { mode: 0o555 })
  if (process.getuid?.() === 0) readOnly = '/proc/self'
  assert.throws(() => watchStalls({ dir: readOnly }), { message: /^watchStalls: cannot write stall traces to / })

  // Temporaries of writers that died mid-write: ours (our naming, a pid that no longer runs) go.
  const dead = spawn(process.execPath, ['-e', '0'])
  await once(dead, 'exit')
  const stale = [`stall-1-3.json.${dead.pid}-0.tmp`, `.stall-1-3.json.${dead.pid}-9f3a0c41d2b7e856.tmp`]
  const kept = [
    `stall-1-3.json.${process.pid}-0.tmp`,
    `notes.${dead.pid}-0.tmp`,
    `stall-1-3.json.${dead.pid}-0.tmp.bak`,
  ]
  for (const name of [...stale, ...kept]) fs.writeFileSync(path.join(dir, name), 'x')
  fs.symlinkSync(path.join(dir, 'file'), path.join(dir, `t.json.${dead.pid}-1.tmp`))
  kept.push(`t.json.${dead.pid}-1.tmp`)

  // Older stall traces of another run count against maxFiles: the oldest go first.
  fs.writeFileSync(path.join(dir, 'stall-1-1.json'), '{}')
  fs.utimesSync(path.join(dir, 'stall-1-1.json'), new Date(2000, 0, 1), new Date(2000, 0, 1))
  const c = collector(4)
  const watch = watchStalls({ thresholdMs: 50, maxPerMinute: 600, maxFiles: 3, dir, onStall: c.onStall })
  try {
    for (const name of stale) assert.ok(!fs.existsSync(path.join(dir, name)), `${name} was not removed`)
    for (const name of kept) assert.ok(fs.existsSync(path.join(dir, name)) || fs.lstatSync(path.join(dir, name)))
    for (let i = 0; i < 4; i++) {
      burn(150)
      await sleep(100)
    }
    await c.all
  } finally {
    await watch.stop()
  }
  const traces = fs.readdirSync(dir).filter((n) => /^stall-\d+-\d+\.json$/.test(n))
  assert.deepEqual(traces.sort(), [2, 3, 4].map((n) => `stall-${process.pid}-${n}.json`).sort())
})

test("dir: the helper thread's failures go to onError and stats.errors, naming the file (EFBIG: ulimit -f)", async (t) => {
  const dir = tempDir(t, 'stall-efbig')
  // Files of at most 1 KiB (a trace is more): the write fails as a full disk would, without a path.
  const { stdout, stderr, code } = await runNode(
    `const errors = []
     process.on('warning', (w) => errors.push('warning: ' + w.message))
     const w = require(${index}).watchStalls({ thresholdMs: 50, stuckMs: 50, keepWarm: true, dir: ${JSON.stringify(dir)},
       onError: (err) => errors.push(err.code + ' ' + err.message) })
     setTimeout(() => {
       const end = performance.now() + 1500
       while (performance.now() < end) {}
       setTimeout(() => w.stop().then(() => console.log(JSON.stringify({ errors, stats: w.stats }))), 500)
     }, 100)`,
    { fileLimitKb: 1 },
  )
  assert.equal(code, 0, stderr)
  const { errors, stats } = JSON.parse(stdout)
  // The spin's snapshot (the helper) and its whole stall (this thread) both failed on one file: both
  // counted, neither a warning. (A loaded machine may stall the child's start-up too: more files.)
  assert.equal(stats.snapshots, 1, JSON.stringify(stats))
  assert.equal(stats.errors, errors.length, JSON.stringify({ errors, stats }))
  for (const e of errors) assert.match(e, /^EFBIG cannot write the stall trace .*stall-\d+-\d+\.json: EFBIG/)
  const files = errors.map((e) => /stall-\d+-\d+\.json/.exec(e)[0])
  assert.ok(
    files.some((f) => files.filter((g) => g === f).length === 2),
    errors.join('\n'),
  )
})

test('jsprof record --interval 1 --stalls: the stall traces are sampled at --interval', async (t) => {
  const dir = tempDir(t, 'record-interval')
  const app = path.join(dir, 'app.js')
  fs.writeFileSync(
    app,
    'setTimeout(function hold() { const e = performance.now() + 400; while (performance.now() < e) {} }, 100)\n',
  )
  const output = path.join(dir, 't.json')
  const args = [cli, 'record', '--interval', '1', '--stall-threshold', '100', '-o', output, '--', process.execPath, app]
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const [code] = await once(child, 'exit')
  assert.equal(code, 0, stderr)
  const trace = JSON.parse(fs.readFileSync(path.join(dir, 't.stall-1.json'), 'utf8'))
  assert.equal(trace.jsprof.sampleInterval, 1)
  // Samples about 1 ms apart (V8's own rate), not watchStalls' default of 10 ms.
  const gaps = trace.samples.slice(1).map((s, i) => s.timestamp - trace.samples[i].timestamp)
  gaps.sort((a, b) => a - b)
  assert.ok(gaps[gaps.length >> 1] < 5, `median gap ${gaps[gaps.length >> 1]} ms`)
})

test("a stall inside a request: its trace carries the request's labels, with no other profiler running", async () => {
  const http = require('node:http')
  const express = require('express')
  const { profileRequests } = require('..')
  // No consumer but the watcher (no keepWarm): the integration enters each request's context while it
  // looks, and the sampler the stall starts records the stalled request's context first.
  const requests = profileRequests({ sampleRate: 0, keepWarm: 0, onProfile() {} })
  const app = express()
  app.use(requests.express())
  app.get('/slow/:id', function stallingHandler(req, res) {
    burn(700)
    res.end('done')
  })
  const server = http.createServer(app)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const c = collector(1, holding('stallingHandler'))
  const watch = watchStalls({ thresholdMs: 150, onStall: c.onStall })
  try {
    await sleep(100)
    await fetch(`http://127.0.0.1:${server.address().port}/slow/7`).then((r) => r.text())
    const [stall] = await c.all
    // Every sample of the stalled handler: the request's labels (the loop's own work after it
    // returned is in no request).
    const { stallingHandler } = labelsByFunction(stall.trace, ['stallingHandler'])
    const total = Object.values(stallingHandler).reduce((a, b) => a + b, 0)
    assert.deepEqual(stallingHandler, { [JSON.stringify({ method: 'GET', route: 'GET /slow/:id' })]: total })
  } finally {
    await watch.stop()
    await requests.close()
    server.close()
  }
})
