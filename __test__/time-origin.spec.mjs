// Traces carry their clock (issue 14): `jsprof record` writes the epoch of the recorded thread's
// performance.timeOrigin and its pid beside the spec's members, and the exporters show real clock
// times (pprof time_nanos, Gecko meta.startTime) and the real pid, with plain file paths in pprof.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { decodePprof } from './prod-helpers.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const jsprof = require(root)

let tmp
let recorded
let startedAt
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-clock-'))
  const app = path.join(tmp, 'app.js')
  fs.writeFileSync(
    app,
    'function spinHere() { let x = 0; for (let i = 0; i < 3e7; i++) x += i; return x }\nspinHere()\n',
  )
  startedAt = Date.now()
  const r = spawnSync(process.execPath, [BIN, 'record', '-o', 'rec.json', '--', process.execPath, app], {
    cwd: tmp,
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(r.status, 0, r.stderr)
  recorded = JSON.parse(fs.readFileSync(path.join(tmp, 'rec.json'), 'utf8'))
})
after(() => fs.rmSync(tmp, { recursive: true, force: true }))

test('jsprof record writes the time origin and pid beside the spec members', () => {
  assert.deepEqual(Object.keys(recorded), ['frames', 'jsprof', 'resources', 'samples', 'stacks'])
  const { timeOrigin, pid } = recorded.jsprof
  assert.ok(Math.abs(timeOrigin - startedAt) < 30_000, `${timeOrigin} vs ${startedAt}`)
  assert.ok(Number.isInteger(pid) && pid > 0 && pid !== process.pid)
})

test('pprof and Gecko exports show the real clock and pid; pprof names files by their path', () => {
  const { profile } = decodePprof(jsprof.toPprof(recorded))
  const first = Math.min(...recorded.samples.map((s) => s.timestamp))
  const expectedNs = Math.round((recorded.jsprof.timeOrigin + first) * 1e6)
  assert.ok(Math.abs(Number(profile.timeNanos) - expectedNs) < 1e6, `${profile.timeNanos} vs ${expectedNs}`)
  const strings = profile.stringTable.strings
  const files = profile.function.map((f) => strings[Number(f.filename)]).filter(Boolean)
  assert.ok(files.includes(path.join(tmp, 'app.js')), files.join(', '))
  assert.ok(!files.some((f) => f.startsWith('file:')), 'plain paths, not file: URLs')
  const gecko = jsprof.toGeckoProfile(recorded)
  assert.equal(gecko.meta.startTime, recorded.jsprof.timeOrigin)
  // speedscope shows times from the start only: its default name says when, in UTC, and the pid.
  const at = new Date(Math.round(recorded.jsprof.timeOrigin + first))
    .toISOString()
    .replace('T', ' ')
    .replace('Z', ' UTC')
  assert.equal(jsprof.toSpeedscope(recorded).name, `jsprof-node profile, ${at}, pid ${recorded.jsprof.pid}`)
  assert.equal(jsprof.toSpeedscope(recorded, { name: 'mine' }).name, 'mine')
  assert.equal(jsprof.toSpeedscope({ ...recorded, jsprof: undefined }).name, 'jsprof-node profile')
  assert.equal(gecko.threads[0].pid, String(recorded.jsprof.pid))
  // Options win over the sidecar; without either, the old origin (0, pid 1).
  assert.equal(jsprof.toGeckoProfile(recorded, { timeOrigin: 5, pid: 7 }).meta.startTime, 5)
  assert.equal(jsprof.toGeckoProfile(recorded, { timeOrigin: 5, pid: 7 }).threads[0].pid, '7')
  const { jsprof: _, ...bare } = recorded
  assert.equal(jsprof.toGeckoProfile(bare).meta.startTime, 0)
  assert.throws(() => jsprof.toPprof(recorded, { timeOrigin: 'now' }), TypeError)
  assert.throws(() => jsprof.toGeckoProfile(recorded, { pid: -1 }), TypeError)
})

test('jsprof convert passes the recording clock on, and go tool pprof shows the date', (t) => {
  const r = spawnSync(process.execPath, [BIN, 'convert', 'rec.json', '--to', 'pprof', '-o', 'rec.pb.gz'], {
    cwd: tmp,
    encoding: 'utf8',
  })
  assert.equal(r.status, 0, r.stderr)
  const { profile } = decodePprof(fs.readFileSync(path.join(tmp, 'rec.pb.gz')))
  assert.ok(Number(profile.timeNanos) > 1.7e18, 'a 21st-century time')
  const go = spawnSync('go', ['version'])
  if (go.status !== 0) return t.skip('go is not installed (.ci/run installs golang-go)')
  const raw = spawnSync('go', ['tool', 'pprof', '-raw', 'rec.pb.gz'], { cwd: tmp, encoding: 'utf8' })
  assert.equal(raw.status, 0, raw.stderr)
  assert.match(raw.stdout, new RegExp(`^Time: ${new Date(recorded.jsprof.timeOrigin).getUTCFullYear()}-`, 'm'))
  const list = spawnSync('go', ['tool', 'pprof', '-list', 'spinHere', 'rec.pb.gz'], { cwd: tmp, encoding: 'utf8' })
  assert.match(list.stdout, /for \(let i = 0; i < 3e7; i\+\+\)/, 'the source line, found by its path')
})
