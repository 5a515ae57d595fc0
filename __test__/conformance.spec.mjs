// What real Chromium 156 does with the same code (observed in headless Chromium; chrome-oracle.spec.mjs runs
// the same probe against a live one), point by point: the error messages, the members' order in JSON, and
// no frame of the profiler's own code in a trace.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Profiler, profileRequests, startContinuous } from 'jsprof-node'
import { workload, runSliced, assertWellFormed, stackNames } from './helpers.mjs'

const require = createRequire(import.meta.url)
const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const ok = { sampleInterval: 10, maxBufferSize: 100 }

const PREFIX = "Failed to construct 'Profiler': "
const CHROME_ERRORS = [
  ['no argument', () => new Profiler(), TypeError, `${PREFIX}1 argument required, but only 0 present.`],
  ['null', () => new Profiler(null), TypeError, `${PREFIX}The provided value is not of type 'ProfilerInitOptions'.`],
  ['a number', () => new Profiler(42), TypeError, `${PREFIX}The provided value is not of type 'ProfilerInitOptions'.`],
  [
    'a missing member',
    () => new Profiler({ sampleInterval: 10 }),
    TypeError,
    `${PREFIX}Failed to read the 'maxBufferSize' property from 'ProfilerInitOptions': Required member is undefined.`,
  ],
  [
    'undefined (not read as an empty dictionary)',
    () => new Profiler(undefined),
    TypeError,
    `${PREFIX}The provided value is not of type 'ProfilerInitOptions'.`,
  ],
  [
    'a negative interval',
    () => new Profiler({ sampleInterval: -1, maxBufferSize: 10 }),
    RangeError,
    `${PREFIX}Invalid sample interval`,
  ],
  [
    'a call without new',
    () => Profiler(ok),
    TypeError,
    `${PREFIX}Please use the 'new' operator, this DOM object constructor cannot be called as a function.`,
  ],
]

for (const [what, make, type, message] of CHROME_ERRORS) {
  test(`Chrome's error for ${what}`, () => {
    assert.throws(make, (err) => {
      assert.equal(err.constructor, type)
      assert.equal(err.message, message)
      return true
    })
  })
}

test("Chrome's error for a second stop(): DOMException InvalidStateError 'Profiler already stopped.'", async () => {
  const p = new Profiler(ok)
  await p.stop()
  await assert.rejects(p.stop(), (err) => {
    assert.ok(err instanceof DOMException)
    assert.equal(err.name, 'InvalidStateError')
    assert.equal(err.message, 'Profiler already stopped.')
    return true
  })
})

test('the public Profiler behaves as a class: subclassing, instanceof, constructor, prototype', async () => {
  class Mine extends Profiler {
    extra() {
      return 'mine'
    }
  }
  const m = new Mine(ok)
  assert.ok(m instanceof Mine && m instanceof Profiler && m instanceof EventTarget)
  assert.equal(m.extra(), 'mine')
  assert.equal(m.stopped, false)
  const p = new Profiler(ok)
  assert.equal(p.constructor, Profiler)
  assert.equal(Object.getPrototypeOf(p), Profiler.prototype)
  assert.equal(Object.getPrototypeOf(Profiler), EventTarget)
  const d = Object.getOwnPropertyDescriptor(Profiler, 'prototype')
  assert.deepEqual([d.writable, d.enumerable, d.configurable], [false, false, false])
  await Promise.all([m.stop(), p.stop()])
})

test("JSON.stringify gives Chrome's member order: {frames, resources, samples, stacks} and each entry's members sorted", async () => {
  const p = new Profiler({ sampleInterval: 1, maxBufferSize: 10_000 })
  await runSliced(40, workload.runAlpha)
  const trace = await p.stop()
  assertWellFormed(trace)
  const json = JSON.stringify(trace)
  assert.match(json, /^\{"frames":\[.*\],"resources":\[.*\],"samples":\[.*\],"stacks":\[.*\]\}$/)
  const withAll = trace.frames.find((f) => f.resourceId !== undefined && f.line !== undefined)
  assert.deepEqual(Object.keys(withAll), ['column', 'line', 'name', 'resourceId'])
  const child = trace.stacks.find((s) => s.parentId !== undefined)
  assert.deepEqual(Object.keys(child), ['frameId', 'parentId'])
  const scriptSample = trace.samples.find((s) => s.stackId !== undefined)
  assert.deepEqual(Object.keys(scriptSample), ['marker', 'stackId', 'timestamp'])
})

