// The matrix's servers (bench/matrix/server.js): the path the load generator asks of each kind, and
// the load generator's command line (autocannon in a process of its own, JSON on stdout), one for
// run.mjs, perf.mjs and gc.mjs.
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const PATHS = {
  'http-sync': '/api/orders/7',
  'http-async': '/api/orders/7',
  express: '/api/orders/7',
  fastify: '/api/orders/7',
}

const AUTOCANNON = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'node_modules',
  'autocannon',
  'autocannon.js',
)

/** The arguments (after `node`) of autocannon loading a `kind` server on `port`: JSON of its figures on stdout. */
export function loadArgs(kind, port, connections, seconds) {
  return [AUTOCANNON, '-c', String(connections), '-d', String(seconds), '-j', `http://127.0.0.1:${port}${PATHS[kind]}`]
}
