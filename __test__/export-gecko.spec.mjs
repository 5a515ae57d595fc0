import { test } from 'node:test'
import assert from 'node:assert/strict'

import { toGeckoProfile } from 'jsprof-node'
import { realTrace, handTrace, withStacksReversed } from './export-helpers.mjs'

// The processed profile format, version 58, as firefox-devtools/profiler src/types/profile.ts and
// docs-developer/CHANGELOG-formats.md describe it.
const COLUMNS = {
  stackTable: ['frame', 'prefix'],
  frameTable: [
    'address',
    'inlineDepth',
    'category',
    'subcategory',
    'func',
    'nativeSymbol',
    'innerWindowID',
    'line',
    'column',
  ],
  funcTable: ['name', 'isJS', 'relevantForJS', 'resource', 'source', 'lineNumber', 'columnNumber'],
  resourceTable: ['lib', 'name', 'host', 'type'],
  nativeSymbols: ['libIndex', 'address', 'name', 'functionSize'],
  samples: ['stack', 'time'],
  markers: ['data', 'name', 'startTime', 'endTime', 'phase', 'category'],
}

const isIndex = (v, n) => Number.isInteger(v) && v >= 0 && v < n

/** Every table consistent and every index in range; returns helpers to read the thread. */
function assertValidProfile(p) {
  assert.equal(p.meta.preprocessedProfileVersion, 58)
  assert.equal(typeof p.meta.version, 'number')
  assert.equal(typeof p.meta.interval, 'number')
  assert.ok(Array.isArray(p.meta.markerSchema))
  assert.deepEqual(p.libs, [])
  const strings = p.shared.stringArray
  assert.ok(strings.every((s) => typeof s === 'string'))
  const sources = p.shared.sources
  assert.equal(sources.uuid.length, sources.length)
  assert.equal(sources.filename.length, sources.length)
  for (const f of sources.filename) assert.ok(isIndex(f, strings.length))
  const cats = p.meta.categories
  assert.ok(
    cats.some((c) => c.color === 'grey'),
    'a grey default category',
  )
  for (const c of cats) assert.equal(c.subcategories[0], 'Other')
  assert.equal(p.threads.length, 1)
  const t = p.threads[0]
  assert.equal(typeof t.pid, 'string')
  assert.equal(t.isMainThread, true)
  for (const [table, columns] of Object.entries(COLUMNS)) {
    for (const col of columns) {
      assert.ok(Array.isArray(t[table][col]), `${table}.${col}`)
      assert.equal(t[table][col].length, t[table].length, `${table}.${col} has ${table}.length entries`)
    }
  }
  const { stackTable, frameTable, funcTable, resourceTable, samples, markers } = t
  for (let i = 0; i < stackTable.length; i++) {
    assert.ok(isIndex(stackTable.frame[i], frameTable.length))
    const prefix = stackTable.prefix[i]
    assert.ok(prefix === null || (isIndex(prefix, stackTable.length) && prefix < i), `prefix of stack ${i} before it`)
  }
  for (let i = 0; i < frameTable.length; i++) {
    assert.ok(isIndex(frameTable.func[i], funcTable.length))
    const cat = frameTable.category[i]
    assert.ok(isIndex(cat, cats.length))
    assert.ok(isIndex(frameTable.subcategory[i], cats[cat].subcategories.length))
    assert.equal(frameTable.address[i], -1)
  }
  for (let i = 0; i < funcTable.length; i++) {
    assert.ok(isIndex(funcTable.name[i], strings.length))
    const r = funcTable.resource[i]
    assert.ok(r === -1 || isIndex(r, resourceTable.length))
    const s = funcTable.source[i]
    assert.ok(s === null || isIndex(s, sources.length))
    assert.equal(typeof funcTable.isJS[i], 'boolean')
  }
  for (let i = 0; i < resourceTable.length; i++) assert.ok(isIndex(resourceTable.name[i], strings.length))
  for (let i = 0; i < samples.length; i++) {
    assert.ok(isIndex(samples.stack[i], stackTable.length))
    if (i > 0) assert.ok(samples.time[i] >= samples.time[i - 1], 'samples in time order')
  }
  for (let i = 0; i < markers.length; i++) {
    assert.ok(isIndex(markers.name[i], strings.length))
    assert.ok(isIndex(markers.category[i], cats.length))
    assert.ok(markers.endTime[i] >= markers.startTime[i])
    const schema = p.meta.markerSchema.find((s) => s.name === markers.data[i].type)
    assert.ok(schema, 'every marker has a schema')
  }
  const funcName = (frame) => strings[funcTable.name[frameTable.func[frame]]]
  const stackNames = (stack) => {
    const names = []
    for (let s = stack; s !== null; s = stackTable.prefix[s]) names.unshift(funcName(stackTable.frame[s]))
    return names
  }
  return { t, strings, cats, funcName, stackNames }
}

