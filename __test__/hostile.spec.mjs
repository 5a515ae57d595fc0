// Hostile data (issue 16): names, URLs and files in a profile come from code nobody here wrote, and
// input files from whoever sent them. Every fixture is made by the test; nothing large is committed.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { assertWellFormed } from './helpers.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const jsprof = require(root)
// The small-trace roads driven directly: a stopping subscription offered its last chunk.
const WINDOW_FIXTURE = path.join(root, '__test__', 'fixtures', 'window.cjs')
const { harvestOf, stoppedWindow } = require(WINDOW_FIXTURE)

let tmp
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-hostile-'))
})
after(() => fs.rmSync(tmp, { recursive: true, force: true }))

function run(args, options = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: tmp, encoding: 'utf8', timeout: 30_000, ...options })
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

/** A trace whose frames are named `names`, each sampled `each` times, in a resource named `url`. */
function traceOf(names, { url = 'file:///app/a.js', each = 5 } = {}) {
  const trace = { resources: [url], frames: [], stacks: [], samples: [] }
  names.forEach((name, i) => {
    trace.frames.push({ name, resourceId: 0, line: 1, column: 1 })
    trace.stacks.push({ frameId: i })
  })
  let t = 0
  for (let k = 0; k < each; k++) names.forEach((_, i) => trace.samples.push({ timestamp: (t += 10), stackId: i }))
  return trace
}

function writeTrace(name, trace) {
  const file = path.join(tmp, name)
  fs.writeFileSync(file, JSON.stringify(trace))
  return file
}

// Terminal escapes (OSC title, clear screen, an OSC 8 link), a bidi override, a forged row.
const EVIL = [
  '\x1b]0;owned\x07t',
  '\x1b[2Jclear',
  '\x1b]8;;http://x\x07ln\x1b]8;;\x07',
  'rtl\u202egnp.js',
  'a\nforged 99.9%',
  'nul\0del\x7fc1\x9b',
]
// What no terminal may receive from a name: C0 (but the table's own \n), DEL, C1, bidi controls.

const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/

test('report and diff show controls, bidi overrides and newlines in names as visible escapes', () => {
  const file = writeTrace('evil\x1b[31m.json', traceOf(EVIL, { url: 'file:///app/\x1b]0;x\x07.js' }))
  const byResource = run(['report', file, '--by', 'resource'])
  assert.equal(byResource.code, 0, byResource.stderr)
  assert.doesNotMatch(byResource.stdout, UNSAFE)
  assert.match(byResource.stdout, /file:\/\/\/app\/\\x1b\]0;x\\x07\.js/)
  assert.match(byResource.stdout, /evil\\x1b\[31m\.json: 30 samples/)
  for (const args of [
    ['report', file, '--by', 'function'],
    ['diff', file, file, '--by', 'function'],
  ]) {
    const r = run(args)
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stdout, UNSAFE, `${args[0]}: ${JSON.stringify(r.stdout)}`)
    assert.match(r.stdout, /\\x1b\]0;owned\\x07t/)
    assert.match(r.stdout, /rtl\\u\{202e\}gnp\.js/)
    // The newline in a name did not start a row of its own.
    const rows = r.stdout.split('\n').filter((l) => l.includes('forged'))
    assert.equal(rows.length, 1)
    assert.match(rows[0], /a\\x0aforged 99\.9%/)
  }
})

test('error messages quote file names and bad input as escapes, on one line', () => {
  const bad = path.join(tmp, 'bad\x1b]0;t\x07.json')
  fs.writeFileSync(bad, '{"resources": [], "frames": [], "stacks": [], "samples": [\x1b[2J')
  const r = run(['report', bad])
  assert.equal(r.code, 2)
  assert.doesNotMatch(r.stderr, UNSAFE)
  assert.equal(r.stderr.trimEnd().split('\n').length, 1, r.stderr)
  assert.match(r.stderr, /bad\\x1b\]0;t\\x07\.json/)
})

