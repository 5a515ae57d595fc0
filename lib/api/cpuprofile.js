'use strict'
// fromCpuProfile(profile, options?): a V8 CPU profile (object, JSON text or bytes) -> ProfilerTrace,
// with exactly the rules of a live Profiler, converted in Rust.

const { binding, callNative } = require('../native')
const { assembleTrace } = require('../trace')
const { readOptions, describe, number, boolean } = require('../args')

/**
 * The binding's call for the profile: JSON text goes as the string itself (Rust copies it once as
 * UTF-8), bytes as they are; an object is serialized first.
 */
function converter(profile) {
  if (typeof profile === 'string') {
    return (origin, inlined) => binding.convertCpuProfileText(profile, origin, false, inlined)
  }
  if (ArrayBuffer.isView(profile)) {
    const bytes = new Uint8Array(profile.buffer, profile.byteOffset, profile.byteLength)
    return (origin, inlined) => binding.convertCpuProfile(bytes, origin, false, inlined)
  }
  if (profile !== null && typeof profile === 'object') {
    // A JS object graph that is not plain JSON (cycles, BigInt) fails here with a TypeError.
    return converter(JSON.stringify(profile))
  }
  throw new TypeError(
    `fromCpuProfile: expected a V8 CPU profile (an object, its JSON text or a Buffer), got ${describe(profile)}`,
  )
}

function fromCpuProfile(profile, options) {
  const convert = converter(profile)
  // A converter of whole profiles, as the exporters: every bad input is a TypeError.
  // inlined: the samples of code V8 inlined into a function go to the inlined function, as V8's
  // per-line ticks say and the scripts' files show (docs/analysis.md#inlined-functions).
  const { timeOrigin, inlined } = readOptions(
    'fromCpuProfile',
    options,
    { timeOrigin: number({ what: 'a number of µs' }), inlined: boolean() },
    { outOfRange: TypeError },
  )
  return assembleTrace(callNative(() => convert(timeOrigin, inlined === true), profile))
}

module.exports = { fromCpuProfile }
