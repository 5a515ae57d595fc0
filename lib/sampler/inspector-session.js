'use strict'
// The V8 side of the sampler through node:inspector: one in-process session per thread driving V8's
// Profiler domain. The engine (engine.js) only sees the four calls of a V8 session:
//   start(intervalUs)  V8 starts sampling (cold: it logs all compiled code first; docs/bench.md#cold-and-warm-starts)
//   take()             V8's samples so far; V8 goes on sampling at the same interval, without a gap
//   stop()             V8's samples so far; V8 stops
//   toChunks(taken, intervalUs, ownWindows)   what take()/stop() returned, as Rust chunks (done a
//                      turn later), without the samples stamped in the engine's own harvest windows
//
// The inspector hands samples out only by stopping a profile, and disposes its CpuProfiler (and
// with it the log of compiled code) when its last profile stops. take() therefore starts a bridge,
// a console.profile(), just before Profiler.stop and ends it right after Profiler.start: the
// CpuProfiler stays alive (a cheap restart instead of a re-log: docs/bench.md#cold-and-warm-starts). The
// ticks between the stop and the start fall within the harvest, whose samples the engine drops anyway
// (see engine.js): the bridge's own profile is not converted.

const { binding } = require('../native')
const { beforeHarvest, contextRing, samplingChanged, recordingChanged } = require('../labels')

/**
 * V8 reports a console profile to every inspector session with the Profiler domain enabled, not only
 * to ours: under `node --cpu-prof` Node's own session prints "Cannot retrieve id from the response
 * message" for each bridge (so does its coverage session under NODE_V8_COVERAGE: c8, `node --test
 * --experimental-test-coverage`), and an attached DevTools lists each bridge as a recorded profile.
 * When such a client is possible (--cpu-prof, NODE_V8_COVERAGE, or the inspector is open: --inspect,
 * inspector.open()), take() restarts fully instead (a few ms each: V8 re-logs the compiled code),
 * and nothing of ours shows up elsewhere.
 */
function otherProfilerClientPossible(inspector, env = process.env, execArgv = process.execArgv) {
  // Only --cpu-prof itself profiles: --cpu-prof-interval/-dir/-name only configure it (and Node 24+'s
  // test runner passes --cpu-prof-interval=1000 to every test process).
  const flags = [...execArgv, ...String(env.NODE_OPTIONS || '').split(/\s+/)]
  if (env.NODE_V8_COVERAGE || flags.includes('--cpu-prof')) return true
  try {
    return inspector.url() !== undefined
  } catch {
    return false
  }
}

class InspectorUnavailableError extends DOMException {
  constructor(cause) {
    super(
      'jsprof-node needs the node:inspector module to profile, and it is not available in this process ' +
        '(Node built without the inspector, or the permission model denies it: run with --allow-inspector). ' +
        `Cause: ${cause && cause.message}`,
      'NotSupportedError',
    )
  }
}

/**
 * Posts a command to an in-process inspector session and returns its result. Such sessions answer
 * synchronously (which lets a profile be stopped inside 'exit'); anything else is a broken
 * assumption, said loudly.
 */
function postSync(session, method, params) {
  let answered = false
  let error = null
  let result
  session.post(method, params, (err, res) => {
    answered = true
    error = err
    result = res
  })
  if (!answered) throw new Error(`jsprof-node: the inspector did not answer ${method} synchronously`)
  if (error) throw error
  return result
}

/** Packs an inspector profile object into columns for Rust, in one pass, without re-serializing it. */
function packColumns(profile) {
  const nodes = profile.nodes
  const n = nodes.length
  const ids = new Int32Array(n)
  const childCounts = new Uint32Array(n)
  const names = new Uint32Array(n)
  const urls = new Uint32Array(n)
  const lines = new Int32Array(n)
  const columns = new Int32Array(n)
  const strings = []
  const stringIndex = new Map()
  const intern = (s) => {
    let i = stringIndex.get(s)
    if (i === undefined) {
      i = strings.length
      strings.push(s)
      stringIndex.set(s, i)
    }
    return i
  }
  let childTotal = 0
  let tickTotal = 0
  for (let i = 0; i < n; i++) {
    childTotal += nodes[i].children ? nodes[i].children.length : 0
    tickTotal += nodes[i].positionTicks ? nodes[i].positionTicks.length : 0
  }
  const children = new Int32Array(childTotal)
  // V8's per-line ticks of each node (for inlined functions' samples: jsprof-core's convert/inlined.rs).
  const tickCounts = new Uint32Array(tickTotal > 0 ? n : 0)
  const tickLines = new Int32Array(tickTotal)
  const ticks = new Uint32Array(tickTotal)
  let k = 0
  let t = 0
  for (let i = 0; i < n; i++) {
    const node = nodes[i]
    const frame = node.callFrame
    ids[i] = node.id
    names[i] = intern(frame.functionName)
    urls[i] = intern(frame.url)
    lines[i] = frame.lineNumber
    columns[i] = frame.columnNumber
    const c = node.children
    if (c) {
      childCounts[i] = c.length
      for (let j = 0; j < c.length; j++) children[k++] = c[j]
    }
    const p = node.positionTicks
    if (p) {
      tickCounts[i] = p.length
      for (let j = 0; j < p.length; j++, t++) {
        tickLines[t] = p[j].line
        ticks[t] = p[j].ticks
      }
    }
  }
  return {
    ids,
    childCounts,
    children,
    names,
    urls,
    lines,
    columns,
    strings,
    samples: Int32Array.from(profile.samples || []),
    timeDeltas: Float64Array.from(profile.timeDeltas || []),
    startTime: profile.startTime,
    endTime: profile.endTime,
    tickCounts,
    tickLines,
    ticks,
  }
}

