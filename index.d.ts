// Public types of jsprof-node. The trace types follow the WICG JS Self-Profiling spec
// (https://wicg.github.io/js-self-profiling/).
//
// Every options bag but the spec's ProfilerInitOptions (a WebIDL dictionary that ignores unknown members,
// as Chrome does) follows one rule (lib/args.js): a member not declared here throws a TypeError naming the
// nearest declared one; a number may also come as a numeric string, converted as WebIDL converts numbers.

export type ProfilerResource = string

export interface ProfilerFrame {
  /** The function's name; `""` for anonymous functions. */
  name: string
  /** Index into `ProfilerTrace.resources`; absent when the code has no script URL (builtins, eval). */
  resourceId?: number
  /** 1-based line of the function; absent when unknown. */
  line?: number
  /** 1-based column of the function; absent when unknown. */
  column?: number
}

export interface ProfilerStack {
  /** Index into `ProfilerTrace.stacks` of the caller's stack; absent at the outermost frame. */
  parentId?: number
  /** Index into `ProfilerTrace.frames`. */
  frameId: number
}

/** What the VM was doing: Node reports `script`, `gc` and `other`. */
export type ProfilerMarker = 'script' | 'gc' | 'style' | 'layout' | 'paint' | 'other'

export interface ProfilerSample {
  /** ms in the `performance.now()` domain of the thread that created the Profiler (µs precision). */
  timestamp: number
  /** Index into `ProfilerTrace.stacks`; absent when the sample has no JS stack (idle, GC, VM). */
  stackId?: number
  /** Absent for idle samples. */
  marker?: ProfilerMarker
}

/**
 * jsprof-node's extension member of a trace, `jsprof`, beside the spec's four (on a `Profiler`'s trace
 * only when its samples carry labels: `withLabels`): what jsprof-node knows of a trace beyond them. Written by
 * `jsprof record`/`attach`, request profiles and continuous chunks; checked with the trace by every
 * function that takes one. (docs/exports.md#the-jsprof-member)
 */
export interface ProfilerTraceExtension {
  /** The distinct label sets the samples were taken under (docs/labels.md). */
  labelSets?: Array<Record<string, string>>
  /** How many samples lost their labels: their set was past the cap of distinct sets. */
  labelsDropped?: number
  /** One entry per sample: its index in `labelSets`, or `null` for a sample taken under no labels. */
  sampleLabels?: Array<number | null>
  /** The recorded process. */
  pid?: number
  /**
   * ms between the samples as they were kept: the trace's interval when it has too few gaps within runs
   * to show the rate V8 really delivered (docs/analysis.md#how-long-a-sample-stands-for).
   */
  sampleInterval?: number
  /** A stall trace's event-loop stall (watchStalls). */
  stall?: StallInfo
  /** The recorded thread: 0 for a main thread, a worker's `threadId`. */
  threadId?: number
  /** The Unix epoch (ms) of the `performance.timeOrigin` the timestamps count from. */
  timeOrigin?: number
  /**
   * A trace cut out of a longer run (a request profile): the `[begin, end]` windows (ms, the timestamps'
   * clock; ascending, disjoint) its samples were kept from. Consecutive samples of one window are
   * consecutive samples of the run; between windows, other code ran.
   */
  windows?: Array<[number, number]>
}

export interface ProfilerTrace {
  resources: ProfilerResource[]
  frames: ProfilerFrame[]
  stacks: ProfilerStack[]
  samples: ProfilerSample[]
  /** jsprof-node's extension member (absent on a spec trace). */
  jsprof?: ProfilerTraceExtension
}

export interface ProfilerInitOptions {
  /** Requested ms between samples (WebIDL double, >= 0). 0 picks the smallest supported: 0.1 ms. */
  sampleInterval: number
  /** The most samples the trace holds (WebIDL unsigned long). */
  maxBufferSize: number
}

/**
 * A sampling profiler of the thread that creates it, as in the JS Self-Profiling spec. Sampling starts
 * in the constructor. Dispatches `samplebufferfull` (a plain `Event`) once when the buffer is full.
 */
export declare class Profiler extends EventTarget {
  constructor(options: ProfilerInitOptions)
  /** The interval really used, in ms. */
  readonly sampleInterval: number
  /** True from the moment `stop()` is called. */
  readonly stopped: boolean
  /** Resolves with the samples taken until this call; rejects with `InvalidStateError` when stopped. */
  stop(): Promise<ProfilerTrace>
}

