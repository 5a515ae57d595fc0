'use strict'
// Shared pieces of the `jsprof` command line: the error type that becomes one stderr line and an exit
// status, argument parsing on node:util parseArgs with one-line messages, and output helpers.

const fs = require('node:fs')
const { parseArgs } = require('node:util')

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

/** parseArgs, strict, with its errors turned into one-line CliErrors. */
function parse(command, args, options, { positionals = 0 } = {}) {
  let parsed
  try {
    parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' }, ...options }, strict: true, allowPositionals: true })
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

/** Writes a whole file, turning failures into one line (exit status 1: not the user's arguments). */
function writeOutput(file, data) {
  try {
    fs.writeFileSync(file, data)
  } catch (err) {
    throw new CliError(`cannot write ${file}: ${err.code === 'ENOENT' ? 'no such directory' : err.message}`, 1)
  }
}

/** Writes to stdout; a closed pipe (`jsprof report t.json | head`) is not an error. */
function writeStdout(data) {
  return new Promise((resolve) => {
    process.stdout.write(data, (err) => {
      if (err && err.code !== 'EPIPE') process.exitCode = 1
      resolve()
    })
  })
}

/** A function of the jsprof-node API (loaded on first use: --help works without the addon). */
function api(name) {
  const exports = require('../../index.js')
  if (typeof exports[name] !== 'function') throw new CliError(`this build of jsprof-node has no ${name}()`, 1)
  return exports[name]
}

function info(text) {
  process.stderr.write(`jsprof: ${text}\n`)
}

module.exports = { CliError, usage, parse, positiveInt, oneOf, writeOutput, writeStdout, info, api }
