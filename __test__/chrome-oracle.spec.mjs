// Real Chromium as the oracle (issue 9's conformance): the same probe runs against Chromium's own
// window.Profiler (a page served from 127.0.0.1 with `Document-Policy: js-profiling`) and against
// jsprof-node's Profiler, and what it records must be the same — error types and messages of every
// constructor case, the WebIDL shape of the class, `stopped`, the second stop(), samplebufferfull, and
// the member order of the trace's dictionaries (JSON.stringify output). The differences made on purpose
// (README: "Where Node differs") are checked to be exactly those. `.ci/run` installs Debian's chromium;
// JSPROF_CHROMIUM names another Chromium/Chrome binary.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { Profiler } from 'jsprof-node'
import { launchChromium, skipWithoutChromium as skip } from './chromium.mjs'

/**
 * The probe, run as is in both places with the environment's Profiler. Self-contained (its source is
 * sent to the page): it returns plain data only.
 */
async function probe(Profiler) {
  const errorOf = (make) => {
    try {
      const made = make()
      if (made && typeof made.stop === 'function') made.stop()
      return 'no error'
    } catch (e) {
      return { type: e.constructor.name, name: e.name, message: e.message, isDOMException: e instanceof DOMException }
    }
  }
  const out = {}
  out.errors = {
    noArgument: errorOf(() => new Profiler()),
    null: errorOf(() => new Profiler(null)),
    number: errorOf(() => new Profiler(42)),
    string: errorOf(() => new Profiler('x')),
    undefinedDictionary: errorOf(() => new Profiler(undefined)),
    emptyDictionary: errorOf(() => new Profiler({})),
    missingMaxBufferSize: errorOf(() => new Profiler({ sampleInterval: 10 })),
    missingSampleInterval: errorOf(() => new Profiler({ maxBufferSize: 10 })),
    negativeInterval: errorOf(() => new Profiler({ sampleInterval: -1, maxBufferSize: 10 })),
    nanInterval: errorOf(() => new Profiler({ sampleInterval: NaN, maxBufferSize: 10 })),
    infiniteInterval: errorOf(() => new Profiler({ sampleInterval: Infinity, maxBufferSize: 10 })),
    withoutNew: errorOf(() => Profiler({ sampleInterval: 10, maxBufferSize: 10 })),
    negativeBuffer: errorOf(() => new Profiler({ sampleInterval: 10, maxBufferSize: -1 })),
    stringNumbers: errorOf(() => new Profiler({ sampleInterval: '10', maxBufferSize: '10' })),
  }
  // Which member WebIDL reads first (lexicographic: maxBufferSize, then sampleInterval).
  const reads = []
  errorOf(
    () =>
      new Profiler({
        get sampleInterval() {
          reads.push('sampleInterval')
          return 10
        },
        get maxBufferSize() {
          reads.push('maxBufferSize')
          return 10
        },
      }),
  )
  out.readOrder = reads
  const describe = (d) =>
    d && {
      enumerable: d.enumerable,
      configurable: d.configurable,
      get: typeof d.get,
      set: typeof d.set,
      value: typeof d.value,
      writable: d.writable,
    }
  out.shape = {
    length: Profiler.length,
    name: Profiler.name,
    parentIsEventTarget: Object.getPrototypeOf(Profiler) === EventTarget,
    prototypeMembers: Object.getOwnPropertyNames(Profiler.prototype).sort(),
    descriptors: Object.fromEntries(
      ['sampleInterval', 'stopped', 'stop', 'constructor'].map((k) => [
        k,
        describe(Object.getOwnPropertyDescriptor(Profiler.prototype, k)),
      ]),
    ),
    prototypeDescriptor: describe(Object.getOwnPropertyDescriptor(Profiler, 'prototype')),
    toStringTag: Object.prototype.toString.call(Profiler.prototype),
  }
  // A profile of some work in named functions of this probe.
  function probeLeaf(ms) {
    const end = performance.now() + ms
    let x = 0
    while (performance.now() < end) x += Math.sqrt(x + 1)
    return x
  }
  function probeOuter(ms) {
    return probeLeaf(ms)
  }
  const p = new Profiler({ sampleInterval: 10, maxBufferSize: 10000 })
  out.instance = {
    toString: Object.prototype.toString.call(p),
    instanceOf: p instanceof Profiler && p instanceof EventTarget,
    stoppedBefore: p.stopped,
    ownKeys: Object.keys(p),
  }
  for (let i = 0; i < 20; i++) {
    probeOuter(10)
    await new Promise((resolve) => setTimeout(resolve, 0))
  }
  const pending = p.stop()
  out.instance.stoppedAfterStop = p.stopped
  const trace = await pending
  const second = await p.stop().then(
    () => 'resolved',
    (e) => ({ type: e.constructor.name, name: e.name, message: e.message, isDOMException: e instanceof DOMException }),
  )
  out.secondStop = second
  const leaf = trace.frames.find((f) => f.name === 'probeLeaf')
  // probeLeaf's caller from its entry in the stack table: most samples' top frame is `now`
  // (performance.now, probeLeaf's callee), so none may have probeLeaf itself on top.
  const leafStack = trace.stacks.find((s) => trace.frames[s.frameId] === leaf && s.parentId !== undefined)
  const sampleWithStack = trace.samples.find((s) => s.stackId !== undefined)
  const stackWithParent = trace.stacks.find((s) => s.parentId !== undefined)
  out.trace = {
    keys: Object.keys(trace),
    json: JSON.stringify(trace).slice(0, 10),
    frameKeys: leaf ? Object.keys(leaf) : null,
    leafCaller: leafStack ? trace.frames[trace.stacks[leafStack.parentId].frameId].name : null,
    stackKeys: stackWithParent ? Object.keys(stackWithParent) : null,
    sampleKeys: sampleWithStack ? Object.keys(sampleWithStack) : null,
    samplesInOrder: trace.samples.every((s, i) => i === 0 || s.timestamp >= trace.samples[i - 1].timestamp),
  }
  // samplebufferfull: maxBufferSize 0 fills at once; 3 fills after three samples.
  const full = async (maxBufferSize) => {
    const q = new Profiler({ sampleInterval: 10, maxBufferSize })
    const events = []
    q.addEventListener('samplebufferfull', (e) => {
      events.push({
        type: e.type,
        constructor: e.constructor.name,
        bubbles: e.bubbles,
        cancelable: e.cancelable,
        composed: e.composed,
        targetIsProfiler: e.target === q,
        stopped: q.stopped,
      })
    })
    const end = performance.now() + 2000
    while (events.length === 0 && performance.now() < end) {
      probeOuter(10)
      await new Promise((resolve) => setTimeout(resolve, 0))
    }
    const t = await q.stop()
    return { events, samples: t.samples.length }
  }
  out.bufferFull0 = await full(0)
  out.bufferFull3 = await full(3)
  return out
}

