// The sampler engine's scheduling, against a fake V8 (no real profiling, no sampling luck): when it
// harvests, when V8 starts, restarts and stops, who gets which samples. And the inspector session's
// restart against a stub inspector: the bridge's samples are not lost.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { FakeSession, stubInspector } from './fake-v8.mjs'

const require = createRequire(import.meta.url)
const { SamplerEngine } = require('../lib/sampler/engine.js')
const { InspectorSession } = require('../lib/sampler/inspector-session.js')
const { Subscription } = require('../lib/sampler/subscription.js')
const schedule = require('../lib/sampler/schedule.js')

const turn = () => new Promise((resolve) => setImmediate(resolve))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * An engine over a fake V8 with a clock the test moves (µs). The engine reads `clock.us` plus the real
 * time since the engine last looked at the test's value, so its timers still come due by themselves.
 */
function movingClock() {
  const clock = { us: 1_000_000 }
  let seen = clock.us
  let realAtSeen = performance.now()
  const now = () => {
    if (clock.us !== seen) {
      seen = clock.us
      realAtSeen = performance.now()
    }
    return clock.us + (performance.now() - realAtSeen) * 1000
  }
  return { clock, now }
}

function setup(options = {}) {
  const { clock, now } = movingClock()
  const session = new FakeSession()
  const engine = new SamplerEngine(session, { now, ...options })
  const sub = (startUs = clock.us, more = {}) =>
    new Subscription({ startUs, intervalUs: 1000, maxSamples: 1000, ...more })
  return { clock, session, engine, sub }
}

const timesOf = (trace) => trace.samples.map((s) => s.timestamp)

test('schedule: a lone stop harvests now, frequent ones wait for the gap, a caller bound wins', () => {
  const o = schedule.DEFAULTS
  assert.equal(schedule.stopHarvestDueUs(100_000, -Infinity, undefined), 100_000)
  assert.equal(schedule.stopHarvestDueUs(100_000, 100_000 - o.minStopGapUs, undefined), 100_000)
  assert.equal(schedule.stopHarvestDueUs(100_000, 95_000, undefined), 95_000 + o.minStopGapUs)
  assert.equal(schedule.stopHarvestDueUs(100_000, 99_999, 1_000_000), 1_100_000)
  assert.equal(schedule.harvestAction(1000, Infinity), 'stop')
  assert.equal(schedule.harvestAction(1000, 1000), 'keep')
  assert.equal(schedule.harvestAction(1000, 1999), 'keep', 'slower, but not twice as slow: no re-logging restart')
  assert.equal(schedule.harvestAction(1000, 2000), 'restart')
  assert.equal(schedule.harvestAction(1000, 500), 'restart')
  assert.equal(schedule.harvestPeriodUs(10), o.harvestMinPeriodUs)
  assert.equal(schedule.harvestPeriodUs(1000), 1000 * o.harvestEverySamples)
  assert.equal(schedule.harvestPeriodUs(1e9), o.harvestMaxPeriodUs)
  assert.equal(schedule.keepsWarm(10, 0, 1000, 100), true)
  assert.equal(schedule.keepsWarm(100, 0, 1000, 100), false, 'the grace is over')
  assert.equal(schedule.keepsWarm(10, 0, 100, 100), false, 'not at 0.1 ms: V8 sampling itself costs CPU there')
  assert.equal(schedule.effectiveIntervalUs(10), 10_000)
  assert.equal(schedule.effectiveIntervalUs(0), schedule.MIN_INTERVAL_US)
  assert.equal(schedule.effectiveIntervalUs(0.0015), schedule.MIN_INTERVAL_US)
  assert.equal(schedule.effectiveIntervalUs(1.0004), 1001)
})

test('a lone stop resolves after one harvest, with exactly the samples of its window', async () => {
  const { clock, session, engine, sub } = setup()
  const a = sub(clock.us)
  engine.add(a)
  assert.deepEqual(session.calls, ['start 1000'])
  session.tick(clock.us - 500, clock.us + 1000, clock.us + 2000, clock.us + 3000)
  clock.us += 2500
  a.stopAt(clock.us)
  const done = engine.finish(a)
  await done
  assert.equal(session.count('take'), 1, 'one harvest, V8 kept running (warm)')
  assert.deepEqual(timesOf(a.trace(0)), [1001, 1002], 'before the window and after the stop are left out')
})

