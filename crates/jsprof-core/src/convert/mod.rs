//! V8 -> trace: the rules that turn V8 samples into the spec's trace, for every road a profile comes by
//! (a [`Profile`] here, JSON text in one pass in [`one_pass`], a recording's chunks in
//! `crate::recording`). It reads the V8 format (`crate::v8`) and fills a [`TraceBuilder`]; nothing here
//! knows about recordings or exports.
//!
//! The rules (the README's "The trace" states them for users):
//! - `(root)`, `(program)`, `(idle)`, `(garbage collector)` are never frames; a sample whose leaf is one
//!   of them has no `stackId`. Everything else (script, builtins, `RegExp: …`) is a frame, except a
//!   builtin with no name (nothing to show: its time goes to its caller, as Chrome does with builtins).
//! - The inspector's positions are 0-based, the spec's 1-based; unknown positions are omitted.
//! - Markers: `gc` for GC samples, `script` with a JS stack, `other` for `(program)` (and the rare sample
//!   on `(root)`), none for idle.
//! - Timestamps: ms relative to a time origin on V8's clock, at microsecond precision.
//! - The profiler's own code is never shown (Chrome's first sample is its caller's stack, not the
//!   profiler's): with an [`OwnCode`], its frames, and the builtins and internals it calls, are left
//!   out of every stack, so their time goes to the code that called the profiler.

pub(crate) mod inlined;
mod one_pass;

pub use one_pass::{
    read_in_one_pass, trace_by_profile, trace_by_profile_with, trace_from_json, trace_from_json_into,
    trace_from_json_with, SampleSink, Straight, TraceSamples,
};

use foldhash::HashMap;

use crate::trace::{us_to_ms, Frame, Marker, ProfilerTrace, TraceBuilder, TraceSample};
use crate::v8::{NodeKind, Profile, Sample};
pub use inlined::{CallGraph, ScriptSources};
use inlined::{FunctionKey, InlinedPlan};

/// The profiler's own code: the script URLs (or paths) it runs from, as prefixes. A node is the
/// profiler's when its URL starts with one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnCode {
    prefixes: Vec<String>,
}

impl OwnCode {
    /// Empty prefixes are ignored (they would match everything).
    pub fn new(prefixes: impl IntoIterator<Item = String>) -> Self {
        OwnCode {
            prefixes: prefixes.into_iter().filter(|p| !p.is_empty()).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty()
    }

    pub fn contains(&self, url: &str) -> bool {
        self.prefixes.iter().any(|p| url.starts_with(p.as_str()))
    }
}

/// Code that is neither the profiler's nor the runtime's: a script with a URL that is not `node:`.
fn is_user_code(url: &str) -> bool {
    !url.is_empty() && !url.starts_with("node:")
}

/// Converts samples of one profile into a [`TraceBuilder`], caching each node's frame and stack so a
/// node is resolved once however many samples hit it. One converter per profile; many converters may
/// feed one builder (a Profiler's trace spans several harvested chunks).
pub(crate) struct ProfileConverter<'p> {
    profile: &'p Profile,
    /// `None` = not resolved yet; `Some(None)` = no JS stack (pseudo-nodes above any code).
    stacks: Vec<Option<Option<u32>>>,
    /// Per node, what a sample on it gets, once known (see [`Leaf`]): one load per sample.
    leaves: Vec<Leaf>,
    /// The frame id of each (name, url, line, column) of this profile's nodes: many nodes share a
    /// frame, and each distinct one is built and hashed as a [`Frame`] once.
    frames: HashMap<(u32, u32, i32, i32), u32>,
    /// Per resolved node: it is hidden — the profiler's own code, or a builtin or runtime internal the
    /// profiler called (no user code in between). Its descendants inherit this until user code.
    hidden: Vec<bool>,
    own: Option<&'p OwnCode>,
    time_origin_us: f64,
    /// The nodes whose samples go in part to functions V8 inlined into them (see [`inlined`]), and the
    /// stack of each (node, target) once built.
    inlined: Option<(InlinedPlan, BuiltStacks)>,
}

/// The stack of each (node, target) of an [`InlinedPlan`], once built.
type BuiltStacks = HashMap<(u32, usize), Option<u32>>;

impl<'p> ProfileConverter<'p> {
    pub(crate) fn new(profile: &'p Profile, time_origin_us: f64) -> Self {
        ProfileConverter {
            profile,
            stacks: vec![None; profile.nodes.len()],
            leaves: vec![Leaf::UNKNOWN; profile.nodes.len()],
            frames: HashMap::default(),
            hidden: Vec::new(),
            own: None,
            time_origin_us,
            inlined: None,
        }
    }

