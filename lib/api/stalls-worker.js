'use strict'
// The helper thread of watchStalls (lib/api/stalls.js). Its event loop is free while the watched
// main thread blocks, so it is the one that acts: the native stall watcher (src/stall_watcher.rs)
// tells it when the main loop has not turned for the threshold (also a stall that began before this
// thread was up: the watcher keeps it until it listens), and it asks the main thread, through its
// inspector session (V8 interrupts reach a thread that spins), to start the stall's trace (hook
// 'detected'); when the stall still runs `stuckMs` later, to hand over the trace so far (hook
// 'snapshot'), which it writes to `dir` from here. An interrupt that lands inside the sampler's own
// work is answered 'busy' and asked again. What it cannot write goes to the main thread's onError.

const { workerData, parentPort } = require('node:worker_threads')
const inspector = require('node:inspector')
const { binding } = require('../native')
const { hookExpression } = require('../hook-expression')
const { stallFile, writeStallFile } = require('./stall-files')

const { id, hook, stuckMs, dir, name, files, state } = workerData
const BUSY_RETRY_MS = 5

const session = new inspector.Session()
session.connectToMainThread()
Atomics.store(state, 0, 1)

/** Calls the main thread's hook; `then` gets its answer (undefined when the call failed). */
function ask(what, seq, then) {
  session.post(
    'Runtime.evaluate',
    {
      // The watched thread's CPU time when it was asked (Linux): how long it then ran before it took
      // the interrupt (JS takes one at once, native code once it returns).
      expression: hookExpression(hook, what, seq, binding.stallThreadCpuMs(id) ?? undefined),
      silent: true,
      returnByValue: true,
    },
    (err, result) => then(err ? undefined : result && result.result && result.result.value),
  )
}

function stillStalled(seq) {
  const now = binding.stallState(id)
  return now !== null && now.seq === seq
}

function snapshot(seq) {
  if (!stillStalled(seq)) return
  ask('snapshot', seq, (answer) => {
    if (answer === 'busy') return setTimeout(snapshot, BUSY_RETRY_MS, seq)
    // A cold sampler started for a stall past the rate limit: its trace so far in `stuckMs`.
    if (answer === 'later') return setTimeout(snapshot, stuckMs, seq)
    if (answer === null || typeof answer !== 'object' || typeof answer.json !== 'string' || !dir) return
    // The stall ended meanwhile: the watched thread writes the whole of it, which this must not replace.
    if (!stillStalled(seq)) return
    try {
      writeStallFile(stallFile(dir, name, answer.file), answer.json, files)
    } catch (err) {
      // The main thread's onError (stats.errors) has it once its loop turns.
      parentPort.postMessage({ error: { message: err.message, code: err.code } })
    }
  })
}

function detected(seq) {
  ask('detected', seq, (answer) => {
    if (answer === 'busy') return setTimeout(detected, BUSY_RETRY_MS, seq)
    // The turn itself began after the last beat (the loop slept first): a stall in that many ms.
    if (typeof answer === 'number') return setTimeout(() => stillStalled(seq) && detected(seq), answer)
    if (answer === 'ok') setTimeout(snapshot, stuckMs, seq)
  })
}

binding.listenStalls(id, (event) => {
  if (event.kind === 'stall') detected(event.seq)
})

parentPort.on('message', (message) => {
  if (message !== 'exit') return
  try {
    session.disconnect()
  } catch {
    // Already gone.
  }
  Atomics.store(state, 1, 1)
  Atomics.notify(state, 1)
  parentPort.close()
})