test('the session is told when the first subscription that keeps samples arrives and when the last leaves', async () => {
  const { clock, session, engine, sub } = setup()
  const told = []
  session.recordingChanged = (on) => told.push(on)
  // A listener (a request profiler's collector) keeps no samples: nothing said.
  const listener = sub(clock.us, { record: false })
  engine.add(listener)
  assert.deepEqual(told, [])
  const a = sub(clock.us)
  const b = sub(clock.us)
  engine.add(a)
  engine.add(b)
  assert.deepEqual(told, [true])
  clock.us += 1000
  a.stopAt(clock.us)
  await engine.finish(a)
  assert.deepEqual(told, [true], 'b still keeps samples')
  engine.remove(b)
  assert.deepEqual(told, [true, false])
  engine.remove(b)
  assert.deepEqual(told, [true, false], 'said once')
  engine.remove(listener)
})

test('frequent stops share harvests: at most one per minStopGapUs', async () => {
  const gapUs = 20_000
  const clock = { now: () => performance.now() * 1000 }
  const session = new FakeSession()
  const engine = new SamplerEngine(session, { now: clock.now, minStopGapUs: gapUs })
  const started = clock.now()
  const stops = []
  for (let i = 0; i < 60; i++) {
    // (A large buffer: a small one would add harvests of its own, to tell when it is full.)
    const s = new Subscription({ startUs: clock.now(), intervalUs: 1000, maxSamples: 100_000 })
    engine.add(s)
    s.stopAt(clock.now())
    stops.push(engine.finish(s))
    await sleep(2)
  }
  await Promise.all(stops)
  const elapsedUs = clock.now() - started
  const harvests = session.count('take') + session.count('stop')
  assert.ok(harvests <= Math.ceil(elapsedUs / gapUs) + 1, `${harvests} harvests in ${(elapsedUs / 1000).toFixed(0)} ms`)
  assert.ok(harvests >= 1)
})

test('stops served by one harvest share one promise; a rejected harvest rejects each of them', async () => {
  const { clock, engine, sub } = setup()
  const a = sub()
  const b = sub()
  engine.add(a)
  engine.add(b)
  clock.us += 1000
  a.stopAt(clock.us)
  b.stopAt(clock.us)
  const pa = engine.finish(a)
  const pb = engine.finish(b)
  assert.equal(pa, pb, 'one promise for every stop waiting for the same harvest')
  await pa
  const c = sub()
  engine.add(c)
  c.stopAt(clock.us)
  const pc = engine.finish(c)
  assert.notEqual(pc, pa, 'a later stop waits for a later harvest')
  await pc
})

test('an owner is held strongly until a harvest finds it live, then weakly and watched; its stop unwatches it', async () => {
  const { clock, session, engine, sub } = setup()
  const owner = {}
  const kept = sub(clock.us, { owner })
  const brief = sub(clock.us, { owner: {} })
  engine.add(kept)
  engine.add(brief)
  assert.equal(kept.owner, owner, 'held strongly: a Profiler stopped before any harvest never costs a WeakRef')
  brief.stopAt(clock.us)
  const briefDone = engine.finish(brief)
  clock.us += 1000
  session.tick(clock.us - 500)
  engine.harvestWithin(0)
  await briefDone
  assert.equal(brief.watched, false, 'stopped before the harvest: never watched')
  assert.equal(kept.watched, true, 'still live at a harvest: watched for collection from now on')
  assert.ok(kept.owner instanceof WeakRef, 'and held weakly, so that it can be collected')
  assert.equal(kept.ownerNow(), owner)
  kept.stopAt(clock.us)
  const done = engine.finish(kept)
  assert.equal(kept.watched, false, 'a stopped subscription is no longer watched')
  assert.equal(kept.owner, owner, 'and holds its owner strongly again (samplebufferfull may still be owed to it)')
  await done
  assert.equal(engine.liveCount, 0)
})

