'use strict'
// WebIDL conversions for `new Profiler(options)` (dictionary ProfilerInitOptions, both members
// required), with Chrome's error messages. Members are read in lexicographic order, as WebIDL says.

const PREFIX = "Failed to construct 'Profiler'"

function required(dict, member) {
  const value = dict[member]
  if (value === undefined) {
    throw new TypeError(
      `${PREFIX}: Failed to read the '${member}' property from 'ProfilerInitOptions': Required member is undefined.`,
    )
  }
  return value
}

/** WebIDL `unsigned long`: ToNumber, non-finite -> 0, truncate, modulo 2^32. */
function toUnsignedLong(value) {
  const x = +value // throws TypeError for Symbol and BigInt, as ToNumber does
  if (!Number.isFinite(x) || x === 0) return 0
  const truncated = Math.trunc(x)
  return ((truncated % 2 ** 32) + 2 ** 32) % 2 ** 32
}

/** WebIDL `double`: ToNumber, and NaN/±Infinity are a TypeError. */
function toDouble(value, member) {
  const x = +value
  if (!Number.isFinite(x)) {
    throw new TypeError(
      `${PREFIX}: Failed to read the '${member}' property from 'ProfilerInitOptions': The provided double value is non-finite.`,
    )
  }
  return x
}

function convertProfilerInitOptions(options) {
  if (options !== undefined && options !== null && typeof options !== 'object' && typeof options !== 'function') {
    throw new TypeError(`${PREFIX}: The provided value is not of type 'ProfilerInitOptions'.`)
  }
  const dict = options == null ? {} : options
  const maxBufferSize = toUnsignedLong(required(dict, 'maxBufferSize'))
  const sampleInterval = toDouble(required(dict, 'sampleInterval'), 'sampleInterval')
  if (sampleInterval < 0) {
    throw new RangeError(`${PREFIX}: sampleInterval must be non-negative.`)
  }
  return { maxBufferSize, sampleInterval }
}

module.exports = { convertProfilerInitOptions, toUnsignedLong, toDouble }
