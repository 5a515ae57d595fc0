// End-to-end tests of the `jsprof` command line: every test runs bin/jsprof.js as a child process.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import zlib from 'node:zlib'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { watchChild } from './helpers.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(root, 'bin', 'jsprof.js')
const jsprof = require(root)
const { traceProblem } = require(path.join(root, 'lib', 'cli', 'input.js'))
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))

// An app burning CPU in named functions; its mode (argv[2]) says how it ends.
const APP = `
function burnAlpha(ms) { const t = Date.now(); let x = 0; while (Date.now() - t < ms) x += Math.sqrt(x + 1); return x }
function burnBeta(ms) { return burnAlpha(ms / 2) + burnAlpha(ms / 2) }
burnBeta(200)
const mode = process.argv[2]
if (mode === 'exit3') { process.exit(3); burnBeta(10000) }
if (mode === 'throw') throw new Error('boom')
if (mode === 'wait' || mode === 'handler') {
  if (mode === 'handler') process.on('SIGTERM', () => { console.log('cleaning up'); setTimeout(() => process.exit(7), 20) })
  setInterval(() => burnAlpha(2), 20)
  console.log('ready ' + process.pid)
}
if (mode === 'fork') require('node:child_process').fork(__filename, ['child'])
`

let tmp
let appFile
let tracePath // recorded once, used by report/convert/flamegraph
let trace
let cpuprofilePath

function jsprofSync(args, options = {}) {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd: tmp, encoding: 'utf8', timeout: 30_000, ...options })
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

/** Starts `jsprof record -o <out> -- node app.js <mode>`, resolves once the app printed 'ready <pid>'. */
function startRecording(out, mode) {
  const child = spawn(process.execPath, [BIN, 'record', '-o', out, '--', process.execPath, appFile, mode], {
    cwd: tmp,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return watchChild(child)
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'))
}

function functionNames(t) {
  return new Set(t.frames.map((f) => f.name))
}

function assertAppTrace(file) {
  assert.ok(fs.existsSync(file), `${file} was written`)
  const t = readJson(file)
  assert.equal(traceProblem(t), null)
  assert.ok(t.samples.length > 0)
  const names = functionNames(t)
  assert.ok(names.has('burnAlpha') && names.has('burnBeta'), `the app's functions are in the trace: ${[...names]}`)
  // Some sample is really in burnAlpha (a stack whose top frame is it).
  const alpha = t.frames.findIndex((f) => f.name === 'burnAlpha')
  assert.ok(t.samples.some((s) => s.stackId !== undefined && t.stacks[s.stackId].frameId === alpha))
  assert.ok(t.resources.some((r) => r.endsWith('app.js')))
  // No frame of jsprof-node's own code (the preload, the recorder, the engine): their time is the app's.
  const own = [path.join(root, 'lib'), 'file://' + path.join(root, 'lib')]
  assert.deepEqual(
    t.resources.filter((r) => own.some((prefix) => r.startsWith(prefix))),
    [],
  )
  return t
}

function assertOneLineError(r, pattern, code = 2) {
  assert.equal(r.code, code, `exit status ${code}, stderr: ${r.stderr}`)
  const lines = r.stderr.trimEnd().split('\n')
  assert.equal(lines.length, 1, `exactly one stderr line: ${JSON.stringify(r.stderr)}`)
  assert.match(lines[0], /^jsprof: /)
  assert.doesNotMatch(r.stderr, /\n\s+at |Error:/)
  if (pattern) assert.match(lines[0], pattern)
  assert.equal(r.stdout, '')
}

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-cli-test-'))
  appFile = path.join(tmp, 'app.js')
  fs.writeFileSync(appFile, APP)
  tracePath = path.join(tmp, 'app.trace.json')
  const r = jsprofSync(['record', '-o', tracePath, '--interval', '0.5', '--', process.execPath, appFile])
  assert.equal(r.code, 0, r.stderr)
  trace = readJson(tracePath)
  const profDir = path.join(tmp, 'prof')
  const p = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, appFile], { encoding: 'utf8' })
  assert.equal(p.status, 0, p.stderr)
  cpuprofilePath = path.join(profDir, fs.readdirSync(profDir)[0])
})

after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
})

