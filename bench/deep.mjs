// Deep stacks (issue 16): summarize and every exporter on a chain of `depth` nested frames, each
// depth sampled once — a recursion thousands deep. The tree formats (summarize, cpuprofile, Gecko, the
// flame graph) must stay linear in depth; the formats that repeat each sample's whole stack (pprof,
// speedscope, collapsed) refuse past MAX_FRAME_REFERENCES with a RangeError instead of running for
// minutes into gigabytes and a V8 string error. Each function runs in a fresh child process, so its
// peak RSS is its own.
//
//   node bench/deep.mjs [--depths 10000,100000]

import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const args = process.argv.slice(2)
const depthsArg = args.includes('--depths') ? args[args.indexOf('--depths') + 1] : '10000,100000'
const DEPTHS = depthsArg.split(',').map(Number)
const FUNCTIONS = [
  'summarize',
  'toCpuProfile',
  'toGeckoProfile',
  'toFlameGraph',
  'toPprof',
  'toSpeedscope',
  'toCollapsed',
]
const root = fileURLToPath(new URL('..', import.meta.url))

const CHILD = `
const j = require(${JSON.stringify(root)})
const [depth, name] = [Number(process.argv[1]), process.argv[2]]
const t = { resources: ['file:///app/deep.js'], frames: [], stacks: [], samples: [] }
for (let i = 0; i < depth; i++) {
  t.frames.push({ name: 'f' + i, resourceId: 0, line: i + 1, column: 1 })
  t.stacks.push(i === 0 ? { frameId: 0 } : { frameId: i, parentId: i - 1 })
  t.samples.push({ timestamp: i, stackId: i })
}
const before = process.memoryUsage().rss
const t0 = performance.now()
let outcome
try {
  const r = name === 'summarize' ? j.summarize(t, { by: 'function' }) : j[name](t)
  outcome = 'ok'
} catch (e) { outcome = e.constructor.name }
const ms = performance.now() - t0
console.log(JSON.stringify({ ms, outcome, rssMB: process.resourceUsage().maxRSS / 1024 }))
`

console.log(`\n# deep stacks: a chain of N nested frames, each depth sampled once (fresh process per call)`)
console.log('| function | ' + DEPTHS.map((d) => `${d.toLocaleString('en')} deep`).join(' | ') + ' |')
console.log('| --- | ' + DEPTHS.map(() => '---:').join(' | ') + ' |')
for (const name of FUNCTIONS) {
  const cells = DEPTHS.map((depth) => {
    const r = spawnSync(process.execPath, ['-e', CHILD, String(depth), name], { encoding: 'utf8', timeout: 300_000 })
    if (r.status !== 0) return `failed (${r.signal || r.status})`
    const { ms, outcome, rssMB } = JSON.parse(r.stdout)
    return `${outcome === 'ok' ? '' : `${outcome} `}${ms.toFixed(0)} ms, ${rssMB.toFixed(0)} MB peak`
  })
  console.log(`| ${name} | ${cells.join(' | ')} |`)
}
