'use strict'
// Reads the input of `report`, `convert`, `flamegraph` and `diff`: the file's bytes, within bounds
// (readInput), then one call into Rust (binding.readProfileFile) that tells a ProfilerTrace (as `jsprof
// record` writes it) from a V8 CPU profile (`.cpuprofile`: it has a `nodes` array), checks it with the
// trace's own validation, and says what is wrong in one line. Nothing here parses or checks a trace.

const fs = require('node:fs')
const { CliError, describeIoError } = require('./common')

/**
 * The largest input read: V8's longest string (2^29 - 24 characters on 64-bit) holds the file's
 * text, so a larger file could not be parsed at all. Refused up front (a regular file's size), or as
 * soon as a pipe delivers more, in one line: never read without end (`jsprof report /dev/zero`).
 */
const MAX_INPUT_BYTES = 512 * 1024 * 1024
const MIB = 1024 * 1024

/**
 * The bytes of an input: a regular file, a pipe (`<(…)`, a FIFO) or stdin (`-`). A device, socket or
 * directory is refused: reading one is never what was meant, and /dev/zero would never end.
 */
function readInput(file) {
  const name = file === '-' ? 'stdin' : file
  const fail = (why) => new CliError(`cannot read ${name}: ${why}`)
  let fd
  try {
    fd = file === '-' ? 0 : fs.openSync(file, 'r')
  } catch (err) {
    throw fail(describeIoError(err))
  }
  try {
    let stat
    try {
      stat = fs.fstatSync(fd)
    } catch (err) {
      throw fail(describeIoError(err))
    }
    if (stat.isDirectory()) throw fail('is a directory')
    if (!stat.isFile() && !stat.isFIFO() && !(file === '-' && (stat.isSocket() || stat.isCharacterDevice()))) {
      throw fail(
        `is ${stat.isCharacterDevice() || stat.isBlockDevice() ? 'a device' : 'a socket'}, not a file or a pipe`,
      )
    }
    if (stat.isFile() && stat.size > MAX_INPUT_BYTES) {
      throw fail(`it has ${Math.round(stat.size / MIB)} MiB, more than jsprof reads (${MAX_INPUT_BYTES / MIB} MiB)`)
    }
    if (stat.isFile()) {
      // One buffer of the file's size (no second copy from joining chunks): the file may still grow
      // or shrink while read, so read to its end, within the cap.
      const whole = Buffer.allocUnsafe(stat.size)
      let got = 0
      while (got < whole.length) {
        const n = fs.readSync(fd, whole, got, whole.length - got, null)
        if (n === 0) break
        got += n
      }
      if (got === whole.length && fs.readSync(fd, Buffer.alloc(1), 0, 1, null) !== 0) {
        throw fail('it grew while read')
      }
      return whole.subarray(0, got)
    }
    const chunks = []
    let total = 0
    const chunk = Buffer.allocUnsafe(1 << 20)
    for (;;) {
      let n
      try {
        n = fs.readSync(fd, chunk, 0, chunk.length, null)
      } catch (err) {
        if (err.code === 'EAGAIN') {
          // stdin in non-blocking mode: wait a moment for more, without spinning.
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5)
          continue
        }
        throw fail(describeIoError(err))
      }
      if (n === 0) break
      total += n
      if (total > MAX_INPUT_BYTES) throw fail(`more than jsprof reads (${MAX_INPUT_BYTES / MIB} MiB)`)
      chunks.push(Buffer.from(chunk.subarray(0, n)))
    }
    return Buffer.concat(chunks, total)
  } finally {
    if (fd !== 0) fs.closeSync(fd)
  }
}

/**
 * The problem of a would-be ProfilerTrace (a JS value), or null when it is well-formed: the check the
 * exporters and `readTrace` make, in Rust (for tests and scripts that hold a trace as an object).
 */
