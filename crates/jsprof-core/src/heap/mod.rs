//! Heap profiles: which code holds the memory (or allocated it), from V8's sampling heap profiler.
//!
//! A [`HeapProfile`] shares the trace's building blocks — `resources`, `frames`, `stacks`, made by the
//! same V8 -> trace rules as a CPU trace's (1-based positions, pseudo-nodes never frames, jsprof-node's
//! own frames hidden: `crate::convert`) — and instead of timed samples it has one entry per distinct
//! stack holding memory: `{ size, count, stackId }`. Its JSON (members in lexicographic order, as a
//! trace's):
//!
//! ```json
//! { "frames": [ … ], "jsprof": { "heap": { "samplingInterval": 524288, "stackDepth": 64,
//!     "view": "inuse", "startTime": 12.5, "endTime": 10012.5 }, "pid": 4242, "threadId": 0,
//!     "timeOrigin": 1764000000000.5 },
//!   "resources": [ … ], "samples": [ { "count": 3, "size": 1572912, "stackId": 4 } ], "stacks": [ … ] }
//! ```
//!
//! - `size`: the bytes V8 attributes to the stack (its samples' sizes, each already scaled by V8 to
//!   the allocations it stands for: `crate::v8::heap`); `count`: how many of V8's samples that is (not
//!   a number of objects, which V8's inspector profile does not give: see `crate::v8::heap`). An entry
//!   without `stackId` holds memory allocated with no frame of the app's (only jsprof-node's own).
//! - `jsprof.heap` makes the JSON a heap profile: `view` is `inuse` (objects still alive when the
//!   profile was taken) or `allocated` (every sampled allocation, collected or not: V8's
//!   `includeObjectsCollectedByMajorGC`/`MinorGC`); `samplingInterval` (bytes) and `stackDepth` as V8
//!   sampled; `startTime`/`endTime` in ms from `timeOrigin` (when sampling for this profile began, and
//!   when it was taken). `pid`, `threadId`, `timeOrigin` are the same clock fields as a recorded
//!   trace's `jsprof` member. `inlining` says whether V8 could inline functions while it sampled
//!   (`false`: V8's inlining was off and the code optimized before had been deoptimized, so every
//!   allocation has the frame of the function that made it); absent when unknown (a `.heapprofile`:
//!   V8 inlines unless told not to).
//!
//! The one validation ([`HeapProfile::from_json`], [`HeapProfile::validate`]) is the trace's for the
//! tables ([`ProfilerTrace::validate`]) plus the samples' own: the views index the tables without
//! further checks. In memory the entries are a [`ProfilerTrace`]'s samples (timestamp 0; `marker` script,
//! or other without a stack) beside their sizes and counts, so every view of a trace (summaries, flame
//! graphs, pprof, OTLP, folded stacks) draws a heap profile by the same code, weighted by bytes.

pub(crate) mod views;

pub use views::{summarize_heap, HeapRow};

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::convert::{OwnCode, ProfileConverter};
use crate::error::{Error, Result};
use crate::json_text::lone_surrogates_visible;
use crate::trace::{Extension, Frame, Marker, ProfilerTrace, Stack, TraceBuilder, TraceSample};
use crate::v8::{
    heap_bytes, heap_bytes_in_range, heap_file_kind, write_heap_profile, HeapFileKind, HeapNodeOut, HeapTree,
    MAX_HEAP_BYTES,
};

/// The most frames V8's sampling heap profiler keeps per stack when a HeapProfiler asks
/// (`stackDepth`, 1 to this; lib/api/heap.js takes it from here).
pub const MAX_HEAP_STACK_DEPTH: u32 = 1024;

/// The deepest `.heapprofile` tree [`HeapProfile::to_v8_object_json`] gives (nodes from the root to
/// the deepest leaf): the root and the deepest stack a HeapProfiler takes. The tree nests its JSON as
/// deep, and `JSON.stringify` serializes by recursion on Node 20–24 (about 2,000 nodes deep from a
/// shallow stack), so a deeper tree (a hand-made or foreign profile) is written as text instead
/// ([`HeapProfile::to_v8_json`]: `jsprof convert --to heapprofile`), at any depth.
pub const MAX_V8_OBJECT_DEPTH: usize = MAX_HEAP_STACK_DEPTH as usize + 1;

