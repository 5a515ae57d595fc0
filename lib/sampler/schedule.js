'use strict'
// The sampler's scheduling decisions as pure functions of numbers (µs), so that each rule can be read
// and unit-tested on its own (__test__/sampler-engine.spec.mjs). The engine (engine.js) applies them.

/** The smallest interval V8 runs at: 0.1 ms (10 kHz). `sampleInterval: 0` picks it. */
const MIN_INTERVAL_US = 100
/** V8 takes the interval as an int32 of µs; slower subscriptions are served by decimation. */
const MAX_V8_INTERVAL_US = 2 ** 31 - 1

const DEFAULTS = Object.freeze({
  /** A periodic harvest about every this many samples, so each harvest (each stall) stays small. */
  harvestEverySamples: 1000,
  harvestMinPeriodUs: 100_000,
  harvestMaxPeriodUs: 10_000_000,
  /**
   * At most one harvest per this many µs serves the stops that ask for one: a lone stop() (no harvest
   * in the last 250 ms) is served at once, frequent ones wait up to this long and share one harvest.
   * A harvest costs the main thread the same however many Profilers stop, and a busy process more CPU the
   * more often it runs (bench/harvest-rate.mjs: docs/bench.md#harvests-by-their-rate): at 10 a second
   * (100 ms, the earlier gap) a Profiler around every 10th request cost a small server clearly more CPU
   * per request than at 4 a second (paired rounds of bench/matrix: bench/results/matrix-misses.md).
   */
  minStopGapUs: 250_000,
  /**
   * V8 keeps sampling this long after the last subscription left, so the next Profiler (the next
   * sampled request) needs no cold start (code logging on the main thread: docs/bench.md#cold-and-warm-starts).
   */
  graceUs: 2_000_000,
  /** ...but only at intervals of at least this much: V8's own sampling costs CPU at finer ones. */
  graceMinIntervalUs: 1_000,
  /** Slow V8 down (a full restart, re-logging code) only when the fastest subscription left is this much slower. */
  slowDownRatio: 2,
})

/** The V8 interval (µs) for a requested sampleInterval (ms): whole µs (rounded up), at least 0.1 ms. */
function effectiveIntervalUs(sampleIntervalMs) {
  const us = Math.ceil(sampleIntervalMs * 1000 - 1e-6)
  return Math.max(MIN_INTERVAL_US, us)
}

/** How long between periodic harvests at V8 interval `intervalUs`. */
function harvestPeriodUs(intervalUs, o = DEFAULTS) {
  return Math.min(o.harvestMaxPeriodUs, Math.max(o.harvestMinPeriodUs, o.harvestEverySamples * intervalUs))
}

/**
 * When a stop asked at `nowUs` gets its harvest: `withinUs` from now when the caller set its own bound
 * (request profiling batches stops up to `maxStopDelay`), else as soon as the stop rate allows: now
 * when the last harvest was at least `minStopGapUs` ago, else `minStopGapUs` after it.
 */
function stopHarvestDueUs(nowUs, lastHarvestUs, withinUs, o = DEFAULTS) {
  if (withinUs !== undefined) return nowUs + withinUs
  return Math.max(nowUs, lastHarvestUs + o.minStopGapUs)
}

/** Whether V8 keeps running with nobody subscribed: within the grace, at a cheap enough interval. */
function keepsWarm(nowUs, lastActiveUs, intervalUs, graceUs, o = DEFAULTS) {
  return graceUs > 0 && intervalUs >= o.graceMinIntervalUs && nowUs - lastActiveUs < graceUs
}

/**
 * What a harvest does to V8, from the interval it runs at and the one its subscriptions need
 * (Infinity: none): 'stop', 'keep' (same interval, no gap, no re-logging) or 'restart' (at `neededUs`).
 */
function harvestAction(runningUs, neededUs, o = DEFAULTS) {
  if (neededUs === Infinity) return 'stop'
  return neededUs >= runningUs && neededUs < runningUs * o.slowDownRatio ? 'keep' : 'restart'
}

/** When the engine's timer must fire: the earliest of every deadline it knows (µs; Infinity: none). */
function timerDueUs({ periodicUs, stopDueUs, fullCheckUs, graceEndUs }) {
  return Math.min(periodicUs, stopDueUs, fullCheckUs, graceEndUs)
}

/** When a subscription's buffer may be full: after `remaining + 1` of its own intervals from `fromUs`. */
function fullCheckAtUs(fromUs, remaining, intervalUs) {
  return fromUs + (remaining + 1) * intervalUs
}

module.exports = {
  MIN_INTERVAL_US,
  MAX_V8_INTERVAL_US,
  DEFAULTS,
  effectiveIntervalUs,
  harvestPeriodUs,
  stopHarvestDueUs,
  keepsWarm,
  harvestAction,
  timerDueUs,
  fullCheckAtUs,
}
