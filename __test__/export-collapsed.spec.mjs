import { test } from 'node:test'
import assert from 'node:assert/strict'

import { toCollapsed } from 'jsprof-node'
import { realTrace, handTrace, expand, ruleWeights } from './export-helpers.mjs'

/** Parses folded stacks back: Map(stack text -> count); checks the line syntax on the way. */
function parseCollapsed(text) {
  assert.ok(text.endsWith('\n'))
  const counts = new Map()
  for (const line of text.slice(0, -1).split('\n')) {
    const m = /^(.+) (\d+)$/.exec(line)
    assert.ok(m, `folded line: ${line}`)
    assert.ok(!counts.has(m[1]), 'one line per stack')
    counts.set(m[1], Number(m[2]))
  }
  return counts
}

const label = (f, resources) => {
  const name = f.name === '' ? '(anonymous)' : f.name
  if (f.resourceId === undefined) return name
  const path = resources[f.resourceId].replace(/^file:\/\//, '')
  return `${name} (${path}:${f.line}:${f.column})`
}

/**
 * Each sample's weight in µs, computed here independently of the exporter by the documented rule
 * (docs/analysis.md, "How long a sample stands for"); a trace spanning no time weighs 1 per sample.
 */
function weights(trace) {
  const ms = ruleWeights(trace)
  const total = ms.reduce((a, b) => a + b, 0)
  return total > 0 ? ms.map((v) => v * 1000) : ms.map(() => 1)
}

/** The expected weights per stack (whole µs, zero left out), computed here from the trace. */
function expectedCounts(trace) {
  const counts = new Map()
  const w = weights(trace)
  for (const [i, s] of trace.samples.entries()) {
    let key
    if (s.stackId === undefined) {
      key = s.marker === 'gc' ? '(garbage collector)' : s.marker === undefined ? '(idle)' : '(program)'
    } else {
      const names = []
      for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId) {
        names.unshift(label(trace.frames[trace.stacks[id].frameId], trace.resources).replace(/;/g, ':'))
      }
      key = names.join(';')
    }
    counts.set(key, (counts.get(key) ?? 0) + w[i])
  }
  for (const [key, v] of counts) {
    if (Math.round(v) === 0) counts.delete(key)
    else counts.set(key, Math.round(v))
  }
  return counts
}

test('hand-made trace: exact folded text, sorted, pseudo stacks by marker, weights in µs of time', () => {
  // Samples 1 ms apart, but `now` lasts 1.501 ms (105.5 -> 107.001) and listOnTimeout 0.499 ms.
  assert.equal(
    toCollapsed(handTrace()),
    [
      '(garbage collector) 2000',
      '(idle) 1000',
      '(program) 1000',
      'listOnTimeout (node:internal/timers:500:10) 499',
      'main (/app/main.js:1:1);(anonymous) (/app/main.js:20:5) 1000',
      'main (/app/main.js:1:1);now 1501',
      'main (/app/main.js:1:1);work (/app/main.js:10:3) 1000',
      'main (/app/main.js:1:1);work (/app/main.js:10:3);chunk (/app/node_modules/lodash/chunk.js:5:17) 2000',
      'main (/app/main.js:1:1);wrap (/app/node_modules/@scope/pkg/lib/wrap.js:2:1) 1000',
      '',
    ].join('\n'),
  )
  // A trace that spans no time (one sample) counts samples.
  const one = handTrace()
  one.samples = one.samples.slice(0, 1)
  assert.equal(
    toCollapsed(one),
    'main (/app/main.js:1:1);work (/app/main.js:10:3);chunk (/app/node_modules/lodash/chunk.js:5:17) 1\n',
  )
})

test('a real trace parses back to the same time per stack', async () => {
  const { trace } = await realTrace()
  const text = toCollapsed(trace)
  const counts = parseCollapsed(text)
  assert.deepEqual(counts, expectedCounts(trace))
  let total = 0
  for (const n of counts.values()) total += n
  const span = weights(trace).reduce((a, b) => a + b, 0)
  assert.ok(
    Math.abs(total - span) <= counts.size,
    `${total} µs vs the trace's ${span}: off by rounding per line at most`,
  )
  const keys = [...counts.keys()]
  assert.deepEqual(
    keys,
    keys.slice().sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
    'sorted',
  )
  assert.match(text, /;appFib \([^)]*app\.mjs:\d+:\d+\)/)
  assert.match(text, /;depChecksum \([^)]*node_modules\/fakedep\/index\.mjs:\d+:\d+\)/)
  assert.equal(toCollapsed(trace), text, 'deterministic')
})

test('separators inside names cannot break the format', () => {
  const t = handTrace()
  t.frames[3].name = 'a;b\nc'
  const counts = parseCollapsed(toCollapsed(t))
  assert.equal(counts.get('main (/app/main.js:1:1);a:b\\x0ac'), 1501)
  assert.equal(expand(t).length, 11)
})

test('a name cannot read as a count, lose its leading space, or carry a control into the format', () => {
  const t = handTrace()
  for (const [name, shown] of [
    ['x 999', 'x\u00a0999'],
    [' lead', '\u00a0lead'],
    ['esc\x1b[2J', 'esc\\x1b[2J'],
  ]) {
    t.frames[3].name = name
    const text = toCollapsed(t)
    assert.ok(text.includes(`main (/app/main.js:1:1);${shown} 1501\n`), JSON.stringify(text))
    // Every line still ends in exactly one count after its only ASCII space-separated stack.
    for (const line of text.trimEnd().split('\n')) assert.match(line, /^[^ ]+( [^ ]+)*? \d+$/)
  }
})
