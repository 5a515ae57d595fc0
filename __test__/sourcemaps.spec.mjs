// resolveSourceMaps on real builds made here from devDependencies: a small TypeScript server compiled by
// tsc (file and inline maps) and bundled + minified by esbuild with two npm packages inside.
// Exact positions are checked on traces made from the generated code's own text (no sampling); real
// captures (in a child process without TurboFan inlining, retried until the trace shows the functions)
// check what a user sees: original names and positions, and package attribution of bundled code.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFileSync, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import {
  resolveSourceMaps,
  summarize,
  toCpuProfile,
  toGeckoProfile,
  toSpeedscope,
  toPprof,
  toCollapsed,
  toFlameGraph,
} from 'jsprof-node'

const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const require = createRequire(import.meta.url)
const HOT = ['checksum', 'renderRows', 'sameRows']

const SERVER_TS = `import { createServer } from 'node:http'
import equal from 'fast-deep-equal'
import escapeHtml from 'escape-html'

interface Row { id: number; label: string }

export function checksum(values: number[], rounds: number): number {
  let total = 0
  for (let r = 0; r < rounds; r++) for (const v of values) total = (total + v * 31) % 1000003
  return total
}

export function renderRows(rows: Row[]): string {
  let html = ''
  for (const row of rows) html += '<td>' + escapeHtml(row.label) + '</td>'
  return html
}

export const sameRows = (a: Row[], b: Row[]): boolean => equal(a, b)

const values = Array.from({ length: 2000 }, (_, i) => i)
const rows: Row[] = Array.from({ length: 400 }, (_, i) => ({ id: i, label: '<a href="/x?i=' + i + '">R&D</a>' }))
const copy: Row[] = JSON.parse(JSON.stringify(rows))

export function start(port: number) {
  return createServer((req, res) => {
    const body = checksum(values, 20) + renderRows(rows).length + (sameRows(rows, copy) ? 1 : 0)
    res.end(String(body) + (req.url ?? ''))
  }).listen(port)
}
`

const TYPES_D_TS = `declare module 'escape-html' { export default function escapeHtml(text: string): string }
declare module 'node:http' {
  export function createServer(handler: (req: { url?: string }, res: { end(body: string): void }) => void): {
    listen(port: number): { close(): void; address(): { port: number } | string | null; on(event: string, fn: () => void): void }
  }
}
declare var JSON: { parse(text: string): any; stringify(value: unknown): string }
`

// Profiles the built server under load in a child process (no TurboFan inlining, so every hot function
// stays a frame), writing the raw trace of Profiler.stop() to argv[3].
const DRIVER = `const { Profiler } = require(${JSON.stringify(ROOT)})
const app = require(process.argv[2])
const server = app.start(0)
server.on('listening', async () => {
  const port = server.address().port
  const profiler = new Profiler({ sampleInterval: 1, maxBufferSize: 1e6 })
  const end = Date.now() + Number(process.argv[4])
  let i = 0
  while (Date.now() < end) await Promise.all([1, 2, 3, 4].map(() => fetch('http://127.0.0.1:' + port + '/r' + i++).then((r) => r.text())))
  const trace = await profiler.stop()
  require('fs').writeFileSync(process.argv[3], JSON.stringify(trace))
  server.close()
})
`

let dir
let tsFile
let builds // { tsc, tscInline, bundle }: the generated .js files

function run(args, cwd) {
  return execFileSync(process.execPath, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

before(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-sourcemaps-')))
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'sm-shop', version: '4.5.6', private: true }))
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir')
  fs.mkdirSync(path.join(dir, 'src'))
  tsFile = path.join(dir, 'src', 'server.ts')
  fs.writeFileSync(tsFile, SERVER_TS)
  fs.writeFileSync(path.join(dir, 'src', 'types.d.ts'), TYPES_D_TS)
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
  const compilerOptions = {
    target: 'es2022',
    module: 'commonjs',
    esModuleInterop: true,
    strict: true,
    types: [],
    lib: ['es2022'],
    skipLibCheck: true,
    rootDir: 'src',
  }
  const files = ['src/server.ts', 'src/types.d.ts']
  const tsconfig = (name, extra) => {
    fs.writeFileSync(path.join(dir, name), JSON.stringify({ compilerOptions: { ...compilerOptions, ...extra }, files }))
    run([tsc, '-p', name], dir)
  }
  tsconfig('tsconfig.json', { sourceMap: true, outDir: 'dist' })
  tsconfig('tsconfig.inline.json', { inlineSourceMap: true, outDir: 'dist-inline' })
  require('esbuild').buildSync({
    entryPoints: [tsFile],
    bundle: true,
    minify: true,
    sourcemap: true,
    platform: 'node',
    format: 'cjs',
    outfile: path.join(dir, 'bundle', 'server.js'),
    logLevel: 'silent',
  })
  builds = {
    tsc: path.join(dir, 'dist', 'server.js'),
    tscInline: path.join(dir, 'dist-inline', 'server.js'),
    bundle: path.join(dir, 'bundle', 'server.js'),
  }
})

