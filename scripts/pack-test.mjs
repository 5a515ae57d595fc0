// Proves the prebuilt path: the packages a release publishes install and work with no Rust at all.
//
//   npm run build && node scripts/pack-test.mjs        (npm run test:pack)
//
// 1. `npm pack --ignore-scripts` the main package (no rebuild) and checks its file list: no target/,
//    no Rust sources, no tests, no .node binary (those come in the platform packages); prints its size.
// 2. Stages the main package as `napi prepublish -t npm` makes it at release time (optionalDependencies
//    on the platform packages; here only this machine's, the one whose binary exists) and the
//    linux-x64-gnu platform package (npm/linux-x64-gnu/ plus the binary built here), and packs both.
// 3. Installs both tarballs into a fresh temporary project with a PATH that has no cargo/rustc, and
//    checks that no install script ran (the main package's `prepare` is for git checkouts only).
// 4. require()s and import()s jsprof-node there, profiles a workload, converts a .cpuprofile, and
//    checks the binary came from node_modules/jsprof-node-linux-x64-gnu.
// Exit 0 only if every check passed; prints "pack: N passed, N failed".
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { homedir } from 'node:os'

import { NOTICE_FILES, stageNotices } from './stage-notices.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const PLATFORM = 'linux-x64-gnu'
const binaryName = `${pkg.napi.binaryName}.${PLATFORM}.node`
const work = mkdtempSync(join(tmpdir(), 'jsprof-pack-'))
let passed = 0
let failed = 0

