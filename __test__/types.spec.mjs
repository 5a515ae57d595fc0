// The published types, as a consumer's compiler sees them: `tsc --strict --noEmit` on a program that
// uses every export, written once for `require` (a .cts file) and once for `import` (a .mts file), under
// node16 resolution (package.json `exports`: index.d.ts for require, index.d.mts for import) and under
// bundler resolution. The list of exports checked is the runtime's own (Object.keys of the module), so
// a new export without types fails here.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const require = createRequire(import.meta.url)
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
const runtimeExports = Object.keys(require('jsprof-node')).sort()

// Uses of every export, typed: wrong types make tsc fail. `m` is the module.
const body = `
const exported: Array<keyof typeof m> = ${JSON.stringify(runtimeExports)}
const p: m.Profiler = new m.Profiler({ sampleInterval: 10, maxBufferSize: 1000 })
const interval: number = p.sampleInterval
const stopped: boolean = p.stopped
p.addEventListener('samplebufferfull', (e: Event) => void e)
async function use(): Promise<void> {
  const trace: m.ProfilerTrace = await p.stop()
  const frame: m.ProfilerFrame | undefined = trace.frames[0]
  const name: string | undefined = frame?.name
  const marker: m.ProfilerMarker | undefined = trace.samples[0]?.marker
  const fromText: m.ProfilerTrace = m.fromCpuProfile('{}', { timeOrigin: 0 })
  const fromBytes: m.ProfilerTrace = m.fromCpuProfile(new Uint8Array(0))
  const a: m.Attribution = m.attribute('file:///app/x.js')
  const kind: m.AttributionKind = a.kind
  const rows: m.SummaryRow[] = m.summarize(trace, { by: 'package' })
  const byRoute: m.SummaryRow[] = m.summarize(trace, { by: 'label:route' })
  const labelled: number = m.withLabels({ route: 'GET /a' }, (x: number) => x + 1, 1)
  m.setLabels({ tenant: 'acme' })
  const current: Readonly<m.Labels> = m.getLabels()
  const sets: Array<Record<string, string>> | undefined = trace.jsprof?.labelSets
  const index: number | null | undefined = trace.jsprof?.sampleLabels?.[0]
  const oneRoute: string = m.toFlameGraph(trace, { format: 'html', label: { route: 'GET /a' } })
  void [byRoute, labelled, current, sets, index, oneRoute]
  const labelledRequests: m.RequestProfiler = m.profileRequests({ labels: false, onProfile: () => undefined })
  void labelledRequests
  const cpu: m.CpuProfile = m.toCpuProfile(trace)
  const gecko: Record<string, unknown> = m.toGeckoProfile(trace, { threadName: 'main' })
  const speedscope = m.toSpeedscope(trace, { name: 'x' })
  const pprof: Buffer = m.toPprof(trace)
  const hp: m.HeapProfiler = new m.HeapProfiler({ samplingInterval: 65536, includeCollected: false })
  const heap: m.HeapProfile = await hp.profile()
  const heapRows: m.HeapSummaryRow[] = m.summarize(heap, { by: 'package' })
  const bytes: number = heapRows[0]?.selfSize ?? heap.samples[0]?.size ?? 0
  const heapPprof: Buffer = m.toPprof(heap)
  const v8heap: Record<string, unknown> = m.toHeapProfile(await hp.stop())
  const back: m.HeapProfile = m.fromHeapProfile(v8heap)
  const otlp: Buffer = m.toOtlpProfiles(trace, { resource: { 'service.name': 'api', replicas: 3 }, attributes: { tags: ['a', true] } })
  const collapsed: string = m.toCollapsed(trace)
  const svg: string = m.toFlameGraph(trace, { title: 't', width: 800 })
  const html: string = m.toFlameGraph(trace, { format: 'html' })
  const requests: m.RequestProfiler = m.profileRequests({ sampleRate: 0.5, onProfile: (r: m.RequestProfile) => r.trace })
  const wrapped = requests.wrap((req: unknown, res: unknown) => void [req, res])
  await requests.close()
  const exporter: m.PyroscopeExporter = m.pyroscopeExporter({ url: 'http://localhost:4040', appName: 'a' })
  const continuous: m.ContinuousProfiler = m.startContinuous({ onChunk: (c: m.ContinuousChunk) => exporter.push(c) })
  await continuous.stop()
  const last: m.ContinuousChunk | null = continuous.stopSync()
  const sent: m.PushRequest[] = last === null ? [] : exporter.requestsFor(last)
  void sent
  const watch: m.StallWatch = m.watchStalls({ thresholdMs: 300, keepWarm: true, onStall: (s: m.StallTrace) => exporter.push(s), dir: '/tmp' })
  const stallMs: number | undefined = trace.jsprof?.stall?.durationMs
  void stallMs
  await watch.stop()
  await exporter.close({ timeoutMs: 100 })
  const otlp2: m.OtlpExporter = m.otlpExporter({ url: 'http://localhost:4318', serviceName: 'api', resource: { region: 'eu' }, exactUrl: true, unref: true })
  const rejected: number = otlp2.stats.rejected
  void rejected
  await otlp2.close()
  void [exported, interval, stopped, name, marker, fromText, fromBytes, kind, rows, cpu, gecko, speedscope, pprof, otlp, collapsed, svg, html, wrapped]
}
void use
// @ts-expect-error: the options are required.
new m.Profiler()
// @ts-expect-error: format is 'svg' or 'html'.
m.toFlameGraph({ resources: [], frames: [], stacks: [], samples: [] }, { format: 'png' })
`

