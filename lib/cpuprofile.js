'use strict'
// fromCpuProfile(profile, options?): a V8 CPU profile (object, JSON text or bytes) -> ProfilerTrace,
// with exactly the rules of a live Profiler, converted in Rust.

const { binding, callNative } = require('./native')
const { assembleTrace } = require('./trace')

function profileText(profile) {
  if (typeof profile === 'string') return profile
  if (ArrayBuffer.isView(profile)) {
    return Buffer.from(profile.buffer, profile.byteOffset, profile.byteLength).toString('utf8')
  }
  if (profile !== null && typeof profile === 'object') {
    // A JS object graph that is not plain JSON (cycles, BigInt) fails here with a TypeError.
    return JSON.stringify(profile)
  }
  throw new TypeError(
    `fromCpuProfile: expected a V8 CPU profile (an object, its JSON text or a Buffer), got ${profile === null ? 'null' : typeof profile}`,
  )
}

function fromCpuProfile(profile, options) {
  const text = profileText(profile)
  let timeOrigin
  if (options !== undefined && options !== null) {
    if (typeof options !== 'object') throw new TypeError('fromCpuProfile: options must be an object')
    if (options.timeOrigin !== undefined) {
      timeOrigin = Number(options.timeOrigin)
      if (!Number.isFinite(timeOrigin)) {
        throw new TypeError('fromCpuProfile: options.timeOrigin must be a finite number of µs')
      }
    }
  }
  return assembleTrace(callNative(() => binding.convertCpuProfile(text, timeOrigin)))
}

module.exports = { fromCpuProfile }
