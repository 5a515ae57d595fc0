// Server throughput benchmark: the same small JSON API (bench/server/server.js, ~0.5 ms of CPU per
// request) under autocannon, once per profiling mode, modes alternated over rounds (A B C … A B C …),
// printing median req/s and the ratio to "no profiler". Then the main-thread figures of the sampler.
//
// Besides req/s, the server reports the CPU time of its whole process (all threads: V8's sampler
// thread, the thread pool) per request served: on a shared, noisy machine throughput swings with
// other load, CPU per request much less, and for a CPU-bound server none/mode is the throughput ratio.
//
// Why two processes: the server runs in a child process and autocannon in this one, so the load
// generator never shares the server's event loop (in one process, every profiler stall would also
// stall the client, and the client's own work would be counted as the server's). On a 2-core machine
// each process gets about one core; all modes share the same setup, so ratios compare like with like.
//
//   node bench/server/run.mjs [--duration 8] [--rounds 3] [--connections 10] [--modes none,continuous,…]
//       [--micro no]   (skip the main-thread figures after the table)
//   labels' cost, each labelled mode with its pair (see PAIRS below):
//   node bench/server/run.mjs --modes none,contnolabels,contlabels,otelnospans,otelspans,pyronolabels,pyrolabels,ddnolabels,ddlabels
//   REQ_INTERVAL=1 node bench/server/run.mjs …   (request modes at 1 ms instead of the default 10)

import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { createRequire } from 'node:module'
import { median } from '../stats.mjs'
import { verdict } from '../matrix/targets.mjs'
import { DD_TRACE, ddTrace } from './peers.mjs'
import { arg } from '../args.mjs'
import { ask, spanLabelsLine } from '../ipc.mjs'

const require = createRequire(import.meta.url)
const autocannon = require('autocannon')
const here = path.dirname(fileURLToPath(import.meta.url))

const DURATION = Number(arg('duration', 8))
const ROUNDS = Number(arg('rounds', 3))
const CONNECTIONS = Number(arg('connections', 10))
const LABELS = {
  none: 'no profiler',
  continuous: 'jsprof-node continuous, 10 ms',
  req10: `jsprof-node every 10th request (${process.env.REQ_INTERVAL || 10} ms)`,
  reqall: `jsprof-node every request (${process.env.REQ_INTERVAL || 10} ms)`,
  prof10: 'plain `new Profiler` around every 10th request (10 ms)',
  profall: 'plain `new Profiler` around every request (10 ms)',
  contlabels: 'jsprof-node continuous, 10 ms, every request labelled (profileRequests wrap, sampleRate 0)',
  contnolabels: 'jsprof-node continuous, 10 ms, profileRequests wrap, sampleRate 0, labels: false',
  pyrolabels: '@pyroscope/nodejs CPU profiling, every request in wrapWithLabels',
  pyronolabels: '@pyroscope/nodejs CPU profiling, no labels',
  ddlabels: 'dd-trace tracer + profiler, code hotspots and endpoint profiling on',
  ddnolabels: 'dd-trace tracer + profiler, code hotspots and endpoint profiling off',
  otelspans:
    'OpenTelemetry SDK (http server spans) + jsprof-node continuous, every request labelled with route and span ids',
  otelnospans:
    'OpenTelemetry SDK (http server spans) + jsprof-node continuous, every request labelled with route, no span',
  datadog: '@datadog/pprof continuous, 10 ms',
  sentry: '@sentry/profiling-node continuous, ~10 ms',
  // Diagnostics (not in the default run): --modes none,sampler1,sampler10,als,hook
  sampler1: '(diagnostic) sampler alone at 1 ms',
  sampler10: '(diagnostic) sampler alone at 10 ms',
  als: '(diagnostic) AsyncLocalStorage.run alone',
  hook: '(diagnostic) async hook + ALS alone',
  stalls: 'jsprof-node watchStalls alone (300 ms, no stall)',
  stallswarm: 'jsprof-node watchStalls with keepWarm (10 ms sampler)',
}
const DEFAULT_MODES = ['none', 'continuous', 'prof10', 'profall', 'req10', 'reqall', 'datadog', 'sentry']
let MODES = arg('modes', DEFAULT_MODES.join(',')).split(',')

