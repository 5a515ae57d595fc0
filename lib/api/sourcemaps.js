'use strict'
// resolveSourceMaps(trace, options?): a trace whose frames point at the code people wrote (the .ts
// file, the package inside a bundle), through the generated files' source maps. Finding, reading and
// parsing the maps, and rewriting the tables, happen in Rust (jsprof-core sourcemap.rs) on the
// source-map thread (src/map_thread.rs, never the libuv pool); this file checks the arguments, sends the small tables across as JSON text and renumbers the
// samples' stack ids with the map Rust gives back (the samples, which dominate, never cross).

const { binding, rethrowTyped, callNative: callNativeTyped } = require('../native')
const { makeSample, makeTrace } = require('../trace')
const { readOptions, traceArgument, describe, received, any, boolean, number } = require('../args')
const { isHeapProfile } = require('./heap')

const DEFAULT_MAX_MAP_SIZE = 256 * 1024 * 1024

const OPTIONS = {
  // Checked by explicitMaps, entry by entry.
  maps: any(),
  sourceMappingURL: boolean(),
  adjacent: boolean(),
  cache: boolean(),
  maxMapSize: number({ min: 0, max: Number.MAX_SAFE_INTEGER, integer: true, what: 'a number of bytes' }),
}
const DEFAULTS = { sourceMappingURL: true, adjacent: true, cache: true, maxMapSize: DEFAULT_MAX_MAP_SIZE }

/** options.maps: `{ [resource]: path | file: URL | URL object | source map object or JSON text }` (or a Map). */
function explicitMaps(maps) {
  if (maps === undefined) return []
  const entries =
    maps instanceof Map
      ? [...maps]
      : maps !== null && typeof maps === 'object' && !Array.isArray(maps)
        ? Object.entries(maps)
        : null
  if (entries === null) {
    throw new TypeError(
      `resolveSourceMaps: options.maps must be an object or a Map of resource -> map, got ${received(maps)}`,
    )
  }
  return entries.map(([resource, map]) => {
    if (typeof resource !== 'string') {
      throw new TypeError(`resolveSourceMaps: options.maps keys must be resource strings, got ${received(resource)}`)
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
        throw new TypeError(
          `resolveSourceMaps: options.maps[${JSON.stringify(resource)}] is not plain JSON: ${cause.message}`,
          { cause },
        )
      }
      return [resource, { text }]
    }
    throw new TypeError(
      `resolveSourceMaps: options.maps[${JSON.stringify(resource)}] must be a path, a file: URL or a source map object, got ${received(map)}`,
    )
  })
}

/** The options as the binding takes them. */
function bindingOptions(options) {
  const o = readOptions('resolveSourceMaps', options, OPTIONS, { defaults: DEFAULTS })
  return {
    explicit: explicitMaps(o.maps),
    comments: o.sourceMappingURL,
    adjacent: o.adjacent,
    cache: o.cache,
    maxBytes: o.maxMapSize,
  }
}

/** An optional numeric member as a column value: -1 when absent; a non-number is a TypeError. */
function numberOrAbsent(value, where) {
  if (value === undefined) return -1
  if (typeof value !== 'number')
    throw new TypeError(`resolveSourceMaps: malformed trace: ${where} must be a number, got ${describe(value)}`)
  return value
}

function element(table, i, value) {
  if (value === null || typeof value !== 'object') {
    throw new TypeError(`resolveSourceMaps: malformed trace: ${table}[${i}] must be an object, got ${describe(value)}`)
  }
  return value
}

/**
 * The tables as the binding takes them: strings as JSON arrays, numbers as Float64Array columns (-1:
 * absent). Ranges, integers and cycles are checked in Rust (the same validation as every exporter).
 */
function toColumns({ resources, frames, stacks }) {
  const n = frames.length
  const names = new Array(n)
  const frameResource = new Float64Array(n)
  const frameLine = new Float64Array(n)
  const frameColumn = new Float64Array(n)
  for (let i = 0; i < n; i++) {
    const f = element('frames', i, frames[i])
    names[i] = f.name
    frameResource[i] = numberOrAbsent(f.resourceId, `frames[${i}].resourceId`)
    frameLine[i] = numberOrAbsent(f.line, `frames[${i}].line`)
    frameColumn[i] = numberOrAbsent(f.column, `frames[${i}].column`)
  }
  const m = stacks.length
  const stackFrame = new Float64Array(m)
  const stackParent = new Float64Array(m)
  for (let i = 0; i < m; i++) {
    const s = element('stacks', i, stacks[i])
    if (typeof s.frameId !== 'number')
      throw new TypeError(
        `resolveSourceMaps: malformed trace: stacks[${i}].frameId must be a number, got ${describe(s.frameId)}`,
      )
    stackFrame[i] = s.frameId
    stackParent[i] = numberOrAbsent(s.parentId, `stacks[${i}].parentId`)
  }
  let text
  try {
    text = { resources: JSON.stringify(resources), names: JSON.stringify(names) }
  } catch (cause) {
    throw new TypeError(`resolveSourceMaps: the trace cannot be serialized: ${cause && cause.message}`, { cause })
  }
  return { ...text, frameResource, frameLine, frameColumn, stackFrame, stackParent }
}

