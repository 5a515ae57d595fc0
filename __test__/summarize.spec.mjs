// summarize(trace, { by }): exact checks on hand-made traces, validation, and CPU shares on a real
// workload of two fake dependencies that burn CPU 3:1.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { summarize } from 'jsprof-node'

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
// Paths that exist nowhere: app code without a package.json, a dependency without a version.
const APP = 'file:///nonexistent-jsprof-test/app/main.js'
const LODASH = '/nonexistent-jsprof-test/app/node_modules/lodash/lodash.js'

/** main > map(lodash) > JSON.parse, timers(node) > JSON.parse, main > rec > rec > rec, JSON.parse alone. */
function handMade() {
  return {
    resources: [APP, LODASH, 'node:internal/timers'],
    frames: [
      { name: 'main', resourceId: 0, line: 1, column: 1 },
      { name: 'map', resourceId: 1, line: 10, column: 5 },
      { name: 'JSON.parse' },
      { name: 'listOnTimeout', resourceId: 2, line: 500, column: 3 },
      { name: 'rec', resourceId: 0, line: 20, column: 2 },
      { name: '', resourceId: 0, line: 30 },
    ],
    stacks: [
      { frameId: 0 }, // 0 main
      { frameId: 1, parentId: 0 }, // 1 main > map
      { frameId: 2, parentId: 1 }, // 2 main > map > JSON.parse
      { frameId: 3 }, // 3 timers
      { frameId: 2, parentId: 3 }, // 4 timers > JSON.parse
      { frameId: 4, parentId: 0 }, // 5 main > rec
      { frameId: 4, parentId: 5 }, // 6 main > rec > rec
      { frameId: 4, parentId: 6 }, // 7 main > rec > rec > rec
      { frameId: 2 }, // 8 JSON.parse alone
      { frameId: 5, parentId: 0 }, // 9 main > (anonymous)
    ],
    samples: [
      { timestamp: 10, stackId: 2, marker: 'script' },
      { timestamp: 11, stackId: 2, marker: 'script' },
      { timestamp: 12, stackId: 4, marker: 'script' },
      { timestamp: 13, stackId: 7, marker: 'script' },
      { timestamp: 14 },
      { timestamp: 15, marker: 'gc' },
      { timestamp: 17, marker: 'other' },
      { timestamp: 18, stackId: 8, marker: 'script' },
      { timestamp: 19, stackId: 1, marker: 'script' },
      { timestamp: 20.5, stackId: 9, marker: 'script' },
    ],
  }
}

const pick = (rows) => rows.map((r) => [r.name, r.kind, r.selfSamples, r.totalSamples, r.selfTime, r.totalTime])

test('by package: builtins charge their caller, node-only stacks charge node, markers are rows', () => {
  const rows = summarize(handMade(), { by: 'package' })
  // Weights: gaps 1,1,1,1,1,2,1,1,1.5; the last sample weighs the median gap, 1.
  assert.deepEqual(pick(rows), [
    ['lodash', 'dependency', 3, 3, 3.5, 3.5], // two samples through JSON.parse, one in map itself
    ['(app)', 'app', 2, 5, 2, 5.5], // rec (recursion counted once) and the anonymous function
    ['(gc)', 'gc', 1, 1, 2, 2],
    ['(native)', 'native', 1, 4, 1, 4], // the JSON.parse-only stack; JSON.parse is on 4 stacks
    ['(idle)', 'idle', 1, 1, 1, 1],
    ['(node)', 'node', 1, 1, 1, 1], // timers > JSON.parse: no app code, the node frame is charged
    ['(other)', 'other', 1, 1, 1, 1],
  ])
  const trace = handMade()
  assert.equal(
    rows.reduce((n, r) => n + r.selfSamples, 0),
    trace.samples.length,
  )
  assert.equal(
    rows.reduce((t, r) => t + r.selfTime, 0),
    11.5,
  ) // 20.5 - 10 + the last sample's 1
  assert.equal(rows.find((r) => r.name === 'lodash').version, undefined)
})

