// Exercises every export of the binding for scripts/memcheck.sh (run under valgrind): live Profilers
// (chunks harvested from the inspector, recordings, traces built on the libuv pool), fromCpuProfile on
// good and bad input, the column road with bad columns, and GC of everything.
'use strict'
const { Profiler, fromCpuProfile } = require('../..')
const { binding } = require('../../lib/native')

function burn(ms) {
  const end = performance.now() + ms
  let x = 0
  while (performance.now() < end) x += Math.sqrt(x + 1)
  return x
}

const good = JSON.stringify({
  nodes: [
    { id: 1, callFrame: { functionName: '(root)', url: '' }, children: [2, 3] },
    { id: 2, callFrame: { functionName: '(garbage collector)', url: '' } },
    { id: 3, callFrame: { functionName: 'main', url: 'file:///a.js', lineNumber: 1, columnNumber: 2 }, children: [4] },
    { id: 4, callFrame: { functionName: 'leaf', url: 'file:///a.js', lineNumber: 5, columnNumber: 0 } },
  ],
  startTime: 0,
  endTime: 100,
  samples: [4, 3, 2, 4, 1],
  timeDeltas: [1, 2, 3, 4, 5],
})
const bad = [
  '',
  '{',
  '{"nodes":[]}',
  good.replace('[2, 3]', '[2, 9]'),
  good.replace('"samples":[4,3,2,4,1]', '"samples":[4]'),
  '{"nodes":[{"id":1,"callFrame":{"functionName":"a","url":""},"children":[1]}],"startTime":0,"samples":[],"timeDeltas":[]}',
]

;(async () => {
  let errors = 0
  for (let i = 0; i < 20; i++) {
    fromCpuProfile(good)
    for (const text of bad) {
      try {
        fromCpuProfile(text)
      } catch {
        errors++
      }
    }
  }
  // The column road with inconsistent columns: errors, never a crash.
  const cols = {
    ids: new Int32Array([1, 2]),
    childCounts: new Uint32Array([5, 0]),
    children: new Int32Array([2]),
    names: new Uint32Array([0, 7]),
    urls: new Uint32Array([0, 0]),
    lines: new Int32Array([0, 0]),
    columns: new Int32Array([0, 0]),
    strings: ['a'],
    samples: new Int32Array([2]),
    timeDeltas: new Float64Array([1]),
    startTime: 0,
    endTime: 1,
  }
  try {
    binding.Chunk.fromInspector(cols, 1000)
  } catch {
    errors++
  }
  let samples = 0
  for (let round = 0; round < 3; round++) {
    const ps = [1, 2, 5].map((ms) => new Profiler({ sampleInterval: ms, maxBufferSize: round === 1 ? 3 : 10000 }))
    burn(30)
    await new Promise((r) => setTimeout(r, 5))
    burn(30)
    const traces = await Promise.all(ps.map((p) => p.stop()))
    for (const t of traces) samples += t.samples.length
  }
  // A forgotten profiler, collected.
  ;(() => new Profiler({ sampleInterval: 1, maxBufferSize: 100 }))()
  if (global.gc) for (let i = 0; i < 3; i++) global.gc()
  console.log(`exercise: ${errors} expected errors, ${samples} samples`)
})()
