'use strict'
// `jsprof report trace.json [--by package|function|resource] [--top N] [--json]`: where the time went,
// as an aligned table (summarize() rows), or JSON for machines.

const {
  api,
  parse,
  positiveInt,
  byOption,
  usage,
  writeStdout,
  formatDuration,
  formatBytes,
  table,
  label,
} = require('../common')
const { readTrace, timingOf } = require('../input')
const { applySourceMaps, SOURCE_MAP_OPTIONS, SOURCE_MAP_HELP } = require('../sourcemaps')
const { visible } = require('../../text')

const DEFAULT_TOP = 20

const HELP = `Usage: jsprof report <trace.json|profile.cpuprofile> [options]

Prints where the time went: one row per package (default), function or resource, sorted by self time.
For a heap profile (jsprof record --heap, HeapProfiler, a .heapprofile from node --heap-prof or
DevTools): which code holds the bytes, sorted by self bytes.

Options:
      --by <what>    package, function or resource (default: package); route: by endpoint (the
                     requests' route label: which endpoint burns the CPU); label:<key>: by any label
      --top <n>      show the first n rows (default: ${DEFAULT_TOP})
      --json         print JSON ({ file, thread?, by, samples, durationMs, intervalMs, sampledMs, rows,
                     sourceMapsNotUsed }) instead of a table
${SOURCE_MAP_HELP}
  -h, --help         show this help

The first line says how many samples over how long, the interval they were taken at and the time they
stand for ("sampled": less than the span for a trace cut out of a longer run, such as a request's).

Columns: self ms / total ms are the time the samples stand for (each sample weighs the gap to the
next within its run, as in summarize() and every export); self % and total % are those times as shares of the
whole trace's time (idle included), so the % and ms columns always agree; samples counts the self
samples; kind is app, dependency, node, generated or native (idle, gc or other for samples without
a JS stack). Generated code (new Function, eval, vm without a filename: ajv's validators,
fast-json-stringify's serializers) is a row of its own, "(generated, called from <package>)", named by
the code that called it: a V8 profile does not say which code compiled it.`

function percent(part, whole) {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '-'
}

function ms(value) {
  return typeof value === 'number' && Number.isFinite(value) ? value.toFixed(1) : '-'
}

async function report(args) {
  const { values, positionals } = parse(
    'report',
    args,
    { by: { type: 'string' }, top: { type: 'string' }, json: { type: 'boolean' }, ...SOURCE_MAP_OPTIONS },
    { positionals: 1 },
  )
  if (values.help) {
    process.stdout.write(`${HELP}\n`)
    return 0
  }
  const by = values.by === undefined ? 'package' : byOption('report', values.by)
  const top = values.top === undefined ? DEFAULT_TOP : positiveInt('report', 'top', values.top)
  if (positionals.length === 0) throw usage('report', 'missing the trace file')
  const file = positionals[0]
  const read = readTrace(file)
  if (read.heap) return heapReport(file, read, byOption('report', by, { heap: true }), top, values)
  const { trace, notUsed } = await applySourceMaps(read.trace, values)
  const all = api('summarize')(trace, { by })
  const rows = all.slice(0, top)
  // Every sample is some row's self time once: their sum is the trace's time.
  const totalTime = all.reduce((sum, row) => sum + row.selfTime, 0)
  const { samples: total, durationMs, intervalMs, sampledMs } = timingOf(trace)

  if (values.json) {
    const thread = read.thread ?? undefined
    await writeStdout(
      `${JSON.stringify({ file, thread, by, samples: total, durationMs, intervalMs, sampledMs, stall: read.stall, rows, sourceMapsNotUsed: notUsed }, null, 2)}\n`,
    )
    return 0
  }
  const shown =
    rows.length < all.length
      ? `, top ${rows.length} of ${all.length} ${by === 'function' ? 'functions' : by.startsWith('label:') ? 'values' : `${by}s`}`
      : ''
  const summary =
    `${visible(file)}${read.thread ? ` (${read.thread})` : ''}: ${total} samples over ${formatDuration(durationMs)}` +
    (intervalMs > 0 ? ` (every ${intervalMs.toFixed(2)} ms)` : '') +
    (total > 0 ? `, ${formatDuration(sampledMs)} sampled` : '') +
    `, by ${visible(by)}${shown}`
  const stallLine = read.stall ? `\n${describeStall(read.stall, trace, by, all)}` : ''
  const header = ['self %', 'self ms', 'total %', 'total ms', 'samples', 'kind', 'name (version)']
  const cells = rows.map((row) => [
    percent(row.selfTime, totalTime),
    ms(row.selfTime),
    percent(row.totalTime, totalTime),
    ms(row.totalTime),
    String(row.selfSamples),
    visible(row.kind ?? ''),
    label(row),
  ])
  const lines = table(header, cells, ['r', 'r', 'r', 'r', 'r', 'l', 'l'])
  const color = process.stdout.isTTY && !('NO_COLOR' in process.env)
  if (color) lines[0] = `\x1b[1m${lines[0]}\x1b[22m`
  if (cells.length === 0) lines.push('(no samples)')
  await writeStdout(`${summary}${stallLine}\n\n${lines.join('\n')}\n`)
  return 0
}

