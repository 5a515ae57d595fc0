'use strict'
// jsprof-node/register: production profiling with no code, configured by the environment the way
// OpenTelemetry's and Pyroscope's agents are (`NODE_OPTIONS="--require jsprof-node/register"`, or
// `node --import jsprof-node/register` for an ES module app). What it starts, from config.js's reading
// of the environment:
// - continuous profiling (startContinuous), with heap profiles and stall traces as configured, each
//   chunk pushed by an OTLP exporter, a Pyroscope exporter, or both (their queue, retries, drops);
// - every HTTP server's requests labelled with their method, route and span ids (./http.js);
// - the last chunk pushed on every way out, within a deadline, the process's life left to the app
//   (./exit.js).
// Worker threads load it too (a preload runs in each): one is profiled only with JSPROF_WORKERS, and
// never one of jsprof's own helper threads.
//
// It never throws into the app: a bad configuration is one warning naming the variable, and the app
// runs unprofiled.

const path = require('node:path')
const { API } = require('./config')

/** The running register of this thread ({ continuous, exporters }), or null. */
let running = null
let tried = false

function warn(err) {
  const message = err && typeof err.message === 'string' ? err.message : String(err)
  const text = message.startsWith(`${API}:`) ? message : `${API}: ${message}`
  try {
    process.emitWarning(`${text}; the app runs unprofiled`, { code: 'JSPROF_REGISTER' })
  } catch {
    // A warning that cannot be emitted: nothing else to do.
  }
}

/** Whether a worker thread's environment asks for worker threads to be profiled (read cheaply). */
function workersAsked(env) {
  const value = env.JSPROF_WORKERS
  return typeof value === 'string' && ['true', '1'].includes(value.trim().toLowerCase())
}

/** Whether this worker thread runs one of jsprof-node's own scripts (a helper thread). */
function isOwnHelper() {
  // process.mainModule: the worker's script once it runs (a CommonJS file, as every helper of ours is).
  const main = process.mainModule
  const lib = path.join(__dirname, '..') + path.sep
  return main !== undefined && typeof main.filename === 'string' && main.filename.startsWith(lib)
}

/** What a worker thread's profiles say about it: its thread id (OTLP) and name (Pyroscope: bounded). */
function threadOf() {
  const threads = require('node:worker_threads')
  const name = typeof threads.threadName === 'string' && threads.threadName !== '' ? threads.threadName : 'worker'
  return { attributes: { 'thread.id': threads.threadId, 'thread.name': name }, labels: { thread: name } }
}

/** Makes an exporter; its own checks' errors say which variables fed it. */
function exporterOf(make, options, from) {
  try {
    return make({ ...options, unref: true })
  } catch (err) {
    throw new TypeError(`${API}: ${from}: ${err.message}`, { cause: err })
  }
}

function start(config, main) {
  const { otlpExporter, pyroscopeExporter } = require('../api/backend')
  const { startContinuous } = require('../api/continuous')
  const s = config.settings
  const thread = main ? null : threadOf()
  const exporters = []
  if (config.otlp !== null) {
    const { url, exactUrl, headers, resource, from } = config.otlp
    const attributes = thread === null ? undefined : thread.attributes
    exporters.push(exporterOf(otlpExporter, { url, exactUrl, headers, resource, attributes }, from))
  }
  if (config.pyroscope !== null) {
    const { url, appName, headers, from } = config.pyroscope
    const labels = thread === null ? undefined : thread.labels
    exporters.push(exporterOf(pyroscopeExporter, { url, appName, headers, labels }, from))
  }
  const continuous = startContinuous({
    sampleInterval: s.JSPROF_SAMPLE_INTERVAL_MS,
    chunkSeconds: s.JSPROF_CHUNK_SECONDS,
    heap: s.JSPROF_HEAP || undefined,
    stalls: s.JSPROF_STALLS ? { thresholdMs: s.JSPROF_STALL_THRESHOLD_MS } : undefined,
    onChunk(chunk) {
      for (const exporter of exporters) exporter.push(chunk)
    },
  })
  try {
    require('./exit').endWithProcess({ continuous, exporters, timeoutMs: s.JSPROF_EXIT_TIMEOUT_MS, main })
    if (s.JSPROF_LABELS) require('./http').labelServers()
  } catch (err) {
    continuous.stop().catch(() => {})
    throw err
  }
  return { continuous, exporters }
}

/**
 * Starts what the environment `env` configures on this thread (once); returns `{ continuous,
 * exporters }`, or null when it profiles nothing. Never throws.
 */
function register(env = process.env) {
  if (tried) return running
  tried = true
  try {
    // A worker thread: only when asked, and then once its script runs (one of ours is left alone).
    if (!require('node:worker_threads').isMainThread) {
      if (!workersAsked(env)) return null
      setImmediate(() => {
        if (!isOwnHelper()) running = begin(env, false)
      }).unref()
      return null
    }
  } catch (err) {
    warn(err)
    return null
  }
  running = begin(env, true)
  return running
}

/** Reads the configuration and starts; a problem is one warning (from the main thread) and nothing runs. */
function begin(env, main) {
  try {
    const config = require('./config').readConfiguration(env)
    return config === null ? null : start(config, main)
  } catch (err) {
    if (main) warn(err)
    return null
  }
}

module.exports = { register }
