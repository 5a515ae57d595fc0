// Docs that run as written: every code block of README.md and docs/*.md is read from the markdown here,
// at test time (never copied), and run in a child process against this package — or is marked, in the
// markdown, with the reason it is not run.
//
// Each block is run from an app of its own in a temporary directory, as a user's app is installed:
// a package.json and node_modules/jsprof-node linking to this checkout, so `require('jsprof-node')`
// resolves as it does for them and `summarize` names the snippet's code as the app's.
//
// The rule, by the fence's language:
// - js, javascript, cjs: run with node, as the body of an async function in a CommonJS module (`require`
//   and top-level `await`, as the docs write them); mjs: run as an ES module.
// - sh, bash, shell: run with `sh -e` (every command must succeed), with `jsprof` and `node` on PATH.
// - console: a transcript. Lines starting with `$ ` are run as one shell script (stdout and stderr
//   together), the other lines are the output it must print, line for line.
// - none, json, text: output, synopses, shapes: never run, no marker needed.
// - any other language (ts …): not run, and marked so.
// A block of a language that runs is run unless the HTML comment that ends on the line right before its
// fence says otherwise; a block that is not run says why:
//
//   <!-- not run: the reason -->
//
// A fragment (one that uses names from the text around it) says what it needs, one `key: value` a line
// (or one pair on the marker's line):
//
//   <!-- snippet
//   given: trace, summarize, app.trace.json
//   check: profile.samples.length > 0
//   -->
//
// - given: names the block uses without defining them: an export of jsprof-node, a node: builtin
//   module, a fixture of FIXTURES below (a value such as `trace`, or a file such as `chunk.json`
//   written into its directory first).
// - check: an expression appended after the block, which must be truthy (one per line, any number).
// - file: the name the block is run as (default snippet.js/.mjs/.sh); args: its command-line arguments.
// - needs: go — run only where go is installed (CI must have it, as for the other go tool pprof tests).
//
// A `// → text` comment in a js block is a line the block prints: the test checks each, in order
// (whitespace-insensitive, `…` standing for any text; objects are printed on one line).
import { test, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { builtinModules, createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { handTrace } from './export-helpers.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const jsprof = require('jsprof-node')

const RUN = { js: 'node', javascript: 'node', cjs: 'node', mjs: 'node', sh: 'sh', bash: 'sh', shell: 'sh' }
RUN.console = 'transcript'
const NEEDS = new Set(['go'])
const TEXT = new Set(['', 'json', 'text'])
const KEYS = new Set(['given', 'check', 'file', 'args', 'needs'])

/** The code blocks of one markdown file: { file, line, lang, code, marker }. */
function blocksOf(file) {
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split(/\r?\n/)
  const blocks = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i])
    if (!open) continue
    const fence = open[1]
    const start = i
    const code = []
    for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) code.push(lines[i])
    blocks.push({
      file,
      line: start + 1,
      lang: open[2].toLowerCase(),
      code: code.join('\n'),
      marker: markerBefore(lines, start),
    })
  }
  return blocks
}

/** The text of the HTML comment ending on the line before `fence`, or null. */
function markerBefore(lines, fence) {
  const end = fence - 1
  if (end < 0 || !lines[end].trim().endsWith('-->')) return null
  let begin = end
  while (begin >= 0 && !lines[begin].includes('<!--')) begin--
  if (begin < 0) return null
  const text = lines.slice(begin, end + 1).join('\n')
  return text.slice(text.indexOf('<!--') + 4, text.lastIndexOf('-->')).trim()
}

