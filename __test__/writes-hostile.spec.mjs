// Every file jsprof-node writes, in a directory another local user can write too (a shared /tmp):
// nothing planted there — a symbolic link, a file, a FIFO, at the final name or at the temporary one —
// may redirect a write, block it, or spoil another file (issue 40). The links "of another user" are
// made as root and handed to uid 1234 (lchown): the tests that need one skip where that is not
// possible (not root, or not a POSIX system).

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const { writeOutputFile, createExclusive } = require(path.join(root, 'lib', 'output.js'))
const { createChunks } = require(path.join(root, 'lib', 'record', 'chunks.js'))

const OTHER_UID = 1234
const canChown = process.platform !== 'win32' && process.getuid?.() === 0

let tmp
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-writes-'))
})
after(() => fs.rmSync(tmp, { recursive: true, force: true }))

/** A fresh shared directory with a precious file outside it. */
function scene(name) {
  const dir = path.join(tmp, name)
  const shared = path.join(dir, 'shared')
  fs.mkdirSync(shared, { recursive: true })
  fs.chmodSync(shared, 0o1777)
  const victim = path.join(dir, 'victim')
  fs.writeFileSync(victim, 'PRECIOUS')
  return { dir, shared, victim }
}

/** A symbolic link at `at` to `to`, made by another user. */
function plantLink(to, at) {
  fs.symlinkSync(to, at)
  fs.lchownSync(at, OTHER_UID, OTHER_UID)
}

function run(args, options = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000, ...options })
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

test("writeOutputFile: another user's link, at the name or on the way, is never followed", (t) => {
  if (!canChown) return t.skip('needs root on a POSIX system to make a link of another user')
  const { dir, shared, victim } = scene('links')
  const link = path.join(shared, 't.json')
  plantLink(victim, link)
  assert.throws(
    () => writeOutputFile(link, 'DATA'),
    (err) => err.code === 'EUNSAFELINK' && err.message.includes(`uid ${OTHER_UID}`),
  )
  assert.equal(fs.readFileSync(victim, 'utf8'), 'PRECIOUS')
  assert.ok(fs.lstatSync(link).isSymbolicLink(), 'the link stays as it was')
  // A dangling one: its target is not created either, also when nothing may be replaced.
  const dangling = path.join(shared, 'new.json')
  plantLink(path.join(dir, 'created'), dangling)
  for (const replace of [true, false]) assert.throws(() => writeOutputFile(dangling, 'DATA', { replace }))
  assert.equal(fs.existsSync(path.join(dir, 'created')), false)
  // A directory on the way.
  const victimDir = path.join(dir, 'victim-dir')
  fs.mkdirSync(victimDir)
  plantLink(victimDir, path.join(shared, 'sub'))
  assert.throws(() => writeOutputFile(path.join(shared, 'sub', 'a.json'), 'DATA'), { code: 'EUNSAFELINK' })
  assert.deepEqual(fs.readdirSync(victimDir), [])
  // Nothing of ours is left behind.
  assert.deepEqual(
    fs.readdirSync(shared).filter((f) => f.endsWith('.tmp')),
    [],
  )
  // The user's own link is followed (the link stays a link).
  const own = path.join(shared, 'own.json')
  fs.symlinkSync(path.join(dir, 'mine.json'), own)
  writeOutputFile(own, 'MINE')
  assert.equal(fs.readFileSync(path.join(dir, 'mine.json'), 'utf8'), 'MINE')
  assert.ok(fs.lstatSync(own).isSymbolicLink())
})

test('writeOutputFile: temporaries are created exclusively, mode 0600, under names nobody can guess', () => {
  const { shared } = scene('temporaries')
  const opened = []
  const { openSync } = fs
  fs.openSync = function (file, flags, mode) {
    opened.push({ file: String(file), flags, mode })
    return openSync.apply(this, arguments)
  }
  try {
    writeOutputFile(path.join(shared, 'a.json'), 'one')
    writeOutputFile(path.join(shared, 'a.json'), 'two')
  } finally {
    fs.openSync = openSync
  }
  const temporaries = opened.filter((o) => o.file.endsWith('.tmp'))
  assert.equal(temporaries.length, 2)
  for (const o of temporaries) {
    assert.match(path.basename(o.file), new RegExp(`^\\.a\\.json\\.${process.pid}-[0-9a-f]{16}\\.tmp$`))
    assert.equal(typeof o.flags, 'number')
    assert.ok(o.flags & fs.constants.O_EXCL && o.flags & fs.constants.O_CREAT, 'O_CREAT | O_EXCL')
    if (fs.constants.O_NOFOLLOW) assert.ok(o.flags & fs.constants.O_NOFOLLOW, 'O_NOFOLLOW')
    assert.equal(o.mode, 0o600)
  }
  assert.notEqual(temporaries[0].file, temporaries[1].file)
  assert.equal(fs.readFileSync(path.join(shared, 'a.json'), 'utf8'), 'two')
  assert.deepEqual(fs.readdirSync(shared), ['a.json'])
})

test('writeOutputFile: a FIFO at a name jsprof picked is refused at once, never waited on', (t) => {
  if (process.platform === 'win32') return t.skip('no FIFOs')
  const { shared } = scene('fifo')
  const fifo = path.join(shared, 't.heap.json')
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0)
  // No reader: an open for writing would block forever (so the write runs in a child, on a clock).
  const r = spawnSync(
    process.execPath,
    [
      '-e',
      `try { require(${JSON.stringify(path.join(root, 'lib', 'output.js'))}).writeOutputFile(${JSON.stringify(fifo)}, 'DATA', { streams: false }); console.log('written') } catch (e) { console.log(e.code) }`,
    ],
    { encoding: 'utf8', timeout: 10_000 },
  )
  assert.equal(r.signal, null, 'the write waited for a reader')
  assert.equal(r.stdout.trim(), 'ENOTFILE')
  assert.ok(fs.statSync(fifo).isFIFO())
})

