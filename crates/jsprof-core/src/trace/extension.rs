//! The trace's extension member `jsprof`: what jsprof-node knows of a trace beyond the spec's four
//! members, in the one member beside them (`frames, jsprof, resources, samples, stacks`: WebIDL's
//! lexicographic order). Every field is optional; a trace without the member is a plain spec trace.
//!
//! - `pid`, `threadId`, `timeOrigin`: the recording's clock (`jsprof record`, `attach`, request
//!   profiles, continuous chunks): the Unix epoch (ms) of the `performance.timeOrigin` the timestamps
//!   count from, so exports show real clock times.
//! - `sampleInterval`, `windows`: what weighing a trace needs beyond its samples' times (see
//!   [`super::weights`]): the interval the samples were kept at (for a trace with too few samples to
//!   show V8's rate), and, for a trace cut out of a longer run (a request profile), the contiguous
//!   windows its samples were kept from.
//! - `labelSets`, `labelsDropped`, `sampleLabels`: the labels the samples were taken under (see
//!   [`super::labels`]): a table of distinct label sets, how many samples lost theirs (the recorder's
//!   cap of distinct sets), and
//!   one index into the table per sample (`null`: no labels).
//!
//! - `stall`: a stall trace's event-loop stall (`watchStalls`): when the stalled turn began, how long
//!   it ran, whether it ended before the trace was taken, the threshold, the stack at the detection
//!   and how late that stack was taken.
//!
//! Parsed and checked with the trace ([`Extension::validate`], called by `ProfilerTrace::validate`).
//! Members it does not know are ignored (a newer writer's), `null` reads as absent (`JSON.stringify`
//! writes `NaN` as `null`).

use serde::{Deserialize, Serialize};

use super::labels::{check_label_table, LabelSet};
use super::validate::MAX_TIMESTAMP_MS;
use crate::error::{Error, Result};

/// The longest sampling interval, ms: V8 takes its interval as an int32 of µs.
pub(crate) const MAX_SAMPLE_INTERVAL_MS: f64 = 2_147_483.647;

/// The `jsprof` member. Fields in lexicographic order, as WebIDL orders a dictionary's members.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extension {
    /// The distinct label sets the samples were taken under (see [`super::labels`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_sets: Option<Vec<LabelSet>>,
    /// How many samples lost their labels: their set was one the recorder dropped (past its cap of
    /// distinct sets), so they carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_dropped: Option<u64>,
    /// The recorded process's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The interval (ms) the samples were kept at: the trace's interval when it has too few gaps within
    /// runs to show the rate V8 really delivered (a short request's; see [`super::weights`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_interval: Option<f64>,
    /// One entry per sample (same order): its index in `labelSets`, or `null` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_labels: Option<Vec<Option<u32>>>,
    /// For a stall trace: the event-loop stall it shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
    /// The recorded thread: 0 for a main thread, a worker's `threadId` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<u32>,
    /// The Unix epoch (ms) of the time origin the timestamps count from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_origin: Option<f64>,
    /// For a trace cut out of a longer run: the contiguous windows `[begin, end]` (ms, the timestamps'
    /// clock) its samples were kept from, ascending and disjoint. Two samples in one window were
    /// consecutive samples of the run; between windows, the run's other samples were left out.
    /// Absent: the samples are one contiguous run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<Vec<[f64; 2]>>,
}

/// The most frames a stall's `stack` holds, and the longest frame (bytes).
const MAX_STALL_FRAMES: usize = 256;
const MAX_STALL_FRAME_BYTES: usize = 4096;

