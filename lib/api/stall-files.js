'use strict'
// Where watchStalls writes a stall's trace in `dir`, for both writers: the helper thread (the snapshot
// of a stall still running, lib/api/stalls-worker.js) and the watched thread (the whole stall once its
// turn ended, over the snapshot; lib/api/stalls.js). And what `dir` may hold of ours: at most
// `maxFiles` stall traces (the oldest removed), no temporary of a writer that died mid-write.

const fs = require('node:fs')
const path = require('node:path')
const { writeOutputFile, probeWritable, temporaryOf } = require('../output')

/** The file a stall's trace is written to (its ongoing snapshot first, then the whole stall over it). */
function stallFile(dir, name, seq) {
  return path.join(dir, `${name}-${seq}.json`)
}

/**
 * Writes `text` to `file` by lib/output.js's rules: an exclusive temporary file of its own (the two
 * writers run in one process and may write one stall's file at once) renamed over it, so a reader
 * never sees half a trace; a FIFO, device or another user's link at the name is refused.
 */
function writeAtomic(file, text) {
  writeOutputFile(file, text, { streams: false })
}

/**
 * Which files in `dir` are stall traces of this naming: `<prefix>-<n>.json`; with the default prefix
 * (`stall-<pid>`, `anyPid`), those of every process (a service restarted keeps writing to one dir).
 */
function stallFilePattern(prefix, anyPid) {
  const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const name = anyPid ? 'stall-\\d+' : escape(prefix)
  return new RegExp(`^${name}-\\d+\\.json$`)
}

/** The file's lstat when it is a regular file of this user's (never through a symlink); else null. */
function ownFile(file) {
  try {
    const stat = fs.lstatSync(file)
    if (!stat.isFile()) return null
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return null
    return stat
  } catch {
    return null
  }
}

/**
 * Writes a stall's trace (`writeAtomic`), then removes the oldest stall traces of `pattern` (this
 * user's) beyond `maxFiles`. A failure names the file (ENOSPC and the like do not), with its `code`.
 */
function writeStallFile(file, text, { pattern, maxFiles }) {
  try {
    writeAtomic(file, text)
  } catch (err) {
    throw Object.assign(new Error(`cannot write the stall trace ${file}: ${err.message}`, { cause: err }), {
      code: err.code,
    })
  }
  pruneStallFiles(path.dirname(file), pattern, maxFiles)
}

/** Removes the oldest (by modification time) of this user's stall traces of `pattern` beyond `maxFiles`. */
function pruneStallFiles(dir, pattern, maxFiles) {
  let names
  try {
    names = fs.readdirSync(dir).filter((name) => pattern.test(name))
  } catch {
    return 0
  }
  if (names.length <= maxFiles) return 0
  const files = []
  for (const name of names) {
    const stat = ownFile(path.join(dir, name))
    if (stat) files.push({ name, mtimeMs: stat.mtimeMs })
  }
  files.sort((a, b) => a.mtimeMs - b.mtimeMs || a.name.localeCompare(b.name))
  let removed = 0
  for (const { name } of files.slice(0, Math.max(0, files.length - maxFiles))) {
    try {
      fs.unlinkSync(path.join(dir, name))
      removed++
    } catch {
      // Gone already (another writer pruned it).
    }
  }
  return removed
}

// The temporaries our writers leave when killed mid-write: lib/output.js's (temporaryOf), and
// `<file>.json.<pid>-<threadId>.tmp`, which stall writers used before issue 40.
const OLD_TEMPORARY = /^.+\.json\.(\d+)-\d+\.tmp$/

/** The pid that made the temporary file `name`, or null when it is not one of ours. */
function temporaryPid(name) {
  const ours = temporaryOf(name)
  if (ours !== null) return ours.pid
  const old = OLD_TEMPORARY.exec(name)
  return old === null ? null : Number(old[1])
}

/** Whether process `pid` runs (as far as this process can tell: one of another user's does). */
function alive(pid) {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code !== 'ESRCH'
  }
}

/**
 * Removes the temporaries of ours in `dir` left by a writer that died mid-write (SIGKILL, a crash):
 * our naming only, of a process that no longer runs, regular files of this user's. Returns how many.
 */
function removeStaleTemporaries(dir) {
  let names
  try {
    names = fs.readdirSync(dir)
  } catch {
    return 0
  }
  let removed = 0
  for (const name of names) {
    const pid = temporaryPid(name)
    if (pid === null || !Number.isSafeInteger(pid) || pid <= 0 || alive(pid)) continue
    const file = path.join(dir, name)
    if (!ownFile(file)) continue
    try {
      fs.unlinkSync(file)
      removed++
    } catch {
      // Gone already.
    }
  }
  return removed
}

/**
 * Checks up front that stall traces can be written to `dir` (made if missing): a file created there
 * exclusively and removed. Throws an error naming `dir`, with its `code`.
 */
function checkStallDir(api, dir) {
  try {
    fs.mkdirSync(dir, { recursive: true })
    probeWritable(dir)
  } catch (err) {
    throw Object.assign(new Error(`${api}: cannot write stall traces to ${dir}: ${err.message}`, { cause: err }), {
      code: err.code,
    })
  }
}

module.exports = {
  stallFile,
  writeAtomic,
  writeStallFile,
  stallFilePattern,
  pruneStallFiles,
  removeStaleTemporaries,
  checkStallDir,
}
