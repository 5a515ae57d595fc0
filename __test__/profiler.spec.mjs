// The trace a live Profiler gives: the spec's rules, as Chrome applies them, on a real workload.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import v8 from 'node:v8'
import { Profiler } from 'jsprof-node'
import {
  workload,
  freshWorkload,
  positionOf,
  runSliced,
  tick,
  sampledNames,
  stackNames,
  assertWellFormed,
  retryCapture,
} from './helpers.mjs'

// TurboFan inlines hot callees, and V8's profile then shows only the caller (in Chrome too). The tests
// about which functions appear on stacks need every function visible, so this file turns inlining off.
v8.setFlagsFromString('--no-turbo-inlining')

const PSEUDO = ['(root)', '(program)', '(idle)', '(garbage collector)']

async function profile(options, body) {
  const p = new Profiler(options)
  await body(p)
  return p.stop()
}

test('a trace of a real workload follows every structural rule', async () => {
  const trace = await profile({ sampleInterval: 1, maxBufferSize: 100000 }, () => runSliced(300, workload.runMixed))
  assertWellFormed(trace)
  assert.ok(trace.samples.length > 20, `only ${trace.samples.length} samples`)
  for (const name of PSEUDO) assert.ok(!trace.frames.some((f) => f.name === name), `${name} is never a frame`)
})

test('frames carry 1-based positions, names, resources and omit what is unknown', async () => {
  await retryCapture(3, async () => {
    const fresh = freshWorkload()
    const trace = await profile({ sampleInterval: 0.1, maxBufferSize: 100000 }, () =>
      runSliced(150, fresh.workload.runMixed),
    )
    const resourceId = trace.resources.indexOf(fresh.url)
    assert.ok(resourceId >= 0, `${fresh.url} in ${trace.resources}`)
    const find = (name) => trace.frames.find((f) => f.name === name && f.resourceId === resourceId)
    for (const [name, marker] of [
      ['burnAlpha', 'function burnAlpha'],
      ['burnBeta', 'function burnBeta'],
      ['spinFor', 'function spinFor'],
      ['crunch', 'crunch()'],
    ]) {
      const frame = find(name)
      assert.ok(frame, `${name} sampled`)
      assert.deepEqual({ line: frame.line, column: frame.column }, positionOf(marker), name)
    }
    // The truly anonymous arrow in runMixed is named "".
    const anonymous = trace.frames.find((f) => f.name === '' && f.resourceId === resourceId)
    assert.ok(anonymous, 'the anonymous arrow is a frame named ""')
    assert.deepEqual({ line: anonymous.line, column: anonymous.column }, positionOf('() => w.crunch()'))
    // RegExp code is a frame with no resource and no position.
    const regexp = trace.frames.find((f) => f.name.startsWith('RegExp: '))
    assert.ok(regexp, 'RegExp code is a frame')
    assert.deepEqual(Object.keys(regexp), ['name'])
    // Node internals are node: resources.
    assert.ok(
      trace.resources.some((r) => r.startsWith('node:')),
      'node: internals appear as resources',
    )
  })
})

test('builtins are frames without a resource', async () => {
  await retryCapture(3, async () => {
    // Date.now is a C++ builtin: V8 names it `now`, with no script URL.
    const trace = await profile({ sampleInterval: 0.1, maxBufferSize: 100000 }, () =>
      runSliced(300, (ms) => workload.spinFor(ms, () => Date.now())),
    )
    const builtin = trace.frames.find((f) => f.name === 'now' && !('resourceId' in f))
    assert.ok(
      builtin,
      `a builtin frame named now among ${JSON.stringify(trace.frames.filter((f) => f.name === 'now'))}`,
    )
    assert.ok(!('line' in builtin) && !('column' in builtin), 'a builtin has no known position')
  })
})

