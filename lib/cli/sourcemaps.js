'use strict'
// The one source-map step of `report`, `convert` and `flamegraph`: a trace read from a file is mapped
// through the source maps its generated files name (resolveSourceMaps) unless `--no-source-maps` is
// given. It says on stderr how many frames were mapped, and in one line how many maps were named but
// could not be used (packages often ship a `sourceMappingURL` comment without its map): the first
// one's reason, and the count per reason; `--source-map-warnings` lists each (`report --json` has
// them all in its output).

const { api, info } = require('./common')
const { visible } = require('../text')

/** The parseArgs options every command that reads a trace takes. */
const SOURCE_MAP_OPTIONS = { 'no-source-maps': { type: 'boolean' }, 'source-map-warnings': { type: 'boolean' } }

const SOURCE_MAP_HELP = `      --no-source-maps  keep the generated positions (default: frames of files with a source map
                        are mapped to the original source, line, column and name)
      --source-map-warnings
                        list each source map that was named but could not be used, one line each
                        (default: one line with their count)`

// Maps named (by a comment or beside the file) that could not be used: worth a warning, in these words.
// A file without any map (`noMap`) or code that is not a file (`notAFile`) is the normal case and says
// nothing.
const NOT_USED = {
  mapNotFound: 'not found',
  mapUnreadable: 'unreadable',
  mapTooLarge: 'too large',
  mapInvalid: 'invalid',
}

/**
 * `trace` mapped through its source maps (or as it is with --no-source-maps), and the maps named but
 * not used: `{ trace, notUsed: [{ resource, reason, message }] }`.
 */
async function applySourceMaps(trace, values) {
  if (values['no-source-maps']) return { trace, notUsed: [] }
  const { trace: mapped, stats } = await api('resolveSourceMaps')(trace)
  if (stats.mapped > 0) {
    info(
      `mapped ${stats.mapped} of ${stats.frames} frames through source maps (--no-source-maps to keep generated positions)`,
    )
  }
  const notUsed = stats.resources
    .filter((r) => r.error && r.error.reason in NOT_USED)
    .map((r) => ({ resource: r.resource, reason: r.error.reason, message: r.error.message }))
  if (values['source-map-warnings']) {
    for (const r of notUsed) info(`warning: source map not used: ${visible(r.message)}`)
  } else if (notUsed.length === 1) {
    info(`warning: source map not used: ${visible(notUsed[0].message)}`)
  } else if (notUsed.length > 1) {
    const counts = Object.keys(NOT_USED)
      .map((reason) => [reason, notUsed.filter((r) => r.reason === reason).length])
      .filter(([, n]) => n > 0)
      .map(([reason, n]) => `${n} ${NOT_USED[reason]}`)
      .join(', ')
    info(
      `warning: ${notUsed.length} source maps not used (${counts}), first: ${visible(notUsed[0].message)} ` +
        '(--source-map-warnings lists each)',
    )
  }
  return { trace: mapped, notUsed }
}

module.exports = { applySourceMaps, SOURCE_MAP_OPTIONS, SOURCE_MAP_HELP }
