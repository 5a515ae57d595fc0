// attribute(resource): app / dependency / node / native, with package, version and root, on real
// node_modules trees built in a temp dir.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { attribute } from 'jsprof-node'

const require = createRequire(import.meta.url)
const binding = require('../binding.js')

let tmp
/** Writes `files` ({ relative path: contents }) under the temp dir; objects become JSON. */
function tree(files) {
  for (const [rel, contents] of Object.entries(files)) {
    const file = path.join(tmp, ...rel.split('/'))
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, typeof contents === 'string' ? contents : JSON.stringify(contents))
  }
}
const at = (rel) => path.join(tmp, ...rel.split('/'))
const url = (rel) => pathToFileURL(at(rel)).href

before(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-attr-')))
  tree({
    'proj/package.json': { name: 'my-app', version: '0.3.0' },
    'proj/src/server.js': '',
    'proj/node_modules/lodash/package.json': { name: 'lodash', version: '4.17.21' },
    'proj/node_modules/lodash/fp/map.js': '',
    'proj/node_modules/@scope/pkg/package.json': { name: '@scope/pkg', version: '2.0.0-beta.1' },
    'proj/node_modules/@scope/pkg/dist/index.js': '',
    'proj/node_modules/outer/package.json': { name: 'outer', version: '1.0.0' },
    'proj/node_modules/outer/index.js': '',
    'proj/node_modules/outer/node_modules/inner/package.json': { name: 'inner', version: '0.0.7' },
    'proj/node_modules/outer/node_modules/inner/lib/a.js': '',
    // pnpm: a plain package read from disk, one with no package.json (version from the path), and a
    // scoped one with a peer suffix whose package.json disagrees with the path (the file wins).
    'pnpm/node_modules/.pnpm/ms@2.1.3/node_modules/ms/package.json': { name: 'ms', version: '2.1.3' },
    'pnpm/node_modules/.pnpm/ms@2.1.3/node_modules/ms/index.js': '',
    'pnpm/node_modules/.pnpm/bare@5.6.7/node_modules/bare/index.js': '',
    'pnpm/node_modules/.pnpm/@scope+name@1.2.3_peer@4.0.0/node_modules/@scope/name/package.json': {
      name: '@scope/name',
      version: '1.2.3-patched',
    },
    'pnpm/node_modules/.pnpm/@scope+name@1.2.3_peer@4.0.0/node_modules/@scope/name/lib/i.js': '',
    'pnpm/node_modules/.pnpm/@scope+bare@9.0.0_react@18.2.0/node_modules/@scope/bare/i.js': '',
    'my proj/node_modules/spaced/package.json': { name: 'spaced', version: '1.0.1' },
    'my proj/node_modules/spaced/index.js': '',
    'mono/package.json': { name: 'mono-root', private: true, workspaces: ['packages/*'] },
    'mono/packages/web/package.json': { name: '@mono/web', version: '1.0.0' },
    'mono/packages/web/src/app.js': '',
    'mono/packages/api/package.json': { name: '@mono/api', version: '2.0.0' },
    'mono/packages/api/src/esm/package.json': { type: 'module' },
    'mono/packages/api/src/esm/handler.mjs': '',
    'mono/scripts/build.js': '',
    'once/node_modules/cached/package.json': { name: 'cached', version: '1.0.0' },
    'once/node_modules/cached/a.js': '',
    'once/node_modules/cached/lib/b.js': '',
  })
})

after(() => fs.rmSync(tmp, { recursive: true, force: true }))

test('node: and "" have a kind only', () => {
  assert.deepEqual(attribute('node:internal/timers'), { kind: 'node' })
  assert.deepEqual(attribute('node:fs'), { kind: 'node' })
  assert.deepEqual(attribute(''), { kind: 'native' })
})

test('a plain dependency, as a path and as a file URL', () => {
  const expected = { kind: 'dependency', package: 'lodash', version: '4.17.21', root: at('proj/node_modules/lodash') }
  assert.deepEqual(attribute(at('proj/node_modules/lodash/fp/map.js')), expected)
  assert.deepEqual(attribute(url('proj/node_modules/lodash/fp/map.js')), expected)
})

