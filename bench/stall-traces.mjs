// Event-loop stall reports side by side: jsprof-node's watchStalls and Sentry's event-loop-block
// integration (@sentry/node-native), each on the same Express server (__test__/fixtures/stall-server.cjs)
// with three blocking routes — a catastrophic regular expression, a synchronous JSON.parse of a large
// body, while (true) {} — under light load (a GET every 50 ms). For each route it prints how long
// the request blocked the loop, when each tool reported (ms after the request was sent) and what the
// report names; for the spin, how long one SIGTERM then took to end the process.
//
// Sentry's events go to a fake ingest run here (its DSN), so what it would send is what is shown.
//
//   node bench/stall-traces.mjs [--threshold 300] [--n 26]

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { arg } from './args.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const fixture = path.join(here, '..', '__test__', 'fixtures', 'stall-server.cjs')
const THRESHOLD = Number(arg('threshold', 300))
const N = Number(arg('n', 26))
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A fake Sentry ingest: every event it is sent, with when it arrived. */
async function fakeSentry() {
  const events = []
  const server = http.createServer((req, res) => {
    const parts = []
    req.on('data', (d) => parts.push(d))
    req.on('end', () => {
      let body = Buffer.concat(parts)
      if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body)
      const lines = body.toString('utf8').split('\n')
      for (let i = 1; i + 1 < lines.length; i += 2) {
        try {
          const header = JSON.parse(lines[i])
          if (header.type === 'event') events.push({ at: Date.now(), event: JSON.parse(lines[i + 1]) })
        } catch {
          // Not JSON: another item type's payload.
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { events, dsn: `http://public@127.0.0.1:${server.address().port}/1`, close: () => server.close() }
}

function sentryWhat(event) {
  const ex = event.exception?.values?.[0]
  const frames = (ex?.stacktrace?.frames || []).slice(-3).reverse()
  return `"${ex?.value}"; stack (innermost first): ${frames.map((f) => f.function || '?').join(' < ')}`
}

async function run(tool, sentry) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stall-bench-'))
  const env = { ...process.env, STALLS: tool, THRESHOLD_MS: String(THRESHOLD), STALL_DIR: dir, KEEP_WARM: '1' }
  if (tool === 'sentry') env.SENTRY_DSN = sentry.dsn
  const child = spawn(process.execPath, [fixture], { env, stdio: ['ignore', 'pipe', 'inherit'] })
  const lines = []
  let buffer = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (d) => {
    buffer += d
    let i
    while ((i = buffer.indexOf('\n')) >= 0) {
      lines.push({ ...JSON.parse(buffer.slice(0, i)), arrived: Date.now() })
      buffer = buffer.slice(i + 1)
    }
  })
  while (!lines.some((l) => l.listening)) await sleep(20)
  const base = `http://127.0.0.1:${lines.find((l) => l.listening).listening}`
  for (let i = 0; i < 3; i++) await fetch(`${base}/ok?name=aaaa`).then((r) => r.text())
  await sleep(THRESHOLD * 2) // Sentry's watchdog starts in a worker.
  const load = setInterval(() => fetch(`${base}/ok`).catch(() => {}), 50)
  const rows = []
  const reports = () =>
    tool === 'sentry'
      ? sentry.events.map((e) => ({ at: e.at, what: sentryWhat(e.event) }))
      : lines
          .filter((l) => l.stall !== undefined)
          .map((l) => ({ at: l.arrived, what: `trace of ${l.stall} ms; most sampled stack: ${l.leaf.join(' < ')}` }))
  const route = async (name, send) => {
    const before = reports().length
    const filesBefore = new Set(fs.readdirSync(dir))
    const sent = Date.now()
    // jsprof: when a trace of this stall is first on disk (written while the loop is still blocked
    // when the turn outlasts threshold + stuckMs).
    let fileAt = null
    const watchDir = setInterval(() => {
      if (fileAt === null && fs.readdirSync(dir).some((f) => f.endsWith('.json') && !filesBefore.has(f)))
        fileAt = Date.now()
    }, 5)
    await send()
    const blocked = Date.now() - sent
    await sleep(Math.max(1500, THRESHOLD * 3))
    clearInterval(watchDir)
    const got = reports().slice(before)
    const onDisk = tool === 'jsprof' && fileAt !== null ? [{ afterMs: fileAt - sent, what: 'file in dir' }] : []
    rows.push({ tool, name, blocked, got: [...onDisk, ...got.map((r) => ({ afterMs: r.at - sent, what: r.what }))] })
  }
  await route('ReDoS', () => fetch(`${base}/redos?n=${N}`).then((r) => r.text()))
  const body = JSON.stringify(Array.from({ length: 400_000 }, (_, i) => ({ id: i, name: `item${i}`, tags: ['a'] })))
  await route('JSON.parse', () => fetch(`${base}/parse`, { method: 'POST', body }).then((r) => r.text()))
  clearInterval(load)

  // The spin: the first report while the loop spins (jsprof: the file in STALL_DIR), then SIGTERM.
  const before = tool === 'sentry' ? sentry.events.length : 0
  const filesBefore = new Set(fs.readdirSync(dir))
  const sent = Date.now()
  fetch(`${base}/spin`).catch(() => {})
  let firstAt = null
  let what = ''
  while (Date.now() - sent < 5000 && firstAt === null) {
    await sleep(5)
    if (tool === 'sentry' && sentry.events.length > before) {
      firstAt = sentry.events[before].at
      what = sentryWhat(sentry.events[before].event)
    } else if (tool === 'jsprof') {
      const file = fs.readdirSync(dir).find((f) => f.endsWith('.json') && !filesBefore.has(f))
      if (file) {
        firstAt = Date.now()
        const trace = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))
        what = `trace of ${Math.round(trace.jsprof.stall.durationMs)} ms so far (ended: false), ${trace.samples.length} samples`
      }
    }
  }
  await sleep(500)
  const killedAt = Date.now()
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
  const [code, signal] = await exited
  clearTimeout(timer)
  rows.push({
    tool,
    name: 'while (true)',
    blocked: null,
    got: firstAt === null ? [] : [{ afterMs: firstAt - sent, what }],
    exit: `${signal || code} ${Date.now() - killedAt} ms after one SIGTERM`,
  })
  fs.rmSync(dir, { recursive: true, force: true })
  return rows
}

const sentry = await fakeSentry()
console.log(
  `# stall reports, threshold ${THRESHOLD} ms, ReDoS n=${N}; load: ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
)
console.log('\n| tool | route | loop blocked (ms) | reported (ms after the request) | what the report says |')
console.log('|---|---|---|---|---|')
for (const tool of ['jsprof', 'sentry']) {
  for (const row of await run(tool, sentry)) {
    const blocked = row.blocked === null ? 'never ends' : String(row.blocked)
    const when = row.got.length === 0 ? 'nothing' : row.got.map((g) => g.afterMs).join(', ')
    const what = row.got.map((g) => g.what).join(' / ') + (row.exit ? `; exit: ${row.exit}` : '')
    console.log(
      `| ${tool === 'jsprof' ? 'jsprof-node watchStalls (keepWarm)' : '@sentry/node-native'} | ${row.name} | ${blocked} | ${when} | ${what.replaceAll('|', '\\|')} |`,
    )
  }
}
sentry.close()
