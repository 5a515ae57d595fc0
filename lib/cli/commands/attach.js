'use strict'
// `jsprof attach <pid> [--duration 10s] [-o trace.json] [--interval ms]`: profiles a Node process that
// is already running. SIGUSR1 makes Node open its inspector (a V8 interrupt starts it, so a process
// spinning in a loop opens it too); we find the port it listens on among the process's own listening
// sockets (/proc/<pid>/net/tcp*, matched to /proc/<pid>/fd by inode), accept it only on loopback, check
// the process id through the inspector, drive the Profiler domain over its WebSocket, close the
// inspector again and write the trace like `jsprof record` does.

const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
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
} = require('../common')
const { TIME_ORIGIN_SOURCE } = require('../../clock')
const { visible } = require('../../text')
const { MAX_INPUT_BYTES } = require('../input')
const { effectiveIntervalUs } = require('../../sampler/schedule')

const DEFAULT_DURATION_MS = 10_000
const OPEN_TIMEOUT_MS = 5000
// How long jsprof keeps closing an inspector it caused to open (a blocked main thread opens it late);
// JSPROF_ATTACH_CLOSE_DEADLINE_MS changes it (the tests' way to reach the deadline quickly).
const CLOSE_DEADLINE_MS = (() => {
  const ms = Number(process.env.JSPROF_ATTACH_CLOSE_DEADLINE_MS)
  return ms > 0 && ms <= 3600_000 ? ms : 30_000
})()

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

function checkPid(text) {
  if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
    throw usage('attach', `<pid> must be a process id, got '${text}'`)
  }
  const pid = Number(text)
  if (pid === process.pid) throw new CliError(`pid ${pid} is jsprof itself`)
  try {
    process.kill(pid, 0)
  } catch (err) {
    if (err.code === 'ESRCH') throw new CliError(`no such process: ${pid}`)
    if (err.code === 'EPERM') throw new CliError(`cannot signal pid ${pid}: not ours (EPERM; run jsprof as its user)`)
    throw new CliError(`cannot signal pid ${pid}: ${err.message}`)
  }
  if (process.platform !== 'linux') throw new CliError('jsprof attach works on Linux only (it reads /proc)')
  let exe = ''
  let argv0
  try {
    exe = fs.readlinkSync(`/proc/${pid}/exe`)
  } catch {
    // Another user's process (no access) or a kernel thread: judged by its command line.
  }
  try {
    argv0 = fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0]
  } catch {
    throw new CliError(`no such process: ${pid}`)
  }
  const isNode = (file) => /^node(js)?(\d+)?$/i.test(path.basename(file.replace(/ \(deleted\)$/, '')))
  if (!isNode(exe) && !isNode(argv0)) {
    const name = (path.basename(exe || argv0) || '?').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?')
    throw new CliError(`pid ${pid} is not a Node.js process (${name})`)
  }
  return pid
}

