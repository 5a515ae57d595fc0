// The native loader: when no binary fits, the error names the platform and says what to do.
// Loading is made to fail in a child process with NAPI_RS_NATIVE_LIBRARY_PATH pointing at a missing
// file, or with process.platform/arch faked before the napi-rs loader reads them.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
// This machine's napi-rs platform name, as a pattern: the suite runs on every platform CI builds.
const HERE = `${process.platform}-${process.arch}(-(gnu|musl|msvc))?`

function loadIn({ env = {}, platform, arch } = {}) {
  const fake = [
    platform && `Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} })`,
    arch && `Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} })`,
  ]
    .filter(Boolean)
    .join(';')
  const source = `${fake};
    try { require('.'); console.log(JSON.stringify({ loaded: true })) }
    catch (e) { console.log(JSON.stringify({ name: e.name, message: e.message, hasCause: e.cause !== undefined })) }`
  const r = spawnSync(process.execPath, ['-e', source], {
    cwd: root,
    encoding: 'utf8',
    timeout: 20000,
    env: { ...process.env, ...env },
  })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout.trim())
}

test('the binary built here loads (sanity for the failures below)', () => {
  assert.deepEqual(loadIn(), { loaded: true })
})

test('NAPI_RS_NATIVE_LIBRARY_PATH at a missing file: the error names the variable, the path and the platform', () => {
  const r = loadIn({ env: { NAPI_RS_NATIVE_LIBRARY_PATH: '/nonexistent/jsprof.node' } })
  assert.equal(r.name, 'Error')
  assert.match(
    r.message,
    new RegExp(
      `^jsprof-node: NAPI_RS_NATIVE_LIBRARY_PATH=/nonexistent/jsprof\\.node did not load \\(${HERE}, Node \\d+`,
    ),
  )
  assert.match(r.message, /unset it to use the prebuilt package/)
  assert.match(r.message, /Tried: .*Cannot find module '\/nonexistent\/jsprof\.node'/)
  assert.equal(r.hasCause, true, 'the loader errors stay available as cause')
})

test('a platform with a prebuilt package: the error names that package and the from-source road', () => {
  const r = loadIn({ platform: 'darwin', arch: 'arm64' })
  assert.match(r.message, /the native binary for darwin-arm64 \(Node [\d.]+\) did not load/)
  assert.match(r.message, /optional dependency jsprof-node-darwin-arm64/)
  assert.match(r.message, /--omit=optional/)
  assert.match(r.message, /build it from source \(Rust needed\).*jsprof-node\.darwin-arm64\.node/)
  const win = loadIn({ platform: 'win32', arch: 'x64' })
  assert.match(win.message, /optional dependency jsprof-node-win32-x64-msvc/)
})

test('a platform without a prebuilt package: the error says so and lists the prebuilt ones', () => {
  const r = loadIn({ platform: 'freebsd', arch: 'x64' })
  assert.match(r.message, /^jsprof-node: no prebuilt binary for freebsd-x64 \(Node [\d.]+; prebuilt: linux-x64-gnu, /)
  assert.match(r.message, /build it from source \(Rust needed\)/)
  assert.match(r.message, /NAPI_RS_NATIVE_LIBRARY_PATH/)
  const arm = loadIn({ platform: 'linux', arch: 's390x' })
  assert.match(arm.message, /no prebuilt binary for linux-s390x-(gnu|musl)/)
})

test("the loader's list of prebuilt platforms is package.json's napi.targets", () => {
  const napiName = {
    'x86_64-unknown-linux-gnu': 'linux-x64-gnu',
    'x86_64-unknown-linux-musl': 'linux-x64-musl',
    'aarch64-unknown-linux-gnu': 'linux-arm64-gnu',
    'aarch64-unknown-linux-musl': 'linux-arm64-musl',
    'x86_64-apple-darwin': 'darwin-x64',
    'aarch64-apple-darwin': 'darwin-arm64',
    'x86_64-pc-windows-msvc': 'win32-x64-msvc',
    'aarch64-pc-windows-msvc': 'win32-arm64-msvc',
  }
  const r = loadIn({ platform: 'aix', arch: 'ppc64' })
  const listed = /prebuilt: ([^)]*)\)/.exec(r.message)[1].split(', ')
  assert.deepEqual(
    listed,
    pkg.napi.targets.map((t) => napiName[t]),
  )
})

test('loading the package loads no HTTP, HTTPS or TLS module: an app that only profiles pays for none', () => {
  // The fleet exporters load node:http(s) on their first push; the Express route watch loads node:http
  // (an app's server has it already). node:https alone costs ~20 ms and ~0.75 MB of heap at require time.
  for (const load of ["require('.')", "import('./index.mjs')"]) {
    const source = `const before = new Set(process.moduleLoadList)
      Promise.resolve(${load}).then(() => {
        const loaded = process.moduleLoadList.filter((m) => !before.has(m))
        console.log(JSON.stringify(loaded.filter((m) => /^NativeModule (https?|tls|_tls_\\w+|_http_\\w+|net)$/.test(m))))
      })`
    const r = spawnSync(process.execPath, ['-e', source], { cwd: root, encoding: 'utf8', timeout: 20000 })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout.trim()), [], `${load} loaded them`)
  }
})
