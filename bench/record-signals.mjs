// Two figures of the `jsprof` CLI on a live process:
//  1. time from one SIGTERM to the exit of `jsprof record` (trace written), for an app spinning in a
//     loop that never returns and for one that yields, the signal sent to the app;
//  2. what `jsprof attach` costs a server: requests served per second by a small HTTP server
//     (sequential keep-alive requests from this process), alternating 3 s windows without and with
//     an attach recording at 1 ms.
//   node bench/record-signals.mjs        (BENCH_ROUNDS=5 by default)
// Prints figures; asserts nothing about time.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './stats.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5)
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-bench-signals-'))
const app = path.join(tmp, 'app.js')
fs.writeFileSync(
  app,
  `function spin() { let x = 0; for (;;) for (let i = 0; i < 1e5; i++) x += Math.sqrt(i) }
function burn(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1) }
const http = require('node:http')
if (process.argv[2] === 'server') {
  const s = http.createServer((req, res) => { let x = 0; for (let i = 0; i < 2e4; i++) x += Math.sqrt(i); res.end('ok') })
  s.listen(0, '127.0.0.1', () => console.log('ready ' + process.pid + ' ' + s.address().port))
} else {
  console.log('ready ' + process.pid)
  if (process.argv[2] === 'spin') spin(); else setInterval(() => burn(5), 10)
}`,
)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

function start(args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve({ code, at: performance.now() })))
  const ready = new Promise((resolve) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      const m = /ready (\d+)(?: (\d+))?/.exec(out)
      if (m) resolve({ pid: Number(m[1]), port: Number(m[2]) })
    })
  })
  return { child, exited, ready }
}

console.log(
  `${os.cpus()[0]?.model} ×${os.cpus().length}, Node ${process.version}, load ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
)
console.log('\nSIGTERM to the app under `jsprof record` -> jsprof exited (trace written), ms:')
for (const mode of ['spin', 'yield']) {
  const times = []
  for (let i = 0; i < ROUNDS; i++) {
    const run = start([BIN, 'record', '-o', path.join(tmp, `${mode}.trace.json`), '--', process.execPath, app, mode])
    const { pid } = await run.ready
    await sleep(1000)
    const t = performance.now()
    process.kill(pid, 'SIGTERM')
    const { code, at } = await run.exited
    if (code !== 143) throw new Error(`exit ${code}`)
    times.push(at - t)
  }
  console.log(
    `  ${mode === 'spin' ? 'spinning app' : 'yielding app'}: median ${median(times).toFixed(0)} ms (${times.map((x) => x.toFixed(0)).join(' ')})`,
  )
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
function served(port, ms) {
  return new Promise((resolve) => {
    let n = 0
    const end = performance.now() + ms
    const next = () => {
      if (performance.now() >= end) return resolve((n * 1000) / ms)
      http.get({ host: '127.0.0.1', port, agent }, (res) => {
        res.resume()
        res.on('end', () => {
          n++
          next()
        })
      })
    }
    next()
  })
}
const server = start([app, 'server'])
const { pid, port } = await server.ready
await served(port, 1000)
const without = []
const withAttach = []
for (let i = 0; i < ROUNDS; i++) {
  without.push(await served(port, 3000))
  const attach = start([BIN, 'attach', String(pid), '--duration', '4s', '-o', path.join(tmp, 'attach.trace.json')])
  await sleep(700) // the inspector opens and the recording starts
  withAttach.push(await served(port, 3000))
  await attach.exited
}
server.child.kill()
console.log('\nserver requests/s, sequential keep-alive, 3 s windows:')
console.log(`  without attach: median ${median(without).toFixed(0)} (${without.map((x) => x.toFixed(0)).join(' ')})`)
console.log(
  `  during attach (1 ms sampling): median ${median(withAttach).toFixed(0)} (${withAttach.map((x) => x.toFixed(0)).join(' ')}), ${((median(withAttach) / median(without) - 1) * 100).toFixed(1)}%`,
)
fs.rmSync(tmp, { recursive: true, force: true })