after(() => fs.rmSync(dir, { recursive: true, force: true }))

/** The 1-based { line, column } of `needle` (and of the first `(` from there) in a text. */
function find(text, needle, from = 0) {
  const at = text.indexOf(needle, from)
  assert.ok(at >= 0, `${needle} not found`)
  const paren = text.indexOf('(', at + needle.length - 1)
  const pos = (i) => {
    const before = text.slice(0, i).split('\n')
    return { line: before.length, column: before.at(-1).length + 1 }
  }
  return { at: pos(at), paren: pos(paren), index: at }
}

/** Where each hot function is declared in server.ts: its name and its `(` (1-based). */
function tsPositions() {
  const ts = fs.readFileSync(tsFile, 'utf8')
  return {
    checksum: find(ts, 'function checksum('),
    renderRows: find(ts, 'function renderRows('),
    sameRows: find(ts, 'sameRows = ('),
  }
}

/** A trace of frames at the `(` of each hot function of a generated file, as V8 would report them. */
function syntheticTrace(file, needles) {
  const js = fs.readFileSync(file, 'utf8')
  const frames = []
  for (const [name, needle] of needles) {
    const { paren } = find(js, needle)
    frames.push({ name, resourceId: 0, line: paren.line, column: paren.column })
  }
  frames.push({ name: 'now' })
  return {
    resources: [pathToFileURL(file).href],
    frames,
    stacks: frames.map((_, i) => (i === 0 ? { frameId: 0 } : { frameId: i, parentId: i - 1 })),
    samples: frames.map((_, i) => ({ timestamp: i, stackId: i, marker: 'script' })).concat([{ timestamp: 9 }]),
  }
}

const tscNeedles = [
  ['checksum', 'function checksum('],
  ['renderRows', 'function renderRows('],
  ['sameRows', 'sameRows = ('],
]

test('tsc with sourceMap: each function maps to exactly the .ts line and column of its (', async () => {
  const trace = syntheticTrace(builds.tsc, tscNeedles)
  const { trace: mapped, stats } = await resolveSourceMaps(trace)
  const ts = tsPositions()
  const tsUrl = pathToFileURL(tsFile).href
  for (const [i, name] of HOT.entries()) {
    const f = mapped.frames[i]
    assert.deepEqual(f, {
      name,
      resourceId: mapped.resources.indexOf(tsUrl),
      line: ts[name].paren.line,
      column: ts[name].paren.column,
    })
  }
  assert.deepEqual(mapped.frames[3], { name: 'now' })
  assert.deepEqual(mapped.resources, [tsUrl])
  assert.deepEqual(mapped.samples, trace.samples, 'samples keep order, timestamps and markers; stack ids still right')
  // The members in WebIDL's (lexicographic) order, as every trace of jsprof-node has them.
  assert.match(JSON.stringify(mapped), /^\{"frames":\[.*\],"resources":\[.*\],"samples":\[.*\],"stacks":\[.*\]\}$/)
  assert.deepEqual(Object.keys(mapped.frames[0]), ['column', 'line', 'name', 'resourceId'])
  assert.deepEqual(Object.keys(mapped.stacks[1]), ['frameId', 'parentId'])
  assert.deepEqual(Object.keys(mapped.samples[1]), ['marker', 'stackId', 'timestamp'])
  assert.equal(stats.frames, 4)
  assert.equal(stats.mapped, 3)
  assert.equal(stats.unmapped.noPosition, 1)
  assert.deepEqual(stats.resources, [{ resource: trace.resources[0], map: `${builds.tsc}.map`, frames: 3, mapped: 3 }])
})

