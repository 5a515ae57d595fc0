'use strict'
// Loads the Rust addon through the napi-rs generated loader (which picks the platform package or a
// local build) and maps the binding's errors to the JS constructors the spec asks for.

/** The error and its causes (the napi-rs loader chains one per candidate it tried). */
function causeChain(err) {
  const chain = []
  for (let e = err; e && chain.length < 32; e = e.cause) chain.push(e)
  return chain
}

/** What to do when no binary loaded, for this platform (prebuilt packages: package.json `napi.targets`). */
function noBinaryMessage() {
  const node = `Node ${process.versions.node}`
  const override = process.env.NAPI_RS_NATIVE_LIBRARY_PATH
  const platform = platformName()
  if (override) {
    return (
      `jsprof-node: NAPI_RS_NATIVE_LIBRARY_PATH=${override} did not load (${platform}, ${node}). ` +
      'Point it at a jsprof-node .node file built for this platform, or unset it to use the prebuilt package.'
    )
  }
  const fromSource =
    'build it from source (Rust needed): `npm install` in a clone of the jsprof-node repository builds ' +
    `jsprof-node.${platform}.node; set NAPI_RS_NATIVE_LIBRARY_PATH to its path.`
  if (!PREBUILT.includes(platform)) {
    return `jsprof-node: no prebuilt binary for ${platform} (${node}; prebuilt: ${PREBUILT.join(', ')}). To use it, ${fromSource}`
  }
  return (
    `jsprof-node: the native binary for ${platform} (${node}) did not load. It comes in the optional ` +
    `dependency jsprof-node-${platform}: reinstall without --omit=optional / --no-optional; if the lockfile ` +
    'was made on another platform, delete node_modules and package-lock.json and run npm install again ' +
    `(npm bug 4828). Or ${fromSource}`
  )
}

// The napi-rs platform names of package.json's `napi.targets` (one npm package each).
const PREBUILT = [
  'linux-x64-gnu',
  'linux-x64-musl',
  'linux-arm64-gnu',
  'linux-arm64-musl',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64-msvc',
]

/** The napi-rs name of this platform: linux-x64-gnu, linux-x64-musl, darwin-arm64, win32-x64-msvc… */
function platformName() {
  const base = `${process.platform}-${process.arch}`
  if (process.platform === 'win32') return `${base}-msvc`
  if (process.platform !== 'linux') return base
  let glibc = true
  try {
    glibc = Boolean(process.report.getReport().header.glibcVersionRuntime)
  } catch {}
  return `${base}-${glibc ? 'gnu' : 'musl'}`
}

let binding
try {
  binding = require('../binding.js')
} catch (cause) {
  if (causeChain(cause).some((e) => e && (e.code === 'ERR_DLOPEN_DISABLED' || /addons is disabled/.test(e.message)))) {
    throw new Error(
      'jsprof-node is a native addon and this process does not allow native addons (the permission ' +
        'model: --permission / --experimental-permission). Allow them with --allow-addons (Node >= 22), ' +
        'or run without the permission model.',
      { cause },
    )
  }
  // The loader chains one error per candidate under a generic one: show each candidate's first line.
  const tried = causeChain(cause)
    .slice(cause && cause.cause ? 1 : 0)
    .map((e) => String(e && e.message).split('\n')[0])
  throw new Error(`${noBinaryMessage()} Tried: ${tried.join('; ')}`, { cause })
}

// The traces jsprof-node records leave its own code out (Chrome's first sample is the caller's stack,
// not the profiler's): these files, as paths and as the file:// URLs V8 reports.
{
  const path = require('node:path')
  const { pathToFileURL } = require('node:url')
  const root = path.resolve(__dirname, '..')
  const own = [
    path.join(root, 'lib') + path.sep,
    ...['index.js', 'index.mjs', 'binding.js'].map((f) => path.join(root, f)),
  ]
  binding.setOwnCode(own.flatMap((p) => [p, pathToFileURL(p).href]))
}

const CONSTRUCTORS = { TypeError, SyntaxError, RangeError }

/** Rethrows a binding error as the `TypeError`/`SyntaxError` its message names. */
function rethrowTyped(err) {
  const match =
    err && typeof err.message === 'string' && /^(TypeError|SyntaxError|RangeError): ([\s\S]*)$/.exec(err.message)
  if (match) throw new CONSTRUCTORS[match[1]](match[2])
  throw err
}

// `samples[3].timestamp: null where a number belongs`: the path of a value Rust found null.
const NULL_NUMBER = /([A-Za-z_$][\w$]*(?:\[\d+\]|\.[A-Za-z_$][\w$]*)*): null where a number belongs/g

/** The value at a path such as `samples[3].timestamp` in `value`, or undefined. */
function valueAt(value, path) {
  for (const part of path.match(/[A-Za-z_$][\w$]*|\d+/g)) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined
    value = value[part]
  }
  return value
}

/**
 * A JS input's non-finite number (Infinity, NaN, a JSON `1e400`) reaches Rust as `null` (what
 * JSON.stringify writes for it): an error about that null names the number instead.
 */
function nonFiniteNamed(err, source) {
  if (source === null || typeof source !== 'object' || !(err instanceof TypeError)) return err
  const message = err.message.replace(NULL_NUMBER, (whole, path) => {
    const v = valueAt(source, path)
    return typeof v === 'number' && !Number.isFinite(v)
      ? `${path}: ${v}, out of range, where a finite number belongs`
      : whole
  })
  if (message === err.message) return err
  return new TypeError(message)
}

/**
 * Calls into the binding, translating its errors; `source`: the JS value the call's input was
 * serialized from (its non-finite numbers are named in errors, not as the null they became).
 */
function callNative(fn, source) {
  try {
    return fn()
  } catch (err) {
    try {
      return rethrowTyped(err)
    } catch (typed) {
      throw nonFiniteNamed(typed, source)
    }
  }
}

module.exports = { binding, callNative, rethrowTyped }
