// The benchmarks' command-line options: `--name value` pairs (one reading rule for every script).
const argv = process.argv.slice(2)

/** The value after `--name`, else `fallback`. */
export const arg = (name, fallback) => {
  const i = argv.indexOf(`--${name}`)
  return i >= 0 ? argv[i + 1] : fallback
}

/** The comma-separated list after `--name` (else `fallback`'s), empty items left out. */
export const list = (name, fallback) => arg(name, fallback).split(',').filter(Boolean)

/** The number after `--name`, else `fallback`. */
export const num = (name, fallback) => Number(arg(name, fallback))
