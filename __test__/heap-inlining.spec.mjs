// Heap profiles that charge the allocating code, also when V8 would inline it (issue 43): the leak
// program of the issue (__test__/fixtures/inline-leak: a one-line helper of the npm package `leakypkg`,
// called 30,000 times amid collected garbage) profiled by `jsprof record --heap` (inlining off by
// default) and by `new HeapProfiler({ inlining: false })` after a warm-up that inlined the helper; read by
// `jsprof report` and `go tool pprof`. And V8's own trace of its inlining decisions
// (--trace-turbo-inlining) says when the mode is on and that the last consumer of all threads ends it.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { goMissing } from './helpers.mjs'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const FIXTURE = path.join(root, '__test__', 'fixtures', 'inline-leak')
const jsprof = require(root)

let tmp
before(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-heap-inlining-')))
  // The app and its dependency, laid out as npm installs them.
  fs.cpSync(path.join(FIXTURE, 'leakypkg'), path.join(tmp, 'node_modules', 'leakypkg'), { recursive: true })
  fs.copyFileSync(path.join(FIXTURE, 'app.js'), path.join(tmp, 'app.js'))
  fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'inline-leak-app', version: '1.0.0' }))
})
after(() => fs.rmSync(tmp, { recursive: true, force: true }))

const cli = (...args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd: tmp })

/** Runs the leak program with a HeapProfiler of `options` from after its warm-up; its heap profile. */
function profiledInProcess(options, name) {
  const file = path.join(tmp, `${name}.heap.json`)
  const r = spawnSync(process.execPath, ['app.js'], {
    cwd: tmp,
    encoding: 'utf8',
    env: { ...process.env, JSPROF_PACKAGE: root, JSPROF_HEAP: file, JSPROF_HEAP_OPTIONS: JSON.stringify(options) },
  })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /^kept 35000 entries/)
  return file
}

/** `jsprof record --heap` of the leak program (`extra`: more options); its heap profile. */
function recorded(extra, name) {
  const out = path.join(tmp, `${name}.json`)
  const r = cli('record', '--heap', '--heap-interval', '16384', ...extra, '-o', out, '--', process.execPath, 'app.js')
  assert.equal(r.status, 0, r.stderr)
  return path.join(tmp, `${name}.heap.json`)
}

/** The checks of the "done when": ≥ 90% to leakyRemember, leakypkg first by package, pprof's top. */
function chargesTheHelper(file) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'))
  assert.equal(profile.jsprof.heap.inlining, false)
  const byFunction = JSON.parse(cli('report', file, '--by', 'function', '--json', '--top', '1000').stdout)
  const total = byFunction.rows.reduce((sum, row) => sum + row.selfSize, 0)
  const helper = byFunction.rows.find((row) =>
    /^leakyRemember \(.*node_modules\/leakypkg\/index\.js:6:\d+\)$/.test(row.name),
  )
  assert.ok(helper, JSON.stringify(byFunction.rows.slice(0, 5)))
  assert.ok(helper.selfSize >= 0.9 * total, `leakyRemember holds ${helper.selfSize} of ${total} bytes`)
  const byPackage = JSON.parse(cli('report', file, '--by', 'package', '--json').stdout)
  assert.equal(byPackage.rows[0].name, 'leakypkg', JSON.stringify(byPackage.rows))
  assert.equal(byPackage.inlining, false)
  // Said with inlining off: no note about inlined helpers.
  assert.doesNotMatch(cli('report', file).stdout, /^note:/m)
  if (goMissing) return
  const pb = file.replace(/\.json$/, '.pb.gz')
  fs.writeFileSync(pb, jsprof.toPprof(profile))
  const top = execFileSync('go', ['tool', 'pprof', '-sample_index=space', '-top', pb], { encoding: 'utf8' })
  const rows = top.split('\n').filter((l) => /^\s*[\d.]+[kKMG]?B\s/.test(l))
  assert.match(rows[0], /\sleakyRemember$/, top)
}

test('jsprof record --heap charges the leak to the one-line helper that makes it (inlining off by default)', () => {
  chargesTheHelper(recorded([], 'record'))
})

test('new HeapProfiler({ inlining: false }) after a warm-up charges the helper V8 had inlined', () => {
  chargesTheHelper(profiledInProcess({ inlining: false }, 'in-process'))
})

test('with inlining, the profile says so and jsprof report says once what it means for small helpers', () => {
  for (const file of [profiledInProcess({}, 'inlining'), recorded(['--heap-inlining'], 'record-inlining')]) {
    const profile = JSON.parse(fs.readFileSync(file, 'utf8'))
    assert.equal(profile.jsprof.heap.inlining, true)
    const text = cli('report', file).stdout
    assert.equal(text.match(/^note:/gm).length, 1, text)
    assert.match(text.split('\n')[1], /^note: V8 inlined functions while this profile was taken: a small function/)
  }
  // A .heapprofile of another tool does not say: V8 inlines unless told not to.
  const v8 = path.join(tmp, 'other.heapprofile')
  fs.writeFileSync(v8, JSON.stringify(jsprof.toHeapProfile(JSON.parse(fs.readFileSync(recorded([], 'again'), 'utf8')))))
  assert.match(cli('report', v8).stdout.split('\n')[1], /^note: V8 inlines functions unless told not to/)
})