function sentryCpuProfiler() {
  try {
    return require('@sentry/node-cpu-profiler')
  } catch {
    return require('@sentry-internal/node-cpu-profiler')
  }
}

/** Whether a peer can load here at all (prebuilt binary for this Node); the reason when not. */
function availability(mode) {
  try {
    if (mode === 'datadog') require('@datadog/pprof')
    if (mode.startsWith('pyro')) require('@pyroscope/nodejs')
    if (mode.startsWith('otel')) require('@opentelemetry/sdk-trace-node')
    if (mode === 'ddlabels' || mode === 'ddnolabels') {
      const version = DD_TRACE(Number(process.versions.node.split('.')[0]))
      process.env.DD_TRACE_MODULE ??= ddTrace(version)
      require(process.env.DD_TRACE_MODULE)
    }
    if (mode === 'sentry') sentryCpuProfiler().CpuProfilerBindings.startProfiling
    return null
  } catch (err) {
    return err.message.split('\n')[0]
  }
}
const unavailable = {}
for (const mode of MODES) {
  const why = availability(mode)
  if (why) unavailable[mode] = why
}
MODES = MODES.filter((m) => !unavailable[m])

function startServer(mode) {
  const child = fork(path.join(here, 'server.js'), [mode], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.stdout.once('data', (data) => resolve({ child, port: JSON.parse(data).port }))
  })
}

function load(port, seconds) {
  return autocannon({
    url: `http://127.0.0.1:${port}/api?q=7`,
    connections: CONNECTIONS,
    duration: seconds,
  })
}

async function measure(mode) {
  const { child, port } = await startServer(mode)
  await load(port, 1.5) // warm-up: JIT, first profiler start, first chunks
  child.send('measure')
  const result = await load(port, DURATION)
  const report = await ask(child, 'report')
  child.kill()
  return { rps: result.requests.average, errors: result.errors + result.non2xx, report }
}

console.log(
  `# server throughput: ${ROUNDS} rounds x ${MODES.length} modes, ${DURATION} s each, ${CONNECTIONS} connections, loopback`,
)
const results = Object.fromEntries(MODES.map((m) => [m, []]))
const reports = Object.fromEntries(MODES.map((m) => [m, []]))
for (let round = 0; round < ROUNDS; round++) {
  // Rotate the order each round so no mode always runs first/last.
  const order = MODES.map((_, i) => MODES[(i + round) % MODES.length])
  for (const mode of order) {
    const { rps, errors, report } = await measure(mode)
    results[mode].push(rps)
    reports[mode].push(report)
    console.log(
      `  round ${round + 1} ${mode.padEnd(10)} ${rps.toFixed(0).padStart(6)} req/s${errors ? ` (${errors} errors)` : ''}`,
    )
  }
}

