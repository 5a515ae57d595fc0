'use strict'
// The preload `jsprof record` loads into the profiled Node process (`node --require <this file>`, or
// NODE_OPTIONS for commands that are not `node` itself). It does nothing unless the JSPROF_RECORD
// environment variable holds a recording configuration, and it *claims* that configuration: it
// deletes the variable (and itself from NODE_OPTIONS) at once, so processes the app spawns later
// (cluster workers, child_process.fork, which inherit execArgv) load this file and do nothing. Only the
// top Node process is profiled, and nothing else writes the trace file.
//
// Worker threads load this file too (they inherit execArgv, and NODE_OPTIONS' --require). The main
// thread hands them the configuration as worker_threads environment data (which child processes do
// not see), and each worker thread records itself into a trace of its own beside the main one
// (`t.json` -> `t.worker-<threadId>.json`): see startWorkerThread().
//
// Why not `new Profiler()`: Profiler.stop() is asynchronous (its samples are built off the main
// thread), and a process that ends through process.exit(), an uncaught exception or a signal gets no
// more turns of the event loop, only the synchronous 'exit' event. So the preload subscribes to the
// thread's sampler engine like a Profiler, with no buffer limit, and ends through the engine's
// synchronous path (lib/record/recorder.js); every way out of the process runs the same `finish()`:
//   - the event loop empties, process.exit(code), process.exitCode, an uncaught exception: 'exit';
//   - SIGINT / SIGTERM / SIGHUP with no handler of the app's: a native handler (src/signals.rs) wakes
//     the watcher thread (lib/record/watcher.js), which runs `finish()` on the main thread through the
//     inspector — V8 interrupts reach a main thread spinning in a loop that never returns — and the
//     process then dies of the signal (exit status 130 / 143 / 129 to a shell). When the app has its
//     own handler (libuv then holds the signal), the app decides, and its way out ends in 'exit'.
//   - SIGKILL, the OOM killer, process.abort(), a native crash (nothing runs): the watcher has the
//     main thread harvest the samples into a side file every --flush-every (lib/record/chunks.js),
//     and the `jsprof` CLI assembles the trace from it.

const ENV = 'JSPROF_RECORD'
// The worker_threads environment data key that carries the configuration to worker threads.
const WORKER_KEY = 'jsprof.record'
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP']
// Package-manager launchers that run the real app as a child: they pass the claim on to it.
const LAUNCHER = /[\\/](npm|npx|pnpm|pnpx|yarn|yarnpkg|corepack)(-cli)?(\.c?js)?$/

function stderrLine(text) {
  try {
    require('node:fs').writeSync(2, `jsprof: ${text}\n`)
  } catch {
    // stderr closed: nothing to tell anyone.
  }
}

function isLauncher() {
  const script = process.argv[1]
  return typeof script === 'string' && LAUNCHER.test(script)
}

/** Removes `--require "<this file>"` from NODE_OPTIONS, for the processes the app starts. */
function removeFromNodeOptions() {
  const options = process.env.NODE_OPTIONS
  if (!options || !options.includes(__filename)) return
  const cleaned = options
    .split(`--require ${JSON.stringify(__filename)}`)
    .join('')
    .split(`--require ${__filename}`)
    .join('')
    .trim()
  if (cleaned) process.env.NODE_OPTIONS = cleaned
  else delete process.env.NODE_OPTIONS
}

