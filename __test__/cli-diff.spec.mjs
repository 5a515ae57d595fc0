// `jsprof diff base new`: finds a function made deliberately slower between two real recordings (one
// a jsprof trace, one a `node --cpu-prof` profile), draws the differential flame graph, and gives CI
// an exit status. Real child processes, bounded in time.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')

// `slowedDown` does `argv[2]` units of work in its own body per round, `steadyWork` always 2: from
// 1 to 6 units its share of the samples grows from about a third to three quarters.
const APP = `
function unit() { let x = 0; for (let i = 0; i < 2e5; i++) x += Math.sqrt(i + x); return x }
function steadyWork() { let x = 0; for (let i = 0; i < 4e5; i++) x += Math.sqrt(i + x); return x }
function slowedDown(n) { let x = 0; for (let i = 0; i < n * 2e5; i++) x += Math.sqrt(i + x); return x }
const n = Number(process.argv[2])
const end = Date.now() + 1500
while (Date.now() < end) { steadyWork(); slowedDown(n) }
`

let tmp
let base
let slower
let again
let moved

function jsprof(args) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: tmp, encoding: 'utf8', timeout: 60_000 })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-diff-test-'))
  const app = path.join(tmp, 'app.js')
  fs.writeFileSync(app, APP)
  base = path.join(tmp, 'base.trace.json')
  assert.equal(jsprof(['record', '-o', base, '--', process.execPath, app, '1']).code, 0)
  again = path.join(tmp, 'again.trace.json')
  assert.equal(jsprof(['record', '-o', again, '--', process.execPath, app, '1']).code, 0)
  const profDir = path.join(tmp, 'prof')
  const p = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, app, '6'], {
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(p.status, 0, p.stderr)
  slower = path.join(profDir, fs.readdirSync(profDir)[0])
  // The same app with its functions moved down a line by an edit, recorded from the same path.
  fs.writeFileSync(app, `// an edit\n${APP}`)
  moved = path.join(tmp, 'moved.trace.json')
  assert.equal(jsprof(['record', '-o', moved, '--', process.execPath, app, '1']).code, 0)
})

after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

