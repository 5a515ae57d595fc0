//! CPU time of inlined functions (issue 43): V8's CPU profiler charges the samples taken in a function
//! V8 inlined into its caller to the caller's node — on Node 20, 22 and 24, whose V8 does not unwind
//! the inlined frames of the sampled code itself (it does for the frames of its callers, and Node 26's
//! V8 does for both). Its per-line ticks (`positionTicks`) still name the line V8 ran, a line of the
//! inlined function's own script; this module gives those samples the inlined function's frame back.
//!
//! For a node of function F with ticks on line L:
//! - L is F's own when F holds it (`crate::source_functions`: the innermost function whose source holds
//!   the whole line): the samples stay F's.
//! - Else the function that ran there is a function F called — which V8 inlined. Its candidates are the
//!   functions V8 saw F call, and what those called (the profile's tree: before V8 inlined them, or
//!   through a caller frame V8 did unwind), nearest first, up to [`MAX_DEPTH`] calls deep. The first
//!   depth with a candidate whose script's function holding L is that candidate decides: one such
//!   candidate gets the line's ticks, with the calls to it V8 saw in between as its stack; two or more
//!   (a line of the same number held in two scripts) decide nothing, and the samples stay F's.
//! - A script whose source cannot be read or parsed, or whose functions are not where V8 says they
//!   begin (a file changed since, or code compiled from another text), decides nothing either.
//!
//! V8 counts ticks per line, not per sample: of a node's samples, each line's share of the node's ticks
//! goes to its function, in an order spread evenly over the node's samples (a smooth weighted round
//! robin), so every view's rows add up as V8's ticks do and a window of the samples gets its share.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use crate::source_functions::ScriptFunctions;
use crate::v8::{NodeKind, Profile};

/// How many calls deep a function inlined into another is looked for (TurboFan inlines a few levels).
pub(crate) const MAX_DEPTH: usize = 4;

/// Where scripts' function tables come from: their source, by URL (`None`: unknown, not readable,
/// not parseable).
pub trait ScriptSources: Send + Sync {
    fn functions(&self, url: &str) -> Option<Arc<ScriptFunctions>>;
}

/// A function as V8 names and places it: (name, url, 0-based line, 0-based column).
pub(crate) type FunctionKey = (String, String, i32, i32);

/// The calls V8 saw, between functions (one of V8's nodes per distinct name, script and position):
/// from one profile, or gathered from every harvest of a thread (a call seen while warming up, before
/// V8 inlined it, still tells a later harvest where its lines go). At most [`MAX_FUNCTIONS`] functions.
#[derive(Debug, Clone, Default)]
pub struct CallGraph {
    ids: HashMap<FunctionKey, u32>,
    functions: Vec<FunctionKey>,
    callees: Vec<Vec<u32>>,
}

/// The most functions a [`CallGraph`] keeps (calls to more are not added).
pub(crate) const MAX_FUNCTIONS: usize = 1 << 20;

impl CallGraph {
    /// The graph of one profile's calls.
    pub fn of(profile: &Profile) -> CallGraph {
        let mut graph = CallGraph::default();
        graph.add(profile);
        graph
    }

    /// Adds the calls of `profile`'s tree.
    pub fn add(&mut self, profile: &Profile) {
        let mut ids: Vec<Option<u32>> = vec![None; profile.nodes.len()];
        for (i, n) in profile.nodes.iter().enumerate() {
            if n.kind == NodeKind::Code {
                ids[i] = self.id(profile, i as u32);
            }
        }
        for (i, n) in profile.nodes.iter().enumerate() {
            let (Some(callee), Some(parent)) = (ids[i], n.parent) else {
                continue;
            };
            let Some(caller) = ids[parent as usize] else {
                continue;
            };
            let list = &mut self.callees[caller as usize];
            if caller != callee && !list.contains(&callee) {
                list.push(callee);
            }
        }
    }