test('stdout: a closed pipe ends quietly (exit 0), a full device is one line and exit 1', () => {
  const names = Array.from({ length: 3000 }, (_, i) => `function${i}`)
  const file = writeTrace('many.json', traceOf(names, { each: 1 }))
  // `| head -1`: the reader goes away after the first line.
  const piped = spawnSync(
    'sh',
    [
      '-c',
      `"${process.execPath}" "${BIN}" report many.json --by function --top 3000 | head -1; exit "\${PIPESTATUS:-0}"`,
    ],
    {
      cwd: tmp,
      encoding: 'utf8',
    },
  )
  assert.equal(piped.status, 0)
  assert.match(piped.stdout, /many\.json: 3000 samples/)
  assert.equal(piped.stderr, '')
  if (fs.existsSync('/dev/full')) {
    const full = fs.openSync('/dev/full', 'w')
    try {
      const r = spawnSync(process.execPath, [BIN, 'report', file], {
        cwd: tmp,
        encoding: 'utf8',
        stdio: ['ignore', full, 'pipe'],
      })
      assert.equal(r.status, 1)
      assert.equal(r.stderr, 'jsprof: cannot write to stdout: no space left on the device\n')
    } finally {
      fs.closeSync(full)
    }
  }
})

test('inputs: devices, directories and sockets are refused up front; pipes and stdin are read', () => {
  for (const [file, why] of [
    ['/dev/zero', 'is a device, not a file or a pipe'],
    ['/dev/null', 'is a device, not a file or a pipe'],
    [tmp, 'is a directory'],
    [path.join(tmp, 'none.json'), 'no such file or directory'],
  ]) {
    if (!fs.existsSync(file) && file.startsWith('/dev/')) continue
    const r = run(['report', file])
    assert.equal(r.code, 2, `${file}: ${r.stderr}`)
    assert.equal(r.stderr, `jsprof: cannot read ${file}: ${why}\n`)
  }
  const file = writeTrace('ok.json', traceOf(['handler']))
  const text = fs.readFileSync(file, 'utf8')
  const viaStdin = run(['report', '-'], { input: text })
  assert.equal(viaStdin.code, 0, viaStdin.stderr)
  assert.match(viaStdin.stdout, /^-: 5 samples/)
  if (process.platform !== 'win32') {
    const fifo = path.join(tmp, 'in.fifo')
    spawnSync('mkfifo', [fifo])
    const r = spawnSync('sh', ['-c', `cat ok.json > in.fifo & "${process.execPath}" "${BIN}" report in.fifo`], {
      cwd: tmp,
      encoding: 'utf8',
      timeout: 30_000,
    })
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /in\.fifo: 5 samples/)
  }
})

test('a private character device made with mknod is refused, not read', (t) => {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return t.skip('needs root on Linux to mknod')
  const device = path.join(tmp, 'zero-device')
  const made = spawnSync('mknod', [device, 'c', '1', '5']) // the same device as /dev/zero
  if (made.status !== 0) return t.skip(`mknod failed: ${made.stderr}`)
  const r = run(['report', device])
  assert.equal(r.code, 2)
  assert.equal(r.stderr, `jsprof: cannot read ${device}: is a device, not a file or a pipe\n`)
})

