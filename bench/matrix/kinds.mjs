// The matrix's servers (bench/matrix/server.js): the path the load generator asks of each kind.
export const PATHS = {
  'http-sync': '/api/orders/7',
  'http-async': '/api/orders/7',
  express: '/api/orders/7',
  fastify: '/api/orders/7',
}
