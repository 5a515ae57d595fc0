// `npm run check:links`: every relative Markdown link in README.md and docs/*.md (`](path)`, `](path#anchor)`,
// `](#anchor)`) names a file that exists and, with an anchor, a heading of that file (GitHub's slugs); and every
// `docs/x.md#anchor` pointer written in a source comment resolves. Prints what is broken; exit 1 if anything is.
import fs from 'node:fs'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = path.resolve(process.argv[2] || fileURLToPath(new URL('..', import.meta.url)))
const slugsCache = new Map()
function slugs(file) {
  if (slugsCache.has(file)) return slugsCache.get(file)
  const seen = new Map()
  const out = new Set()
  let fence = false
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fence = !fence
    if (fence) continue
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!m) continue
    // github-slugger: lower case, drop everything but letters, marks, numbers, `_`, `-` and spaces; spaces -> '-'
    let s = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-')
    const n = seen.get(s) || 0
    seen.set(s, n + 1)
    if (n) s = `${s}-${n}`
    out.add(s)
  }
  slugsCache.set(file, out)
  return out
}

let links = 0
const problems = []
function check(from, target, where) {
  links++
  const [p, anchor] = target.split('#')
  const file = p ? path.resolve(path.dirname(from), decodeURI(p)) : from
  if (!fs.existsSync(file)) return problems.push(`${where}: ${target}: no such file`)
  if (anchor === undefined || anchor === '') return
  if (!file.endsWith('.md')) return problems.push(`${where}: ${target}: anchor into a non-Markdown file`)
  if (!slugs(file).has(anchor))
    problems.push(`${where}: ${target}: no heading with that anchor in ${path.relative(root, file)}`)
}

const mdFiles = [
  'README.md',
  ...fs
    .readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]
for (const rel of mdFiles) {
  const file = path.join(root, rel)
  let fence = false
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (/^\s*(```|~~~)/.test(line)) fence = !fence
      if (fence) return
      for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
        const t = m[1]
        if (/^[a-z][a-z0-9+.-]*:/i.test(t)) continue // http:, https:, mailto:
        check(file, t, `${rel}:${i + 1}`)
      }
    })
}
// Plain-text pointers in tracked source files: docs/name.md#anchor
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(js|mjs|cjs|rs|sh|ts|mts)$/.test(f) && f !== 'scripts/check-links.mjs') // its own comments show the form
for (const rel of tracked) {
  fs.readFileSync(path.join(root, rel), 'utf8')
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/\bdocs\/([a-z-]+\.md)(#[a-z0-9_-]+)?/g))
        check(path.join(root, 'x'), `docs/${m[1]}${m[2] || ''}`, `${rel}:${i + 1}`)
    })
}
console.log(
  `${mdFiles.length} Markdown files and ${tracked.length} source files: ${links} relative links and pointers checked`,
)
for (const p of problems) console.log(`BROKEN ${p}`)
console.log(problems.length ? `${problems.length} broken` : 'all resolve')
process.exitCode = problems.length ? 1 : 0
