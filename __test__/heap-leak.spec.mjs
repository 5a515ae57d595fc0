// Heap profiles, checked as a user would: a real HTTP server whose handler leaks through an npm
// dependency (__test__/fixtures/leak-server: leaky-cache keeps ~1 KB per request in a module-level Map),
// profiled by its own HeapProfiler; the export read by `go tool pprof`, the profiles by `jsprof report`
// and `jsprof diff`. And a `.heapprofile` of a real program (`node --heap-prof` running tsc) read back.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { goMissing } from './helpers.mjs'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const FIXTURE = path.join(root, '__test__', 'fixtures', 'leak-server')
const jsprof = require(root)

const cli = (...args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' })

let tmp
let snapshots // [after 1000 requests, after 4000 requests]: heap profile files
before(async () => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-heap-leak-')))
  // The app and its dependency, laid out as npm installs them.
  fs.mkdirSync(path.join(tmp, 'node_modules'))
  fs.cpSync(path.join(FIXTURE, 'leaky-cache'), path.join(tmp, 'node_modules', 'leaky-cache'), { recursive: true })
  fs.copyFileSync(path.join(FIXTURE, 'server.js'), path.join(tmp, 'server.js'))
  fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'leak-app', version: '1.0.0' }))
  // 64 KiB between samples (a few hundred samples of a few MB of leak, so the ranking is not chance):
  // the default 512 KiB gives the same order with a handful of samples.
  const server = spawn(process.execPath, ['server.js'], {
    cwd: tmp,
    env: { ...process.env, JSPROF_PACKAGE: root, HEAP_INTERVAL: String(64 * 1024) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  try {
    const port = await new Promise((resolve, reject) => {
      server.stdout.once('data', (d) => resolve(Number(String(d).trim())))
      server.once('exit', (code) => reject(new Error(`the server exited (${code})`)))
    })
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 })
    const get = (url) =>
      new Promise((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: url, agent }, (res) => {
            const chunks = []
            res.on('data', (c) => chunks.push(c))
            res.on('end', () => resolve(Buffer.concat(chunks)))
          })
          .on('error', reject)
      })
    let sent = 0
    const load = async (n) => {
      const target = sent + n
      const worker = async () => {
        while (sent < target) {
          sent++
          await get(`/items/${sent}?q=${'x'.repeat(40)}`)
        }
      }
      await Promise.all(Array.from({ length: 8 }, worker))
    }
    snapshots = []
    for (const n of [1000, 3000]) {
      await load(n)
      const file = path.join(tmp, `snapshot-${snapshots.length + 1}.heap.json`)
      fs.writeFileSync(file, await get('/__heap'))
      snapshots.push(file)
    }
    agent.destroy()
  } finally {
    server.kill('SIGTERM')
  }
})
after(() => fs.rmSync(tmp, { recursive: true, force: true }))

test('the snapshots are heap profiles of the server: bytes per stack, its frames, none of jsprof-node', () => {
  const profile = JSON.parse(fs.readFileSync(snapshots[1], 'utf8'))
  assert.deepEqual(Object.keys(profile), ['frames', 'jsprof', 'resources', 'samples', 'stacks'])
  assert.equal(profile.jsprof.heap.view, 'inuse')
  assert.equal(profile.jsprof.heap.samplingInterval, 64 * 1024)
  assert.ok(profile.samples.every((s) => Number.isInteger(s.size) && Number.isInteger(s.count)))
  assert.ok(profile.resources.some((r) => r.includes('/node_modules/leaky-cache/index.js')))
  assert.ok(!profile.resources.some((r) => r.startsWith(`file://${root}/lib/`) || r.startsWith(`${root}/lib/`)))
})

