'use strict'
// attribute(resource) and summarize(trace, { by }): which package a trace's code belongs to, and
// where the samples went. Both run in Rust (jsprof-core attribution.rs / summary.rs); this file only
// checks arguments and moves the trace across as JSON text.

const { binding, callNative } = require('../native')

const BY = ['package', 'function', 'resource']

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/**
 * Which code a resource of `trace.resources` is: `{ kind, package?, version?, root? }`.
 * `package.json` files are read once per process and cached.
 */
function attribute(resource) {
  if (typeof resource !== 'string') {
    throw new TypeError(`attribute: expected a resource string, got ${describe(resource)}`)
  }
  const { kind, package: pkg, version, root } = callNative(() => binding.attributeResource(resource))
  const result = { kind }
  if (pkg != null) result.package = pkg
  if (version != null) result.version = version
  if (root != null) result.root = root
  return result
}

/**
 * Rows `{ name, kind, package?, version?, selfSamples, totalSamples, selfTime, totalTime }` of a
 * ProfilerTrace by package (default), function or resource, sorted by self time.
 */
function summarize(trace, options) {
  if (trace === null || typeof trace !== 'object' || Array.isArray(trace)) {
    throw new TypeError(`summarize: expected a ProfilerTrace object, got ${describe(trace)}`)
  }
  let by = 'package'
  let sampleInterval
  if (options !== undefined && options !== null) {
    if (typeof options !== 'object')
      throw new TypeError(`summarize: options must be an object, got ${describe(options)}`)
    if (options.by !== undefined) {
      if (typeof options.by !== 'string') {
        throw new TypeError(`summarize: options.by must be a string (${BY.join(', ')}), got ${describe(options.by)}`)
      }
      if (!BY.includes(options.by)) {
        throw new RangeError(
          `summarize: options.by must be one of ${BY.map((b) => `'${b}'`).join(', ')}, got '${options.by}'`,
        )
      }
      by = options.by
    }
    if (options.sampleInterval !== undefined) {
      if (typeof options.sampleInterval !== 'number') {
        throw new TypeError(
          `summarize: options.sampleInterval must be a number of ms, got ${describe(options.sampleInterval)}`,
        )
      }
      if (!Number.isFinite(options.sampleInterval) || options.sampleInterval < 0) {
        throw new RangeError(
          `summarize: options.sampleInterval must be a finite number of ms >= 0, got ${options.sampleInterval}`,
        )
      }
      sampleInterval = options.sampleInterval
    }
  }
  let text = trace
  // A native TraceHandle (the CLI's large .cpuprofile files) goes as it is; an object as JSON text.
  if (!(trace instanceof binding.TraceHandle)) {
    for (const table of ['resources', 'frames', 'stacks', 'samples']) {
      if (!Array.isArray(trace[table])) {
        throw new TypeError(
          `summarize: malformed trace: trace.${table} must be an array, got ${describe(trace[table])}`,
        )
      }
    }
    try {
      text = JSON.stringify(trace)
    } catch (err) {
      throw new TypeError(`summarize: malformed trace: ${err.message}`, { cause: err })
    }
  }
  const json = callNative(() => {
    try {
      return binding.summarizeTrace(text, by, sampleInterval)
    } catch (err) {
      // The binding's messages name the constructor first; put the function name after it.
      if (err && /^(TypeError|RangeError): /.test(err.message)) err.message = err.message.replace(': ', ': summarize: ')
      throw err
    }
  })
  return JSON.parse(json)
}

module.exports = { attribute, summarize, clearAttributionCache: () => binding.clearAttributionCache() }
