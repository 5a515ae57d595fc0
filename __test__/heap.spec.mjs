// HeapProfiler and heap profiles through the public API: options, the profile's shape and rules, the
// sampler's sharing, another client's sampler, workers, continuous mode with the push exporters, and
// `jsprof record --heap`. (The leak-server checks with go tool pprof, report and diff: heap-leak.spec.mjs.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const jsprof = require(root)
const { HeapProfiler, summarize, toPprof, toFlameGraph, toCollapsed, fromHeapProfile, toHeapProfile } = jsprof

const kept = []
function allocateKept(n) {
  for (let i = 0; i < n; i++) kept.push({ i, tag: `kept-${i}` })
}

const totalSize = (profile) => profile.samples.reduce((sum, s) => sum + s.size, 0)
const frameNames = (profile) => profile.frames.map((f) => f.name)

test('HeapProfiler: options by the one option rule, defaults, brand', async () => {
  assert.throws(() => new HeapProfiler({ samplingInterval: 0 }), RangeError)
  assert.throws(() => new HeapProfiler({ samplingInterval: 'x' }), TypeError)
  assert.throws(() => new HeapProfiler({ stackDepth: 5000 }), /stackDepth must be a number of frames in \[1, 1024\]/)
  assert.throws(() => new HeapProfiler({ includeCollected: 1 }), TypeError)
  assert.throws(
    () => new HeapProfiler({ samplingIntreval: 1 }),
    /unknown option 'samplingIntreval' \(did you mean 'samplingInterval'\?\)/,
  )
  const h = new HeapProfiler()
  assert.equal(h.samplingInterval, 512 * 1024)
  assert.equal(h.stackDepth, 64)
  assert.equal(h.includeCollected, false)
  assert.equal(Object.prototype.toString.call(h), '[object HeapProfiler]')
  await h.stop()
})

test("a take's profile comes back from Rust as a string, never a Buffer of Rust memory", async () => {
  // Node frees an external Buffer's memory only on a later turn of the event loop, so HeapProfiler cycles
  // awaited in a loop that never yields held every take's JSON (issue 40: RSS 58 -> 69 MB over 12,000
  // cycles; `npm run soak -- heap` reads RSS inside such a loop). A string lives in V8's heap.
  const { getHeapSampler } = require(path.join(root, 'lib', 'heap', 'sampler.js'))
  const consumer = {}
  const sampler = getHeapSampler()
  sampler.acquire(consumer, { samplingInterval: 4096, stackDepth: 64, includeCollected: false })
  try {
    allocateKept(1000)
    const { json, lastOrdinal } = sampler.take(consumer, { heap: { view: 'inuse' } })
    assert.equal(typeof json, 'string')
    assert.ok(lastOrdinal > 0)
    assert.ok(JSON.parse(json).samples.length > 0)
  } finally {
    sampler.release(consumer)
  }
  const h = new HeapProfiler({ samplingInterval: 4096 })
  allocateKept(1000)
  assert.ok((await h.profile()).samples.length > 0)
  await h.stop()
})

