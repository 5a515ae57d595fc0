import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startContinuous } from 'jsprof-node'
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

test('continuous chunks: complete traces, no shared sample, no hand-off gap wider than elsewhere', async () => {
  const chunks = []
  const interval = 2
  const handle = startContinuous({ sampleInterval: interval, chunkSeconds: 0.2, onChunk: (c) => chunks.push(c) })
  assert.equal(handle.sampleInterval, interval)
  await busyFor(1100)
  await handle.stop()
  assert.ok(chunks.length >= 4, `${chunks.length} chunks`)
  assert.deepEqual(
    chunks.map((c) => c.index),
    chunks.map((_, i) => i),
  )
  let maxInnerGap = 0
  for (const chunk of chunks) {
    const ts = chunk.trace.samples.map((s) => s.timestamp)
    assert.ok(ts.length > 0, `chunk ${chunk.index} has samples`)
    for (let i = 1; i < ts.length; i++) {
      assert.ok(ts[i] >= ts[i - 1], 'samples in time order')
      maxInnerGap = Math.max(maxInnerGap, ts[i] - ts[i - 1])
    }
    assert.ok(ts[0] > chunk.startTime - 0.001 || chunk.index === 0, `chunk ${chunk.index} starts after its start`)
    assert.ok(ts.at(-1) <= chunk.endTime + 0.001, `chunk ${chunk.index} ends by its end`)
    // Each chunk is a complete, self-contained trace.
    for (const s of chunk.trace.samples) if (s.stackId !== undefined) assert.ok(s.stackId < chunk.trace.stacks.length)
    assert.ok(chunk.endUnixMs >= chunk.startUnixMs)
  }
  for (let k = 1; k < chunks.length; k++) {
    const prev = chunks[k - 1]
    const next = chunks[k]
    assert.equal(next.startTime, prev.endTime, 'chunk k+1 starts where chunk k ended')
    const last = prev.trace.samples.at(-1).timestamp
    const first = next.trace.samples[0].timestamp
    assert.ok(first > last, `chunk ${k} shares no sample with chunk ${k - 1} (${last} < ${first})`)
    assert.ok(first > prev.endTime, 'exact hand-off: chunk k+1 takes t > end of chunk k')
    const gap = first - last
    // No sample is lost at a boundary: its gap is no wider than the sampler's own gaps inside chunks
    // (on an idle machine: about one interval; a loaded machine starves V8's sampler thread at times).
    assert.ok(gap <= Math.max(3 * interval, maxInnerGap) + 0.01, `gap ${gap} at boundary ${k} (inner max ${maxInnerGap})`)
  }
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
