'use strict'
// Text from a profile made safe to show, for every text view in JS (CLI tables, messages, the diff
// SVG). The rule itself lives once, in Rust (jsprof-core text.rs), shared with the flame graphs.

// The addon loads on first use, so a CLI command that never shows a name does not pay for it.
const binding = () => require('./native').binding

// Printable ASCII never needs an escape under that rule: such text (most CLI messages: `jsprof record`
// ends with one) is shown as it is, without loading the addon into a process that needs it for nothing else.
const PLAIN = /^[\x20-\x7e]*$/

/** `text` with C0/C1 controls, DEL, bidi overrides and line separators as visible escapes (`\x1b`). */
const visible = (text) => {
  const s = String(text)
  return PLAIN.test(s) ? s : binding().visibleText(s)
}

/** `visible(text)` with XML/HTML markup escaped, for SVG/HTML element text and attribute values. */
const markup = (text) => binding().markupText(String(text))

module.exports = { visible, markup }
