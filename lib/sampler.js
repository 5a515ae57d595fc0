'use strict'
// The per-thread sampler: one inspector session and one V8 CPU profile shared by every Profiler of
// this thread (N sessions would mean N V8 sampler threads and N code-logging passes).
//
// V8 runs at the smallest interval any live Profiler asked for. The sampler "harvests" V8's profile
// (Profiler.stop, then Profiler.start again) into Rust chunks and offers each chunk to every live
// subscription; each subscription's Rust Recording keeps only its own window, interval and buffer.
//
// Harvests happen when a Profiler stops (batched: one harvest serves every stop() of a tick), when a
// buffer is expected to be full, and periodically (about every 1000 samples, 0.1–10 s) so that each
// harvest, and so each main-thread stall, stays small, and memory moves from V8 into compact chunks.
// A harvest takes two event-loop turns: V8's stop and restart in one, the conversion into chunks (and
// the stops it resolves) in the next, so that no turn costs the thread more than V8's own stop does.
//
// Restarting is cheap because of a bridge: V8's inspector disposes its CpuProfiler (and the log of
// all compiled code, 3–15 ms to rebuild) when its last profile stops. A console.profile() started
// just before Profiler.stop keeps it alive, so Profiler.start costs ~0.05 ms; the bridge profile,
// ended right after, also covers the instant between the stop and the start, so no sample is lost.

const { binding } = require('./native')
const { nowUs } = require('./clock')

/** The smallest interval we run V8 at: 0.1 ms (10 kHz). `sampleInterval: 0` picks it. */
const MIN_INTERVAL_US = 100
/** V8 takes the interval as an int32 of µs; slower Profilers are served by decimation. */
const MAX_V8_INTERVAL_US = 2 ** 31 - 1
const HARVEST_EVERY_SAMPLES = 1000
const HARVEST_MIN_PERIOD_US = 100_000
const HARVEST_MAX_PERIOD_US = 10_000_000
/** Slow V8 down (a full restart, re-logging code) only when the fastest Profiler left for good. */
const SLOW_DOWN_RATIO = 2

// Captured at load: the V8 console methods the bridge uses, before anything can replace them.
const consoleProfile = console.profile
const consoleProfileEnd = console.profileEnd

/**
 * V8 reports a console profile to every inspector session with the Profiler domain enabled, not only
 * to ours: under `node --cpu-prof` Node's own session prints "Cannot retrieve id from the response
 * message" for each bridge (so does its coverage session under NODE_V8_COVERAGE: c8, `node --test
 * --experimental-test-coverage`), and an attached DevTools lists each bridge as a recorded profile.
 * When such a client is possible (--cpu-prof, NODE_V8_COVERAGE, or the inspector is open: --inspect,
 * inspector.open()), restarts are full ones instead (a few ms each: V8 re-logs the compiled code)
 * and nothing of ours shows up elsewhere.
 */
const nodeProfilerSession =
  Boolean(process.env.NODE_V8_COVERAGE) ||
  [...process.execArgv, ...String(process.env.NODE_OPTIONS || '').split(/\s+/)].some(
    (flag) => flag === '--cpu-prof' || flag.startsWith('--cpu-prof-') || flag.startsWith('--cpu-prof='),
  )
function bridgeWouldBeSeen(inspector) {
  if (nodeProfilerSession) return true
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
  for (let i = 0; i < n; i++) childTotal += nodes[i].children ? nodes[i].children.length : 0
  const children = new Int32Array(childTotal)
  let k = 0
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
  }
}

class Sampler {
  #session = null
  #enabled = false
  #running = false
  #intervalUs = 0
  #lastHarvestUs = 0
  /** Subscriptions still taking samples (not full; possibly stopping). */
  #live = new Set()
  /** Subscriptions whose stop() waits for the next harvest: sub -> [resolve, reject]. */
  #stopping = new Map()
  /**
   * Harvests whose V8 profiles are not converted yet, oldest first: a harvest takes V8's profile in
   * one event-loop turn and converts and hands it out in the next, so that no turn costs more than
   * V8's own stop does. Entries: { profiles, intervalUs, harvestUs, receivers, stopping, failure }.
   */
  #unconverted = []
  #convertQueued = false
  #timer = null
  /** When the armed timer fires (µs); Infinity when none. */
  #timerDueUs = Infinity
  #harvestQueued = false
  /** Earliest time a batched stop (finish with a max wait) needs a harvest by; Infinity when none. */
  #stopDueUs = Infinity
  /** owner -> ms to keep V8 running after the last subscription left (see keepWarm). */
  #warmOwners = new Map()
  #graceUs = 0
  /** Last time a subscription that still needs samples was seen. */
  #lastActiveUs = 0
  #bridgeTitle = `jsprof-node-bridge-${process.pid}-${Math.random().toString(36).slice(2)}`
  #bridgeProfile = null
  #inspector = null
  /** null until known: true when console.profile() really is V8's and keeps the profiler alive. */
  #bridgeWorks = null
  /** Figures for benchmarks and tests. */
  stats = { harvests: 0, fullRestarts: 0, bridgedRestarts: 0, chunks: 0, harvestMsMax: 0, harvestMsTotal: 0 }

