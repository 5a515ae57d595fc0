// V8's garbage collections in a matrix server under load (bench/results/matrix-pretenuring.md):
// each mode's server (bench/matrix/server.js) runs with --trace-gc under autocannon, a warm-up, then a
// counted stretch: how many scavenges and mark-compacts, and the mean scavenge pause (its time grows
// with what survives it). Prints figures; asserts nothing.
//
//   node bench/matrix/gc.mjs [--kind http-async] [--modes none,prof10,profall] [--connections 100]
//       [--warmup 4] [--duration 6] [--rounds 1] [--v8-flags "--max-semi-space-size=64"]
//
// --v8-flags: flags for the servers' Node (space-separated), e.g. a young generation of another size.

import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg } from '../args.mjs'
import { loadArgs } from './kinds.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const KIND = arg('kind', 'http-async')
const MODES = arg('modes', 'none,prof10,profall').split(',')
const CONNECTIONS = Number(arg('connections', 100))
const WARMUP = Number(arg('warmup', 4))
const DURATION = Number(arg('duration', 6))
const ROUNDS = Number(arg('rounds', 1))
const V8_FLAGS = arg('v8-flags', '').split(' ').filter(Boolean)

/** Runs autocannon against the server (a child process: this one's event loop keeps reading the server). */
async function load(port, seconds) {
  const child = spawn(process.execPath, loadArgs(KIND, port, CONNECTIONS, seconds), {
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  let json = ''
  child.stdout.on('data', (d) => (json += d))
  await new Promise((resolve) => child.once('close', resolve))
  return JSON.parse(json).requests.total
}

/**
 * Scavenges and mark-compacts in `lines`, with the scavenges' mean pause (ms) and the largest heap
 * any collection began with (MB): old space that grows to it is what the scavenges promoted.
 */
function count(lines) {
  const scavenges = lines.filter((l) => l.includes(': Scavenge '))
  const pauses = scavenges
    .map((l) => Number(/MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \//.exec(l)?.[1]))
    .filter(Number.isFinite)
  const heaps = lines.map((l) => Number(/: (?:Scavenge|Mark-Compact) ([\d.]+) \(/.exec(l)?.[1])).filter(Number.isFinite)
  return {
    scavenges: scavenges.length,
    markCompacts: lines.filter((l) => l.includes(': Mark-Compact ')).length,
    meanScavengeMs: pauses.reduce((a, b) => a + b, 0) / (pauses.length || 1),
    peakHeapMb: Math.max(0, ...heaps),
  }
}

async function measure(mode) {
  const child = spawn(process.execPath, ['--trace-gc', ...V8_FLAGS, path.join(here, 'server.js'), KIND, mode], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  })
  // --trace-gc writes to stdout or stderr by Node version (and stdio buffers it: read after the load).
  let out = ''
  const port = await new Promise((resolve) => {
    const read = (d) => {
      out += d
      const m = /"port":(\d+)/.exec(out)
      if (m) resolve(Number(m[1]))
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
  })
  try {
    await load(port, WARMUP)
    const before = out.split('\n').length
    const requests = await load(port, DURATION)
    return { requests, ...count(out.split('\n').slice(before)) }
  } finally {
    child.kill()
  }
}

console.log(
  `# ${KIND}, ${CONNECTIONS} connections, Node ${process.version}${V8_FLAGS.length ? ` ${V8_FLAGS.join(' ')}` : ''}: ` +
    `GC in ${DURATION} s after ${WARMUP} s of warm-up, ${ROUNDS} round(s)`,
)
console.log('| round | mode | requests | scavenges | mean scavenge ms | mark-compacts | peak heap MB |')
console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: |')
for (let round = 1; round <= ROUNDS; round++) {
  for (const mode of MODES) {
    const r = await measure(mode)
    console.log(
      `| ${round} | ${mode} | ${r.requests} | ${r.scavenges} | ${r.meanScavengeMs.toFixed(1)} | ${r.markCompacts} | ${r.peakHeapMb.toFixed(0)} |`,
    )
  }
}
