import { test } from 'node:test'
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { AsyncResource } from 'node:async_hooks'
import { Readable, Transform, pipeline } from 'node:stream'
import { readFile } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { Profiler, withLabels, setLabels, getLabels, summarize, toPprof } from 'jsprof-node'
import { retryCapture, labelsByFunction, chunkLabels } from './helpers.mjs'
import { decodePprof, whileSampling } from './prod-helpers.mjs'

const internals = createRequire(import.meta.url)

// Sampling-dependent assertions read what the trace says (which label each sample of a known function
// carries), never timings; a capture whose function got no sample on a loaded machine is retaken.

/** Busy-waits `ms`; each caller below is its own function, so its samples are told apart by name. */
function spin(ms) {
  const end = performance.now() + ms
  let x = 0
  while (performance.now() < end) x += Math.sqrt(x + 1)
  return x
}

/** Asserts that `name`'s samples (at least one) carry `value` at least `share` of the time. */
function assertLabelled(counts, name, value, share = 0.95) {
  const total = Object.values(counts[name]).reduce((a, b) => a + b, 0)
  assert.ok(total >= 1, `${name}: no sample (retaken)`)
  const own = counts[name][value] || 0
  assert.ok(own / total >= share, `${name}: ${own}/${total} samples labelled ${value}: ${JSON.stringify(counts[name])}`)
}

async function capture(fn) {
  const p = new Profiler({ sampleInterval: 1, maxBufferSize: 1_000_000 })
  await fn()
  return p.stop()
}

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// One function per kind of hand-off: each runs only in the callback that hand-off calls.
function afterAwait() {
  return spin(15)
}
function inThen() {
  return spin(15)
}
function inTimeout() {
  return spin(15)
}
function inImmediate() {
  return spin(15)
}
function inNextTick() {
  return spin(15)
}
function inEmitterListener() {
  return spin(15)
}
function inStream() {
  return spin(15)
}
function inFsCallback() {
  return spin(15)
}
function outside() {
  return spin(15)
}

const HANDOFFS = {
  afterAwait: async () => {
    await wait(1)
    afterAwait()
  },
  inThen: () => Promise.resolve().then(inThen),
  inTimeout: () => new Promise((resolve) => setTimeout(() => resolve(inTimeout()), 1)),
  inImmediate: () => new Promise((resolve) => setImmediate(() => resolve(inImmediate()))),
  inNextTick: () => new Promise((resolve) => process.nextTick(() => resolve(inNextTick()))),
  // An emitter whose event fires later, from an async resource created in the labelled code.
  inEmitterListener: () =>
    new Promise((resolve) => {
      const e = new EventEmitter()
      e.on('go', () => resolve(inEmitterListener()))
      setTimeout(() => e.emit('go'), 1)
    }),
  inStream: () =>
    new Promise((resolve, reject) => {
      const t = new Transform({
        transform(chunk, _enc, cb) {
          inStream()
          cb(null, chunk)
        },
      })
      pipeline(Readable.from(['a', 'b']), t, (err) => (err ? reject(err) : resolve()))
      t.resume()
    }),
  inFsCallback: () => new Promise((resolve) => readFile(fileURLToPath(import.meta.url), () => resolve(inFsCallback()))),
}

test('labels follow every kind of async hand-off', async () => {
  const names = Object.keys(HANDOFFS)
  await retryCapture(5, async () => {
    const trace = await capture(async () => {
      for (const [name, run] of Object.entries(HANDOFFS)) await withLabels({ handoff: name }, run)
      outside()
    })
    const counts = labelsByFunction(trace, [...names, 'outside'], 'handoff')
    for (const name of names) assertLabelled(counts, name, name)
    assertLabelled(counts, 'outside', '(none)')
  })
})

function whileOff() {
  return spin(15)
}

test('labels switched off (the in-process bench) and on again: none while off, every hand-off after', async () => {
  const { disableTracking } = internals('../lib/labels.js')
  const names = Object.keys(HANDOFFS)
  await retryCapture(5, async () => {
    const trace = await capture(async () => {
      // A timer set with labels that fires once they are off carries none.
      const fired = new Promise((resolve) =>
        withLabels({ handoff: 'set while on' }, () => setTimeout(() => resolve(whileOff()), 5)),
      )
      disableTracking()
      await fired
      // The next labelled code turns them on again.
      for (const [name, run] of Object.entries(HANDOFFS)) await withLabels({ handoff: name }, run)
    })
    const counts = labelsByFunction(trace, [...names, 'whileOff'], 'handoff')
    assertLabelled(counts, 'whileOff', '(none)')
    for (const name of names) assertLabelled(counts, name, name)
  })
})

