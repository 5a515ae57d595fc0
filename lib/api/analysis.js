'use strict'
// attribute(resource) and summarize(trace, { by }): which package a trace's code belongs to, and
// where the samples went. Both run in Rust (jsprof-core attribution.rs / summary.rs); this file only
// checks arguments and moves the trace across as JSON text.

const { binding, callNative } = require('../native')
const { readOptions, traceText, describe, number, string } = require('../args')
const { isHeapProfile, heapText } = require('./heap')

// `by`: a string; which ones (package, function, resource, `label:<key>`; no label for a heap profile)
// is the one rule of jsprof-core's SummaryBy, which the binding applies (and the CLI's --by).
const OPTIONS = { by: string(), sampleInterval: number({ min: 0, what: 'a number of ms' }) }
const HEAP_OPTIONS = { by: string() }

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
  const heap = isHeapProfile(trace)
  // Rows of a heap profile: { name, kind, package?, version?, selfSize, totalSize, selfSamples, totalSamples } by bytes.
  // A native TraceHandle (the CLI's large .cpuprofile files) goes as it is; an object as JSON text.
  const text = heap ? heapText('summarize', trace) : traceText('summarize', trace, { tables: true })
  const o = readOptions('summarize', options, heap ? HEAP_OPTIONS : OPTIONS, { defaults: { by: 'package' } })
  const json = callNative(() => {
    try {
      return heap ? binding.summarizeHeapProfile(text, o.by) : binding.summarizeTrace(text, o.by, o.sampleInterval)
    } catch (err) {
      // The binding's messages name the constructor first; put the function name after it (a heap
      // profile's reader names it already).
      if (err && typeof err.message === 'string')
        err.message = err.message.replace(/^(TypeError|RangeError): (?!summarize: )/, '$1: summarize: ')
      throw err
    }
  }, trace)
  return JSON.parse(json)
}

module.exports = { attribute, summarize, clearAttributionCache: () => binding.clearAttributionCache() }
