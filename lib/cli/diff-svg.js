'use strict'
// The differential flame graph of `jsprof diff -o diff.svg`: the new profile's call tree (widths are
// its shares of all the time), each frame coloured by how its share changed from the base — red grew
// (slower), blue shrank (faster), the deeper the colour the larger the change; grey unchanged. Built
// from the folded stacks the collapsed exporter writes for each trace, so the stacks are the same
// ones `jsprof convert --to collapsed` gives. Frames only in the base have no width and are not drawn.

const { markup } = require('../text')

const WIDTH = 1200
const ROW = 16
const PAD = 24
const MIN_PX = 0.3

/** `a;b;c N` lines -> a tree of { name, count, children } (count: time in µs through that frame, as toCollapsed weighs it). */
function parseFolded(text) {
  const root = { name: 'all', count: 0, children: new Map() }
  for (const line of text.split('\n')) {
    const space = line.lastIndexOf(' ')
    if (space <= 0) continue
    const count = Number(line.slice(space + 1))
    if (!(count > 0)) continue
    root.count += count
    let node = root
    for (const name of line.slice(0, space).split(';')) {
      let child = node.children.get(name)
      if (!child) {
        child = { name, count: 0, children: new Map() }
        node.children.set(name, child)
      }
      child.count += count
      node = child
    }
  }
  return root
}

/** `name (url)` of `name (url:line:col)`: a function moved by an edit. */
const unplaced = (name) => name.replace(/:\d+:\d+\)$/, ')')

/** The base's child for a frame: the same name, or else the only one of it moved to another line. */
function sameFrame(node, name) {
  const exact = node.children.get(name)
  if (exact) return exact
  const loose = unplaced(name)
  let found
  for (const [other, child] of node.children) {
    if (unplaced(other) !== loose) continue
    if (found) return undefined
    found = child
  }
  return found
}


function colour(delta, maxAbs) {
  if (maxAbs <= 0 || Math.abs(delta) < 1e-12) return 'rgb(220,220,220)'
  const k = Math.min(1, Math.abs(delta) / maxAbs)
  const fade = Math.round(220 - 190 * k)
  return delta > 0 ? `rgb(250,${fade},${fade})` : `rgb(${fade},${fade},250)`
}

function points(share) {
  const p = share * 100
  return `${p >= 0 ? '+' : ''}${p.toFixed(2)}`
}

/** The SVG for folded stacks `baseFolded` (before) and `newFolded` (after). */
function diffFlameGraph(baseFolded, newFolded, { title = 'jsprof diff' } = {}) {
  const base = parseFolded(baseFolded)
  const next = parseFolded(newFolded)
  const boxes = []
  let maxAbs = 0
  let depth = 0
  // Breadth of the work is bounded by the frames of the new profile drawn at >= MIN_PX.
  const stack = [[next, base, PAD, 0]]
  while (stack.length) {
    const [node, was, x, level] = stack.pop()
    const share = next.count ? node.count / next.count : 0
    const baseShare = was && base.count ? was.count / base.count : 0
    const w = share * (WIDTH - 2 * PAD)
    if (w < MIN_PX) continue
    const delta = share - baseShare
    maxAbs = Math.max(maxAbs, Math.abs(delta))
    depth = Math.max(depth, level)
    boxes.push({ name: node.name, x, level, w, share, baseShare, delta })
    let cx = x
    const children = [...node.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const child of children) {
      stack.push([child, was ? sameFrame(was, child.name) : undefined, cx, level + 1])
      cx += (next.count ? child.count / next.count : 0) * (WIDTH - 2 * PAD)
    }
  }
  const height = (depth + 1) * ROW + 3 * PAD
  const out = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="monospace" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${WIDTH / 2}" y="${PAD - 6}" text-anchor="middle" font-size="14">${markup(title)}</text>`,
    `<text x="${PAD}" y="${height - 8}" fill="#555">width: share of the new profile; red: grew since the base (slower), blue: shrank (faster); hover for figures</text>`,
  ]
  for (const b of boxes) {
    const y = height - 2 * PAD - (b.level + 1) * ROW
    const tip = `${b.name} — ${(b.share * 100).toFixed(2)}% of the time (base ${(b.baseShare * 100).toFixed(2)}%, ${points(b.delta)} points)`
    out.push(
      `<g><title>${markup(tip)}</title><rect x="${b.x.toFixed(2)}" y="${y}" width="${b.w.toFixed(2)}" height="${ROW - 1}" fill="${colour(b.delta, maxAbs)}" rx="2"/>`,
    )
    const chars = Math.floor((b.w - 6) / 6.6)
    if (chars >= 3) {
      const label = b.name.length > chars ? `${b.name.slice(0, chars - 2)}..` : b.name
      out.push(`<text x="${(b.x + 3).toFixed(2)}" y="${y + ROW - 5}">${markup(label)}</text>`)
    }
    out.push('</g>')
  }
  out.push('</svg>')
  return `${out.join('\n')}\n`
}

module.exports = { diffFlameGraph, parseFolded, unplaced }
