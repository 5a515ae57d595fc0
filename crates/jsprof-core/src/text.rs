//! Text that came from profiled code, made safe to show. Function names, URLs and paths in a profile
//! are written by code nobody here wrote (`eval` with `//# sourceURL=`, `Object.defineProperty(fn,
//! 'name', …)`), so every view that prints them — the SVG and HTML flame graphs, the CLI's tables and
//! messages — goes through this one rule rather than each writing its own.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal or an XML/HTML document as it is: C0 controls (tab
/// included: it breaks table columns), DEL, C1 controls, the characters XML 1.0 forbids
/// (U+FFFE, U+FFFF), marks and overrides that reorder text (U+200E/F, U+202A–E, U+2066–9, U+061C)
/// and the line/paragraph separators.
fn needs_escape(c: char) -> bool {
    matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}'
        | '\u{fffe}' | '\u{ffff}' | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `s` with every character of `needs_escape` written as a visible escape (`\x01`, `\u{202e}`); a
/// backslash itself stays as it is. The result is valid in XML 1.0 and HTML, is one line, and is
/// terminal-safe. Borrowed when nothing needed escaping (the usual case).
pub fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// [`visible`] text with XML/HTML markup escaped, for element text and attribute values.
pub fn markup(s: &str) -> String {
    let v = visible(s);
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// At most `max_chars` characters of [`visible`] `s`, with `…` where it was cut: how an error message
/// quotes a piece of bad input.
pub(crate) fn excerpt(s: &str, max_chars: usize) -> String {
    let v = visible(s);
    match v.char_indices().nth(max_chars) {
        None => v.into_owned(),
        Some((at, _)) => format!("{}…", &v[..at]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed() {
        assert!(matches!(visible("handler (app.js)"), Cow::Borrowed(_)));
    }

    #[test]
    fn controls_bidi_and_separators_become_visible_escapes() {
        assert_eq!(
            visible("a\x01b\x1b[2J\n\tc\x7f\u{85}"),
            "a\\x01b\\x1b[2J\\x0a\\x09c\\x7f\\x85"
        );
        assert_eq!(
            visible("x\u{202e}y\u{2066}\u{2028}\u{fffe}\u{61c}"),
            "x\\u{202e}y\\u{2066}\\u{2028}\\u{fffe}\\u{61c}"
        );
        assert_eq!(visible("caf\u{e9} \u{1f600} \\x01"), "caf\u{e9} \u{1f600} \\x01");
    }

    #[test]
    fn markup_is_escaped_after_controls() {
        assert_eq!(
            markup("<a href='x'>&\x00</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;\\x00&lt;/a&gt;"
        );
    }

    #[test]
    fn excerpt_cuts_on_characters_of_the_visible_text() {
        assert_eq!(excerpt("abc", 5), "abc");
        assert_eq!(excerpt("a\u{e9}\u{e9}\u{e9}", 2), "a\u{e9}…");
        assert_eq!(excerpt("\x1b\x1b", 1), "\\…");
    }
}
