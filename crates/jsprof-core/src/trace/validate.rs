//! The trace checks its own validity, as google/pprof's `Profile.CheckValid` does:
//! [`ProfilerTrace::from_json`] (text from JS or a file) ends in [`ProfilerTrace::validate`], and so does
//! every other road a trace comes in by (a `.cpuprofile` the CLI reads, source-mapped tables). The
//! exporters and source maps take a valid trace (every id in range, parents acyclic, times finite) and
//! index its tables without further checks.

use crate::error::{Error, Result};
use crate::json_text::lone_surrogates_visible;
use crate::trace::ProfilerTrace;

/// The furthest a sample may be from its trace's time origin, ms (31 years). Every output can hold
/// the times within it exactly: µs stay below 2^53 (cpuprofile `timeDeltas`, speedscope), ns within
/// an i64 (pprof), and no sum of durations overflows to infinity (`null` in JSON).
pub(crate) const MAX_TIMESTAMP_MS: f64 = 1e12;

impl ProfilerTrace {
    /// Parses and validates a trace given as JSON text (the JS facade passes `JSON.stringify(trace)`; the
    /// CLI a file's text).
    /// Every problem is a `Type` error: the value came from JS as an object, so a bad one has the wrong
    /// shape.
    pub fn from_json(json: &str) -> Result<ProfilerTrace> {
        let parse = |json: &str| serde_json::from_str::<ProfilerTrace>(json);
        let trace = match parse(json) {
            Ok(trace) => trace,
            Err(e) => match lone_surrogates_visible(json) {
                std::borrow::Cow::Owned(fixed) => parse(&fixed),
                std::borrow::Cow::Borrowed(_) => Err(e),
            }
            // Which value, by its path (`samples[1].timestamp: null where a number belongs`).
            .map_err(|e| {
                Error::invalid(format!(
                    "not a valid ProfilerTrace: {}",
                    crate::json_text::describe_error(json, &e)
                ))
            })?,
        };
        trace.validate()?;
        Ok(trace)
    }

