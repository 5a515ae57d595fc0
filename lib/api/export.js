'use strict'
// Exporters: a ProfilerTrace written in the formats other tools read, built in Rust
// (crates/jsprof-core/src/export). The trace crosses as JSON text and is validated there once;
// malformed traces and options throw TypeError.

const { binding, callNative } = require('../native')

/**
 * The trace for the binding: JSON text of a ProfilerTrace object, or a native TraceHandle as it is
 * (a trace kept in Rust, as the CLI reads large .cpuprofile files: no sample object ever made).
 */
function traceJson(trace, fn) {
  if (trace instanceof binding.TraceHandle) return trace
  if (trace === null || typeof trace !== 'object' || Array.isArray(trace)) {
    throw new TypeError(
      `${fn}: expected a ProfilerTrace object ({ resources, frames, stacks, samples }), got ${describe(trace)}`,
    )
  }
  try {
    return JSON.stringify(trace)
  } catch (cause) {
    // Cycles and BigInts: not a plain trace.
    throw new TypeError(`${fn}: the trace cannot be serialized: ${cause && cause.message}`, { cause })
  }
}

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/**
 * `{ timeOrigin, pid }` for an export: the options' own, else the trace's sidecar `jsprof` member (what
 * `jsprof record` writes: the Unix epoch, ms, of the time origin its timestamps count from, and the
 * pid). Without either, exports count from 0 (1970 in go tool pprof) with pid 1.
 */
function clock(trace, o) {
  const sidecar =
    trace !== null && typeof trace === 'object' && trace.jsprof !== null && typeof trace.jsprof === 'object'
      ? trace.jsprof
      : {}
  const timeOrigin = o.timeOrigin ?? (Number.isFinite(sidecar.timeOrigin) ? sidecar.timeOrigin : undefined)
  const pid =
    o.pid ?? (Number.isInteger(sidecar.pid) && sidecar.pid > 0 && sidecar.pid < 2 ** 32 ? sidecar.pid : undefined)
  return { timeOrigin, pid }
}