/// Which objects a heap profile counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HeapView {
    /// Objects still alive when the profile was taken (V8's default).
    #[default]
    Inuse,
    /// Every sampled allocation, collected since or not.
    Allocated,
}

/// How V8 sampled, and when (`jsprof.heap`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeapSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
    /// Whether V8 could inline functions while it sampled: `Some(false)` when its inlining was off
    /// for the whole profile (code optimized before deoptimized at the start), so a function V8 would
    /// have inlined into its caller still has a frame of its own and its allocations; `None`: unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inlining: Option<bool>,
    /// Average bytes between samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_interval: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<f64>,
    #[serde(default)]
    pub view: HeapView,
}

/// The `jsprof` member of a heap profile: the heap settings beside the trace's own extension (the
/// recording's clock: `pid`, `threadId`, `timeOrigin`), one struct for both kinds of profile. `heap`
/// sorts before the extension's members, so the member stays in lexicographic order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeapInfo {
    pub heap: HeapSettings,
    #[serde(flatten)]
    pub clock: Extension,
}

/// A heap profile (see the module's documentation). `trace.samples[i]` is entry `i`, with
/// `sizes[i]` bytes in `counts[i]` of V8's samples.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeapProfile {
    pub trace: ProfilerTrace,
    pub sizes: Vec<u64>,
    pub counts: Vec<u64>,
    pub info: HeapInfo,
}

/// One entry as JSON has it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct HeapEntry {
    count: u64,
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stack_id: Option<u32>,
}

/// One entry as it is read: its size a JSON number, checked by the bytes rule both readers share
/// (`crate::v8::heap_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeapEntryIn {
    #[serde(default)]
    count: u64,
    size: f64,
    #[serde(default)]
    stack_id: Option<u32>,
}

#[derive(Serialize)]
struct HeapProfileOut<'a> {
    frames: &'a [Frame],
    jsprof: &'a HeapInfo,
    resources: &'a [String],
    samples: Vec<HeapEntry>,
    stacks: &'a [Stack],
}

#[derive(Deserialize)]
struct HeapProfileIn {
    frames: Vec<Frame>,
    jsprof: HeapInfo,
    resources: Vec<String>,
    samples: Vec<HeapEntryIn>,
    stacks: Vec<Stack>,
}

/// The trace sample that stands for an entry: no time, `script` with a stack, `other` without.
fn entry_sample(stack_id: Option<u32>) -> TraceSample {
    TraceSample {
        timestamp: 0.0,
        stack_id,
        marker: Some(if stack_id.is_some() {
            Marker::Script
        } else {
            Marker::Other
        }),
    }
}

/// How to turn V8's heap profile into ours.
#[derive(Debug, Clone, Default)]
pub struct FromV8Options<'a> {
    /// jsprof-node's own code, left out of the stacks (its allocations go to the code that called it).
    pub own: Option<&'a OwnCode>,
    /// Only V8's samples with a greater ordinal count: a profiler that joined a running sampler keeps
    /// the allocations made since it started.
    pub after_ordinal: Option<f64>,
    pub info: HeapInfo,
}

impl HeapProfile {
    /// The entries' sizes as the weights of [`HeapProfile::trace`]'s samples.
    pub(crate) fn weights(&self) -> Vec<f64> {
        self.sizes.iter().map(|&s| s as f64).collect()
    }

    /// Total bytes.
    pub fn total_size(&self) -> u64 {
        self.sizes.iter().fold(0u64, |a, &b| a.saturating_add(b))
    }

