// The licences of the Rust crates linked into the addon (the `.node` binary of every platform package):
// from `cargo metadata`, the crates the cdylib really links (normal dependencies of jsprof-node,
// transitively, on the release targets; no build scripts, proc macros or dev dependencies).
//
//   node scripts/licenses.mjs            writes THIRD-PARTY-NOTICES.md (names, versions, licences, the
//                                        crates' own licence and NOTICE texts)
//   node scripts/licenses.mjs --check    exit 1 if a crate's licence (any non-dev dependency, build
//                                        scripts and proc macros included, as cargo-deny checks) is not in deny.toml's allowlist
//                                        (an `A OR B` expression needs one allowed choice) or
//                                        THIRD-PARTY-NOTICES.md is out of date
//
// The allowlist is deny.toml's `[licenses] allow` (the same file `cargo deny check licenses` reads).
// npm runtime dependencies (ws, for `jsprof attach` on Node without a WebSocket client) are installed
// as packages of their own, with their own licence files, not bundled: their licences must be allowed
// too (checked here), and the notices list them.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const NOTICES = join(root, 'THIRD-PARTY-NOTICES.md')
const check = process.argv.includes('--check')

/** deny.toml's `allow = [ … ]` list under `[licenses]`. */
function allowlist() {
  const text = readFileSync(join(root, 'deny.toml'), 'utf8')
  const section = text.split(/^\[licenses\]\s*$/m)[1]?.split(/^\[/m)[0] ?? ''
  const list = /^allow\s*=\s*\[([^\]]*)\]/m.exec(section)
  if (!list) throw new Error('deny.toml has no [licenses] allow = [...] list')
  return new Set([...list[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]))
}

