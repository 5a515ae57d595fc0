// The per-request benchmark matrix: what profiling each request costs a server, on the servers users run.
// Prints figures; asserts nothing about time (the machine may be shared and noisy).
//
//   node bench/matrix/run.mjs [--nodes 20,24,26] [--kinds http-sync,http-async,express,fastify]
//       [--connections 10,100] [--pin no,yes]
//       [--modes none,prof10,profall,req10,reqall,sentry10,contlabels,ddlabels,pyrolabels]
//       (a mode may carry the engine's stop gap, prof10~250, or a tag: none#2 is a second baseline whose
//       ratio to none is the noise floor; see server.js)
//       [--rounds 3] [--duration 5] [--warmup 2] [--json out.json]
//       [--v8-flags "--no-allocation-site-pretenuring"]   (flags for every server's Node, space-separated)
//
// A cell is (Node major, server kind, connections, pinning). In a cell, each round runs every mode back
// to back in a server process of its own (bench/matrix/server.js; the order rotates per round), and a
// mode's ratios are taken against the `none` run of its own round: the shared machine's drift between
// rounds cancels, and the spread of those paired ratios over rounds is printed beside their median.
//
// - CPU per request counts every thread of the server process (V8's sampler thread, the libuv pool, the
//   inspector's): the cost a user pays. The CPU ratio is none/mode (1.000x = free; 0.950x = the server
//   needs 5% more CPU per request); req/s ratio is mode/none.
// - Pinned: the server runs on core 0 alone (`taskset -c 0`, as in a 1-CPU container) and the load
//   generator on core 1; unpinned, both float over the machine's cores.
// - The load generator is autocannon in a process of its own, on this machine's Node; the server runs
//   on the Node major of its cell (real binaries from the npm registry: scripts/node-major.sh).
// - After the table, the same CPU split by thread group (main, V8's profiler thread, others) says where a
//   mode's extra microseconds go.
// - Last, V8's collections in each round's server: the mean scavenge pause and the mark-compacts. A server
//   whose request objects V8 pretenured in its first moments under load runs slower for its whole life,
//   whatever its mode (bench/results/matrix-pretenuring.md): those rounds show scavenges of several times
//   the usual pause.
// - Targets (targets.mjs; issues 28, 41): prof10 and req10 >= 0.95x CPU, profall and reqall >= 0.90x, all
//   ahead of sentry10 in the same cell; (issue 26) heap, V8's sampling heap profiler at 512 KiB for the
//   whole run, >= 0.97x.

import { spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median, spread } from '../stats.mjs'
import { verdict, verdictText } from './targets.mjs'
import { loadArgs } from './kinds.mjs'
import { pretenuredRounds } from './gc-state.mjs'
import { arg, list } from '../args.mjs'
import { ask } from '../ipc.mjs'
import { DD_TRACE, ddTrace } from '../server/peers.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.join(here, '..', '..')
const NODES = list('nodes', '20,24,26')
const KINDS = list('kinds', 'http-sync,http-async,express,fastify')
const CONNECTIONS = list('connections', '10,100').map(Number)
const PINS = list('pin', 'no,yes')
// req10 is profileRequests' default (labels on); contlabels (ours, continuous, every request labelled)
// beside the peers' labelling, ddlabels and pyrolabels, in the same rounds (issue 41).
const MODES = list('modes', 'none,prof10,profall,req10,reqall,sentry10,contlabels,ddlabels,pyrolabels')
const ROUNDS = Number(arg('rounds', 3))
const DURATION = Number(arg('duration', 5))
const WARMUP = Number(arg('warmup', 2))
const JSON_OUT = arg('json', null)
const V8_FLAGS = arg('v8-flags', '').split(' ').filter(Boolean)

if (!MODES.includes('none')) throw new Error('--modes must include none: every ratio is paired with it')
const canPin = spawnSync('taskset', ['-c', '0', 'true']).status === 0 && os.cpus().length >= 2

function nodeBinary(major) {
  if (process.versions.node.split('.')[0] === String(major)) return process.execPath
  const r = spawnSync('bash', [path.join(root, 'scripts', 'node-major.sh'), String(major)], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`cannot fetch Node ${major} (scripts/node-major.sh)`)
  return r.stdout.trim()
}

const pinned = (pin, core, cmd, cmdArgs) =>
  pin === 'yes' ? ['taskset', ['-c', String(core), cmd, ...cmdArgs]] : [cmd, cmdArgs]

