'use strict'
// attribute(resource) and summarize(trace, { by }): which package a trace's code belongs to, and
// where the samples went. Both run in Rust (jsprof-core attribution.rs / summary.rs); this file only
// checks arguments and moves the trace across as JSON text.

const { binding, callNative } = require('../native')
const { readOptions, traceText, describe, number, oneOf } = require('../args')
const { isHeapProfile, heapText } = require('./heap')

const BY = ['package', 'function', 'resource']
const byChoice = oneOf(BY)
/** `by`: one of BY, or `label:<key>` (rows by the value of a sample label; the key's rule is Rust's). */
const byOrLabel = (value, fail) => {
  if (typeof value === 'string' && value.startsWith('label:')) return value
  const must = `one of ${BY.map((c) => `'${c}'`).join(', ')} or 'label:<key>'`
  if (typeof value !== 'string') fail(TypeError, must)
  return BY.includes(value) ? value : fail('range', must)
}
const OPTIONS = { by: byOrLabel, sampleInterval: number({ min: 0, what: 'a number of ms' }) }

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
 * ProfilerTrace by package (default), function or resource, sorted by self time; or by `label:<key>`:
 * one row per value of the samples' label `key` (kind `label`), and `(no <key>)` (kind `unlabelled`).
 */
function summarize(trace, options) {
  if (isHeapProfile(trace)) {
    // Rows { name, kind, package?, version?, selfSize, totalSize, selfSamples, totalSamples } by bytes.
    const { by } = readOptions('summarize', options, { by: byChoice }, { defaults: { by: 'package' } })
    return JSON.parse(callNative(() => binding.summarizeHeapProfile(heapText('summarize', trace), by), trace))
  }
  // A native TraceHandle (the CLI's large .cpuprofile files) goes as it is; an object as JSON text.
  const text = traceText('summarize', trace, { tables: true })
  const { by, sampleInterval } = readOptions('summarize', options, OPTIONS, { defaults: { by: 'package' } })
  const json = callNative(() => {
    try {
      return binding.summarizeTrace(text, by, sampleInterval)
    } catch (err) {
      // The binding's messages name the constructor first; put the function name after it.
      if (err && /^(TypeError|RangeError): /.test(err.message)) err.message = err.message.replace(': ', ': summarize: ')
      throw err
    }
  }, trace)
  return JSON.parse(json)
}

module.exports = { attribute, summarize, clearAttributionCache: () => binding.clearAttributionCache() }