function claim() {
  let isMainThread = true
  try {
    isMainThread = require('node:worker_threads').isMainThread
  } catch {
    // No worker_threads: a main thread.
  }
  if (!isMainThread) return workerClaim()
  const raw = process.env[ENV]
  if (!raw) return null
  if (isLauncher()) {
    // Pass the claim on to the processes the launcher starts, also when it got us through --require.
    if (!(process.env.NODE_OPTIONS || '').includes(__filename)) {
      process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, `--require ${JSON.stringify(__filename)}`]
        .filter(Boolean)
        .join(' ')
    }
    return null
  }
  let config
  try {
    config = JSON.parse(raw)
    if (typeof config.output !== 'string' || !(config.intervalUs > 0)) throw new Error('bad fields')
  } catch (err) {
    stderrLine(`ignoring a malformed ${ENV} configuration (${err.message}); not profiling`)
    config = null
  }
  // With --children every Node process below records itself too (the configuration stays in the
  // environment and NODE_OPTIONS); otherwise this one claims it alone.
  if (!config || !config.children) {
    delete process.env[ENV]
    removeFromNodeOptions()
  }
  return config
}

/**
 * Under --children, whether this process is the top one (it writes `-o` itself and reports through
 * the CLI's status file): the first to create the lock file in the CLI's directory is.
 */
function isTopProcess(config) {
  if (!config.children) return true
  try {
    const fs = require('node:fs')
    fs.closeSync(fs.openSync(require('node:path').join(require('node:path').dirname(config.status), 'top.lock'), 'wx'))
    return true
  } catch {
    return false
  }
}

/** A worker thread's configuration: what the main thread's preload handed down, else null. */
function workerClaim() {
  try {
    const raw = require('node:worker_threads').getEnvironmentData(WORKER_KEY)
    if (typeof raw !== 'string') return null
    return { ...JSON.parse(raw), worker: true }
  } catch {
    return null
  }
}

