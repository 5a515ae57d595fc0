// What V8's inlining off costs (issue 43: HeapProfiler({ inlining: false }), `jsprof record --heap`'s
// default; docs/heap.md#inlining-off), on real programs, each figure beside a baseline of the same run:
//
// CPU time (user + system), not wall time: on a machine shared with other work, wall time measures the
// other work as much as this. Both the process's (V8's compiler threads included: inlining makes
// TurboFan's work larger) and the main thread's (the program's JavaScript and its GC).
//
//   tsc   tsc --noEmit on zod's sources (the devDependencies), whole runs, ROUNDS alternated rounds:
//           heap          a HeapProfiler (inlining as usual) from the start: the baseline
//           noinline      HeapProfiler({ inlining: false }) from the start to the end
//           noinline-then-off  the same until the process has used 3 s of CPU, then stopped (flags
//                         back on; the code optimized meanwhile keeps no inlining until V8 drops it)
//           noinline-then-off+deopt  the same, and the code deoptimized once more when it stops (V8
//                         optimizes it again, inlining): what a second deoptimization would buy
//         and the switch itself: the main-thread time of the constructor (flags + deoptimization)
//         once tsc has used 3 s of CPU, and V8's used heap before and after it.
//   express   an Express 5 server (body-parser's JSON, a route with a parameter, ~0.3 ms of work per
//         request) under autocannon (10 connections) for 36 s: the server main thread's CPU time per request in
//         windows of the run (from /proc, Linux) — 0-12 s warm, the mode on at 12 s
//         (HeapProfiler({ inlining: false })), off at 24 s; beside a run whose HeapProfiler keeps
//         inlining, and one that deoptimizes again when it stops.
//
//   node bench/heap-inlining.mjs        BENCH_ROUNDS=3, BENCH_ONLY=tsc,express
// Prints figures (median and range over rounds); asserts nothing.
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { median, medianSpread, loadAvg } from './stats.mjs'
import { zodProject } from './real-programs.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3)
const ONLY = new Set((process.env.BENCH_ONLY || 'tsc,express').split(','))
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-bench-heap-inlining-'))

// The preload of every mode: JSPROF_MODE says what, JSPROF_OUT where the switch's figures go. tsc runs
// synchronously from start to end (no timer of its fires): what happens mid-run is called from a
// worker thread through the inspector (a V8 interrupt of the main thread), once the process has used
// AT_CPU_MS of CPU.
const PRELOAD = path.join(tmp, 'preload.cjs')
const AT_CPU_MS = 3000
fs.writeFileSync(
  PRELOAD,
  `'use strict'
const { HeapProfiler } = require(${JSON.stringify(root)})
const fs = require('node:fs')
const inspector = require('node:inspector')
const v8 = require('node:v8')
const { Worker } = require('node:worker_threads')
const mode = process.env.JSPROF_MODE
// The main thread's CPU ms at exit (its JavaScript and GC, not V8's compiler threads), for the bench.
if (process.env.JSPROF_MAIN_CPU) {
  process.on('exit', () => {
    const stat = fs.readFileSync('/proc/self/task/' + process.pid + '/stat', 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    fs.writeFileSync(process.env.JSPROF_MAIN_CPU, String(((Number(f[11]) + Number(f[12])) * 1000) / 100))
  })
}
const deoptimize = () => {
  const s = new inspector.Session()
  s.connect()
  const post = (m, p) => s.post(m, p, () => {})
  post('Profiler.enable')
  post('Profiler.startPreciseCoverage', { callCount: false, detailed: false })
  post('Profiler.disable')
  s.disconnect()
}
const start = (options) => {
  const used = v8.getHeapStatistics().used_heap_size
  const t = performance.now()
  const heap = new HeapProfiler(options)
  const ms = performance.now() - t
  if (process.env.JSPROF_OUT) {
    fs.writeFileSync(process.env.JSPROF_OUT, JSON.stringify({ ms, before: used, after: v8.getHeapStatistics().used_heap_size }))
  }
  return heap
}
/** Calls globalThis.__jsprofAt() on this thread once the process has used \`cpuMs\` ms of CPU. */
const atCpu = (cpuMs, fn) => {
  globalThis.__jsprofAt = fn
  new Worker(\`
const inspector = require('node:inspector')
const poll = setInterval(() => {
  const { user, system } = process.cpuUsage()
  if ((user + system) / 1000 < \${cpuMs}) return
  clearInterval(poll)
  const s = new inspector.Session()
  s.connectToMainThread()
  s.post('Runtime.evaluate', { expression: 'globalThis.__jsprofAt()' }, () => s.disconnect())
}, 20)\`, { eval: true }).unref()
}
if (mode === 'heap') start({})
else if (mode === 'noinline') start({ inlining: false })
else if (mode === 'switch') atCpu(${AT_CPU_MS}, () => start({ inlining: false }))
else if (mode.startsWith('noinline-then-off')) {
  const heap = start({ inlining: false })
  atCpu(${AT_CPU_MS}, () => {
    heap.stop()
    if (mode.endsWith('+deopt')) deoptimize()
  })
} else if (mode.startsWith('timeline')) {
  // The Express timeline: on at 12 s, off at 24 s (timeline-inlining keeps V8's inlining).
  const options = mode === 'timeline-inlining' ? {} : { inlining: false }
  setTimeout(() => {
    const heap = start(options)
    setTimeout(() => {
      heap.stop()
      if (mode.endsWith('+deopt')) deoptimize()
    }, 12000).unref()
  }, 12000).unref()
}
`,
)

