// Modes measured in ONE server process whose mode changes between slices, so that every mode runs on
// the same JIT state and heap and the paired ratios show what a mode adds, without the
// process-to-process variance that run.mjs's one-process-per-mode rounds carry (a few % on this VM,
// more than some bounds). Sets (--set):
//   plain  (server.js 'switch'): no profiler, V8 sampling alone at 10 ms (one long Profiler), a
//          Profiler around every 10th request, around every request. "No profiler" rounds wait past
//          the sampler's 2 s warm grace first, so V8 is really stopped in them.
//   labels (server.js 'labelswitch'): continuous 10 ms with profileRequests on every request, its
//          labels off (hooks and storage switched off too, as in a process that never labelled) and on:
//          run.mjs's contnolabels / contlabels pair (issue 25's bound); and (a diagnostic) the
//          labels' hooks alone, to split their cost between the hooks and each request's own part.
//   spans  (server.js 'otelswitch'): the OpenTelemetry SDK tracing every request, labels without and
//          with span ids: run.mjs's otelnospans / otelspans pair.
//   requests (server.js 'reqswitch'): every 10th request profiled by a plain Profiler, by
//          profileRequests at its defaults (labels on), by Sentry's native profiler per transaction,
//          and none: the matrix's prof10 / req10 / sentry10 in one process (issue 41's req10 >= 0.95x,
//          ahead of Sentry).
// The first mode of a set (or of --modes) is its baseline. The load runs all along; the modes take
// turns in short slices (rounds alternate their order), each paired with its round's baseline slice,
// so the slow swings of a shared machine's speed hit both sides of a pair alike.
//
//   node bench/server/in-process.mjs [--set plain|labels|spans|requests] [--modes a,b] [--rounds 20]
//     [--slice 1] [--settle 0.25] [--warmup 3] [--connections 10]

import { fork } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median, medianInterval, spread } from '../stats.mjs'
import { arg, list, num } from '../args.mjs'
import { ask, spanLabelsLine } from '../ipc.mjs'

const require = createRequire(import.meta.url)
const autocannon = require('autocannon')
const here = path.dirname(fileURLToPath(import.meta.url))
const ROUNDS = num('rounds', 20)
/** Seconds each slice is measured, after SETTLE seconds in its mode. */
const SLICE = num('slice', 1)
const SETTLE = num('settle', 0.25)
const WARMUP = num('warmup', 3)
const CONNECTIONS = num('connections', 10)
const SETS = {
  plain: {
    server: 'switch',
    modes: {
      none: 'no profiler',
      sampler10: 'V8 sampling alone at 10 ms (one long Profiler)',
      prof10: 'plain `new Profiler` around every 10th request',
      profall: 'plain `new Profiler` around every request',
    },
  },
  labels: {
    server: 'labelswitch',
    modes: {
      nolabels: 'continuous 10 ms, `profileRequests({ labels: false })` on every request',
      labels: 'the same, every request labelled with its method and route',
      hook: '(diagnostic) labels off, their async hooks on: every callback dispatched, none labelled',
    },
    // Issue 41 (after 25's 5%): labelling every request costs ≤ 2% CPU per request on Node 24/26, ≤ 4%
    // on Node 20/22.
    bounds: { labels: (major) => (major >= 24 ? 2 : 4) },
  },
  requests: {
    server: 'reqswitch',
    modes: {
      none: 'no profiler',
      prof10: 'plain `new Profiler` around every 10th request',
      req10: '`profileRequests()` at its defaults: every 10th request, labels on',
      sentry10: "Sentry's native profiler around every 10th request",
    },
    // Issue 41: req10 >= 0.95x CPU per request (at most +5.3% over none).
    bounds: { req10: () => 5.3 },
  },
  spans: {
    server: 'otelswitch',
    modes: {
      nospans: 'OpenTelemetry SDK, labelled requests run outside their span (no span ids)',
      spans: 'the same with span ids (`span_id`, `trace_id`, `span_name`)',
    },
    // Issue 25: with the OpenTelemetry SDK installed, span ids cost ≤ 1% more.
    bounds: { spans: () => 1 },
  },
}
const SET = arg('set', 'plain')
if (!SETS[SET]) throw new Error(`--set: one of ${Object.keys(SETS).join(', ')}, got ${SET}`)
const { server, modes: LABELS } = SETS[SET]
const MODES = list('modes', Object.keys(LABELS).join(','))
if (MODES.some((m) => !LABELS[m])) throw new Error(`--modes: of ${Object.keys(LABELS).join(', ')}, got ${MODES}`)
const BASE = MODES[0]