test('attribution: a package.json that is a FIFO or a symlink to /dev/zero is skipped, never waited on', (t) => {
  if (process.platform === 'win32') return t.skip('no FIFOs')
  const outer = path.join(tmp, 'outer')
  for (const name of ['fifo-app', 'zero-app']) fs.mkdirSync(path.join(outer, name), { recursive: true })
  fs.writeFileSync(path.join(outer, 'package.json'), JSON.stringify({ name: 'outer-app', version: '1.0.0' }))
  spawnSync('mkfifo', [path.join(outer, 'fifo-app', 'package.json')])
  fs.symlinkSync('/dev/zero', path.join(outer, 'zero-app', 'package.json'))
  // In a child, so that a hang is a failed test (timeout), not a hung test run.
  const script = `
    const j = require(${JSON.stringify(root)})
    const out = ['fifo-app', 'zero-app'].map((d) => j.attribute(${JSON.stringify(outer)} + '/' + d + '/index.js').package)
    const trace = { resources: [${JSON.stringify(`file://${outer}/fifo-app/index.js`)}], frames: [{ name: 'f', resourceId: 0 }], stacks: [{ frameId: 0 }], samples: [{ timestamp: 1, stackId: 0 }] }
    out.push(j.summarize(trace)[0].name, typeof j.toPprof(trace).length)
    console.log(JSON.stringify(out))`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 })
  assert.equal(r.signal, null, 'no hang')
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), ['outer-app', 'outer-app', 'outer-app', 'number'])
})

test('attribute() of a crafted 100,000-component path does bounded work', () => {
  const deep = `/${'a/'.repeat(100_000)}index.js`
  const before =
    jsprof.attribute('/nowhere/x.js') && require(path.join(root, 'lib', 'native.js')).binding.attributionReads()
  assert.deepEqual(jsprof.attribute(deep), { kind: 'app' })
  assert.equal(jsprof.attribute(`/${'a/'.repeat(100_000)}node_modules/lodash/index.js`).package, 'lodash')
  const reads = require(path.join(root, 'lib', 'native.js')).binding.attributionReads() - before
  assert.equal(reads, 0, 'a path no filesystem can open is not looked up')
})

const EXPORTERS = ['toCpuProfile', 'toPprof', 'toGeckoProfile', 'toSpeedscope', 'toCollapsed', 'toFlameGraph']

test('every exporter and summarize accept what JSON.parse accepts: a lone surrogate is shown, not thrown', () => {
  const trace = JSON.parse(
    '{"resources":["file:///a\\ud800.js"],"frames":[{"name":"f\\udc00x","resourceId":0,"line":1,"column":1}],"stacks":[{"frameId":0}],"samples":[{"timestamp":1,"stackId":0},{"timestamp":2,"stackId":0}]}',
  )
  for (const name of EXPORTERS) assert.doesNotThrow(() => jsprof[name](trace), name)
  assert.match(jsprof.toCollapsed(trace), /^f\\u\{dc00\}x \(\/a\\u\{d800\}\.js:1:1\) 2000$/m)
  const [row] = jsprof.summarize(trace, { by: 'function' })
  assert.equal(row.selfSamples, 2)
})

test('a timestamp no output can hold is a TypeError naming the sample, never null in a number field', () => {
  const trace = {
    resources: [],
    frames: [{ name: 'f' }],
    stacks: [{ frameId: 0 }],
    samples: [
      { timestamp: 0, stackId: 0 },
      { timestamp: 1e305, stackId: 0 },
    ],
  }
  for (const name of [...EXPORTERS, 'summarize']) {
    assert.throws(
      () => jsprof[name](trace),
      (err) =>
        err instanceof TypeError &&
        /samples\[1\]\.timestamp 1e\+?305 is further from the time origin/.test(err.message),
      name,
    )
  }
  // The largest that fits: every number in every output is a number.
  trace.samples[1].timestamp = 1e12
  const finite = (values, what) => values.forEach((v, i) => assert.ok(Number.isFinite(v), `${what}[${i}] = ${v}`))
  const cpu = jsprof.toCpuProfile(trace)
  finite([...cpu.timeDeltas, cpu.startTime, cpu.endTime], 'cpuprofile')
  const [sp] = jsprof.toSpeedscope(trace).profiles
  finite([...sp.weights, sp.startValue, sp.endValue], 'speedscope')
  finite(jsprof.toGeckoProfile(trace).threads[0].samples.time, 'gecko samples.time')
  for (const row of jsprof.summarize(trace)) finite([row.selfTime, row.totalTime], 'summarize')
})

test('labels that break the rule are one TypeError in summarize and every exporter, and an input error in the CLI', () => {
  const labelled = (labelSets) => {
    const trace = traceOf(['handler'], { each: 2 })
    trace.jsprof = { labelSets, sampleLabels: trace.samples.map(() => 0) }
    return trace
  }
  const cases = {
    // A key JS cannot hold as an own key of a plain object, reserved like every `__` key.
    proto: labelled(JSON.parse('[{"__proto__":"x"}]')),
    reserved: labelled([{ __name__: 'process_cpu' }]),
    labels33: labelled([Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']))]),
    value1025: labelled([{ a: 'v'.repeat(1025) }]),
    sets65537: labelled(Array.from({ length: 65_537 }, (_, i) => ({ a: `v${i}` }))),
  }
  for (const [what, trace] of Object.entries(cases)) {
    for (const name of [...EXPORTERS, 'toOtlpProfiles', 'summarize']) {
      assert.throws(() => jsprof[name](trace), TypeError, `${name}: ${what}`)
    }
    const file = writeTrace(`labels-${what}.json`, trace)
    for (const args of [
      ['convert', file, '--to', 'pprof', '-o', `${file}.pb.gz`],
      ['report', file],
    ]) {
      const r = run(args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      assert.match(r.stderr, /label/, r.stderr)
      assert.equal(fs.existsSync(`${file}.pb.gz`), false)
    }
  }
})

/** A small V8 `.heapprofile`: one function, `keep`, holding `selfSize` bytes in one sample of `size`. */
function v8HeapProfile(selfSize, size) {
  return {
    head: {
      callFrame: { functionName: '(root)', scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 },
      selfSize: 0,
      id: 1,
      children: [
        {
          callFrame: { functionName: 'keep', scriptId: '1', url: 'file:///app/a.js', lineNumber: 0, columnNumber: 0 },
          selfSize,
          id: 2,
          children: [],
        },
      ],
    },
    samples: [{ size, nodeId: 2, ordinal: 1 }],
  }
}

test('--by: one rule for report, diff and summarize; what it refuses is a usage error, on a trace or a heap profile', () => {
  const trace = traceOf(['handler'])
  trace.jsprof = { labelSets: [{ tenant: 'a' }], sampleLabels: trace.samples.map(() => 0) }
  const cpu = writeTrace('by.json', trace)
  const heapProfile = jsprof.fromHeapProfile(v8HeapProfile(4096, 4096))
  const heap = writeTrace('by.heap.json', heapProfile)
  const refused = [
    [['report', cpu, '--by', 'label:a-b'], /--by: a label key is .*got "a-b"/],
    [['report', cpu, '--by', 'label:__proto__'], /--by: a label key/],
    [
      ['report', cpu, '--by', 'bogus'],
      /--by must be one of 'package', 'function', 'resource', 'route' or 'label:<key>', got 'bogus'/,
    ],
    [['report', cpu, '--by', '\x1b[2Jx'], /got '\\x1b\[2Jx'/],
    [['diff', cpu, cpu, '--by', 'label:a.b'], /--by: a label key/],
    [
      ['report', heap, '--by', 'route'],
      /--by must be one of .* for a heap profile \(it has no labels\), got 'label:route'/,
    ],
    [['report', heap, '--by', 'label:tenant'], /for a heap profile/],
    [['diff', heap, heap, '--by', 'label:tenant'], /for a heap profile/],
    [['report', heap, '--by', 'label:a-b'], /--by: a label key/],
  ]
  for (const [args, pattern] of refused) {
    const r = run(args)
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
    assert.match(r.stderr, pattern)
    assert.doesNotMatch(r.stderr, /internal error/)
    assert.doesNotMatch(r.stderr, UNSAFE)
  }
  assert.equal(run(['report', cpu, '--by', 'route']).code, 0)
  assert.equal(run(['report', cpu, '--by', 'label:tenant']).code, 0)
  assert.equal(run(['report', heap, '--by', 'resource']).code, 0)
  assert.equal(run(['diff', heap, heap, '--by', 'package']).code, 0)
  // summarize() by the same rule.
  assert.throws(() => jsprof.summarize(heapProfile, { by: 'label:tenant' }), {
    name: 'RangeError',
    message: /^summarize: by must be one of .* for a heap profile/,
  })
  assert.throws(() => jsprof.summarize(trace, { by: 'label:a-b' }), { name: 'TypeError', message: /^summarize: by: / })
  assert.throws(() => jsprof.summarize(heapProfile, { by: 7 }), {
    name: 'TypeError',
    message: /options\.by must be a string/,
  })
})

test("a heap profile's bytes are one rule in both readers: whole, from 0 to 2^53", () => {
  const v8 = v8HeapProfile
  const ours = jsprof.fromHeapProfile(v8(4096, 4096))
  for (const bad of [1e308, 2 ** 53 + 2, 1.5, -1]) {
    const v8Bad = [v8(bad, 4096), v8(4096, bad)]
    for (const profile of v8Bad) {
      assert.throws(() => jsprof.fromHeapProfile(profile), { name: 'TypeError', message: /is not a number of bytes/ })
    }
    const oursBad = structuredClone(ours)
    oursBad.samples[0].size = bad
    for (const fn of ['summarize', 'toPprof', 'toCollapsed', 'toHeapProfile']) {
      assert.throws(() => jsprof[fn](oursBad), { name: 'TypeError', message: /is not a number of bytes/ }, fn)
    }
    for (const [name, value] of [
      [`bad-${bad}.heapprofile`, v8Bad[0]],
      [`bad-${bad}.heap.json`, oursBad],
    ]) {
      const r = run(['report', writeTrace(name, value)])
      assert.equal(r.code, 2, r.stderr)
      assert.match(r.stderr, /is not a number of bytes \(a whole number from 0 to 2\^53\)\n$/)
      assert.equal(r.stderr.trim().split('\n').length, 1)
    }
  }
  // 2^53 itself is bytes in both.
  const max = jsprof.fromHeapProfile(v8(2 ** 53, 2 ** 53))
  assert.equal(max.samples[0].size, 2 ** 53)
  assert.equal(jsprof.toHeapProfile(max).head.children[0].selfSize, 2 ** 53)
})

/** A V8 `.heapprofile`'s text whose tree is a chain `depth` frames deep under its root (4 KiB at the leaf). */
function deepHeapProfileText(depth) {
  const node = (id, name, url, line, selfSize) =>
    `{"callFrame":{"functionName":"${name}","scriptId":"1","url":"${url}","lineNumber":${line},"columnNumber":0},"selfSize":${selfSize},"id":${id},"children":[`
  const parts = [`{"head":${node(1, '(root)', '', -1, 0)}`]
  for (let i = 1; i <= depth; i++)
    parts.push(node(i + 1, `f${i % 7}`, 'file:///app/deep.js', i % 50, i === depth ? 4096 : 0))
  parts.push(']}'.repeat(depth + 1), `,"samples":[{"size":4096,"nodeId":${depth + 1},"ordinal":1}]}`)
  return parts.join('')
}

test('toHeapProfile gives an object JSON.stringify serializes, and refuses a deeper tree, which convert writes as text', () => {
  // The deepest a HeapProfiler takes (stackDepth 1024): an object that stringifies, even called deep.
  const deepest = jsprof.fromHeapProfile(deepHeapProfileText(1024))
  const nest = (k) => (k === 0 ? JSON.stringify(jsprof.toHeapProfile(deepest)) : nest(k - 1))
  assert.deepEqual(jsprof.fromHeapProfile(nest(500)).samples, deepest.samples)
  // 10^5 deep (a hand-made or foreign file): read, summarized, exported; as an object, a clear RangeError.
  const text = deepHeapProfileText(100_000)
  const deep = jsprof.fromHeapProfile(text)
  assert.equal(deep.stacks.length, 100_000)
  assert.equal(jsprof.summarize(deep, { by: 'function' })[0].selfSize, 4096)
  assert.throws(() => jsprof.toHeapProfile(deep), {
    name: 'RangeError',
    message:
      /^toHeapProfile: this profile's \.heapprofile tree is 100001 nodes deep, more than the 1025 an object may nest .*jsprof convert --to heapprofile/,
  })
  const file = path.join(tmp, 'deep.heapprofile')
  fs.writeFileSync(file, text)
  const r = run(['convert', file, '--to', 'heapprofile', '-o', 'deep-back.heapprofile'])
  assert.equal(r.code, 0, r.stderr)
  const back = jsprof.fromHeapProfile(fs.readFileSync(path.join(tmp, 'deep-back.heapprofile')))
  assert.equal(back.stacks.length, 100_000)
  // toCpuProfile's object is flat (nodes with child ids), so any depth stringifies.
  const trace = { resources: ['file:///app/deep.js'], frames: [{ name: 'f', resourceId: 0, line: 1, column: 1 }] }
  trace.stacks = Array.from({ length: 100_000 }, (_, i) => (i === 0 ? { frameId: 0 } : { frameId: 0, parentId: i - 1 }))
  trace.samples = [{ timestamp: 0, stackId: 99_999 }]
  assert.ok(JSON.stringify(jsprof.toCpuProfile(trace)).length > 100_000)
})

test('outputs: symlinks written through, pipes and devices written to, files never replaced unasked, inputs never', (t) => {
  const input = writeTrace('in.json', traceOf(['handler']))
  const derived = path.join(tmp, 'in.cpuprofile')
  fs.writeFileSync(derived, 'precious')
  // A default name beside the input does not replace what is there; -o naming it, or --force, does.
  let r = run(['convert', input, '--to', 'cpuprofile'])
  assert.equal(r.code, 1)
  assert.equal(r.stderr, `jsprof: ${derived} exists: name it with -o, or add --force, to replace it\n`)
  assert.equal(fs.readFileSync(derived, 'utf8'), 'precious')
  assert.equal(run(['convert', input, '--to', 'cpuprofile', '--force']).code, 0)
  assert.ok(JSON.parse(fs.readFileSync(derived, 'utf8')).nodes)
  fs.writeFileSync(derived, 'precious')
  assert.equal(run(['convert', input, '--to', 'cpuprofile', '-o', derived]).code, 0)
  assert.ok(JSON.parse(fs.readFileSync(derived, 'utf8')).nodes)
  // The input itself, under any name: refused, even with --force.
  fs.symlinkSync(input, path.join(tmp, 'alias.json'))
  for (const out of [input, path.join(tmp, 'alias.json')]) {
    r = run(['convert', input, '--to', 'collapsed', '-o', out, '--force'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /is the input .*in\.json: refusing to write over it/)
  }
  assert.ok(JSON.parse(fs.readFileSync(input, 'utf8')).samples)
  // A symlink: its target gets the data, the link stays.
  const link = path.join(tmp, 'link.svg')
  fs.symlinkSync('target.svg', link)
  assert.equal(run(['flamegraph', input, '-o', link]).code, 0)
  assert.ok(fs.lstatSync(link).isSymbolicLink())
  assert.match(fs.readFileSync(path.join(tmp, 'target.svg'), 'utf8'), /<svg/)
  // /dev/null stays a device.
  assert.equal(run(['convert', input, '--to', 'collapsed', '-o', '/dev/null']).code, 0)
  assert.ok(fs.statSync('/dev/null').isCharacterDevice())
  if (process.platform === 'win32') return t.skip('no FIFOs')
  // A FIFO: its reader gets the data; it stays a FIFO.
  const fifo = path.join(tmp, 'out.fifo')
  spawnSync('mkfifo', [fifo])
  r = spawnSync(
    'sh',
    ['-c', `cat out.fifo > got.txt & "${process.execPath}" "${BIN}" convert in.json --to collapsed -o out.fifo; wait`],
    { cwd: tmp, encoding: 'utf8', timeout: 30_000 },
  )
  assert.equal(r.status, 0, r.stderr)
  assert.ok(fs.statSync(fifo).isFIFO())
  assert.match(fs.readFileSync(path.join(tmp, 'got.txt'), 'utf8'), /^handler .* 50000$/m)
})

test('record -o a private character device (mknod, as root) writes to it and leaves the device node', (t) => {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return t.skip('needs root on Linux to mknod')
  const device = path.join(tmp, 'null-device')
  const made = spawnSync('mknod', [device, 'c', '1', '3']) // the same device as /dev/null
  if (made.status !== 0) return t.skip(`mknod failed: ${made.stderr}`)
  const app = path.join(tmp, 'app.js')
  fs.writeFileSync(app, 'let x = 0; for (let i = 0; i < 1e7; i++) x += i')
  const r = run(['record', '-o', device, '--', process.execPath, app])
  assert.equal(r.code, 0, r.stderr)
  assert.ok(fs.statSync(device).isCharacterDevice(), 'still a device node')
  assert.deepEqual(
    fs.readdirSync(tmp).filter((f) => f.endsWith('.tmp')),
    [],
  )
})

test("negative numbers get the option's own plain message", () => {
  const file = writeTrace('neg.json', traceOf(['f']))
  const r = run(['report', file, '--top', '-3'])
  assert.equal(r.code, 2)
  assert.equal(r.stderr, "jsprof: --top must be a positive integer, got '-3' (see 'jsprof report --help')\n")
})

test('deep stacks: a 20,000-deep chain is summarized and drawn; formats that repeat whole stacks refuse with a RangeError', () => {
  const depth = 20_000
  const trace = { resources: ['file:///app/deep.js'], frames: [], stacks: [], samples: [] }
  for (let i = 0; i < depth; i++) {
    trace.frames.push({ name: `f${i}`, resourceId: 0, line: i + 1, column: 1 })
    trace.stacks.push(i === 0 ? { frameId: 0 } : { frameId: i, parentId: i - 1 })
    trace.samples.push({ timestamp: i, stackId: i })
  }
  const rows = jsprof.summarize(trace, { by: 'function' })
  assert.equal(rows.length, depth)
  assert.equal(rows.find((r) => r.name.startsWith('f0 ')).totalSamples, depth)
  assert.equal(jsprof.toCpuProfile(trace).samples.length, depth)
  assert.equal(jsprof.toGeckoProfile(trace).threads[0].samples.length, depth)
  assert.match(jsprof.toFlameGraph(trace), /<\/svg>\s*$/)
  for (const name of ['toPprof', 'toSpeedscope', 'toCollapsed']) {
    assert.throws(
      () => jsprof[name](trace),
      (err) =>
        err instanceof RangeError && /hold 200010000 frames in all, more than its limit of 50000000/.test(err.message),
      name,
    )
  }
  // The CLI says so in one line (exit 1, nothing written), not as an internal error.
  const file = writeTrace('deep.json', trace)
  for (const to of ['speedscope', 'collapsed', 'pprof']) {
    const out = path.join(tmp, `deep-out.${to}`)
    const r = run(['convert', file, '--to', to, '-o', out])
    assert.equal(r.code, 1, r.stderr)
    assert.match(
      r.stderr,
      new RegExp(
        `^jsprof: cannot write --to ${to}: to\\w+ repeats whole stacks, and this trace's stacks hold 200010000 frames in all, more than its limit of 50000000: [^\\n]*\\n$`,
      ),
    )
    assert.equal(fs.existsSync(out), false)
  }
  const r = run(['convert', file, '--to', 'gecko', '-o', path.join(tmp, 'deep-out.gecko.json')])
  assert.equal(r.code, 0, r.stderr)
})

