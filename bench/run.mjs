// `npm run bench`: prints figures, asserts nothing about time (the machine may be shared and noisy).
//
//  1. Event-loop stalls: jsprof-node's Profiler vs a bare node:inspector session, same workload
//     (300 generated functions in a real module file), 1 ms sampling, modes alternated A B A B.
//  2. fromCpuProfile(jsonText) on multi-MB profiles (sample-heavy, node-heavy, BENCH_PROFILE=files) vs
//     JSON.parse(jsonText) alone and vs a straightforward JS conversion.
//  3. resolveSourceMaps: 10,000 frames across 200 files, cold and cached (bench/sourcemaps.mjs).
//  Then, each in processes of its own: deep stacks, large input, the per-request loop, the server
//  modes (bench/server/run.mjs and in-process.mjs), and labels' and span ids' cost per request.
//
// Environment knobs: BENCH_PROFILE (.cpuprofile files for part 2), BENCH_SECONDS (per profiled run, default 6), BENCH_ROUNDS (default 3),
// BENCH_REPS (fromCpuProfile repetitions, default 15), BENCH_ONLY=stall|convert|sourcemaps|deep|large|loop|server|labels,
// BENCH_SERVER_ROUNDS (default 5).

import { readFileSync } from 'node:fs'
import os from 'node:os'
import v8 from 'node:v8'
import vm from 'node:vm'
import { createRequire } from 'node:module'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { makeWorkload } from './workload.mjs'
import { runBare, runOurs } from './stall.mjs'
import { makeProfileText, assertSameTraces, timeInterleaved, candidates } from './from-cpu-profile.mjs'
import { sourcemapBench } from './sourcemaps.mjs'
import { median } from './stats.mjs'

const require = createRequire(import.meta.url)
const { getSampler } = require('../lib/sampler/index.js')

const SECONDS = Number(process.env.BENCH_SECONDS || 6)
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3)
const REPS = Number(process.env.BENCH_REPS || 15)
const ONLY = process.env.BENCH_ONLY || ''
const SLICE_MS = 5

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')

const f1 = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2))
const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a')

function machine() {
  let cpu = 'unknown CPU'
  try {
    const m = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    if (m) cpu = m[1].trim()
  } catch {
    cpu = os.cpus()[0]?.model ?? cpu
  }
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
  return `${cpu}, ${os.cpus().length} logical CPUs, Node ${process.version} (V8 ${process.versions.v8}), ${os.platform()}-${os.arch()}, load average ${load}`
}

function table(rows, columns) {
  const widths = columns.map(([title, get]) => Math.max(title.length, ...rows.map((r) => String(get(r)).length)))
  const line = (cells) => cells.map((c, i) => String(c).padStart(widths[i])).join('  ')
  console.log(line(columns.map(([t]) => t)))
  for (const r of rows) console.log(line(columns.map(([, get]) => get(r))))
}

