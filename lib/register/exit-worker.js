'use strict'
// jsprof-node/register's last push when the process ends in its synchronous 'exit' event (process.exit(),
// an uncaught exception, an app's own signal handler that exits): the main thread gets no more turns of
// its event loop, so it builds the requests and waits (Atomics.wait, bounded) while this thread sends
// them through the exporters' transport (deadline, proxies, credentials), then says it is done.

const { workerData } = require('node:worker_threads')
const { Transport } = require('../api/backend/transport')

const { requests, timeoutMs, done } = workerData
const flag = new Int32Array(done)
const transport = new Transport({ who: 'jsprof-node/register', timeoutMs })
Promise.allSettled(
  requests.map(({ url, headers, body, credentials }) =>
    transport.post(new URL(url), { headers, body: Buffer.from(body), credentials }),
  ),
).then(() => {
  Atomics.store(flag, 0, 1)
  Atomics.notify(flag, 0)
  transport.close()
})
