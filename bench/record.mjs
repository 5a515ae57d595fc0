// What `jsprof record` costs a real program, next to `node --cpu-prof` at the same interval: tsc
// (the devDependency typescript) type-checking a generated project, and start-up (`-e 0`). Modes
// alternate A B C … per round; medians of wall time. To see where the extra goes, the preload also
// runs without the CLI (JSPROF_RECORD set by hand), with and without flushing.
//
//   node bench/record.mjs            (BENCH_ROUNDS=5 rounds by default; BENCH_FILES=120 files)
// Prints figures (wall time, and CPU time of all threads of all processes, which a busy shared
// machine disturbs less); asserts nothing about time.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const PRELOAD = path.join(root, 'lib', 'record-preload.js')
const TSC = require.resolve('typescript/lib/tsc.js')
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5)
const FILES = Number(process.env.BENCH_FILES || 120)

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-bench-record-'))
const project = path.join(tmp, 'project')
fs.mkdirSync(path.join(project, 'src'), { recursive: true })
fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'es2022' }, include: ['src'] }))
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

function modes(script) {
  const rec = (flushEveryMs) => ({
    env: { JSPROF_RECORD: JSON.stringify({ output: path.join(tmp, 'pre.trace.json'), intervalUs: 1000, flushEveryMs }) },
    args: ['--require', PRELOAD, ...script],
  })
  return {
    'node': { args: script },
    'node --cpu-prof': { args: ['--cpu-prof', '--cpu-prof-interval', '1000', `--cpu-prof-dir=${path.join(tmp, 'prof')}`, ...script] },
    'jsprof record': { args: [BIN, 'record', '-o', path.join(tmp, 'cli.trace.json'), '--interval', '1', '--', process.execPath, ...script] },
    'preload only': rec(1000),
    'preload, no flush': rec(0),
  }
}

/** CPU ms (user + system) of this process's waited-for children, all their threads (Linux). */
function childrenCpuMs() {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100 // cutime + cstime, USER_HZ = 100
  } catch {
    return NaN
  }
}

function run(mode) {
  const cpu = childrenCpuMs()
  const t = process.hrtime.bigint()
  const r = spawnSync(process.execPath, mode.args, { env: { ...process.env, ...mode.env }, encoding: 'utf8', cwd: project })
  const ms = Number(process.hrtime.bigint() - t) / 1e6
  if (r.status !== 0) throw new Error(`${mode.args.join(' ')}: exit ${r.status}\n${r.stderr}\n${r.stdout}`)
  return { wall: ms, cpu: childrenCpuMs() - cpu }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

function bench(title, script) {
  const table = modes(script)
  const times = Object.fromEntries(Object.keys(table).map((k) => [k, []]))
  run(table.node) // warm the file cache
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, mode] of Object.entries(table)) times[name].push(run(mode))
  }
  const wall = (xs) => median(xs.map((x) => x.wall))
  const cpu = (xs) => median(xs.map((x) => x.cpu))
  const base = times.node
  console.log(`\n${title} (${ROUNDS} alternated rounds, medians; ratio to plain node)`)
  console.log(`  ${'mode'.padEnd(18)} ${'wall ms'.padStart(8)} ${'ratio'.padStart(7)} ${'cpu ms'.padStart(8)} ${'ratio'.padStart(7)}  (cpu: all threads, all processes)`)
  for (const [name, xs] of Object.entries(times)) {
    console.log(
      `  ${name.padEnd(18)} ${wall(xs).toFixed(0).padStart(8)} ${(wall(xs) / wall(base)).toFixed(3).padStart(6)}× ` +
        `${cpu(xs).toFixed(0).padStart(8)} ${(cpu(xs) / cpu(base)).toFixed(3).padStart(6)}×`,
    )
  }
}

console.log(`${os.cpus()[0]?.model} ×${os.cpus().length}, Node ${process.version}, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`)
bench('start-up: node -e 0', ['-e', '0'])
bench(`tsc --noEmit on ${FILES} generated files`, [TSC, '-p', project])
fs.rmSync(tmp, { recursive: true, force: true })
