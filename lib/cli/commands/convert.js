'use strict'
// `jsprof convert <in> --to <format> [-o out]` and `jsprof flamegraph <in> [-o flame.svg]`.

const path = require('node:path')
const { api, parse, oneOf, usage, writeOutput, writeStdout, info, CliError } = require('../common')
const { readTrace } = require('../input')
const { applySourceMaps, SOURCE_MAP_OPTIONS, SOURCE_MAP_HELP } = require('../sourcemaps')

// format -> [exporter name in index.js, file suffix, binary?]
const FORMATS = {
  cpuprofile: { fn: 'toCpuProfile', suffix: '.cpuprofile', json: true },
  gecko: { fn: 'toGeckoProfile', suffix: '.gecko.json', json: true },
  speedscope: { fn: 'toSpeedscope', suffix: '.speedscope.json', json: true },
  pprof: { fn: 'toPprof', suffix: '.pb.gz', binary: true },
  collapsed: { fn: 'toCollapsed', suffix: '.collapsed.txt' },
  heapprofile: { fn: 'toHeapProfile', suffix: '.heapprofile', heapOnly: true },
}
// What a heap profile converts to (it has bytes, not times).
const HEAP_FORMATS = ['pprof', 'collapsed', 'heapprofile']

const FORCE_OPTION = { force: { type: 'boolean', short: 'f' } }
const FORCE_HELP = `  -f, --force           replace an existing file at the default output name`

const CONVERT_HELP = `Usage: jsprof convert <trace.json|profile.cpuprofile> --to <format> [-o <file>]

Converts a ProfilerTrace (or a V8 .cpuprofile) for other tools.

Formats:
  cpuprofile   V8 CPU profile: Chrome DevTools, VS Code           (<name>.cpuprofile)
  gecko        Firefox Profiler, https://profiler.firefox.com      (<name>.gecko.json)
  speedscope   https://www.speedscope.app                          (<name>.speedscope.json)
  pprof        gzipped profile.proto: go tool pprof                 (<name>.pb.gz)
  collapsed    folded stacks 'a;b;c N': flamegraph.pl, inferno     (<name>.collapsed.txt)
  heapprofile  V8 heap profile: Chrome DevTools' Memory panel       (<name>.heapprofile)

A heap profile (jsprof record --heap, HeapProfiler, node --heap-prof's .heapprofile) converts to
pprof (sample type space, or alloc_space), collapsed (bytes per stack) and heapprofile.

Options:
      --to <format>     the output format (required)
  -o, --output <file>   where to write ('-' for stdout; never for pprof on a terminal)
                        (default: next to the input, with the suffix above; an existing
                        file there is not replaced without --force)
${FORCE_HELP}
${SOURCE_MAP_HELP}
  -h, --help            show this help`

const FLAMEGRAPH_HELP = `Usage: jsprof flamegraph <trace.json|profile.cpuprofile> [-o flame.svg] [--html] [--title <text>]

Draws a flame graph: an SVG image with a tooltip per frame, or with --html one self-contained page
(works offline) to explore it: click a frame to zoom, search, tooltips with time, share and package.

Options:
  -o, --output <file>   where to write ('-' for stdout) (default: next to the input, .svg or .html;
                        an existing file there is not replaced without --force)
${FORCE_HELP}
      --html            write the explorable HTML page instead of the SVG image
      --title <text>    the title drawn on top (default: the input file name)
${SOURCE_MAP_HELP}
  -h, --help            show this help`

/**
 * `make()`, with a format's refusal of a trace too large for it (a RangeError that names the limit:
 * speedscope repeats every sample's whole stack) as one line and exit status 1, not an internal error.
 */
function refusedAsCliError(what, make) {
  try {
    return make()
  } catch (err) {
    if (err instanceof RangeError) throw new CliError(`cannot write ${what}: ${err.message}`, 1)
    throw err
  }
}

