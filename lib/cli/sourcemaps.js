'use strict'
// The one source-map step of `report`, `convert` and `flamegraph`: a trace read from a file is mapped
// through the source maps its generated files name (resolveSourceMaps) unless `--no-source-maps` is
// given. It says on stderr how many frames were mapped, and which maps were named but could not be used.

const { api, info } = require('./common')
const { visible } = require('../text')

/** The parseArgs options every command that reads a trace takes. */
const SOURCE_MAP_OPTIONS = { 'no-source-maps': { type: 'boolean' } }

const SOURCE_MAP_HELP = `      --no-source-maps  keep the generated positions (default: frames of files with a source map
                        are mapped to the original source, line, column and name)`

// Maps named (by a comment or beside the file) that could not be used: worth a warning. A file without
// any map (`noMap`) or code that is not a file (`notAFile`) is the normal case and says nothing.
const WORTH_A_WARNING = new Set(['mapNotFound', 'mapUnreadable', 'mapTooLarge', 'mapInvalid'])
const MAX_WARNINGS = 3

/** `trace` mapped through its source maps (or as it is with --no-source-maps). */
async function applySourceMaps(trace, values) {
  if (values['no-source-maps']) return trace
  const { trace: mapped, stats } = await api('resolveSourceMaps')(trace)
  if (stats.mapped > 0) {
    info(
      `mapped ${stats.mapped} of ${stats.frames} frames through source maps (--no-source-maps to keep generated positions)`,
    )
  }
  const failed = stats.resources.filter((r) => r.error && WORTH_A_WARNING.has(r.error.reason))
  for (const r of failed.slice(0, MAX_WARNINGS)) info(`warning: source map not used: ${visible(r.error.message)}`)
  if (failed.length > MAX_WARNINGS) info(`warning: ${failed.length - MAX_WARNINGS} more source maps not used`)
  return mapped
}

module.exports = { applySourceMaps, SOURCE_MAP_OPTIONS, SOURCE_MAP_HELP }