/** What a block's marker says: { notRun } or { given, check, file, args, needs }; throws when malformed. */
function directives(block) {
  const where = `${block.file}:${block.line}`
  const m = block.marker
  const plan = { given: [], check: [], file: null, args: [], needs: [] }
  if (m === null) return plan
  const notRun = /^not run:\s*(.*)$/s.exec(m)
  if (notRun) {
    if (notRun[1].trim().length < 10) throw new Error(`${where}: "not run" without a reason`)
    return { notRun: notRun[1].trim() }
  }
  if (!/^snippet\b/.test(m))
    throw new Error(`${where}: the comment before the block is neither "snippet" nor "not run:"`)
  for (const line of m.slice('snippet'.length).split('\n')) {
    if (line.trim() === '') continue
    const kv = /^\s*([a-z]+):\s*(.*?)\s*$/.exec(line)
    if (!kv || !KEYS.has(kv[1])) throw new Error(`${where}: unknown snippet directive ${JSON.stringify(line.trim())}`)
    const [, key, value] = kv
    if (key === 'check') plan.check.push(value)
    else if (key === 'file') plan.file = value
    else if (key === 'args') plan.args = value.split(/\s+/)
    else plan[key].push(...value.split(/\s*,\s*/))
  }
  if (plan.file !== null && !/^[\w-]+\.(c?js|mjs|sh)$/.test(plan.file)) {
    throw new Error(`${where}: file: wants a plain file name, got ${JSON.stringify(plan.file)}`)
  }
  for (const need of plan.needs) if (!NEEDS.has(need)) throw new Error(`${where}: needs: nothing known as ${need}`)
  return plan
}

const docs = [
  'README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
]
const blocks = docs.flatMap(blocksOf)

// ---- The app the blocks run in ----

const app = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-docs-')))
after(() => fs.rmSync(app, { recursive: true, force: true }))
const write = (file, data) => fs.writeFileSync(file, data, { flag: 'wx' })
write(path.join(app, 'package.json'), JSON.stringify({ name: 'docs-app', version: '1.0.0', private: true }))
fs.mkdirSync(path.join(app, 'node_modules'))
fs.symlinkSync(root, path.join(app, 'node_modules', 'jsprof-node'), 'junction')
// `jsprof` and the node running this test first on PATH, as `npm exec` would give them.
const bin = path.join(app, 'bin')
fs.mkdirSync(bin)
write(path.join(bin, 'jsprof'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(root, 'bin', 'jsprof.js')}" "$@"\n`)
fs.chmodSync(path.join(bin, 'jsprof'), 0o755)
const PATH = [bin, path.dirname(process.execPath), process.env.PATH].join(path.delimiter)
// Objects printed on one line, so a `// → …` claim is one line of output.
const oneLine = path.join(app, 'one-line.cjs')
write(oneLine, "require('node:util').inspect.defaultOptions.breakLength = Infinity\n")

// ---- What fragments are given ----

const SPIN = 'const snippetSpin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }'
const EXPRESS = JSON.stringify(require.resolve('express'))
const FASTIFY = JSON.stringify(require.resolve('fastify'))

/** A hand-made trace with route labels, `shift` moving samples from one route to the other. */
function routeTrace(shift = 0) {
  const trace = handTrace()
  const labelSets = [
    { method: 'GET', route: 'GET /users/:id' },
    { method: 'POST', route: 'POST /jobs' },
  ]
  const sampleLabels = trace.samples.map((_, i) => (i < 4 + shift ? 0 : i < 9 ? 1 : null))
  return { ...trace, jsprof: { labelSets, labelsDropped: 0, sampleLabels } }
}

/** Code declaring `name` as a function that does some work, over a few turns of the event loop. */
const someWork = (name) => ({
  code: `async function ${name}() { for (let i = 0; i < 5; i++) { snippetSpin(10); await new Promise(setImmediate) } }`,
})
/** Code declaring `name` as an HTTP listener. */
const listener = (name) => ({ code: `function ${name}(req, res) { res.end('ok') }` })

/** Values a fragment uses (code declaring the name; `after`: code run once the block has run), and files. */
const FIXTURES = {
  profiler: {
    code: `const profiler = new (require('jsprof-node').Profiler)({ sampleInterval: 1, maxBufferSize: 10000 })\nsnippetSpin(30)`,
  },
  trace: {
    code: `const trace = await (() => { const p = new (require('jsprof-node').Profiler)({ sampleInterval: 1, maxBufferSize: 10000 }); snippetSpin(30); return p.stop() })()`,
  },
  handleSomeRequests: someWork('handleSomeRequests'),
  handleLoad: someWork('handleLoad'),
  work: { code: 'function work() { snippetSpin(50) }' },
  runJob: { code: 'async function runJob() { snippetSpin(5); await new Promise(setImmediate) }' },
  save: { code: 'function save() {}' },
  handler: listener('handler'),
  handle: listener('handle'),
  // An Express app whose requests carry the user an auth middleware would set; once the block has run,
  // each route it added is requested once.
  app: {
    code: `const app = require(${EXPRESS})()
const snippetRoutes = []
for (const method of ['get', 'post']) {
  const add = app[method].bind(app)
  app[method] = (route, ...handlers) => {
    if (handlers.length > 0) snippetRoutes.push([method, route]) // app.get('env') reads a setting
    return add(route, ...handlers)
  }
}
app.use((req, res, next) => { req.user = { tenant: 'acme' }; next() })`,
    after: `{
  const server = app.listen(0, '127.0.0.1')
  await require('node:events').once(server, 'listening')
  for (const [method, route] of snippetRoutes) {
    const res = await fetch(\`http://127.0.0.1:\${server.address().port}\${route}\`, { method: method.toUpperCase() })
    if (!res.ok) throw new Error(\`\${method} \${route}: \${res.status}\`)
    await res.text()
  }
  server.close()
}`,
  },
  fastify: { code: `const fastify = require(${FASTIFY})()`, after: 'await fastify.close()' },
  // Files, written into the block's directory before it runs.
  'app.trace.json': { file: () => JSON.stringify(handTrace()) },
  'notes.json': { file: () => JSON.stringify({ notes: ['not a profile'] }) },
  'trace.pb.gz': { file: () => jsprof.toPprof(handTrace(), { timeOrigin: 0 }) },
  'chunk.json': { file: () => JSON.stringify(routeTrace()) },
  'before.json': { file: () => JSON.stringify(routeTrace()) },
  'after.json': { file: () => JSON.stringify(routeTrace(3)) },
  'cpu.pb.gz': { file: () => jsprof.toPprof(routeTrace(), { timeOrigin: 0 }) },
}

const builtins = new Set(builtinModules.filter((m) => !m.startsWith('_') && !m.includes('/')))

/** The declarations of the names a fragment is given, and the code to run after it. */
function givenCode(where, names) {
  const exported = []
  const code = [SPIN]
  const afterCode = []
  for (const name of names) {
    if (Object.hasOwn(jsprof, name)) exported.push(name)
    else if (builtins.has(name)) code.push(`const ${name} = require('node:${name}')`)
    else if (FIXTURES[name]?.code) {
      code.push(FIXTURES[name].code)
      if (FIXTURES[name].after) afterCode.push(FIXTURES[name].after)
    } else if (!FIXTURES[name]?.file) throw new Error(`${where}: nothing known as ${JSON.stringify(name)} to give`)
  }
  if (exported.length > 0) code.unshift(`const { ${exported.join(', ')} } = require('jsprof-node')`)
  return { code: code.join('\n'), after: afterCode.join('\n') }
}

function hasGo() {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0) return true
  if (process.env.CI) throw new Error('go is not installed, and CI must run the go tool pprof snippets')
  return false
}

