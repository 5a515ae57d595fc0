// The benchmarks' one median and the one way they print a spread.
import os from 'node:os'

/** The median (the mean of the two middle values for an even count). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** `min–max` of `xs`, each with `digits` decimals. */
export const spread = (xs, digits) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`

/** `median (min–max)` of `xs`, each with `digits` decimals. */
export const medianSpread = (xs, digits) => `${median(xs).toFixed(digits)} (${spread(xs, digits)})`

/**
 * A distribution-free ~95% interval of the median of `xs`: the order statistics s[i] and s[n-1-i] of
 * the sorted values, with i the largest index at which P(Binomial(n, 1/2) <= i) <= 2.5% — the chance
 * that s[i] lies above the true median (at most i values below it), and by symmetry that s[n-1-i]
 * lies below it. null below 6 values.
 */
export function medianInterval(xs) {
  const s = [...xs].sort((a, b) => a - b)
  const n = s.length
  let p = 2 ** -n // P(B = 0)
  let cdf = 0
  let i = -1
  for (let k = 0; k < n; k++) {
    cdf += p
    if (cdf > 0.025) break
    i = k
    p = (p * (n - k)) / (k + 1)
  }
  return i < 0 ? null : [s[i], s[n - 1 - i]]
}

/** The load averages (1, 5, 15 min), for a benchmark's figures: on a shared machine they say how busy it was. */
export const loadAvg = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')

/** The machine's line heading a benchmark's figures: CPU model and count, Node, load. */
export const machine = () => `${os.cpus()[0]?.model} ×${os.cpus().length}, Node ${process.version}, load ${loadAvg()}`
