//! Summaries of a `ProfilerTrace`: self and total samples and time per package, function or resource.
//!
//! - A sample weighs the time it stands for, by the trace's one rule (`trace/weights.rs`): the gap to
//!   the next sample within its run, at most two intervals; the last of a run the interval.
//!   `sample_interval` stands in for the trace's interval (default: its `jsprof.sampleInterval`, else
//!   the median gap between consecutive samples).
//! - Self: a sample is charged to the innermost frame of its stack that is app, dependency or generated
//!   code (builtins and `node:` internals charge the code that called them). A stack without such a frame
//!   charges its innermost `node:` frame, and a stack of builtins only its innermost frame. Samples
//!   without a stack are rows of their own: `(idle)` (no marker), `(gc)`, `(other)` (and `(<marker>)`
//!   for any other marker). So the self samples of all rows add up to the number of samples.
//! - Generated code (`new Function`, `eval`, `vm` without a filename) is a row of its own, never its
//!   caller's: by package `(generated, called from <package>)`, named by the innermost app or dependency
//!   code that called it (a V8 profile does not say which code compiled it); by function
//!   `<name> (generated:<line>:<column>)`; by resource `(generated)`.
//! - Total: a sample counts once for every row that appears anywhere on its stack, however often.
//! - Rows are sorted by self time, then self samples, then total samples (all descending), then name,
//!   kind and version (ascending), so equal inputs give equal outputs.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::Serialize;

use crate::attribution::{
    frame_without_resource, generated_name, package_name, Attribution, Attributor, Kind,
};
use crate::error::{Error, Result};
use crate::trace::{round_to_microseconds, Marker, ProfilerTrace};

/// What a summary's rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// An npm package (dependencies and app packages), `(app)`, `node` or `native`.
    Package,
    /// A function: `name (resource:line:column)`.
    Function,
    /// A script URL, or `(native)` for code without one.
    Resource,
}

impl By {
    pub const NAMES: [&'static str; 3] = ["package", "function", "resource"];

    pub fn parse(s: &str) -> Option<By> {
        match s {
            "package" => Some(By::Package),
            "function" => Some(By::Function),
            "resource" => Some(By::Resource),
            _ => None,
        }
    }
}

/// What `summarize`'s `by` (and `jsprof report`/`diff`'s `--by`) asks for: rows by code, or by the
/// value of a sample label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryBy {
    Code(By),
    /// `label:<key>`: the key by the label rule.
    Label(String),
}

impl SummaryBy {
    /// The one rule of what `by` accepts: `package`, `function`, `resource`, `route` (the request
    /// integrations' label: `label:route`), or `label:<key>` with a key the label rule takes (a `Type`
    /// error otherwise); for a heap profile (`heap`), which has no labels, only the first three
    /// ([`SummaryBy::parse_heap`]). Anything else is a `Range` error naming what is accepted.
    pub fn parse(text: &str, heap: bool) -> Result<SummaryBy> {
        if heap {
            return Self::parse_heap(text).map(SummaryBy::Code);
        }
        if let Some(by) = By::parse(text) {
            return Ok(SummaryBy::Code(by));
        }
        match text.strip_prefix("label:") {
            _ if text == "route" => Ok(SummaryBy::Label("route".to_owned())),
            Some(key) => {
                crate::trace::labels::check_label(key, "", "by")?;
                Ok(SummaryBy::Label(key.to_owned()))
            }
            None => Err(Self::refused(text, ", 'route' or 'label:<key>'")),
        }
    }

    /// [`SummaryBy::parse`] for a heap profile: rows by code only.
    pub fn parse_heap(text: &str) -> Result<By> {
        By::parse(text).ok_or_else(|| Self::refused(text, " for a heap profile (it has no labels)"))
    }

    fn refused(text: &str, tail: &str) -> Error {
        let names = By::NAMES.map(|n| format!("'{n}'")).join(", ");
        let head: String = text.chars().take(120).collect();
        let shown = crate::visible_text(&head);
        Error::range(format!("by must be one of {names}{tail}, got '{shown}'"))
    }
}

/// One row of a summary. Times in ms.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub name: String,
    /// `app`, `dependency`, `node`, `native`, or for samples without a stack `idle`, `gc`, `other`.
    pub kind: &'static str,
    /// The package the function or resource belongs to (`by: function`/`resource` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub self_samples: u64,
    pub total_samples: u64,
    pub self_time: f64,
    pub total_time: f64,
}

#[derive(Default)]
struct Tally {
    self_samples: u64,
    total_samples: u64,
    self_time: f64,
    total_time: f64,
}

