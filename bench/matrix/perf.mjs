// Where a profiling mode's extra CPU per request goes, found with Linux `perf` on the server process itself
// (issue 28): each mode's server (bench/matrix/server.js) runs under load while `perf record -g` samples
// every thread of it; each sample is put in one bucket by its thread and its stack, and the buckets are
// printed as CPU µs per request beside the `none` server's.
//
//   node bench/matrix/perf.mjs [--kind http-sync] [--modes none,prof10,profall] [--connections 10]
//       [--pin no|yes] [--duration 5] [--warmup 2] [--rounds 1]
//
// Buckets, by the first rule a sample's stack matches:
//   jsprof       jsprof-node's own JS (this repo's lib/) or its addon (.node) is the frame nearest the leaf
//                among jsprof's and the app's own (bench/, node_modules/): the harvests, Profiler objects,
//                conversions, label hooks, and what V8 does on their behalf (the inspector's
//                Profiler.stop/start serializing a profile, the GC of their garbage). The app's code run
//                inside jsprof's frames (a handler inside profileRequests' labels.run) stays the app's.
//   v8 profiler  V8's profiler outside jsprof's calls: code-event logging when the app compiles code, the
//                signal handler that takes a sample; and everything on V8's profiler thread
//   gc           V8's garbage collector (on any thread) not under a jsprof frame
//   app & node   everything else: the server, Node, libuv, the kernel's network stack
// `--modes none,none#2,prof10` adds a second baseline: how far two unprofiled servers differ.
// Needs `perf` (Debian linux-perf) and perf_event_paranoid <= 2. Prints figures; asserts nothing.

import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from '../stats.mjs'
import { arg } from '../args.mjs'
import { ask } from '../ipc.mjs'
import { loadArgs } from './kinds.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..', '..')
const KIND = arg('kind', 'http-sync')
const MODES = arg('modes', 'none,prof10,profall').split(',')
const CONNECTIONS = Number(arg('connections', 10))
// --pin yes: the server on core 0 alone and the load on core 1, as the matrix's pinned cells.
const PIN = arg('pin', 'no') === 'yes'
const pinned = (core, cmd, cmdArgs) => (PIN ? ['taskset', ['-c', String(core), cmd, ...cmdArgs]] : [cmd, cmdArgs])
const DURATION = Number(arg('duration', 5))
const WARMUP = Number(arg('warmup', 2))
const ROUNDS = Number(arg('rounds', 1))

if (spawnSync('perf', ['--version']).status !== 0) {
  console.error('perf is not installed (Debian: apt-get install linux-perf)')
  process.exit(1)
}

const PROFILER_SYMBOLS =
  /CpuProfil|ProfileGenerator|ProfilerListener|ProfilerCodeObserver|ProfileTree|SamplingEventsProcessor|ProfilerEventsProcessor|CodeEntry|CodeMap|InstructionStreamMap|v8::sampler|Sampler::|V8ProfilerAgent|v8_inspector|node::inspector|crdtp/
const GC_SYMBOLS =
  /v8::internal::(Heap::|Scavenger|MarkCompact|MinorMarkCompact|MarkingVisitor|Sweeper|ConcurrentMarking|IncrementalMarking|GCTracer|MemoryAllocator|PagedSpace|ScavengeJob)/
const BUCKETS = ['jsprof', 'v8 profiler', 'gc', 'app & node']

const own = (f) => f.sym.includes(`${root}/lib/`) || /jsprof-node\.[\w-]+\.node/.test(f.dso)
const app = (f) => f.sym.includes(`${root}/bench/`) || f.sym.includes(`${root}/node_modules/`)

function bucketOf(frames) {
  // Leaf to root: jsprof's when its frame comes before any of the app's own.
  const nearest = frames.find((f) => own(f) || app(f))
  if (nearest && own(nearest)) return 'jsprof'
  if (frames.some((f) => PROFILER_SYMBOLS.test(f.sym))) return 'v8 profiler'
  if (frames.some((f) => GC_SYMBOLS.test(f.sym))) return 'gc'
  return 'app & node'
}

