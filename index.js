'use strict'
// jsprof-node: the JS Self-Profiling API for Node.js. The public API lives in lib/api/, one module (or
// folder) per exported family; this file only gathers what is public. Everything else in lib/ is internal.

const { Profiler } = require('./lib/api/profiler')
const { fromCpuProfile } = require('./lib/api/cpuprofile')
const { attribute, summarize } = require('./lib/api/analysis')
const {
  toCpuProfile,
  toGeckoProfile,
  toSpeedscope,
  toPprof,
  toOtlpProfiles,
  toCollapsed,
  toFlameGraph,
} = require('./lib/api/export')
const { profileRequests } = require('./lib/api/requests')
const { startContinuous } = require('./lib/api/continuous')
const { watchStalls } = require('./lib/api/stalls')
const { pyroscopeExporter, otlpExporter } = require('./lib/api/backend')
const { resolveSourceMaps } = require('./lib/api/sourcemaps')
const { HeapProfiler, fromHeapProfile, toHeapProfile } = require('./lib/api/heap')
const { withLabels, setLabels, getLabels } = require('./lib/labels')

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
  watchStalls,
  pyroscopeExporter,
  otlpExporter,
  resolveSourceMaps,
  HeapProfiler,
  fromHeapProfile,
  toHeapProfile,
  withLabels,
  setLabels,
  getLabels,
}
