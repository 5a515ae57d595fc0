// Labels' cost per context switch (docs/bench.md#labels-on-every-request): a loop of `await`s, plain
// (labels never used: no async hook) and inside withLabels (the hook records each change of label
// set), each in a child process of its own with a Profiler sampling at 10 ms (labels are followed only
// while something samples), modes alternated over rounds; ns per await (median) and the heap growth
// per await (the ring is preallocated: a context switch allocates nothing of ours).
//
// Then what a request's context costs (lib/labels.js beginRequest: a slot of the context ring, written
// in JS with no call into Rust, and the request's events routed into it), ns per request, best of 3.
//
//   node bench/labels.mjs [--awaits 200000] [--rounds 5]

import { spawnSync } from 'node:child_process'
import os from 'node:os'
import { fileURLToPath } from 'node:url'
import { arg } from './args.mjs'

const AWAITS = Number(arg('awaits', 200_000))
const ROUNDS = Number(arg('rounds', 5))
const mode = arg('mode', null)

async function awaits(n) {
  let x = 0
  // Two async functions awaiting each other: each await switches between two label contexts' code.
  const inner = async (i) => i
  for (let i = 0; i < n; i++) x += await inner(i)
  return x
}

if (mode !== null) {
  const { withLabels, Profiler } = await import('../index.js')
  const sampling = new Profiler({ sampleInterval: 10, maxBufferSize: 1e6 })
  const run = mode === 'labelled' ? () => withLabels({ route: 'GET /users/:id' }, awaits, AWAITS) : () => awaits(AWAITS)
  await run() // warm-up
  globalThis.gc()
  const heap = process.memoryUsage().heapUsed
  const start = process.hrtime.bigint()
  await run()
  const ns = Number(process.hrtime.bigint() - start)
  const grown = process.memoryUsage().heapUsed - heap
  await sampling.stop()
  process.stdout.write(JSON.stringify({ nsPerAwait: ns / AWAITS, heapBytesPerAwait: grown / AWAITS }))
} else {
  const self = fileURLToPath(import.meta.url)
  const results = { plain: [], labelled: [] }
  for (let r = 0; r < ROUNDS; r++) {
    for (const m of Object.keys(results)) {
      const child = spawnSync(process.execPath, ['--expose-gc', self, '--mode', m, '--awaits', String(AWAITS)], {
        encoding: 'utf8',
      })
      if (child.status !== 0) throw new Error(child.stderr)
      results[m].push(JSON.parse(child.stdout))
    }
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.log(
    `# ${AWAITS} awaits x ${ROUNDS} rounds, Node ${process.version}, load average ${os.loadavg()[0].toFixed(2)}`,
  )
  for (const [name, rs] of Object.entries(results)) {
    const ns = rs.map((r) => r.nsPerAwait)
    console.log(
      `${name.padEnd(9)} ${median(ns).toFixed(1)} ns/await (${ns.map((x) => x.toFixed(0)).join(' ')}), heap ${median(rs.map((r) => r.heapBytesPerAwait)).toFixed(2)} B/await`,
    )
  }

  const { createRequire } = await import('node:module')
  const require = createRequire(import.meta.url)
  const { EventEmitter } = require('node:events')
  const { beginRequest } = require('../lib/labels.js')
  const N = 100_000
  const best = (f) => {
    let ns = Infinity
    for (let r = 0; r < 3; r++) {
      const start = process.hrtime.bigint()
      for (let i = 1; i <= N; i++) f(i)
      ns = Math.min(ns, Number(process.hrtime.bigint() - start) / N)
    }
    return ns
  }
  const emitter = () => new EventEmitter()
  const plain = best(emitter)
  const context = best(() => beginRequest(emitter(), 'GET', '/users/:id'))
  console.log(`a request's context: ${(context - plain).toFixed(0)} ns per request (a ring slot, its events routed)`)
}