function hexAddress(hex) {
  if (hex.length === 8) return [3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.')
  if (hex === '00000000000000000000000001000000') return '::1'
  if (hex === '0000000000000000FFFF00000100007F') return '::ffff:127.0.0.1'
  return `[${hex}]`
}

/** The TCP sockets the process listens on: [{ address, port }]. */
function listening(pid) {
  const inodes = new Set()
  let fds
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`)
  } catch {
    return []
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m) inodes.add(m[1])
    } catch {
      // Closed meanwhile.
    }
  }
  const found = []
  for (const table of ['tcp', 'tcp6']) {
    let text
    try {
      text = fs.readFileSync(`/proc/${pid}/net/${table}`, 'latin1')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9])) continue
      const [addr, port] = f[1].split(':')
      found.push({ address: hexAddress(addr), port: parseInt(port, 16) })
    }
  }
  return found
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1'])

// Every wait on the target, or on whatever answers on its port, is bounded (issue 24).
const LIST_TIMEOUT_MS = 3000 // the whole /json/list exchange
const LIST_MAX_BYTES = 1024 * 1024 // its body
const HANDSHAKE_TIMEOUT_MS = 5000 // the whole WebSocket handshake
const REPLY_TIMEOUT_MS = 15_000 // each reply but the profiles'
const PROFILE_TIMEOUT_MS = 120_000 // Profiler.stop and HeapProfiler.stopSampling (V8 builds them)
// A reply's size: the profile's nodes (the process's code) plus its samples (the recording's length).
const PROFILE_BASE_BYTES = 64 * 1024 * 1024
const PROFILE_BYTES_PER_SAMPLE = 48
// V8's longest string (2^29 - 24 UTF-16 units; a reply is one string before it is parsed).
const MAX_STRING_BYTES = 2 ** 29 - 24
// A written trace costs up to this per sample; jsprof reads back at most MAX_INPUT_BYTES.
const TRACE_BYTES_PER_SAMPLE = 48
// The port must stay closed this long (a spinning process reopens it once when it yields).
const CLOSE_SETTLE_MS = 300

/** A host as a URL's host part (`[::1]`). */
const urlHost = (address) => (address.includes(':') ? `[${address}]` : address)
/** The address to connect to for a listening socket (0.0.0.0 and :: listen on loopback too). */
const connectAddress = (address) =>
  LOOPBACK.has(address) ? address.replace('::ffff:', '') : address.includes(':') ? '::1' : '127.0.0.1'

/**
 * GET `urlPath` from host:port as JSON, bounded in time (the whole exchange) and size: the value, or
 * `{ problem }` saying why not.
 */
function getJson(host, port, urlPath) {
  return new Promise((resolve) => {
    let settled = false
    const done = (value) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      req.destroy()
      resolve(value)
    }
    const timer = setTimeout(() => done({ problem: `no answer within ${LIST_TIMEOUT_MS / 1000} s` }), LIST_TIMEOUT_MS)
    const req = http.get({ host, port, path: urlPath, agent: false }, (res) => {
      const chunks = []
      let size = 0
      res.on('data', (d) => {
        size += d.length
        if (size > LIST_MAX_BYTES) done({ problem: `its answer exceeds ${LIST_MAX_BYTES / 1024} KiB` })
        else chunks.push(d)
      })
      res.on('end', () => {
        try {
          done(JSON.parse(Buffer.concat(chunks).toString('utf8')))
        } catch {
          done({ problem: 'its answer is not JSON' })
        }
      })
      res.on('error', (err) => done({ problem: err.message }))
      res.on('close', () => done({ problem: 'the connection closed' }))
    })
    req.on('error', (err) => done({ problem: err.message }))
  })
}

/**
 * The inspector among the process's listening sockets: `{ host, port, url }`, whose url is on the
 * host and port checked here (the list's own host and port are ignored: only its path is used); or
 * null, with `problems` filled with why each socket was not one.
 */
async function findInspector(sockets, problems = []) {
  for (const s of sockets) {
    const host = connectAddress(s.address)
    const list = await getJson(host, s.port, '/json/list')
    if (!Array.isArray(list)) {
      problems.push(`${urlHost(host)}:${s.port}: ${list && list.problem ? list.problem : 'not a target list'}`)
      continue
    }
    for (const t of list) {
      if (!t || typeof t.webSocketDebuggerUrl !== 'string') continue
      let pathname
      try {
        pathname = new URL(t.webSocketDebuggerUrl).pathname
      } catch {
        continue
      }
      return { host, port: s.port, url: `ws://${urlHost(host)}:${s.port}${pathname}` }
    }
    problems.push(`${urlHost(host)}:${s.port}: its target list names no WebSocket`)
  }
  return null
}

/**
 * Ctrl-C, SIGTERM and SIGHUP while attach runs: counted, never fatal (jsprof must stay to close what it
 * opened). The first stops the recording (or the wait for the inspector); a second one gives up
 * closing.
 */
function interrupts() {
  let count = 0
  const waiters = new Set()
  const on = () => {
    count++
    for (const w of waiters) w()
    waiters.clear()
  }
  // SIGHUP too: a closed terminal must not end jsprof before it closed what it opened (and a write
  // to that terminal failing is no reason to either).
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP']
  for (const s of signals) process.on(s, on)
  const ignore = () => {}
  process.stderr.on('error', ignore)
  return {
    get count() {
      return count
    },
    /** Resolves at the next signal. */
    next: () => new Promise((resolve) => waiters.add(resolve)),
    /** Waits `ms`, or less when a signal comes. */
    pause(ms) {
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, ms)
        waiters.add(wake)
      })
    },
    dispose() {
      for (const s of signals) process.removeListener(s, on)
      process.stderr.removeListener('error', ignore)
    },
  }
}