test('go tool pprof -sample_index=space -top lists the leaking function first', { skip: goMissing ?? false }, () => {
  const profile = JSON.parse(fs.readFileSync(snapshots[1], 'utf8'))
  const file = path.join(tmp, 'heap.pb.gz')
  fs.writeFileSync(file, jsprof.toPprof(profile))
  const out = execFileSync('go', ['tool', 'pprof', '-sample_index=space', '-top', file], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const rows = out.split('\n').filter((l) => /^\s*[\d.]+[kKMG]?B\s/.test(l))
  assert.match(rows[0], /\sremember$/, out)
  assert.match(out, /Type: space/)
  // The package label is there too: -tagfocus keeps the leak.
  const tagged = execFileSync('go', ['tool', 'pprof', '-sample_index=space', '-tags', file], { encoding: 'utf8' })
  assert.match(tagged, /leaky-cache/)
})

test('jsprof report --by package names the package that holds the memory', () => {
  const r = cli('report', snapshots[1], '--by', 'package', '--json')
  assert.equal(r.status, 0, r.stderr)
  const report = JSON.parse(r.stdout)
  assert.equal(report.rows[0].name, 'leaky-cache', r.stdout)
  assert.equal(report.rows[0].kind, 'dependency')
  assert.equal(report.rows[0].version, '2.1.0')
  // The leak is ~1 KB a request, 4000 requests: the estimate is the order of that.
  assert.ok(report.rows[0].selfSize > 1.5e6 && report.rows[0].selfSize < 2e7, `${report.rows[0].selfSize}`)
  const text = cli('report', snapshots[1], '--by', 'package')
  assert.match(text.stdout, /heap profile, [\d.]+ MiB in use in \d+ samples, a sample every 64\.0 KiB, by package/)
})

test('jsprof diff of two snapshots names the leak as the growth, and --fail-above fails CI on it', () => {
  const r = cli('diff', snapshots[0], snapshots[1], '--json')
  assert.equal(r.status, 0, r.stderr)
  const diff = JSON.parse(r.stdout)
  assert.match(diff.rows[0].name, /^remember \(.*node_modules\/leaky-cache\/index\.js:\d+:\d+\)$/, r.stdout)
  assert.equal(diff.rows[0].package, 'leaky-cache')
  assert.ok(diff.rows[0].sizeDelta > 1e6, r.stdout)
  const byPackage = JSON.parse(cli('diff', snapshots[0], snapshots[1], '--by', 'package', '--json').stdout)
  assert.equal(byPackage.rows[0].name, 'leaky-cache')
  const ci = cli('diff', snapshots[0], snapshots[1], '--by', 'package', '--fail-above', '20')
  assert.equal(ci.status, 1)
  // The leak is named; any other row that also grew above 20% of the base's bytes (a few 64 KiB samples of
  // Node's own buffers can, when the base is small) is counted, as the JSON's rows say.
  const alsoGrown = byPackage.rows.filter((row) => row.selfDelta * 100 > 20).length - 1
  const more = alsoGrown > 0 ? ` and ${alsoGrown} more` : ''
  assert.match(
    ci.stderr,
    new RegExp(
      `^jsprof: leaky-cache \\(2\\.1\\.0\\) grew by \\+[\\d.]+% of the base's bytes \\(\\+[\\d.]+ MiB\\)${more}, above --fail-above 20\n$`,
    ),
    JSON.stringify(byPackage.rows),
  )
  // The differential flame graph is drawn by bytes.
  const svg = path.join(tmp, 'diff.svg')
  assert.equal(cli('diff', snapshots[0], snapshots[1], '-o', svg).status, 0)
  assert.match(fs.readFileSync(svg, 'utf8'), /of the bytes \(base/)
})

test('the heap profile round-trips through .heapprofile, as DevTools and node --heap-prof write it', () => {
  const profile = JSON.parse(fs.readFileSync(snapshots[1], 'utf8'))
  const v8 = jsprof.toHeapProfile(profile)
  assert.deepEqual(Object.keys(v8), ['head', 'samples'])
  assert.equal(v8.head.callFrame.functionName, '(root)')
  const back = jsprof.fromHeapProfile(v8)
  for (const table of ['resources', 'frames', 'stacks', 'samples']) assert.deepEqual(back[table], profile[table])
  const file = path.join(tmp, 'leak.heapprofile')
  assert.equal(cli('convert', snapshots[1], '--to', 'heapprofile', '-o', file).status, 0)
  const r = cli('report', file, '--by', 'package', '--json')
  assert.equal(JSON.parse(r.stdout).rows[0].name, 'leaky-cache')
})

test('a .heapprofile of a real program (node --heap-prof running tsc) reads back with the same top allocation sites', () => {
  const dir = path.join(tmp, 'heap-prof')
  fs.mkdirSync(dir)
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  execFileSync(
    process.execPath,
    [
      '--heap-prof',
      `--heap-prof-dir=${dir}`,
      '--heap-prof-interval=32768',
      tsc,
      '--noEmit',
      path.join(root, 'index.d.ts'),
    ],
    { stdio: 'inherit' },
  )
  const [name] = fs.readdirSync(dir).filter((f) => f.endsWith('.heapprofile'))
  const text = fs.readFileSync(path.join(dir, name), 'utf8')
  // The sites as the raw file says them: bytes per call frame (name, url, 0-based line and column).
  const raw = new Map()
  const todo = [JSON.parse(text).head]
  while (todo.length) {
    const n = todo.pop()
    todo.push(...(n.children || []))
    const f = n.callFrame
    if (n.selfSize > 0 && f.functionName !== '(root)') {
      const key = `${f.functionName}@${f.url}:${f.lineNumber + 1}:${f.columnNumber + 1}`
      raw.set(key, (raw.get(key) || 0) + n.selfSize)
    }
  }
  // The same, from the heap profile read back: each entry's bytes at its stack's leaf frame.
  const profile = jsprof.fromHeapProfile(text)
  const ours = new Map()
  for (const s of profile.samples) {
    const f = profile.frames[profile.stacks[s.stackId].frameId]
    const url = f.resourceId === undefined ? '' : profile.resources[f.resourceId]
    const key = `${f.name}@${url}:${f.line ?? 0}:${f.column ?? 0}`
    ours.set(key, (ours.get(key) || 0) + s.size)
  }
  const top = (m) => [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10)
  assert.ok(raw.size > 20, `tsc allocated at ${raw.size} sites`)
  assert.deepEqual(top(ours), top(raw))
  assert.equal(
    profile.samples.reduce((a, s) => a + s.size, 0),
    [...raw.values()].reduce((a, b) => a + b, 0),
  )
  // And the CLI reads it: typescript holds the bytes.
  const r = cli('report', path.join(dir, name), '--by', 'package', '--json')
  assert.equal(r.status, 0, r.stderr)
  assert.equal(JSON.parse(r.stdout).rows[0].name, 'typescript')
})

test('a malformed .heapprofile is one line naming what is wrong', () => {
  const cases = [
    ['{"head":{"id":1,"children":[{"id":1}]}}', /is not a valid V8 heap profile: node id 1 appears twice$/],
    [
      '{"head":{"id":1,"children":[{"callFrame":{"url":3},"id":2}]}}',
      /node #2 \(in text order\): callFrame\.url: a number where a string belongs$/,
    ],
    ['{"head":{"id":1},"samples":[{"size":-1,"nodeId":1}]}', /samples\[0\]\.size -1 is not a number of bytes/],
    // Bytes by the own format's rule (whole, 0 to 2^53): what a file of ours may not hold, V8's may not.
    ['{"head":{"id":1,"selfSize":1e308}}', /node id 1: selfSize 1e308 is not a number of bytes/],
    ['{"head":{"id":1,"selfSize":9007199254740994}}', /selfSize 9007199254740994 is not a number of bytes/],
    ['{"head":{"id":1},"samples":[{"size":1.5,"nodeId":1}]}', /samples\[0\]\.size 1\.5 is not a number of bytes/],
    ['{"head":{"id":1,', /is not valid JSON \(unexpected end of the text at line 1 column 17\)$/],
  ]
  for (const [text, message] of cases) {
    const file = path.join(tmp, 'bad.heapprofile')
    fs.writeFileSync(file, text)
    const r = cli('report', file)
    assert.equal(r.status, 2)
    assert.equal(r.stderr.split('\n').length, 2, r.stderr)
    assert.match(r.stderr.trim(), message)
  }
})
