'use strict'
// V8 stamps samples on the process.hrtime clock (µs); the spec wants DOMHighResTimeStamps in the
// performance.now() domain of the thread that created the Profiler. Node defines
// performance.now() = (hrtime - timeOrigin), and each thread (worker) has its own time origin, so the
// offset is measured once per thread, from the tightest of a few paired readings.

/** The process.hrtime clock in µs, as a double (exact to the ns for any realistic uptime). */
function nowUs() {
  const ns = process.hrtime.bigint()
  return Number(ns / 1000n) + Number(ns % 1000n) / 1000
}

/**
 * Measures this thread's time origin: µs on the hrtime clock at which performance.now() reads 0, from
 * the tightest of a few paired readings. Self-contained (globals only), so that `jsprof attach` can
 * run the same function's source inside the process it profiles (TIME_ORIGIN_SOURCE).
 */
function measureTimeOriginUs() {
  const us = () => {
    const ns = process.hrtime.bigint()
    return Number(ns / 1000n) + Number(ns % 1000n) / 1000
  }
  let best = Infinity
  let origin = 0
  for (let i = 0; i < 7; i++) {
    const before = us()
    const now = performance.now()
    const after = us()
    if (after - before < best) {
      best = after - before
      origin = (before + after) / 2 - now * 1000
    }
  }
  return origin
}

/** An expression that measures the time origin of the process it is evaluated in. */
const TIME_ORIGIN_SOURCE = `(${measureTimeOriginUs.toString()})()`

let originUs
/** µs on the hrtime clock at which this thread's performance.now() reads 0. */
function timeOriginUs() {
  if (originUs === undefined) originUs = measureTimeOriginUs()
  return originUs
}

/**
 * µs on the hrtime clock (V8's sample clock) from performance.now(): cheaper than hrtime.bigint on a
 * hot path (each label change, each sampled request's start and stop).
 */
function fastNowUs() {
  return performance.now() * 1000 + (originUs ?? timeOriginUs())
}

let clock
/**
 * This thread's clock as a trace's `jsprof` member states it: `{ pid, threadId, timeOrigin }`, the
 * time origin as the Unix epoch in ms of `performance.timeOrigin`, which the timestamps count from.
 */
function traceClock() {
  if (clock === undefined) {
    clock = {
      pid: process.pid,
      threadId: require('node:worker_threads').threadId,
      timeOrigin: require('node:perf_hooks').performance.timeOrigin,
    }
  }
  return clock
}

module.exports = { nowUs, fastNowUs, timeOriginUs, traceClock, TIME_ORIGIN_SOURCE }