async function stallBench() {
  const workload = makeWorkload(300)
  try {
    console.log(`\n## 1. Event-loop stalls at 1 ms sampling (${SECONDS} s runs, ${ROUNDS} rounds per mode, A B A B)`)
    console.log(`workload: 300 generated functions in ${workload.file}`)
    // Warm-up: JIT the workload and the addon, and let V8 log the code once, in both modes.
    await runBare(workload, { ms: 500, sliceMs: SLICE_MS, yielding: true })
    await runOurs(workload, { ms: 500, sliceMs: SLICE_MS, yielding: true })
    for (const yielding of [true, false]) {
      const results = { bare: [], ours: [] }
      for (let round = 0; round < ROUNDS; round++) {
        for (const [mode, run] of [
          ['bare', runBare],
          ['ours', runOurs],
        ]) {
          gc()
          results[mode].push(await run(workload, { ms: SECONDS * 1000, sliceMs: SLICE_MS, yielding }))
        }
      }
      const med = (mode, key) => median(results[mode].map((r) => r[key]))
      console.log(
        yielding
          ? `\n### workload yielding to the event loop every ~${SLICE_MS} ms (a server); medians of ${ROUNDS}`
          : `\n### purely synchronous workload (never yields: the only harvest is at stop); medians of ${ROUNDS}`,
      )
      const rows = ['bare', 'ours'].map((mode) => ({ mode, med: (k) => med(mode, k) }))
      const both = (r, k) => `${f1(r.med(k))} / ${f1(r.med(k.replace(/Ms$/, 'CpuMs')))}`
      const columns = [
        ['mode', (r) => (r.mode === 'bare' ? 'bare inspector' : 'jsprof-node')],
        ['start', (r) => f1(r.med('startMs'))],
        ['(a) stop() sync', (r) => both(r, 'stopSyncMs')],
        ['(b) longest turn in stop', (r) => both(r, 'stopMaxTurnMs')],
        ['stop→resolved', (r) => both(r, 'stopTotalMs')],
        ['samples/s', (r) => r.med('samplesPerS').toFixed(0)],
        ['harvests', (r) => r.med('harvests')],
      ]
      if (yielding) {
        columns.splice(
          5,
          0,
          ['(c) longest gap in run', (r) => both(r, 'maxGapMs')],
          ['gaps>2ms', (r) => r.med('gapsOver2Ms')],
          ['all gaps', (r) => both(r, 'totalGapMs')],
        )
      }
      table(rows, columns)
      console.log('(times in ms; "x / y" = wall-clock / process CPU time over the same span)')
      const ratios = (k) =>
        `${ratio(med('ours', k), med('bare', 'stopMaxTurnMs'))} wall, ${ratio(med('ours', k.replace(/Ms$/, 'CpuMs')), med('bare', 'stopMaxTurnCpuMs'))} CPU`
      console.log(
        `stop stall ratio ours/bare: (a) ${ratios('stopSyncMs')}; (b) ${ratios('stopMaxTurnMs')} (target ≤ 1.0×)`,
      )
      if (yielding) {
        const worst = (mode, cpu) =>
          median(
            results[mode].map((r) =>
              cpu ? Math.max(r.maxGapCpuMs, r.stopMaxTurnCpuMs) : Math.max(r.maxGapMs, r.stopMaxTurnMs),
            ),
          )
        console.log(
          `longest stall over the whole run incl. stop: ours ${f1(worst('ours'))} / ${f1(worst('ours', true))} ms, bare ${f1(worst('bare'))} / ${f1(worst('bare', true))} ms (${ratio(worst('ours'), worst('bare'))} wall, ${ratio(worst('ours', true), worst('bare', true))} CPU)`,
        )
      }
      const per = (mode, key) => results[mode].map((r) => f1(r[key])).join(', ')
      console.log(`per round (b): bare [${per('bare', 'stopMaxTurnMs')}] ours [${per('ours', 'stopMaxTurnMs')}]`)
      console.log(
        `per round (b) CPU: bare [${per('bare', 'stopMaxTurnCpuMs')}] ours [${per('ours', 'stopMaxTurnCpuMs')}]`,
      )
      if (yielding) console.log(`per round (c): bare [${per('bare', 'maxGapMs')}] ours [${per('ours', 'maxGapMs')}]`)
      if (yielding)
        console.log(`per round (c) CPU: bare [${per('bare', 'maxGapCpuMs')}] ours [${per('ours', 'maxGapCpuMs')}]`)
      console.log(
        `V8 profile size at stop (bare): ${f1(med('bare', 'nodes'))} nodes, ${f1(med('bare', 'samples'))} samples; our trace: ${f1(med('ours', 'frames'))} frames, ${f1(med('ours', 'stacks'))} stacks`,
      )
    }
    console.log(`sampler stats (whole process): ${JSON.stringify(getSampler().stats)}`)
  } finally {
    workload.cleanup()
  }
}

