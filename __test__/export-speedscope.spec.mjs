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
  assert.deepEqual(
    frames.slice(7).map((f) => f.name),
    ['(idle)', '(garbage collector)', '(program)'],
  )
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
  // Every sample is the trace's own stack, outermost frame first, frame for frame (what V8 sampled is
  // the trace's business; the export must carry it unchanged, whatever the machine's load made of it).
  const PSEUDO = (s) => (s.marker === 'gc' ? '(garbage collector)' : s.marker === undefined ? '(idle)' : '(program)')
  const stackOf = (s) => {
    if (s.stackId === undefined) return [PSEUDO(s)]
    const frames = []
    for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId)
      frames.unshift(trace.frames[trace.stacks[id].frameId])
    // speedscope shows a nameless function as (anonymous), as DevTools does.
    return frames.map((f) => `${f.name || '(anonymous)'}${f.line === undefined ? '' : ` ${f.line}:${f.column}`}`)
  }
  const exported = (indexes) =>
    indexes.map((i) => {
      const f = file.shared.frames[i]
      return `${f.name}${f.line === undefined ? '' : ` ${f.line}:${f.col}`}`
    })
  trace.samples.forEach((s, i) => assert.deepEqual(exported(p.samples[i]), stackOf(s), `sample ${i}`))
  const fib = file.shared.frames.findIndex((f) => f.name === 'appFib')
  assert.ok(
    p.samples.some((s) => s.at(-1) === fib),
    'appFib was sampled',
  )
})

test('options are checked', () => {
  assert.throws(() => toSpeedscope(handTrace(), { name: 5 }), TypeError)
  assert.throws(() => toSpeedscope(handTrace(), 'x'), TypeError)
})