    /// The id of `node`'s function, added when new (None past [`MAX_FUNCTIONS`]).
    fn id(&mut self, profile: &Profile, node: u32) -> Option<u32> {
        let n = &profile.nodes[node as usize];
        let key = (
            profile.string(n.name).to_owned(),
            profile.string(n.url).to_owned(),
            n.line,
            n.column,
        );
        if let Some(&id) = self.ids.get(&key) {
            return Some(id);
        }
        if self.functions.len() >= MAX_FUNCTIONS {
            return None;
        }
        let id = self.functions.len() as u32;
        self.ids.insert(key.clone(), id);
        self.functions.push(key);
        self.callees.push(Vec::new());
        Some(id)
    }

    /// The function of `id`.
    pub(crate) fn function(&self, id: u32) -> &FunctionKey {
        &self.functions[id as usize]
    }

    /// The path of functions from `start` down to the one V8 inlined into it that holds `line`, when
    /// the nearest depth with such a function has exactly one.
    fn inlined_at(
        &self,
        start: u32,
        line: u32,
        function_of: &mut impl FnMut(&FunctionKey) -> Option<(Arc<ScriptFunctions>, u32)>,
    ) -> Option<Vec<u32>> {
        // Breadth first: (function, the index of the entry it was reached from).
        let mut seen: HashMap<u32, ()> = HashMap::new();
        seen.insert(start, ());
        let mut reached: Vec<(u32, usize)> = vec![(start, usize::MAX)];
        let mut level: Vec<usize> = vec![0];
        for _ in 0..MAX_DEPTH {
            let mut next = Vec::new();
            let mut found: Option<usize> = None;
            let mut ambiguous = false;
            for &from in &level {
                for &callee in &self.callees[reached[from].0 as usize] {
                    if seen.insert(callee, ()).is_some() {
                        continue;
                    }
                    reached.push((callee, from));
                    let index = reached.len() - 1;
                    next.push(index);
                    let holds = function_of(self.function(callee))
                        .is_some_and(|(table, f)| table.holder(line) == Some(f));
                    if holds {
                        ambiguous |= found.is_some();
                        found = Some(index);
                    }
                }
            }
            if ambiguous {
                return None;
            }
            if let Some(mut index) = found {
                let mut path = Vec::new();
                while index != 0 {
                    path.push(reached[index].0);
                    index = reached[index].1;
                }
                path.reverse();
                return Some(path);
            }
            if next.is_empty() {
                return None;
            }
            level = next;
        }
        None
    }
}

/// How one node's samples are shared out: targets (`path`: the functions whose frames go below the
/// node's own, empty for the node itself) with their weights (V8's ticks), and the round robin's state.
#[derive(Debug, Clone)]
struct Split {
    targets: Vec<(i64, Vec<FunctionKey>)>,
    current: Vec<i64>,
    total: i64,
}

impl Split {
    /// The target of the next sample (smooth weighted round robin: exact shares, evenly spread).
    fn next(&mut self) -> usize {
        let mut best = 0;
        for (i, (w, _)) in self.targets.iter().enumerate() {
            self.current[i] += w;
            if self.current[i] > self.current[best] {
                best = i;
            }
        }
        self.current[best] -= self.total;
        best
    }
}

/// The shares of a profile's nodes whose ticks name lines of functions inlined into them.
#[derive(Debug, Clone, Default)]
pub(crate) struct InlinedPlan {
    /// Per node: index into `splits`, or `u32::MAX`.
    slot: Vec<u32>,
    splits: Vec<Split>,
}

