// A synthetic but realistic V8 CPU profile, in the shape `node --cpu-prof` writes: thousands of nodes
// in a deep call tree with long file:// URLs (application and node_modules code), node: internals and
// URL-less builtins, `(program)`/`(idle)`/`(garbage collector)` pseudo-nodes, hitCount and
// positionTicks on the nodes that were hit, and a long run of samples at ~0.1 ms with V8's jitter (and
// the occasional negative delta from reordered samples). Deterministic: same text every run.

/** Returns the profile as an object; JSON.stringify it for the text. */
export function synthesizeProfile({ nodeCount = 8000, sampleCount = 200_000, seed = 0x51f15e } = {}) {
  let state = seed >>> 0
  const rand = (k) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    return (state >>> 8) % k
  }
  // A pool of functions: ~70% in app / dependency files with long paths, ~20% node: internals,
  // ~10% builtins without a URL.
  const packages = [
    '@acme/service-framework',
    'fastify',
    'pino',
    '@opentelemetry/sdk-trace-base',
    'ajv',
    'undici',
    'lodash',
  ]
  const functions = []
  for (let f = 0; f < 900; f++) {
    const pick = rand(10)
    let url
    if (pick < 4)
      url = `file:///srv/www/checkout-service/releases/2024-06-01T12-00-00Z/src/handlers/domain/module-${rand(60)}.js`
    else if (pick < 7) {
      url = `file:///srv/www/checkout-service/releases/2024-06-01T12-00-00Z/node_modules/${packages[rand(packages.length)]}/dist/lib/internal/component-${rand(40)}.js`
    } else if (pick < 9)
      url = `node:internal/${['timers', 'streams/readable', 'http/server', 'async_hooks', 'process/task_queues'][rand(5)]}`
    else url = ''
    const name =
      url === ''
        ? ['now', 'dispatch', 'stringify', 'parse', 'RegExp: ^\\s+$', 'write'][rand(6)]
        : rand(12) === 0
          ? ''
          : `handle${['Request', 'Order', 'Payment', 'Cart', 'Session', 'Log'][rand(6)]}Step${f}`
    functions.push({
      functionName: name,
      url,
      lineNumber: url === '' ? -1 : rand(4000),
      columnNumber: url === '' ? -1 : rand(120),
    })
  }
  const scriptIds = new Map()
  const callFrame = (fn) => {
    if (!scriptIds.has(fn.url)) scriptIds.set(fn.url, String(fn.url === '' ? 0 : 100 + scriptIds.size))
    return {
      functionName: fn.functionName,
      scriptId: scriptIds.get(fn.url),
      url: fn.url,
      lineNumber: fn.lineNumber,
      columnNumber: fn.columnNumber,
    }
  }
  const pseudo = (id, name) => ({
    id,
    callFrame: { functionName: name, scriptId: '0', url: '', lineNumber: -1, columnNumber: -1 },
    hitCount: 0,
    children: [],
  })
  const nodes = [pseudo(1, '(root)'), pseudo(2, '(program)'), pseudo(3, '(idle)'), pseudo(4, '(garbage collector)')]
  nodes[0].children.push(2, 3, 4)
  const codeNodes = []
  for (let id = 5; id <= nodeCount; id++) {
    // Parents biased toward recent nodes: deep chains, like real servers' call trees.
    const parent =
      codeNodes.length === 0 || rand(50) === 0
        ? nodes[0]
        : codeNodes[Math.max(0, codeNodes.length - 1 - rand(Math.min(codeNodes.length, 40)))]
    const node = { id, callFrame: callFrame(functions[rand(functions.length)]), hitCount: 0, children: [] }
    parent.children.push(id)
    nodes.push(node)
    codeNodes.push(node)
  }
  const samples = new Array(sampleCount)
  const timeDeltas = new Array(sampleCount)
  const byId = (id) => nodes[id - 1]
  let total = 0
  for (let i = 0; i < sampleCount; i++) {
    const pick = rand(100)
    const id = pick < 8 ? 2 : pick < 16 ? 3 : pick < 20 ? 4 : codeNodes[rand(codeNodes.length)].id
    samples[i] = id
    byId(id).hitCount++
    const delta = rand(200) === 0 ? -rand(60) : 100 + rand(40) - (rand(3) === 0 ? rand(30) : 0)
    timeDeltas[i] = delta
    total += delta
  }
  for (const node of nodes) {
    if (node.children.length === 0) delete node.children
    if (node.hitCount > 0 && node.callFrame.url !== '') {
      const parts = 1 + rand(3)
      const ticks = []
      let left = node.hitCount
      for (let p = 0; p < parts && left > 0; p++) {
        const t = p === parts - 1 ? left : 1 + rand(left)
        ticks.push({ line: node.callFrame.lineNumber + 1 + p * 3, ticks: t })
        left -= t
      }
      node.positionTicks = ticks
    }
  }
  const startTime = 7_351_930_482_113
  return { nodes, startTime, endTime: startTime + total + 250, samples, timeDeltas }
}
