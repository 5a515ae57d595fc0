// The benchmarks' one median and the one way they print a spread.

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