    /// Gives the samples of code V8 inlined into a node's function that function's frame, as V8's
    /// per-line ticks say (see [`inlined`]): by the calls of `graph` (which holds the profile's), the
    /// scripts read through `sources`.
    pub(crate) fn splitting_inlined(mut self, inlined: Option<(&CallGraph, &dyn ScriptSources)>) -> Self {
        if let Some(plan) = inlined.and_then(|(graph, sources)| InlinedPlan::of(self.profile, graph, sources))
        {
            self.inlined = Some((plan, HashMap::default()));
        }
        self
    }

    /// The frame id of a function of the plan's, as [`Self::frame_id`] makes a node's.
    fn function_frame_id(
        &mut self,
        builder: &mut TraceBuilder,
        (name, url, line, column): &FunctionKey,
    ) -> u32 {
        let position = |v: i32| (v >= 0).then(|| v as u32 + 1);
        let resource_id = (!url.is_empty()).then(|| builder.resource_id(url));
        builder.frame_id(Frame {
            name: name.clone(),
            resource_id,
            line: position(*line),
            column: position(*column),
        })
    }

    /// Leaves `own` code out of the stacks (see [`OwnCode`]); its time goes to its caller.
    pub(crate) fn hiding(mut self, own: &'p OwnCode) -> Self {
        if !own.is_empty() {
            self.hidden = vec![false; self.profile.nodes.len()];
            self.own = Some(own);
        }
        self
    }

    fn frame(&self, builder: &mut TraceBuilder, node: u32) -> Frame {
        let n = &self.profile.nodes[node as usize];
        let url = self.profile.string(n.url);
        let position = |v: i32| (v >= 0).then(|| v as u32 + 1);
        Frame {
            name: self.profile.string(n.name).to_owned(),
            resource_id: (!url.is_empty()).then(|| builder.resource_id(url)),
            line: position(n.line),
            column: position(n.column),
        }
    }

    /// The frame id of `node`'s frame, built once per distinct frame.
    fn frame_id(&mut self, builder: &mut TraceBuilder, node: u32) -> u32 {
        let n = &self.profile.nodes[node as usize];
        let key = (n.name, n.url, n.line, n.column);
        match self.frames.get(&key) {
            Some(&id) => id,
            None => {
                let frame = self.frame(builder, node);
                let id = builder.frame_id(frame);
                self.frames.insert(key, id);
                id
            }
        }
    }

    /// A builtin without a name (no script, no name, no position): V8 puts one between a function and
    /// its `RegExp: …` code once the regexp is re-entered through the runtime (after an interrupt). It
    /// says nothing a user can act on, so, as Chrome does with every builtin, it is left out of the
    /// stack and its time goes to its caller.
    fn is_nameless_builtin(&self, node: u32) -> bool {
        let n = &self.profile.nodes[node as usize];
        n.line < 0 && self.profile.string(n.name).is_empty() && self.profile.string(n.url).is_empty()
    }

    /// The stack id of `node`'s path from the outermost code frame down to `node`. Pseudo-nodes on the
    /// path are transparent (V8 puts them directly under `(root)`, but a hand-made profile may not).
    #[inline]
    pub(crate) fn stack_of(&mut self, builder: &mut TraceBuilder, node: u32) -> Option<u32> {
        match self.stacks[node as usize] {
            Some(stack) => stack,
            None => self.resolve(builder, node),
        }
    }

    /// [`Self::stack_of`] for a node seen for the first time: resolves it and its unresolved ancestors.
    #[cold]
    fn resolve(&mut self, builder: &mut TraceBuilder, node: u32) -> Option<u32> {
        let mut chain = Vec::new();
        let mut cursor = Some(node);
        while let Some(n) = cursor {
            if self.stacks[n as usize].is_some() {
                break;
            }
            chain.push(n);
            cursor = self.profile.nodes[n as usize].parent;
        }
        let mut stack = cursor.and_then(|n| self.stacks[n as usize].flatten());
        let mut hidden = match (self.own, cursor) {
            (Some(_), Some(n)) => self.hidden[n as usize],
            _ => false,
        };
        // Outermost first, so parents get their ids before children, as in Chrome.
        for &n in chain.iter().rev() {
            let node = &self.profile.nodes[n as usize];
            if node.kind == NodeKind::Code {
                if let Some(own) = self.own {
                    let url = self.profile.string(node.url);
                    hidden = own.contains(url) || (hidden && !is_user_code(url));
                }
                if !hidden && !self.is_nameless_builtin(n) {
                    let frame_id = self.frame_id(builder, n);
                    stack = Some(builder.stack_id(frame_id, stack));
                }
            }
            if self.own.is_some() {
                self.hidden[n as usize] = hidden;
            }
            self.stacks[n as usize] = Some(stack);
        }
        stack
    }

