'use strict'
// A worker thread that is terminated (worker.terminate(), as webpack's terser and jest-worker pools
// do), or cut off by its process ending, runs no more JS of its own: no 'exit' event, no turn of its
// event loop, and one that never yielded never harvested a sample either. So the thread that ends it
// asks it first, through the inspector, to write its trace: V8 interrupts reach a worker spinning in
// a loop that never returns, as they reach the main thread for the watcher (lib/record/watcher.js).
// `node --cpu-prof` keeps such a worker's samples the same way (Node ends its profile natively at the
// worker's teardown, which no JS can do).
//
// How: each recording thread (lib/record/preload.js) wraps Worker.prototype.terminate of its own
// isolate, and at its own end asks every worker it started that is still running. The asking thread's
// in-process inspector session enables the NodeWorker domain (the workers' sessions are announced
// synchronously), sends the worker a Runtime.evaluate calling its hook `finish`, disables the domain
// again, and waits on a shared Int32Array for the worker's answer, bounded. The array lives in
// worker_threads' environment data (every thread of the process shares it):
//   [slot]            the worker's threadId once its recorder runs (so a worker started without the
//                     preload, execArgv: [], is never asked and never waited for);
//   [SLOTS + slot]    the answer: STARTED (writing), DONE, BUSY (the interrupt landed inside the
//                     sampler engine's own work: asked again a moment later).
// slot = threadId % SLOTS: a clash of two live workers' slots only means one of them is not asked.

const KEY = 'jsprof.record.workers'
const SLOTS = 1024
const NONE = 0
const STARTED = 1
const DONE = 2
const BUSY = 3
// How long a worker has to start answering (an interrupt is taken within ms by running JS or an idle
// event loop; a worker blocked in a native call takes it only when back), and to write its trace then.
const ANSWER_MS = 1000
const WRITE_MS = 5000
const BUSY_RETRY_MS = 10

/**
 * The shared array (created by the first thread that asks, the main thread's preload before the app
 * runs, so every worker inherits it); null when worker_threads cannot share it.
 */
function sharedState() {
  try {
    const threads = require('node:worker_threads')
    let sab = threads.getEnvironmentData(KEY)
    if (!(sab instanceof SharedArrayBuffer)) {
      sab = new SharedArrayBuffer(SLOTS * 2 * 4)
      threads.setEnvironmentData(KEY, sab)
    }
    return new Int32Array(sab)
  } catch {
    return null
  }
}

function slotOf(threadId) {
  return threadId % SLOTS
}

/** Whether the worker `threadId` said it records. */
function isRecording(state, threadId) {
  return Boolean(state) && threadId > 0 && Atomics.load(state, slotOf(threadId)) === threadId
}

/** A worker's side: says it records (it can be asked from now on). */
function announce(state, threadId) {
  if (state) Atomics.store(state, slotOf(threadId), threadId)
}

