// The plain Profiler per request, measured in ONE server process whose mode changes between rounds
// (server.js 'switch'): no profiler, V8 sampling alone at 10 ms (one long Profiler), a Profiler
// around every 10th request, around every request. Every mode then runs on the same JIT state and
// heap, so the paired ratios show what the profiler adds, without the process-to-process variance
// that run.mjs's one-process-per-mode rounds carry (a few % on this VM). "No profiler" rounds wait
// past the sampler's 2 s warm grace first, so V8 is really stopped in them.
//
//   node bench/server/in-process.mjs [--rounds 6] [--duration 3] [--connections 10]

import { fork } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from '../stats.mjs'
import { num } from '../args.mjs'

const require = createRequire(import.meta.url)
const autocannon = require('autocannon')
const here = path.dirname(fileURLToPath(import.meta.url))
const ROUNDS = num('rounds', 6)
const DURATION = num('duration', 3)
const CONNECTIONS = num('connections', 10)
const MODES = ['none', 'sampler10', 'prof10', 'profall']
const LABELS = {
  none: 'no profiler',
  sampler10: 'V8 sampling alone at 10 ms (one long Profiler)',
  prof10: 'plain `new Profiler` around every 10th request',
  profall: 'plain `new Profiler` around every request',
}

const child = fork(path.join(here, 'server.js'), ['switch'], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
const port = await new Promise((resolve) => child.stdout.once('data', (data) => resolve(JSON.parse(data).port)))
const ask = (message) =>
  new Promise((resolve) => {
    child.once('message', resolve)
    child.send(message)
  })
const load = (seconds) =>
  autocannon({ url: `http://127.0.0.1:${port}/api?q=7`, connections: CONNECTIONS, duration: seconds })

console.log(
  `# one server process, modes switched per round: ${ROUNDS} rounds x ${MODES.length} modes, ${DURATION} s each`,
)
await ask({ switchTo: 'profall' })
await load(2) // warm-up: JIT, the first V8 start
const results = Object.fromEntries(MODES.map((m) => [m, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of round % 2 ? [...MODES].reverse() : MODES) {
    await ask({ switchTo: mode })
    await load(mode === 'none' ? 2.5 : 0.5) // settle; for none, past the warm grace
    child.send('measure')
    const r = await load(DURATION)
    const report = await ask('report')
    results[mode].push({ rps: r.requests.average, cpu: report.cpuUsPerRequest })
  }
}
child.kill()

const paired = (mode, f) => median(results[mode].map((r, i) => f(r, results.none[i])))
console.log('\n| mode | CPU µs/request | paired req/s ratio | paired CPU ratio (none/mode) |')
console.log('| --- | ---: | ---: | ---: |')
for (const mode of MODES) {
  const rps = paired(mode, (r, n) => r.rps / n.rps)
  const cpu = paired(mode, (r, n) => n.cpu / r.cpu)
  console.log(
    `| ${LABELS[mode]} | ${median(results[mode].map((r) => r.cpu)).toFixed(1)} | ${rps.toFixed(3)}x | ${cpu.toFixed(3)}x |`,
  )
}