// Where jsprof-node's own code lives, as V8 reports it (file:// URLs and plain paths).
const ownPrefixes = [
  path.join(root, 'lib') + path.sep,
  path.join(root, 'index.js'),
  path.join(root, 'index.mjs'),
  path.join(root, 'binding.js'),
]
const ownUrls = ownPrefixes.flatMap((p) => [p, pathToFileURL(p).href])
const isOwn = (resource) => ownUrls.some((p) => resource.startsWith(p))

function assertNoOwnCode(trace, what) {
  const own = trace.resources.filter(isOwn)
  assert.deepEqual(own, [], `${what}: a resource of jsprof-node's own code`)
  // The builtins and internals it calls (the inspector's post, dispatch) are gone with it.
  for (const s of trace.samples) {
    if (s.stackId === undefined) continue
    const names = stackNames(trace, s.stackId)
    for (const name of ['#post', '#start', '#take', 'dispatch', 'post']) {
      assert.ok(!names.includes(name), `${what}: ${name} in ${names.join(' < ')}`)
    }
  }
}

test("a cold Profiler's first sample is its caller's stack, and no trace shows jsprof-node's code", () => {
  // A fresh process: V8 starts in the constructor, and takes its first sample there.
  const code = `
    const { Profiler } = require(${JSON.stringify(root)})
    function constructsTheProfiler() { return new Profiler({ sampleInterval: 0.2, maxBufferSize: 100000 }) }
    function spin(ms) { const e = Date.now() + ms; let x = 0; while (Date.now() < e) x += Math.random(); return x }
    const p = constructsTheProfiler()
    spin(30)
    p.stop().then((t) => process.stdout.write(JSON.stringify(t)))`
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, r.stderr)
  const trace = JSON.parse(r.stdout)
  assertNoOwnCode(trace, 'a cold Profiler')
  const first = trace.samples[0]
  assert.notEqual(first.stackId, undefined, 'the first sample has a stack')
  assert.equal(stackNames(trace, first.stackId)[0], 'constructsTheProfiler', 'its leaf is the caller')
})

test('no frame of jsprof-node in Profilers that span many harvests, in request profiles or continuous chunks', async () => {
  // Profilers that stop often force harvests (jsprof-node code running while V8 samples).
  const long = new Profiler({ sampleInterval: 0.1, maxBufferSize: 1_000_000 })
  const short = []
  for (let i = 0; i < 40; i++) {
    const p = new Profiler({ sampleInterval: 0.1, maxBufferSize: 1000 })
    workload.runAlpha(1)
    short.push(p.stop())
    await new Promise((resolve) => setImmediate(resolve))
  }
  const chunks = []
  const continuous = startContinuous({ sampleInterval: 0.1, chunkSeconds: 0.05, onChunk: (c) => chunks.push(c.trace) })
  const rp = profileRequests({ sampleRate: 1, sampleInterval: 0.1, maxStopDelay: 10, onProfile: () => {} })
  await runSliced(150, workload.runAlpha)
  await continuous.stop()
  await rp.close()
  const traces = [await long.stop(), ...(await Promise.all(short)), ...chunks]
  const all = traces.reduce((n, t) => n + t.samples.length, 0)
  assert.ok(all > 100, `${all} samples`)
  traces.forEach((t, i) => assertNoOwnCode(t, `trace ${i}`))
})

