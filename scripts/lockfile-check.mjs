// Whether `npm ci` accepts package-lock.json on every platform the workflow runs on: npm ci refuses a
// lockfile that lacks an optional dependency of any platform (a lockfile written where the registry
// served only this platform's packages does). For each napi target's os/cpu/libc this runs
// `npm ci --dry-run --ignore-scripts --os … --cpu … [--libc …]` on a copy of package.json and the lock.
// Prints `lockfile: N passed, N failed`; exit 1 if any platform is refused.
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const work = mkdtempSync(join(tmpdir(), 'jsprof-lock-'))
for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(root, f), join(work, f))
const platforms = [
  ['linux', 'x64', 'glibc'],
  ['linux', 'x64', 'musl'],
  ['linux', 'arm64', 'glibc'],
  ['linux', 'arm64', 'musl'],
  ['darwin', 'x64'],
  ['darwin', 'arm64'],
  ['win32', 'x64'],
]
let passed = 0
let failed = 0
try {
  for (const [os, cpu, libc] of platforms) {
    const args = [
      'ci',
      '--dry-run',
      '--ignore-scripts',
      '--no-audit',
      '--no-fund',
      '--os',
      os,
      '--cpu',
      cpu,
      ...(libc ? ['--libc', libc] : []),
    ]
    const r = spawnSync('npm', args, {
      cwd: work,
      encoding: 'utf8',
      timeout: 300000,
      shell: process.platform === 'win32',
    })
    const name = [os, cpu, libc].filter(Boolean).join('-')
    if (r.status === 0) {
      passed++
      console.log(`ok   npm ci accepts the lockfile for ${name}`)
    } else {
      failed++
      const why = `${r.stdout}${r.stderr}`
        .split('\n')
        .filter((l) => /npm error (Missing|Invalid|`npm ci`)/.test(l))
        .slice(0, 5)
      console.log(`FAIL npm ci refuses the lockfile for ${name}:\n  ${why.join('\n  ')}`)
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
console.log(`lockfile: ${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
