'use strict'
// npm start: profile a small, real workload with the JS Self-Profiling API and print where the time went.
//
// The code below is what a browser would run too: new Profiler(...), work, await profiler.stop().

const crypto = require('node:crypto')
const zlib = require('node:zlib')
const { Profiler } = require('..')

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

function frameLabel(trace, frame) {
  const where = frame.resourceId === undefined ? '' : ` ${trace.resources[frame.resourceId].replace(/^file:\/\/.*\//, '')}:${frame.line}`
  return `${frame.name || '(anonymous)'}${where}`
}

async function main() {
  const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 10000 })
  await work(1000)
  const trace = await profiler.stop()

  const self = new Map()
  let idle = 0
  let gc = 0
  for (const sample of trace.samples) {
    if (sample.stackId === undefined) {
      if (sample.marker === 'gc') gc++
      else idle++
      continue
    }
    const label = frameLabel(trace, trace.frames[trace.stacks[sample.stackId].frameId])
    self.set(label, (self.get(label) || 0) + 1)
  }
  const total = trace.samples.length
  console.log(`${total} samples at ${profiler.sampleInterval} ms: ${trace.frames.length} frames, ${trace.stacks.length} stacks, ${trace.resources.length} resources`)
  console.log(`idle/other ${((idle / total) * 100).toFixed(1)}%, gc ${((gc / total) * 100).toFixed(1)}%`)
  console.log('top functions by self samples:')
  for (const [label, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 10)) {
    console.log(`  ${((n / total) * 100).toFixed(1).padStart(5)}%  ${label}`)
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
