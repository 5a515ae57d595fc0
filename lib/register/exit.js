'use strict'
// How jsprof-node/register ends with the process, whose life stays the app's: the last chunk is pushed
// within `timeoutMs` (JSPROF_EXIT_TIMEOUT_MS, default 2 s), the exit status and the app's own signal
// handlers stay what they are, and nothing of the register keeps the process alive. Every way out:
//
// - The event loop runs empty ('beforeExit'): the last chunk is cut and pushed, and the exporters are
//   closed within the deadline (their pushes are unref'd: only this bounded wait holds the process).
// - process.exit(), an uncaught exception, an app's signal handler that exits: the synchronous 'exit'
//   event, with no more turns of the loop. The last chunk is cut synchronously, its requests built, and
//   a worker thread sends them while this thread waits for it (Atomics.wait, at most the deadline).
// - SIGTERM or SIGINT while the app has no handler of its own: a native handler (src/signals.rs) takes
//   the signal; on this thread's loop the last chunk is pushed, then the process dies of the signal as
//   it would have (exit status 143 / 130 to a shell). The native side ends it by the signal at the
//   deadline whatever this thread does: a main thread that spins never runs the push, and still dies.
//   A handler of the app's own (added before or after) keeps the signal (libuv takes it over): the
//   app decides, and its way out is one of the two above. When it removes its last handler, the native
//   one is put back. Not on Windows, and not under `jsprof record`, whose watcher has the signals.

const SIGNALS = ['SIGTERM', 'SIGINT']
/** How much earlier than the native deadline a signal's push gives up, to die cleanly by itself. */
const SIGNAL_MARGIN_MS = 100

/**
 * Ends `continuous` and pushes its last chunk through `exporters` on every way out of the thread, in
 * at most `timeoutMs` (0: nothing is pushed at the end and signals are left alone). `main`: the main
 * thread (signals are the process's).
 */
function endWithProcess({ continuous, exporters, timeoutMs, main }) {
  if (timeoutMs === 0) return
  let ending = null

  /** Stops continuous profiling and closes the exporters, all within `budgetMs`; once. */
  function end(budgetMs) {
    if (ending === null) {
      const deadline = performance.now() + budgetMs
      const left = () => Math.max(0, deadline - performance.now())
      ending = within(continuous.stop(), budgetMs)
        .then(() => Promise.all(exporters.map((exporter) => exporter.close({ timeoutMs: left() }))))
        .catch(() => {})
    }
    return ending
  }

  process.on('beforeExit', () => {
    end(timeoutMs)
  })
  process.on('exit', () => {
    if (ending !== null) return
    ending = Promise.resolve()
    pushNow(continuous, exporters, timeoutMs)
  })
  if (main) setImmediate(() => watchSignals(end, timeoutMs))
}

/** `promise`, or undefined after `ms` (the timer holds the process meanwhile, no longer). */
function within(promise, ms) {
  let timer
  return Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() =>
    clearTimeout(timer),
  )
}

/**
 * In the 'exit' event: the last chunk cut now, its requests sent by a worker thread while this thread
 * waits at most `timeoutMs`. Never throws (the app's exit goes on whatever happens here).
 */
function pushNow(continuous, exporters, timeoutMs) {
  try {
    const chunk = continuous.stopSync()
    if (chunk === null) return
    const requests = []
    for (const exporter of exporters) {
      try {
        for (const r of exporter.requestsFor(chunk)) requests.push({ ...r, url: r.url.href })
      } catch {
        // This exporter cannot encode the chunk: the others still send theirs.
      }
    }
    if (requests.length === 0) return
    const { Worker } = require('node:worker_threads')
    const done = new SharedArrayBuffer(4)
    const worker = new Worker(require('node:path').join(__dirname, 'exit-worker.js'), {
      name: 'jsprof register',
      execArgv: [],
      stdout: true,
      stderr: true,
      workerData: { requests, timeoutMs, done },
    })
    worker.unref()
    Atomics.wait(new Int32Array(done), 0, 0, timeoutMs)
  } catch {
    // Nothing more can be done at exit.
  }
}

/** The native signal handlers (see the header), if the app has none and `jsprof record` is not here. */
function watchSignals(end, timeoutMs) {
  if (globalThis[Symbol.for('jsprof.record')] !== undefined) return
  const numbers = require('node:os').constants.signals
  const ours = SIGNALS.filter((name) => process.listenerCount(name) === 0)
  if (ours.length === 0) return
  let binding
  try {
    binding = require('../native').binding
    const budget = Math.max(1, timeoutMs - SIGNAL_MARGIN_MS)
    const watched = binding.watchSignalsWithin(
      ours.map((name) => numbers[name]),
      (signal) => {
        end(budget).finally(() => binding.dieOfSignal(signal))
      },
      timeoutMs,
    )
    if (!watched) return
  } catch {
    // No native handler: signals keep their default action (no last push on a signal).
    return
  }
  // The app removed its last handler of a signal: libuv gave it back its default action; ours again.
  process.on('removeListener', (name) => {
    if (ours.includes(name) && process.listenerCount(name) === 0) {
      try {
        binding.rearmSignal(numbers[name])
      } catch {
        // Its default action, then.
      }
    }
  })
}

module.exports = { endWithProcess }