test('by function: unambiguous names, self through builtins, total once with recursion', () => {
  const rows = summarize(handMade(), { by: 'function' })
  const row = (name) => {
    const found = rows.find((r) => r.name === name)
    assert.ok(found, `no row ${name} in ${rows.map((r) => r.name).join(' | ')}`)
    return [found.kind, found.package, found.selfSamples, found.totalSamples]
  }
  assert.deepEqual(row(`map (${LODASH}:10:5)`), ['dependency', 'lodash', 3, 3])
  assert.deepEqual(row(`rec (${APP}:20:2)`), ['app', undefined, 1, 1])
  assert.deepEqual(row(`main (${APP}:1:1)`), ['app', undefined, 0, 5])
  assert.deepEqual(row(`(anonymous) (${APP}:30)`), ['app', undefined, 1, 1])
  assert.deepEqual(row('JSON.parse (native)'), ['native', undefined, 1, 4])
  assert.deepEqual(row('listOnTimeout (node:internal/timers:500:3)'), ['node', undefined, 1, 1])
  assert.equal(
    rows.reduce((n, r) => n + r.selfSamples, 0),
    10,
  )
})

test('by resource', () => {
  const rows = summarize(handMade(), { by: 'resource' })
  const byName = Object.fromEntries(rows.map((r) => [r.name, [r.kind, r.selfSamples, r.totalSamples]]))
  assert.deepEqual(byName, {
    [LODASH]: ['dependency', 3, 3],
    [APP]: ['app', 2, 5],
    '(native)': ['native', 1, 4],
    'node:internal/timers': ['node', 1, 1],
    '(idle)': ['idle', 1, 1],
    '(gc)': ['gc', 1, 1],
    '(other)': ['other', 1, 1],
  })
})

test('options: default by is package; sampleInterval weighs the last sample', () => {
  assert.deepEqual(summarize(handMade()), summarize(handMade(), { by: 'package' }))
  const rows = summarize(handMade(), { by: 'package', sampleInterval: 4 })
  assert.equal(rows.find((r) => r.name === '(app)').selfTime, 5)
})

test('ties are sorted deterministically', () => {
  const t = handMade()
  t.samples = [{ timestamp: 0 }, { timestamp: 1, marker: 'gc' }, { timestamp: 2, marker: 'other' }]
  assert.deepEqual(
    summarize(t).map((r) => r.name),
    ['(gc)', '(idle)', '(other)'],
  )
})

test('bad by and options are TypeError / RangeError', () => {
  assert.throws(() => summarize(handMade(), { by: 'module' }), {
    name: 'RangeError',
    message: /'package', 'function', 'resource'/,
  })
  assert.throws(() => summarize(handMade(), { by: 3 }), TypeError)
  assert.throws(() => summarize(handMade(), 'package'), TypeError)
  assert.throws(() => summarize(handMade(), { sampleInterval: -1 }), RangeError)
  // Numbers convert as WebIDL converts them (lib/args.js): a numeric string is its number, others a TypeError.
  assert.deepEqual(summarize(handMade(), { sampleInterval: '1' }), summarize(handMade(), { sampleInterval: 1 }))
  assert.throws(() => summarize(handMade(), { sampleInterval: 'x' }), TypeError)
})

test('samples out of time order (as V8 gives some, and node --cpu-prof files hold) are weighed in time order', () => {
  const t = handMade()
  const sorted = summarize(t, { by: 'function' })
  const reordered = handMade()
  const [a, b] = [reordered.samples[1], reordered.samples[2]]
  reordered.samples[1] = b
  reordered.samples[2] = a
  assert.ok(reordered.samples[2].timestamp < reordered.samples[1].timestamp, 'the fixture really is out of order')
  assert.deepEqual(summarize(reordered, { by: 'function' }), sorted)
})

test('malformed traces are a TypeError with a clear message', () => {
  const cases = [
    [(t) => (t.samples[0].stackId = 99), /samples\[0\]\.stackId 99 is out of range/],
    [(t) => (t.stacks[0].parentId = 2), /parentId cycle/],
    [(t) => (t.stacks[3].parentId = 3), /parentId cycle/],
    [(t) => (t.stacks[1].frameId = 42), /stacks\[1\]\.frameId 42 is out of range/],
    [(t) => (t.frames[0].resourceId = 9), /frames\[0\]\.resourceId 9 is out of range/],
    [(t) => (t.samples[3].timestamp = 'x'), /samples\[3\]\.timestamp: string "x" where a number belongs/],
    [(t) => (t.samples[3].stackId = -1), /invalid value/],
    [(t) => (t.samples[3].marker = 'nap'), /unknown variant/],
    [(t) => delete t.stacks, /trace\.stacks must be an array/],
  ]
  for (const [breakIt, message] of cases) {
    const t = handMade()
    breakIt(t)
    assert.throws(
      () => summarize(t),
      (err) => {
        assert.equal(err.name, 'TypeError')
        assert.match(err.message, /^summarize: malformed trace: /)
        assert.match(err.message, message)
        return true
      },
    )
  }
  for (const bad of [null, undefined, 1, 'trace', []]) assert.throws(() => summarize(bad), TypeError)
  const cyclic = handMade()
  cyclic.self = cyclic
  assert.throws(() => summarize(cyclic), TypeError)
})

