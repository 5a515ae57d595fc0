// What `jsprof record` costs real programs, side by side with `node --cpu-prof` at the same interval
// (1 ms): tsc (the devDependency typescript) type-checking a generated project, prettier (the
// devDependency) formatting a copy of this repository's JS, and start-up (`node -e 0`). Modes alternate
// A B C … in each round; medians, and the range of the per-round ratios to plain node. To see where
// the extra goes, the preload also runs without the CLI (JSPROF_RECORD set by hand), with and without
// flushing.
//
//   node bench/record.mjs     BENCH_ROUNDS=5 rounds by default; BENCH_FILES=120 files for tsc;
//                             BENCH_ONLY=startup,tsc,prettier to run some of them (zod: tsc on zod's
//                             sources, a real package, is not in the default set: ~10 s a run)
// Prints figures (wall time, and CPU time of all threads of all processes, which a busy shared machine
// disturbs less); asserts nothing about time. Where the extra goes: each mode's time from the app's
// 'exit' event to the end of the run (a tiny preload of this file's stamps it, before the recorder's
// own 'exit' listener — except under `jsprof record`, which puts its preload first: there it shows the
// CLI's own end), and what the recorder's status says it cost the app's main thread (start, flushes,
// the write at exit).
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { machine, median } from './stats.mjs'
import { zodProject } from './real-programs.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const PRELOAD = path.join(root, 'lib', 'record', 'preload.js')
const TSC = require.resolve('typescript/lib/tsc.js')
const PRETTIER = require.resolve('prettier/bin/prettier.cjs')
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5)
const FILES = Number(process.env.BENCH_FILES || 120)
const { DEFAULT_FLUSH_EVERY_MS } = require('../lib/record/spacing.js')
const ONLY = new Set((process.env.BENCH_ONLY || 'startup,tsc,prettier').split(','))

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-bench-record-'))
const project = path.join(tmp, 'project')
fs.mkdirSync(path.join(project, 'src'), { recursive: true })
fs.writeFileSync(
  path.join(project, 'tsconfig.json'),
  JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2022' }, include: ['src'] }),
)
for (let i = 0; i < FILES; i++) {
  const prev = i > 0 ? `import { Box${i - 1}, Item${i - 1}, make${i - 1} } from './m${i - 1}'\n` : ''
  fs.writeFileSync(
    path.join(project, 'src', `m${i}.ts`),
    `${prev}export interface Item${i}<T> { id: number; value: T; tags: ReadonlyArray<string> }
export class Box${i}<T extends { id: number }> {
  private items = new Map<number, T>()
  add(item: T): this { this.items.set(item.id, item); return this }
  find(pred: (t: T) => boolean): T | undefined { for (const t of this.items.values()) if (pred(t)) return t; return undefined }
  map<U extends { id: number }>(f: (t: T) => U): Box${i}<U> { const b = new Box${i}<U>(); for (const t of this.items.values()) b.add(f(t)); return b }
}
export function make${i}(n: number): Box${i}<Item${i}<string>> {
  const b = new Box${i}<Item${i}<string>>()
  for (let k = 0; k < n; k++) b.add({ id: k, value: String(k), tags: ['a', 'b'] })
  ${i > 0 ? `const inner: Box${i - 1}<Item${i - 1}<string>> = make${i - 1}(n)\n  void inner.find((t) => t.id === n)` : ''}
  return b
}
export type Keys${i} = keyof Item${i}<number>
export const table${i}: Record<Keys${i}, string> = { id: 'id', value: 'value', tags: 'tags' }
`,
  )
}

// A real package's sources for tsc: zod's (the devDependency), without its tests and benchmarks.
const zod = path.join(tmp, 'zod')
if (ONLY.has('zod')) zodProject(zod)

// prettier's input: this repository's JS, copied so that the runs read the same files.
const corpus = path.join(tmp, 'corpus')
for (const dir of ['lib', '__test__', 'bench'])
  fs.cpSync(path.join(root, dir), path.join(corpus, dir), { recursive: true, filter: (f) => !f.includes('fixtures') })

// Writes the Date.now() of the app's 'exit' event to STAMPED, before any other 'exit' listener runs.
const STAMP = path.join(tmp, 'stamp.js')
const STAMPED = path.join(tmp, 'exit-at')
fs.writeFileSync(
  STAMP,
  `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(STAMPED)}, String(Date.now())))\n`,
)
const STATUS = path.join(tmp, 'status.json')

function modes(script) {
  const app = ['--require', STAMP, ...script]
  const rec = (flushEveryMs) => ({
    env: {
      JSPROF_RECORD: JSON.stringify({
        output: path.join(tmp, 'pre.trace.json'),
        intervalUs: 1000,
        flushEveryMs,
        status: STATUS,
      }),
    },
    args: ['--require', STAMP, '--require', PRELOAD, ...script],
    status: STATUS,
  })
  return {
    node: { args: app },
    'node --cpu-prof': {
      args: ['--cpu-prof', '--cpu-prof-interval', '1000', `--cpu-prof-dir=${path.join(tmp, 'prof')}`, ...app],
    },
    'jsprof record': {
      args: [BIN, 'record', '-o', path.join(tmp, 'cli.trace.json'), '--interval', '1', '--', process.execPath, ...app],
    },
    // As the CLI configures it (--flush-every's default).
    'preload only': rec(DEFAULT_FLUSH_EVERY_MS),
    'preload, no flush': rec(0),
  }
}

/** CPU ms (user + system) of this process's waited-for children, all their threads (Linux, 10 ms steps). */
function childrenCpuMs() {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100 // cutime + cstime, USER_HZ = 100
  } catch {
    return NaN
  }
}