test('stacks follow the call path: burnAlpha under spinFor under runAlpha', async () => {
  await retryCapture(3, async () => {
    const { workload } = freshWorkload()
    const trace = await profile({ sampleInterval: 0.2, maxBufferSize: 100000 }, () => runSliced(100, workload.runAlpha))
    const withAlpha = trace.samples.filter(
      (s) => s.stackId !== undefined && stackNames(trace, s.stackId)[0] === 'burnAlpha',
    )
    assert.ok(withAlpha.length > 5, `${withAlpha.length} samples in burnAlpha`)
    // V8 itself, rarely, records three kinds of tick taken at a call boundary, and Chrome shows them
    // too. `node scripts/v8-boundary-ticks.cjs 40` counts them in raw inspector profiles, without
    // jsprof-node (burnAlpha ticks on 2026-11-25: Node 20, 33 of 6,649 with the callee twice; Node 26,
    // 45 so and 55 with the pair twice of 10,213):
    // - mid-call, the callee twice: burnAlpha < burnAlpha < spinFor < runAlpha;
    // - mid-call on Node 26, the callee and its caller twice: burnAlpha < spinFor < burnAlpha < spinFor
    //   < runAlpha;
    // - in the callee's prologue, before it has a frame of its own, the callee in place of its caller:
    //   burnAlpha < runAlpha (it failed this test in CI once).
    // Such stacks still follow the call path once repeats are collapsed and the one skipped caller
    // is allowed for; and nearly every stack is exact.
    let exact = 0
    for (const s of withAlpha) {
      const names = stackNames(trace, s.stackId)
      const collapsed = names.filter((name, i) => i === 0 || name !== names[i - 1])
      // A repeated callee-caller pair is one pair.
      if (collapsed[0] === collapsed[2] && collapsed[1] === collapsed[3]) collapsed.splice(0, 2)
      // A prologue tick lost the one caller, spinFor: put it back.
      if (collapsed[1] !== 'spinFor') collapsed.splice(1, 0, 'spinFor')
      assert.deepEqual(collapsed.slice(0, 3), ['burnAlpha', 'spinFor', 'runAlpha'], `stack ${names.join(' < ')}`)
      if (names[1] === 'spinFor' && names[2] === 'runAlpha') exact++
    }
    assert.ok(
      exact >= 0.95 * withAlpha.length,
      `${exact} of ${withAlpha.length} stacks exactly burnAlpha < spinFor < runAlpha`,
    )
  })
})

test('idle and GC samples have no stackId (absent, never null) and the right marker', async () => {
  await retryCapture(3, async () => {
    const trace = await profile({ sampleInterval: 0.1, maxBufferSize: 1000000 }, async () => {
      // Idle: the event loop waits on a timer.
      await new Promise((resolve) => setTimeout(resolve, 60))
      // GC: allocate heavily.
      let keep = []
      const end = performance.now() + 150
      while (performance.now() < end) {
        keep.push(new Array(500).fill({ a: 1 }))
        if (keep.length > 2000) keep = []
      }
    })
    assertWellFormed(trace)
    const idle = trace.samples.filter((s) => !('stackId' in s) && !('marker' in s))
    const gc = trace.samples.filter((s) => s.marker === 'gc')
    assert.ok(idle.length > 5, `idle samples: ${idle.length}`)
    assert.ok(gc.length > 0, 'GC samples appear when allocating heavily')
    for (const s of [...idle, ...gc]) {
      assert.equal('stackId' in s, false)
      assert.notEqual(s.stackId, null)
    }
    assert.ok(trace.samples.some((s) => s.marker === 'script'))
  })
})

test('timestamps are performance.now() values inside the profiler window, at µs precision', async () => {
  await retryCapture(3, async () => {
    const before = performance.now()
    const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    const afterStart = performance.now()
    await runSliced(150, workload.runBeta)
    const beforeStop = performance.now()
    const pending = p.stop()
    const trace = await pending
    assert.ok(trace.samples.length > 10)
    const first = trace.samples[0].timestamp
    const last = trace.samples.at(-1).timestamp
    assert.ok(first >= before, `first sample ${first} >= construction ${before}`)
    assert.ok(first - afterStart < 50, `first sample ${first} soon after start ${afterStart}`)
    assert.ok(last <= beforeStop + 5, `last sample ${last} <= stop ${beforeStop}`)
    // Samples are about 1 ms apart.
    const gaps = trace.samples
      .slice(1)
      .map((s, i) => s.timestamp - trace.samples[i].timestamp)
      .sort((a, b) => a - b)
    const median = gaps[gaps.length >> 1]
    assert.ok(median >= 0.5 && median < 5, `median gap ${median} ms`)
  })
})

