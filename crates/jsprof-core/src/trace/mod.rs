//! The spec's `ProfilerTrace` and the builder that fills its three dedup tables, in the shape of Blink's
//! `ProfilerTraceBuilder`: resources by string, frames by (name, resource, line, column), stacks as a
//! trie of (frameId, parentId). Ids are handed out in first-use order, parents before children.
//!
//! The trace owns its validity ([`validate`]: `ProfilerTrace::from_json`, `ProfilerTrace::validate`),
//! its extension member `jsprof` ([`extension`]) and the weight of a sample ([`weights`]); every layer
//! above reads traces through them. It depends on nothing but the error type and the interner.

mod columns;
mod extension;
pub(crate) mod labels;
mod validate;
mod weights;

pub use columns::{write_columns, TraceStrings, HEADER as COLUMNS_HEADER};
pub(crate) use extension::MAX_SAMPLE_INTERVAL_MS;
pub use extension::{Clock, Extension, Stall};
pub use labels::{
    extend_label_set, label_set, LabelSet, MAX_KEY_CHARS, MAX_LABELS, MAX_LABEL_SETS, MAX_VALUE_CHARS,
};
pub use weights::Timing;
pub(crate) use weights::{time_span, Weigher};

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::interner::Interner;

use serde::{Deserialize, Serialize};

/// `ProfilerFrame`. `line`/`column` are 1-based and absent when unknown; `resourceId` is absent when
/// the code has no script URL (builtins, `eval`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    // Members in lexicographic order, as WebIDL builds a dictionary (and so Chrome's JSON reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<u32>,
}

/// `ProfilerStack`: one node of the stack trie; `parentId` absent at the outermost frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stack {
    pub frame_id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<u32>,
}

/// `ProfilerMarker`: what the VM was doing. Node can tell three of the spec's six apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Marker {
    Script,
    Gc,
    Style,
    Layout,
    Paint,
    Other,
}

impl Marker {
    /// The small integer the binding uses to pass markers in a typed array (0 = none).
    pub fn code(marker: Option<Marker>) -> u8 {
        match marker {
            None => 0,
            Some(Marker::Script) => 1,
            Some(Marker::Gc) => 2,
            Some(Marker::Other) => 3,
            Some(Marker::Style) => 4,
            Some(Marker::Layout) => 5,
            Some(Marker::Paint) => 6,
        }
    }

    /// The marker of a [`Marker::code`] (none for 0 and unknown codes).
    #[inline]
    pub fn from_code(code: u8) -> Option<Marker> {
        match code {
            1 => Some(Marker::Script),
            2 => Some(Marker::Gc),
            3 => Some(Marker::Other),
            4 => Some(Marker::Style),
            5 => Some(Marker::Layout),
            6 => Some(Marker::Paint),
            _ => None,
        }
    }
}

/// `ProfilerSample`: `timestamp` in ms, `stackId` absent when the sample has no JS stack.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceSample {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<Marker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_id: Option<u32>,
    pub timestamp: f64,
}

/// `ProfilerTrace`, members in WebIDL's (lexicographic) order, with jsprof-node's extension member
/// `jsprof` (absent on a plain spec trace, see [`Extension`]) where that order puts it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfilerTrace {
    pub frames: Vec<Frame>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jsprof: Option<Extension>,
    pub resources: Vec<String>,
    pub samples: Vec<TraceSample>,
    pub stacks: Vec<Stack>,
}

impl ProfilerTrace {
    /// The trace's label-set table (`jsprof.labelSets`; empty without labels).
    pub fn label_sets(&self) -> &[LabelSet] {
        self.jsprof
            .as_ref()
            .and_then(|e| e.label_sets.as_deref())
            .unwrap_or_default()
    }

