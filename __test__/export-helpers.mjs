// Shared fixtures of the export-*.spec.mjs tests: a real trace from a real Profiler run over a small
// workload (app functions + a function of an npm-like dependency under node_modules/), and hand-made
// traces for exact checks.
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createRequire } from 'node:module'
import v8 from 'node:v8'

import { Profiler } from 'jsprof-node'

/** `require` for devDependencies (ajv, speedscope, fast-xml-parser); honours NODE_PATH. */
export const require = createRequire(import.meta.url)

const APP = `
import { depChecksum } from './node_modules/fakedep/index.mjs'
export function appFib(n) { return n < 2 ? n : appFib(n - 1) + appFib(n - 2) }
export function appSort(n) {
  const a = []
  for (let i = 0; i < n; i++) a.push((i * 7919) % 1009)
  return a.sort((x, y) => x - y)[0]
}
export function appMain(ms) {
  const end = performance.now() + ms
  let acc = 0
  while (performance.now() < end) acc += appFib(18) + appSort(2000) + depChecksum(20000)
  return acc
}
`
const DEP = `
export function depChecksum(n) {
  let h = 0
  for (let i = 0; i < n; i++) h = (h * 31 + i) | 0
  return h & 1
}
`

/** Writes the workload under a temp dir: app.mjs and node_modules/fakedep/index.mjs. */
function writeWorkload() {
  const dir = mkdtempSync(join(tmpdir(), 'jsprof-export-'))
  mkdirSync(join(dir, 'node_modules', 'fakedep'), { recursive: true })
  writeFileSync(join(dir, 'node_modules', 'fakedep', 'index.mjs'), DEP)
  writeFileSync(join(dir, 'node_modules', 'fakedep', 'package.json'), '{"name":"fakedep","version":"1.2.3"}')
  writeFileSync(join(dir, 'app.mjs'), APP)
  writeFileSync(join(dir, 'package.json'), '{"name":"export-workload","version":"0.0.0"}')
  return dir
}

let cached
/** The workload functions the tests look for, each of which must be the leaf of some sample. */
const LEAVES = ['appFib', 'appSort', 'depChecksum']

/**
 * A trace of ~400 ms of the workload at a 1 ms interval (cached per test file). The tests name the
 * workload's functions, so V8 must not inline them into their callers (TurboFan did inline depChecksum
 * into appMain on a loaded machine: all its samples were appMain's): inlining is turned off for this
 * test process before the workload is compiled. A capture that still misses one of LEAVES as a leaf is
 * taken again (at most 5 times), judged by what the trace itself says.
 */
export async function realTrace() {
  if (cached) return cached
  v8.setFlagsFromString('--no-turbo-inlining')
  v8.setFlagsFromString('--no-maglev-inlining')
  const dir = writeWorkload()
  const app = await import(pathToFileURL(join(dir, 'app.mjs')).href)
  app.appMain(20) // warm up so the profile is not all compilation
  let trace
  for (let attempt = 0; attempt < 5; attempt++) {
    const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
    app.appMain(400)
    trace = await profiler.stop()
    const leaves = new Set(
      trace.samples
        .filter((s) => s.stackId !== undefined)
        .map((s) => trace.frames[trace.stacks[s.stackId].frameId].name),
    )
    if (LEAVES.every((name) => leaves.has(name))) break
  }
  cached = { trace, dir }
  return cached
}

/**
 * main (app) -> work (app) -> chunk (lodash) ; main -> now (native) ; main -> (anonymous) ;
 * main -> wrap (@scope/pkg) ; + gc x2, idle, program samples. Timestamps in ms, µs precision.
 */
export function handTrace() {
  return {
    resources: [
      'file:///app/main.js',
      'file:///app/node_modules/lodash/chunk.js',
      'node:internal/timers',
      'file:///app/node_modules/@scope/pkg/lib/wrap.js',
    ],
    frames: [
      { name: 'main', resourceId: 0, line: 1, column: 1 },
      { name: 'work', resourceId: 0, line: 10, column: 3 },
      { name: 'chunk', resourceId: 1, line: 5, column: 17 },
      { name: 'now' },
      { name: '', resourceId: 0, line: 20, column: 5 },
      { name: 'listOnTimeout', resourceId: 2, line: 500, column: 10 },
      { name: 'wrap', resourceId: 3, line: 2, column: 1 },
    ],
    stacks: [
      { frameId: 0 },
      { frameId: 1, parentId: 0 },
      { frameId: 2, parentId: 1 },
      { frameId: 3, parentId: 0 },
      { frameId: 4, parentId: 0 },
      { frameId: 5 },
      { frameId: 6, parentId: 0 },
    ],
    samples: [
      { timestamp: 100.5, stackId: 2, marker: 'script' },
      { timestamp: 101.5, stackId: 2, marker: 'script' },
      { timestamp: 102.5, stackId: 1, marker: 'script' },
      { timestamp: 103.5, marker: 'gc' },
      { timestamp: 104.5, marker: 'gc' },
      { timestamp: 105.5, stackId: 3, marker: 'script' },
      { timestamp: 107.001, stackId: 5, marker: 'script' },
      { timestamp: 107.5 },
      { timestamp: 108.5, marker: 'other' },
      { timestamp: 109.5, stackId: 4, marker: 'script' },
      { timestamp: 110.5, stackId: 6, marker: 'script' },
    ],
  }
}

