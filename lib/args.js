'use strict'
// The one argument checker of the public API (lib/api/): every options bag and every trace argument
// goes through here, so every API follows one rule and says it in one voice. The exception is
// `new Profiler(options)`, a WebIDL dictionary that ignores unknown members as Chrome does
// (api/profiler/webidl.js).
//
// The rule for an options bag (`readOptions`):
// - `undefined` (and `null`, where the options are optional) is no options; any other non-object is a
//   TypeError.
// - A name the API does not take is a TypeError naming the nearest one it does:
//   `profileRequests: unknown option 'sampleRte' (did you mean 'sampleRate'?)`.
// - A member that is `undefined` is absent: it takes its default.
// - Numbers convert as WebIDL converts a number (ToNumber, as `new Profiler` does): '0.1' is 0.1.
//   Whole-number options drop the fraction, as WebIDL's integer types do. A value that is not a number
//   and does not convert to one ('abc', a Symbol, a BigInt, an object) is a TypeError; a number outside
//   the option's range (NaN and ±Infinity included) is a RangeError.
// - Strings, booleans, functions and objects are not converted: another type is a TypeError; a string
//   that is not one of an option's choices is a RangeError.
// - The converters of whole traces (the exporters, fromCpuProfile) throw TypeError where the others
//   throw RangeError: every bad input of theirs is a TypeError (docs/exports.md).
// - Messages: `<api>: options.<name> must be <what>, got <the value as given>`: a string quoted
//   (`got "1.5"`), a number not (`got 1.5`).
//
// Environment variables (`readEnvironment`, jsprof-node/register's JSPROF_* settings) are read by the
// same checkers as the options they set, from their text: a number converts as above ('10' is 10), a
// flag is `true`/`false`/`1`/`0` in any case (`flag`), an unset or blank variable is absent, and a
// message names the variable: `<api>: JSPROF_CHUNK_SECONDS must be a number in [0.01, 86400], got "0"`.

/** The kind of a value, for messages about an argument's type: `null`, `an array`, else its typeof. */
function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/** A value as it was given, for messages: strings quoted, numbers, booleans and bigints as written. */
function received(value) {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)
    case 'number':
      return Object.is(value, -0) ? '-0' : String(value)
    case 'bigint':
      return `${value}n`
    case 'symbol':
      return value.toString()
    case 'function':
      return 'a function'
    case 'object':
      return value === null ? 'null' : Array.isArray(value) ? 'an array' : 'an object'
    default:
      return String(value)
  }
}

// Each checker below is `(value, fail) => value`, the value checked and converted; `fail(Class, must)`
// throws the rule's message (Class 'range': the caller's class for a value out of range).

/** What a number option must be, for messages: `a number in [0, 1]`, `a number of ms >= 0`, `a finite number`. */
function numberMust(what, min, max) {
  if (min === -Infinity && max === Infinity) return `a finite ${what.replace(/^an? /, '')}`
  if (max === Infinity || max === Number.MAX_SAFE_INTEGER) return `${what} >= ${min}`
  return `${what} in [${min}, ${max}]`
}

/**
 * A number option: ToNumber, then within [min, max] (finite). `integer`: the fraction is dropped.
 * `what` names it in messages (default 'a number').
 */
function number({ min = -Infinity, max = Infinity, integer = false, what = 'a number' } = {}) {
  const must = numberMust(what, min, max)
  return (value, fail) => {
    if (typeof value === 'symbol' || typeof value === 'bigint') fail(TypeError, must)
    // WebIDL's ToNumber (a throwing valueOf propagates, as there).
    let x = +value
    if (Number.isNaN(x) && typeof value !== 'number') fail(TypeError, must)
    if (integer && Number.isFinite(x)) x = Math.trunc(x)
    if (!(Number.isFinite(x) && x >= min && x <= max)) fail('range', must)
    return x
  }
}

const string = () => (value, fail) => (typeof value === 'string' ? value : fail(TypeError, 'a string'))

/** One of `choices` (strings): another string is out of range, anything else the wrong type. */
function oneOf(choices) {
  const must = `one of ${choices.map((c) => `'${c}'`).join(', ')}`
  return (value, fail) => {
    if (typeof value !== 'string') fail(TypeError, must)
    if (!choices.includes(value)) fail('range', must)
    return value
  }
}

const boolean = () => (value, fail) => (typeof value === 'boolean' ? value : fail(TypeError, 'true or false'))

/** A flag given as text (an environment variable): `true`/`1` or `false`/`0`, in any case. */
const FLAG_TEXT = { true: true, 1: true, false: false, 0: false }
const flag = () => (value, fail) => {
  const text = typeof value === 'string' ? value.trim().toLowerCase() : value
  return Object.hasOwn(FLAG_TEXT, text) ? FLAG_TEXT[text] : fail(TypeError, 'true, false, 1 or 0')
}

const func = () => (value, fail) => (typeof value === 'function' ? value : fail(TypeError, 'a function'))

/** A plain object (not null, not an array); `what` says what it maps, for the message. */
const object =
  (what = '') =>
  (value, fail) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? value
      : fail(TypeError, `an object${what ? ` ${what}` : ''}`)

/** Taken as it is: the API checks it itself (a URL, a map of source maps). */
const any = () => (value) => value