/** A worker's side: answers a request (`answer` is STARTED, DONE or BUSY). */
function answer(state, slot, value) {
  if (!state || !(slot >= 0 && slot < SLOTS)) return
  Atomics.store(state, SLOTS + slot, value)
  Atomics.notify(state, SLOTS + slot)
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/**
 * The asking thread's side: wraps this thread's Worker.prototype.terminate and returns
 * `finishAll()`, which asks every worker this thread started that still runs (the thread's own end).
 * `hook` is the expression of the hook function in the worker (the same name in every thread);
 * `onError(text)` tells the user when a worker could not be asked.
 */
function finishWorkersFirst({ hookExpression, onError }) {
  const state = sharedState()
  if (!state) return () => {}
  const threads = require('node:worker_threads')
  const inspector = require('node:inspector')
  const live = new Set()
  let session = null

  /** The NodeWorker session ids of this thread's workers by threadId, and a function to end them. */
  function attach() {
    if (!session) {
      session = new inspector.Session()
      session.connect()
    }
    const ids = new Map()
    const onAttached = ({ params }) => {
      // The title is "[worker <threadId>]" or "[worker <threadId>] <name>" (Node's worker_inspector).
      const m = /^\[worker (\d+)\]/.exec((params.workerInfo && params.workerInfo.title) || '')
      if (m) ids.set(Number(m[1]), params.sessionId)
    }
    session.on('NodeWorker.attachedToWorker', onAttached)
    // Enabling announces every running worker synchronously.
    session.post('NodeWorker.enable', { waitForDebuggerOnStart: false })
    session.removeListener('NodeWorker.attachedToWorker', onAttached)
    return ids
  }

  function detach() {
    try {
      session.post('NodeWorker.disable')
    } catch {
      // Gone with the process.
    }
  }

  /** Asks again (after BUSY): only when the answer is still BUSY, not DONE since. */
  function sendAgain(sessionId, slot) {
    if (Atomics.compareExchange(state, SLOTS + slot, BUSY, NONE) === BUSY) post(sessionId, slot)
  }

  function send(sessionId, slot) {
    Atomics.store(state, SLOTS + slot, NONE)
    post(sessionId, slot)
  }

  function post(sessionId, slot) {
    session.post('NodeWorker.sendMessageToWorker', {
      sessionId,
      message: JSON.stringify({
        id: 1,
        method: 'Runtime.evaluate',
        params: { expression: hookExpression('finish', slot), silent: true },
      }),
    })
  }

  /** Asks the workers (threadIds) to write their traces and waits for them, bounded. */
  function finish(threadIds) {
    const asked = threadIds.filter((id) => isRecording(state, id))
    if (asked.length === 0) return
    let ids
    try {
      ids = attach()
    } catch (err) {
      onError(`could not ask worker threads to write their traces before they end (${err.message})`)
      return
    }
    try {
      const pending = []
      for (const id of asked) {
        if (!ids.has(id)) continue
        send(ids.get(id), slotOf(id))
        pending.push(id)
      }
      const answerBy = Date.now() + ANSWER_MS
      for (const id of pending) {
        const slot = slotOf(id)
        // Once the worker answered (writing, or busy), it has WRITE_MS more.
        let writeBy = Infinity
        for (;;) {
          const value = Atomics.load(state, SLOTS + slot)
          if (value === DONE) break
          if (value !== NONE && writeBy === Infinity) writeBy = Date.now() + WRITE_MS
          const left = (writeBy === Infinity ? answerBy : writeBy) - Date.now()
          if (left <= 0) {
            onError(
              `worker thread ${id} did not ${writeBy === Infinity ? 'answer' : 'finish writing its trace'} in time: its trace keeps the samples up to its last flush`,
            )
            break
          }
          if (value === BUSY) {
            sleep(Math.min(BUSY_RETRY_MS, left))
            sendAgain(ids.get(id), slot)
            continue
          }
          Atomics.wait(state, SLOTS + slot, value, left)
        }
      }
    } finally {
      detach()
    }
  }

  process.on('worker', (worker) => {
    live.add(worker)
    worker.once('exit', () => live.delete(worker))
  })

  const { Worker } = threads
  const terminate = Worker.prototype.terminate
  Object.defineProperty(Worker.prototype, 'terminate', {
    value: function terminate_(...args) {
      // A worker of this thread, still running: it writes its trace first.
      if (live.has(this)) {
        live.delete(this)
        try {
          finish([this.threadId])
        } catch (err) {
          onError(`could not ask worker thread ${this.threadId} to write its trace (${err.message})`)
        }
      }
      return terminate.apply(this, args)
    },
    writable: true,
    configurable: true,
    enumerable: false,
  })
  Object.defineProperty(Worker.prototype.terminate, 'name', { value: 'terminate' })

  return function finishAll() {
    const ids = [...live].map((w) => w.threadId)
    live.clear()
    try {
      finish(ids)
    } catch (err) {
      onError(`could not ask worker threads to write their traces (${err.message})`)
    }
  }
}

module.exports = { finishWorkersFirst, sharedState, isRecording, announce, answer, STARTED, DONE, BUSY }
