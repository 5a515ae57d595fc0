// A large .cpuprofile through the CLI (issues 12 and 16): `jsprof report` and `jsprof convert` of a
// profile of N samples (default 10 million: ~85 MB, a few hours of `node --cpu-prof`), each in a child
// process, with its wall time and peak RSS. The profile is generated here (bench/synth-profile.mjs),
// never committed.
//
//   node bench/large-input.mjs [--samples 10000000]

import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { synthesizeProfile } from './synth-profile.mjs'

const args = process.argv.slice(2)
const SAMPLES = args.includes('--samples') ? Number(args[args.indexOf('--samples') + 1]) : 10_000_000
const BIN = fileURLToPath(new URL('../bin/jsprof.js', import.meta.url))

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-large-'))
const file = path.join(dir, 'large.cpuprofile')
try {
  // Written in pieces: one JSON.stringify of ten million samples would need a string V8 cannot make.
  const { samples, timeDeltas, ...rest } = synthesizeProfile({ sampleCount: SAMPLES })
  const fd = fs.openSync(file, 'w')
  fs.writeSync(fd, `${JSON.stringify(rest).slice(0, -1)},"samples":[`)
  for (let i = 0; i < samples.length; i += 100_000)
    fs.writeSync(fd, (i ? ',' : '') + samples.slice(i, i + 100_000).join(','))
  fs.writeSync(fd, '],"timeDeltas":[')
  for (let i = 0; i < timeDeltas.length; i += 100_000)
    fs.writeSync(fd, (i ? ',' : '') + timeDeltas.slice(i, i + 100_000).join(','))
  fs.writeSync(fd, ']}')
  fs.closeSync(fd)
  const mb = (fs.statSync(file).size / 2 ** 20).toFixed(0)
  console.log(
    `\n# a ${SAMPLES.toLocaleString('en')}-sample .cpuprofile (${mb} MiB) through the CLI (child process each)`,
  )
  console.log('| command | wall | peak RSS | exit |')
  console.log('| --- | ---: | ---: | ---: |')
  for (const command of [
    ['report', file],
    ['report', file, '--by', 'function'],
    ['convert', file, '--to', 'pprof', '-o', path.join(dir, 'out.pb.gz')],
    ['convert', file, '--to', 'cpuprofile', '-o', path.join(dir, 'out.cpuprofile')],
    ['convert', file, '--to', 'gecko', '-o', path.join(dir, 'out.gecko.json')],
    ['convert', file, '--to', 'speedscope', '-o', path.join(dir, 'out.speedscope.json')],
    ['convert', file, '--to', 'collapsed', '-o', path.join(dir, 'out.collapsed.txt')],
    ['flamegraph', file, '-o', path.join(dir, 'out.svg')],
    ['flamegraph', file, '--html', '-o', path.join(dir, 'out.html')],
  ]) {
    const t0 = performance.now()
    // GNU time gives the child's peak RSS; without it (no `time` package), no memory figure.
    const timed = fs.existsSync('/usr/bin/time')
    const r = timed
      ? spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, BIN, ...command], {
          encoding: 'utf8',
          maxBuffer: 1 << 26,
        })
      : spawnSync(process.execPath, [BIN, ...command], { encoding: 'utf8', maxBuffer: 1 << 26 })
    const ms = performance.now() - t0
    const lines = r.stderr.trim().split('\n')
    const kb = timed ? Number(lines.pop()) : NaN
    const shown = command.map((a) => (a.startsWith(dir) ? path.basename(a) : a)).join(' ')
    // What a failing command said (its one line), so that a refusal shows as one.
    const said =
      r.status === 0
        ? ''
        : ` ${lines
            .filter((l) => !l.startsWith('Command exited'))
            .join(' ')
            .slice(0, 160)}`
    console.log(`| jsprof ${shown} | ${(ms / 1000).toFixed(1)} s | ${(kb / 1024).toFixed(0)} MB | ${r.status}${said} |`)
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
