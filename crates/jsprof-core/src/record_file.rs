//! The files of `jsprof record`: the side file, where the recorder appends each harvested [`Chunk`] as
//! it goes (so a process killed without warning still leaves its samples up to the last harvest), and
//! the trace file it writes at the end, with the `jsprof` member (`crate::Extension`) beside the spec's
//! members.
//!
//! A side-file line is `<interval µs> <V8 CPU profile JSON>`: the chunk's profile in the format
//! [`Profile::from_json`] reads (ids are node indexes + 1, children listed, times as the signed
//! deltas V8 writes), so a line reads back into the same chunk. A line torn by a kill in the middle of
//! a write does not parse and is skipped.

use std::collections::HashMap;
use std::sync::Arc;

use crate::convert::OwnCode;
use crate::error::{Error, Result};
use crate::recording::{Chunk, Recording};
use crate::trace::labels::{check_label_table, LabelSet};
use crate::trace::{Extension, ProfilerTrace};
use crate::v8::{CpuProfile, Profile};

impl Chunk {
    /// The chunk as one side-file line (without the newline).
    pub fn to_line(&self) -> String {
        let profile = CpuProfile::of_profile(&self.profile);
        // Plain numbers and strings: serializing cannot fail.
        let json = serde_json::to_string(&profile).unwrap_or_default();
        let mut line = format!("{} {json}", self.interval_us);
        if !self.labels.is_empty() {
            // The labels after a tab (JSON text holds none): the chunk's own table of sets (an empty
            // set: one the recorder dropped) and one index per sample.
            // By content, in a map: with span ids a chunk can hold a set per request.
            let mut sets: Vec<&LabelSet> = Vec::new();
            let mut index: HashMap<&LabelSet, u32> = HashMap::new();
            let mut per_sample: Vec<Option<u32>> = Vec::with_capacity(self.labels.len());
            for set in &self.labels {
                per_sample.push(set.as_deref().map(|set| {
                    *index.entry(set).or_insert_with(|| {
                        sets.push(set);
                        (sets.len() - 1) as u32
                    })
                }));
            }
            let labels = serde_json::json!({ "labelSets": sets, "sampleLabels": per_sample });
            line.push('\t');
            line.push_str(&labels.to_string());
        }
        line
    }

    /// A chunk from a side-file line (see [`Chunk::to_line`]).
    pub fn from_line(line: &str) -> Result<Chunk> {
        let (interval, json) = line
            .split_once(' ')
            .ok_or_else(|| Error::invalid("not a jsprof record chunk line"))?;
        let interval_us: f64 = interval
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| Error::invalid("not a jsprof record chunk line: bad interval"))?;
        let (json, labels) = match json.split_once('\t') {
            Some((json, labels)) => (json, Some(labels)),
            None => (json, None),
        };
        let profile = Profile::from_json(json)?;
        let labels = match labels {
            None => Vec::new(),
            Some(text) => chunk_labels(text, profile.samples.len())?,
        };
        Ok(Chunk {
            profile,
            interval_us,
            labels,
            // A side file's chunk was harvested by `jsprof record`: no request profile reads it.
            contexts: Vec::new(),
        })
    }
}

/// The labels part of a side-file line: `{"labelSets":[…],"sampleLabels":[…]}`, one index per sample.
fn chunk_labels(text: &str, samples: usize) -> Result<Vec<Option<Arc<LabelSet>>>> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Labels {
        label_sets: Vec<LabelSet>,
        sample_labels: Vec<Option<u32>>,
    }
    let bad = || Error::invalid("not a jsprof record chunk line: bad labels");
    let labels: Labels = serde_json::from_str(text).map_err(|_| bad())?;
    if labels.sample_labels.len() != samples {
        return Err(bad());
    }
    check_label_table(&labels.label_sets, "a chunk line", |_| {
        "a chunk line's labels".to_owned()
    })?;
    let sets: Vec<Arc<LabelSet>> = labels.label_sets.into_iter().map(Arc::new).collect();
    labels
        .sample_labels
        .into_iter()
        .map(|id| match id {
            None => Ok(None),
            Some(id) => sets.get(id as usize).cloned().map(Some).ok_or_else(bad),
        })
        .collect()
}