export interface FromCpuProfileOptions {
  /** µs on the profile's clock that timestamps are relative to (default: the profile's `startTime`). */
  timeOrigin?: number
  /**
   * true: the samples V8 took in a function it had inlined into its caller go to that function (by V8's
   * per-line ticks and the scripts' files; Node 20-24's V8 charges them to the caller). Default false:
   * V8's trace as it is, as Chrome builds it. See docs/analysis.md.
   */
  inlined?: boolean
}

/** A V8 CPU profile as written by `node --cpu-prof`, Chrome DevTools or the inspector. */
export interface CpuProfile {
  nodes: Array<{
    id: number
    callFrame: { functionName: string; scriptId?: string; url: string; lineNumber: number; columnNumber: number }
    hitCount?: number
    children?: number[]
    parent?: number
    positionTicks?: Array<{ line: number; ticks: number }>
  }>
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

/**
 * Converts a V8 CPU profile (object, JSON text, or its bytes) into a ProfilerTrace with the same rules
 * as a live Profiler. Throws `SyntaxError` for text that is not JSON, `TypeError` for a malformed profile.
 */
export declare function fromCpuProfile(
  profile: CpuProfile | string | Uint8Array,
  options?: FromCpuProfileOptions,
): ProfilerTrace

// ---- Analysis: attribute(resource), summarize(trace, { by }) ----

/**
 * `app` (own code, outside node_modules), `dependency` (inside node_modules), `node` (`node:` internals),
 * `generated` (code compiled from a string without a URL: `new Function`, `eval`, `vm` without a filename;
 * in a trace, a frame with a position but no resource), `native` (builtins: no resource, no position).
 */
export type AttributionKind = 'app' | 'dependency' | 'node' | 'generated' | 'native'

export interface Attribution {
  kind: AttributionKind
  /** npm package name (`name` or `@scope/name`): for dependencies from the path, for app code from the nearest named package.json. */
  package?: string
  /** From the package's package.json (read once per process), else from a pnpm/Yarn path. */
  version?: string
  /** The package's folder as a filesystem path in the resource's style (`/…` or `C:\…`). */
  root?: string
}

/**
 * Which code a resource of `ProfilerTrace.resources` is. `""` -> `{ kind: 'native' }`, `node:…` ->
 * `{ kind: 'node' }`, `evalmachine.<anonymous>` (`vm` code without a filename) -> `{ kind: 'generated' }`,
 * other non-file resources (`data:`, `[eval]`…) -> `{ kind: 'app' }`.
 * Never throws for a string; `TypeError` for anything else.
 */
export declare function attribute(resource: string): Attribution

/** `'route'` is `'label:route'`; a heap profile has no labels (a label is a `RangeError` there). */
export type SummaryBy = 'package' | 'function' | 'resource' | 'route' | `label:${string}`

export interface SummarizeOptions {
  /**
   * What the rows are (default `'package'`). Unknown strings throw `RangeError`; a `label:` key the
   * label rule refuses, `TypeError`.
   */
  by?: SummaryBy
  /**
   * ms the trace was sampled at, in place of its own (default: the median gap between samples within
   * runs, or its `jsprof.sampleInterval` when it has few): what the last sample of a run weighs, and half
   * the most a sample may weigh. 0: the last sample weighs 0 and no gap is capped.
   */
  sampleInterval?: number
}

export interface SummaryRow {
  /**
   * `package`: the package name, `(app)` for app code without a package.json, `(node)`, `(native)`, and for
   * generated code (`new Function`, `eval`) `(generated, called from <package>)`: the package of the code
   * that called it (a V8 profile does not say which code compiled it), or `(generated)`.
   * `function`: `name (resource:line:column)`, `(anonymous)` for unnamed functions, `name (native)` for
   * builtins, `name (generated:line:column)` for generated code.
   * `resource`: the resource, `(native)` for code without one, `(generated)` for generated code.
   * Samples without a stack: `(idle)`, `(gc)`, `(other)`.
   */
  name: string
  kind: AttributionKind | 'idle' | 'gc' | 'other' | 'script' | 'style' | 'layout' | 'paint'
  /** The package of the function/resource (`by: 'function' | 'resource'` only). */
  package?: string
  version?: string
  /** Samples charged to this row (innermost app/dependency frame; builtins and node: charge their caller). */
  selfSamples: number
  /** Samples with this row anywhere on their stack (once per sample). */
  totalSamples: number
  /** ms: each sample weighs the time to the next one. */
  selfTime: number
  totalTime: number
}

/** Self/total samples and time per package, function or resource, sorted by `selfTime` descending. */
export declare function summarize(trace: ProfilerTrace, options?: SummarizeOptions): SummaryRow[]
/** A heap profile's rows, by self bytes (`by` as for a trace; `sampleInterval` is not taken). */
export declare function summarize(
  profile: HeapProfile,
  options?: { by?: 'package' | 'function' | 'resource' },
): HeapSummaryRow[]

// ---------------------------------------------------------------------------------------------------
// Exporters: a ProfilerTrace in the formats other tools read. Every exporter validates the trace
// (ids in range, no parent cycles) and throws `TypeError` for a malformed trace or options.

/**
 * V8's `.cpuprofile` (Chrome DevTools, VS Code). Sample times are `timestamp * 1000` µs, so
 * `fromCpuProfile(toCpuProfile(trace), { timeOrigin: 0 })` gives back the same samples, stacks and times
 * (not the `jsprof` member: the format has no place for it, and DevTools weighs each sample by the gap to
 * the next, so a request profile's samples read as the time between them there).
 */
export declare function toCpuProfile(trace: ProfilerTrace): CpuProfile

/**
 * The clock of a trace, which the spec's trace does not hold: the Unix epoch (ms) of the
 * `performance.timeOrigin` its timestamps count from (pass `performance.timeOrigin` for a trace of
 * this thread), and the pid. Default: the trace's member `jsprof: { timeOrigin, pid }`, which
 * `jsprof record`, `jsprof attach`, request profiles and continuous chunks write; else 0 (1970) and pid 1.
 */
export interface ExportClockOptions {
  timeOrigin?: number
  pid?: number
}

export interface GeckoProfileOptions extends ExportClockOptions {
  /** The thread's name in the profiler (default "Main Thread"). */
  threadName?: string
  /** `meta.startTime`: ms since the Unix epoch of the trace's time origin (default: `timeOrigin`). */
  startTime?: number
}

/** The Firefox Profiler's processed profile format (version 58), for profiler.firefox.com. */
export declare function toGeckoProfile(trace: ProfilerTrace, options?: GeckoProfileOptions): Record<string, unknown>

export interface SpeedscopeOptions extends ExportClockOptions {
  /**
   * The profile's name. Default: "jsprof-node profile", and when the clock is known (`timeOrigin`, or
   * the trace's sidecar as `jsprof record` writes it) when it started and the pid, which speedscope
   * shows nowhere else: "jsprof-node profile, 2026-11-24 20:05:31.123 UTC, pid 123".
   */
  name?: string
}

/** A speedscope file (https://www.speedscope.app/file-format-schema.json), one sampled profile in ms. */
export declare function toSpeedscope(
  trace: ProfilerTrace,
  options?: SpeedscopeOptions,
): {
  $schema: 'https://www.speedscope.app/file-format-schema.json'
  shared: { frames: Array<{ name: string; file?: string; line?: number; col?: number }> }
  profiles: Array<{
    type: 'sampled'
    name: string
    unit: 'milliseconds'
    startValue: number
    endValue: number
    samples: number[][]
    weights: number[]
  }>
  name: string
  activeProfileIndex: number
  exporter: string
}

/**
 * Gzipped pprof `profile.proto` (sample types samples/count and cpu/nanoseconds, `package` and `kind`
 * labels per sample), for `go tool pprof`.
 */
export declare function toPprof(trace: ProfilerTrace | HeapProfile, options?: ExportClockOptions): Buffer

/** An OpenTelemetry attribute value: a string, a finite number (an integer is sent as an int), a boolean, or an array of them. */
export type OtlpAttributeValue = string | number | boolean | Array<string | number | boolean>

export interface OtlpProfilesOptions extends ExportClockOptions {
  /**
   * Resource attributes over the defaults (`service.name` "unknown_service:node", `process.runtime.name`
   * "nodejs", `process.runtime.version`, `telemetry.sdk.name` "jsprof-node", `telemetry.sdk.language`,
   * `telemetry.sdk.version`, `process.pid`), e.g. `{ 'service.name': 'checkout' }`.
   */
  resource?: Record<string, OtlpAttributeValue>
  /** Attributes of the profile itself. */
  attributes?: Record<string, OtlpAttributeValue>
}

/**
 * The body of an OTLP/HTTP profiles export (`POST /v1development/profiles`, `application/x-protobuf`): an
 * `ExportProfilesServiceRequest` of the OpenTelemetry profiles signal (`v1development`) with one cpu/nanoseconds
 * profile, each sample's time and clock time, and per-sample attributes `jsprof.package` and `jsprof.kind`
 * (charged as `summarize` charges). `timeOrigin` defaults to the trace's sidecar, else this thread's
 * `performance.timeOrigin`.
 */
export declare function toOtlpProfiles(trace: ProfilerTrace | HeapProfile, options?: OtlpProfilesOptions): Buffer

/** Folded stacks (`outer;…;leaf count` lines, sorted) for flamegraph.pl and inferno. */
export declare function toCollapsed(trace: ProfilerTrace | HeapProfile): string

export interface FlameGraphOptions {
  /** The title (default "Flame Graph"). */
  title?: string
  /** The subtitle (default: a colour legend). */
  subtitle?: string
  /** SVG image width in px, an integer from 10 to 100000 (default 1200; the HTML page fills its window). */
  width?: number
  /**
   * `'svg'` (default): an SVG image with a tooltip per frame. `'html'`: one self-contained, offline HTML
   * page to explore it: click a frame to zoom, search (highlights and the matched share), tooltips with
   * time, share and package@version.
   */
  format?: 'svg' | 'html'
  /**
   * One label, `{ route: 'GET /users/:id' }` or `{ trace_id: '…' }`: the flame graph of the samples
   * that carry it, each weighing what it weighs in the whole trace (CPU traces; docs/labels.md).
   */
  label?: Record<string, string>
}

/** A flame graph (SVG or HTML text) coloured by kind of code, with each frame's package in its tooltip. */
export declare function toFlameGraph(trace: ProfilerTrace | HeapProfile, options?: FlameGraphOptions): string

// ---------------------------------------------------------------------------------------------
// Production profiling: per-request profiles, continuous mode, Pyroscope push (docs/production.md)
// ---------------------------------------------------------------------------------------------

export interface RequestProfilerOptions {
  /** Fraction of requests profiled, in [0, 1]; deterministic: floor(n × rate) of the first n. Default 0.1. */
  sampleRate?: number
  /** ms between samples (default 10; 1 gives short requests richer traces, at a cost in CPU: docs/bench.md#throughput). */
  sampleInterval?: number
  /** Most samples one request's trace holds (default 10000). */
  maxBufferSize?: number
  /** Longest wait (ms) between a response's finish and the harvest that completes its trace (default 1000: about one harvest a second). */
  maxStopDelay?: number
  /** Keep V8 sampling this many ms after the last profiled request ended (default 1000; 0: stop at once). */
  keepWarm?: number
  /** Most profiled requests in flight at once; more are served unprofiled (default 100). */
  maxInFlight?: number
  /**
   * Label every request, sampled or not, with `method` and `route` (`'GET /users/:id'`, the route
   * template), and with OpenTelemetry the local root span's `trace_id`, `span_id`, `span_name`
   * (default true; docs/labels.md).
   */
  labels?: boolean
  /** Called with each request's profile (may return a promise). */
  onProfile: (profile: RequestProfile) => unknown
  /** Called when building or delivering a profile failed (default: a process warning). */
  onError?: (error: unknown) => void
}

export interface RequestProfile {
  method: string | undefined
  /** The request URL (path and query). */
  url: string | undefined
  /** The route pattern, when the framework knows it (Express, Fastify). */
  route: string | undefined
  statusCode: number
  /** True when the connection closed before the response finished. */
  aborted: boolean
  /** performance.now() at arrival (ms). */
  startTime: number
  /** Date.now() at arrival. */
  startUnixMs: number
  /** Arrival to the response's 'finish' (or 'close'). */
  durationMs: number
  sampleInterval: number
  /** True when the trace hit maxBufferSize. */
  truncated: boolean
  /**
   * Only the samples taken while this request's own code ran; its `jsprof` member has the clock, the
   * interval and the windows (the intervals of its own code that hold samples), so every view weighs
   * its samples by the time they stand for, not the time between them.
   */
  trace: ProfilerTrace
}

export interface RequestProfilerStats {
  seen: number
  sampled: number
  profiled: number
  skippedBusy: number
  truncated: number
  errors: number
}

export declare class RequestProfiler {
  readonly sampleInterval: number
  readonly stats: RequestProfilerStats
  /** Wraps a node:http request listener. */
  wrap<L extends (req: any, res: any, ...rest: any[]) => any>(listener: L): L
  /** An Express middleware; install it first. */
  express(): (req: any, res: any, next: (err?: unknown) => void) => void
  /** A Fastify plugin (encapsulation skipped): `fastify.register(profiler.fastify)`. */
  fastify(instance: any, options: unknown, done: (err?: Error) => void): void
  /** Stops profiling new requests; resolves once profiles of requests in flight were delivered. */
  close(): Promise<void>
}

export declare function profileRequests(options: RequestProfilerOptions): RequestProfiler

export interface ContinuousOptions {
  /** ms between samples (default 10). */
  sampleInterval?: number
  /** Seconds per chunk (default 10). */
  chunkSeconds?: number
  /** Most samples per chunk (default: twice the expected count + 1000). */
  maxBufferSize?: number
  onChunk: (chunk: ContinuousChunk) => unknown
  onError?: (error: unknown) => void
  /** Each chunk also carries a heap profile: `true` (HeapProfiler's defaults) or HeapProfiler's options. */
  heap?: boolean | HeapProfilerOptions
  /** true: the samples of functions V8 inlined go to them, as `fromCpuProfile`'s `inlined` (default false). */
  inlined?: boolean
  /** Stall traces of this thread to onChunk too (`chunk.stall` set): `true` or watchStalls' options. */
  stalls?: boolean | StallOptions
  /**
   * How long `stop()` waits for what onChunk returns (ms, default 5000); chunks whose promise has not
   * settled by then are counted in `stats.undelivered`, not awaited.
   */
  stopTimeoutMs?: number
}

export interface ContinuousChunk {
  /** 0, 1, 2, … */
  index: number
  /** performance.now() ms; chunk k+1's startTime is chunk k's endTime. Samples: startTime < t <= endTime. */
  startTime: number
  endTime: number
  startUnixMs: number
  endUnixMs: number
  sampleInterval: number
  truncated: boolean
  /** Its `jsprof` member has the clock (pushed profiles carry their time) and the interval. */
  trace: ProfilerTrace
  /** With `heap`: the heap profile at the chunk's end (null when taking it failed: see heapError). */
  heap?: HeapProfile | null
  heapError?: unknown
}

export interface ContinuousProfiler {
  readonly sampleInterval: number
  readonly stats: { chunks: number; samples: number; truncated: number; errors: number; undelivered: number }
  /** Ends the last (partial) chunk; resolves once every chunk was delivered, or after `stopTimeoutMs`. */
  stop(): Promise<void>
  /**
   * Ends the last chunk at once, without a turn of the event loop (the process's 'exit' event), and
   * returns it as onChunk would get it (onChunk is not called); null when stopped already or when the
   * thread's sampler cannot cut in. Chunks still being built are not waited for.
   */
  stopSync(): ContinuousChunk | null
}

export declare function startContinuous(options: ContinuousOptions): ContinuousProfiler

/** `jsprof.stall` of a stall trace. */
export interface StallInfo {
  /** ms the stalled turn ran: the whole stall when `ended`, else until the trace was taken. */
  durationMs: number
  /** Whether the turn ended (the loop turned again) before the trace was taken. */
  ended: boolean
  /**
   * The stalled thread's JS stack at the detection, innermost first, as `Error.stack` writes its frames
   * (`name (file:line:column)`, at most 32), when the detection reached the thread (a V8 interrupt).
   */
  stack?: string[]
  /**
   * How long (ms of its CPU time) the thread ran between the detection and the taking of `stack`
   * (Linux). The interrupt runs only in JS: a long run means the thread was in native code
   * (JSON.parse, crypto.pbkdf2Sync, an addon) and `stack` shows the JS that ran once it returned.
   */
  stackDelayMs?: number
  /** When the stalled turn began (performance.now() ms, the timestamps' clock). */
  start: number
  /** The threshold (ms) the turn exceeded. */
  thresholdMs: number
}

export interface StallOptions {
  /** A turn blocked longer than this (ms, default 300, at least 10) is a stall. */
  thresholdMs?: number
  /** Called on the watched thread once a stalled turn ended, with its trace (the shape of a continuous chunk). */
  onStall?: (stall: StallTrace) => unknown
  onError?: (error: unknown) => void
  /**
   * Each stall's trace is written there as `stall-<pid>-<n>.json` (n = 1, 2, …), by a helper thread while
   * the loop still blocks (`ended: false`, `stuckMs` after the detection), then replaced by the whole
   * stall's once it ends. Checked (made if missing) when watching starts.
   */
  dir?: string
  /** Name of the files in `dir` instead of `stall-<pid>`: `<prefix>-<n>.json`. */
  prefix?: string
  /** Most stall traces kept in `dir` (default 100): the oldest of this naming are removed. */
  maxFiles?: number
  /** Keep the sampler running, so a trace holds the stalled turn from its start (default false: from detection). */
  keepWarm?: boolean
  /**
   * Traces of ended stalls per minute at most (default 6); more are counted in `stats.limited`. A stall
   * still running `stuckMs` after its detection (the hang) is traced whatever the limit.
   */
  maxPerMinute?: number
  /** ms between samples (default 10). */
  sampleInterval?: number
  /** Most samples per stall trace (default 10000). */
  maxBufferSize?: number
  /** How long after the detection a stall still running is traced so far (ms, default 100). */
  stuckMs?: number
  /**
   * How long `stop()` waits for what onStall returns (ms, default 5000); traces whose promise has not
   * settled by then are counted in `stats.undelivered`, not awaited.
   */
  stopTimeoutMs?: number
}

/** A stall's trace, shaped as a continuous chunk so an exporter's `push` takes it. */
export interface StallTrace extends ContinuousChunk {
  /** Its stall (also in `trace.jsprof.stall`). */
  stall: StallInfo
}

export interface StallWatch {
  readonly thresholdMs: number
  readonly stats: {
    detected: number
    reported: number
    limited: number
    own: number
    snapshots: number
    errors: number
    undelivered: number
  }
  /** Stops watching; resolves once every stall trace taken was delivered, or after `stopTimeoutMs`. */
  stop(): Promise<void>
}

/** Watches this thread's event loop (one watcher per thread) and traces each turn blocked beyond the threshold. */
export declare function watchStalls(options: StallOptions): StallWatch

/** The queue, retry and timeout options both push exporters share. */
export interface PushOptions {
  /** Extra request headers (e.g. X-Scope-OrgID). */
  headers?: Record<string, string>
  /** false: leave chunks' heap profiles unsent (default: each is pushed as a request of its own). */
  heap?: boolean
  /** Chunks waiting at most (default 32); the oldest is dropped beyond. */
  maxQueue?: number
  /** Bytes waiting at most (default 16 MiB). */
  maxQueueBytes?: number
  /** Retries of a failed push (network error, timeout, a retryable answer; default 3). */
  maxRetries?: number
  /** First retry delay (ms, doubled each retry, with jitter; default 500). */
  retryBaseMs?: number
  /**
   * Total deadline of each push (connect, send, whole answer; ms, default 10000); also how long
   * close() waits for the queue before it aborts the push in flight.
   */
  timeoutMs?: number
  /**
   * true: a push in flight does not keep the process alive (its socket and deadline are unref'd);
   * bound the wait at the end yourself with close({ timeoutMs }). Default false.
   */
  unref?: boolean
}

/** One HTTP request an exporter sends (requestsFor). */
export interface PushRequest {
  /** Without credentials (see `credentials`). */
  url: URL
  headers: Record<string, string | number>
  body: Uint8Array
  /** Basic auth from the exporter's url, or null. */
  credentials: { user: string; password: string } | null
}

export interface PyroscopeExporterOptions extends PushOptions {
  /** The server, e.g. http://pyroscope:4040 (`/ingest` is appended unless the path ends with it). */
  url: string
  appName: string
  labels?: Record<string, string | number>
  /** Default 'nodespy'. */
  spyName?: string
  /**
   * 'ingest' (default): the legacy `POST /ingest`. 'push': Pyroscope's push API
   * (`POST /push.v1.PusherService/Push`, connect JSON: a series labelled `__name__=process_cpu`,
   * `service_name=<appName>` and `labels`, with the pprof). 'auto': the push API, and `/ingest` for good
   * (the same chunk at once) when the server answers 404/405/415/501 to it.
   */
  api?: 'ingest' | 'push' | 'auto'
  /** Trace -> gzipped pprof (default: the package's toPprof). */
  encode?: (trace: ProfilerTrace, chunk: ContinuousChunk) => Uint8Array
}

export interface PyroscopeExporter {
  /** The API in use ('auto' until the first answer decides; OTLP exporters say 'otlp'). */
  readonly api?: 'ingest' | 'push' | 'auto' | 'otlp'
  /** Pass as startContinuous's onChunk: queues the chunk, never throws or waits. */
  push(chunk: ContinuousChunk): void
  readonly stats: {
    pushed: number
    sent: number
    retries: number
    failed: number
    /** Every failed attempt, retried or not (lastError is the last one). */
    errors: number
    dropped: number
    queued: number
    queuedBytes: number
    encodeErrors: number
  }
  readonly lastError?: Error
  flush(): Promise<void>
  /**
   * Stops accepting chunks, waits at most `timeoutMs` (default: the exporter's) for the queue, then
   * aborts the push in flight and drops the rest.
   */
  close(options?: { timeoutMs?: number }): Promise<void>
  /**
   * The requests push(chunk) would send for the chunk (its heap profile's too), built at once and not
   * queued: for a thread that cannot wait for the queue (the 'exit' event). Throws what encoding throws.
   */
  requestsFor(chunk: ContinuousChunk): PushRequest[]
}

export declare function pyroscopeExporter(options: PyroscopeExporterOptions): PyroscopeExporter

export interface OtlpExporterOptions extends PushOptions {
  /**
   * The OTLP/HTTP endpoint: a collector's address (`http://collector:4318`, to which
   * `/v1development/profiles` is added) or the full URL of the profiles endpoint (used as it is).
   * Credentials in the URL go as basic auth, never into messages. HTTPS_PROXY / HTTP_PROXY / NO_PROXY apply.
   */
  url: string
  /**
   * true: `url` is used exactly as given, a bare address too (its root path), as the OpenTelemetry
   * specification uses OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT. Default false.
   */
  exactUrl?: boolean
  /** `service.name` of the resource (shorthand for `resource['service.name']`). */
  serviceName?: string
  /** Resource attributes over the defaults (see toOtlpProfiles). */
  resource?: Record<string, OtlpAttributeValue>
  /** Attributes of every profile. */
  attributes?: Record<string, OtlpAttributeValue>
  /** Trace -> request body (default: toOtlpProfiles with the options above). */
  encode?: (trace: ProfilerTrace, chunk: ContinuousChunk) => Uint8Array
}

export interface OtlpExporter extends PyroscopeExporter {
  readonly stats: PyroscopeExporter['stats'] & {
    /** Profiles a backend accepted the request of but rejected (an answer's partial_success). */
    rejected: number
  }
}

/**
 * An OpenTelemetry profiles push target (OTLP/HTTP, protobuf): 429/502/503/504 are retried (Retry-After
 * honoured), other errors are final; a partial success's rejected profiles are counted in
 * `stats.rejected`. Pass its `push` as `startContinuous`'s `onChunk`.
 */
export declare function otlpExporter(options: OtlpExporterOptions): OtlpExporter

// ---- Source maps (lib/api/sourcemaps.js, crates/jsprof-core/src/sourcemap.rs; docs/sourcemaps.md) ----

export interface ResolveSourceMapsOptions {
  /**
   * A map per resource (exactly as in `trace.resources`): a path or `file:` URL of the map, a `URL`, the
   * map object, or its JSON text. Used before any lookup for that resource.
   */
  maps?: Record<string, string | URL | object> | Map<string, string | URL | object>
  /** Read each generated file for its last `//# sourceMappingURL=` comment (file or `data:` URL). Default true. */
  sourceMappingURL?: boolean
  /** Look for `<file>.map` beside the generated file. Default true. */
  adjacent?: boolean
  /** Reuse maps parsed by earlier calls while their files are unchanged (path, size, mtime). Default true. */
  cache?: boolean
  /** Bytes read at most of one generated file or map (default 268435456, 256 MiB); larger ones are `mapTooLarge`. */
  maxMapSize?: number
}

/** Why a frame was not mapped. */
export type SourceMapUnmappedReason =
  'noPosition' | 'notAFile' | 'noMap' | 'mapNotFound' | 'mapUnreadable' | 'mapTooLarge' | 'mapInvalid' | 'noMapping'

export interface SourceMapResourceStats {
  /** The resource of the input trace. */
  resource: string
  /** Where its map came from: a path, `'inline'` (a `data:` URL) or `'explicit'` (map text or object given). */
  map?: string
  /** Its frames, and how many of them were mapped. */
  frames: number
  mapped: number
  /** Why its map could not be used. */
  error?: { reason: SourceMapUnmappedReason; message: string }
}

export interface SourceMapStats {
  /** Frames of the input trace. */
  frames: number
  mapped: number
  /** Every reason with its count of unmapped frames (zeros included); they add up to `frames - mapped`. */
  unmapped: Record<SourceMapUnmappedReason, number>
  /** One entry per resource of the input trace, in its order. */
  resources: SourceMapResourceStats[]
}

/**
 * A new trace whose frames point at the original source (resource, 1-based line and column, and the
 * original name where the generated one is minified), and stats saying how many frames were mapped and
 * why others were not. Maps are read and parsed off the main thread. Never rejects for a missing or broken
 * map; rejects with a TypeError (RangeError) for a malformed trace or bad options.
 */
export declare function resolveSourceMaps(
  trace: ProfilerTrace,
  options?: ResolveSourceMapsOptions,
): Promise<{ trace: ProfilerTrace; stats: SourceMapStats }>

// ---- Labels on samples: withLabels, setLabels, getLabels (docs/labels.md) ----

/**
 * Labels: keys of 1-100 characters of A-Z, a-z, 0-9 and _ (not starting with a digit nor with `__`),
 * string values of at most 1024 characters, at most 32 labels a set. Breaking the rule throws a TypeError.
 */
export type Labels = Record<string, string>

/**
 * Runs `fn(...args)` with `labels` added to the current ones: every sample taken while it, or anything
 * it starts on this thread (promises, await, timers, emitters, streams; a Worker starts with none), runs
 * carries them. Returns what fn returns.
 */
export declare function withLabels<A extends unknown[], R>(labels: Labels, fn: (...args: A) => R, ...args: A): R

/** Adds `labels` to the labels of the code running now and of what it starts from here on. */
export declare function setLabels(labels: Labels): void

/** The labels current now (frozen, keys in sorted order; empty when none). */
export declare function getLabels(): Readonly<Labels>

// ---- Heap profiles: new HeapProfiler(options), fromHeapProfile, toHeapProfile ----

export interface HeapProfilerOptions {
  /** Average bytes between V8's samples (default 524288, 512 KiB). */
  samplingInterval?: number
  /** Frames kept per stack (default 64; honoured by V8 from Node 26 on, earlier majors keep 128). */
  stackDepth?: number
  /** Count collected objects too: the 'allocated' view (default false: 'inuse', live objects only). */
  includeCollected?: boolean
  /**
   * false: V8 does not inline while this profiler samples (its code is deoptimized once at the start and
   * runs slower meanwhile), so a small helper keeps its own allocations instead of its caller getting
   * them (default true: V8 inlines as usual). V8's flags are the process's: see docs/heap.md.
   */
  inlining?: boolean
}

/** One stack holding memory: `size` bytes (V8's estimate) in `count` of V8's samples (not objects). */
export interface HeapSample {
  count: number
  size: number
  /** Index into `HeapProfile.stacks`; absent for memory allocated with no frame of the app's. */
  stackId?: number
}

/** A heap profile: the trace's resources, frames and stacks, with bytes per stack. */
export interface HeapProfile {
  frames: ProfilerFrame[]
  jsprof: {
    heap: {
      view: 'inuse' | 'allocated'
      samplingInterval?: number
      stackDepth?: number
      /** performance.now() ms of the thread: when sampling for this profile began, and when it was taken. */
      startTime?: number
      endTime?: number
      /**
       * Whether V8 could inline the thread's code while it sampled: false when its inlining was off all
       * along (each allocation has the frame of the function that made it); absent when unknown.
       */
      inlining?: boolean
    }
    pid?: number
    threadId?: number
    /** Unix epoch ms of the thread's performance.timeOrigin. */
    timeOrigin?: number
  }
  resources: ProfilerResource[]
  samples: HeapSample[]
  stacks: ProfilerStack[]
}

export interface HeapSummaryRow {
  name: string
  kind: AttributionKind | 'other'
  package?: string
  version?: string
  /** Bytes charged to the row's own code, and to it and everything it called. */
  selfSize: number
  totalSize: number
  selfSamples: number
  totalSamples: number
}

/**
 * V8's sampling heap profiler of this thread, from construction until `stop()`. Profilers of one thread
 * share it (with the same options; others are an `InvalidStateError`), each keeping what was sampled
 * after it started.
 */
export declare class HeapProfiler {
  constructor(options?: HeapProfilerOptions)
  readonly samplingInterval: number
  readonly stackDepth: number
  readonly includeCollected: boolean
  readonly inlining: boolean
  readonly stopped: boolean
  /** The heap profile now ('inuse': objects sampled since the start and still alive). */
  profile(): Promise<HeapProfile>
  /** The last heap profile; rejects with `InvalidStateError` when already stopped. */
  stop(): Promise<HeapProfile>
}

/** V8's sampling heap profile (`.heapprofile`: DevTools, node --heap-prof) as a heap profile. */
export declare function fromHeapProfile(profile: object | string | Uint8Array): HeapProfile

/**
 * V8's `.heapprofile` object of a heap profile (DevTools' Memory panel loads it): a tree at most 1,025
 * nodes deep, which `JSON.stringify` serializes; a deeper one is a `RangeError` (`jsprof convert --to
 * heapprofile` writes it as text at any depth).
 */
export declare function toHeapProfile(profile: HeapProfile): Record<string, unknown>
