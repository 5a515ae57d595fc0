import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdtempSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { gunzipSync } from 'node:zlib'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { toPprof, summarize } from 'jsprof-node'
import { goMissing } from './helpers.mjs'
import { realTrace, handTrace, exportedFunctionName } from './export-helpers.mjs'
import { decodePprof } from './prod-helpers.mjs'

// The real consumer: `go tool pprof` (Debian's golang-go; helpers.mjs' goMissing says when it is not there).

const work = mkdtempSync(join(tmpdir(), 'jsprof-pprof-'))
const env = { ...process.env, PPROF_TMPDIR: work, HOME: process.env.HOME ?? work, GOTOOLCHAIN: 'local' }

function pprof(trace, ...args) {
  const file = join(work, `p${Math.random().toString(36).slice(2)}.pb.gz`)
  writeFileSync(file, toPprof(trace))
  return execFileSync('go', ['tool', 'pprof', ...args, file], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/** `-top` rows: function name -> [flat, cum] (numbers in the chosen sample index's unit). */
function parseTop(text) {
  const rows = new Map()
  for (const line of text.split('\n')) {
    const m = /^\s*([\d.]+)(\w*)\s+[\d.]+%\s+[\d.]+%\s+([\d.]+)(\w*)\s+[\d.]+%\s+(.+?)\s*$/.exec(line)
    if (!m) continue
    // pprof lists functions by (name, file): two files' functions of one name are two rows; add them up
    // as flatCounts does by name.
    const [flat, cum] = rows.get(m[5]) ?? [0, 0]
    rows.set(m[5], [flat + Number(m[1]), cum + Number(m[3])])
  }
  return rows
}

/** Leaf-frame sample counts by display name, computed from the trace. */
function flatCounts(trace) {
  const counts = new Map()
  for (const s of trace.samples) {
    let name
    if (s.stackId === undefined)
      name = s.marker === 'gc' ? '(garbage collector)' : s.marker === undefined ? '(idle)' : '(program)'
    else name = exportedFunctionName(trace, trace.frames[trace.stacks[s.stackId].frameId])
    counts.set(name, (counts.get(name) ?? 0) + 1)
  }
  return counts
}

test('the bytes are gzip with a protobuf inside', () => {
  const buf = toPprof(handTrace())
  assert.ok(Buffer.isBuffer(buf))
  assert.deepEqual([...buf.subarray(0, 2)], [0x1f, 0x8b])
  const raw = gunzipSync(buf).toString('latin1')
  for (const s of ['samples', 'count', 'cpu', 'nanoseconds', 'package', 'kind', 'chunk', '(garbage collector)']) {
    assert.ok(raw.includes(s), s)
  }
})

test('go tool pprof -top: hand-made trace, exact counts and times', { skip: goMissing ?? false }, () => {
  const counts = parseTop(pprof(handTrace(), '-top', '-sample_index=samples', '-nodecount=100'))
  assert.deepEqual(counts.get('chunk'), [2, 2])
  assert.deepEqual(counts.get('(garbage collector)'), [2, 2])
  assert.deepEqual(counts.get('main'), [0, 6])
  assert.deepEqual(counts.get('work'), [1, 3])
  for (const name of ['(idle)', '(program)', 'now', 'listOnTimeout', '(anonymous /app/main.js:20:5)', 'wrap'])
    assert.equal(counts.get(name)[0], 1, name)
  const text = pprof(handTrace(), '-top', '-sample_index=cpu', '-unit=ms', '-nodecount=100')
  assert.match(text, /Type: cpu/)
  const ms = parseTop(text)
  assert.deepEqual(ms.get('chunk'), [2, 2]) // 1 ms + 1 ms
  assert.deepEqual(ms.get('now'), [1.5, 1.5]) // 105.5 -> 107.001, to µs
})

test("go tool pprof -top: a real trace gives the trace's leaf counts", { skip: goMissing ?? false }, async () => {
  const { trace } = await realTrace()
  const top = parseTop(
    pprof(trace, '-top', '-sample_index=samples', '-nodecount=100000', '-nodefraction=0', '-edgefraction=0'),
  )
  const expected = flatCounts(trace)
  for (const name of ['appFib', 'appSort', 'depChecksum', 'appMain']) {
    if (!expected.has(name)) continue
    assert.equal(top.get(name)?.[0], expected.get(name), name)
  }
  assert.ok(expected.has('appFib') && top.get('appFib')[0] > 0)
  let total = 0
  for (const [flat] of top.values()) total += flat
  assert.equal(total, trace.samples.length)
  // The heaviest functions by self samples agree.
  const heaviest = [...expected.entries()].sort((a, b) => b[1] - a[1])[0]
  assert.equal(top.get(heaviest[0])[0], heaviest[1])
})

test(
  'go tool pprof -top: anonymous functions are rows of their own, filename and start line exact',
  {
    skip: goMissing ?? false,
  },
  () => {
    // Five anonymous functions: two lines of one file, two columns of one line, the same place in two
    // packages' index.js; as one '(anonymous)' row, -top merged them all (issue 42).
    const anonymous = (resourceId, line, column) => ({ name: '', resourceId, line, column })
    const trace = {
      resources: ['file:///app/a.js', 'file:///app/node_modules/x/index.js', 'file:///app/node_modules/y/index.js'],
      frames: [
        { name: 'main', resourceId: 0, line: 1, column: 1 },
        anonymous(0, 3, 5),
        anonymous(0, 9, 1),
        anonymous(0, 9, 20),
        anonymous(1, 4, 2),
        anonymous(2, 4, 2),
      ],
      stacks: [{ frameId: 0 }, ...[1, 2, 3, 4, 5].map((frameId) => ({ frameId, parentId: 0 }))],
      samples: [],
    }
    const counts = [5, 3, 2, 1, 4]
    let t = 0
    counts.forEach((n, i) => {
      for (let k = 0; k < n; k++) trace.samples.push({ timestamp: (t += 1), stackId: i + 1 })
    })
    const top = parseTop(pprof(trace, '-top', '-sample_index=samples', '-nodecount=100'))
    const names = [
      '(anonymous /app/a.js:3:5)',
      '(anonymous /app/a.js:9:1)',
      '(anonymous /app/a.js:9:20)',
      '(anonymous /app/node_modules/x/index.js:4:2)',
      '(anonymous /app/node_modules/y/index.js:4:2)',
    ]
    names.forEach((name, i) => assert.deepEqual(top.get(name), [counts[i], counts[i]], name))
    assert.equal(top.has('(anonymous)'), false)
    assert.deepEqual(
      names,
      trace.frames.slice(1).map((f) => exportedFunctionName(trace, f)),
    )
    // -raw lists each location's function with its own file and start line (s=), as the trace says.
    const raw = pprof(trace, '-raw')
    for (const [name, file, line] of [
      ['(anonymous /app/a.js:9:20)', '/app/a.js', 9],
      ['(anonymous /app/node_modules/y/index.js:4:2)', '/app/node_modules/y/index.js', 4],
    ]) {
      assert.ok(raw.includes(`${name} ${file}:${line} s=${line}`), raw)
    }
    // Each function's system name stays its own, '(anonymous)', beside its exact filename and start line.
    const { profile } = decodePprof(toPprof(trace))
    const text = (i) => profile.stringTable.strings[Number(i)]
    const functions = profile.function.map((f) => [
      text(f.name),
      text(f.systemName),
      text(f.filename),
      Number(f.startLine),
    ])
    assert.deepEqual(
      functions.filter(([name]) => name.startsWith('(anonymous')),
      trace.frames
        .slice(1)
        .map((f, i) => [names[i], '(anonymous)', fileURLToPath(trace.resources[f.resourceId]), f.line]),
    )
  },
)

test('go tool pprof -tags: kind labels on every sample', { skip: goMissing ?? false }, () => {
  const tags = pprof(handTrace(), '-tags', '-sample_index=samples')
  assert.match(tags, /kind: Total 11\b/)
  assert.match(tags, /\b3(\.0)? \(27\.27%\): dependency\n/)
  // Named as summarize names them: the GC's samples `gc`, V8's (program) `other`.
  assert.match(tags, /\b2(\.0)? \(18\.18%\): gc\n/)
  assert.match(tags, /\b1(\.0)? \( 9\.09%\): other\n/)
  // The builtin leaf `now` is charged to the app code that called it, as summarize charges it.
  assert.match(tags, /\b3(\.0)? \(27\.27%\): app\n/)
  assert.match(tags, /\b1(\.0)? \( 9\.09%\): node\n/)
  assert.match(tags, /package: Total 11\b/)
  assert.match(tags, /\b3(\.0)? \(27\.27%\): \(app\)\n/)
  const byPackage = Object.fromEntries(summarize(handTrace(), { by: 'package' }).map((r) => [r.name, r.selfSamples]))
  assert.equal(byPackage['(app)'] ?? byPackage.app, 3)
})

test('go tool pprof -tags: package labels name npm packages', { skip: goMissing ?? false }, () => {
  const tags = pprof(handTrace(), '-tags', '-sample_index=samples')
  assert.match(tags, /\b2(\.0)? \(18\.18%\): lodash\n/)
  assert.match(tags, /\b1(\.0)? \( 9\.09%\): @scope\/pkg\n/)
  const focused = parseTop(pprof(handTrace(), '-top', '-sample_index=samples', '-tagfocus=package=lodash'))
  assert.deepEqual(focused.get('chunk'), [2, 2])
  assert.equal(focused.has('now'), false)
})