describe('jsprof record', () => {
  test('writes a ProfilerTrace of the whole process and says where', () => {
    assertAppTrace(tracePath)
    const again = path.join(tmp, 'again.trace.json')
    const r = jsprofSync(['record', '-o', again, '--', process.execPath, appFile])
    assert.equal(r.code, 0)
    assert.equal(r.stderr.trim().split('\n').length, 1)
    assert.match(r.stderr, new RegExp(`^jsprof: wrote ${again.replace(/[.\\]/g, '\\$&')} \\(\\d+ samples, `))
    assertAppTrace(again)
  })

  test('process.exit(3): exit status 3, trace written to the default path', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'default-'))
    const r = jsprofSync(['record', '--', process.execPath, appFile, 'exit3'], { cwd: dir })
    assert.equal(r.code, 3, r.stderr)
    const files = fs.readdirSync(dir)
    assert.equal(files.length, 1)
    assert.match(files[0], /^jsprof-\d+-\d{8}-\d{6}\.trace\.json$/)
    assert.ok(r.stderr.includes(path.join(dir, files[0])), r.stderr)
    assertAppTrace(path.join(dir, files[0]))
  })

  test('an uncaught exception: exit status 1, trace written', () => {
    const out = path.join(tmp, 'throw.trace.json')
    const r = jsprofSync(['record', '-o', out, '--', process.execPath, appFile, 'throw'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /Error: boom/)
    assertAppTrace(out)
  })

  for (const [signal, status] of [
    ['SIGTERM', 143],
    ['SIGINT', 130],
  ]) {
    test(`${signal} to jsprof is forwarded: trace written, exit status ${status}`, async () => {
      const out = path.join(tmp, `${signal}.trace.json`)
      const run = startRecording(out, 'wait')
      await run.ready
      run.child.kill(signal)
      const { code, stderr } = await run.exited
      assert.equal(code, status, stderr)
      assert.match(stderr, /jsprof: wrote /)
      assertAppTrace(out)
    })
  }

  test('SIGTERM to the app itself: trace written, exit status 143', async () => {
    const out = path.join(tmp, 'direct.trace.json')
    const run = startRecording(out, 'wait')
    const pid = await run.ready
    process.kill(pid, 'SIGTERM')
    const { code } = await run.exited
    assert.equal(code, 143)
    assertAppTrace(out)
  })

  test("an app's own SIGTERM handler decides how it ends; the trace is still written", async () => {
    const out = path.join(tmp, 'handler.trace.json')
    const run = startRecording(out, 'handler')
    await run.ready
    run.child.kill('SIGTERM')
    const { code, stdout } = await run.exited
    assert.equal(code, 7)
    assert.match(stdout, /cleaning up/)
    assertAppTrace(out)
  })

  test('only the top process is profiled: a forked child writes nothing', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'fork-'))
    const r = jsprofSync(['record', '-o', path.join(dir, 't-{pid}.json'), '--', process.execPath, appFile, 'fork'])
    assert.equal(r.code, 0, r.stderr)
    const files = fs.readdirSync(dir)
    assert.equal(files.length, 1, `one trace: ${files}`)
    assert.match(files[0], /^t-\d+\.json$/)
    assertAppTrace(path.join(dir, files[0]))
  })

  test(
    '--children: a forked child writes its own trace beside the top one (through a shell too)',
    { skip: process.platform === 'win32' },
    () => {
      const dir = fs.mkdtempSync(path.join(tmp, 'children-'))
      // Through a shell, so the Node processes are a child (fork) and a grandchild of the shell.
      const r = jsprofSync([
        'record',
        '--children',
        '-o',
        path.join(dir, 't.json'),
        '--',
        'sh',
        '-c',
        `"${process.execPath}" "${appFile}" fork`,
      ])
      assert.equal(r.code, 0, r.stderr)
      const files = fs.readdirSync(dir).sort()
      assert.equal(files.length, 2, `the top trace and the child's: ${files}`)
      assert.equal(files[0], 't.json')
      const childPid = Number(/^t\.pid-(\d+)\.json$/.exec(files[1])?.[1])
      assert.ok(childPid > 0, files[1])
      const top = assertAppTrace(path.join(dir, 't.json'))
      const child = assertAppTrace(path.join(dir, files[1]))
      assert.equal(child.jsprof.pid, childPid)
      assert.notEqual(top.jsprof.pid, childPid)
      assert.match(
        r.stderr,
        new RegExp(`wrote .*t\\.pid-${childPid}\\.json \\(child process ${childPid}, \\d+ samples`),
      )
      const rep = jsprofSync(['report', path.join(dir, files[1]), '--top', '1'])
      assert.match(rep.stdout, new RegExp(`\\(main thread of pid ${childPid}\\)`))
    },
  )

  test(
    'a command that is not node (a shell) is profiled through NODE_OPTIONS',
    { skip: process.platform === 'win32' },
    () => {
      const out = path.join(tmp, 'shell.trace.json')
      const r = jsprofSync(['record', '-o', out, '--', 'sh', '-c', `"${process.execPath}" "${appFile}" exit3`])
      assert.equal(r.code, 3, r.stderr)
      assertAppTrace(out)
    },
  )

  test('npm start: the app is profiled, not npm', { skip: process.platform === 'win32' }, () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'npm-'))
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'app', version: '1.0.0', scripts: { start: `node ${JSON.stringify(appFile)} exit3` } }),
    )
    const out = path.join(dir, 'npm.trace.json')
    const r = jsprofSync(['record', '-o', out, '--', 'npm', 'start', '--silent'], { cwd: dir })
    assert.notEqual(r.code, 0, r.stderr)
    const t = assertAppTrace(out)
    assert.ok(!t.resources.some((url) => /[\\/]npm[\\/]/.test(url)), 'no npm code in the trace')
  })

  test('worker threads: each writes its own trace, an exited one at its exit, a terminated one when it is terminated', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'workers-'))
    const app = path.join(dir, 'workers.js')
    fs.writeFileSync(
      app,
      [
        "const { Worker } = require('node:worker_threads')",
        // One worker works 400 ms and exits; one works in slices until main terminates it.
        "const done = new Worker('function workerBusy() { const t = Date.now(); let x = 0; while (Date.now() - t < 400) x += Math.sqrt(t); return x } workerBusy()', { eval: true })",
        "const pool = new Worker('function poolSlice() { const t = Date.now(); while (Date.now() - t < 20); } setInterval(poolSlice, 25)', { eval: true })",
        "done.on('exit', () => setTimeout(() => pool.terminate(), 700))",
        // This one leaves the preload out: counted as not profiled.
        "new Worker('0', { eval: true, execArgv: [] })",
      ].join('\n'),
    )
    const out = path.join(dir, 't.json')
    const r = jsprofSync(['record', '-o', out, '--flush-every', '200', '--', process.execPath, app])
    assert.equal(r.code, 0, r.stderr)
    const files = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
    assert.equal(files.length, 3, `main + 2 worker traces: ${files}`)
    const workers = files.filter((f) => /^t\.worker-\d+\.json$/.test(f))
    assert.equal(workers.length, 2, files.join())
    const byFunction = (file) => {
      const rep = jsprofSync(['report', path.join(dir, file), '--by', 'function', '--json', '--top', '1000'])
      assert.equal(rep.code, 0, rep.stderr)
      return JSON.parse(rep.stdout)
    }
    const main = byFunction('t.json')
    assert.match(main.thread, /^main thread of pid \d+$/)
    const seen = {}
    for (const file of workers) {
      const id = Number(/worker-(\d+)/.exec(file)[1])
      const report = byFunction(file)
      assert.equal(report.thread, `worker thread ${id} of pid ${/pid (\d+)/.exec(main.thread)[1]}`)
      const names = report.rows.map((row) => row.name)
      const which = names.some((n) => n.startsWith('workerBusy '))
        ? 'done'
        : names.some((n) => n.startsWith('poolSlice '))
          ? 'pool'
          : 'none'
      seen[which] = { id, report }
      const trace = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))
      assert.equal(trace.jsprof.threadId, id)
      // Each thread's own clock: its own time origin, after the main thread's.
      assert.ok(trace.jsprof.timeOrigin >= JSON.parse(fs.readFileSync(out, 'utf8')).jsprof.timeOrigin)
    }
    assert.ok(
      seen.done && seen.pool,
      `the exited worker's and the terminated worker's work: ${JSON.stringify(Object.keys(seen))}`,
    )
    // The worker's work is in its trace, not the main thread's.
    assert.ok(!main.rows.some((row) => /^(workerBusy|poolSlice) /.test(row.name)))
    assert.match(r.stderr, new RegExp(`wrote .*t\\.json \\(main thread, `))
    assert.match(
      r.stderr,
      new RegExp(
        `wrote .*t\\.worker-${seen.done.id}\\.json \\(worker thread ${seen.done.id}, \\d+ samples, [^;]*\\)\\n`,
      ),
    )
    assert.match(
      r.stderr,
      new RegExp(
        `wrote .*t\\.worker-${seen.pool.id}\\.json \\(worker thread ${seen.pool.id}, .*written when it was terminated`,
      ),
    )
    assert.match(r.stderr, /1 worker thread was not profiled/)
  })

  test(
    'a status line on a terminal (time, samples so far), and none when stderr is not one',
    {
      skip:
        spawnSync('script', ['--version']).status === 0
          ? false
          : 'util-linux script (a pseudo-terminal) is not installed',
    },
    () => {
      const dir = fs.mkdtempSync(path.join(tmp, 'tty-'))
      const app = path.join(dir, 'slow.js')
      fs.writeFileSync(
        app,
        'function slowWork() { const t = Date.now(); while (Date.now() - t < 40); }\nconst end = Date.now() + 2500\nconst tick = () => { slowWork(); if (Date.now() < end) setTimeout(tick, 5) }\ntick()\n',
      )
      const out = path.join(dir, 't.json')
      const inner = [process.execPath, BIN, 'record', '--flush-every', '100', '-o', out, '--', process.execPath, app]
        .map((a) => `'${a}'`)
        .join(' ')
      const r = spawnSync('script', ['-qefc', inner, '/dev/null'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, JSPROF_NO_PROGRESS: undefined },
      })
      assert.equal(r.status, 0, r.stdout + r.stderr)
      // Through the pseudo-terminal, stderr arrives on script's stdout.
      assert.match(
        r.stdout,
        /\r\x1b\[2Kjsprof: recording \S*node\S* \(pid \d+\): [\d.]+ m?s(, [\d,]+ samples so far)? \(Ctrl-C to stop\)/,
      )
      assert.match(r.stdout, /\d+ samples so far/, 'the samples flushed so far')
      assert.match(r.stdout, /\r\x1b\[2Kjsprof: wrote .*t\.json \(\d+ samples/, 'the line is cleared before the result')
      // Not a terminal: no status line at all.
      const plain = jsprofSync([
        'record',
        '--flush-every',
        '100',
        '-o',
        path.join(dir, 'u.json'),
        '--',
        process.execPath,
        app,
      ])
      assert.equal(plain.code, 0, plain.stderr)
      assert.doesNotMatch(plain.stderr, /recording|\x1b/)
    },
  )

  test('a bare .js file runs with this node', () => {
    const out = path.join(tmp, 'bare.trace.json')
    const r = jsprofSync(['record', '-o', out, appFile])
    assert.equal(r.code, 0, r.stderr)
    assertAppTrace(out)
  })

  test('argument errors: exit status 2, one line', () => {
    assertOneLineError(jsprofSync(['record']), /missing the command/)
    assertOneLineError(jsprofSync(['record', '--interval', 'fast', '--', 'node', appFile]), /--interval/)
    assertOneLineError(jsprofSync(['record', '--interval', '0', '--', 'node', appFile]), /--interval/)
    assertOneLineError(jsprofSync(['record', '--frobnicate', '--', 'node', appFile]), /unknown option '--frobnicate'/)
    // An output that cannot be written is exit status 1, as for convert/flamegraph/diff -o.
    assertOneLineError(
      jsprofSync(['record', '-o', path.join(tmp, 'no', 'such', 'dir', 't.json'), '--', 'node', appFile]),
      /no such directory/,
      1,
    )
  })

  test('a command that does not exist: exit status 127, one line', () => {
    const r = jsprofSync(['record', '--', 'jsprof-no-such-command-xyz'])
    assert.equal(r.code, 127)
    assert.equal(r.stderr.trimEnd().split('\n').length, 1)
    assert.match(r.stderr, /^jsprof: cannot run 'jsprof-no-such-command-xyz': command not found/)
  })
})