function start(config) {
  if (config.worker) return startWorkerThread(config)
  const { performance } = require('node:perf_hooks')
  const startedAt = performance.now()
  // Everything used at exit is captured now, before the app can replace or break it.
  const path = require('node:path')
  const os = require('node:os')
  const { startRecorder } = require('./recorder')
  const { assemble, writeStatus, siblingOutput } = require('./chunks')
  const shared = require('./shared')
  const { finishWorkersFirst } = require('./workers')
  const { pid } = process
  const kill = process.kill.bind(process)
  const top = isTopProcess(config)
  const dir = typeof config.status === 'string' ? path.dirname(config.status) : null
  // A child process (--children) writes beside the top one's trace: t.json -> t.pid-<pid>.json (or
  // its own name when -o has {pid}), with status and side files of its own.
  const named = path.resolve(config.output.split('{pid}').join(String(pid)))
  // Where the traces of other threads and processes go beside (`-o -`: the trace goes to the CLI's
  // stdout, the others to the working directory).
  const base =
    typeof config.siblings === 'string' ? path.resolve(config.siblings.split('{pid}').join(String(pid))) : named
  const output = top || config.output.includes('{pid}') ? named : siblingOutput(base, `pid-${pid}`)
  const status = top || !dir ? config.status : path.join(dir, `status.${pid}.json`)
  const chunksFile = path.resolve(
    !top && dir
      ? path.join(dir, `chunks.${pid}.jsonl`)
      : typeof config.chunks === 'string'
        ? config.chunks
        : `${output}.${pid}.chunks`,
  )
  const flushEveryMs = config.flushEveryMs >= 0 ? config.flushEveryMs : require('./spacing').DEFAULT_FLUSH_EVERY_MS
  const numbers = {}
  for (const signal of SIGNALS) numbers[signal] = os.constants.signals[signal]
  const state = new Int32Array(new SharedArrayBuffer(shared.SLOTS * 4))
  const sidecar = { pid, threadId: 0, timeOrigin: performance.timeOrigin }

  // The native handlers go in first: the watcher thread, not the engine's timers, then asks for the
  // flushes (a V8 interrupt reaches a main thread that spins; a timer never fires there).
  const watched = watchNatively(numbers)
  let recorder
  // Declared before anything can call finish() (a signal can arrive through the inspector at once).
  let workersStarted = 0
  try {
    recorder = startRecorder({
      intervalUs: config.intervalUs,
      chunksFile,
      pid,
      output,
      flushEveryMs,
      periodic: !watched,
      // A pipe or device only where the user named it (-o), never at a name jsprof picked.
      write: { mode: config.mode, streams: output === named },
      inlined: config.inlined === true,
    })
  } catch (err) {
    stderrLine(`cannot profile this process: ${err.message}`)
    if (watched) unwatch(numbers)
    return
  }
  const heap = startHeap(config)
  // Worker threads terminated, or still running when the process ends, write their traces first.
  const finishWorkers = finishWorkersFirst({ hookExpression: shared.hookExpression, onError: stderrLine })
  // --stalls: each event-loop stall's trace beside the trace (t.json -> t.stall-<n>.json).
  startStalls(config, output)

  /** Ends the recording and writes the trace (once); 'busy' when the engine was busy: ask again. */
  function finish(how) {
    if (Atomics.compareExchange(state, shared.CLAIM, shared.RUNNING, shared.BY_MAIN) !== shared.RUNNING)
      return undefined
    const startedAt = Date.now()
    const facts = { pid, how }
    let askedWorkers = false
    try {
      let result = recorder.finish(sidecar)
      if (result === null && how !== 'exit') {
        Atomics.store(state, shared.CLAIM, shared.RUNNING)
        return 'busy'
      }
      // This thread's samples end here; its workers then write theirs (also when this write fails below).
      askedWorkers = true
      finishWorkers()
      // At exit nobody asks again: the trace up to the last flush.
      if (result === null) result = { ...assemble(chunksFile, output), partial: true }
      const heapResult = finishHeap(heap, output)
      writeStatus(status, {
        ...result,
        ...facts,
        ...heapResult,
        writeMs: Date.now() - startedAt,
        startMs,
        workersStarted,
      })
    } catch (err) {
      stderrLine(`could not write the trace to ${output}: ${err.message}`)
      writeStatus(status, { error: err.message, ...facts })
    }
    if (!askedWorkers) finishWorkers()
    return undefined
  }

  // The watcher thread's requests (lib/record/watcher.js), run here through the inspector.
  Object.defineProperty(globalThis, Symbol.for(shared.HOOK), {
    value(what, signal) {
      if (what === 'flush') {
        // Returns how long the flush took, in ms (the watcher spaces the next one by it).
        if (Atomics.load(state, shared.CLAIM) !== shared.RUNNING) return 0
        let ms = 0
        try {
          ms = recorder.flush()
        } catch (err) {
          stderrLine(`could not flush the profile to ${chunksFile}: ${err.message}`)
        }
        // The CLI's status line on a terminal (one small write a flush, only when asked).
        if (ms >= 0 && top && config.progress && dir)
          writeStatus(path.join(dir, 'progress.json'), { samples: recorder.flushedSamples })
        return Math.max(0, ms)
      } else if (what === 'signal') {
        const name = Object.keys(numbers).find((k) => numbers[k] === signal)
        if (!name) return undefined
        if (finish(name) === 'busy') return 'busy'
        native().dieOfSignal(signal)
      }
      return undefined
    },
  })

  let watcher = null
  if (watched) {
    try {
      const { Worker } = require('node:worker_threads')
      watcher = new Worker(path.join(__dirname, 'watcher.js'), {
        name: 'jsprof record',
        execArgv: [],
        stdout: false,
        workerData: {
          state,
          signals: numbers,
          flushEveryMs: recorder.canFlush ? flushEveryMs : 0,
          chunksFile,
          output,
          statusFile: status,
          answerMs: ANSWER_MS,
          writeMs: WRITE_MS,
          // The flushes' spacing counts from here (lib/record/spacing.js).
          startedAtEpochMs: performance.timeOrigin + startedAt,
        },
      })
      watcher.unref()
      watcher.on('error', (err) => {
        stderrLine(`the signal watcher failed (${err.message}); signals are handled when the app yields`)
        watcher = null
        unwatch(numbers)
        watchInJs()
      })
    } catch (err) {
      stderrLine(`cannot start the signal watcher (${err.message}); signals are handled when the app yields`)
      unwatch(numbers)
      watchInJs()
    }
    // When the app removes its last listener for a signal, libuv gives it back its default action
    // (death without a trace): take it back. (Node's own listener, which closes the signal handle,
    // runs before this one.)
    process.on('removeListener', (name) => {
      if (Object.hasOwn(numbers, name) && process.listenerCount(name) === 0) native().rearmSignal(numbers[name])
    })
  } else {
    watchInJs()
  }

  // Worker threads created from now on record themselves (the watcher above does not).
  try {
    const threads = require('node:worker_threads')
    const siblings = top ? base : output
    threads.setEnvironmentData(WORKER_KEY, JSON.stringify({ ...config, output: siblings, status, flushEveryMs }))
    process.on('worker', (w) => {
      // Neither the signal watcher nor --stalls' helper thread is the app's.
      if ((!watcher || w.threadId !== watcher.threadId) && !helperThreads().has(w.threadId)) workersStarted++
    })
  } catch (err) {
    stderrLine(`worker threads will not be profiled (${err.message})`)
  }

  // What the start cost this thread (ms), reported in the status with the flushes' and the write's.
  const startMs = performance.now() - startedAt
  process.on('exit', () => {
    finish('exit')
    // Let the watcher drop its inspector session before Node tears the process down; a watcher that
    // has not connected yet (a short-lived app: a worker takes tens of ms to start) never will, and
    // nothing is waited for (that wait was most of record's fixed cost on a short command).
    const before = Atomics.compareExchange(state, shared.SESSION, shared.NO_SESSION, shared.EXITING)
    if (watcher && before === shared.CONNECTED) {
      watcher.postMessage('exit')
      Atomics.wait(state, shared.EXITED, 0, 250)
    }
  })

  /** Where signals cannot be caught natively: JS handlers, which run when the app yields. */
  function watchInJs() {
    for (const signal of SIGNALS) {
      const onSignal = () => {
        // The app has a handler of its own: it decides whether and how to end, and that ends in 'exit'.
        if (process.listenerCount(signal) > 1) return
        finish(signal)
        process.removeListener(signal, onSignal)
        // Die of the signal, as without us. Should that return (a platform without real signals), exit
        // with the conventional status.
        kill(pid, signal)
        process.exit(128 + (numbers[signal] || 0))
      }
      try {
        process.on(signal, onSignal)
      } catch {
        // A signal this platform cannot listen to.
      }
    }
  }
}