  get running() {
    return this.#running
  }

  get intervalUs() {
    return this.#intervalUs
  }

  get liveCount() {
    return this.#live.size
  }

  #connect() {
    if (this.#session) return
    let inspector
    try {
      inspector = require('node:inspector')
      const session = new inspector.Session()
      session.connect()
      this.#session = session
      this.#inspector = inspector
    } catch (cause) {
      throw new InspectorUnavailableError(cause)
    }
    this.#session.on('Profiler.consoleProfileFinished', (message) => {
      if (message.params.title === this.#bridgeTitle) this.#bridgeProfile = message.params.profile
    })
  }

  /** In-process sessions answer synchronously; anything else is a broken assumption, said loudly. */
  #post(method, params) {
    let answered = false
    let error = null
    let result
    this.#session.post(method, params, (err, res) => {
      answered = true
      error = err
      result = res
    })
    if (!answered) throw new Error(`jsprof-node: the inspector did not answer ${method} synchronously`)
    if (error) throw error
    return result
  }

  #start(intervalUs) {
    if (!this.#enabled) {
      this.#post('Profiler.enable')
      this.#enabled = true
    }
    this.#post('Profiler.setSamplingInterval', { interval: intervalUs })
    this.#post('Profiler.start')
    this.#running = true
    this.#intervalUs = intervalUs
    this.#lastHarvestUs = nowUs()
  }

  /** The V8 interval the live, not-stopping subscriptions need (Infinity when none). */
  #neededIntervalUs() {
    let needed = Infinity
    for (const sub of this.#live) {
      if (!this.#stopping.has(sub)) needed = Math.min(needed, sub.v8IntervalUs)
    }
    return needed
  }

  /** Starts sampling for a subscription: { recording, v8IntervalUs, maxSamples, startUs, onFull }. */
  add(sub) {
    this.#connect()
    if (!this.#running) {
      this.#start(sub.v8IntervalUs)
    } else if (sub.v8IntervalUs < this.#intervalUs) {
      // V8 cannot change the interval of a running profiler: harvest and restart faster.
      this.#harvest(sub.v8IntervalUs)
    }
    sub.checkAtUs = sub.startUs + (sub.maxSamples + 1) * sub.intervalUs
    this.#live.add(sub)
    this.#lastActiveUs = nowUs()
    // Re-arming walks every live subscription: skip it when the armed timer comes first anyway
    // (many short request subscriptions at once).
    if (!this.#timer || sub.checkAtUs < this.#timerDueUs) this.#schedule()
  }

  /**
   * Keeps V8 sampling for `ms` after the last subscription left (0 removes `owner`'s wish), so that a
   * Profiler created soon after (the next sampled request) needs no full restart (3-15 ms of code
   * logging) but only a bridged one. Samples nobody asked for are dropped at the next harvest.
   */
  keepWarm(owner, ms) {
    if (ms > 0) this.#warmOwners.set(owner, ms * 1000)
    else this.#warmOwners.delete(owner)
    this.#graceUs = Math.max(0, ...this.#warmOwners.values())
    if (this.#running) this.#schedule()
  }

  #warm(now) {
    return this.#graceUs > 0 && now - this.#lastActiveUs < this.#graceUs
  }

  /** Forgets a subscription whose Profiler was garbage-collected without stop(). */
  remove(sub) {
    sub.ended = true
    this.#live.delete(sub)
    if (this.#live.size === 0) this.#queueHarvest()
  }

  /**
   * Resolves once the subscription's recording holds every sample up to its stop time. With
   * `maxWaitMs` > 0 the stop is batched: it resolves at the next harvest, at most `maxWaitMs` later
   * (plus the harvest itself), so that many stops share one V8 restart.
   */
  finish(sub, maxWaitMs = 0) {
    if (!this.#live.has(sub)) return Promise.resolve()
    return new Promise((resolve, reject) => {
      this.#stopping.set(sub, [resolve, reject])
      if (this.#timer) this.#timer.ref()
      this.#lastActiveUs = nowUs()
      if (maxWaitMs > 0 && this.#running) {
        const due = this.#lastActiveUs + maxWaitMs * 1000
        if (due < this.#stopDueUs) {
          this.#stopDueUs = due
          if (!this.#timer || due < this.#timerDueUs) this.#schedule()
        }
      } else {
        this.#queueHarvest()
      }
    })
  }

  /** Asks for a harvest at most `maxWaitMs` from now (batched with any other request for one). */
  harvestWithin(maxWaitMs) {
    if (!this.#running) return
    const due = nowUs() + maxWaitMs * 1000
    if (due < this.#stopDueUs) {
      this.#stopDueUs = due
      if (!this.#timer || due < this.#timerDueUs) this.#schedule()
    }
  }

  #queueHarvest() {
    if (this.#harvestQueued) return
    this.#harvestQueued = true
    setImmediate(() => {
      this.#harvestQueued = false
      this.#harvest(Infinity)
    })
  }

  #schedule() {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#timerDueUs = Infinity
    if (!this.#running) return
    const period = Math.min(
      HARVEST_MAX_PERIOD_US,
      Math.max(HARVEST_MIN_PERIOD_US, HARVEST_EVERY_SAMPLES * this.#intervalUs),
    )
    let due = Math.min(this.#lastHarvestUs + period, this.#stopDueUs)
    for (const sub of this.#live) due = Math.min(due, sub.checkAtUs)
    if (this.#live.size === 0 && this.#graceUs > 0) due = Math.min(due, this.#lastActiveUs + this.#graceUs)
    const delayMs = Math.max(1, Math.ceil((due - nowUs()) / 1000))
    this.#timerDueUs = due
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.#timerDueUs = Infinity
      this.#harvest(Infinity)
    }, delayMs)
    // A running profiler never keeps the process alive; a stop() someone awaits does, until it resolves.
    if (this.#stopping.size === 0) this.#timer.unref()
  }

  /**
   * Takes V8's samples so far and hands them out. `fasterUs` asks for a restart at a smaller
   * interval (a new, faster Profiler); otherwise V8 keeps running if anyone still needs it.
   */
  #harvest(fasterUs) {
    this.#timed(() => this.#harvestTimed(fasterUs))
  }

  /** Runs one turn of harvesting, counting its main-thread time (benchmarks). */
  #timed(work) {
    const startedUs = nowUs()
    try {
      work()
    } finally {
      const ms = (nowUs() - startedUs) / 1000
      this.stats.harvestMsTotal += ms
      if (ms > this.stats.harvestMsMax) this.stats.harvestMsMax = ms
    }
  }

  /** The first turn of a harvest: V8's profile(s) taken, V8 restarted or stopped; conversion queued. */
  #harvestTimed(fasterUs) {
    this.#stopDueUs = Infinity
    const entry = {
      profiles: [],
      intervalUs: this.#intervalUs,
      harvestUs: nowUs(),
      // Who gets these samples: every subscription sampling now (including the stopping ones).
      receivers: [...this.#live],
      stopping: this.#stopping,
      failure: null,
    }
    if (this.#running) {
      try {
        entry.profiles = this.#takeProfiles(fasterUs)
      } catch (err) {
        entry.failure = err
        this.#reset()
      }
    }
    this.#stopping = new Map()
    for (const sub of entry.stopping.keys()) this.#live.delete(sub)
    this.#stopIfUnneeded()
    this.#unconverted.push(entry)
    this.#queueConversion()
    this.#schedule()
  }

  /** Stops V8 when no subscription needs samples any more (its last samples belong to no one). */
  #stopIfUnneeded() {
    if (this.#running && this.#neededIntervalUs() === Infinity && !this.#warm(nowUs())) {
      try {
        this.#stopAll()
      } catch {
        this.#reset()
      }
    }
  }

  #queueConversion() {
    if (this.#convertQueued) return
    this.#convertQueued = true
    setImmediate(() => {
      this.#convertQueued = false
      this.#timed(() => this.#convertOldest())
      if (this.#unconverted.length > 0) this.#queueConversion()
    })
  }

  /** The second turn of a harvest: its profiles become chunks, recordings get them, stops resolve. */
  #convertOldest() {
    const entry = this.#unconverted.shift()
    if (!entry) return
    let failure = entry.failure
    let chunks = []
    if (!failure) {
      try {
        chunks = entry.profiles.map((profile) => this.#chunkOf(profile, entry.intervalUs))
      } catch (err) {
        failure = err
      }
    }
    for (const chunk of chunks) {
      const full = []
      for (const sub of entry.receivers) {
        // Full since this harvest, or its Profiler was garbage-collected: it takes nothing more.
        if (sub.ended) continue
        if (sub.recording.addChunk(chunk).becameFull) full.push(sub)
        // A raw listener (the request profiler) sees every chunk while it is subscribed.
        if (sub.onChunk) sub.onChunk(chunk, entry.harvestUs)
      }
      // A full recording stops growing and stops asking for samples: nothing samples on its behalf.
      for (const sub of full) {
        sub.ended = true
        this.#live.delete(sub)
        sub.onFull()
      }
    }
    for (const [resolve, reject] of entry.stopping.values()) {
      if (failure) reject(failure)
      else resolve()
    }
    // The last subscriptions may have filled up. (Not while stops wait for a harvest: it needs V8's
    // samples up to then, and it stops V8 itself if nobody is left.)
    if (this.#stopping.size === 0) this.#stopIfUnneeded()
    const now = nowUs()
    for (const sub of this.#live) {
      const remaining = sub.maxSamples - sub.recording.sampleCount
      sub.checkAtUs = now + (remaining + 1) * sub.intervalUs
    }
    this.#schedule()
  }

  #takeProfiles(fasterUs) {
    const intervalUs = this.#intervalUs
    let needed = Math.min(fasterUs, this.#neededIntervalUs())
    const profiles = []
    this.stats.harvests++
    const now = nowUs()
    if (needed !== Infinity) this.#lastActiveUs = now
    else if (this.#warm(now)) needed = intervalUs
    if (needed === Infinity) return [this.#stopAll()]
    const keepInterval = needed >= intervalUs && needed < intervalUs * SLOW_DOWN_RATIO
    if (keepInterval && this.#bridgeWorks !== false && !bridgeWouldBeSeen(this.#inspector)) {
      this.#bridgeProfile = null
      consoleProfile.call(console, this.#bridgeTitle)
      const { profile } = this.#post('Profiler.stop')
      this.#post('Profiler.start')
      consoleProfileEnd.call(console, this.#bridgeTitle)
      const bridge = this.#bridgeProfile
      this.#bridgeProfile = null
      this.#bridgeWorks = bridge !== null
      this.stats[this.#bridgeWorks ? 'bridgedRestarts' : 'fullRestarts']++
      profiles.push(profile)
      if (bridge) profiles.push(bridge)
    } else {
      profiles.push(this.#stopAll())
      this.stats.fullRestarts++
      this.#start(Math.max(MIN_INTERVAL_US, needed))
    }
    this.#lastHarvestUs = nowUs()
    return profiles
  }

  #stopAll() {
    this.#running = false
    const { profile } = this.#post('Profiler.stop')
    // Disabled, the domain ignores a user's console.profile() (no events parsed for nothing).
    this.#post('Profiler.disable')
    this.#enabled = false
    return profile
  }

  #chunkOf(profile, intervalUs) {
    this.stats.chunks++
    return binding.Chunk.fromInspector(packColumns(profile), intervalUs)
  }

  /** After an inspector failure: forget V8's state so the next Profiler starts afresh. */
  #reset() {
    this.#running = false
    this.#enabled = false
    try {
      this.#post('Profiler.disable')
    } catch {}
  }
}

let threadSampler = null
/** This thread's sampler (each worker loads its own copy of this module). */
function getSampler() {
  if (!threadSampler) threadSampler = new Sampler()
  return threadSampler
}

/** The V8 interval (µs) for a requested sampleInterval (ms): whole µs, at least MIN_INTERVAL_US. */
function effectiveIntervalUs(sampleIntervalMs) {
  const us = Math.ceil(sampleIntervalMs * 1000 - 1e-6)
  return Math.max(MIN_INTERVAL_US, us)
}

module.exports = {
  getSampler,
  effectiveIntervalUs,
  packColumns,
  MIN_INTERVAL_US,
  MAX_V8_INTERVAL_US,
  InspectorUnavailableError,
}
