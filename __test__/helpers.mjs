// Shared helpers for the tests: the fixture workload, expected positions, and trace checks.
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import assert from 'node:assert/strict'

const require = createRequire(import.meta.url)
export const workloadPath = fileURLToPath(new URL('./fixtures/workload.cjs', import.meta.url))
export const workloadUrl = pathToFileURL(workloadPath).href
export const workload = require(workloadPath)

/**
 * A fresh copy of the workload (new file, new URL, never optimized): TurboFan inlines hot functions
 * and V8's profile then shows only the caller, so tests about positions use unwarmed code.
 */
export function freshWorkload() {
  const path = join(mkdtempSync(join(tmpdir(), 'jsprof-test-')), 'workload.cjs')
  // V8 shares compiled RegExp code by source and does not re-log code compiled before profiling
  // started, so each copy gets a RegExp of its own.
  const nonce = `n${Math.random().toString(36).slice(2)}`
  writeFileSync(path, readFileSync(workloadPath, 'utf8').replace('NONCE', nonce))
  return { workload: require(path), url: pathToFileURL(path).href, path }
}

/** The 1-based { line, column } of the `(` after `marker` in the workload's source. */
export function positionOf(marker) {
  const lines = readFileSync(workloadPath, 'utf8').split('\n')
  for (let i = 0; i < lines.length; i++) {
    const at = lines[i].indexOf(marker)
    if (at >= 0) return { line: i + 1, column: lines[i].indexOf('(', at) + 1 }
  }
  throw new Error(`marker not found: ${marker}`)
}

/**
 * Runs `attempt()` (a capture and its assertions) until it passes, at most `times` times: on a loaded
 * 2-core machine V8's sampler thread can be starved for a whole capture, so a test about what V8
 * samples takes a fresh capture rather than a looser rule. Only assertion failures are retried.
 */
export async function retryCapture(times, attempt) {
  for (let i = 1; ; i++) {
    try {
      return await attempt()
    } catch (err) {
      if (i >= times || !(err instanceof assert.AssertionError)) throw err
      // Said in the test log, so that a capture that often needs a second try is seen before it flakes.
      console.error(`retryCapture: attempt ${i} of ${times} failed (${err.message.split('\n')[0]}); capturing again`)
    }
  }
}

/** Lets the event loop turn (the sampler harvests on timers and immediates). */
/**
 * Why the \`go tool pprof\` checks skip (null: go is installed). CI installs Debian's golang-go and must
 * run them: there a missing go is an error; on a developer machine without go they skip, saying so.
 */
export const goMissing = (() => {
  try {
    execFileSync('go', ['version'], { stdio: 'pipe' })
    return null
  } catch {
    if (process.env.CI) throw new Error('go is not installed, and CI must run the go tool pprof checks')
    return 'go is not installed (apt-get install -y golang-go): go tool pprof checks skipped'
  }
})()

export const tick = () => new Promise((resolve) => setImmediate(resolve))

/** Runs `fn(sliceMs)` for `totalMs`, yielding to the event loop between slices, like a server. */
export async function runSliced(totalMs, fn, sliceMs = 10) {
  const end = performance.now() + totalMs
  while (performance.now() < end) {
    fn(sliceMs)
    await tick()
  }
}

/** The frame names on the stack of a sample, innermost first. */
export function stackNames(trace, stackId) {
  const names = []
  for (let id = stackId; id !== undefined; id = trace.stacks[id].parentId) {
    names.push(trace.frames[trace.stacks[id].frameId].name)
  }
  return names
}

/**
 * For each function name: how many of the samples with it on the stack carry each value of label
 * `key` ('(none)' without it), or without `key` each whole label set (as JSON).
 */
export function labelsByFunction(trace, names, key) {
  const out = Object.fromEntries(names.map((n) => [n, {}]))
  const ext = trace.jsprof ?? {}
  trace.samples.forEach((s, i) => {
    if (s.stackId === undefined) return
    const onStack = stackNames(trace, s.stackId)
    const id = ext.sampleLabels?.[i]
    const set = id == null ? undefined : ext.labelSets[id]
    const value = key === undefined ? (set ? JSON.stringify(set) : '(none)') : (set?.[key] ?? '(none)')
    for (const n of names) if (onStack.includes(n)) out[n][value] = (out[n][value] || 0) + 1
  })
  return out
}

/**
 * The label sets of a chunk of one function sampled at `sampleTimes` (µs), labelled from this thread's
 * timeline and context `ring` through the binding as the sampler makes chunks, after `beforeHarvest()`
 * when given: one set or null per sample.
 */