/// The trace of the side file's lines: every chunk that reads back, in order, all their samples at
/// `interval_us` (the recorder's own interval), timestamps relative to `time_origin_us`, `own` code
/// left out, its `jsprof` member saying the interval. Converted chunk by chunk (a streaming recording),
/// so a long recording's side file never sits in memory as call trees. Returns it and how many lines
/// were skipped (torn or not chunks).
pub fn trace_from_lines(
    text: &str,
    interval_us: f64,
    time_origin_us: f64,
    own: Option<Arc<OwnCode>>,
) -> (ProfilerTrace, usize) {
    let mut recording = Recording::new(f64::NEG_INFINITY, interval_us, u32::MAX);
    if let Some(own) = own {
        recording.hide_own_code(own);
    }
    recording.stream_into_trace(time_origin_us);
    let mut skipped = 0;
    for line in text.split('\n').filter(|l| !l.trim().is_empty()) {
        match Chunk::from_line(line) {
            Ok(chunk) => {
                recording.add_chunk(&Arc::new(chunk));
            }
            Err(_) => skipped += 1,
        }
    }
    let trace = recording.into_trace_with(time_origin_us, Extension::default());
    (trace, skipped)
}

impl Extension {
    /// The clock of a recorded thread, as its recorder knows it: `timeOrigin` is the Unix epoch (ms) of
    /// the thread's `performance.timeOrigin`, which the timestamps count from; `threadId` is 0 for a
    /// main thread. A time origin that is not a finite number, and a pid of 0, are left out.
    pub fn clock(pid: Option<u32>, thread_id: Option<u32>, time_origin: Option<f64>) -> Extension {
        Extension {
            pid: pid.filter(|&p| p > 0),
            thread_id,
            time_origin: time_origin.filter(|t| t.is_finite()),
            ..Extension::default()
        }
    }

    /// This extension with `clock`'s clock fields (those it has) in place of its own.
    pub fn with_clock(self, clock: &Extension) -> Extension {
        Extension {
            pid: clock.pid.or(self.pid),
            thread_id: clock.thread_id.or(self.thread_id),
            time_origin: clock.time_origin.or(self.time_origin),
            ..self
        }
    }
}

/// A trace file's JSON: the spec's members and its `jsprof` member with `clock`'s fields set, all in
/// lexicographic (WebIDL's) order.
pub fn trace_file_json(trace: &mut ProfilerTrace, clock: &Extension) -> Vec<u8> {
    let jsprof = trace.jsprof.take().unwrap_or_default().with_clock(clock);
    trace.jsprof = (!jsprof.is_empty()).then_some(jsprof);
    serde_json::to_vec(&*trace).unwrap_or_default()
}