/**
 * The same trace with its stack table reversed: ids change and parents come after their children
 * (the spec does not require parents first), samples renumbered to match.
 */
export function withStacksReversed(trace) {
  const n = trace.stacks.length
  return {
    ...trace,
    stacks: trace.stacks
      .slice()
      .reverse()
      .map((s) =>
        s.parentId === undefined ? { frameId: s.frameId } : { frameId: s.frameId, parentId: n - 1 - s.parentId },
      ),
    samples: trace.samples.map((s) => (s.stackId === undefined ? s : { ...s, stackId: n - 1 - s.stackId })),
  }
}

/** For each sample: [names outermost first] or the pseudo name, and its timestamp. */
export function expand(trace) {
  return trace.samples.map((s) => {
    if (s.stackId === undefined) {
      const name = s.marker === 'gc' ? '(garbage collector)' : s.marker === undefined ? '(idle)' : '(program)'
      return { t: s.timestamp, stack: [name] }
    }
    const stack = []
    for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId) {
      const f = trace.frames[trace.stacks[id].frameId]
      stack.unshift(
        `${f.name}|${f.resourceId === undefined ? '' : trace.resources[f.resourceId]}|${f.line}|${f.column}`,
      )
    }
    return { t: s.timestamp, stack }
  })
}

/**
 * The interval I of the documented rule (docs/analysis.md, "How long a sample stands for"), written here
 * apart from Rust's: the median gap between consecutive samples of one run (within one of
 * `jsprof.windows`, or anywhere without windows); with fewer than 4 such gaps, `jsprof.sampleInterval`
 * when the trace carries one, else their median (0 for none).
 */
export function ruleInterval(trace) {
  const times = trace.samples.map((s) => s.timestamp).sort((a, b) => a - b)
  const windows = trace.jsprof?.windows
  const windowOf = (x) => (windows ? windows.findIndex(([b, e]) => b <= x && x <= e) : 0)
  const gaps = []
  for (let k = 0; k + 1 < times.length; k++) {
    const w = windowOf(times[k])
    if (w !== -1 && windowOf(times[k + 1]) === w) gaps.push(times[k + 1] - times[k])
  }
  const carried = trace.jsprof?.sampleInterval
  if (carried !== undefined && gaps.length < 4) return carried
  gaps.sort((a, b) => a - b)
  const h = gaps.length >> 1
  return gaps.length === 0 ? 0 : gaps.length % 2 ? gaps[h] : (gaps[h - 1] + gaps[h]) / 2
}

/**
 * Each sample's weight in ms by the documented rule, written here apart from Rust's: a sample weighs the
 * gap to the next one when both lie in one run (one of `jsprof.windows`, or anywhere without windows), at
 * most 2 I; the last of a run weighs I (at most the gap to the next sample); with I = 0 nothing is capped.
 */
export function ruleWeights(trace) {
  const samples = trace.samples
  const order = samples.map((_, i) => i).sort((a, b) => samples[a].timestamp - samples[b].timestamp || a - b)
  const t = (k) => samples[order[k]].timestamp
  const interval = ruleInterval(trace)
  const windows = trace.jsprof?.windows
  const windowOf = (x) => (windows ? windows.findIndex(([b, e]) => b <= x && x <= e) : 0)
  const ms = new Array(samples.length).fill(0)
  for (let k = 0; k < order.length; k++) {
    if (k + 1 === order.length) {
      ms[order[k]] = interval
      continue
    }
    const gap = t(k + 1) - t(k)
    const w = windowOf(t(k))
    const oneRun = w !== -1 && windowOf(t(k + 1)) === w
    ms[order[k]] = oneRun ? (interval > 0 ? Math.min(gap, 2 * interval) : gap) : Math.min(gap, interval)
  }
  return ms
}

/**
 * The function name pprof and OTLP give a frame: its own, or for an anonymous function
 * `(anonymous <file>:<line>:<column>)` (the file as pprof's `filename` has it), so two are never one row.
 */
export function exportedFunctionName(trace, frame) {
  if (frame.name !== '') return frame.name
  const resource = frame.resourceId === undefined ? undefined : trace.resources[frame.resourceId]
  const file = resource === undefined ? 'generated' : resource.startsWith('file:') ? fileURLToPath(resource) : resource
  if (resource === undefined && frame.line === undefined) return '(anonymous)'
  const place = [file, frame.line, frame.column].filter((part) => part !== undefined).join(':')
  return `(anonymous ${place})`
}
