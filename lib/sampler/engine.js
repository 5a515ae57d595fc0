'use strict'
// The sampler engine: one per thread, shared by every Profiler, continuous chunk and request profile
// of that thread (N V8 profiles would mean N V8 sampler threads and N code-logging passes).
//
// V8 runs at the smallest interval any live subscription needs. The engine "harvests" V8's samples
// (session.take(): V8 goes on sampling) into Rust chunks and offers each chunk to every subscription
// live when it was taken; each subscription's Recording keeps only its own window, interval, buffer.
//
// When it harvests (the rules are the pure functions of schedule.js):
//   - when a subscription stops: at once if no harvest happened in the last `minStopGapUs` (a lone
//     stop() resolves promptly), else `minStopGapUs` (250 ms) after the last one — frequent stops (a
//     Profiler per request) share one harvest, and V8 is asked for its samples at most 4 times a second;
//     a caller may give its own bound instead (request profiling: up to `maxStopDelay`);
//   - when a buffer may be full, and periodically (about every 1000 samples, 0.1-10 s), so that each
//     harvest, each main-thread stall, stays small and samples move from V8 into compact chunks;
//   - when a faster subscription arrives (V8 cannot change the interval of a running profile).
// A harvest takes two event-loop turns: V8's samples are taken in one, converted into chunks (and
// the stops they complete resolved) in the next, so no turn costs more than V8's own stop does.
// After the last subscription leaves, V8 keeps sampling for a grace period (`graceUs`), so that the
// next one, a moment later, costs no cold start (V8 re-logging all compiled code: docs/bench.md#cold-and-warm-starts).
//
// The V8 side is a session object (inspector-session.js in production, a fake in the tests) with
// start(intervalUs), take(), stop(), toChunks(taken, intervalUs, ownWindows), and optionally reset().
//
// V8 stamps a sample of the current stack whenever a profile starts, so every restart in a harvest
// would put a sample of the harvest itself into the profiles (one sample in ten at 10 harvests a
// second and 10 ms). The engine hands the session the time windows of its own harvests, and their
// samples are dropped: the harvest itself shows in no trace (docs/bench.md#harvests-in-no-trace), as in
// Chrome, where the profiler works off the main thread. A restart inside a constructor (a faster
// interval) is not one of them: its start sample is the caller's stack, which Chrome's first sample
// shows too.
//
// Two synchronous paths serve callers that get no more event-loop turns (`jsprof record`: its watcher
// thread reaches the main thread through V8 interrupts, even while the app spins, and a process ends
// in the synchronous 'exit' event): flushSync() harvests and converts at once, V8 going on sampling;
// stopSync() does the same and stops V8 for good. An interrupt can land in the middle of the engine's
// own work (a harvest, a conversion): then they do nothing and say so, and the caller asks again.
// Code run from an interrupt must leave Node's timers alone: the interrupt can land inside Node's own
// timer code, between its check that a timer is still armed and its call of that timer's callback, so
// clearing the engine's timer there would make Node call a cleared timer (`timer._onTimeout is not a
// function`, the app's crash). In those paths (flushSync, stopSync, fromInterrupt) the pending timer is
// left armed and re-plans when it fires.

const { nowUs: realNowUs } = require('../clock')
const schedule = require('./schedule')

