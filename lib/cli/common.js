'use strict'
// Shared pieces of the `jsprof` command line: the error type that becomes one stderr line and an exit
// status, argument parsing on node:util parseArgs with one-line messages, and output helpers.

const path = require('node:path')
const { parseArgs } = require('node:util')
const { writeOutputFile } = require('../output')

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
  writeOutput,
  writeStdout,
  describeIoError,
  shown,
  info,
  api,
  statusLine,
}