/** The profiles of part 2: sample-heavy and node-heavy (synthesized), and any given in BENCH_PROFILE. */
function convertProfiles() {
  const profiles = [
    ['sample-heavy (synthesized)', makeProfileText()],
    ['node-heavy (synthesized)', makeProfileText({ nodeCount: 40_000, sampleCount: 20_000 })],
  ]
  for (const file of (process.env.BENCH_PROFILE || '').split(',').filter(Boolean)) {
    profiles.push([file, readFileSync(file, 'utf8')])
  }
  return profiles
}

function convertBench() {
  console.log(
    `\n## 2. fromCpuProfile(jsonText) vs JSON.parse(jsonText) alone, and vs a straightforward JS conversion (bench/baseline-from-cpu-profile.mjs)`,
  )
  const gcEach = Boolean(process.env.BENCH_GC)
  const rows = []
  for (const [name, text] of convertProfiles()) {
    const trace = assertSameTraces(text)
    console.log(
      `${name}: ${(text.length / 1e6).toFixed(2)} MB of JSON, ${trace.samples.length} samples -> ${trace.frames.length} frames, ${trace.stacks.length} stacks, ${trace.resources.length} resources (traces asserted deep-equal)`,
    )
    const times = timeInterleaved(candidates(text), { reps: REPS, warmup: 3, gc: gcEach ? gc : null })
    rows.push({ name, m: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)])) })
  }
  table(rows, [
    ['profile', (r) => r.name],
    ['fromCpuProfile', (r) => f1(r.m.ours)],
    ['JSON.parse alone', (r) => f1(r.m.jsonParse)],
    ['ours / JSON.parse', (r) => ratio(r.m.ours, r.m.jsonParse)],
    ['native part', (r) => f1(r.m.oursNative)],
    ['JS part', (r) => f1(r.m.oursAssemble)],
    ['baseline JS conversion', (r) => f1(r.m.baseline)],
    ['speed-up', (r) => ratio(r.m.baseline, r.m.ours)],
  ])
  console.log(
    `(median ms of ${REPS}, candidates interleaved${gcEach ? ', gc() before each call, outside the timing' : ''}; goal: ours / JSON.parse ≤ 1.00×. ` +
      'native part: the text copied into Rust, parsed, validated and converted into columns; JS part: frames JSON.parse, stack and sample objects)',
  )
}

console.log(`# jsprof-node benchmarks\nmachine: ${machine()}`)
const t0 = performance.now()
if (!ONLY || ONLY === 'stall') await stallBench()
if (!ONLY || ONLY === 'convert') convertBench()
if (!ONLY || ONLY === 'sourcemaps') await sourcemapBench()

// The plain Profiler per request (issue 9's targets) and the request modes, each in processes of their
// own: the per-unit-of-work loop, then the server under load (none / a Profiler every 10th request /
// every request / profileRequests), interleaved rounds.
function child(script, args) {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [fileURLToPath(new URL(script, import.meta.url)), ...args], { stdio: 'inherit' })
    c.on('exit', resolve)
  })
}
if (!ONLY || ONLY === 'deep') await child('./deep.mjs', [])
if (!ONLY || ONLY === 'large') await child('./large-input.mjs', [])
if (!ONLY || ONLY === 'loop') await child('./per-request-loop.mjs', [])
if (!ONLY || ONLY === 'server') {
  await child('./server/run.mjs', [
    '--modes',
    'none,prof10,profall,req10,reqall',
    '--rounds',
    process.env.BENCH_SERVER_ROUNDS || '5',
    '--duration',
    '6',
  ])
  // The same plain-Profiler modes in one server process, switched per slice (no process-to-process variance).
  await child('./server/in-process.mjs', ['--set', 'plain', '--rounds', '10', '--slice', '2'])
}
// Labels on every request, and span ids, each against the same mode without (issue 25's bounds), in
// one server process switched per slice.
if (!ONLY || ONLY === 'labels') {
  await child('./server/in-process.mjs', ['--set', 'labels', '--rounds', '40'])
  await child('./server/in-process.mjs', ['--set', 'spans', '--rounds', '40'])
}
console.log(`\ntotal bench time: ${((performance.now() - t0) / 1000).toFixed(0)} s`)
