// Would a user believe `jsprof record`? The same real programs under `node --cpu-prof` (ground truth)
// and `jsprof record`, at 1 ms, compared as a user would compare them (issue 23's "Checks a user would
// believe"):
//   - tsc --noEmit on a real TypeScript package's sources (zod's, the devDependency);
//   - eslint (recommended rules) on a real codebase (webpack's lib/, the devDependency);
//   - a webpack 5 production build whose terser-webpack-plugin minifies in worker threads (jest-worker),
//     which it ends itself.
// For each thread both profiled: every package's share of the busy time (idle left out: the two start and
// end at different moments) from `jsprof report --by package --json`, the largest difference in points
// over packages, and the share of (gc); whether each worker thread `--cpu-prof` saw is there with its work; how many samples carry a
// frame of the recorder itself (an anonymous script at 1:1 without a URL, or jsprof's own files); and the
// wall and CPU time of each mode as ratios to plain node (ROUNDS alternated rounds, medians), with the
// preload alone beside (the app's own cost under record, without the CLI's Node process).
//
//   node bench/record-vs-cpu-prof.mjs      BENCH_ROUNDS=1 by default; BENCH_ONLY=tsc,eslint,webpack
// Prints figures; asserts nothing about time.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { loadAvg, machine, median } from './stats.mjs'
import { realPrograms } from './real-programs.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const PRELOAD = path.join(root, 'lib', 'record', 'preload.js')
const ROUNDS = Number(process.env.BENCH_ROUNDS || 1)
const { DEFAULT_FLUSH_EVERY_MS } = require('../lib/record/spacing.js')
const ONLY = new Set((process.env.BENCH_ONLY || 'tsc,eslint,webpack').split(','))

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-bench-vs-cpu-prof-'))

const programs = () => realPrograms(tmp, ONLY)

/** CPU ms (user + system) of this process's waited-for children, all their threads (Linux, 10 ms steps). */
function childrenCpuMs() {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100
  } catch {
    return NaN
  }
}

function run(argv, program, env = {}) {
  const cpu = childrenCpuMs()
  const t = process.hrtime.bigint()
  const r = spawnSync(process.execPath, argv, {
    cwd: program.cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  })
  const wall = Number(process.hrtime.bigint() - t) / 1e6
  if (!program.ok.includes(r.status)) throw new Error(`${argv.join(' ')}: exit ${r.status}\n${r.stderr}`)
  return { wall, cpu: childrenCpuMs() - cpu, stderr: r.stderr }
}

/** `jsprof report --by package --json` of a trace or .cpuprofile. */
function byPackage(file) {
  const r = spawnSync(process.execPath, [BIN, 'report', file, '--by', 'package', '--json', '--top', '100000'], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  })
  if (r.status !== 0) throw new Error(`jsprof report ${file}: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** Each row's share of the busy time (idle left out), in %. */
function busyShares(report) {
  const busy = report.rows.filter((row) => row.kind !== 'idle')
  const total = busy.reduce((sum, row) => sum + row.selfTime, 0)
  return new Map(busy.map((row) => [row.name, total > 0 ? (100 * row.selfTime) / total : 0]))
}

/** The largest difference in points between two share maps, over packages (not (gc), (program)…): [points, name]. */
function largestDifference(a, b) {
  let worst = [0, '-']
  for (const name of new Set([...a.keys(), ...b.keys()])) {
    if (name.startsWith('(') && !name.startsWith('(generated')) continue
    const d = Math.abs((a.get(name) || 0) - (b.get(name) || 0))
    if (d > worst[0]) worst = [d, name]
  }
  return worst
}

/** Samples of a trace with a frame of the recorder: an anonymous script at 1:1 without a URL, or jsprof's files. */
function recorderSamples(file) {
  const trace = JSON.parse(fs.readFileSync(file, 'utf8'))
  const own = [path.join(root, 'lib'), `file://${path.join(root, 'lib')}`]
  const isOwn = (frameId) => {
    const f = trace.frames[frameId]
    if (f.resourceId !== undefined) return own.some((p) => trace.resources[f.resourceId].startsWith(p))
    return f.name === '' && f.line === 1 && f.column === 1
  }
  let n = 0
  for (const s of trace.samples) {
    for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId) {
      if (isOwn(trace.stacks[id].frameId)) {
        n++
        break
      }
    }
  }
  return n
}

/** The --cpu-prof files of a run by threadId (CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile). */
function cpuProfiles(dir) {
  const byThread = new Map()
  for (const f of fs.readdirSync(dir)) {
    const m = /\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(f)
    if (m) byThread.set(Number(m[2]), path.join(dir, f))
  }
  return byThread
}

