// Where labels' CPU per request goes in the bench server, found with Linux `perf` (issue 25,
// docs/bench.md#labels-on-every-request): the server (bench/server/server.js) runs each mode under
// load while `perf record -g` samples its threads; each main-thread sample goes to the leaf-most JS
// frame of its stack (native code counts for the JS function that called it), and those frames are
// summed into buckets, printed as CPU µs per request:
//   labels            lib/labels.js (the integration's RequestLabels, records, the async hook's callbacks)
//   requests          lib/api/requests (profileRequests' wrapper)
//   async context     Node's async_hooks dispatch (emitHook, callbackTrampoline, …) and AsyncLocalStorage
//   app & node        everything else on the main thread; other threads (GC helpers, V8's profiler) apart
//
//   node bench/server/perf-labels.mjs [--modes contnolabels,contlabels] [--duration 6] [--rounds 2]
// Needs `perf` and perf_event_paranoid <= 2. Prints figures; asserts nothing. perf's JIT map
// (--perf-basic-prof) can name a reused code address after its older owner: read the buckets, not
// one app function's row.

import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from '../stats.mjs'
import { arg } from '../args.mjs'
import { ask } from '../ipc.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..', '..')
const MODES = arg('modes', 'contnolabels,contlabels').split(',')
const DURATION = Number(arg('duration', 6))
const ROUNDS = Number(arg('rounds', 2))

if (spawnSync('perf', ['--version']).status !== 0) {
  console.error('perf is not installed (Debian: apt-get install linux-perf)')
  process.exit(1)
}

const BUCKETS = ['labels', 'requests', 'async context', 'app & node', 'other threads']
function bucketOf(js) {
  if (js.includes(`${root}/lib/labels.js`)) return 'labels'
  if (js.includes(`${root}/lib/api/requests/`)) return 'requests'
  if (/node:internal\/(async_hooks|async_local_storage|async_context_frame)/.test(js)) return 'async context'
  return 'app & node'
}

function classify(text, pid) {
  const counts = {}
  let total = 0
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean)
    if (lines.length < 2) continue
    const head = /^\s*(.+?)\s+(\d+)\s*$/.exec(lines[0]) || /^\s*(.+?)\s+(\d+)\s/.exec(lines[0])
    if (!head) continue
    total++
    if (Number(head[2]) !== pid) {
      counts['other threads'] = (counts['other threads'] || 0) + 1
      continue
    }
    const js = lines.slice(1).find((l) => / JS:/.test(l)) || ''
    const bucket = bucketOf(js)
    counts[bucket] = (counts[bucket] || 0) + 1
  }
  return { counts, total }
}

function load(port, seconds) {
  const bin = path.join(root, 'node_modules', 'autocannon', 'autocannon.js')
  const r = spawnSync(
    process.execPath,
    [bin, '-c', '10', '-d', String(seconds), '-j', `http://127.0.0.1:${port}/api?q=7`],
    {
      encoding: 'utf8',
    },
  )
  return JSON.parse(r.stdout).requests.average
}

async function measure(mode) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'jsprof-perf-labels-'))
  // In the temporary directory: Node 24's V8 writes an isolate-*-v8.log into the cwd under --perf-basic-prof.
  const child = spawn(process.execPath, ['--perf-basic-prof', path.join(here, 'server.js'), mode], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  })
  try {
    const { port } = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(d))))
    load(port, 2)
    child.send('measure')
    const data = path.join(dir, 'perf.data')
    const perf = spawn('perf', ['record', '-F', '999', '-g', '-p', String(child.pid), '-o', data], { stdio: 'ignore' })
    await new Promise((r) => setTimeout(r, 200))
    load(port, DURATION)
    const report = await ask(child, 'report')
    if (perf.exitCode === null) {
      perf.kill('SIGINT')
      await new Promise((r) => perf.once('exit', r))
    }
    const script = spawnSync('perf', ['script', '-i', data, '-F', 'comm,tid,ip,sym'], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    })
    const { counts, total } = classify(script.stdout, child.pid)
    const per = report.cpuUsPerRequest
    return { per, buckets: Object.fromEntries(BUCKETS.map((b) => [b, ((counts[b] || 0) / total) * per])) }
  } finally {
    child.kill()
    rmSync(dir, { recursive: true, force: true })
  }
}

console.log(
  `# perf, labels' buckets: ${ROUNDS} round(s) x ${DURATION} s, Node ${process.version}, load ${os.loadavg()[0].toFixed(2)} at start`,
)
const results = Object.fromEntries(MODES.map((m) => [m, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const mode of MODES) results[mode].push(await measure(mode))
}
console.log(`| bucket (CPU µs/request, median of rounds) | ${MODES.join(' | ')} |`)
console.log(`| --- | ${MODES.map(() => '---:').join(' | ')} |`)
for (const b of [...BUCKETS, 'total']) {
  const cells = MODES.map((m) => median(results[m].map((r) => (b === 'total' ? r.per : r.buckets[b]))).toFixed(1))
  console.log(`| ${b} | ${cells.join(' | ')} |`)
}
console.log(`load ${os.loadavg()[0].toFixed(2)} at the end`)
