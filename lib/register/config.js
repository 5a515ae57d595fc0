'use strict'
// jsprof-node/register's configuration, read once from the environment when the process starts (the
// table of variables: docs/production.md#zero-code-jsprof-noderegister).
//
// - Where chunks go. OpenTelemetry's OTLP variables as the specification defines them
//   (specification/protocol/exporter.md, and as the OpenTelemetry JS SDK reads them): the per-signal
//   OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT is used as it is (a bare address: its root path), the
//   generic OTEL_EXPORTER_OTLP_ENDPOINT is a base URL the signal's path `v1development/profiles` is
//   appended to; OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_PROFILES_HEADERS are W3C-baggage-like
//   `key=value,…` lists, percent-decoded, the per-signal one winning key by key; OTEL_RESOURCE_ATTRIBUTES
//   likewise (an unencoded `=` in a key or value is an error, as the resource specification says);
//   OTEL_SERVICE_NAME wins over a `service.name` of OTEL_RESOURCE_ATTRIBUTES; OTEL_SDK_DISABLED=true
//   turns OTLP off; a protocol other than http/protobuf is refused. Pyroscope's as its SDKs read them:
//   PYROSCOPE_SERVER_ADDRESS, PYROSCOPE_APPLICATION_NAME, PYROSCOPE_AUTH_TOKEN (a bearer token) as
//   @pyroscope/nodejs reads them; basic auth and tenant as Pyroscope's agents that take them from the
//   environment name them (PYROSCOPE_BASIC_AUTH_USER, PYROSCOPE_BASIC_AUTH_PASSWORD,
//   PYROSCOPE_TENANT_ID: @pyroscope/nodejs takes them as options only).
// - jsprof's own settings (JSPROF_*), each checked by the rule of the option it sets (lib/args.js
//   readEnvironment: the same checker startContinuous and watchStalls use).
//
// A bad value throws a TypeError or RangeError whose message names the variable; the register turns it
// into its one warning and profiles nothing. Nothing here starts anything.

const { readEnvironment, flag, number } = require('../args')

