'use strict'
// Closing an inspector: the one jsprof attach caused to open (on every way out, retried until it is
// closed and stays closed, the process is gone, the deadline passes or a second Ctrl-C comes), and
// `jsprof attach --close <pid>`, which closes whatever inspector the process has open.

const { CliError, info } = require('../common')
const { connect, LIST_MAX_BYTES } = require('./cdp')
const { listening, newSince, findInspector, inspectOptions, alive, procState } = require('./target')

// How long jsprof keeps closing an inspector it caused to open (a blocked main thread opens it late);
// JSPROF_ATTACH_CLOSE_DEADLINE_MS changes it (the tests' way to reach the deadline quickly).
const CLOSE_DEADLINE_MS = (() => {
  const ms = Number(process.env.JSPROF_ATTACH_CLOSE_DEADLINE_MS)
  return ms > 0 && ms <= 3600_000 ? ms : 30_000
})()
// The port must stay closed this long (a spinning process reopens it once when it yields).
const CLOSE_SETTLE_MS = 300

// Closes the inspector from inside, at once (an event-loop turn would never come in a spinning
// process); the connection this runs on closes with it, so no answer is expected. And once more on
// the next turn of the loop: SIGUSR1 also queued an event-loop callback that opens the inspector,
// which a spinning process runs only when it yields, reopening it (it runs in the poll phase, this
// in the check phase of the same turn).
const CLOSE = `(() => { const end = () => { if (typeof process._debugEnd === 'function') return process._debugEnd()
    const m = typeof process.getBuiltinModule === 'function' ? process.getBuiltinModule('node:inspector') : process.mainModule && process.mainModule.require('node:inspector')
    if (m) m.close() }
  setImmediate(end); end() })()`

/**
 * Keeps closing the inspector jsprof caused pid to open until it is closed (and stays closed for a
 * moment), the process is gone, the deadline passes or a second Ctrl-C comes. `known`: the inspector
 * found (`{ host, port }`), else any socket the process opens that was not in `before` is looked at.
 * `cdp`: a connection to reuse. Returns `{ closed, port }`.
 */
async function closeInspector({ pid, before, known, cdp, deadline, intr, maxPayload }) {
  const isNew = newSince(before)
  let conn = cdp && cdp.open ? cdp : null
  let sentOn = null
  let seenOpen = Boolean(known)
  let closedSince = null
  let port = known ? known.port : null
  try {
    for (;;) {
      if (!alive(pid) || procState(pid) === 'Z') return { closed: true, port }
      const open = listening(pid).filter((s) => (known ? s.port === known.port : isNew(s)))
      if (open.length === 0) {
        if (seenOpen) {
          closedSince ??= Date.now()
          if (Date.now() - closedSince >= CLOSE_SETTLE_MS) return { closed: true, port }
        }
      } else {
        closedSince = null
        seenOpen = true
        port = open[0].port
        if (!conn || !conn.open) {
          conn = null
          const found = await findInspector(open)
          if (found) {
            try {
              conn = await connect(found.url, { maxPayload })
            } catch {
              // Not up yet, or gone: the next round tries again.
            }
          }
        }
        if (conn && sentOn !== conn) {
          conn.post('Runtime.evaluate', { expression: CLOSE, silent: true })
          sentOn = conn
        }
      }
      if (Date.now() >= deadline || intr.count >= 2) return { closed: false, port }
      await intr.pause(100)
    }
  } finally {
    if (conn) conn.close()
  }
}

/** The loud message for an inspector jsprof could not close. */
function leftOpen(pid, port, cause) {
  const where = port ? `on port ${port}` : 'on its --inspect-port (default 127.0.0.1:9229)'
  return (
    `WARNING: the inspector of pid ${pid} that jsprof opened may still be open, or open later, ${where}` +
    `${cause ? ` (${cause})` : ''}: while it is open any local user can run code in that process. ` +
    `Close it with 'jsprof attach --close ${pid}' once it is open, or restart the process`
  )
}

/** `jsprof attach --close <pid>`: closes the inspector the process has open, whoever opened it. */
async function closeCommand(pid, intr) {
  const options = inspectOptions(pid)
  const sockets = listening(pid).filter((s) => options.port === 0 || s.port === options.port || options.open)
  const found = await findInspector(sockets.length ? sockets : listening(pid))
  if (!found) {
    info(`pid ${pid} has no inspector open`)
    return 0
  }
  const r = await closeInspector({
    pid,
    before: [],
    known: found,
    cdp: null,
    deadline: Date.now() + CLOSE_DEADLINE_MS,
    intr,
    maxPayload: LIST_MAX_BYTES,
  })
  if (!r.closed) throw new CliError(leftOpen(pid, found.port, 'it did not close when asked'), 1)
  info(`closed the inspector of pid ${pid} on port ${found.port}`)
  return 0
}

module.exports = { closeInspector, closeCommand, leftOpen, CLOSE_DEADLINE_MS }
