//! The V8 CPU profile format (`nodes` + `samples` + `timeDeltas`), as the inspector's `Profiler.stop`,
//! `node --cpu-prof` and Chrome DevTools write it, in both directions. It knows nothing of traces.
//!
//! - Here: the validated model ([`Profile`]: a tree whose parents are known and acyclic, samples that
//!   name real nodes, times rebuilt from the signed running sum of `timeDeltas`) and the one validator
//!   every road into it shares ([`ProfileBuilder`], [`NodeIds`], [`SampleClock`]).
//! - [`read`]: JSON text read whole ([`Profile::from_json`]), the road that words every error.
//! - [`inspector`]: the columns the sampler packs from an inspector reply it already holds
//!   ([`Profile::from_inspector`]).
//! - [`write`](mod@write): the JSON written back ([`CpuProfile`]), for `toCpuProfile` and `jsprof record`'s
//!   side file.
//! - [`heap`]: V8's *sampling heap profile* (`.heapprofile`), read and written without recursion; its tree
//!   goes through the same [`ProfileBuilder`], so its nodes are a [`Profile`]'s.
//!
//! The one pass from JSON text straight to a trace (`crate::convert::one_pass`) also validates through
//! [`ProfileBuilder`].

mod heap;
mod inspector;
mod read;
mod write;

pub(crate) use heap::{heap_bytes, heap_bytes_in_range, heap_file_kind, HeapFileKind, MAX_HEAP_BYTES};
pub use heap::{write_heap_profile, HeapNodeOut, HeapTree, HeapTreeSample};
pub use inspector::InspectorColumns;
pub(crate) use read::RawCallFrame;
pub(crate) use read::RawLineTicks;
pub use write::{CallFrame, CpuProfile, CpuProfileNode};

use crate::error::{Error, Result};
use crate::interner::Interner;
use foldhash::HashMap;

/// What a node of V8's tree stands for. The four pseudo-nodes are never frames of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// `(root)`: the top of the tree.
    Root,
    /// `(program)`: native or VM work outside JS.
    Program,
    /// `(idle)`: Node's event loop waiting in its poll phase.
    Idle,
    /// `(garbage collector)`.
    GarbageCollector,
    /// Script functions, builtins (`now`, `dispatch`), `RegExp: …` code: everything that is a frame.
    Code,
}

impl NodeKind {
    fn classify(name: &str, url: &str) -> NodeKind {
        if !url.is_empty() {
            return NodeKind::Code;
        }
        match name {
            "(root)" => NodeKind::Root,
            "(program)" => NodeKind::Program,
            "(idle)" => NodeKind::Idle,
            "(garbage collector)" => NodeKind::GarbageCollector,
            _ => NodeKind::Code,
        }
    }
}

/// One node of V8's call tree. Strings are indexes into [`Profile::strings`]; positions are the
/// inspector's **0-based** values, `-1` when unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub parent: Option<u32>,
    pub kind: NodeKind,
    pub name: u32,
    pub url: u32,
    pub line: i32,
    pub column: i32,
}

/// One sample: the leaf node it hit and its time in µs on V8's clock (the `process.hrtime` clock).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub node: u32,
    pub time: f64,
}

/// V8's per-line ticks of a node (its `positionTicks`): `ticks` of the node's own samples were taken on
/// 1-based `line` — of the innermost function V8 ran there, which may be a function inlined into the
/// node's (`crate::convert::inlined`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTicks {
    pub node: u32,
    pub line: u32,
    pub ticks: u32,
}

/// A validated V8 CPU profile: a tree whose parents are known and acyclic, samples naming real nodes,
/// sample times rebuilt from the signed running sum of `timeDeltas`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    pub nodes: Vec<Node>,
    pub samples: Vec<Sample>,
    pub strings: Vec<String>,
    pub start_time: f64,
    pub end_time: f64,
    /// Every node's `positionTicks`, in node order.
    pub line_ticks: Vec<LineTicks>,
}