test('a scoped dependency is @scope/name', () => {
  assert.deepEqual(attribute(at('proj/node_modules/@scope/pkg/dist/index.js')), {
    kind: 'dependency',
    package: '@scope/pkg',
    version: '2.0.0-beta.1',
    root: at('proj/node_modules/@scope/pkg'),
  })
})

test('nested node_modules: the innermost package wins', () => {
  assert.deepEqual(attribute(at('proj/node_modules/outer/node_modules/inner/lib/a.js')), {
    kind: 'dependency',
    package: 'inner',
    version: '0.0.7',
    root: at('proj/node_modules/outer/node_modules/inner'),
  })
  assert.equal(attribute(at('proj/node_modules/outer/index.js')).package, 'outer')
})

test('pnpm: plain, without package.json (version from the path), scoped with a peer suffix', () => {
  const store = 'pnpm/node_modules/.pnpm'
  assert.deepEqual(attribute(at(`${store}/ms@2.1.3/node_modules/ms/index.js`)), {
    kind: 'dependency',
    package: 'ms',
    version: '2.1.3',
    root: at(`${store}/ms@2.1.3/node_modules/ms`),
  })
  assert.deepEqual(attribute(url(`${store}/bare@5.6.7/node_modules/bare/index.js`)), {
    kind: 'dependency',
    package: 'bare',
    version: '5.6.7',
    root: at(`${store}/bare@5.6.7/node_modules/bare`),
  })
  const scoped = attribute(at(`${store}/@scope+name@1.2.3_peer@4.0.0/node_modules/@scope/name/lib/i.js`))
  assert.deepEqual(scoped, {
    kind: 'dependency',
    package: '@scope/name',
    version: '1.2.3-patched', // package.json on disk beats the path
    root: at(`${store}/@scope+name@1.2.3_peer@4.0.0/node_modules/@scope/name`),
  })
  const fromPath = attribute(at(`${store}/@scope+bare@9.0.0_react@18.2.0/node_modules/@scope/bare/i.js`))
  assert.equal(fromPath.package, '@scope/bare')
  assert.equal(fromPath.version, '9.0.0', 'the peer suffix is not part of the version')
})

test('Yarn PnP cache zips: package and version from the path', () => {
  const zip = at('yarn/.yarn/cache/left-pad-npm-1.3.0-6382451519-eb835a2e51.zip')
  assert.deepEqual(attribute(`${zip}/node_modules/left-pad/index.js`), {
    kind: 'dependency',
    package: 'left-pad',
    version: '1.3.0',
    root: `${zip}/node_modules/left-pad`,
  })
  const scoped = attribute(
    at('yarn/.yarn/cache/@babel-core-npm-7.24.0-rc.1-0a1b2c3d4e.zip/node_modules/@babel/core/lib/index.js'),
  )
  assert.equal(scoped.package, '@babel/core')
  assert.equal(scoped.version, '7.24.0-rc.1')
})

test('percent-encoded file URLs are decoded (space as %20)', () => {
  const href = url('my proj/node_modules/spaced/index.js')
  assert.match(href, /my%20proj/)
  assert.deepEqual(attribute(href), {
    kind: 'dependency',
    package: 'spaced',
    version: '1.0.1', // read from the decoded path
    root: at('my proj/node_modules/spaced'),
  })
})

test('Windows file:///C:/… and C:\\… paths: Windows roots, version from the path or absent', () => {
  const expected = { kind: 'dependency', package: 'lodash', root: 'C:\\proj\\node_modules\\lodash' }
  const windows = process.platform === 'win32'
  const check = (got) => {
    if (!windows)
      assert.deepEqual(got, expected) // unreadable here: no version
    else assert.equal(got.root, expected.root)
  }
  check(attribute('file:///C:/proj/node_modules/lodash/lodash.js'))
  check(attribute('C:\\proj\\node_modules\\lodash\\lodash.js'))
  check(attribute('C:/proj/node_modules/lodash/lodash.js'))
  assert.deepEqual(attribute('file:///D:/My%20Apps/node_modules/.pnpm/ms@2.1.3/node_modules/ms/index.js'), {
    kind: 'dependency',
    package: 'ms',
    version: '2.1.3',
    root: 'D:\\My Apps\\node_modules\\.pnpm\\ms@2.1.3\\node_modules\\ms',
  })
  assert.deepEqual(attribute('C:\\proj\\src\\server.js'), { kind: 'app' })
})

