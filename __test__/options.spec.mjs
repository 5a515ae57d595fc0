// One option rule for every options bag of the public API (lib/args.js): numbers convert as WebIDL
// converts them (numeric strings included, as `new Profiler` does), a misspelled option is a TypeError
// naming the nearest valid one, and messages show the value as it was given. `new Profiler(options)`
// keeps its WebIDL dictionary: unknown members ignored, as Chrome does.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import * as jsprof from 'jsprof-node'
import { handTrace } from './export-helpers.mjs'

const noop = () => {}
const url = 'http://127.0.0.1:1'

/** A V8 CPU profile with one sample. */
const cpuProfile = () => ({
  nodes: [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1, columnNumber: -1 }, children: [2] },
    { id: 2, callFrame: { functionName: 'main', url: 'file:///app.js', lineNumber: 0, columnNumber: 0 } },
  ],
  startTime: 1000,
  endTime: 2000,
  samples: [2],
  timeDeltas: [10],
})

// Each API with a misspelling of one of its options, and the option it means. Calls whose options are
// valid create something to close: `close` does that.
const apis = [
  ['profileRequests', (o) => jsprof.profileRequests({ onProfile: noop, ...o }), 'sampleRte', 'sampleRate'],
  ['startContinuous', (o) => jsprof.startContinuous({ onChunk: noop, ...o }), 'chunkSecs', 'chunkSeconds'],
  ['watchStalls', (o) => jsprof.watchStalls({ onStall: noop, ...o }), 'thresholdMS', 'thresholdMs'],
  ['pyroscopeExporter', (o) => jsprof.pyroscopeExporter({ url, appName: 'a', ...o }), 'maxRetry', 'maxRetries'],
  ['otlpExporter', (o) => jsprof.otlpExporter({ url, ...o }), 'servicename', 'serviceName'],
  ['summarize', (o) => jsprof.summarize(handTrace(), o), 'by_', 'by'],
  ['toGeckoProfile', (o) => jsprof.toGeckoProfile(handTrace(), o), 'threadname', 'threadName'],
  ['toSpeedscope', (o) => jsprof.toSpeedscope(handTrace(), o), 'nmae', 'name'],
  ['toPprof', (o) => jsprof.toPprof(handTrace(), o), 'timeorigin', 'timeOrigin'],
  ['toOtlpProfiles', (o) => jsprof.toOtlpProfiles(handTrace(), o), 'resources', 'resource'],
  ['toFlameGraph', (o) => jsprof.toFlameGraph(handTrace(), o), 'widht', 'width'],
  ['fromCpuProfile', (o) => jsprof.fromCpuProfile(cpuProfile(), o), 'timeOrign', 'timeOrigin'],
]

for (const [name, call, typo, meant] of apis) {
  test(`${name}: a misspelled option is a TypeError naming the one meant`, () => {
    assert.throws(() => call({ [typo]: 1 }), {
      name: 'TypeError',
      message: `${name}: unknown option '${typo}' (did you mean '${meant}'?)`,
    })
  })
}

test('resolveSourceMaps: a misspelled option rejects with a TypeError naming the one meant', async () => {
  await assert.rejects(jsprof.resolveSourceMaps(handTrace(), { adjacnt: false }), {
    name: 'TypeError',
    message: "resolveSourceMaps: unknown option 'adjacnt' (did you mean 'adjacent'?)",
  })
})

test('a name close to none lists the names the API takes', () => {
  assert.throws(() => jsprof.toFlameGraph(handTrace(), { colour: 'red' }), {
    name: 'TypeError',
    message: "toFlameGraph: unknown option 'colour' (it takes 'title', 'subtitle', 'width', 'format', 'label')",
  })
})

