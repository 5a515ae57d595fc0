// fromCpuProfile: a V8 CPU profile (object, JSON text, bytes) -> the same trace rules as a live Profiler.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fromCpuProfile } from 'jsprof-node'
import { assertWellFormed, sampledNames, workloadPath, workloadUrl, positionOf } from './helpers.mjs'

const node = (id, functionName, url, lineNumber, columnNumber, children = []) => ({
  id,
  callFrame: { functionName, scriptId: url ? '7' : '0', url, lineNumber, columnNumber },
  hitCount: 0,
  children,
})

/** (root) -> (program), (idle), (garbage collector), main -> work -> now, main -> "" (node:timers) */
const profile = () => ({
  nodes: [
    node(1, '(root)', '', -1, -1, [2, 3, 4, 5]),
    node(2, '(program)', '', -1, -1),
    node(3, '(idle)', '', -1, -1),
    node(4, '(garbage collector)', '', -1, -1),
    node(5, 'main', 'file:///app/main.js', 0, 0, [6, 8]),
    node(6, 'work', 'file:///app/main.js', 9, 16, [7]),
    node(7, 'now', '', -1, -1),
    node(8, '', 'node:internal/timers', 3, 2),
  ],
  startTime: 5000,
  endTime: 9000,
  samples: [2, 7, 3, 4, 6, 8, 7],
  timeDeltas: [1000, 1000, 500, 250, -125, 1000, 1],
})

const expected = {
  resources: ['file:///app/main.js', 'node:internal/timers'],
  frames: [
    { name: 'main', resourceId: 0, line: 1, column: 1 },
    { name: 'work', resourceId: 0, line: 10, column: 17 },
    { name: 'now' },
    { name: '', resourceId: 1, line: 4, column: 3 },
  ],
  stacks: [{ frameId: 0 }, { frameId: 1, parentId: 0 }, { frameId: 2, parentId: 1 }, { frameId: 3, parentId: 0 }],
  samples: [
    { timestamp: 1, marker: 'other' },
    { timestamp: 2, stackId: 2, marker: 'script' },
    { timestamp: 2.5 },
    { timestamp: 2.75, marker: 'gc' },
    { timestamp: 2.625, stackId: 1, marker: 'script' },
    { timestamp: 3.625, stackId: 3, marker: 'script' },
    { timestamp: 3.626, stackId: 2, marker: 'script' },
  ],
}

test('converts a profile with exactly the trace rules', () => {
  const trace = fromCpuProfile(profile())
  assert.deepEqual(trace, expected)
  assertWellFormed(trace)
  assert.equal('stackId' in trace.samples[0], false)
})

test('accepts JSON text, bytes and the inspector reply wrapper alike', () => {
  const text = JSON.stringify(profile())
  assert.deepEqual(fromCpuProfile(text), expected)
  assert.deepEqual(fromCpuProfile(Buffer.from(text)), expected)
  assert.deepEqual(fromCpuProfile(new TextEncoder().encode(text)), expected)
  assert.deepEqual(fromCpuProfile({ profile: profile() }), expected)
})

test('names outside ASCII survive every input form, and bad UTF-8 reads as Buffer#toString reads it', () => {
  const named = (name, url) => {
    const p = profile()
    p.nodes[4].callFrame.functionName = name
    p.nodes[4].callFrame.url = url
    return p
  }
  // A one-byte (Latin-1) string, a two-byte string with an astral character, and escapes.
  for (const [name, url] of [
    ['café', 'file:///app/é.js'],
    ['处理请求 🚀', 'file:///srv/应用/main.js'],
    ['RegExp: ^\\s+"$', 'file:///app/a b.js'],
  ]) {
    const text = JSON.stringify(named(name, url))
    for (const input of [text, Buffer.from(text), new TextEncoder().encode(text), named(name, url)]) {
      const trace = fromCpuProfile(input)
      assert.equal(trace.frames[0].name, name)
      assert.equal(trace.resources[0], url)
    }
  }
  const bytes = Buffer.from(JSON.stringify(named('badXY', 'file:///app/main.js')))
  bytes[bytes.indexOf('XY')] = 0xff
  const asNodeReadsIt = JSON.parse(bytes.toString('utf8')).nodes[4].callFrame.functionName
  assert.equal(asNodeReadsIt, 'bad\ufffdY')
  assert.equal(fromCpuProfile(bytes).frames[0].name, asNodeReadsIt)
})

test('a profile of megabytes converts like the small ones (its arrays are read on a second thread)', () => {
  const big = profile()
  big.samples = []
  big.timeDeltas = []
  for (let i = 0; i < 300_000; i++) {
    big.samples.push([2, 7, 3, 4, 6, 8][i % 6])
    big.timeDeltas.push(i % 101 === 0 ? -7 : 100 + (i % 13))
  }
  const text = JSON.stringify(big)
  assert.ok(text.length > 1_000_000)
  const trace = fromCpuProfile(text)
  assert.equal(trace.samples.length, 300_000)
  assert.deepEqual(trace.stacks, expected.stacks.slice(0, 4))
  let time = 0
  for (let i = 0; i < 300_000; i++) {
    time += big.timeDeltas[i]
    if (trace.samples[i].timestamp !== time / 1000)
      assert.fail(`sample ${i}: ${trace.samples[i].timestamp} ms, not ${time / 1000}`)
  }
  // Member order and whitespace do not matter.
  const reordered = JSON.stringify(
    { timeDeltas: big.timeDeltas, samples: big.samples, startTime: 5000, nodes: big.nodes },
    null,
    1,
  )
  assert.deepEqual(fromCpuProfile(reordered), trace)
})