/** Parses `perf script` output into counts per thread group and bucket. */
function classify(text, pid) {
  const counts = {}
  const ownFunctions = {}
  const appLeaves = {}
  const ownLeaves = {}
  let total = 0
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean)
    if (lines.length === 0) continue
    const head = /^\s*(.+?)\s+(\d+)\s/.exec(lines[0])
    if (!head) continue
    const [, comm, tid] = head
    const frames = lines.slice(1).map((l) => {
      const m = /^\s*[0-9a-f]+\s+(.*?)\s+\(([^)]*)\)\s*$/.exec(l)
      return m ? { sym: m[1], dso: m[2] } : { sym: l.trim(), dso: '' }
    })
    const thread = Number(tid) === pid ? 'main' : comm === 'v8:ProfEvntProc' ? 'profiler' : 'other'
    // Everything V8's profiler thread does (its kernel time sending signals included) is the profiler's.
    const bucket = thread === 'profiler' ? 'v8 profiler' : bucketOf(frames)
    const key = `${thread}/${bucket}`
    counts[key] = (counts[key] || 0) + 1
    if (thread === 'main' && bucket === 'app & node') {
      // The app's own code: by leaf symbol, to see what runs slower under a profiler (JIT code by name).
      const leaf = frames[0] ? frames[0].sym.replace(/\+0x[0-9a-f]+$/, '') : '?'
      appLeaves[leaf] = (appLeaves[leaf] || 0) + 1
    }
    if (bucket === 'jsprof') {
      // Within jsprof's bucket: which of its functions (the frame nearest the leaf that is jsprof's own).
      const name = frames
        .find(own)
        .sym.replace(`${root}/`, '')
        .replace(/^(LazyCompile|Function|JS):\*?~?/, '')
      ownFunctions[name] = (ownFunctions[name] || 0) + 1
      // And by leaf symbol: what the time under jsprof's functions is (V8's serializer, GC, the addon).
      const leaf = frames[0] ? frames[0].sym.replace(/\+0x[0-9a-f]+$/, '').replace(`${root}/`, '') : '?'
      ownLeaves[leaf] = (ownLeaves[leaf] || 0) + 1
    }
    total++
  }
  return { counts, ownFunctions, ownLeaves, appLeaves, total }
}

function load(port, seconds) {
  const [cmd, cmdArgs] = pinned(1, process.execPath, loadArgs(KIND, port, CONNECTIONS, seconds))
  const r = spawnSync(cmd, cmdArgs, { encoding: 'utf8' })
  return JSON.parse(r.stdout).requests.average
}

async function measure(mode) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'jsprof-perf-'))
  const [cmd, cmdArgs] = pinned(0, process.execPath, [
    '--perf-basic-prof',
    '--interpreted-frames-native-stack',
    path.join(here, 'server.js'),
    KIND,
    mode,
  ])
  // In the temporary directory: Node 24's V8 writes an isolate-*-v8.log into the cwd under --perf-basic-prof.
  const child = spawn(cmd, cmdArgs, { cwd: dir, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] })
  try {
    const { port } = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(d))))
    load(port, WARMUP)
    child.send('measure')
    const data = path.join(dir, 'perf.data')
    const perf = spawn('perf', ['record', '-F', '499', '-g', '-p', String(child.pid), '-o', data], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let perfErr = ''
    perf.stderr.on('data', (d) => (perfErr += d))
    await new Promise((r) => setTimeout(r, 200))
    const rps = load(port, DURATION)
    const report = await ask(child, 'report')
    const perfExited = perf.exitCode !== null || perf.signalCode !== null
    if (!perfExited) {
      perf.kill('SIGINT')
      await new Promise((r) => perf.once('exit', r))
    }
    if (perf.exitCode !== 0 && perf.signalCode === null && !/Captured and wrote/.test(perfErr)) {
      throw new Error(`perf record failed: ${perfErr.trim().split('\n').at(-1)}`)
    }
    const script = spawnSync('perf', ['script', '-i', data, '-F', 'comm,tid,ip,sym,dso'], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    })
    const { counts, ownFunctions, ownLeaves, appLeaves, total } = classify(script.stdout, child.pid)
    const cpuPerRequest = report.cpuUs / report.requests
    const perRequest = Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, (n / total) * cpuPerRequest]))
    const own = Object.fromEntries(Object.entries(ownFunctions).map(([k, n]) => [k, (n / total) * cpuPerRequest]))
    const app = Object.fromEntries(Object.entries(appLeaves).map(([k, n]) => [k, (n / total) * cpuPerRequest]))
    const ownLeaf = Object.fromEntries(Object.entries(ownLeaves).map(([k, n]) => [k, (n / total) * cpuPerRequest]))
    return { rps, cpuPerRequest, perRequest, own, ownLeaf, app, samples: total }
  } finally {
    child.kill()
    rmSync(dir, { recursive: true, force: true })
  }
}