/** Runs a child to its end (killed after `timeout` ms): { status, signal, stdout, stderr }. */
function run(cmd, args, options) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    child.on('error', reject)
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      resolve({ status, signal, stdout, stderr })
    })
  })
}

const squash = (s) => s.replace(/\s+/g, ' ').trim()
/** Whether printed `line` is what `claim` says (whitespace-insensitive, `…` for any text). */
const matches = (claim, line) =>
  new RegExp(
    `^${squash(claim)
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  ).test(squash(line))

/** The `// → text` claims of a js block, in order. */
const claimsOf = (code) => [...code.matchAll(/\/\/ → (.*)$/gm)].map((m) => m[1])

/** Checks that `claims` appear, in order, among the lines of `stdout`. */
function assertPrinted(claims, stdout, where) {
  const lines = stdout.split('\n')
  let at = 0
  for (const claim of claims) {
    while (at < lines.length && !matches(claim, lines[at])) at++
    assert.ok(at < lines.length, `${where}: does not print ${JSON.stringify(claim)}; it printed:\n${stdout}`)
    at++
  }
}

/** The script and the expected output of a console transcript. */
function transcript(code) {
  const commands = []
  const output = []
  for (const line of code.split('\n')) {
    if (line.startsWith('$ ')) commands.push(line.slice(2))
    else output.push(line)
  }
  return { script: `exec 2>&1\n${commands.join('\n')}\n`, output }
}

async function runBlock(block, plan, t) {
  const where = `${block.file}:${block.line}`
  const runner = RUN[block.lang]
  if (plan.needs.includes('go') && !hasGo()) return t.skip('go is not installed (.ci/run installs golang-go)')
  if (runner !== 'node' && process.platform === 'win32') return t.skip('shell blocks need a POSIX sh')
  const dir = fs.mkdtempSync(path.join(app, 'block-'))
  for (const name of plan.given) {
    if (FIXTURES[name]?.file) write(path.join(dir, name), FIXTURES[name].file())
  }
  const env = { ...process.env, PATH }
  let result
  if (runner === 'node') {
    const given = givenCode(where, plan.given)
    const checks = plan.check.map((c) => `require('node:assert').ok(${c}, ${JSON.stringify(`check: ${c}`)})`).join('\n')
    const esm = block.lang === 'mjs'
    if (esm && plan.given.length > 0) throw new Error(`${where}: an mjs block imports what it uses (no given:)`)
    const source = esm
      ? `${block.code}\n${checks}\n`
      : `;(async () => {\n${given.code}\n${block.code}\n${given.after}\n${checks}\n})().catch((err) => {\n  console.error(err)\n  process.exit(1)\n})\n`
    const file = path.join(dir, plan.file ?? (esm ? 'snippet.mjs' : 'snippet.js'))
    write(file, source)
    result = await run(process.execPath, ['--require', oneLine, file, ...plan.args], { cwd: dir, env })
    assert.equal(
      result.status,
      0,
      `${where} failed (${result.signal ?? result.status}):\n${result.stderr}\n--- run as ${file}:\n${source}`,
    )
    assertPrinted(claimsOf(block.code), result.stdout, where)
  } else if (runner === 'sh') {
    const file = path.join(dir, plan.file ?? 'snippet.sh')
    write(file, `${block.code}\n`)
    result = await run('sh', ['-e', file, ...plan.args], { cwd: dir, env })
    assert.equal(
      result.status,
      0,
      `${where} failed (${result.signal ?? result.status}):\n${result.stdout}\n${result.stderr}`,
    )
  } else {
    const { script, output } = transcript(block.code)
    const file = path.join(dir, 'transcript.sh')
    write(file, script)
    result = await run('sh', [file], { cwd: dir, env })
    const printed = result.stdout.replace(/\n$/, '').split('\n')
    const same = printed.length === output.length && output.every((line, i) => matches(line, printed[i]))
    assert.ok(same, `${where}: the transcript says\n${output.join('\n')}\n--- it prints\n${printed.join('\n')}`)
  }
}

// ---- The tests ----

test('every block of a language that runs is run or says why not', () => {
  const problems = []
  for (const block of blocks) {
    const where = `${block.file}:${block.line} (${block.lang || 'no language'})`
    let plan
    try {
      plan = directives(block)
    } catch (err) {
      problems.push(err.message)
      continue
    }
    if (TEXT.has(block.lang)) {
      if (block.marker !== null && !plan.notRun) problems.push(`${where}: output is never run, yet marked "snippet"`)
    } else if (!RUN[block.lang] && !plan.notRun) {
      problems.push(`${where}: nothing here runs ${block.lang}: mark it <!-- not run: reason -->`)
    }
  }
  assert.deepEqual(problems, [])
})

const counts = { run: 0, notRun: 0 }
for (const block of blocks) {
  if (TEXT.has(block.lang)) continue
  let plan
  try {
    plan = directives(block)
  } catch {
    continue // reported by the test above
  }
  if (plan.notRun) {
    counts.notRun++
    continue
  }
  if (!RUN[block.lang]) continue // reported by the test above
  counts.run++
  const first = block.code.split('\n').find((l) => l.trim() !== '') ?? ''
  test(`${block.file}:${block.line} ${block.lang}: ${first.slice(0, 60)}`, (t) => runBlock(block, plan, t))
}

test('the docs have blocks that run', (t) => {
  t.diagnostic(`${counts.run} blocks run, ${counts.notRun} marked not run`)
  assert.ok(counts.run >= 20, `${counts.run} blocks run`)
})
