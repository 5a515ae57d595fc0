// `npm run check`: everything .ci/run checks that needs nothing installed beyond `npm install` — the Rust
// gates, the JS lint and format gate, the workflow and lockfile checks, the licences, the pack test and
// `npm test` — in CI's order, stopping at the first failure. What it leaves to .ci/run: the system packages
// (go, chromium, the OTLP Python classes: the tests that need them say "skipped" here) and the other Node
// majors (`npm run test:majors`). `npm run check -- --quick` stops after the lint gates.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const quick = process.argv.includes('--quick')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const steps = [
  ['cargo fmt', 'cargo', ['fmt', '--all', '--check']],
  ['cargo clippy', 'cargo', ['clippy', '--workspace', '--', '-D', 'warnings']],
  [
    'cargo clippy (core, all targets)',
    'cargo',
    ['clippy', '-p', 'jsprof-core', '--all-targets', '--', '-D', 'warnings'],
  ],
  ['JS lint and format', npm, ['run', '--silent', 'lint']],
  ['cargo test', 'cargo', ['test', '-p', 'jsprof-core']],
  ['workflows', npm, ['run', '--silent', 'lint:workflows']],
  ['doc links', npm, ['run', '--silent', 'check:links']],
  ['lockfile', npm, ['run', '--silent', 'check:lockfile']],
  ['licences', npm, ['run', '--silent', 'check:licenses']],
  ['pack', npm, ['run', '--silent', 'test:pack']],
  ['npm test', npm, ['test']],
]
const started = Date.now()
for (const [name, cmd, args] of quick ? steps.slice(0, 4) : steps) {
  console.log(`\n== ${name}: ${cmd} ${args.join(' ')}`)
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' })
  if (r.status !== 0) {
    console.error(`\ncheck: ${name} failed (exit ${r.status ?? r.signal})`)
    process.exit(1)
  }
}
console.log(`\ncheck: all passed in ${((Date.now() - started) / 1000).toFixed(0)} s`)