function routeA() {
  return spin(6)
}
function routeB() {
  return spin(6)
}

test('concurrent labelled requests never get each other’s labels', async () => {
  await retryCapture(5, async () => {
    const trace = await capture(async () => {
      const request = (route, work) =>
        withLabels({ route }, async () => {
          for (let i = 0; i < 6; i++) {
            work()
            await wait(Math.random() * 3)
          }
        })
      const all = []
      for (let i = 0; i < 4; i++) all.push(request('/a', routeA), request('/b', routeB))
      await Promise.all(all)
    })
    const counts = labelsByFunction(trace, ['routeA', 'routeB'], 'route')
    assertLabelled(counts, 'routeA', '/a')
    assertLabelled(counts, 'routeB', '/b')
    // The summary by route shows both, and every sample once.
    const rows = summarize(trace, { by: 'label:route' })
    assert.deepEqual(
      rows.map((r) => r.name).sort(),
      ['(no route)', '/a', '/b'].filter((n) => rows.some((r) => r.name === n)).sort(),
    )
    assert.equal(
      rows.reduce((a, r) => a + r.selfSamples, 0),
      trace.samples.length,
    )
  })
})

function inNested() {
  return spin(8)
}
function afterNested() {
  return spin(8)
}
function laterUnlabelled() {
  return spin(8)
}

test('a callback run synchronously from labelled code hands the caller its labels back when it returns', async () => {
  await retryCapture(5, async () => {
    const trace = await capture(async () => {
      // A resource of set /b, run (runInAsyncScope: its before and after) from inside /a's code, twice.
      const resource = withLabels({ route: '/b' }, () => new AsyncResource('nested'))
      await withLabels({ route: '/a' }, async () => {
        for (let i = 0; i < 2; i++) {
          await wait(1)
          resource.runInAsyncScope(inNested)
          afterNested()
        }
      })
      // Back on an unlabelled callback: none of /a's or /b's labels.
      await wait(1)
      laterUnlabelled()
    })
    const counts = labelsByFunction(trace, ['inNested', 'afterNested', 'laterUnlabelled'], 'route')
    // Node 24+ (AsyncContextFrame) runs runInAsyncScope's `before` hooks before it enters the
    // resource's context frame, so there the nested callback reads its caller's labels (a known gap).
    if (Number(process.versions.node.split('.')[0]) < 24) assertLabelled(counts, 'inNested', '/b')
    assertLabelled(counts, 'afterNested', '/a')
    assertLabelled(counts, 'laterUnlabelled', '(none)')
  })
})

function beforeSet() {
  return spin(15)
}
function afterSet() {
  return spin(15)
}

test('setLabels adds to the current labels for the rest of the code and what it starts', async () => {
  await retryCapture(5, async () => {
    let inside
    let after
    const trace = await capture(() =>
      withLabels({ route: '/r' }, async () => {
        beforeSet()
        await wait(1)
        setLabels({ tenant: 'acme' })
        inside = getLabels()
        await wait(1)
        afterSet()
      }).then(() => {
        after = getLabels()
      }),
    )
    assert.deepEqual(inside, { route: '/r', tenant: 'acme' })
    assert.ok(Object.isFrozen(inside))
    assert.deepEqual(after, {})
    const counts = labelsByFunction(trace, ['beforeSet', 'afterSet'], 'tenant')
    assertLabelled(counts, 'afterSet', 'acme')
    assertLabelled(counts, 'beforeSet', '(none)')
  })
})

test('withLabels nests, returns what fn returns, and passes its arguments', () => {
  const got = withLabels(
    { a: '1' },
    (x, y) => {
      assert.deepEqual(getLabels(), { a: '1' })
      return withLabels({ b: '2', a: '3' }, () => getLabels()) && [x, y, getLabels()]
    },
    'x',
    'y',
  )
  assert.deepEqual(got, ['x', 'y', { a: '1' }])
  assert.deepEqual(getLabels(), {})
  assert.throws(
    () =>
      withLabels({ a: '1' }, () => {
        throw new Error('boom')
      }),
    /boom/,
  )
  assert.deepEqual(getLabels(), {})
})