/// From the earliest to the latest sample, ms (V8 records a few samples out of time order).
pub fn span_ms(trace: &ProfilerTrace) -> f64 {
    let (first, last) = crate::trace::time_span(&trace.samples);
    if trace.samples.is_empty() {
        0.0
    } else {
        last - first
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v8::ProfileBuilder;

    fn chunk() -> Chunk {
        let mut b = ProfileBuilder::with_capacity(4);
        b.add_node(1, "(root)", "", -1, -1).unwrap();
        b.add_node(5, "main", "file:///a \"q\".js", 3, 7).unwrap();
        b.add_node(9, "inner", "file:///a.js", 10, 2).unwrap();
        b.add_node(2, "(garbage collector)", "", -1, -1).unwrap();
        b.set_children(0, &[5, 2]).unwrap();
        b.set_children(1, &[9]).unwrap();
        // A negative delta: V8 reorders some samples; the order is kept.
        let profile = b
            .finish(&[9, 5, 2, 9], &[10.0, 1000.0, -300.0, 1300.0], 5_000.0, 8_000.0)
            .unwrap();
        Chunk {
            profile,
            interval_us: 1000.0,
            labels: Vec::new(),
            contexts: Vec::new(),
        }
    }

    #[test]
    fn a_chunk_line_reads_back_as_the_same_chunk() {
        let c = chunk();
        let line = c.to_line();
        assert!(!line.contains('\n'));
        let back = Chunk::from_line(&line).unwrap();
        assert_eq!(back.interval_us, 1000.0);
        assert_eq!(back.profile, c.profile);
    }

    #[test]
    fn a_chunk_line_carries_its_labels() {
        let mut c = chunk();
        let set = |v: &str| Some(Arc::new(LabelSet::from([("k".to_owned(), v.to_owned())])));
        // A hostile value: a tab, a newline, an escape and a lone surrogate's visible form.
        let hostile = set("a\tb\nc\u{1b}[2J\\u{d800}");
        c.label_samples(
            &[0.0, 5_500.0, 6_500.0],
            &[hostile.clone(), None, hostile.clone()],
        );
        let line = c.to_line();
        assert!(!line.contains('\n'));
        assert_eq!(line.matches('\t').count(), 1);
        let back = Chunk::from_line(&line).unwrap();
        assert_eq!(back.labels, c.labels);
        assert_eq!(back.profile, c.profile);
        // Labels that do not fit the samples, or break the label rule, make the line unreadable.
        let (head, _) = line.split_once('\t').unwrap();
        for labels in [
            r#"{"labelSets":[],"sampleLabels":[null]}"#,
            r#"{"labelSets":[],"sampleLabels":[0,null,null,null]}"#,
            r#"{"labelSets":[{"bad key":"v"}],"sampleLabels":[0,0,0,0]}"#,
            "{",
        ] {
            assert!(
                Chunk::from_line(&format!("{head}\t{labels}")).is_err(),
                "{labels}"
            );
        }
    }

    #[test]
    fn torn_and_foreign_lines_are_skipped() {
        let line = chunk().to_line();
        let text = format!("{line}\n{}\nnot a chunk\n{line}\n", &line[..line.len() / 2]);
        let (trace, skipped) = trace_from_lines(&text, 1000.0, 5_000.0, None);
        assert_eq!(skipped, 2);
        // The second copy repeats the first one's times: a recording keeps each tick once, the one
        // V8 reordered included (in V8's order, within its chunk).
        let times: Vec<f64> = trace.samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(times, vec![0.01, 1.01, 0.71, 2.01]);
        assert!(Chunk::from_line("0 {}").is_err());
    }

    #[test]
    fn a_streaming_recording_gives_the_trace_a_kept_one_gives() {
        let first = Arc::new(chunk());
        let mut later = chunk();
        // The same tree, later samples: the stacks are shared, the chunks are not kept.
        for s in &mut later.profile.samples {
            s.time += 10_000.0;
        }
        let later = Arc::new(later);
        let own = Arc::new(OwnCode::new(["file:///a.js".to_owned()]));
        let mut kept = Recording::new(0.0, 1000.0, u32::MAX);
        kept.hide_own_code(Arc::clone(&own));
        let mut streamed = Recording::new(0.0, 1000.0, u32::MAX);
        streamed.hide_own_code(own);
        streamed.stream_into_trace(5_000.0);
        for c in [&first, &later] {
            assert_eq!(kept.add_chunk(c), streamed.add_chunk(c));
        }
        assert_eq!(streamed.sample_count(), kept.sample_count());
        assert_eq!(streamed.chunk_count(), 0, "no call tree is held");
        assert_eq!(kept.chunk_count(), 2);
        assert_eq!(streamed.into_trace(0.0), kept.into_trace(5_000.0));
    }

    #[test]
    fn a_streaming_recording_keeps_its_buffer_limit() {
        let mut r = Recording::new(0.0, 1000.0, 2);
        r.stream_into_trace(0.0);
        let added = r.add_chunk(&Arc::new(chunk()));
        assert_eq!((added.accepted, added.became_full), (2, true));
        assert_eq!(r.add_chunk(&Arc::new(chunk())).accepted, 0);
        assert_eq!(r.into_trace(0.0).samples.len(), 2);
    }

    #[test]
    fn the_trace_file_has_the_sidecar_in_webidl_order() {
        let (mut trace, _) = trace_from_lines(&chunk().to_line(), 1000.0, 5_000.0, None);
        let clock = Extension::clock(Some(42), Some(0), Some(1.5e12));
        assert_eq!(
            Extension::clock(Some(0), None, Some(f64::NAN)),
            Extension::default()
        );
        let text = String::from_utf8(trace_file_json(&mut trace, &clock)).unwrap();
        let keys: Vec<usize> = [
            "\"frames\"",
            "\"jsprof\"",
            "\"resources\"",
            "\"samples\"",
            "\"stacks\"",
        ]
        .iter()
        .map(|k| text.find(k).unwrap())
        .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(
            text.contains(
                r#""jsprof":{"pid":42,"sampleInterval":1.0,"threadId":0,"timeOrigin":1500000000000.0}"#
            ),
            "{text}"
        );
        let back: ProfilerTrace = serde_json::from_str(&text).unwrap();
        assert_eq!(back, trace);
        assert!((span_ms(&trace) - 2.0).abs() < 1e-9);
        assert_eq!(span_ms(&ProfilerTrace::default()), 0.0);
    }
}
