'use strict'
// `jsprof diff <base> <new> [--by function|package|resource] [--top N] [--fail-above PCT] [-o diff.svg]
// [--json]`: what got slower between two profiles. Rows are summarize()'s (the same as
// `jsprof report`), compared as shares of each profile's samples, so runs of different length compare.

const {
  api,
  parse,
  positiveInt,
  oneOf,
  usage,
  writeOutput,
  writeStdout,
  info,
  CliError,
  table,
  label,
} = require('../common')
const { readTrace, timingOf } = require('../input')
const { visible } = require('../../text')
const { binding } = require('../../native')
const { toDiffFlameGraph } = require('../../api/export')

/** A row name without its `:line:column`: the same function moved by an edit (the flame graph's rule). */
const unplaced = (name) => binding.unplacedLabel(String(name))

const BY = ['function', 'package', 'resource']
const DEFAULT_TOP = 20

const HELP = `Usage: jsprof diff <base> <new> [options]

Compares two profiles (ProfilerTraces or V8 .cpuprofiles): for each function (default), package or
resource, its self and total time as shares of each profile's samples, and the change in percentage
points. What got slower comes first (largest growth of self or total share), what got faster last.

Options:
      --by <what>          function, package or resource (default: function)
      --top <n>            show the first n rows (default: ${DEFAULT_TOP})
      --fail-above <pct>   exit with status 1 when a row's self share (time in its own code) grew
                           by more than <pct> percentage points (for CI); a caller made slower by
                           calling more shows in its total, the callee's self grows
  -o, --output <file>      also write a differential flame graph (SVG): the new profile's call
                           tree, red where it grew since the base (slower), blue where it shrank
      --json               print JSON ({ base, new, by, rows }) instead of a table
  -h, --help               show this help

Rows are matched by name and place; a function moved by an edit (same name and script, another
line) still matches when it is the only one of its name in that script. Sampling has noise: a change of a point or
two between runs of a few hundred samples can be chance; record longer runs for small effects.`

/** A row's identity in one profile, and across two where a function moved (without `:line:col`). */
const exactKey = (row) => `${row.kind}\0${row.name}\0${row.package ?? ''}`
const looseKey = (row) => `${row.kind}\0${unplaced(String(row.name))}\0${row.package ?? ''}`

function parsePct(text) {
  const n = Number(text)
  if (text.trim() === '' || !Number.isFinite(n) || n < 0 || n > 100) {
    throw usage('diff', `--fail-above must be a number of percentage points from 0 to 100, got '${text}'`)
  }
  return n
}

function shares(trace, by) {
  const total = timingOf(trace).samples
  return {
    total,
    rows: api('summarize')(trace, { by }).map((row) => ({
      row,
      self: total ? row.selfSamples / total : 0,
      total: total ? row.totalSamples / total : 0,
    })),
  }
}

/**
 * Pairs the rows of the two profiles: same name and place first; then a function that moved (same
 * name and script, other line) when that leaves exactly one candidate on each side. Unpaired rows are
 * new or gone. Never merges rows, so every share stays one function's.
 */
function pairRows(before, after) {
  const pairs = []
  const group = (list, keyOf) => {
    const m = new Map()
    for (const x of list) {
      const key = keyOf(x.row)
      if (m.has(key)) m.get(key).push(x)
      else m.set(key, [x])
    }
    return m
  }
  const byExact = group(before, exactKey)
  const leftAfter = []
  for (const a of after) {
    const bs = byExact.get(exactKey(a.row))
    if (bs && bs.length) pairs.push([bs.shift(), a])
    else leftAfter.push(a)
  }
  const looseBefore = group([...byExact.values()].flat(), looseKey)
  const looseAfter = group(leftAfter, looseKey)
  for (const [key, as] of looseAfter) {
    const bs = looseBefore.get(key)
    if (bs && bs.length === 1 && as.length === 1) {
      pairs.push([bs[0], as[0]])
      looseBefore.delete(key)
    } else {
      for (const a of as) pairs.push([undefined, a])
    }
  }
  for (const bs of looseBefore.values()) for (const b of bs) pairs.push([b, undefined])
  return pairs
}

