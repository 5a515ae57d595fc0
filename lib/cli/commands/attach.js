'use strict'
// `jsprof attach <pid> [--duration 10s] [-o trace.json] [--interval ms]`: profiles a Node process that
// is already running. SIGUSR1 makes Node open its inspector (a V8 interrupt starts it, so a process
// spinning in a loop opens it too); we find the port it listens on among the process's own listening
// sockets, accept it only on loopback, check the process id through the inspector, drive the Profiler
// domain over its WebSocket, close the inspector again and write the trace like `jsprof record` does.
//
// This file is the command: its options, and the order of the steps and which error wins. Each step
// lives in lib/cli/attach/: target.js (the process and its inspector), cdp.js (the protocol client
// and its bounds), record.js (CPU and heap), close.js (closing what jsprof opened, and --close),
// write.js (the files), interrupts.js (Ctrl-C and friends).

const fs = require('node:fs')
const path = require('node:path')
const {
  CliError,
  usage,
  parse,
  info,
  stamp,
  parseInterval,
  DEFAULT_INTERVAL_MS,
  MIN_INTERVAL_MS,
  heapSettings,
} = require('../common')
const { effectiveIntervalUs } = require('../../sampler/schedule')
const { BadReply } = require('../attach/cdp')
const { checkPid, listening, inspectOptions, openInspector } = require('../attach/target')
const { record, maxReplyBytes } = require('../attach/record')
const { closeInspector, closeCommand, leftOpen, CLOSE_DEADLINE_MS } = require('../attach/close')
const { writeResult, MAX_READABLE_SAMPLES } = require('../attach/write')
const { interrupts } = require('../attach/interrupts')

const DEFAULT_DURATION_MS = 10_000

const HELP = `Usage: jsprof attach <pid> [options]
       jsprof attach --close <pid>

Profiles a running Node.js process without restarting it, for --duration, and writes its trace like
'jsprof record' does (timestamps in the process's performance.now() domain).

Options:
      --duration <time>  how long to record: 500ms, 10s, 2m (default: 10s; Ctrl-C stops early; the
                         recording also ends when the process exits)
  -o, --output <file>    where to write the trace (default: ./jsprof-<pid>-<date>.trace.json)
      --interval <ms>    sampling interval in ms (default: ${DEFAULT_INTERVAL_MS}, smallest: ${MIN_INTERVAL_MS})
      --heap             also write the process's heap profile beside the trace (t.json -> t.heap.json):
                         what it allocated while attached and still holds at the end, by the code
                         that allocated it (V8's sampling heap profiler). V8 does not inline
                         meanwhile, so a small helper keeps its own allocations (its code is
                         deoptimized at the start and runs slower while attached: docs/heap.md)
      --heap-interval <bytes>  average bytes between heap samples (default: 524288, 512 KiB)
      --heap-inlining    let V8 inline as usual (no deoptimization; a function inlined into its
                         caller has no frame: its allocations are its caller's)
      --close            close the process's inspector (whoever opened it) and exit
  -h, --help             show this help

How: SIGUSR1 opens the process's inspector (on 127.0.0.1:9229 unless it was started with another
--inspect-port); jsprof finds the port, checks the process id through it, records over its
WebSocket, and closes the inspector again afterwards.

Security: while the inspector is open — the recording's duration plus well under a second — any
local user who can reach 127.0.0.1 can connect to it and run code in the process, as with
'node --inspect'. jsprof refuses an inspector listening beyond loopback, and leaves open one that
was open before it came (it does not close what it did not open). An inspector it caused to open is
closed on every way out: when the process's main thread is blocked (execSync, Atomics.wait, stopped)
the inspector opens late, and jsprof waits up to ${CLOSE_DEADLINE_MS / 1000} s to close it (a second Ctrl-C gives
up); if it cannot, it says so (exit status 1). Linux only (it reads /proc).

Errors (one line, exit status 2): no such process, not a Node.js process, not ours to signal
(EPERM), the inspector port is taken by another process, the inspector did not open (and why),
the process ended during the recording, an inspector answer that is late, too large or malformed.`

function parseDuration(text) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim())
  const ms = m ? Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2] || 's'] : NaN
  if (!(ms > 0) || ms > 24 * 3600_000)
    throw usage('attach', `--duration must be a time like 500ms, 10s or 2m, got '${text}'`)
  return ms
}