test('hostile labels: clear errors for what breaks the rule, well-formed exports for any text', async () => {
  assert.throws(() => withLabels(null, () => {}), {
    name: 'TypeError',
    message: /withLabels: labels must be an object/,
  })
  assert.throws(() => withLabels({ a: 1 }, () => {}), {
    name: 'TypeError',
    message: /the value of label "a" must be a string/,
  })
  assert.throws(() => withLabels({ a: 'b' }), { name: 'TypeError', message: /fn must be a function/ })
  assert.throws(() => setLabels({ 'bad key': 'v' }), { name: 'TypeError', message: /setLabels: .*label key/ })
  assert.throws(
    () => setLabels({ '\u001b[2J': 'v' }),
    (err) => err.name === 'TypeError' && err.message.includes('\\x1b'),
  )
  // Whatever the label rule refuses is a TypeError, as in a trace read back (docs/labels.md).
  assert.throws(() => setLabels({ k: 'v'.repeat(1025) }), { name: 'TypeError', message: /1025 characters/ })
  const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']))
  assert.throws(() => setLabels(many), { name: 'TypeError', message: /at most 32 labels/ })
  // A reserved key (`__`: Prometheus's; `__proto__` is no own key of an object) is refused, never lost.
  assert.throws(() => withLabels(JSON.parse('{"__proto__":"x"}'), getLabels), {
    name: 'TypeError',
    message: /withLabels: .*not starting with a digit or __, got "__proto__"/,
  })
  assert.throws(() => setLabels({ __name__: 'cpu' }), { name: 'TypeError', message: /__name__/ })
  assert.deepEqual(withLabels({ constructor: 'c', toString: 't' }, getLabels), { constructor: 'c', toString: 't' })
  assert.deepEqual(getLabels(), {}, 'a refused setLabels changes nothing')

  const hostile = 'a\u0000b\u001b[31m\n\ud800\u202e'
  function hostileWork() {
    return spin(20)
  }
  await retryCapture(5, async () => {
    const trace = await capture(() => withLabels({ route: hostile }, async () => hostileWork()))
    const counts = labelsByFunction(trace, ['hostileWork'], 'route')
    const values = Object.keys(counts.hostileWork)
    assert.ok(values.length >= 1, 'a sample of hostileWork')
    // The lone surrogate becomes U+FFFD (well-formed UTF-8 everywhere); every other character stays.
    assert.ok(values.includes('a\u0000b\u001b[31m\n\ufffd\u202e'), JSON.stringify(values))
    // Through JSON and into pprof: decodable, the label as a valid UTF-8 string.
    const back = JSON.parse(JSON.stringify(trace))
    const { profile } = decodePprof(Buffer.from(toPprof(back)))
    const strings = profile.stringTable.strings
    assert.ok(strings.includes('a\u0000b\u001b[31m\n\ufffd\u202e'))
  })
})

test('traces refuse labels that break the rule or do not fit their samples', () => {
  const trace = (jsprof) => ({ frames: [], jsprof, resources: [], samples: [{ timestamp: 1 }], stacks: [] })
  assert.throws(() => summarize(trace({ labelSets: [], sampleLabels: [0] }), { by: 'label:route' }), {
    name: 'TypeError',
    message: /sampleLabels\[0\] 0 is out of range/,
  })
  assert.throws(() => summarize(trace({ labelSets: [{ a: 'b' }], sampleLabels: [0, 0] })), /one each/)
  assert.throws(() => summarize(trace({ labelSets: [{ 'a b': 'c' }], sampleLabels: [0] })), { name: 'TypeError' })
  assert.throws(() => summarize(trace({}), { by: 'label:not a key' }), {
    name: 'TypeError',
    message: /summarize: .*label key/,
  })
  assert.throws(() => summarize(trace({}), { by: 'labels' }), { name: 'RangeError', message: /'label:<key>'/ })
  const rows = summarize(trace({ labelSets: [{ route: '/x' }], sampleLabels: [0] }), { by: 'label:route' })
  assert.deepEqual(
    rows.map((r) => [r.name, r.kind, r.selfSamples]),
    [['/x', 'label', 1]],
  )
})