/** An inspector reply or event that is not what the protocol says: reported as what it is. */
class BadReply extends Error {}

/**
 * A minimal Chrome DevTools Protocol client on `ws`: the handshake bounded in time, every message in
 * size (`maxPayload`), every reply in time. `onEvent(method, params)` gets the events; `closed` is a
 * promise of how the connection ended.
 */
function connect(url, { maxPayload, onEvent = () => {} }) {
  const WebSocket = require('ws')
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      perMessageDeflate: false,
      maxPayload,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      followRedirects: false,
    })
    // ws's handshakeTimeout is an idle timeout: an answer dripping in byte by byte is cut here.
    const handshake = setTimeout(() => {
      ws.terminate()
      reject(new Error(`no WebSocket handshake within ${HANDSHAKE_TIMEOUT_MS / 1000} s`))
    }, HANDSHAKE_TIMEOUT_MS)
    let nextId = 1
    const pending = new Map()
    let endReason = null
    let endClosed
    const closed = new Promise((r) => (endClosed = r))
    const fail = (err) => {
      for (const p of pending.values()) p.reject(err)
      pending.clear()
    }
    ws.on('message', (data) => {
      let message
      try {
        message = JSON.parse(data)
      } catch {
        endReason = 'it sent a message that is not JSON'
        fail(new BadReply('it sent a message that is not JSON'))
        return
      }
      if (message === null || typeof message !== 'object') {
        fail(new BadReply('it sent a message that is not a JSON object'))
        return
      }
      if (typeof message.method === 'string' && message.id === undefined) {
        onEvent(message.method, message.params)
        return
      }
      const p = pending.get(message.id)
      if (!p) return
      pending.delete(message.id)
      clearTimeout(p.timer)
      if (message.error) {
        const text = message.error && typeof message.error.message === 'string' ? message.error.message : 'an error'
        p.reject(new BadReply(`it answered ${p.method} with the error ${JSON.stringify(text.slice(0, 200))}`))
      } else if (message.result === null || typeof message.result !== 'object') {
        p.reject(new BadReply(`it answered ${p.method} without a result`))
      } else p.resolve(message.result)
    })
    ws.on('close', (code, reason) => {
      clearTimeout(handshake)
      for (const p of pending.values()) clearTimeout(p.timer)
      const why =
        code === 1009
          ? `it sent a message larger than ${Math.round(maxPayload / 1024 / 1024)} MiB`
          : (endReason ?? `the connection closed${reason && reason.length ? ` (${reason})` : ''}`)
      fail(new BadReply(`the connection ended: ${why}`))
      endClosed(why)
    })
    ws.once('error', (err) => {
      clearTimeout(handshake)
      reject(err)
    })
    ws.once('open', () => {
      clearTimeout(handshake)
      ws.on('error', (err) => {
        if (/max(imum)? payload|too big/i.test(err.message))
          endReason = `it sent a message larger than ${Math.round(maxPayload / 1024 / 1024)} MiB`
      })
      resolve({
        closed,
        /** A command's result; rejects with a BadReply after `timeoutMs` without one. */
        send(method, params = {}, timeoutMs = REPLY_TIMEOUT_MS) {
          return new Promise((res, rej) => {
            if (ws.readyState !== WebSocket.OPEN) {
              rej(new BadReply(`the connection ended before ${method}`))
              return
            }
            const id = nextId++
            const timer = setTimeout(() => {
              pending.delete(id)
              rej(new BadReply(`no answer to ${method} within ${timeoutMs / 1000} s`))
            }, timeoutMs)
            pending.set(id, { resolve: res, reject: rej, timer, method })
            ws.send(JSON.stringify({ id, method, params }), (err) => {
              if (err && pending.delete(id)) {
                clearTimeout(timer)
                rej(err)
              }
            })
          })
        },
        /** A command whose answer is not awaited (it closes the connection). */
        post(method, params = {}) {
          if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ id: nextId++, method, params }), () => {})
        },
        get open() {
          return ws.readyState === WebSocket.OPEN
        },
        close() {
          ws.terminate()
        },
      })
    })
  })
}