impl Profile {
    pub fn string(&self, index: u32) -> &str {
        &self.strings[index as usize]
    }
}

/// Validates and builds a [`Profile`] from nodes given one at a time, then their links, then samples.
pub struct ProfileBuilder {
    nodes: Vec<Node>,
    ids: Vec<i64>,
    index_of: HashMap<i64, u32>,
    strings: Interner<String>,
    line_ticks: Vec<LineTicks>,
}

impl ProfileBuilder {
    pub fn with_capacity(nodes: usize) -> Self {
        ProfileBuilder {
            nodes: Vec::with_capacity(nodes),
            ids: Vec::with_capacity(nodes),
            index_of: HashMap::with_capacity_and_hasher(nodes, Default::default()),
            strings: Interner::new(),
            line_ticks: Vec::new(),
        }
    }

    /// How many nodes were added.
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Adds one of the `positionTicks` of the node at `index` (in insertion order): `ticks` samples on
    /// 1-based `line`. A line below 1 or past 2^32, or ticks below 0 or past 2^32, is an error.
    pub fn add_line_ticks(&mut self, index: usize, line: i64, ticks: i64) -> Result<()> {
        self.check_index(index)?;
        let id = self.ids[index];
        let line = u32::try_from(line).ok().filter(|&l| l >= 1).ok_or_else(|| {
            Error::invalid(format!(
                "invalid V8 CPU profile: node id {id}: positionTicks line {line} is not a line number (1 or more)"
            ))
        })?;
        let ticks = u32::try_from(ticks).map_err(|_| {
            Error::invalid(format!(
                "invalid V8 CPU profile: node id {id}: positionTicks ticks {ticks} is not a count"
            ))
        })?;
        self.line_ticks.push(LineTicks {
            node: index as u32,
            line,
            ticks,
        });
        Ok(())
    }

    /// Adds a node; `line`/`column` are the inspector's 0-based values (negative = unknown).
    pub fn add_node(&mut self, id: i64, name: &str, url: &str, line: i64, column: i64) -> Result<()> {
        if self.nodes.len() >= u32::MAX as usize {
            return Err(Error::invalid("invalid V8 CPU profile: too many nodes"));
        }
        let index = self.nodes.len() as u32;
        if self.index_of.insert(id, index).is_some() {
            return Err(Error::invalid(format!(
                "invalid V8 CPU profile: node id {id} appears twice"
            )));
        }
        let kind = NodeKind::classify(name, url);
        let name = self.strings.id(name);
        let url = self.strings.id(url);
        let clamp = |v: i64| {
            if v < 0 {
                -1
            } else {
                v.min(i32::MAX as i64 - 1) as i32
            }
        };
        self.nodes.push(Node {
            parent: None,
            kind,
            name,
            url,
            line: clamp(line),
            column: clamp(column),
        });
        self.ids.push(id);
        Ok(())
    }

    fn index(&self, id: i64, what: impl FnOnce() -> String) -> Result<u32> {
        self.index_of.get(&id).copied().ok_or_else(|| {
            Error::invalid(format!(
                "invalid V8 CPU profile: {} names unknown node id {id}",
                what()
            ))
        })
    }

    fn link(&mut self, parent: u32, child: u32) -> Result<()> {
        let slot = &mut self.nodes[child as usize].parent;
        match *slot {
            Some(existing) if existing != parent => Err(Error::invalid(format!(
                "invalid V8 CPU profile: node {} has two parents ({} and {}); the nodes must form a tree",
                self.ids[child as usize], self.ids[existing as usize], self.ids[parent as usize]
            ))),
            _ if parent == child => Err(Error::invalid(format!(
                "invalid V8 CPU profile: node {} is its own child (the node tree is cyclic)",
                self.ids[child as usize]
            ))),
            _ => {
                *slot = Some(parent);
                Ok(())
            }
        }
    }

