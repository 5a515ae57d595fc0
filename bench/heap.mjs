// Heap profiles (issue 26): what they cost, printed as tables; asserts nothing about time.
//
//   node bench/heap.mjs [--nodes 20,22,24,26] [--rounds 3] [--duration 5] [--skip-matrix]
//
// 1. Sampling cost on the server bench: bench/matrix/run.mjs with modes none, heap (a HeapProfiler at
//    512 KiB for the whole run) and heapalloc (the 'allocated' view), paired per round, CPU per request,
//    on each Node major. Target: heap >= 0.97x CPU (<= 3%).
// 2. The main-thread time of taking a profile, against V8's own getSamplingProfile through the
//    inspector (what any inspector client pays: V8 builds the tree, serializes it as JSON, Node parses
//    it), on live heaps of 64 MB and 512 MB held at 2,000 distinct stacks, at 512 KiB and 32 KiB.
//    `HeapProfiler.profile()` adds the conversion (JSON text to Rust, the V8 -> trace rules, the
//    profile back as JSON); the V8 part is the same.
// 3. The profiler's own memory: V8 keeps one record per sample (a live object's, or in the 'allocated'
//    view every sampled allocation's until the profile is taken); RSS growth per sample retained.
// 4. Large and deep .heapprofile inputs through the CLI (`jsprof report`): time and peak RSS.

import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './stats.mjs'
import { arg } from './args.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..')
const args = process.argv.slice(2)
const NODES = arg('nodes', '20,22,24,26')
const ROUNDS = Number(arg('rounds', 3))
const DURATION = Number(arg('duration', 5))

if (!args.includes('--skip-matrix')) {
  console.log('## 1. Sampling cost: HeapProfiler at 512 KiB for the whole run (bench/matrix/run.mjs)\n')
  const r = spawnSync(
    process.execPath,
    [
      path.join(here, 'matrix', 'run.mjs'),
      '--nodes',
      NODES,
      '--kinds',
      'http-sync,express',
      '--connections',
      '10',
      '--pin',
      'no',
      '--modes',
      'none,heap,heapalloc',
      '--rounds',
      String(ROUNDS),
      '--duration',
      String(DURATION),
    ],
    { stdio: 'inherit' },
  )
  if (r.status !== 0) console.log(`(the matrix exited ${r.status})`)
  console.log()
}

// 1b. The same question without the HTTP stack's noise: an allocation-heavy workload (the matrix
// server's per-request work: 150 small objects, strings, JSON.stringify) in one process per major, with
// and without a HeapProfiler at 512 KiB, alternating 12 times; CPU time of the process per round.
const LOOP_CHILD = `
const { HeapProfiler } = require(${JSON.stringify(root)})
function work() {
  const items = []
  for (let i = 0; i < 150; i++) items.push({ id: i, name: 'item-' + i, tags: ['a', 'b'], price: i * 3 })
  return JSON.stringify({ items }).length
}
function round() {
  const before = process.cpuUsage()
  let n = 0
  for (let r = 0; r < 4000; r++) n += work()
  const used = process.cpuUsage(before)
  return used.user + used.system
}
for (let i = 0; i < 3; i++) round()
const ratios = []
for (let i = 0; i < 12; i++) {
  const off = round()
  const h = new HeapProfiler()
  const withIt = round()
  h.stop()
  ratios.push(off / withIt)
}
ratios.sort((a, b) => a - b)
console.log(JSON.stringify({ version: process.version, median: (ratios[5] + ratios[6]) / 2, min: ratios[0], max: ratios.at(-1) }))
`
console.log('## 1b. Sampling cost on an allocation-heavy loop, one process, paired rounds (CPU ratio off/on)\n')
console.log('| Node | CPU ratio (median of 12 pairs) | spread |')
console.log('| --- | ---: | --- |')
for (const major of NODES.split(',')) {
  const bin =
    process.versions.node.split('.')[0] === major
      ? process.execPath
      : spawnSync('bash', [path.join(root, 'scripts', 'node-major.sh'), major], { encoding: 'utf8' }).stdout.trim()
  const r = spawnSync(bin, ['-e', LOOP_CHILD], { encoding: 'utf8' })
  if (r.status !== 0) {
    console.log(`| ${major} | failed: ${r.stderr.split('\n')[0]} | |`)
    continue
  }
  const x = JSON.parse(r.stdout)
  console.log(`| ${x.version} | ${x.median.toFixed(3)}x | ${x.min.toFixed(3)}–${x.max.toFixed(3)} |`)
}
console.log()

