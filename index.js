const { attribute, summarize } = require('./lib/analysis')
const { toCpuProfile, toGeckoProfile, toSpeedscope, toPprof, toCollapsed, toFlameGraph } = require('./lib/export')

module.exports = {
  Profiler,
  fromCpuProfile,
  attribute,
  summarize,
  toCpuProfile,
  toGeckoProfile,
  toSpeedscope,
  toPprof,
  toCollapsed,
  toFlameGraph,
}
