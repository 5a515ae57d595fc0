'use strict'
// Exporters: a ProfilerTrace written in the formats other tools read, built in Rust
// (crates/jsprof-core/src/export). The trace crosses as JSON text (or stays in Rust as a TraceHandle)
// and is validated there once; malformed traces and options throw TypeError (lib/args.js's rule, with
// TypeError for values out of range too).

const { binding, callNative } = require('../native')
const { readOptions, traceText, number, string, object, oneOf } = require('../args')
const { isHeapProfile, heapText } = require('./heap')

/**
 * The formats of time only (a `.cpuprofile`, the Firefox Profiler, speedscope) refuse a heap profile,
 * which has bytes and no times: it goes to DevTools' Memory panel as `toHeapProfile` writes it.
 */
function timeOnly(fn, trace) {
  if (isHeapProfile(trace)) {
    throw new TypeError(
      `${fn}: this is a heap profile (bytes per stack, no times): export it with toPprof, toOtlpProfiles, ` +
        'toCollapsed or toFlameGraph, or toHeapProfile for DevTools',
    )
  }
}

/**
 * An exporter's options, by the exporters' rule: every bad one is a TypeError. The push exporters call
 * their encoder as `encode(trace, chunk)`, and an exporter is the natural encoder (`encode: toPprof`):
 * the chunk of the very trace being exported is not an options bag.
 */
function exportOptions(fn, trace, given, spec) {
  const chunk = given !== null && typeof given === 'object' && given.trace === trace
  return readOptions(fn, chunk ? undefined : given, spec, { outOfRange: TypeError })
}

// The recording's clock, which every exporter that shows times takes (ExportClockOptions). Rust puts
// them over the trace's own `jsprof` member (what `jsprof record` and request profiles write: the Unix
// epoch, ms, of the time origin the timestamps count from, and the pid): trace/extension.rs `Clock`.
// Without either, exports count from 0 (1970 in go tool pprof) with pid 1.
const CLOCK = {
  timeOrigin: number(),
  pid: number({ min: 1, max: 2 ** 32 - 1, integer: true, what: 'a process id' }),
}

// The JSON formats as the text Rust writes, UTF-8 bytes (a Buffer): the public functions parse it into
// objects; the CLI writes it as it is, never a JS string on its way (a large profile's Gecko JSON parsed
// and stringified again multiplied its memory: docs/bench.md#large-inputs-through-the-cli).
const JSON_TEXT = {
  toCpuProfile(trace) {
    timeOnly('toCpuProfile', trace)
    const text = traceText('toCpuProfile', trace)
    return callNative(() => binding.exportCpuProfile(text), trace)
  },
  toGeckoProfile(trace, given) {
    timeOnly('toGeckoProfile', trace)
    const text = traceText('toGeckoProfile', trace)
    const o = exportOptions('toGeckoProfile', trace, given, { threadName: string(), startTime: number(), ...CLOCK })
    return callNative(() => binding.exportGeckoProfile(text, o.threadName, o.startTime, o.timeOrigin, o.pid), trace)
  },
  toSpeedscope(trace, given) {
    timeOnly('toSpeedscope', trace)
    const text = traceText('toSpeedscope', trace)
    const o = exportOptions('toSpeedscope', trace, given, { name: string(), ...CLOCK })
    // With the recording's clock (options or the trace's own), the default name says when it started.
    return callNative(() => binding.exportSpeedscope(text, o.name, o.timeOrigin, o.pid), trace)
  },
}

/** V8's `.cpuprofile` object; `fromCpuProfile(result, { timeOrigin: 0 })` gives the trace back. */
const toCpuProfile = (trace) => JSON.parse(JSON_TEXT.toCpuProfile(trace).toString('utf8'))

/** The Firefox Profiler's processed profile (version 58) object. */
const toGeckoProfile = (trace, options) => JSON.parse(JSON_TEXT.toGeckoProfile(trace, options).toString('utf8'))

/** A speedscope file object. */
const toSpeedscope = (trace, options) => JSON.parse(JSON_TEXT.toSpeedscope(trace, options).toString('utf8'))

/** Gzipped pprof `profile.proto` bytes, as a Buffer. */
function toPprof(trace, given) {
  // pid is an ExportClockOptions member too; pprof has no field for it.
  if (isHeapProfile(trace)) {
    const { timeOrigin } = exportOptions('toPprof', trace, given, CLOCK)
    return callNative(() => binding.exportHeapPprof(heapText('toPprof', trace), timeOrigin), trace)
  }
  const text = traceText('toPprof', trace)
  const { timeOrigin } = exportOptions('toPprof', trace, given, CLOCK)
  return callNative(() => binding.exportPprof(text, timeOrigin), trace)
}

