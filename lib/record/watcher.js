'use strict'
// The worker thread `jsprof record` starts in the profiled process (lib/record/preload.js). Its event
// loop stays free while the app's main thread spins, so it is the one that acts on time:
//   - every --flush-every it asks the main thread (and its worker threads) to harvest the samples into the side file, so a process
//     killed without warning (SIGKILL, the OOM killer, abort) still leaves its samples up to then;
//   - on SIGINT / SIGTERM / SIGHUP (caught by the native watcher, src/signals.rs, when the app has no
//     handler of its own) it asks the main thread to write the trace and die of the signal.
// Both requests run on the main thread through this worker's inspector session connected to it (and the
// flush, for worker threads that never yield, on each of them through its NodeWorker domain): the
// inspector serves it through V8 interrupts, which a spinning loop takes too. An interrupt that lands
// inside the sampler engine's own work is answered 'busy' (flush: skipped; signal: asked again). Should the main thread
// still not answer (blocked in native code, or a trace too big to write in time), the worker writes
// the trace from the side file itself and ends the process by the signal: jsprof never makes a
// process harder to kill.

const { workerData, parentPort } = require('node:worker_threads')
const inspector = require('node:inspector')
// The addon for the signal deliveries; the side file's code only if the main thread never answers.
const { binding } = require('../native')
const { CLAIM, RUNNING, BY_WORKER, EXITED, SESSION, NO_SESSION, CONNECTED, hookExpression } = require('./shared')
const { sharedState, isRecording } = require('./workers')

const { state, signals, flushEveryMs, chunksFile, output, statusFile, answerMs, writeMs, startedAtEpochMs } = workerData

const session = new inspector.Session()
// A main thread that ended before this worker got here does not wait for it: then it never connects.
const connected = Atomics.compareExchange(state, SESSION, NO_SESSION, CONNECTED) === NO_SESSION
if (connected) session.connectToMainThread()

function ask(what, signal, then) {
  session.post(
    'Runtime.evaluate',
    {
      expression: hookExpression(what, signal),
      silent: true,
      returnByValue: true,
    },
    (err, result) => {
      if (then) then(err ? undefined : result && result.result && result.result.value)
    },
  )
}

// The flushes are spaced by lib/record/spacing.js from what each cost the main thread (the hook
// returns it), so that together they stay within ~1% of the recording's time.
const { performance } = require('node:perf_hooks')
const { flushSpacing } = require('./spacing')
// performance.now() on this thread when the recording began (the main thread's clock, as a Unix epoch).
const recordingStart = Number.isFinite(startedAtEpochMs) ? startedAtEpochMs - performance.timeOrigin : 0
const spacing = flushSpacing(flushEveryMs, recordingStart)
let flushTimer = null
let workersTimer = null
function scheduleFlush(delayMs) {
  flushTimer = setTimeout(() => {
    if (Atomics.load(state, CLAIM) !== RUNNING) return
    const askedAt = performance.now()
    // 0: nothing was flushed (the engine was busy, or the recording is ending): asked again later.
    ask('flush', 0, (took) => scheduleFlush(spacing.next(askedAt, Number(took) || 0, performance.now())))
  }, delayMs)
}

// The worker threads of the main thread, by threadId -> NodeWorker session id: a worker that never
// yields never runs its own timer, so it is asked to flush from here too, through the same kind of
// interrupt (it flushes only when due by its own spacing). So a process killed without warning
// still leaves such a worker's samples up to then.
const workerSessions = new Map()
const workers = sharedState()
function watchWorkers() {
  session.on('NodeWorker.attachedToWorker', ({ params }) => {
    const m = /^\[worker (\d+)\]/.exec((params.workerInfo && params.workerInfo.title) || '')
    if (m) workerSessions.set(Number(m[1]), params.sessionId)
  })
  session.on('NodeWorker.detachedFromWorker', ({ params }) => {
    for (const [id, sessionId] of workerSessions) if (sessionId === params.sessionId) workerSessions.delete(id)
  })
  session.post('NodeWorker.enable', { waitForDebuggerOnStart: false }, () => {})
}
function flushWorkers() {
  for (const [threadId, sessionId] of workerSessions) {
    if (!isRecording(workers, threadId)) continue
    session.post(
      'NodeWorker.sendMessageToWorker',
      {
        sessionId,
        message: JSON.stringify({
          id: 1,
          method: 'Runtime.evaluate',
          params: { expression: hookExpression('flush', 0), silent: true },
        }),
      },
      () => {},
    )
  }
}

if (connected && flushEveryMs > 0) {
  scheduleFlush(flushEveryMs)
  if (workers) {
    watchWorkers()
    // Every --flush-every, whatever the main thread's spacing: each worker flushes only when due by
    // its own (a cheap no-op otherwise).
    workersTimer = setInterval(() => {
      if (Atomics.load(state, CLAIM) === RUNNING) flushWorkers()
    }, flushEveryMs)
  }
}

// How soon a signal is asked again when the main thread was inside the engine's own work.
const BUSY_RETRY_MS = 10

let signalled = 0
function askSignal(signal) {
  ask('signal', signal, (answer) => {
    if (answer === 'busy' && Atomics.load(state, CLAIM) === RUNNING) setTimeout(askSignal, BUSY_RETRY_MS, signal)
  })
}
function onSignal(signal) {
  if (signalled) return
  signalled = signal
  askSignal(signal)
  setTimeout(() => {
    if (Atomics.compareExchange(state, CLAIM, RUNNING, BY_WORKER) === RUNNING) {
      // The main thread did not take the signal in time: the trace up to the last flush, then die.
      const name = Object.keys(signals).find((k) => signals[k] === signal) || String(signal)
      const started = Date.now()
      const { assemble, writeStatus } = require('./chunks')
      try {
        const result = assemble(chunksFile, output)
        if (result) {
          writeStatus(statusFile, {
            ...result,
            pid: process.pid,
            how: `${name}, main thread unresponsive`,
            writeMs: Date.now() - started,
            partial: true,
          })
        }
      } catch (err) {
        writeStatus(statusFile, { error: err.message, pid: process.pid, how: name })
      }
      binding.dieOfSignal(signal)
    } else {
      // The main thread is writing the trace: give it time, but not forever.
      setTimeout(() => binding.dieOfSignal(signal), writeMs).unref()
    }
  }, answerMs)
}

// The main thread installed the handlers before the app ran (an app's own process.on(signal) has
// replaced them since, and keeps its signal): only take the deliveries from here on.
if (connected) binding.watchSignals([], onSignal)
else parentPort.close()

parentPort.on('message', (message) => {
  if (message !== 'exit') return
  // The process is ending: drop the session first (a session connected to the main thread at exit
  // makes Node print "Waiting for the debugger to disconnect...").
  if (flushTimer) clearTimeout(flushTimer)
  if (workersTimer) clearInterval(workersTimer)
  try {
    session.disconnect()
  } catch {
    // Already gone.
  }
  Atomics.store(state, EXITED, 1)
  Atomics.notify(state, EXITED)
  parentPort.close()
})
