'use strict'
// Reads the input of `report`, `convert` and `flamegraph`: a ProfilerTrace (as `jsprof record` writes
// it) or a V8 CPU profile (`.cpuprofile`, told apart by content: it has a `nodes` array), and checks
// a trace fully, so that every consumer gets a well-formed one and a bad file is one clear line.

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

const MARKERS = new Set(['script', 'gc', 'style', 'layout', 'paint', 'other'])

function isIndex(value, length) {
  return Number.isInteger(value) && value >= 0 && value < length
}

/** The first problem of a would-be ProfilerTrace, or null when it is well-formed. */
function traceProblem(trace) {
  for (const key of ['resources', 'frames', 'stacks', 'samples']) {
    if (!Array.isArray(trace[key])) return `'${key}' is not an array`
  }
  const { resources, frames, stacks, samples } = trace
  for (let i = 0; i < resources.length; i++) {
    if (typeof resources[i] !== 'string') return `resources[${i}] is not a string`
  }
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i]
    if (f === null || typeof f !== 'object') return `frames[${i}] is not an object`
    if (typeof f.name !== 'string') return `frames[${i}].name is not a string`
    if (f.resourceId !== undefined && !isIndex(f.resourceId, resources.length)) {
      return `frames[${i}].resourceId is not an index into resources`
    }
    for (const key of ['line', 'column']) {
      if (f[key] !== undefined && !(Number.isInteger(f[key]) && f[key] >= 0)) {
        return `frames[${i}].${key} is not a non-negative integer`
      }
    }
  }
  for (let i = 0; i < stacks.length; i++) {
    const s = stacks[i]
    if (s === null || typeof s !== 'object') return `stacks[${i}] is not an object`
    if (!isIndex(s.frameId, frames.length)) return `stacks[${i}].frameId is not an index into frames`
    if (s.parentId !== undefined && !isIndex(s.parentId, stacks.length)) {
      return `stacks[${i}].parentId is not an index into stacks`
    }
  }
  // Parent chains must end: 0 = unvisited, 1 = on the current path, 2 = known to end.
  const state = new Uint8Array(stacks.length)
  for (let i = 0; i < stacks.length; i++) {
    let j = i
    const path = []
    while (j !== undefined && state[j] === 0) {
      state[j] = 1
      path.push(j)
      j = stacks[j].parentId
    }
    if (j !== undefined && state[j] === 1) return `stacks[${j}] is its own ancestor`
    for (const k of path) state[k] = 2
  }
  // Timestamps may go back in time: V8 records some samples out of order, and a trace keeps V8's
  // order as Chrome's does (what `jsprof record` writes, too); every consumer weighs them in time order.
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]
    if (s === null || typeof s !== 'object') return `samples[${i}] is not an object`
    if (typeof s.timestamp !== 'number' || !Number.isFinite(s.timestamp))
      return `samples[${i}].timestamp is not a number`
    if (s.stackId !== undefined && !isIndex(s.stackId, stacks.length)) {
      return `samples[${i}].stackId is not an index into stacks`
    }
    if (s.marker !== undefined && !MARKERS.has(s.marker)) return `samples[${i}].marker is not a ProfilerMarker`
  }
  return null
}

/**
 * Reads `file` -> { trace, format: 'trace'|'cpuprofile' }. Every failure is a CliError (exit 2) whose
 * message names the file and the problem.
 */
function readTrace(file) {
  const bytes = readInput(file)
  const { binding } = require('../native')
  // A V8 CPU profile goes straight to Rust: no JSON.parse of the whole file, no JS object per sample
  // (that way a large .cpuprofile took gigabytes: docs/bench.md#large-inputs-through-the-cli). The JS
  // reading below only runs when Rust refused it, for the same messages as before.
  if (bytes.includes('"nodes"')) {
    let trace
    try {
      trace = binding.TraceHandle.fromCpuProfile(bytes)
    } catch {}
    if (trace) {
      // The file's bytes (up to 512 MiB) are freed now, not whenever V8 collects them: only when they
      // are the whole of their ArrayBuffer (a small file's Buffer is a slice of Node's shared pool).
      if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) {
        binding.TraceHandle.releaseInput(bytes.buffer)
      }
      return { trace, format: 'cpuprofile' }
    }
  }
  const text = bytes.toString('utf8')
  let data
  try {
    data = JSON.parse(text)
  } catch (err) {
    throw new CliError(`${file} is not valid JSON (${err.message})`)
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new CliError(`${file} is neither a ProfilerTrace nor a V8 CPU profile (not a JSON object)`)
  }
  if (Array.isArray(data.nodes)) {
    try {
      return { trace: binding.TraceHandle.fromCpuProfile(Buffer.from(JSON.stringify(data))), format: 'cpuprofile' }
    } catch (err) {
      throw new CliError(
        `${file} is not a valid V8 CPU profile: ${String(err.message)
          .replace(/^\w*Error: /, '')
          .replace(/^invalid V8 CPU profile: /, '')}`,
      )
    }
  }
  if (!['resources', 'frames', 'stacks', 'samples'].some((key) => key in data)) {
    throw new CliError(
      `${file} is neither a ProfilerTrace (resources, frames, stacks, samples) nor a V8 CPU profile (nodes, samples)`,
    )
  }
  const problem = traceProblem(data)
  if (problem) throw new CliError(`${file} is not a valid ProfilerTrace: ${problem}`)
  let trace
  try {
    trace = binding.TraceHandle.fromTraceJson(bytes)
  } catch (err) {
    throw new CliError(`${file} is not a valid ProfilerTrace: ${String(err.message).replace(/^\w*Error: /, '')}`)
  }
  // The sidecar `jsprof` member (jsprof record's time origin and pid) is not in the native trace: the
  // commands pass it to the exporters as options.
  return { trace, format: 'trace', clock: require('../api/export').clock(data, {}), thread: threadOf(data) }
}

/**
 * Which thread a trace of `jsprof record` holds, from its sidecar (`jsprof: { pid, threadId }`):
 * `main thread of pid 123`, `worker thread 2 of pid 123`; null for other traces.
 */
function threadOf(data) {
  const sidecar = data.jsprof
  if (sidecar === null || typeof sidecar !== 'object') return null
  const { pid, threadId } = sidecar
  if (!Number.isInteger(threadId) || threadId < 0) return null
  const of = Number.isInteger(pid) && pid > 0 ? ` of pid ${pid}` : ''
  return threadId === 0 ? `main thread${of}` : `worker thread ${threadId}${of}`
}

/**
 * `{ samples, durationMs, intervalMs }` of a trace the CLI read: how many samples, from the earliest to
 * the latest, at which median interval (computed in Rust, as the exporters weigh samples).
 */
function timingOf(trace) {
  return trace.timing()
}

module.exports = { readTrace, readInput, traceProblem, timingOf, MAX_INPUT_BYTES }
