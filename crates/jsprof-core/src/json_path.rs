//! Where in a JSON document a parse failed, in the document's own terms: serde_json says "invalid
//! type: null, expected f64 at line 1 column 93"; a user needs "samples[1].timestamp is null, not a
//! number". One linear scan up to the error's position gives the path of the value there.

/// The path (`samples[1].timestamp`) of the value at byte `offset` of `text`; "" at the top level.
pub fn path_at(text: &str, offset: usize) -> String {
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
    let mut path = String::new();
    for level in &stack {
        match level {
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
pub fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// serde_json's error about a value of `text`, in the user's terms: the path of the value and what
/// was wrong with it (`samples[1].timestamp: null where a number belongs`).
pub fn describe_error(text: &str, e: &serde_json::Error) -> String {
    let path = path_at(text, offset_of(text, e.line(), e.column()));
    let raw = e.to_string();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_path_of_the_failing_value() {
        let text = r#"{"resources":[],"samples":[{"timestamp":1,"stackId":0},{"timestamp":null}]}"#;
        let at = text.find("null").unwrap();
        assert_eq!(path_at(text, at), "samples[1].timestamp");
        assert_eq!(path_at(r#"{"a":"x,[{","b":[1,2,"#, 19), "b[1]");
        assert_eq!(path_at("[", 1), "[0]");
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
    }
}