test("createChunks (record's side file): a planted file or link makes it fail, never write through", (t) => {
  const { shared, victim } = scene('chunks')
  const file = path.join(shared, 't.json.1.chunks')
  fs.symlinkSync(victim, file) // even one's own: the side file is always new
  const header = { pid: 1, output: 't.json', intervalUs: 1000, timeOriginUs: 0, timeOriginEpochMs: 0 }
  assert.throws(() => createChunks(file, header), { code: 'EEXIST' })
  assert.equal(fs.readFileSync(victim, 'utf8'), 'PRECIOUS')
  const fresh = path.join(shared, 'fresh.chunks')
  createChunks(fresh, header).close()
  assert.equal(fs.statSync(fresh).mode & 0o777, 0o600)
  if (!canChown) return t.skip('needs root for a directory link of another user')
  plantLink(path.dirname(victim), path.join(shared, 'dir'))
  assert.throws(() => createExclusive(path.join(shared, 'dir', 'x.chunks')), { code: 'EUNSAFELINK' })
})

test("watchStalls: links planted at a stall file's temporary or final name never take the write", (t) => {
  if (!canChown) return t.skip('needs root on a POSIX system to make a link of another user')
  const { shared, victim } = scene('stalls')
  // The child plants what an attacker who guessed its pid would: the old temporary name (issue 40's
  // report) and the final name of its first stall, then stalls once.
  const script = `
    const fs = require('node:fs'), path = require('node:path')
    const shared = ${JSON.stringify(shared)}, victim = ${JSON.stringify(victim)}
    const first = path.join(shared, 'stall-' + process.pid + '-1.json')
    fs.symlinkSync(victim, first + '.' + process.pid + '-0.tmp')
    fs.symlinkSync(victim, first); fs.lchownSync(first, ${OTHER_UID}, ${OTHER_UID})
    const errors = []
    const w = require(${JSON.stringify(root)}).watchStalls({ thresholdMs: 50, dir: shared, onError: (e) => errors.push(e.message) })
    setTimeout(() => {
      const end = Date.now() + 400
      while (Date.now() < end);
      setTimeout(() => w.stop().then(() => console.log(JSON.stringify({ stats: w.stats, errors }))), 300)
    }, 200)`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, r.stderr)
  assert.equal(fs.readFileSync(victim, 'utf8'), 'PRECIOUS')
  const { stats } = JSON.parse(r.stdout)
  assert.ok(stats.detected >= 1, r.stdout)
  for (const name of fs.readdirSync(shared)) {
    if (!name.startsWith('stall-')) continue
    const stat = fs.lstatSync(path.join(shared, name))
    // The planted names stay links; anything written is a file of ours.
    if (!stat.isSymbolicLink()) assert.equal(stat.uid, 0, name)
  }
})

test("jsprof convert and record: another user's link at -o or beside it is refused, the victim intact", (t) => {
  if (!canChown) return t.skip('needs root on a POSIX system to make a link of another user')
  const { dir, shared, victim } = scene('cli')
  const trace = path.join(dir, 'in.json')
  fs.writeFileSync(
    trace,
    JSON.stringify({
      resources: [],
      frames: [{ name: 'f' }],
      stacks: [{ frameId: 0 }],
      samples: [{ timestamp: 1, stackId: 0 }],
    }),
  )
  const out = path.join(shared, 'out.cpuprofile')
  plantLink(victim, out)
  let r = run(['convert', trace, '--to', 'cpuprofile', '-o', out])
  assert.equal(r.code, 1)
  assert.match(r.stderr, /^jsprof: cannot write .*out\.cpuprofile: .*symbolic link of another user \(uid 1234\)/)
  assert.equal(fs.readFileSync(victim, 'utf8'), 'PRECIOUS')

  // record: -o itself is refused before the app runs.
  const app = path.join(dir, 'app.js')
  fs.writeFileSync(
    app,
    `const { Worker } = require('node:worker_threads')
     const w = new Worker('let x = 0; const e = Date.now() + 200; while (Date.now() < e) x++', { eval: true })
     w.on('exit', () => { const e = Date.now() + 300; while (Date.now() < e); })`,
  )
  const trapped = path.join(shared, 'trapped.json')
  plantLink(victim, trapped)
  r = run(['record', '-o', trapped, '--', process.execPath, app])
  assert.equal(r.code, 1, r.stderr)
  assert.match(r.stderr, /cannot write .*trapped\.json: .*symbolic link of another user/)
  // The files record names beside the trace: the heap profile, a stall's trace, a worker's trace.
  const t0 = path.join(shared, 't.json')
  for (const name of ['t.heap.json', 't.stall-1.json', 't.worker-1.json']) plantLink(victim, path.join(shared, name))
  r = run(['record', '-o', t0, '--heap', '--stall-threshold', '100', '--', process.execPath, app])
  assert.equal(fs.readFileSync(victim, 'utf8'), 'PRECIOUS', r.stderr)
  assert.ok(JSON.parse(fs.readFileSync(t0, 'utf8')).samples.length > 0, r.stderr)
  for (const name of ['t.heap.json', 't.stall-1.json', 't.worker-1.json'])
    assert.ok(fs.lstatSync(path.join(shared, name)).isSymbolicLink(), `${name} stays the planted link`)
})
