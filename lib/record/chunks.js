'use strict'
// The side file of `jsprof record`: the profile's pieces as they are cut (every --flush-every), one
// V8 CPU profile per line after a header line. Whoever ends the recording — the profiled process in
// 'exit' or on a signal, its watcher thread when the main thread does not answer, or the `jsprof`
// CLI when the process was killed without warning (SIGKILL, OOM killer, abort) — assembles the trace
// from it with `assemble()`. A line torn by a kill in the middle of a write is skipped.

const fs = require('node:fs')
const { toTrace } = require('./profile')
const { writeOutputFile } = require('../output')

const MAGIC = 'jsprof-record-chunks'

/** Creates the side file; returns `append(profile)`. */
function createChunks(file, { pid, threadId = 0, output, timeOriginUs, timeOriginEpochMs }) {
  const fd = fs.openSync(file, 'w', 0o600)
  fs.writeSync(fd, `${JSON.stringify({ format: MAGIC, version: 1, pid, threadId, output, timeOriginUs, timeOriginEpochMs })}\n`)
  return {
    append(profile) {
      fs.writeSync(fd, `${JSON.stringify(profile)}\n`)
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

/** The header and the pieces of a side file (null when it does not exist or is not one). */
function readChunks(file) {
  let text
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch {
    return null
  }
  const lines = text.split('\n')
  let header
  try {
    header = JSON.parse(lines[0])
  } catch {
    return null
  }
  if (!header || header.format !== MAGIC) return null
  const pieces = []
  for (const line of lines.slice(1)) {
    if (!line) continue
    try {
      pieces.push(JSON.parse(line))
    } catch {
      // Torn by a kill in the middle of the write: the pieces before it still make a trace.
    }
  }
  return { header, pieces }
}

/** Earliest to latest sample (V8 records some samples out of time order, the trace keeps its order). */
function span(trace) {
  let first = Infinity
  let last = -Infinity
  for (const s of trace.samples) {
    first = Math.min(first, s.timestamp)
    last = Math.max(last, s.timestamp)
  }
  return trace.samples.length ? last - first : 0
}

/**
 * The trace with the sidecar member `jsprof: { pid, threadId, timeOrigin }` beside the spec's members
 * (a ProfilerTrace reader ignores it): `timeOrigin` is the Unix epoch, ms, of the recorded thread's
 * performance.timeOrigin, which the trace's timestamps count from; `threadId` is 0 for the main
 * thread, else the worker thread's `threadId`. The exporters read it, so pprof, the Firefox Profiler
 * and speedscope files of a recording show real clock times and the real pid; `jsprof report` says
 * which thread the trace holds.
 */
function withSidecar(trace, { timeOrigin, pid, threadId }) {
  const jsprof = {}
  if (Number.isInteger(pid)) jsprof.pid = pid
  if (Number.isInteger(threadId)) jsprof.threadId = threadId
  if (Number.isFinite(timeOrigin)) jsprof.timeOrigin = timeOrigin
  // Members in WebIDL's (lexicographic) order, as the rest of the trace.
  return { frames: trace.frames, jsprof, resources: trace.resources, samples: trace.samples, stacks: trace.stacks }
}

/**
 * Writes the trace by lib/output.js's rules: a regular file through a temporary name and a rename
 * (never half-written), a symlink through to its target, a pipe or device (-o /dev/stdout) written to,
 * never replaced by a file.
 */
function writeTrace(output, trace) {
  writeOutputFile(output, JSON.stringify(trace))
  return { path: output, samples: trace.samples.length, durationMs: span(trace) }
}

/** Assembles the side file `file` (plus `last`, a piece not written to it) into `output`. */
function assemble(file, output, last) {
  const chunks = readChunks(file)
  if (!chunks) return null
  if (last) chunks.pieces.push(last)
  const trace = withSidecar(toTrace(chunks.pieces, chunks.header.timeOriginUs), {
    timeOrigin: chunks.header.timeOriginEpochMs,
    pid: chunks.header.pid,
    threadId: Number.isInteger(chunks.header.threadId) ? chunks.header.threadId : 0,
  })
  return { ...writeTrace(output, trace), pieces: chunks.pieces.length }
}

/** Tells the `jsprof` CLI how the recording ended (it prints the line); a gone CLI is no error. */
function writeStatus(file, status) {
  if (typeof file !== 'string') return
  try {
    fs.writeFileSync(file, JSON.stringify(status))
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

module.exports = { siblingOutput, createChunks, readChunks, assemble, writeStatus, writeTrace, withSidecar }
