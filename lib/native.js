'use strict'
// Loads the Rust addon through the napi-rs generated loader (which picks the platform package or a
// local build) and maps the binding's errors to the JS constructors the spec asks for.

/** The error and its causes (the napi-rs loader chains one per candidate it tried). */
function causeChain(err) {
  const chain = []
  for (let e = err; e && chain.length < 32; e = e.cause) chain.push(e)
  return chain
}

let binding
try {
  binding = require('../binding.js')
} catch (cause) {
  const where = `${process.platform}-${process.arch}`
  if (causeChain(cause).some((e) => e && (e.code === 'ERR_DLOPEN_DISABLED' || /addons is disabled/.test(e.message)))) {
    throw new Error(
      'jsprof-node is a native addon and this process does not allow native addons (the permission ' +
        'model: --permission / --experimental-permission). Allow them with --allow-addons (Node >= 22), ' +
        'or run without the permission model.',
      { cause },
    )
  }
  throw new Error(
    `jsprof-node: no native binary for ${where} (Node ${process.versions.node}). ` +
      'Install the matching optional package (e.g. npm install jsprof-node-linux-x64-gnu), ' +
      'or build from source with Rust installed: npm run build. Cause: ' +
      (cause && cause.message),
    { cause },
  )
}

const CONSTRUCTORS = { TypeError, SyntaxError, RangeError }

/** Rethrows a binding error as the `TypeError`/`SyntaxError` its message names. */
function rethrowTyped(err) {
  const match = err && typeof err.message === 'string' && /^(TypeError|SyntaxError|RangeError): ([\s\S]*)$/.exec(err.message)
  if (match) throw new CONSTRUCTORS[match[1]](match[2])
  throw err
}

/** Calls into the binding, translating its errors. */
function callNative(fn) {
  try {
    return fn()
  } catch (err) {
    return rethrowTyped(err)
  }
}

module.exports = { binding, callNative, rethrowTyped }