test('V8 stays warm for the grace after the last subscription, then stops; within it no cold start', async () => {
  const { clock, session, engine, sub } = setup({ graceUs: 50_000 })
  const a = sub()
  engine.add(a)
  a.stopAt(clock.us)
  await engine.finish(a)
  assert.equal(session.running, true, 'kept warm')
  clock.us += 10_000
  const b = sub()
  engine.add(b)
  assert.equal(session.count('start'), 1, 'the next subscription within the grace starts no V8')
  b.stopAt(clock.us)
  await engine.finish(b)
  clock.us += 60_000 // the grace is over; the engine's timer (real time) harvests and stops V8
  for (let i = 0; i < 200 && session.running; i++) await sleep(5)
  assert.equal(session.running, false)
  assert.equal(session.calls.at(-1), 'stop')
  const c = sub()
  engine.add(c)
  assert.equal(session.count('start'), 2, 'after the grace, a cold start')
  engine.remove(c)
})

test('no grace below 1 ms: V8 stops with the last subscription', async () => {
  const { clock, session, engine } = setup({ graceUs: 1_000_000 })
  const a = new Subscription({ startUs: clock.us, intervalUs: 100, maxSamples: 10 })
  engine.add(a)
  a.stopAt(clock.us)
  await engine.finish(a)
  assert.equal(session.running, false)
  assert.deepEqual(session.calls, ['start 100', 'stop'])
})

test('a faster subscription restarts V8 at its interval; the slower one keeps its own samples', async () => {
  const { clock, session, engine, sub } = setup()
  const slow = new Subscription({ startUs: clock.us, intervalUs: 4000, maxSamples: 100 })
  engine.add(slow)
  session.tick(clock.us + 4000)
  clock.us += 5000
  const fast = sub()
  engine.add(fast)
  assert.deepEqual(session.calls, ['start 4000', 'stop', 'start 1000'])
  for (let k = 1; k <= 8; k++) session.tick(clock.us + k * 1000)
  clock.us += 9000
  fast.stopAt(clock.us)
  slow.stopAt(clock.us)
  await Promise.all([engine.finish(fast), engine.finish(slow)])
  assert.equal(fast.trace(0).samples.length, 8)
  // Decimated to about its own 4 ms: the next due after a sample is one interval later, less half a
  // tick of the sampler that took it (4 ms at first, then 1 ms).
  assert.deepEqual(timesOf(slow.trace(1_000_000)), [4, 6, 10])
})

test('samples reach only the subscriptions live when they were taken; a stopped one gets no later ones', async () => {
  const { clock, session, engine, sub } = setup()
  const a = sub()
  engine.add(a)
  session.tick(clock.us + 1000)
  clock.us += 1500
  a.stopAt(clock.us)
  const doneA = engine.finish(a)
  const b = sub(clock.us)
  engine.add(b)
  await doneA
  // A tick well after that harvest (the engine drops what V8 stamps during its own harvests).
  clock.us += 200_000
  session.tick(clock.us - 1000)
  b.stopAt(clock.us)
  await engine.finish(b)
  assert.deepEqual(timesOf(a.trace(1_000_000)), [1])
  assert.deepEqual(timesOf(b.trace(1_000_000)), [200.5])
})

test('a subscription whose window holds no sample costs no Recording', async () => {
  const { clock, session, engine, sub } = setup()
  const early = sub()
  engine.add(early)
  session.tick(clock.us + 100)
  clock.us += 200
  early.stopAt(clock.us)
  const quiet = sub(clock.us + 50)
  engine.add(quiet)
  clock.us += 100
  quiet.stopAt(clock.us)
  await Promise.all([engine.finish(early), engine.finish(quiet)])
  assert.notEqual(early.recording, null)
  assert.equal(quiet.recording, null, 'no native object for a window without samples')
  assert.deepEqual(quiet.trace(0), { frames: [], resources: [], samples: [], stacks: [] })
})