    /// Parses and validates a heap profile given as JSON text. A lone surrogate escape reads as the
    /// visible text `\u{d800}`, as in a trace. Every problem is a `Type` error.
    pub fn from_json(json: &str) -> Result<HeapProfile> {
        let parse = |json: &str| serde_json::from_str::<HeapProfileIn>(json);
        let raw = match parse(json) {
            Ok(raw) => raw,
            Err(e) => match lone_surrogates_visible(json) {
                std::borrow::Cow::Owned(fixed) => parse(&fixed),
                std::borrow::Cow::Borrowed(_) => Err(e),
            }
            .map_err(|e| {
                Error::invalid(format!(
                    "not a valid heap profile: {}",
                    crate::json_text::describe_error(json, &e)
                ))
            })?,
        };
        let invalid = |e: Error| Error::invalid(format!("not a valid heap profile: {}", e.message));
        let sizes = (raw.samples.iter().enumerate())
            .map(|(i, e)| heap_bytes(e.size, || format!("samples[{i}].size")))
            .collect::<Result<Vec<u64>>>()
            .map_err(invalid)?;
        let profile = HeapProfile {
            trace: ProfilerTrace {
                resources: raw.resources,
                frames: raw.frames,
                stacks: raw.stacks,
                samples: raw.samples.iter().map(|e| entry_sample(e.stack_id)).collect(),
                // The heap profile's own member is `info`; its entries have no times to weigh.
                jsprof: None,
            },
            sizes,
            counts: raw.samples.iter().map(|e| e.count).collect(),
            info: raw.jsprof,
        };
        profile.validate().map_err(invalid)?;
        Ok(profile)
    }

    /// The one check of a heap profile from outside: the tables by the trace's own validation (ids in
    /// range, no `parentId` cycle, every `stackId` in range), then the entries and settings.
    pub fn validate(&self) -> Result<()> {
        self.trace.validate()?;
        if self.sizes.len() != self.trace.samples.len() || self.counts.len() != self.trace.samples.len() {
            return Err(Error::invalid(
                "the entries' sizes and counts do not match its samples",
            ));
        }
        for (i, &size) in self.sizes.iter().enumerate() {
            heap_bytes_in_range(size, || format!("samples[{i}].size"))?;
        }
        let h = &self.info.heap;
        if let Some(v) = h.sampling_interval.filter(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(Error::invalid(format!(
                "jsprof.heap.samplingInterval must be a number of bytes > 0, got {v}"
            )));
        }
        self.info.clock.validate()?;
        for (name, t) in [("startTime", h.start_time), ("endTime", h.end_time)] {
            if let Some(t) = t.filter(|t| !t.is_finite() || t.abs() > 1e15) {
                return Err(Error::invalid(format!("jsprof.{name} {t:e} is not a time")));
            }
        }
        Ok(())
    }

    /// The profile as JSON text (members in lexicographic order).
    pub fn to_json(&self) -> String {
        let out = HeapProfileOut {
            frames: &self.trace.frames,
            jsprof: &self.info,
            resources: &self.trace.resources,
            samples: self
                .trace
                .samples
                .iter()
                .zip(self.sizes.iter().zip(&self.counts))
                .map(|(s, (&size, &count))| HeapEntry {
                    count,
                    size,
                    stack_id: s.stack_id,
                })
                .collect(),
            stacks: &self.trace.stacks,
        };
        // Plain strings and numbers (finite: validated): serializing cannot fail.
        serde_json::to_string(&out).unwrap_or_default()
    }

