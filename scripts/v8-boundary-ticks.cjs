'use strict'
// Counts, in raw V8 profiles taken with node:inspector alone (no jsprof-node), the ticks V8 takes at a
// call boundary and records with a stack that is not the call path. The call-path tests allow these
// (profiler.spec.mjs, export-speedscope.spec.mjs), and this shows they come from V8, not from us:
//   node scripts/v8-boundary-ticks.cjs [rounds=20]
// The workload is __test__/fixtures/workload.cjs: runAlpha -> spinFor -> burnAlpha, 100 ms a round,
// sampled every 200 µs, inlining off as in the tests. Each burnAlpha tick is classed by its callers:
//   spinFor   the call path (exact)
//   runAlpha  a tick in burnAlpha's prologue: burnAlpha stands in its caller's place (spinFor missing)
//   burnAlpha a tick mid-call: the callee twice
//   pairTwice a tick mid-call (seen on Node 26): burnAlpha < spinFor < burnAlpha < spinFor < runAlpha
const v8 = require('node:v8')
v8.setFlagsFromString('--no-turbo-inlining')
const inspector = require('node:inspector')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const source = fs.readFileSync(path.join(__dirname, '..', '__test__', 'fixtures', 'workload.cjs'), 'utf8')
const session = new inspector.Session()
session.connect()
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))))

async function main() {
  const rounds = Number(process.argv[2] ?? 20)
  const counts = { spinFor: 0, runAlpha: 0, burnAlpha: 0, pairTwice: 0, other: 0 }
  await post('Profiler.enable')
  await post('Profiler.setSamplingInterval', { interval: 200 })
  for (let round = 0; round < rounds; round++) {
    // A fresh copy each round, so every round sees code compiled while profiling.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'v8-ticks-')), 'workload.cjs')
    fs.writeFileSync(file, source.replace('NONCE', `n${round}`))
    const workload = require(file)
    await post('Profiler.start')
    const end = performance.now() + 100
    while (performance.now() < end) {
      workload.runAlpha(10)
      await new Promise((resolve) => setImmediate(resolve))
    }
    const { profile } = await post('Profiler.stop')
    const byId = new Map(profile.nodes.map((node) => [node.id, node]))
    const parentOf = new Map()
    for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node)
    for (const id of profile.samples) {
      if (byId.get(id).callFrame.functionName !== 'burnAlpha') continue
      const callers = []
      for (let node = parentOf.get(id); node && callers.length < 3; node = parentOf.get(node.id))
        callers.push(node.callFrame.functionName)
      const parent = callers.join(' < ') === 'spinFor < burnAlpha < spinFor' ? 'pairTwice' : callers[0]
      counts[parent in counts ? parent : 'other']++
    }
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0)
  console.log(`${process.version}: ${total} burnAlpha ticks in ${rounds} rounds, by parent:`, counts)
}

main().finally(() => session.disconnect())
