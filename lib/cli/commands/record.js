'use strict'
// `jsprof record [-o trace.json] [--interval ms] [--flush-every ms] -- node app.js …`: runs the
// command with lib/record/preload.js preloaded, forwards SIGINT/SIGTERM/SIGHUP to it, exits with its
// status, and assembles the trace from the flushed pieces when the process died without writing it.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const {
  CliError,
  usage,
  parse,
  info,
  statusLine,
  stamp,
  formatDuration,
  parseInterval,
  DEFAULT_INTERVAL_MS,
  MIN_INTERVAL_MS,
  heapSettings,
  heapLine,
  describeIoError,
  writeStdout,
} = require('../common')

const PRELOAD = path.resolve(__dirname, '..', '..', 'record', 'preload.js')
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP']
const DEFAULT_FLUSH_MS = require('../../record/spacing').DEFAULT_FLUSH_EVERY_MS
const MAX_FLUSH_MS = 1e6
const MIN_FLUSH_MS = 50

const HELP = `Usage: jsprof record [options] -- <command> [args…]

Runs <command> (a Node.js process: 'node app.js', or just 'app.js') with the jsprof sampling profiler
preloaded, and writes the ProfilerTrace of the whole process when it ends — including when it ends
through process.exit(), an uncaught exception, SIGINT (Ctrl-C) or SIGTERM, also while it spins in a
loop that never returns. Only the top Node process is profiled: processes it starts (cluster workers,
child_process.fork) are not, unless --children. Worker threads are: each writes a trace of its own
beside the main one (t.json -> t.worker-<threadId>.json) when it exits, or up to its last flush
when it is terminated or the process ends first.

Options:
  -o, --output <file>    where to write the trace ('{pid}' is replaced by the process id; checked
                         writable before the command runs) (default: ./jsprof-<pid>-<date>.trace.json);
                         '-' for stdout, once the command has ended (its own stdout then goes to
                         stderr; other threads' traces to
                         ./jsprof-<pid>-<date>.worker-<threadId>.trace.json)
      --interval <ms>    sampling interval in ms (default: ${DEFAULT_INTERVAL_MS}, smallest: ${MIN_INTERVAL_MS})
      --flush-every <ms> save the samples so far after this long, then at least this far apart
                         (further when flushes cost over 1% of the run, at most 60 s apart), so a
                         process killed without warning (SIGKILL, OOM killer, abort) still leaves
                         its trace up to the last one (default: ${DEFAULT_FLUSH_MS}; 0: never)
      --children         also profile every Node process the command starts (child_process,
                         cluster workers), each into a trace of its own: t.json -> t.pid-<pid>.json
                         (or its own name when -o has '{pid}'). Processes still running when the
                         top one ends are not waited for.
      --heap             also write each thread's heap profile beside its trace (t.json -> t.heap.json):
                         the objects allocated while recording that are still alive at the end, by
                         the code that allocated them (V8's sampling heap profiler; jsprof report,
                         diff, flamegraph and convert read it). Not for a process killed without warning.
                         V8 does not inline meanwhile, so a small helper keeps its own allocations
                         (the code runs slower: docs/heap.md)
      --heap-interval <bytes>  average bytes between heap samples (default: 524288, 512 KiB)
      --heap-inlining    let V8 inline as usual (a function inlined into its caller has no frame:
                         its allocations are its caller's)
      --inlined          give the samples of a function V8 inlined into its caller to that function
                         (Node 20-24's V8 charges them to the caller; its per-line ticks say where
                         they go, and the scripts' files which function holds each line: docs/analysis.md)
      --stalls           also write the trace of each event-loop stall of the main thread beside the
                         trace (t.trace.json -> t.trace.stall-<n>.json, n = 1, 2, ...): a turn that blocked
                         longer than --stall-threshold, from its start, sampled at --interval; one still
                         blocking is written as it is then, also from start-up
                         (jsprof report says which function and package held the loop, and how long)
      --stall-threshold <ms>  what a stall is (default: 300; implies --stalls)
  -h, --help             show this help

On a terminal, a status line on stderr shows the time so far and the samples flushed (none when
stderr is not a terminal, or with JSPROF_NO_PROGRESS set).

The exit status is the command's (128 + n when it died of signal n: 130 for SIGINT, 143 for SIGTERM),
or 1 when the command succeeded but a trace could not be written where asked (a directory made
read-only or removed during the run, a full disk): the trace is then written to the temporary
directory, and the message names it.
One SIGINT, SIGTERM or SIGHUP (to jsprof, which forwards it, to the app, or to both as Ctrl-C sends
it) ends the app within about a second, with its trace, even when it spins. An app with its own
handler for the signal decides itself, as without jsprof (a spinning app runs it only when it
yields); a second signal to jsprof then kills it (SIGKILL; the trace keeps the samples up to the last
flush). When <command> is not a node executable (e.g. 'npm start'), the preload goes through
NODE_OPTIONS and the first Node process that is not a package manager (npm, npx, yarn, pnpm) is
profiled.

Examples:
  jsprof record -- node server.js --port 8080
  jsprof record -o boot.trace.json --interval 0.5 -- node app.js
  jsprof report jsprof-*.trace.json`