    /// V8's heap profile as ours: each of V8's samples (those after `options.after_ordinal`) goes to the
    /// stack of its node, by the V8 -> trace rules (pseudo-nodes are never frames; `options.own` hidden);
    /// a tree without samples (DevTools' older files) gives each node's `selfSize`, with count 0.
    /// Entries are in stack id order (first use), the stackless one first.
    pub fn from_v8(tree: &HeapTree, options: &FromV8Options) -> HeapProfile {
        let profile = &tree.profile;
        // Bytes and samples per node.
        let mut per_node: Vec<(f64, u64)> = vec![(0.0, 0); profile.nodes.len()];
        match &tree.samples {
            Some(samples) => {
                let mut left_out = false;
                for s in samples {
                    if options.after_ordinal.is_some_and(|after| s.ordinal <= after) {
                        left_out = true;
                        continue;
                    }
                    let slot = &mut per_node[s.node as usize];
                    slot.0 += s.size;
                    slot.1 += 1;
                }
                // All of them: each node's bytes are V8's own sum, its `selfSize` (what DevTools shows:
                // V8 scales a node's samples of one size together, and each sample apart, so the two
                // sums differ by rounding, well under 0.1%).
                if !left_out {
                    for (slot, &size) in per_node.iter_mut().zip(&tree.self_sizes) {
                        slot.0 = size;
                    }
                }
            }
            None => {
                for (slot, &size) in per_node.iter_mut().zip(&tree.self_sizes) {
                    slot.0 = size;
                }
            }
        }
        let mut builder = TraceBuilder::new();
        let converter = ProfileConverter::new(profile, 0.0);
        let mut converter = match options.own {
            Some(own) => converter.hiding(own),
            None => converter,
        };
        let mut per_stack: HashMap<Option<u32>, (f64, u64)> = HashMap::new();
        for (node, &(size, count)) in per_node.iter().enumerate() {
            if size <= 0.0 && count == 0 {
                continue;
            }
            let stack = converter.stack_of(&mut builder, node as u32);
            let slot = per_stack.entry(stack).or_insert((0.0, 0));
            slot.0 += size;
            slot.1 += count;
        }
        let mut entries: Vec<(Option<u32>, (f64, u64))> = per_stack.into_iter().collect();
        entries.sort_by_key(|(stack, _)| stack.map_or(0, |s| u64::from(s) + 1));
        let mut trace = builder.finish();
        trace.samples = entries.iter().map(|(stack, _)| entry_sample(*stack)).collect();
        HeapProfile {
            trace,
            sizes: entries
                .iter()
                .map(|(_, (size, _))| size.round().min(MAX_HEAP_BYTES as f64) as u64)
                .collect(),
            counts: entries.iter().map(|(_, (_, count))| *count).collect(),
            info: options.info.clone(),
        }
    }

    /// How deep its `.heapprofile` tree is: nodes from the root to the deepest leaf (the root, and the
    /// frames of the deepest stack; a stackless entry's `(program)` node is 2 deep).
    pub fn v8_tree_depth(&self) -> usize {
        let t = &self.trace;
        // Each stack's depth in frames, resolved without recursion (stacks are validated: acyclic).
        let mut depth: Vec<usize> = vec![0; t.stacks.len()];
        let mut chain = Vec::new();
        for start in 0..t.stacks.len() {
            let mut cursor = Some(start);
            while let Some(s) = cursor.filter(|&s| depth[s] == 0) {
                chain.push(s);
                cursor = t.stacks[s].parent_id.map(|p| p as usize);
            }
            let mut below = cursor.map_or(0, |s| depth[s]);
            while let Some(s) = chain.pop() {
                below += 1;
                depth[s] = below;
            }
        }
        let stackless = t.samples.iter().any(|s| s.stack_id.is_none());
        1 + depth.into_iter().max().unwrap_or(0).max(usize::from(stackless))
    }

    /// [`HeapProfile::to_v8_json`] for an object a program goes on to use (`toHeapProfile`): refused
    /// with a `Range` error past [`MAX_V8_OBJECT_DEPTH`], which `JSON.stringify` could not serialize.
    pub fn to_v8_object_json(&self) -> Result<String> {
        let depth = self.v8_tree_depth();
        if depth > MAX_V8_OBJECT_DEPTH {
            return Err(Error::range(format!(
                "this profile's .heapprofile tree is {depth} nodes deep, more than the {MAX_V8_OBJECT_DEPTH} \
                 an object may nest (the root and the deepest stack a HeapProfiler takes; JSON.stringify \
                 of a deeper one overflows the stack): write it as text with `jsprof convert --to heapprofile`"
            )));
        }
        Ok(self.to_v8_json())
    }

