'use strict'
// fromCpuProfile(profile, options?): a V8 CPU profile (object, JSON text or bytes) -> ProfilerTrace,
// with exactly the rules of a live Profiler, converted in Rust.

const { binding, callNative } = require('./native')
const { assembleTrace } = require('./trace')

/**
 * The profile as UTF-8 bytes for the binding. Bytes pass as they are; an ASCII string (what V8 and
 * DevTools write) becomes bytes by a plain copy (`latin1`), any other string by UTF-8 encoding; an
 * object is serialized first.
 */
function profileBytes(profile) {
  if (typeof profile === 'string') {
    return Buffer.from(profile, Buffer.byteLength(profile, 'utf8') === profile.length ? 'latin1' : 'utf8')
  }
  if (ArrayBuffer.isView(profile)) {
    return new Uint8Array(profile.buffer, profile.byteOffset, profile.byteLength)
  }
  if (profile !== null && typeof profile === 'object') {
    // A JS object graph that is not plain JSON (cycles, BigInt) fails here with a TypeError.
    return profileBytes(JSON.stringify(profile))
  }
  throw new TypeError(
    `fromCpuProfile: expected a V8 CPU profile (an object, its JSON text or a Buffer), got ${profile === null ? 'null' : typeof profile}`,
  )
}

function fromCpuProfile(profile, options) {
  const bytes = profileBytes(profile)
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
  return assembleTrace(callNative(() => binding.convertCpuProfile(bytes, timeOrigin)))
}

module.exports = { fromCpuProfile }
