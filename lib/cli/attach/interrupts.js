'use strict'
// The signals jsprof attach keeps while it runs: it must stay to close what it opened.

/**
 * Ctrl-C, SIGTERM and SIGHUP while attach runs: counted, never fatal (jsprof must stay to close what it
 * opened). The first stops the recording (or the wait for the inspector); a second one gives up
 * closing.
 */
function interrupts() {
  let count = 0
  const waiters = new Set()
  const on = () => {
    count++
    for (const w of waiters) w()
    waiters.clear()
  }
  // SIGHUP too: a closed terminal must not end jsprof before it closed what it opened (and a write
  // to that terminal failing is no reason to either).
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP']
  for (const s of signals) process.on(s, on)
  const ignore = () => {}
  process.stderr.on('error', ignore)
  return {
    get count() {
      return count
    },
    /** Resolves at the next signal. */
    next: () => new Promise((resolve) => waiters.add(resolve)),
    /** Waits `ms`, or less when a signal comes. */
    pause(ms) {
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, ms)
        waiters.add(wake)
      })
    },
    dispose() {
      for (const s of signals) process.removeListener(s, on)
      process.stderr.removeListener('error', ignore)
    },
  }
}

module.exports = { interrupts }
