'use strict'
// Turns the binding's TraceParts (tables as JSON text, samples as columns) into the spec's plain
// ProfilerTrace object. JSON.parse is V8's fastest object factory for the small tables; the samples,
// which dominate, are zipped here so each one gets only the members it has (absent, never null).

const MARKERS = [undefined, 'script', 'gc', 'other', 'style', 'layout', 'paint']

function assembleTrace(parts) {
  const trace = JSON.parse(parts.tables)
  const { timestamps, stackIds, markers } = parts
  const n = timestamps.length
  const samples = new Array(n)
  for (let i = 0; i < n; i++) {
    const timestamp = timestamps[i]
    const stackId = stackIds[i]
    const marker = MARKERS[markers[i]]
    if (stackId >= 0) {
      samples[i] = marker === undefined ? { timestamp, stackId } : { timestamp, stackId, marker }
    } else {
      samples[i] = marker === undefined ? { timestamp } : { timestamp, marker }
    }
  }
  trace.samples = samples
  return trace
}

module.exports = { assembleTrace }
