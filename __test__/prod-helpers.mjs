// Shared helpers of the production-profiling tests (not a spec file itself).
import { createRequire } from 'node:module'
import zlib from 'node:zlib'

const require = createRequire(import.meta.url)

/** Busy-waits `ms` (a CPU-heavy function the profiler must see). */
export function burn(ms) {
  const end = performance.now() + ms
  let x = 0
  while (performance.now() < end) x += Math.sqrt(x + 1)
  return x
}

/**
 * Runs `fn` while a Profiler samples this thread, and returns what it returns: the request
 * integrations label requests only while something reads labels (docs/labels.md#cost).
 */
export async function whileSampling(fn) {
  const { Profiler } = require('..')
  const reader = new Profiler({ sampleInterval: 10, maxBufferSize: 100_000 })
  try {
    return await fn()
  } finally {
    await reader.stop()
  }
}

/** Names of the frames on the stacks of the trace's samples, with how many samples hold each. */
export function sampledFunctions(trace) {
  const counts = new Map()
  for (const sample of trace.samples) {
    const names = new Set()
    for (let id = sample.stackId; id !== undefined; id = trace.stacks[id].parentId) {
      names.add(trace.frames[trace.stacks[id].frameId].name)
    }
    for (const name of names) counts.set(name, (counts.get(name) || 0) + 1)
  }
  return counts
}

/**
 * The package's toPprof when the exporters are present; otherwise an equivalent encoder built on
 * pprof-format (so the backend is tested against a real pprof decoder either way).
 */
export function pprofEncoder() {
  try {
    const { toPprof } = require('../lib/api/export.js')
    if (typeof toPprof === 'function') return { name: 'toPprof', encode: toPprof }
  } catch {}
  const pf = require('pprof-format')
  const encode = (trace) => {
    const st = new pf.StringTable()
    const fn = trace.frames.map(
      (f, i) =>
        new pf.Function({
          id: i + 1,
          name: st.dedup(f.name || '(anonymous)'),
          filename: st.dedup(f.resourceId === undefined ? '' : trace.resources[f.resourceId]),
          startLine: f.line || 0,
        }),
    )
    const location = trace.frames.map(
      (f, i) => new pf.Location({ id: i + 1, line: [new pf.Line({ functionId: i + 1, line: f.line || 0 })] }),
    )
    const counts = new Map()
    for (const s of trace.samples) if (s.stackId !== undefined) counts.set(s.stackId, (counts.get(s.stackId) || 0) + 1)
    const sample = []
    for (const [stackId, n] of counts) {
      const ids = []
      for (let id = stackId; id !== undefined; id = trace.stacks[id].parentId) ids.push(trace.stacks[id].frameId + 1)
      sample.push(new pf.Sample({ locationId: ids, value: [n] }))
    }
    const profile = new pf.Profile({
      stringTable: st,
      sampleType: [new pf.ValueType({ type: st.dedup('samples'), unit: st.dedup('count') })],
      sample,
      location,
      function: fn,
    })
    return zlib.gzipSync(profile.encode())
  }
  return { name: 'pprof-format fallback', encode }
}

/** Decodes a (gzipped) pprof body with pprof-format: function names -> sample totals. */
export function decodePprof(body) {
  const pf = require('pprof-format')
  const raw = body[0] === 0x1f && body[1] === 0x8b ? zlib.gunzipSync(body) : body
  const profile = pf.Profile.decode(raw)
  const strings = profile.stringTable.strings
  const fnName = new Map(profile.function.map((f) => [Number(f.id), strings[Number(f.name)]]))
  const locFns = new Map(
    profile.location.map((l) => [Number(l.id), l.line.map((line) => fnName.get(Number(line.functionId)))]),
  )
  const totals = new Map()
  for (const s of profile.sample) {
    const names = new Set(s.locationId.flatMap((id) => locFns.get(Number(id)) || []))
    for (const name of names) totals.set(name, (totals.get(name) || 0) + Number(s.value[0]))
  }
  return { profile, totals }
}