test('a heap profile: the trace tables, 1-based positions, bytes and counts per stack, no frame of jsprof-node', async () => {
  const h = new HeapProfiler({ samplingInterval: 4096 })
  allocateKept(20000)
  const profile = await h.profile()
  assert.deepEqual(Object.keys(profile), ['frames', 'jsprof', 'resources', 'samples', 'stacks'])
  assert.deepEqual(Object.keys(profile.jsprof.heap), [
    'endTime',
    'inlining',
    'samplingInterval',
    'stackDepth',
    'startTime',
    'view',
  ])
  assert.equal(profile.jsprof.heap.inlining, true)
  assert.equal(profile.jsprof.pid, process.pid)
  assert.equal(profile.jsprof.threadId, 0)
  assert.equal(profile.jsprof.timeOrigin, performance.timeOrigin)
  assert.ok(profile.jsprof.heap.endTime > profile.jsprof.heap.startTime)
  const here = fileURLToPath(import.meta.url)
  const allocating = profile.frames.find((f) => f.name === 'allocateKept')
  assert.ok(allocating, frameNames(profile).join(', '))
  assert.ok([here, `file://${here}`].includes(profile.resources[allocating.resourceId]))
  // 1-based: the line of `function allocateKept(` in this file, and its `(`.
  const lines = fs.readFileSync(here, 'utf8').split('\n')
  const line = lines.findIndex((l) => l.startsWith('function allocateKept(')) + 1
  assert.deepEqual([allocating.line, allocating.column], [line, 'function allocateKept'.length + 1])
  for (const s of profile.samples) {
    assert.ok(Number.isInteger(s.size) && s.size > 0)
    assert.ok(Number.isInteger(s.count) && s.count > 0)
    if (s.stackId !== undefined) assert.ok(s.stackId < profile.stacks.length)
  }
  assert.ok(!profile.resources.some((r) => r.includes(`${root}/lib/`)), profile.resources.join('\n'))
  // 20,000 kept objects of ~50 bytes: the estimate is in that order.
  assert.ok(totalSize(profile) > 3e5 && totalSize(profile) < 2e7, `${totalSize(profile)}`)
  const rows = summarize(profile, { by: 'function' })
  assert.ok(rows.some((r) => r.name.startsWith('allocateKept (') && r.selfSize > 0))
  assert.deepEqual(
    Object.keys(rows[0]),
    ['name', 'kind', 'package', 'version', 'selfSize', 'totalSize', 'selfSamples', 'totalSamples'].filter(
      (k) => k in rows[0],
    ),
  )
  // Every view takes it.
  assert.equal(toPprof(profile).subarray(0, 2).toString('hex'), '1f8b')
  assert.match(toFlameGraph(profile), /allocateKept .* B|allocateKept .*KiB|allocateKept .*MiB/)
  assert.match(toCollapsed(profile), /allocateKept \(.*\) \d+\n/)
  assert.throws(() => jsprof.toSpeedscope(profile), /toSpeedscope: this is a heap profile/)
  const back = fromHeapProfile(JSON.stringify(toHeapProfile(profile)))
  assert.deepEqual(back.samples, profile.samples)
  await h.stop()
  await assert.rejects(h.profile(), { name: 'InvalidStateError' })
  await assert.rejects(h.stop(), { name: 'InvalidStateError' })
})

test('profilers share the thread sampler with the same settings, and each keeps what came after its start', async () => {
  const first = new HeapProfiler({ samplingInterval: 4096 })
  allocateKept(20000)
  const second = new HeapProfiler({ samplingInterval: 4096 })
  assert.throws(() => new HeapProfiler({ samplingInterval: 8192 }), {
    name: 'InvalidStateError',
    message: /already runs with samplingInterval 4096/,
  })
  const a = await first.profile()
  const b = await second.profile()
  assert.ok(totalSize(b) < totalSize(a) / 4, `${totalSize(b)} vs ${totalSize(a)}`)
  await second.stop()
  // The first one still samples after the second left.
  allocateKept(5000)
  assert.ok(totalSize(await first.stop()) > totalSize(a))
  // Nobody left: a new one may pick other settings.
  await new HeapProfiler({ samplingInterval: 8192 }).stop()
})