describe('jsprof report', () => {
  test('prints an aligned table with a header line', () => {
    const r = jsprofSync(['report', tracePath, '--by', 'function'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stderr, '')
    const lines = r.stdout.trimEnd().split('\n')
    assert.match(
      lines[0],
      new RegExp(
        `^${tracePath.replace(/[.\\]/g, '\\$&')} \\(main thread of pid \\d+\\): ${trace.samples.length} samples over `,
      ),
    )
    assert.equal(lines[1], '')
    const header = lines[2]
    assert.doesNotMatch(r.stdout, /\x1b\[/, 'no escape codes when stdout is not a TTY')
    for (const column of ['self %', 'self ms', 'total %', 'total ms', 'samples', 'kind', 'name (version)']) {
      assert.ok(header.includes(column), `${column} in ${header}`)
    }
    const rows = lines.slice(3)
    const expected = jsprof.summarize(trace, { by: 'function' })
    assert.equal(rows.length, Math.min(20, expected.length))
    // Aligned: the right-aligned numbers end, and the kind column starts, at the header's positions.
    const kindAt = header.indexOf('kind')
    const samplesEnd = header.indexOf('samples') + 'samples'.length
    rows.forEach((row, i) => {
      assert.equal(row.slice(kindAt).split(/\s+/)[0], expected[i].kind, row)
      assert.equal(row.slice(0, samplesEnd).trim().split(/\s+/).at(-1), String(expected[i].selfSamples), row)
      assert.ok(row.slice(kindAt).includes(expected[i].name), row)
    })
    assert.ok(
      rows.some((row) => / {2}burnAlpha \(file:\/\/.*app\.js:\d+:\d+\)/.test(row)),
      rows.join('\n'),
    )
  })

  test('--json is the summarize() rows', () => {
    for (const by of ['package', 'function', 'resource']) {
      const r = jsprofSync(['report', tracePath, '--by', by, '--json', '--top', '1000'])
      assert.equal(r.code, 0, r.stderr)
      const out = JSON.parse(r.stdout)
      assert.equal(out.by, by)
      assert.equal(out.samples, trace.samples.length)
      assert.deepEqual(out.rows, JSON.parse(JSON.stringify(jsprof.summarize(trace, { by }))))
    }
  })

  test('--top limits the rows', () => {
    const all = jsprof.summarize(trace, { by: 'function' })
    assert.ok(all.length > 2)
    const json = JSON.parse(jsprofSync(['report', tracePath, '--by', 'function', '--top', '2', '--json']).stdout)
    assert.equal(json.rows.length, 2)
    const text = jsprofSync(['report', tracePath, '--by', 'function', '--top', '2']).stdout.trimEnd().split('\n')
    assert.equal(text.length, 3 + 2)
    assert.match(text[0], new RegExp(`top 2 of ${all.length} functions`))
  })

  test('reads a .cpuprofile too', () => {
    const r = jsprofSync(['report', cpuprofilePath, '--by', 'function', '--json', '--top', '1000'])
    assert.equal(r.code, 0, r.stderr)
    const expected = jsprof.summarize(jsprof.fromCpuProfile(fs.readFileSync(cpuprofilePath, 'utf8')), {
      by: 'function',
    })
    assert.deepEqual(JSON.parse(r.stdout).rows, JSON.parse(JSON.stringify(expected)))
    assert.ok(expected.some((row) => row.name.startsWith('burnAlpha (')))
  })

  test('samples that go back in time are read: V8 records some out of order and traces keep its order', () => {
    // The recorded trace with two neighbouring samples swapped, as V8 sometimes gives them (and as
    // `jsprof record` then writes them: a trace that reported "goes back in time" once failed here).
    const samples = trace.samples.slice()
    const i = samples.findIndex((s, k) => k > 0 && s.timestamp > samples[k - 1].timestamp)
    assert.ok(i > 0, 'the recorded trace has two samples to swap')
    ;[samples[i - 1], samples[i]] = [samples[i], samples[i - 1]]
    const swapped = { ...trace, samples }
    assert.equal(traceProblem(swapped), null)
    const file = path.join(tmp, 'out-of-order.trace.json')
    fs.writeFileSync(file, JSON.stringify(swapped))
    const r = jsprofSync(['report', file, '--by', 'function', '--json', '--top', '1000'])
    assert.equal(r.code, 0, r.stderr)
    const report = JSON.parse(r.stdout)
    assert.deepEqual(report.rows, JSON.parse(JSON.stringify(jsprof.summarize(swapped, { by: 'function' }))))
    // The span and the interval are the time-ordered ones: the same as the unswapped trace's.
    const original = JSON.parse(jsprofSync(['report', tracePath, '--json']).stdout)
    assert.deepEqual([report.durationMs, report.intervalMs], [original.durationMs, original.intervalMs])
    const out = path.join(tmp, 'out-of-order.svg')
    const f = jsprofSync(['flamegraph', file, '-o', out])
    assert.equal(f.code, 0, f.stderr)
    assert.match(fs.readFileSync(out, 'utf8'), /<svg/)
  })
})

describe('jsprof convert / flamegraph', () => {
  const parsers = {
    cpuprofile: (file) => {
      const p = readJson(file)
      assert.ok(Array.isArray(p.nodes) && Array.isArray(p.samples))
      assert.ok(p.nodes.some((n) => n.callFrame.functionName === 'burnAlpha'))
    },
    gecko: (file) => assert.ok(Array.isArray(readJson(file).threads)),
    speedscope: (file) => assert.match(readJson(file).$schema, /speedscope/),
    pprof: (file) => {
      const bytes = fs.readFileSync(file)
      assert.deepEqual([...bytes.subarray(0, 2)], [0x1f, 0x8b])
      assert.ok(zlib.gunzipSync(bytes).length > 0)
    },
    collapsed: (file) => {
      const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n')
      assert.ok(
        lines.every((line) => /^\S.* \d+$/.test(line)),
        lines.slice(0, 3).join('\n'),
      )
      assert.ok(lines.some((line) => /^[^ ].*;.*burnAlpha.* \d+$/.test(line)))
    },
  }

  for (const [format, check] of Object.entries(parsers)) {
    test(`--to ${format} -o <file>`, () => {
      const out = path.join(tmp, `out-${format}`)
      const r = jsprofSync(['convert', tracePath, '--to', format, '-o', out])
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stderr, `jsprof: wrote ${out}\n`)
      check(out)
    })
  }

  test('without -o: a derived file name, printed', () => {
    const expected = {
      cpuprofile: 'app.cpuprofile',
      gecko: 'app.gecko.json',
      speedscope: 'app.speedscope.json',
      pprof: 'app.pb.gz',
      collapsed: 'app.collapsed.txt',
    }
    for (const [format, name] of Object.entries(expected)) {
      const r = jsprofSync(['convert', tracePath, '--to', format])
      assert.equal(r.code, 0, r.stderr)
      const out = path.join(tmp, name)
      assert.equal(r.stderr, `jsprof: wrote ${out}\n`)
      parsers[format](out)
    }
  })

  test('a .cpuprofile input (node --cpu-prof), never overwritten by its own conversion', () => {
    const before = fs.readFileSync(cpuprofilePath, 'utf8')
    const r = jsprofSync(['convert', cpuprofilePath, '--to', 'cpuprofile'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(fs.readFileSync(cpuprofilePath, 'utf8'), before)
    const out = cpuprofilePath.replace(/\.cpuprofile$/, '.converted.cpuprofile')
    assert.equal(r.stderr, `jsprof: wrote ${out}\n`)
    parsers.cpuprofile(out)
    const c = jsprofSync(['convert', cpuprofilePath, '--to', 'collapsed', '-o', path.join(tmp, 'from-v8.txt')])
    assert.equal(c.code, 0, c.stderr)
    parsers.collapsed(path.join(tmp, 'from-v8.txt'))
  })

  test('-o - writes to stdout (pprof to a pipe is allowed)', () => {
    const r = jsprofSync(['convert', tracePath, '--to', 'collapsed', '-o', '-'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, jsprof.toCollapsed(trace))
    const p = spawnSync(process.execPath, [BIN, 'convert', tracePath, '--to', 'pprof', '-o', '-'], { cwd: tmp })
    assert.equal(p.status, 0)
    assert.deepEqual(zlib.gunzipSync(p.stdout), zlib.gunzipSync(jsprof.toPprof(trace)))
  })

  test('flamegraph writes an SVG', () => {
    const out = path.join(tmp, 'flame.svg')
    const r = jsprofSync(['flamegraph', tracePath, '-o', out, '--title', 'My app'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stderr, `jsprof: wrote ${out}\n`)
    const svg = fs.readFileSync(out, 'utf8')
    assert.match(svg, /<svg[\s>]/)
    assert.match(svg, /<\/svg>\s*$/)
    assert.ok(svg.includes('burnAlpha'))
    assert.ok(svg.includes('My app'))
  })

  test('flamegraph --html writes the explorable page, next to the input by default', () => {
    const out = path.join(tmp, 'flame.html')
    const r = jsprofSync(['flamegraph', tracePath, '--html', '-o', out, '--title', 'My app'])
    assert.equal(r.code, 0, r.stderr)
    const trace = JSON.parse(fs.readFileSync(tracePath, 'utf8'))
    assert.equal(fs.readFileSync(out, 'utf8'), jsprof.toFlameGraph(trace, { format: 'html', title: 'My app' }))
    const copy = path.join(tmp, 'copy.trace.json')
    fs.copyFileSync(tracePath, copy)
    const d = jsprofSync(['flamegraph', copy, '--html'])
    assert.equal(d.code, 0, d.stderr)
    assert.match(fs.readFileSync(path.join(tmp, 'copy.html'), 'utf8'), /^<!DOCTYPE html>/)
  })
})

describe('help, version and errors', () => {
  test('--help, <cmd> --help, help <cmd>, --version', () => {
    const top = jsprofSync(['--help'])
    assert.equal(top.code, 0)
    assert.match(top.stdout, /^Usage: jsprof <command>/)
    for (const cmd of ['record', 'report', 'convert', 'flamegraph', 'diff']) {
      assert.ok(top.stdout.includes(`  ${cmd} `), cmd)
      const r = jsprofSync([cmd, '--help'])
      assert.equal(r.code, 0)
      assert.match(r.stdout, new RegExp(`^Usage: jsprof ${cmd} `))
      assert.equal(jsprofSync(['help', cmd]).stdout, r.stdout)
    }
    const v = jsprofSync(['--version'])
    assert.equal(v.code, 0)
    assert.equal(v.stdout, `${pkg.version}\n`)
    const none = jsprofSync([])
    assert.equal(none.code, 2)
    assert.match(none.stderr, /^Usage: jsprof/)
  })

  test('each bad input: exit status 2, one stderr line, no stack trace', () => {
    const write = (name, text) => {
      const file = path.join(tmp, name)
      fs.writeFileSync(file, text)
      return file
    }
    const malformed = write('malformed.json', '{"resources": [')
    const other = write('other.json', '{"hello": "world"}')
    const array = write('array.json', '[1, 2, 3]')
    const badIndex = write('bad-index.json', JSON.stringify({ ...trace, stacks: [{ frameId: 1e6 }] }))
    const cycle = write(
      'cycle.json',
      JSON.stringify({
        resources: [],
        frames: [{ name: 'f' }],
        stacks: [
          { frameId: 0, parentId: 1 },
          { frameId: 0, parentId: 0 },
        ],
        samples: [],
      }),
    )
    const badV8 = write('bad.cpuprofile', JSON.stringify({ nodes: [{ id: 'x' }], samples: [], timeDeltas: [] }))
    const cases = [
      [['frobnicate'], /unknown command 'frobnicate'/],
      [['--frobnicate'], /unknown option '--frobnicate'/],
      [['report', tracePath, '--frobnicate'], /unknown option '--frobnicate'/],
      [['report', path.join(tmp, 'missing.json')], /cannot read .*missing\.json: no such file/],
      [['report', tmp], /is a directory/],
      [['report', malformed], /malformed\.json is not valid JSON/],
      [['report', other], /other\.json is neither a ProfilerTrace .* nor a V8 CPU profile/],
      [['convert', array, '--to', 'gecko'], /array\.json is neither/],
      [['flamegraph', badIndex], /bad-index\.json is not a valid ProfilerTrace: stacks\[0\]\.frameId/],
      [['report', cycle], /is its own ancestor/],
      [['report', badV8], /bad\.cpuprofile is not a valid V8 CPU profile/],
      [['convert', tracePath, '--to', 'svg'], /--to must be one of cpuprofile, gecko, speedscope, pprof, collapsed/],
      [['convert', tracePath], /missing --to/],
      [
        ['report', tracePath, '--by', 'module'],
        /--by must be one of 'package', 'function', 'resource', 'route' or 'label:<key>'/,
      ],
      [['report', tracePath, '--by', 'label:a-b'], /--by: a label key is .*got "a-b"/],
      [['report', tracePath, '--top', 'ten'], /--top must be a positive integer/],
      [['report', tracePath, '--top', '0'], /--top must be a positive integer/],
      [['report', tracePath, '--top'], /--top/],
      [['report'], /missing the trace file/],
      [['report', tracePath, 'extra.json'], /unexpected argument 'extra\.json'/],
    ]
    for (const [args, pattern] of cases) {
      const r = jsprofSync(args)
      try {
        assertOneLineError(r, pattern)
      } catch (err) {
        err.message = `jsprof ${args.join(' ')}: ${err.message}`
        throw err
      }
    }
  })
})
