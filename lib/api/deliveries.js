'use strict'
// How a stop() waits for what its deliveries (onStall, onChunk) return: at most a deadline, so a
// callback whose promise never settles cannot hang a shutdown (watchStalls, startContinuous).

/**
 * Waits for the promises in `pending` (a Set each removes itself from once settled; more may join
 * meanwhile) for at most `ms`. Returns how many were still pending then; those are forgotten.
 */
async function settleWithin(pending, ms) {
  if (pending.size === 0) return 0
  let timer
  const deadline = new Promise((resolve) => {
    timer = setTimeout(resolve, ms, true)
  })
  try {
    while (pending.size > 0) {
      const late = await Promise.race([Promise.all([...pending]).then(() => false), deadline])
      if (late) break
    }
  } finally {
    clearTimeout(timer)
  }
  const left = pending.size
  pending.clear()
  return left
}

module.exports = { settleWithin }