/** A failure in the rule's words: `<api>: <name> must be <must>, got <value>`. */
function failer(api, name, value, outOfRange) {
  return (Class, must) => {
    const C = Class === 'range' ? outOfRange : Class
    throw new C(`${api}: ${name} must be ${must}, got ${received(value)}`)
  }
}

/** Checks one argument that is not in an options bag (`wrap(listener)`), by a checker above. */
function argument(api, name, value, check, { outOfRange = RangeError } = {}) {
  return check(value, failer(api, name, value, outOfRange))
}

/** Edit distance (optimal string alignment: a swap of two neighbours is one edit). */
function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
}

/** The valid name `name` most likely misspells (case aside, a few edits, or one inside the other), or null. */
function nearest(name, valid) {
  const lower = name.toLowerCase()
  let best = null
  let bestScore = Infinity
  for (const candidate of valid) {
    const c = candidate.toLowerCase()
    const score = c.includes(lower) || lower.includes(c) ? 0.5 : distance(lower, c)
    if (score < bestScore) {
      best = candidate
      bestScore = score
    }
  }
  return bestScore <= Math.max(2, Math.ceil(name.length / 3)) ? best : null
}

/**
 * Reads an options bag by `spec` ({ name: checker, … }, checkers above): returns the checked and
 * converted members, with `defaults` ({ name: value }) for absent ones. `required`: the options
 * themselves must be given. `outOfRange`: the class of a value out of its range (RangeError; the
 * exporters' TypeError).
 */
function readOptions(api, options, spec, { defaults = {}, required = false, outOfRange = RangeError } = {}) {
  if ((options === undefined || options === null) && !required) options = {}
  else if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${api}: options must be an object, got ${describe(options)}`)
  }
  for (const name of Object.keys(options)) {
    if (Object.hasOwn(spec, name)) continue
    const near = nearest(name, Object.keys(spec))
    const hint = near
      ? `did you mean '${near}'?`
      : `it takes ${Object.keys(spec)
          .map((n) => `'${n}'`)
          .join(', ')}`
    throw new TypeError(`${api}: unknown option '${name}' (${hint})`)
  }
  const out = {}
  for (const [name, check] of Object.entries(spec)) {
    const value = options[name]
    if (value === undefined && Object.hasOwn(defaults, name)) out[name] = defaults[name]
    else if (value !== undefined || check.required) {
      out[name] = check(value, failer(api, `options.${name}`, value, outOfRange))
    }
  }
  return out
}

/**
 * Reads environment variables by `spec` ({ NAME: checker }, the checkers above, often the very ones
 * of the options they set): returns the checked and converted values of the variables set (unset or
 * blank: absent). A value a checker refuses throws its error, naming the variable. A variable of
 * `env` that starts with `prefix` and misspells one of `spec`'s (two edits at most) is a TypeError
 * naming the one it misspells; other names with the prefix are left alone (other tools' settings).
 */
function readEnvironment(api, env, spec, { prefix } = {}) {
  const names = Object.keys(spec)
  if (prefix !== undefined) {
    for (const name of Object.keys(env)) {
      if (!name.startsWith(prefix) || Object.hasOwn(spec, name)) continue
      const near = names.find((valid) => distance(name, valid) <= 2)
      if (near !== undefined) throw new TypeError(`${api}: unknown variable ${name} (did you mean ${near}?)`)
    }
  }
  const out = {}
  for (const name of names) {
    const value = env[name]
    if (typeof value !== 'string' || value.trim() === '') continue
    out[name] = spec[name](value.trim(), failer(api, name, value, RangeError))
  }
  return out
}

/** Marks a checker as required: `undefined` is checked (and fails) instead of being absent. */
function mandatory(check) {
  const checker = (value, fail) => check(value, fail)
  checker.required = true
  return checker
}

// The native TraceHandle class, loaded on first use (the CLI's --help never loads the addon).
const traceHandle = () => require('./native').binding.TraceHandle

/**
 * A trace argument: a ProfilerTrace object (its four tables arrays, when `tables`), or a native
 * TraceHandle (a trace kept in Rust, as the CLI reads large files), else a TypeError.
 */
function traceArgument(api, trace, { tables = false } = {}) {
  if (trace instanceof traceHandle()) return trace
  if (trace === null || typeof trace !== 'object' || Array.isArray(trace)) {
    throw new TypeError(
      `${api}: expected a ProfilerTrace object ({ resources, frames, stacks, samples }), got ${describe(trace)}`,
    )
  }
  if (tables) {
    for (const table of ['resources', 'frames', 'stacks', 'samples']) {
      if (!Array.isArray(trace[table])) {
        throw new TypeError(`${api}: malformed trace: trace.${table} must be an array, got ${describe(trace[table])}`)
      }
    }
  }
  return trace
}

/**
 * A trace for the binding: a TraceHandle as it is, an object as its JSON text (Rust validates it once).
 * A graph JSON cannot hold (cycles, BigInts) is a TypeError.
 */
function traceText(api, trace, { tables = false } = {}) {
  if (traceArgument(api, trace, { tables }) instanceof traceHandle()) return trace
  try {
    return JSON.stringify(trace)
  } catch (cause) {
    throw new TypeError(`${api}: malformed trace: cannot be serialized: ${cause && cause.message}`, { cause })
  }
}

module.exports = {
  readOptions,
  readEnvironment,
  argument,
  mandatory,
  number,
  string,
  oneOf,
  boolean,
  flag,
  func,
  object,
  any,
  traceArgument,
  traceText,
  describe,
  received,
}
