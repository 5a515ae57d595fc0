// A Profiler profiles the thread that created it, with that thread's performance.now() clock.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import { Profiler } from 'jsprof-node'
import { sampledNames, assertWellFormed, workloadPath } from './helpers.mjs'

function runWorker(source) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData: { workloadPath } })
    worker.once('message', resolve)
    worker.once('error', reject)
    worker.once('exit', (code) => code !== 0 && reject(new Error(`worker exited with ${code}`)))
  })
}

test('a Profiler in a worker profiles the worker, on the worker clock', async () => {
  const main = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
  const result = await runWorker(`
    const { parentPort, workerData } = require('node:worker_threads')
    const { Profiler } = require('jsprof-node')
    const workload = require(workerData.workloadPath)
    ;(async () => {
      const before = performance.now()
      const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
      function workerOnlyFunction(ms) { return workload.runBeta(ms) }
      for (let i = 0; i < 15; i++) { workerOnlyFunction(10); await new Promise(r => setImmediate(r)) }
      const trace = await p.stop()
      parentPort.postMessage({ trace, before, after: performance.now() })
    })()
  `)
  const mainTrace = await main.stop()
  const { trace, before, after } = result
  assertWellFormed(trace)
  const names = sampledNames(trace)
  assert.ok(names.has('workerOnlyFunction'), 'the worker trace has the worker code')
  assert.ok(!sampledNames(mainTrace).has('workerOnlyFunction'), 'the main trace does not')
  // Timestamps are in the worker's performance.now() domain (its origin is the worker's start).
  assert.ok(trace.samples[0].timestamp >= before && trace.samples.at(-1).timestamp <= after + 1)
})

test('several workers profile at once without interfering', async () => {
  const source = (tag) => `
    const { parentPort, workerData } = require('node:worker_threads')
    const { Profiler } = require('jsprof-node')
    const workload = require(workerData.workloadPath)
    ;(async () => {
      const p = new Profiler({ sampleInterval: 2, maxBufferSize: 100000 })
      function ${tag}(ms) { return workload.runAlpha(ms) }
      for (let i = 0; i < 10; i++) { ${tag}(8); await new Promise(r => setImmediate(r)) }
      parentPort.postMessage(await p.stop())
    })()
  `
  const [a, b] = await Promise.all([runWorker(source('inWorkerA')), runWorker(source('inWorkerB'))])
  assert.ok(sampledNames(a).has('inWorkerA') && !sampledNames(a).has('inWorkerB'))
  assert.ok(sampledNames(b).has('inWorkerB') && !sampledNames(b).has('inWorkerA'))
})
