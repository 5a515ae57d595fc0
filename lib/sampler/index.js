'use strict'
// This thread's sampler: the engine (sampler/engine.js: when to harvest, who gets which samples)
// driving V8 through node:inspector (sampler/inspector-session.js). Each worker loads its own copy of
// this module, so each thread has its own.

const { SamplerEngine } = require('./engine')
const { InspectorSession, InspectorUnavailableError, packColumns } = require('./inspector-session')
const { Subscription } = require('./subscription')
const { effectiveIntervalUs, MIN_INTERVAL_US, MAX_V8_INTERVAL_US } = require('./schedule')

// Captured at load: the V8 console methods the bridge uses, before anything can replace them.
const v8Console = { profile: console.profile, profileEnd: console.profileEnd }

let threadSampler = null
/**
 * This thread's sampler engine (created on first use; the inspector connects on the first start).
 * `options` (schedule.DEFAULTS overrides) apply when this call creates it: `jsprof record`'s preload,
 * which runs before the app, sets its harvest period so.
 */
function getSampler(options) {
  if (!threadSampler) {
    threadSampler = new SamplerEngine(
      new InspectorSession({ inspector: () => require('node:inspector'), console: v8Console }),
      options,
    )
  }
  return threadSampler
}

module.exports = {
  getSampler,
  Subscription,
  effectiveIntervalUs,
  packColumns,
  MIN_INTERVAL_US,
  MAX_V8_INTERVAL_US,
  InspectorUnavailableError,
}
