// A profiler inside someone's process: it never keeps the process alive, a forgotten one releases
// what it holds, exiting while profiling is clean, and a missing inspector is a clear error.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

function runNode(args, source, timeout = 20000) {
  const result = spawnSync(process.execPath, [...args, '-e', source], { cwd: root, encoding: 'utf8', timeout })
  assert.equal(result.error, undefined, `child did not finish: ${result.error}`)
  return result
}

test('a running profiler does not keep the process alive', () => {
  const started = Date.now()
  const r = runNode(
    [],
    `const { Profiler } = require('.')
     globalThis.p = new Profiler({ sampleInterval: 1, maxBufferSize: 1e6 })
     setTimeout(() => console.log('done'), 50)`,
  )
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'done')
  // Far below the periodic harvest (1 s) or anything else the profiler could wait for.
  assert.ok(Date.now() - started < 15000)
})

test('process.exit() while profiling exits cleanly with the given code', () => {
  const r = runNode(
    [],
    `const { Profiler } = require('.')
     const ps = [1, 5, 10].map(i => new Profiler({ sampleInterval: i, maxBufferSize: 1e6 }))
     let x = 0; const end = Date.now() + 50; while (Date.now() < end) x += Math.random()
     ps[0].stop()
     process.exit(7)`,
  )
  assert.equal(r.status, 7, r.stderr)
  assert.equal(r.signal, null)
  assert.equal(r.stderr, '')
})

test('a profiler collected without stop() releases its subscription and V8 stops sampling', () => {
  const r = runNode(
    ['--expose-gc'],
    `const { Profiler } = require('.')
     const { getSampler } = require('./lib/sampler')
     ;(async () => {
       ;(() => { new Profiler({ sampleInterval: 1, maxBufferSize: 1e6 }) })()
       const s = getSampler()
       const before = { running: s.running, live: s.liveCount }
       // Collected, it leaves at once; V8 keeps sampling for the engine's grace (2 s), then stops.
       for (let i = 0; i < 300 && s.running; i++) {
         globalThis.gc()
         await new Promise(r => setTimeout(r, 20))
       }
       console.log(JSON.stringify({ before, after: { running: s.running, live: s.liveCount } }))
     })()`,
  )
  assert.equal(r.status, 0, r.stderr)
  const { before, after } = JSON.parse(r.stdout)
  assert.deepEqual(before, { running: true, live: 1 })
  assert.deepEqual(after, { running: false, live: 0 })
})

test('where the inspector is unavailable, the constructor throws a clear error saying so', () => {
  // Simulates a Node built without the inspector: node:inspector throws ERR_INSPECTOR_NOT_AVAILABLE.
  const r = runNode(
    [],
    `const Module = require('node:module')
     const load = Module._load
     Module._load = function (request, ...rest) {
       if (request === 'node:inspector' || request === 'inspector') {
         const e = new Error('Inspector is not available'); e.code = 'ERR_INSPECTOR_NOT_AVAILABLE'; throw e
       }
       return load.call(this, request, ...rest)
     }
     const { Profiler } = require('.')
     try { new Profiler({ sampleInterval: 1, maxBufferSize: 10 }); console.log('no error') }
     catch (e) { console.log(JSON.stringify({ name: e.name, isDOMException: e instanceof DOMException, message: e.message })) }`,
  )
  assert.equal(r.status, 0, r.stderr)
  const error = JSON.parse(r.stdout)
  assert.equal(error.name, 'NotSupportedError')
  assert.equal(error.isDOMException, true)
  assert.match(error.message, /inspector/)
  assert.match(error.message, /not available/)
})

// Node 20 and 22 call it --experimental-permission; Node 24+ only accepts --permission.
const permissionFlag = process.allowedNodeEnvironmentFlags.has('--permission')
  ? '--permission'
  : '--experimental-permission'

test('an addon load refused by the permission model says so', () => {
  const r = spawnSync(
    process.execPath,
    [permissionFlag, `--allow-fs-read=*`, '-e', `try { require('.') } catch (e) { console.log(e.message) }`],
    { cwd: root, encoding: 'utf8', timeout: 20000 },
  )
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /does not allow native addons/)
})
