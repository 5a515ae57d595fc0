// Does a HeapProfiler snapshot see the whole leak? (issue 42 item 5: one run read 152 MiB where
// `node --heap-prof`, `jsprof record --heap` and the heap's growth gave 172-175 MiB.) Prints a table;
// asserts nothing.
//
//   node bench/heap-snapshot.mjs [--runs 5] [--mib 175] [--interval 524288]
//
// One leak program, run `--runs` times under each reader: a module-level Map keeps `--mib` MiB of
// ~1 KiB arrays (`leakAll` -> `remember`). Each run prints the growth of the heap it measured itself
// (`heapUsed` after a full GC, before and after the leak) beside what its reader says is held under
// `leakAll` (the leak alone: the process's other allocations are not in it) and in all:
//   - heapprofiler: `new HeapProfiler({ samplingInterval })` before the leak, `profile()` after it
//   - heapprofiler-late: the same, started after 10% of the leak (a profile holds what was sampled since
//     its start: the 10% before is not in it, by design)
//   - record: `jsprof record --heap --heap-interval` (the preload starts the sampler before the app)
//   - heap-prof: `node --heap-prof --heap-prof-interval` (V8's own file at exit, read by fromHeapProfile)
// V8 samples a Poisson process (one allocation about every `interval` bytes, scaled by the objects it
// stands for), so a reader's figure scatters around the true bytes by about 1/sqrt(samples): ~5% at
// 350 samples (175 MiB at 512 KiB). A reader that misses samples reads low in every run.

import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { num } from './args.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..')
const { fromHeapProfile } = createRequire(import.meta.url)(root)
const RUNS = num('runs', 5)
const MIB = num('mib', 175)
const INTERVAL = num('interval', 512 * 1024)
const MiB = 1024 * 1024

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-heap-snapshot-'))
const leak = path.join(dir, 'leak.cjs')
fs.writeFileSync(
  leak,
  `'use strict'
const mode = process.env.LEAK_MODE
const entries = ${MIB} * 1024
const keep = new Map()
globalThis.keep = keep
function remember(i) { keep.set(i, new Array(120).fill(i)) } // a 976-byte FixedArray and its JSArray
function leakAll(from, to) { for (let i = from; i < to; i++) remember(i) }
const used = () => (globalThis.gc(), process.memoryUsage().heapUsed)
;(async () => {
  const jsprof = mode.startsWith('heapprofiler') ? require(${JSON.stringify(root)}) : {}
  const before = used()
  let heap = mode === 'heapprofiler' ? new jsprof.HeapProfiler({ samplingInterval: ${INTERVAL} }) : null
  const tenth = Math.floor(entries / 10)
  leakAll(0, tenth)
  if (mode === 'heapprofiler-late') heap = new jsprof.HeapProfiler({ samplingInterval: ${INTERVAL} })
  leakAll(tenth, entries)
  const grew = used() - before
  const out = { grew }
  if (heap) {
    const p = await heap.profile()
    out.profile = p
    await heap.stop()
  }
  console.log(JSON.stringify(out))
})()
`,
)

/** Bytes and V8's samples under `leakAll` (the leak, whatever else the process allocated), and in all. */
function read(profile) {
  const under = profile.samples.filter((e) => {
    for (let s = e.stackId; s !== undefined; s = profile.stacks[s].parentId) {
      if (profile.frames[profile.stacks[s].frameId].name === 'leakAll') return true
    }
    return false
  })
  return {
    total: profile.samples.reduce((s, e) => s + e.size, 0),
    samples: under.reduce((s, e) => s + e.count, 0),
    at: under.reduce((s, e) => s + e.size, 0),
  }
}

function run(mode, i) {
  const env = { ...process.env, LEAK_MODE: mode }
  const out = path.join(dir, `${mode}-${i}`)
  fs.mkdirSync(out)
  let args
  if (mode === 'record') {
    args = [path.join(root, 'bin', 'jsprof.js'), 'record', '--heap', '--heap-interval', String(INTERVAL)]
    args.push('-o', path.join(out, 't.json'), '--', process.execPath, '--expose-gc', leak)
  } else if (mode === 'heap-prof') {
    args = ['--expose-gc', '--heap-prof', '--heap-prof-dir', out, '--heap-prof-interval', String(INTERVAL), leak]
  } else {
    args = ['--expose-gc', leak]
  }
  const r = spawnSync(process.execPath, args, { env, encoding: 'utf8', timeout: 600_000 })
  if (r.status !== 0) throw new Error(`${mode}: exit ${r.status}: ${r.stderr}`)
  const line = r.stdout
    .trim()
    .split('\n')
    .find((l) => l.startsWith('{"grew"'))
  const own = JSON.parse(line)
  if (mode === 'record') return { ...own, ...read(JSON.parse(fs.readFileSync(path.join(out, 't.heap.json'), 'utf8'))) }
  if (mode === 'heap-prof') {
    const file = fs.readdirSync(out).find((f) => f.endsWith('.heapprofile'))
    return { ...own, ...read(fromHeapProfile(fs.readFileSync(path.join(out, file)))) }
  }
  return { grew: own.grew, ...read(own.profile) }
}

const mib = (b) => (b / MiB).toFixed(1)
console.log(
  `node ${process.version}, ${RUNS} runs of a ${MIB} MiB leak, samplingInterval ${INTERVAL} bytes ` +
    `(MiB: under leakAll / in all / heap growth; V8's samples under leakAll)\n`,
)
console.log('| reader | run 1..n: under leakAll / in all / heap growth (samples) | under leakAll / growth, mean |')
console.log('| --- | --- | --- |')
try {
  for (const mode of ['heapprofiler', 'record', 'heap-prof', 'heapprofiler-late']) {
    const rows = []
    for (let i = 0; i < RUNS; i++) rows.push(run(mode, i))
    const ratio = rows.reduce((s, r) => s + r.at / r.grew, 0) / rows.length
    const cells = rows.map((r) => `${mib(r.at)} / ${mib(r.total)} / ${mib(r.grew)} (${r.samples})`).join('; ')
    console.log(`| ${mode} | ${cells} | ${(ratio * 100).toFixed(1)}% |`)
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
