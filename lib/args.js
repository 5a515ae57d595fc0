'use strict'
// The numeric options of the production APIs (profileRequests, startContinuous, pyroscopeExporter):
// one check, one message shape.

/** `options[name]` (or `fallback` when absent): a number in [min, max], else a RangeError naming `api`. */
function numberOption(api, options, name, fallback, min, max) {
  const value = options[name] === undefined ? fallback : options[name]
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    throw new RangeError(`${api}: ${name} must be a number in [${min}, ${max}], got ${String(value)}`)
  }
  return value
}

module.exports = { numberOption }