    /// The trace sample for one of this profile's samples.
    pub(crate) fn sample(&mut self, builder: &mut TraceBuilder, sample: &Sample) -> TraceSample {
        let (stack_id, marker) = self.stack_and_marker(builder, sample.node);
        TraceSample {
            timestamp: self.timestamp(sample.time),
            stack_id,
            marker,
        }
    }

    /// The stack id and marker of a sample whose leaf is `node`.
    #[inline]
    pub(crate) fn stack_and_marker(
        &mut self,
        builder: &mut TraceBuilder,
        node: u32,
    ) -> (Option<u32>, Option<Marker>) {
        let leaf = self.leaves[node as usize];
        let (stack, marker) = if leaf != Leaf::UNKNOWN {
            leaf.get()
        } else {
            let (stack, marker) = self.first_leaf(builder, node);
            self.leaves[node as usize] = Leaf::new(stack, marker);
            (stack, marker)
        };
        match &self.inlined {
            Some((plan, _)) if stack.is_some() && plan.splits(node) => {
                self.inlined_leaf(builder, node, stack)
            }
            _ => (stack, marker),
        }
    }

    /// The stack of a sample of `node` that goes to a function V8 inlined into it (or stays the node's:
    /// `stack`), by the plan's round robin.
    #[cold]
    fn inlined_leaf(
        &mut self,
        builder: &mut TraceBuilder,
        node: u32,
        stack: Option<u32>,
    ) -> (Option<u32>, Option<Marker>) {
        let Some((plan, built)) = self.inlined.as_mut() else {
            return (stack, Some(Marker::Script));
        };
        let target = plan.next_target(node);
        if target == 0 {
            return (stack, Some(Marker::Script));
        }
        if let Some(&known) = built.get(&(node, target)) {
            return (known, Some(Marker::Script));
        }
        let path = plan.path(node, target).to_vec();
        let mut below = stack;
        for function in &path {
            let frame_id = self.function_frame_id(builder, function);
            below = Some(builder.stack_id(frame_id, below));
        }
        if let Some((_, built)) = self.inlined.as_mut() {
            built.insert((node, target), below);
        }
        (below, Some(Marker::Script))
    }

    #[cold]
    fn first_leaf(&mut self, builder: &mut TraceBuilder, node: u32) -> (Option<u32>, Option<Marker>) {
        match self.profile.nodes[node as usize].kind {
            NodeKind::Code => match self.stack_of(builder, node) {
                Some(stack) => (Some(stack), Some(Marker::Script)),
                // Only the profiler's own code, called from no code of the app's: native work.
                None => (None, Some(Marker::Other)),
            },
            NodeKind::GarbageCollector => (None, Some(Marker::Gc)),
            NodeKind::Program | NodeKind::Root => (None, Some(Marker::Other)),
            NodeKind::Idle => (None, None),
        }
    }

    /// The timestamp of a sample taken at `time_us` on V8's clock.
    #[inline]
    pub(crate) fn timestamp(&self, time_us: f64) -> f64 {
        sample_timestamp(time_us, self.time_origin_us)
    }
}

/// A node's stack id and marker packed in one word: `1 << 40 | marker code << 32 | stack id`
/// (`u32::MAX` for no stack); 0 until the node is first seen as a sample's leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Leaf(u64);

impl Leaf {
    const UNKNOWN: Leaf = Leaf(0);

    fn new(stack: Option<u32>, marker: Option<Marker>) -> Leaf {
        Leaf(1 << 40 | u64::from(Marker::code(marker)) << 32 | u64::from(stack.unwrap_or(u32::MAX)))
    }

    #[inline]
    fn get(self) -> (Option<u32>, Option<Marker>) {
        let stack = self.0 as u32;
        let marker = Marker::from_code((self.0 >> 32) as u8);
        ((stack != u32::MAX).then_some(stack), marker)
    }
}