test("past the cap of distinct label sets, labels keep working; only new sets' samples are dropped and counted", () => {
  // The registry is process-wide: a child process of its own. 70,000 sets from a header's values, as a
  // client could send them; then what the code reads, what its samples carry, and what memory keeps.
  const root = fileURLToPath(new URL('..', import.meta.url))
  const script = `
    const { Profiler, withLabels, getLabels } = require(${JSON.stringify(root)})
    const { binding } = require(${JSON.stringify(`${root}lib/native.js`)})
    require('node:v8').setFlagsFromString('--expose-gc')
    const gc = require('node:vm').runInNewContext('gc')
    const spin = (ms) => { const end = performance.now() + ms; while (performance.now() < end); }
    function oldSetWork() { spin(25) }
    function newSetWork() { spin(25) }
    ;(async () => {
      for (let i = 0; i < 70000; i++) withLabels({ t: 'x' + i }, () => {})
      const out = {}
      out.fresh = withLabels({ t: 'new' }, getLabels)
      out.nested = withLabels({ t: 'new' }, () => withLabels({ u: 'inner' }, getLabels))
      out.overOld = withLabels({ t: 'x5' }, () => withLabels({ u: 'inner' }, getLabels))
      out.old = withLabels({ t: 'x5' }, getLabels)
      out.awaited = await withLabels({ t: 'async' }, async () => {
        await new Promise((resolve) => setTimeout(resolve, 1))
        return getLabels()
      })
      out.outside = getLabels()
      // Memory: the registry stops at its cap however many sets come, and a set past it lives only in the
      // contexts that run under it.
      for (let i = 0; i < 70000; i++) withLabels({ t: 'y' + i }, () => {})
      out.registered = binding.labelSetCount()
      let ref
      withLabels({ t: 'forgotten' }, () => { ref = new WeakRef(getLabels()) })
      await new Promise((resolve) => setTimeout(resolve, 10))
      gc()
      out.forgotten = ref.deref() === undefined
      // Samples: an old set's still carry it; a new set's carry none and are counted.
      for (let attempt = 0; attempt < 5; attempt++) {
        const p = new Profiler({ sampleInterval: 1, maxBufferSize: 100000 })
        withLabels({ t: 'x5' }, oldSetWork)
        withLabels({ t: 'brand new' }, newSetWork)
        const trace = await p.stop()
        const onStack = (stackId, name) => {
          for (let s = stackId; s !== undefined; s = trace.stacks[s].parentId)
            if (trace.frames[trace.stacks[s].frameId].name === name) return true
          return false
        }
        const of = (name) => trace.samples
          .map((s, i) => ({ s, i }))
          .filter(({ s }) => s.stackId !== undefined && onStack(s.stackId, name))
          .map(({ i }) => { const id = trace.jsprof?.sampleLabels?.[i]; return id == null ? null : trace.jsprof.labelSets[id] })
        out.oldSamples = of('oldSetWork')
        out.newSamples = of('newSetWork')
        out.dropped = trace.jsprof?.labelsDropped ?? 0
        if (out.oldSamples.length > 0 && out.newSamples.length > 0) break
      }
      console.log(JSON.stringify(out))
    })()
  `
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120_000 })
  assert.equal(child.status, 0, child.stderr)
  const out = JSON.parse(child.stdout)
  assert.deepEqual(out.fresh, { t: 'new' })
  assert.deepEqual(out.nested, { t: 'new', u: 'inner' })
  assert.deepEqual(out.overOld, { t: 'x5', u: 'inner' })
  assert.deepEqual(out.old, { t: 'x5' })
  assert.deepEqual(out.awaited, { t: 'async' })
  assert.deepEqual(out.outside, {})
  assert.equal(out.registered, 65536, 'the registry stops at its cap')
  assert.ok(out.forgotten, 'a set past the cap is forgotten with its contexts')
  assert.ok(out.oldSamples.length > 0 && out.newSamples.length > 0, child.stdout)
  assert.ok(
    out.oldSamples.every((set) => set?.t === 'x5'),
    `an old set's samples carry it: ${JSON.stringify(out.oldSamples)}`,
  )
  assert.ok(out.newSamples.every((set) => set === null))
  assert.ok(out.dropped >= out.newSamples.length, child.stdout)
})

function chunkWork() {
  return spin(15)
}