impl InlinedPlan {
    /// The plan of `profile` by the calls of `graph` (which holds `profile`'s own), its scripts read
    /// through `sources`; None when no node's ticks name a line of a function inlined into it.
    pub(crate) fn of(
        profile: &Profile,
        graph: &CallGraph,
        sources: &dyn ScriptSources,
    ) -> Option<InlinedPlan> {
        if profile.line_ticks.is_empty() {
            return None;
        }
        let mut tables: HashMap<String, Option<Arc<ScriptFunctions>>> = HashMap::new();
        // The function V8 positions a function at, in its script's table.
        let mut function_of = |(_, url, line, column): &FunctionKey| -> Option<(Arc<ScriptFunctions>, u32)> {
            if *line < 0 || *column < 0 || url.is_empty() || url.starts_with("node:") {
                return None;
            }
            let table = match tables.get(url.as_str()) {
                Some(known) => known.clone(),
                None => {
                    let read = sources.functions(url);
                    tables.insert(url.clone(), read.clone());
                    read
                }
            }?;
            let f = table.function_at(*line as u32, *column as u32)?;
            Some((table, f))
        };
        let mut plan = InlinedPlan {
            slot: vec![u32::MAX; profile.nodes.len()],
            splits: Vec::new(),
        };
        let mut at = 0;
        while at < profile.line_ticks.len() {
            let node = profile.line_ticks[at].node;
            let end = at + profile.line_ticks[at..].partition_point(|t| t.node == node);
            let ticks = &profile.line_ticks[at..end];
            at = end;
            let n = &profile.nodes[node as usize];
            if n.kind != NodeKind::Code {
                continue;
            }
            let key: FunctionKey = (
                profile.string(n.name).to_owned(),
                profile.string(n.url).to_owned(),
                n.line,
                n.column,
            );
            let (Some(&id), Some((own_table, own))) = (graph.ids.get(&key), function_of(&key)) else {
                continue;
            };
            let mut targets: Vec<(i64, Vec<FunctionKey>)> = vec![(0, Vec::new())];
            for t in ticks {
                let weight = i64::from(t.ticks);
                let path = if own_table.holder(t.line) == Some(own) {
                    None
                } else {
                    graph.inlined_at(id, t.line, &mut function_of).map(|path| {
                        path.into_iter()
                            .map(|f| graph.function(f).clone())
                            .collect::<Vec<_>>()
                    })
                };
                match path {
                    Some(path) => match targets.iter_mut().find(|(_, p)| *p == path) {
                        Some(target) => target.0 += weight,
                        None => targets.push((weight, path)),
                    },
                    None => targets[0].0 += weight,
                }
            }
            let total: i64 = targets.iter().map(|(w, _)| w).sum();
            if targets.len() == 1 || total == 0 {
                continue;
            }
            plan.slot[node as usize] = plan.splits.len() as u32;
            plan.splits.push(Split {
                current: vec![0; targets.len()],
                targets,
                total,
            });
        }
        (!plan.splits.is_empty()).then_some(plan)
    }

    /// Whether `node`'s samples are shared out.
    #[inline]
    pub(crate) fn splits(&self, node: u32) -> bool {
        self.slot.get(node as usize).is_some_and(|&s| s != u32::MAX)
    }

    /// Which of `node`'s targets its next sample goes to (0: the node itself).
    pub(crate) fn next_target(&mut self, node: u32) -> usize {
        self.splits[self.slot[node as usize] as usize].next()
    }