test('another client of V8 sampling heap profiler (node --heap-prof) is neither shared nor stopped', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-heap-prof-'))
  try {
    const r = spawnSync(
      process.execPath,
      [
        '--heap-prof',
        `--heap-prof-dir=${dir}`,
        '-e',
        `try { new (require(${JSON.stringify(root)}).HeapProfiler)() } catch (e) { console.log(e.name + ': ' + e.message) }`,
      ],
      { encoding: 'utf8' },
    )
    assert.match(r.stdout, /^InvalidStateError: V8's sampling heap profiler is already running in this thread/)
    assert.equal(r.stderr, '')
    // --heap-prof's own profile is still written.
    assert.equal(fs.readdirSync(dir).filter((f) => f.endsWith('.heapprofile')).length, 1)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('workers: each thread profiles its own heap', () => {
  const script = `
const { Worker, isMainThread } = require('node:worker_threads')
const { HeapProfiler } = require(${JSON.stringify(root)})
const h = new HeapProfiler({ samplingInterval: 4096 })
const keep = []
const name = isMainThread ? 'mainKeeps' : 'workerKeeps'
const fns = { mainKeeps() { for (let i = 0; i < 20000; i++) keep.push({ i }) }, workerKeeps() { for (let i = 0; i < 20000; i++) keep.push([i]) } }
fns[name]()
h.stop().then((p) => {
  const names = p.frames.map((f) => f.name)
  console.log(JSON.stringify({ main: isMainThread, threadId: p.jsprof.threadId, mainKeeps: names.includes('mainKeeps'), workerKeeps: names.includes('workerKeeps') }))
  if (isMainThread) new Worker(__filename)
})
`
  const file = path.join(os.tmpdir(), `jsprof-heap-workers-${process.pid}.js`)
  fs.writeFileSync(file, script)
  try {
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    const [main, worker] = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    assert.deepEqual(main, { main: true, threadId: 0, mainKeeps: true, workerKeeps: false })
    assert.equal(worker.main, false)
    assert.ok(worker.threadId > 0)
    assert.equal(worker.workerKeeps, true)
    assert.equal(worker.mainKeeps, false)
  } finally {
    fs.rmSync(file, { force: true })
  }
})

test("the 'allocated' view counts collected objects too", async () => {
  const garbage = () => {
    let last
    for (let i = 0; i < 200000; i++) last = { i, s: `g${i}` }
    return last
  }
  const inuse = new HeapProfiler({ samplingInterval: 4096 })
  garbage()
  const a = await inuse.stop()
  const all = new HeapProfiler({ samplingInterval: 4096, includeCollected: true })
  garbage()
  const b = await all.stop()
  assert.equal(b.jsprof.heap.view, 'allocated')
  assert.ok(totalSize(b) > 4e6, `${totalSize(b)}`)
  assert.ok(totalSize(b) > 4 * totalSize(a), `${totalSize(b)} vs ${totalSize(a)}`)
})

/** A Pyroscope/OTLP stand-in on loopback that keeps what it is sent. */
function collector() {
  const requests = []
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      requests.push({ url: req.url, body: Buffer.concat(chunks), headers: req.headers })
      res.end()
    })
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, requests, url: `http://127.0.0.1:${server.address().port}` }),
    ),
  )
}