test('continuous chunks carry labels', async () => {
  const { startContinuous } = await import('jsprof-node')
  await retryCapture(5, async () => {
    const chunks = []
    const handle = startContinuous({ sampleInterval: 1, chunkSeconds: 60, onChunk: (c) => chunks.push(c) })
    await withLabels({ tenant: 'acme' }, async () => {
      for (let i = 0; i < 4; i++) {
        chunkWork()
        await wait(1)
      }
    })
    await handle.stop()
    const counts = { chunkWork: {} }
    for (const c of chunks) {
      const one = labelsByFunction(c.trace, ['chunkWork'], 'tenant').chunkWork
      for (const [k, v] of Object.entries(one)) counts.chunkWork[k] = (counts.chunkWork[k] || 0) + v
    }
    assertLabelled(counts, 'chunkWork', 'acme')
  })
})

test('jsprof record carries the app’s labels into its trace file', async () => {
  const fs = await import('node:fs')
  const os = await import('node:os')
  const path = await import('node:path')
  const root = fileURLToPath(new URL('..', import.meta.url))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-labels-record-'))
  const app = path.join(dir, 'app.js')
  fs.writeFileSync(
    app,
    `const { withLabels } = require(${JSON.stringify(root)})
     function recordedWork() { const end = performance.now() + 15; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); return x }
     ;(async () => {
       for (let i = 0; i < 20; i++) await withLabels({ job: 'nightly' }, async () => { recordedWork(); await new Promise((r) => setTimeout(r, 1)) })
     })()`,
  )
  await retryCapture(3, async () => {
    const out = path.join(dir, 'trace.json')
    const r = spawnSync(
      process.execPath,
      [path.join(root, 'bin', 'jsprof.js'), 'record', '-o', out, '--', process.execPath, app],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    )
    assert.equal(r.status, 0, r.stderr)
    const trace = JSON.parse(fs.readFileSync(out, 'utf8'))
    assertLabelled(labelsByFunction(trace, ['recordedWork'], 'job'), 'recordedWork', 'nightly')
  })
})

test('the flame graph of one label value holds only its samples', async () => {
  const { toFlameGraph } = await import('jsprof-node')
  const trace = {
    frames: [{ name: 'alphaPath' }, { name: 'betaPath' }],
    jsprof: { labelSets: [{ route: '/a' }, { route: '/b' }], sampleLabels: [0, 1, 0, null] },
    resources: [],
    samples: [
      { stackId: 0, timestamp: 1 },
      { stackId: 1, timestamp: 2 },
      { stackId: 0, timestamp: 3 },
      { stackId: 1, timestamp: 4 },
    ],
    stacks: [{ frameId: 0 }, { frameId: 1 }],
  }
  for (const format of ['svg', 'html']) {
    const a = toFlameGraph(trace, { format, label: { route: '/a' } })
    assert.ok(a.includes('alphaPath') && !a.includes('betaPath'), format)
    const all = toFlameGraph(trace, { format })
    assert.ok(all.includes('alphaPath') && all.includes('betaPath'), format)
  }
  assert.throws(() => toFlameGraph(trace, { label: { route: 1 } }), { name: 'TypeError', message: /options\.label/ })
  assert.throws(() => toFlameGraph(trace, { label: { a: 'x', b: 'y' } }), { name: 'TypeError' })
})

test("a request's own 'end' listener runs with its labels; node:http's own listener on it enters none", async () => {
  const http = await import('node:http')
  const { profileRequests } = await import('jsprof-node')
  const rp = profileRequests({ sampleRate: 0, onProfile() {} })
  const seen = []
  const server = http.createServer(
    rp.wrap((req, res) => {
      // Not resumed here: node:http dumps the body when the response finishes, from the connection's
      // context, so 'end' comes from outside the request's own async context.
      req.on('end', () => seen.push(getLabels()))
      res.end('ok')
    }),
  )
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    await whileSampling(async () => {
      for (let i = 0; i < 3; i++) {
        await new Promise((resolve, reject) => {
          http
            .get({ host: '127.0.0.1', port: server.address().port, path: `/x?i=${i}` }, (res) => {
              res.resume()
              res.on('end', resolve)
            })
            .on('error', reject)
        })
      }
    })
  } finally {
    server.close()
  }
  assert.deepEqual(seen, [{ method: 'GET' }, { method: 'GET' }, { method: 'GET' }])
  // node:http's clearIncoming (its only other listener on 'end') still ran: the parser let go of the request.
})

