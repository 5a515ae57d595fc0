'use strict'
// Where watchStalls writes a stall's trace in `dir`, for both writers: the helper thread (the snapshot
// of a stall still running, lib/api/stalls-worker.js) and the watched thread (the whole stall once its
// turn ended, over the snapshot; lib/api/stalls.js).

const path = require('node:path')
const { writeOutputFile } = require('../output')

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

module.exports = { stallFile, writeAtomic }