/**
 * CPU ms (user + system) of this process's waited-for children, or of thread `pid` of process `pid`
 * (its main thread; Linux, 10 ms steps).
 */
function cpuMs(pid = 'self', children = true) {
  try {
    const stat = fs.readFileSync(children ? `/proc/${pid}/stat` : `/proc/${pid}/task/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const [user, system] = children ? [f[13], f[14]] : [f[11], f[12]]
    return ((Number(user) + Number(system)) * 1000) / 100
  } catch {
    return NaN
  }
}

const range = (xs) => medianSpread(xs, 2)
const load = loadAvg

function tsc() {
  const dir = zodProject(path.join(tmp, 'zod'))
  const args = [require.resolve('typescript/lib/tsc.js'), '-p', dir]
  const modes = ['heap', 'noinline', 'noinline-then-off', 'noinline-then-off+deopt']
  const times = Object.fromEntries(modes.map((m) => [m, []]))
  const mains = Object.fromEntries(modes.map((m) => [m, []]))
  const mainFile = path.join(tmp, 'main-cpu')
  const switches = []
  console.log(`tsc --noEmit on zod's sources, ${ROUNDS} rounds (load before: ${load()})`)
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of modes) {
      const before = cpuMs()
      const r = spawnSync(process.execPath, ['-r', PRELOAD, ...args], {
        env: { ...process.env, JSPROF_MODE: mode, JSPROF_MAIN_CPU: mainFile },
      })
      if (![0, 2].includes(r.status)) throw new Error(`tsc (${mode}): exit ${r.status}\n${r.stderr}`)
      times[mode].push((cpuMs() - before) / 1000)
      mains[mode].push(Number(fs.readFileSync(mainFile, 'utf8')) / 1000)
    }
    const out = path.join(tmp, `switch-${round}.json`)
    spawnSync(process.execPath, ['-r', PRELOAD, ...args], {
      env: { ...process.env, JSPROF_MODE: 'switch', JSPROF_OUT: out },
    })
    if (fs.existsSync(out)) switches.push(JSON.parse(fs.readFileSync(out, 'utf8')))
  }
  for (const mode of modes) {
    const ratio = times[mode].map((t, i) => t / times.heap[i])
    const mainRatio = mains[mode].map((t, i) => t / mains.heap[i])
    console.log(
      `  ${mode.padEnd(24)} process CPU ${range(times[mode])} s (× ${range(ratio)} of heap's in the same round); ` +
        `main thread ${range(mains[mode])} s (× ${range(mainRatio)})`,
    )
  }
  if (switches.length > 0) {
    const mib = (b) => b / 1048576
    console.log(
      `  the switch after 3 s of tsc's CPU: ${range(switches.map((s) => s.ms))} ms of main thread; V8's used heap ` +
        `${range(switches.map((s) => mib(s.before)))} MiB before, ${range(switches.map((s) => mib(s.after)))} MiB after`,
    )
  }
  console.log(`  load after: ${load()}`)
}

