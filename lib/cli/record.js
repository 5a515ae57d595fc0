'use strict'
// `jsprof record [-o trace.json] [--interval ms] -- node app.js …`: runs the command with
// lib/record-preload.js preloaded, forwards SIGINT/SIGTERM/SIGHUP to it, and exits with its status.

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { CliError, usage, parse, info } = require('./common')

const PRELOAD = path.resolve(__dirname, '..', 'record-preload.js')
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP']
const DEFAULT_INTERVAL_MS = 1
const MIN_INTERVAL_MS = 0.1
const MAX_INTERVAL_MS = 1e6

const HELP = `Usage: jsprof record [options] -- <command> [args…]

Runs <command> (a Node.js process: 'node app.js', or just 'app.js') with the jsprof sampling profiler
preloaded, and writes the ProfilerTrace of the whole process when it ends — including when it ends
through process.exit(), an uncaught exception, SIGINT (Ctrl-C) or SIGTERM. Only the top Node process
is profiled: processes it starts (cluster workers, child_process.fork) are not.

Options:
  -o, --output <file>    where to write the trace ('{pid}' is replaced by the process id)
                         (default: ./jsprof-<pid>-<date>.trace.json)
      --interval <ms>    sampling interval in ms (default: ${DEFAULT_INTERVAL_MS}, smallest: ${MIN_INTERVAL_MS})
  -h, --help             show this help

The exit status is the command's (128 + n when it died of signal n: 130 for SIGINT, 143 for SIGTERM).
SIGINT, SIGTERM and SIGHUP are forwarded to the command; a second one kills it (SIGKILL, no trace),
for a process stuck in a synchronous loop, which runs no signal handler until it yields.
When <command> is not a node executable (e.g. 'npm start'), the preload goes through NODE_OPTIONS
and the first Node process that is not a package manager (npm, npx, yarn, pnpm) is profiled.

Examples:
  jsprof record -- node server.js --port 8080
  jsprof record -o boot.trace.json --interval 0.5 -- node app.js
  jsprof report jsprof-*.trace.json`

/** Splits `[options] [--] command…`: options end at '--' or at the first word that is not one. */
function splitArgs(args) {
  const withValue = new Set(['-o', '--output', '--interval'])
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

function parseInterval(text) {
  const ms = Number(text)
  if (text.trim() === '' || !Number.isFinite(ms) || ms <= 0 || ms > MAX_INTERVAL_MS) {
    throw usage('record', `--interval must be a number of ms > 0, got '${text}'`)
  }
  return Math.max(ms, MIN_INTERVAL_MS)
}

function stamp(date) {
  const pad = (n) => String(n).padStart(2, '0')
  return (
    `${date.getFullYear()}${pad(date.getMonth() + 1)}${pad(date.getDate())}-` +
    `${pad(date.getHours())}${pad(date.getMinutes())}${pad(date.getSeconds())}`
  )
}

function isNodeExecutable(file) {
  if (path.resolve(file) === process.execPath) return true
  return /^node(js)?(\.exe)?$/i.test(path.basename(file))
}

/** The argv to spawn and the environment to give it. */
function commandLine(command, env) {
  let [file, ...rest] = command
  if (/\.[cm]?js$/i.test(file) && !isNodeExecutable(file)) {
    rest = [file, ...rest]
    file = process.execPath
  }
  if (isNodeExecutable(file)) return { file, args: ['--require', PRELOAD, ...rest], env }
  const nodeOptions = [env.NODE_OPTIONS, `--require ${JSON.stringify(PRELOAD)}`].filter(Boolean).join(' ')
  return { file, args: rest, env: { ...env, NODE_OPTIONS: nodeOptions } }
}

function formatDuration(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`
}

async function record(args) {
  const { own, command } = splitArgs(args)
  const { values } = parse('record', own, {
    output: { type: 'string', short: 'o' },
    interval: { type: 'string' },
  })
  if (values.help) {
    process.stdout.write(`${HELP}\n`)
    return 0
  }
  if (command.length === 0) throw usage('record', "missing the command to profile, as in 'jsprof record -- node app.js'")
  const intervalMs = values.interval === undefined ? DEFAULT_INTERVAL_MS : parseInterval(values.interval)
  if (values.output === '') throw usage('record', '--output must not be empty')
  const output = path.resolve(values.output ?? `jsprof-{pid}-${stamp(new Date())}.trace.json`)
  if (values.output !== undefined) {
    const dir = path.dirname(output)
    if (!fs.existsSync(dir)) throw new CliError(`cannot write ${values.output}: no such directory ${dir}`)
  }

  const statusDir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-record-'))
  const status = path.join(statusDir, 'status.json')
  const env = { ...process.env, JSPROF_RECORD: JSON.stringify({ output, intervalUs: intervalMs * 1000, status }) }
  const line = commandLine(command, env)

  try {
    const { code, signal, spawnError } = await new Promise((resolve) => {
      const child = spawn(line.file, line.args, { stdio: 'inherit', env: line.env })
      let signals = 0
      const forward = (sig) => {
        if (child.exitCode !== null || child.signalCode !== null) return
        // A process busy in a synchronous loop runs no signal handler until it yields: a second
        // signal to jsprof kills it for good (without a trace).
        if (++signals === 1) {
          child.kill(sig)
        } else {
          info(`killing ${command[0]} (pid ${child.pid}) after a second ${sig}: no trace will be written`)
          child.kill('SIGKILL')
        }
      }
      for (const sig of FORWARDED) process.on(sig, forward)
      const done = (result) => {
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
    if (result && result.path) {
      info(`wrote ${result.path} (${result.samples} samples, ${formatDuration(result.durationMs)}; written at exit in ${result.writeMs} ms)`)
    } else if (!(result && result.error)) {
      const why = signal ? `it was killed by ${signal}` : 'the command did not run a Node.js process that loaded the preload'
      info(`no trace was written: ${why}`)
    }
    if (signal) return 128 + (os.constants.signals[signal] || 0)
    return code ?? 1
  } finally {
    fs.rmSync(statusDir, { recursive: true, force: true })
  }
}

module.exports = { record, HELP, splitArgs }
