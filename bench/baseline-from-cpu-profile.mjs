// The baseline for `fromCpuProfile`: a straightforward JavaScript conversion of a V8 CPU profile's
// JSON text into a ProfilerTrace, with the same validation and the same rules as jsprof-core
// (crates/jsprof-core/src/v8/ and convert/): JSON.parse, then Maps for node ids,
// resources, frames and stacks. The benchmark asserts once that both produce deep-equal traces.

const ROOT = 0
const PROGRAM = 1
const IDLE = 2
const GC = 3
const CODE = 4

function classify(name, url) {
  if (url !== '') return CODE
  switch (name) {
    case '(root)':
      return ROOT
    case '(program)':
      return PROGRAM
    case '(idle)':
      return IDLE
    case '(garbage collector)':
      return GC
    default:
      return CODE
  }
}

const invalid = (message) => new TypeError(`invalid V8 CPU profile: ${message}`)
const I32_MAX = 2 ** 31 - 1
const clamp = (v) => (v < 0 ? -1 : Math.min(v, I32_MAX - 1))
/** Rust's f64::round (half away from zero), then back to ms at µs precision. */
function roundToMicroseconds(ms) {
  const x = ms * 1000
  return (x < 0 ? -Math.round(-x) : Math.round(x)) / 1000
}