/// A stall trace's stall (`jsprof.stall`). Fields in lexicographic order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stall {
    /// How long (ms) the stalled turn ran: the whole stall when `ended`, else until the trace was taken
    /// (the loop still blocked).
    pub duration_ms: f64,
    /// Whether the turn ended (the loop turned again) before the trace was taken.
    pub ended: bool,
    /// The JS stack of the stalled thread at the detection (innermost first, as `Error.stack` writes
    /// its frames: `name (url:line:column)`), when the detection reached it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<Vec<String>>,
    /// How long (ms of the thread's CPU time) the stalled thread ran between the detection and the
    /// taking of `stack`: it takes the detection's interrupt only in JS, so a long run means it was in
    /// native code, and `stack` shows the JS run after. Where it can be read (Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_delay_ms: Option<f64>,
    /// When the stalled turn began (ms, the timestamps' clock).
    pub start: f64,
    /// The threshold (ms) a turn had to exceed to be reported.
    pub threshold_ms: f64,
}

impl Stall {
    fn validate(&self) -> Result<()> {
        let ok = |v: f64| v.is_finite() && v.abs() <= MAX_TIMESTAMP_MS;
        if !(ok(self.duration_ms) && self.duration_ms >= 0.0) {
            return Err(Error::invalid(format!(
                "jsprof.stall.durationMs must be a finite number of ms, at least 0, got {}",
                self.duration_ms
            )));
        }
        if let Some(stack) = &self.stack {
            if stack.len() > MAX_STALL_FRAMES || stack.iter().any(|f| f.len() > MAX_STALL_FRAME_BYTES) {
                return Err(Error::invalid(format!(
                    "jsprof.stall.stack must hold at most {MAX_STALL_FRAMES} frames of at most \
                     {MAX_STALL_FRAME_BYTES} bytes each"
                )));
            }
        }
        if let Some(delay) = self.stack_delay_ms {
            if !(ok(delay) && delay >= 0.0) {
                return Err(Error::invalid(format!(
                    "jsprof.stall.stackDelayMs must be a finite number of ms, at least 0, got {delay}"
                )));
            }
        }
        if !ok(self.start) {
            return Err(Error::invalid(format!(
                "jsprof.stall.start must be a finite time within ±1e12 ms, got {}",
                self.start
            )));
        }
        if !(ok(self.threshold_ms) && self.threshold_ms > 0.0) {
            return Err(Error::invalid(format!(
                "jsprof.stall.thresholdMs must be a finite number of ms above 0, got {}",
                self.threshold_ms
            )));
        }
        Ok(())
    }
}

/// The recording's clock an export shows (the `timeOrigin` and `pid` of `ExportClockOptions`): the Unix
/// epoch (ms) of the time origin the timestamps count from, and the process id.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Clock {
    pub time_origin_ms: Option<f64>,
    pub pid: Option<u32>,
}

impl Clock {
    /// The one rule every exporter (CPU and heap) follows: what the caller gave, field by field, else
    /// what the profile's own `jsprof` member says.
    pub fn given_or(self, own: Option<&Extension>) -> Clock {
        Clock {
            time_origin_ms: self.time_origin_ms.or(own.and_then(|e| e.time_origin)),
            pid: self.pid.or(own.and_then(|e| e.pid)),
        }
    }

    /// Fields still unknown taken from `fallback` (OTLP: the exporting process's own clock).
    pub fn or(self, fallback: Clock) -> Clock {
        Clock {
            time_origin_ms: self.time_origin_ms.or(fallback.time_origin_ms),
            pid: self.pid.or(fallback.pid),
        }
    }
}

impl Extension {
    /// Whether it says nothing at all (then a trace writes no `jsprof` member).
    pub fn is_empty(&self) -> bool {
        *self == Extension::default()
    }

