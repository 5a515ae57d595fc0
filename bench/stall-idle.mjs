// What watchStalls costs an idle process: CPU time (all threads) per second of a Node process that does
// nothing, with and without the watcher (its beat timer, the native thread, the helper worker), measured
// over `--seconds` after a `--settle` (startup, the helper worker's boot and the GCs after it: a fresh
// worker costs ~1-2 ms/s for its first ~20 s here, then nothing), pairs of
// child processes run side by side, `--rounds` times. On an idle loop each beat is a timer wake-up: the
// watcher's whole cost; a busy server's loop is awake anyway (bench/server: `--modes none,stalls`).
//
//   node bench/stall-idle.mjs [--rounds 3] [--seconds 8] [--settle 25] [--threshold 300]

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './stats.mjs'
import { num } from './args.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const ROUNDS = num('rounds', 3)
const SECONDS = num('seconds', 8)
const SETTLE = num('settle', 25)
const THRESHOLD = num('threshold', 300)

const child = (watch) => `
  ${watch ? `require(${JSON.stringify(root)}).watchStalls({ thresholdMs: ${THRESHOLD}, onStall() {} })` : ''}
  const keep = setInterval(() => {}, 1000)
  setTimeout(() => {
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    setTimeout(() => {
      const c = process.cpuUsage(c0)
      process.stdout.write(String((c.user + c.system) / ((performance.now() - t0) / 1000)))
      process.exit(0)
    }, ${SECONDS * 1000})
  }, ${SETTLE * 1000})
`

async function measure(watch) {
  const p = spawn(process.execPath, ['-e', child(watch)], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  p.stdout.on('data', (d) => (out += d))
  await once(p, 'exit')
  return Number(out)
}

const none = []
const watched = []
for (let r = 0; r < ROUNDS; r++) {
  const [a, b] = await Promise.all([measure(false), measure(true)])
  none.push(a)
  watched.push(b)
  console.log(`  round ${r + 1}: idle ${a.toFixed(0)} µs/s, with watchStalls ${b.toFixed(0)} µs/s`)
}
console.log(
  `idle process, CPU µs per second (median of ${ROUNDS}; load ${os.loadavg()[0].toFixed(2)}): no watcher ${median(none).toFixed(0)}, ` +
    `watchStalls (threshold ${THRESHOLD} ms) ${median(watched).toFixed(0)}: +${((median(watched) - median(none)) / 10_000).toFixed(2)}% of one core`,
)