/**
 * A worker thread records itself: on its own thread's sampler engine (V8 profiles each thread's
 * isolate apart), harvested into its own side file every --flush-every while it yields, written as its
 * own trace when it exits (its event loop emptied, process.exit() in it). A worker that never gets to
 * exit — terminate(), or the process ending while it runs — runs no more JS: the thread ending it asks
 * it first, through the inspector, to write its trace (lib/record/workers.js; its hook below). Only
 * when it cannot answer does the `jsprof` CLI assemble its trace from the side file, with the samples
 * up to its last flush; a worker that sampled nothing leaves no file.
 */
function startWorkerThread(config) {
  const path = require('node:path')
  const { threadId } = require('node:worker_threads')
  const { startRecorder } = require('./recorder')
  const { writeStatus, siblingOutput } = require('./chunks')
  const shared = require('./shared')
  const { finishWorkersFirst, sharedState, announce, answer, STARTED, DONE, BUSY } = require('./workers')
  const { pid } = process
  // Without the CLI (the preload loaded by hand: no status file, so no CLI directory), a worker's side
  // file goes beside its trace, as the main thread's does, and it reports to nobody.
  const dir = typeof config.status === 'string' ? path.dirname(config.status) : null
  const output = siblingOutput(config.output, `worker-${threadId}`)
  const chunksFile = dir ? path.join(dir, `chunks.${pid}.t${threadId}.jsonl`) : path.resolve(`${output}.${pid}.chunks`)
  const status = dir ? path.join(dir, `status.${pid}.t${threadId}.json`) : null
  const { performance } = require('node:perf_hooks')
  const sidecar = { pid, threadId, timeOrigin: performance.timeOrigin }
  let recorder
  try {
    recorder = startRecorder({
      intervalUs: config.intervalUs,
      chunksFile,
      pid,
      threadId,
      output,
      flushEveryMs: config.flushEveryMs,
      // Flushed by its own timer below, spaced by their cost (lib/record/spacing.js).
      periodic: false,
      // A worker that sampled nothing leaves no file (the CLI says so).
      write: { mode: config.mode, skipEmpty: true, streams: false },
      inlined: config.inlined === true,
    })
  } catch (err) {
    stderrLine(`cannot profile worker thread ${threadId}: ${err.message}`)
    return
  }
  // Each thread samples its own heap (V8 has one heap per isolate).
  const heap = startHeap(config)
  const flusher = recorder.canFlush
    ? startFlushing(recorder, config.flushEveryMs, performance, (err) =>
        stderrLine(`could not flush worker thread ${threadId}'s profile: ${err.message}`),
      )
    : null
  // Its own workers (nested) write their traces before it terminates them, or before it ends.
  const finishWorkers = finishWorkersFirst({ hookExpression: shared.hookExpression, onError: stderrLine })
  let stage = 'running'
  // A request that came while the trace was being written (its slot is told DONE at the end).
  let waiting = -1

  /** Writes the trace (once): true when written (or nothing to do), false when the engine was busy. */
  function finish(how) {
    if (stage === 'done') return true
    // Asked again from inside its own finish (an interrupt): not done yet.
    if (stage === 'finishing') return false
    stage = 'finishing'
    if (flusher) flusher.stop()
    const startedAt = Date.now()
    const facts = { pid, threadId, how }
    try {
      const result = recorder.finish(sidecar)
      if (result === null) {
        stage = 'running'
        return false
      }
      const heapResult = finishHeap(heap, output)
      writeStatus(status, { ...result, ...facts, ...heapResult, writeMs: Date.now() - startedAt })
    } catch (err) {
      stderrLine(`could not write worker thread ${threadId}'s trace to ${output}: ${err.message}`)
      writeStatus(status, { error: err.message, ...facts })
    }
    stage = 'done'
    finishWorkers()
    // Whoever asked meanwhile (terminate() while this worker wrote its trace at its own exit, as
    // jest-worker does 500 ms after asking a worker to end) need not wait for the thread to end.
    if (waiting >= 0) answer(workers, waiting, DONE)
    return true
  }

  // The thread that terminates this one, or whose process ends while it runs, asks it to write its
  // trace first (lib/record/workers.js), through the inspector: a V8 interrupt, which a thread spinning
  // in a loop that never returns takes too.
  const workers = sharedState()
  Object.defineProperty(globalThis, Symbol.for(shared.HOOK), {
    value(what, slot) {
      if (what === 'flush') {
        // The watcher's ask (lib/record/watcher.js), for a worker that does not yield (its timer
        // never fires): flushed only when due by its own spacing, and not while it ends.
        if (stage === 'running' && flusher) flusher.flushIfDue({ fromInterrupt: true })
        return
      }
      if (what !== 'finish') return
      answer(workers, slot, STARTED)
      const done = finish('terminated')
      if (!done && stage === 'finishing') waiting = slot
      answer(workers, slot, done ? DONE : BUSY)
    },
  })
  announce(workers, threadId)
  process.on('exit', () => finish('exit'))
}