test('deep stacks: a 100,000-deep V8 profile converts, and is summarized, exported and drawn', () => {
  // A chain of nested calls as V8 writes it (a flat node list, each node its only child's parent): no
  // step may recurse per frame (a Rust stack overflow aborts the process, no catch_unwind stops it).
  const depth = 100_000
  const nodes = []
  for (let i = 0; i < depth; i++) {
    nodes.push({
      id: i + 1,
      callFrame: { functionName: `f${i}`, scriptId: '1', url: 'file:///app/deep.js', lineNumber: i, columnNumber: 0 },
      hitCount: 0,
      children: i + 1 < depth ? [i + 2] : [],
    })
  }
  const profile = { nodes, startTime: 0, endTime: 3000, samples: [depth, 1, depth], timeDeltas: [0, 1000, 1000] }
  const trace = jsprof.fromCpuProfile(JSON.stringify(profile))
  assert.deepEqual(jsprof.fromCpuProfile(profile), trace, 'the same trace from the object as from its text')
  assert.equal(trace.stacks.length, depth)
  assert.equal(trace.samples.length, 3)
  const leaf = trace.samples[0].stackId
  assert.equal(trace.frames[trace.stacks[leaf].frameId].name, `f${depth - 1}`)
  const rows = jsprof.summarize(trace, { by: 'function' })
  assert.equal(rows.length, depth)
  assert.equal(rows.find((r) => r.name.startsWith('f0 ')).totalSamples, 3)
  const back = jsprof.toCpuProfile(trace)
  assert.equal(back.nodes.length, depth + 1, 'the chain under a (root) node')
  assert.equal(jsprof.toGeckoProfile(trace).threads[0].samples.length, 3)
  assert.match(jsprof.toFlameGraph(trace), /<\/svg>\s*$/)
})