export function chunkLabels(sampleTimes, ring, beforeHarvest) {
  const binding = require('../binding.js')
  const { packColumns } = require('../lib/sampler/inspector-session.js')
  const frame = (name) => ({ functionName: name, url: 'file:///w.js', lineNumber: 0, columnNumber: 0, scriptId: '1' })
  const profile = {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2] },
      { id: 2, callFrame: frame('f'), children: [] },
    ],
    startTime: 0,
    endTime: sampleTimes.at(-1),
    samples: sampleTimes.map(() => 2),
    timeDeltas: sampleTimes.map((t, i) => t - (i === 0 ? 0 : sampleTimes[i - 1])),
  }
  if (beforeHarvest) beforeHarvest()
  const line = binding.Chunk.fromInspector(packColumns(profile), 1000, [], ring ?? null)
    .toLine()
    .toString()
  const tab = line.indexOf('\t')
  if (tab < 0) return sampleTimes.map(() => null)
  const { labelSets, sampleLabels } = JSON.parse(line.slice(tab + 1))
  return sampleLabels.map((i) => (i === null ? null : labelSets[i]))
}

/** The names of every function that appears on any sampled stack. */
export function sampledNames(trace) {
  const names = new Set()
  for (const s of trace.samples) if (s.stackId !== undefined) for (const n of stackNames(trace, s.stackId)) names.add(n)
  return names
}

/** Structural invariants every trace must satisfy. */
export function assertWellFormed(trace) {
  // WebIDL builds dictionaries with their members in lexicographic order (so does Chrome's JSON).
  assert.deepEqual(Object.keys(trace), ['frames', 'resources', 'samples', 'stacks'])
  const inOrder = (keys, order) =>
    assert.deepEqual(
      keys,
      order.filter((k) => keys.includes(k)),
      `key order ${keys}`,
    )
  for (const f of trace.frames) inOrder(Object.keys(f), ['column', 'line', 'name', 'resourceId'])
  for (const s of trace.stacks) inOrder(Object.keys(s), ['frameId', 'parentId'])
  for (const s of trace.samples) inOrder(Object.keys(s), ['marker', 'stackId', 'timestamp'])
  assert.equal(new Set(trace.resources).size, trace.resources.length, 'resources are deduplicated')
  const frameKeys = new Set()
  for (const f of trace.frames) {
    assert.equal(typeof f.name, 'string')
    for (const key of Object.keys(f)) assert.ok(['name', 'resourceId', 'line', 'column'].includes(key), key)
    if ('resourceId' in f) assert.ok(f.resourceId >= 0 && f.resourceId < trace.resources.length)
    if ('line' in f) assert.ok(Number.isInteger(f.line) && f.line >= 1, 'lines are 1-based')
    if ('column' in f) assert.ok(Number.isInteger(f.column) && f.column >= 1, 'columns are 1-based')
    frameKeys.add(JSON.stringify([f.name, f.resourceId, f.line, f.column]))
  }
  assert.equal(frameKeys.size, trace.frames.length, 'frames are deduplicated')
  const stackKeys = new Set()
  trace.stacks.forEach((s, i) => {
    assert.ok(s.frameId >= 0 && s.frameId < trace.frames.length)
    if ('parentId' in s) {
      assert.ok(Number.isInteger(s.parentId) && s.parentId < i, 'parents come before children')
    }
    assert.notEqual(s.parentId, null)
    stackKeys.add(`${s.frameId}/${s.parentId}`)
  })
  assert.equal(stackKeys.size, trace.stacks.length, 'stacks form a trie (no duplicate nodes)')
  for (const s of trace.samples) {
    assert.equal(typeof s.timestamp, 'number')
    assert.equal(Math.round(s.timestamp * 1000), Math.round(s.timestamp * 1e6) / 1000, 'µs precision')
    if ('stackId' in s) {
      assert.ok(Number.isInteger(s.stackId) && s.stackId < trace.stacks.length)
      assert.equal(s.marker, 'script')
    } else {
      assert.ok(s.marker === undefined || s.marker === 'gc' || s.marker === 'other', s.marker)
      assert.ok(!('marker' in s) || s.marker !== undefined, 'absent, not undefined')
    }
  }
}

/**
 * Follows a child process that prints `ready <pid>` once it is running: `ready` resolves with that
 * pid (rejects if the child exits first), `exited` with { code, signal, stdout, stderr, at }.
 */
export function watchChild(child) {
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr, at: Date.now() })),
  )
  const ready = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d
      const m = /ready (\d+)/.exec(stdout)
      if (m) resolve(Number(m[1]))
    })
    child.on('exit', () => reject(new Error(`exited before ready: ${stderr}`)))
  })
  return { child, ready, exited }
}