test('a stopping subscription whose window lies in its last chunk has its trace from it, with no Recording: the same trace', async () => {
  const { clock, session, engine, sub } = setup()
  const traceClock = { pid: 7, threadId: 0, timeOrigin: 1_700_000_000_000 }
  // Pairs over the same windows, one through a Recording, one built at the harvest (`early`): a plain
  // window, a buffer that fills, a start that excludes a sample at its very time, a trace with the
  // jsprof member.
  const kinds = [{}, { maxSamples: 2 }, { exclusiveStart: true }, { clock: traceClock }]
  const start = clock.us
  const pairs = kinds.map(({ clock: c, ...more }) =>
    [undefined, { originUs: 0, clock: c }].map((early) => {
      const s = sub(start, { ...more, early, onFull: () => (s.fulls = (s.fulls ?? 0) + 1) })
      engine.add(s)
      return { s, c }
    }),
  )
  session.tick(start, start + 1000, start + 2000, start + 3000)
  clock.us += 5000
  for (const pair of pairs) for (const { s } of pair) s.stopAt(clock.us)
  await Promise.all(pairs.flat().map(({ s }) => engine.finish(s)))
  for (const [kind, [viaRecording, built]] of pairs.entries()) {
    assert.notEqual(viaRecording.s.recording, null)
    assert.equal(built.s.recording, null, `kind ${kind}: no Recording`)
    assert.equal(built.s.fulls, viaRecording.s.fulls, `kind ${kind}: onFull alike`)
    assert.deepEqual(built.s.trace(0, built.c), viaRecording.s.trace(0, viaRecording.c), `kind ${kind}`)
  }
  assert.equal(pairs[1][1].s.fulls, 1)
  assert.equal(pairs[0][1].s.sampleCount, 0, 'its trace was handed out: nothing kept')

  // A window over two harvests: a Recording from the first, the same trace as one without `early`.
  // (The test's clock moves past the real time the harvests above took.)
  clock.us += 10_000_000
  const a = sub(clock.us)
  const b = sub(clock.us, { early: { originUs: 0, clock: undefined } })
  engine.add(a)
  engine.add(b)
  session.tick(clock.us + 1000)
  clock.us += 2000
  engine.harvestWithin(0)
  await turn()
  await turn()
  session.tick(clock.us + 1000)
  clock.us += 2000
  a.stopAt(clock.us)
  b.stopAt(clock.us)
  await Promise.all([engine.finish(a), engine.finish(b)])
  assert.notEqual(b.recording, null, 'a Recording since the first harvest')
  const [ta, tb] = [a.trace(0), b.trace(0)]
  assert.equal(ta.samples.length, 2)
  assert.deepEqual(tb, ta)
})

test('a full buffer calls onFull once, and the subscription takes nothing more', async () => {
  const { clock, session, engine } = setup()
  let fulls = 0
  const s = new Subscription({ startUs: clock.us, intervalUs: 1000, maxSamples: 2, onFull: () => fulls++ })
  engine.add(s)
  session.tick(clock.us + 1000, clock.us + 2000, clock.us + 3000)
  clock.us += 5000 // the ticks are before the harvest (the engine drops what V8 stamps during it)
  engine.harvestWithin(0)
  await turn()
  await turn()
  assert.equal(fulls, 1)
  assert.equal(s.state, 'ended')
  assert.equal(engine.liveCount, 0)
  session.tick(clock.us + 4000)
  engine.harvestWithin(0)
  await turn()
  await turn()
  assert.equal(fulls, 1)
  assert.equal(s.trace(0).samples.length, 2)
})

test('a V8 failure rejects the waiting stops, and the next subscription starts V8 afresh', async () => {
  const { clock, session, engine, sub } = setup()
  const a = sub()
  engine.add(a)
  session.failNext = new Error('inspector gone')
  a.stopAt(clock.us)
  await assert.rejects(engine.finish(a), /inspector gone/)
  assert.equal(engine.running, false)
  assert.ok(session.calls.includes('reset'))
  engine.add(sub())
  assert.equal(session.count('start'), 2)
})

test('listeners see every chunk with its sorted sample times', async () => {
  const { clock, session, engine } = setup()
  const seen = []
  const l = new Subscription({
    startUs: clock.us,
    intervalUs: 1000,
    record: false,
    onChunk: (h) => seen.push([...h.times]),
  })
  engine.add(l)
  const t0 = clock.us
  session.tick(t0 + 2000, t0 + 1000, t0 + 3000)
  clock.us += 5000
  engine.harvestWithin(0)
  await turn()
  await turn()
  assert.deepEqual(seen, [[t0 + 1000, t0 + 2000, t0 + 3000]])
  assert.equal(l.recording, null)
  engine.remove(l)
})

