'use strict'
// When `jsprof record` flushes next (the main thread's flushes, asked by lib/record/watcher.js, and a
// worker thread's own, lib/record/preload.js): one rule for both.
//
// What a flush costs grows with its window: V8 hands its samples out only as the call tree of the
// profile since the last flush, serialised to JSON and parsed back (docs/bench.md#what-record-costs),
// and a program whose stacks keep changing (tsc) pays a share of the window for it, however long the
// window. Each flushed window is paid again at the end (the
// trace of the last window, or `--cpu-prof`'s whole profile, holds the same stacks again), so the
// flushes are what `record` adds above `--cpu-prof` in the app. The rule therefore bounds their sum, not
// each one against the next gap (the rule before: a flush no sooner than 100× the last one's time,
// whose next window then cost more than that):
//   - the first flush comes after --flush-every (DEFAULT_FLUSH_EVERY_MS);
//   - then, projecting the next flush's cost from the last one's cost per ms of its window, the next one
//     comes when all flushes so far and it stay within 1/BUDGET of the recording's time (at the
//     latest while they do, when flushes cost more than that per ms: a longer wait costs more);
//   - at least --flush-every apart, and at most MAX_GAP_MS (or --flush-every when larger) apart
//     whatever they cost: a process killed without warning (SIGKILL) loses at most that last gap. For a
//     program whose flushes cost more than 1/BUDGET of their window, that is the trade-off: one flush
//     every MAX_GAP_MS, each costing that share of its window.

/**
 * --flush-every's default (ms): the first flush, and the least gap. A flush's call tree is mostly
 * stacks that the trace at the end holds again, so on a program of a few seconds each flush is cost
 * `--cpu-prof` does not have (40-70 ms at 1 s on tsc, prettier, webpack's main thread and its terser
 * worker): a program shorter than this pays none, one killed without warning before it leaves no trace.
 */
const DEFAULT_FLUSH_EVERY_MS = 5000
/** The flushes' share of the recording's time, at most (as projected): 1/BUDGET. */
const BUDGET = 100
/** The longest gap between two flushes (ms) unless --flush-every asks for more. */
const MAX_GAP_MS = 60_000
/**
 * The part of a flush's cost that does not grow with its window (ms): a flush of a thread with few
 * samples (an idle or a one-loop program) took 1-3 ms (interrupt, V8's restart, the chunk, the write).
 */
const FIXED_MS = 5

/**
 * The delay (ms) until the next flush, after one that has just ended.
 *   flushEveryMs  the least gap (--flush-every, > 0)
 *   elapsedMs     the recording's time so far (from its start to the end of this flush)
 *   windowMs      the time whose samples this flush took (since the previous flush, or the start)
 *   tookMs        what this flush cost (ms)
 *   totalMs       what all flushes so far cost, this one included (ms)
 */
function nextFlushDelayMs({ flushEveryMs, elapsedMs, windowMs, tookMs, totalMs }) {
  const least = flushEveryMs > 0 ? flushEveryMs : 1
  const most = Math.max(least, MAX_GAP_MS)
  const ok = (x) => Number.isFinite(x) && x >= 0
  if (!ok(elapsedMs) || !ok(windowMs) || !ok(tookMs) || !ok(totalMs)) return least
  // The next flush, d ms from now, is projected to cost fixed + rate × d; the budget holds while
  // BUDGET × (totalMs + fixed + rate × d) <= elapsedMs + d, that is k × d <= slack:
  const fixed = Math.min(tookMs, FIXED_MS)
  const rate = windowMs > 0 ? (tookMs - fixed) / windowMs : 0
  const k = BUDGET * rate - 1
  const slack = elapsedMs - BUDGET * (totalMs + fixed)
  let d
  if (k < 0) {
    // Cheaper per ms than the budget: the sooner past the debt, the better (a longer window costs
    // less than its share).
    d = Math.max(least, slack / k)
  } else {
    // Dearer per ms than the budget: waiting only costs more. Within the budget as late as it can be
    // (fewer flushes), or else at the longest gap.
    const latest = k === 0 ? (slack >= 0 ? most : -1) : slack / k
    d = latest >= least ? latest : most
  }
  return Math.min(most, Math.max(least, d))
}

/**
 * One thread's flushes, spaced by nextFlushDelayMs from what each cost: `next(askedAt, tookMs, now)`
 * takes a flush asked at `askedAt` that cost `tookMs` (0 or less: nothing was flushed — the engine was
 * busy, or the recording ends) and gives the delay (ms) from `now` to the next one. Times are ms on one
 * clock, `startMs` the recording's start on it.
 */
function flushSpacing(flushEveryMs, startMs) {
  let windowStart = startMs
  let totalMs = 0
  return {
    next(askedAt, tookMs, now) {
      if (!(tookMs > 0)) return flushEveryMs
      totalMs += tookMs
      const delay = nextFlushDelayMs({
        flushEveryMs,
        elapsedMs: now - startMs,
        windowMs: askedAt - windowStart,
        tookMs,
        totalMs,
      })
      windowStart = askedAt
      return delay
    },
  }
}

module.exports = { nextFlushDelayMs, flushSpacing, DEFAULT_FLUSH_EVERY_MS, BUDGET, MAX_GAP_MS, FIXED_MS }
