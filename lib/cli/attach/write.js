'use strict'
// Writing what jsprof attach recorded: the trace as `jsprof record` writes its traces (in Rust, with
// the sidecar: pid, clock) and, with --heap, the heap profile beside it.

const { CliError, info, formatDuration, heapLine } = require('../common')
const { MAX_INPUT_BYTES } = require('../input')

// A written trace costs up to this per sample; jsprof reads back at most MAX_INPUT_BYTES.
const TRACE_BYTES_PER_SAMPLE = 48
/** The most samples a trace may hold that jsprof reads back. */
const MAX_READABLE_SAMPLES = Math.floor(MAX_INPUT_BYTES / TRACE_BYTES_PER_SAMPLE)

/** Writes the trace (and heap profile) as `record` writes its traces: in Rust, with the sidecar (pid, clock). */
function writeResult(pid, { output, heap }, r, opened, closed) {
  const { writeRecorded } = require('../../record/chunks')
  const { binding, callNative } = require('../../native')
  const { origin, epochOrigin } = r
  const sidecar = { pid, timeOrigin: Number.isFinite(epochOrigin) ? epochOrigin : undefined }
  let recorded
  try {
    recorded = callNative(
      () =>
        binding.traceFileFromCpuProfile(
          Buffer.from(JSON.stringify(r.profile)),
          Number.isFinite(origin) ? origin : undefined,
          sidecar,
        ),
      r.profile,
    )
  } catch (err) {
    throw new CliError(`the profile the inspector of pid ${pid} sent cannot be read: ${err.message}`)
  }
  if (recorded.json.length > MAX_INPUT_BYTES) {
    throw new CliError(
      `the trace of pid ${pid} would have ${Math.round(recorded.json.length / 2 ** 20)} MiB, more than jsprof reads back (${MAX_INPUT_BYTES / 2 ** 20} MiB): not written`,
    )
  }
  const result = writeRecorded(output, recorded)
  let heapResult = null
  if (r.heapProfile) {
    try {
      heapResult = writeHeap(output, r.heapProfile, heap, {
        pid,
        epochOrigin,
        heapStart: r.heapStart,
        heapEnd: r.heapEnd,
        inlining: r.heapInlining,
      })
    } catch (err) {
      if (err instanceof CliError) throw err
      throw new CliError(`the heap profile the inspector of pid ${pid} sent cannot be read: ${err.message}`)
    }
  }
  const how = r.exited
    ? 'the process exited'
    : opened
      ? closed
        ? 'inspector closed again'
        : 'inspector NOT closed'
      : 'inspector was open before and stays open'
  info(`wrote ${result.path} (${result.samples} samples, ${formatDuration(result.durationMs)}; ${how})`)
  if (heapResult) heapLine({ heap: heapResult }, `pid ${pid}`)
}

/**
 * `--heap`: the process's heap profile beside the trace (`t.json` -> `t.heap.json`): what it allocated
 * while attached and still holds, converted as `jsprof record --heap` writes it.
 */
function writeHeap(output, v8Profile, settings, { pid, epochOrigin, heapStart, heapEnd, inlining }) {
  const { binding, callNative } = require('../../native')
  const { writeHeapBeside } = require('../../record/heap')
  const info = {
    heap: {
      samplingInterval: settings.samplingInterval,
      stackDepth: settings.stackDepth,
      view: 'inuse',
      inlining,
      ...(Number.isFinite(heapStart) && { startTime: heapStart }),
      ...(Number.isFinite(heapEnd) && { endTime: heapEnd }),
    },
    pid,
    threadId: 0,
    ...(Number.isFinite(epochOrigin) && { timeOrigin: epochOrigin }),
  }
  const { json } = callNative(() =>
    binding.heapProfileFromV8(Buffer.from(JSON.stringify(v8Profile)), undefined, JSON.stringify(info), false),
  )
  return writeHeapBeside(output, json)
}

module.exports = { writeResult, MAX_READABLE_SAMPLES }
