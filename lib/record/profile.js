'use strict'
// The one place where `jsprof record` drives V8's sampler: an in-process inspector session on the
// main thread (its commands answer synchronously, so the profile can be stopped inside 'exit'), cut
// into pieces while it runs, and the pieces turned back into one trace by the same Rust conversion,
// with the same rules (jsprof-node's own code left out), a live Profiler uses.

const { postSync, otherProfilerClientPossible } = require('../sampler/inspector-session')

/**
 * Whether another profiler client can see our console profiles (`--cpu-prof`, NODE_V8_COVERAGE, an
 * open inspector): Node's own sessions print "Cannot retrieve id from the response message" on the
 * keep-alive's console-profile event (DevTools would list it), so then there is no keep-alive, and no
 * cutting. The same rule as the sampler's bridge.
 */
function nodeProfilesToo() {
  return otherProfilerClientPossible(require('node:inspector'))
}

/**
 * Starts V8's sampler every `intervalUs` µs. Returns `{ canCut, cut(), stop() }`: `cut()` ends the
 * current V8 profile and starts the next (the samples so far, as a V8 CPU profile), `stop()` ends it
 * for good. Without `canCut` a cut would lose the code already running: do not call it then.
 * Throws (an inspector error) when the process cannot be profiled.
 */
function startProfile(intervalUs) {
  const inspector = require('node:inspector')
  const session = new inspector.Session()
  const post = (method, params) => postSync(session, method, params)
  session.connect()
  post('Profiler.enable')
  post('Profiler.setSamplingInterval', { interval: Math.min(2 ** 31 - 1, Math.max(1, Math.round(intervalUs))) })
  // A second profile in the same V8 sampler (console.profile of this enabled session), never read:
  // while it runs, cutting the first (stop + start) keeps V8's code map. Without it every restart
  // logs all code again (ms each) and loses code already running — a loop on its on-stack-replaced
  // code would be sampled as its caller from the first cut on. Disconnecting discards it unread.
  const canCut = !nodeProfilesToo()
  if (canCut) inspector.console.profile(KEEPALIVE)
  post('Profiler.start')
  let running = true
  return {
    canCut,
    cut() {
      const { profile } = post('Profiler.stop')
      post('Profiler.start')
      return profile
    },
    stop() {
      if (!running) return null
      running = false
      try {
        return post('Profiler.stop').profile
      } finally {
        try {
          session.disconnect()
        } catch {
          // Already gone.
        }
      }
    },
  }
}

const KEEPALIVE = 'jsprof record (keeps the code map)'

function frameKey(parent, frame) {
  const f = frame || {}
  return `${parent}\0${f.functionName}\0${f.scriptId}\0${f.url}\0${f.lineNumber}\0${f.columnNumber}`
}

/**
 * Consecutive V8 CPU profiles of one process (pieces `cut()` made) as one: call trees merged by
 * frame, samples in their recorded order with their timestamps. Pieces without samples add nothing.
 */
function mergeProfiles(profiles) {
  const nodes = []
  const byKey = new Map()
  const samples = []
  const times = []
  let startTime = Infinity
  let endTime = -Infinity
  function add(parent, frame) {
    const key = frameKey(parent, frame)
    let id = byKey.get(key)
    if (id === undefined) {
      id = nodes.length + 1
      byKey.set(key, id)
      nodes.push({ id, callFrame: frame, hitCount: 0, children: [] })
      if (parent) nodes[parent - 1].children.push(id)
    }
    return id
  }
  for (const profile of profiles) {
    if (!profile || !Array.isArray(profile.nodes) || profile.nodes.length === 0) continue
    startTime = Math.min(startTime, profile.startTime)
    endTime = Math.max(endTime, profile.endTime)
    const byId = new Map(profile.nodes.map((n) => [n.id, n]))
    const isChild = new Set()
    for (const n of profile.nodes) for (const c of n.children || []) isChild.add(c)
    const root = profile.nodes.find((n) => !isChild.has(n.id))
    const merged = new Map()
    // Depth first, without recursion (call trees can be thousands deep).
    const stack = [[root, 0]]
    while (stack.length) {
      const [node, parent] = stack.pop()
      const id = add(parent, node.callFrame)
      merged.set(node.id, id)
      for (const c of node.children || []) if (byId.has(c)) stack.push([byId.get(c), id])
    }
    let t = profile.startTime
    const deltas = profile.timeDeltas || []
    for (let i = 0; i < (profile.samples || []).length; i++) {
      t += deltas[i] || 0
      const id = merged.get(profile.samples[i])
      if (id === undefined) continue
      samples.push(id)
      times.push(t)
    }
  }
  if (nodes.length === 0) return null
  const timeDeltas = times.map((t, i) => t - (i === 0 ? startTime : times[i - 1]))
  for (const id of samples) nodes[id - 1].hitCount++
  return { nodes, startTime, endTime: Math.max(endTime, startTime), samples, timeDeltas }
}

/** The pieces as one ProfilerTrace, timestamps in the profiled process's performance.now() domain. */
function toTrace(profiles, timeOriginUs) {
  const { binding, callNative } = require('../native')
  const { assembleTrace, emptyTrace } = require('../trace')
  const merged = mergeProfiles(profiles)
  if (!merged) return emptyTrace()
  // As in every trace jsprof-node records, its own code (this preload, the watcher) is left out.
  const bytes = Buffer.from(JSON.stringify(merged))
  return assembleTrace(callNative(() => binding.convertCpuProfile(bytes, timeOriginUs, true)))
}

module.exports = { startProfile, mergeProfiles, toTrace }