test('inline maps (tsc --inlineSourceMap, esbuild inline) give the same positions', async () => {
  const trace = syntheticTrace(builds.tscInline, tscNeedles)
  const { trace: mapped, stats } = await resolveSourceMaps(trace)
  const ts = tsPositions()
  for (const [i, name] of HOT.entries()) {
    assert.equal(mapped.frames[i].line, ts[name].paren.line)
    assert.equal(mapped.frames[i].column, ts[name].paren.column)
  }
  assert.equal(stats.resources[0].map, 'inline')
  assert.deepEqual(mapped.resources, [pathToFileURL(tsFile).href])

  const inlineBundle = path.join(dir, 'bundle-inline', 'server.js')
  require('esbuild').buildSync({
    entryPoints: [tsFile],
    bundle: true,
    minify: true,
    sourcemap: 'inline',
    platform: 'node',
    format: 'cjs',
    outfile: inlineBundle,
    logLevel: 'silent',
  })
  const generated = syntheticTrace(builds.bundle, bundleNeedles())
  const inline = { ...generated, resources: [pathToFileURL(inlineBundle).href] }
  const a = await resolveSourceMaps(generated)
  const b = await resolveSourceMaps(inline)
  // Frames of esbuild's own runtime have no mapping and stay in the generated file, whose name differs.
  const unmappedResource = (t, from, to) => ({ ...t, resources: t.resources.map((r) => (r === from ? to : r)) })
  assert.deepEqual(
    unmappedResource(b.trace, inline.resources[0], generated.resources[0]),
    a.trace,
    'an inline map maps exactly like the same map in a file',
  )
  assert.equal(b.stats.resources[0].map, 'inline')
})

