//! A profile file as the CLI reads it (`jsprof report`, `convert`, `flamegraph`, `diff`): a
//! ProfilerTrace's JSON (as `jsprof record` writes it, with its `jsprof` member) or a V8 CPU profile
//! (`.cpuprofile`, or the inspector's `{ "profile": … }` reply), told apart by content: a `nodes` array
//! makes a V8 profile. [`read_profile_file`] reads the text once more than the format's own reader at
//! most, validates it by that format's one check (`ProfilerTrace::from_json`, or the V8 conversion then
//! `ProfilerTrace::validate`) and says what is wrong in one line.
//!
//! CONTRACT: an error's message is what follows the file's name in the CLI's message (`<file> is not
//! valid JSON (…)`, `<file> is not a valid ProfilerTrace: …`); its kind is `Syntax` for text that is not
//! JSON, `Type` otherwise.

use std::borrow::Cow;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::convert::trace_from_json;
use crate::error::{Error, Result};
use crate::json_text::{describe_error, lone_surrogates_visible};
use crate::trace::ProfilerTrace;

/// Which of the two formats a file held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// A ProfilerTrace.
    Trace,
    /// A V8 CPU profile, converted by `fromCpuProfile`'s rules (times from its `startTime`).
    CpuProfile,
}

/// What a profile file held: the trace (a trace file's `jsprof` member in it, read and checked with
/// the trace: `crate::Extension`) and which format it came in.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileFile {
    pub trace: ProfilerTrace,
    pub format: FileFormat,
}

/// Reads a profile file's text (see the module's contract).
pub fn read_profile_file(text: &str) -> Result<ProfileFile> {
    let cpu_profile = |trace| ProfileFile {
        trace,
        format: FileFormat::CpuProfile,
    };
    // A V8 profile goes to the one pass first: ten million samples are read once, not twice.
    let mut as_v8 = None;
    if memchr::memmem::find(text.as_bytes(), b"\"nodes\"").is_some() {
        match v8_trace(text) {
            Ok(trace) => return Ok(cpu_profile(trace)),
            Err(e) => as_v8 = Some(e),
        }
    }
    let outline = Outline::of(text)?;
    if !outline.object {
        return Err(Error::invalid(
            "is neither a ProfilerTrace nor a V8 CPU profile (not a JSON object)",
        ));
    }
    if outline.nodes_array {
        let error = match as_v8 {
            Some(e) => e,
            None => match v8_trace(text) {
                Ok(trace) => return Ok(cpu_profile(trace)),
                Err(e) => e,
            },
        };
        let reason = error
            .message
            .strip_prefix("invalid V8 CPU profile: ")
            .unwrap_or(&error.message);
        return Err(Error::invalid(format!("is not a valid V8 CPU profile: {reason}")));
    }
    if !outline.trace_members {
        return Err(Error::invalid(
            "is neither a ProfilerTrace (resources, frames, stacks, samples) nor a V8 CPU profile \
             (nodes, samples)",
        ));
    }
    let trace = ProfilerTrace::from_json(text).map_err(|e| {
        let reason = e
            .message
            .strip_prefix("not a valid ProfilerTrace: ")
            .unwrap_or(&e.message);
        Error::invalid(format!("is not a valid ProfilerTrace: {reason}"))
    })?;
    Ok(ProfileFile {
        trace,
        format: FileFormat::Trace,
    })
}

/// A V8 profile's trace, valid as a trace (the conversion keeps every id in range; a timestamp can
/// still be too far from the time origin for a trace to hold).
fn v8_trace(text: &str) -> Result<ProfilerTrace> {
    let trace = trace_from_json(text, None, None)?;
    trace.validate()?;
    Ok(trace)
}

/// What the top level of a JSON text is, read without keeping anything else: whether it is an object,
/// whether its `nodes` is an array, whether it has any of a trace's members. A member given twice counts
/// as its last value, as `JSON.parse` reads it.
#[derive(Debug, Default)]
struct Outline {
    object: bool,
    nodes_array: bool,
    trace_members: bool,
}

