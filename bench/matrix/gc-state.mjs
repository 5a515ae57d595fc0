// Which rounds of a mode ran in a server whose young objects V8 had pretenured
// (bench/results/matrix-pretenuring.md): the one rule for run.mjs's
// collections table and table.mjs's marks.
//
// A server in that state keeps it for its life: its scavenges take several times as long (what they
// copy is what V8 now allocates in old space and scans) and it runs mark-compacts every second or so. A
// round counts as such when its mean scavenge pause is at least twice the median of the `none` rounds
// of the same cell, or it ran at least 4 more mark-compacts than their median. Node 20's servers run
// mark-compacts in every mode under this load; the rule compares with `none` of the same cell for that.

import { median } from '../stats.mjs'

/** The least factor on `none`'s mean scavenge pause that counts, and the least extra mark-compacts. */
const SCAVENGE_FACTOR = 2
const EXTRA_MARK_COMPACTS = 4

/**
 * One boolean per round of `gc` (a mode's rounds: `{ meanScavengeMs, markCompacts }`), true where the
 * round's server was in the pretenured state by the rule above; all false when `noneGc` (the cell's
 * `none` rounds) or `gc` is missing (files from before run.mjs recorded collections).
 */
export function pretenuredRounds(gc, noneGc) {
  if (!gc || !noneGc || noneGc.length === 0) return (gc || []).map(() => false)
  const scavenge = median(noneGc.map((g) => g.meanScavengeMs))
  const markCompacts = median(noneGc.map((g) => g.markCompacts))
  return gc.map(
    (g) => g.meanScavengeMs >= SCAVENGE_FACTOR * scavenge || g.markCompacts >= markCompacts + EXTRA_MARK_COMPACTS,
  )
}
