'use strict'
// Calling a thread's hook from another thread through the inspector (`Runtime.evaluate`): `jsprof
// record`'s watcher (flush, signal, a worker's finish) and watchStalls' helper (detected, snapshot).
// The script V8 compiles for the expression is named after this file (`//# sourceURL`), so its frame, on
// the stack of every sample taken while the hook runs, is jsprof-node's own code, which no trace shows
// (src/own_code.rs): never an anonymous script of its own, `(anonymous) (generated:1:1)`, in the app's trace.

const SOURCE_URL = require('node:url').pathToFileURL(__filename).href

/**
 * The expression calling `globalThis[Symbol.for(hook)](what, arg)` (an integer), or `(what, arg, extra)`
 * with `extra` a finite number, when that hook is there.
 */
function hookExpression(hook, what, arg, extra) {
  const more = Number.isFinite(extra) ? `, ${extra}` : ''
  return `globalThis[Symbol.for(${JSON.stringify(hook)})]?.(${JSON.stringify(what)}, ${arg | 0}${more})\n//# sourceURL=${SOURCE_URL}`
}

/** Whether a line of `Error.stack` (without "at ") is the evaluated expression's frame. */
const isHookFrame = (line) => line === SOURCE_URL || line.startsWith(`${SOURCE_URL}:`)

module.exports = { hookExpression, isHookFrame }
