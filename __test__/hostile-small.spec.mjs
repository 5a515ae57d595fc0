// Small hostile cases of issue 24: a number out of JSON's range (1e400: Infinity once parsed) named as
// what it is, not as the null JSON.stringify makes of it; `jsprof diff - -` (stdin twice) refused
// with its reason; an attach recording too long for jsprof to read back refused before it starts.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { fromCpuProfile, toSpeedscope, summarize, toCollapsed, withLabels, getLabels } from 'jsprof-node'

const BIN = path.join(path.dirname(path.dirname(fileURLToPath(import.meta.url))), 'bin', 'jsprof.js')

test('a 1e400 in a profile or trace is reported as out of range, not as null', () => {
  const profile = JSON.parse(
    '{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"children":[]}],"startTime":0,"endTime":1000,"samples":[1],"timeDeltas":[1e400]}',
  )
  assert.throws(() => fromCpuProfile(profile), {
    name: 'TypeError',
    message: /timeDeltas\[0\]: Infinity, out of range, where a finite number belongs/,
  })
  const trace = JSON.parse('{"resources":[],"frames":[],"stacks":[],"samples":[{"timestamp":-1e400}]}')
  for (const f of [toSpeedscope, summarize, toCollapsed]) {
    assert.throws(() => f(trace), { name: 'TypeError', message: /samples\[0\]\.timestamp: -Infinity, out of range/ })
  }
  // A real null stays a null.
  assert.throws(() => toSpeedscope({ resources: [], frames: [], stacks: [], samples: [{ timestamp: null }] }), {
    message: /samples\[0\]\.timestamp: null where a number belongs/,
  })
})

test('`jsprof diff - -`: stdin can be only one of the two', () => {
  const r = spawnSync(process.execPath, [BIN, 'diff', '-', '-'], { input: '{}', encoding: 'utf8' })
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^jsprof: only one of <base> and <new> can be '-' \(stdin is read once\)/)
})

test('`jsprof attach`: a recording longer than a trace jsprof reads back can hold is refused up front', () => {
  const r = spawnSync(process.execPath, [BIN, 'attach', '1', '--duration', '1440m', '--interval', '1'], {
    encoding: 'utf8',
  })
  assert.equal(r.status, 2)
  assert.match(
    r.stderr,
    /^jsprof: --duration 1440m at --interval 1 ms records up to 86400000 samples, more than a trace jsprof reads back holds \(\d+\)/,
  )
})

test('withLabels nested past the stack: the usual RangeError, and the labels outside stay as they were', () => {
  let depth = 0
  const nest = () => {
    depth++
    return withLabels({ level: String(depth % 7) }, nest)
  }
  withLabels({ outer: 'kept' }, () => {
    assert.throws(nest, RangeError)
    assert.ok(depth > 100, `${depth} levels`)
    assert.deepEqual(getLabels(), { outer: 'kept' })
  })
  assert.deepEqual(getLabels(), {})
  assert.deepEqual(
    withLabels({ a: '1' }, () => withLabels({ b: '2' }, getLabels)),
    { a: '1', b: '2' },
  )
})