/** JSON text of a `.cpuprofile` (or of an inspector `{ profile }` reply) -> ProfilerTrace. */
export function baselineFromCpuProfile(text, timeOriginUs) {
  let raw
  try {
    raw = JSON.parse(text)
  } catch (err) {
    throw new SyntaxError(`the CPU profile is not valid JSON: ${err.message}`, { cause: err })
  }
  if (raw === null || typeof raw !== 'object') throw invalid('expected an object')
  if (raw.nodes === undefined && raw.profile !== undefined && raw.profile !== null) raw = raw.profile
  const { nodes, samples, timeDeltas, startTime } = raw
  if (!Array.isArray(nodes))
    throw invalid('`nodes` is missing (a profile has nodes, startTime, samples and timeDeltas)')
  if (!Array.isArray(samples)) throw invalid('`samples` is missing')
  if (!Array.isArray(timeDeltas)) throw invalid('`timeDeltas` is missing')
  if (typeof startTime !== 'number') throw invalid('`startTime` is missing')
  const endTime = typeof raw.endTime === 'number' ? raw.endTime : startTime

  // The tree: node index by id, parent index by node index.
  const n = nodes.length
  const indexOf = new Map()
  const kinds = new Uint8Array(n)
  const names = new Array(n)
  const urls = new Array(n)
  const lines = new Int32Array(n)
  const columns = new Int32Array(n)
  const parents = new Int32Array(n).fill(-1)
  for (let i = 0; i < n; i++) {
    const node = nodes[i]
    if (indexOf.has(node.id)) throw invalid(`node id ${node.id} appears twice`)
    indexOf.set(node.id, i)
    const frame = node.callFrame
    const name = frame.functionName ?? ''
    const url = frame.url ?? ''
    names[i] = name
    urls[i] = url
    kinds[i] = classify(name, url)
    lines[i] = clamp(frame.lineNumber ?? -1)
    columns[i] = clamp(frame.columnNumber ?? -1)
  }
  const indexOfId = (id, what) => {
    const index = indexOf.get(id)
    if (index === undefined) throw invalid(`${what()} names unknown node id ${id}`)
    return index
  }
  const link = (parent, child) => {
    const existing = parents[child]
    if (existing >= 0 && existing !== parent) {
      throw invalid(
        `node ${nodes[child].id} has two parents (${nodes[existing].id} and ${nodes[parent].id}); the nodes must form a tree`,
      )
    }
    if (parent === child) throw invalid(`node ${nodes[child].id} is its own child (the node tree is cyclic)`)
    parents[child] = parent
  }
  for (let i = 0; i < n; i++) {
    const node = nodes[i]
    if (node.children) {
      for (const childId of node.children)
        link(
          i,
          indexOfId(childId, () => `the children of node ${node.id}`),
        )
    }
    if (node.parent !== undefined && node.parent !== null) {
      link(
        indexOfId(node.parent, () => `the parent of node ${node.id}`),
        i,
      )
    }
  }
  if (samples.length !== timeDeltas.length) {
    throw invalid(`samples (${samples.length}) and timeDeltas (${timeDeltas.length}) have different lengths`)
  }
  if (!Number.isFinite(startTime) || !Number.isFinite(endTime)) {
    throw invalid('startTime and endTime must be finite numbers')
  }
  // No cycles: following parents always ends at a top node.
  const state = new Uint8Array(n)
  const path = []
  for (let start = 0; start < n; start++) {
    for (let node = start; node >= 0; node = parents[node]) {
      if (state[node] === 2) break
      if (state[node] === 1) throw invalid(`the node tree is cyclic (node ${nodes[node].id} is its own ancestor)`)
      state[node] = 1
      path.push(node)
    }
    for (const node of path) state[node] = 2
    path.length = 0
  }

  // The trace: resources, frames and stacks deduplicated in first-use order, parents first.
  const origin = timeOriginUs === undefined ? startTime : timeOriginUs
  const resources = []
  const resourceIds = new Map()
  const frames = []
  const frameIds = new Map()
  const stacks = []
  const stackIds = new Map()
  const resolved = new Int8Array(n) // 0 = not yet, 1 = resolved
  const stackOfNode = new Int32Array(n) // -1 = no JS stack
  const chain = []
  const stackOf = (leaf) => {
    let cursor = leaf
    while (cursor >= 0 && resolved[cursor] === 0) {
      chain.push(cursor)
      cursor = parents[cursor]
    }
    let stack = cursor >= 0 ? stackOfNode[cursor] : -1
    for (let k = chain.length - 1; k >= 0; k--) {
      const node = chain[k]
      if (kinds[node] === CODE) {
        const url = urls[node]
        let resourceId
        if (url !== '') {
          resourceId = resourceIds.get(url)
          if (resourceId === undefined) {
            resourceId = resources.length
            resources.push(url)
            resourceIds.set(url, resourceId)
          }
        }
        const line = lines[node] >= 0 ? lines[node] + 1 : undefined
        const column = columns[node] >= 0 ? columns[node] + 1 : undefined
        const key = `${resourceId}:${line}:${column}:${names[node]}`
        let frameId = frameIds.get(key)
        if (frameId === undefined) {
          frameId = frames.length
          const frame = { name: names[node] }
          if (resourceId !== undefined) frame.resourceId = resourceId
          if (line !== undefined) frame.line = line
          if (column !== undefined) frame.column = column
          frames.push(frame)
          frameIds.set(key, frameId)
        }
        const stackKey = (stack + 1) * 0x1000000 + frameId
        let stackId = stackIds.get(stackKey)
        if (stackId === undefined) {
          stackId = stacks.length
          stacks.push(stack >= 0 ? { frameId, parentId: stack } : { frameId })
          stackIds.set(stackKey, stackId)
        }
        stack = stackId
      }
      resolved[node] = 1
      stackOfNode[node] = stack
    }
    chain.length = 0
    return stack
  }

  const out = new Array(samples.length)
  let time = startTime
  for (let i = 0; i < samples.length; i++) {
    const delta = timeDeltas[i]
    if (!Number.isFinite(delta)) throw invalid(`timeDeltas[${i}] is not a finite number`)
    time += delta
    const node = indexOfId(samples[i], () => `samples[${i}]`)
    const timestamp = roundToMicroseconds((time - origin) / 1000)
    switch (kinds[node]) {
      case CODE: {
        const stackId = stackOf(node)
        out[i] = stackId >= 0 ? { timestamp, stackId, marker: 'script' } : { timestamp, marker: 'script' }
        break
      }
      case GC:
        out[i] = { timestamp, marker: 'gc' }
        break
      case IDLE:
        out[i] = { timestamp }
        break
      default:
        out[i] = { timestamp, marker: 'other' }
    }
  }
  return { resources, frames, stacks, samples: out }
}