class SamplerEngine {
  #session
  #options
  #now
  #running = false
  #intervalUs = 0
  /** When the periodic harvest period started (V8 start or the last harvest), µs. */
  #periodStartUs = 0
  /** When V8's samples were last taken (µs); -Infinity since a cold start. */
  #lastHarvestUs = -Infinity
  /** Subscriptions still taking samples (live or stopping). */
  #live = new Set()
  /** How many of them keep samples (`records`): every sample's labels are read while one does. */
  #recording = 0
  /** Subscriptions whose stop waits for the next harvest. */
  #stopping = new Set()
  /**
   * The promise every stop waiting for the next harvest shares ({ promise, resolve, reject }; null
   * when none waits): a Profiler per request costs one promise of its own (its stop's), not three.
   */
  #stopWaiter = null
  /**
   * Owners (Profilers) watched for garbage collection: a collected one releases its subscription.
   * An owner is held strongly until a harvest finds its subscription still live, then weakly and
   * registered here: most per-request Profilers stop before any harvest and never pay for a WeakRef
   * or a registration (docs/bench.md#cost-of-one-profiler). A forgotten one is collectable from the next harvest on.
   */
  #collected = new FinalizationRegistry((sub) => this.remove(sub))
  /**
   * Harvests not converted yet, oldest first (see the two turns above). Entries:
   * { taken, intervalUs, harvestUs, ownWindows, receivers, stopping, waiter, failure }.
   */
  #unconverted = []
  #convertQueued = false
  #timer = null
  #timerDueUs = Infinity
  #harvestQueued = false
  /** Earliest time a waiting stop needs a harvest by; Infinity when none. */
  #stopDueUs = Infinity
  /** owner -> extra grace (µs) to keep V8 running after the last subscription left (keepWarm). */
  #warmOwners = new Map()
  /** Last time a subscription that needs samples was seen (µs). */
  #lastActiveUs = -Infinity
  /**
   * [from, to] µs of the last harvest run by the engine itself when V8 went on sampling: the start
   * sample of the profile it began is in the next harvest's samples.
   */
  #lastOwnWindow = null
  /** True while the engine works (V8 calls, conversions): a synchronous flush must not cut in. */
  #busy = false
  /** Running code from a V8 interrupt (flushSync, stopSync, fromInterrupt): no timer is cleared. */
  #inInterrupt = false
  /** The pending timer's deadline went stale inside an interrupt: it re-plans when it fires. */
  #replan = false
  /** Set by stopSync(): the next harvest stops V8 whatever the subscriptions need. */
  #stopForGood = false
  /** Figures for benchmarks and tests. */
  stats = {
    harvests: 0,
    coldStarts: 0,
    restarts: 0,
    chunks: 0,
    /** Samples V8 stamped within the engine's own harvests, dropped; the last 16 such windows (µs). */
    ownSamplesDropped: 0,
    recentOwnWindows: [],
    harvestMsMax: 0,
    harvestMsTotal: 0,
  }

  /** `options` override schedule.DEFAULTS; `now()` is the µs clock (V8's: process.hrtime). */
  constructor(session, { now = realNowUs, ...options } = {}) {
    this.#session = session
    this.#now = now
    this.#options = { ...schedule.DEFAULTS, ...options }
  }

  get session() {
    return this.#session
  }

  get running() {
    return this.#running
  }

  get intervalUs() {
    return this.#intervalUs
  }

  /** True while the engine works (a harvest, a conversion): a V8 interrupt landing now lands in its work. */
  get busy() {
    return this.#busy
  }

  get liveCount() {
    return this.#live.size
  }

