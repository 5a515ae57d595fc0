'use strict'
// Where watchStalls writes a stall's trace in `dir`, for both writers: the helper thread (the snapshot
// of a stall still running, lib/api/stalls-worker.js) and the watched thread (the whole stall once its
// turn ended, over the snapshot; lib/api/stalls.js).

const fs = require('node:fs')
const path = require('node:path')
const { traceClock } = require('../clock')

/** The file a stall's trace is written to (its ongoing snapshot first, then the whole stall over it). */
function stallFile(dir, name, seq) {
  return path.join(dir, `${name}-${seq}.json`)
}

/**
 * Writes `text` to `file` through a temporary name, so a reader never sees half a trace. The name is
 * this thread's own (the two writers run in one process and may write one stall's file at once).
 */
function writeAtomic(file, text) {
  const { pid, threadId } = traceClock()
  const tmp = `${file}.${pid}-${threadId}.tmp`
  try {
    fs.writeFileSync(tmp, text)
    fs.renameSync(tmp, file)
  } catch (err) {
    fs.rmSync(tmp, { force: true })
    throw err
  }
}

module.exports = { stallFile, writeAtomic }
