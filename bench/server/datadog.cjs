'use strict'
// dd-trace as the benchmarks' servers start it (bench/server/server.js, bench/matrix/server.js): its
// tracer on, its profiler on at its defaults (wall and CPU time), to an agent that is not there (a dead
// local port: exports fail quietly); `labels`: code hotspots and endpoint collection on (its profiler's
// context per span and endpoint: Datadog's labels) or off (the pair without). Call it before node:http
// is loaded, as its users do. `module`: the directory dd-trace was installed into (bench/server/peers.mjs).

function startDatadog(module, { labels, uploadSeconds }) {
  const on = String(labels)
  Object.assign(process.env, {
    DD_TRACE_AGENT_URL: 'http://127.0.0.1:9',
    DD_PROFILING_ENABLED: 'true',
    DD_PROFILING_CODEHOTSPOTS_ENABLED: on,
    DD_PROFILING_ENDPOINT_COLLECTION_ENABLED: on,
    DD_PROFILING_UPLOAD_PERIOD: String(uploadSeconds),
    DD_TRACE_STARTUP_LOGS: 'false',
    DD_INSTRUMENTATION_TELEMETRY_ENABLED: 'false',
    DD_REMOTE_CONFIGURATION_ENABLED: 'false',
    DD_RUNTIME_METRICS_ENABLED: 'false',
  })
  require(module).init({
    logLevel: 'error',
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  })
}

module.exports = { startDatadog }