// 2 and 3 run in a child per case: a fresh heap each.
const TAKE_CHILD = `
const inspector = require('node:inspector')
const { HeapProfiler } = require(${JSON.stringify(root)})
const [mb, interval, view] = process.argv.slice(1).map((v, i) => (i < 2 ? Number(v) : v))
const h = new HeapProfiler({ samplingInterval: interval, includeCollected: view === 'allocated' })
// mb MB held at 2,000 distinct stacks: 2,000 functions of their own, each keeping objects.
const keep = []
const makers = Array.from({ length: 2000 }, (_, k) => new Function('keep', 'n', 'for (let i = 0; i < n; i++) keep.push({ k: ' + k + ', i, s: "v" + i })'))
const rssBefore = process.memoryUsage().rss
const perObject = 80
const total = (mb * 1024 * 1024) / perObject
for (let k = 0; k < makers.length; k++) makers[k](keep, Math.ceil(total / makers.length))
if (view === 'allocated') for (let r = 0; r < 3; r++) { let x; for (let i = 0; i < total; i++) x = { i }; }
const session = new inspector.Session()
session.connect()
const post = (m) => { let out; session.post(m, (e, r) => { if (e) throw e; out = r }); return out }
const raw = []
const ours = []
const convert = []
let samples = 0
let nodes = 0
for (let i = 0; i < 5; i++) {
  let t = performance.now()
  const { profile } = post('HeapProfiler.getSamplingProfile')
  raw.push(performance.now() - t)
  samples = profile.samples.length
  // jsprof-node's own part alone: the reply to Rust as JSON text, the conversion, the profile back.
  t = performance.now()
  const { binding } = require(${JSON.stringify(root + '/lib/native.js')})
  JSON.parse(binding.heapProfileFromV8(Buffer.from(JSON.stringify(profile)), 0, '{"heap":{}}', true).json.toString())
  convert.push(performance.now() - t)
  nodes = 0; const todo = [profile.head]; while (todo.length) { const n = todo.pop(); nodes++; todo.push(...n.children) }
  t = performance.now()
  h.profile()
  ours.push(performance.now() - t)
}
const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1]
console.log(JSON.stringify({ raw: med(raw), ours: med(ours), convert: med(convert), samples, nodes }))
`

console.log('## 2. Main-thread time of taking a profile (median of 5), live heap at 2,000 distinct stacks\n')
console.log(
  "| live heap | interval | view | V8 samples | tree nodes | getSamplingProfile (forced GC, V8, JSON parse) | HeapProfiler.profile() | of which jsprof-node's conversion |",
)
console.log('| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |')
for (const [mb, interval, view] of [
  [64, 512 * 1024, 'inuse'],
  [512, 512 * 1024, 'inuse'],
  [64, 32 * 1024, 'inuse'],
  [512, 32 * 1024, 'inuse'],
  [64, 512 * 1024, 'allocated'],
]) {
  const r = spawnSync(
    process.execPath,
    ['--max-old-space-size=4096', '-e', TAKE_CHILD, String(mb), String(interval), view],
    {
      encoding: 'utf8',
    },
  )
  if (r.status !== 0) {
    console.log(`| ${mb} MB | ${interval / 1024} KiB | ${view} | failed: ${r.stderr.split('\n')[0]} |`)
    continue
  }
  const x = JSON.parse(r.stdout)
  console.log(
    `| ${mb} MB | ${interval / 1024} KiB | ${view} | ${x.samples} | ${x.nodes} | ${x.raw.toFixed(2)} ms | ${x.ours.toFixed(2)} ms | ${x.convert.toFixed(2)} ms |`,
  )
}
console.log()