/** Splits `[options] [--] command…`: options end at '--' or at the first word that is not one. */
function splitArgs(args) {
  const withValue = new Set(['-o', '--output', '--interval', '--flush-every', '--heap-interval', '--stall-threshold'])
  // (--children takes no value.)
  let i = 0
  while (i < args.length) {
    const arg = args[i]
    if (arg === '--') return { own: args.slice(0, i), command: args.slice(i + 1) }
    if (withValue.has(arg)) i += 2
    else if (arg.startsWith('-')) i += 1
    else break
  }
  return { own: args.slice(0, i), command: args.slice(i) }
}

function isNodeExecutable(file) {
  if (path.resolve(file) === process.execPath) return true
  return /^node(js)?(\.exe)?$/i.test(path.basename(file))
}

/** The argv to spawn and the environment to give it. */
function commandLine(command, env, children = false) {
  let [file, ...rest] = command
  if (/\.[cm]?js$/i.test(file) && !isNodeExecutable(file)) {
    rest = [file, ...rest]
    file = process.execPath
  }
  // With --children the preload goes through NODE_OPTIONS too, which every Node process below inherits
  // (spawn('node', …) does not pass execArgv on).
  const nodeOptions = [env.NODE_OPTIONS, `--require ${JSON.stringify(PRELOAD)}`].filter(Boolean).join(' ')
  if (isNodeExecutable(file)) {
    return { file, args: ['--require', PRELOAD, ...rest], env: children ? { ...env, NODE_OPTIONS: nodeOptions } : env }
  }
  return { file, args: rest, env: { ...env, NODE_OPTIONS: nodeOptions } }
}

/**
 * The process died without writing its trace (SIGKILL, the OOM killer, abort, a native crash): the
 * trace up to its last flush, from the side file it left. Null when there is none.
 */
function salvage(chunks, output, signal) {
  const { readChunks, assemble } = require('../../record/chunks')
  const side = readChunks(chunks)
  if (!side || !side.hasChunks) return null
  const file = output.split('{pid}').join(String(side.header.pid))
  try {
    const result = assemble(chunks, file)
    return result && result.samples > 0 ? { ...result, partial: true, how: `killed by ${signal}` } : null
  } catch (err) {
    info(`could not assemble the trace from what was flushed: ${err.message}`)
    return { error: err.message }
  }
}

/**
 * The traces of the other threads and processes (`{ pid, threadId, … }`, threadId 0 for a process's main
 * thread): those they wrote when they ended (their status files), and those assembled here from the
 * side files of the ones that never got to (a worker thread terminated, or cut off by its process
 * ending; a child process killed): samples up to their last flush.
 */
function otherTraces(statusDir) {
  const { readChunks, assemble } = require('../../record/chunks')
  const found = []
  let names
  try {
    names = fs.readdirSync(statusDir)
  } catch {
    return found
  }
  for (const name of names) {
    const m = /^(status|chunks)\.(\d+)(?:\.t(\d+))?\.json(l?)$/.exec(name)
    if (!m || (m[1] === 'status') === (m[4] === 'l')) continue
    const file = path.join(statusDir, name)
    const who = { pid: Number(m[2]), threadId: m[3] === undefined ? 0 : Number(m[3]) }
    if (m[1] === 'status') {
      try {
        found.push({ ...who, ...JSON.parse(fs.readFileSync(file, 'utf8')) })
      } catch {
        // Torn by a kill: its side file, if any, is used below.
      }
      continue
    }
    if (names.includes(name.replace(/^chunks/, 'status').replace(/\.jsonl$/, '.json'))) continue
    const chunks = readChunks(file)
    if (!chunks || typeof chunks.header.output !== 'string') continue
    try {
      const result = assemble(file, chunks.header.output)
      if (result && result.samples > 0) found.push({ ...who, ...result, partial: true })
      else found.push({ ...who, error: 'nothing was flushed before it ended', empty: true })
    } catch (err) {
      found.push({ ...who, error: err.message })
    }
  }
  return found.sort((a, b) => a.pid - b.pid || a.threadId - b.threadId)
}