test('inspector session: a harvest keeps V8 alive with a bridge; the samples V8 stamps at its restarts are dropped', async () => {
  const stub = stubInspector()
  const session = new InspectorSession({ inspector: stub.inspector, console: stub.console })
  const { clock, now } = movingClock()
  stub.state.now = now // V8 stamps a sample of the current stack at each profile start
  const engine = new SamplerEngine(session, { now })
  // Every tick kept (1 µs), and a buffer that cannot fill in the test (no fullness harvest).
  const s = new Subscription({ startUs: clock.us, intervalUs: 1, maxSamples: 1_000_000 })
  engine.add(s)
  assert.deepEqual(stub.state.calls, ['Profiler.enable', 'Profiler.setSamplingInterval', 'Profiler.start'])
  // The cold start's sample is the constructor's caller (Chrome's first sample): kept.
  const [coldStart] = stub.state.mainSamples
  // Two ticks after it, then the harvest (the clock moved past them).
  const ticks = [coldStart + 1000, coldStart + 1500]
  stub.state.mainSamples.push(...ticks)
  clock.us = coldStart + 2000
  engine.harvestWithin(0)
  await turn()
  await turn()
  assert.deepEqual(stub.state.calls.slice(3), [
    'console.profile',
    'Profiler.stop',
    'Profiler.start',
    'console.profileEnd',
  ])
  assert.deepEqual(session.stats, { fullRestarts: 0, bridgedRestarts: 1 })
  // Two start samples of the harvest: one in the profile it stopped, one in the profile it began.
  assert.equal(stub.state.mainSamples.length, 1, 'the new profile begins with its start sample')
  clock.us += 200_000
  const last = clock.us - 500
  stub.state.mainSamples.push(last)
  s.stopAt(clock.us)
  await engine.finish(s)
  const expected = [coldStart, ...ticks, last].map((us) => Number(((us - 1_000_000) / 1000).toFixed(3)))
  const got = timesOf(s.trace(1_000_000)).map((ms) => Number(ms.toFixed(3)))
  assert.deepEqual(got, expected, 'every tick outside the harvests once; none of the harvest itself')
})

test('the engine hands the session the windows of its own harvests, not of a restart inside a constructor', async () => {
  const { clock, session, engine, sub } = setup()
  const a = sub(clock.us, { intervalUs: 2000 })
  engine.add(a)
  clock.us += 5000
  engine.harvestWithin(0)
  await turn()
  await turn()
  const [first] = session.ownWindows.splice(0)
  assert.equal(first.length, 2, 'the harvest the engine ran: its own window')
  assert.ok(first[0] >= clock.us && first[1] >= first[0])
  clock.us += 5000
  engine.add(sub(clock.us, { intervalUs: 500 })) // faster: restarts V8 inside the constructor
  await turn()
  await turn()
  const [second] = session.ownWindows.splice(0)
  assert.deepEqual(second, first, 'only the previous harvest window (its restart sample is in these samples)')
  clock.us += 5000
  engine.harvestWithin(0)
  await turn()
  await turn()
  const [third] = session.ownWindows.splice(0)
  assert.equal(third.length, 2, 'the constructor restart began no window of its own: its start sample is the caller')
  assert.ok(third[0] >= clock.us)
})

test('inspector session: with another profiler client possible, restarts are full (no bridge seen elsewhere)', async () => {
  const stub = stubInspector()
  stub.state.url = 'ws://127.0.0.1:9229/x' // the inspector is open: DevTools could be attached
  const session = new InspectorSession({ inspector: stub.inspector, console: stub.console })
  session.start(1000)
  stub.state.mainSamples = [1, 2]
  const taken = session.take()
  assert.equal(taken.length, 1)
  assert.ok(!stub.state.calls.includes('console.profile'))
  assert.deepEqual(session.stats, { fullRestarts: 1, bridgedRestarts: 0 })
})