// jsprof-node/register resolves, typed, from both (it exports nothing).
const consumers = {
  'cjs.cts': `import m = require('jsprof-node')\nimport register = require('jsprof-node/register')\nvoid register\n${body}`,
  'esm.mts': `import * as m from 'jsprof-node'\nimport jsprof from 'jsprof-node'\nimport * as register from 'jsprof-node/register'\nvoid register\nconst same: typeof m.Profiler = jsprof.Profiler\nvoid same\n${body}`,
}

function compile(dir, options) {
  const r = spawnSync(
    process.execPath,
    [
      tsc,
      '--strict',
      '--noEmit',
      '--types',
      'node',
      '--target',
      'es2022',
      ...options,
      ...Object.keys(consumers).map((f) => join(dir, f)),
    ],
    { cwd: root, encoding: 'utf8', timeout: 120000 },
  )
  return { status: r.status, output: `${r.stdout}${r.stderr}` }
}

// Inside the package directory, so 'jsprof-node' resolves by self-reference through package.json exports.
const dir = join(root, '.cache', 'types-test')

test(
  'tsc --strict: every export, from require and import, under node16 and bundler resolution',
  { timeout: 240000 },
  (t) => {
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    for (const [file, text] of Object.entries(consumers)) writeFileSync(join(dir, file), text)
    assert.ok(runtimeExports.length >= 13, runtimeExports.join(', '))
    const node16 = compile(dir, ['--module', 'node16', '--moduleResolution', 'node16'])
    assert.equal(node16.status, 0, `node16:\n${node16.output}`)
    const bundler = compile(dir, ['--module', 'preserve', '--moduleResolution', 'bundler'])
    assert.equal(bundler.status, 0, `bundler:\n${bundler.output}`)
  },
)

test('the check can fail: a wrong type and a missing export are reported', { timeout: 240000 }, (t) => {
  const bad = join(root, '.cache', 'types-test-bad')
  rmSync(bad, { recursive: true, force: true })
  mkdirSync(bad, { recursive: true })
  t.after(() => rmSync(bad, { recursive: true, force: true }))
  writeFileSync(
    join(bad, 'cjs.cts'),
    `import m = require('jsprof-node')\nconst n: number = m.toCollapsed({ resources: [], frames: [], stacks: [], samples: [] })\nvoid n\n`,
  )
  writeFileSync(
    join(bad, 'esm.mts'),
    `import * as m from 'jsprof-node'\nconst e: Array<keyof typeof m> = ['notAnExport']\nvoid e\n`,
  )
  const r = compile(bad, ['--module', 'node16', '--moduleResolution', 'node16'])
  assert.notEqual(r.status, 0)
  assert.match(r.output, /cjs\.cts.*Type 'string' is not assignable to type 'number'/)
  assert.match(r.output, /esm\.mts.*"notAnExport"/)
})