  /** Starts sampling for a subscription (V8 starts, or restarts faster, if needed). */
  add(sub) {
    const now = this.#now()
    if (!this.#running) {
      this.#exclusive(() => this.#start(sub.v8IntervalUs))
    } else if (sub.v8IntervalUs < this.#intervalUs) {
      // V8 cannot change the interval of a running profile: harvest and restart faster.
      this.#harvest(sub.v8IntervalUs)
    }
    sub.checkAtUs =
      sub.maxSamples === Infinity ? Infinity : schedule.fullCheckAtUs(sub.startUs, sub.maxSamples, sub.intervalUs)
    this.#enlist(sub)
    this.#lastActiveUs = now
    // Re-arming walks every live subscription: skip it when the armed timer comes first anyway.
    if (!this.#timer || sub.checkAtUs < this.#timerDueUs) this.#schedule()
  }

  /**
   * Keeps V8 sampling for `ms` more after the last subscription left (0 removes `owner`'s wish), on top
   * of the engine's own grace: request profiling keeps V8 warm between sampled requests this way.
   */
  keepWarm(owner, ms) {
    if (ms > 0) this.#warmOwners.set(owner, ms * 1000)
    else this.#warmOwners.delete(owner)
    if (this.#running) this.#schedule()
  }

  #graceUs() {
    return Math.max(this.#options.graceUs, ...this.#warmOwners.values())
  }

  #warm(now) {
    return schedule.keepsWarm(now, this.#lastActiveUs, this.#intervalUs, this.#graceUs(), this.#options)
  }

  /** Forgets a subscription whose owner was garbage-collected without stopping it. */
  remove(sub) {
    sub.state = 'ended'
    this.#unwatch(sub)
    this.#delist(sub)
    if (this.#live.size === 0 && this.#running) this.#schedule()
  }

  /**
   * Resolves once the subscription's recording holds every sample up to its stop time (set by the
   * caller before). `withinMs`: the caller's own bound on the wait (batched); default: as soon as the
   * stop rate allows (see `minStopGapUs`).
   */
  finish(sub, withinMs) {
    if (!this.#live.has(sub)) return Promise.resolve()
    sub.state = 'stopping'
    this.#unwatch(sub)
    this.#stopping.add(sub)
    if (this.#stopWaiter === null) this.#stopWaiter = deferred()
    const { promise } = this.#stopWaiter
    const now = this.#now()
    this.#lastActiveUs = now
    if (!this.#running) {
      this.#queueHarvest()
    } else {
      const withinUs = withinMs === undefined ? undefined : withinMs * 1000
      this.#harvestBy(schedule.stopHarvestDueUs(now, this.#lastHarvestUs, withinUs, this.#options), now)
    }
    return promise
  }

  /** Asks for a harvest at most `withinMs` from now (batched with any other request for one). */
  harvestWithin(withinMs) {
    if (!this.#running) return
    const now = this.#now()
    this.#harvestBy(now + withinMs * 1000, now)
  }

  #harvestBy(dueUs, now) {
    if (dueUs <= now) return this.#queueHarvest()
    if (dueUs < this.#stopDueUs) {
      this.#stopDueUs = dueUs
      if (!this.#timer || dueUs < this.#timerDueUs) return this.#schedule()
    }
    // A stop someone awaits keeps the process alive until it resolves.
    if (this.#timer && this.#stopping.size > 0) this.#timer.ref()
  }

  #queueHarvest() {
    if (this.#harvestQueued) return
    this.#harvestQueued = true
    const queuedUs = this.#now()
    setImmediate(() => {
      this.#harvestQueued = false
      if (this.#running && this.#lastHarvestUs >= queuedUs) {
        // An overdue timer harvested first and took everything this one was for; stops that came
        // since wait for their turn of the stop rate.
        const now = this.#now()
        if (this.#stopping.size > 0)
          this.#harvestBy(schedule.stopHarvestDueUs(now, this.#lastHarvestUs, undefined, this.#options), now)
        return
      }
      this.#harvest(Infinity)
    })
  }

  /**
   * Harvests now and converts at once, without waiting for a turn of the event loop: when it returns,
   * every subscription has its samples up to now (a stopped one, all of them) and V8 goes on sampling.
   * Returns false, doing nothing, when called from inside the engine's own work (a V8 interrupt that
   * landed in a harvest): ask again a moment later.
   */
  flushSync() {
    if (this.#busy) return false
    this.fromInterrupt(() =>
      this.#timed(() => {
        if (this.#running || this.#stopping.size > 0) this.#harvestTurn(Infinity)
        while (this.#unconverted.length > 0) this.#convertOldest()
      }),
    )
    return true
  }

  /**
   * Runs `work` (engine calls made by code that a V8 interrupt runs: jsprof record's and watchStalls'
   * hooks) so that it clears no timer of Node's; see the header. Returns what `work` returns.
   */
  fromInterrupt(work) {
    const was = this.#inInterrupt
    this.#inInterrupt = true
    try {
      return work()
    } finally {
      this.#inInterrupt = was
    }
  }

  /**
   * As flushSync(), and V8 stops for good (the process or thread is ending): no timer is left, and a
   * subscription added later starts V8 afresh. Returns false, doing nothing, when called from inside
   * the engine's own work.
   */
  stopSync() {
    if (this.#busy) return false
    this.#stopForGood = true
    try {
      return this.flushSync()
    } finally {
      this.#stopForGood = false
      this.fromInterrupt(() => this.#schedule())
    }
  }

  #schedule() {
    if (this.#timer && this.#inInterrupt) {
      this.#replan = true
      return
    }
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.#timerDueUs = Infinity
    if (!this.#running) return
    let fullCheckUs = Infinity
    for (const sub of this.#live) fullCheckUs = Math.min(fullCheckUs, sub.checkAtUs)
    const graceUs = this.#graceUs()
    const due = schedule.timerDueUs({
      periodicUs: this.#periodStartUs + schedule.harvestPeriodUs(this.#intervalUs, this.#options),
      stopDueUs: this.#stopDueUs,
      fullCheckUs,
      graceEndUs: this.#live.size === 0 ? this.#lastActiveUs + (graceUs > 0 ? graceUs : 0) : Infinity,
    })
    // No deadline at all (periodic harvests off, nothing waits): no timer.
    if (due === Infinity) return
    const delayMs = Math.max(1, Math.ceil((due - this.#now()) / 1000))
    this.#timerDueUs = due
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.#timerDueUs = Infinity
      const replan = this.#replan
      this.#replan = false
      // Node times a timer from the event loop's cached clock, which is as old as the current turn:
      // it can fire early. Harvesting then would break the stop rate's bound.
      if (replan || this.#now() < due) return this.#schedule()
      this.#harvest(Infinity)
    }, delayMs)
    // A running profiler never keeps the process alive; a stop() someone awaits does, until it resolves.
    if (this.#stopping.size === 0) this.#timer.unref()
  }

  #start(intervalUs) {
    this.#session.start(intervalUs)
    this.stats.coldStarts++
    this.#running = true
    this.#intervalUs = intervalUs
    this.#periodStartUs = this.#now()
    this.#lastHarvestUs = -Infinity
  }

  /** The V8 interval the live, not-stopping subscriptions need (Infinity when none). */
  #neededIntervalUs() {
    let needed = Infinity
    for (const sub of this.#live) {
      if (sub.state === 'live') needed = Math.min(needed, sub.v8IntervalUs)
    }
    return needed
  }

  /**
   * Takes V8's samples so far (first turn of a harvest) and queues their conversion. `fasterUs` asks
   * for a restart at a smaller interval (a new, faster subscription).
   */
  #harvest(fasterUs) {
    this.#timed(() => this.#harvestTurn(fasterUs))
  }

  #harvestTurn(fasterUs) {
    this.#stopDueUs = Infinity
    this.#watchOwners()
    const entry = {
      taken: null,
      ownWindows: [],
      intervalUs: this.#intervalUs,
      harvestUs: this.#now(),
      // Who gets these samples: every subscription sampling now (including the stopping ones).
      receivers: [...this.#live],
      stopping: this.#stopping,
      waiter: this.#stopWaiter,
      failure: null,
    }
    if (this.#running) {
      try {
        entry.taken = this.#take(fasterUs, entry.harvestUs)
      } catch (err) {
        entry.failure = err
        this.#reset()
      }
      // fasterUs is Infinity when the engine harvests on its own (timer, immediate), the new
      // interval when a constructor asked for a faster one.
      const own = fasterUs === Infinity ? [entry.harvestUs, this.#now()] : []
      if (own.length > 0) this.stats.recentOwnWindows = [...this.stats.recentOwnWindows.slice(-15), own]
      entry.ownWindows = [...(this.#lastOwnWindow || []), ...own]
      this.#lastOwnWindow = own.length > 0 && this.#running ? own : null
    }
    this.#stopping = new Set()
    this.#stopWaiter = null
    // Stopped: they get this harvest's samples (and any older ones still unconverted), no later ones.
    for (const sub of entry.stopping) this.#delist(sub)
    this.#unconverted.push(entry)
    this.#queueConversion()
    this.#schedule()
  }

  /**
   * Live from now on. The session is told when the first subscription that keeps samples arrives and
   * when the last leaves (`recordingChanged`): request labels are read only meanwhile (lib/labels.js).
   */
  #enlist(sub) {
    if (this.#live.has(sub)) return
    this.#live.add(sub)
    if (sub.records && this.#recording++ === 0) this.#session.recordingChanged?.(true)
  }

  #delist(sub) {
    if (!this.#live.delete(sub)) return
    if (sub.records && --this.#recording === 0) this.#session.recordingChanged?.(false)
  }

  #unwatch(sub) {
    if (!sub.watched) return
    this.#collected.unregister(sub)
    sub.holdOwnerStrongly()
  }

  /** Owners of subscriptions still live at a harvest are held weakly from now on, and watched (#collected). */
  #watchOwners() {
    for (const sub of this.#live) {
      if (sub.owner === null || sub.watched || sub.state !== 'live') continue
      this.#collected.register(sub.holdOwnerWeakly(), sub, sub)
    }
  }

  #take(fasterUs, now) {
    let needed = Math.min(fasterUs, this.#neededIntervalUs())
    this.stats.harvests++
    if (needed !== Infinity) this.#lastActiveUs = now
    else if (this.#warm(now)) needed = this.#intervalUs
    const action = this.#stopForGood ? 'stop' : schedule.harvestAction(this.#intervalUs, needed, this.#options)
    let taken
    if (action === 'keep') {
      taken = this.#session.take()
    } else {
      this.#running = false
      taken = this.#session.stop()
      if (action === 'restart') {
        this.stats.restarts++
        this.#start(Math.max(schedule.MIN_INTERVAL_US, needed))
      }
    }
    this.#lastHarvestUs = now
    this.#periodStartUs = now
    return taken
  }

  /** Runs one turn of harvesting, counting its main-thread time (benchmarks). */
  #timed(work) {
    const startedUs = this.#now()
    try {
      this.#exclusive(work)
    } finally {
      const ms = (this.#now() - startedUs) / 1000
      this.stats.harvestMsTotal += ms
      if (ms > this.stats.harvestMsMax) this.stats.harvestMsMax = ms
    }
  }

  /** Runs engine work that a synchronous flush must not cut into. */
  #exclusive(work) {
    const was = this.#busy
    this.#busy = true
    try {
      work()
    } finally {
      this.#busy = was
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

  /** The second turn of a harvest: its samples become chunks, subscriptions get them, stops resolve. */
  #convertOldest() {
    const entry = this.#unconverted.shift()
    if (!entry) return
    let failure = entry.failure
    let harvested = []
    if (!failure && entry.taken) {
      try {
        harvested = this.#session.toChunks(entry.taken, entry.intervalUs, entry.ownWindows).map((chunk) => {
          this.stats.ownSamplesDropped += chunk.droppedOwnSamples || 0
          const times = chunk.sortedSampleTimes()
          const n = times.length
          return {
            chunk,
            times,
            earliestUs: n ? times[0] : NaN,
            latestUs: n ? times[n - 1] : NaN,
            harvestUs: entry.harvestUs,
          }
        })
        this.stats.chunks += harvested.length
      } catch (err) {
        failure = err
      }
    }
    for (let k = 0; k < harvested.length; k++) {
      const h = harvested[k]
      // The stopping subscriptions get no chunk after this harvest's last one.
      const lastChunk = k === harvested.length - 1
      const full = []
      for (const sub of entry.receivers) {
        // Full since this harvest, or its owner was garbage-collected: it takes nothing more.
        if (sub.state === 'ended') continue
        if (sub.take(h, lastChunk && entry.stopping.has(sub))) full.push(sub)
      }
      // A full recording stops growing and stops asking for samples: nothing samples on its behalf.
      for (const sub of full) {
        this.#delist(sub)
        sub.filled()
      }
      // Every receiver had it; the Recordings that kept samples hold their own reference.
      h.chunk.release()
    }
    if (entry.waiter !== null) {
      if (failure) entry.waiter.reject(failure)
      else entry.waiter.resolve()
    }
    const now = this.#now()
    for (const sub of this.#live) {
      if (sub.maxSamples !== Infinity)
        sub.checkAtUs = schedule.fullCheckAtUs(now, sub.maxSamples - sub.sampleCount, sub.intervalUs)
    }
    this.#schedule()
  }

  /** After a V8 failure: forget V8's state so the next subscription starts afresh. */
  #reset() {
    this.#running = false
    if (this.#session.reset) this.#session.reset()
  }
}

/** A promise with its settle functions (Promise.withResolvers, which Node 20 lacks). */
function deferred() {
  let resolve
  let reject
  const promise = new Promise((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

module.exports = { SamplerEngine }
