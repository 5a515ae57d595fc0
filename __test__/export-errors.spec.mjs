import { test } from 'node:test'
import assert from 'node:assert/strict'

import * as jsprof from 'jsprof-node'
import { handTrace } from './export-helpers.mjs'

const EXPORTERS = ['toCpuProfile', 'toGeckoProfile', 'toSpeedscope', 'toPprof', 'toCollapsed', 'toFlameGraph']

const bad = (mutate) => {
  const t = handTrace()
  mutate(t)
  return t
}

const CASES = [
  ['not an object', () => undefined, /expected a ProfilerTrace object/],
  ['null', () => null, /got null/],
  ['an array', () => [], /got an array/],
  ['a string', () => '{}', /got string/],
  ['samples missing', () => bad((t) => delete t.samples), /missing field `samples`/],
  ['frameId out of range', () => bad((t) => (t.stacks[1].frameId = 99)), /stacks\[1\]\.frameId 99 is out of range/],
  ['parentId out of range', () => bad((t) => (t.stacks[1].parentId = 7)), /stacks\[1\]\.parentId 7 is out of range/],
  ['stackId out of range', () => bad((t) => (t.samples[2].stackId = 7)), /samples\[2\]\.stackId 7 is out of range/],
  [
    'resourceId out of range',
    () => bad((t) => (t.frames[0].resourceId = 4)),
    /frames\[0\]\.resourceId 4 is out of range/,
  ],
  ['a parent cycle', () => bad((t) => (t.stacks[0].parentId = 2)), /parentId cycle/],
  ['a negative line', () => bad((t) => (t.frames[0].line = -3)), /not a valid ProfilerTrace/],
  ['a NaN timestamp', () => bad((t) => (t.samples[0].timestamp = NaN)), /not a valid ProfilerTrace/],
  ['an unknown marker', () => bad((t) => (t.samples[0].marker = 'nap')), /unknown variant `nap`/],
  ['a name that is not a string', () => bad((t) => (t.frames[0].name = 5)), /not a valid ProfilerTrace/],
  ['a BigInt', () => bad((t) => (t.samples[0].timestamp = 1n)), /cannot be serialized/],
  ['a cycle of objects', () => bad((t) => (t.frames[0].self = t)), /cannot be serialized/],
]

for (const fn of EXPORTERS) {
  test(`${fn}: malformed traces are TypeErrors that say what is wrong`, () => {
    for (const [what, make, message] of CASES) {
      assert.throws(
        () => jsprof[fn](make()),
        (e) => e instanceof TypeError && message.test(e.message),
        `${fn}: ${what}`,
      )
    }
  })
}

test('every exporter accepts the empty trace and a trace of stackless samples only', () => {
  const empty = { resources: [], frames: [], stacks: [], samples: [] }
  const vm = { resources: [], frames: [], stacks: [], samples: [{ timestamp: 0, marker: 'gc' }, { timestamp: 1 }] }
  for (const fn of EXPORTERS) {
    jsprof[fn](empty)
    jsprof[fn](vm)
  }
  // 1 ms each (the last sample weighs the median gap), in µs.
  assert.equal(jsprof.toCollapsed(vm), '(garbage collector) 1000\n(idle) 1000\n')
  assert.equal(jsprof.toCollapsed(empty), '')
})

test('options must be objects', () => {
  for (const fn of ['toGeckoProfile', 'toSpeedscope', 'toFlameGraph']) {
    assert.throws(() => jsprof[fn](handTrace(), 5), TypeError, fn)
    jsprof[fn](handTrace(), null)
    // An option the exporter does not take is a TypeError naming the nearest one (lib/args.js).
    assert.throws(() => jsprof[fn](handTrace(), { unrelated: true }), TypeError, fn)
  }
})

test('random corruptions never crash: each call returns or throws TypeError', () => {
  // A small deterministic PRNG so failures reproduce.
  let seed = 12345
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed % n
  }
  const values = [-1, 0, 1, 2, 3, 6, 7, 1e9, 2 ** 32, 0.5, null, undefined, '', 'x', true, [], {}]
  let returned = 0
  for (let i = 0; i < 300; i++) {
    const t = handTrace()
    const table = ['frames', 'stacks', 'samples'][rand(3)]
    const row = t[table][rand(t[table].length)]
    const keys = Object.keys(row).concat(['parentId', 'resourceId', 'stackId', 'marker'])
    row[keys[rand(keys.length)]] = values[rand(values.length)]
    if (rand(4) === 0) t.samples.reverse()
    const fn = EXPORTERS[rand(EXPORTERS.length)]
    try {
      jsprof[fn](t)
      returned++
    } catch (e) {
      assert.ok(e instanceof TypeError, `${fn} threw ${e && e.constructor.name}: ${e && e.message}`)
    }
  }
  assert.ok(returned > 0 && returned < 300, `some corruptions are harmless, some are not (${returned} returned)`)
})