/**
 * The tables back from columns, each object with only the members it has (absent, never -1 or null),
 * in lexicographic order as WebIDL dictionaries (and lib/trace.js's traces) have them: frame {column,
 * line, name, resourceId}, stack {frameId, parentId}.
 */
function fromColumns(t) {
  const resources = JSON.parse(t.resources)
  const names = JSON.parse(t.names)
  const frames = new Array(names.length)
  for (let i = 0; i < names.length; i++) {
    const frame = {}
    if (t.frameColumn[i] >= 0) frame.column = t.frameColumn[i]
    if (t.frameLine[i] >= 0) frame.line = t.frameLine[i]
    frame.name = names[i]
    if (t.frameResource[i] >= 0) frame.resourceId = t.frameResource[i]
    frames[i] = frame
  }
  const stacks = new Array(t.stackFrame.length)
  for (let i = 0; i < stacks.length; i++) {
    const p = t.stackParent[i]
    stacks[i] = p >= 0 ? { frameId: t.stackFrame[i], parentId: p } : { frameId: t.stackFrame[i] }
  }
  return { frames, resources, stacks }
}

// Samples renumbered per event-loop turn: a short turn each (docs/bench.md#source-maps), so a long trace
// never stalls the loop.
const SAMPLES_PER_TURN = 8192
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/** Copies of the samples with their stack ids renumbered; a stack id that names no stack is a TypeError. */
async function renumberSamples(samples, stackMap) {
  const n = samples.length
  const out = new Array(n)
  for (let start = 0; start < n; start += SAMPLES_PER_TURN) {
    if (start > 0) await nextTurn()
    const end = Math.min(n, start + SAMPLES_PER_TURN)
    for (let i = start; i < end; i++) {
      const s = element('samples', i, samples[i])
      const { timestamp, stackId, marker } = s
      if (stackId !== undefined && (!Number.isInteger(stackId) || stackId < 0 || stackId >= stackMap.length)) {
        throw new TypeError(
          `resolveSourceMaps: malformed trace: samples[${i}].stackId ${stackId} names no stack (the trace has ${stackMap.length})`,
        )
      }
      out[i] = makeSample(marker, stackId === undefined ? undefined : stackMap[stackId], timestamp)
    }
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
  // A native TraceHandle (the CLI's large .cpuprofile files): its tables are mapped, its samples
  // renumbered in Rust.
  const handle = trace instanceof binding.TraceHandle ? trace : null
  if (handle) trace = { ...JSON.parse(handle.tablesJson()), samples: [] }
  traceArgument('resolveSourceMaps', trace, { tables: true })
  const opts = bindingOptions(options)
  const columns = toColumns(trace)
  let out
  try {
    out = await binding.resolveSourceMaps(columns, JSON.stringify(opts))
  } catch (err) {
    if (err && /^(TypeError|RangeError): /.test(err.message))
      err.message = err.message.replace(': ', ': resolveSourceMaps: malformed trace: ')
    rethrowTyped(err)
  }
  const { frames, resources, stacks } = fromColumns(out.tables)
  if (isHeapProfile(trace)) {
    // A heap profile's entries: the same stacks, renumbered (two may now share one).
    const samples = trace.samples.map((s, i) => {
      const { count, size, stackId } = element('samples', i, s)
      if (stackId === undefined) return { count, size }
      if (!Number.isInteger(stackId) || stackId < 0 || stackId >= out.stackMap.length) {
        throw new TypeError(
          `resolveSourceMaps: malformed heap profile: samples[${i}].stackId ${stackId} names no stack`,
        )
      }
      return { count, size, stackId: out.stackMap[stackId] }
    })
    return { trace: { frames, jsprof: trace.jsprof, resources, samples, stacks }, stats: JSON.parse(out.stats) }
  }
  if (handle) {
    const tables = JSON.stringify({ resources, frames, stacks })
    const mapped = callNativeTyped(() => handle.withTables(tables, Uint32Array.from(out.stackMap)))
    return { trace: mapped, stats: JSON.parse(out.stats) }
  }
  await nextTurn()
  const samples = await renumberSamples(trace.samples, out.stackMap)
  // The samples keep their times, so the `jsprof` member (the clock, what weighs the samples) stays true.
  const jsprof = trace.jsprof === null ? undefined : trace.jsprof
  return { trace: makeTrace(frames, resources, samples, stacks, jsprof), stats: JSON.parse(out.stats) }
}

module.exports = { resolveSourceMaps, DEFAULT_MAX_MAP_SIZE }