/** The row that held the loop: the first with a JS stack (samples without one are idle, gc, native). */
function holder(rows) {
  return rows.find((row) => !['idle', 'gc', 'other'].includes(row.kind))
}

/**
 * How long (ms of its CPU time) a stalled thread may run before its `stack` is taken and the stack
 * still be the stalled code's (`stackDelayMs`: JS takes the interrupt at once).
 */
const LATE_STACK_MS = 10

/**
 * A stall trace's line: how long the event loop was blocked, and which function and package held it
 * (the rows with the most self time among those with a JS stack) with their share of the trace's time.
 */
function describeStall(stall, trace, by, rows) {
  const summarize = api('summarize')
  const byFunction = by === 'function' ? rows : summarize(trace, { by: 'function' })
  const byPackage = by === 'package' ? rows : summarize(trace, { by: 'package' })
  const total = byFunction.reduce((sum, row) => sum + row.selfTime, 0)
  const fn = holder(byFunction)
  const pkg = holder(byPackage)
  const how = stall.ended ? 'the loop then turned again' : 'still blocked when this trace was taken'
  const held =
    fn && total > 0
      ? `; held by ${label(fn)} (${percent(fn.selfTime, total)} of the trace)` +
        (pkg ? `, package ${label(pkg)} (${percent(pkg.selfTime, total)})` : '')
      : '; no JS stack sampled (native code, or the trace began at the detection: see keepWarm)'
  // The detection's interrupt runs only in JS: a stack taken this late waited for native code (a C++
  // builtin such as JSON.parse, a synchronous call such as crypto.pbkdf2Sync) to return, and shows
  // the JS that ran next (docs/production.md#event-loop-stalls-watchstalls).
  const when =
    stall.stackDelayMs >= LATE_STACK_MS
      ? `${formatDuration(stall.stackDelayMs)} after the detection, once native code returned`
      : 'at the detection'
  const stack = Array.isArray(stall.stack)
    ? `\nstack ${when} (innermost first): ${stall.stack.slice(0, 4).map(visible).join(' < ')}`
    : ''
  return `event-loop stall: blocked ${formatDuration(stall.durationMs)} (threshold ${formatDuration(stall.thresholdMs)}; ${how})${held}${stack}`
}

/** The report of a heap profile: which code holds the bytes (inuse) or allocated them (allocated). */
async function heapReport(file, read, by, top, values) {
  const { trace: heap } = await applySourceMaps(read.heap, values)
  const all = api('summarize')(heap, { by })
  const rows = all.slice(0, top)
  const totalSize = all.reduce((sum, row) => sum + row.selfSize, 0)
  const samples = all.reduce((sum, row) => sum + row.selfSamples, 0)
  const settings = heap.jsprof.heap
  const view = settings.view === 'allocated' ? 'allocated' : 'inuse'
  if (values.json) {
    const thread = read.thread ?? undefined
    const { samplingInterval, inlining } = settings
    await writeStdout(
      `${JSON.stringify({ file, thread, by, view, size: totalSize, samples, samplingInterval, inlining, rows }, null, 2)}\n`,
    )
    return 0
  }
  const shown =
    rows.length < all.length
      ? `, top ${rows.length} of ${all.length} ${by === 'function' ? 'functions' : `${by}s`}`
      : ''
  const what = view === 'allocated' ? 'allocated (collected or not)' : 'in use'
  const every = settings.samplingInterval ? `, a sample every ${formatBytes(settings.samplingInterval)}` : ''
  const summary =
    `${visible(file)}${read.thread ? ` (${read.thread})` : ''}: heap profile, ${formatBytes(totalSize)} ${what} ` +
    `in ${samples} samples${every}, by ${by}${shown}`
  const header = ['self %', 'self', 'total %', 'total', 'samples', 'kind', 'name (version)']
  const cells = rows.map((row) => [
    percent(row.selfSize, totalSize),
    formatBytes(row.selfSize),
    percent(row.totalSize, totalSize),
    formatBytes(row.totalSize),
    String(row.selfSamples),
    visible(row.kind ?? ''),
    label(row),
  ])
  const lines = table(header, cells, ['r', 'r', 'r', 'r', 'r', 'l', 'l'])
  if (process.stdout.isTTY && !('NO_COLOR' in process.env)) lines[0] = `\x1b[1m${lines[0]}\x1b[22m`
  if (cells.length === 0) lines.push('(no samples)')
  const note = inliningNote(settings.inlining)
  await writeStdout(`${summary}\n${note ? `${note}\n` : ''}\n${lines.join('\n')}\n`)
  return 0
}

/**
 * What a heap profile taken while V8 inlined means for small helpers, said once above the rows; none
 * for one taken with inlining off (jsprof.heap.inlining false).
 */
function inliningNote(inlining) {
  if (inlining === false) return ''
  const when =
    inlining === true ? 'V8 inlined functions while this profile was taken' : 'V8 inlines functions unless told not to'
  return (
    `note: ${when}: a small function inlined into its caller has no frame of its own, so what it ` +
    `allocated is charged to its caller (and its caller's package). jsprof record --heap and ` +
    `new HeapProfiler({ inlining: false }) charge each allocation to the function that made it (docs/heap.md)`
  )
}

module.exports = { report, HELP }
