'use strict'
// Turns the binding's TraceParts (frames and resources as JSON text, stacks and samples as columns)
// into the spec's plain ProfilerTrace object. JSON.parse is V8's fastest object factory for the frames
// (strings); the stacks and samples, which are many and small, are zipped here so each one gets only
// the members it has (absent, never null): a literal per shape costs far less than JSON.parse of them
// (docs/bench.md#the-goal-and-why-sample-heavy-profiles-miss-it).
// Every dictionary has its members in lexicographic order, as WebIDL builds them (and so as
// JSON.stringify of Chrome's trace reads): trace {frames, resources, samples, stacks}, frame {column,
// line, name, resourceId}, stack {frameId, parentId}, sample {marker, stackId, timestamp}. A trace of
// ours that is not a Profiler's (a request profile, a continuous chunk) has the extension member
// `jsprof` where that order puts it, after `frames` (crates/jsprof-core/src/trace/extension.rs).

const MARKERS = [undefined, 'script', 'gc', 'other', 'style', 'layout', 'paint']

/** Up to this many samples, a trace is built on the calling thread (cheaper than a thread-pool hop). */
const SYNC_BUILD_MAX_SAMPLES = 256

/**
 * A ProfilerSample with only the members it has (absent, never undefined), in WebIDL's order
 * {marker, stackId, timestamp}: one literal per shape, which V8 builds fastest.
 */
function makeSample(marker, stackId, timestamp) {
  if (stackId === undefined) return marker === undefined ? { timestamp } : { marker, timestamp }
  return marker === undefined ? { stackId, timestamp } : { marker, stackId, timestamp }
}

/** A ProfilerTrace with its members in WebIDL's order; `jsprof` only when given (not undefined). */
function makeTrace(frames, resources, samples, stacks, jsprof) {
  if (jsprof === undefined) return { frames, resources, samples, stacks }
  return { frames, jsprof, resources, samples, stacks }
}

function assembleTrace(parts) {
  const tables = JSON.parse(parts.tables)
  const { stackFrames, stackParents } = parts
  const stacks = new Array(stackFrames.length)
  for (let i = 0; i < stacks.length; i++) {
    const parentId = stackParents[i]
    stacks[i] = parentId >= 0 ? { frameId: stackFrames[i], parentId } : { frameId: stackFrames[i] }
  }
  const { timestamps, stackIds, markers } = parts
  const n = timestamps.length
  const samples = new Array(n)
  for (let i = 0; i < n; i++) {
    const stackId = stackIds[i]
    samples[i] = makeSample(MARKERS[markers[i]], stackId >= 0 ? stackId : undefined, timestamps[i])
  }
  return makeTrace(tables.frames, tables.resources, samples, stacks, tables.jsprof)
}

/**
 * The trace of a Rust Recording, timestamps relative to `originUs`: built at once when it is small,
 * else off the main thread (a promise). The recording is empty afterwards. With `clock` (`{ pid,
 * threadId, timeOrigin }`) the trace has the `jsprof` member: the clock, and what weighing its samples
 * needs, which the recording knows (the interval, a request's windows); without, it is a plain spec
 * trace (a Profiler's).
 */
function buildTrace(recording, originUs, clock) {
  if (recording.sampleCount <= SYNC_BUILD_MAX_SAMPLES) return JSON.parse(recording.buildJson(originUs, clock))
  return recording.build(originUs, clock).then(assembleTrace)
}

/**
 * A trace of no samples. With `clock` (as buildTrace takes it), its `jsprof` member says so and the
 * interval (`intervalUs`) it was sampled at, as a Recording's trace would (members in lexicographic
 * order); with `cut`, also that it was cut to windows, none of which holds a sample.
 */
function emptyTrace(clock, intervalUs, cut = false) {
  if (clock === undefined) return makeTrace([], [], [], [])
  const { pid, threadId, timeOrigin } = clock
  const jsprof = cut
    ? { pid, sampleInterval: intervalUs / 1000, threadId, timeOrigin, windows: [] }
    : { pid, sampleInterval: intervalUs / 1000, threadId, timeOrigin }
  return makeTrace([], [], [], [], jsprof)
}

module.exports = { assembleTrace, buildTrace, emptyTrace, makeSample, makeTrace }
