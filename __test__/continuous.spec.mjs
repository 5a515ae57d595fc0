import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Profiler, startContinuous } from 'jsprof-node'
import { burn, sampledFunctions } from './prod-helpers.mjs'

function continuousWork(ms) {
  return burn(ms)
}

/** Keeps the thread busy in slices (so V8 samples steadily) for `totalMs`. */
async function busyFor(totalMs) {
  const end = performance.now() + totalMs
  while (performance.now() < end) {
    continuousWork(4)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

test('continuous chunks: complete traces, no sample lost or shared at a hand-off', async () => {
  const chunks = []
  const interval = 2
  // A Profiler at the same interval over the whole run: it shares the thread's sampler, so it sees
  // every sample V8 took. The chunks together must hold exactly those samples (an exact, not a timed,
  // check that the hand-offs lose and duplicate nothing).
  const witness = new Profiler({ sampleInterval: interval, maxBufferSize: 1e6 })
  const handle = startContinuous({ sampleInterval: interval, chunkSeconds: 0.2, onChunk: (c) => chunks.push(c) })
  assert.equal(handle.sampleInterval, interval)
  await busyFor(1100)
  await handle.stop()
  const all = (await witness.stop()).samples.map((s) => s.timestamp)
  assert.ok(chunks.length >= 4, `${chunks.length} chunks`)
  assert.deepEqual(
    chunks.map((c) => c.index),
    chunks.map((_, i) => i),
  )
  // Samples keep V8's order, which now and then puts one out of time order (as in Chrome): the
  // checks below use each chunk's earliest and latest sample, and the order is checked against the
  // witness's, which V8 gave the same way.
  const earliest = (c) => Math.min(...c.trace.samples.map((s) => s.timestamp))
  const latest = (c) => Math.max(...c.trace.samples.map((s) => s.timestamp))
  // A chunk may be empty only when V8 took no sample in its window at all (its sampler thread starved
  // on a loaded machine): the witness says so. The hand-off checks then run between non-empty chunks.
  const filled = chunks.filter((c) => c.trace.samples.length > 0)
  assert.ok(filled.length >= 2, `${filled.length} of ${chunks.length} chunks have samples`)
  for (const chunk of chunks) {
    assert.ok(chunk.endUnixMs >= chunk.startUnixMs)
    // Beside the spec's members, in WebIDL's order: the thread's clock and the interval (issue 23).
    assert.deepEqual(Object.keys(chunk.trace), ['frames', 'jsprof', 'resources', 'samples', 'stacks'])
    assert.deepEqual(chunk.trace.jsprof, {
      pid: process.pid,
      sampleInterval: chunk.sampleInterval,
      threadId: 0,
      timeOrigin: performance.timeOrigin,
    })
    if (chunk.trace.samples.length === 0) {
      const inWindow = all.filter((t) => t > chunk.startTime && t <= chunk.endTime)
      assert.deepEqual(inWindow, [], `chunk ${chunk.index} is empty while V8 sampled in its window`)
      continue
    }
    assert.ok(
      earliest(chunk) > chunk.startTime - 0.001 || chunk.index === 0,
      `chunk ${chunk.index} starts after its start`,
    )
    assert.ok(latest(chunk) <= chunk.endTime + 0.001, `chunk ${chunk.index} ends by its end`)
    // Each chunk is a complete, self-contained trace.
    for (const s of chunk.trace.samples) if (s.stackId !== undefined) assert.ok(s.stackId < chunk.trace.stacks.length)
  }
  for (let k = 1; k < chunks.length; k++) {
    assert.equal(chunks[k].startTime, chunks[k - 1].endTime, 'chunk k+1 starts where chunk k ended')
  }
  for (let k = 1; k < filled.length; k++) {
    const prev = filled[k - 1]
    const next = filled[k]
    const last = latest(prev)
    const first = earliest(next)
    assert.ok(first > last, `chunk ${next.index} shares no sample with chunk ${prev.index} (${last} < ${first})`)
    assert.ok(first > prev.endTime, 'exact hand-off: a later chunk takes t > end of chunk k')
    // No sample is lost at a boundary: the witness has nothing between one chunk's last and the next's first.
    const between = all.filter((t) => t > last && t < first)
    assert.deepEqual(between, [], `boundary ${prev.index}..${next.index}: samples ${last}..${first}`)
  }
  // And across the whole run: the chunks' samples are exactly the witness's samples of that span.
  const chunked = chunks.flatMap((c) => c.trace.samples.map((s) => s.timestamp))
  const span = all.filter((t) => t >= earliest(filled[0]) && t <= latest(filled.at(-1)))
  assert.deepEqual(chunked, span, "the chunks hold every sample of their span, once, in V8's order")
  const total = new Map()
  for (const c of chunks) for (const [name, n] of sampledFunctions(c.trace)) total.set(name, (total.get(name) || 0) + n)
  assert.ok((total.get('continuousWork') || 0) > 0, 'the busy function is in the chunks')
  assert.equal(handle.stats.chunks, chunks.length)
})

test('stop() delivers the last partial chunk and can be called twice', async () => {
  const chunks = []
  const handle = startContinuous({ sampleInterval: 1, chunkSeconds: 60, onChunk: (c) => chunks.push(c) })
  await busyFor(100)
  await handle.stop()
  await handle.stop()
  assert.equal(chunks.length, 1)
  assert.ok(chunks[0].trace.samples.length > 0)
})

test('an async onChunk is awaited by stop(); bad options throw', async () => {
  let delivered = false
  const handle = startContinuous({
    sampleInterval: 5,
    chunkSeconds: 10,
    onChunk: async () => {
      await new Promise((resolve) => setTimeout(resolve, 20))
      delivered = true
    },
  })
  await busyFor(30)
  await handle.stop()
  assert.equal(delivered, true)
  assert.throws(() => startContinuous({ onChunk() {}, chunkSeconds: 0 }), RangeError)
  assert.throws(() => startContinuous({ onChunk() {}, sampleInterval: -1 }), RangeError)
  assert.throws(() => startContinuous({}), TypeError)
})
