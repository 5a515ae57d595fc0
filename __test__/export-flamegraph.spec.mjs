import { test } from 'node:test'
import assert from 'node:assert/strict'

import { toFlameGraph, toCollapsed } from 'jsprof-node'
import { realTrace, handTrace, require } from './export-helpers.mjs'

const { XMLValidator, XMLParser } = require('fast-xml-parser')

/** Well-formed XML (a real parser), an <svg> root; returns the frames as { title, fill, text }. */
function parseSvg(svg) {
  assert.equal(XMLValidator.validate(svg), true)
  const doc = new XMLParser({
    ignoreAttributes: false,
    attributeNamePrefix: '',
    isArray: (name) => ['g', 'svg'].includes(name),
  }).parse(svg)
  assert.ok(doc.svg, 'svg root')
  const frames = []
  const walk = (node) => {
    if (node === null || typeof node !== 'object') return
    if (Array.isArray(node)) return node.forEach(walk)
    if (node.title !== undefined && node.rect !== undefined) {
      frames.push({
        title: String(node.title),
        fill: node.rect.fill,
        text: String(node.text?.['#text'] ?? node.text ?? ''),
      })
    }
    for (const value of Object.values(node)) walk(value)
  }
  walk(doc)
  return frames
}

const frameNamed = (frames, prefix) => frames.filter((f) => f.title.startsWith(prefix))

test('hand-made trace: one frame per call-tree node, time, title and fills by kind', () => {
  const svg = toFlameGraph(handTrace(), { title: 'Hand <made> & checked' })
  const frames = parseSvg(svg)
  assert.ok(svg.includes('Hand &lt;made&gt; &amp; checked'))
  // all + 10 nodes of the folded call tree.
  assert.equal(frames.length, 11)
  // Shares are by time, as in summarize and pprof: main has 6 of 11 samples but 6.5 of 11 ms (now lasts
  // 1.501 ms, listOnTimeout 0.499 ms).
  const [chunk] = frameNamed(frames, 'chunk (/app/node_modules/lodash/chunk.js:5:17) (2 ms, 2 samples, 18.18%;')
  assert.ok(chunk, 'chunk frame with its time')
  const [work] = frameNamed(frames, 'work (/app/main.js:10:3) (3 ms, 3 samples, 27.27%;')
  const [main] = frameNamed(frames, 'main (/app/main.js:1:1) (6.5 ms, 6 samples, 59.1%;')
  const [now] = frameNamed(frames, 'now (1.5 ms, 1 sample, 13.65%')
  const [timers] = frameNamed(frames, 'listOnTimeout (node:internal/timers:500:10)')
  const [gc] = frameNamed(frames, '(garbage collector) (2 ms, 2 samples')
  assert.ok(work && main && now && timers && gc)
  // Tooltips name the kind of code.
  assert.equal(work.title, 'work (/app/main.js:10:3) (3 ms, 3 samples, 27.27%; kind: app)')
  assert.match(chunk.title, /; kind: dependency(, package: [^)]+)?\)$/)
  assert.match(now.title, /; kind: native\)$/)
  assert.match(timers.title, /; kind: node\)$/)
  assert.match(gc.title, /; kind: gc\)$/)
  // Distinct colour families per kind: app warm orange, dependency blue, node green, native purple.
  const rgb = (f) =>
    f.fill
      .match(/^rgb\((\d+),(\d+),(\d+)\)$/)
      .slice(1)
      .map(Number)
  const [ar, ag, ab] = rgb(work)
  assert.ok(ar > ag && ag > ab, `app is orange: ${work.fill}`)
  const [dr, , db] = rgb(chunk)
  assert.ok(db > dr, `dependency is blue: ${chunk.fill}`)
  const [nr, ng, nb] = rgb(timers)
  assert.ok(ng > nr && ng > nb, `node is green: ${timers.fill}`)
  const [pr, pg, pb] = rgb(now)
  assert.ok(pb > pg && pr > pg, `native is purple: ${now.fill}`)
  const kinds = new Set([work, chunk, timers, now, gc].map((f) => f.fill))
  assert.equal(kinds.size, 5)
  // inferno's script shows a frame's title minus its last parenthesised group as the frame's text:
  // that must be the bare label, so the kind goes inside the count's parentheses.
  for (const f of [work, chunk, now, timers, gc]) assert.doesNotMatch(f.title.replace(/\([^(]*\)$/, ''), /kind:/)
  // Deterministic output.
  assert.equal(toFlameGraph(handTrace(), { title: 'Hand <made> & checked' }), svg)
})

test('tooltips carry package names', () => {
  const frames = parseSvg(toFlameGraph(handTrace()))
  assert.match(frameNamed(frames, 'chunk (')[0].title, /; kind: dependency, package: lodash\)$/)
  assert.match(frameNamed(frames, 'wrap (')[0].title, /; kind: dependency, package: @scope\/pkg\)$/)
})

test('a real trace: inferno draws the folded stacks; every function is there', async () => {
  const { trace } = await realTrace()
  const svg = toFlameGraph(trace, { title: 'workload', width: 1600 })
  const frames = parseSvg(svg)
  assert.match(svg, /<svg [^>]*width="1600"/)
  const total = frames.find((f) => f.title.startsWith('all ('))
  assert.match(
    total.title,
    new RegExp(`^all \\([\\d.,]+ ms, ${trace.samples.length.toLocaleString('en')} samples, 100%\\)$`),
  )
  // The folded stacks inferno drew, checked from the collapsed text: each leaf function appears.
  const leaves = new Set(
    toCollapsed(trace)
      .trim()
      .split('\n')
      .map((l) => l.replace(/ \d+$/, '').split(';').at(-1)),
  )
  for (const name of ['appFib', 'appSort', 'depChecksum']) {
    assert.ok(
      [...leaves].some((l) => l.startsWith(name + ' ')),
      `${name} is a leaf in the folded stacks`,
    )
    const drawn = frameNamed(frames, name + ' (')
    assert.ok(drawn.length > 0, `${name} drawn`)
    for (const f of drawn)
      assert.match(
        f.title,
        name === 'depChecksum' ? /; kind: dependency, package: fakedep\)$/ : /; kind: app, package: export-workload\)$/,
      )
  }
  const appFill = frameNamed(frames, 'appFib (')[0].fill
  const depFill = frameNamed(frames, 'depChecksum (')[0].fill
  assert.notEqual(appFill, depFill)
})

test('no samples still gives a valid SVG; bad options are TypeErrors', () => {
  parseSvg(toFlameGraph({ resources: [], frames: [], stacks: [], samples: [] }))
  assert.throws(() => toFlameGraph(handTrace(), { title: 3 }), TypeError)
  assert.throws(() => toFlameGraph(handTrace(), { width: 0 }), TypeError)
  assert.throws(() => toFlameGraph(handTrace(), { width: 1.5 }), TypeError)
  assert.throws(() => toFlameGraph(handTrace(), []), TypeError)
})