/** Whether an SPDX expression (OR, AND, parentheses; the old `/` for OR) is satisfied by `allowed`. */
function satisfied(expr, allowed) {
  const tokens = expr.replace(/\//g, ' OR ').match(/\(|\)|[^\s()]+/g) ?? []
  let i = 0
  const primary = () => {
    const t = tokens[i++]
    if (t === '(') {
      const v = or()
      i++ // ')'
      return v
    }
    return allowed.has(t.replace(/\+$/, ''))
  }
  const and = () => {
    let v = primary()
    while (tokens[i] === 'AND') {
      i++
      v = primary() && v
    }
    return v
  }
  const or = () => {
    let v = and()
    while (tokens[i] === 'OR') {
      i++
      v = and() || v
    }
    return v
  }
  return tokens.length > 0 && or()
}

/**
 * The crates jsprof-node depends on, for every napi target: `linked` (normal dependencies, no proc
 * macros: what the cdylib contains, owed notices) and `all` (also build dependencies and proc macros:
 * what the licence policy covers, as `cargo deny check licenses` does), each sorted by name and version.
 */
function crateSets() {
  const targets = pkg.napi.targets
  const seen = new Map()
  const all = new Map()
  for (const target of targets) {
    const meta = JSON.parse(
      execFileSync('cargo', ['metadata', '--format-version', '1', '--locked', '--filter-platform', target], {
        cwd: root,
        encoding: 'utf8',
        maxBuffer: 64 << 20,
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    )
    const byId = new Map(meta.packages.map((p) => [p.id, p]))
    const nodes = new Map(meta.resolve.nodes.map((n) => [n.id, n]))
    // [id, linked?]: our own workspace crates are MIT under this repository's LICENSE.
    const todo = [[meta.packages.find((p) => p.name === 'jsprof-node').id, true]]
    const done = new Set()
    while (todo.length) {
      const [id, linked] = todo.pop()
      if (done.has(`${id} ${linked}`)) continue
      done.add(`${id} ${linked}`)
      const p = byId.get(id)
      if (p.source) {
        all.set(`${p.name}@${p.version}`, p)
        if (linked) seen.set(`${p.name}@${p.version}`, p)
      }
      for (const d of nodes.get(id).deps) {
        const kinds = d.dep_kinds.map((k) => k.kind)
        if (kinds.every((k) => k === 'dev')) continue
        const macro = byId.get(d.pkg).targets.some((t) => t.kind.includes('proc-macro'))
        todo.push([d.pkg, linked && kinds.includes(null) && !macro])
      }
    }
  }
  const sorted = (m) =>
    [...m.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version))
  return { linked: sorted(seen), all: sorted(all) }
}

/** The crate's own licence/notice files (LICENSE*, COPYING*, NOTICE*), by file name. */
function licenceTexts(p) {
  const dir = dirname(p.manifest_path)
  return readdirSync(dir)
    .filter((f) => /^(licen[cs]e|copying|notice)/i.test(f) && !/\.(rs|toml)$/i.test(f))
    .sort()
    .map((f) => ({ file: f, text: readFileSync(join(dir, f), 'utf8').replace(/\r\n/g, '\n').trim() }))
}

const MIT = (holders) => `Copyright (c) ${holders}

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction, including
without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the
following conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial
portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT
LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO
EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER
IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE
USE OR OTHER DEALINGS IN THE SOFTWARE.`

// Sources vendored into the crates (not crates themselves), compiled into the addon.
const VENDORED = [
  {
    name: 'opentelemetry-proto (OTLP profiles protos; prost code generated from them)',
    version: 'ac2c4b5d1f3a',
    license: 'Apache-2.0',
    file: 'crates/jsprof-core/proto/LICENSE',
  },
]

function notices(crates) {
  const out = [
    '# Third-party notices',
    '',
    `The native addon of ${pkg.name} (the \`.node\` file in each \`${pkg.name}-<platform>\` package) links the`,
    'Rust crates below. Their licences and notices follow, each distinct text once. The JavaScript package',
    `depends on ${npmDeps.length ? npmDeps.map((d) => `${d.name} (${d.license})`).join(', ') : 'no npm package'} at run time,`,
    'installed as packages of their own with their own licence files.',
    'Generated by `node scripts/licenses.mjs` from `cargo metadata`; do not edit.',
    '',
    '| crate | version | licence |',
    '| --- | --- | --- |',
    ...crates.map((p) => `| ${p.name} | ${p.version} | ${p.license} |`),
    ...VENDORED.map((v) => `| ${v.name} | ${v.version} | ${v.license} |`),
    '',
  ]
  // Distinct texts, each listing the crates it belongs to.
  const texts = new Map()
  for (const p of crates) {
    let files = licenceTexts(p)
    if (files.length === 0) {
      // No licence file in the published crate: the SPDX licence with its authors as holders.
      if (!/\bMIT\b/.test(p.license)) throw new Error(`${p.name} ${p.version} (${p.license}) ships no licence text`)
      files = [
        {
          file: 'MIT (no licence file in the crate)',
          text: MIT(p.authors.join(', ').replace(/\s*<[^>]*>/g, '') || `the ${p.name} authors`),
        },
      ]
    }
    for (const { file, text } of files) {
      const entry = texts.get(text) ?? { crates: [], file }
      entry.crates.push(`${p.name} ${p.version}`)
      texts.set(text, entry)
    }
  }
  for (const v of VENDORED) {
    const text = readFileSync(join(root, v.file), 'utf8').trim()
    const entry = texts.get(text) ?? { crates: [], file: v.file }
    entry.crates.push(`${v.name} ${v.version}`)
    texts.set(text, entry)
  }
  for (const [text, { crates: names, file }] of texts) {
    out.push(`## ${names.join(', ')}`, '', `${file}:`, '', '```text', text.replace(/```/g, "'''"), '```', '')
  }
  return out.join('\n')
}

/** The main package's runtime npm dependencies, with the licence their installed package.json declares. */
function runtimeNpmDependencies() {
  return Object.keys(pkg.dependencies ?? {}).map((name) => {
    try {
      const own = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8'))
      return { name, license: typeof own.license === 'string' ? own.license : undefined }
    } catch {
      return { name, license: undefined }
    }
  })
}

const npmDeps = runtimeNpmDependencies()
const allowed = allowlist()
const { linked: crates, all } = crateSets()
let failed = 0
for (const p of all) {
  if (!p.license || !satisfied(p.license, allowed)) {
    failed++
    console.error(
      `licence not allowed: ${p.name} ${p.version}: ${p.license ?? '(none declared)'} (allowed: ${[...allowed].join(', ')})`,
    )
  }
}
for (const d of npmDeps) {
  if (!d.license || !satisfied(d.license, allowed)) {
    failed++
    console.error(
      `licence not allowed: npm ${d.name}: ${d.license ?? '(none declared or not installed)'} (allowed: ${[...allowed].join(', ')})`,
    )
  }
}
const text = notices(crates)
if (check) {
  const current = existsSync(NOTICES) ? readFileSync(NOTICES, 'utf8') : ''
  if (current !== text) {
    failed++
    console.error('THIRD-PARTY-NOTICES.md is out of date: run node scripts/licenses.mjs')
  }
  console.log(
    `licences: ${all.length} crates (${crates.length} linked into the addon), all allowed: ${failed === 0 ? 'yes' : 'no'}`,
  )
  process.exitCode = failed ? 1 : 0
} else {
  writeFileSync(NOTICES, text)
  console.log(`wrote THIRD-PARTY-NOTICES.md: ${crates.length} crates`)
  process.exitCode = failed ? 1 : 0
}
