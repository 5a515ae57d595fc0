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
const { effectiveIntervalUs } = require('../../sampler/schedule')

const DEFAULT_DURATION_MS = 10_000
const OPEN_TIMEOUT_MS = 5000
const CLOSE_TIMEOUT_MS = 3000

const HELP = `Usage: jsprof attach <pid> [options]

Profiles a running Node.js process without restarting it, for --duration, and writes its trace like
'jsprof record' does (timestamps in the process's performance.now() domain).

Options:
      --duration <time>  how long to record: 500ms, 10s, 2m (default: 10s; Ctrl-C stops early)
  -o, --output <file>    where to write the trace (default: ./jsprof-<pid>-<date>.trace.json)
      --interval <ms>    sampling interval in ms (default: ${DEFAULT_INTERVAL_MS}, smallest: ${MIN_INTERVAL_MS})
      --heap             also write the process's heap profile beside the trace (t.json -> t.heap.json):
                         what it allocated while attached and still holds at the end, by the code
                         that allocated it (V8's sampling heap profiler)
      --heap-interval <bytes>  average bytes between heap samples (default: 524288, 512 KiB)
  -h, --help             show this help

How: SIGUSR1 opens the process's inspector (on 127.0.0.1:9229 unless it was started with another
--inspect-port); jsprof finds the port, checks the process id through it, records over its
WebSocket, and closes the inspector again afterwards.

Security: while the inspector is open — the recording's duration plus well under a second — any
local user who can reach 127.0.0.1 can connect to it and run code in the process, as with
'node --inspect'. jsprof refuses an inspector listening beyond loopback, and leaves open one that
was open before it came (it does not close what it did not open). Linux only (it reads /proc).

Errors (one line, exit status 2): no such process, not a Node.js process, not ours to signal
(EPERM), the inspector port is taken by another process.`

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

function getJson(port, urlPath) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, timeout: 2000 }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d) => {
        body += d
        if (body.length > 1e6) req.destroy()
      })
      res.on('end', () => {
        try {
          resolve(JSON.parse(body))
        } catch {
          resolve(null)
        }
      })
    })
    req.on('timeout', () => req.destroy())
    req.on('error', () => resolve(null))
  })
}

