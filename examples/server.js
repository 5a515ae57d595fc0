'use strict'
// Per-request profiles of a node:http server, in one command:
//
//   node examples/server.js            (drives itself with a few requests, prints, exits)
//   node examples/server.js --serve    (keeps serving on http://127.0.0.1:3000: try curl)
//
// Every 2nd request is profiled: its trace holds only the samples taken while that request's own
// code ran. For each profile this prints the request, its hottest functions and the package report
// (summarize(trace): which package the sampled code belongs to). Set PYROSCOPE_URL=http://host:4040 to also push
// continuous profiles to a Pyroscope server.

const http = require('node:http')
const { profileRequests, startContinuous, pyroscopeExporter, summarize } = require('..')

// --- a tiny app with two kinds of CPU work ------------------------------------------------------
function renderReport(rows) {
  let html = ''
  for (let i = 0; i < rows; i++) html += `<tr><td>${i}</td><td>${Math.sqrt(i).toFixed(3)}</td></tr>`
  return html
}

function hashPassword(password, rounds) {
  let h = 0
  for (let r = 0; r < rounds; r++)
    for (let i = 0; i < password.length; i++) h = (Math.imul(h, 31) + password.charCodeAt(i) + r) | 0
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
function printProfile(p) {
  const { trace } = p
  const withStack = trace.samples.filter((s) => s.stackId !== undefined).length
  console.log(
    `\n${p.method} ${p.url} -> ${p.statusCode} in ${p.durationMs.toFixed(1)} ms: ` +
      `${trace.samples.length} samples of its own code (${withStack} with a JS stack, every ${p.sampleInterval} ms)`,
  )
  const hot = summarize(trace, { by: 'function' }).filter((r) => r.selfSamples > 0)
  for (const row of hot.slice(0, 3)) {
    console.log(`   ${String(row.selfSamples).padStart(4)} self  ${row.name}`)
  }
  const packages = summarize(trace, { by: 'package' })
  console.log(
    `   package report: ${
      packages
        .filter((r) => r.selfSamples > 0)
        // A package's row says its kind; `(node)`, `(gc)`, … are their kind already.
        .map((r) => `${r.name}${r.name.startsWith('(') ? '' : ` (${r.kind})`} ${r.selfSamples}`)
        .join(', ') || 'no samples'
    }`,
  )
}

// --- wiring -------------------------------------------------------------------------------------
const requests = profileRequests({ sampleRate: 0.5, sampleInterval: 1, onProfile: printProfile })
const server = http.createServer(requests.wrap(app))

let continuous = null
if (process.env.PYROSCOPE_URL) {
  const exporter = pyroscopeExporter({
    url: process.env.PYROSCOPE_URL,
    appName: 'jsprof.example',
    labels: { env: 'dev' },
  })
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
  for (const pair of [
    ['/report', '/login'],
    ['/login', '/report'],
    ['/report', '/login'],
  ]) {
    await Promise.all(pair.map((path) => fetch(base + path).then((r) => r.text())))
  }
  await requests.close()
  if (continuous) await continuous.stop()
  server.close()
  console.log(`\n${JSON.stringify(requests.stats)}`)
})
