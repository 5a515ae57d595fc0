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

/**
 * The real programs of bench/record-vs-cpu-prof.mjs and bench/inlining-rows.mjs, set up under `tmp`:
 * those of `only` (a Set of 'tsc', 'eslint', 'webpack'), each { title, args (after node), cwd, ok (exit
 * statuses that are a normal run) }:
 *   - tsc --noEmit on a real TypeScript package's sources (zod's, the devDependency);
 *   - eslint (recommended rules) on a real codebase (webpack's lib/, the devDependency);
 *   - a webpack 5 production build whose terser-webpack-plugin minifies in worker threads (jest-worker).
 */
export function realPrograms(tmp, only) {
  const ONLY = only
  const modulesDir = path.join(path.dirname(require.resolve('typescript/package.json')), '..')
  const list = []
  if (ONLY.has('tsc')) {
    const dir = zodProject(path.join(tmp, 'zod'))
    list.push({
      title: "tsc --noEmit on zod's sources",
      args: [require.resolve('typescript/lib/tsc.js'), '-p', dir],
      cwd: dir,
      ok: [0, 2],
    })
  }
  if (ONLY.has('eslint')) {
    const dir = path.join(tmp, 'eslint')
    fs.mkdirSync(dir, { recursive: true })
    fs.cpSync(path.join(path.dirname(require.resolve('webpack/package.json')), 'lib'), path.join(dir, 'lib'), {
      recursive: true,
    })
    fs.writeFileSync(
      path.join(dir, 'eslint.config.mjs'),
      `import js from ${JSON.stringify(require.resolve('@eslint/js'))}
export default [js.configs.recommended, { languageOptions: { sourceType: 'commonjs', ecmaVersion: 2024, globals: { require: 'readonly', module: 'writable', process: 'readonly', __dirname: 'readonly', Buffer: 'readonly', console: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' } } }]
`,
    )
    list.push({
      title: "eslint (recommended) on webpack's lib/",
      args: [path.join(path.dirname(require.resolve('eslint/package.json')), 'bin', 'eslint.js'), 'lib'],
      cwd: dir,
      ok: [0, 1],
    })
  }
  if (ONLY.has('webpack')) {
    const dir = path.join(tmp, 'webpack')
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(
      path.join(dir, 'build.js'),
      `const webpack = require(${JSON.stringify(require.resolve('webpack'))})
const TerserPlugin = require(${JSON.stringify(require.resolve('terser-webpack-plugin'))})
webpack({
  mode: 'production',
  context: __dirname,
  entry: { zod: 'zod', acorn: 'acorn', scope: 'eslint-scope' },
  resolve: { modules: [${JSON.stringify(modulesDir)}] },
  output: { path: require('node:path').join(__dirname, 'dist') },
  optimization: { minimizer: [new TerserPlugin({ parallel: 2 })] },
  performance: { hints: false },
}).run((err, stats) => {
  if (err || stats.hasErrors()) { console.error(err || stats.toString('errors-only')); process.exitCode = 1 }
})
`,
    )
    list.push({ title: 'webpack 5 production build (terser in worker threads)', args: ['build.js'], cwd: dir, ok: [0] })
  }
  return list
}