test('hand-made trace: tables, names, categories and GC markers', () => {
  const p = toGeckoProfile(handTrace(), { threadName: 'worker', startTime: 1700000000000 })
  const { t, strings, cats, stackNames } = assertValidProfile(p)
  assert.equal(t.name, 'worker')
  assert.equal(p.meta.startTime, 1700000000000)
  assert.deepEqual(
    t.samples.time,
    handTrace().samples.map((s) => s.timestamp),
  )
  assert.deepEqual(stackNames(t.samples.stack[0]), ['main', 'work', 'chunk'])
  assert.deepEqual(stackNames(t.samples.stack[3]), ['(garbage collector)'])
  assert.deepEqual(stackNames(t.samples.stack[7]), ['(idle)'])
  assert.deepEqual(stackNames(t.samples.stack[8]), ['(program)'])
  assert.deepEqual(stackNames(t.samples.stack[9]), ['main', '(anonymous)'])
  const catOf = (stack) => cats[t.frameTable.category[t.stackTable.frame[stack]]].name
  assert.equal(catOf(t.samples.stack[0]), 'Dependency')
  assert.equal(catOf(t.samples.stack[2]), 'JavaScript')
  assert.equal(catOf(t.samples.stack[3]), 'GC / CC')
  assert.equal(catOf(t.samples.stack[5]), 'Native')
  assert.equal(catOf(t.samples.stack[6]), 'Node.js')
  assert.equal(catOf(t.samples.stack[7]), 'Idle')
  // One GC marker over the two consecutive gc samples, ending at the next sample.
  assert.equal(t.markers.length, 1)
  assert.equal(strings[t.markers.name[0]], 'GC')
  assert.deepEqual([t.markers.startTime[0], t.markers.endTime[0], t.markers.phase[0]], [103.5, 105.5, 1])
  assert.equal(t.markers.data[0].samples, 2)
  // JS positions are 1-based as in the trace.
  const chunk = t.stackTable.frame[t.samples.stack[0]]
  assert.deepEqual([t.frameTable.line[chunk], t.frameTable.column[chunk]], [5, 17])
})

test('dependency frames get their package as subcategory', () => {
  const p = toGeckoProfile(handTrace())
  const { t: thread, cats } = assertValidProfile(p)
  const dep = cats.findIndex((c) => c.name === 'Dependency')
  assert.deepEqual(cats[dep].subcategories, ['Other', 'lodash', '@scope/pkg'])
  const chunk = thread.stackTable.frame[thread.samples.stack[0]]
  assert.equal(cats[dep].subcategories[thread.frameTable.subcategory[chunk]], 'lodash')
})

test('a real trace is structurally valid; every gc sample lies in a GC marker', async () => {
  const { trace } = await realTrace()
  const p = toGeckoProfile(trace)
  const { t, stackNames } = assertValidProfile(p)
  assert.equal(t.samples.length, trace.samples.length)
  const leaves = new Set(t.samples.stack.map((s) => stackNames(s).at(-1)))
  for (const name of ['appFib', 'appSort', 'depChecksum']) assert.ok(leaves.has(name), name)
  const gcTimes = trace.samples.filter((s) => s.marker === 'gc').map((s) => s.timestamp)
  for (const time of gcTimes) {
    const covered = t.markers.startTime.some((start, i) => start <= time && time < t.markers.endTime[i])
    assert.ok(covered, `gc sample at ${time} is in a marker`)
  }
})

test('samples out of order and stacks listed children-first come out ordered', () => {
  const h = handTrace()
  const reversed = withStacksReversed(h)
  const shuffled = { ...reversed, samples: reversed.samples.slice().reverse() }
  const { t, stackNames } = assertValidProfile(toGeckoProfile(shuffled))
  assert.deepEqual(
    t.samples.time,
    h.samples.map((s) => s.timestamp),
  )
  assert.deepEqual(stackNames(t.samples.stack[0]), ['main', 'work', 'chunk'])
})

test('options are checked', () => {
  assert.throws(() => toGeckoProfile(handTrace(), { threadName: 1 }), TypeError)
  assert.throws(() => toGeckoProfile(handTrace(), { startTime: NaN }), TypeError)
})