    /// The samples of `source` over new `tables` (a trace without samples: source maps' rewritten
    /// resources, frames and stacks), each sample's stack renumbered through `stack_map` (old id -> new).
    /// The tables are validated and every sample's new stack id is checked before any sample moves. The
    /// samples move out of `source` when nothing else holds it (ten million samples are 240 MB, not to
    /// be held twice), else they are copied. When nothing changed (the same tables, each stack mapped to
    /// itself), `source` itself is returned.
    pub fn with_tables(
        source: &mut Arc<ProfilerTrace>,
        tables: ProfilerTrace,
        stack_map: &[u32],
    ) -> Result<Arc<ProfilerTrace>> {
        let unchanged = stack_map
            .iter()
            .enumerate()
            .all(|(old, &new)| old == new as usize)
            && stack_map.len() == source.stacks.len()
            && tables.resources == source.resources
            && tables.frames == source.frames
            && tables.stacks == source.stacks;
        if unchanged {
            return Ok(Arc::clone(source));
        }
        let mut trace = ProfilerTrace {
            samples: Vec::new(),
            jsprof: None,
            ..tables
        };
        trace.validate()?;
        // The samples keep their times and their order, so what weighs them and their labels stay
        // true (the source was validated with them).
        trace.jsprof = source.jsprof.clone();
        let stacks = trace.stacks.len();
        for (i, s) in source.samples.iter().enumerate() {
            if let Some(id) = s.stack_id {
                match stack_map.get(id as usize) {
                    Some(&mapped) if (mapped as usize) < stacks => {}
                    Some(&mapped) => {
                        return Err(Error::invalid(format!(
                            "stackMap sends samples[{i}].stackId {id} to {mapped}, past the {stacks} stacks"
                        )))
                    }
                    None => {
                        return Err(Error::invalid(format!(
                            "stackMap has no entry for samples[{i}].stackId {id}"
                        )))
                    }
                }
            }
        }
        trace.samples = match Arc::get_mut(source) {
            Some(own) => std::mem::take(&mut own.samples),
            None => source.samples.clone(),
        };
        for s in &mut trace.samples {
            if let Some(id) = s.stack_id {
                s.stack_id = Some(stack_map[id as usize]);
            }
        }
        Ok(Arc::new(trace))
    }
}

/// The three dedup tables plus the samples; hand it frames and stacks, take the trace at the end.
#[derive(Default)]
pub(crate) struct TraceBuilder {
    resources: Interner<String>,
    frames: Interner<Frame>,
    stacks: Interner<Stack>,
    samples: Vec<TraceSample>,
    labels: labels::LabelTable,
}

impl TraceBuilder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn resource_id(&mut self, url: &str) -> u32 {
        self.resources.id(url)
    }

    pub(crate) fn frame_id(&mut self, frame: Frame) -> u32 {
        self.frames.id_of_owned(frame)
    }

    pub(crate) fn stack_id(&mut self, frame_id: u32, parent_id: Option<u32>) -> u32 {
        self.stacks.id_of_owned(Stack { frame_id, parent_id })
    }

    pub(crate) fn push_sample(&mut self, sample: TraceSample) {
        self.samples.push(sample);
        self.labels.push(None);
    }

    /// Appends a sample taken under `labels`.
    pub(crate) fn push_labelled_sample(&mut self, sample: TraceSample, labels: Option<&Arc<LabelSet>>) {
        self.samples.push(sample);
        self.labels.push(labels);
    }

    /// The trace; its `jsprof` member holds only the samples' labels (absent when none has any).
    pub(crate) fn finish(self) -> ProfilerTrace {
        let dropped = self.labels.dropped();
        let mut jsprof = self
            .labels
            .finish()
            .map_or_else(Extension::default, |(sets, per_sample)| Extension {
                label_sets: Some(sets),
                sample_labels: Some(per_sample),
                ..Extension::default()
            });
        jsprof.labels_dropped = (dropped > 0).then_some(dropped);
        let jsprof = (!jsprof.is_empty()).then_some(jsprof);
        ProfilerTrace {
            resources: self.resources.into_values(),
            frames: self.frames.into_values(),
            stacks: self.stacks.into_values(),
            samples: self.samples,
            jsprof,
        }
    }
}

