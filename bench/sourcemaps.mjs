// Benchmark: resolveSourceMaps on a trace of 10,000 frames across 200 generated files, each with a
// real source map (written by esbuild from generated TypeScript), cold (cache emptied) and cached, and
// the longest main-thread stall while mapping (a setImmediate ticker records every event-loop turn
// from the call until the promise resolves; reading and parsing maps run on the source-map thread).
//
// `node bench/sourcemaps.mjs` (also part of `npm run bench`). Knobs: BENCH_SM_FILES (200),
// BENCH_SM_FUNCTIONS (50 per file), BENCH_SM_SAMPLES (50,000), BENCH_SM_REPS (10).
// Targets (issue 11): cached ≤ 20 ms; no main-thread stall above a few ms.

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { median } from './stats.mjs'

const require = createRequire(import.meta.url)
const FILES = Number(process.env.BENCH_SM_FILES || 200)
const FUNCTIONS = Number(process.env.BENCH_SM_FUNCTIONS || 50)
const SAMPLES = Number(process.env.BENCH_SM_SAMPLES || 50000)
const REPS = Number(process.env.BENCH_SM_REPS || 10)

/** 200 files of 50 functions, TypeScript compiled by esbuild with external maps; the trace's frames at each `(`. */
export function makeProject(dir) {
  const esbuild = require('esbuild')
  const resources = []
  const frames = []
  let mapBytes = 0
  for (let f = 0; f < FILES; f++) {
    let ts = `// generated module ${f}\n`
    for (let i = 0; i < FUNCTIONS; i++) {
      ts += `export function fn_${f}_${i}(values: number[], factor: number): number {\n  let total: number = ${i}\n`
      ts += `  for (const v of values) total += v * factor\n  return total\n}\n\n`
    }
    const file = path.join(dir, `m${f}.js`)
    const out = esbuild.transformSync(ts, {
      loader: 'ts',
      format: 'cjs',
      sourcemap: 'external',
      sourcefile: `src/m${f}.ts`,
    })
    fs.writeFileSync(file, `${out.code}//# sourceMappingURL=m${f}.js.map\n`)
    fs.writeFileSync(`${file}.map`, out.map)
    mapBytes += out.map.length
    resources.push(pathToFileURL(file).href)
    const lines = out.code.split('\n')
    for (let l = 0; l < lines.length; l++) {
      const m = /^function (fn_\d+_\d+)\(/.exec(lines[l])
      if (m) frames.push({ name: m[1], resourceId: f, line: l + 1, column: lines[l].indexOf('(') + 1 })
    }
  }
  // Stacks: each frame under a chain of 3 others of its file, as call trees go.
  const stacks = []
  for (let i = 0; i < frames.length; i++) {
    const base = i - (i % FUNCTIONS)
    stacks.push({ frameId: i, parentId: i % FUNCTIONS >= 1 && i - 1 >= base ? stacks.length - 1 : undefined })
    if (stacks.at(-1).parentId === undefined) delete stacks.at(-1).parentId
  }
  const samples = Array.from({ length: SAMPLES }, (_, i) => ({
    timestamp: i,
    stackId: (i * 7919) % stacks.length,
    marker: 'script',
  }))
  return { trace: { resources, frames, stacks, samples }, mapBytes }
}

/** Runs `run()`; returns its wall time and the longest event-loop turn meanwhile. */
async function timed(run, ticker) {
  let longest = 0
  let last = performance.now()
  let done = false
  const tick = () => {
    const now = performance.now()
    longest = Math.max(longest, now - last)
    last = now
    if (!done) setImmediate(tick)
  }
  if (ticker) setImmediate(tick)
  else done = true
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const callStart = performance.now()
  const promise = run()
  const syncCall = performance.now() - callStart
  const result = await promise
  const wall = performance.now() - t0
  const { user, system } = process.cpuUsage(cpu0)
  const cpu = (user + system) / 1000
  // The turn that resumed after `await` (JSON.parse of the tables, samples renumbered) ends here.
  const afterAwait = performance.now()
  done = true
  longest = Math.max(longest, afterAwait - last)
  await new Promise((resolve) => setImmediate(resolve))
  return { wall, cpu, stall: Math.max(longest, syncCall), syncCall, result }
}

export async function sourcemapBench() {
  const { resolveSourceMaps } = require('../index.js')
  const { binding } = require('../lib/native.js')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-bench-sm-'))
  try {
    const { trace, mapBytes } = makeProject(dir)
    console.log(`\n## resolveSourceMaps (bench/sourcemaps.mjs)`)
    console.log(
      `trace: ${trace.frames.length} frames across ${trace.resources.length} files, ${trace.stacks.length} stacks, ${trace.samples.length} samples; maps: ${(mapBytes / 1e6).toFixed(1)} MB (esbuild)`,
    )
    const cold = []
    const cached = []
    const stalls = []
    const control = []
    const syncCalls = []
    const coldCpu = []
    const cachedCpu = []
    for (let r = 0; r < REPS; r++) {
      // Wall and CPU time without the ticker (it spins the loop and would be counted too) ...
      binding.clearSourceMapCache()
      const c = await timed(() => resolveSourceMaps(trace), false)
      if (c.result.stats.mapped !== trace.frames.length)
        throw new Error(`mapped ${c.result.stats.mapped} of ${trace.frames.length}`)
      cold.push(c.wall)
      coldCpu.push(c.cpu)
      const w = await timed(() => resolveSourceMaps(trace), false)
      cached.push(w.wall)
      cachedCpu.push(w.cpu)
      // ... then the stalls, cold and cached, with the ticker.
      binding.clearSourceMapCache()
      const cs = await timed(() => resolveSourceMaps(trace), true)
      const ws = await timed(() => resolveSourceMaps(trace), true)
      stalls.push(cs.stall, ws.stall)
      syncCalls.push(cs.syncCall, ws.syncCall)
      // Control: the same ticker over as long a wait with no work at all (the machine's own noise).
      control.push((await timed(() => new Promise((resolve) => setTimeout(resolve, ws.wall)), true)).stall)
    }
    const f = (x) => x.toFixed(1)
    console.log(
      `cold   (cache emptied, files in the OS page cache): wall median ${f(median(cold))} ms, min ${f(Math.min(...cold))} ms; CPU (all threads) median ${f(median(coldCpu))} ms`,
    )
    console.log(
      `cached (maps parsed once before):                   wall median ${f(median(cached))} ms, min ${f(Math.min(...cached))} ms; CPU (all threads) median ${f(median(cachedCpu))} ms  (target ≤ 20 ms)`,
    )
    console.log(
      `longest main-thread turn while mapping: median ${f(median(stalls))} ms, max ${f(Math.max(...stalls))} ms over ${stalls.length} runs (target: a few ms)`,
    )
    console.log(
      `  of which the synchronous call (tables to columns): median ${f(median(syncCalls))} ms, max ${f(Math.max(...syncCalls))} ms`,
    )
    console.log(
      `  control, the same ticker with no work over as long: median ${f(median(control))} ms, max ${f(Math.max(...control))} ms (load average ${os.loadavg()[0].toFixed(2)})`,
    )
    console.log(
      `(${REPS} rounds, cold and cached alternated; wall times include the JS part: tables JSON, sample renumbering)`,
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await sourcemapBench()