    /// The functions whose frames go below `node`'s own for its `target`.
    pub(crate) fn path(&self, node: u32, target: usize) -> &[FunctionKey] {
        &self.splits[self.slot[node as usize] as usize].targets[target].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v8::ProfileBuilder;

    struct Texts(Vec<(&'static str, &'static str)>);

    impl ScriptSources for Texts {
        fn functions(&self, url: &str) -> Option<Arc<ScriptFunctions>> {
            let (_, text) = self.0.iter().find(|(u, _)| *u == url)?;
            ScriptFunctions::of_source(text, url).map(Arc::new)
        }
    }

    pub(crate) const APP: &str = "'use strict'\nfunction inner(x) {\n  let s = 0\n  for (let i = 0; i < 200; i++) s += i\n  return s\n}\nfunction outer(n) {\n  let acc = 0\n  for (let i = 0; i < n; i++) acc ^= inner(i)\n  return acc\n}\n";

    /// root -> outer -> inner (seen once, before V8 inlined it); outer's 10 samples: 8 ticks on inner's
    /// line 4, 2 on its own line 9.
    fn profile(ticks: &[(i64, i64)]) -> Profile {
        let mut b = ProfileBuilder::with_capacity(3);
        b.add_node(1, "(root)", "", -1, -1).unwrap();
        b.add_node(2, "outer", "file:///app.js", 6, 14).unwrap();
        b.add_node(3, "inner", "file:///app.js", 1, 14).unwrap();
        b.set_children(0, &[2]).unwrap();
        b.set_children(1, &[3]).unwrap();
        for &(line, t) in ticks {
            b.add_line_ticks(1, line, t).unwrap();
        }
        let mut samples = vec![3];
        samples.extend([2; 10]);
        b.finish(&samples, &[1.0; 11], 0.0, 11.0).unwrap()
    }

    fn shares(plan: &mut InlinedPlan, node: u32, n: usize) -> Vec<Vec<FunctionKey>> {
        (0..n)
            .map(|_| {
                let target = plan.next_target(node);
                plan.path(node, target).to_vec()
            })
            .collect()
    }

    #[test]
    fn gives_the_inlined_functions_lines_their_ticks() {
        let p = profile(&[(4, 8), (9, 2)]);
        let sources = Texts(vec![("file:///app.js", APP)]);
        let mut plan = InlinedPlan::of(&p, &CallGraph::of(&p), &sources).unwrap();
        assert!(plan.splits(1) && !plan.splits(2) && !plan.splits(0));
        let paths = shares(&mut plan, 1, 10);
        assert_eq!(paths.iter().filter(|p| p.len() == 1).count(), 8);
        assert_eq!(paths.iter().filter(|p| p.is_empty()).count(), 2);
        // Spread evenly: never two of the node's own in a row out of 8:2.
        assert!(paths.windows(2).all(|w| !(w[0].is_empty() && w[1].is_empty())));
    }

    #[test]
    fn decides_nothing_without_the_evidence() {
        let sources = Texts(vec![("file:///app.js", APP)]);
        // Only its own lines: nothing to share.
        let of = |p: &Profile, s: &dyn ScriptSources| InlinedPlan::of(p, &CallGraph::of(p), s);
        assert!(of(&profile(&[(9, 10)]), &sources).is_none());
        // A line no callee holds (line 2 of a script of 11 lines is inner's signature... line 1 is the
        // top level's, which outer never called).
        assert!(of(&profile(&[(1, 10)]), &sources).is_none());
        // The source is not there, or is not what V8 ran (outer is not at 6:14).
        assert!(of(&profile(&[(4, 8)]), &Texts(vec![])).is_none());
        let moved = "\n'use strict'\nfunction inner(x) {\n  let s = 0\n  for (;;) s++\n}\nfunction outer(n) {\n  return inner(n)\n}\n";
        assert!(of(&profile(&[(4, 8)]), &Texts(vec![("file:///app.js", moved)])).is_none());
    }

    #[test]
    fn both_roads_from_json_give_the_inlined_function_its_samples() {
        use crate::convert::{trace_by_profile_with, trace_from_json_with};
        // As `node --cpu-prof` writes it: outer's 10 samples, 8 ticks on inner's line 4.
        let text = r#"{"nodes":[
            {"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"children":[2]},
            {"id":2,"callFrame":{"functionName":"outer","scriptId":"3","url":"file:///app.js","lineNumber":6,"columnNumber":14},"children":[3],
             "positionTicks":[{"line":4,"ticks":8},{"line":9,"ticks":2}]},
            {"id":3,"callFrame":{"functionName":"inner","scriptId":"3","url":"file:///app.js","lineNumber":1,"columnNumber":14}}],
            "startTime":0,"endTime":11,"samples":[3,2,2,2,2,2,2,2,2,2,2],"timeDeltas":[1,1,1,1,1,1,1,1,1,1,1]}"#;
        let sources = Texts(vec![("file:///app.js", APP)]);
        let one_pass = trace_from_json_with(text, None, None, Some(&sources)).unwrap();
        assert_eq!(
            one_pass,
            trace_by_profile_with(text, None, None, Some(&sources)).unwrap()
        );
        let leaf = |s: &crate::trace::TraceSample| {
            let stack = &one_pass.stacks[s.stack_id.unwrap() as usize];
            one_pass.frames[stack.frame_id as usize].name.as_str()
        };
        let inner = one_pass.samples.iter().filter(|s| leaf(s) == "inner").count();
        assert_eq!(inner, 1 + 8, "inner's own sample and 8 of outer's");
        // The inlined function's frame is the one V8 gives it, below outer's.
        let frames: Vec<&str> = one_pass.frames.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(frames, ["outer", "inner"]);
        assert_eq!(one_pass.stacks.len(), 2);
        // Without the sources: V8's trace as it is.
        let plain = trace_from_json_with(text, None, None, None).unwrap();
        assert_eq!(plain.samples.iter().filter(|s| s.stack_id == Some(1)).count(), 1);
    }

