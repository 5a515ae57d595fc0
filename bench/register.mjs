// What jsprof-node/register costs next to the same continuous profiling written by hand (issue 45),
// with the same Express 5 app (bench/register-app.cjs) loaded by autocannon from this process, each
// push going to a local OTLP sink here. Two sets (--set):
//   processes  three processes side by side, loaded in turns:
//              none      no profiler;
//              hand      startContinuous at 10 ms + otlpExporter + profileRequests({ sampleRate: 0 })
//                        .express() labelling every request, written in the app as docs/production.md shows;
//              register  no code: `node --require jsprof-node/register` with OTEL_EXPORTER_OTLP_ENDPOINT
//                        and JSPROF_CHUNK_SECONDS (every request labelled through Node's diagnostics channel).
//              The whole of each; but apart processes differ by a few % on a shared machine.
//   switch     one process (register-app.cjs switch): hand's continuous profiling and exporter, each
//              request labelled by the hand-written middleware or by the register's own adapter, in
//              turns: the part of the register that differs per request, on one JIT state and heap.
// Each round loads every mode for a slice, in a rotated order, and pairs the slices of one round: the
// slow swings of a shared machine hit both sides of a pair alike. CPU time per request (all threads of
// the app process) is the figure (none/mode is the throughput ratio of a CPU-bound server). Prints the
// median ratio of each pair of modes with its ~95% interval, the pushes each mode made, the load average.
//
//   node bench/register.mjs [--set processes|switch] [--rounds 16] [--slice 3] [--warmup 4]
//     [--settle 0.25] [--connections 10] [--chunk 10]

import { fork } from 'node:child_process'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { median, medianInterval } from './stats.mjs'
import { arg, num } from './args.mjs'

const require = createRequire(import.meta.url)
const autocannon = require('autocannon')
const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..')
const SET = arg('set', 'processes')
if (SET !== 'processes' && SET !== 'switch') throw new Error(`--set: processes or switch, got ${SET}`)
const ROUNDS = num('rounds', 16)
const SLICE = num('slice', 3)
const WARMUP = num('warmup', 4)
/** Seconds a switched mode runs before its slice is measured. */
const SETTLE = num('settle', 0.25)
const CONNECTIONS = num('connections', 10)
const CHUNK = num('chunk', 10)

// The OTLP sink: answers every push at once, counts them by the mode that sent them.
const pushes = {}
const sink = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    const who = req.headers['x-bench-mode'] ?? '?'
    pushes[who] = (pushes[who] ?? 0) + 1
    res.end()
  })
})
await new Promise((resolve) => sink.listen(0, '127.0.0.1', resolve))
const sinkUrl = `http://127.0.0.1:${sink.address().port}`

const handEnv = { OTLP_URL: sinkUrl, CHUNK_SECONDS: String(CHUNK) }
const PROCESSES = {
  none: { args: ['none'], execArgv: [], env: {} },
  hand: { args: ['hand'], execArgv: [], env: handEnv },
  register: {
    args: ['none'],
    execArgv: ['--require', 'jsprof-node/register'],
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-bench-mode=register',
      OTEL_SERVICE_NAME: 'bench-register',
      JSPROF_CHUNK_SECONDS: String(CHUNK),
    },
  },
}

/** Starts an app process; resolves with { child, port, question }. */
function start({ args, execArgv, env }) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OTEL_|PYROSCOPE_|JSPROF_)/.test(k)))
  const child = fork(path.join(here, 'register-app.cjs'), args, {
    cwd: root,
    execArgv,
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  })
  const question = (message) =>
    new Promise((resolve) => {
      child.once('message', resolve)
      child.send(message)
    })
  return new Promise((resolve) =>
    child.stdout.once('data', (data) => resolve({ child, port: JSON.parse(data).port, question })),
  )
}

// The app each mode is measured on, and how to put it in that mode (nothing for a process of its own).
const apps = {}
if (SET === 'processes') {
  for (const [name, mode] of Object.entries(PROCESSES)) apps[name] = { ...(await start(mode)), enter: async () => {} }
} else {
  const shared = await start({ args: ['switch'], execArgv: [], env: handEnv })
  for (const name of ['hand', 'register']) {
    apps[name] = {
      ...shared,
      async enter() {
        await shared.question({ switchTo: name })
        await new Promise((resolve) => setTimeout(resolve, SETTLE * 1000))
      },
    }
  }
}

const paths = [{ path: '/search?q=3' }, { path: '/items/42' }]
const load = (port, seconds) =>
  autocannon({ url: `http://127.0.0.1:${port}`, connections: CONNECTIONS, duration: seconds, requests: paths })

for (const app of Object.values(apps)) {
  await app.enter()
  await load(app.port, WARMUP)
}

const names = Object.keys(apps)
const figures = Object.fromEntries(names.map((n) => [n, []]))
for (let round = 0; round < ROUNDS; round++) {
  const order = names.map((_, i) => names[(i + round) % names.length])
  for (const name of order) {
    const app = apps[name]
    await app.enter()
    await app.question('measure')
    await load(app.port, SLICE)
    figures[name].push(await app.question('report'))
  }
  process.stderr.write(`round ${round + 1}/${ROUNDS}\r`)
}

const cpu = (name, i) => figures[name][i].cpuUsPerRequest
/** Per round: `a`'s CPU per request over `b`'s (above 1: `a` costs more). */
const ratios = (a, b) => figures[a].map((_, i) => cpu(a, i) / cpu(b, i))
const show = (xs) => {
  const interval = medianInterval(xs)
  return `${median(xs).toFixed(4)} [${interval ? interval.map((x) => x.toFixed(4)).join(', ') : 'n/a'}]`
}
console.log(
  `--set ${SET}: node ${process.version}, ${ROUNDS} rounds × ${SLICE} s slices, ` +
    `${CONNECTIONS} connections, chunks of ${CHUNK} s`,
)
for (const name of names) {
  const us = figures[name].map((f) => f.cpuUsPerRequest)
  const rps = figures[name].map((f) => f.requestsPerSecond)
  console.log(`${name.padEnd(9)} CPU/request ${median(us).toFixed(1)} µs, ${median(rps).toFixed(0)} req/s (medians)`)
}
console.log(`register / hand (CPU per request, paired per round): ${show(ratios('register', 'hand'))}`)
if (apps.none) {
  console.log(`hand / none:                                        ${show(ratios('hand', 'none'))}`)
  console.log(`register / none:                                    ${show(ratios('register', 'none'))}`)
}
const load1 = os
  .loadavg()
  .map((x) => x.toFixed(2))
  .join(' ')
console.log(`pushes received: ${JSON.stringify(pushes)}; load average ${load1}`)

for (const child of new Set(Object.values(apps).map((a) => a.child))) child.kill()
sink.close()
