// `npm test`: node:test over every __test__/*.spec.mjs, on every OS. The file list is made here rather
// than by a shell glob, which Windows shells leave unexpanded (and `node --test` only expands globs
// itself from Node 21). Extra arguments go to `node --test` (e.g. `npm test -- --test-name-pattern=x`).
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const files = readdirSync(join(root, '__test__'))
  .filter((f) => f.endsWith('.spec.mjs'))
  .sort()
  .map((f) => join('__test__', f))
const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...process.argv.slice(2), ...files], {
  cwd: root,
  stdio: 'inherit',
})
process.exit(r.status ?? 1)
