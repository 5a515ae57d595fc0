'use strict'
// The helpers every `jsprof` command shares (a command imports from here, never from another
// command): the error type that becomes one stderr line and an exit status, argument parsing on
// node:util parseArgs with one-line messages, the sampling interval of record and attach, output
// helpers, and the text of tables and status lines. Loads no addon: `--help` works without it.

const path = require('node:path')
const { parseArgs } = require('node:util')
const { writeOutputFile } = require('../output')
const { MIN_INTERVAL_US } = require('../sampler/schedule')

/** An error the user can act on: printed as one line, `jsprof: <message>`, exit status `code`. */
class CliError extends Error {
  constructor(message, code = 2) {
    super(message)
    this.name = 'CliError'
    this.code = code
  }
}

function usage(command, message) {
  const where = command ? `jsprof ${command}` : 'jsprof'
  return new CliError(`${message} (see '${where} --help')`, 2)
}

/**
 * `--top -3` as `--top=-3`: parseArgs takes a value that starts with '-' for an option ("argument is
 * ambiguous"), so a negative number reaches the option's own check and its plain message instead.
 */
function joinNegativeValues(args, options) {
  const byShort = new Map(
    Object.entries(options)
      .filter(([, o]) => o.short)
      .map(([name, o]) => [`-${o.short}`, name]),
  )
  const out = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    const name = arg.startsWith('--') ? arg.slice(2) : byShort.get(arg)
    if (name && options[name]?.type === 'string' && /^-\d/.test(args[i + 1] ?? '')) {
      out.push(`--${name}=${args[++i]}`)
    } else if (arg === '--') {
      // What follows `--` is not ours (jsprof record -- node app.js -3).
      out.push(...args.slice(i))
      break
    } else {
      out.push(arg)
    }
  }
  return out
}

/** parseArgs, strict, with its errors turned into one-line CliErrors. */
function parse(command, args, options, { positionals = 0 } = {}) {
  let parsed
  try {
    parsed = parseArgs({
      args: joinNegativeValues(args, options),
      options: { help: { type: 'boolean', short: 'h' }, ...options },
      strict: true,
      allowPositionals: true,
    })
  } catch (err) {
    const first = String(err.message).split(/\.\s/)[0].replace(/\.$/, '')
    throw usage(command, first.charAt(0).toLowerCase() + first.slice(1))
  }
  if (!parsed.values.help && parsed.positionals.length > positionals) {
    throw usage(command, `unexpected argument '${parsed.positionals[positionals]}'`)
  }
  return parsed
}

/** A positive integer option (`--top 10`). */
function positiveInt(command, name, text) {
  if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text))) {
    throw usage(command, `--${name} must be a positive integer, got '${text}'`)
  }
  return Number(text)
}

/** One of a fixed set of words (`--by package`). */
function oneOf(command, name, text, choices) {
  if (!choices.includes(text)) {
    throw usage(command, `--${name} must be one of ${choices.join(', ')}, got '${text}'`)
  }
  return text
}

/**
 * `--by` of report and diff: what summarize() takes, by its one rule (jsprof-core SummaryBy: package,
 * function, resource, route or label:<key> with a key the label rule takes; no label for a heap
 * profile), `route` shown as what it is, `label:route`. Checked before the inputs are read, and with
 * `heap` once they are known to be heap profiles: what it refuses is a usage error.
 */
function byOption(command, text, { heap = false } = {}) {
  const by = text === 'route' ? 'label:route' : text
  try {
    require('../native').binding.checkSummaryBy(by, heap)
  } catch (err) {
    throw usage(command, String(err && err.message).replace(/^(TypeError|RangeError): by\b/, '--by'))
  }
  return by
}

/** record's and attach's sampling interval: its default, and the smallest the sampler runs at (its rule). */
const DEFAULT_INTERVAL_MS = 1
const MIN_INTERVAL_MS = MIN_INTERVAL_US / 1000
const MAX_INTERVAL_MS = 1e6

