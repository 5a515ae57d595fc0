// fromCpuProfile(text) against JSON.parse(text) alone, each in a process of its own: interleaved in one
// process, a candidate pays for the garbage of the one before it (the call after fromCpuProfile meets
// the major GC its sample objects call for). Also the JS floor: only making the trace's sample objects
// from the binding's columns, as assembleTrace does.
//
//   node bench/from-cpu-profile-processes.mjs [profile.cpuprofile …]   (default: the synthesized
//   sample-heavy and node-heavy profiles of `BENCH_ONLY=convert`)
//
// Processes alternate A B C × ROUNDS (default 5); each makes 3 warm-up calls and REPS (default 21)
// timed ones and reports their median; printed: the median of those medians and their range.

import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { makeProfileText } from './from-cpu-profile.mjs'
import { median, spread } from './stats.mjs'

const require = createRequire(import.meta.url)
const [mode, ...args] = process.argv.slice(2)

if (mode === '--child') {
  const [candidate, file, reps] = args
  const text = fs.readFileSync(file, 'utf8')
  let call
  if (candidate === 'fromCpuProfile') {
    const { fromCpuProfile } = require('../index.js')
    call = () => fromCpuProfile(text)
  } else if (candidate === 'JSON.parse') {
    call = () => JSON.parse(text)
  } else {
    // The sample objects alone, from the columns the binding hands over (made once, outside the timing).
    const { binding } = require('../lib/native.js')
    const { makeSample } = require('../lib/trace.js')
    const MARKERS = [undefined, 'script', 'gc', 'other', 'style', 'layout', 'paint']
    const { timestamps, stackIds, markers } = binding.convertCpuProfileText(text)
    call = () => {
      const samples = new Array(timestamps.length)
      for (let i = 0; i < samples.length; i++) {
        const stackId = stackIds[i]
        samples[i] = makeSample(MARKERS[markers[i]], stackId >= 0 ? stackId : undefined, timestamps[i])
      }
      return samples
    }
  }
  const times = []
  for (let i = 0; i < Number(reps) + 3; i++) {
    const t0 = performance.now()
    call()
    if (i >= 3) times.push(performance.now() - t0)
  }
  console.log(median(times))
} else {
  const ROUNDS = Number(process.env.ROUNDS || 5)
  const REPS = process.env.REPS || '21'
  let files = [mode, ...args].filter(Boolean)
  let dir
  if (files.length === 0) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-convert-'))
    files = [
      ['sample-heavy.cpuprofile', makeProfileText()],
      ['node-heavy.cpuprofile', makeProfileText({ nodeCount: 40_000, sampleCount: 20_000 })],
    ].map(([name, text]) => {
      const file = path.join(dir, name)
      fs.writeFileSync(file, text)
      return file
    })
  }
  console.log(
    `# fromCpuProfile vs JSON.parse alone, each in its own process (Node ${process.version}, ${ROUNDS} rounds × ${REPS} calls)`,
  )
  try {
    for (const file of files) {
      const runs = { fromCpuProfile: [], 'JSON.parse': [], 'sample objects only': [] }
      for (let round = 0; round < ROUNDS; round++) {
        for (const candidate of Object.keys(runs)) {
          const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', candidate, file, REPS], {
            encoding: 'utf8',
          })
          if (r.status !== 0) throw new Error(`${candidate} on ${file}: ${r.stderr}`)
          runs[candidate].push(Number(r.stdout.trim()))
        }
      }
      const shown = (xs) => `${median(xs).toFixed(1)} ms (${spread(xs, 1)})`
      const ratio = median(runs.fromCpuProfile) / median(runs['JSON.parse'])
      console.log(
        `${path.basename(file)}: fromCpuProfile ${shown(runs.fromCpuProfile)}, JSON.parse ${shown(runs['JSON.parse'])}: ${ratio.toFixed(2)}× ` +
          `(goal ≤ 1.00×); the sample objects alone ${shown(runs['sample objects only'])}`,
      )
    }
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  }
}