test("the sampler's harvests leave no sample of themselves: V8's start samples of each restart are dropped", async () => {
  // V8 stamps a sample of the current stack whenever a profile starts; a harvest restarts V8's profile,
  // so without the drop each one put a sample of itself (charged to Node's processImmediate) into
  // every running Profiler: one sample in ten at 10 harvests a second and 10 ms.
  const { getSampler } = require('../lib/sampler/index.js')
  const stats = getSampler().stats
  const { nowUs, timeOriginUs } = require('../lib/clock.js')
  const before = { harvests: stats.harvests, dropped: stats.ownSamplesDropped, startUs: nowUs() }
  const long = new Profiler({ sampleInterval: 10, maxBufferSize: 10_000 })
  for (let i = 0; i < 30; i++) {
    const p = new Profiler({ sampleInterval: 10, maxBufferSize: 100 })
    workload.runAlpha(5)
    p.stop() // frequent stops: harvests at the stop rate (one per 250 ms)
    await new Promise((resolve) => setImmediate(resolve))
  }
  const windows = stats.recentOwnWindows.filter(([from]) => from > before.startUs)
  const trace = await long.stop()
  const harvests = stats.harvests - before.harvests
  assert.ok(harvests >= 2, `${harvests} harvests`)
  // Each harvest that restarted V8 began a profile with a start sample, dropped at the next harvest
  // (and a bridged one also left its bridge's start sample in the profile it ended).
  assert.ok(
    stats.ownSamplesDropped - before.dropped >= harvests - 1,
    `${stats.ownSamplesDropped - before.dropped} dropped of ${harvests} harvests`,
  )
  assert.ok(windows.length >= 1)
  const inside = trace.samples.filter((sample) => {
    const us = sample.timestamp * 1000 + timeOriginUs()
    return windows.some(([from, to]) => us >= from - 1 && us <= to + 1)
  })
  assert.deepEqual(inside, [], 'no sample of the trace lies within a harvest')
  assertWellFormed(trace)
  assertNoOwnCode(trace, 'long')
})

test('a sample with only jsprof-node code and no caller has no stack and the marker other', () => {
  const { fromCpuProfile } = require('jsprof-node')
  const { binding } = require('../lib/native.js')
  const own = pathToFileURL(path.join(root, 'lib', 'api', 'profiler', 'index.js')).href
  const profile = {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1, columnNumber: -1 }, children: [2, 4] },
      { id: 2, callFrame: { functionName: 'Profiler', url: own, lineNumber: 24, columnNumber: 13 }, children: [3] },
      { id: 3, callFrame: { functionName: 'post', url: 'node:inspector', lineNumber: 1, columnNumber: 1 } },
      {
        id: 4,
        callFrame: { functionName: 'app', url: 'file:///app.js', lineNumber: 0, columnNumber: 0 },
        children: [5],
      },
      { id: 5, callFrame: { functionName: 'Profiler', url: own, lineNumber: 24, columnNumber: 13 }, children: [6] },
      { id: 6, callFrame: { functionName: 'dispatch', url: '', lineNumber: -1, columnNumber: -1 }, children: [7] },
      { id: 7, callFrame: { functionName: 'listener', url: 'file:///app.js', lineNumber: 4, columnNumber: 0 } },
    ],
    startTime: 0,
    endTime: 3,
    samples: [3, 6, 7],
    timeDeltas: [1, 1, 1],
  }
  const hidden = require('../lib/trace.js').assembleTrace(
    binding.convertCpuProfile(Buffer.from(JSON.stringify(profile)), 0, true),
  )
  assert.deepEqual(hidden.samples[0], { marker: 'other', timestamp: 0.001 })
  assert.deepEqual(stackNames(hidden, hidden.samples[1].stackId), ['app'], 'the builtin it called goes too')
  assert.deepEqual(stackNames(hidden, hidden.samples[2].stackId), ['listener', 'app'], 'app code it called stays')
  // fromCpuProfile converts other people's profiles as they are.
  const plain = fromCpuProfile(profile)
  assert.ok(plain.frames.some((f) => f.name === 'Profiler'))
})

test('jsprof record leaves jsprof-node out of the trace too (its preload and watcher run in the app)', async () => {
  const { mkdtempSync, readFileSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(path.join(tmpdir(), 'jsprof-own-'))
  try {
    const out = path.join(dir, 'app.trace.json')
    const app =
      'function appSpin(ms) { const e = Date.now() + ms; let x = 0; while (Date.now() < e) x += Math.random(); return x }; appSpin(150)'
    const r = spawnSync(
      process.execPath,
      [
        path.join(root, 'bin', 'jsprof.js'),
        'record',
        '-o',
        out,
        '--interval',
        '0.5',
        '--',
        process.execPath,
        '-e',
        app,
      ],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    )
    assert.equal(r.status, 0, r.stderr)
    const trace = JSON.parse(readFileSync(out, 'utf8'))
    assert.ok(trace.samples.length > 20, `${trace.samples.length} samples`)
    assert.ok(trace.frames.some((f) => f.name === 'appSpin'))
    assertNoOwnCode(trace, 'jsprof record')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
