'use strict'
// `jsprof record --heap`: a thread's heap profile beside its trace (`t.json` -> `t.heap.json`), from the
// thread's heap sampler (lib/heap/sampler.js), taken where the trace is written — in 'exit', or at a
// signal through the watcher's V8 interrupt — synchronously, as the trace is. A process killed without
// warning (SIGKILL, the OOM killer) leaves its trace up to the last flush but no heap profile: a heap
// profile is a snapshot of the end, and taking one at every flush would cost each flush a walk of V8's
// whole sample tree.

const { writeOutputFile } = require('../output')
const { getHeapSampler } = require('../heap/sampler')
const { infoOf } = require('../api/heap')

/** Where a trace's heap profile goes: `t.json` / `t.trace.json` -> `t.heap.json`, else `<name>.heap.json`. */
function heapOutput(traceOutput) {
  const m = /^(.*?)(?:\.trace)?\.json$/i.exec(traceOutput)
  return m ? `${m[1]}.heap.json` : `${traceOutput}.heap.json`
}

/**
 * Writes a heap profile (`json`: jsprof's heap profile, as text or bytes) beside `traceOutput`: `{ path, size,
 * samples }`, the bytes and V8 samples it holds (`jsprof record --heap` and `jsprof attach --heap`).
 */
function writeHeapBeside(traceOutput, json) {
  const path = heapOutput(traceOutput)
  writeOutputFile(path, json, { streams: false }) // a name jsprof picked: never a pipe's
  const profile = JSON.parse(json) // a string, or bytes (their UTF-8 text)
  return {
    path,
    size: profile.samples.reduce((sum, s) => sum + s.size, 0),
    samples: profile.samples.reduce((sum, s) => sum + s.count, 0),
  }
}

/** Starts sampling this thread's heap with `settings`; `finish(traceOutput)` writes the profile once. */
function startHeapRecording(settings) {
  const consumer = {}
  const startTime = performance.now()
  const sampler = getHeapSampler()
  sampler.acquire(consumer, settings)
  let done = false
  return {
    /** Writes the heap profile beside `traceOutput`: `{ path, size, samples }`. */
    finish(traceOutput) {
      if (done) return null
      done = true
      try {
        return writeHeapBeside(traceOutput, sampler.take(consumer, infoOf(settings, startTime)).json)
      } finally {
        sampler.release(consumer)
      }
    },
  }
}

module.exports = { startHeapRecording, writeHeapBeside, heapOutput }
