'use strict'
// Text from a profile made safe to show, for every text view in JS (CLI tables, messages, the diff
// SVG). The rule itself lives once, in Rust (jsprof-core text.rs), shared with the flame graphs.

// The addon loads on first use, so a CLI command that never shows a name does not pay for it.
const binding = () => require('./native').binding

/** `text` with C0/C1 controls, DEL, bidi overrides and line separators as visible escapes (`\x1b`). */
const visible = (text) => binding().visibleText(String(text))

/** `visible(text)` with XML/HTML markup escaped, for SVG/HTML element text and attribute values. */
const markup = (text) => binding().markupText(String(text))

module.exports = { visible, markup }
