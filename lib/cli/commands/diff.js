'use strict'
// `jsprof diff <base> <new> [--by function|package|resource] [--top N] [--fail-above PCT] [-o diff.svg]
// [--json]`: what got slower between two profiles. Rows are summarize()'s (the same as
// `jsprof report`), compared as shares of each profile's samples, so runs of different length compare.

const {
  api,
  parse,
  positiveInt,
  byOption,
  usage,
  writeOutput,
  writeStdout,
  info,
  CliError,
  table,
  label,
  formatBytes,
} = require('../common')
const { readTrace, timingOf } = require('../input')
const { visible } = require('../../text')
const { binding } = require('../../native')
const { toDiffFlameGraph } = require('../../api/export')

/** A row name without its `:line:column`: the same function moved by an edit (the flame graph's rule). */
const unplaced = (name) => binding.unplacedLabel(String(name))

const DEFAULT_TOP = 20

const HELP = `Usage: jsprof diff <base> <new> [options]

Compares two profiles (ProfilerTraces or V8 .cpuprofiles): for each function (default), package or
resource, its self and total time as shares of each profile's samples, and the change in percentage
points. What got slower comes first (largest growth of self or total share), what got faster last.
Two heap profiles (two snapshots of one process) compare by bytes: Δ self is a row's growth in bytes
as a percentage of the base profile's bytes (a leak is the row that grows, even when its share stays),
and --fail-above takes that percentage.

Options:
      --by <what>          function, package or resource (default: function); route: by endpoint
                           (the requests' route label); label:<key>: by any label
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

/** A heap profile's rows as shares of its bytes (self and total), and its bytes. */
function heapShares(profile, by) {
  const rows = api('summarize')(profile, { by })
  const size = rows.reduce((sum, row) => sum + row.selfSize, 0)
  return {
    size,
    rows: rows.map((row) => ({
      row,
      self: size ? row.selfSize / size : 0,
      total: size ? row.totalSize / size : 0,
    })),
  }
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
  const by = values.by === undefined ? 'function' : byOption('diff', values.by)
  const top = values.top === undefined ? DEFAULT_TOP : positiveInt('diff', 'top', values.top)
  const failAbove = values['fail-above'] === undefined ? null : parsePct(values['fail-above'])
  if (positionals.length < 2) throw usage('diff', 'expected two profiles: <base> <new>')
  if (values.output === '') throw usage('diff', '--output must not be empty')
  const [baseFile, newFile] = positionals
  // stdin can be read once: one of the two may come from it, not both.
  if (baseFile === '-' && newFile === '-')
    throw usage('diff', "only one of <base> and <new> can be '-' (stdin is read once)")
  const baseRead = readTrace(baseFile)
  const newRead = readTrace(newFile)
  if (Boolean(baseRead.heap) !== Boolean(newRead.heap)) {
    const [heapFile, otherFile] = baseRead.heap ? [baseFile, newFile] : [newFile, baseFile]
    throw usage('diff', `${heapFile} is a heap profile and ${otherFile} is not: compare two of a kind`)
  }
  const heap = Boolean(baseRead.heap)
  if (heap) byOption('diff', by, { heap: true })
  const baseTrace = heap ? baseRead.heap : baseRead.trace
  const newTrace = heap ? newRead.heap : newRead.trace
  const before = heap ? heapShares(baseTrace, by) : shares(baseTrace, by)
  const after = heap ? heapShares(newTrace, by) : shares(newTrace, by)

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
    if (heap) {
      // A heap grows in bytes, not only in shares (a leak can keep its share while the heap grows): Δ is
      // the row's growth in bytes as a percentage of the base's bytes.
      const r = rows[rows.length - 1]
      r.baseSize = b ? b.row.selfSize : 0
      r.newSize = a ? a.row.selfSize : 0
      r.sizeDelta = r.newSize - r.baseSize
      const grew = (x, y) => (before.size > 0 ? (x - y) / before.size : x > y ? Infinity : 0)
      r.selfDelta = grew(r.newSize, r.baseSize)
      r.totalDelta = grew(a ? a.row.totalSize : 0, b ? b.row.totalSize : 0)
    }
  }
  // What got slower first: the largest growth (of self or total share) on top, what got faster last.
  // (Heap profiles: the growth of a row's own bytes first, which is where a leak allocates.)
  const growth = (r) => (heap ? r.selfDelta : Math.max(r.selfDelta, r.totalDelta))
  rows.sort((x, y) => growth(y) - growth(x) || y.selfDelta - x.selfDelta || y.totalDelta - x.totalDelta)

  if (values.output !== undefined) {
    writeOutput(values.output, toDiffFlameGraph(baseTrace, newTrace, { title: `${baseFile} → ${newFile}` }), {
      inputs: [baseFile, newFile],
    })
    info(`wrote ${values.output}`)
  }

  const shown = rows.slice(0, top)
  if (values.json) {
    const totals = heap
      ? { baseSize: before.size, newSize: after.size }
      : { baseSamples: before.total, newSamples: after.total }
    await writeStdout(`${JSON.stringify({ base: baseFile, new: newFile, by, ...totals, rows: shown }, null, 2)}\n`)
  } else if (heap) {
    const header = ['Δ self', 'Δ bytes', 'bytes base', 'bytes new', 'self base', 'self new', 'kind', 'name']
    const signed = (n) => `${n >= 0 ? '+' : '-'}${formatBytes(Math.abs(n))}`
    const cells = shown.map((r) => [
      pts(r.selfDelta),
      signed(r.sizeDelta),
      formatBytes(r.baseSize),
      formatBytes(r.newSize),
      pct(r.baseSelf),
      pct(r.newSelf),
      visible(r.kind ?? ''),
      label(r),
    ])
    const lines = table(header, cells, ['r', 'r', 'r', 'r', 'r', 'r', 'l', 'l'])
    if (process.stdout.isTTY && !('NO_COLOR' in process.env)) lines[0] = `\x1b[1m${lines[0]}\x1b[22m`
    if (cells.length === 0) lines.push('(no samples)')
    const summary =
      `${visible(baseFile)} (${formatBytes(before.size)}) → ${visible(newFile)} (${formatBytes(after.size)}), ` +
      `heap profiles by ${by}; Δ self: the growth of a row's own bytes, in % of the base's bytes (self base/new: shares)`
    await writeStdout(`${summary}\n\n${lines.join('\n')}\n`)
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
    const summary = `${visible(baseFile)} (${before.total} samples) → ${visible(newFile)} (${after.total} samples), by ${visible(by)}; Δ in percentage points of all samples`
    await writeStdout(`${summary}\n\n${lines.join('\n')}\n`)
  }

  if (failAbove !== null) {
    const grown = rows.filter((r) => r.selfDelta * 100 > failAbove).sort((x, y) => y.selfDelta - x.selfDelta)
    if (grown.length > 0) {
      const first = grown[0]
      const more = grown.length > 1 ? ` and ${grown.length - 1} more` : ''
      const what = heap
        ? `% of the base's bytes (${first.sizeDelta >= 0 ? '+' : '-'}${formatBytes(Math.abs(first.sizeDelta))})`
        : 'points of self time'
      throw new CliError(
        `${label(first)} grew by ${pts(first.selfDelta)}${heap ? '' : ' '}${what}${more}, above --fail-above ${failAbove}`,
        1,
      )
    }
  }
  return 0
}

module.exports = { diff, HELP }
