// Talking to a benchmark's server process (bench/server/server.js, bench/matrix/server.js) over its IPC
// channel: one way to ask, one way to read what its report says.

/** Sends `message` to the forked `child` and resolves with its next message (its answer). */
export const ask = (child, message) =>
  new Promise((resolve) => {
    child.once('message', resolve)
    child.send(message)
  })

/**
 * The line that says how many requests' code saw span labels (the OpenTelemetry modes' check that
 * span ids reached the code), or null for a report of a mode that does not check.
 */
export const spanLabelsLine = (mode, report) =>
  report?.spanChecked === undefined
    ? null
    : `${mode}: requests whose code saw span labels: ${report.spanLabelled} of ${report.spanChecked} checked`