/** `worker thread 3`, `child process 1234`, `worker thread 2 of child process 1234`. */
function whose(t, topPid) {
  if (t.pid === topPid || topPid === undefined) return t.threadId ? `worker thread ${t.threadId}` : 'main thread'
  return t.threadId ? `worker thread ${t.threadId} of child process ${t.pid}` : `child process ${t.pid}`
}

/** This process's umask (reading it means setting it: set straight back). */
function currentUmask() {
  const mask = process.umask(0o022)
  process.umask(mask)
  return mask
}

/**
 * Before the app runs: the trace's directory exists and a file can be created in it (a read-only
 * directory or file system, no permission), or `-o` names a device or pipe that can be written. A
 * directory that only fails later (removed during the run, a full disk) is handled at the end: the
 * trace goes to the temporary directory and the exit status says so. `{pid}` in a directory's name
 * cannot be checked before the process exists.
 */
function checkWritable(shown, file) {
  const dir = path.dirname(file)
  if (dir.includes('{pid}')) return
  const { resolveLinks, probeWritable } = require('../../output')
  let stat = null
  try {
    // Another user's link on the way is refused now, not after the app ran.
    stat = fs.statSync(resolveLinks(file.split('{pid}').join('0')))
  } catch (err) {
    if (err.code === 'EUNSAFELINK' || err.code === 'ELOOP')
      throw new CliError(`cannot write ${shown}: ${describeIoError(err)}`, 1)
  }
  if (stat && (stat.isFIFO() || stat.isCharacterDevice())) {
    try {
      fs.accessSync(file, fs.constants.W_OK)
      return
    } catch (err) {
      throw new CliError(`cannot write ${shown}: ${describeIoError(err)}`, 1)
    }
  }
  if (stat && stat.isDirectory()) throw new CliError(`cannot write ${shown}: it is a directory`, 1)
  if (!fs.existsSync(dir)) throw new CliError(`cannot write ${shown}: no such directory ${dir}`, 1)
  // A file made and removed at once: what the trace's write (a temporary file renamed) will need.
  try {
    probeWritable(dir)
  } catch (err) {
    throw new CliError(`cannot write ${shown}: ${describeIoError(err)} (in ${dir})`, 1)
  }
}

function parseFlushEvery(text) {
  const ms = Number(text)
  if (text.trim() === '' || !Number.isFinite(ms) || ms < 0 || ms > MAX_FLUSH_MS) {
    throw usage('record', `--flush-every must be a number of ms >= 0 (0: never), got '${text}'`)
  }
  return ms === 0 ? 0 : Math.max(ms, MIN_FLUSH_MS)
}

/**
 * --stalls: names the stall traces written beside the trace at `tracePath` since `sinceMs` (a file of
 * an earlier run with the same -o is not this run's).
 */
function stallLines(tracePath, sinceMs) {
  const dir = path.dirname(tracePath)
  const prefix = `${path.basename(tracePath).replace(/\.json$/, '')}.stall-`
  let names = []
  try {
    names = fs.readdirSync(dir).filter((n) => {
      if (!n.startsWith(prefix) || !/^\d+\.json$/.test(n.slice(prefix.length))) return false
      const stat = fs.lstatSync(path.join(dir, n))
      // (A file system's times can be a few ms coarse.)
      return stat.isFile() && stat.mtimeMs >= sinceMs - 1000
    })
  } catch {
    // The directory went away: nothing to name.
  }
  names.sort((a, b) => parseInt(a.slice(prefix.length), 10) - parseInt(b.slice(prefix.length), 10))
  if (names.length === 0) info('no event-loop stall beyond --stall-threshold')
  for (const n of names) info(`wrote ${path.join(dir, n)} (an event-loop stall: jsprof report ${n})`)
}