    /// V8's `.heapprofile` JSON of this profile (DevTools' Memory panel opens it; `node --heap-prof`
    /// writes the same format): `(root)`, a node per stack (positions back to 0-based), an entry's
    /// bytes as its node's `selfSize` and as `count` samples (at least one) whose sizes add up to it.
    /// Stackless entries hang under a `(program)` node, which reads back as stackless.
    pub fn to_v8_json(&self) -> String {
        let t = &self.trace;
        let mut nodes = vec![HeapNodeOut {
            name: "(root)".into(),
            url: String::new(),
            line: -1,
            column: -1,
            self_size: 0.0,
            parent: None,
        }];
        // Stack id -> node index (stacks are acyclic; a parent may come after its child in a hand-made
        // profile, so each stack's chain is resolved first).
        let mut node_of: Vec<Option<usize>> = vec![None; t.stacks.len()];
        let mut chain = Vec::new();
        for start in 0..t.stacks.len() {
            let mut cursor = Some(start);
            while let Some(s) = cursor.filter(|&s| node_of[s].is_none()) {
                chain.push(s);
                cursor = t.stacks[s].parent_id.map(|p| p as usize);
            }
            while let Some(s) = chain.pop() {
                let parent = t.stacks[s]
                    .parent_id
                    .map_or(0, |p| node_of[p as usize].unwrap_or(0));
                let f = &t.frames[t.stacks[s].frame_id as usize];
                let zero_based = |v: Option<u32>| v.map_or(-1, |v| i64::from(v) - 1);
                nodes.push(HeapNodeOut {
                    name: f.name.clone(),
                    url: f
                        .resource_id
                        .map(|r| t.resources[r as usize].clone())
                        .unwrap_or_default(),
                    line: zero_based(f.line),
                    column: zero_based(f.column),
                    self_size: 0.0,
                    parent: Some(parent),
                });
                node_of[s] = Some(nodes.len() - 1);
            }
        }
        let mut program = None;
        let mut samples = Vec::new();
        for (i, s) in t.samples.iter().enumerate() {
            let node = match s.stack_id {
                Some(id) => node_of[id as usize].unwrap_or(0),
                None => *program.get_or_insert_with(|| {
                    nodes.push(HeapNodeOut {
                        name: "(program)".into(),
                        url: String::new(),
                        line: -1,
                        column: -1,
                        self_size: 0.0,
                        parent: Some(0),
                    });
                    nodes.len() - 1
                }),
            };
            let (size, count) = (self.sizes[i], self.counts[i].max(1));
            nodes[node].self_size += size as f64;
            let each = size / count;
            for k in 0..count {
                let part = if k + 1 == count {
                    size - each * (count - 1)
                } else {
                    each
                };
                samples.push((node, part as f64));
            }
        }
        write_heap_profile(&nodes, &samples)
    }
}

