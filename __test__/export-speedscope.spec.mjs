import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'

import { toSpeedscope } from 'jsprof-node'
import { realTrace, handTrace, require } from './export-helpers.mjs'

// speedscope's own schema, shipped in its npm package, checked by a real JSON-schema validator.
const Ajv = require('ajv')
const schema = JSON.parse(readFileSync(require.resolve('speedscope/dist/release/file-format-schema.json'), 'utf8'))
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema)

function assertValid(file) {
  const ok = validate(file)
  assert.ok(ok, JSON.stringify(validate.errors, null, 1))
}

test('the validator rejects what the schema forbids (so passing means something)', () => {
  const file = toSpeedscope(handTrace())
  assertValid(file)
  assert.equal(validate({ ...file, $schema: 'x' }), false)
  assert.equal(validate({ ...file, profiles: [{ ...file.profiles[0], unit: 'minutes' }] }), false)
  assert.equal(validate({ ...file, shared: { frames: [{ file: 'a.js' }] } }), false)
})

test('hand-made trace: frames, stacks as frame paths, weights as durations', () => {
  const file = toSpeedscope(handTrace(), { name: 'hand' })
  assertValid(file)
  const { frames } = file.shared
  assert.deepEqual(frames[2], { name: 'chunk', file: 'file:///app/node_modules/lodash/chunk.js', line: 5, col: 17 })
  assert.deepEqual(frames[3], { name: 'now' })
  assert.equal(frames[4].name, '(anonymous)')
  assert.deepEqual(frames.slice(7).map((f) => f.name), ['(idle)', '(garbage collector)', '(program)'])
  const p = file.profiles[0]
  assert.equal(p.name, 'hand')
  assert.equal(p.unit, 'milliseconds')
  assert.deepEqual(p.samples[0], [0, 1, 2])
  assert.deepEqual(p.samples[3], [8])
  assert.deepEqual(p.samples[7], [7])
  assert.deepEqual(p.samples[8], [9])
  assert.deepEqual(p.weights, [1, 1, 1, 1, 1, 1.501, 0.499, 1, 1, 1, 1])
  assert.equal(p.startValue, 100.5)
  assert.equal(p.endValue, 111.5)
})

test('a real trace is valid and its weights add up to the recorded span', async () => {
  const { trace } = await realTrace()
  const file = toSpeedscope(trace)
  assertValid(file)
  const p = file.profiles[0]
  assert.equal(p.samples.length, trace.samples.length)
  const sum = p.weights.reduce((a, b) => a + b, 0)
  assert.ok(Math.abs(p.startValue + sum - p.endValue) < 1e-6)
  const names = new Set(file.shared.frames.map((f) => f.name))
  for (const name of ['appMain', 'appFib', 'appSort', 'depChecksum']) assert.ok(names.has(name), name)
  // Every sample's stack resolves to frames; appFib samples have appMain below them, but for the rare
  // tick V8 takes in appFib's prologue when appMain calls it, which shows appFib in appMain's place
  // (see the call-path test in profiler.spec.mjs).
  const fib = file.shared.frames.findIndex((f) => f.name === 'appFib')
  const main = file.shared.frames.findIndex((f) => f.name === 'appMain')
  const fibSamples = p.samples.filter((s) => s.at(-1) === fib)
  assert.ok(fibSamples.length > 0)
  for (const s of fibSamples) assert.ok(s.every((i) => i >= 0 && i < file.shared.frames.length))
  const underMain = fibSamples.filter((s) => s.includes(main)).length
  assert.ok(underMain >= 0.95 * fibSamples.length, `${underMain} of ${fibSamples.length} appFib samples under appMain`)
})

test('options are checked', () => {
  assert.throws(() => toSpeedscope(handTrace(), { name: 5 }), TypeError)
  assert.throws(() => toSpeedscope(handTrace(), 'x'), TypeError)
})
