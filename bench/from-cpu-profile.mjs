// Benchmark 2: fromCpuProfile(jsonText) on a multi-MB profile against a straightforward JavaScript
// conversion (baseline-from-cpu-profile.mjs) with the same rules and the same output.

import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { fromCpuProfile } from 'jsprof-node'
import { baselineFromCpuProfile } from './baseline-from-cpu-profile.mjs'
import { synthesizeProfile } from './synth-profile.mjs'

const require = createRequire(import.meta.url)
const { binding } = require('../lib/native.js')
const { assembleTrace } = require('../lib/trace.js')

export function makeProfileText(options) {
  return JSON.stringify(synthesizeProfile(options))
}

/** Checks, outside any timing, that both conversions give deep-equal traces. */
export function assertSameTraces(text) {
  const ours = fromCpuProfile(text)
  const baseline = baselineFromCpuProfile(text)
  assert.deepStrictEqual(ours, baseline)
  return ours
}

/**
 * Times each candidate `reps` times, interleaved (A B A B …), after `warmup` untimed calls each.
 * `gc` (if given) runs before every call, outside the timing, so that each call pays for its own
 * garbage and not for the previous one's.
 */
export function timeInterleaved(candidates, { reps, warmup, gc }) {
  const times = Object.fromEntries(Object.keys(candidates).map((k) => [k, []]))
  for (let i = 0; i < warmup; i++) for (const f of Object.values(candidates)) f()
  for (let i = 0; i < reps; i++) {
    for (const [name, f] of Object.entries(candidates)) {
      if (gc) gc()
      const t0 = performance.now()
      f()
      times[name].push(performance.now() - t0)
    }
  }
  return times
}

/** The candidates: the whole calls, and ours split into its native and JS (assembly) parts. */
export function candidates(text) {
  let parts = binding.convertCpuProfileText(text)
  return {
    ours: () => fromCpuProfile(text),
    jsonParse: () => JSON.parse(text),
    baseline: () => baselineFromCpuProfile(text),
    oursNative: () => {
      parts = binding.convertCpuProfileText(text)
    },
    oursAssemble: () => assembleTrace(parts),
  }
}
