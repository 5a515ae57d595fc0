'use strict'
// Finding the target's inspector: the process checked by its pid (/proc/<pid>/exe, cmdline), the TCP
// sockets it listens on (/proc/<pid>/net/tcp*, matched to /proc/<pid>/fd by inode), the inspector
// options it was started with, SIGUSR1 to open its inspector, and which of its loopback sockets answers
// as one (its /json/list). Also how the process is doing (alive, stopped, exiting), which the other
// steps ask too.

const fs = require('node:fs')
const path = require('node:path')
const { CliError, usage } = require('../common')
const { getJson } = require('./cdp')

const OPEN_TIMEOUT_MS = 5000

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
/** A filter of the sockets that are not among `before` (the sockets a process opened since). */
const newSince = (before) => (s) => !before.some((b) => b.port === s.port && b.address === s.address)
/** The sockets among `sockets` that listen on loopback only. */
const loopback = (sockets) => sockets.filter((s) => LOOPBACK.has(s.address))

/** A host as a URL's host part (`[::1]`). */
const urlHost = (address) => (address.includes(':') ? `[${address}]` : address)
/** The address to connect to for a listening socket (0.0.0.0 and :: listen on loopback too). */
const connectAddress = (address) =>
  LOOPBACK.has(address) ? address.replace('::ffff:', '') : address.includes(':') ? '::1' : '127.0.0.1'

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
  return parseInspectOptions(words)
}

/** inspectOptions from the words of a command line (NODE_OPTIONS' words after it). */
function parseInspectOptions(words) {
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

/**
 * pid's inspector, opened with SIGUSR1 when it is not open yet (`before`: the sockets it listened on
 * before; `options`: inspectOptions(pid)). Returns `{ inspector, opened, primary, waitingCause }`:
 * `inspector` as findInspector gives it, or null; `opened` when SIGUSR1 was sent and what it opens is
 * jsprof's to close on every way out; `primary` the CliError to report once that is done, and
 * `waitingCause` why the inspector did not open yet (it may open later: the closing waits for it).
 * Throws a CliError when nothing was opened or nothing will open.
 */
async function openInspector(pid, before, options, intr) {
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
    const isNew = newSince(before)
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
  return { inspector, opened, primary, waitingCause }
}

module.exports = {
  checkPid,
  listening,
  newSince,
  findInspector,
  openInspector,
  inspectOptions,
  parseInspectOptions,
  alive,
  procState,
  endsWithin,
  GONE_WAIT_MS,
}