class InspectorSession {
  #inspector
  #console
  #session = null
  #enabled = false
  #bridgeTitle = `jsprof-node-bridge-${process.pid}-${Math.random().toString(36).slice(2)}`
  #bridgeProfile = null
  /** null until known: true when console.profile() really is V8's and keeps the profiler alive. */
  #bridgeWorks = null
  stats = { fullRestarts: 0, bridgedRestarts: 0 }

  /**
   * `inspector` is node:inspector (or a stand-in with its shape, in tests); `console` the V8 console
   * methods the bridge uses, captured before the app can replace them.
   */
  constructor({ inspector, console: { profile, profileEnd } }) {
    this.#inspector = inspector
    this.#console = { profile, profileEnd }
  }

  #connect() {
    if (this.#session) return
    try {
      const inspector = typeof this.#inspector === 'function' ? this.#inspector() : this.#inspector
      const session = new inspector.Session()
      session.connect()
      this.#inspector = inspector
      this.#session = session
    } catch (cause) {
      throw new InspectorUnavailableError(cause)
    }
    this.#session.on('Profiler.consoleProfileFinished', (message) => {
      if (message.params.title === this.#bridgeTitle) this.#bridgeProfile = message.params.profile
    })
  }

  #post(method, params) {
    return postSync(this.#session, method, params)
  }

  start(intervalUs) {
    this.#connect()
    if (!this.#enabled) {
      this.#post('Profiler.enable')
      this.#enabled = true
    }
    this.#post('Profiler.setSamplingInterval', { interval: intervalUs })
    // Samples are taken from now on: labels are read (lib/labels.js: the hooks run meanwhile), the
    // code running now's first, before V8's first sample (the stack it stamps at its start).
    samplingChanged(true)
    this.#post('Profiler.start')
  }

  take() {
    if (this.#bridgeWorks === false || otherProfilerClientPossible(this.#inspector)) {
      const { profile } = this.#post('Profiler.stop')
      this.#post('Profiler.start')
      this.stats.fullRestarts++
      return [profile]
    }
    this.#bridgeProfile = null
    this.#console.profile.call(console, this.#bridgeTitle)
    const { profile } = this.#post('Profiler.stop')
    this.#post('Profiler.start')
    this.#console.profileEnd.call(console, this.#bridgeTitle)
    // The bridge's samples all lie within the harvest, whose samples the engine drops (V8's start
    // samples of the restart are among them): it is not converted, only checked to have worked.
    this.#bridgeWorks = this.#bridgeProfile !== null
    this.#bridgeProfile = null
    this.stats[this.#bridgeWorks ? 'bridgedRestarts' : 'fullRestarts']++
    return [profile]
  }

  stop() {
    const { profile } = this.#post('Profiler.stop')
    samplingChanged(false)
    // Disabled, the domain ignores a user's console.profile() (no events parsed for nothing).
    this.#post('Profiler.disable')
    this.#enabled = false
    return [profile]
  }

  /**
   * A subscription that keeps samples arrived (true; a Profiler, continuous mode, a stall, `jsprof
   * record`) or the last left (false): every request's labels are read meanwhile (lib/labels.js).
   */
  recordingChanged(on) {
    recordingChanged(on)
  }

  /** After an inspector failure: forget V8's state so the next start begins afresh. */
  reset() {
    samplingChanged(false)
    this.#enabled = false
    try {
      this.#post('Profiler.disable')
    } catch {}
  }

  toChunks(profiles, intervalUs, ownWindows = []) {
    // The thread's context changes so far go to Rust first: each chunk's samples get their labels
    // and request contexts, as the context ring says them now.
    beforeHarvest()
    const ring = contextRing()
    return profiles.map((profile) => binding.Chunk.fromInspector(packColumns(profile), intervalUs, ownWindows, ring))
  }
}

module.exports = { InspectorSession, InspectorUnavailableError, packColumns, postSync, otherProfilerClientPossible }