test('continuous mode carries a heap profile per chunk, and the Pyroscope exporter pushes it as memory', async () => {
  const { server, requests, url } = await collector()
  try {
    const exporter = jsprof.pyroscopeExporter({ url, appName: 'heap.test' })
    const chunks = []
    const c = jsprof.startContinuous({
      sampleInterval: 5,
      chunkSeconds: 0.3,
      heap: { samplingInterval: 16384 },
      onChunk: (chunk) => {
        chunks.push(chunk)
        exporter.push(chunk)
      },
    })
    const deadline = Date.now() + 1000
    while (Date.now() < deadline) {
      allocateKept(2000)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await c.stop()
    await exporter.flush()
    assert.ok(chunks.length >= 2)
    for (const chunk of chunks) {
      assert.equal(chunk.heap.jsprof.heap.view, 'inuse')
      assert.ok(chunk.heap.frames.some((f) => f.name === 'allocateKept'))
    }
    // In use: the live heap grows chunk after chunk.
    assert.ok(totalSize(chunks.at(-1).heap) > totalSize(chunks[0].heap))
    const heapPushes = requests.filter((r) => !/sampleRate=/.test(r.url))
    const cpuPushes = requests.filter((r) => /sampleRate=/.test(r.url))
    assert.equal(cpuPushes.length, chunks.length)
    assert.equal(heapPushes.length, chunks.length)
    assert.match(heapPushes[0].url, /^\/ingest\?name=heap\.test&from=\d+&until=\d+&format=pprof&spyName=nodespy$/)
    // The body is the chunk's heap pprof: sample type space/bytes (the Node SDK's), bytes by function.
    const { decodePprof } = await import('./prod-helpers.mjs')
    const { profile, totals } = decodePprof(heapPushes.at(-1).body)
    const strings = profile.stringTable.strings
    assert.deepEqual(
      profile.sampleType.map((t) => [strings[Number(t.type)], strings[Number(t.unit)]]),
      [['space', 'bytes']],
    )
    assert.equal(Number(profile.period), 16384)
    assert.ok(totals.get('allocateKept') > 0)
  } finally {
    server.close()
  }
})

test("continuous mode's 'allocated' chunks hold each chunk's own allocations", async () => {
  const chunks = []
  const c = jsprof.startContinuous({
    chunkSeconds: 0.25,
    heap: { samplingInterval: 8192, includeCollected: true },
    onChunk: (chunk) => chunks.push(chunk),
  })
  const deadline = Date.now() + 800
  while (Date.now() < deadline) {
    let last
    for (let i = 0; i < 20000; i++) last = { i } // garbage, collected
    if (last.i < 0) kept.push(last)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  await c.stop()
  assert.ok(chunks.length >= 3)
  const sizes = chunks.map((ch) => totalSize(ch.heap))
  // Each chunk its own: no chunk holds many times the others (they would if allocations piled up).
  assert.ok(Math.max(...sizes.slice(0, -1)) < 4 * Math.min(...sizes.slice(0, -1)) + 1e6, sizes.join(', '))
  assert.ok(chunks.every((ch) => ch.heap.jsprof.heap.view === 'allocated'))
})

test('jsprof record --heap writes each thread a heap profile beside its trace', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-record-heap-'))
  try {
    const out = path.join(dir, 't.json')
    const app = `const keep = []; function holdOn() { for (let i = 0; i < 300000; i++) keep.push({ i }) } holdOn()
new (require('node:worker_threads').Worker)('const a = []; for (let i = 0; i < 100000; i++) a.push([i])', { eval: true })`
    const r = spawnSync(
      process.execPath,
      [path.join(root, 'bin', 'jsprof.js'), 'record', '--heap', '-o', out, '--', process.execPath, '-e', app],
      {
        encoding: 'utf8',
      },
    )
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stderr, /wrote .*t\.heap\.json \(main thread's heap profile: [\d.]+ MiB in use in \d+ samples\)/)
    const files = fs.readdirSync(dir).sort()
    assert.deepEqual(
      files.filter((f) => f.includes('heap')),
      ['t.heap.json', files.find((f) => /^t\.worker-\d+\.heap\.json$/.test(f))],
    )
    const main = JSON.parse(fs.readFileSync(path.join(dir, 't.heap.json'), 'utf8'))
    assert.ok(main.frames.some((f) => f.name === 'holdOn'))
    const report = spawnSync(
      process.execPath,
      [path.join(root, 'bin', 'jsprof.js'), 'report', path.join(dir, 't.heap.json'), '--by', 'function', '--json'],
      { encoding: 'utf8' },
    )
    assert.match(JSON.parse(report.stdout).rows[0].name, /^holdOn \(\[eval\]/)
    const bad = spawnSync(
      process.execPath,
      [path.join(root, 'bin', 'jsprof.js'), 'record', '--heap-interval', '9', '--', process.execPath, '-e', '0'],
      { encoding: 'utf8' },
    )
    assert.equal(bad.status, 2)
    assert.match(bad.stderr, /--heap-interval takes --heap/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
