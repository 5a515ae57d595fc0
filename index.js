'use strict'
// jsprof-node: the JS Self-Profiling API for Node.js. Each lib/ module is one concept; this file
// only gathers what is public.

const { Profiler } = require('./lib/profiler')
const { fromCpuProfile } = require('./lib/cpuprofile')
const { attribute, summarize } = require('./lib/analysis')
const {
  toCpuProfile,
  toGeckoProfile,
  toSpeedscope,
  toPprof,
  toOtlpProfiles,
  toCollapsed,
  toFlameGraph,
} = require('./lib/export')
const { profileRequests } = require('./lib/requests')
const { startContinuous } = require('./lib/continuous')
const { pyroscopeExporter, otlpExporter } = require('./lib/backend')
const { resolveSourceMaps } = require('./lib/sourcemaps')

module.exports = {
  Profiler,
  fromCpuProfile,
  attribute,
  summarize,
  toCpuProfile,
  toGeckoProfile,
  toSpeedscope,
  toPprof,
  toOtlpProfiles,
  toCollapsed,
  toFlameGraph,
  profileRequests,
  startContinuous,
  pyroscopeExporter,
  otlpExporter,
  resolveSourceMaps,
}
