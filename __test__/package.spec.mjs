// The package metadata a release depends on: every platform package matches the main one (npm refuses
// provenance without a `repository` naming the repo that built it), there is one per napi target, and
// the main package ships every file the README links to.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import path, { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const read = (p) => JSON.parse(readFileSync(join(root, p), 'utf8'))
const pkg = read('package.json')

test('the main package names its repository, homepage, bugs and licence', () => {
  assert.match(pkg.repository.url, /^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/)
  assert.equal(pkg.repository.type, 'git')
  assert.ok(pkg.homepage && pkg.bugs.url && pkg.keywords.length > 0)
  assert.equal(pkg.license, 'MIT')
  assert.ok(existsSync(join(root, 'LICENSE')))
})

test('one platform package per napi target, each with the main package repository, licence and version', () => {
  const dirs = readdirSync(join(root, 'npm')).sort()
  assert.equal(
    dirs.length,
    pkg.napi.targets.length,
    `npm/: ${dirs.join(', ')}; targets: ${pkg.napi.targets.join(', ')}`,
  )
  for (const dir of dirs) {
    const p = read(`npm/${dir}/package.json`)
    assert.equal(p.name, `${pkg.name}-${dir}`)
    assert.equal(p.version, pkg.version, dir)
    assert.deepEqual(p.repository, pkg.repository, `${dir}: repository`)
    assert.equal(p.license, pkg.license, dir)
    assert.deepEqual(p.files, [`${pkg.napi.binaryName}.${dir}.node`], dir)
  }
  assert.ok(dirs.includes('linux-arm64-musl'))
})

test('the package ships what the README links to', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const links = [...readme.matchAll(/\]\(([^)#:]+)(#[^)]*)?\)/g)].map((m) => m[1])
  assert.ok(links.length > 0)
  const shipped = (file) => pkg.files.some((f) => (f.endsWith('/') ? file.startsWith(f) : file === f))
  for (const link of links) {
    assert.ok(existsSync(join(root, link)), `${link} exists`)
    assert.ok(shipped(link), `${link} is in package.json files`)
  }
})

test('npm start: the quickstart is an app of its own, so its report names it and not jsprof-node', () => {
  const r = spawnSync(process.execPath, [path.join(root, 'examples', 'quickstart')], {
    encoding: 'utf8',
    timeout: 60_000,
  })
  assert.equal(r.status, 0, r.stderr)
  const byPackage = r.stdout.split('top functions')[0]
  assert.match(byPackage, /\bapp\s+quickstart-app@1\.0\.0$/m)
  assert.doesNotMatch(r.stdout, /jsprof-node/)
})