function check(what, ok, detail = '') {
  if (ok) passed++
  else failed++
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${detail ? ` — ${detail}` : ''}`)
}

function npm(args, cwd, env = process.env) {
  const r = spawnSync('npm', args, { cwd, env, encoding: 'utf8', timeout: 300000 })
  if (r.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

/** `npm pack --json` in `dir`: { filename, size, unpackedSize, files: [{ path, size }] }. */
function pack(dir, dest) {
  const out = npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dest], dir)
  return JSON.parse(out)[0]
}

if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.log(`pack-test: this machine is ${process.platform}-${process.arch}; the test packs linux-x64-gnu`)
  process.exit(2)
}
if (!existsSync(join(root, binaryName))) {
  console.error(`pack-test: ${binaryName} is not built; run npm run build first`)
  process.exit(2)
}

try {
  // 1. The main package as it is.
  const main = pack(root, work)
  const paths = main.files.map((f) => f.path).sort()
  console.log(
    `main package ${main.filename}: ${paths.length} files, ${(main.size / 1024).toFixed(1)} kB packed, ` +
      `${(main.unpackedSize / 1024).toFixed(1)} kB unpacked`,
  )
  for (const f of main.files.sort((a, b) => a.path.localeCompare(b.path)))
    console.log(`  ${String(f.size).padStart(7)}  ${f.path}`)
  const bad = paths.filter(
    (p) =>
      /^(target|src|crates|__test__|node_modules|npm|scripts|bench|\.github)\//.test(p) ||
      /\.(rs|node|toml|lock)$/.test(p),
  )
  check('main package holds no target/, Rust sources, tests or binaries', bad.length === 0, bad.join(', '))
  for (const needed of [
    'package.json',
    'index.js',
    'index.mjs',
    'index.d.ts',
    'index.d.mts',
    'register.js',
    'register.mjs',
    'register.d.ts',
    'register.d.mts',
    'binding.js',
    'lib/native.js',
    'lib/api/profiler/index.js',
    'lib/sampler/index.js',
    'LICENSE',
    'THIRD-PARTY-NOTICES.md',
    'docs/exports.md',
  ]) {
    check(`main package holds ${needed}`, paths.includes(needed))
  }

  // The checkers the ecosystem runs on a package: publint (no error, warning or suggestion) and
  // arethetypeswrong on this very tarball (node10, node16 from CJS and from ESM, bundler).
  const bin = (name) => join(root, 'node_modules', '.bin', process.platform === 'win32' ? `${name}.cmd` : name)
  const publint = spawnSync(bin('publint'), ['--strict'], { cwd: root, encoding: 'utf8', timeout: 120000 })
  console.log(publint.stdout.trim())
  check(
    'publint: all good',
    publint.status === 0 && /All good!/.test(publint.stdout),
    `${publint.stdout}${publint.stderr}`.trim(),
  )
  const attw = spawnSync(bin('attw'), [join(work, main.filename), '--format', 'table-flipped', '--no-color'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120000,
  })
  console.log(attw.stdout.trim())
  check(
    'arethetypeswrong: no problems',
    attw.status === 0 && /No problems found/.test(attw.stdout),
    `${attw.stdout}${attw.stderr}`.trim(),
  )

  // 2. Staged as at release time.
  const stageMain = join(work, 'stage-main')
  mkdirSync(stageMain)
  for (const p of paths) cpSync(join(root, p), join(stageMain, p))
  const releasePkg = { ...pkg, optionalDependencies: { [`${pkg.name}-${PLATFORM}`]: pkg.version } }
  writeFileSync(join(stageMain, 'package.json'), JSON.stringify(releasePkg, null, 2))
  const stagedMain = pack(stageMain, work)
  check(
    'the staged main package packs the same files',
    JSON.stringify(stagedMain.files.map((f) => f.path).sort()) === JSON.stringify(paths),
  )

  const stagePlat = join(work, 'stage-platform')
  cpSync(join(root, 'npm', PLATFORM), stagePlat, { recursive: true })
  cpSync(join(root, binaryName), join(stagePlat, binaryName))
  stageNotices(stagePlat)
  const plat = pack(stagePlat, work)
  const platPaths = plat.files.map((f) => f.path).sort()
  console.log(`platform package ${plat.filename}: ${platPaths.join(', ')}; ${(plat.size / 1024).toFixed(1)} kB packed`)
  check(`platform package holds ${binaryName}`, platPaths.includes(binaryName))
  for (const f of NOTICE_FILES) check(`platform package holds ${f}`, platPaths.includes(f))
  // No path of the build machine in the binary (scripts/build.mjs remaps them).
  const binary = readFileSync(join(root, binaryName)).toString('latin1')
  for (const p of [process.env.CARGO_HOME || join(homedir(), '.cargo'), root.replace(/[\\/]$/, '')]) {
    check(`the binary does not contain the build machine's ${p}`, !binary.includes(p))
  }

  // 3. A fresh project, no Rust on PATH.
  const app = join(work, 'app')
  mkdirSync(app)
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'pack-test-app', version: '1.0.0', private: true }))
  const hasRust = (dir) => ['cargo', 'rustc', 'rustup'].some((b) => existsSync(join(dir, b)))
  const path = (process.env.PATH || '')
    .split(delimiter)
    .filter((d) => d && !hasRust(d))
    .join(delimiter)
  const env = {
    ...process.env,
    PATH: path,
    CARGO: '/nonexistent/cargo',
    RUSTC: '/nonexistent/rustc',
    CARGO_HOME: join(work, 'no-cargo-home'),
    RUSTUP_HOME: join(work, 'no-rustup-home'),
  }
  const which = spawnSync('sh', ['-c', 'command -v cargo || command -v rustc || echo none'], { env, encoding: 'utf8' })
  check('no cargo or rustc on the install PATH', which.stdout.trim() === 'none', which.stdout.trim())
  const log = npm(
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--foreground-scripts',
      '--loglevel=info',
      join(work, plat.filename),
      join(work, stagedMain.filename),
    ],
    app,
    env,
  )
  writeFileSync(join(work, 'install.log'), log)
  check(
    'installing the tarballs ran no lifecycle script (no prepare, no build)',
    !/> .*(prepare|install|build)\b/.test(log) && !/napi build/.test(log),
    log
      .split('\n')
      .filter((l) => /^>/.test(l))
      .join(' | '),
  )
  const installed = join(app, 'node_modules', pkg.name)
  check('the installed main package has no binary of its own', !readdirSync(installed).some((f) => f.endsWith('.node')))

  // 4. Use it.
  writeFileSync(
    join(app, 'use.cjs'),
    `const { Profiler, fromCpuProfile } = require('${pkg.name}')
     function work(ms) { const end = performance.now() + ms; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); return x }
     ;(async () => {
       const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
       for (let i = 0; i < 20; i++) { work(10); await new Promise((r) => setImmediate(r)) }
       const t = await p.stop()
       const names = new Set(t.frames.map((f) => f.name))
       const converted = fromCpuProfile({ nodes: [{ id: 1, callFrame: { functionName: '(root)', url: '' } }], startTime: 0, samples: [1], timeDeltas: [5] })
       const binary = Object.keys(require.cache).find((k) => k.endsWith('.node'))
       console.log(JSON.stringify({ samples: t.samples.length, work: names.has('work'), converted: converted.samples.length, binary }))
     })()`,
  )
  writeFileSync(
    join(app, 'use.mjs'),
    `import jsprof, { Profiler } from '${pkg.name}'
     function work(ms) { const end = performance.now() + ms; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); return x }
     const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
     for (let i = 0; i < 20; i++) { work(10); await new Promise((r) => setImmediate(r)) }
     const t = await p.stop()
     console.log(JSON.stringify({ samples: t.samples.length, work: t.frames.some((f) => f.name === 'work'), same: jsprof.Profiler === Profiler }))`,
  )
  for (const file of ['use.cjs', 'use.mjs']) {
    const r = spawnSync(process.execPath, [file], { cwd: app, env, encoding: 'utf8', timeout: 60000 })
    let out = {}
    try {
      out = JSON.parse(r.stdout.trim().split('\n').at(-1))
    } catch {}
    check(`${file}: exits 0`, r.status === 0, r.stderr.trim().split('\n')[0])
    check(`${file}: the trace has samples of work()`, out.samples > 0 && out.work === true, JSON.stringify(out))
    if (file === 'use.cjs') {
      check('use.cjs: fromCpuProfile works', out.converted === 1)
      check(
        `the binary loaded is the platform package's`,
        typeof out.binary === 'string' &&
          out.binary.includes(join('node_modules', `${pkg.name}-${PLATFORM}`, binaryName)),
        out.binary,
      )
    } else {
      check('use.mjs: ESM and CJS exports are the same objects', out.same === true)
    }
  }
  // jsprof-node/register as a platform preloads it: with a destination (a port nothing listens on:
  // pushes fail quietly) the app runs and exits 0, silently; with a bad one, one warning.
  const registered = (preload, vars) =>
    spawnSync(process.execPath, [preload, `${pkg.name}/register`, '-e', 'console.log("app ran")'], {
      cwd: app,
      env: { ...env, ...vars },
      encoding: 'utf8',
      timeout: 60000,
    })
  for (const preload of ['--require', '--import']) {
    const ok = registered(preload, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_SERVICE_NAME: 'pack' })
    check(
      `${preload} ${pkg.name}/register: the app runs, exit 0, no warning`,
      ok.status === 0 && /app ran/.test(ok.stdout) && !/register/.test(ok.stderr),
      `${ok.status} ${ok.stderr.trim()}`,
    )
    const bad = registered(preload, { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })
    const warned = bad.stderr.split('\n').filter((l) => l.includes(`${pkg.name}/register`))
    check(
      `${preload} ${pkg.name}/register with a bad endpoint: one warning, the app runs`,
      bad.status === 0 && /app ran/.test(bad.stdout) && warned.length === 1,
      `${bad.status} ${bad.stderr.trim()}`,
    )
  }
} catch (err) {
  check('pack flow ran to the end', false, err.message)
} finally {
  if (!process.env.KEEP_PACK_TEST) rmSync(work, { recursive: true, force: true })
  else console.log(`kept ${work}`)
}
console.log(`pack: ${passed} passed, ${failed} failed`)
process.exitCode = failed ? 1 : 0