const API = 'jsprof-node/register'
/** The variables that say where to push: without one of them the register does nothing. */
const DESTINATIONS = ['OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'PYROSCOPE_SERVER_ADDRESS']
/** The Pyroscope application name when neither PYROSCOPE_APPLICATION_NAME nor OTEL_SERVICE_NAME says one. */
const DEFAULT_APP_NAME = 'unknown_service'

/**
 * jsprof's own settings by variable, each the checker of the option it sets (the API's own defaults
 * apply to an unset one) or the register's own (flags, the exit deadline); looked up when read, so
 * an app without the variables loads none of the modules.
 */
const SETTINGS = {
  JSPROF_ENABLED: () => flag(),
  JSPROF_SAMPLE_INTERVAL_MS: () => require('../api/continuous').OPTIONS.sampleInterval,
  JSPROF_CHUNK_SECONDS: () => require('../api/continuous').OPTIONS.chunkSeconds,
  JSPROF_LABELS: () => flag(),
  JSPROF_HEAP: () => flag(),
  JSPROF_STALLS: () => flag(),
  JSPROF_STALL_THRESHOLD_MS: () => require('../api/stalls').OPTIONS.thresholdMs,
  JSPROF_WORKERS: () => flag(),
  JSPROF_EXIT_TIMEOUT_MS: () => number({ min: 0, max: 60_000, what: 'a number of ms' }),
}

/** The settings' checkers by variable (lib/args.js readEnvironment's spec). */
function settings() {
  return Object.fromEntries(Object.entries(SETTINGS).map(([name, checker]) => [name, checker()]))
}

/** The register's own defaults (the API's apply to the other settings). */
const DEFAULTS = {
  JSPROF_ENABLED: true,
  JSPROF_LABELS: true,
  JSPROF_HEAP: false,
  JSPROF_STALLS: false,
  JSPROF_WORKERS: false,
  JSPROF_EXIT_TIMEOUT_MS: 2000,
}

/** A variable's text, or undefined when it is unset or blank (as the OpenTelemetry SDKs read them). */
function text(env, name) {
  const value = env[name]
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

/** The first of `names` that is set, as [name, value], or [undefined, undefined]. */
function first(env, names) {
  for (const name of names) {
    const value = text(env, name)
    if (value !== undefined) return [name, value]
  }
  return [undefined, undefined]
}

/**
 * A `key1=value1,key2=value2` list (W3C Baggage's format without its `;` properties, as the
 * specification reads OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES): entries split on `,`
 * (empty ones skipped), key and value trimmed and percent-decoded; an entry with no `=`, an empty key
 * or a bad escape is a TypeError naming `name`. `strict`: a second `=` in an entry is one too (the
 * resource specification's rule: `=` in a value must be percent-encoded); else the value is all
 * after the first `=` (a base64 token's padding).
 */
function keyValueList(name, value, { strict = false } = {}) {
  const out = {}
  for (const raw of value.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    const at = entry.indexOf('=')
    const shown = JSON.stringify(entry.length > 40 ? `${entry.slice(0, 40)}…` : entry)
    if (at <= 0 || (strict && entry.indexOf('=', at + 1) !== -1)) {
      throw new TypeError(`${API}: ${name} must be a list of key=value pairs, got the entry ${shown}`)
    }
    try {
      out[decodeURIComponent(entry.slice(0, at).trim())] = decodeURIComponent(entry.slice(at + 1).trim())
    } catch {
      throw new TypeError(`${API}: ${name} has an entry that is not valid percent-encoding: ${shown}`)
    }
  }
  return out
}

/** The headers of `names`' lists, later ones winning key by key (header names compared in lower case). */
function headersOf(env, names) {
  const { checkHeaders } = require('../api/backend')
  const headers = {}
  for (const name of names) {
    const value = text(env, name)
    if (value === undefined) continue
    const list = keyValueList(name, value)
    checkHeaders(API, list, name)
    for (const [key, v] of Object.entries(list)) headers[key.toLowerCase()] = v
  }
  return headers
}

/** A URL variable checked as the exporters check their `url` (an absolute http(s) URL). */
function urlOf(name, value) {
  const { parseUrl } = require('../api/backend/transport')
  parseUrl(value, API, name)
  return new URL(value)
}

/** OTEL_SDK_DISABLED as the specification reads a boolean: `true` in any case, else `false` (or a TypeError). */
function sdkDisabled(env) {
  const value = text(env, 'OTEL_SDK_DISABLED')
  if (value === undefined || value.toLowerCase() === 'false') return false
  if (value.toLowerCase() === 'true') return true
  throw new TypeError(`${API}: OTEL_SDK_DISABLED must be true or false, got ${JSON.stringify(value)}`)
}

/** otlpExporter's options from the OpenTelemetry variables, or null when no OTLP endpoint is set. */
function otlpOf(env) {
  const specific = text(env, 'OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT')
  const generic = text(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  if (specific === undefined && generic === undefined) return null
  if (sdkDisabled(env)) return null
  const [protocolName, protocol] = first(env, ['OTEL_EXPORTER_OTLP_PROFILES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'])
  if (protocol !== undefined && protocol !== 'http/protobuf') {
    throw new RangeError(
      `${API}: ${protocolName} is ${JSON.stringify(protocol)}: jsprof-node pushes OTLP as http/protobuf only`,
    )
  }
  let url
  if (specific !== undefined) {
    url = urlOf('OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT', specific)
  } else {
    // The signal's path relative to the base URL: the base's path ends with exactly one slash first.
    const { OTLP_PROFILES_PATH } = require('../api/backend')
    url = urlOf('OTEL_EXPORTER_OTLP_ENDPOINT', generic)
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/${OTLP_PROFILES_PATH}`
  }
  const attributes = text(env, 'OTEL_RESOURCE_ATTRIBUTES')
  const resource =
    attributes === undefined ? {} : keyValueList('OTEL_RESOURCE_ATTRIBUTES', attributes, { strict: true })
  const serviceName = text(env, 'OTEL_SERVICE_NAME')
  if (serviceName !== undefined) resource['service.name'] = serviceName
  return {
    url: url.href,
    exactUrl: true,
    headers: headersOf(env, ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_PROFILES_HEADERS']),
    resource,
    // For messages about the exporter's own checks.
    from: 'the OTEL_* variables',
  }
}

/** pyroscopeExporter's options from Pyroscope's variables, or null when PYROSCOPE_SERVER_ADDRESS is unset. */
function pyroscopeOf(env) {
  const address = text(env, 'PYROSCOPE_SERVER_ADDRESS')
  if (address === undefined) return null
  const url = urlOf('PYROSCOPE_SERVER_ADDRESS', address)
  const headers = {}
  const token = text(env, 'PYROSCOPE_AUTH_TOKEN')
  const user = text(env, 'PYROSCOPE_BASIC_AUTH_USER')
  const password = text(env, 'PYROSCOPE_BASIC_AUTH_PASSWORD')
  const { checkHeaders } = require('../api/backend')
  // A token goes first, as @pyroscope/nodejs sends it; else basic auth, through the URL's user-info
  // (the exporter sends it and keeps it out of every message).
  if (token !== undefined) {
    headers.authorization = `Bearer ${token}`
    checkHeaders(API, headers, 'PYROSCOPE_AUTH_TOKEN')
  } else if (user !== undefined || password !== undefined) {
    url.username = encodeURIComponent(user ?? '')
    url.password = encodeURIComponent(password ?? '')
  }
  const tenant = text(env, 'PYROSCOPE_TENANT_ID')
  if (tenant !== undefined) {
    checkHeaders(API, { 'x-scope-orgid': tenant }, 'PYROSCOPE_TENANT_ID')
    headers['x-scope-orgid'] = tenant
  }
  const [nameVariable, appName] = first(env, ['PYROSCOPE_APPLICATION_NAME', 'OTEL_SERVICE_NAME'])
  return {
    url: url.href,
    appName: appName ?? DEFAULT_APP_NAME,
    headers,
    from: nameVariable ?? 'PYROSCOPE_SERVER_ADDRESS',
  }
}

/**
 * The register's configuration from `env`: `{ settings, otlp, pyroscope }` (settings by variable, the
 * register's defaults filled in; otlp and pyroscope the exporters' options, or null), or null when
 * nothing asks for profiling (no destination and no JSPROF_* setting; JSPROF_ENABLED=false;
 * OTEL_SDK_DISABLED=true with OTLP the only destination). Throws, naming the variable, on a bad value,
 * and when JSPROF_* settings are given without a destination.
 */
function readConfiguration(env) {
  const asked = DESTINATIONS.some((name) => text(env, name) !== undefined)
  // Nothing loaded unless something asks (an app without the variables pays for this check alone).
  if (!asked && !Object.keys(SETTINGS).some((name) => text(env, name) !== undefined)) return null
  // Switched off: nothing else is read (nor loaded).
  if (readEnvironment(API, env, { JSPROF_ENABLED: flag() }).JSPROF_ENABLED === false) return null
  const otlp = otlpOf(env)
  const pyroscope = pyroscopeOf(env)
  if (otlp === null && pyroscope === null) {
    if (asked) return null // OTEL_SDK_DISABLED=true
    throw new TypeError(
      `${API}: JSPROF_* settings but no destination: set OTEL_EXPORTER_OTLP_ENDPOINT ` +
        '(or OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT) or PYROSCOPE_SERVER_ADDRESS',
    )
  }
  const given = { ...DEFAULTS, ...readEnvironment(API, env, settings(), { prefix: 'JSPROF_' }) }
  return { settings: given, otlp, pyroscope }
}

module.exports = { readConfiguration, settings, DEFAULTS, DESTINATIONS, DEFAULT_APP_NAME, API, keyValueList }