/** The mangled declarations of the hot functions in the minified bundle, found through its map's names. */
function bundleNeedles() {
  const js = fs.readFileSync(builds.bundle, 'utf8')
  // esbuild writes `function <mangled>(` for declarations and `<mangled>=(` for the arrow.
  const out = []
  for (const m of js.matchAll(/function ([A-Za-z_$][\w$]*)\(/g)) out.push([m[1], m[0]])
  for (const m of js.matchAll(/[\s,;{]([A-Za-z_$][\w$]*)=\(/g)) out.push([m[1], m[0]])
  return out
}

test('esbuild minified bundle: mangled names come back, and packages inside are found again', async () => {
  const trace = syntheticTrace(builds.bundle, bundleNeedles())
  assert.ok(!trace.frames.some((f) => HOT.includes(f.name)), 'the bundle has mangled names')
  const { trace: mapped, stats } = await resolveSourceMaps(trace)
  assert.equal(stats.resources[0].map, `${builds.bundle}.map`)
  const ts = tsPositions()
  const tsUrl = pathToFileURL(tsFile).href
  for (const name of ['checksum', 'renderRows']) {
    const f = mapped.frames.find((x) => x.name === name)
    assert.ok(f, `${name} came back from the map's names`)
    assert.equal(mapped.resources[f.resourceId], tsUrl)
    assert.equal(f.line, ts[name].at.line)
    // esbuild maps a declaration's name (where the mangled name starts); tsc maps its `(`.
    assert.ok(
      [ts[name].paren.column, ts[name].at.column + 'function '.length].includes(f.column),
      `${name} column ${f.column}`,
    )
  }
  // sameRows is an arrow assigned to a name (`<mangled>=(`): its name comes back through the bundle's text.
  const arrow = mapped.frames.find((x) => x.name === 'sameRows')
  assert.ok(arrow, 'the arrow function is named again')
  assert.equal(arrow.line, ts.sameRows.at.line)
  const equalFrame = mapped.frames.find((x) => x.name === 'equal')
  const escapeFrame = mapped.frames.find((x) => x.name === 'escapeHtml')
  assert.ok(equalFrame && escapeFrame, "the packages' own function names came back")
  const deepEqualUrl = pathToFileURL(fs.realpathSync(require.resolve('fast-deep-equal'))).href
  assert.equal(mapped.resources[equalFrame.resourceId], deepEqualUrl)
})

test('webpack:// sources: packages are attributed by the path, with the version a pnpm path carries', async () => {
  const map = JSON.parse(fs.readFileSync(`${builds.bundle}.map`, 'utf8'))
  const rename = {
    'fast-deep-equal': 'webpack://sm-shop/./node_modules/fast-deep-equal/index.js',
    'escape-html': 'webpack://sm-shop/./node_modules/.pnpm/escape-html@9.8.7/node_modules/escape-html/index.js',
    'server.ts': 'webpack://sm-shop/./src/server.ts',
  }
  map.sources = map.sources.map((source) => Object.entries(rename).find(([k]) => source.includes(k))[1])
  const trace = syntheticTrace(builds.bundle, bundleNeedles())
  const { trace: mapped, stats } = await resolveSourceMaps(trace, { maps: { [trace.resources[0]]: map } })
  assert.equal(stats.resources[0].map, 'explicit')
  for (const url of Object.values(rename)) assert.ok(mapped.resources.includes(url), `${url} in ${mapped.resources}`)
  const rows = summarize(mapped, { by: 'package' })
  const row = (name) => rows.find((r) => r.name === name)
  assert.equal(row('fast-deep-equal')?.kind, 'dependency')
  assert.equal(row('fast-deep-equal').version, undefined, 'a webpack:// path carries no version, and is never read')
  assert.equal(row('escape-html')?.version, '9.8.7')
  assert.ok(row('fast-deep-equal').selfSamples > 0 && row('escape-html').selfSamples > 0)
})

/** Profiles a build in a child process (retried, longer each time) until `mustSample(trace, sampledFrameIds)`. */
function capture(file, mustSample) {
  let last
  for (let attempt = 0; attempt < 5; attempt++) {
    const out = path.join(dir, `trace-${path.basename(path.dirname(file))}-${attempt}.json`)
    const driver = path.join(dir, 'driver.cjs')
    fs.writeFileSync(driver, DRIVER)
    execFileSync(process.execPath, ['--no-turbo-inlining', driver, file, out, String(600 + attempt * 400)], {
      stdio: 'inherit',
    })
    last = JSON.parse(fs.readFileSync(out, 'utf8'))
    // Every frame on a sampled stack (a caller such as sameRows is rarely the leaf itself).
    const sampledFrames = new Set()
    for (const s of last.samples) {
      for (let id = s.stackId; id !== undefined; id = last.stacks[id].parentId)
        sampledFrames.add(last.stacks[id].frameId)
    }
    if (mustSample(last, sampledFrames)) return last
  }
  return last
}

test('a real capture of the tsc build: frames of server.js point at server.ts after mapping', async () => {
  const jsUrl = pathToFileURL(builds.tsc).href
  const trace = capture(builds.tsc, (t, sampled) =>
    HOT.every((n) => t.frames.some((f, i) => f.name === n && sampled.has(i))),
  )
  assert.ok(trace.resources.includes(jsUrl), 'Profiler.stop() gives what V8 gives: the generated file')
  assert.ok(!trace.resources.some((r) => r.endsWith('.ts')), 'Profiler.stop() does not map')
  const { trace: mapped, stats } = await resolveSourceMaps(trace)
  const ts = tsPositions()
  const tsUrl = pathToFileURL(tsFile).href
  for (const name of HOT) {
    const generated = trace.frames.filter((f) => f.name === name && trace.resources[f.resourceId] === jsUrl)
    assert.ok(generated.length > 0, `${name} was sampled`)
    const frames = mapped.frames.filter((f) => f.name === name)
    assert.deepEqual(
      frames.map((f) => [mapped.resources[f.resourceId], f.line, f.column]),
      [[tsUrl, ts[name].paren.line, ts[name].paren.column]],
      name,
    )
  }
  const entry = stats.resources.find((r) => r.resource === jsUrl)
  assert.equal(entry.mapped, entry.frames, 'every frame of server.js is mapped')
  assert.ok(stats.unmapped.notAFile > 0, 'node: internals are counted as not files')
  // The mapped trace is a plain trace: every exporter and summarize take it.
  assert.equal(
    summarize(mapped).reduce((n, r) => n + r.selfSamples, 0),
    mapped.samples.length,
  )
  toCpuProfile(mapped)
  toGeckoProfile(mapped)
  toSpeedscope(mapped)
  assert.ok(toPprof(mapped).length > 0)
  assert.match(toCollapsed(mapped), /checksum/)
  assert.match(toFlameGraph(mapped), /server\.ts/)
})

test('a real capture of the bundle: self time of the bundled packages goes to those packages', async () => {
  const bundleUrl = pathToFileURL(builds.bundle).href
  const pkgs = ['fast-deep-equal', 'escape-html']
  // Retry until the mapped trace shows self time in both packages (short captures may miss one).
  let trace
  let rows
  let mappedTrace
  for (let attempt = 0; attempt < 4; attempt++) {
    trace = capture(builds.bundle, () => true)
    mappedTrace = (await resolveSourceMaps(trace)).trace
    rows = summarize(mappedTrace, { by: 'package' })
    if (pkgs.every((p) => rows.some((r) => r.name === p && r.selfSamples > 0))) break
  }
  const before = summarize(trace, { by: 'package' })
  assert.ok(!before.some((r) => pkgs.includes(r.name)), 'unmapped, the bundle is all app code')
  assert.ok(trace.resources.includes(bundleUrl))
  for (const p of pkgs) {
    const row = rows.find((r) => r.name === p)
    assert.ok(row && row.selfSamples > 0, `${p} has self time after mapping: ${JSON.stringify(rows)}`)
    assert.equal(row.kind, 'dependency')
    assert.equal(row.version, require(`${p}/package.json`).version)
  }
  const app = rows.find((r) => r.name === 'sm-shop')
  assert.ok(app && app.kind === 'app' && app.version === '4.5.6', 'the app is found by its package.json')
  const names = new Set(mappedTrace.frames.map((f) => f.name))
  for (const n of ['checksum', 'renderRows']) assert.ok(names.has(n), `${n} named again`)
})

test('jsprof report, convert and flamegraph map by default and take --no-source-maps', async () => {
  const trace = syntheticTrace(builds.tsc, tscNeedles)
  // Each sample on its own stack so every function has self time (a row of its own).
  trace.samples = trace.stacks.map((_, i) => ({ timestamp: i, stackId: i }))
  const file = path.join(dir, 'cli.trace.json')
  fs.writeFileSync(file, JSON.stringify(trace))
  const jsprof = (args) =>
    spawnSync(process.execPath, [path.join(ROOT, 'bin', 'jsprof.js'), ...args], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    })
  const ts = tsPositions()
  const tsUrl = pathToFileURL(tsFile).href
  const mapped = jsprof(['report', file, '--by', 'function', '--json'])
  assert.equal(mapped.status, 0, mapped.stderr)
  assert.match(mapped.stderr, /mapped 3 of 4 frames through source maps/)
  const names = JSON.parse(mapped.stdout).rows.map((r) => r.name)
  for (const n of HOT)
    assert.ok(names.includes(`${n} (${tsUrl}:${ts[n].paren.line}:${ts[n].paren.column})`), `${n} in ${names}`)
  const table = jsprof(['report', file, '--by', 'function'])
  assert.match(
    table.stdout,
    new RegExp(`checksum \\(${tsUrl}:${ts.checksum.paren.line}:${ts.checksum.paren.column}\\)`),
  )
  const plain = jsprof(['report', file, '--by', 'function', '--json', '--no-source-maps'])
  assert.equal(plain.status, 0, plain.stderr)
  assert.equal(plain.stderr, '')
  assert.ok(JSON.parse(plain.stdout).rows.every((r) => !r.name.includes('.ts:')))
  const collapsed = jsprof(['convert', file, '--to', 'collapsed', '-o', '-'])
  assert.equal(collapsed.status, 0, collapsed.stderr)
  assert.ok(
    collapsed.stdout.includes(`renderRows (${tsFile}:${ts.renderRows.paren.line}:${ts.renderRows.paren.column})`),
    collapsed.stdout,
  )
  const svg = path.join(dir, 'cli.svg')
  const flame = jsprof(['flamegraph', file, '-o', svg])
  assert.equal(flame.status, 0, flame.stderr)
  assert.match(fs.readFileSync(svg, 'utf8'), /server\.ts/)
  const plainSvg = jsprof(['flamegraph', file, '-o', svg, '--no-source-maps'])
  assert.equal(plainSvg.status, 0, plainSvg.stderr)
  assert.doesNotMatch(fs.readFileSync(svg, 'utf8'), /server\.ts/)
  // A map that is named but broken is a warning, never a failure.
  const brokenDir = path.join(dir, 'cli-broken')
  fs.mkdirSync(brokenDir)
  fs.writeFileSync(path.join(brokenDir, 'server.js'), fs.readFileSync(builds.tsc, 'utf8'))
  fs.writeFileSync(path.join(brokenDir, 'server.js.map'), 'not json')
  const brokenFile = path.join(dir, 'cli-broken.trace.json')
  fs.writeFileSync(
    brokenFile,
    JSON.stringify({ ...trace, resources: [pathToFileURL(path.join(brokenDir, 'server.js')).href] }),
  )
  const warned = jsprof(['report', brokenFile])
  assert.equal(warned.status, 0, warned.stderr)
  assert.match(warned.stderr, /warning: source map not used: .*server\.js\.map: not a valid source map/)
})

test('maps named but missing (packages that ship the comment without the map): one warning line with the count', () => {
  // Eight "packages" whose files end in a sourceMappingURL comment naming a map they do not ship, and one
  // whose map is not JSON.
  const base = path.join(dir, 'many-missing')
  const resources = []
  for (let i = 0; i < 9; i++) {
    const pkg = path.join(base, 'node_modules', `pkg${i}`)
    fs.mkdirSync(pkg, { recursive: true })
    fs.writeFileSync(path.join(pkg, 'index.js'), `function f${i}() {}\n//# sourceMappingURL=index.js.map\n`)
    if (i === 8) fs.writeFileSync(path.join(pkg, 'index.js.map'), 'not json')
    resources.push(pathToFileURL(path.join(pkg, 'index.js')).href)
  }
  const trace = {
    resources,
    frames: resources.map((_, i) => ({ name: `f${i}`, resourceId: i, line: 1, column: 1 })),
    stacks: resources.map((_, i) => ({ frameId: i })),
    samples: resources.map((_, i) => ({ timestamp: i, stackId: i })),
  }
  const file = path.join(dir, 'many-missing.trace.json')
  fs.writeFileSync(file, JSON.stringify(trace))
  const jsprof = (args) =>
    spawnSync(process.execPath, [path.join(ROOT, 'bin', 'jsprof.js'), ...args], {
      encoding: 'utf8',
      env: { ...process.env, NO_COLOR: '1' },
    })
  for (const command of [
    ['report', file],
    ['convert', file, '--to', 'collapsed', '-o', '-'],
    ['flamegraph', file, '-o', '-'],
  ]) {
    const r = jsprof(command)
    assert.equal(r.status, 0, r.stderr)
    const warnings = r.stderr.split('\n').filter((l) => l.includes('warning'))
    assert.equal(warnings.length, 1, r.stderr)
    assert.match(
      warnings[0],
      /^jsprof: warning: 9 source maps not used \(8 not found, 1 invalid\), first: .*pkg0.*index\.js\.map.* \(--source-map-warnings lists each\)$/,
    )
  }
  const each = jsprof(['report', file, '--source-map-warnings'])
  assert.equal(each.stderr.split('\n').filter((l) => l.includes('warning: source map not used')).length, 9, each.stderr)
  const json = JSON.parse(jsprof(['report', file, '--json']).stdout)
  assert.equal(json.sourceMapsNotUsed.length, 9)
  assert.deepEqual(
    json.sourceMapsNotUsed.map((r) => r.reason).sort(),
    [...Array(8).fill('mapNotFound'), 'mapInvalid'].sort(),
  )
  assert.equal(json.sourceMapsNotUsed[0].resource, resources[0])
})

test('a broken map and a missing map leave frames as they are and say why', async () => {
  const broken = path.join(dir, 'broken')
  const missing = path.join(dir, 'missing')
  const none = path.join(dir, 'none')
  for (const d of [broken, missing, none]) fs.mkdirSync(d)
  const js = fs.readFileSync(builds.tsc, 'utf8')
  fs.writeFileSync(path.join(broken, 'server.js'), js)
  fs.writeFileSync(path.join(broken, 'server.js.map'), '{"version":3,"sources":["a.ts"],"mappings":"AAAA;;!!!"')
  fs.writeFileSync(path.join(missing, 'server.js'), js) // its comment names server.js.map, which is not there
  fs.writeFileSync(path.join(none, 'server.js'), js.replace(/\/\/# sourceMappingURL=.*/, ''))
  const files = [broken, missing, none].map((d) => path.join(d, 'server.js'))
  const one = syntheticTrace(builds.tsc, tscNeedles)
  const trace = {
    resources: files.map((f) => pathToFileURL(f).href),
    frames: files.map((_, r) => ({ ...one.frames[0], resourceId: r })),
    stacks: [{ frameId: 0 }, { frameId: 1 }, { frameId: 2 }],
    samples: [
      { timestamp: 0, stackId: 0 },
      { timestamp: 1, stackId: 1 },
      { timestamp: 2, stackId: 2 },
    ],
  }
  const { trace: mapped, stats } = await resolveSourceMaps(trace)
  assert.deepEqual(mapped, trace, 'nothing mapped: the same trace')
  assert.equal(stats.mapped, 0)
  assert.equal(stats.unmapped.mapInvalid, 1)
  assert.equal(stats.unmapped.mapNotFound, 1)
  assert.equal(stats.unmapped.noMap, 1)
  assert.deepEqual(
    stats.resources.map((r) => r.error.reason),
    ['mapInvalid', 'mapNotFound', 'noMap'],
  )
  assert.match(stats.resources[1].error.message, /server\.js\.map/)
  // Too large for the cap: said so, not read.
  const capped = await resolveSourceMaps(syntheticTrace(builds.tsc, tscNeedles), { maxMapSize: 10, cache: false })
  assert.equal(capped.stats.resources[0].error.reason, 'mapTooLarge')
})

test('options: explicit maps, turning lookups off, and the cache', async () => {
  const trace = syntheticTrace(builds.tsc, tscNeedles)
  const off = await resolveSourceMaps(trace, { sourceMappingURL: false, adjacent: false })
  assert.equal(off.stats.mapped, 0)
  assert.equal(off.stats.resources[0].error.reason, 'noMap')
  const mapText = fs.readFileSync(`${builds.tsc}.map`, 'utf8')
  for (const map of [`${builds.tsc}.map`, pathToFileURL(`${builds.tsc}.map`), mapText, JSON.parse(mapText)]) {
    const r = await resolveSourceMaps(trace, {
      sourceMappingURL: false,
      adjacent: false,
      maps: { [trace.resources[0]]: map },
    })
    assert.equal(r.stats.mapped, 3, String(typeof map))
  }
  const viaMap = await resolveSourceMaps(trace, { maps: new Map([[trace.resources[0], `${builds.tsc}.map`]]) })
  assert.equal(viaMap.stats.mapped, 3)
  const { binding } = require('../lib/native')
  await resolveSourceMaps(trace)
  const reads = binding.sourceMapReads()
  await resolveSourceMaps(trace)
  assert.equal(binding.sourceMapReads(), reads, 'a cached map is not read again')
})

test('bad arguments are TypeErrors and RangeErrors', async () => {
  const trace = syntheticTrace(builds.tsc, tscNeedles)
  for (const bad of [undefined, null, 1, 'x', [], {}, { resources: [], frames: [], stacks: [] }]) {
    await assert.rejects(resolveSourceMaps(bad), TypeError)
  }
  await assert.rejects(resolveSourceMaps(trace, 5), TypeError)
  await assert.rejects(resolveSourceMaps(trace, { cache: 'yes' }), TypeError)
  await assert.rejects(resolveSourceMaps(trace, { maps: 5 }), TypeError)
  await assert.rejects(resolveSourceMaps(trace, { maps: { x: 5 } }), TypeError)
  // Numbers convert as WebIDL converts them (lib/args.js): a numeric string is its number, others a TypeError.
  await resolveSourceMaps(trace, { maxMapSize: '1' })
  await assert.rejects(resolveSourceMaps(trace, { maxMapSize: 'x' }), TypeError)
  await assert.rejects(resolveSourceMaps(trace, { maxMapSize: -1 }), RangeError)
  await assert.rejects(resolveSourceMaps({ ...trace, samples: [{ timestamp: 0, stackId: 99 }] }), TypeError)
  await assert.rejects(
    resolveSourceMaps({ ...trace, stacks: [{ frameId: 99 }] }),
    /TypeError: resolveSourceMaps: malformed trace: stacks\[0\]/,
  )
  await assert.rejects(resolveSourceMaps({ ...trace, frames: [{ name: 1 }] }), TypeError)
})
