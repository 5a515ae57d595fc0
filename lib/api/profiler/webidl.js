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

/**
 * `new Profiler(options)`'s one required argument, as Chrome 156 converts it: no argument at all is a
 * TypeError, and so is a value that is not an object — `null` and `undefined` included: Chrome rejects
 * them rather than reading them as an empty dictionary (checked against Chromium itself:
 * __test__/chrome-oracle.spec.mjs).
 */
function convertProfilerInitOptions(argumentCount, options) {
  if (argumentCount === 0) throw new TypeError(`${PREFIX}: 1 argument required, but only 0 present.`)
  if (options === null || (typeof options !== 'object' && typeof options !== 'function')) {
    throw new TypeError(`${PREFIX}: The provided value is not of type 'ProfilerInitOptions'.`)
  }
  const maxBufferSize = toUnsignedLong(required(options, 'maxBufferSize'))
  const sampleInterval = toDouble(required(options, 'sampleInterval'), 'sampleInterval')
  if (sampleInterval < 0) throw new RangeError(`${PREFIX}: Invalid sample interval`)
  return { maxBufferSize, sampleInterval }
}

/** What Chrome throws when a DOM constructor is called without `new`. */
function notAFunctionCall() {
  return new TypeError(
    `${PREFIX}: Please use the 'new' operator, this DOM object constructor cannot be called as a function.`,
  )
}

module.exports = { convertProfilerInitOptions, notAFunctionCall, toUnsignedLong, toDouble }