function run(mode, cwd) {
  if (mode.status) fs.rmSync(mode.status, { force: true })
  fs.rmSync(STAMPED, { force: true })
  const cpu = childrenCpuMs()
  const t = process.hrtime.bigint()
  const r = spawnSync(process.execPath, mode.args, {
    env: { ...process.env, ...mode.env },
    encoding: 'utf8',
    cwd,
    maxBuffer: 1 << 28,
  })
  const end = Date.now()
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  // tsc exits 2 when it reports type errors (zod's sources without their ambient types): still a run.
  if (r.status !== 0 && !(mode.allowStatus || []).includes(r.status))
    throw new Error(`${mode.args.join(' ')}: exit ${r.status}\n${r.stderr}`)
  const result = { wall: ms, cpu: childrenCpuMs() - cpu, exitMs: end - Number(fs.readFileSync(STAMPED, 'utf8')) }
  if (mode.status) Object.assign(result, JSON.parse(fs.readFileSync(mode.status, 'utf8')))
  return result
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length

/** Runs every mode ROUNDS times, alternated; returns { name: [{ wall, cpu }, …] } (round i at index i). */
function measure(script, cwd, allowStatus = []) {
  const table = modes(script)
  for (const mode of Object.values(table)) mode.allowStatus = allowStatus
  const times = Object.fromEntries(Object.keys(table).map((k) => [k, []]))
  run(table.node, cwd) // warm the file cache
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, mode] of Object.entries(table)) times[name].push(run(mode, cwd))
  }
  return times
}

/** `1.023× (1.01–1.04)`: the median's ratio to plain node, and the range of the per-round ratios. */
function ratio(xs, base, key) {
  const perRound = xs.map((x, i) => x[key] / base[i][key])
  const lo = Math.min(...perRound)
  const hi = Math.max(...perRound)
  return `${(median(xs.map((x) => x[key])) / median(base.map((x) => x[key]))).toFixed(3)}× (${lo.toFixed(2)}–${hi.toFixed(2)})`
}

function program(title, script, cwd, allowStatus = []) {
  const times = measure(script, cwd, allowStatus)
  const base = times.node
  console.log(`\n${title} (${ROUNDS} alternated rounds; medians, ratio to plain node and its range over the rounds)`)
  console.log(
    `  ${'mode'.padEnd(18)} ${'wall ms'.padStart(8)}  ${'wall ratio'.padEnd(20)} ${'cpu ms'.padStart(8)}  ${'cpu ratio'.padEnd(20)} exit→end ms`,
  )
  for (const [name, xs] of Object.entries(times)) {
    const wall = median(xs.map((x) => x.wall))
    const cpu = median(xs.map((x) => x.cpu))
    const exit = median(xs.map((x) => x.exitMs))
    console.log(
      `  ${name.padEnd(18)} ${wall.toFixed(0).padStart(8)}  ${ratio(xs, base, 'wall').padEnd(20)} ${cpu.toFixed(0).padStart(8)}  ${ratio(xs, base, 'cpu').padEnd(20)} ${exit.toFixed(0).padStart(6)}`,
    )
  }
  for (const name of ['preload only', 'preload, no flush']) {
    const xs = times[name]
    const m = (key) => median(xs.map((x) => x[key] || 0)).toFixed(0)
    console.log(
      `  ${name}: main thread ms (status) start ${m('startMs')}, flushes ${m('flushes')} taking ${m('flushMs')}, write at exit ${m('writeMs')}`,
    )
  }
  const points = (key) => {
    const r = (name) => median(times[name].map((x) => x[key])) / median(base.map((x) => x[key]))
    return ((r('jsprof record') - r('node --cpu-prof')) * 100).toFixed(1)
  }
  console.log(`  jsprof record vs node --cpu-prof: wall ${points('wall')} points, cpu ${points('cpu')} points`)
}

function startup() {
  const times = measure(['-e', '0'], tmp)
  const base = times.node
  console.log(
    `\nstart-up: node -e 0 (${ROUNDS} alternated rounds; extra over plain node: wall median, cpu mean; exit→end median)`,
  )
  for (const [name, xs] of Object.entries(times)) {
    const wall = median(xs.map((x) => x.wall)) - median(base.map((x) => x.wall))
    const cpu = mean(xs.map((x) => x.cpu)) - mean(base.map((x) => x.cpu))
    const start =
      xs[0].startMs === undefined
        ? ''
        : `   preload start ${median(xs.map((x) => x.startMs)).toFixed(0)} ms, write ${median(xs.map((x) => x.writeMs)).toFixed(0)} ms`
    const sign = (v) => `${v >= 0 ? '+' : ''}${v.toFixed(0)}`.padStart(5)
    console.log(
      `  ${name.padEnd(18)} wall ${sign(wall)} ms   cpu ${sign(cpu)} ms   exit→end ${median(xs.map((x) => x.exitMs))
        .toFixed(0)
        .padStart(3)} ms${start}`,
    )
  }
}

console.log(machine())
try {
  if (ONLY.has('startup')) startup()
  if (ONLY.has('tsc')) program(`tsc --noEmit on ${FILES} generated files`, [TSC, '-p', project], project)
  if (ONLY.has('zod')) program("tsc --noEmit on zod's sources (99 files)", [TSC, '-p', zod], zod, [2])
  if (ONLY.has('prettier'))
    program(
      'prettier formatting lib/, __test__/, bench/ (to stdout)',
      [PRETTIER, 'lib/**/*.js', '__test__/*.mjs', 'bench/**/*.mjs'],
      corpus,
    )
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}