test('another profiler client is --cpu-prof, NODE_V8_COVERAGE or an open inspector, not --cpu-prof-interval', () => {
  const { otherProfilerClientPossible } = require('../lib/sampler/inspector-session.js')
  const closed = { url: () => undefined }
  assert.equal(otherProfilerClientPossible(closed, {}, ['--cpu-prof']), true)
  assert.equal(otherProfilerClientPossible(closed, { NODE_OPTIONS: '--max-old-space-size=100 --cpu-prof' }, []), true)
  assert.equal(otherProfilerClientPossible(closed, { NODE_V8_COVERAGE: '/tmp/cov' }, []), true)
  assert.equal(otherProfilerClientPossible({ url: () => 'ws://127.0.0.1:9229/x' }, {}, []), true)
  // Options of --cpu-prof alone profile nothing; Node 24+'s test runner passes them to every child.
  assert.equal(otherProfilerClientPossible(closed, {}, ['--cpu-prof-interval=1000', '--cpu-prof-dir=/tmp']), false)
  assert.equal(otherProfilerClientPossible(closed, {}, []), false)
})

// The synchronous paths `jsprof record` ends through ('exit', a signal brought by a V8 interrupt).

/** A subscription with no buffer limit, as `jsprof record`'s. */
const unlimited = (startUs, more = {}) => new Subscription({ startUs, intervalUs: 1000, ...more })

test('flushSync harvests and converts at once: the samples are there without a turn, V8 goes on', async () => {
  const { clock, session, engine } = setup()
  const seen = []
  const r = unlimited(clock.us, { onChunk: (h) => seen.push(h.chunk.sampleCount) })
  engine.add(r)
  session.tick(clock.us + 1000, clock.us + 2000)
  clock.us += 2500
  assert.equal(engine.flushSync(), true)
  assert.deepEqual(session.calls, ['start 1000', 'take'])
  assert.equal(r.sampleCount, 2, 'no buffer limit: a Recording all the same')
  assert.deepEqual(seen, [2])
  const [first] = session.ownWindows
  assert.equal(first.length, 2, 'its own window, as for any harvest the engine runs')
  session.tick(clock.us + 1000)
  clock.us += 2000
  engine.flushSync()
  assert.equal(r.sampleCount, 3)
  assert.deepEqual(session.ownWindows[1].slice(0, 2), first, 'the next one drops the restart sample of the last')
  await turn()
  await turn()
  assert.equal(session.count('take'), 2, 'nothing left queued')
  assert.equal(engine.running, true)
})

test('stopSync stops V8 however warm, resolves the waiting stops, and a later subscription starts afresh', async () => {
  const { clock, session, engine, sub } = setup()
  const a = sub(clock.us)
  const r = unlimited(clock.us)
  engine.add(a)
  engine.add(r)
  session.tick(clock.us + 1000)
  clock.us += 1500
  a.stopAt(clock.us)
  const done = engine.finish(a)
  session.tick(clock.us + 100)
  clock.us += 200
  r.stopAt(clock.us)
  assert.equal(engine.stopSync(), true)
  assert.deepEqual(session.calls, ['start 1000', 'stop'], 'within the grace, yet stopped: the thread is ending')
  assert.equal(engine.running, false)
  await done
  assert.equal(a.sampleCount, 1)
  assert.equal(r.sampleCount, 2)
  await turn()
  await turn()
  assert.deepEqual(session.calls, ['start 1000', 'stop'], 'the queued harvest finds nothing to do')
  engine.add(sub(clock.us))
  assert.equal(session.count('start'), 2)
})