#[derive(Hash, PartialEq, Eq, Clone)]
struct Key {
    kind: &'static str,
    name: String,
    version: Option<String>,
}

struct Rows {
    index: HashMap<Key, usize>,
    rows: Vec<(Key, Option<String>, Tally)>,
}

impl Rows {
    fn id(&mut self, key: Key, package: Option<String>) -> usize {
        if let Some(&id) = self.index.get(&key) {
            return id;
        }
        let id = self.rows.len();
        self.rows.push((key.clone(), package, Tally::default()));
        self.index.insert(key, id);
        id
    }
}

/// A summary of `trace` by `by`. Each sample weighs the time it stands for (`trace/weights.rs`), with
/// `sample_interval` ms as the trace's interval when given. Fails with a `Type` error when the trace
/// is malformed (see [`ProfilerTrace::validate`]) or `sample_interval` is not a finite number >= 0.
pub fn summarize(
    trace: &ProfilerTrace,
    by: By,
    sample_interval: Option<f64>,
    attributor: &mut Attributor,
) -> Result<Vec<Row>> {
    trace.validate()?;
    if let Some(interval) = sample_interval.filter(|i| !(i.is_finite() && *i >= 0.0)) {
        return Err(Error::invalid(format!(
            "sampleInterval must be a finite number >= 0, got {interval}"
        )));
    }
    let weights = crate::trace::Weigher::new(trace, sample_interval).by_sample();
    Ok(summarize_weighted(trace, &weights, None, by, attributor))
}