// 3. The profiler's memory: RSS with the 'allocated' view after N sampled allocations, minus without.
const MEMORY_CHILD = `
const { HeapProfiler } = require(${JSON.stringify(root)})
const [n, on] = process.argv.slice(1).map(Number)
const h = on ? new HeapProfiler({ samplingInterval: 1024, includeCollected: true }) : null
// n * 1 KiB allocated and dropped: about n samples at 1 KiB between samples.
for (let i = 0; i < n; i++) { const a = new Array(120).fill(i) }
globalThis.gc()
console.log(JSON.stringify({ rss: process.memoryUsage().rss }))
`
console.log("## 3. The profiler's own memory: RSS per sample V8 keeps ('allocated' view, 1 KiB interval)\n")
console.log('| sampled allocations | RSS without | RSS with | per sample |')
console.log('| ---: | ---: | ---: | ---: |')
for (const n of [200_000, 1_000_000]) {
  const rss = (on) =>
    median(
      [0, 1, 2].map(
        () =>
          JSON.parse(
            spawnSync(process.execPath, ['--expose-gc', '-e', MEMORY_CHILD, String(n), on], { encoding: 'utf8' })
              .stdout,
          ).rss,
      ),
    )
  const [without, withIt] = [rss('0'), rss('1')]
  console.log(
    `| ${n} | ${(without / 1048576).toFixed(0)} MB | ${(withIt / 1048576).toFixed(0)} MB | ${((withIt - without) / n).toFixed(0)} B |`,
  )
}
console.log()

// 4. Large and deep .heapprofile files through the CLI.
console.log('## 4. Large and deep .heapprofile inputs: `jsprof report <file>` (time, peak RSS)\n')
console.log('| input | size | time | peak RSS |')
console.log('| --- | ---: | ---: | ---: |')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-heap-bench-'))
try {
  const node = (id, name, children, selfSize) =>
    `{"callFrame":{"functionName":"${name}","scriptId":"1","url":"file:///app/f${id % 97}.js","lineNumber":${id % 5000},"columnNumber":${id % 80}},"selfSize":${selfSize},"id":${id},"children":[${children}]}`
  // Deep: one chain of 100,000 frames (a runaway recursion), a sample at every level.
  {
    const depth = 100_000
    let text = '{"head":'
    for (let i = 1; i <= depth; i++) text += node(i, `f${i}`, '', 1000).slice(0, -2)
    text += ']}'.repeat(depth)
    text += `,"samples":[${Array.from({ length: depth }, (_, i) => `{"size":1000,"nodeId":${i + 1},"ordinal":${i + 1}}`).join(',')}]}`
    fs.writeFileSync(path.join(tmp, 'deep.heapprofile'), text)
  }
  // Huge: 1,000,000 nodes (1,000 children of 1,000 children), 2,000,000 samples.
  {
    const out = fs.openSync(path.join(tmp, 'huge.heapprofile'), 'w')
    fs.writeSync(
      out,
      '{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":0,"children":[',
    )
    let id = 1
    for (let a = 0; a < 1000; a++) {
      const kids = []
      const parent = id++
      for (let b = 0; b < 999; b++) kids.push(node(id++, `leaf${b}`, '', 2048))
      fs.writeSync(out, (a ? ',' : '') + node(parent, `outer${a}`, kids.join(','), 0))
    }
    fs.writeSync(out, ']},"samples":[')
    for (let s = 0; s < 2_000_000; s += 10_000) {
      const part = []
      for (let k = s; k < s + 10_000; k++) part.push(`{"size":1024,"nodeId":${(k % 999_000) + 2},"ordinal":${k + 1}}`)
      fs.writeSync(out, (s ? ',' : '') + part.join(','))
    }
    fs.writeSync(out, ']}')
    fs.closeSync(out)
  }
  for (const name of ['deep.heapprofile', 'huge.heapprofile']) {
    const file = path.join(tmp, name)
    const times = []
    let peak = 0
    for (let i = 0; i < 3; i++) {
      const r = spawnSync(
        '/usr/bin/time',
        ['-f', '%e %M', process.execPath, path.join(root, 'bin', 'jsprof.js'), 'report', file, '--top', '3'],
        {
          encoding: 'utf8',
          maxBuffer: 1 << 26,
        },
      )
      const [secs, kb] = r.stderr.trim().split('\n').at(-1).split(' ').map(Number)
      if (r.status !== 0) throw new Error(`jsprof report ${name} failed: ${r.stderr}`)
      times.push(secs)
      peak = Math.max(peak, kb)
    }
    const size = fs.statSync(file).size
    console.log(
      `| ${name} | ${(size / 1048576).toFixed(0)} MB | ${median(times).toFixed(2)} s | ${(peak / 1024).toFixed(0)} MB |`,
    )
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}