    fn check_index(&self, index: usize) -> Result<()> {
        if index >= self.nodes.len() {
            return Err(Error::invalid(format!(
                "invalid V8 CPU profile: node index {index} is past the {} nodes",
                self.nodes.len()
            )));
        }
        Ok(())
    }

    /// Links the node at `index` (in insertion order) to its children, given by id.
    pub fn set_children(&mut self, index: usize, children: &[i64]) -> Result<()> {
        self.check_index(index)?;
        let parent = index as u32;
        let parent_id = self.ids.get(index).copied().unwrap_or_default();
        for &child_id in children {
            let child = self.index(child_id, || format!("the children of node {parent_id}"))?;
            self.link(parent, child)?;
        }
        Ok(())
    }

    /// Links the node at `index` to its parent, given by id (the older DevTools form).
    pub fn set_parent(&mut self, index: usize, parent_id: i64) -> Result<()> {
        self.check_index(index)?;
        let child_id = self.ids.get(index).copied().unwrap_or_default();
        let parent = self.index(parent_id, || format!("the parent of node {child_id}"))?;
        self.link(parent, index as u32)
    }

    /// Checks that following parents always ends at a node without one (no cycles), in O(nodes).
    fn check_acyclic(&self) -> Result<()> {
        // 0 = unvisited, 1 = on the current path, 2 = known to reach a top node.
        let mut state = vec![0u8; self.nodes.len()];
        let mut path = Vec::new();
        for start in 0..self.nodes.len() {
            let mut cursor = Some(start as u32);
            while let Some(node) = cursor {
                match state[node as usize] {
                    2 => break,
                    1 => {
                        return Err(Error::invalid(format!(
                            "invalid V8 CPU profile: the node tree is cyclic (node {} is its own ancestor)",
                            self.ids[node as usize]
                        )))
                    }
                    _ => {
                        state[node as usize] = 1;
                        path.push(node);
                        cursor = self.nodes[node as usize].parent;
                    }
                }
            }
            for node in path.drain(..) {
                state[node as usize] = 2;
            }
        }
        Ok(())
    }

    /// V8 numbers its nodes 1..=n: then a table indexed by id (`u32::MAX` = no such node) finds each
    /// sample's node without hashing. `None` when the ids are too sparse for a table to pay.
    fn dense_index(&self) -> Option<Vec<u32>> {
        let max = *self.ids.iter().max()?;
        let min = *self.ids.iter().min()?;
        let limit = self.ids.len().saturating_mul(4).saturating_add(64);
        if min < 0 || usize::try_from(max).map_or(true, |max| max >= limit) {
            return None;
        }
        let mut table = vec![u32::MAX; max as usize + 1];
        for (index, &id) in self.ids.iter().enumerate() {
            table[id as usize] = index as u32;
        }
        Some(table)
    }

    /// The validated tree (no cycles) as a [`Profile`] without samples, and how sample ids find their
    /// nodes.
    pub(crate) fn into_tree(self) -> Result<(Profile, NodeIds)> {
        self.check_acyclic()?;
        let ids = NodeIds {
            dense: self.dense_index(),
            index_of: self.index_of,
        };
        let mut line_ticks = self.line_ticks;
        line_ticks.sort_by_key(|t| t.node);
        let profile = Profile {
            nodes: self.nodes,
            samples: Vec::new(),
            strings: self.strings.into_values(),
            start_time: 0.0,
            end_time: 0.0,
            line_ticks,
        };
        Ok((profile, ids))
    }