const SERVER = path.join(tmp, 'server.cjs')
fs.writeFileSync(
  SERVER,
  `'use strict'
const express = require(${JSON.stringify(require.resolve('express'))})
const bodyParser = require(${JSON.stringify(require.resolve('body-parser'))})
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta']
const describe = (word, i, id) => {
  const parts = []
  for (let k = 0; k < 12; k++) parts.push(WORDS[(i * k + id) % WORDS.length] + ((i * 31 + k) % 97))
  return (word + ': ' + parts.join(' ')).toUpperCase()
}
const app = express()
app.use(bodyParser.json())
app.use((req, res, next) => { res.set('x-served-by', 'bench'); next() })
app.post('/items/:id', (req, res) => {
  const id = Number(req.params.id) || 0
  const items = []
  for (let i = 0; i < 150; i++) items.push({ i, id, name: describe(WORDS[i % 8], i, id), tags: [i % 3, i % 5] })
  res.json({ id, got: req.body, count: items.length, items })
})
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'))
`,
)

async function express() {
  const autocannon = require('autocannon')
  const modes = ['timeline-inlining', 'timeline', 'timeline+deopt']
  const SECONDS = 36
  const perSecond = Object.fromEntries(modes.map((m) => [m, []]))
  console.log(`Express under autocannon, ${ROUNDS} rounds (load before: ${load()})`)
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of modes) {
      const server = spawn(process.execPath, ['-r', PRELOAD, SERVER], {
        env: { ...process.env, JSPROF_MODE: mode },
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      const { port } = await new Promise((resolve) => server.stdout.once('data', (d) => resolve(JSON.parse(d))))
      const counts = new Array(SECONDS).fill(0)
      const cpu = new Array(SECONDS + 1).fill(NaN)
      const t0 = performance.now()
      cpu[0] = cpuMs(server.pid, false)
      // (the main thread's: the requests' JavaScript, not V8's compiler threads)
      const clock = setInterval(() => {
        const s = Math.round((performance.now() - t0) / 1000)
        if (s <= SECONDS) cpu[s] = cpuMs(server.pid, false)
      }, 1000)
      const instance = autocannon({
        url: `http://127.0.0.1:${port}/items/7`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user: 'u1', cart: [1, 2, 3], note: 'hello' }),
        connections: 10,
        duration: SECONDS,
      })
      instance.on('response', () => {
        const s = Math.floor((performance.now() - t0) / 1000)
        if (s < SECONDS) counts[s]++
      })
      await instance
      clearInterval(clock)
      if (Number.isNaN(cpu[SECONDS])) cpu[SECONDS] = cpuMs(server.pid, false)
      // A second the clock skipped (a late timer on a loaded machine): the CPU read just before it.
      for (let sec = 1; sec <= SECONDS; sec++) if (Number.isNaN(cpu[sec])) cpu[sec] = cpu[sec - 1]
      server.kill()
      perSecond[mode].push({ counts, cpu })
    }
  }
  const windows = [
    ['warm 6-12 s', 6, 12],
    ['on, 12-14 s', 12, 14],
    ['on, 14-24 s', 14, 24],
    ['off, 24-27 s', 24, 27],
    ['off, 27-36 s', 27, 36],
  ]
  // The server's CPU µs per request over [from, to) s (the CPU clock read about each second).
  const perRequest = ({ counts, cpu }, from, to) => {
    const requests = counts.slice(from, to).reduce((a, b) => a + b, 0)
    return ((cpu[to] - cpu[from]) * 1000) / requests
  }
  console.log("  the server main thread's CPU µs per request, median (range) over rounds:")
  for (const [name, from, to] of windows) {
    const cells = modes.map((m) => range(perSecond[m].map((r) => perRequest(r, from, to))))
    console.log(`  ${name.padEnd(14)} ${modes.map((m, i) => `${m}: ${cells[i]}`).join('   ')}`)
  }
  console.log('  requests each second (median over rounds):')
  for (const m of modes) {
    const med = Array.from({ length: SECONDS }, (_, s) => Math.round(median(perSecond[m].map((r) => r.counts[s]))))
    console.log(`    ${m.padEnd(18)} ${med.join(' ')}`)
  }
  console.log(`  load after: ${load()}`)
}

try {
  if (ONLY.has('tsc')) tsc()
  if (ONLY.has('express')) await express()
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}
