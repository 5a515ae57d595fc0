// Peers installed on demand for the server bench (bench/server/run.mjs) and others, not as devDependencies:
// dd-trace with its optional native parts is ~100 MB (libdatadog, appsec, IAST, the wasm rewriter)
// that CI and `npm ci` would pay for a benchmark nobody runs there. The pinned version is installed
// once per version into .cache/peers/ (gitignored) with `npm install --ignore-scripts` (its native
// parts are prebuilt: no install script needed), and the bench's server loads it from there.

import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** dd-trace 6 needs Node >= 22; on Node 20 the last 5.x (same profiler, @datadog/pprof 5). */
export const DD_TRACE = (major) => (major >= 22 ? '6.21.0' : '5.132.0')

/** The directory of dd-trace@version (installed on first use); throws with npm's message when it cannot. */
export function ddTrace(version) {
  return peer('dd-trace', version)
}

/**
 * The directory of the package `name@version`, installed on first use into .cache/peers/<name>-<version>/
 * (`npm install --ignore-scripts`, nothing saved); throws with npm's message when it cannot. For the
 * benches' peers and the real programs they run (bench/stall-durations.mjs).
 */
export function peer(name, version) {
  const dir = path.join(root, '.cache', 'peers', `${name.replace('/', '+')}-${version}`)
  const module = path.join(dir, 'node_modules', name)
  if (existsSync(path.join(module, 'package.json'))) return module
  mkdirSync(dir, { recursive: true })
  writeFileSync(path.join(dir, 'package.json'), '{"private":true}\n')
  console.error(`# installing ${name}@${version} into ${path.relative(root, dir)} (once)`)
  const r = spawnSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-save', '--prefix', dir, `${name}@${version}`],
    { encoding: 'utf8' },
  )
  if (r.status !== 0 || !existsSync(path.join(module, 'package.json'))) {
    throw new Error(
      `npm install ${name}@${version} failed: ${(r.stderr || r.error?.message || '').trim().split('\n').at(-1)}`,
    )
  }
  return module
}