console.log(
  `# perf split: ${KIND}, ${CONNECTIONS} connections${PIN ? ', pinned' : ''}, ${ROUNDS} round(s) x ${DURATION} s, Node ${process.version}, ` +
    `load ${os.loadavg()[0].toFixed(2)} at start\n`,
)
const results = Object.fromEntries(MODES.map((m) => [m, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of MODES) {
    const r = await measure(mode)
    results[mode].push(r)
    // Each round's own figures: the median table below hides a round that went wrong.
    const jsprof = Object.entries(r.perRequest)
      .filter(([k]) => k.endsWith('/jsprof'))
      .reduce((a, [, v]) => a + v, 0)
    const sum = (suffix) =>
      Object.entries(r.perRequest)
        .filter(([k]) => k.endsWith(suffix))
        .reduce((a, [, v]) => a + v, 0)
    console.log(
      `round ${round + 1} ${mode}: ${r.cpuPerRequest.toFixed(1)} µs/request, ${r.rps.toFixed(0)} req/s, ` +
        `jsprof ${jsprof.toFixed(1)}, gc ${sum('/gc').toFixed(1)}, app & node ${sum('/app & node').toFixed(1)} ` +
        `µs/request, load ${os.loadavg()[0].toFixed(2)}`,
    )
  }
}
console.log()
const keys = [...new Set(Object.values(results).flatMap((rs) => rs.flatMap((r) => Object.keys(r.perRequest))))].sort(
  (a, b) => BUCKETS.indexOf(a.split('/')[1]) - BUCKETS.indexOf(b.split('/')[1]) || a.localeCompare(b),
)
console.log(`| thread/bucket | ${MODES.join(' | ')} |`)
console.log(`| --- | ${MODES.map(() => '---:').join(' | ')} |`)
const cell = (mode, key) => median(results[mode].map((r) => r.perRequest[key] || 0))
for (const key of keys) {
  const base = cell(MODES[0], key)
  const cols = MODES.map((m, i) => {
    const v = cell(m, key)
    return i === 0 ? v.toFixed(1) : `${v.toFixed(1)} (${v - base >= 0 ? '+' : ''}${(v - base).toFixed(1)})`
  })
  console.log(`| ${key} | ${cols.join(' | ')} |`)
}
const tot = (m) => median(results[m].map((r) => r.cpuPerRequest))
console.log(`| **CPU µs/request** | ${MODES.map((m) => tot(m).toFixed(1)).join(' | ')} |`)
console.log(`| req/s | ${MODES.map((m) => median(results[m].map((r) => r.rps)).toFixed(0)).join(' | ')} |`)
console.log(`| perf samples | ${MODES.map((m) => median(results[m].map((r) => r.samples))).join(' | ')} |`)
for (const mode of MODES.slice(1)) {
  const own = {}
  for (const r of results[mode]) for (const [k, v] of Object.entries(r.own)) own[k] = (own[k] || 0) + v / ROUNDS
  const top = Object.entries(own)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
  if (top.length === 0) continue
  console.log(`\n${mode}: jsprof's bucket by its function nearest the leaf (µs/request, mean over rounds)`)
  for (const [name, us] of top) console.log(`  ${us.toFixed(2).padStart(6)}  ${name}`)
  const leaves = {}
  for (const r of results[mode])
    for (const [k, v] of Object.entries(r.ownLeaf)) leaves[k] = (leaves[k] || 0) + v / ROUNDS
  console.log(`${mode}: jsprof's bucket by leaf symbol (µs/request, mean over rounds)`)
  for (const [name, us] of Object.entries(leaves)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10))
    console.log(`  ${us.toFixed(2).padStart(6)}  ${name.slice(0, 110)}`)
}
// The main thread's app & node bucket, by leaf symbol: where it grew most against the first mode.
const meanOf = (mode) => {
  const m = {}
  for (const r of results[mode]) for (const [k, v] of Object.entries(r.app)) m[k] = (m[k] || 0) + v / ROUNDS
  return m
}
const base = meanOf(MODES[0])
for (const mode of MODES.slice(1)) {
  const m = meanOf(mode)
  const grew = Object.keys({ ...base, ...m })
    .map((k) => [k, (m[k] || 0) - (base[k] || 0)])
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
  console.log(`\n${mode}: main thread's app & node, leaf symbols that grew most against ${MODES[0]} (µs/request)`)
  for (const [name, us] of grew)
    console.log(`  ${(us >= 0 ? '+' : '') + us.toFixed(2).padStart(6)}  ${name.slice(0, 110)}`)
}
console.log(`\nload ${os.loadavg()[0].toFixed(2)} at the end`)
