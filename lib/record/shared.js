'use strict'
// What the profiled process's main thread (lib/record/preload.js) and its watcher thread
// (lib/record/watcher.js) share: the slots of their Int32Array on a SharedArrayBuffer, and the name
// of the main thread's hook the watcher calls through the inspector.

const { hookExpression: callHook } = require('../hook-expression')

module.exports = {
  // state[CLAIM]: who ends the recording (set once, by compare-exchange).
  CLAIM: 0,
  RUNNING: 0,
  BY_MAIN: 1,
  BY_WORKER: 2,
  // state[EXITED]: 1 once the watcher has dropped its inspector session at exit.
  EXITED: 1,
  // state[SESSION]: who got there first (compare-exchange from NO_SESSION): the watcher connecting its
  // session (CONNECTED), or the main thread exiting before that (EXITING: the watcher never connects,
  // and the exit waits for nothing).
  SESSION: 2,
  NO_SESSION: 0,
  CONNECTED: 1,
  EXITING: 2,
  SLOTS: 3,
  // globalThis[Symbol.for(HOOK)](what, arg): 'flush' or 'signal' (the main thread's), 'finish' (a worker's).
  HOOK: 'jsprof.record',
  hookExpression,
}

/** The expression another thread evaluates through the inspector to call this thread's hook. */
function hookExpression(what, arg) {
  return callHook(module.exports.HOOK, what, arg)
}