let project
before(() => {
  project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-summary-')))
  const burn =
    'module.exports.burn = function burn(n) {\n' +
    '  let x = 0\n' +
    '  for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345 + i) % 2147483648\n' +
    '  return x\n' +
    '}\n'
  const files = {
    'package.json': JSON.stringify({ name: 'workload-app', version: '1.0.0' }),
    'node_modules/heavy-a/package.json': JSON.stringify({ name: 'heavy-a', version: '3.0.0', main: 'index.js' }),
    'node_modules/heavy-a/index.js': burn,
    'node_modules/@fake/heavy-b/package.json': JSON.stringify({ name: '@fake/heavy-b', version: '1.0.0' }),
    'node_modules/@fake/heavy-b/index.js': burn,
    'run.js': `'use strict'
const fs = require('fs')
const { Profiler } = require(process.env.JSPROF_PACKAGE)
const a = require('heavy-a')
const b = require('@fake/heavy-b')
const UNIT = 3000
a.burn(UNIT); b.burn(UNIT)
;(async () => {
  const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
  // 3:1 in work: a does three units for every unit b does, interleaved finely.
  for (let round = 0; round < 1500; round++) { a.burn(3 * UNIT); b.burn(UNIT) }
  const trace = await profiler.stop()
  fs.writeFileSync(process.argv[2], JSON.stringify(trace))
})()
`,
  }
  for (const [rel, text] of Object.entries(files)) {
    const file = path.join(project, ...rel.split('/'))
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, text)
  }
})
after(() => fs.rmSync(project, { recursive: true, force: true }))

test('a real workload: two dependencies burning CPU 3:1 get 3:1 of the self samples', () => {
  const out = path.join(project, 'trace.json')
  execFileSync(process.execPath, [path.join(project, 'run.js'), out], {
    cwd: project,
    env: { ...process.env, JSPROF_PACKAGE: ROOT },
    stdio: 'inherit',
  })
  const trace = JSON.parse(fs.readFileSync(out, 'utf8'))
  const rows = summarize(trace, { by: 'package' })
  const a = rows.find((r) => r.name === 'heavy-a')
  const b = rows.find((r) => r.name === '@fake/heavy-b')
  assert.ok(a && b, JSON.stringify(rows))
  assert.deepEqual([a.kind, a.version, b.kind, b.version], ['dependency', '3.0.0', 'dependency', '1.0.0'])
  const share = a.selfSamples / (a.selfSamples + b.selfSamples)
  const timeShare = a.selfTime / (a.selfTime + b.selfTime)
  console.log(
    `# workload: ${trace.samples.length} samples; heavy-a ${a.selfSamples}, @fake/heavy-b ${b.selfSamples} ` +
      `self samples -> share ${share.toFixed(3)} (time share ${timeShare.toFixed(3)}), expected 0.75`,
  )
  assert.ok(Math.abs(share - 0.75) < 0.1, `heavy-a's share ${share} is not 0.75 ± 0.1`)
  assert.ok(Math.abs(timeShare - 0.75) < 0.1, `heavy-a's time share ${timeShare} is not 0.75 ± 0.1`)
  assert.ok(a.selfSamples + b.selfSamples > trace.samples.length / 2, 'the burn loops dominate the samples')
  assert.equal(
    rows.reduce((n, r) => n + r.selfSamples, 0),
    trace.samples.length,
  )
  // The app's loop is on every burning stack: its total covers both packages' samples.
  const app = rows.find((r) => r.name === 'workload-app')
  assert.ok(app && app.kind === 'app' && app.totalSamples >= a.selfSamples + b.selfSamples, JSON.stringify(app))

  const functions = summarize(trace, { by: 'function' })
  const burnA = functions.find((r) => r.package === 'heavy-a' && r.name.startsWith('burn ('))
  assert.ok(burnA, JSON.stringify(functions.slice(0, 5)))
  assert.ok(burnA.name.includes(path.join('heavy-a', 'index.js')), burnA.name)
  assert.equal(burnA.selfSamples, a.selfSamples)
})
