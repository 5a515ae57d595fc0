// toOtlpProfiles (issue 13): what jsprof-node sends is decoded with the official generated classes (the
// PyPI package opentelemetry-proto, which .ci/run installs), and every sample, stack, function name, line
// and package attribute must come back as the trace says.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { toOtlpProfiles, toPprof } from 'jsprof-node'
import { realTrace, handTrace, exportedFunctionName } from './export-helpers.mjs'
import { decodePprof } from './prod-helpers.mjs'

// .ci/run installs the decoder into .cache/otlp-venv; PYTHON picks another interpreter.
const VENV = path.resolve(
  import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname),
  '..',
  '.cache',
  'otlp-venv',
  'bin',
  'python',
)
const PYTHON = process.env.PYTHON || (fs.existsSync(VENV) ? VENV : 'python3')
const DECODER = `
import json, sys
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
from google.protobuf.json_format import MessageToDict
request = ExportProfilesServiceRequest()
request.ParseFromString(open(sys.argv[1], 'rb').read())
d = request.dictionary
s = d.string_table
def value(v):
    kind = v.WhichOneof('value')
    return list(value(x) for x in v.array_value.values) if kind == 'array_value' else getattr(v, kind) if kind else None
rp = request.resource_profiles[0]
profile = rp.scope_profiles[0].profiles[0]
samples = []
for sample in profile.samples:
    frames = []
    for li in d.stack_table[sample.stack_index].location_indices:
        line = d.location_table[li].lines[0]
        f = d.function_table[line.function_index]
        frames.append({'name': s[f.name_strindex], 'file': s[f.filename_strindex], 'line': line.line, 'column': line.column})
    attrs = {s[d.attribute_table[a].key_strindex]: value(d.attribute_table[a].value) for a in sample.attribute_indices}
    for v, t in zip(sample.values, sample.timestamps_unix_nano):
        samples.append({'frames': frames, 'attributes': attrs, 'value': v, 'time': str(t)})
print(json.dumps({
    'resource': {kv.key: value(kv.value) for kv in rp.resource.attributes},
    'scope': rp.scope_profiles[0].scope.name,
    'sampleType': [s[profile.sample_type.type_strindex], s[profile.sample_type.unit_strindex]],
    'timeUnixNano': str(profile.time_unix_nano),
    'profileAttributes': {s[d.attribute_table[a].key_strindex]: value(d.attribute_table[a].value) for a in profile.attribute_indices},
    'zeroes': [len(d.string_table[0]), d.location_table[0].ByteSize(), d.function_table[0].ByteSize(), d.stack_table[0].ByteSize(), d.attribute_table[0].ByteSize(), d.mapping_table[0].ByteSize()],
    'samples': samples,
}))
`

const available = spawnSync(
  PYTHON,
  ['-c', 'import opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2'],
  { encoding: 'utf8' },
)
const skip =
  available.status === 0
    ? false
    : `the Python package opentelemetry-proto is not installed (.ci/run installs it): ${(available.stderr || available.error?.message || '').trim().split('\n').at(-1)}`

