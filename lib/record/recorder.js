'use strict'
// One thread's recording for `jsprof record` (lib/record/preload.js), on the same sampler engine as
// every Profiler of the thread (lib/sampler/engine.js): a Subscription with no buffer limit whose
// Rust Recording keeps every sample from the start. Each harvested chunk is appended to the side file
// (lib/record/chunks.js) as it comes, so a process killed without warning leaves its samples up to
// the last harvest. At the end — the 'exit' event, or a signal brought by the watcher thread through
// a V8 interrupt: no more event-loop turns either way — the engine harvests and stops synchronously,
// and the trace file is built in Rust and written, without JS objects for its samples.

const fs = require('node:fs')
const { performance } = require('node:perf_hooks')
const { getSampler, Subscription, effectiveIntervalUs } = require('../sampler')
const { otherProfilerClientPossible } = require('../sampler/inspector-session')
const { nowUs, timeOriginUs } = require('../clock')
const { binding, callNative } = require('../native')
const { createChunks, writeRecorded } = require('./chunks')

/** No periodic harvests: someone else (the watcher thread) asks for them. */
const NO_PERIODIC = { harvestMinPeriodUs: Infinity, harvestMaxPeriodUs: Infinity }

/**
 * Starts recording this thread every `intervalUs` µs. `flushEveryMs` > 0: chunks go to `chunksFile`;
 * `periodic`: the engine harvests every `flushEveryMs` by itself (a worker thread's event loop, which
 * its app yields), else only when `flush()` is called (the main thread, by its watcher). Returns
 * `{ canFlush, flushedSamples, flush(), finish(sidecar) }`. `write`: writeRecorded's options for the
 * trace (skipEmpty, mode). Throws when this thread cannot be profiled.
 *
 * `canFlush` is false when another profiler client can see the engine's bridge profiles (`--cpu-prof`,
 * NODE_V8_COVERAGE, an open inspector): each harvest would then restart V8 fully, re-logging all code
 * and sampling code already running as its caller, so nothing is harvested before the end.
 */
function startRecorder({
  intervalUs,
  chunksFile,
  pid,
  threadId = 0,
  output,
  flushEveryMs,
  periodic,
  write = {},
  inlined = false,
}) {
  const v8IntervalUs = effectiveIntervalUs(intervalUs / 1000)
  const canFlush = flushEveryMs > 0 && !otherProfilerClientPossible(require('node:inspector'))
  const periodUs = canFlush && periodic ? flushEveryMs * 1000 : Infinity
  const engine = getSampler(
    periodUs === Infinity ? NO_PERIODIC : { harvestMinPeriodUs: periodUs, harvestMaxPeriodUs: periodUs },
  )
  const originUs = timeOriginUs()
  const chunks = createChunks(chunksFile, {
    pid,
    threadId,
    output,
    intervalUs: v8IntervalUs,
    timeOriginUs: originUs,
    timeOriginEpochMs: performance.timeOrigin,
  })
  let ending = false
  const state = {
    canFlush,
    /** Samples written to the side file so far, and when the last chunk was (performance.now(), ms). */
    flushedSamples: 0,
    lastChunkAt: -Infinity,
    /** What the recording cost the thread so far (ms; `jsprof record` reports them in its status). */
    costs: { flushes: 0, flushMs: 0 },
    /** Harvests now (V8 goes on sampling); ms it took, or -1 when the engine was busy (ask again). */
    flush() {
      const startedAt = performance.now()
      if (!engine.flushSync()) return -1
      const ms = performance.now() - startedAt
      state.costs.flushes++
      state.costs.flushMs += ms
      return ms
    },
    /**
     * Stops sampling and writes the trace to `output`: `{ path, samples, durationMs, ...costs }` (and
     * `notWritten` when it went to the temporary directory instead: see writeRecorded); null when the
     * engine was busy (a V8 interrupt inside its own work: ask again). Throws when nothing could be written.
     */
    finish(sidecar) {
      ending = true
      // Called by a V8 interrupt (the watcher's ask, a terminate()) as well as at exit.
      if (!engine.fromInterrupt(() => (sub.stopAt(nowUs()), engine.stopSync()))) {
        ending = false
        return null
      }
      chunks.close()
      const recording = sub.recording
      const recorded = callNative(() =>
        recording === null
          ? binding.traceFromChunkLines(Buffer.alloc(0), v8IntervalUs, originUs, sidecar)
          : recording.buildFile(originUs, sidecar),
      )
      const result = writeRecorded(output, recorded, write)
      fs.rmSync(chunksFile, { force: true })
      return { ...result, ...state.costs }
    },
    /** Gives up (the thread could not be profiled after all): no side file left behind. */
    abandon() {
      chunks.close()
      fs.rmSync(chunksFile, { force: true })
    },
  }
  const sub = new Subscription({
    startUs: nowUs(),
    intervalUs: v8IntervalUs,
    // Converted as the chunks come: memory stays the trace's, not every harvest's call tree.
    streamOriginUs: originUs,
    // --inlined: the samples of code V8 inlined go to the inlined function (docs/analysis.md).
    inlined,
    onChunk: canFlush
      ? ({ chunk }) => {
          // The last chunk, at the end, is built into the trace from memory, never written here.
          if (ending) return
          chunks.append(chunk)
          state.flushedSamples += chunk.sampleCount
          state.lastChunkAt = performance.now()
        }
      : undefined,
  })
  try {
    engine.add(sub)
  } catch (err) {
    state.abandon()
    throw err
  }
  return state
}

module.exports = { startRecorder }
