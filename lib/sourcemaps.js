'use strict'
// resolveSourceMaps(trace, options?): a trace whose frames point at the code people wrote (the .ts
// file, the package inside a bundle), through the generated files' source maps. Finding, reading and
// parsing the maps, and rewriting the tables, happen in Rust (jsprof-core sourcemap.rs) on the libuv
// pool; this file checks the arguments, sends the small tables across as JSON text and renumbers the
// samples' stack ids with the map Rust gives back (the samples, which dominate, never cross).

const { binding, rethrowTyped } = require('./native')

const DEFAULT_MAX_MAP_SIZE = 256 * 1024 * 1024

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

function booleanOption(options, name) {
  const value = options[name]
  if (value === undefined) return true
  if (typeof value !== 'boolean') {
    throw new TypeError(`resolveSourceMaps: options.${name} must be a boolean, got ${describe(value)}`)
  }
  return value
}

/** options.maps: `{ [resource]: path | file: URL | URL object | source map object or JSON text }` (or a Map). */
function explicitMaps(maps) {
  if (maps === undefined) return []
  const entries =
    maps instanceof Map ? [...maps] : maps !== null && typeof maps === 'object' && !Array.isArray(maps) ? Object.entries(maps) : null
  if (entries === null) {
    throw new TypeError(`resolveSourceMaps: options.maps must be an object or a Map of resource -> map, got ${describe(maps)}`)
  }
  return entries.map(([resource, map]) => {
    if (typeof resource !== 'string') {
      throw new TypeError(`resolveSourceMaps: options.maps keys must be resource strings, got ${describe(resource)}`)
    }
    if (map instanceof URL) return [resource, { path: map.href }]
    if (typeof map === 'string') {
      // JSON text of a map starts with `{` (after an optional XSSI prefix `)]}'`); anything else is a location.
      return [resource, /^\s*(\)\]\}'[^\n]*\n\s*)?\{/.test(map) ? { text: map } : { path: map }]
    }
    if (map !== null && typeof map === 'object' && !Array.isArray(map)) {
      let text
      try {
        text = JSON.stringify(map)
      } catch (cause) {
        throw new TypeError(`resolveSourceMaps: options.maps[${JSON.stringify(resource)}] is not plain JSON: ${cause.message}`)
      }
      return [resource, { text }]
    }
    throw new TypeError(
      `resolveSourceMaps: options.maps[${JSON.stringify(resource)}] must be a path, a file: URL or a source map object, got ${describe(map)}`,
    )
  })
}

function readOptions(options) {
  if (options === undefined || options === null) options = {}
  else if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`resolveSourceMaps: options must be an object, got ${describe(options)}`)
  }
  let maxBytes = DEFAULT_MAX_MAP_SIZE
  if (options.maxMapSize !== undefined) {
    const size = options.maxMapSize
    if (typeof size !== 'number') throw new TypeError(`resolveSourceMaps: options.maxMapSize must be a number of bytes, got ${describe(size)}`)
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new RangeError(`resolveSourceMaps: options.maxMapSize must be a whole number of bytes >= 0, got ${size}`)
    }
    maxBytes = size
  }
  return {
    explicit: explicitMaps(options.maps),
    comments: booleanOption(options, 'sourceMappingURL'),
    adjacent: booleanOption(options, 'adjacent'),
    cache: booleanOption(options, 'cache'),
    maxBytes,
  }
}

function checkTrace(trace) {
  if (trace === null || typeof trace !== 'object' || Array.isArray(trace)) {
    throw new TypeError(`resolveSourceMaps: expected a ProfilerTrace object ({ resources, frames, stacks, samples }), got ${describe(trace)}`)
  }
  for (const table of ['resources', 'frames', 'stacks', 'samples']) {
    if (!Array.isArray(trace[table])) {
      throw new TypeError(`resolveSourceMaps: malformed trace: trace.${table} must be an array, got ${describe(trace[table])}`)
    }
  }
}

/** The samples with their stack ids renumbered; a stack id that names no stack is a TypeError. */
function renumberSamples(samples, stackMap) {
  const n = samples.length
  const out = new Array(n)
  for (let i = 0; i < n; i++) {
    const s = samples[i]
    if (s === null || typeof s !== 'object') {
      throw new TypeError(`resolveSourceMaps: malformed trace: samples[${i}] must be an object, got ${describe(s)}`)
    }
    const copy = { ...s }
    if (s.stackId !== undefined) {
      const id = s.stackId
      if (!Number.isInteger(id) || id < 0 || id >= stackMap.length) {
        throw new TypeError(`resolveSourceMaps: malformed trace: samples[${i}].stackId ${id} names no stack (the trace has ${stackMap.length})`)
      }
      copy.stackId = stackMap[id]
    }
    out[i] = copy
  }
  return out
}

/**
 * `{ trace, stats }`: `trace` a new ProfilerTrace whose frames are moved to their original source,
 * line, column and name where a source map says so (the others stay as they are); `stats` how many
 * frames were mapped and, per reason, why the others were not, with one entry per input resource.
 * Never rejects for a missing or broken map; rejects with a TypeError/RangeError for bad arguments.
 */
async function resolveSourceMaps(trace, options) {
  checkTrace(trace)
  const opts = readOptions(options)
  let tables
  try {
    tables = JSON.stringify({ resources: trace.resources, frames: trace.frames, stacks: trace.stacks, samples: [] })
  } catch (cause) {
    throw new TypeError(`resolveSourceMaps: the trace cannot be serialized: ${cause && cause.message}`, { cause })
  }
  let out
  try {
    out = await binding.resolveSourceMaps(tables, JSON.stringify(opts))
  } catch (err) {
    if (err && /^(TypeError|RangeError): /.test(err.message)) err.message = err.message.replace(': ', ': resolveSourceMaps: malformed trace: ')
    rethrowTyped(err)
  }
  const mapped = JSON.parse(out.tables)
  mapped.samples = renumberSamples(trace.samples, out.stackMap)
  return { trace: mapped, stats: JSON.parse(out.stats) }
}

module.exports = { resolveSourceMaps, DEFAULT_MAX_MAP_SIZE }
