'use strict'
// npm start: profile a small, real workload with the JS Self-Profiling API and print where the time went.
//
// The code below is what a browser would run too: new Profiler(...), work, await profiler.stop().
// It is an app of its own (package.json beside it: quickstart-app), as yours would be: the report
// charges its functions to quickstart-app, zlib and crypto to Node, and none to jsprof-node.

const crypto = require('node:crypto')
const zlib = require('node:zlib')
const { Profiler, summarize } = require('../..')

function hashPasswords(n) {
  let out = ''
  for (let i = 0; i < n; i++) out = crypto.createHash('sha256').update(`secret-${i}-${out}`).digest('hex')
  return out
}

function buildReport(rows) {
  return JSON.stringify(rows.map((r) => ({ ...r, label: `${r.name}:${r.value.toFixed(2)}` })))
}

function parseReport(text) {
  return JSON.parse(text).filter((r) => /^[a-z]+\d*:\d+\.\d\d$/.test(r.label))
}

function compress(text) {
  return zlib.gzipSync(text).length
}

function sortNumbers(n) {
  const values = Array.from({ length: n }, () => Math.random())
  return values.sort((a, b) => a - b)[n >> 1]
}

async function work(ms) {
  const end = performance.now() + ms
  while (performance.now() < end) {
    hashPasswords(200)
    const rows = Array.from({ length: 300 }, (_, i) => ({ name: `row${i}`, value: Math.random() * 100 }))
    const text = buildReport(rows)
    parseReport(text)
    compress(text)
    sortNumbers(5000)
    await new Promise((resolve) => setImmediate(resolve)) // yield, as a server would
  }
}

const here = `file://${__dirname}/`

function table(rows, top) {
  const pct = (part, whole) => `${((100 * part) / whole).toFixed(1).padStart(5)}%`
  const all = rows.reduce((sum, r) => sum + r.selfSamples, 0)
  for (const r of rows.slice(0, top)) {
    const version = r.version && !r.name.includes(' ') ? `@${r.version}` : ''
    const name = r.name.replace(here, './')
    console.log(
      `  ${pct(r.selfSamples, all)} self  ${pct(r.totalSamples, all)} total  ${r.kind.padEnd(10)} ${name}${version}`,
    )
  }
}

async function main() {
  const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 10000 })
  await work(1000)
  const trace = await profiler.stop()

  console.log(
    `${trace.samples.length} samples at ${profiler.sampleInterval} ms: ` +
      `${trace.frames.length} frames, ${trace.stacks.length} stacks, ${trace.resources.length} resources`,
  )
  console.log('\nby package (app code, node: internals, builtins, and idle/gc/other):')
  table(summarize(trace, { by: 'package' }), 8)
  console.log('\ntop functions by self time:')
  table(summarize(trace, { by: 'function' }), 8)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