const child = fork(path.join(here, 'server.js'), [server], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
const port = await new Promise((resolve) => child.stdout.once('data', (data) => resolve(JSON.parse(data).port)))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

console.log(
  `# node ${process.version}, set ${SET}: one server process under one steady load (${CONNECTIONS} connections), ` +
    `its mode switched every slice: ${ROUNDS} rounds x ${MODES.length} modes, ${SLICE} s measured each`,
)
// One load for the whole run: the load generator's own start-up stays out of the slices, and slices
// next to each other in time see the same neighbours on this shared machine.
const loader = autocannon(
  { url: `http://127.0.0.1:${port}/api?q=7`, connections: CONNECTIONS, duration: 1e6 },
  () => {},
)
await ask(child, { switchTo: MODES[MODES.length - 1] })
await sleep(WARMUP * 1000) // JIT, the first V8 start
const results = Object.fromEntries(MODES.map((m) => [m, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 ? [...MODES].reverse() : MODES) {
    await ask(child, { switchTo: mode })
    await sleep(mode === 'none' ? 2500 : SETTLE * 1000) // settle; for none, past the warm grace
    child.send('measure')
    await sleep(SLICE * 1000)
    const report = await ask(child, 'report')
    results[mode].push({ rps: report.requestsPerSecond, cpu: report.cpuUsPerRequest, report })
  }
}
loader.stop()
child.kill()

const pairs = (mode, f) => results[mode].map((r, i) => f(r, results[BASE][i]))
const withSpread = (xs) => `${median(xs).toFixed(3)}x (${spread(xs, 3)})`
console.log(`\n| mode | CPU µs/request | paired req/s ratio | paired CPU ratio (${BASE}/mode) |`)
console.log('| --- | ---: | ---: | ---: |')
for (const mode of MODES) {
  const cpus = results[mode].map((r) => r.cpu)
  const rps = withSpread(pairs(mode, (r, n) => r.rps / n.rps))
  const cpu = withSpread(pairs(mode, (r, n) => n.cpu / r.cpu))
  console.log(`| ${LABELS[mode]} | ${median(cpus).toFixed(1)} (${spread(cpus, 1)}) | ${rps} | ${cpu} |`)
}
for (const mode of MODES) {
  const line = spanLabelsLine(mode, results[mode].at(-1).report)
  if (line) console.log(line)
}
// The cost as the bounds read it: CPU per request over the baseline's, the median of the rounds' pairs,
// with a ~95% interval of that median; a bound is shown met (or missed) only when the whole interval
// is below (or above) it.
const major = Number(process.versions.node.split('.')[0])
const signed = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}%`
for (const mode of MODES.slice(1)) {
  const over = pairs(mode, (r, n) => (r.cpu / n.cpu - 1) * 100)
  const interval = medianInterval(over)
  const bound = SETS[SET].bounds?.[mode]?.(major)
  const verdict =
    bound === undefined || interval === null
      ? ''
      : `; bound ≤ ${bound}%: ${interval[1] <= bound ? 'met' : interval[0] > bound ? 'missed' : 'not shown either way'}`
  const parts = [`rounds ${spread(over, 1)}`]
  if (interval) parts.unshift(`95% interval of the median ${signed(interval[0])} to ${signed(interval[1])}`)
  console.log(`${mode} over ${BASE}: CPU per request ${signed(median(over))} (${parts.join('; ')})${verdict}`)
}
