// A CPU workload of a few hundred distinct functions, generated into a real module file (so frames
// carry file:// URLs and line/column positions) in a temporary directory. The functions call each
// other in varied ways: direct calls, data-dependent calls through a table, `.call`, closures passed
// to builtins (`reduce`, `map`, `sort`), methods, getters and recursion, so V8's call tree has
// thousands of distinct nodes, as a real server's has.

import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'

/** Writes the module and returns `{ file, dir, runFor(ms), runCalls(n), cleanup() }`. */
export function makeWorkload(functionCount = 300) {
  const n = functionCount
  // A fixed pseudo-random sequence: every run of the benchmark generates the same code.
  let seed = 0x2f6e2b1
  const rand = (k) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return (seed >>> 8) % k
  }
  const lines = ["'use strict'", `const F = new Array(${n})`, 'const O = {}']
  for (let i = 0; i < n; i++) {
    const a = rand(n)
    const b = rand(n)
    const c = rand(n)
    const iterations = 8 + rand(5) * 8
    const work = `let a = x | 0; for (let i = 0; i < ${iterations}; i++) a = (Math.imul(a, 31) + i ^ (a >>> 7)) | 0`
    let call
    switch (i % 8) {
      case 0:
        call = `a ^= f${a}(d - 1, a)`
        break
      case 1:
        call = `a ^= F[(a >>> 3) % ${n}](d - 1, a)`
        break
      case 2:
        call = `a ^= f${a}.call(null, d - 1, a); if (a & 1) a ^= f${b}(d - 1, a + 1)`
        break
      case 3:
        call = `a ^= [1, 2].reduce((s, v) => s ^ f${a}(d - 1, a + v), 0)`
        break
      case 4:
        call = `a ^= O.m${a % 16}(d - 1, a)`
        break
      case 5:
        call = `a ^= (a & 2 ? f${b} : f${c})(d - 1, a); a ^= [a & 7, a & 3].map((v) => F[(v * ${a}) % ${n}](d - 2, v)).sort()[0]`
        break
      case 6:
        call = `a ^= d > 2 ? f${i}(d - 2, a + 1) : f${b}(d - 1, a)`
        break
      default:
        call = `const o = { get v() { return f${c}(d - 1, a) } }; a ^= o.v`
    }
    lines.push(`function f${i}(d, x) {`, `  ${work}`, `  if (d > 0) { ${call} }`, '  return a', '}', `F[${i}] = f${i}`)
  }
  for (let m = 0; m < 16; m++)
    lines.push(`O.m${m} = function method${m}(d, x) { return F[(x >>> 5) % ${n}](d, x + ${m}) }`)
  lines.push(
    'let r = 1',
    '/** Calls entry points until `ms` of CPU time have passed; returns a checksum. */',
    'exports.runFor = function runFor(ms) {',
    '  const end = performance.now() + ms',
    '  let sum = 0',
    '  do {',
    `    for (let k = 0; k < 8; k++) { r = (Math.imul(r, 1103515245) + 12345) >>> 0; sum ^= F[(r >>> 8) % ${n}](5, r) }`,
    '  } while (performance.now() < end)',
    '  return sum',
    '}',
  )
  const dir = mkdtempSync(join(tmpdir(), 'jsprof-bench-'))
  const file = join(dir, 'generated-workload.cjs')
  writeFileSync(file, lines.join('\n') + '\n')
  const mod = createRequire(import.meta.url)(file)
  return { file, dir, runFor: mod.runFor, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}
