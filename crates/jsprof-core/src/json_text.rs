//! What both JSON readers (V8 profiles and ProfilerTraces) do with text serde_json refused: say where
//! the parse failed in the document's own terms ([`describe_error`]: serde_json says `invalid type:
//! null, expected f64 at line 1 column 93`, a user needs `samples[1].timestamp: null where a number
//! belongs`; one linear scan up to the error's position gives the path), and read lone surrogate
//! escapes, which `JSON.stringify` writes and serde_json refuses, as visible text
//! ([`lone_surrogates_visible`]).

/// The path (`samples[1].timestamp`) of the value at byte `offset` of `text`; "" at the top level.
/// Without the innermost object's member when `member` is false: the path of the object itself (where
/// serde says a member is missing, its offset is the object's end, after the last member).
fn path_at(text: &str, offset: usize, member: bool) -> String {
    enum Level {
        Object {
            key: Option<String>,
            expecting_key: bool,
        },
        Array {
            index: usize,
        },
    }
    let bytes = text.as_bytes();
    let end = offset.min(bytes.len());
    let mut stack: Vec<Level> = Vec::new();
    let mut i = 0;
    while i < end {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Level::Object {
                    key,
                    expecting_key: true,
                }) = stack.last_mut()
                {
                    *key = Some(text.get(start..i.min(bytes.len())).unwrap_or("").to_owned());
                }
            }
            b'{' => stack.push(Level::Object {
                key: None,
                expecting_key: true,
            }),
            b'[' => stack.push(Level::Array { index: 0 }),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(Level::Object { expecting_key, .. }) = stack.last_mut() {
                    *expecting_key = false;
                }
            }
            b',' => match stack.last_mut() {
                Some(Level::Array { index }) => *index += 1,
                Some(Level::Object { key, expecting_key }) => {
                    *key = None;
                    *expecting_key = true;
                }
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let innermost = stack.len().checked_sub(1);
    let mut path = String::new();
    for (depth, level) in stack.iter().enumerate() {
        match level {
            Level::Object { key: Some(_), .. } if !member && Some(depth) == innermost => {}
            Level::Object { key: Some(key), .. } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&crate::text::excerpt(key, 40));
            }
            Level::Object { key: None, .. } => {}
            Level::Array { index } => path.push_str(&format!("[{index}]")),
        }
    }
    path
}

/// The byte offset of serde_json's (1-based) line and column in `text`.
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// serde_json's error about a value of `text`, in the user's terms: the path of the value and what
/// was wrong with it (`samples[1].timestamp: null where a number belongs`).
pub(crate) fn describe_error(text: &str, e: &serde_json::Error) -> String {
    let raw = e.to_string();
    let member = !raw.starts_with("missing field ");
    let path = path_at(text, offset_of(text, e.line(), e.column()), member);
    let what = raw
        .rsplit_once(" at line ")
        .map_or(raw.as_str(), |(what, _)| what);
    let what = match what
        .strip_prefix("invalid type: ")
        .and_then(|w| w.split_once(", expected "))
    {
        Some((found, expected)) => {
            // serde's words in JSON's.
            let found = match found {
                "map" => "an object".to_owned(),
                "sequence" => "an array".to_owned(),
                other => crate::text::excerpt(other, 60),
            };
            let expected = match expected {
                "f64" | "i64" | "u64" | "u32" | "i32" | "u8" => "a number",
                "a string" | "a borrowed string" => "a string",
                "a sequence" => "an array",
                e if e == "a map" || e.starts_with("struct ") => "an object",
                other => other,
            };
            format!("{found} where {expected} belongs")
        }
        None => crate::text::excerpt(what, 120),
    };
    if path.is_empty() {
        what
    } else {
        format!("{path}: {what}")
    }
}

/// JSON text with each lone surrogate escape (`\ud800` with no partner: `JSON.stringify` writes them for
/// JS strings that are not well-formed UTF-16, and serde_json rejects them) replaced by the visible text
/// `\u{d800}`, as [`crate::text::visible`] writes other characters no output may hold. Borrowed as is
/// when there is none. The readers call it only after serde_json failed, so good text pays nothing.
pub(crate) fn lone_surrogates_visible(json: &str) -> std::borrow::Cow<'_, str> {
    let bytes = json.as_bytes();
    let hex = |at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(at) = bytes.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + at;
        if bytes.get(at + 1) != Some(&b'u') {
            i = at + 2; // \\, \", \n…: never the start of a \u escape
            continue;
        }
        let Some(code) = hex(at + 2) else {
            i = at + 2;
            continue;
        };
        let paired = (0xD800..=0xDBFF).contains(&code)
            && bytes.get(at + 6..at + 8) == Some(&b"\\u"[..])
            && hex(at + 8).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        if paired {
            i = at + 12;
        } else if (0xD800..=0xDFFF).contains(&code) {
            let out = out.get_or_insert_with(|| String::with_capacity(json.len() + 16));
            out.push_str(&json[copied..at]);
            out.push_str(&format!("\\\\u{{{code:x}}}"));
            copied = at + 6;
            i = at + 6;
        } else {
            i = at + 6;
        }
    }
    match out {
        None => std::borrow::Cow::Borrowed(json),
        Some(mut out) => {
            out.push_str(&json[copied..]);
            std::borrow::Cow::Owned(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_path_of_the_failing_value() {
        let text = r#"{"resources":[],"samples":[{"timestamp":1,"stackId":0},{"timestamp":null}]}"#;
        let at = text.find("null").unwrap();
        assert_eq!(path_at(text, at, true), "samples[1].timestamp");
        assert_eq!(path_at(r#"{"a":"x,[{","b":[1,2,"#, 19, true), "b[1]");
        assert_eq!(path_at("[", 1, true), "[0]");
    }

    #[test]
    fn describes_serde_errors_in_the_documents_terms() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct S {
            timestamp: f64,
        }
        let text = r#"{"samples":[{"timestamp":1},{"timestamp":"x"}]}"#;
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            samples: Vec<S>,
        }
        let e = serde_json::from_str::<T>(text).unwrap_err();
        assert_eq!(
            describe_error(text, &e),
            r#"samples[1].timestamp: string "x" where a number belongs"#
        );
        // A missing member is the object's problem, not its last member's.
        let text = r#"{"samples":[{"timestamp":1},{"stackId":2}]}"#;
        let e = serde_json::from_str::<T>(text).unwrap_err();
        assert_eq!(describe_error(text, &e), "samples[1]: missing field `timestamp`");
        let e = serde_json::from_str::<T>(r#"{"x":[1]}"#).unwrap_err();
        assert_eq!(describe_error(r#"{"x":[1]}"#, &e), "missing field `samples`");
    }

    #[test]
    fn lone_surrogates_become_visible_text_and_pairs_stay() {
        let plain = r#"{"a":"\n\u0041"}"#;
        assert!(matches!(
            lone_surrogates_visible(plain),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(lone_surrogates_visible(r#""\udbff\u""#), r#""\\u{dbff}\u""#);
        assert_eq!(lone_surrogates_visible(r#""\ud800"#), r#""\\u{d800}"#);
    }
}
