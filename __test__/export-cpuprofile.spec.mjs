import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { toCpuProfile, fromCpuProfile } from 'jsprof-node'
import { realTrace, handTrace, expand, withStacksReversed } from './export-helpers.mjs'

/** What DevTools and VS Code rely on: unique ids, children that exist, one root, samples on nodes. */
function assertV8Shape(p) {
  assert.ok(Array.isArray(p.nodes) && p.nodes.length > 0)
  const ids = new Set(p.nodes.map((n) => n.id))
  assert.equal(ids.size, p.nodes.length, 'node ids are unique')
  assert.equal(p.nodes[0].callFrame.functionName, '(root)')
  const parents = new Map()
  for (const n of p.nodes) {
    assert.equal(typeof n.callFrame.scriptId, 'string')
    assert.equal(typeof n.callFrame.url, 'string')
    assert.ok(Number.isInteger(n.callFrame.lineNumber) && n.callFrame.lineNumber >= -1)
    assert.ok(Number.isInteger(n.callFrame.columnNumber) && n.callFrame.columnNumber >= -1)
    for (const c of n.children ?? []) {
      assert.ok(ids.has(c), `child ${c} of ${n.id} exists`)
      assert.ok(!parents.has(c), `${c} has one parent`)
      parents.set(c, n.id)
    }
  }
  for (const n of p.nodes.slice(1)) assert.ok(parents.has(n.id), `node ${n.id} hangs under the root`)
  assert.equal(p.samples.length, p.timeDeltas.length)
  for (const s of p.samples) assert.ok(ids.has(s))
  assert.ok(p.timeDeltas.every(Number.isInteger), 'deltas are whole µs')
  const hits = new Map()
  for (const s of p.samples) hits.set(s, (hits.get(s) ?? 0) + 1)
  for (const n of p.nodes) assert.equal(n.hitCount, hits.get(n.id) ?? 0)
  assert.ok(p.endTime >= p.startTime)
}

test('a real trace round-trips: same resources, frames, stacks, samples and times', async () => {
  const { trace } = await realTrace()
  assert.ok(trace.samples.length > 50, `enough samples (${trace.samples.length})`)
  const profile = toCpuProfile(trace)
  assertV8Shape(profile)
  const back = fromCpuProfile(profile, { timeOrigin: 0 })
  assert.deepStrictEqual(back.resources, trace.resources)
  assert.deepStrictEqual(back.frames, trace.frames)
  assert.deepStrictEqual(back.stacks, trace.stacks)
  assert.deepStrictEqual(back.samples, trace.samples)
  const names = new Set(profile.nodes.map((n) => n.callFrame.functionName))
  for (const name of ['appMain', 'appFib', 'depChecksum']) assert.ok(names.has(name), name)
})

test('the written .cpuprofile file reads back; without timeOrigin times start at 0', async () => {
  const { trace, dir } = await realTrace()
  const file = join(dir, 'trace.cpuprofile')
  writeFileSync(file, JSON.stringify(toCpuProfile(trace)))
  const back = fromCpuProfile(readFileSync(file))
  const first = trace.samples[0].timestamp
  assert.equal(back.samples.length, trace.samples.length)
  back.samples.forEach((s, i) => {
    const expected = Math.round((trace.samples[i].timestamp - first) * 1000) / 1000
    assert.equal(s.timestamp, expected)
  })
})

test('hand-made trace: 0-based positions, pseudo nodes by marker, µs times', () => {
  const trace = handTrace()
  const p = toCpuProfile(trace)
  assertV8Shape(p)
  const byName = (name) => p.nodes.find((n) => n.callFrame.functionName === name)
  assert.deepEqual(byName('chunk').callFrame, {
    functionName: 'chunk',
    scriptId: '2',
    url: 'file:///app/node_modules/lodash/chunk.js',
    lineNumber: 4,
    columnNumber: 16,
  })
  assert.deepEqual(byName('now').callFrame, {
    functionName: 'now',
    scriptId: '0',
    url: '',
    lineNumber: -1,
    columnNumber: -1,
  })
  assert.equal(byName('(garbage collector)').hitCount, 2)
  assert.equal(byName('(idle)').hitCount, 1)
  assert.equal(byName('(program)').hitCount, 1)
  assert.equal(p.startTime, 100500)
  assert.equal(p.endTime, 110500)
  assert.deepEqual(p.timeDeltas, [0, 1000, 1000, 1000, 1000, 1000, 1501, 499, 1000, 1000, 1000])
  // The stack trie is the call tree: one node per stack, children under their parent's node.
  const work = byName('work')
  assert.deepEqual(work.children, [byName('chunk').id])
  assert.ok(byName('main').children.includes(work.id))
  assert.deepEqual(expand(fromCpuProfile(p, { timeOrigin: 0 })), expand(trace))
})

test('stacks listed children-first still round-trip to the same samples', () => {
  const trace = handTrace()
  const reversed = withStacksReversed(trace)
  assert.deepEqual(expand(reversed), expand(trace))
  assert.deepEqual(expand(fromCpuProfile(toCpuProfile(reversed), { timeOrigin: 0 })), expand(trace))
})

test('an empty trace is a root alone', () => {
  const p = toCpuProfile({ resources: [], frames: [], stacks: [], samples: [] })
  assert.equal(p.nodes.length, 1)
  assert.deepEqual([p.samples, p.timeDeltas, p.startTime, p.endTime], [[], [], 0, 0])
})