function traceProblem(trace) {
  const { binding } = require('../native')
  let text
  try {
    text = JSON.stringify(trace)
  } catch (err) {
    return `it is not JSON (${err.message})`
  }
  if (text === undefined) return 'it is not JSON'
  try {
    binding.TraceHandle.fromTraceJson(Buffer.from(text))
    return null
  } catch (err) {
    return String(err.message)
      .replace(/^\w*Error: /, '')
      .replace(/^not a valid ProfilerTrace: /, '')
  }
}

/**
 * Reads `file` -> { trace, format: 'trace'|'cpuprofile', thread? } (`thread` from a trace file's `jsprof`
 * member), or for a heap profile { heap, format: 'heap', thread }. Every
 * failure is a CliError (exit 2) whose message names the file and
 * the problem.
 */
function readTrace(file) {
  const bytes = readInput(file)
  const { binding, callNative } = require('../native')
  const heap = readHeap(file, bytes, binding, callNative)
  if (heap) return heap
  let read
  try {
    read = callNative(() => binding.readProfileFile(bytes))
  } catch (err) {
    // The reason, which follows the file's name: `is not valid JSON (…)` (a SyntaxError),
    // `is not a valid ProfilerTrace: …`, `is neither a ProfilerTrace nor a V8 CPU profile …`.
    if (err instanceof SyntaxError || err instanceof TypeError) throw new CliError(`${file} ${err.message}`)
    throw err
  }
  // The file's bytes (up to 512 MiB) are freed now, not whenever V8 collects them: only when they are
  // the whole of their ArrayBuffer (a small file's Buffer is a slice of Node's shared pool).
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) {
    binding.TraceHandle.releaseInput(bytes.buffer)
  }
  if (read.format === 'cpuprofile') return { trace: read.trace, format: 'cpuprofile' }
  // The trace's `jsprof` member (checked with the trace in Rust, and kept in it: the exporters show its
  // clock): the commands name the thread it recorded.
  const data = { jsprof: read.jsprof ? JSON.parse(read.jsprof) : undefined }
  return {
    trace: read.trace,
    format: 'trace',
    thread: threadOf(data),
    // A stall trace's stall (watchStalls, jsprof record --stalls), checked with the trace.
    stall: data.jsprof?.stall,
  }
}

/**
 * A heap profile file — V8's `.heapprofile` (node --heap-prof, DevTools) or ours (`jsprof record --heap`,
 * HeapProfiler) — as `{ heap, format: 'heap', thread }`, or null for any other file (a trace or a
 * CPU profile). Only text that names `head` or `heap` is asked (a cheap byte search first).
 */
function readHeap(file, bytes, binding, callNative) {
  if (!bytes.includes('"head"') && !bytes.includes('"heap"')) return null
  let json
  try {
    json = callNative(() => binding.readHeapProfileFile(bytes))
  } catch (err) {
    if (err instanceof SyntaxError || err instanceof TypeError) throw new CliError(`${file} ${err.message}`)
    throw err
  }
  if (json === null) return null
  const heap = JSON.parse(json.toString('utf8'))
  return { heap, format: 'heap', thread: threadOf(heap) }
}

/**
 * Which thread a trace of `jsprof record` holds, from its `jsprof: { pid, threadId }` member:
 * `main thread of pid 123`, `worker thread 2 of pid 123`; null for other traces.
 */
function threadOf(data) {
  const jsprof = data.jsprof
  if (jsprof === null || typeof jsprof !== 'object') return null
  const { pid, threadId } = jsprof
  if (!Number.isInteger(threadId) || threadId < 0) return null
  const of = Number.isInteger(pid) && pid > 0 ? ` of pid ${pid}` : ''
  return threadId === 0 ? `main thread${of}` : `worker thread ${threadId}${of}`
}

/**
 * `{ samples, durationMs, intervalMs, sampledMs }` of a trace the CLI read: how many samples, from the
 * earliest to the latest, at which interval (the trace's, else the median gap), standing for how much
 * time (computed in Rust by the rule the exporters weigh samples by).
 */
function timingOf(trace) {
  return trace.timing()
}

module.exports = { readTrace, readInput, traceProblem, timingOf, MAX_INPUT_BYTES }