    #[test]
    fn a_recording_reads_the_calls_of_earlier_harvests() {
        use crate::recording::{Chunk, Recording};
        use std::sync::Mutex;
        // The first harvest saw outer call inner; the second only outer, its ticks on inner's line.
        let warm = profile(&[]);
        let mut b = ProfileBuilder::with_capacity(2);
        b.add_node(1, "(root)", "", -1, -1).unwrap();
        b.add_node(2, "outer", "file:///app.js", 6, 14).unwrap();
        b.set_children(0, &[2]).unwrap();
        b.add_line_ticks(1, 4, 4).unwrap();
        let hot = b.finish(&[2, 2, 2, 2], &[1.0; 4], 100.0, 104.0).unwrap();
        let graph = Arc::new(Mutex::new(CallGraph::of(&warm)));
        let sources: Arc<dyn ScriptSources> = Arc::new(Texts(vec![("file:///app.js", APP)]));
        let chunk = |profile| {
            Arc::new(Chunk {
                profile,
                interval_us: 1.0,
                labels: Vec::new(),
                contexts: Vec::new(),
            })
        };
        let names = |split: bool| {
            let mut r = Recording::new(100.0, 1.0, 100);
            if split {
                r.split_inlined(Arc::clone(&graph), Arc::clone(&sources));
            }
            r.add_chunk(&chunk(hot.clone()));
            let t = r.into_trace(0.0);
            t.samples
                .iter()
                .map(|s| {
                    t.frames[t.stacks[s.stack_id.unwrap() as usize].frame_id as usize]
                        .name
                        .clone()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(names(true), vec!["inner"; 4]);
        assert_eq!(names(false), vec!["outer"; 4]);
    }

    #[test]
    fn two_callees_holding_the_line_in_two_scripts_decide_nothing() {
        // outer calls inner (app.js) and helper (lib.js), whose line 4 is helper's: ambiguous.
        let lib = "'use strict'\nfunction helper(x) {\n  let s = 0\n  for (let i = 0; i < 200; i++) s -= i\n  return s\n}\n";
        let mut b = ProfileBuilder::with_capacity(4);
        b.add_node(1, "(root)", "", -1, -1).unwrap();
        b.add_node(2, "outer", "file:///app.js", 6, 14).unwrap();
        b.add_node(3, "inner", "file:///app.js", 1, 14).unwrap();
        b.add_node(4, "helper", "file:///lib.js", 1, 15).unwrap();
        b.set_children(0, &[2]).unwrap();
        b.set_children(1, &[3, 4]).unwrap();
        b.add_line_ticks(1, 4, 5).unwrap();
        let p = b.finish(&[2, 2, 2, 2, 2], &[1.0; 5], 0.0, 5.0).unwrap();
        let both = Texts(vec![("file:///app.js", APP), ("file:///lib.js", lib)]);
        assert!(InlinedPlan::of(&p, &CallGraph::of(&p), &both).is_none());
        // Without lib.js's source, only inner holds line 4.
        let mut plan =
            InlinedPlan::of(&p, &CallGraph::of(&p), &Texts(vec![("file:///app.js", APP)])).unwrap();
        let inner = shares(&mut plan, 1, 5);
        assert!(inner.iter().all(|path| path.len() == 1 && path[0].0 == "inner"));
    }
}
