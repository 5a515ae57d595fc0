// CPU time of functions V8 inlined (issue 43.2): issue 43's program (`inner` inlined into `outer`;
// __test__/fixtures/inline-cpu, also with inner in another script) read with the `inlined` option of
// fromCpuProfile, jsprof record and startContinuous gives inner its time back, from V8's per-line ticks
// and the scripts' sources. A capture whose profile never shows V8 calling inner from outer (before it
// inlined it) holds no evidence of the call and is taken again; with it, inner must get ≥ 90% of the two
// functions' self time.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const FIXTURES = path.join(root, '__test__', 'fixtures', 'inline-cpu')
const { fromCpuProfile, summarize } = require(root)
const ATTEMPTS = 5

/** Whether a V8 profile shows outer calling inner (a node of inner under one of outer). */
function sawTheCall(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  return profile.nodes.some(
    (n) =>
      n.callFrame.functionName === 'outer' &&
      (n.children || []).some((c) => byId.get(c).callFrame.functionName === 'inner'),
  )
}

/** inner's share of inner's and outer's self time in `trace`. */
function innerShare(trace) {
  const rows = summarize(trace, { by: 'function' })
  const time = (name) => rows.filter((r) => r.name.startsWith(`${name} (`)).reduce((sum, r) => sum + r.selfTime, 0)
  const inner = time('inner')
  return inner / (inner + time('outer'))
}

/** `node --cpu-prof` of a fixture: the main thread's profile text. */
function cpuProfile(script) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-inlined-'))
  try {
    const r = spawnSync(
      process.execPath,
      ['--cpu-prof', '--cpu-prof-interval', '1000', `--cpu-prof-dir=${dir}`, script],
      {
        encoding: 'utf8',
      },
    )
    assert.equal(r.status, 0, r.stderr)
    return fs.readFileSync(path.join(dir, fs.readdirSync(dir)[0]), 'utf8')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Runs `capture()` until it returns a result whose evidence holds, at most ATTEMPTS times. */
function withEvidence(capture) {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const got = capture()
    if (got) return got
  }
  assert.fail(`no capture out of ${ATTEMPTS} showed V8 calling inner from outer before inlining it`)
}

for (const name of ['inner-outer.js', 'cross-script.js']) {
  test(`fromCpuProfile({ inlined: true }) gives inner its time back (${name})`, () => {
    const text = withEvidence(() => {
      const t = cpuProfile(path.join(FIXTURES, name))
      return sawTheCall(JSON.parse(t)) ? t : null
    })
    const share = innerShare(fromCpuProfile(text, { inlined: true }))
    assert.ok(share >= 0.9, `inner has ${(100 * share).toFixed(1)}% of inner's and outer's self time`)
    // Without the option the trace is V8's, as a Profiler's and Chrome's: the same as `inlined: false`.
    assert.deepEqual(fromCpuProfile(text), fromCpuProfile(text, { inlined: false }))
  })
}

test('jsprof record --inlined gives inner its time back', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-inlined-record-'))
  try {
    const share = withEvidence(() => {
      const out = path.join(dir, 't.json')
      const r = spawnSync(
        process.execPath,
        [BIN, 'record', '--inlined', '--interval', '1', '-o', out, '--', process.execPath, 'cross-script.js'],
        { cwd: FIXTURES, encoding: 'utf8' },
      )
      assert.equal(r.status, 0, r.stderr)
      const trace = JSON.parse(fs.readFileSync(out, 'utf8'))
      // The evidence, as the trace has it: outer's frame with inner's below it in some stack.
      const names = (id) => trace.frames[trace.stacks[id].frameId].name
      const called = trace.stacks.some((s) => s.parentId !== undefined && names(s.parentId) === 'outer')
      return called ? innerShare(trace) : null
    })
    assert.ok(share >= 0.9, `inner has ${(100 * share).toFixed(1)}% of inner's and outer's self time`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('startContinuous({ inlined: true }) gives inner its time back', () => {
  const app = `
const { startContinuous, summarize } = require(${JSON.stringify(root)})
const traces = []
const c = startContinuous({ sampleInterval: 1, chunkSeconds: 60, inlined: true, onChunk: (chunk) => traces.push(chunk.trace) })
require(${JSON.stringify(path.join(FIXTURES, 'inner-outer.js'))})
c.stop().then(() => process.stdout.write(JSON.stringify(traces[0])))
`
  const share = withEvidence(() => {
    const r = spawnSync(process.execPath, ['-e', app], { encoding: 'utf8', maxBuffer: 1 << 28 })
    assert.equal(r.status, 0, r.stderr)
    const trace = JSON.parse(r.stdout.slice(r.stdout.indexOf('{')))
    const named = (n) => trace.frames.some((f) => f.name === n)
    return named('inner') && named('outer') ? innerShare(trace) : null
  })
  assert.ok(share >= 0.9, `inner has ${(100 * share).toFixed(1)}% of inner's and outer's self time`)
})

test('the option is read by the option rule', () => {
  const profile = {
    nodes: [{ id: 1, callFrame: { functionName: '(root)', url: '' } }],
    startTime: 0,
    samples: [],
    timeDeltas: [],
  }
  assert.throws(() => fromCpuProfile(profile, { inlined: 'yes' }), TypeError)
  assert.throws(() => fromCpuProfile(profile, { inlinedd: true }), /did you mean 'inlined'/)
  assert.deepEqual(fromCpuProfile(profile, { inlined: true }).samples, [])
})