async function attach(args) {
  const { values, positionals } = parse(
    'attach',
    args,
    {
      duration: { type: 'string' },
      output: { type: 'string', short: 'o' },
      interval: { type: 'string' },
      heap: { type: 'boolean' },
      'heap-interval': { type: 'string' },
      'heap-inlining': { type: 'boolean' },
      close: { type: 'boolean' },
    },
    { positionals: 1 },
  )
  if (values.help) {
    process.stdout.write(`${HELP}\n`)
    return 0
  }
  const durationMs = values.duration === undefined ? DEFAULT_DURATION_MS : parseDuration(values.duration)
  const intervalMs = values.interval === undefined ? DEFAULT_INTERVAL_MS : parseInterval('attach', values.interval)
  if (positionals.length === 0) throw usage('attach', 'missing the process id')
  if (values.output === '') throw usage('attach', '--output must not be empty')
  const heap = heapSettings('attach', values)
  // What V8 records at most, and what jsprof reads back: the trace written must be readable by jsprof.
  const maxSamples = Math.ceil((durationMs * 1000) / effectiveIntervalUs(intervalMs))
  if (maxSamples > MAX_READABLE_SAMPLES) {
    throw usage(
      'attach',
      `--duration ${values.duration} at --interval ${intervalMs} ms records up to ${maxSamples} samples, more than a trace jsprof reads back holds (${MAX_READABLE_SAMPLES}): shorten --duration or raise --interval`,
    )
  }
  const pid = checkPid(positionals[0])
  const intr = interrupts()
  try {
    if (values.close) return await closeCommand(pid, intr)
    const output = path.resolve(
      (values.output ?? `jsprof-{pid}-${stamp(new Date())}.trace.json`).split('{pid}').join(String(pid)),
    )
    if (!fs.existsSync(path.dirname(output)))
      throw new CliError(`cannot write ${values.output}: no such directory ${path.dirname(output)}`)
    const maxPayload = maxReplyBytes(maxSamples)
    return await attachTo(pid, { durationMs, intervalMs, heap, output, maxPayload }, intr)
  } finally {
    intr.dispose()
  }
}

async function attachTo(pid, settings, intr) {
  const { maxPayload } = settings
  const before = listening(pid)
  const options = inspectOptions(pid)
  const { inspector, opened, primary: notOpened, waitingCause } = await openInspector(pid, before, options, intr)
  let primary = notOpened
  const ctx = { cdp: null, port: inspector && inspector.port }
  let result = null
  if (!primary) {
    try {
      result = await record(pid, inspector, settings, intr, ctx)
    } catch (err) {
      primary = err
    }
  }
  let closed = !opened
  let closedPort = ctx.port
  if (opened) {
    if (!inspector && waitingCause) {
      info(
        `${primary.message}; waiting up to ${CLOSE_DEADLINE_MS / 1000} s for it to open, to close it again (Ctrl-C again to give up)`,
      )
    }
    const r = await closeInspector({
      pid,
      before,
      known: inspector,
      cdp: ctx.cdp,
      deadline: Date.now() + CLOSE_DEADLINE_MS,
      intr,
      maxPayload,
    })
    closed = r.closed
    closedPort = r.port ?? closedPort
  } else if (ctx.cdp) {
    ctx.cdp.close()
  }
  if (primary) {
    if (primary instanceof BadReply) {
      primary = new CliError(`the inspector of pid ${pid} on port ${ctx.port}: ${primary.message}`)
    } else if (!(primary instanceof CliError)) {
      throw primary
    }
  }
  if (!closed) {
    if (primary) info(primary.message)
    if (result) {
      // What was recorded is written, but the warning is the last word whatever happens to it.
      try {
        writeResult(pid, settings, result, opened, false)
      } catch (err) {
        info(err.message)
      }
    }
    throw new CliError(leftOpen(pid, closedPort, waitingCause ?? (primary ? null : 'it did not close when asked')), 1)
  }
  if (primary) {
    if (waitingCause && opened) {
      throw new CliError(
        `${primary.message}${closedPort ? `; it opened it later, and jsprof closed it again` : ''}`,
        primary.code,
      )
    }
    throw primary
  }
  writeResult(pid, settings, result, opened, closed)
  return 0
}

module.exports = { attach, HELP }