/** `--interval <ms>` of record and attach: a number of ms > 0 (the sampler raises a smaller one to its minimum). */
function parseInterval(command, text) {
  const ms = Number(text)
  if (text.trim() === '' || !Number.isFinite(ms) || ms <= 0 || ms > MAX_INTERVAL_MS) {
    throw usage(command, `--interval must be a number of ms > 0, got '${text}'`)
  }
  return ms
}

/** A local time for default file names: 20261125-154219. */
function stamp(date) {
  const pad = (n) => String(n).padStart(2, '0')
  return (
    `${date.getFullYear()}${pad(date.getMonth() + 1)}${pad(date.getDate())}-` +
    `${pad(date.getHours())}${pad(date.getMinutes())}${pad(date.getSeconds())}`
  )
}

/** `850.0 ms`, `12.34 s`. */
function formatDuration(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`
}

/** `12.3 MiB`: bytes for tables and status lines (the flame graphs' rule). */
function formatBytes(n) {
  const units = ['KiB', 'MiB', 'GiB', 'TiB']
  if (!Number.isFinite(n)) return '-'
  if (n < 1024) return `${Math.round(n)} B`
  let v = n
  let u = -1
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024
    u++
  }
  return `${v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2)} ${units[u]}`
}

/** `--heap` and `--heap-interval` of record and attach: the heap sampler's settings, or null. */
function heapSettings(command, values) {
  for (const option of ['heap-interval', 'heap-inlining']) {
    if (values[option] !== undefined && !values.heap) throw usage(command, `--${option} takes --heap`)
  }
  if (!values.heap) return null
  const text = values['heap-interval']
  const bytes = text === undefined ? 512 * 1024 : Number(text)
  if (text !== undefined && (!/^\d+$/.test(text.trim()) || !(bytes >= 1) || bytes > 2 ** 31 - 1)) {
    throw usage(command, `--heap-interval must be a number of bytes from 1 to ${2 ** 31 - 1}, got '${text}'`)
  }
  // An investigation: V8 does not inline while sampling, so each allocation has the frame of the
  // function that made it, unless --heap-inlining keeps V8's inlining (docs/heap.md#inlining-off).
  const inlining = values['heap-inlining'] === true
  return { samplingInterval: bytes, stackDepth: 64, includeCollected: false, inlining }
}

/** The line about a thread's heap profile, from its status. */
function heapLine(status, who) {
  if (status.heap) {
    info(
      `wrote ${status.heap.path} (${who}'s heap profile: ${formatBytes(status.heap.size)} in use in ${status.heap.samples} samples)`,
    )
  } else if (status.heapError) {
    info(`${who}: no heap profile (${status.heapError})`)
  }
}

/** Lays out rows of cells; `align[i]` is 'r' or 'l'; the last column is never padded. */
function table(header, rows, align) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (cells) =>
    cells
      .map((cell, i) =>
        i === cells.length - 1 ? cell : align[i] === 'r' ? cell.padStart(widths[i]) : cell.padEnd(widths[i]),
      )
      .join('  ')
      .trimEnd()
  return [line(header), ...rows.map(line)]
}

/**
 * `express (4.18.2)` for a package; `fn (file:…:1:2) (express 4.18.2)` for a function or resource, a
 * row of summarize(). Names come from the profiled code: controls, bidi overrides and newlines are
 * shown as escapes, so a name can neither drive the terminal nor start a row of its own.
 */
function label(row) {
  const name = String(row.name)
  const text = row.package
    ? `${name} (${row.version ? `${row.package} ${row.version}` : row.package})`
    : row.version
      ? `${name} (${row.version})`
      : name
  return require('../text').visible(text)
}

/**
 * Writes a whole output file by lib/output.js's rules (symlinks written through, pipes and devices
 * written to, regular files replaced atomically): failures are one line and exit status 1.
 * `replace`: an existing file may be replaced (-o named it, or --force); `inputs`: never written.
 */