    /// Validates the tree and the samples; sample times are `start_time` plus the signed running sum of
    /// `deltas` (V8 may reorder samples, so a delta can be negative; the order is kept as V8 gave it).
    pub fn finish(self, samples: &[i64], deltas: &[f64], start_time: f64, end_time: f64) -> Result<Profile> {
        if samples.len() != deltas.len() {
            return Err(Error::invalid(format!(
                "invalid V8 CPU profile: samples ({}) and timeDeltas ({}) have different lengths",
                samples.len(),
                deltas.len()
            )));
        }
        if !start_time.is_finite() || !end_time.is_finite() {
            return Err(Error::invalid(
                "invalid V8 CPU profile: startTime and endTime must be finite numbers",
            ));
        }
        let (mut profile, ids) = self.into_tree()?;
        let mut clock = SampleClock::new(start_time);
        let mut out = Vec::with_capacity(samples.len());
        for (i, (&id, &delta)) in samples.iter().zip(deltas).enumerate() {
            let time = clock.advance(i, delta)?;
            out.push(Sample {
                node: ids.sample_node(i, id)?,
                time,
            });
        }
        profile.samples = out;
        profile.start_time = start_time;
        profile.end_time = end_time;
        Ok(profile)
    }
}

/// How the ids in `samples` find their nodes: a table indexed by id when V8 numbered the nodes 1..=n
/// (no hashing per sample), the map of every id otherwise.
pub(crate) struct NodeIds {
    dense: Option<Vec<u32>>,
    index_of: HashMap<i64, u32>,
}

impl NodeIds {
    /// The node index of `samples[i]`, whose id is `id`.
    #[inline]
    pub(crate) fn sample_node(&self, i: usize, id: i64) -> Result<u32> {
        let known = self
            .dense
            .as_deref()
            .and_then(|table| usize::try_from(id).ok().and_then(|id| table.get(id)));
        match known {
            Some(&node) if node != u32::MAX => Ok(node),
            _ => self.index_of.get(&id).copied().ok_or_else(|| {
                Error::invalid(format!(
                    "invalid V8 CPU profile: samples[{i}] names unknown node id {id}"
                ))
            }),
        }
    }
}

/// Sample times: `startTime` plus the signed running sum of `timeDeltas`, each checked.
pub(crate) struct SampleClock {
    time: f64,
}

impl SampleClock {
    pub(crate) fn new(start_time: f64) -> Self {
        SampleClock { time: start_time }
    }

