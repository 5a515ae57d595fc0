'use strict'
// Turns what the binding gives into the spec's plain ProfilerTrace object, two ways:
// - a small trace (a Profiler's, a request's: built on the main thread) as numbers over this thread's
//   string table (`Recording.buildColumns`, jsprof-core trace/columns.rs): each frame name and URL
//   crosses into JS once and is kept here by id, and every object is a literal built from numbers
//   (cheaper than JSON text: docs/bench.md#building-a-small-trace);
// - a large one, built off the main thread, as TraceParts (frames and resources as JSON text, stacks
//   and samples as columns): JSON.parse is V8's fastest object factory for many strings; the stacks
//   and samples, many and small, are zipped here (docs/bench.md#the-goal-and-why-sample-heavy-profiles-miss-it).
// Each object gets only the members it has (absent, never null).
// Every dictionary has its members in lexicographic order, as WebIDL builds them (and so as
// JSON.stringify of Chrome's trace reads): trace {frames, resources, samples, stacks}, frame {column,
// line, name, resourceId}, stack {frameId, parentId}, sample {marker, stackId, timestamp}. A trace of
// ours that is not a Profiler's (a request profile, a continuous chunk) has the extension member
// `jsprof` where that order puts it, after `frames` (crates/jsprof-core/src/trace/extension.rs).

const { binding } = require('./native')
const { contextRing } = require('./labels')

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

/** A sample from the binding's columns: a marker code (MARKERS), a stack id (-1: none), a timestamp. */
const columnSample = (markerCode, stackId, timestamp) =>
  makeSample(MARKERS[markerCode], stackId >= 0 ? stackId : undefined, timestamp)

/** A ProfilerStack from the binding's columns ({frameId, parentId}; a parent id of -1: none). */
const columnStack = (frameId, parentId) => (parentId >= 0 ? { frameId, parentId } : { frameId })

/** A ProfilerTrace with its members in WebIDL's order; `jsprof` only when given (not undefined). */
function makeTrace(frames, resources, samples, stacks, jsprof) {
  if (jsprof === undefined) return { frames, resources, samples, stacks }
  return { frames, jsprof, resources, samples, stacks }
}

function assembleTrace(parts) {
  const tables = JSON.parse(parts.tables)
  const { stackFrames, stackParents } = parts
  const stacks = new Array(stackFrames.length)
  for (let i = 0; i < stacks.length; i++) stacks[i] = columnStack(stackFrames[i], stackParents[i])
  const { timestamps, stackIds, markers } = parts
  const n = timestamps.length
  const samples = new Array(n)
  for (let i = 0; i < n; i++) samples[i] = columnSample(markers[i], stackIds[i], timestamps[i])
  return makeTrace(tables.frames, tables.resources, samples, stacks, tables.jsprof)
}

/** A ProfilerFrame with only the members it has, in WebIDL's order {column, line, name, resourceId}. */
function makeFrame(name, resourceId, line, column) {
  if (line !== -1 && column !== -1 && resourceId !== -1) return { column, line, name, resourceId }
  if (resourceId === -1 && line === -1 && column === -1) return { name }
  const frame = {}
  if (column !== -1) frame.column = column
  if (line !== -1) frame.line = line
  frame.name = name
  if (resourceId !== -1) frame.resourceId = resourceId
  return frame
}

// This thread's side of the string table (each worker loads its own copy of this module): the JS
// strings by id, the native table that hands out the ids, and the buffers the columns are written
// into (grown when a trace needs more).
const strings = []
let nativeStrings = null
let ints = new Int32Array(4096)
let floats = new Float64Array(SYNC_BUILD_MAX_SAMPLES)
const HEADER = 8
/** A buffer grown past this (a trace of deep stacks) is dropped after use: 256 KB kept at most. */
const MAX_KEPT_INTS = 1 << 16

/**
 * A trace written as columns by `write(nativeStrings, ints, floats)` (a binding call:
 * Recording.buildColumns, Chunk.buildWindowColumns; jsprof-core trace/columns.rs), made into the spec's
 * objects; `onFilled()` is called when the binding says the trace's buffer filled.
 */