impl Outline {
    /// The outline of `text`, or a `Syntax` error when it is not JSON.
    fn of(text: &str) -> Result<Outline> {
        let read = |text: &str| -> serde_json::Result<Outline> {
            let mut de = serde_json::Deserializer::from_str(text);
            let outline = OutlineSeed.deserialize(&mut de)?;
            de.end()?;
            Ok(outline)
        };
        let e = match read(text) {
            Ok(outline) => return Ok(outline),
            Err(e) => e,
        };
        // Lone surrogate escapes (`JSON.stringify` writes them) are JSON all the same.
        if let Cow::Owned(fixed) = lone_surrogates_visible(text) {
            if let Ok(outline) = read(&fixed) {
                return Ok(outline);
            }
        }
        // Where, by the path and by line and column (JSON.parse, which the CLI used, gave a position).
        Err(Error::syntax(format!(
            "is not valid JSON ({}, at line {} column {})",
            describe_error(text, &e),
            e.line(),
            e.column()
        )))
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Member {
    Nodes,
    Resources,
    Frames,
    Stacks,
    Samples,
    #[serde(other)]
    Other,
}

struct OutlineSeed;

impl<'de> DeserializeSeed<'de> for OutlineSeed {
    type Value = Outline;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Outline, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The value is not an object: consume it, keep nothing.
macro_rules! not_an_object {
    ($($name:ident: $t:ty),*) => {
        $(fn $name<E: de::Error>(self, _: $t) -> std::result::Result<Self::Value, E> {
            Ok(Default::default())
        })*
    };
}

impl<'de> Visitor<'de> for OutlineSeed {
    type Value = Outline;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    not_an_object!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Outline, E> {
        Ok(Outline::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Outline, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Outline::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Outline, A::Error> {
        let mut outline = Outline {
            object: true,
            ..Outline::default()
        };
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Nodes => outline.nodes_array = map.next_value_seed(IsArray)?,
                Member::Resources | Member::Frames | Member::Stacks | Member::Samples => {
                    outline.trace_members = true;
                    map.next_value::<IgnoredAny>()?;
                }
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(outline)
    }
}

/// Whether a value is an array (its contents skipped).
struct IsArray;

impl<'de> DeserializeSeed<'de> for IsArray {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IsArray {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    not_an_object!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);

    fn visit_unit<E: de::Error>(self) -> std::result::Result<bool, E> {
        Ok(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(true)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::trace::tests::sample_trace;

    const V8: &str = r#"{"nodes":[
        {"id":1,"callFrame":{"functionName":"(root)","url":""},"children":[2]},
        {"id":2,"callFrame":{"functionName":"main","url":"file:///a.js","lineNumber":0,"columnNumber":0}}],
        "startTime":1000,"endTime":2000,"samples":[2,2],"timeDeltas":[10,20]}"#;

    fn err(text: &str) -> Error {
        read_profile_file(text).unwrap_err()
    }

    #[test]
    fn tells_a_trace_from_a_v8_profile_by_content() {
        let v8 = read_profile_file(V8).unwrap();
        assert_eq!(v8.format, FileFormat::CpuProfile);
        assert_eq!(v8.trace, trace_from_json(V8, None, None).unwrap());
        assert_eq!(v8.trace.jsprof, None);
        // The inspector's reply, and a key written with an escape (no `"nodes"` in the text).
        let wrapped = format!("{{\"profile\":{V8}}}");
        assert_eq!(
            read_profile_file(&wrapped).unwrap().format,
            FileFormat::CpuProfile
        );
        let escaped = V8.replacen("\"nodes\"", "\"\\u006eodes\"", 1);
        assert_eq!(read_profile_file(&escaped).unwrap().trace, v8.trace);

        let json = serde_json::to_string(&sample_trace()).unwrap();
        let trace = read_profile_file(&json).unwrap();
        assert_eq!(trace.format, FileFormat::Trace);
        assert_eq!(trace.trace, sample_trace());
        assert_eq!(trace.trace.jsprof, None);
        // A trace whose frame is named "nodes" is still a trace.
        let named = json.replacen("\"main\"", "\"nodes\"", 1);
        assert_eq!(read_profile_file(&named).unwrap().format, FileFormat::Trace);
    }

    #[test]
    fn a_trace_files_jsprof_member_is_read_and_checked_with_the_trace() {
        let json = serde_json::to_string(&sample_trace()).unwrap();
        let with = |jsprof: &str| read_profile_file(&format!("{{\"jsprof\":{jsprof},{}", &json[1..]));
        let read = with(r#"{"pid":42,"threadId":0,"timeOrigin":1732012345678.1235}"#).unwrap();
        assert_eq!(
            read.trace.jsprof,
            Some(crate::Extension::clock(
                Some(42),
                Some(0),
                Some(1732012345678.1235)
            ))
        );
        assert_eq!(with("null").unwrap().trace.jsprof, None);
        let e = with(r#"{"pid":"42"}"#).unwrap_err();
        assert_eq!(
            e.message,
            r#"is not a valid ProfilerTrace: jsprof.pid: string "42" where a number belongs"#
        );
        let e = with(r#"{"timeOrigin":1e400}"#).unwrap_err();
        assert!(e.message.contains("jsprof.timeOrigin"), "{}", e.message);
        // Twice: the last one, as JSON.parse keeps it.
        let twice = with(r#"{"pid":1},"jsprof":{"pid":2}"#);
        assert!(twice.is_err() || twice.unwrap().trace.jsprof.unwrap().pid == Some(2));
    }

    #[test]
    fn says_what_is_wrong_in_one_line() {
        let e = err(r#"{"resources": ["#);
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert_eq!(
            e.message,
            "is not valid JSON (resources: EOF while parsing a list, at line 1 column 15)"
        );
        for text in ["[1, 2, 3]", "3", "\"nodes\"", "null", r#"["nodes"]"#] {
            let e = err(text);
            assert_eq!(e.kind, ErrorKind::Type);
            assert_eq!(
                e.message, "is neither a ProfilerTrace nor a V8 CPU profile (not a JSON object)",
                "{text}"
            );
        }
        let e = err(r#"{"hello": "world", "nodes": {}}"#);
        assert!(e
            .message
            .starts_with("is neither a ProfilerTrace (resources, frames, stacks, samples)"));
        let e = err(r#"{"nodes":[{"id":"x"}],"samples":[],"timeDeltas":[]}"#);
        assert!(
            e.message.starts_with("is not a valid V8 CPU profile: nodes[0]"),
            "{}",
            e.message
        );
        let e = err(r#"{"resources":[],"frames":[],"stacks":[{"frameId":1000000}],"samples":[]}"#);
        assert_eq!(
            e.message,
            "is not a valid ProfilerTrace: stacks[0].frameId 1000000 is out of range (the trace has 0 frames)"
        );
        let e = err(
            r#"{"resources":[],"frames":[{"name":"f"}],"stacks":[{"frameId":0,"parentId":1},{"frameId":0,"parentId":0}],"samples":[]}"#,
        );
        assert!(e.message.contains("is its own ancestor"), "{}", e.message);
        let e = err(r#"{"resources":[],"frames":[],"stacks":[],"samples":{}}"#);
        assert_eq!(
            e.message,
            "is not a valid ProfilerTrace: samples: an object where an array belongs"
        );
        assert_eq!(
            err("{\"samples\":[]} x").message,
            "is not valid JSON (trailing characters, at line 1 column 16)"
        );
        let e = err(r#"{"resources":[],"frames":[],"stacks":[]}"#);
        assert_eq!(e.message, "is not a valid ProfilerTrace: missing field `samples`");
    }

    #[test]
    fn lone_surrogates_are_json_too() {
        let text =
            r#"{"resources":[],"frames":[{"name":"a\ud800"}],"stacks":[],"samples":[],"jsprof":{"pid":7}}"#;
        let file = read_profile_file(text).unwrap();
        assert_eq!(file.trace.frames[0].name, "a\\u{d800}");
        assert_eq!(file.trace.jsprof.unwrap().pid, Some(7));
    }
}
