//! napi exports of jsprof-core's one rule for showing text from a profile (`jsprof_core::text`), so
//! the CLI's tables, messages and diff pictures escape exactly as the flame graphs do.

use napi_derive::napi;

/// `text` with controls, bidi overrides and line separators written as visible escapes.
#[napi(catch_unwind)]
pub fn visible_text(text: String) -> String {
    jsprof_core::visible_text(&text).into_owned()
}

/// [`visible_text`] with XML/HTML markup escaped, for SVG/HTML text and attribute values.
#[napi(catch_unwind)]
pub fn markup_text(text: String) -> String {
    jsprof_core::markup_text(&text)
}