/** The inspector's WebSocket URL among the process's loopback listening sockets, or null. */
async function findInspector(sockets) {
  for (const s of sockets) {
    if (!LOOPBACK.has(s.address)) continue
    const list = await getJson(s.port, '/json/list')
    const target = Array.isArray(list) && list.find((t) => t && typeof t.webSocketDebuggerUrl === 'string')
    if (target) return { port: s.port, url: target.webSocketDebuggerUrl }
  }
  return null
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A minimal Chrome DevTools Protocol client on `ws`. */
function connect(url) {
  const WebSocket = require('ws')
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 2 ** 31 - 1 })
    let nextId = 1
    const pending = new Map()
    ws.on('message', (data) => {
      let message
      try {
        message = JSON.parse(data)
      } catch {
        return
      }
      const p = pending.get(message.id)
      if (!p) return
      pending.delete(message.id)
      if (message.error) p.reject(new Error(message.error.message || 'inspector error'))
      else p.resolve(message.result)
    })
    ws.on('close', () => {
      for (const p of pending.values()) p.reject(new Error('the inspector connection closed'))
      pending.clear()
    })
    ws.once('error', reject)
    ws.once('open', () => {
      ws.removeListener('error', reject)
      ws.on('error', () => {})
      resolve({
        send(method, params = {}) {
          return new Promise((res, rej) => {
            const id = nextId++
            pending.set(id, { resolve: res, reject: rej })
            ws.send(JSON.stringify({ id, method, params }), (err) => {
              if (err) {
                pending.delete(id)
                rej(err)
              }
            })
          })
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
  if (r.exceptionDetails) throw new Error(`evaluating in the process failed: ${r.exceptionDetails.text}`)
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
  const pid = checkPid(positionals[0])
  const output = path.resolve(
    (values.output ?? `jsprof-{pid}-${stamp(new Date())}.trace.json`).split('{pid}').join(String(pid)),
  )
  if (!fs.existsSync(path.dirname(output)))
    throw new CliError(`cannot write ${values.output}: no such directory ${path.dirname(output)}`)

  // Probing a socket that is not the inspector sends the app an HTTP request (and waits for an app
  // that spins): only when the process was started with its inspector open, or opening it did nothing.
  const before = listening(pid)
  const options = inspectOptions(pid)
  let inspector = options.open ? await findInspector(before) : null
  const opened = !inspector
  if (opened) {
    const isNew = (s) => !before.some((b) => b.port === s.port && b.address === s.address)
    process.kill(pid, 'SIGUSR1')
    const deadline = Date.now() + OPEN_TIMEOUT_MS
    let fresh = []
    while (fresh.length === 0 && Date.now() < deadline) {
      await sleep(50)
      fresh = listening(pid).filter(isNew)
    }
    const wide = fresh.find((s) => !LOOPBACK.has(s.address))
    if (wide) {
      throw new CliError(
        `pid ${pid} opened its inspector on ${wide.address}:${wide.port}, beyond loopback: refusing (it stays open: its --inspect-port says so)`,
      )
    }
    inspector = await findInspector(fresh)
    if (!inspector && fresh.length === 0) {
      if (options.port > 0 && (await portTaken(options.port))) {
        throw new CliError(`pid ${pid} could not open its inspector: port ${options.port} is taken by another process`)
      }
      // Opened before by someone else (SIGUSR1 then does nothing)?
      if (await findInspector(before)) {
        throw new CliError(
          `pid ${pid} has its inspector open already (opened by someone else): connect to it, or close it first`,
        )
      }
      throw new CliError(
        `pid ${pid} did not open its inspector within ${OPEN_TIMEOUT_MS / 1000} s (started with --disable-sigusr1?)`,
      )
    }
    if (!inspector) throw new CliError(`pid ${pid} opened a socket that does not answer as an inspector`)
  }

  let cdp
  try {
    cdp = await connect(inspector.url)
  } catch (err) {
    throw new CliError(`cannot connect to the inspector of pid ${pid} on port ${inspector.port}: ${err.message}`)
  }
  let profile
  let heapProfile = null
  let heapStart
  let heapEnd
  let origin
  let epochOrigin
  try {
    const seen = await evaluate(cdp, 'process.pid')
    if (seen !== pid) throw new CliError(`the inspector on port ${inspector.port} belongs to pid ${seen}, not ${pid}`)
    // The process's performance.now() origin, measured there as lib/clock.js measures it in-process.
    origin = await evaluate(cdp, TIME_ORIGIN_SOURCE)
    epochOrigin = await evaluate(cdp, 'performance.timeOrigin')
    await cdp.send('Profiler.enable')
    // V8 there samples at the interval a Profiler here would (the sampler's rule: whole µs, at least 0.1 ms).
    await cdp.send('Profiler.setSamplingInterval', { interval: effectiveIntervalUs(intervalMs) })
    await cdp.send('Profiler.start')
    if (heap) {
      await cdp.send('HeapProfiler.enable')
      // Another client's sampler (node --heap-prof, DevTools) answers: neither shared nor stopped.
      const foreign = await cdp.send('HeapProfiler.getSamplingProfile').then(
        () => true,
        () => false,
      )
      if (foreign) {
        await cdp.send('Profiler.stop').catch(() => {})
        throw new CliError(
          `pid ${pid} already runs V8's sampling heap profiler (node --heap-prof, DevTools): not touched`,
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
    await new Promise((resolve) => {
      const tick = status.on
        ? setInterval(
            () =>
              status.update(
                `recording pid ${pid}: ${formatDuration(Date.now() - started)} of ${formatDuration(durationMs)} (Ctrl-C to stop)`,
              ),
            250,
          )
        : null
      let timer = null
      const stop = () => {
        clearInterval(tick)
        clearTimeout(timer)
        process.removeListener('SIGINT', stop)
        process.removeListener('SIGTERM', stop)
        resolve()
      }
      process.once('SIGINT', stop)
      process.once('SIGTERM', stop)
      timer = setTimeout(stop, durationMs)
    })
    status.clear()
    profile = (await cdp.send('Profiler.stop')).profile
    await cdp.send('Profiler.disable')
    if (heap) {
      heapEnd = await evaluate(cdp, 'performance.now()')
      heapProfile = (await cdp.send('HeapProfiler.stopSampling')).profile
      await cdp.send('HeapProfiler.disable')
    }
  } finally {
    if (opened) {
      // No answer comes: the connection closes with the inspector.
      cdp.send('Runtime.evaluate', { expression: CLOSE, silent: true }).catch(() => {})
      await sleep(20)
    }
    cdp.close()
  }
  let closed = !opened
  if (opened) {
    const deadline = Date.now() + CLOSE_TIMEOUT_MS
    while (Date.now() < deadline && listening(pid).some((s) => s.port === inspector.port)) await sleep(50)
    closed = !listening(pid).some((s) => s.port === inspector.port)
    if (!closed) info(`warning: the inspector of pid ${pid} is still open on 127.0.0.1:${inspector.port}`)
  }
  // Built and written as `record`'s traces are: in Rust, with the sidecar (pid, clock).
  const { writeRecorded } = require('../../record/chunks')
  const { binding, callNative } = require('../../native')
  const sidecar = { pid, timeOrigin: Number.isFinite(epochOrigin) ? epochOrigin : undefined }
  const recorded = callNative(() =>
    binding.traceFileFromCpuProfile(
      Buffer.from(JSON.stringify(profile)),
      Number.isFinite(origin) ? origin : undefined,
      sidecar,
    ),
  )
  const result = writeRecorded(output, recorded)
  const heapResult = heapProfile && writeHeap(output, heapProfile, heap, { pid, epochOrigin, heapStart, heapEnd })
  info(
    `wrote ${result.path} (${result.samples} samples, ${formatDuration(result.durationMs)}; ` +
      `${opened ? (closed ? 'inspector closed again' : 'inspector NOT closed') : 'inspector was open before and stays open'})`,
  )
  if (heapResult) heapLine({ heap: heapResult }, `pid ${pid}`)
  return 0
}

/**
 * `--heap`: the process's heap profile beside the trace (`t.json` -> `t.heap.json`): what it allocated
 * while attached and still holds, converted as `jsprof record --heap` writes it.
 */
function writeHeap(output, v8Profile, settings, { pid, epochOrigin, heapStart, heapEnd }) {
  const { binding, callNative } = require('../../native')
  const { heapOutput } = require('../../record/heap')
  const { writeOutputFile } = require('../../output')
  const info = {
    heap: {
      samplingInterval: settings.samplingInterval,
      stackDepth: settings.stackDepth,
      view: 'inuse',
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
 * its inspector open (--inspect, --inspect-brk, --inspect-wait), `port` it opens on (9229 by default).
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
  for (let i = 0; i < words.length; i++) {
    const m = /^--(inspect-port|debug-port|inspect|inspect-brk|inspect-wait)(?:=(.*))?$/.exec(words[i])
    if (!m) continue
    if (!/port$/.test(m[1])) open = true
    const value = m[2] ?? (/port$/.test(m[1]) ? words[i + 1] : undefined)
    if (value === undefined) continue
    const p = Number(String(value).split(':').pop())
    if (Number.isInteger(p) && p >= 0 && p < 65536) port = p
  }
  return { port, open }
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
