// The per-request targets and the one rule that judges a mode against them, for bench/matrix/run.mjs,
// bench/matrix/table.mjs and bench/server/run.mjs.
//
// Targets, as a ratio to no profiler in the same round (1.000x = free): issue 28 (and issue 9 before it)
// for the per-request modes (every 10th request, by the plain Profiler or by profileRequests; every
// request), issue 41 for profileRequests on every request (labels on), issue 26 for V8's sampling heap
// profiler running for the whole run.
export const TARGETS = { prof10: 0.95, req10: 0.95, profall: 0.9, reqall: 0.9, heap: 0.97 }

/** A mode's target: by its name without the stop-gap (`prof10~250`) or tag (`none#2`) suffix; undefined if none. */
export const targetOf = (mode) => TARGETS[mode.split(/[~#]/)[0]]

/**
 * The verdict on one mode's ratio (null when the mode has no target): `met` when the ratio reaches the
 * target; `ahead` when it beats Sentry's per-transaction profiler (sentry10), or null when Sentry's ratio
 * is not given. Ahead of Sentry is judged only within one run (the same rounds, the same machine state):
 * pass `sentryRatio` only when sentry10 ran in the same run as the mode.
 */
export function verdict(mode, ratio, sentryRatio) {
  const target = targetOf(mode)
  if (target === undefined) return null
  const ahead = sentryRatio === undefined || mode === 'sentry10' ? null : ratio > sentryRatio
  return { target, met: ratio >= target, ahead }
}

/** The verdict as words, for the per-run tables: `met (>= 0.95), ahead of Sentry`. */
export const verdictText = (v) =>
  v
    ? `${v.met ? 'met' : 'NOT met'} (>= ${v.target})` +
      (v.ahead === null ? '' : v.ahead ? ', ahead of Sentry' : ', NOT ahead of Sentry')
    : ''