async function record(args) {
  const { own, command } = splitArgs(args)
  const { values } = parse('record', own, {
    children: { type: 'boolean' },
    output: { type: 'string', short: 'o' },
    interval: { type: 'string' },
    'flush-every': { type: 'string' },
    heap: { type: 'boolean' },
    'heap-interval': { type: 'string' },
    'heap-inlining': { type: 'boolean' },
    inlined: { type: 'boolean' },
    stalls: { type: 'boolean' },
    'stall-threshold': { type: 'string' },
  })
  if (values.help) {
    process.stdout.write(`${HELP}\n`)
    return 0
  }
  if (command.length === 0)
    throw usage('record', "missing the command to profile, as in 'jsprof record -- node app.js'")
  const intervalMs = values.interval === undefined ? DEFAULT_INTERVAL_MS : parseInterval('record', values.interval)
  const flushEveryMs = values['flush-every'] === undefined ? DEFAULT_FLUSH_MS : parseFlushEvery(values['flush-every'])
  if (values.output === '') throw usage('record', '--output must not be empty')
  let stallThresholdMs = values.stalls || values['stall-threshold'] !== undefined ? 300 : 0
  if (values['stall-threshold'] !== undefined) {
    const text = values['stall-threshold']
    stallThresholdMs = Number(text)
    if (
      text.trim() === '' ||
      !Number.isFinite(stallThresholdMs) ||
      stallThresholdMs < 10 ||
      stallThresholdMs > 3_600_000
    )
      throw usage('record', `--stall-threshold must be a number of ms in [10, 3600000], got '${text}'`)
  }
  // `-o -`: the trace goes to stdout once the command has ended (written first beside the status
  // files: the app's own stdout is the same), the other threads' and processes' to the working directory.
  const toStdout = values.output === '-'
  const named = path.resolve(
    toStdout || values.output === undefined ? `jsprof-{pid}-${stamp(new Date())}.trace.json` : values.output,
  )
  if (!toStdout) checkWritable(values.output ?? named, named)
  const heap = heapSettings('record', values)
  if (toStdout && (heap || stallThresholdMs > 0))
    throw usage('record', `${heap ? '--heap' : '--stalls'} writes files beside the trace: give -o a file, not -`)

  const statusDir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-record-'))
  const status = path.join(statusDir, 'status.json')
  const chunks = path.join(statusDir, 'chunks.jsonl')
  const output = toStdout ? path.join(statusDir, 'stdout.trace.json') : named
  const line0 = statusLine()
  // progress: the preload reports the samples it flushed, for the status line on a terminal.
  const config = {
    output,
    siblings: toStdout ? named : undefined,
    heap,
    intervalUs: intervalMs * 1000,
    status,
    chunks,
    flushEveryMs,
    stallThresholdMs,
    children: values.children === true,
    inlined: values.inlined === true,
    progress: line0.on,
    // New trace files get the user's permissions (this umask), whatever the app sets its own to.
    mode: 0o666 & ~currentUmask(),
  }
  const env = { ...process.env, JSPROF_RECORD: JSON.stringify(config) }
  const line = commandLine(command, env, config.children)

  const startedMs = Date.now()
  try {
    const { code, signal, spawnError } = await new Promise((resolve) => {
      // `-o -`: stdout is the trace's; the command's own output goes to stderr.
      const child = spawn(line.file, line.args, {
        stdio: ['inherit', toStdout ? 2 : 'inherit', 'inherit'],
        env: line.env,
      })
      const started = Date.now()
      const tick = line0.on
        ? setInterval(() => {
            let samples = null
            try {
              samples = JSON.parse(fs.readFileSync(path.join(statusDir, 'progress.json'), 'utf8')).samples
            } catch {
              // Nothing flushed yet (or --flush-every 0).
            }
            const so = Number.isInteger(samples) ? `, ${samples.toLocaleString('en')} samples so far` : ''
            line0.update(
              `recording ${command[0]} (pid ${child.pid}): ${formatDuration(Date.now() - started)}${so} (Ctrl-C to stop)`,
            )
          }, 500)
        : null
      let signals = 0
      const forward = (sig) => {
        if (child.exitCode !== null || child.signalCode !== null) return
        // An app with a signal handler of its own decides how it ends, and one busy in a synchronous
        // loop runs that handler only when it yields (as without jsprof): a second signal to jsprof
        // kills it for good; the trace then has the samples up to its last flush.
        if (++signals === 1) {
          child.kill(sig)
        } else {
          info(`killing ${command[0]} (pid ${child.pid}) with SIGKILL after a second ${sig}`)
          child.kill('SIGKILL')
        }
      }
      for (const sig of FORWARDED) process.on(sig, forward)
      const done = (result) => {
        clearInterval(tick)
        line0.clear()
        for (const sig of FORWARDED) process.removeListener(sig, forward)
        resolve(result)
      }
      child.once('error', (err) => done({ spawnError: err }))
      child.once('exit', (code, signal) => done({ code, signal }))
    })
    if (spawnError) {
      const missing = spawnError.code === 'ENOENT'
      throw new CliError(
        `cannot run '${command[0]}': ${missing ? 'command not found' : spawnError.message}`,
        missing ? 127 : 126,
      )
    }
    let result = null
    try {
      result = JSON.parse(fs.readFileSync(status, 'utf8'))
    } catch {
      // No status: the preload never ran (not a Node process, SIGKILL, a crash).
    }
    if (!result && signal) result = salvage(chunks, output, signal)
    const others = otherTraces(statusDir)
    const which = others.length > 0 ? 'main thread, ' : ''
    // A trace that could not go where it was asked (kept in the temporary directory, or lost): the exit
    // status is not the app's 0 then.
    let failed = Boolean(result && result.error) || others.some((t) => t.error && !t.empty)
    /** `wrote <file> (details)`, or where a trace went when its own file could not be written. */
    const wrote = (t, shown, details) => {
      if (!t.notWritten) return info(`wrote ${shown} (${details})`)
      failed = true
      info(`could not write ${t.notWritten.path} (${t.notWritten.error}): wrote ${t.path} instead (${details})`)
    }
    if (result && result.path) {
      let shown = result.path
      if (toStdout && result.path === output) {
        await writeStdout(fs.readFileSync(output))
        shown = 'stdout'
      }
      const how = result.partial
        ? `; ${result.how}: samples up to the last flush`
        : `; written at exit in ${result.writeMs} ms`
      wrote(result, shown, `${which}${result.samples} samples, ${formatDuration(result.durationMs)}${how}`)
      heapLine(result, 'main thread')
      if (stallThresholdMs > 0) stallLines(result.path, startedMs)
    } else if (result && result.samples === 0) {
      info('no trace was written: the main thread sampled nothing before it ended')
    } else if (!(result && result.error)) {
      const why = signal
        ? `it was killed by ${signal}`
        : 'the command did not run a Node.js process that loaded the preload'
      info(`no trace was written: ${why}`)
    }
    const topPid = result ? result.pid : undefined
    for (const t of others) {
      if (t.error) {
        info(`${whose(t, topPid)}: no trace (${t.error})`)
        continue
      }
      if (!t.path) {
        info(`${whose(t, topPid)}: no trace (it sampled nothing in its ${formatDuration(t.durationMs)})`)
        continue
      }
      const how = t.partial
        ? `; it did not exit (${t.threadId ? (signal ? `its process was killed by ${signal}` : 'terminated, or the process ended first') : 'killed'}): samples up to its last flush`
        : t.how === 'terminated'
          ? '; written when it was terminated, or its process ended'
          : ''
      wrote(t, t.path, `${whose(t, topPid)}, ${t.samples} samples, ${formatDuration(t.durationMs)}${how}`)
      heapLine(t, whose(t, topPid))
    }
    const ownWorkers = others.filter((t) => t.pid === topPid && t.threadId > 0).length
    const unprofiled = (result && result.workersStarted) - ownWorkers
    if (unprofiled > 0) {
      info(
        `${unprofiled} worker thread${unprofiled === 1 ? ' was' : 's were'} not profiled (started with execArgv that leaves out --require, or before the preload ran)`,
      )
    }
    if (signal) return 128 + (os.constants.signals[signal] || 0)
    if (failed && !code) {
      info('exit status 1: a trace could not be written where asked')
      return 1
    }
    return code ?? 1
  } finally {
    fs.rmSync(statusDir, { recursive: true, force: true })
  }
}

module.exports = { record, HELP, splitArgs }