test('deep stacks: a 100,000-deep chunk with hostile names, built at the harvest and through a Recording, is the JSON road trace', () => {
  // Past the columns' buffers (they grow, the trace waits in the thread's string table) and past the
  // table's cap (65,536 strings: it starts again): every small-trace road gives what the JSON text did.
  const depth = 100_000
  const hostile = ['\u0000nul \u001b[31mred\u001b[0m', 'lone \ud800 surrogate', '😀 wide', 'x'.repeat(5000), '']
  const nodes = [
    { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1, columnNumber: -1 }, children: [2] },
  ]
  for (let i = 0; i < depth; i++) {
    const name = i % 1000 < hostile.length ? `${hostile[i % 1000]}${i}` : `f${i}`
    const url = i % 7 === 0 ? `file:///app/\u0007bell ${i % 50}.js` : 'file:///app/deep.js'
    nodes.push({
      id: i + 2,
      callFrame: { functionName: name, url, lineNumber: i, columnNumber: 2 ** 31 - 1 },
      children: i + 1 < depth ? [i + 3] : [],
    })
  }
  const times = [1000, 2000, 3000]
  const profile = {
    nodes,
    startTime: 0,
    endTime: 4000,
    samples: [depth + 1, 500, depth + 1],
    timeDeltas: [1000, 1000, 1000],
  }
  const harvested = harvestOf(profile)
  assert.deepEqual([...harvested.times], times)
  const window = (early) => stoppedWindow(harvested, early)
  const viaJson = window(undefined)
  const reference = JSON.parse(viaJson.recording.buildJson(0))
  const viaRecording = window(undefined)
  const built = window({ originUs: 0, clock: undefined })
  assert.equal(built.recording, null, 'built at the harvest, no Recording')
  const fromRecording = viaRecording.trace(0)
  assert.deepEqual(fromRecording, reference)
  assert.deepEqual(built.trace(0), reference)
  assertWellFormed(reference)
  assert.equal(reference.stacks.length, depth)
  assert.equal(reference.samples.length, 3)
  const names = new Set(reference.frames.map((f) => f.name))
  assert.ok(names.has(`${hostile[0]}0`) && names.has(`${hostile[3]}3`), 'control characters and long names kept')
  assert.ok(
    reference.frames.every((f) => f.column === 2 ** 31 - 1),
    'the largest column V8 gives, as the reader clamps it, whole',
  )
})

