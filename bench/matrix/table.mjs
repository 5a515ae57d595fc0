// The per-request matrix's summary table, from the JSON files of one or more `run.mjs --json` runs (a
// cell per line: each mode's CPU ratio to `none` of the same round, median and spread), so the table in
// docs/bench.md is printed, not assembled by hand, even when the cells were measured in several runs.
//
//   node bench/matrix/table.mjs out1.json [out2.json …]
//
// Marks: ✘ below the target, ≤S not ahead of Sentry's ratio (sentry10) in the same cell and run (the
// targets and that rule: targets.mjs). A mode measured in more than one file: the last file wins (`none
// µs/req` and sentry10 shown are the cell's last run's), but each mode is judged against the sentry10 of
// its own file, so a later run with sentry10 leaves the earlier modes' comparison as it was; `≤S 0.958×`
// names that Sentry ratio when it is not the one shown. A run whose servers had V8 flags of their own
// (`run.mjs --v8-flags`) is left out, said on stderr. `P2`: 2 of the mode's rounds ran in a server V8 had
// put in its pretenured state (gc-state.mjs), whatever the mode costs; runs recorded before run.mjs kept
// V8's collections have no such marks.
// Prints figures; asserts nothing.

import { readFileSync } from 'node:fs'
import { targetOf, verdict } from './targets.mjs'
import { pretenuredRounds } from './gc-state.mjs'
import { spread } from '../stats.mjs'

const files = process.argv.slice(2)
if (files.length === 0) {
  console.error('usage: node bench/matrix/table.mjs out.json [more.json …]')
  process.exit(2)
}

const cells = new Map()
const whens = []
for (const file of files) {
  const run = JSON.parse(readFileSync(file, 'utf8'))
  // A run with V8 flags of its own (run.mjs --v8-flags) is an experiment on the servers, not the matrix.
  if (run.v8Flags && run.v8Flags.length > 0) {
    console.error(`${file}: its servers ran with ${run.v8Flags.join(' ')}: left out of the table`)
    continue
  }
  whens.push(`${run.when.slice(0, 16)}Z ${run.rounds}x${run.duration}s`)
  for (const cell of run.cells) {
    const major = cell.node.replace(/^v/, '').split('.')[0]
    // A mode's ratios are paired within its own run, so a later run may add or replace single modes.
    const key = `${major}|${cell.kind}|${cell.connections}|${cell.pinned}`
    const earlier = cells.get(key)
    // Each mode's pretenured rounds, against the `none` of its own run.
    const modes = Object.fromEntries(
      Object.entries(cell.modes).map(([m, figures]) => [
        m,
        { ...figures, file, pretenured: pretenuredRounds(figures.gc, cell.modes.none?.gc).filter(Boolean).length },
      ]),
    )
    const sentryByFile = { ...(earlier && earlier.sentryByFile) }
    if (cell.modes.sentry10) sentryByFile[file] = cell.modes.sentry10.cpuRatio
    cells.set(key, { major, ...cell, modes: { ...(earlier && earlier.modes), ...modes }, sentryByFile })
  }
}

const KINDS = ['http-sync', 'http-async', 'express', 'fastify']
const sorted = [...cells.values()].sort(
  (a, b) =>
    a.major - b.major ||
    KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind) ||
    a.connections - b.connections ||
    Number(a.pinned) - Number(b.pinned),
)
const modes = [...new Set(sorted.flatMap((c) => Object.keys(c.modes)))].filter((m) => m !== 'none')
const tally = Object.fromEntries(modes.map((m) => [m, { cells: 0, met: 0, ahead: 0, vsSentry: 0, missedInState: 0 }]))

console.log(`measured: ${whens.join('; ')}\n`)
console.log(`| Node | server | conns | pinned | none µs/req | ${modes.join(' | ')} |`)
console.log(`| --- | --- | ---: | --- | ---: | ${modes.map(() => '---').join(' | ')} |`)
for (const c of sorted) {
  const cols = modes.map((mode) => {
    const m = c.modes[mode]
    if (!m) return ''
    const t = tally[mode]
    t.cells++
    let marks = ''
    const v = verdict(mode, m.cpuRatio, c.sentryByFile[m.file])
    if (v) {
      if (v.met) t.met++
      else {
        marks += ' ✘'
        if (m.pretenured > 0) t.missedInState++
      }
      if (v.ahead !== null) {
        t.vsSentry++
        if (v.ahead) t.ahead++
        // The Sentry ratio it lost to, when that is not the one shown (a later run measured sentry10 again).
        else marks += c.modes.sentry10.file === m.file ? ' ≤S' : ` ≤S ${c.sentryByFile[m.file].toFixed(3)}×`
      }
    }
    if (m.pretenured > 0) marks += ` P${m.pretenured}`
    return `${m.cpuRatio.toFixed(3)}× (${spread(m.cpuRatios, 3)})${marks}`
  })
  console.log(
    `| ${c.major} | ${c.kind} | ${c.connections} | ${c.pinned ? 'yes' : 'no'} | ${c.modes.none.cpuPerRequest.toFixed(0)} | ${cols.join(' | ')} |`,
  )
}
console.log()
for (const [mode, t] of Object.entries(tally)) {
  const target = targetOf(mode)
  if (target === undefined || t.cells === 0) continue
  console.log(
    `${mode}: >= ${target}x in ${t.met} of ${t.cells} cells` +
      (t.vsSentry ? `; ahead of Sentry in ${t.ahead} of ${t.vsSentry}` : '') +
      (t.missedInState ? `; of its misses, ${t.missedInState} with a pretenured round (P)` : ''),
  )
}