/**
 * The body of an OTLP/HTTP profiles export (`ExportProfilesServiceRequest`, protobuf), as a Buffer.
 * Times need an epoch: `timeOrigin`, else the trace's sidecar, else this thread's
 * `performance.timeOrigin` (right for traces recorded here); `pid` likewise (else this process's).
 */
function toOtlpProfiles(trace, given) {
  const heap = isHeapProfile(trace)
  const text = heap ? heapText('toOtlpProfiles', trace) : traceText('toOtlpProfiles', trace)
  const o = exportOptions('toOtlpProfiles', trace, given, {
    ...CLOCK,
    resource: object('of attribute names to values'),
    attributes: object('of attribute names to values'),
  })
  const json = (value, what) => {
    if (value === undefined) return undefined
    try {
      return JSON.stringify(value)
    } catch (cause) {
      throw new TypeError(`toOtlpProfiles: options.${what} cannot be serialized: ${cause && cause.message}`, { cause })
    }
  }
  const args = {
    timeOrigin: o.timeOrigin,
    pid: o.pid,
    processTimeOrigin: require('node:perf_hooks').performance.timeOrigin,
    processPid: process.pid,
    runtimeVersion: process.versions.node,
    sdkVersion: require('../../package.json').version,
    resource: json(o.resource, 'resource'),
    attributes: json(o.attributes, 'attributes'),
  }
  return callNative(() => (heap ? binding.exportHeapOtlpProfiles : binding.exportOtlpProfiles)(text, args), trace)
}

/** Folded stacks text (`a;b;c 42` lines) for flamegraph.pl and inferno. */
function toCollapsed(trace) {
  if (isHeapProfile(trace)) return callNative(() => binding.exportHeapCollapsed(heapText('toCollapsed', trace)), trace)
  const text = traceText('toCollapsed', trace)
  return callNative(() => binding.exportCollapsed(text), trace)
}

/** `label`: `{ key: value }`, one label: the flame graph of the samples that carry it (docs/labels.md). */
function labelFilter(value, fail) {
  const entries = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value) : []
  if (entries.length !== 1 || typeof entries[0][1] !== 'string')
    fail(TypeError, 'an object of one label name to a string value')
  return entries[0]
}

/** A flame graph (text) coloured by kind of code: an SVG image, or with `format: 'html'` an explorable page. */
function toFlameGraph(trace, given) {
  const heap = isHeapProfile(trace)
  const text = heap ? heapText('toFlameGraph', trace) : traceText('toFlameGraph', trace)
  const o = exportOptions('toFlameGraph', trace, given, {
    title: string(),
    subtitle: string(),
    width: number({ min: 10, max: 100_000, integer: true, what: 'a number of px' }),
    format: oneOf(['svg', 'html']),
    label: labelFilter,
  })
  if (heap) {
    if (o.label !== undefined)
      throw new TypeError('toFlameGraph: options.label applies to CPU traces, not heap profiles')
    return callNative(
      () => binding.exportHeapFlameGraph(text, o.title, o.subtitle, o.width, o.format === 'html'),
      trace,
    )
  }
  const [key, value] = o.label ?? []
  return callNative(
    () => binding.exportFlameGraph(text, o.title, o.subtitle, o.width, o.format === 'html', key, value),
    trace,
  )
}

/**
 * The differential flame graph of `jsprof diff -o diff.svg` (SVG text): `next`'s call tree, each frame
 * coloured by how its share changed since `base`. Drawn in Rust from both traces' own stack trees, as
 * toFlameGraph is (not part of the package's API).
 */
function toDiffFlameGraph(base, next, given) {
  if (isHeapProfile(base) && isHeapProfile(next)) {
    const o = exportOptions('toDiffFlameGraph', next, given, { title: string() })
    const texts = [heapText('toDiffFlameGraph', base), heapText('toDiffFlameGraph', next)]
    return callNative(() => binding.exportHeapDiffFlameGraph(texts[0], texts[1], o.title))
  }
  const baseText = traceText('toDiffFlameGraph', base)
  const nextText = traceText('toDiffFlameGraph', next)
  const o = exportOptions('toDiffFlameGraph', next, given, { title: string() })
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
}