/** The traces of a `jsprof record -o <dir>/t.json` run by threadId. */
function recordTraces(dir) {
  const byThread = new Map()
  for (const f of fs.readdirSync(dir)) {
    if (f === 't.json') byThread.set(0, path.join(dir, f))
    const m = /^t\.worker-(\d+)\.json$/.exec(f)
    if (m) byThread.set(Number(m[1]), path.join(dir, f))
  }
  return byThread
}

const ratio = (xs, base) => (median(xs) / median(base)).toFixed(3)

function compare(program) {
  const times = { node: [], 'node --cpu-prof': [], 'jsprof record': [], 'preload only': [] }
  let profDir
  let recDir
  for (let round = 0; round < ROUNDS; round++) {
    profDir = fs.mkdtempSync(path.join(tmp, 'prof-'))
    recDir = fs.mkdtempSync(path.join(tmp, 'rec-'))
    times.node.push(run(program.args, program))
    times['node --cpu-prof'].push(
      run(['--cpu-prof', '--cpu-prof-interval', '1000', `--cpu-prof-dir=${profDir}`, ...program.args], program),
    )
    times['jsprof record'].push(
      run(
        [BIN, 'record', '-o', path.join(recDir, 't.json'), '--interval', '1', '--', process.execPath, ...program.args],
        program,
      ),
    )
    // The app's own cost under record, without the CLI's Node process (its fixed start-up and end):
    // the preload, configured by hand as the CLI would.
    const preDir = fs.mkdtempSync(path.join(tmp, 'pre-'))
    const config = { output: path.join(preDir, 't.json'), intervalUs: 1000, flushEveryMs: DEFAULT_FLUSH_EVERY_MS }
    times['preload only'].push(
      run(['--require', PRELOAD, ...program.args], program, { JSPROF_RECORD: JSON.stringify(config) }),
    )
  }
  console.log(`\n${program.title} (${ROUNDS} round${ROUNDS === 1 ? '' : 's'}, alternated; medians)`)
  const base = times.node
  for (const [name, xs] of Object.entries(times)) {
    console.log(
      `  ${name.padEnd(16)} wall ${median(xs.map((x) => x.wall))
        .toFixed(0)
        .padStart(6)} ms ${ratio(
        xs.map((x) => x.wall),
        base.map((x) => x.wall),
      )}×   cpu ${median(xs.map((x) => x.cpu))
        .toFixed(0)
        .padStart(6)} ms ${ratio(
        xs.map((x) => x.cpu),
        base.map((x) => x.cpu),
      )}×`,
    )
  }
  const written = /written at exit in (\d+) ms/.exec(times['jsprof record'].at(-1).stderr)
  if (written) console.log(`  jsprof record: main thread's trace written at exit in ${written[1]} ms (last round)`)
  // The last round's profiles, thread by thread: the main threads, then the workers in the order they
  // started (record's own watcher thread takes a threadId, so the app's workers' ids differ by one).
  const truth = [...cpuProfiles(profDir)].sort((a, b) => a[0] - b[0])
  const ours = [...recordTraces(recDir)].sort((a, b) => a[0] - b[0])
  for (let i = 0; i < Math.max(truth.length, ours.length); i++) {
    if (!truth[i]) {
      console.log(`  worker thread ${ours[i][0]}: in jsprof record only (${byPackage(ours[i][1]).samples} samples)`)
      continue
    }
    const [threadId, file] = truth[i]
    const who = threadId === 0 ? 'main thread' : `worker thread ${threadId} (--cpu-prof's id)`
    const theirs = byPackage(file)
    const trace = ours[i] && ours[i][1]
    if (!trace) {
      console.log(`  ${who}: --cpu-prof ${theirs.samples} samples; jsprof record: NO TRACE`)
      continue
    }
    const mine = byPackage(trace)
    const a = busyShares(theirs)
    const b = busyShares(mine)
    const [points, name] = largestDifference(a, b)
    const top = [...a].sort((x, y) => y[1] - x[1]).find(([n]) => !n.startsWith('('))
    const gc = (m) => `${(m.get('(gc)') || 0).toFixed(1)}%`
    console.log(
      `  ${who}: samples --cpu-prof ${theirs.samples}, record ${mine.samples}; of the busy time: top package ${top[0]} ${top[1].toFixed(1)}% vs ${(b.get(top[0]) || 0).toFixed(1)}%, largest package difference ${points.toFixed(1)} points (${name}), (gc) ${gc(a)} vs ${gc(b)}; samples with a recorder frame: ${recorderSamples(trace)}`,
    )
  }
}

console.log(machine())
try {
  for (const program of programs()) compare(program)
  console.log(`\nload at the end ${loadAvg()}`)
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}
