// The JS lint gate (`npm run lint`, run by .ci/run and the workflow): ESLint's recommended rules on every
// JS file, with the globals of the environment each one runs in. Formatting is prettier's (`npm run format`).
import js from '@eslint/js'
import globals from 'globals'

export default [
  // binding.js is written by napi build on every build (scripts/build.mjs), as napi writes it.
  { ignores: ['node_modules/', 'target/', 'npm/', '.cache/', 'crates/', '__test__/fixtures/', 'binding.js'] },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', ecmaVersion: 2024, globals: { ...globals.node } },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { sourceType: 'module', ecmaVersion: 2024, globals: { ...globals.node } },
  },
  {
    // Functions these tests hand to page.evaluate run in Chromium.
    files: ['__test__/flamegraph-html.spec.mjs', '__test__/chrome-oracle.spec.mjs', '__test__/chromium.mjs'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    rules: {
      'no-unused-vars': [
        'error',
        { args: 'after-used', argsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      'no-empty': ['error', { allowEmptyCatch: true }],
      // Names, URLs and bytes from profiles are untrusted: matching control characters is the point.
      'no-control-regex': 'off',
    },
  },
]
