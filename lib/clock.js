'use strict'
// V8 stamps samples on the process.hrtime clock (µs); the spec wants DOMHighResTimeStamps in the
// performance.now() domain of the thread that created the Profiler. Node defines
// performance.now() = (hrtime - timeOrigin), and each thread (worker) has its own time origin, so the
// offset is measured once per thread, from the tightest of a few paired readings.

const { performance } = require('node:perf_hooks')

/** The process.hrtime clock in µs, as a double (exact to the ns for any realistic uptime). */
function nowUs() {
  const ns = process.hrtime.bigint()
  return Number(ns / 1000n) + Number(ns % 1000n) / 1000
}

function calibrate() {
  let best = Infinity
  let origin = 0
  for (let i = 0; i < 7; i++) {
    const before = nowUs()
    const now = performance.now()
    const after = nowUs()
    if (after - before < best) {
      best = after - before
      origin = (before + after) / 2 - now * 1000
    }
  }
  return origin
}

let originUs
/** µs on the hrtime clock at which this thread's performance.now() reads 0. */
function timeOriginUs() {
  if (originUs === undefined) originUs = calibrate()
  return originUs
}

module.exports = { nowUs, timeOriginUs }