/// A file the CLI was given, when it is a heap profile: V8's (`.heapprofile`, as `node --heap-prof` and
/// DevTools write it; converted with nothing hidden) or ours. `None` when it is neither (a trace or a
/// CPU profile: `crate::read_profile_file` reads those). An error's message is what follows the file's
/// name in the CLI's one line: `is not valid JSON (…)` (a `Syntax` error), `is not a valid V8 heap
/// profile: …`, `is not a valid heap profile: …`.
pub fn read_heap_file(text: &str) -> Option<Result<HeapProfile>> {
    let reword = |prefix: &str, with: &str, e: Error| {
        let reason = e.message.strip_prefix(prefix).unwrap_or(&e.message).to_owned();
        match e.kind {
            crate::ErrorKind::Syntax => Error::syntax(format!(
                "is not valid JSON ({})",
                reason
                    .strip_prefix("the heap profile is not valid JSON: ")
                    .unwrap_or(&reason)
            )),
            _ => Error::invalid(format!("{with}{reason}")),
        }
    };
    match heap_file_kind(text) {
        HeapFileKind::Other => None,
        HeapFileKind::V8 => Some(
            HeapTree::from_json(text)
                .map(|tree| HeapProfile::from_v8(&tree, &FromV8Options::default()))
                .map_err(|e| reword("invalid V8 heap profile: ", "is not a valid V8 heap profile: ", e)),
        ),
        HeapFileKind::Ours => Some(
            HeapProfile::from_json(text)
                .map_err(|e| reword("not a valid heap profile: ", "is not a valid heap profile: ", e)),
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `main -> leak` in lodash-like dependency code, and an allocation with no JS (`(V8 API)`).
    pub(crate) const V8_PROFILE: &str = r#"{"head":{"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":0,"id":1,"children":[
        {"callFrame":{"functionName":"main","scriptId":"3","url":"file:///app/main.js","lineNumber":0,"columnNumber":0},"selfSize":100,"id":2,"children":[
            {"callFrame":{"functionName":"remember","scriptId":"4","url":"file:///app/node_modules/leaky/index.js","lineNumber":9,"columnNumber":2},"selfSize":300,"id":3,"children":[]}]},
        {"callFrame":{"functionName":"(V8 API)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"selfSize":50,"id":4,"children":[]}]},
      "samples":[{"size":100,"nodeId":2,"ordinal":1},{"size":200,"nodeId":3,"ordinal":2},{"size":100,"nodeId":3,"ordinal":3},{"size":50,"nodeId":4,"ordinal":4}]}"#;

    pub(crate) fn heap_profile() -> HeapProfile {
        HeapProfile::from_v8(
            &HeapTree::from_json(V8_PROFILE).unwrap(),
            &FromV8Options::default(),
        )
    }

    #[test]
    fn converts_v8_samples_to_stacks_with_bytes_and_counts() {
        let h = heap_profile();
        let t = &h.trace;
        assert_eq!(
            t.resources,
            vec!["file:///app/main.js", "file:///app/node_modules/leaky/index.js"]
        );
        let names: Vec<&str> = t.frames.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["main", "remember", "(V8 API)"]);
        assert_eq!(
            (t.frames[1].line, t.frames[1].column),
            (Some(10), Some(3)),
            "1-based"
        );
        assert_eq!(t.samples.len(), 3);
        let leak = t.samples.iter().position(|s| s.stack_id == Some(1)).unwrap();
        assert_eq!((h.sizes[leak], h.counts[leak]), (300, 2));
        assert_eq!(h.total_size(), 450);
        // Only the samples after an ordinal.
        let later = HeapProfile::from_v8(
            &HeapTree::from_json(V8_PROFILE).unwrap(),
            &FromV8Options {
                after_ordinal: Some(2.0),
                ..Default::default()
            },
        );
        assert_eq!(later.total_size(), 150);
        assert_eq!(later.counts.iter().sum::<u64>(), 2);
    }

    #[test]
    fn bytes_are_v8s_selfsize_when_every_sample_counts() {
        // V8 scales a node's samples of one size together for selfSize and each sample apart: the two
        // sums differ by rounding. With every sample, the node's bytes are V8's selfSize (DevTools').
        let text = V8_PROFILE.replace(r#""selfSize":300"#, r#""selfSize":301"#);
        let tree = HeapTree::from_json(&text).unwrap();
        let all = HeapProfile::from_v8(&tree, &FromV8Options::default());
        let leak = all
            .trace
            .samples
            .iter()
            .position(|s| s.stack_id == Some(1))
            .unwrap();
        assert_eq!((all.sizes[leak], all.counts[leak]), (301, 2));
        // Some samples left out: the sum of those kept.
        let later = HeapProfile::from_v8(
            &tree,
            &FromV8Options {
                after_ordinal: Some(1.0),
                ..Default::default()
            },
        );
        let leak = later
            .trace
            .samples
            .iter()
            .position(|s| s.stack_id == Some(1))
            .unwrap();
        assert_eq!((later.sizes[leak], later.counts[leak]), (300, 2));
    }

    #[test]
    fn hides_own_code_and_its_callees() {
        let own = OwnCode::new(["file:///app/node_modules/leaky/".to_owned()]);
        let h = HeapProfile::from_v8(
            &HeapTree::from_json(V8_PROFILE).unwrap(),
            &FromV8Options {
                own: Some(&own),
                ..Default::default()
            },
        );
        assert!(h.trace.frames.iter().all(|f| f.name != "remember"));
        // The hidden frame's bytes go to its caller's stack.
        let main = h
            .trace
            .samples
            .iter()
            .position(|s| s.stack_id == Some(0))
            .unwrap();
        assert_eq!((h.sizes[main], h.counts[main]), (400, 3));
    }

    #[test]
    fn reads_selfsize_when_there_are_no_samples() {
        let text = V8_PROFILE
            .split(",\n      \"samples\"")
            .next()
            .unwrap()
            .to_owned()
            + "}";
        let h = HeapProfile::from_v8(&HeapTree::from_json(&text).unwrap(), &FromV8Options::default());
        assert_eq!(h.total_size(), 450);
        assert!(h.counts.iter().all(|&c| c == 0));
    }

    #[test]
    fn json_round_trips_and_validates_once() {
        let mut h = heap_profile();
        h.info = HeapInfo {
            heap: HeapSettings {
                sampling_interval: Some(524288.0),
                stack_depth: Some(64),
                start_time: Some(1.5),
                end_time: Some(99.25),
                inlining: Some(false),
                view: HeapView::Allocated,
            },
            clock: Extension {
                pid: Some(42),
                thread_id: Some(0),
                time_origin: Some(1.7e12),
                ..Extension::default()
            },
        };
        let json = h.to_json();
        assert!(
            json.starts_with(r#"{"frames":[{"column":1,"line":1,"name":"main","resourceId":0}"#),
            "{json}"
        );
        assert!(json.contains(r#""jsprof":{"heap":{"endTime":99.25,"inlining":false,"samplingInterval":524288.0,"stackDepth":64,"startTime":1.5,"view":"allocated"},"pid":42,"threadId":0,"timeOrigin":1700000000000.0}"#), "{json}");
        assert!(
            json.contains(r#""samples":[{"count":2,"size":300,"stackId":1}"#)
                || json.contains(r#"{"count":2,"size":300,"stackId":1}"#),
            "{json}"
        );
        assert_eq!(HeapProfile::from_json(&json).unwrap(), h);
        let bad = [
            (
                json.replace(r#""stackId":1"#, r#""stackId":9"#),
                "samples[1].stackId 9 is out of range",
            ),
            (json.replace(r#""size":300"#, r#""size":-1"#), "samples[1].size"),
            (
                json.replace(r#""frameId":1"#, r#""frameId":7"#),
                "frameId 7 is out of range",
            ),
            (
                json.replace(r#""samplingInterval":524288.0"#, r#""samplingInterval":0"#),
                "samplingInterval must be",
            ),
            (
                json.replace(r#""view":"allocated""#, r#""view":"live""#),
                "jsprof.heap.view",
            ),
            (
                json.replace(r#""heap":{"#, r#""hep":{"x":1,"#),
                "missing field `heap`",
            ),
        ];
        for (text, message) in bad {
            let e = HeapProfile::from_json(&text).unwrap_err();
            assert_eq!(e.kind, crate::ErrorKind::Type);
            assert!(
                e.message.starts_with("not a valid heap profile: "),
                "{}",
                e.message
            );
            assert!(e.message.contains(message), "{} vs {message}", e.message);
        }
    }

    /// A profile of one entry whose stack is a chain of `frames` frames.
    fn chain(frames: usize) -> HeapProfile {
        let mut h = heap_profile();
        let t = &mut h.trace;
        t.stacks = (0..frames)
            .map(|i| Stack {
                frame_id: 0,
                parent_id: i.checked_sub(1).map(|p| p as u32),
            })
            .collect();
        t.samples = vec![entry_sample(Some(frames as u32 - 1))];
        h.sizes = vec![4096];
        h.counts = vec![1];
        h
    }

    #[test]
    fn an_object_tree_is_as_deep_as_json_stringify_serializes_and_text_any_depth() {
        assert_eq!(heap_profile().v8_tree_depth(), 3, "(root), main, remember");
        let mut stackless = heap_profile();
        stackless.trace.stacks.clear();
        stackless.trace.samples = vec![entry_sample(None)];
        stackless.sizes = vec![1];
        stackless.counts = vec![1];
        assert_eq!(stackless.v8_tree_depth(), 2, "(root), (program)");
        let deepest = chain(MAX_HEAP_STACK_DEPTH as usize);
        assert_eq!(deepest.v8_tree_depth(), MAX_V8_OBJECT_DEPTH);
        assert_eq!(deepest.to_v8_object_json().unwrap(), deepest.to_v8_json());
        let deeper = chain(100_000);
        let e = deeper.to_v8_object_json().unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Range);
        assert!(
            e.message.contains("100001 nodes deep, more than the 1025"),
            "{}",
            e.message
        );
        // As text it goes at any depth, and reads back.
        let back = HeapTree::from_json(&deeper.to_v8_json()).unwrap();
        assert_eq!(back.profile.nodes.len(), 100_001);
    }

    #[test]
    fn both_readers_take_bytes_by_one_rule() {
        // What V8's reader refuses, ours refuses, with the same words: whole bytes from 0 to 2^53.
        let ours = heap_profile().to_json();
        for (size, shown) in [
            ("1e308", "1e308"),
            ("9007199254740994", "9007199254740994"),
            ("1.5", "1.5"),
            ("-1", "-1"),
        ] {
            let tail =
                format!("samples[1].size {shown} is not a number of bytes (a whole number from 0 to 2^53)");
            let e = HeapProfile::from_json(&ours.replace(r#""size":300"#, &format!(r#""size":{size}"#)))
                .unwrap_err();
            assert_eq!(e.message, format!("not a valid heap profile: {tail}"));
            let v8 = V8_PROFILE.replacen(r#""size":100"#, &format!(r#""size":{size}"#), 1);
            assert_ne!(v8, V8_PROFILE);
            let e = HeapTree::from_json(&v8).unwrap_err();
            assert!(e.message.ends_with(&tail.replace("[1]", "[0]")), "{}", e.message);
        }
        // 2^53 itself is a number of bytes in both.
        let max = ours.replace(r#""size":300"#, r#""size":9007199254740992"#);
        assert_eq!(HeapProfile::from_json(&max).unwrap().sizes[1], MAX_HEAP_BYTES);
        assert!(
            HeapTree::from_json(&V8_PROFILE.replacen(r#""size":100"#, r#""size":9007199254740992"#, 1))
                .is_ok()
        );
        // A profile made in memory is held to it too.
        let mut h = heap_profile();
        h.sizes[1] = MAX_HEAP_BYTES + 2;
        assert!(h
            .validate()
            .unwrap_err()
            .message
            .contains("is not a number of bytes"));
    }

    #[test]
    fn reads_heap_files_of_either_kind_and_says_what_is_wrong() {
        let ours = heap_profile().to_json();
        assert_eq!(read_heap_file(&ours).unwrap().unwrap(), heap_profile());
        assert_eq!(read_heap_file(V8_PROFILE).unwrap().unwrap(), heap_profile());
        assert!(read_heap_file(r#"{"nodes":[]}"#).is_none());
        let e = read_heap_file(r#"{"head":{"id":1,"children":[{"id":1}]}}"#)
            .unwrap()
            .unwrap_err();
        assert_eq!(
            e.message,
            "is not a valid V8 heap profile: node id 1 appears twice"
        );
        let e = read_heap_file(r#"{"head":{"id":1,"#).unwrap().unwrap_err();
        assert_eq!(
            (e.kind, e.message.as_str()),
            (
                crate::ErrorKind::Syntax,
                "is not valid JSON (unexpected end of the text at line 1 column 17)"
            )
        );
        let e = read_heap_file(&ours.replace(r#""size":300"#, r#""size":"x""#))
            .unwrap()
            .unwrap_err();
        assert!(
            e.message
                .starts_with("is not a valid heap profile: samples[1].size: string"),
            "{}",
            e.message
        );
    }

    #[test]
    fn writes_a_v8_heap_profile_that_reads_back_the_same() {
        let h = heap_profile();
        let v8 = h.to_v8_json();
        let back = HeapProfile::from_v8(&HeapTree::from_json(&v8).unwrap(), &FromV8Options::default());
        assert_eq!(back.trace, h.trace);
        assert_eq!(
            (back.sizes.clone(), back.counts.clone()),
            (h.sizes.clone(), h.counts.clone())
        );
        // A stackless entry and an entry of 3 samples whose bytes do not divide evenly.
        let mut odd = h.clone();
        odd.trace.samples.push(entry_sample(None));
        odd.sizes.push(10);
        odd.counts.push(3);
        let back = HeapProfile::from_v8(
            &HeapTree::from_json(&odd.to_v8_json()).unwrap(),
            &FromV8Options::default(),
        );
        let stackless = back
            .trace
            .samples
            .iter()
            .position(|s| s.stack_id.is_none())
            .unwrap();
        assert_eq!((back.sizes[stackless], back.counts[stackless]), (10, 3));
    }
}
