'use strict'
// `jsprof <command> …`: dispatch, --help, --version, and the one rule for failures: one line on
// stderr (`jsprof: …`) and exit status 2 for bad arguments or input files — never a stack trace
// (set JSPROF_DEBUG=1 to see one for an internal error).

const { CliError, usage, shown } = require('./common')

const COMMANDS = {
  record: () => require('./commands/record').record,
  report: () => require('./commands/report').report,
  convert: () => require('./commands/convert').convert,
  flamegraph: () => require('./commands/convert').flamegraph,
  diff: () => require('./commands/diff').diff,
  attach: () => require('./commands/attach').attach,
}

const HELP = `Usage: jsprof <command> [options]

Sampling CPU profiles of Node.js processes, as WICG JS Self-Profiling traces.

Commands:
  record [-o trace.json] [--interval ms] [--flush-every ms] -- node app.js …
                        profile a whole Node process; the trace is written when it ends,
                        including on Ctrl-C, SIGTERM (also while it spins) and process.exit()
  attach <pid> [--duration 10s] [-o trace.json] [--interval ms]
                        profile a running Node process (opens its inspector for the
                        recording's duration, then closes it)
  report <trace> [--by package|function|resource] [--top N] [--json]
                        where the time went, as a table
  convert <trace> --to cpuprofile|gecko|speedscope|pprof|collapsed [-o out]
                        convert for DevTools, Firefox Profiler, speedscope, pprof, flamegraph.pl
  flamegraph <trace> [-o flame.svg] [--html]
                        a flame graph: SVG, or an explorable HTML page
  diff <base> <new> [--by function|package] [--fail-above PCT] [-o diff.svg]
                        what got slower: shares per row, a differential flame graph, a CI status

<trace> is a ProfilerTrace (.trace.json) or a V8 CPU profile (.cpuprofile, e.g. from node --cpu-prof).
report, convert and flamegraph map frames through the source maps the profiled files name or have
beside them (TypeScript, bundles); --no-source-maps keeps the generated positions.

Options:
  -h, --help            show help ('jsprof <command> --help' for a command's)
  -v, --version         print the version

Exit status: 0 done; 2 bad arguments, or an input that cannot be read or is not a trace; 1 an
output that cannot be written (or exists: -o names it, --force replaces it), 'diff' when a row grew
past --fail-above, or an internal error; 'record': the profiled command's own (127: not found).`

function version() {
  return require('../../package.json').version
}

async function run(argv) {
  const [first, ...rest] = argv
  if (first === undefined) {
    process.stderr.write(`${HELP}\n`)
    return 2
  }
  if (first === '-h' || first === '--help') {
    process.stdout.write(`${HELP}\n`)
    return 0
  }
  if (first === '-v' || first === '--version') {
    process.stdout.write(`${version()}\n`)
    return 0
  }
  if (first === 'help') {
    if (rest.length === 0) {
      process.stdout.write(`${HELP}\n`)
      return 0
    }
    return run([rest[0], '--help'])
  }
  if (first.startsWith('-')) throw usage(null, `unknown option '${first}'`)
  if (!Object.hasOwn(COMMANDS, first)) throw usage(null, `unknown command '${first}'`)
  return COMMANDS[first]()(rest)
}

/** Runs the CLI and sets the process exit status; never throws. */
async function main(argv = process.argv.slice(2)) {
  let code
  try {
    code = await run(argv)
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`jsprof: ${shown(err.message)}\n`)
      code = err.code
    } else {
      const message = err && err.message ? String(err.message).split('\n')[0] : String(err)
      process.stderr.write(`jsprof: internal error: ${shown(message)}\n`)
      if (process.env.JSPROF_DEBUG && err && err.stack) process.stderr.write(`${err.stack}\n`)
      code = 1
    }
  }
  process.exitCode = code
  return code
}

module.exports = { main, run, HELP }
