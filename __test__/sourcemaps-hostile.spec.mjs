// resolveSourceMaps against a crafted trace (issue 24): resources naming /proc and /dev files (sizes
// that lie, endless streams) and a FIFO, directly and through the sourceMappingURL comments of
// scripts, many times over; the work stays bounded, each failure is said once per resource, and it
// runs on the source-map thread, never on the libuv pool the app's own file I/O needs.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFileSync, spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { resolveSourceMaps } from 'jsprof-node'

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const BIN = path.join(ROOT, 'bin', 'jsprof.js')
const linux = process.platform === 'linux'
let tmp

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-maps-hostile-'))
})
after(() => fs.rmSync(tmp, { recursive: true, force: true }))

/** A trace with one positioned frame per resource, each its own one-frame stack and sample. */
function traceOf(resources) {
  return {
    resources,
    frames: resources.map((_, i) => ({ name: 'f', resourceId: i, line: 1, column: 1 })),
    stacks: resources.map((_, i) => ({ frameId: i })),
    samples: resources.map((_, i) => ({ timestamp: i, stackId: i })),
  }
}

function craftedResources() {
  const fifo = path.join(tmp, 'fifo.map')
  if (!fs.existsSync(fifo)) execFileSync('mkfifo', [fifo])
  const resources = []
  for (const target of [
    '/proc/self/maps',
    '/proc/self/pagemap',
    '/proc/self/environ',
    '/dev/zero',
    '/dev/urandom',
    fifo,
  ]) {
    const script = path.join(tmp, `${target.replace(/\//g, '_')}.js`)
    fs.writeFileSync(script, `f()\n//# sourceMappingURL=${pathToFileURL(target).href}\n`)
    // One file under many resource strings (a fragment keeps the path).
    for (let i = 0; i < 40; i++) resources.push(`${pathToFileURL(script).href}#${i}`)
    resources.push(target, `${pathToFileURL(target).href}#x`)
  }
  return resources
}

test(
  'a trace naming /proc, /dev files and a FIFO: every resource says why, nothing mapped',
  { skip: !linux },
  async () => {
    const resources = craftedResources()
    const { trace, stats } = await resolveSourceMaps(traceOf(resources), { cache: false })
    assert.equal(stats.mapped, 0)
    assert.equal(trace.frames.length, resources.length)
    const reasons = new Set(stats.resources.map((r) => r.error && r.error.reason))
    for (const reason of reasons)
      assert.ok(['mapUnreadable', 'noMap', 'mapTooLarge', 'mapNotFound'].includes(reason), reason)
    const maps = stats.resources.find((r) => r.resource.includes('_proc_self_maps.js'))
    assert.match(maps.error.message, /states 0 bytes but has more \(a special file such as \/proc/)
    const fifo = stats.resources.find((r) => r.resource.includes('_fifo.map.js'))
    assert.match(fifo.error.message, /is not a regular file/)
  },
)

test('the CLI: one warning line for the crafted trace, exit 0', { skip: !linux }, () => {
  const file = path.join(tmp, 'crafted.trace.json')
  fs.writeFileSync(file, JSON.stringify(traceOf(craftedResources())))
  const r = spawnSync(process.execPath, [BIN, 'report', file, '--top', '1'], { encoding: 'utf8', timeout: 120_000 })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stderr, /warning: \d+ source maps not used \(/)
})

test("resolution runs off the libuv pool: the app's file I/O does not wait behind it", () => {
  // A map that takes a while to decode (2M segments), and a pool of one thread: a read queued after
  // resolveSourceMaps started completes first only when the resolution is not on that pool.
  const script = path.join(tmp, 'big.js')
  fs.writeFileSync(script, 'f()\n')
  fs.writeFileSync(
    `${script}.map`,
    `{"version":3,"sources":["a.ts"],"names":[],"mappings":"AAAA${',CAAC'.repeat(2_000_000)}"}`,
  )
  const child = `
    const fs = require('node:fs')
    const { resolveSourceMaps } = require(${JSON.stringify(ROOT)})
    const order = []
    const trace = { resources: [${JSON.stringify(pathToFileURL(script).href)}], frames: [{ name: 'f', resourceId: 0, line: 1, column: 1 }], stacks: [{ frameId: 0 }], samples: [] }
    const mapped = resolveSourceMaps(trace, { cache: false }).then((r) => order.push('maps:' + r.stats.mapped))
    const read = fs.promises.readFile(__filename).then(() => order.push('read'))
    Promise.all([mapped, read]).then(() => console.log(order.join(' ')))
  `
  const file = path.join(tmp, 'order.js')
  fs.writeFileSync(file, child)
  const r = spawnSync(process.execPath, [file], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, UV_THREADPOOL_SIZE: '1' },
  })
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'read maps:1')
})

test("the cache's real memory stays within its 512 MiB budget (maps of minimal segments, scaled down)", () => {
  // Three maps of 7 M minimal segments (`A,`: 14 MB of text, ~200 MiB once decoded each): counted in
  // file bytes (42 MB) all three stayed, ~600 MiB; counted as decoded, the third evicts the first.
  const resources = []
  for (const name of ['a', 'b', 'c']) {
    const script = path.join(tmp, `min-${name}.js`)
    fs.writeFileSync(script, 'f()\n')
    const fd = fs.openSync(`${script}.map`, 'w')
    fs.writeSync(fd, '{"version":3,"sources":["a.ts"],"names":[],"mappings":"AAAA')
    const chunk = ',A'.repeat(1 << 19)
    for (let i = 0; i < 14; i++) fs.writeSync(fd, chunk)
    fs.writeSync(fd, '"}')
    fs.closeSync(fd)
    resources.push(pathToFileURL(script).href)
  }
  const child = `
    const { resolveSourceMaps } = require(${JSON.stringify(ROOT)})
    const rss = () => process.memoryUsage.rss() / 2 ** 20
    ;(async () => {
      const before = rss()
      for (const r of ${JSON.stringify(resources)}) {
        const t = { resources: [r], frames: [{ name: 'f', resourceId: 0, line: 1, column: 1 }], stacks: [{ frameId: 0 }], samples: [] }
        const { stats } = await resolveSourceMaps(t)
        if (stats.mapped !== 1) throw new Error(JSON.stringify(stats))
      }
      globalThis.gc()
      console.log(Math.round(rss() - before))
    })()
  `
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', child], { encoding: 'utf8', timeout: 120_000 })
  assert.equal(r.status, 0, r.stderr)
  const grown = Number(r.stdout.trim())
  assert.ok(grown < 512, `RSS grew by ${grown} MiB`)
})