test('app code: the nearest package.json with a name; workspaces are told apart', () => {
  assert.deepEqual(attribute(at('proj/src/server.js')), {
    kind: 'app',
    package: 'my-app',
    version: '0.3.0',
    root: at('proj'),
  })
  assert.deepEqual(attribute(url('mono/packages/web/src/app.js')), {
    kind: 'app',
    package: '@mono/web',
    version: '1.0.0',
    root: at('mono/packages/web'),
  })
  // A {"type":"module"} marker without a name is skipped.
  assert.deepEqual(attribute(at('mono/packages/api/src/esm/handler.mjs')), {
    kind: 'app',
    package: '@mono/api',
    version: '2.0.0',
    root: at('mono/packages/api'),
  })
  assert.deepEqual(attribute(at('mono/scripts/build.js')), {
    kind: 'app',
    package: 'mono-root',
    root: at('mono'),
  })
})

test('each package.json is read once per process', () => {
  const before = binding.attributionReads()
  const first = attribute(at('once/node_modules/cached/a.js'))
  assert.equal(first.version, '1.0.0')
  const reads = binding.attributionReads()
  assert.equal(reads - before, 1, 'one read for the package root')
  // Change the file on disk: the cached version stays, and nothing more is read.
  fs.writeFileSync(at('once/node_modules/cached/package.json'), JSON.stringify({ name: 'cached', version: '9.9.9' }))
  for (let i = 0; i < 3; i++) {
    assert.equal(attribute(at('once/node_modules/cached/a.js')).version, '1.0.0')
    assert.equal(attribute(url('once/node_modules/cached/lib/b.js')).version, '1.0.0')
  }
  assert.equal(binding.attributionReads(), reads)
})

test('other schemes and pseudo names are app code without a package', () => {
  for (const r of [
    'https://cdn.example.com/app.js',
    'data:text/javascript,console.log(1)',
    '[eval]',
    '[eval]-wrapper',
    'wasm://wasm/0012abcd',
    'relative/file.js',
  ]) {
    assert.deepEqual(attribute(r), { kind: 'app' }, r)
  }
  // vm code compiled without a filename is generated code.
  assert.deepEqual(attribute('evalmachine.<anonymous>'), { kind: 'generated' })
  // A non-file URL still names the package its path holds, but has no root.
  assert.deepEqual(attribute('https://h.example/node_modules/lodash/lodash.js'), {
    kind: 'dependency',
    package: 'lodash',
  })
})

test('never throws for a string', () => {
  const odd = [
    'file:',
    'file://',
    'file:///',
    '\\\\',
    '\\\\?\\',
    'C:',
    'C:\\',
    '%',
    'file:///%E0%A4%A',
    '\uD800',
    '/',
    '/node_modules',
    '/node_modules/',
    '/node_modules/@s',
    'node_modules/x/y.js',
    'x'.repeat(100000),
    'file://h',
    ':',
    '@',
  ]
  for (const r of odd) {
    const got = attribute(r)
    assert.ok(['app', 'dependency', 'node', 'native'].includes(got.kind), JSON.stringify(r.slice(0, 40)))
  }
})

test('non-strings are a TypeError', () => {
  for (const v of [undefined, null, 1, {}, [], Symbol('x'), new String('/a.js'), () => {}]) {
    assert.throws(() => attribute(v), TypeError)
  }
  assert.throws(() => attribute(), { name: 'TypeError', message: /expected a resource string, got undefined/ })
})
