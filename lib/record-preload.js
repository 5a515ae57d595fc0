'use strict'
// The preload `jsprof record` loads into the profiled Node process (`node --require <this file>`, or
// NODE_OPTIONS for commands that are not `node` itself). It does nothing unless the JSPROF_RECORD
// environment variable holds a recording configuration, and it *claims* that configuration: it
// deletes the variable (and itself from NODE_OPTIONS) at once, so processes the app spawns later
// (cluster workers, child_process.fork, which inherit execArgv) load this file and do nothing. Only the
// top Node process is profiled, and nothing else writes the trace file.
//
// Why not `new Profiler()`: Profiler.stop() is asynchronous (its samples are built off the main
// thread), and a process that ends through process.exit(), an uncaught exception or a signal gets no
// more turns of the event loop, only the synchronous 'exit' event. So the preload drives V8's sampler
// through its own in-process inspector session, whose commands answer synchronously, and converts
// the V8 CPU profile with fromCpuProfile() — the same Rust conversion, with the same rules, a live
// Profiler uses. Every way out of the process runs the same synchronous `finish()`:
//   - the event loop empties, process.exit(code), process.exitCode, an uncaught exception: 'exit';
//   - SIGINT / SIGTERM / SIGHUP with no handler of the app's: finish, then re-raise the signal so the
//     process still dies of it (exit status 130 / 143 / 129 to a shell); when the app has its own
//     handler, the app decides, and its way out ends in 'exit'.
// Not covered (nothing runs): SIGKILL, process.abort(), a native crash.

const ENV = 'JSPROF_RECORD'
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
  const raw = process.env[ENV]
  if (!raw) return null
  let isMainThread = true
  try {
    isMainThread = require('node:worker_threads').isMainThread
  } catch {
    // No worker_threads: a main thread.
  }
  if (!isMainThread) return null
  if (isLauncher()) {
    // Pass the claim on to the processes the launcher starts, also when it got us through --require.
    if (!(process.env.NODE_OPTIONS || '').includes(__filename)) {
      process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, `--require ${JSON.stringify(__filename)}`].filter(Boolean).join(' ')
    }
    return null
  }
  delete process.env[ENV]
  removeFromNodeOptions()
  try {
    const config = JSON.parse(raw)
    if (typeof config.output !== 'string' || !(config.intervalUs > 0)) throw new Error('bad fields')
    return config
  } catch (err) {
    stderrLine(`ignoring a malformed ${ENV} configuration (${err.message}); not profiling`)
    return null
  }
}

function start(config) {
  // Everything used at exit is captured now, before the app can replace or break it.
  const fs = require('node:fs')
  const path = require('node:path')
  const inspector = require('node:inspector')
  const { fromCpuProfile } = require('./cpuprofile')
  const { timeOriginUs } = require('./clock')
  const stringify = JSON.stringify
  const { pid } = process
  const kill = process.kill.bind(process)
  const output = path.resolve(config.output.split('{pid}').join(String(pid)))
  const origin = timeOriginUs()

  const session = new inspector.Session()
  function post(method, params) {
    let answered = false
    let error = null
    let result
    session.post(method, params, (err, res) => {
      answered = true
      error = err
      result = res
    })
    if (!answered) throw new Error(`the inspector did not answer ${method} synchronously`)
    if (error) throw error
    return result
  }

  try {
    session.connect()
    post('Profiler.enable')
    post('Profiler.setSamplingInterval', { interval: Math.min(2 ** 31 - 1, Math.max(1, Math.round(config.intervalUs))) })
    post('Profiler.start')
  } catch (err) {
    stderrLine(`cannot profile this process: ${err.message}`)
    return
  }

  function report(status) {
    if (typeof config.status !== 'string') return
    try {
      fs.writeFileSync(config.status, stringify(status))
    } catch {
      // The CLI is gone or its temp dir is: it cannot print anything anyway.
    }
  }

  let finished = false
  function finish(how) {
    if (finished) return
    finished = true
    const startedAt = Date.now()
    try {
      const { profile } = post('Profiler.stop')
      const trace = fromCpuProfile(profile, { timeOrigin: origin })
      const tmp = `${output}.${pid}.tmp`
      fs.writeFileSync(tmp, stringify(trace))
      fs.renameSync(tmp, output)
      // Earliest to latest: V8 records some samples out of time order, and the trace keeps its order.
      let first = Infinity
      let last = -Infinity
      for (const s of trace.samples) {
        first = Math.min(first, s.timestamp)
        last = Math.max(last, s.timestamp)
      }
      const durationMs = trace.samples.length ? last - first : 0
      report({ path: output, pid, how, samples: trace.samples.length, durationMs, writeMs: Date.now() - startedAt })
    } catch (err) {
      stderrLine(`could not write the trace to ${output}: ${err.message}`)
      report({ error: err.message, pid, how })
    }
    try {
      session.disconnect()
    } catch {
      // Already gone.
    }
  }

  process.on('exit', () => finish('exit'))
  for (const signal of SIGNALS) {
    const onSignal = () => {
      // The app has a handler of its own: it decides whether and how to end, and that ends in 'exit'.
      if (process.listenerCount(signal) > 1) return
      finish(signal)
      process.removeListener(signal, onSignal)
      // Die of the signal, as without us. Should that return (a platform without real signals), exit
      // with the conventional status.
      kill(pid, signal)
      process.exit(128 + (require('node:os').constants.signals[signal] || 0))
    }
    try {
      process.on(signal, onSignal)
    } catch {
      // A signal this platform cannot listen to.
    }
  }
}

const config = claim()
if (config) start(config)