    /// Checks what serde cannot: every id in range, stack parents acyclic, timestamps finite (within
    /// ±1e12 ms, see `MAX_TIMESTAMP_MS`), the `jsprof` member's values ([`super::Extension::validate`]). The one check of every trace that comes from outside, so the
    /// exporters, summaries and source maps can index the tables without further checks.
    pub fn validate(&self) -> Result<()> {
        let trace = self;
        let (resources, frames, stacks) = (trace.resources.len(), trace.frames.len(), trace.stacks.len());
        for (i, f) in trace.frames.iter().enumerate() {
            if let Some(r) = f.resource_id {
                if r as usize >= resources {
                    return Err(Error::invalid(format!(
                        "frames[{i}].resourceId {r} is out of range (the trace has {resources} resources)"
                    )));
                }
            }
        }
        for (i, s) in trace.stacks.iter().enumerate() {
            if s.frame_id as usize >= frames {
                return Err(Error::invalid(format!(
                    "stacks[{i}].frameId {} is out of range (the trace has {frames} frames)",
                    s.frame_id
                )));
            }
            if let Some(p) = s.parent_id {
                if p as usize >= stacks {
                    return Err(Error::invalid(format!(
                        "stacks[{i}].parentId {p} is out of range (the trace has {stacks} stacks)"
                    )));
                }
            }
        }
        check_acyclic(trace)?;
        if let Some(extension) = &trace.jsprof {
            extension.validate()?;
            if let Some(labels) = &extension.sample_labels {
                if labels.len() != trace.samples.len() {
                    return Err(Error::invalid(format!(
                        "jsprof.sampleLabels has {} entries; the trace has {} samples (one each)",
                        labels.len(),
                        trace.samples.len()
                    )));
                }
            }
        }
        for (i, s) in trace.samples.iter().enumerate() {
            if !s.timestamp.is_finite() {
                return Err(Error::invalid(format!(
                    "samples[{i}].timestamp is not a finite number"
                )));
            }
            if s.timestamp.abs() > MAX_TIMESTAMP_MS {
                return Err(Error::invalid(format!(
                    "samples[{i}].timestamp {:e} is further from the time origin than a trace can hold \
                     (±1e12 ms, 31 years)",
                    s.timestamp
                )));
            }
            if let Some(id) = s.stack_id {
                if id as usize >= stacks {
                    return Err(Error::invalid(format!(
                        "samples[{i}].stackId {id} is out of range (the trace has {stacks} stacks)"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Walks every parent chain once (colouring: 0 unvisited, 1 on the current walk, 2 known to end).
fn check_acyclic(trace: &ProfilerTrace) -> Result<()> {
    let mut state = vec![0u8; trace.stacks.len()];
    let mut walk = Vec::new();
    for start in 0..trace.stacks.len() {
        let mut cursor = Some(start);
        while let Some(i) = cursor {
            match state[i] {
                2 => break,
                1 => {
                    return Err(Error::invalid(format!(
                        "stacks[{i}] is its own ancestor (a parentId cycle)"
                    )))
                }
                _ => {}
            }
            state[i] = 1;
            walk.push(i);
            cursor = trace.stacks[i].parent_id.map(|p| p as usize);
        }
        for i in walk.drain(..) {
            state[i] = 2;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;

    fn err(json: &str) -> String {
        let e = ProfilerTrace::from_json(json).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Type);
        e.message
    }

    #[test]
    fn accepts_a_valid_trace() {
        let json = serde_json::to_string(&sample_trace()).unwrap();
        assert_eq!(ProfilerTrace::from_json(&json).unwrap(), sample_trace());
    }

    #[test]
    fn rejects_ids_out_of_range_and_cycles() {
        let base = r#""resources":["a"],"frames":[{"name":"f","resourceId":0}]"#;
        assert!(
            err(r#"{"resources":[],"frames":[{"name":"f","resourceId":0}],"stacks":[],"samples":[]}"#)
                .contains("frames[0].resourceId 0 is out of range")
        );
        assert!(
            err(&format!(r#"{{{base},"stacks":[{{"frameId":1}}],"samples":[]}}"#))
                .contains("stacks[0].frameId 1")
        );
        assert!(err(&format!(
            r#"{{{base},"stacks":[{{"frameId":0,"parentId":3}}],"samples":[]}}"#
        ))
        .contains("stacks[0].parentId 3"));
        assert!(err(&format!(
            r#"{{{base},"stacks":[{{"frameId":0}}],"samples":[{{"timestamp":1,"stackId":1}}]}}"#
        ))
        .contains("samples[0].stackId 1"));
        let cycle = format!(
            r#"{{{base},"stacks":[{{"frameId":0}},{{"frameId":0,"parentId":2}},{{"frameId":0,"parentId":1}}],"samples":[]}}"#
        );
        assert!(err(&cycle).contains("parentId cycle"));
        let self_loop = format!(r#"{{{base},"stacks":[{{"frameId":0,"parentId":0}}],"samples":[]}}"#);
        assert!(err(&self_loop).contains("parentId cycle"));
    }

    #[test]
    fn reads_lone_surrogates_as_visible_text() {
        let json = r#"{"resources":[],"frames":[{"name":"a\ud800b\udc00c\ud83d\ude00\\ud800\u00e9"}],"stacks":[],"samples":[]}"#;
        let trace = ProfilerTrace::from_json(json).unwrap();
        assert_eq!(
            trace.frames[0].name,
            "a\\u{d800}b\\u{dc00}c\u{1f600}\\ud800\u{e9}"
        );
    }

    #[test]
    fn rejects_wrong_shapes() {
        assert!(err(r#"{"resources":[],"frames":[],"stacks":[]}"#).contains("samples"));
        assert!(
            err(r#"{"resources":[],"frames":[{"name":"f","line":-1}],"stacks":[],"samples":[]}"#)
                .contains("not a valid ProfilerTrace")
        );
        assert!(
            err(r#"{"resources":[],"frames":[],"stacks":[],"samples":[{"timestamp":null}]}"#)
                .contains("not a valid ProfilerTrace")
        );
        assert!(err("[]").contains("not a valid ProfilerTrace"));
        assert!(err("{").contains("not a valid ProfilerTrace"));
    }
}