test("a small trace whose only new string is an empty name (an anonymous function's) is built, on every road", () => {
  // Each thread's string table sends only strings JS lacks; when the only new one is '' the text that
  // carries them is empty. It crossed as null, and building the trace threw: a Profiler's stop()
  // rejected with a TypeError (seen as a crashed server in the per-request matrix). A process of its
  // own per road: the table must not know '' yet.
  const script = (early) => `
    const { harvestOf, stoppedWindow } = require(${JSON.stringify(WINDOW_FIXTURE)})
    const frame = (id, functionName, url, children) =>
      ({ id, callFrame: { functionName, url, lineNumber: id, columnNumber: 1 }, children })
    const traceOf = (nodes) => {
      const profile = { nodes, startTime: 0, endTime: 4000, samples: [2, 3, 2], timeDeltas: [1000, 1000, 1000] }
      const sub = stoppedWindow(harvestOf(profile), ${early})
      return { builtAtHarvest: sub.recording === null, trace: sub.trace(0) }
    }
    const top = frame(1, '(root)', '', [2])
    // First a trace of named frames only: its names and URL cross. Then one that adds a frame named ''
    // in the same script: the only new string.
    const first = traceOf([top, frame(2, 'main', 'file:///app/a.js', [3]), frame(3, 'work', 'file:///app/a.js', [])])
    const second = traceOf([top, frame(2, 'main', 'file:///app/a.js', [3]), frame(3, '', 'file:///app/a.js', [])])
    process.stdout.write(JSON.stringify({ first, second }))
  `
  for (const early of ['undefined', '{ originUs: 0, clock: undefined }']) {
    const r = spawnSync(process.execPath, ['-e', script(early)], { encoding: 'utf8', timeout: 30_000 })
    assert.equal(r.status, 0, r.stderr)
    const { first, second } = JSON.parse(r.stdout)
    assert.equal(second.builtAtHarvest, early !== 'undefined', `early: ${early}`)
    const names = (trace) => trace.frames.map((f) => f.name)
    assert.deepEqual(names(first.trace), ['main', 'work'])
    assert.deepEqual(names(second.trace), ['main', ''])
    assert.deepEqual(second.trace.resources, ['file:///app/a.js'])
    assert.deepEqual(
      second.trace.samples.map((s) => second.trace.frames[second.trace.stacks[s.stackId].frameId].name),
      ['main', '', 'main'],
    )
    assertWellFormed(second.trace)
  }
})