/// Rounds a time in ms to the microsecond precision the spec's timestamps carry.
pub(crate) fn round_to_microseconds(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

/// `round_to_microseconds(us / 1000.0)`: a span in µs as ms at µs precision. A whole number of µs (what
/// V8 records) takes a short road to the same result: for |us| < 2^50, `us / 1000 * 1000` lies within
/// 0.25 of `us`, so the rounding gives `us` back. (It saves a libm call and a multiplication per
/// sample, a third of a conversion's time.)
#[inline]
pub(crate) fn us_to_ms(us: f64) -> f64 {
    if us.abs() < (1u64 << 50) as f64 && (us as i64) as f64 == us {
        return us / 1000.0;
    }
    round_to_microseconds(us / 1000.0)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// main (app) -> work (app) -> chunk (lodash) ; main -> now (native); + idle, gc, program samples.
    pub(crate) fn sample_trace() -> ProfilerTrace {
        let frame = |name: &str, resource_id, line| Frame {
            name: name.into(),
            resource_id,
            line,
            column: line.map(|_| 1),
        };
        ProfilerTrace {
            jsprof: None,
            resources: vec![
                "file:///app/main.js".into(),
                "file:///app/node_modules/lodash/chunk.js".into(),
            ],
            frames: vec![
                frame("main", Some(0), Some(1)),
                frame("work", Some(0), Some(10)),
                frame("chunk", Some(1), Some(5)),
                frame("now", None, None),
                frame("", Some(0), Some(20)),
            ],
            stacks: vec![
                Stack {
                    frame_id: 0,
                    parent_id: None,
                },
                Stack {
                    frame_id: 1,
                    parent_id: Some(0),
                },
                Stack {
                    frame_id: 2,
                    parent_id: Some(1),
                },
                Stack {
                    frame_id: 3,
                    parent_id: Some(0),
                },
                Stack {
                    frame_id: 4,
                    parent_id: Some(0),
                },
            ],
            samples: [
                (10.0, Some(2), Some(Marker::Script)),
                (11.0, Some(2), Some(Marker::Script)),
                (12.0, Some(1), Some(Marker::Script)),
                (13.0, None, Some(Marker::Gc)),
                (14.0, None, Some(Marker::Gc)),
                (15.0, Some(3), Some(Marker::Script)),
                (16.5, None, None),
                (17.0, None, Some(Marker::Other)),
                (18.0, Some(4), Some(Marker::Script)),
            ]
            .into_iter()
            .map(|(timestamp, stack_id, marker)| TraceSample {
                timestamp,
                stack_id,
                marker,
            })
            .collect(),
        }
    }

    #[test]
    fn new_tables_keep_the_samples_labels() {
        let mut source = Arc::new(labelled_trace());
        let mut tables = ProfilerTrace {
            samples: Vec::new(),
            jsprof: None,
            ..(*source).clone()
        };
        tables.resources[0] = "file:///src/main.ts".into();
        let map: Vec<u32> = (0..tables.stacks.len() as u32).collect();
        let out = ProfilerTrace::with_tables(&mut source, tables, &map).unwrap();
        out.validate().unwrap();
        assert_eq!(out.jsprof, labelled_trace().jsprof);
        assert_eq!(out.resources[0], "file:///src/main.ts");
    }

    /// [`sample_trace`] with labels: samples 0, 1 (the same stack) of two spans of route `/a`, sample
    /// 2 of route `/b` with a hostile value and an invalid span context, the rest without labels.
    pub(crate) fn labelled_trace() -> ProfilerTrace {
        let mut t = sample_trace();
        let set = |pairs: &[(&str, &str)]| -> LabelSet {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let mut sample_labels = vec![None; t.samples.len()];
        sample_labels[0] = Some(0);
        sample_labels[1] = Some(1);
        sample_labels[2] = Some(2);
        t.jsprof = Some(Extension {
            label_sets: Some(vec![
                set(&[
                    ("route", "GET /a"),
                    ("span_id", "00f067aa0ba902b7"),
                    ("span_name", "GET /a"),
                    ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
                ]),
                set(&[
                    ("route", "GET /a"),
                    ("span_id", "00f067aa0ba902b8"),
                    ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4737"),
                ]),
                set(&[
                    ("route", "GET /b\u{1b}[2J\n"),
                    ("trace_id", "not hex"),
                    ("span_id", "0000000000000000"),
                ]),
            ]),
            sample_labels: Some(sample_labels),
            ..Extension::default()
        });
        t.validate().unwrap();
        t
    }

    #[test]
    fn dedups_every_table_and_keeps_first_use_order() {
        let mut b = TraceBuilder::new();
        let r0 = b.resource_id("file:///a.js");
        let r1 = b.resource_id("node:internal/timers");
        assert_eq!((r0, r1, b.resource_id("file:///a.js")), (0, 1, 0));
        let f = |name: &str, line| Frame {
            name: name.into(),
            resource_id: Some(0),
            line: Some(line),
            column: Some(1),
        };
        let fa = b.frame_id(f("a", 1));
        let fb = b.frame_id(f("b", 2));
        assert_eq!(b.frame_id(f("a", 1)), fa);
        assert_ne!(b.frame_id(f("a", 3)), fa, "a different line is a different frame");
        let sa = b.stack_id(fa, None);
        let sb = b.stack_id(fb, Some(sa));
        assert_eq!(b.stack_id(fb, Some(sa)), sb);
        assert_ne!(b.stack_id(fb, None), sb);
        let t = b.finish();
        assert_eq!(t.resources, vec!["file:///a.js", "node:internal/timers"]);
        assert_eq!(t.frames.len(), 3);
        assert_eq!(
            t.stacks[1],
            Stack {
                frame_id: fb,
                parent_id: Some(sa)
            }
        );
    }

    #[test]
    fn serializes_absent_members_as_absent_and_round_trips() {
        let t = ProfilerTrace {
            jsprof: None,
            resources: vec![],
            frames: vec![Frame {
                name: String::new(),
                resource_id: None,
                line: None,
                column: None,
            }],
            stacks: vec![Stack {
                frame_id: 0,
                parent_id: None,
            }],
            samples: vec![
                TraceSample {
                    timestamp: 1.5,
                    stack_id: Some(0),
                    marker: Some(Marker::Script),
                },
                TraceSample {
                    timestamp: 2.0,
                    stack_id: None,
                    marker: None,
                },
            ],
        };
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            r#"{"frames":[{"name":""}],"resources":[],"samples":[{"marker":"script","stackId":0,"timestamp":1.5},{"timestamp":2.0}],"stacks":[{"frameId":0}]}"#
        );
        assert_eq!(serde_json::from_str::<ProfilerTrace>(&json).unwrap(), t);
    }

    #[test]
    fn whole_microseconds_take_the_short_road_to_the_same_ms() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let edges = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            1499.5,
            2f64.powi(50) - 1.0,
            2f64.powi(50),
            1e300,
            f64::NAN,
        ];
        let random = (0..100_000).map(|i| {
            let bits = next();
            match i % 3 {
                0 => (bits >> 14) as f64 * if bits & 1 == 0 { 1.0 } else { -1.0 },
                1 => (bits >> 40) as f64 + 0.5,
                _ => f64::from_bits(bits),
            }
        });
        for us in edges.into_iter().chain(random) {
            let (short, long) = (us_to_ms(us), round_to_microseconds(us / 1000.0));
            assert!(
                short.to_bits() == long.to_bits() || (short.is_nan() && long.is_nan()),
                "{us}: {short} vs {long}"
            );
        }
    }

    #[test]
    fn new_tables_take_the_samples_renumbered_or_refuse_before_any_moves() {
        let mut source = Arc::new(sample_trace());
        // Unchanged: the same trace back.
        let identity: Vec<u32> = (0..source.stacks.len() as u32).collect();
        let tables = ProfilerTrace {
            samples: Vec::new(),
            ..sample_trace()
        };
        let same = ProfilerTrace::with_tables(&mut source, tables.clone(), &identity).unwrap();
        assert!(Arc::ptr_eq(&same, &source));
        drop(same);
        // Stacks 1 and 2 merged into 1: the samples move, renumbered.
        let merged = ProfilerTrace {
            stacks: tables.stacks[..2].to_vec(),
            ..tables.clone()
        };
        let map = [0, 1, 1, 0, 0];
        let bad = ProfilerTrace::with_tables(&mut source, merged.clone(), &[0, 1, 9, 0, 0]).unwrap_err();
        assert_eq!(
            bad.message,
            "stackMap sends samples[0].stackId 2 to 9, past the 2 stacks"
        );
        let short = ProfilerTrace::with_tables(&mut source, merged.clone(), &[0, 1]).unwrap_err();
        assert_eq!(short.message, "stackMap has no entry for samples[0].stackId 2");
        assert_eq!(source.samples.len(), 9, "nothing moved before the checks passed");
        let moved = ProfilerTrace::with_tables(&mut source, merged, &map).unwrap();
        assert!(source.samples.is_empty(), "the samples moved");
        let ids: Vec<_> = moved.samples.iter().map(|s| s.stack_id).collect();
        assert_eq!(ids[..3], [Some(1), Some(1), Some(1)]);
        assert_eq!(moved.samples.len(), 9);
        // Invalid tables are refused as any trace is.
        let mut source = Arc::new(sample_trace());
        let cyclic = ProfilerTrace {
            stacks: vec![Stack {
                frame_id: 0,
                parent_id: Some(0),
            }],
            ..tables
        };
        let e = ProfilerTrace::with_tables(&mut source, cyclic, &[0; 5]).unwrap_err();
        assert!(e.message.contains("parentId cycle"), "{}", e.message);
    }

    #[test]
    fn rounds_to_microseconds() {
        assert_eq!(round_to_microseconds(1.23456), 1.235);
        assert_eq!(round_to_microseconds(-0.0004), -0.0);
    }
}