/** Serves one page from 127.0.0.1 with the Document-Policy that enables window.Profiler. */
async function serve() {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'document-policy': 'js-profiling' })
    res.end('<!doctype html><title>probe</title><p>probe</p>')
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${server.address().port}/` }
}

async function inChromium(t) {
  const { server, url } = await serve()
  t.after(() => server.close())
  const browser = await launchChromium(t)
  const page = await browser.newPage()
  await page.goto(url, { waitUntil: 'load' })
  const version = await browser.version()
  const result = await page.evaluate(`(${probe.toString()})(window.Profiler)`)
  return { version, result }
}

test(
  'the same probe in real Chromium and in jsprof-node: errors, class shape, stop, samplebufferfull and member order agree',
  { skip, timeout: 120000 },
  async (t) => {
    const chrome = await inChromium(t)
    // Through JSON, as the page's result came (members holding undefined drop out on both sides).
    const node = JSON.parse(JSON.stringify(await probe(Profiler)))
    const c = chrome.result
    t.diagnostic(`oracle: ${chrome.version}`)

    // Every constructor case: the same error type, name and message, or no error in both.
    assert.deepEqual(node.errors, c.errors)
    assert.deepEqual(node.readOrder, c.readOrder)
    assert.deepEqual(node.shape, c.shape)
    assert.deepEqual(node.secondStop, c.secondStop)
    assert.deepEqual(node.instance, c.instance)

    // The dictionaries' members in WebIDL's (lexicographic) order: JSON.stringify reads the same.
    assert.deepEqual(node.trace.keys, c.trace.keys)
    assert.equal(node.trace.json, c.trace.json)
    assert.deepEqual(node.trace.frameKeys, c.trace.frameKeys)
    assert.deepEqual(node.trace.stackKeys, c.trace.stackKeys)
    assert.ok(node.trace.samplesInOrder && c.trace.samplesInOrder)
    assert.equal(node.trace.leafCaller, 'probeOuter')
    assert.equal(c.trace.leafCaller, 'probeOuter')
    // Markers: Chrome gives them only in a special mode, Node always (README, "Markers"); the members
    // present are in the same order.
    assert.deepEqual(c.trace.sampleKeys, ['stackId', 'timestamp'])
    assert.deepEqual(node.trace.sampleKeys, ['marker', 'stackId', 'timestamp'])

    // samplebufferfull: the same event, once, while the profiler is not stopped, and the same samples kept.
    // On purpose (README): Node gives userland no trusted events, so isTrusted is not compared.
    for (const key of ['bufferFull0', 'bufferFull3']) {
      assert.equal(c[key].events.length, 1, `${key}: Chromium fired once`)
      assert.deepEqual(node[key], c[key], key)
    }
  },
)