/**
 * A worker thread's flushes: on its own timer while it yields (unreferenced: it keeps no worker
 * alive), and when the watcher asks one that does not yield; spaced by what they cost, as the main
 * thread's are (lib/record/spacing.js). Returns `{ flushIfDue({ fromInterrupt }), stop() }`.
 *
 * The watcher's ask and a terminate() run here through a V8 interrupt, which can land inside Node's
 * timer code between its check that this timer is armed and its call of it: clearing the timer there
 * makes Node call a cleared timer (`timer._onTimeout is not a function`, thrown in the app's worker).
 * So an interrupt never clears or re-arms it: the armed timer finds the new due time when it fires.
 */
function startFlushing(recorder, flushEveryMs, performance, onError) {
  const { flushSpacing } = require('./spacing')
  const startedAt = performance.now()
  const spacing = flushSpacing(flushEveryMs, startedAt)
  let dueAt = startedAt + flushEveryMs
  let timer = null
  function arm() {
    if (timer) clearTimeout(timer)
    timer = setTimeout(flushIfDue, Math.max(1, Math.ceil(dueAt - performance.now())))
    timer.unref()
  }
  let stopped = false
  function flushIfDue({ fromInterrupt = false } = {}) {
    if (stopped) return
    const at = performance.now()
    if (at < dueAt) return fromInterrupt ? undefined : arm()
    let ms = -1
    try {
      ms = recorder.flush()
    } catch (err) {
      onError(err)
    }
    // ms <= 0: the engine was busy (an interrupt inside its own work), or the flush failed: later.
    const now = performance.now()
    dueAt = now + spacing.next(at, ms, now)
    if (!fromInterrupt) arm()
  }
  arm()
  return {
    flushIfDue,
    /** The recording ends: no more flushes (the armed timer, unreferenced, finds it stopped). */
    stop() {
      stopped = true
    },
  }
}