const base = median(results.none || [NaN])
const cpu = (mode) => median(reports[mode].map((r) => r.cpuUsPerRequest))
// Each round runs every mode back to back, so a mode's ratio within its round is compared with a
// "no profiler" run made moments before or after it: the median of those paired ratios follows the
// profiler's cost, not the drift of whatever else the shared machine is doing between rounds.
const paired = (mode, value) => median(results[mode].map((_, round) => value(mode, round) / value('none', round)))
const rpsOf = (mode, round) => results[mode][round]
const cpuOf = (mode, round) => 1 / reports[mode][round].cpuUsPerRequest
console.log(
  '\n| mode | median req/s | ratio to no profiler (median of rounds) | paired ratio (median of per-round ratios) | CPU µs/request (all threads) | CPU ratio (none/mode, paired) | max event-loop delay ms |',
)
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
for (const mode of MODES) {
  const rps = median(results[mode])
  const maxDelay = median(reports[mode].map((r) => r.maxEventLoopDelayMs))
  const pair = results.none ? paired(mode, rpsOf).toFixed(3) + 'x' : '-'
  const cpuPair = results.none ? paired(mode, cpuOf).toFixed(3) + 'x' : '-'
  console.log(
    `| ${LABELS[mode]} | ${rps.toFixed(0)} | ${(rps / base).toFixed(3)}x | ${pair} | ${cpu(mode).toFixed(0)} | ${cpuPair} | ${maxDelay.toFixed(1)} |`,
  )
}
// A mode and its pair (the same setup without labels, or without span ids): the labels' cost, paired
// per round as above (median of the per-round CPU-per-request ratios mode/pair; > 1: the mode costs more).
const PAIRS = {
  contlabels: 'contnolabels',
  pyrolabels: 'pyronolabels',
  ddlabels: 'ddnolabels',
  otelspans: 'otelnospans',
}
for (const [mode, pair] of Object.entries(PAIRS)) {
  if (!reports[mode] || !reports[pair]) continue
  const ratios = reports[mode].map((r, round) => r.cpuUsPerRequest / reports[pair][round].cpuUsPerRequest)
  const spread = `${Math.min(...ratios).toFixed(3)}..${Math.max(...ratios).toFixed(3)}`
  console.log(
    `pair ${mode} / ${pair}: CPU per request ${median(ratios).toFixed(3)}x (paired median of ${ratios.length} rounds, range ${spread})`,
  )
}
for (const mode of ['otelspans', 'otelnospans']) {
  const line = spanLabelsLine(mode, reports[mode]?.at(-1))
  if (line) console.log(line)
}
if (reports.ddlabels || reports.ddnolabels)
  console.log(`dd-trace ${(reports.ddlabels || reports.ddnolabels)[0].ddTrace}`)
// Issue 9's targets for the plain Profiler per request (the matrix's, bench/matrix/targets.mjs), judged
// on the paired req/s ratios.
if (results.none) {
  for (const mode of ['prof10', 'profall']) {
    if (!results[mode]) continue
    const r = paired(mode, rpsOf)
    const c = paired(mode, cpuOf)
    const v = verdict(mode, r)
    console.log(
      `target ${LABELS[mode]}: >= ${v.target.toFixed(2)}x -> req/s ${r.toFixed(3)}x, CPU ${c.toFixed(3)}x: ${v.met ? 'met' : 'NOT met'}`,
    )
  }
}
for (const [mode, why] of Object.entries(unavailable)) console.log(`| ${LABELS[mode]} | unavailable | ${why} | |`)
const ours = reports.continuous && reports.continuous[0]
if (ours) {
  const worst = Math.max(...reports.continuous.map((r) => r.sampler.harvestMsMax))
  console.log(
    `\ncontinuous under load: longest harvest (main thread) ${worst.toFixed(2)} ms, ${reports.continuous[0].sampler.harvests} harvests per run`,
  )
}
if (ours)
  console.log(
    `continuous: chunks encoded to pprof: ${ours.ourChunksEncoded ? 'yes (toPprof)' : 'no (lib/api/export.js toPprof not present: traces only)'}`,
  )
if (reports.req10) console.log(`every 10th request: ${JSON.stringify(reports.req10.at(-1).stats)}`)
for (const mode of ['prof10', 'profall']) {
  if (!reports[mode]) continue
  // stop() latency: from the call to the resolved trace (ms), medians of the rounds' percentiles.
  const ms = (key) => median(reports[mode].map((r) => r.stopMs[key])).toFixed(1)
  const { harvests, coldStarts, restarts, harvestMsTotal } = reports[mode].at(-1).sampler
  console.log(
    `${LABELS[mode]}: stop() latency p50 ${ms('p50')} ms, p99 ${ms('p99')} ms, max ${ms('max')} ms; ` +
      `last round: ${harvests} harvests (${(harvestMsTotal / harvests).toFixed(2)} ms main thread each), ${coldStarts} cold starts, ${restarts} restarts`,
  )
}

// --- main-thread figures, each in a fresh process with no load (--micro no: skip them) -----------
if (arg('micro', 'yes') === 'no') process.exit(0)
const micro = fork(path.join(here, 'micro.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
await new Promise((resolve) => micro.on('exit', resolve))