/** Reads `options` (undefined, null or an object) and checks the named members' types. */
function readOptions(options, fn, spec) {
  const out = {}
  if (options === undefined || options === null) return out
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${fn}: options must be an object, got ${describe(options)}`)
  }
  for (const [key, type] of Object.entries(spec)) {
    const value = options[key]
    if (value === undefined) continue
    if (type === 'string') {
      if (typeof value !== 'string')
        throw new TypeError(`${fn}: options.${key} must be a string, got ${describe(value)}`)
    } else if (type === 'finite') {
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        throw new TypeError(`${fn}: options.${key} must be a finite number`)
      }
    } else if (type === 'pid') {
      if (!Number.isInteger(value) || value < 1 || value >= 2 ** 32) {
        throw new TypeError(`${fn}: options.${key} must be a process id (a positive integer)`)
      }
    } else if (type === 'object') {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new TypeError(
          `${fn}: options.${key} must be an object of attribute names to values, got ${describe(value)}`,
        )
      }
    } else if (type === 'width') {
      if (!Number.isInteger(value) || value < 10 || value > 100000) {
        throw new TypeError(`${fn}: options.${key} must be an integer number of px between 10 and 100000`)
      }
    }
    out[key] = value
  }
  return out
}

// The JSON formats as the text Rust writes, UTF-8 bytes (a Buffer): the public functions parse it into
// objects; the CLI writes it as it is, never a JS string on its way (a large profile's Gecko JSON parsed
// and stringified again multiplied its memory: docs/bench.md#large-inputs-through-the-cli).
const JSON_TEXT = {
  toCpuProfile(trace) {
    const text = traceJson(trace, 'toCpuProfile')
    return callNative(() => binding.exportCpuProfile(text))
  },
  toGeckoProfile(trace, options) {
    const text = traceJson(trace, 'toGeckoProfile')
    const o = readOptions(options, 'toGeckoProfile', {
      threadName: 'string',
      startTime: 'finite',
      timeOrigin: 'finite',
      pid: 'pid',
    })
    const { timeOrigin, pid } = clock(trace, o)
    return callNative(() => binding.exportGeckoProfile(text, o.threadName, o.startTime ?? timeOrigin, pid))
  },
  toSpeedscope(trace, options) {
    const text = traceJson(trace, 'toSpeedscope')
    const o = readOptions(options, 'toSpeedscope', { name: 'string', timeOrigin: 'finite', pid: 'pid' })
    // With the recording's clock (options or the sidecar), the default name says when it started.
    const { timeOrigin, pid } = clock(trace, o)
    return callNative(() => binding.exportSpeedscope(text, o.name, timeOrigin, pid))
  },
}

/** V8's `.cpuprofile` object; `fromCpuProfile(result, { timeOrigin: 0 })` gives the trace back. */
const toCpuProfile = (trace) => JSON.parse(JSON_TEXT.toCpuProfile(trace).toString('utf8'))

/** The Firefox Profiler's processed profile (version 58) object. */
const toGeckoProfile = (trace, options) => JSON.parse(JSON_TEXT.toGeckoProfile(trace, options).toString('utf8'))

/** A speedscope file object. */
const toSpeedscope = (trace, options) => JSON.parse(JSON_TEXT.toSpeedscope(trace, options).toString('utf8'))

/** Gzipped pprof `profile.proto` bytes, as a Buffer. */
function toPprof(trace, options) {
  const text = traceJson(trace, 'toPprof')
  const { timeOrigin } = clock(trace, readOptions(options, 'toPprof', { timeOrigin: 'finite' }))
  return callNative(() => binding.exportPprof(text, timeOrigin))
}

/**
 * The body of an OTLP/HTTP profiles export (`ExportProfilesServiceRequest`, protobuf), as a Buffer.
 * Times need an epoch: `timeOrigin`, else the trace's sidecar, else this thread's
 * `performance.timeOrigin` (right for traces recorded here); `pid` likewise (else this process's).
 */
function toOtlpProfiles(trace, options) {
  const text = traceJson(trace, 'toOtlpProfiles')
  const o = readOptions(options, 'toOtlpProfiles', {
    timeOrigin: 'finite',
    pid: 'pid',
    resource: 'object',
    attributes: 'object',
  })
  const { timeOrigin, pid } = clock(trace, o)
  const json = (value, what) => {
    if (value === undefined) return undefined
    try {
      return JSON.stringify(value)
    } catch (cause) {
      throw new TypeError(`toOtlpProfiles: options.${what} cannot be serialized: ${cause && cause.message}`, { cause })
    }
  }
  return callNative(() =>
    binding.exportOtlpProfiles(
      text,
      timeOrigin ?? require('node:perf_hooks').performance.timeOrigin,
      pid ?? process.pid,
      process.versions.node,
      require('../../package.json').version,
      json(o.resource, 'resource'),
      json(o.attributes, 'attributes'),
    ),
  )
}

/** Folded stacks text (`a;b;c 42` lines) for flamegraph.pl and inferno. */
function toCollapsed(trace) {
  const text = traceJson(trace, 'toCollapsed')
  return callNative(() => binding.exportCollapsed(text))
}

/** A flame graph (text) coloured by kind of code: an SVG image, or with `format: 'html'` an explorable page. */
function toFlameGraph(trace, options) {
  const text = traceJson(trace, 'toFlameGraph')
  const o = readOptions(options, 'toFlameGraph', {
    title: 'string',
    subtitle: 'string',
    width: 'width',
    format: 'string',
  })
  if (o.format !== undefined && o.format !== 'svg' && o.format !== 'html') {
    throw new TypeError(`toFlameGraph: options.format must be 'svg' or 'html', got ${JSON.stringify(o.format)}`)
  }
  return callNative(() => binding.exportFlameGraph(text, o.title, o.subtitle, o.width, o.format === 'html'))
}

/**
 * The differential flame graph of `jsprof diff -o diff.svg` (SVG text): `next`'s call tree, each frame
 * coloured by how its share changed since `base`. Drawn in Rust from both traces' own stack trees, as
 * toFlameGraph is (not part of the package's API).
 */
function toDiffFlameGraph(base, next, options) {
  const baseText = traceJson(base, 'toDiffFlameGraph')
  const nextText = traceJson(next, 'toDiffFlameGraph')
  const o = readOptions(options, 'toDiffFlameGraph', { title: 'string' })
  return callNative(() => binding.exportDiffFlameGraph(baseText, nextText, o.title))
}

module.exports = {
  toCpuProfile,
  toGeckoProfile,
  toSpeedscope,
  toPprof,
  toOtlpProfiles,
  toCollapsed,
  toFlameGraph,
  toDiffFlameGraph,
  JSON_TEXT,
  clock,
}
