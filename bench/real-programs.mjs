// Real programs the record benchmarks run, set up in a scratch directory (one place for both
// bench/record.mjs and bench/record-vs-cpu-prof.mjs).
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/**
 * zod's sources (the devDependency, a real TypeScript package) without its tests and benchmarks, copied
 * to `dir` with a strict tsconfig.json: `tsc -p dir` type-checks them. Returns `dir`.
 */
export function zodProject(dir) {
  fs.cpSync(path.join(path.dirname(require.resolve('zod/package.json')), 'src'), path.join(dir, 'src'), {
    recursive: true,
    filter: (f) => !/[\\/](tests|benchmarks)([\\/]|$)|\.test\.ts$/.test(f),
  })
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'nodenext',
        skipLibCheck: true,
        types: [],
      },
      include: ['src'],
    }),
  )
  return dir
}