test('code run from a V8 interrupt clears no timer: the armed one re-plans when it fires', async () => {
  // An interrupt can land inside Node's timer code, between its check that a timer is armed and its
  // call of it: a timer cleared there is then called all the same ("timer._onTimeout is not a function").
  const { clock, session, engine } = setup({ harvestMinPeriodUs: 20_000, harvestMaxPeriodUs: 20_000 })
  const r = unlimited(clock.us)
  engine.add(r)
  const cleared = []
  const clear = globalThis.clearTimeout
  globalThis.clearTimeout = (t) => {
    cleared.push(t)
    return clear(t)
  }
  try {
    session.tick(clock.us + 1000)
    clock.us += 2000
    assert.equal(engine.flushSync(), true)
    const late = unlimited(clock.us, { maxSamples: 5 })
    engine.fromInterrupt(() => engine.add(late))
    late.stopAt(clock.us + 10)
    const done = engine.fromInterrupt(() => engine.finish(late))
    assert.deepEqual(cleared, [], 'flushSync, add and finish from an interrupt cleared no timer')
    // The armed timer re-plans: the periodic harvests and the waiting stop still come.
    await done
    const takes = session.count('take')
    await sleep(60)
    assert.ok(session.count('take') > takes, 'periodic harvests go on')
    cleared.length = 0 // (the timer's own re-plans, out of any interrupt, may clear)
    assert.equal(engine.stopSync(), true)
    assert.deepEqual(cleared, [], 'stopSync cleared no timer either')
    assert.equal(engine.running, false)
  } finally {
    globalThis.clearTimeout = clear
  }
  // The left timer finds the engine stopped and arms nothing more.
  await sleep(40)
  assert.equal(session.count('start'), 1)
})

test('a synchronous flush or stop that lands inside the engine own work does nothing and says so', async () => {
  const { clock, session, engine } = setup()
  const r = unlimited(clock.us)
  engine.add(r)
  const answers = []
  const take = session.take.bind(session)
  const toChunks = session.toChunks.bind(session)
  // As a V8 interrupt would: in the middle of the harvest, and of the conversion.
  session.take = () => {
    answers.push(engine.flushSync(), engine.stopSync())
    return take()
  }
  session.toChunks = (...args) => {
    answers.push(engine.flushSync())
    return toChunks(...args)
  }
  session.tick(clock.us + 1000)
  clock.us += 2000
  assert.equal(engine.flushSync(), true)
  assert.deepEqual(answers, [false, false, false])
  assert.equal(session.count('take'), 1)
  assert.equal(engine.running, true)
  assert.equal(r.sampleCount, 1)
})

test('with periodic harvests off, nothing harvests until asked (no timer at an infinite period)', async () => {
  const warnings = []
  const onWarning = (w) => warnings.push(w.name)
  process.on('warning', onWarning)
  const { clock, session, engine } = setup({ harvestMinPeriodUs: Infinity, harvestMaxPeriodUs: Infinity })
  engine.add(unlimited(clock.us))
  await sleep(60)
  process.removeListener('warning', onWarning)
  assert.deepEqual(session.calls, ['start 1000'])
  // Node runs a timer of an infinite delay after 1 ms, with a warning: a timer spinning every ms.
  assert.deepEqual(warnings, [])
})

test('a chunk is let go once every subscription had it; the Recordings that kept samples still hold them', async () => {
  const { clock, session, engine } = setup()
  const held = []
  const r = unlimited(clock.us, { onChunk: (h) => held.push(h.chunk) })
  engine.add(r)
  session.tick(clock.us + 1000, clock.us + 2000)
  clock.us += 2500
  engine.flushSync()
  assert.equal(held.length, 1)
  assert.equal(held[0].sampleCount, 0, 'released: its native memory goes now, not when the JS object is collected')
  assert.equal(timesOf(await r.trace(clock.us - 2500)).length, 2)
})

test('a streaming subscription (jsprof record) builds the same trace file as a kept one', () => {
  const { clock, session, engine } = setup()
  const origin = clock.us
  const kept = unlimited(clock.us)
  const streamed = unlimited(clock.us, { streamOriginUs: origin })
  engine.add(kept)
  engine.add(streamed)
  for (let round = 0; round < 3; round++) {
    session.tick(clock.us + 1000, clock.us + 2000)
    clock.us += 2500
    engine.flushSync()
  }
  assert.equal(streamed.sampleCount, 6)
  const file = (sub) => JSON.parse(sub.recording.buildFile(origin, { pid: 1 }).json.toString())
  assert.deepEqual(file(streamed), file(kept))
})

test("a streaming subscription's trace() is its samples too (every way to build a Recording's trace)", async () => {
  const { clock, session, engine } = setup()
  const origin = clock.us
  const streamed = unlimited(clock.us, { streamOriginUs: origin })
  engine.add(streamed)
  session.tick(clock.us + 1000, clock.us + 2000)
  clock.us += 2500
  engine.flushSync()
  assert.deepEqual(timesOf(await streamed.trace(origin)), [1, 2])
})