const binding = internals('../binding.js')

test('a chunk takes its labels from its own window of a long timeline, request contexts included', () => {
  const a = binding.internLabels(['window'], ['a'])
  const b = binding.internLabels(['window'], ['b'])
  const W = binding.CONTEXT_RING_WORDS
  const contextId = (generation, slot) => binding.CONTEXT_RING_ID_BASE + generation * binding.CONTEXT_RING_SLOTS + slot
  // Slot 7 of a context ring holds a request's context over set a at generation 3, with a span; slot 8
  // was written at generation 4.
  const ring = new Uint32Array(binding.CONTEXT_RING_SLOTS * W)
  ring.set(
    [3 + 1, a, contextId(3, 7), 1, 0x4bf92f35, 0x77b34da6, 0xa3ce929d, 0x0e0e4736, 0x00f067aa, 0x0ba902b7],
    7 * W,
  )
  ring.set([4 + 1, a, contextId(4, 8), 0], 8 * W)
  // 200,000 changes, one every 100 µs from t = 1 s (20 s: the timeline keeps 30): a, b, a, b, … and
  // two contexts.
  const n = 200_000
  const times = new Float64Array(n)
  const ids = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    times[i] = 1e6 + i * 100
    ids[i] = i % 2 === 0 ? a : b
  }
  ids[150_000] = contextId(3, 7)
  ids[150_002] = contextId(3, 8) // its slot holds generation 4 now: reused, no labels
  const labelsAt = (sampleTimes) => chunkLabels(sampleTimes, ring)
  try {
    binding.clearLabelTransitions()
    binding.labelTransitions(times, ids, n)
    const at = (i) => 1e6 + i * 100
    assert.deepEqual(
      labelsAt([500_000, at(100_000), at(100_000) + 99, at(100_001), at(150_000) + 1, at(150_002), at(n) + 5e6]),
      [
        null, // before the first change
        { window: 'a' }, // at a change
        { window: 'a' },
        { window: 'b' },
        { span_id: '00f067aa0ba902b7', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', window: 'a' },
        null, // a reused slot
        { window: 'b' }, // long after the last change: still the last set
      ],
    )
  } finally {
    binding.clearLabelTransitions()
  }
})

test("the context ring: a request's context reads back through a harvest as it is then, and 65,536 contexts later records its set", () => {
  const { beginRequest, contextRing, samplingChanged } = internals('../lib/labels.js')
  // One chunk whose single sample lands in what `id` says now.
  const labelsOf = (id) => {
    const t = 5e6
    binding.clearLabelTransitions()
    binding.labelTransitions(Float64Array.of(t), Uint32Array.of(id), 1)
    return chunkLabels([t + 10], contextRing())[0]
  }
  samplingChanged(true) // as the sampler says when its V8 profile starts
  try {
    const first = beginRequest(new EventEmitter(), 'GET', undefined)
    assert.deepEqual(labelsOf(first.id), { method: 'GET' })
    // The route learned later: what a harvest from now on says of every sample of the request.
    first.route('/ring/:id')
    assert.deepEqual(labelsOf(first.id), { method: 'GET', route: 'GET /ring/:id' })
    assert.deepEqual(first.labels(), { method: 'GET', route: 'GET /ring/:id' })
    // A context without labels (a sampled request of `labels: false`) is a request's all the same.
    const bare = beginRequest(new EventEmitter(), undefined, undefined)
    assert.equal(labelsOf(bare.id), null)
    assert.equal(bare.current(), bare.id)
    // 65,536 contexts later the first's slot holds the newest: the first reads as no labels, never
    // as it, and the first context records its registered set from then on.
    let last
    for (let i = 1; i <= binding.CONTEXT_RING_SLOTS - 1; i++) last = beginRequest(new EventEmitter(), 'PUT', '/x')
    assert.equal(last.id - first.id, binding.CONTEXT_RING_SLOTS, 'same slot, next generation')
    assert.equal(labelsOf(first.id), null)
    assert.deepEqual(labelsOf(last.id), { method: 'PUT', route: 'PUT /x' })
    assert.equal(first.current(), first.set)
    assert.deepEqual(labelsOf(first.current()), { method: 'GET', route: 'GET /ring/:id' })
  } finally {
    samplingChanged(false)
    binding.clearLabelTransitions()
  }
})