async function evaluate(cdp, expression) {
  const r = await cdp.send('Runtime.evaluate', { expression, returnByValue: true, silent: true })
  if (r.exceptionDetails) throw new BadReply(`evaluating in the process failed: ${r.exceptionDetails.text}`)
  if (r.result === null || typeof r.result !== 'object')
    throw new BadReply('it answered Runtime.evaluate without a value')
  return r.result.value
}

// Closes the inspector from inside, at once (an event-loop turn would never come in a spinning
// process); the connection this runs on closes with it, so no answer is expected. And once more on
// the next turn of the loop: SIGUSR1 also queued an event-loop callback that opens the inspector,
// which a spinning process runs only when it yields, reopening it (it runs in the poll phase, this
// in the check phase of the same turn).
const CLOSE = `(() => { const end = () => { if (typeof process._debugEnd === 'function') return process._debugEnd()
    const m = typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule('node:inspector') : process.mainModule && process.mainModule.require('node:inspector')
    if (m) m.close() }
  setImmediate(end); end() })()`

const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code !== 'ESRCH'
  }
}

/**
 * A killed process's sockets close while it is still exiting (the kernel releases its files before it
 * becomes a zombie): when the inspector connection drops, whether the process is going is known a moment
 * later. Resolves true once it is gone or a zombie within `ms`, false if it still runs then.
 */
