'use strict'
// Heap profiles that charge the allocating code (issue 43): V8's sampling heap profiler charges an
// allocation to the frames on the stack, and a function V8 inlined into its caller has none, so a small
// helper's allocations go to its caller. While a consumer of the thread's heap sampler asks for it
// (`inlining: false`), V8 does not inline:
//
//   - V8's flags --no-turbo-inlining and --no-maglev-inlining (TurboFan's and Maglev's inlining: every
//     optimizing tier that inlines on Node 20, 22, 24 and 26; Turbolev, behind --turbolev on 24 and 26,
//     obeys the same two) make every function optimized from then on keep its callees as calls;
//   - the code optimized before, inlining included, is deoptimized once: one start and stop of V8's
//     precise coverage through the thread's inspector session (V8's Coverage::SelectMode deoptimizes
//     every function of the isolate, lazily for those on the stack, and aborts the optimizations under
//     way). Its price: a walk of the heap (every JS function gets its feedback vector), V8 then no
//     longer flushes the bytecode of functions unused for a while, and the code runs unoptimized until
//     V8 optimizes it again (docs/heap.md#inlining-off).
//
// The flags belong to the process, not the thread: the count of consumers keeping inlining off is the
// process's (src/inlining.rs), so the last consumer of all threads turns it back on, to what the command
// line said (`--no-turbo-inlining` given there stays). A worker thread's newly optimized code does not
// inline while any thread keeps the mode; each thread deoptimizes its own code when its first consumer
// asks. Under NODE_V8_COVERAGE (c8, the test runner's coverage) the deoptimization is skipped: stopping
// precise coverage would end Node's own collection; the profiles then say `inlining: true`.

const v8 = require('node:v8')
const { binding } = require('../native')

/** The V8 flags that turn inlining on, in every optimizing tier. */
const FLAGS = ['turbo-inlining', 'maglev-inlining']

/** Whether the process was started with `flag` off (`--no-flag` last on its command line or NODE_OPTIONS). */
function startedOff(flag, execArgv = process.execArgv, nodeOptions = process.env.NODE_OPTIONS) {
  const words = [...String(nodeOptions || '').split(/\s+/), ...execArgv]
  let off = false
  for (const word of words) {
    const w = word.replace(/_/g, '-')
    if (w === `--no-${flag}`) off = true
    else if (w === `--${flag}`) off = false
  }
  return off
}

const turnOff = () => {
  for (const flag of FLAGS) v8.setFlagsFromString(`--no-${flag}`)
}
const turnOn = () => {
  for (const flag of FLAGS) if (!startedOff(flag)) v8.setFlagsFromString(`--${flag}`)
}

/** This thread's consumers keeping inlining off, and the current stretch of it (null: none, or not deoptimized). */
let holders = 0
let stretch = null

/**
 * Deoptimizes this thread's code: one start and stop of precise coverage on `post`'s inspector session.
 * Returns false (and does nothing) where that would disturb Node's own coverage collection.
 */
function deoptimizeAll(post) {
  if (process.env.NODE_V8_COVERAGE) return false
  post('Profiler.enable')
  try {
    post('Profiler.startPreciseCoverage', { callCount: false, detailed: false })
  } finally {
    // Disabling the domain stops precise coverage too (V8's inspector), back to V8's best effort.
    post('Profiler.disable')
  }
  return true
}

/**
 * One more consumer of this thread keeps V8's inlining off; the first of the thread deoptimizes its
 * code through `post` (an inspector session's synchronous post). Returns the stretch it is in (a token
 * for `heldSince`), or null when this thread's code could not be deoptimized.
 */
function enter(post) {
  binding.inliningOffEnter(turnOff)
  holders++
  if (holders === 1) {
    try {
      stretch = deoptimizeAll(post) ? {} : null
    } catch {
      stretch = null
    }
  }
  return stretch
}

/** One consumer fewer; the last of all threads turns inlining back on. */
function leave() {
  if (holders === 0) return
  holders--
  if (holders === 0) stretch = null
  binding.inliningOffLeave(turnOn)
}

/** The current stretch of inlining off in this thread (null: none), as `enter` returns it. */
const current = () => stretch

/** Whether V8 inlined nothing of this thread since `token` (a stretch from `enter` or `current`). */
const heldSince = (token) => token !== null && token !== undefined && token === stretch

/**
 * `jsprof attach --heap`: the same mode in another process, through its inspector (`evaluate` runs an
 * expression there and resolves with its value; `send` posts a command on a session whose Profiler
 * domain is enabled). Sets the flags off and deoptimizes that process's main thread; resolves with
 * whether the code was deoptimized (false under NODE_V8_COVERAGE, as here). `remoteInliningOn`
 * puts the flags back as that process's command line has them.
 */
async function remoteInliningOff(evaluate, send) {
  const coverage = await evaluate(remoteFlags(false))
  if (coverage) return false
  await send('Profiler.startPreciseCoverage', { callCount: false, detailed: false })
  await send('Profiler.stopPreciseCoverage')
  return true
}

const remoteInliningOn = (evaluate) => evaluate(remoteFlags(true))

/** The expression that sets the flags in another process; its value: whether NODE_V8_COVERAGE is set there. */
function remoteFlags(on) {
  return `(() => {
    const v8 = typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule('node:v8') : process.mainModule.require('node:v8')
    const startedOff = ${startedOff.toString()}
    for (const flag of ${JSON.stringify(FLAGS)}) {
      if (${on ? 'true' : 'false'}) { if (!startedOff(flag)) v8.setFlagsFromString('--' + flag) }
      else v8.setFlagsFromString('--no-' + flag)
    }
    return Boolean(process.env.NODE_V8_COVERAGE)
  })()`
}

module.exports = { enter, leave, current, heldSince, startedOff, remoteInliningOff, remoteInliningOn, FLAGS }
