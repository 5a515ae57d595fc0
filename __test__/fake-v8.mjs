// Stand-ins for V8, for the sampler's unit tests: a fake V8 session for the engine (start / take /
// stop / toChunks with samples the test puts in), and a stub node:inspector for InspectorSession.

import { createRequire } from 'node:module'
const require = createRequire(import.meta.url)
const { binding } = require('../lib/native.js')
const { packColumns } = require('../lib/sampler/index.js')

/** An inspector-shaped profile with one function `work` and samples at the given times (µs). */
export function profileAt(times, { startTime = times.length ? times[0] : 0 } = {}) {
  const nodes = [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1, columnNumber: -1 }, children: [2] },
    { id: 2, callFrame: { functionName: 'work', url: 'file:///app/work.js', lineNumber: 0, columnNumber: 10 } },
  ]
  const timeDeltas = []
  let last = startTime
  for (const t of times) {
    timeDeltas.push(t - last)
    last = t
  }
  return { nodes, startTime, endTime: last, samples: times.map(() => 2), timeDeltas }
}

/** A fake V8 for the engine: the test adds ticks with `tick(t)`; take()/stop() hand them out. */
export class FakeSession {
  running = false
  intervalUs = 0
  calls = []
  /** The ownWindows argument of each toChunks call. */
  ownWindows = []
  pending = []
  /** Make the next take() or stop() throw this. */
  failNext = null

  start(intervalUs) {
    this.calls.push(`start ${intervalUs}`)
    this.running = true
    this.intervalUs = intervalUs
  }

  tick(...times) {
    if (!this.running) throw new Error('a tick while V8 is stopped')
    this.pending.push(...times)
  }

  #hand(what) {
    this.calls.push(what)
    if (this.failNext) {
      const err = this.failNext
      this.failNext = null
      throw err
    }
    const times = this.pending
    this.pending = []
    return [profileAt(times)]
  }

  take() {
    return this.#hand('take')
  }

  stop() {
    this.running = false
    return this.#hand('stop')
  }

  reset() {
    this.calls.push('reset')
    this.running = false
  }

  toChunks(profiles, intervalUs, ownWindows = []) {
    this.ownWindows.push(ownWindows)
    return profiles.map((p) => binding.Chunk.fromInspector(packColumns(p), intervalUs, ownWindows))
  }

  count(call) {
    return this.calls.filter((c) => c === call || c.startsWith(`${call} `)).length
  }
}

/**
 * A stub of node:inspector with one in-process Session answering the Profiler domain synchronously,
 * and the console the bridge uses: console.profile()/profileEnd() report a console profile to the
 * session, as V8 does. The test says which samples the main profile and each bridge hold.
 */
export function stubInspector() {
  // now: when set, a profile start (Profiler.start, console.profile) stamps a sample of the current
  // stack at now() into every running profile, as V8's CpuProfiler::StartProfiling does.
  const state = {
    mainSamples: [],
    bridgeSamples: [],
    calls: [],
    session: null,
    url: undefined,
    now: null,
    bridgeOn: false,
  }
  const startSample = () => {
    if (!state.now) return
    const t = state.now()
    state.mainSamples.push(t)
    if (state.bridgeOn) state.bridgeSamples.push(t)
  }
  class Session {
    #listeners = new Map()
    constructor() {
      state.session = this
    }
    connect() {}
    on(event, fn) {
      this.#listeners.set(event, fn)
    }
    emit(event, message) {
      const fn = this.#listeners.get(event)
      if (fn) fn(message)
    }
    post(method, params, callback) {
      state.calls.push(method)
      let result = {}
      if (method === 'Profiler.stop') {
        result = { profile: profileAt(state.mainSamples) }
        state.mainSamples = []
      } else if (method === 'Profiler.start') {
        startSample()
      }
      callback(null, result)
    }
  }
  const consoleStub = {
    profile() {
      state.calls.push('console.profile')
      state.bridgeOn = true
      startSample()
    },
    profileEnd(title) {
      state.calls.push('console.profileEnd')
      state.bridgeOn = false
      state.session.emit('Profiler.consoleProfileFinished', {
        params: { title, profile: profileAt(state.bridgeSamples) },
      })
      state.bridgeSamples = []
    },
  }
  return { state, inspector: { Session, url: () => state.url }, console: consoleStub }
}