const GONE_WAIT_MS = 1000
async function endsWithin(pid, ms) {
  const deadline = Date.now() + ms
  for (;;) {
    const state = procState(pid)
    if (!alive(pid) || state === 'Z' || state === 'X') return true
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The process's state letter in /proc/<pid>/stat (`T`: stopped), or ''. */
function procState(pid) {
  try {
    return /\) (\S)/.exec(fs.readFileSync(`/proc/${pid}/stat`, 'latin1'))?.[1] ?? ''
  } catch {
    return ''
  }
}

/** Why a process did not open its inspector after SIGUSR1 (options from inspectOptions). */
function notOpenedCause(pid, options) {
  if (options.sigusr1Disabled) return 'it was started with --disable-sigusr1'
  const state = procState(pid)
  if (state === 'T' || state === 't')
    return 'it is stopped (SIGSTOP or a debugger): it opens its inspector when it continues'
  if (state === 'Z' || state === 'X' || state === '') return 'it is exiting'
  return 'its main thread is blocked outside JavaScript (a synchronous call such as execSync, Atomics.wait or a long native call): it opens its inspector when that returns'
}

/**
 * Keeps closing the inspector jsprof caused pid to open until it is closed (and stays closed for a
 * moment), the process is gone, the deadline passes or a second Ctrl-C comes. `known`: the inspector
 * found (`{ host, port }`), else any socket the process opens that was not in `before` is looked at.
 * `cdp`: a connection to reuse. Returns `{ closed, port }`.
 */
async function closeInspector({ pid, before, known, cdp, deadline, intr, maxPayload }) {
  const isNew = (s) => !before.some((b) => b.port === s.port && b.address === s.address)
  let conn = cdp && cdp.open ? cdp : null
  let sentOn = null
  let seenOpen = Boolean(known)
  let closedSince = null
  let port = known ? known.port : null
  try {
    for (;;) {
      if (!alive(pid) || procState(pid) === 'Z') return { closed: true, port }
      const open = listening(pid).filter((s) => (known ? s.port === known.port : isNew(s)))
      if (open.length === 0) {
        if (seenOpen) {
          closedSince ??= Date.now()
          if (Date.now() - closedSince >= CLOSE_SETTLE_MS) return { closed: true, port }
        }
      } else {
        closedSince = null
        seenOpen = true
        port = open[0].port
        if (!conn || !conn.open) {
          conn = null
          const found = await findInspector(open)
          if (found) {
            try {
              conn = await connect(found.url, { maxPayload })
            } catch {
              // Not up yet, or gone: the next round tries again.
            }
          }
        }
        if (conn && sentOn !== conn) {
          conn.post('Runtime.evaluate', { expression: CLOSE, silent: true })
          sentOn = conn
        }
      }
      if (Date.now() >= deadline || intr.count >= 2) return { closed: false, port }
      await intr.pause(100)
    }
  } finally {
    if (conn) conn.close()
  }
}

/** The loud message for an inspector jsprof could not close. */
function leftOpen(pid, port, cause) {
  const where = port ? `on port ${port}` : 'on its --inspect-port (default 127.0.0.1:9229)'
  return (
    `WARNING: the inspector of pid ${pid} that jsprof opened may still be open, or open later, ${where}` +
    `${cause ? ` (${cause})` : ''}: while it is open any local user can run code in that process. ` +
    `Close it with 'jsprof attach --close ${pid}' once it is open, or restart the process`
  )
}

/** `jsprof attach --close <pid>`: closes the inspector the process has open, whoever opened it. */
async function closeCommand(pid, intr) {
  const options = inspectOptions(pid)
  const sockets = listening(pid).filter((s) => options.port === 0 || s.port === options.port || options.open)
  const found = await findInspector(sockets.length ? sockets : listening(pid))
  if (!found) {
    info(`pid ${pid} has no inspector open`)
    return 0
  }
  const r = await closeInspector({
    pid,
    before: [],
    known: found,
    cdp: null,
    deadline: Date.now() + CLOSE_DEADLINE_MS,
    intr,
    maxPayload: LIST_MAX_BYTES,
  })
  if (!r.closed) throw new CliError(leftOpen(pid, found.port, 'it did not close when asked'), 1)
  info(`closed the inspector of pid ${pid} on port ${found.port}`)
  return 0
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
  const readable = Math.floor(MAX_INPUT_BYTES / TRACE_BYTES_PER_SAMPLE)
  if (maxSamples > readable) {
    throw usage(
      'attach',
      `--duration ${values.duration} at --interval ${intervalMs} ms records up to ${maxSamples} samples, more than a trace jsprof reads back holds (${readable}): shorten --duration or raise --interval`,
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
    // And never more than one JS string holds (the reply is parsed as one).
    const maxPayload = Math.min(PROFILE_BASE_BYTES + 2 * maxSamples * PROFILE_BYTES_PER_SAMPLE, MAX_STRING_BYTES)
    return await attachTo(pid, { durationMs, intervalMs, heap, output, maxPayload }, intr)
  } finally {
    intr.dispose()
  }
}

async function attachTo(pid, settings, intr) {
  const { maxPayload } = settings
  const loopback = (sockets) => sockets.filter((s) => LOOPBACK.has(s.address))
  const before = listening(pid)
  const options = inspectOptions(pid)
  // Probing a socket that is not the inspector sends the app an HTTP request (and waits for an app
  // that spins): only the inspector's port, or every socket when the process was started with its
  // inspector open (an inspector opened earlier by SIGUSR1 is on its port too).
  const probe = options.open ? before : before.filter((s) => options.port > 0 && s.port === options.port)
  const ownPort = options.port > 0 && before.some((s) => s.port === options.port)
  let inspector = probe.length > 0 ? await findInspector(loopback(probe)) : null
  let opened = false
  let primary = null
  let waitingCause = null
  const problems = []
  if (!inspector) {
    const isNew = (s) => !before.some((b) => b.port === s.port && b.address === s.address)
    try {
      process.kill(pid, 'SIGUSR1')
    } catch (err) {
      throw new CliError(err.code === 'ESRCH' ? `no such process: ${pid}` : `cannot signal pid ${pid}: ${err.message}`)
    }
    // From here on, whatever SIGUSR1 opens is jsprof's to close, on every way out.
    opened = true
    const deadline = Date.now() + OPEN_TIMEOUT_MS
    let fresh = []
    while (fresh.length === 0 && Date.now() < deadline && intr.count === 0 && alive(pid)) {
      await intr.pause(50)
      fresh = listening(pid).filter(isNew)
    }
    const wide = fresh.find((s) => !LOOPBACK.has(s.address))
    if (wide) {
      primary = new CliError(
        `pid ${pid} opened its inspector on ${wide.address}:${wide.port}, beyond loopback (its --inspect-port says so): refusing to record`,
      )
    } else if (fresh.length > 0) {
      inspector = await findInspector(fresh, problems)
      if (!inspector)
        primary = new CliError(
          `pid ${pid} opened a socket that does not answer as an inspector (${problems.join('; ')})`,
        )
    } else if (!alive(pid)) {
      throw new CliError(`pid ${pid} exited before it opened its inspector`)
    } else if (ownPort) {
      // Its own socket on the inspector port that is no inspector: Node cannot open one there.
      throw new CliError(
        `pid ${pid} could not open its inspector: port ${options.port} is its own socket but does not answer as an inspector`,
      )
    } else if (options.port > 0 && (await portTaken(options.port))) {
      // Node could not bind it: nothing opens later.
      throw new CliError(`pid ${pid} could not open its inspector: port ${options.port} is taken by another process`)
    } else if ((inspector = await findInspector(loopback(before)))) {
      // Open already on a port of its choosing (--inspect-port=0, opened earlier): SIGUSR1 did nothing.
      opened = false
    } else if (options.sigusr1Disabled) {
      throw new CliError(`pid ${pid} did not open its inspector: ${notOpenedCause(pid, options)}`)
    } else if (intr.count > 0) {
      waitingCause = 'interrupted'
      primary = new CliError(`interrupted before pid ${pid} opened its inspector`)
    } else {
      waitingCause = notOpenedCause(pid, options)
      primary = new CliError(
        `pid ${pid} did not open its inspector within ${OPEN_TIMEOUT_MS / 1000} s: ${waitingCause}`,
      )
    }
  }

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

/**
 * Connects to the inspector, checks it is pid's, records for the duration (or until Ctrl-C, or the
 * process exits) and returns what was recorded. The connection is left in ctx.cdp for the caller to
 * close the inspector on.
 */
async function record(pid, inspector, { durationMs, intervalMs, heap, maxPayload }, intr, ctx) {
  let exiting
  const onExit = new Promise((resolve) => (exiting = resolve))
  try {
    ctx.cdp = await connect(inspector.url, {
      maxPayload,
      onEvent: (method) => method === 'NodeRuntime.waitingForDisconnect' && exiting(),
    })
  } catch (err) {
    throw new CliError(`cannot connect to the inspector of pid ${pid} on port ${inspector.port}: ${err.message}`)
  }
  const cdp = ctx.cdp
  const seen = await evaluate(cdp, 'process.pid')
  if (seen !== pid) {
    throw new CliError(
      `the inspector on port ${inspector.port} belongs to pid ${visible(JSON.stringify(seen) ?? 'undefined').slice(0, 40)}, not ${pid}`,
    )
  }
  // Told when the process ends while attached: Node then waits for the debugger to disconnect,
  // which jsprof does at once (after taking the profile), so the process's exit is not held.
  await cdp.send('NodeRuntime.notifyWhenWaitingForDisconnect', { enabled: true }).catch(() => {})
  // The process's performance.now() origin, measured there as lib/clock.js measures it in-process.
  const origin = await evaluate(cdp, TIME_ORIGIN_SOURCE)
  const epochOrigin = await evaluate(cdp, 'performance.timeOrigin')
  if (intr.count > 0) throw new CliError(`interrupted before the recording of pid ${pid} started`)
  await cdp.send('Profiler.enable')
  // V8 there samples at the interval a Profiler here would (the sampler's rule: whole µs, at least 0.1 ms).
  await cdp.send('Profiler.setSamplingInterval', { interval: effectiveIntervalUs(intervalMs) })
  await cdp.send('Profiler.start')
  let heapStart
  let heapInliningOff = false
  if (heap) {
    await cdp.send('HeapProfiler.enable')
    // Another client's sampler (node --heap-prof, DevTools) answers: neither shared nor stopped.
    const foreign = await cdp.send('HeapProfiler.getSamplingProfile').then(
      () => true,
      () => false,
    )
    if (foreign) {
      await cdp.send('Profiler.stop', {}, PROFILE_TIMEOUT_MS).catch(() => {})
      throw new CliError(
        `pid ${pid} already runs V8's sampling heap profiler (node --heap-prof, DevTools): not touched`,
      )
    }
    if (heap.inlining === false) {
      // V8 inlines nothing while sampling, and the code optimized before is deoptimized (docs/heap.md).
      const { remoteInliningOff } = require('../../heap/inlining')
      heapInliningOff = await remoteInliningOff(
        (expression) => evaluate(cdp, expression),
        (method, params) => cdp.send(method, params),
      )
    }
    heapStart = await evaluate(cdp, 'performance.now()')
    await cdp.send('HeapProfiler.startSampling', {
      samplingInterval: heap.samplingInterval,
      stackDepth: heap.stackDepth,
    })
  }
  const started = Date.now()
  const status = statusLine()
  const ended = await new Promise((resolve) => {
    const tick = status.on
      ? setInterval(
          () =>
            status.update(
              `recording pid ${pid}: ${formatDuration(Date.now() - started)} of ${formatDuration(durationMs)} (Ctrl-C to stop)`,
            ),
          250,
        )
      : null
    const timer = setTimeout(() => finish(null), durationMs)
    const finish = (why) => {
      clearInterval(tick)
      clearTimeout(timer)
      resolve(why)
    }
    if (intr.count > 0) finish(null)
    intr.next().then(() => finish(null))
    onExit.then(() => finish({ exited: true }))
    cdp.closed.then((why) => finish({ gone: why }))
  })
  status.clear()
  const after = formatDuration(Date.now() - started)
  if (ended && ended.gone) {
    if (await endsWithin(pid, GONE_WAIT_MS)) {
      throw new CliError(
        `pid ${pid} ended during the recording, after ${after} (killed or crashed): its samples went with it, no trace written`,
      )
    }
    throw new CliError(
      `the inspector connection of pid ${pid} ended during the recording, after ${after} (${ended.gone}): no trace written`,
    )
  }
  if (ended && ended.exited) info(`pid ${pid} exited during the recording, after ${after}: writing what was recorded`)
  const stopped = await cdp.send('Profiler.stop', {}, PROFILE_TIMEOUT_MS)
  if (stopped.profile === null || typeof stopped.profile !== 'object')
    throw new BadReply('it answered Profiler.stop without a profile')
  const profile = stopped.profile
  let heapProfile = null
  let heapEnd
  if (ended && ended.exited) {
    // Taking the heap profile would not change what the process ends with; its exit is waiting.
    if (heap) {
      heapEnd = await evaluate(cdp, 'performance.now()').catch(() => undefined)
      heapProfile = (await cdp.send('HeapProfiler.stopSampling', {}, PROFILE_TIMEOUT_MS)).profile ?? null
    }
    cdp.close()
  } else {
    await cdp.send('Profiler.disable')
    if (heap) {
      heapEnd = await evaluate(cdp, 'performance.now()')
      heapProfile = (await cdp.send('HeapProfiler.stopSampling', {}, PROFILE_TIMEOUT_MS)).profile
      if (heap.inlining === false) await require('../../heap/inlining').remoteInliningOn((e) => evaluate(cdp, e))
      if (heapProfile === null || typeof heapProfile !== 'object')
        throw new BadReply('it answered HeapProfiler.stopSampling without a profile')
      await cdp.send('HeapProfiler.disable')
    }
  }
  const heapInlining = !heapInliningOff
  return {
    profile,
    heapProfile,
    origin,
    epochOrigin,
    heapStart,
    heapEnd,
    heapInlining,
    exited: Boolean(ended && ended.exited),
  }
}

/** Writes the trace (and heap profile) as `record` writes its traces: in Rust, with the sidecar (pid, clock). */
function writeResult(pid, { output, heap }, r, opened, closed) {
  const { writeRecorded } = require('../../record/chunks')
  const { binding, callNative } = require('../../native')
  const { origin, epochOrigin } = r
  const sidecar = { pid, timeOrigin: Number.isFinite(epochOrigin) ? epochOrigin : undefined }
  let recorded
  try {
    recorded = callNative(
      () =>
        binding.traceFileFromCpuProfile(
          Buffer.from(JSON.stringify(r.profile)),
          Number.isFinite(origin) ? origin : undefined,
          sidecar,
        ),
      r.profile,
    )
  } catch (err) {
    throw new CliError(`the profile the inspector of pid ${pid} sent cannot be read: ${err.message}`)
  }
  if (recorded.json.length > MAX_INPUT_BYTES) {
    throw new CliError(
      `the trace of pid ${pid} would have ${Math.round(recorded.json.length / 2 ** 20)} MiB, more than jsprof reads back (${MAX_INPUT_BYTES / 2 ** 20} MiB): not written`,
    )
  }
  const result = writeRecorded(output, recorded)
  let heapResult = null
  if (r.heapProfile) {
    try {
      heapResult = writeHeap(output, r.heapProfile, heap, {
        pid,
        epochOrigin,
        heapStart: r.heapStart,
        heapEnd: r.heapEnd,
        inlining: r.heapInlining,
      })
    } catch (err) {
      if (err instanceof CliError) throw err
      throw new CliError(`the heap profile the inspector of pid ${pid} sent cannot be read: ${err.message}`)
    }
  }
  const how = r.exited
    ? 'the process exited'
    : opened
      ? closed
        ? 'inspector closed again'
        : 'inspector NOT closed'
      : 'inspector was open before and stays open'
  info(`wrote ${result.path} (${result.samples} samples, ${formatDuration(result.durationMs)}; ${how})`)
  if (heapResult) heapLine({ heap: heapResult }, `pid ${pid}`)
}

/**
 * `--heap`: the process's heap profile beside the trace (`t.json` -> `t.heap.json`): what it allocated
 * while attached and still holds, converted as `jsprof record --heap` writes it.
 */
function writeHeap(output, v8Profile, settings, { pid, epochOrigin, heapStart, heapEnd, inlining }) {
  const { binding, callNative } = require('../../native')
  const { heapOutput } = require('../../record/heap')
  const { writeOutputFile } = require('../../output')
  const info = {
    heap: {
      samplingInterval: settings.samplingInterval,
      stackDepth: settings.stackDepth,
      view: 'inuse',
      inlining,
      ...(Number.isFinite(heapStart) && { startTime: heapStart }),
      ...(Number.isFinite(heapEnd) && { endTime: heapEnd }),
    },
    pid,
    threadId: 0,
    ...(Number.isFinite(epochOrigin) && { timeOrigin: epochOrigin }),
  }
  const { json } = callNative(() =>
    binding.heapProfileFromV8(Buffer.from(JSON.stringify(v8Profile)), undefined, JSON.stringify(info), false),
  )
  const path = heapOutput(output)
  writeOutputFile(path, json)
  const profile = JSON.parse(json.toString('utf8'))
  return {
    path,
    size: profile.samples.reduce((sum, s) => sum + s.size, 0),
    samples: profile.samples.reduce((sum, s) => sum + s.count, 0),
  }
}

/**
 * The process's inspector options (command line and NODE_OPTIONS): `open` when it was started with
 * its inspector open (--inspect, --inspect-brk, --inspect-wait), `port` it opens on (9229 by default),
 * `sigusr1Disabled` (--disable-sigusr1: SIGUSR1 opens nothing).
 */
function inspectOptions(pid) {
  const words = []
  try {
    words.push(...fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0'))
  } catch {
    // Gone: the caller's error says the inspector did not open.
  }
  try {
    const env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
    const nodeOptions = env.find((e) => e.startsWith('NODE_OPTIONS='))
    if (nodeOptions) words.push(...nodeOptions.slice('NODE_OPTIONS='.length).split(/\s+/))
  } catch {
    // Not readable: the command line decides.
  }
  let port = 9229
  let open = false
  let sigusr1Disabled = false
  for (let i = 0; i < words.length; i++) {
    if (words[i] === '--disable-sigusr1') sigusr1Disabled = true
    const m = /^--(inspect-port|debug-port|inspect|inspect-brk|inspect-wait)(?:=(.*))?$/.exec(words[i])
    if (!m) continue
    if (!/port$/.test(m[1])) open = true
    const value = m[2] ?? (/port$/.test(m[1]) ? words[i + 1] : undefined)
    if (value === undefined) continue
    const p = Number(String(value).split(':').pop())
    if (Number.isInteger(p) && p >= 0 && p < 65536) port = p
  }
  return { port, open, sigusr1Disabled }
}

/** Whether something listens on 127.0.0.1:port (any process). */
function portTaken(port) {
  return new Promise((resolve) => {
    const socket = require('node:net').connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

module.exports = { attach, HELP, listening }