/// A summary of `trace` by the value of its samples' label `key` (`summarize(trace, { by:
/// 'label:route' })`): one row per value (kind `label`), and one named `(no <key>)` (kind
/// `unlabelled`) for the samples without that label; a sample is in one row only, so self and total
/// are the same. Weighed as [`summarize`] weighs; sorted by time, the largest first. `key` must be a
/// label key by the label rule.
pub fn summarize_by_label(
    trace: &ProfilerTrace,
    key: &str,
    sample_interval: Option<f64>,
) -> Result<Vec<Row>> {
    trace.validate()?;
    crate::trace::labels::check_label(key, "", "by")?;
    if let Some(interval) = sample_interval.filter(|i| !(i.is_finite() && *i >= 0.0)) {
        return Err(Error::invalid(format!(
            "sampleInterval must be a finite number >= 0, got {interval}"
        )));
    }
    let weights = crate::trace::Weigher::new(trace, sample_interval).by_sample();
    let ext = trace.jsprof.as_ref();
    let mut index: HashMap<Option<&str>, usize> = HashMap::new();
    let mut rows: Vec<Row> = Vec::new();
    for (i, weight) in weights.iter().enumerate() {
        let value = ext
            .and_then(|e| e.labels_of(i))
            .and_then(|l| l.get(key))
            .map(String::as_str);
        let at = *index.entry(value).or_insert_with(|| {
            rows.push(Row {
                name: value.map_or_else(|| format!("(no {key})"), str::to_owned),
                kind: if value.is_some() { "label" } else { "unlabelled" },
                package: None,
                version: None,
                self_samples: 0,
                total_samples: 0,
                self_time: 0.0,
                total_time: 0.0,
            });
            rows.len() - 1
        });
        let row = &mut rows[at];
        row.self_samples += 1;
        row.total_samples += 1;
        row.self_time += weight;
        row.total_time += weight;
    }
    for row in &mut rows {
        row.self_time = round_to_microseconds(row.self_time);
        row.total_time = row.self_time;
    }
    rows.sort_by(|a, b| {
        b.self_time
            .total_cmp(&a.self_time)
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(rows)
}

/// [`summarize`]'s rows for a valid trace whose samples weigh `weights` (a `Row`'s times are their
/// sums) and each count `counts[i]` samples (1 each when `None`): a heap profile's entries weigh their
/// bytes (`crate::heap`). The charging rules are the same for every weight.
pub(crate) fn summarize_weighted(
    trace: &ProfilerTrace,
    weights: &[f64],
    counts: Option<&[u64]>,
    by: By,
    attributor: &mut Attributor,
) -> Vec<Row> {
    // Samples and time per stack, and per marker for samples without a stack.
    let mut per_stack = vec![(0u64, 0f64); trace.stacks.len()];
    let mut rows = Rows {
        index: HashMap::new(),
        rows: Vec::new(),
    };
    for (i, sample) in trace.samples.iter().enumerate() {
        let weight = weights[i];
        let count = counts.map_or(1, |c| c[i]);
        match sample.stack_id {
            Some(id) => {
                let slot = &mut per_stack[id as usize];
                slot.0 += count;
                slot.1 += weight;
            }
            None => {
                let (kind, name) = stackless_row(sample.marker);
                let id = rows.id(
                    Key {
                        kind,
                        name: name.to_owned(),
                        version: None,
                    },
                    None,
                );
                let tally = &mut rows.rows[id].2;
                tally.self_samples += count;
                tally.total_samples += count;
                tally.self_time += weight;
                tally.total_time += weight;
            }
        }
    }

    // Linear in stacks, whatever their depth (a walk to the root per stack was quadratic: many seconds
    // for a 100,000-deep chain, docs/bench.md#deep-stacks). Samples and time are summed up the stack tree
    // once (children before parents); then one depth-first pass over the stacks that hold samples charges
    // each row its self time (at the stack a sample names) and its total time at its outermost occurrence
    // on each path only, so a recursive function counts each sample once.
    let order = parent_first(trace);
    let mut subtree = per_stack.clone();
    for &v in order.iter().rev() {
        if let Some(p) = trace.stacks[v].parent_id {
            let (count, time) = subtree[v];
            let slot = &mut subtree[p as usize];
            slot.0 += count;
            slot.1 += time;
        }
    }
    // Children of each sampled-through stack, as ranges of one array (CSR).
    let n = trace.stacks.len();
    let mut child_start = vec![0usize; n + 1];
    for (v, stack) in trace.stacks.iter().enumerate() {
        if let (Some(p), true) = (stack.parent_id, held(subtree[v])) {
            child_start[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        child_start[i + 1] += child_start[i];
    }
    let mut fill = child_start.clone();
    let mut children = vec![0usize; child_start[n]];
    for (v, stack) in trace.stacks.iter().enumerate() {
        if let (Some(p), true) = (stack.parent_id, held(subtree[v])) {
            children[fill[p as usize]] = v;
            fill[p as usize] += 1;
        }
    }

    let mut attributions: Vec<Option<Attribution>> = vec![None; trace.resources.len()];
    let mut frame_rows: Vec<Option<(usize, Kind)>> = vec![None; trace.frames.len()];
    // Per stack: the innermost app/dependency row and the innermost Node row on its path (its self
    // time goes to the first of them there is, else to its own row).
    let mut code_up: Vec<Option<usize>> = vec![None; n];
    let mut node_up: Vec<Option<usize>> = vec![None; n];
    // Per stack: the innermost app/dependency row (not generated code): what generated code is named by.
    let mut caller_up: Vec<Option<usize>> = vec![None; n];
    let mut generated_rows: HashMap<Option<usize>, usize> = HashMap::new();
    let mut on_path: Vec<u32> = Vec::new();
    let mut walk: Vec<(usize, usize)> = Vec::new(); // (stack, next child index)
    for root in 0..n {
        if trace.stacks[root].parent_id.is_some() || !held(subtree[root]) {
            continue;
        }
        walk.push((root, child_start[root]));
        let mut entered = true;
        while let Some(&mut (v, ref mut next)) = walk.last_mut() {
            let frame_id = trace.stacks[v].frame_id as usize;
            let (row, kind) = match frame_rows[frame_id] {
                Some(known) => known,
                None => {
                    let known = frame_row(trace, frame_id, by, &mut attributions, attributor, &mut rows);
                    frame_rows[frame_id] = Some(known);
                    known
                }
            };
            let parent = trace.stacks[v].parent_id.map(|p| p as usize);
            let row = match (kind, by) {
                // By package, generated code is named by its caller: one row per calling package.
                (Kind::Generated, By::Package) => {
                    let caller = parent.and_then(|p| caller_up[p]);
                    *generated_rows.entry(caller).or_insert_with(|| {
                        let name = generated_name(caller.map(|c| rows.rows[c].0.name.as_str()));
                        rows.id(
                            Key {
                                kind: Kind::Generated.as_str(),
                                name,
                                version: None,
                            },
                            None,
                        )
                    })
                }
                _ => row,
            };
            if on_path.len() <= row {
                on_path.resize(row + 1, 0);
            }
            if entered {
                code_up[v] = match kind {
                    k if k.is_code() => Some(row),
                    _ => parent.and_then(|p| code_up[p]),
                };
                caller_up[v] = match kind {
                    Kind::App | Kind::Dependency => Some(row),
                    _ => parent.and_then(|p| caller_up[p]),
                };
                node_up[v] = match kind {
                    Kind::Node => Some(row),
                    _ => parent.and_then(|p| node_up[p]),
                };
                if on_path[row] == 0 {
                    let tally = &mut rows.rows[row].2;
                    tally.total_samples += subtree[v].0;
                    tally.total_time += subtree[v].1;
                }
                on_path[row] += 1;
                if held(per_stack[v]) {
                    let (count, time) = per_stack[v];
                    let charged = code_up[v].or(node_up[v]).unwrap_or(row);
                    let tally = &mut rows.rows[charged].2;
                    tally.self_samples += count;
                    tally.self_time += time;
                }
            }
            if *next < child_start[v + 1] {
                let child = children[*next];
                *next += 1;
                walk.push((child, child_start[child]));
                entered = true;
            } else {
                on_path[row] -= 1;
                walk.pop();
                entered = false;
            }
        }
    }

    let mut out: Vec<Row> = rows
        .rows
        .into_iter()
        // A by-package generated row is named per caller in the walk; the per-frame placeholder may
        // end up unused.
        .filter(|(_, _, t)| t.total_samples > 0 || t.total_time > 0.0)
        .map(|(key, package, t)| Row {
            name: key.name,
            kind: key.kind,
            package,
            version: key.version,
            self_samples: t.self_samples,
            total_samples: t.total_samples,
            self_time: round_to_microseconds(t.self_time),
            total_time: round_to_microseconds(t.total_time),
        })
        .collect();
    out.sort_by(compare_rows);
    out
}

/// Whether a stack's (samples, weight) holds anything: a sample, or (a heap profile read from an older
/// file, whose entries have bytes but no sample count) a weight.
fn held((count, weight): (u64, f64)) -> bool {
    count > 0 || weight > 0.0
}

/// The kind and name of the row of a sample without a JS stack, by its marker: `idle` `(idle)` (no
/// marker), `gc` `(gc)`, `other` `(other)` (V8's `(program)`), and `(<marker>)` for any other marker.
/// Every view names them so: `summarize`, `jsprof report`, the `kind`/`package` labels of pprof and OTLP.
pub(crate) fn stackless_row(marker: Option<Marker>) -> (&'static str, &'static str) {
    match marker {
        None => ("idle", "(idle)"),
        Some(Marker::Gc) => ("gc", "(gc)"),
        Some(Marker::Other) => ("other", "(other)"),
        Some(Marker::Script) => ("script", "(script)"),
        Some(Marker::Style) => ("style", "(style)"),
        Some(Marker::Layout) => ("layout", "(layout)"),
        Some(Marker::Paint) => ("paint", "(paint)"),
    }
}

/// The stacks in an order where each parent comes before its children (validate() made sure parent
/// chains end), in time linear in the number of stacks.
fn parent_first(trace: &ProfilerTrace) -> Vec<usize> {
    let n = trace.stacks.len();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut path = Vec::new();
    for start in 0..n {
        let mut cursor = Some(start);
        while let Some(v) = cursor.filter(|&v| !placed[v]) {
            placed[v] = true;
            path.push(v);
            cursor = trace.stacks[v].parent_id.map(|p| p as usize);
        }
        order.extend(path.drain(..).rev());
    }
    order
}

/// Rows by self time (a sample's weight is its time, in every view), then by samples and name.
fn compare_rows(a: &Row, b: &Row) -> Ordering {
    b.self_time
        .total_cmp(&a.self_time)
        .then_with(|| b.self_samples.cmp(&a.self_samples))
        .then_with(|| b.total_samples.cmp(&a.total_samples))
        .then_with(|| a.name.cmp(&b.name))
        .then_with(|| a.kind.cmp(b.kind))
        .then_with(|| a.version.cmp(&b.version))
}

/// The row a frame is charged to, and what kind of code it is.
fn frame_row(
    trace: &ProfilerTrace,
    frame_id: usize,
    by: By,
    attributions: &mut [Option<Attribution>],
    attributor: &mut Attributor,
    rows: &mut Rows,
) -> (usize, Kind) {
    let frame = &trace.frames[frame_id];
    let resource = frame
        .resource_id
        .map(|r| trace.resources[r as usize].as_str())
        .filter(|r| !r.is_empty());
    let attribution = match frame.resource_id.filter(|_| resource.is_some()) {
        Some(r) => attributions[r as usize]
            .get_or_insert_with(|| attributor.attribute(resource.unwrap()))
            .clone(),
        None => frame_without_resource(frame.line),
    };
    let kind = attribution.kind;
    let (name, package) = match by {
        // Generated code's name is replaced per caller in the walk.
        By::Package => (package_name(&attribution), None),
        By::Function => {
            let function = if frame.name.is_empty() {
                "(anonymous)"
            } else {
                frame.name.as_str()
            };
            let place = match (resource, frame.line, frame.column) {
                (_, Some(line), Some(column)) if kind == Kind::Generated => {
                    format!("generated:{line}:{column}")
                }
                (_, Some(line), None) if kind == Kind::Generated => format!("generated:{line}"),
                (None, _, _) => "native".to_owned(),
                (Some(r), Some(line), Some(column)) => format!("{r}:{line}:{column}"),
                (Some(r), Some(line), None) => format!("{r}:{line}"),
                (Some(r), None, _) => r.to_owned(),
            };
            (format!("{function} ({place})"), attribution.package)
        }
        By::Resource => match kind {
            Kind::Generated => ("(generated)".to_owned(), None),
            _ => (resource.unwrap_or("(native)").to_owned(), attribution.package),
        },
    };
    let version = match (kind, by) {
        (Kind::Node | Kind::Generated | Kind::Native, _) => None,
        (_, By::Package) | (Kind::App | Kind::Dependency, _) => attribution.version,
    };
    (
        rows.id(
            Key {
                kind: kind.as_str(),
                name,
                version,
            },
            package,
        ),
        kind,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_is_a_code_row_or_a_label_by_the_label_rule_and_never_a_label_of_a_heap_profile() {
        use crate::ErrorKind;
        assert_eq!(
            SummaryBy::parse("function", false),
            Ok(SummaryBy::Code(By::Function))
        );
        assert_eq!(
            SummaryBy::parse("label:route", false),
            Ok(SummaryBy::Label("route".into()))
        );
        let kind = |text: &str, heap: bool| SummaryBy::parse(text, heap).unwrap_err().kind;
        assert_eq!(kind("label:a-b", false), ErrorKind::Type, "the label rule's key");
        assert_eq!(kind("label:", false), ErrorKind::Type);
        assert_eq!(kind("label:__proto__", false), ErrorKind::Type);
        assert_eq!(kind("bogus", false), ErrorKind::Range);
        assert_eq!(
            SummaryBy::parse("route", false),
            Ok(SummaryBy::Label("route".into()))
        );
        assert_eq!(kind("route", true), ErrorKind::Range);
        assert_eq!(
            SummaryBy::parse("nope", false).unwrap_err().message,
            "by must be one of 'package', 'function', 'resource', 'route' or 'label:<key>', got 'nope'"
        );
        assert_eq!(
            kind("label:route", true),
            ErrorKind::Range,
            "a heap profile has no labels"
        );
        assert_eq!(
            SummaryBy::parse("resource", true),
            Ok(SummaryBy::Code(By::Resource))
        );
        let e = SummaryBy::parse("label:tenant", true).unwrap_err();
        assert!(
            e.message.contains("heap profile") && e.message.contains("'label:tenant'"),
            "{}",
            e.message
        );
        // What it shows of a hostile value is escaped and bounded.
        let e = SummaryBy::parse(&format!("\u{1b}[2J{}", "x".repeat(10_000)), false).unwrap_err();
        assert!(
            e.message.contains("\\x1b") && e.message.len() < 400,
            "{}",
            e.message
        );
    }
    use crate::trace::{Frame, Stack, TraceSample};

    /// An attributor that reads nothing: app code has no package.
    fn attributor() -> Attributor {
        Attributor::with_reader(Box::new(|_| None))
    }

    fn frame(name: &str, resource_id: Option<u32>) -> Frame {
        Frame {
            name: name.into(),
            resource_id,
            line: resource_id.map(|_| 1),
            column: resource_id.map(|_| 2),
        }
    }

    fn sample(timestamp: f64, stack_id: Option<u32>, marker: Option<Marker>) -> TraceSample {
        TraceSample {
            timestamp,
            stack_id,
            marker,
        }
    }

    /// resources: app, lodash, node internal; frames: main(app), map(lodash), JSON.parse (builtin),
    /// timers(node), rec(app).
    #[test]
    fn by_label_splits_by_the_value_and_counts_every_sample_once() {
        let trace = crate::trace::tests::labelled_trace();
        let rows = summarize_by_label(&trace, "route", Some(1.0)).unwrap();
        let got: Vec<(&str, &str, u64)> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.kind, r.self_samples))
            .collect();
        assert_eq!(
            got,
            [
                ("(no route)", "unlabelled", 6),
                ("GET /a", "label", 2),
                ("GET /b\u{1b}[2J\n", "label", 1)
            ]
        );
        assert_eq!(rows.iter().map(|r| r.self_samples).sum::<u64>(), 9);
        assert_eq!(rows[1].total_time, rows[1].self_time);
        let spans = summarize_by_label(&trace, "span_id", Some(1.0)).unwrap();
        assert_eq!(spans.len(), 4);
        assert!(summarize_by_label(&trace, "not a key", None).is_err());
        assert!(summarize_by_label(&trace, "route", Some(-1.0)).is_err());
        // A trace without labels: one row of everything.
        let plain = summarize_by_label(&fixture(), "route", None).unwrap();
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].name, "(no route)");
    }

    #[test]
    fn a_deep_chain_is_summed_in_one_pass_and_recursion_counts_once() {
        // f0 <- f1 <- … <- f{n-1}, each depth sampled once, and the chain's frames repeated (a
        // recursive function: frame i % 7) so totals must count each sample once per function.
        let n = 100_000usize;
        let frames = (0..7).map(|i| frame(&format!("r{i}"), Some(0))).collect();
        let stacks = (0..n)
            .map(|i| Stack {
                frame_id: (i % 7) as u32,
                parent_id: i.checked_sub(1).map(|p| p as u32),
            })
            .collect();
        let samples = (0..n).map(|i| sample(i as f64, Some(i as u32), None)).collect();
        let trace = ProfilerTrace {
            jsprof: None,
            resources: vec!["file:///app/r.js".into()],
            frames,
            stacks,
            samples,
        };
        let rows = summarize(&trace, By::Function, Some(1.0), &mut attributor()).unwrap();
        for row in &rows {
            let i: usize = row.name[1..2].parse().unwrap();
            // Samples at depth >= i hold r_i (depth d holds r_{d % 7} and everything above it).
            assert_eq!(row.total_samples, (n - i) as u64, "{}", row.name);
            let own = (0..n).filter(|d| d % 7 == i).count() as u64;
            assert_eq!(row.self_samples, own, "{}", row.name);
        }
        assert_eq!(rows.len(), 7);
    }

    fn fixture() -> ProfilerTrace {
        ProfilerTrace {
            jsprof: None,
            resources: vec![
                "file:///p/src/main.js".into(),
                "file:///p/node_modules/lodash/lodash.js".into(),
                "node:internal/timers".into(),
            ],
            frames: vec![
                frame("main", Some(0)),
                frame("map", Some(1)),
                frame("JSON.parse", None),
                frame("listOnTimeout", Some(2)),
                frame("rec", Some(0)),
            ],
            stacks: vec![
                Stack {
                    frame_id: 0,
                    parent_id: None,
                }, // 0 main
                Stack {
                    frame_id: 1,
                    parent_id: Some(0),
                }, // 1 main > map
                Stack {
                    frame_id: 2,
                    parent_id: Some(1),
                }, // 2 main > map > JSON.parse
                Stack {
                    frame_id: 3,
                    parent_id: None,
                }, // 3 timers
                Stack {
                    frame_id: 2,
                    parent_id: Some(3),
                }, // 4 timers > JSON.parse
                Stack {
                    frame_id: 4,
                    parent_id: Some(0),
                }, // 5 main > rec
                Stack {
                    frame_id: 4,
                    parent_id: Some(5),
                }, // 6 main > rec > rec
                Stack {
                    frame_id: 4,
                    parent_id: Some(6),
                }, // 7 main > rec > rec > rec
                Stack {
                    frame_id: 2,
                    parent_id: None,
                }, // 8 JSON.parse alone
            ],
            samples: vec![
                sample(0.0, Some(2), Some(Marker::Script)),
                sample(1.0, Some(2), Some(Marker::Script)),
                sample(2.0, Some(4), Some(Marker::Script)),
                sample(3.0, Some(7), Some(Marker::Script)),
                sample(4.0, None, None),
                sample(5.0, None, Some(Marker::Gc)),
                sample(7.0, None, Some(Marker::Other)),
                sample(8.0, Some(8), Some(Marker::Script)),
                sample(9.0, Some(1), Some(Marker::Script)),
            ],
        }
    }

    fn row<'a>(rows: &'a [Row], name: &str) -> &'a Row {
        rows.iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no row {name} in {rows:#?}"))
    }

    #[test]
    fn by_package_charges_builtins_to_their_caller() {
        let rows = summarize(&fixture(), By::Package, None, &mut attributor()).unwrap();
        let counts: Vec<(&str, &str, u64, u64)> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.kind, r.self_samples, r.total_samples))
            .collect();
        assert_eq!(
            counts,
            vec![
                ("lodash", "dependency", 3, 3),
                ("(gc)", "gc", 1, 1), // self time 2 ms
                ("(app)", "app", 1, 4),
                ("(native)", "native", 1, 4),
                ("(idle)", "idle", 1, 1),
                ("(node)", "node", 1, 1),
                ("(other)", "other", 1, 1),
            ]
        );
        let sum: u64 = rows.iter().map(|r| r.self_samples).sum();
        assert_eq!(sum, 9, "self samples add up to all samples");
        // Weights: gaps 1,1,1,1,1,2,1,1 and the last = median gap 1.
        assert_eq!(row(&rows, "(gc)").self_time, 2.0);
        assert_eq!(row(&rows, "lodash").self_time, 3.0);
        let total: f64 = rows.iter().map(|r| r.self_time).sum();
        assert_eq!(total, 10.0);
    }

    /// main (app) calls generated code directly and through lodash; generated code calls a builtin
    /// and more generated code.
    fn generated_fixture() -> ProfilerTrace {
        let generated = |name: &str| Frame {
            name: name.into(),
            resource_id: None,
            line: Some(1),
            column: Some(20),
        };
        let stack = |frame_id, parent_id| Stack { frame_id, parent_id };
        ProfilerTrace {
            jsprof: None,
            resources: vec![
                "file:///p/src/main.js".into(),
                "file:///p/node_modules/lodash/lodash.js".into(),
            ],
            frames: vec![
                frame("main", Some(0)),
                frame("map", Some(1)),
                generated("anonymous"),
                frame("stringify", None),
                generated("inner"),
            ],
            stacks: vec![
                stack(0, None),    // 0 main
                stack(2, Some(0)), // 1 main > anonymous
                stack(3, Some(1)), // 2 main > anonymous > stringify
                stack(1, Some(0)), // 3 main > map
                stack(2, Some(3)), // 4 main > map > anonymous
                stack(4, Some(4)), // 5 main > map > anonymous > inner
            ],
            samples: vec![
                sample(0.0, Some(2), None),
                sample(1.0, Some(1), None),
                sample(2.0, Some(5), None),
                sample(3.0, Some(4), None),
                sample(4.0, Some(3), None),
                sample(5.0, Some(0), None),
            ],
        }
    }

    #[test]
    fn generated_code_is_a_row_of_its_own_named_by_its_caller() {
        let rows = summarize(&generated_fixture(), By::Package, None, &mut attributor()).unwrap();
        let counts: Vec<(&str, &str, u64, u64)> = rows
            .iter()
            .map(|r| (r.name.as_str(), r.kind, r.self_samples, r.total_samples))
            .collect();
        assert_eq!(
            counts,
            vec![
                // Its builtin's time and nested generated code's time are its own, not the caller's.
                ("(generated, called from (app))", "generated", 2, 2),
                ("(generated, called from lodash)", "generated", 2, 2),
                ("(app)", "app", 1, 6),
                ("lodash", "dependency", 1, 3),
                ("(native)", "native", 0, 1),
            ]
        );
        let by_function = summarize(&generated_fixture(), By::Function, None, &mut attributor()).unwrap();
        assert_eq!(row(&by_function, "anonymous (generated:1:20)").self_samples, 3);
        assert_eq!(row(&by_function, "inner (generated:1:20)").kind, "generated");
        assert_eq!(row(&by_function, "stringify (native)").self_samples, 0);
        let by_resource = summarize(&generated_fixture(), By::Resource, None, &mut attributor()).unwrap();
        assert_eq!(row(&by_resource, "(generated)").self_samples, 4);
    }

    #[test]
    fn explicit_sample_interval_weighs_the_last_sample() {
        let rows = summarize(&fixture(), By::Package, Some(5.0), &mut attributor()).unwrap();
        assert_eq!(row(&rows, "lodash").self_time, 7.0);
    }

    #[test]
    fn by_function_counts_recursion_once_in_total() {
        let rows = summarize(&fixture(), By::Function, None, &mut attributor()).unwrap();
        let rec = row(&rows, "rec (file:///p/src/main.js:1:2)");
        assert_eq!((rec.self_samples, rec.total_samples, rec.kind), (1, 1, "app"));
        let map = row(&rows, "map (file:///p/node_modules/lodash/lodash.js:1:2)");
        assert_eq!(
            (map.self_samples, map.total_samples, map.package.as_deref()),
            (3, 3, Some("lodash"))
        );
        let parse = row(&rows, "JSON.parse (native)");
        assert_eq!((parse.self_samples, parse.total_samples), (1, 4));
        let timers = row(&rows, "listOnTimeout (node:internal/timers:1:2)");
        assert_eq!(
            (timers.self_samples, timers.total_samples, timers.kind),
            (1, 1, "node")
        );
        assert_eq!(row(&rows, "main (file:///p/src/main.js:1:2)").total_samples, 4);
    }

    #[test]
    fn by_resource() {
        let rows = summarize(&fixture(), By::Resource, None, &mut attributor()).unwrap();
        assert_eq!(
            row(&rows, "file:///p/node_modules/lodash/lodash.js").self_samples,
            3
        );
        assert_eq!(row(&rows, "file:///p/src/main.js").total_samples, 4);
        assert_eq!(row(&rows, "(native)").self_samples, 1);
        assert_eq!(row(&rows, "node:internal/timers").self_samples, 1);
    }

    #[test]
    fn ties_are_sorted_deterministically() {
        let a = summarize(&fixture(), By::Package, None, &mut attributor()).unwrap();
        let b = summarize(&fixture(), By::Package, None, &mut attributor()).unwrap();
        assert_eq!(a, b);
        for w in a.windows(2) {
            assert_ne!(compare_rows(&w[0], &w[1]), Ordering::Greater);
        }
    }

    #[test]
    fn rejects_malformed_traces() {
        type Breaker = Box<dyn Fn(&mut ProfilerTrace)>;
        let cases: Vec<(Breaker, &str)> = vec![
            (
                Box::new(|t| t.samples[0].stack_id = Some(99)),
                "samples[0].stackId 99 is out of range",
            ),
            (
                Box::new(|t| t.stacks[1].parent_id = Some(99)),
                "stacks[1].parentId 99",
            ),
            (Box::new(|t| t.stacks[0].parent_id = Some(2)), "parentId cycle"),
            (Box::new(|t| t.stacks[5].parent_id = Some(5)), "parentId cycle"),
            (Box::new(|t| t.stacks[0].frame_id = 50), "stacks[0].frameId 50"),
            (
                Box::new(|t| t.frames[0].resource_id = Some(7)),
                "frames[0].resourceId 7",
            ),
            (
                Box::new(|t| t.samples[3].timestamp = f64::NAN),
                "not a finite number",
            ),
        ];
        for (break_it, message) in cases {
            let mut t = fixture();
            break_it(&mut t);
            let err = summarize(&t, By::Package, None, &mut attributor()).unwrap_err();
            assert!(
                err.message.contains(message),
                "{} does not contain {message}",
                err.message
            );
        }
        let err = summarize(&fixture(), By::Package, Some(-1.0), &mut attributor()).unwrap_err();
        assert!(err.message.contains("sampleInterval"));
    }

    #[test]
    fn empty_and_single_sample_traces() {
        let empty = ProfilerTrace::default();
        assert!(summarize(&empty, By::Function, None, &mut attributor())
            .unwrap()
            .is_empty());
        let mut one = fixture();
        one.samples.truncate(1);
        let rows = summarize(&one, By::Package, None, &mut attributor()).unwrap();
        assert_eq!((rows[0].self_samples, rows[0].self_time), (1, 0.0));
        assert_eq!(fixture().sample_interval(), 1.0);
    }

    #[test]
    fn samples_out_of_time_order_weigh_their_gap_in_time() {
        // V8 reorders some samples (negative timeDeltas); a trace keeps V8's order. Swapping two
        // samples' places in the list changes no row.
        let sorted = summarize(&fixture(), By::Function, None, &mut attributor()).unwrap();
        let mut shuffled = fixture();
        shuffled.samples.swap(1, 3);
        let rows = summarize(&shuffled, By::Function, None, &mut attributor()).unwrap();
        assert_eq!(rows, sorted);
        for row in &rows {
            assert!(row.self_time >= 0.0 && row.total_time >= 0.0, "{row:?}");
        }
    }

    #[test]
    fn app_packages_and_versions_from_package_json() {
        let mut a = Attributor::with_reader(Box::new(|path: &str| {
            (path == "/p/package.json").then(|| r#"{"name":"my-app","version":"1.2.3"}"#.to_owned())
        }));
        let rows = summarize(&fixture(), By::Package, None, &mut a).unwrap();
        let app = row(&rows, "my-app");
        assert_eq!(
            (app.kind, app.version.as_deref(), app.total_samples),
            ("app", Some("1.2.3"), 4)
        );
    }
}