function startServer(node, kind, mode, pin) {
  const [cmd, cmdArgs] = pinned(pin, 0, node, [...V8_FLAGS, path.join(here, 'server.js'), kind, mode])
  const env = ddModules.has(node) ? { ...process.env, DD_TRACE_MODULE: ddModules.get(node) } : process.env
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], env })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  return new Promise((resolve, reject) => {
    let listening = false
    child.stdout.once('data', (data) => {
      listening = true
      resolve({ child, ...JSON.parse(data) })
    })
    // measure() drops this listener before it kills the server: any exit seen here is a death. Before
    // the server listens it fails the start; after, the measure would only see a closed IPC channel,
    // so it says why the server died.
    child.once('exit', (code, signal) => {
      const why = `server ${kind}/${mode} exited (${code ?? signal})`
      if (!listening) reject(new Error(`${why}: ${stderr.trim().split('\n').at(-1)}`))
      else console.error(`${why} mid-measure: ${stderr.trim().slice(-2000)}`)
    })
  })
}

function load(port, kind, connections, seconds, pin) {
  const [cmd, cmdArgs] = pinned(pin, 1, process.execPath, loadArgs(kind, port, connections, seconds))
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'ignore'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.once('exit', (code) => {
      try {
        const r = JSON.parse(out)
        resolve({ rps: r.requests.average, errors: r.errors + r.non2xx })
      } catch {
        reject(new Error(`autocannon exited ${code} without a result`))
      }
    })
  })
}

async function measure(node, kind, mode, connections, pin) {
  const server = await startServer(node, kind, mode, pin)
  try {
    await load(server.port, kind, connections, WARMUP, pin)
    server.child.send('measure')
    const { rps, errors } = await load(server.port, kind, connections, DURATION, pin)
    const report = await ask(server.child, 'report')
    const threads =
      report.threadsUs &&
      Object.fromEntries(Object.entries(report.threadsUs).map(([k, us]) => [k, us / report.requests]))
    return { rps, errors, cpuPerRequest: report.cpuUs / report.requests, threads, gc: report.gc, version: server.node }
  } finally {
    server.child.removeAllListeners('exit')
    server.child.kill()
  }
}

/** Whether `mode` runs on this Node at all (Sentry ships one binary per Node ABI); the reason when not. */
/** dd-trace's directory for each Node binary (the version its major runs: bench/server/peers.mjs). */
const ddModules = new Map()