/** `dir/name.trace.json` -> `dir/name<suffix>`, never the input itself. */
function derivedPath(input, suffix) {
  const dir = path.dirname(input)
  const base = path.basename(input).replace(/(\.trace|\.heap)?\.json$|\.cpuprofile$|\.heapprofile$/i, '')
  let candidate = path.join(dir, base + suffix)
  if (path.resolve(candidate) === path.resolve(input)) candidate = path.join(dir, `${base}.converted${suffix}`)
  return candidate
}

/**
 * Writes the result: to stdout for '-', else a file. A file -o names (or any with --force) may be
 * replaced; a default name beside the input never replaces an existing file; the input never.
 */
async function emit(command, values, input, defaultOutput, data, { binary = false } = {}) {
  const output = values.output ?? defaultOutput
  if (output === '-') {
    if (binary && process.stdout.isTTY) {
      throw usage(command, 'refusing to write binary pprof data to a terminal: use -o <file> or a pipe')
    }
    await writeStdout(data)
    return
  }
  writeOutput(output, data, { replace: values.output !== undefined || values.force === true, inputs: [input] })
  info(`wrote ${output}`)
}

async function convert(args) {
  const { values, positionals } = parse(
    'convert',
    args,
    { to: { type: 'string' }, output: { type: 'string', short: 'o' }, ...FORCE_OPTION, ...SOURCE_MAP_OPTIONS },
    { positionals: 1 },
  )
  if (values.help) {
    process.stdout.write(`${CONVERT_HELP}\n`)
    return 0
  }
  if (values.to === undefined) throw usage('convert', `missing --to (one of ${Object.keys(FORMATS).join(', ')})`)
  const format = FORMATS[oneOf('convert', 'to', values.to, Object.keys(FORMATS))]
  if (positionals.length === 0) throw usage('convert', 'missing the trace file')
  if (values.output === '') throw usage('convert', '--output must not be empty')
  const input = positionals[0]
  const read = readTrace(input)
  if (read.heap && !HEAP_FORMATS.includes(values.to)) {
    throw usage('convert', `${input} is a heap profile: it converts to ${HEAP_FORMATS.join(', ')}, not ${values.to}`)
  }
  if (!read.heap && format.heapOnly) {
    throw usage('convert', `${input} is not a heap profile: --to ${values.to} takes one`)
  }
  const { trace } = await applySourceMaps(read.heap ?? read.trace, values)
  // JSON formats as the text Rust writes (no object parsed to be stringified again). The exporters show
  // the recording's clock (time origin, pid) from the trace's own `jsprof` member.
  const data = refusedAsCliError(`--to ${values.to}`, () =>
    format.heapOnly
      ? require('../../api/heap').heapProfileText(trace)
      : format.json
        ? require('../../api/export').JSON_TEXT[format.fn](trace)
        : api(format.fn)(trace),
  )
  await emit('convert', values, input, derivedPath(input, format.suffix), data, format)
  return 0
}

async function flamegraph(args) {
  const { values, positionals } = parse(
    'flamegraph',
    args,
    {
      output: { type: 'string', short: 'o' },
      title: { type: 'string' },
      html: { type: 'boolean' },
      ...FORCE_OPTION,
      ...SOURCE_MAP_OPTIONS,
    },
    { positionals: 1 },
  )
  if (values.help) {
    process.stdout.write(`${FLAMEGRAPH_HELP}\n`)
    return 0
  }
  if (positionals.length === 0) throw usage('flamegraph', 'missing the trace file')
  if (values.output === '') throw usage('flamegraph', '--output must not be empty')
  const input = positionals[0]
  const read = readTrace(input)
  const { trace } = await applySourceMaps(read.heap ?? read.trace, values)
  const format = values.html ? 'html' : 'svg'
  const text = api('toFlameGraph')(trace, { title: values.title ?? path.basename(input), format })
  await emit('flamegraph', values, input, derivedPath(input, `.${format}`), text)
  return 0
}

module.exports = { convert, flamegraph, derivedPath, CONVERT_HELP, FLAMEGRAPH_HELP, FORMATS }
