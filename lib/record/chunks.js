'use strict'
// The side file of `jsprof record`: the sampler's chunks as they are harvested (every --flush-every),
// one per line after a header line (the line format: crates/jsprof-core/src/record_file.rs). Whoever
// ends the recording without the recorder's own samples in memory — its watcher thread when the main
// thread does not answer, or the `jsprof` CLI when the process was killed without warning (SIGKILL,
// OOM killer, abort) — assembles the trace from it with `assemble()`. A line torn by a kill in the
// middle of a write is skipped.

const fs = require('node:fs')
const { writeOutputFile, createExclusive } = require('../output')

const MAGIC = 'jsprof-record-chunks'
const VERSION = 2

/**
 * Creates the side file; returns `append(chunk)` (a binding Chunk) and `close()`. The header says what
 * the chunks need to become the trace: the recorder's interval, the thread's time origin (µs on V8's
 * clock, and as a Unix epoch in ms), and whose trace it is.
 */
function createChunks(file, { pid, threadId = 0, output, intervalUs, timeOriginUs, timeOriginEpochMs }) {
  const fd = createExclusive(file) // never through a planted link: see lib/output.js
  fs.writeSync(
    fd,
    `${JSON.stringify({ format: MAGIC, version: VERSION, pid, threadId, output, intervalUs, timeOriginUs, timeOriginEpochMs })}\n`,
  )
  return {
    append(chunk) {
      fs.writeSync(fd, chunk.toLine())
    },
    close() {
      try {
        fs.closeSync(fd)
      } catch {
        // Already closed.
      }
    },
  }
}

/** The header and the chunk lines (bytes) of a side file; null when it does not exist or is not one. */
function readChunks(file) {
  let bytes
  try {
    bytes = fs.readFileSync(file)
  } catch {
    return null
  }
  const newline = bytes.indexOf(10)
  let header
  try {
    header = JSON.parse(bytes.subarray(0, newline < 0 ? bytes.length : newline).toString('utf8'))
  } catch {
    return null
  }
  if (!header || header.format !== MAGIC || header.version !== VERSION || !(header.intervalUs > 0)) return null
  const lines = newline < 0 ? Buffer.alloc(0) : bytes.subarray(newline + 1)
  return { header, lines, hasChunks: lines.some((b) => b !== 10) }
}

/**
 * The sidecar member `jsprof: { pid, threadId, timeOrigin }` of a recorded trace (the Rust side writes
 * it beside the spec's members; a ProfilerTrace reader ignores it), from a side file's header:
 * `timeOrigin` is the Unix epoch, ms, of the recorded thread's performance.timeOrigin, which the
 * trace's timestamps count from; `threadId` is 0 for the main thread, else the worker thread's. The
 * exporters read it, so pprof, the Firefox Profiler and speedscope files of a recording show real
 * clock times and the real pid; `jsprof report` says which thread the trace holds.
 */
function sidecarOf(header) {
  return {
    pid: Number.isInteger(header.pid) ? header.pid : undefined,
    threadId: Number.isInteger(header.threadId) ? header.threadId : 0,
    timeOrigin: Number.isFinite(header.timeOriginEpochMs) ? header.timeOriginEpochMs : undefined,
  }
}

/**
 * Writes a trace file built in Rust (binding RecordedTrace: its JSON bytes and what to say of it) by
 * lib/output.js's rules; returns `{ path, samples, durationMs }`.
 *   - `skipEmpty`: a trace without samples is not written (`path: null`): a worker thread with nothing
 *     leaves no file;
 *   - `mode`: a new file's permissions (the user's umask, not the app's: see writeOutputFile);
 *   - `streams`: `output` may be a pipe or device (false for a name jsprof picked: see writeOutputFile);
 *   - when `output` cannot be written (a read-only or removed directory, a full disk), the recording is
 *     not lost: it is written to the temporary directory instead, and the result says so
 *     (`notWritten: { path, error }`). Throws only when that fails too.
 */
function writeRecorded(output, recorded, { skipEmpty = false, mode, streams = true } = {}) {
  const result = { path: output, samples: recorded.samples, durationMs: recorded.durationMs }
  if (skipEmpty && recorded.samples === 0) return { ...result, path: null }
  try {
    writeOutputFile(output, recorded.json, { mode, streams })
    return result
  } catch (err) {
    const { describeIoError } = require('../cli/common')
    const error = describeIoError(err)
    const path = require('node:path')
    const kept = path.join(
      require('node:os').tmpdir(),
      // The name it was to have, as plain characters and its end only (a name of 255 bytes must leave
      // room for the prefix).
      `jsprof-kept-${process.pid}-${Date.now()}-${path
        .basename(output)
        .replace(/[^\w.-]/g, '_')
        .slice(-100)}`,
    )
    try {
      writeOutputFile(kept, recorded.json, { replace: false, mode, streams: false })
    } catch (again) {
      throw new Error(`${error}; and could not keep it in ${kept} either: ${describeIoError(again)}`, {
        cause: again,
      })
    }
    return { ...result, path: kept, notWritten: { path: output, error } }
  }
}

/**
 * Assembles the side file `file` into the trace `output`: `{ path, samples, durationMs }` (path null
 * when it has no samples: nothing is written then), or null when there is no side file.
 */
function assemble(file, output) {
  const chunks = readChunks(file)
  if (!chunks) return null
  const { binding, callNative } = require('../native')
  const { header } = chunks
  const recorded = callNative(() =>
    binding.traceFromChunkLines(chunks.lines, header.intervalUs, header.timeOriginUs, sidecarOf(header)),
  )
  return writeRecorded(output, recorded, { skipEmpty: true })
}

/**
 * Tells the `jsprof` CLI how the recording ended (it prints the line); a gone CLI is no error. The
 * file is the CLI's to read whatever the app's umask (its mode is set on the open file, which the
 * umask does not touch), and is replaced whole: the CLI never reads half of it.
 */
function writeStatus(file, status) {
  if (typeof file !== 'string') return
  try {
    writeOutputFile(file, JSON.stringify(status), { mode: 0o600, streams: false })
  } catch {
    // The CLI or its temporary directory is gone: nobody to tell.
  }
}

/**
 * Where another thread's or process's trace goes, beside `output` (tag `worker-3`, `pid-1234`):
 * `t.json` -> `t.worker-3.json`, `x.trace.json` -> `x.worker-3.trace.json`, other names get `.worker-3`
 * appended. When `output` is not a regular file name (a device or pipe such as /dev/stdout), in the
 * working directory.
 */
function siblingOutput(output, tag) {
  let target = output
  try {
    if (!fs.statSync(output).isFile()) target = require('node:path').resolve(`jsprof-${process.pid}.trace.json`)
  } catch {
    // Not there yet: a file to create.
  }
  const m = /^(.*?)((?:\.trace)?\.json)$/i.exec(target)
  return m ? `${m[1]}.${tag}${m[2]}` : `${target}.${tag}`
}

module.exports = { siblingOutput, createChunks, readChunks, assemble, sidecarOf, writeRecorded, writeStatus }
