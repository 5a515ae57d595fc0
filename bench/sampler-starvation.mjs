// Does V8 sample right after a harvest, on a loaded machine, with the bridge (a console.profile keeps
// V8's CpuProfiler alive over the restart) and without it (under NODE_V8_COVERAGE, --cpu-prof or an
// open inspector the engine restarts V8 fully)? The workload of faults.spec's "under NODE_V8_COVERAGE"
// test: per round a 1 ms and a 2 ms Profiler, 15 ms of burning, stop one, 15 ms more, stop the other;
// four rounds per child process, children run three at a time (as `npm test` runs files), modes
// alternated. Each child wraps the engine's V8 session to see what V8 itself handed out, so the table
// tells "V8 took no sample" (its sampler thread starved) from "we lost a sample V8 took" (counted as
// lost: it must stay 0).
//
//   node bench/sampler-starvation.mjs [--children 24] [--load 2]
//
// --load N adds N busy-looping processes for the run (the machine is shared; say what the load was).

import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg } from './args.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const CHILDREN = Number(arg('children', 24))
const LOAD = Number(arg('load', 0))

const CHILD = `
const root = ${JSON.stringify(root)}
const { Profiler } = require(root)
const { getSampler } = require(root + '/lib/sampler/index.js')
const { timeOriginUs } = require(root + '/lib/clock.js')
const burn = (ms) => { const end = performance.now() + ms; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); return x }
const v8 = []
const returned = []
const session = getSampler().session
for (const m of ['take', 'stop']) {
  const own = session[m].bind(session)
  session[m] = () => {
    const taken = own()
    returned.push(performance.now())
    for (const p of taken) { let t = p.startTime; for (const d of p.timeDeltas || []) v8.push(((t += d) - timeOriginUs()) / 1000) }
    return taken
  }
}
;(async () => {
  const traces = []
  for (let round = 0; round < 4; round++) {
    const a = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 }); const aFrom = performance.now()
    const b = new Profiler({ sampleInterval: 2, maxBufferSize: 100000 }); const bFrom = performance.now()
    burn(15)
    const bTo = performance.now(); const tb = await b.stop()
    traces.push({ interval: 2, from: bFrom, to: bTo, times: tb.samples.map((s) => s.timestamp) })
    burn(15)
    const aTo = performance.now(); const ta = await a.stop()
    traces.push({ interval: 1, from: aFrom, to: aTo, times: ta.samples.map((s) => s.timestamp) })
  }
  const own = getSampler().stats.recentOwnWindows.map((w) => w.map((us) => (us - timeOriginUs()) / 1000))
  process.stdout.write(JSON.stringify({ traces, v8, returned, own, stats: session.stats }) + '\\n')
})()
`

function child(mode) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-starve-'))
  const env = { ...process.env }
  if (mode === 'bridgeless') env.NODE_V8_COVERAGE = dir
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['-e', CHILD], { env })
    let out = ''
    p.stdout.on('data', (d) => (out += d))
    p.on('close', () => {
      fs.rmSync(dir, { recursive: true, force: true })
      try {
        resolve(JSON.parse(out))
      } catch {
        resolve(null)
      }
    })
  })
}

const results = { bridged: [], bridgeless: [] }
const loaders = Array.from({ length: LOAD }, () => spawn(process.execPath, ['-e', 'for(;;){}']))
const loadBefore = os.loadavg()[0]
try {
  for (let i = 0; i < CHILDREN; i += 3) {
    for (const mode of i % 2 ? ['bridgeless', 'bridged'] : ['bridged', 'bridgeless']) {
      results[mode].push(...(await Promise.all([child(mode), child(mode), child(mode)])))
    }
  }
} finally {
  for (const l of loaders) l.kill()
}
const loadAfter = os.loadavg()[0]

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : NaN
}
console.log(
  `load average ${loadBefore.toFixed(1)} -> ${loadAfter.toFixed(1)}, ${os.cpus().length} cores, extra busy loops: ${LOAD}`,
)
console.log(
  '| mode | Profilers | empty traces | ... of which V8 took no sample | samples V8 took that a trace lost | first V8 sample after a harvest returned: median / p90 / max |',
)
console.log('| --- | --- | --- | --- | --- | --- |')
for (const mode of ['bridged', 'bridgeless']) {
  let profilers = 0
  let empty = 0
  let starved = 0
  let lost = 0
  const delays = []
  for (const r of results[mode].filter(Boolean)) {
    const ours = (x) => r.own.some(([from, to]) => x >= from - 0.001 && x <= to + 0.001)
    for (const t of r.traces) {
      profilers++
      const taken = r.v8.filter((x) => x > t.from && x < t.to && !ours(x))
      const kept = new Set(t.times.map((x) => Math.round(x * 1000)))
      if (t.interval === 1) lost += taken.filter((x) => !kept.has(Math.round(x * 1000))).length
      else if (taken.length > 0 && t.times.length === 0) lost++
      if (t.times.length === 0) {
        empty++
        if (taken.length === 0) starved++
      }
    }
    const sorted = [...r.v8].sort((a, b) => a - b)
    for (const end of r.returned) {
      const next = sorted.find((x) => x > end)
      if (next !== undefined && next - end < 500) delays.push(next - end)
    }
  }
  const ms = (x) => `${x.toFixed(1)} ms`
  console.log(
    `| ${mode} | ${profilers} | ${empty} | ${starved} | ${lost} | ${ms(pct(delays, 0.5))} / ${ms(pct(delays, 0.9))} / ${ms(pct(delays, 1))} |`,
  )
}
