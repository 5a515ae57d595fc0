// The spacing of `jsprof record`'s flushes (lib/record/spacing.js): a pure rule over what the flushes
// cost, checked on the shapes measured on real programs (no timing here).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { nextFlushDelayMs, flushSpacing, BUDGET, MAX_GAP_MS, FIXED_MS } = require('../lib/record/spacing.js')

/** Runs a program whose flush of a window of w ms costs cost(w) ms; returns the flush times and their total. */
function simulate({ flushEveryMs, runMs, cost }) {
  const times = []
  // As a thread spaces its flushes (lib/record/watcher.js, preload.js): each asked at t, done at t + took.
  const spacing = flushSpacing(flushEveryMs, 0)
  let t = flushEveryMs
  let windowStart = 0
  let total = 0
  while (t < runMs) {
    const took = cost(t - windowStart)
    total += took
    times.push(t)
    const d = spacing.next(t, took, t + took)
    assert.ok(d >= flushEveryMs && d <= Math.max(flushEveryMs, MAX_GAP_MS), `delay ${d} within its bounds`)
    windowStart = t
    t += took + d
  }
  return { times, total }
}

test('cheap flushes (an idle or one-loop thread) come every --flush-every', () => {
  // ~1 ms each, whatever the window: 1 s apart costs 0.1%.
  const { times, total } = simulate({ flushEveryMs: 1000, runMs: 60_000, cost: () => 1 })
  assert.ok(times.length >= 55, `${times.length} flushes in 60 s`)
  assert.ok(total / 60_000 <= 1 / BUDGET)
})

test('with a small --flush-every, flushes of a few ms are spaced to stay near 1% of the run', () => {
  const { times, total } = simulate({ flushEveryMs: 100, runMs: 20_000, cost: () => 2 })
  assert.ok(times.length >= 20, `still flushed often: ${times.length} flushes in 20 s`)
  assert.ok(total / 20_000 <= 1.5 / BUDGET, `flushes took ${((100 * total) / 20_000).toFixed(2)}% of the run`)
})

test('flushes whose cost grows with the window faster than the budget (tsc: ~4-7%) come at the longest gap', () => {
  // tsc on zod's sources: 44 ms for the first 1.2 s, 335 ms for the next 4.5 s (measured).
  const { times, total } = simulate({ flushEveryMs: 1000, runMs: 16_000, cost: (w) => 0.05 * w })
  assert.deepEqual(times, [1000], 'one flush in a 16 s run: the next would be 60 s later')
  assert.ok(total < 100)
  const long = simulate({ flushEveryMs: 1000, runMs: 200_000, cost: (w) => 0.05 * w })
  for (let i = 1; i < long.times.length; i++) {
    const gap = long.times[i] - long.times[i - 1]
    // The gap, and the flush that ends it (5% of it).
    assert.ok(gap <= 1.06 * MAX_GAP_MS, `a SIGKILL loses at most the longest gap: ${gap} ms`)
  }
})

test('a long recording whose stacks repeat (a server): within the budget, never more than the longest gap apart', () => {
  // The tree saturates: a window costs at most 30 ms however long (2% of a 1 s window).
  const { times, total } = simulate({ flushEveryMs: 1000, runMs: 600_000, cost: (w) => Math.min(30, 0.02 * w) })
  assert.ok(total / 600_000 <= 1 / BUDGET, `flushes took ${((100 * total) / 600_000).toFixed(2)}% of the run`)
  assert.ok(times.length >= 10, `${times.length} flushes in 10 min`)
  for (let i = 1; i < times.length; i++) assert.ok(times[i] - times[i - 1] <= MAX_GAP_MS + 100)
})

test('--flush-every above the longest gap is kept; bad numbers give --flush-every', () => {
  const args = { flushEveryMs: 120_000, elapsedMs: 130_000, windowMs: 120_000, tookMs: 6000, totalMs: 6000 }
  assert.equal(nextFlushDelayMs(args), 120_000)
  for (const bad of [NaN, -1, Infinity, undefined]) {
    assert.equal(nextFlushDelayMs({ ...args, flushEveryMs: 1000, tookMs: bad }), 1000)
    assert.equal(nextFlushDelayMs({ ...args, flushEveryMs: 1000, windowMs: bad }), 1000)
  }
  assert.equal(
    nextFlushDelayMs({ flushEveryMs: 1000, elapsedMs: 1000, windowMs: 0, tookMs: FIXED_MS, totalMs: FIXED_MS }),
    1000,
  )
})

test('a flush that made nothing (the engine busy) is asked again after --flush-every, and its window goes on', () => {
  const spacing = flushSpacing(1000, 0)
  assert.equal(spacing.next(1000, 0, 1001), 1000)
  assert.equal(spacing.next(2001, -1, 2002), 1000)
  // The next real flush's window is from the start, not from the busy asks.
  const d = spacing.next(3002, 40, 3042)
  assert.equal(d, nextFlushDelayMs({ flushEveryMs: 1000, elapsedMs: 3042, windowMs: 3002, tookMs: 40, totalMs: 40 }))
})