    /// The time of sample `i`, whose delta is `delta`.
    #[inline]
    pub(crate) fn advance(&mut self, i: usize, delta: f64) -> Result<f64> {
        if !delta.is_finite() {
            return Err(Error::invalid(format!(
                "invalid V8 CPU profile: timeDeltas[{i}] is not a finite number"
            )));
        }
        self.time += delta;
        if !self.time.is_finite() {
            return Err(Error::invalid(format!(
                "invalid V8 CPU profile: the sample time overflows at timeDeltas[{i}]"
            )));
        }
        Ok(self.time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const SMALL: &str = r#"{"nodes":[
        {"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":0,"children":[2,3]},
        {"id":2,"callFrame":{"functionName":"(program)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":1},
        {"id":3,"callFrame":{"functionName":"main","scriptId":"7","url":"file:///app/a.js","lineNumber":4,"columnNumber":13},"hitCount":1}
      ],"startTime":1000,"endTime":2000,"samples":[2,3,3],"timeDeltas":[10,20,-5]}"#;

    #[test]
    fn parses_tree_samples_and_signed_times() {
        let p = Profile::from_json(SMALL).unwrap();
        assert_eq!(p.nodes.len(), 3);
        assert_eq!(p.nodes[0].kind, NodeKind::Root);
        assert_eq!(p.nodes[1].kind, NodeKind::Program);
        assert_eq!(p.nodes[2].kind, NodeKind::Code);
        assert_eq!(p.nodes[2].parent, Some(0));
        assert_eq!(p.string(p.nodes[2].url), "file:///app/a.js");
        assert_eq!((p.nodes[2].line, p.nodes[2].column), (4, 13));
        let times: Vec<f64> = p.samples.iter().map(|s| s.time).collect();
        assert_eq!(times, vec![1010.0, 1030.0, 1025.0]);
    }

    #[test]
    fn accepts_the_inspector_reply_wrapper() {
        let wrapped = format!("{{\"profile\":{SMALL}}}");
        assert_eq!(
            Profile::from_json(&wrapped).unwrap(),
            Profile::from_json(SMALL).unwrap()
        );
    }

    #[test]
    fn accepts_parent_links() {
        let text = r#"{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":""}},
            {"id":2,"parent":1,"callFrame":{"functionName":"f","url":"file:///f.js","lineNumber":0,"columnNumber":0}}],
            "startTime":0,"endTime":1,"samples":[2],"timeDeltas":[1]}"#;
        let p = Profile::from_json(text).unwrap();
        assert_eq!(p.nodes[1].parent, Some(0));
    }

    #[test]
    fn reads_a_lone_surrogate_as_visible_text() {
        let text = r#"{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":""}},
            {"id":2,"parent":1,"callFrame":{"functionName":"f\udc00","url":"file:///f.js"}}],
            "startTime":0,"endTime":1,"samples":[2],"timeDeltas":[1]}"#;
        let p = Profile::from_json(text).unwrap();
        assert_eq!(p.string(p.nodes[1].name), "f\\u{dc00}");
        // Still an error when something else is wrong too.
        assert_eq!(err(&text.replace("[2]", "[2,")).kind, ErrorKind::Syntax);
    }

    fn err(text: &str) -> Error {
        Profile::from_json(text).unwrap_err()
    }

    #[test]
    fn an_absent_end_time_is_the_start_but_a_null_one_is_refused() {
        let base = r#"{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":""}},
            {"id":2,"parent":1,"callFrame":{"functionName":"f","url":"file:///f.js"}}],
            "startTime":5,END"samples":[2],"timeDeltas":[1]}"#;
        let p = Profile::from_json(&base.replace("END", "")).unwrap();
        assert_eq!(p.end_time, 5.0);
        // A JS object's Infinity or NaN reaches Rust as null through JSON.stringify.
        let e = err(&base.replace("END", r#""endTime":null,"#));
        assert_eq!(e.kind, ErrorKind::Type);
        assert!(e.message.contains("`endTime` is null"), "{}", e.message);
        let e = err(&base
            .replace(r#""startTime":5,"#, r#""startTime":null,"#)
            .replace("END", ""));
        assert!(e.message.contains("`startTime` is null"), "{}", e.message);
        assert!(err(&base.replace("END", r#""endTime":1e400,"#))
            .message
            .contains("endTime"));
    }

    #[test]
    fn rejects_text_that_is_not_json_as_syntax() {
        let e = err("{nodes:");
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert!(e.message.contains("not valid JSON"), "{}", e.message);
    }

    #[test]
    fn rejects_missing_arrays() {
        let e = err(r#"{"startTime":0,"samples":[],"timeDeltas":[]}"#);
        assert_eq!(e.kind, ErrorKind::Type);
        assert!(e.message.contains("`nodes` is missing"), "{}", e.message);
        let e = err(r#"{"nodes":[],"startTime":0,"timeDeltas":[]}"#);
        assert!(e.message.contains("`samples` is missing"), "{}", e.message);
        let e = err(r#"{"nodes":[],"startTime":0,"samples":[]}"#);
        assert!(e.message.contains("`timeDeltas` is missing"), "{}", e.message);
        let e = err(r#"{"nodes":{},"startTime":0,"samples":[],"timeDeltas":[]}"#);
        assert_eq!(e.kind, ErrorKind::Type);
    }

    #[test]
    fn rejects_length_mismatch() {
        let e = err(&SMALL.replace("[10,20,-5]", "[10,20]"));
        assert!(
            e.message.contains("samples (3) and timeDeltas (2)"),
            "{}",
            e.message
        );
    }

    #[test]
    fn rejects_unknown_sample_node() {
        let e = err(&SMALL.replace("[2,3,3]", "[2,3,9]"));
        assert!(
            e.message.contains("samples[2] names unknown node id 9"),
            "{}",
            e.message
        );
    }

    #[test]
    fn finds_sample_nodes_with_dense_and_sparse_ids() {
        // Sparse ids (no table): the samples still find their nodes, and unknown ids are still named.
        let sparse = SMALL
            .replace("[2,3]", "[2000000,3000000]")
            .replace("\"id\":2", "\"id\":2000000");
        let sparse = sparse
            .replace("\"id\":3", "\"id\":3000000")
            .replace("[2,3,3]", "[2000000,3000000,3000000]");
        let p = Profile::from_json(&sparse).unwrap();
        assert_eq!(
            p.samples.iter().map(|s| s.node).collect::<Vec<_>>(),
            vec![1, 2, 2]
        );
        let e = err(&sparse.replace("[2000000,3000000,3000000]", "[2000000,4,3000000]"));
        assert!(
            e.message.contains("samples[1] names unknown node id 4"),
            "{}",
            e.message
        );
        // Dense ids: negative, absent and past-the-end ids are unknown too.
        for bad in ["-1", "0", "4", "70", "9223372036854775807"] {
            let e = err(&SMALL.replace("[2,3,3]", &format!("[2,{bad},3]")));
            assert!(
                e.message
                    .contains(&format!("samples[1] names unknown node id {bad}")),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn rejects_unknown_child_and_duplicate_ids() {
        let e = err(&SMALL.replace("[2,3]", "[2,42]"));
        assert!(e.message.contains("unknown node id 42"), "{}", e.message);
        let e = err(&SMALL.replace("\"id\":3", "\"id\":2"));
        assert!(e.message.contains("appears twice"), "{}", e.message);
    }

    #[test]
    fn rejects_cycles() {
        // 2 -> 3 -> 2, detached from the root.
        let text = r#"{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":""}},
            {"id":2,"callFrame":{"functionName":"a","url":""},"children":[3]},
            {"id":3,"callFrame":{"functionName":"b","url":""},"children":[2]}],
            "startTime":0,"samples":[2],"timeDeltas":[1]}"#;
        let e = err(text);
        assert!(e.message.contains("cyclic"), "{}", e.message);
        let selfloop = r#"{"nodes":[{"id":1,"callFrame":{"functionName":"a","url":""},"children":[1]}],
            "startTime":0,"samples":[],"timeDeltas":[]}"#;
        assert!(err(selfloop).message.contains("cyclic"));
        let two_parents = r#"{"nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":""},"children":[2,3]},
            {"id":2,"callFrame":{"functionName":"a","url":""},"children":[3]},
            {"id":3,"callFrame":{"functionName":"b","url":""}}],
            "startTime":0,"samples":[],"timeDeltas":[]}"#;
        assert!(err(two_parents).message.contains("two parents"));
    }

    #[test]
    fn rejects_out_of_range_indexes_and_overflowing_times() {
        let mut b = ProfileBuilder::with_capacity(1);
        b.add_node(1, "(root)", "", -1, -1).unwrap();
        assert!(b
            .set_children(1, &[1])
            .unwrap_err()
            .message
            .contains("past the 1 nodes"));
        assert!(b.set_parent(7, 1).is_err());
        let e = b.finish(&[1, 1], &[f64::MAX, f64::MAX], 0.0, 0.0).unwrap_err();
        assert!(e.message.contains("overflows at timeDeltas[1]"), "{}", e.message);
    }

    #[test]
    fn pseudo_names_with_a_url_are_code() {
        assert_eq!(NodeKind::classify("(idle)", "file:///x.js"), NodeKind::Code);
        assert_eq!(NodeKind::classify("(idle)", ""), NodeKind::Idle);
        assert_eq!(
            NodeKind::classify("(garbage collector)", ""),
            NodeKind::GarbageCollector
        );
    }
}