const pct = (share) => `${(share * 100).toFixed(1)}%`
const pts = (delta) => `${delta >= 0 ? '+' : ''}${(delta * 100).toFixed(1)}`

async function diff(args) {
  const { values, positionals } = parse(
    'diff',
    args,
    {
      by: { type: 'string' },
      top: { type: 'string' },
      'fail-above': { type: 'string' },
      output: { type: 'string', short: 'o' },
      json: { type: 'boolean' },
    },
    { positionals: 2 },
  )
  if (values.help) {
    process.stdout.write(`${HELP}\n`)
    return 0
  }
  const by = values.by === undefined ? 'function' : oneOf('diff', 'by', values.by, BY)
  const top = values.top === undefined ? DEFAULT_TOP : positiveInt('diff', 'top', values.top)
  const failAbove = values['fail-above'] === undefined ? null : parsePct(values['fail-above'])
  if (positionals.length < 2) throw usage('diff', 'expected two profiles: <base> <new>')
  if (values.output === '') throw usage('diff', '--output must not be empty')
  const [baseFile, newFile] = positionals
  const baseTrace = readTrace(baseFile).trace
  const newTrace = readTrace(newFile).trace
  const before = shares(baseTrace, by)
  const after = shares(newTrace, by)

  const rows = []
  for (const [b, a] of pairRows(before.rows, after.rows)) {
    const row = (a || b).row
    rows.push({
      name: row.name,
      kind: row.kind,
      package: row.package,
      version: row.version,
      baseSelf: b ? b.self : 0,
      newSelf: a ? a.self : 0,
      selfDelta: (a ? a.self : 0) - (b ? b.self : 0),
      baseTotal: b ? b.total : 0,
      newTotal: a ? a.total : 0,
      totalDelta: (a ? a.total : 0) - (b ? b.total : 0),
    })
  }
  // What got slower first: the largest growth (of self or total share) on top, what got faster last.
  const growth = (r) => Math.max(r.selfDelta, r.totalDelta)
  rows.sort((x, y) => growth(y) - growth(x) || y.selfDelta - x.selfDelta)

  if (values.output !== undefined) {
    writeOutput(values.output, toDiffFlameGraph(baseTrace, newTrace, { title: `${baseFile} → ${newFile}` }), {
      inputs: [baseFile, newFile],
    })
    info(`wrote ${values.output}`)
  }

  const shown = rows.slice(0, top)
  if (values.json) {
    await writeStdout(
      `${JSON.stringify({ base: baseFile, new: newFile, by, baseSamples: before.total, newSamples: after.total, rows: shown }, null, 2)}\n`,
    )
  } else {
    const header = ['Δ self', 'self base', 'self new', 'Δ total', 'total base', 'total new', 'kind', 'name']
    const cells = shown.map((r) => [
      pts(r.selfDelta),
      pct(r.baseSelf),
      pct(r.newSelf),
      pts(r.totalDelta),
      pct(r.baseTotal),
      pct(r.newTotal),
      visible(r.kind ?? ''),
      label(r),
    ])
    const lines = table(header, cells, ['r', 'r', 'r', 'r', 'r', 'r', 'l', 'l'])
    if (process.stdout.isTTY && !('NO_COLOR' in process.env)) lines[0] = `\x1b[1m${lines[0]}\x1b[22m`
    if (cells.length === 0) lines.push('(no samples)')
    const summary = `${visible(baseFile)} (${before.total} samples) → ${visible(newFile)} (${after.total} samples), by ${by}; Δ in percentage points of all samples`
    await writeStdout(`${summary}\n\n${lines.join('\n')}\n`)
  }

  if (failAbove !== null) {
    const grown = rows.filter((r) => r.selfDelta * 100 > failAbove).sort((x, y) => y.selfDelta - x.selfDelta)
    if (grown.length > 0) {
      const first = grown[0]
      const more = grown.length > 1 ? ` and ${grown.length - 1} more` : ''
      throw new CliError(
        `${label(first)} grew by ${pts(first.selfDelta)} points of self time${more}, above --fail-above ${failAbove}`,
        1,
      )
    }
  }
  return 0
}

module.exports = { diff, HELP }
