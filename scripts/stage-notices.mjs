// Puts the licence texts into platform packages before they are packed: each npm/<platform>/ ships the
// compiled addon, which links the Rust crates of THIRD-PARTY-NOTICES.md, so it gets that file and
// LICENSE (and lists the notices in its `files`; npm adds LICENSE by itself).
//
//   node scripts/stage-notices.mjs [dir …]     (default: every npm/<platform>/; the release workflow)
// pack-test.mjs imports stageNotices() for the platform package it stages.
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
export const NOTICE_FILES = ['LICENSE', 'THIRD-PARTY-NOTICES.md']

export function stageNotices(dir) {
  for (const f of NOTICE_FILES) copyFileSync(join(root, f), join(dir, f))
  const manifest = join(dir, 'package.json')
  const p = JSON.parse(readFileSync(manifest, 'utf8'))
  p.files = [...new Set([...(p.files ?? []), ...NOTICE_FILES])]
  writeFileSync(manifest, `${JSON.stringify(p, null, 2)}\n`)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dirs =
    process.argv.length > 2 ? process.argv.slice(2) : readdirSync(join(root, 'npm')).map((d) => join(root, 'npm', d))
  for (const dir of dirs) {
    stageNotices(dir)
    console.log(`staged ${NOTICE_FILES.join(', ')} in ${dir}`)
  }
}
