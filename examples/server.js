'use strict'
// Per-request profiles of a node:http server, in one command:
//
//   node examples/server.js            (drives itself with a few requests, prints, exits)
//   node examples/server.js --serve    (keeps serving on http://127.0.0.1:3000: try curl)
//
// Every 2nd request is profiled: its trace holds only the samples taken while that request's own
// code ran. For each profile this prints the request, its hottest functions and a package report
// (which package the sampled code belongs to). Set PYROSCOPE_URL=http://host:4040 to also push
// continuous profiles to a Pyroscope server.

const http = require('node:http')
const { profileRequests, startContinuous, pyroscopeExporter } = require('..')

// --- a tiny app with two kinds of CPU work ------------------------------------------------------
function renderReport(rows) {
  let html = ''
  for (let i = 0; i < rows; i++) html += `<tr><td>${i}</td><td>${Math.sqrt(i).toFixed(3)}</td></tr>`
  return html
}

function hashPassword(password, rounds) {
  let h = 0
  for (let r = 0; r < rounds; r++) for (let i = 0; i < password.length; i++) h = (Math.imul(h, 31) + password.charCodeAt(i) + r) | 0
  return h
}

async function app(req, res) {
  if (req.url.startsWith('/report')) {
    const html = renderReport(60_000)
    res.setHeader('content-type', 'text/html')
    res.end(`<table>${html.length}</table>`)
  } else if (req.url.startsWith('/login')) {
    await new Promise((resolve) => setTimeout(resolve, 5)) // a "database" round trip
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ token: hashPassword('correct horse battery staple', 200_000) }))
  } else {
    res.statusCode = 404
    res.end('try /report or /login\n')
  }
}

// --- reading a trace ----------------------------------------------------------------------------
/** The package a resource URL belongs to: node:* is node, node_modules/<pkg> a dependency, else app. */
function packageOf(url) {
  if (url === undefined) return '(native/VM)'
  if (url.startsWith('node:')) return 'node'
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  return m ? m[1] : 'app'
}

function summarize(trace) {
  const selfByFunction = new Map()
  const byPackage = new Map()
  let withStack = 0
  for (const sample of trace.samples) {
    if (sample.stackId === undefined) continue
    withStack++
    const frame = trace.frames[trace.stacks[sample.stackId].frameId]
    const name = `${frame.name || '(anonymous)'} ${frame.resourceId === undefined ? '' : trace.resources[frame.resourceId].split('/').pop()}:${frame.line ?? '?'}`
    selfByFunction.set(name, (selfByFunction.get(name) || 0) + 1)
    const pkg = packageOf(frame.resourceId === undefined ? undefined : trace.resources[frame.resourceId])
    byPackage.set(pkg, (byPackage.get(pkg) || 0) + 1)
  }
  const top = (map) => [...map].sort((a, b) => b[1] - a[1])
  return { withStack, functions: top(selfByFunction).slice(0, 3), packages: top(byPackage) }
}

function printProfile(p) {
  const { withStack, functions, packages } = summarize(p.trace)
  console.log(
    `\n${p.method} ${p.url} -> ${p.statusCode} in ${p.durationMs.toFixed(1)} ms: ` +
      `${p.trace.samples.length} samples of its own code (${withStack} with a JS stack, every ${p.sampleInterval} ms)`,
  )
  for (const [name, n] of functions) console.log(`   ${String(n).padStart(4)}  ${name}`)
  console.log(`   packages: ${packages.map(([pkg, n]) => `${pkg} ${((100 * n) / Math.max(1, withStack)).toFixed(0)}%`).join(', ')}`)
}

// --- wiring -------------------------------------------------------------------------------------
const requests = profileRequests({ sampleRate: 0.5, sampleInterval: 1, onProfile: printProfile })
const server = http.createServer(requests.wrap(app))

let continuous = null
if (process.env.PYROSCOPE_URL) {
  const exporter = pyroscopeExporter({ url: process.env.PYROSCOPE_URL, appName: 'jsprof.example', labels: { env: 'dev' } })
  continuous = startContinuous({ sampleInterval: 10, chunkSeconds: 10, onChunk: exporter.push })
  console.log(`pushing continuous profiles to ${process.env.PYROSCOPE_URL}`)
}

const serve = process.argv.includes('--serve')
server.listen(serve ? 3000 : 0, '127.0.0.1', async () => {
  const base = `http://127.0.0.1:${server.address().port}`
  if (serve) {
    console.log(`listening on ${base}: curl ${base}/report, curl ${base}/login`)
    return
  }
  console.log(`driving ${base} with 6 requests, two at a time (every 2nd one is profiled)`)
  for (const pair of [['/report', '/login'], ['/login', '/report'], ['/report', '/login']]) {
    await Promise.all(pair.map((path) => fetch(base + path).then((r) => r.text())))
  }
  await requests.close()
  if (continuous) await continuous.stop()
  server.close()
  console.log(`\n${JSON.stringify(requests.stats)}`)
})