function readColumns(write, onFilled) {
  nativeStrings ??= new binding.TraceStrings()
  // How many strings this side holds: the table starts again if that is not its count.
  ints[0] = strings.length
  let text = write(nativeStrings, ints, floats)
  if (ints[0] === -1) {
    // Too small: grown to what the trace needs; the table kept the trace for this second call.
    const needInts = ints[1]
    const needFloats = ints[2]
    if (needInts > ints.length) ints = new Int32Array(Math.max(needInts, 2 * ints.length))
    if (needFloats > floats.length) floats = new Float64Array(Math.max(needFloats, 2 * floats.length))
    ints[0] = strings.length
    text = nativeStrings.writePending(ints, floats)
  }
  const c = ints
  const nFrames = c[0]
  const nResources = c[1]
  const nStacks = c[2]
  const nSamples = c[3]
  const fresh = c[4]
  if (c[5] === 1) strings.length = 0
  if (c[7] === 1 && onFilled !== undefined) onFilled()
  let at = HEADER
  let pos = 0
  for (const end = HEADER + fresh; at < end; at++) {
    const len = c[at]
    strings.push(text.slice(pos, pos + len))
    pos += len
  }
  const jsprof = c[6] > 0 ? JSON.parse(text.slice(pos, pos + c[6])) : undefined
  const frames = new Array(nFrames)
  for (let i = 0; i < nFrames; i++, at += 4) frames[i] = makeFrame(strings[c[at]], c[at + 1], c[at + 2], c[at + 3])
  const resources = new Array(nResources)
  for (let i = 0; i < nResources; i++, at++) resources[i] = strings[c[at]]
  const stacks = new Array(nStacks)
  for (let i = 0; i < nStacks; i++, at += 2) stacks[i] = columnStack(c[at], c[at + 1])
  const samples = new Array(nSamples)
  for (let i = 0; i < nSamples; i++, at += 2) samples[i] = columnSample(c[at + 1], c[at], floats[i])
  // A buffer grown for a huge trace (deep stacks) is not kept.
  if (ints.length > MAX_KEPT_INTS) ints = new Int32Array(4096)
  return makeTrace(frames, resources, samples, stacks, jsprof)
}

/**
 * The trace of the samples of one window of a harvested chunk (`window`: a Subscription's startUs,
 * stopUs, intervalUs, bufferLimit; `exclusiveStart` as its option), built on the calling thread with
 * no Recording, for a subscription whose whole window lies in that chunk; `onFilled()` when the window
 * held more than its buffer. Timestamps and `clock` as for buildTrace.
 */
function windowTrace(chunk, window, exclusiveStart, originUs, clock, onFilled) {
  const { startUs, stopUs, intervalUs, bufferLimit: max } = window
  return readColumns(
    (table, i, f) =>
      chunk.buildWindowColumns(table, i, f, startUs, stopUs, intervalUs, max, exclusiveStart, originUs, clock),
    onFilled,
  )
}

/**
 * The trace of a Rust Recording, timestamps relative to `originUs`: built at once when it is small,
 * else off the main thread (a promise). The recording is empty afterwards. With `clock` (`{ pid,
 * threadId, timeOrigin }`) the trace has the `jsprof` member: the clock, and what weighing its samples
 * needs, which the recording knows (the interval, a request's windows); without, it is a plain spec
 * trace (a Profiler's). Samples taken in a request context carry the labels the context has now (a
 * route learned after a harvest took some of them: lib/labels.js).
 */
function buildTrace(recording, originUs, clock) {
  const ring = contextRing()
  if (ring !== null) recording.relabel(ring)
  if (recording.sampleCount <= SYNC_BUILD_MAX_SAMPLES)
    return readColumns((table, i, f) => recording.buildColumns(table, i, f, originUs, clock))
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

module.exports = {
  assembleTrace,
  buildTrace,
  windowTrace,
  emptyTrace,
  makeSample,
  makeTrace,
  SYNC_BUILD_MAX_SAMPLES,
}