/// A sample's timestamp: ms from the time origin (both µs on V8's clock), at µs precision.
#[inline]
pub(crate) fn sample_timestamp(time_us: f64, time_origin_us: f64) -> f64 {
    us_to_ms(time_us - time_origin_us)
}

/// The whole profile as a trace, timestamps in ms relative to `time_origin_us` (V8's clock, µs).
pub fn trace_from_profile(profile: &Profile, time_origin_us: f64) -> ProfilerTrace {
    trace_from_profile_hiding(profile, time_origin_us, None, None)
}

/// [`trace_from_profile`], with `own` code left out of the stacks (see [`OwnCode`]).
pub(crate) fn trace_from_profile_hiding(
    profile: &Profile,
    time_origin_us: f64,
    own: Option<&OwnCode>,
    inlined: Option<(&CallGraph, &dyn ScriptSources)>,
) -> ProfilerTrace {
    let mut builder = TraceBuilder::new();
    let converter = ProfileConverter::new(profile, time_origin_us);
    let converter = match own {
        Some(own) => converter.hiding(own),
        None => converter,
    };
    let mut converter = converter.splitting_inlined(inlined);
    for sample in &profile.samples {
        let s = converter.sample(&mut builder, sample);
        builder.push_sample(s);
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Stack;

    fn node(id: u32, name: &str, url: &str, line: i32, col: i32, children: &[u32]) -> String {
        format!(
            r#"{{"id":{id},"callFrame":{{"functionName":"{name}","scriptId":"1","url":"{url}","lineNumber":{line},"columnNumber":{col}}},"children":{children:?}}}"#
        )
    }

    /// root -> (program), (idle), (garbage collector), main -> [work -> now], main -> "" (anonymous)
    fn profile() -> Profile {
        let nodes = [
            node(1, "(root)", "", -1, -1, &[2, 3, 4, 5]),
            node(2, "(program)", "", -1, -1, &[]),
            node(3, "(idle)", "", -1, -1, &[]),
            node(4, "(garbage collector)", "", -1, -1, &[]),
            node(5, "main", "file:///app/main.js", 0, 0, &[6, 8]),
            node(6, "work", "file:///app/main.js", 9, 16, &[7]),
            node(7, "now", "", -1, -1, &[]),
            node(8, "", "node:internal/timers", 3, 2, &[]),
        ]
        .join(",");
        let text = format!(
            r#"{{"nodes":[{nodes}],"startTime":5000,"endTime":9000,"samples":[2,7,3,4,6,8,7,1],"timeDeltas":[1000,1000,500,250,-125,1000,1,1]}}"#
        );
        Profile::from_json(&text).unwrap()
    }

    #[test]
    fn pseudo_nodes_are_never_frames_and_leave_no_stack() {
        let t = trace_from_profile(&profile(), 5000.0);
        assert!(t.frames.iter().all(|f| !f.name.starts_with('(')));
        let s = &t.samples;
        assert_eq!(s[0].stack_id, None);
        assert_eq!(s[0].marker, Some(Marker::Other));
        assert_eq!(
            (s[2].stack_id, s[2].marker),
            (None, None),
            "idle: no stack, no marker"
        );
        assert_eq!((s[3].stack_id, s[3].marker), (None, Some(Marker::Gc)));
        assert_eq!(
            (s[7].stack_id, s[7].marker),
            (None, Some(Marker::Other)),
            "(root) leaf"
        );
    }

    #[test]
    fn frames_are_one_based_and_omit_unknowns() {
        let t = trace_from_profile(&profile(), 5000.0);
        let main = t.frames.iter().find(|f| f.name == "main").unwrap();
        assert_eq!((main.line, main.column), (Some(1), Some(1)));
        let work = t.frames.iter().find(|f| f.name == "work").unwrap();
        assert_eq!((work.line, work.column), (Some(10), Some(17)));
        let now = t.frames.iter().find(|f| f.name == "now").unwrap();
        assert_eq!(
            now,
            &Frame {
                name: "now".into(),
                resource_id: None,
                line: None,
                column: None
            }
        );
        let anon = t.frames.iter().find(|f| f.name.is_empty()).unwrap();
        assert_eq!(
            t.resources[anon.resource_id.unwrap() as usize],
            "node:internal/timers"
        );
        assert_eq!(t.resources, vec!["file:///app/main.js", "node:internal/timers"]);
    }

    #[test]
    fn a_nameless_builtin_is_left_out_and_its_time_goes_to_its_caller() {
        // As V8 gives a regexp re-entered through the runtime: RegExp code under a builtin with no name,
        // under the function that ran the regexp.
        let nodes = [
            node(1, "(root)", "", -1, -1, &[2]),
            node(2, "handleRedos", "file:///app/server.js", 68, 20, &[3, 5, 6]),
            node(3, "", "", -1, -1, &[4]),
            node(4, "RegExp: ^(a+)+$", "", -1, -1, &[]),
            node(5, "", "", -1, -1, &[]),
            node(6, "", "", 0, 0, &[]),
        ]
        .join(",");
        let text = format!(
            r#"{{"nodes":[{nodes}],"startTime":0,"endTime":5000,"samples":[4,3,5,2,6],"timeDeltas":[1000,1000,1000,1000,1000]}}"#
        );
        let by_profile = trace_from_profile(&Profile::from_json(&text).unwrap(), 0.0);
        let in_one_pass = trace_from_json(&text, None, None).unwrap();
        for t in [by_profile, in_one_pass] {
            let names: Vec<&str> = t.frames.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(names, ["handleRedos", "RegExp: ^(a+)+$", ""]);
            let path = |i: usize| {
                let mut names = Vec::new();
                let mut stack = t.samples[i].stack_id;
                while let Some(id) = stack {
                    let s = &t.stacks[id as usize];
                    names.push(t.frames[s.frame_id as usize].name.as_str());
                    stack = s.parent_id;
                }
                names
            };
            assert_eq!(path(0), ["RegExp: ^(a+)+$", "handleRedos"]);
            // On the builtin itself, leaf or not: the caller's stack, still script.
            assert_eq!(path(1), ["handleRedos"]);
            assert_eq!(path(2), ["handleRedos"]);
            assert!(t.samples[..3].iter().all(|s| s.marker == Some(Marker::Script)));
            // Generated code without a name (eval, `new Function`) keeps its frame: it has a position.
            assert_eq!(path(4), ["", "handleRedos"]);
            assert_eq!((t.frames[2].line, t.frames[2].column), (Some(1), Some(1)));
        }
    }

    #[test]
    fn stacks_form_a_trie_with_parents_first() {
        let t = trace_from_profile(&profile(), 5000.0);
        let frame = |name: &str| t.frames.iter().position(|f| f.name == name).unwrap() as u32;
        // sample 1 hits `now` under work under main: ids 0,1,2 in that order.
        assert_eq!(
            t.stacks[0],
            Stack {
                frame_id: frame("main"),
                parent_id: None
            }
        );
        assert_eq!(
            t.stacks[1],
            Stack {
                frame_id: frame("work"),
                parent_id: Some(0)
            }
        );
        assert_eq!(
            t.stacks[2],
            Stack {
                frame_id: frame("now"),
                parent_id: Some(1)
            }
        );
        assert_eq!(t.samples[1].stack_id, Some(2));
        assert_eq!(
            t.samples[4].stack_id,
            Some(1),
            "work's stack is shared, not duplicated"
        );
        assert_eq!(t.samples[6].stack_id, Some(2));
        assert_eq!(t.stacks.len(), 4);
    }

    #[test]
    fn timestamps_follow_the_signed_running_sum() {
        let t = trace_from_profile(&profile(), 5000.0);
        let ts: Vec<f64> = t.samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(ts, vec![1.0, 2.0, 2.5, 2.75, 2.625, 3.625, 3.626, 3.627]);
        let shifted = trace_from_profile(&profile(), 4000.0);
        assert_eq!(shifted.samples[0].timestamp, 2.0);
    }

    #[test]
    fn identical_frames_from_distinct_nodes_are_deduplicated() {
        // Two nodes with the same (name, url, line, column) under the root: one frame, one stack.
        let nodes = [
            node(1, "(root)", "", -1, -1, &[2, 3]),
            node(2, "f", "file:///f.js", 1, 1, &[]),
            node(3, "f", "file:///f.js", 1, 1, &[]),
        ]
        .join(",");
        let text =
            format!(r#"{{"nodes":[{nodes}],"startTime":0,"endTime":1,"samples":[2,3],"timeDeltas":[1,1]}}"#);
        let t = trace_from_profile(&Profile::from_json(&text).unwrap(), 0.0);
        assert_eq!(t.frames.len(), 1);
        assert_eq!(t.stacks.len(), 1);
        assert_eq!(t.samples[0].stack_id, t.samples[1].stack_id);
    }
}
