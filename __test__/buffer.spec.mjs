// maxBufferSize: a trace never holds more; the first overflow dispatches one samplebufferfull, on that
// profiler only; after that nothing samples on its behalf.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Profiler } from 'jsprof-node'
import sampler from '../lib/sampler/index.js'
import { workload, runSliced, tick, assertWellFormed } from './helpers.mjs'

const waitFor = async (predicate, ms = 5000) => {
  const end = performance.now() + ms
  while (!predicate()) {
    if (performance.now() > end) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

test('a full buffer dispatches samplebufferfull once, asynchronously, and keeps the first samples', async () => {
  const big = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
  const smallStart = performance.now()
  const small = new Profiler({ sampleInterval: 1, maxBufferSize: 5 })
  const smallBuilt = performance.now()
  const events = { small: [], big: [] }
  small.addEventListener('samplebufferfull', (e) => events.small.push(e))
  big.addEventListener('samplebufferfull', (e) => events.big.push(e))
  // Synchronous work: the event can only arrive later, asynchronously.
  workload.runAlpha(30)
  assert.equal(events.small.length, 0, 'not dispatched synchronously')
  await runSliced(100, workload.runAlpha)
  await waitFor(() => events.small.length > 0)
  await runSliced(50, workload.runAlpha)
  assert.equal(events.small.length, 1, 'dispatched exactly once')
  assert.equal(events.big.length, 0, 'only on the profiler whose buffer is full')
  const [event] = events.small
  assert.equal(event.type, 'samplebufferfull')
  assert.equal(event.constructor, Event)
  assert.equal(small.stopped, false, 'a full profiler is not stopped')
  const [smallTrace, bigTrace] = await Promise.all([small.stop(), big.stop()])
  assertWellFormed(smallTrace)
  assert.equal(smallTrace.samples.length, 5)
  // The first five samples after its construction: the big profiler, started before, has them too.
  // (Where its window starts inside the constructor is the trace's to say: a sample may land between
  // smallStart and that point on a loaded machine. None of the big one's after the constructor
  // returned may come before the small one's first.)
  const first = smallTrace.samples[0].timestamp
  assert.ok(first >= smallStart, `${first} >= ${smallStart}`)
  assert.deepEqual(
    bigTrace.samples.filter((s) => s.timestamp >= smallBuilt && s.timestamp < first),
    [],
  )
  assert.deepEqual(
    smallTrace.samples.map((s) => s.timestamp),
    bigTrace.samples
      .filter((s) => s.timestamp >= first)
      .slice(0, 5)
      .map((s) => s.timestamp),
  )
  assert.ok(bigTrace.samples.length > 15, `${bigTrace.samples.length}`)
})

test('after its buffer fills, nothing keeps sampling on its behalf', async () => {
  const s = sampler.getSampler()
  const p = new Profiler({ sampleInterval: 1, maxBufferSize: 3 })
  let full = false
  p.addEventListener('samplebufferfull', () => (full = true))
  assert.equal(s.running, true)
  await waitFor(() => full)
  await tick()
  assert.equal(s.liveCount, 0, 'no subscription asks for samples any more')
  // V8 keeps sampling for the engine's grace (a Profiler a moment later starts warm), then stops.
  await waitFor(() => !s.running, 10_000)
  assert.equal(s.running, false, 'V8 stopped sampling: no live profiler needs it')
  await runSliced(30, workload.runAlpha)
  const trace = await p.stop()
  assert.equal(trace.samples.length, 3)
})

test('maxBufferSize 0 fills at once and never samples', async () => {
  const s = sampler.getSampler()
  const before = s.stats.harvests
  const { coldStarts } = s.stats
  const live = s.liveCount
  const p = new Profiler({ sampleInterval: 1, maxBufferSize: 0 })
  assert.equal(s.liveCount, live, 'nothing samples for it')
  assert.equal(s.stats.coldStarts, coldStarts, 'nothing started sampling for it')
  await new Promise((resolve) => p.addEventListener('samplebufferfull', resolve, { once: true }))
  const trace = await p.stop()
  assert.deepEqual(trace, { frames: [], resources: [], samples: [], stacks: [] })
  assert.equal(s.stats.harvests, before)
})

test('stop() right when the buffer fills still resolves with the first maxBufferSize samples', async () => {
  for (const size of [1, 2, 10]) {
    const p = new Profiler({ sampleInterval: 1, maxBufferSize: size })
    workload.runAlpha(size + 20)
    const trace = await p.stop()
    assert.ok(trace.samples.length <= size, `${trace.samples.length} <= ${size}`)
    assert.ok(trace.samples.length >= 1)
  }
})

test('a buffer of exactly the sample count does not fire', async () => {
  // 4294967295 (from -1) never fills.
  const p = new Profiler({ sampleInterval: 1, maxBufferSize: -1 })
  let fired = false
  p.addEventListener('samplebufferfull', () => (fired = true))
  await runSliced(60, workload.runBeta)
  const trace = await p.stop()
  await tick()
  assert.equal(fired, false)
  assert.ok(trace.samples.length > 10)
})