/** The thread ids of the stall watchers' helper threads (the 'worker' event comes once each has one). */
function helperThreads() {
  try {
    return require('../api/stalls').helperThreadIds
  } catch {
    return new Set()
  }
}

/** `--stalls`: the stall watcher of this thread, writing beside `output` (null without, or when it cannot start). */
function startStalls(config, output) {
  if (!(config.stallThresholdMs > 0)) return null
  const path = require('node:path')
  try {
    return require('../api/stalls').watchStalls({
      thresholdMs: config.stallThresholdMs,
      // Stall traces sampled as the recording is (--interval), not at watchStalls' default.
      sampleInterval: config.intervalUs / 1000,
      dir: path.dirname(output),
      prefix: `${path.basename(output).replace(/\.json$/, '')}.stall`,
      onError: (err) => stderrLine(`stall trace: ${err && err.message}`),
    })
  } catch (err) {
    stderrLine(`no stall traces: ${err.message}`)
    return null
  }
}

/** `--heap`: this thread's heap sampler, started now (null without --heap, or when it cannot start). */
function startHeap(config) {
  if (!config.heap) return null
  try {
    return require('./heap').startHeapRecording(config.heap)
  } catch (err) {
    stderrLine(`no heap profile for thread ${require('node:worker_threads').threadId}: ${err.message}`)
    return null
  }
}

/** The heap profile beside the trace: `{ heap: { path, size, samples } }` or `{ heapError }` for the status. */
function finishHeap(heap, output) {
  if (!heap) return {}
  try {
    return { heap: heap.finish(output) }
  } catch (err) {
    return { heapError: err.message }
  }
}

// How long the watcher waits for the main thread to take a signal before writing the trace itself
// from what was flushed, and how long for a main thread that is writing it.
const ANSWER_MS = 1000
const WRITE_MS = 5000

function native() {
  return require('../native').binding
}

/** Installs the native signal handlers at once (deliveries wait for the watcher). */
function watchNatively(numbers) {
  try {
    return native().watchSignals(Object.values(numbers))
  } catch (err) {
    stderrLine(`cannot watch signals natively (${err.message}); signals are handled when the app yields`)
    return false
  }
}

function unwatch(numbers) {
  for (const n of Object.values(numbers)) {
    try {
      native().unwatchSignal(n)
    } catch {
      // Nothing more to do.
    }
  }
}

const config = claim()
if (config) start(config)