    /// Checks what serde cannot: a pid of at least 1, a time origin within ±1e15 ms, a sample interval within
    /// (0, 2^31 µs], windows of finite times within the trace's range, each `begin <= end`, ascending
    /// and disjoint.
    pub fn validate(&self) -> Result<()> {
        if self.pid == Some(0) {
            return Err(Error::invalid(
                "jsprof.pid must be a process id (at least 1), got 0",
            ));
        }
        if let Some(origin) = self.time_origin {
            // Within ±1e15 ms (31,000 years), so an export's nanoseconds (× 1e6) fit an i64.
            if !(origin.is_finite() && origin.abs() <= 1e15) {
                return Err(Error::invalid(format!(
                    "jsprof.timeOrigin must be a finite number of ms within ±1e15, got {origin:e}"
                )));
            }
        }
        if let Some(interval) = self.sample_interval {
            if !(interval > 0.0 && interval <= MAX_SAMPLE_INTERVAL_MS) {
                return Err(Error::invalid(format!(
                    "jsprof.sampleInterval must be a number of ms in (0, {MAX_SAMPLE_INTERVAL_MS}], got {interval}"
                )));
            }
        }
        if let Some(stall) = &self.stall {
            stall.validate()?;
        }
        let mut previous_end = f64::NEG_INFINITY;
        for (i, &[begin, end]) in self.windows.iter().flatten().enumerate() {
            if !(begin.is_finite() && end.is_finite())
                || begin.abs() > MAX_TIMESTAMP_MS
                || end.abs() > MAX_TIMESTAMP_MS
            {
                return Err(Error::invalid(format!(
                    "jsprof.windows[{i}] must hold finite times within ±1e12 ms"
                )));
            }
            if begin > end {
                return Err(Error::invalid(format!(
                    "jsprof.windows[{i}] ends ({end}) before it begins ({begin})"
                )));
            }
            if begin <= previous_end {
                return Err(Error::invalid(format!(
                    "jsprof.windows[{i}] begins ({begin}) at or before the end of the window before it \
                     ({previous_end}): windows are ascending and disjoint"
                )));
            }
            previous_end = end;
        }
        self.validate_labels()
    }

