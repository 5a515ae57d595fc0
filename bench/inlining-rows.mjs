// How far function and package rows move between V8's inlining on and off (issue 43), on the real
// programs of bench/record-vs-cpu-prof.mjs (tsc, eslint, a webpack build; their main threads), and how
// much of that fromCpuProfile's `inlined` option gets back without changing what runs.
//
// Each program runs under `node --cpu-prof --cpu-prof-interval 1000` three times: with inlining (twice:
// the two runs' difference is the noise floor of one run against another) and with
// `--no-turbo-inlining --no-maglev-inlining`. For each, every row's share of the busy time (idle left
// out) by `summarize`, and between two runs: the largest difference of a row in points, and the share of
// the time that sits in another row (half the sum of the differences over all rows: 0% same rows,
// 100% nothing in common). Compared: inlining against inlining (noise), inlining against no inlining,
// and the first inlining run read with `fromCpuProfile(…, { inlined: true })` against no inlining.
//
//   node bench/inlining-rows.mjs      BENCH_ONLY=tsc,eslint,webpack
// Prints figures; asserts nothing.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { loadAvg, machine } from './stats.mjs'
import { realPrograms } from './real-programs.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const { fromCpuProfile, summarize } = require(root)
const ONLY = new Set((process.env.BENCH_ONLY || 'tsc,eslint,webpack').split(','))
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-bench-inlining-rows-'))
const NO_INLINING = ['--no-turbo-inlining', '--no-maglev-inlining']

/** The main thread's --cpu-prof file of a run of `program` with `flags`. */
function profile(program, flags) {
  const dir = fs.mkdtempSync(path.join(tmp, 'prof-'))
  const args = [...flags, '--cpu-prof', '--cpu-prof-interval', '1000', `--cpu-prof-dir=${dir}`, ...program.args]
  const r = spawnSync(process.execPath, args, { cwd: program.cwd, encoding: 'utf8', maxBuffer: 1 << 28 })
  if (!program.ok.includes(r.status)) throw new Error(`${args.join(' ')}: exit ${r.status}\n${r.stderr}`)
  // CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile: the main thread's tid is 0.
  const main = fs.readdirSync(dir).find((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f))
  return fs.readFileSync(path.join(dir, main), 'utf8')
}

/** Each row's share of the busy time (%), by `by`. */
function shares(trace, by) {
  const rows = summarize(trace, { by }).filter((r) => r.kind !== 'idle')
  const total = rows.reduce((sum, r) => sum + r.selfTime, 0)
  return new Map(rows.map((r) => [r.name, (100 * r.selfTime) / total]))
}

/** [largest difference in points, its row, share of the time in another row (%)]. */
function moved(a, b) {
  let largest = [0, '-']
  let sum = 0
  for (const name of new Set([...a.keys(), ...b.keys()])) {
    const d = Math.abs((a.get(name) || 0) - (b.get(name) || 0))
    sum += d
    if (d > largest[0]) largest = [d, name]
  }
  return [largest[0], largest[1], sum / 2]
}

const short = (name) => (name.length > 60 ? `${name.slice(0, 57)}...` : name)

console.log(machine())
try {
  for (const program of realPrograms(tmp, ONLY)) {
    const on = profile(program, [])
    const again = profile(program, [])
    const off = profile(program, NO_INLINING)
    const traces = {
      on: fromCpuProfile(on),
      again: fromCpuProfile(again),
      off: fromCpuProfile(off),
      onInlined: fromCpuProfile(on, { inlined: true }),
    }
    console.log(`\n${program.title} (main thread; ${traces.on.samples.length} samples with inlining)`)
    for (const by of ['function', 'package']) {
      const s = Object.fromEntries(Object.entries(traces).map(([k, t]) => [k, shares(t, by)]))
      for (const [what, a, b] of [
        ['inlining vs inlining (noise)', s.on, s.again],
        ['inlining vs none', s.on, s.off],
        ['inlining + inlined option vs none', s.onInlined, s.off],
      ]) {
        const [points, name, other] = moved(a, b)
        console.log(
          `  by ${by.padEnd(8)} ${what.padEnd(34)} time in another row ${other.toFixed(1).padStart(5)}%, largest row difference ${points.toFixed(1).padStart(5)} points (${short(name)})`,
        )
      }
    }
  }
  console.log(`\nload at the end ${loadAvg()}`)
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}
