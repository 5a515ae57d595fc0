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
