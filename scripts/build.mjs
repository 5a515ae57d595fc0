// `npm run build` / `npm run build:debug`: `napi build --platform --js binding.js --dts binding.d.ts`
// plus the arguments given (--release, --target …, --use-napi-cross, -x), with the build machine's
// paths mapped out of the binary: panic messages and debug info otherwise embed the absolute paths of
// the cargo registry (`/home/<user>/.cargo/registry/src/…`) and of this checkout. RUSTFLAGS gets
// `--remap-path-prefix <CARGO_HOME>=/cargo --remap-path-prefix <repo>=.` (napi adds its own flags to it).
import { spawnSync } from 'node:child_process'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url)).replace(/[\\/]$/, '')
const cargoHome = process.env.CARGO_HOME || join(homedir(), '.cargo')
const flags = []
for (const [from, to] of [
  [cargoHome, '/cargo'],
  [root, '.'],
]) {
  // RUSTFLAGS is split on spaces: a path with one cannot be passed (it then stays in the binary).
  if (/\s/.test(from)) console.warn(`build: not remapping ${from} (it has a space)`)
  else flags.push(`--remap-path-prefix=${from}=${to}`)
}
const rustflags = [process.env.RUSTFLAGS, ...flags].filter(Boolean).join(' ')
const napi = join(root, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js')
const r = spawnSync(
  process.execPath,
  [napi, 'build', '--platform', '--js', 'binding.js', '--dts', 'binding.d.ts', ...process.argv.slice(2)],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, RUSTFLAGS: rustflags },
  },
)
process.exit(r.status ?? 1)
