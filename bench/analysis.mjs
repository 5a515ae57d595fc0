// Prints how long summarize() takes on a synthetic trace, and what one cached attribute() call costs.
// Run: node bench/analysis.mjs (after npm run build).
import { summarize, attribute } from '../index.js'
// A synthetic trace: 201 resources (50 packages, app code, a node: internal), 2,000 frames, 20,000 stacks, 100,000 samples.
const resources = []
for (let i = 0; i < 200; i++)
  resources.push(i % 4 === 0 ? `file:///srv/app/src/m${i}.js` : `/srv/app/node_modules/pkg${i % 50}/lib/f${i}.js`)
resources.push('node:internal/timers')
const frames = []
for (let i = 0; i < 2000; i++)
  frames.push(
    i % 10 === 0 ? { name: `builtin${i}` } : { name: `f${i}`, resourceId: i % resources.length, line: i, column: 1 },
  )
const stacks = []
let seed = 1
const rnd = (n) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n
for (let i = 0; i < 20000; i++)
  stacks.push(
    i < 100 || rnd(30) === 0 ? { frameId: rnd(2000) } : { frameId: rnd(2000), parentId: i - 1 - rnd(Math.min(i, 50)) },
  )
const samples = []
for (let i = 0; i < 100000; i++)
  samples.push(i % 20 === 0 ? { timestamp: i } : { timestamp: i, stackId: rnd(20000), marker: 'script' })
const trace = { resources, frames, stacks, samples }
for (const by of ['package', 'function', 'resource']) {
  const t0 = performance.now()
  const rows = summarize(trace, { by })
  console.log(
    `summarize by ${by}: ${rows.length} rows from ${samples.length} samples, ${stacks.length} stacks in ${(performance.now() - t0).toFixed(1)} ms`,
  )
}
const t1 = performance.now()
for (let i = 0; i < 100000; i++) attribute(resources[i % resources.length])
console.log(`attribute: ${(((performance.now() - t1) * 1000) / 100000).toFixed(2)} µs per call (cached)`)