test('jsprof attach --heap charges the leak to the helper (inlining off by default)', async () => {
  const child = spawn(process.execPath, ['--inspect-port=127.0.0.1:0', 'app.js'], {
    cwd: tmp,
    env: { ...process.env, INLINE_LEAK_SERVE: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  try {
    await new Promise((resolve, reject) => {
      child.stdout.on('data', (d) => /ready \d+/.test(String(d)) && resolve())
      child.on('exit', (code) => reject(new Error(`the app exited (${code})`)))
    })
    const out = path.join(tmp, 'attach.json')
    const r = await new Promise((resolve) => {
      const a = spawn(
        process.execPath,
        [BIN, 'attach', String(child.pid), '--heap', '--heap-interval', '16384', '--duration', '2s', '-o', out],
        { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'] },
      )
      let stderr = ''
      a.stderr.on('data', (d) => (stderr += d))
      a.on('exit', (code) => resolve({ code, stderr }))
    })
    assert.equal(r.code, 0, r.stderr)
    chargesTheHelper(path.join(tmp, 'attach.heap.json'))
  } finally {
    child.kill('SIGTERM')
  }
})

test("continuous mode's heap chunks take the option and say it", async () => {
  const chunks = []
  const c = jsprof.startContinuous({
    chunkSeconds: 0.05,
    heap: { inlining: false, samplingInterval: 4096 },
    onChunk: (chunk) => chunks.push(chunk),
  })
  await new Promise((resolve) => setTimeout(resolve, 200))
  await c.stop()
  assert.ok(chunks.length >= 2)
  assert.ok(chunks.every((chunk) => chunk.heap.jsprof.heap.inlining === false))
})

test('the HeapProfiler option is read by the option rule and shown', () => {
  const heap = new jsprof.HeapProfiler({ inlining: false })
  try {
    assert.equal(heap.inlining, false)
  } finally {
    heap.stop()
  }
  assert.equal(new jsprof.HeapProfiler().inlining, true)
  assert.throws(() => new jsprof.HeapProfiler({ inlining: 'no' }), TypeError)
  assert.throws(() => new jsprof.HeapProfiler({ inlinning: false }), /did you mean 'inlining'/)
})

// V8's trace of its inlining decisions names each function it inlines: a fresh helper per phase, hot
// enough to be optimized, says whether V8 inlined in that phase. Phases: before any consumer (inlines);
// a worker's HeapProfiler({ inlining: false }) and the main thread's overlapping, the worker's ending
// first (no inlining while either holds: the flags are the process's); after the main thread's stops
// (inlines again).
const PHASES = `
const { Worker } = require('node:worker_threads')
const { HeapProfiler } = require(process.env.JSPROF_PACKAGE)
const hot = (name) => {
  const helper = new Function(\`return function \${name}(x) { return x + 1 }\`)()
  const caller = new Function('helper', 'n', \`/* \${name} */ let s = 0; for (let i = 0; i < n; i++) s = helper(s); return s\`)
  for (let i = 0; i < 3000; i++) caller(helper, 1000)
}
const worker = (code) => new Promise((resolve, reject) => {
  const w = new Worker(code, { eval: true, env: process.env })
  let said
  w.on('message', (m) => (said = m))
  w.on('error', reject)
  w.on('exit', () => resolve(said))
})
;(async () => {
  hot('phaseBefore')
  const main = new HeapProfiler({ inlining: false })
  const held = await worker("const { HeapProfiler } = require(process.env.JSPROF_PACKAGE); const h = new HeapProfiler({ inlining: false }); h.stop().then((p) => require('node:worker_threads').parentPort.postMessage(p.jsprof.heap.inlining))")
  console.log('worker profile inlining', held)
  hot('phaseWorkerEnded')
  const profile = await main.stop()
  hot('phaseAfter')
  console.log('profile inlining', profile.jsprof.heap.inlining)
})()
`

test("the flags are the process's: off while any thread holds the mode, back on when the last one ends", () => {
  const r = spawnSync(process.execPath, ['--trace-turbo-inlining', '-e', PHASES], {
    encoding: 'utf8',
    env: { ...process.env, JSPROF_PACKAGE: root },
    maxBuffer: 1 << 28,
  })
  assert.equal(r.status, 0, r.stderr)
  const inlined = (name) => new RegExp(`Inlining .*<SharedFunctionInfo ${name}>`).test(r.stdout)
  assert.ok(inlined('phaseBefore'), 'V8 inlines before the mode')
  assert.ok(!inlined('phaseWorkerEnded'), 'the main thread still holds the mode after the worker ended')
  assert.ok(inlined('phaseAfter'), 'inlining is back once the last consumer ended')
  assert.match(r.stdout, /^worker profile inlining false$/m)
  assert.match(r.stdout, /^profile inlining false$/m)
})