async function available(node, mode) {
  if (mode === 'ddlabels') {
    const major = Number(spawnSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' }).stdout)
    try {
      ddModules.set(node, ddTrace(DD_TRACE(major)))
      return null
    } catch (err) {
      return err.message.slice(0, 120)
    }
  }
  if (mode !== 'sentry10') return null
  const probe = `try { require('@sentry/node-cpu-profiler') } catch (e) { require('@sentry-internal/node-cpu-profiler') }`
  const r = spawnSync(node, ['-e', probe], { cwd: root, encoding: 'utf8' })
  return r.status === 0 ? null : (r.stderr.split('\n').find((l) => /Error/.test(l)) || 'does not load').slice(0, 120)
}

const started = Date.now()
const cells = []
console.log(
  `# per-request matrix: ${ROUNDS} rounds x ${DURATION} s (warm-up ${WARMUP} s), modes ${MODES.join(', ')}; ` +
    `${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)} at start`,
)
console.log(
  '\n| Node | server | conns | pinned | mode | req/s | req/s ratio (spread) | CPU µs/req | CPU ratio (spread) | verdict |',
)
console.log('| --- | --- | ---: | --- | --- | ---: | --- | ---: | --- | --- |')
for (const major of NODES) {
  const node = nodeBinary(major)
  const modes = []
  for (const mode of MODES) {
    const why = await available(node, mode)
    if (why) console.log(`| ${major} | all | | | ${mode} | unavailable: ${why} | | | | |`)
    else modes.push(mode)
  }
  for (const kind of KINDS) {
    for (const connections of CONNECTIONS) {
      for (const pin of PINS) {
        if (pin === 'yes' && !canPin) continue
        const runs = Object.fromEntries(modes.map((m) => [m, []]))
        for (let round = 0; round < ROUNDS; round++) {
          const order = modes.map((_, i) => modes[(i + round) % modes.length])
          for (const mode of order) runs[mode].push(await measure(node, kind, mode, connections, pin))
        }
        const cell = { node: runs.none[0].version, kind, connections, pinned: pin === 'yes', modes: {} }
        for (const mode of modes) {
          const rpsRatios = runs[mode].map((r, i) => r.rps / runs.none[i].rps)
          const cpuRatios = runs[mode].map((r, i) => runs.none[i].cpuPerRequest / r.cpuPerRequest)
          cell.modes[mode] = {
            rps: median(runs[mode].map((r) => r.rps)),
            cpuPerRequest: median(runs[mode].map((r) => r.cpuPerRequest)),
            rpsRatio: median(rpsRatios),
            cpuRatio: median(cpuRatios),
            rpsRatios,
            cpuRatios,
            errors: runs[mode].reduce((n, r) => n + r.errors, 0),
            // Each round's server: V8's mean scavenge pause (ms) and its mark-compacts.
            gc: runs[mode].map((r) => ({
              meanScavengeMs: r.gc.scavengeMs / (r.gc.scavenges || 1),
              markCompacts: r.gc.markCompacts,
            })),
            // Per thread group, µs/request (median over rounds): where a mode's extra CPU goes.
            threads: runs[mode].every((r) => r.threads)
              ? Object.fromEntries(
                  Object.keys(runs[mode][0].threads).map((k) => [k, median(runs[mode].map((r) => r.threads[k]))]),
                )
              : null,
          }
        }
        for (const mode of modes) {
          const m = cell.modes[mode]
          const judged = verdictText(verdict(mode, m.cpuRatio, cell.modes.sentry10?.cpuRatio))
          const ratio = (x) => (mode === 'none' ? '' : `${x.toFixed(3)}x`)
          console.log(
            `| ${cell.node} | ${kind} | ${connections} | ${pin} | ${mode} | ${m.rps.toFixed(0)}${m.errors ? ` (${m.errors} errors)` : ''} | ` +
              `${ratio(m.rpsRatio)}${mode === 'none' ? '' : ` (${spread(m.rpsRatios, 3)})`} | ${m.cpuPerRequest.toFixed(0)} | ` +
              `${ratio(m.cpuRatio)}${mode === 'none' ? '' : ` (${spread(m.cpuRatios, 3)})`} | ${judged} |`,
          )
        }
        cells.push(cell)
      }
    }
  }
}
// Where each mode's CPU per request went, by thread group (Linux /proc; 10 ms ticks, so read it over runs
// of seconds): extra main-thread µs are the profiler's JS and V8's work on the thread it profiles;
// profiler-thread µs are V8's sampling itself.
if (cells.some((c) => Object.values(c.modes).some((m) => m.threads))) {
  console.log('\nCPU µs per request by thread (median over rounds; in brackets: more than `none` of the same cell)\n')
  console.log('| Node | server | conns | pinned | mode | main thread | V8 profiler thread | other threads |')
  console.log('| --- | --- | ---: | --- | --- | ---: | ---: | ---: |')
  for (const cell of cells) {
    const base = cell.modes.none.threads
    for (const [mode, m] of Object.entries(cell.modes)) {
      if (!m.threads || !base) continue
      const col = (k) =>
        `${m.threads[k].toFixed(0)}${mode === 'none' ? '' : ` (${m.threads[k] - base[k] >= 0 ? '+' : ''}${(m.threads[k] - base[k]).toFixed(0)})`}`
      console.log(
        `| ${cell.node} | ${cell.kind} | ${cell.connections} | ${cell.pinned ? 'yes' : 'no'} | ${mode} | ` +
          `${col('main')} | ${col('profiler')} | ${col('other')} |`,
      )
    }
  }
}
console.log(
  '\nV8 collections per round (mean scavenge ms / mark-compacts), in the order of the rounds; * a round whose server' +
    ' V8 had pretenured (gc-state.mjs)\n',
)
console.log('| Node | server | conns | pinned | mode | rounds |')
console.log('| --- | --- | ---: | --- | --- | --- |')
for (const cell of cells) {
  for (const [mode, m] of Object.entries(cell.modes)) {
    const state = pretenuredRounds(m.gc, cell.modes.none.gc)
    const rounds = m.gc
      .map((g, i) => `${g.meanScavengeMs.toFixed(1)} / ${g.markCompacts}${state[i] ? '*' : ''}`)
      .join(', ')
    console.log(
      `| ${cell.node} | ${cell.kind} | ${cell.connections} | ${cell.pinned ? 'yes' : 'no'} | ${mode} | ${rounds} |`,
    )
  }
}
console.log(
  `\nmatrix: ${cells.length} cells in ${((Date.now() - started) / 60000).toFixed(1)} min, load ${os.loadavg()[0].toFixed(2)} at the end`,
)
if (JSON_OUT)
  writeFileSync(
    JSON_OUT,
    JSON.stringify(
      { when: new Date().toISOString(), rounds: ROUNDS, duration: DURATION, v8Flags: V8_FLAGS, cells },
      null,
      1,
    ),
  )