describe('jsprof diff', () => {
  test('finds the function made slower: the top row, its self share grown', () => {
    const r = jsprof(['diff', base, slower, '--json', '--top', '1000'])
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.equal(out.by, 'function')
    const top = out.rows[0]
    assert.match(top.name, /^slowedDown \(/)
    assert.ok(top.selfDelta > 0.15, `slowedDown's self share grew: ${JSON.stringify(top)}`)
    assert.ok(Math.abs(top.newSelf - top.baseSelf - top.selfDelta) < 1e-9)
    const steady = out.rows.find((row) => /^steadyWork \(/.test(row.name))
    assert.ok(steady && steady.selfDelta < 0, 'steadyWork is a smaller share of the slower run')
    for (const row of out.rows) {
      for (const k of ['baseSelf', 'newSelf', 'baseTotal', 'newTotal'])
        assert.ok(row[k] >= 0 && row[k] <= 1, `${k} is a share`)
    }
  })

  test('the table names it first, with the change in points', () => {
    const r = jsprof(['diff', base, slower, '--top', '3'])
    assert.equal(r.code, 0, r.stderr)
    const lines = r.stdout.trimEnd().split('\n')
    assert.match(lines[0], /base\.trace\.json \(\d+ samples\) → .*\.cpuprofile \(\d+ samples\), by function/)
    assert.match(lines[2], /^Δ self\s+self base\s+self new\s+Δ total/)
    assert.match(lines[3], /^\s*\+\d+\.\d .*slowedDown \(/)
    assert.equal(lines.length, 6)
  })

  test('--fail-above: exit 1 naming the row when it grew past the threshold, 0 when not', () => {
    const fail = jsprof(['diff', base, slower, '--fail-above', '10'])
    assert.equal(fail.code, 1)
    assert.match(
      fail.stderr,
      /^jsprof: slowedDown \(.*\) grew by \+\d+\.\d points of self time.*, above --fail-above 10\n$/,
    )
    const pass = jsprof(['diff', base, slower, '--fail-above', '90'])
    assert.equal(pass.code, 0, pass.stderr)
    assert.equal(pass.stderr, '')
  })

  test('a profile against itself: nothing changed, --fail-above 0 passes', () => {
    const r = jsprof(['diff', base, base, '--fail-above', '0', '--json'])
    assert.equal(r.code, 0, r.stderr)
    for (const row of JSON.parse(r.stdout).rows) {
      assert.equal(row.selfDelta, 0)
      assert.equal(row.totalDelta, 0)
    }
  })

  test('a function moved by an edit (same name and script, another line) is still one row', () => {
    const r = jsprof(['diff', base, moved, '--json', '--top', '1000'])
    assert.equal(r.code, 0, r.stderr)
    const rows = JSON.parse(r.stdout).rows.filter((row) => /^slowedDown \(/.test(row.name))
    assert.equal(rows.length, 1, JSON.stringify(rows))
    assert.ok(rows[0].baseSelf > 0 && rows[0].newSelf > 0, JSON.stringify(rows[0]))
    assert.match(rows[0].name, /app\.js:5:\d+\)$/, 'named as in the new profile')
  })

  test('--by package compares packages', () => {
    const r = jsprof(['diff', base, again, '--by', 'package', '--json'])
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.ok(out.rows.some((row) => row.kind === 'app'))
    assert.ok(out.rows.every((row) => !/:\d+:\d+\)$/.test(row.name)))
  })

  test('-o writes a differential flame graph: the slowed function red, the steady one blue', () => {
    const svg = path.join(tmp, 'diff.svg')
    const r = jsprof(['diff', base, slower, '-o', svg])
    assert.equal(r.code, 0, r.stderr)
    checkSvg(svg)
  })

  test('the flame graph matches a function moved by an edit too (grey, not new)', () => {
    const svg = path.join(tmp, 'moved.svg')
    const r = jsprof(['diff', base, moved, '-o', svg])
    assert.equal(r.code, 0, r.stderr)
    const text = fs.readFileSync(svg, 'utf8')
    // Its widest box (thin ones under other callers may be new).
    const boxes = [...text.matchAll(/<title>slowedDown [^<]*— (\d+\.\d+)% of the time \(base (\d+\.\d+)%/g)]
    const box = boxes.sort((a, b) => Number(b[1]) - Number(a[1]))[0]
    assert.ok(box && Number(box[2]) > 0, `slowedDown has a base share: ${box && box[0]}`)
  })

  function checkSvg(svg) {
    const r = { code: 0, stderr: `jsprof: wrote ${svg}` }
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /jsprof: wrote .*diff\.svg/)
    const text = fs.readFileSync(svg, 'utf8')
    assert.match(text, /^<\?xml[^>]*\?>\n<svg /)
    assert.match(text, /<\/svg>\n$/)
    // The widest box of the function (it may also appear, thin, under other callers).
    const boxOf = (name) => {
      const re = new RegExp(
        `<title>${name} [^<]*</title><rect [^>]*width="([\\d.]+)"[^>]*fill="rgb\\((\\d+),(\\d+),(\\d+)\\)"`,
        'g',
      )
      const all = [...text.matchAll(re)].sort((a, b) => Number(b[1]) - Number(a[1]))
      return all[0] && [all[0][0], all[0][2], all[0][3], all[0][4]]
    }
    const slowed = boxOf('slowedDown')
    const steady = boxOf('steadyWork')
    assert.ok(slowed && steady, 'both functions are drawn')
    assert.ok(Number(slowed[1]) > Number(slowed[3]), `slowedDown is red: ${slowed[0]}`)
    assert.ok(Number(steady[3]) > Number(steady[1]), `steadyWork is blue: ${steady[0]}`)
    assert.doesNotMatch(text, /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/)
  }

  test('the flame graph shows any name as the trace spells it (a ; stays a ;) and draws a 20,000-deep stack', () => {
    const depth = 20_000
    // A chain of `depth` frames, each level sampled once, under a frame named `a;b <x>`; the new
    // profile spends more of its time at the bottom of the chain.
    const traceOf = (extraAtBottom) => {
      const trace = {
        resources: ['file:///app/deep.js'],
        frames: [{ name: 'a;b <x>', resourceId: 0, line: 1, column: 1 }],
        stacks: [{ frameId: 0 }],
        samples: [],
      }
      for (let i = 1; i <= depth; i++) {
        trace.frames.push({ name: `f${i}`, resourceId: 0, line: i + 1, column: 1 })
        trace.stacks.push({ frameId: i, parentId: i - 1 })
      }
      let t = 0
      for (let i = 0; i <= depth; i++) trace.samples.push({ timestamp: t++, stackId: i })
      for (let i = 0; i < extraAtBottom; i++) trace.samples.push({ timestamp: t++, stackId: depth })
      return trace
    }
    const baseFile = path.join(tmp, 'deep-base.json')
    const newFile = path.join(tmp, 'deep-new.json')
    fs.writeFileSync(baseFile, JSON.stringify(traceOf(0)))
    fs.writeFileSync(newFile, JSON.stringify(traceOf(depth)))
    const svg = path.join(tmp, 'deep-diff.svg')
    const r = jsprof(['diff', baseFile, newFile, '-o', svg, '--top', '1'])
    assert.equal(r.code, 0, r.stderr)
    const text = fs.readFileSync(svg, 'utf8')
    assert.match(text, /<\/svg>\n$/)
    assert.match(
      text,
      /<title>a;b &lt;x&gt; \(\/app\/deep\.js:1:1\) — 100\.00% of the time \(base 100\.00%, \+0\.00 points\)<\/title>/,
    )
    assert.doesNotMatch(text, /a:b/)
    const levels = [...text.matchAll(/<title>f(\d+) \(/g)].length
    assert.equal(levels, depth, 'every level of the chain is drawn once')
    // The bottom of the chain grew most (the deepest red): half of the new profile's time (20,001 of
    // 40,001 samples) against 1/20,001 of the base's.
    const bottom = new RegExp(
      `<title>f${depth} \\([^<]*— 50\\.00% of the time \\(base 0\\.00%, \\+50\\.00 points\\)</title><rect [^>]*fill="rgb\\(250,30,30\\)"`,
    )
    assert.match(text, bottom)
  })

  test('bad input: one line, exit 2', () => {
    for (const [args, pattern] of [
      [['diff', base], /expected two profiles/],
      [['diff', base, path.join(tmp, 'missing.json')], /cannot read .*missing\.json: no such file/],
      [['diff', base, slower, '--fail-above', 'lots'], /--fail-above must be a number/],
      [['diff', base, slower, '--fail-above', '101'], /--fail-above must be a number/],
      [
        ['diff', base, slower, '--by', 'line'],
        /--by must be one of 'package', 'function', 'resource', 'route' or 'label:<key>'/,
      ],
      [['diff', base, slower, '--by', 'label:a-b'], /--by: a label key is .*got "a-b"/],
      [['diff', base, slower, '--top', '0'], /--top must be a positive integer/],
      [['diff', base, slower, 'third'], /unexpected argument 'third'/],
    ]) {
      const r = jsprof(args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr.trimEnd().split('\n').length, 1)
      assert.match(r.stderr, pattern)
      assert.equal(r.stdout, '')
    }
  })
})
