// What loading the package costs an app: `require('jsprof-node')` in fresh processes, its wall time
// and the heap it leaves (after a full GC), and Node's own modules it loads. Prints figures; asserts
// nothing.
//
//   node bench/require.mjs [--runs 15] [--root DIR]   (--root: another checkout, e.g. a worktree of main)

import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { arg, num } from './args.mjs'
import { medianSpread } from './stats.mjs'

const root = path.resolve(arg('root', path.join(path.dirname(fileURLToPath(import.meta.url)), '..')))
const RUNS = num('runs', 15)

// One fresh process: the figures of one require, as JSON.
const probe = `gc()
const before = new Set(process.moduleLoadList)
const heap = process.memoryUsage().heapUsed
const t0 = performance.now()
require(${JSON.stringify(root)})
const ms = performance.now() - t0
gc()
const builtins = process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith('NativeModule '))
console.log(JSON.stringify({ ms, heapKB: (process.memoryUsage().heapUsed - heap) / 1024, builtins: builtins.map((m) => m.slice(13)) }))`

const runs = []
for (let i = 0; i < RUNS; i++) {
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', probe], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(r.stderr)
  runs.push(JSON.parse(r.stdout))
}
console.log(`# require('jsprof-node') from ${root}, Node ${process.version}, ${RUNS} fresh processes`)
console.log(
  `wall ms, median (range): ${medianSpread(
    runs.map((r) => r.ms),
    1,
  )}`,
)
console.log(
  `heap kB left, median (range): ${medianSpread(
    runs.map((r) => r.heapKB),
    1,
  )}`,
)
console.log(`Node modules it loads (${runs[0].builtins.length}): ${runs[0].builtins.join(' ')}`)