    /// The label table (at most [`MAX_LABEL_SETS`] sets, each by the label rule) and every sample's
    /// index in range. That there is one index per sample, the trace checks (it knows its samples).
    fn validate_labels(&self) -> Result<()> {
        let sets = self.label_sets.as_deref().unwrap_or_default();
        check_label_table(sets, "jsprof.labelSets", |i| format!("jsprof.labelSets[{i}]"))?;
        for (i, id) in self.sample_labels.iter().flatten().enumerate() {
            if let Some(id) = *id {
                if id as usize >= sets.len() {
                    return Err(Error::invalid(format!(
                        "jsprof.sampleLabels[{i}] {id} is out of range (the trace has {} label sets)",
                        sets.len()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The label set of sample `i`, if it has one.
    pub fn labels_of(&self, i: usize) -> Option<&LabelSet> {
        let id = (*self.sample_labels.as_ref()?.get(i)?)?;
        self.label_sets.as_ref()?.get(id as usize)
    }

    /// Whether any sample carries labels.
    pub fn has_labels(&self) -> bool {
        self.sample_labels
            .as_ref()
            .is_some_and(|s| s.iter().any(Option::is_some))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::ProfilerTrace;

    fn with(jsprof: &str) -> Result<ProfilerTrace> {
        ProfilerTrace::from_json(&format!(
            r#"{{"frames":[],"jsprof":{jsprof},"resources":[],"samples":[{{"timestamp":1}}],"stacks":[]}}"#
        ))
    }

    #[test]
    fn round_trips_in_lexicographic_order_after_frames() {
        let text = r#"{"frames":[],"jsprof":{"pid":42,"sampleInterval":1.5,"threadId":0,"timeOrigin":1732012345678.1235,"windows":[[0.5,2.0],[3.0,3.0]]},"resources":[],"samples":[{"timestamp":1.0}],"stacks":[]}"#;
        let trace = ProfilerTrace::from_json(text).unwrap();
        let ext = trace.jsprof.as_ref().unwrap();
        assert_eq!(ext.pid, Some(42));
        assert_eq!(ext.time_origin, Some(1732012345678.1235));
        assert_eq!(ext.windows.as_deref(), Some(&[[0.5, 2.0], [3.0, 3.0]][..]));
        assert_eq!(serde_json::to_string(&trace).unwrap(), text);
        // Unknown members are ignored, null is absent, no member is no extension.
        let t = with(r#"{"later":{"x":1},"timeOrigin":null,"pid":7}"#).unwrap();
        assert_eq!(
            t.jsprof,
            Some(Extension {
                pid: Some(7),
                ..Extension::default()
            })
        );
        assert_eq!(with("null").unwrap().jsprof, None);
        let plain = r#"{"frames":[],"resources":[],"samples":[],"stacks":[]}"#;
        assert_eq!(ProfilerTrace::from_json(plain).unwrap().jsprof, None);
        assert_eq!(
            serde_json::to_string(&ProfilerTrace::from_json(plain).unwrap()).unwrap(),
            plain
        );
    }

    #[test]
    fn refuses_what_no_writer_writes() {
        let message = |jsprof: &str| with(jsprof).unwrap_err().message;
        assert!(message(r#""x""#).contains(r#"jsprof: string "x" where an object belongs"#));
        assert!(message(r#"{"pid":"42"}"#).contains("jsprof.pid"));
        assert!(message(r#"{"pid":0}"#).contains("jsprof.pid must be a process id"));
        assert!(message(r#"{"pid":-3}"#).contains("jsprof.pid"));
        assert!(message(r#"{"timeOrigin":1e400}"#).contains("jsprof.timeOrigin"));
        assert!(message(r#"{"sampleInterval":0}"#).contains("jsprof.sampleInterval must be"));
        assert!(message(r#"{"sampleInterval":-1}"#).contains("jsprof.sampleInterval must be"));
        assert!(message(r#"{"windows":[[2,1]]}"#).contains("jsprof.windows[0] ends (1) before it begins (2)"));
        assert!(message(r#"{"windows":[[0,2],[2,3]]}"#).contains("jsprof.windows[1] begins (2)"));
        assert!(message(r#"{"windows":[[0,2e12]]}"#).contains("jsprof.windows[0] must hold finite times"));
        assert!(message(r#"{"windows":[[0]]}"#).contains("jsprof.windows[0]"));
        assert!(with(r#"{"windows":[],"sampleInterval":2147483.647}"#).is_ok());
        assert!(
            message(r#"{"stall":{"durationMs":-1,"ended":true,"start":0,"thresholdMs":1}}"#)
                .contains("jsprof.stall.durationMs")
        );
        assert!(
            message(r#"{"stall":{"durationMs":1,"ended":true,"start":0,"thresholdMs":0}}"#)
                .contains("jsprof.stall.thresholdMs")
        );
        assert!(message(r#"{"stall":{"durationMs":1,"start":0,"thresholdMs":1}}"#).contains("ended"));
        assert!(message(
            r#"{"stall":{"durationMs":1,"ended":true,"stackDelayMs":-2,"start":0,"thresholdMs":1}}"#
        )
        .contains("jsprof.stall.stackDelayMs"));
    }

    #[test]
    fn a_stall_round_trips() {
        let text = r#"{"frames":[],"jsprof":{"pid":3,"stall":{"durationMs":1002.5,"ended":false,"stack":["spin (file:///a.js:1:2)"],"stackDelayMs":412.0,"start":12.25,"thresholdMs":300.0},"threadId":0},"resources":[],"samples":[{"timestamp":1.0}],"stacks":[]}"#;
        let trace = ProfilerTrace::from_json(text).unwrap();
        let stall = trace.jsprof.as_ref().unwrap().stall.as_ref().unwrap();
        assert_eq!(stall.duration_ms, 1002.5);
        assert!(!stall.ended);
        assert_eq!(stall.stack_delay_ms, Some(412.0));
        assert_eq!(
            stall.stack.as_deref(),
            Some(&["spin (file:///a.js:1:2)".to_string()][..])
        );
        let many = format!(
            r#"{{"stall":{{"durationMs":1,"ended":true,"stack":{:?},"start":0,"thresholdMs":1}}}}"#,
            vec!["f"; 257]
        );
        assert!(with(&many).unwrap_err().message.contains("jsprof.stall.stack"));
        assert_eq!(serde_json::to_string(&trace).unwrap(), text);
    }

    #[test]
    fn labels_are_a_table_and_one_index_per_sample() {
        let t =
            with(r#"{"labelSets":[{"route":"GET /a","tenant":"x"}],"labelsDropped":2,"sampleLabels":[0]}"#)
                .unwrap();
        let ext = t.jsprof.as_ref().unwrap();
        assert_eq!(ext.labels_of(0).unwrap()["route"], "GET /a");
        assert!(ext.has_labels());
        assert_eq!(
            ProfilerTrace::from_json(&serde_json::to_string(&t).unwrap()).unwrap(),
            t
        );
        assert!(with(r#"{"labelSets":[],"sampleLabels":[null]}"#).is_ok());
        let message = |jsprof: &str| with(jsprof).unwrap_err().message;
        assert!(message(r#"{"labelSets":[],"sampleLabels":[0]}"#)
            .contains("jsprof.sampleLabels[0] 0 is out of range"));
        assert!(message(r#"{"labelSets":[{"a":"b"}],"sampleLabels":[0,0]}"#)
            .contains("has 2 entries; the trace has 1"));
        assert!(message(r#"{"labelSets":[{"a b":"c"}],"sampleLabels":[0]}"#).contains("jsprof.labelSets[0]"));
        assert!(message(r#"{"labelSets":[{"a":1}],"sampleLabels":[0]}"#).contains("jsprof.labelSets"));
        assert!(message(r#"{"labelsDropped":-1}"#).contains("jsprof.labelsDropped"));
        let long = format!(
            r#"{{"labelSets":[{{"a":"{}"}}],"sampleLabels":[0]}}"#,
            "v".repeat(1025)
        );
        // Every breach of the label rule is the one kind, a TypeError, wherever the trace goes.
        assert_eq!(with(&long).unwrap_err().kind, crate::ErrorKind::Type);
        let many: Vec<String> = (0..33).map(|i| format!(r#""k{i}":"v""#)).collect();
        let many = format!(r#"{{"labelSets":[{{{}}}],"sampleLabels":[0]}}"#, many.join(","));
        assert_eq!(with(&many).unwrap_err().kind, crate::ErrorKind::Type);
        let sets = vec![r#"{"a":"b"}"#; 65_537].join(",");
        let table = format!(r#"{{"labelSets":[{sets}],"sampleLabels":[0]}}"#);
        let e = with(&table).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Type);
        assert!(e.message.contains("65537 label sets"), "{}", e.message);
        let proto = with(r#"{"labelSets":[{"__proto__":"x"}],"sampleLabels":[0]}"#).unwrap_err();
        assert_eq!(proto.kind, crate::ErrorKind::Type);
        assert!(proto.message.contains("__proto__"), "{}", proto.message);
    }

    #[test]
    fn an_exports_clock_is_the_callers_field_by_field_else_the_traces_else_the_fallback() {
        let own = Extension {
            pid: Some(7),
            time_origin: Some(1.7e12),
            ..Extension::default()
        };
        let given = |time_origin_ms, pid| Clock { time_origin_ms, pid };
        assert_eq!(
            given(None, None).given_or(Some(&own)),
            given(Some(1.7e12), Some(7))
        );
        assert_eq!(
            given(Some(5.0), None).given_or(Some(&own)),
            given(Some(5.0), Some(7))
        );
        assert_eq!(
            given(None, Some(9)).given_or(Some(&own)),
            given(Some(1.7e12), Some(9))
        );
        assert_eq!(given(None, None).given_or(None), given(None, None));
        let process = given(Some(1.0), Some(2));
        assert_eq!(given(None, None).given_or(None).or(process), process);
        assert_eq!(
            given(None, None).given_or(Some(&own)).or(process),
            given(Some(1.7e12), Some(7))
        );
    }
}