test('numeric strings convert, as WebIDL converts them, in every API', async () => {
  const requests = jsprof.profileRequests({ onProfile: noop, sampleRate: '0.5', sampleInterval: '2.5', keepWarm: '0' })
  assert.equal(requests.sampleInterval, 2.5)
  await requests.close()
  const continuous = jsprof.startContinuous({ onChunk: noop, sampleInterval: '5', chunkSeconds: '60' })
  assert.equal(continuous.sampleInterval, 5)
  await continuous.stop()
  await jsprof.pyroscopeExporter({ url, appName: 'a', maxQueue: '2', timeoutMs: '1000' }).close()
  await jsprof.otlpExporter({ url, maxRetries: '0' }).close()
  const trace = handTrace()
  assert.deepEqual(jsprof.summarize(trace, { sampleInterval: '2' }), jsprof.summarize(trace, { sampleInterval: 2 }))
  assert.match(jsprof.toFlameGraph(trace, { width: '300' }), /<svg[^>]* width="300"/)
  assert.deepEqual(jsprof.toPprof(trace, { timeOrigin: '1700000000000' }), jsprof.toPprof(trace, { timeOrigin: 17e11 }))
  assert.deepEqual(
    jsprof.toGeckoProfile(trace, { pid: '42', timeOrigin: '5' }),
    jsprof.toGeckoProfile(trace, { pid: 42, timeOrigin: 5 }),
  )
  assert.deepEqual(
    jsprof.fromCpuProfile(cpuProfile(), { timeOrigin: '1000' }),
    jsprof.fromCpuProfile(cpuProfile(), { timeOrigin: 1000 }),
  )
  await jsprof.resolveSourceMaps(trace, { maxMapSize: '1024' })
})

test('messages show the value as it was given: a string quoted, a number not', () => {
  const rate = (sampleRate) => () => jsprof.profileRequests({ onProfile: noop, sampleRate })
  // In range after conversion, a string is fine; out of range, either is a RangeError saying what came.
  assert.throws(rate('1.5'), {
    name: 'RangeError',
    message: 'profileRequests: options.sampleRate must be a number in [0, 1], got "1.5"',
  })
  assert.throws(rate(1.5), {
    name: 'RangeError',
    message: 'profileRequests: options.sampleRate must be a number in [0, 1], got 1.5',
  })
  assert.throws(rate(Number.NaN), { name: 'RangeError', message: /got NaN$/ })
  // What does not convert to a number is a TypeError.
  assert.throws(rate('often'), {
    name: 'TypeError',
    message: 'profileRequests: options.sampleRate must be a number in [0, 1], got "often"',
  })
  assert.throws(rate(1n), { name: 'TypeError', message: /got 1n$/ })
  assert.throws(rate(Symbol('s')), { name: 'TypeError', message: /got Symbol\(s\)$/ })
  assert.throws(() => jsprof.startContinuous({ onChunk: 'f' }), {
    name: 'TypeError',
    message: 'startContinuous: options.onChunk must be a function, got "f"',
  })
  assert.throws(() => jsprof.summarize(handTrace(), { by: 3 }), {
    name: 'TypeError',
    message: 'summarize: options.by must be a string, got 3',
  })
})

test('whole-number options drop the fraction, as WebIDL integer types do', async () => {
  assert.match(jsprof.toFlameGraph(handTrace(), { width: 300.9 }), /<svg[^>]* width="300"/)
  const requests = jsprof.profileRequests({ onProfile: noop, maxInFlight: 1.5, keepWarm: 0 })
  await requests.close()
  // 0.5 drops to 0, below the smallest queue.
  assert.throws(() => jsprof.pyroscopeExporter({ url, appName: 'a', maxQueue: 0.5 }), RangeError)
})

test('the exporters, as converters of whole traces, throw TypeError for every bad option', () => {
  assert.throws(() => jsprof.toFlameGraph(handTrace(), { width: 5 }), {
    name: 'TypeError',
    message: 'toFlameGraph: options.width must be a number of px in [10, 100000], got 5',
  })
  assert.throws(() => jsprof.toFlameGraph(handTrace(), { format: 'png' }), TypeError)
  assert.throws(() => jsprof.fromCpuProfile(cpuProfile(), { timeOrigin: Infinity }), TypeError)
})

test('an exporter given as a push encoder ignores the chunk it is handed as its second argument', () => {
  const trace = handTrace()
  const chunk = { index: 0, startTime: 0, endTime: 1, startUnixMs: 0, endUnixMs: 1, sampleInterval: 1, trace }
  assert.deepEqual(jsprof.toPprof(trace, chunk), jsprof.toPprof(trace))
  // Another trace's chunk is an options bag like any other.
  assert.throws(() => jsprof.toPprof(trace, { ...chunk, trace: handTrace() }), TypeError)
})

test('new Profiler(options) keeps its WebIDL dictionary: unknown members ignored, numeric strings converted', async () => {
  const p = new jsprof.Profiler({ sampleInterval: '10', maxBufferSize: '5', sampleRte: 1 })
  assert.equal(p.sampleInterval, 10)
  await p.stop()
})