test('timeOrigin (µs, the profile clock) shifts timestamps', () => {
  const trace = fromCpuProfile(profile(), { timeOrigin: 4000 })
  assert.deepEqual(
    trace.samples.map((s) => s.timestamp),
    expected.samples.map((s) => Math.round((s.timestamp + 1) * 1000) / 1000),
  )
  assert.equal(fromCpuProfile(profile(), { timeOrigin: 5001 }).samples[0].timestamp, 0.999)
  // Microsecond precision: 999.6 µs rounds to 1 ms.
  assert.equal(fromCpuProfile(profile(), { timeOrigin: 5000.4 }).samples[0].timestamp, 1)
  assert.throws(() => fromCpuProfile(profile(), { timeOrigin: 'soon' }), TypeError)
  assert.throws(() => fromCpuProfile(profile(), 5), TypeError)
})

test('the older DevTools form with parent links converts too', () => {
  const p = profile()
  for (const n of p.nodes) {
    for (const child of n.children) p.nodes.find((m) => m.id === child).parent = n.id
    delete n.children
  }
  assert.deepEqual(fromCpuProfile(p), expected)
})

test('malformed input throws the right error with a message that says what is wrong', () => {
  const cases = [
    ['{"nodes": [', SyntaxError, /not valid JSON/],
    ['', SyntaxError, /not valid JSON/],
    [{ startTime: 0, samples: [], timeDeltas: [] }, TypeError, /`nodes` is missing/],
    [{ nodes: [], startTime: 0, timeDeltas: [] }, TypeError, /`samples` is missing/],
    [{ nodes: [], startTime: 0, samples: [] }, TypeError, /`timeDeltas` is missing/],
    [
      { nodes: {}, startTime: 0, samples: [], timeDeltas: [] },
      TypeError,
      /^invalid V8 CPU profile: nodes: an object where an array belongs$/,
    ],
    [{ ...profile(), timeDeltas: [1, 2] }, TypeError, /samples \(7\) and timeDeltas \(2\) have different lengths/],
    [{ ...profile(), samples: [2, 7, 3, 4, 6, 8, 99] }, TypeError, /samples\[6\] names unknown node id 99/],
    [42, TypeError, /expected a V8 CPU profile/],
    [null, TypeError, /expected a V8 CPU profile/],
    [undefined, TypeError, /expected a V8 CPU profile/],
    ['[1,2,3]', TypeError, /invalid/],
    // JSON.stringify makes a JS object's Infinity or NaN null: refused, not read as an absent endTime.
    [{ ...profile(), endTime: Infinity }, TypeError, /`endTime` is null, not a finite number/],
    [{ ...profile(), startTime: NaN }, TypeError, /`startTime` is null, not a finite number/],
  ]
  for (const [input, type, message] of cases) {
    assert.throws(
      () => fromCpuProfile(input),
      (err) => {
        assert.equal(err.constructor, type, `${JSON.stringify(input)?.slice(0, 60)} -> ${err}`)
        assert.match(err.message, message)
        return true
      },
    )
  }
})

test('a cyclic node tree is an error, not a hang', () => {
  const cyclic = profile()
  cyclic.nodes[5].children = [7, 5] // work lists its own ancestor main... and main lists work: a cycle
  cyclic.nodes[4].children = [6, 8]
  cyclic.nodes.find((n) => n.id === 6).children = [7, 5]
  assert.throws(
    () => fromCpuProfile(cyclic),
    (err) => err instanceof TypeError && /cyclic|two parents/.test(err.message),
  )
  const loop = profile()
  loop.nodes[0].children = [2, 3, 4]
  loop.nodes[4].children = [6]
  loop.nodes[5].children = [5]
  assert.throws(
    () => fromCpuProfile(loop),
    (err) => err instanceof TypeError && /cyclic|own child/.test(err.message),
  )
  // A JS object graph with a cycle cannot be JSON either.
  const self = profile()
  self.self = self
  assert.throws(() => fromCpuProfile(self), TypeError)
})

test('a real node --cpu-prof profile converts with the live rules', () => {
  const dir = mkdtempSync(join(tmpdir(), 'jsprof-cpuprof-'))
  const r = spawnSync(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      '--cpu-prof-interval=200',
      '--no-turbo-inlining',
      '-e',
      `require(${JSON.stringify(workloadPath)}).runMixed(300)`,
    ],
    { encoding: 'utf8', timeout: 30000 },
  )
  assert.equal(r.status, 0, r.stderr)
  const [file] = readdirSync(dir)
  const text = readFileSync(join(dir, file), 'utf8')
  const raw = JSON.parse(text)
  const trace = fromCpuProfile(text)
  assertWellFormed(trace)
  assert.equal(trace.samples.length, raw.samples.length, 'every sample is kept, in order')
  assert.ok(trace.resources.includes(workloadUrl))
  const names = sampledNames(trace)
  for (const name of ['runMixed', 'spinFor', 'crunch', 'burnAlpha', 'burnBeta']) assert.ok(names.has(name), name)
  const burnAlpha = trace.frames.find((f) => f.name === 'burnAlpha')
  assert.deepEqual({ line: burnAlpha.line, column: burnAlpha.column }, positionOf('function burnAlpha'))
  // Timestamps are ms from startTime, following timeDeltas.
  let t = raw.startTime
  raw.timeDeltas.forEach((d, i) => {
    t += d
    assert.equal(trace.samples[i].timestamp, Math.round(t - raw.startTime) / 1000)
  })
})
