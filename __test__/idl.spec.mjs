// The WebIDL shape of Profiler and the conversions of ProfilerInitOptions, as Chrome implements them.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Profiler } from 'jsprof-node'

const ok = { sampleInterval: 10, maxBufferSize: 100 }

async function stopQuietly(p) {
  if (!p.stopped) await p.stop()
}

test('Profiler is a class extending EventTarget with the WebIDL name and length', async () => {
  assert.equal(Profiler.name, 'Profiler')
  assert.equal(Profiler.length, 1)
  const p = new Profiler(ok)
  assert.ok(p instanceof EventTarget)
  assert.equal(Object.prototype.toString.call(p), '[object Profiler]')
  assert.equal(Object.prototype.toString.call(Profiler.prototype), '[object Profiler]')
  await p.stop()
})

test('calling Profiler without new throws a TypeError', () => {
  assert.throws(() => Profiler(ok), TypeError)
})

test('sampleInterval, stopped and stop are enumerable, configurable prototype members', () => {
  for (const name of ['sampleInterval', 'stopped']) {
    const d = Object.getOwnPropertyDescriptor(Profiler.prototype, name)
    assert.equal(typeof d.get, 'function', name)
    assert.equal(d.set, undefined, name)
    assert.equal(d.enumerable, true, name)
    assert.equal(d.configurable, true, name)
  }
  const stop = Object.getOwnPropertyDescriptor(Profiler.prototype, 'stop')
  assert.equal(typeof stop.value, 'function')
  assert.equal(stop.enumerable, true)
  assert.equal(stop.configurable, true)
  assert.equal(stop.writable, true)
  assert.deepEqual(Object.keys(Profiler.prototype).sort(), ['sampleInterval', 'stop', 'stopped'])
  const tag = Object.getOwnPropertyDescriptor(Profiler.prototype, Symbol.toStringTag)
  assert.deepEqual(tag, { value: 'Profiler', writable: false, enumerable: false, configurable: true })
})

test('getters throw a TypeError on a foreign this; stop rejects instead of throwing', async () => {
  const getter = (name) => Object.getOwnPropertyDescriptor(Profiler.prototype, name).get
  for (const foreign of [{}, Object.create(Profiler.prototype), new EventTarget(), null, undefined]) {
    assert.throws(() => getter('sampleInterval').call(foreign), TypeError)
    assert.throws(() => getter('stopped').call(foreign), TypeError)
    const result = Profiler.prototype.stop.call(foreign)
    assert.ok(result instanceof Promise)
    await assert.rejects(result, TypeError)
  }
})

test('both members are required: TypeError when missing', () => {
  assert.throws(() => new Profiler(), TypeError)
  assert.throws(() => new Profiler(null), TypeError)
  assert.throws(() => new Profiler({}), TypeError)
  assert.throws(() => new Profiler({ sampleInterval: 10 }), /maxBufferSize/)
  assert.throws(() => new Profiler({ maxBufferSize: 10 }), /sampleInterval/)
  assert.throws(() => new Profiler({ sampleInterval: undefined, maxBufferSize: 10 }), TypeError)
  assert.throws(() => new Profiler(42), TypeError)
  assert.throws(() => new Profiler('options'), TypeError)
})

test('sampleInterval is a WebIDL double: non-finite is a TypeError, negative a RangeError', async () => {
  for (const bad of [NaN, Infinity, -Infinity, 'abc', {}, undefined]) {
    assert.throws(() => new Profiler({ sampleInterval: bad, maxBufferSize: 10 }), TypeError, String(bad))
  }
  assert.throws(() => new Profiler({ sampleInterval: Symbol('x'), maxBufferSize: 10 }), TypeError)
  assert.throws(() => new Profiler({ sampleInterval: 1n, maxBufferSize: 10 }), TypeError)
  assert.throws(() => new Profiler({ sampleInterval: -1, maxBufferSize: 10 }), RangeError)
  assert.throws(() => new Profiler({ sampleInterval: -0.001, maxBufferSize: 10 }), RangeError)
  // Numeric strings and objects with valueOf convert, as ToNumber does.
  const fromString = new Profiler({ sampleInterval: '25', maxBufferSize: 10 })
  assert.equal(fromString.sampleInterval, 25)
  const fromObject = new Profiler({ sampleInterval: { valueOf: () => 7 }, maxBufferSize: 10 })
  assert.equal(fromObject.sampleInterval, 7)
  await Promise.all([fromString.stop(), fromObject.stop()])
})