function decode(bytes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jsprof-otlp-'))
  try {
    const file = path.join(dir, 'request.pb')
    fs.writeFileSync(file, bytes)
    const r = spawnSync(PYTHON, ['-c', DECODER, file], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const PSEUDO = (s) => (s.marker === 'gc' ? '(garbage collector)' : s.marker === undefined ? '(idle)' : '(program)')

/** What the trace says of each sample: its epoch time in ns (as a string) and its frames, leaf first. */
function expectedSamples(trace, timeOrigin) {
  const originNs =
    BigInt(Math.trunc(timeOrigin)) * 1_000_000n + BigInt(Math.round((timeOrigin - Math.trunc(timeOrigin)) * 1e6))
  return trace.samples.map((s) => {
    const frames = []
    if (s.stackId === undefined) frames.push({ name: PSEUDO(s) })
    for (let id = s.stackId; id !== undefined; id = trace.stacks[id].parentId) {
      const f = trace.frames[trace.stacks[id].frameId]
      frames.push({
        name: exportedFunctionName(trace, f),
        file: f.resourceId === undefined ? '' : trace.resources[f.resourceId].replace(/^file:\/\//, ''),
        line: f.line ?? 0,
        column: f.column ?? 0,
      })
    }
    return { time: String(originNs + BigInt(Math.round(s.timestamp * 1e6))), frames }
  })
}

const key = (s) =>
  `${s.time} ${s.frames.map((f) => `${f.name}@${f.file ?? ''}:${f.line ?? 0}:${f.column ?? 0}`).join(' <- ')}`

test(
  'a real trace: every sample, stack, function name, line and package attribute round-trips through the official classes',
  { skip },
  async () => {
    const { trace } = await realTrace()
    const timeOrigin = 1_764_000_000_123.456
    const bytes = toOtlpProfiles(trace, {
      timeOrigin,
      pid: 4242,
      resource: { 'service.name': 'checkout', 'deployment.environment.name': 'test', replicas: 3 },
      attributes: { 'profile.kind': 'cpu', tags: ['a', true] },
    })
    assert.ok(Buffer.isBuffer(bytes))
    const got = decode(bytes)
    assert.equal(got.scope, 'jsprof-node')
    assert.deepEqual(got.sampleType, ['cpu', 'nanoseconds'])
    assert.deepEqual(got.zeroes, [0, 0, 0, 0, 0, 0], 'every dictionary table starts with its zero value')
    assert.equal(got.resource['service.name'], 'checkout', "the caller's resource attributes win")
    assert.equal(got.resource['deployment.environment.name'], 'test')
    assert.equal(got.resource.replicas, 3)
    assert.equal(got.resource['process.pid'], 4242)
    assert.equal(got.resource['process.runtime.name'], 'nodejs')
    assert.equal(got.resource['process.runtime.version'], process.versions.node)
    assert.equal(got.resource['telemetry.sdk.name'], 'jsprof-node')
    assert.equal(got.resource['telemetry.sdk.language'], 'nodejs')
    assert.deepEqual(got.profileAttributes, { 'profile.kind': 'cpu', tags: ['a', true] })

    // Every sample exactly once, with its stack (names, files, lines, columns) and clock time.
    const want = expectedSamples(trace, timeOrigin).map(key).sort()
    const have = got.samples
      .map((s) =>
        key({
          time: s.time,
          frames: s.frames.map((f) => (f.file === '' && f.line === 0 && /^\(/.test(f.name) ? { name: f.name } : f)),
        }),
      )
      .sort()
    assert.equal(have.length, trace.samples.length)
    assert.deepEqual(have, want)
    assert.ok(
      got.samples.some(
        (s) =>
          s.frames[0].name === 'depChecksum' &&
          /node_modules\/fakedep\/index\.mjs$/.test(s.frames[0].file) &&
          s.frames[0].line > 0,
      ),
    )

    // Package and kind attributes: the same time per package as pprof's labels (summarize's charging).
    const { profile } = decodePprof(toPprof(trace))
    const str = (i) => profile.stringTable.strings[Number(i)]
    const pprofByPackage = new Map()
    for (const s of profile.sample) {
      const label = (k) => str(s.label.find((l) => str(l.key) === k).str)
      const k = `${label('package')} ${label('kind')}`
      pprofByPackage.set(k, (pprofByPackage.get(k) ?? 0) + Number(s.value[1]))
    }
    const otlpByPackage = new Map()
    for (const s of got.samples) {
      const k = `${s.attributes['jsprof.package']} ${s.attributes['jsprof.kind']}`
      otlpByPackage.set(k, (otlpByPackage.get(k) ?? 0) + Number(s.value))
    }
    assert.deepEqual(otlpByPackage, pprofByPackage)
    assert.ok([...otlpByPackage.keys()].includes('fakedep dependency'), [...otlpByPackage.keys()].join())
  },
)

test(
  'defaults: the sidecar clock and pid, else this thread; the stackless pseudo-frames; bad options are TypeErrors',
  { skip },
  () => {
    const trace = handTrace()
    const got = decode(toOtlpProfiles({ ...trace, jsprof: { timeOrigin: 1_700_000_000_000, pid: 77 } }))
    assert.equal(got.resource['process.pid'], 77)
    assert.equal(got.resource['service.name'], 'unknown_service:node')
    assert.equal(got.timeUnixNano, String(1_700_000_000_000n * 1_000_000n + 100_500_000n))
    const names = new Set(got.samples.map((s) => s.frames[0].name))
    for (const n of ['(idle)', '(garbage collector)', '(program)']) assert.ok(names.has(n), n)
    const here = decode(toOtlpProfiles(trace))
    assert.equal(here.resource['process.pid'], process.pid)
    assert.ok(Math.abs(Number(BigInt(here.timeUnixNano) / 1_000_000n) - (performance.timeOrigin + 100.5)) < 2)
  },
)

test('bad input is a TypeError naming what is wrong', () => {
  const trace = handTrace()
  assert.throws(() => toOtlpProfiles(null), TypeError)
  assert.throws(() => toOtlpProfiles(trace, { resource: 'x' }), /options\.resource must be an object/)
  assert.throws(
    () => toOtlpProfiles(trace, { resource: { a: { b: 1 } } }),
    (e) => e instanceof TypeError && /resource\["a"\]/.test(e.message),
  )
  assert.throws(
    () => toOtlpProfiles(trace, { attributes: { n: [[1]] } }),
    (e) => e instanceof TypeError && /attributes\["n"\]\[0\]/.test(e.message),
  )
  assert.throws(() => toOtlpProfiles(trace, { timeOrigin: NaN }), TypeError)
  assert.throws(() => toOtlpProfiles({ ...trace, samples: [{ timestamp: 1, stackId: 99 }] }), TypeError)
})