test('samples taken after stop() is called are not included', async () => {
  const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
  await runSliced(150, workload.runAlpha)
  const stopAt = performance.now()
  const pending = p.stop()
  // Burn a different function right after stop(), before the harvest can run.
  workload.runBeta(150)
  const trace = await pending
  const names = sampledNames(trace)
  assert.ok(names.has('burnAlpha'))
  assert.ok(!names.has('burnBeta'), 'burnBeta ran only after stop()')
  assert.ok(trace.samples.every((s) => s.timestamp <= stopAt + 1))
})

test('the trace is plain data: JSON round-trips it unchanged', async () => {
  const trace = await profile({ sampleInterval: 1, maxBufferSize: 100000 }, () => runSliced(100, workload.runMixed))
  const copy = JSON.parse(JSON.stringify(trace))
  assert.deepEqual(copy, trace)
  for (const s of trace.samples) assert.equal(Object.getPrototypeOf(s), Object.prototype)
  assert.ok(Array.isArray(trace.samples))
})

test('profilers run at once, each with its own window and interval', async () => {
  await retryCapture(3, async () => {
    const slowStart = performance.now()
    const slow = new Profiler({ sampleInterval: 10, maxBufferSize: 100000 })
    await runSliced(200, workload.runAlpha)
    const fastStart = performance.now()
    const fast = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    await runSliced(200, workload.runBeta)
    const slowStop = performance.now()
    const slowTrace = await slow.stop()
    await runSliced(100, workload.runAlpha)
    const fastStop = performance.now()
    const fastTrace = await fast.stop()

    assert.ok(slowTrace.samples[0].timestamp >= slowStart)
    assert.ok(slowTrace.samples.at(-1).timestamp <= slowStop + 1)
    assert.ok(fastTrace.samples[0].timestamp >= fastStart)
    assert.ok(fastTrace.samples.at(-1).timestamp <= fastStop + 1)
    assert.ok(sampledNames(slowTrace).has('burnAlpha') && sampledNames(slowTrace).has('burnBeta'))

    const median = (t) => {
      const g = t.samples
        .slice(1)
        .map((s, i) => s.timestamp - t.samples[i].timestamp)
        .sort((a, b) => a - b)
      return g[g.length >> 1]
    }
    // Each at about its own interval (a loaded machine stretches V8's ticks, so bounds are loose, and
    // the decisive check is the ratio: the slow profiler keeps about one of every ten ticks).
    const slowGap = median(slowTrace)
    const fastGap = median(fastTrace)
    assert.ok(slowGap >= 9 && slowGap < 30, `slow median gap ${slowGap}`)
    assert.ok(fastGap >= 0.5 && fastGap < 4, `fast median gap ${fastGap}`)
    assert.ok(slowGap / fastGap > 3, `slow/fast gap ratio ${slowGap / fastGap}`)
    assert.ok(fastTrace.samples.length > 3 * slowTrace.samples.length * (300 / 400), 'the fast one has many more')
  })
})

test('stopping one profiler leaves the others running', async () => {
  await retryCapture(3, async () => {
    const a = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    const b = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    await runSliced(80, workload.runAlpha)
    const ta = await a.stop()
    await runSliced(80, workload.runBeta)
    const tb = await b.stop()
    assert.ok(!sampledNames(ta).has('burnBeta'))
    assert.ok(sampledNames(tb).has('burnAlpha') && sampledNames(tb).has('burnBeta'))
    assert.ok(tb.samples.length > ta.samples.length)
  })
})

test('many profilers stopped in the same tick all resolve', async () => {
  const profilers = Array.from(
    { length: 50 },
    (_, i) => new Profiler({ sampleInterval: 1 + (i % 5), maxBufferSize: 1000 }),
  )
  await runSliced(50, workload.runAlpha)
  const traces = await Promise.all(profilers.map((p) => p.stop()))
  for (const t of traces) {
    assertWellFormed(t)
    assert.ok(t.samples.length > 0)
  }
  await tick()
})