test('members are read in lexicographic order and conversion happens before any profiling', () => {
  const order = []
  const options = {
    get sampleInterval() {
      order.push('sampleInterval')
      return -5
    },
    get maxBufferSize() {
      order.push('maxBufferSize')
      return 10
    },
  }
  assert.throws(() => new Profiler(options), RangeError)
  assert.deepEqual(order, ['maxBufferSize', 'sampleInterval'])
})

test('maxBufferSize is a WebIDL unsigned long: ToNumber, then modulo 2^32', async () => {
  // Observed through the buffer: a size of 4294967295 never fills; these must all construct.
  const cases = [
    [-1, 4294967295],
    [Number.MAX_SAFE_INTEGER, 4294967295],
    [2 ** 32, 0],
    [2 ** 32 + 5, 5],
    [3.9, 3],
    [-3.9, 4294967293],
    [NaN, 0],
    [Infinity, 0],
    ['12', 12],
  ]
  const { toUnsignedLong } = await import('../lib/api/profiler/webidl.js')
  for (const [input, expected] of cases) {
    assert.equal(toUnsignedLong(input), expected, `toUnsignedLong(${input})`)
    const p = new Profiler({ sampleInterval: 10, maxBufferSize: input })
    await p.stop()
  }
  assert.throws(() => new Profiler({ sampleInterval: 10, maxBufferSize: Symbol('x') }), TypeError)
  assert.throws(() => new Profiler({ sampleInterval: 10, maxBufferSize: 5n }), TypeError)
})

test('sampleInterval reports the interval really used', async () => {
  const cases = [
    [10, 10],
    [1, 1],
    [0.25, 0.25],
    [0, 0.1], // 0 picks the smallest interval we support: 0.1 ms
    [0.01, 0.1],
    [1.0004, 1.001], // V8 takes whole microseconds: rounded up
    [1000, 1000],
  ]
  for (const [requested, used] of cases) {
    const p = new Profiler({ sampleInterval: requested, maxBufferSize: 10 })
    assert.equal(p.sampleInterval, used, `requested ${requested}`)
    await p.stop()
  }
})

test('stopped is true from the moment stop() is called; a second stop rejects with InvalidStateError', async () => {
  const p = new Profiler(ok)
  assert.equal(p.stopped, false)
  const first = p.stop()
  assert.equal(p.stopped, true)
  const second = p.stop()
  await assert.rejects(second, (err) => {
    assert.ok(err instanceof DOMException)
    assert.equal(err.name, 'InvalidStateError')
    return true
  })
  const trace = await first
  assert.ok(Array.isArray(trace.samples))
  await assert.rejects(p.stop(), { name: 'InvalidStateError' })
})

test('the profiler is an ordinary EventTarget for samplebufferfull listeners', async () => {
  const p = new Profiler({ sampleInterval: 10, maxBufferSize: 0 })
  const event = await new Promise((resolve) => p.addEventListener('samplebufferfull', resolve, { once: true }))
  assert.equal(event.type, 'samplebufferfull')
  assert.equal(event.constructor, Event)
  assert.equal(event.target, p)
  assert.equal(event.bubbles, false)
  assert.equal(event.cancelable, false)
  await stopQuietly(p)
})

test('CommonJS and ESM expose the same objects', async () => {
  const { createRequire } = await import('node:module')
  const cjs = createRequire(import.meta.url)('jsprof-node')
  const esm = await import('jsprof-node')
  assert.equal(cjs.Profiler, Profiler)
  assert.equal(esm.Profiler, cjs.Profiler)
  assert.equal(esm.fromCpuProfile, cjs.fromCpuProfile)
  assert.equal(esm.default, cjs)
  for (const name of Object.keys(cjs)) assert.equal(esm[name], cjs[name], `ESM exports ${name}`)
})