function writeOutput(file, data, { replace = true, inputs = [] } = {}) {
  try {
    return writeOutputFile(file, data, { replace, inputs })
  } catch (err) {
    if (err.code === 'EEXIST') throw new CliError(`${file} exists: name it with -o, or add --force, to replace it`, 1)
    if (err.code === 'EINPUT') throw new CliError(err.message, 1)
    const why = err.code === 'ENOENT' ? `no such directory ${path.dirname(path.resolve(file))}` : describeIoError(err)
    throw new CliError(`cannot write ${file}: ${why}`, 1)
  }
}

/** Set once stdout was closed by its reader: nothing more is written to it. */
let stdoutClosed = false

/**
 * Writes to stdout. A closed pipe (`jsprof report t.json | head`) ends the output quietly, as Unix
 * tools do; any other failure (`> /dev/full`: ENOSPC) is one line and exit status 1, never an
 * unhandled 'error' event with a stack trace.
 */
function writeStdout(data) {
  if (stdoutClosed) return Promise.resolve()
  // The stream reports a failure twice, to the write's callback and then as an 'error' event on a
  // later tick: a listener that stays keeps the event from being unhandled.
  if (process.stdout.listenerCount('error') === 0) process.stdout.on('error', () => {})
  return new Promise((resolve, reject) => {
    let settled = false
    const settle = (err) => {
      if (settled) return
      settled = true
      if (!err) return resolve()
      if (err.code === 'EPIPE') {
        stdoutClosed = true
        return resolve()
      }
      reject(new CliError(`cannot write to stdout: ${describeIoError(err)}`, 1))
    }
    try {
      process.stdout.write(data, settle)
    } catch (err) {
      settle(err)
    }
  })
}

/** An I/O error in the user's words. */
function describeIoError(err) {
  const words = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EISDIR: 'is a directory',
    ENOTDIR: 'a parent is not a directory',
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
    EROFS: 'read-only file system',
    EEXIST: 'already exists',
    EPIPE: 'the reader closed the pipe',
    EIO: 'input/output error',
  }
  return words[err && err.code] || String((err && err.message) || err)
}

/** A function of the jsprof-node API (loaded on first use: --help works without the addon). */
function api(name) {
  const exports = require('../../index.js')
  if (typeof exports[name] !== 'function') throw new CliError(`this build of jsprof-node has no ${name}()`, 1)
  return exports[name]
}

/**
 * A message as one terminal-safe line: messages quote file names and pieces of bad input, so
 * controls and bidi overrides are shown as escapes (lib/text.js). Without the addon — the message
 * then says why it failed to load — as is.
 */
function shown(message) {
  try {
    return require('../text').visible(message)
  } catch {
    return String(message)
  }
}

function info(text) {
  process.stderr.write(`jsprof: ${shown(text)}\n`)
}

/**
 * A status line on stderr for long commands (record, attach), rewritten in place once a terminal is
 * there: `update(text)` shows it, `clear()` removes it before the final lines. Not a TTY (a pipe, a
 * log file, CI) or JSPROF_NO_PROGRESS set: nothing is written.
 */
function statusLine() {
  const on = process.stderr.isTTY === true && !('JSPROF_NO_PROGRESS' in process.env)
  let showing = false
  return {
    on,
    update(text) {
      if (!on) return
      process.stderr.write(`\r\x1b[2Kjsprof: ${shown(text)}`)
      showing = true
    },
    clear() {
      if (showing) process.stderr.write('\r\x1b[2K')
      showing = false
    },
  }
}

module.exports = {
  CliError,
  usage,
  parse,
  positiveInt,
  oneOf,
  byOption,
  DEFAULT_INTERVAL_MS,
  MIN_INTERVAL_MS,
  parseInterval,
  stamp,
  formatDuration,
  table,
  label,
  writeOutput,
  writeStdout,
  describeIoError,
  shown,
  info,
  api,
  statusLine,
  formatBytes,
  heapSettings,
  heapLine,
}
