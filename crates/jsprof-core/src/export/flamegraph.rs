//! Flame graphs drawn from the trace's own stack tree: an SVG image ([`to_flame_graph`]), a
//! self-contained, explorable HTML page ([`to_flame_graph_html`]: zoom, search, tooltips, offline), and
//! the differential SVG of `jsprof diff` ([`to_diff_flame_graph`]: one tree coloured by the change
//! from another).
//!
//! All are made from one [`FlameTree`]: the stacks of the trace merged by frame label
//! (`name (path:line:column)`, see [`frame_label`]) from the outermost frame down, stackless samples as
//! the pseudo-frames `(idle)`, `(garbage collector)`, `(program)` under the root `all`, siblings in byte
//! order of their labels. Names are taken as the trace spells them (no round trip through folded text,
//! so `x 999`, a leading space or a `;` stay as they are). Each frame is coloured by the kind of code it
//! is (app, dependency, node, native; VM pseudo-frames apart), dependency code by package, and its
//! tooltip says `kind: dependency, package: lodash`:
//! `chunk (/app/node_modules/lodash/chunk.js:5:17) (2 ms, 2 samples, 18.18%; kind: dependency, package: lodash)`.
//! Widths and shares are by time, the one weight every view uses (each sample weighs the gap to the
//! next one within its run, see `trace/weights.rs`); a trace that spans no time is drawn by sample
//! count.
//!
//! Everything that comes from the trace is shown as text: [`visible`] writes characters XML 1.0 forbids
//! or that reorder text (C0 controls but tab, DEL, C1, U+FFFE/U+FFFF, bidi controls, line/paragraph
//! separators) as visible escapes (`\x01`, `\u{202e}`); markup is escaped for XML/HTML; the HTML page
//! embeds its data as JSON with `<`, `>`, `&` escaped, so no name can end the script element.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

use super::{frame_attributions, frame_label, unplaced, Pseudo};
use crate::attribution::Kind;
use crate::error::{Error, Result};
use crate::text::{markup as markup_text, visible};
use crate::trace::ProfilerTrace;

#[derive(Debug, Clone, Default)]
pub struct FlameGraphOptions {
    /// Defaults to "Flame Graph".
    pub title: Option<String>,
    /// Defaults to a colour legend.
    pub subtitle: Option<String>,
    /// Image width in px; defaults to 1200. Must be 10..=100000. (SVG only: the HTML page fills the window.)
    pub width: Option<u32>,
    /// Only the samples whose label `key` has `value` (one endpoint: `("route", "GET /users/:id")`; one
    /// trace: `("trace_id", …)`), each weighing what it weighs in the whole trace. CPU traces only.
    pub label: Option<(String, String)>,
}

/// The legend shown as the default subtitle.
pub(crate) const LEGEND: &str =
    "orange: app · blue: dependency · green: node · teal: generated · purple: native · red: gc · grey: idle/other";

/// What colours and tooltips tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Group {
    Root,
    Kind(Kind),
    Pseudo(Pseudo),
}

impl Group {
    /// The short name the HTML page's script and legend use: the kind, as every view names it
    /// (`summarize`'s kinds; `gc`, `other`, `idle` for samples without a JS stack).
    fn code(self) -> &'static str {
        match self {
            Group::Root => "root",
            Group::Kind(k) => k.as_str(),
            Group::Pseudo(Pseudo::GarbageCollector) => "gc",
            Group::Pseudo(Pseudo::Program) => "other",
            Group::Pseudo(Pseudo::Idle) => "idle",
        }
    }
}

/// A colour in the band of its group, varied by a hash of `key` (the package for dependency code, the
/// frame label otherwise) so neighbours differ and a package keeps one shade.
pub(crate) fn colour(group: Group, key: &str) -> (u8, u8, u8) {
    let t = fnv1a(key) as f64 / u64::MAX as f64; // 0..=1
    let lerp = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
    match group {
        Group::Root => (200, 200, 200),
        Group::Kind(Kind::App) => (lerp(235, 250), lerp(125, 175), lerp(40, 70)),
        Group::Kind(Kind::Dependency) => (lerp(70, 110), lerp(125, 165), lerp(215, 245)),
        Group::Kind(Kind::Node) => (lerp(85, 125), lerp(185, 215), lerp(85, 120)),
        Group::Kind(Kind::Native) => (lerp(160, 185), lerp(130, 155), lerp(200, 225)),
        Group::Kind(Kind::Generated) => (lerp(60, 95), lerp(185, 210), lerp(185, 210)),
        Group::Pseudo(Pseudo::GarbageCollector) => (215, 70, 70),
        Group::Pseudo(Pseudo::Program) => (165, 165, 165),
        Group::Pseudo(Pseudo::Idle) => (215, 215, 215),
    }
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One frame of the merged call tree.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlameNode {
    /// The frame label as the trace spells it (not yet made [`visible`]).
    pub label: String,
    /// `None` for the root.
    pub parent: Option<usize>,
    pub depth: usize,
    pub group: Group,
    /// The npm package of dependency code.
    pub package: Option<String>,
    pub version: Option<String>,
    /// The nearest app or dependency node at or above this one: what generated code is named by.
    pub caller: Option<usize>,
    /// Samples in this frame and below it.
    pub samples: u64,
    /// Samples with this frame as the leaf.
    pub self_samples: u64,
    /// Time in ms (each sample weighs the gap to the next one, as in `summarize`).
    pub ms: f64,
    pub self_ms: f64,
    /// What widths and shares are drawn by: `ms` (a sample weighs its time, as everywhere else), or
    /// the sample count when the trace spans no time at all (one sample, or all at one timestamp).
    pub weight: f64,
}

impl FlameNode {
    /// A node with no samples yet, not linked into a tree.
    fn empty(label: &str, group: Group) -> FlameNode {
        FlameNode {
            label: label.to_owned(),
            parent: None,
            depth: 0,
            group,
            package: None,
            version: None,
            caller: None,
            samples: 0,
            self_samples: 0,
            ms: 0.0,
            self_ms: 0.0,
            weight: 0.0,
        }
    }
}

/// The trace's stacks merged by label: nodes in depth-first order (a node before its children,
/// siblings in byte order of their labels); node 0 is the root `all`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlameTree {
    pub nodes: Vec<FlameNode>,
    /// Each sample's node (its leaf frame, or its pseudo-frame), by the sample's index in the trace the
    /// tree was made of: what the HTML page's label views add up.
    pub sample_node: Vec<usize>,
}

/// What a flame graph's widths measure: a trace's time, or a heap profile's bytes (`crate::heap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Ms,
    Bytes,
}

impl Unit {
    /// A value for a tooltip: `12.5 ms`, `1.50 MiB`.
    fn format(self, value: f64) -> String {
        match self {
            Unit::Ms => milliseconds(value),
            Unit::Bytes => bytes(value),
        }
    }

    /// What a share is of, in the differential graph's tooltips.
    fn of_what(self) -> &'static str {
        match self {
            Unit::Ms => "of the time",
            Unit::Bytes => "of the bytes",
        }
    }

    /// The HTML page's name of the unit.
    fn code(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Bytes => "bytes",
        }
    }
}

/// `512 B`, `1.50 KiB`, `12.3 MiB`: bytes for a tooltip (3 significant digits from KiB up).
pub(crate) fn bytes(value: f64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if value < 1024.0 {
        return format!("{} B", value.round());
    }
    let mut v = value / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {}", UNITS[unit])
}

impl FlameTree {
    pub(crate) fn new(trace: &ProfilerTrace) -> FlameTree {
        FlameTree::weighted(trace, &trace.sample_weights(), None)
    }

    /// The tree of a valid trace whose samples weigh `weights` (summed into `ms`/`self_ms`: a heap
    /// profile's bytes) and each count `counts[i]` samples (1 each when `None`).
    pub(crate) fn weighted(trace: &ProfilerTrace, weights: &[f64], counts: Option<&[u64]>) -> FlameTree {
        let attributions = frame_attributions(trace);
        let labels: Vec<String> = (0..trace.frames.len() as u32)
            .map(|f| frame_label(trace, f))
            .collect();
        let mut nodes = vec![FlameNode::empty("all", Group::Root)];
        // (parent node, label) -> node, in creation order (sorted below).
        let mut child: HashMap<(usize, String), usize> = HashMap::new();
        let mut add =
            |nodes: &mut Vec<FlameNode>, parent: usize, label: &str, fill: &dyn Fn() -> FlameNode| {
                *child.entry((parent, label.to_owned())).or_insert_with(|| {
                    let mut node = fill();
                    node.parent = Some(parent);
                    node.depth = nodes[parent].depth + 1;
                    node.caller = match node.group {
                        Group::Kind(Kind::App | Kind::Dependency) => Some(nodes.len()),
                        _ => nodes[parent].caller,
                    };
                    if node.group == Group::Kind(Kind::Generated) {
                        // Named by the package that called it (see `summarize`).
                        node.package = node.caller.and_then(|c| nodes[c].package.clone());
                    }
                    nodes.push(node);
                    nodes.len() - 1
                })
            };
        // Stack id -> node, resolved through parents without recursion (validated traces are acyclic).
        let mut stack_node: Vec<Option<usize>> = vec![None; trace.stacks.len()];
        let mut pending = Vec::new();
        let mut sample_node = Vec::with_capacity(trace.samples.len());
        for (i, (sample, &ms)) in trace.samples.iter().zip(weights).enumerate() {
            let count = counts.map_or(1, |c| c[i]);
            let node = match (sample.stack_id, Pseudo::of(sample)) {
                (Some(stack), _) => {
                    let mut cursor = Some(stack as usize);
                    while let Some(s) = cursor {
                        if stack_node[s].is_some() {
                            break;
                        }
                        pending.push(s);
                        cursor = trace.stacks[s].parent_id.map(|p| p as usize);
                    }
                    while let Some(s) = pending.pop() {
                        let parent = trace.stacks[s]
                            .parent_id
                            .map_or(0, |p| stack_node[p as usize].unwrap_or(0));
                        let frame = trace.stacks[s].frame_id as usize;
                        let a = &attributions[frame];
                        let fill = || FlameNode {
                            package: a.package.clone(),
                            version: a.version.clone(),
                            ..FlameNode::empty(&labels[frame], Group::Kind(a.kind))
                        };
                        stack_node[s] = Some(add(&mut nodes, parent, &labels[frame], &fill));
                    }
                    stack_node[stack as usize].unwrap_or(0)
                }
                (None, pseudo) => {
                    let p = pseudo.unwrap_or(Pseudo::Idle);
                    add(&mut nodes, 0, p.name(), &|| {
                        FlameNode::empty(p.name(), Group::Pseudo(p))
                    })
                }
            };
            nodes[node].self_samples += count;
            nodes[node].self_ms += ms;
            sample_node.push(node);
        }
        // Totals: children were created after their parents.
        for n in &mut nodes {
            n.samples = n.self_samples;
            n.ms = n.self_ms;
        }
        for i in (1..nodes.len()).rev() {
            let (samples, ms, parent) = (nodes[i].samples, nodes[i].ms, nodes[i].parent.unwrap_or(0));
            nodes[parent].samples += samples;
            nodes[parent].ms += ms;
        }
        let by_time = nodes[0].ms > 0.0;
        for n in &mut nodes {
            n.weight = if by_time { n.ms } else { n.samples as f64 };
        }
        let (nodes, new_index) = depth_first(nodes);
        FlameTree {
            nodes,
            sample_node: sample_node.into_iter().map(|n| new_index[n]).collect(),
        }
    }

    /// The root's weight: the trace's time in ms (or its sample count when it spans no time).
    pub(crate) fn total(&self) -> f64 {
        self.nodes[0].weight
    }
}

/// Reorders nodes depth first, siblings by label bytes, and rewrites the parent links; with each old
/// index's new one.
fn depth_first(nodes: Vec<FlameNode>) -> (Vec<FlameNode>, Vec<usize>) {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate().skip(1) {
        children[n.parent.unwrap_or(0)].push(i);
    }
    for c in &mut children {
        c.sort_by(|&a, &b| nodes[a].label.cmp(&nodes[b].label));
    }
    let mut order = Vec::with_capacity(nodes.len());
    let mut todo = vec![0usize];
    while let Some(i) = todo.pop() {
        order.push(i);
        todo.extend(children[i].iter().rev());
    }
    let mut new_index = vec![0usize; nodes.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let mut slots: Vec<Option<FlameNode>> = nodes.into_iter().map(Some).collect();
    let nodes = order
        .iter()
        .map(|&old| {
            let mut n = slots[old].take().expect("each node once");
            n.parent = n.parent.map(|p| new_index[p]);
            n.caller = n.caller.map(|c| new_index[c]);
            n
        })
        .collect();
    (nodes, new_index)
}

/// `kind: dependency, package: lodash`: the tooltip line of a frame.
fn tooltip(node: &FlameNode) -> String {
    match (node.group, &node.package) {
        (Group::Root, _) => String::new(),
        (Group::Kind(Kind::Generated), Some(p)) => format!("kind: generated, called from: {p}"),
        (Group::Kind(k), Some(p)) => format!("kind: {}, package: {p}", k.as_str()),
        (Group::Kind(k), None) => format!("kind: {}", k.as_str()),
        (Group::Pseudo(Pseudo::GarbageCollector), _) => "kind: gc".into(),
        (Group::Pseudo(Pseudo::Idle), _) => "kind: idle".into(),
        (Group::Pseudo(Pseudo::Program), _) => "kind: other, VM work outside JS".into(),
    }
}

/// The colour of a node: dependency code by package, everything else by label.
fn node_colour(node: &FlameNode) -> (u8, u8, u8) {
    let key = match (node.group, &node.package) {
        (Group::Kind(Kind::Dependency), Some(p)) => p.as_str(),
        _ => node.label.as_str(),
    };
    colour(node.group, key)
}

/// `12.5`, `100`, `33.33`: a percentage with at most two decimals.
fn percent(part: f64, total: f64) -> String {
    let p = if total > 0.0 { part * 100.0 / total } else { 0.0 };
    let s = format!("{p:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// `12.5 ms`, `1,234 ms`: a time for a tooltip (3 significant digits below 100 ms).
fn milliseconds(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{} ms", thousands(ms.round() as u64))
    } else {
        let s = format!("{ms:.2}");
        format!("{} ms", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut groups = Vec::new();
    let mut end = digits.len();
    while end > 3 {
        groups.push(&digits[end - 3..end]);
        end -= 3;
    }
    groups.push(&digits[..end]);
    groups.reverse();
    groups.join(",")
}

pub(crate) fn check_width(options: &FlameGraphOptions) -> Result<()> {
    match options.width {
        Some(w) if !(10..=100_000).contains(&w) => Err(Error::invalid(format!(
            "options.width must be between 10 and 100000 px, got {w}"
        ))),
        _ => Ok(()),
    }
}

const FRAME_HEIGHT: f64 = 16.0;
const FONT_SIZE: f64 = 12.0;
/// The advance of one character of the monospace font at [`FONT_SIZE`], in px.
const CHAR_WIDTH: f64 = FONT_SIZE * 0.6;
/// Frames narrower than this are not drawn (their samples still count in their parents).
const MIN_WIDTH: f64 = 0.1;
const TOP: f64 = 56.0;
const BOTTOM: f64 = 12.0;

/// An SVG flame graph: root at the bottom, each frame a `<g>` with a `<title>` tooltip
/// (`label (T ms, N samples, P%; kind: …)`, widths and shares by time), a `<rect>` filled by kind and its label, cut to fit.
pub fn to_flame_graph(trace: &ProfilerTrace, options: &FlameGraphOptions) -> Result<String> {
    check_width(options)?;
    Ok(draw_svg(&tree_of(trace, options), options, Unit::Ms))
}

/// The tree of a CPU trace, of the samples `options.label` selects when it is given.
fn tree_of(trace: &ProfilerTrace, options: &FlameGraphOptions) -> FlameTree {
    let Some((key, value)) = &options.label else {
        return FlameTree::new(trace);
    };
    // Weighed in the whole trace (a sample's gap to the next is the run's, whatever its label), then
    // the tree of the selected samples alone.
    let weights = trace.sample_weights();
    let ext = trace.jsprof.as_ref();
    let keep: Vec<usize> = (0..trace.samples.len())
        .filter(|&i| {
            ext.and_then(|e| e.labels_of(i))
                .and_then(|l| l.get(key))
                .is_some_and(|v| v == value)
        })
        .collect();
    let selected = ProfilerTrace {
        frames: trace.frames.clone(),
        jsprof: None,
        resources: trace.resources.clone(),
        samples: keep.iter().map(|&i| trace.samples[i]).collect(),
        stacks: trace.stacks.clone(),
    };
    let selected_weights: Vec<f64> = keep.iter().map(|&i| weights[i]).collect();
    FlameTree::weighted(&selected, &selected_weights, None)
}

/// The SVG of a tree whose weights are `unit`s.
pub(crate) fn draw_svg(tree: &FlameTree, options: &FlameGraphOptions, unit: Unit) -> String {
    let total = tree.total();
    let layout = Layout::new(tree, options);
    layout.svg(options, LEGEND, |_, n| {
        let line = tooltip(n);
        let mut title = format!(
            "{} ({}, {} sample{}, {}%",
            visible(&n.label),
            unit.format(n.ms),
            thousands(n.samples),
            if n.samples == 1 { "" } else { "s" },
            percent(n.weight, total)
        );
        if !line.is_empty() {
            title.push_str("; ");
            title.push_str(&line);
        }
        title.push(')');
        (node_colour(n), title)
    })
}

/// Where each frame of a tree is drawn: an SVG of `options.width`, root at the bottom, widths by weight.
struct Layout<'t> {
    tree: &'t FlameTree,
    width: f64,
    height: f64,
    /// `(x, y, width)` of each node in px; `None` for frames too narrow to draw (their weight still
    /// counts in their parents).
    boxes: Vec<Option<(f64, f64, f64)>>,
}

impl<'t> Layout<'t> {
    fn new(tree: &'t FlameTree, options: &FlameGraphOptions) -> Layout<'t> {
        let width = options.width.unwrap_or(1200) as f64;
        let pad = 10.0_f64.min(width / 10.0);
        let inner = width - 2.0 * pad;
        let mut boxes = vec![None; tree.nodes.len()];
        // Only as tall as the deepest frame wide enough to draw: deeper ones would leave empty rows on
        // top of the root.
        let mut max_depth = 0;
        if tree.nodes[0].samples > 0 {
            // x offset (in weight) of each node: its parent's offset plus its earlier siblings' weights.
            let mut offset = vec![0f64; tree.nodes.len()];
            let mut next_child = vec![0f64; tree.nodes.len()];
            let scale = inner / tree.total();
            for (i, n) in tree.nodes.iter().enumerate() {
                if let Some(p) = n.parent {
                    offset[i] = offset[p] + next_child[p];
                    next_child[p] += n.weight;
                }
                let w = n.weight * scale;
                if w >= MIN_WIDTH {
                    max_depth = max_depth.max(n.depth);
                    boxes[i] = Some((pad + offset[i] * scale, 0.0, w));
                }
            }
            for (i, b) in boxes.iter_mut().enumerate() {
                if let Some((_, y, _)) = b {
                    *y = TOP + (max_depth - tree.nodes[i].depth) as f64 * FRAME_HEIGHT;
                }
            }
        }
        let height = TOP + (max_depth + 1) as f64 * FRAME_HEIGHT + BOTTOM;
        Layout {
            tree,
            width,
            height,
            boxes,
        }
    }

    /// The SVG: title and subtitle (default `legend`) on top, then each drawn frame with the fill and
    /// tooltip `paint` gives it (the tooltip as plain text: it is escaped here).
    fn svg(
        &self,
        options: &FlameGraphOptions,
        legend: &str,
        paint: impl Fn(usize, &FlameNode) -> ((u8, u8, u8), String),
    ) -> String {
        let (width, height) = (self.width, self.height);
        let title = options.title.as_deref().unwrap_or("Flame Graph");
        let subtitle = options.subtitle.as_deref().unwrap_or(legend);
        let mut out = String::with_capacity(512 + self.tree.nodes.len() * 200);
        let _ = write!(
            out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n\
             <svg version=\"1.1\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             xmlns=\"http://www.w3.org/2000/svg\">\n\
             <style>text{{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:{fs}px;fill:#000;white-space:pre}}\
             .title{{font-size:17px;text-anchor:middle}}.subtitle{{fill:#555;text-anchor:middle}}\
             g:hover rect{{stroke:#000;stroke-width:0.5}}</style>\n\
             <rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fdfdfd\"/>\n\
             <text class=\"title\" x=\"{cx}\" y=\"24\">{title}</text>\n\
             <text class=\"subtitle\" x=\"{cx}\" y=\"44\">{subtitle}</text>\n",
            w = width,
            h = height,
            fs = FONT_SIZE,
            cx = width / 2.0,
            title = markup_text(title),
            subtitle = markup_text(subtitle),
        );
        if self.tree.nodes[0].samples == 0 {
            let _ = writeln!(
                out,
                "<text class=\"subtitle\" x=\"{}\" y=\"{}\">No samples</text>",
                width / 2.0,
                TOP + FRAME_HEIGHT - 4.0
            );
            out.push_str("</svg>\n");
            return out;
        }
        for (i, n) in self.tree.nodes.iter().enumerate() {
            let Some((x, y, w)) = self.boxes[i] else { continue };
            let ((r, g, b), title) = paint(i, n);
            let label = fit(&visible(&n.label), w - 6.0);
            let _ = writeln!(
                out,
                "<g><title>{}</title><rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{fh}\" \
                 fill=\"rgb({r},{g},{b})\" rx=\"2\" ry=\"2\"/><text x=\"{tx:.2}\" y=\"{ty:.1}\">{}</text></g>",
                markup_text(&title),
                markup_text(&label),
                fh = FRAME_HEIGHT - 1.0,
                tx = x + 3.0,
                ty = y + FRAME_HEIGHT - 4.5,
            );
        }
        out.push_str("</svg>\n");
        out
    }
}

/// The default subtitle of the differential flame graph.
pub(crate) const DIFF_LEGEND: &str =
    "width: share of the new profile · red: grew since the base (slower) · blue: shrank (faster) · hover for figures";

/// A differential flame graph (`jsprof diff -o diff.svg`): the `new` trace's tree, widths its shares
/// of the time; each frame red where its share grew since `base`, blue where it shrank, the deeper the
/// colour the larger the change (relative to the largest change drawn), grey where it did not change.
/// Tooltip: `label — S% of the time (base B%, ±P points)`. A frame of `new` is the base's frame with
/// the same label under the matching parent, or else the only one there of the same function at
/// another position ([`unplaced`]: a function moved by an edit). Frames only in the base have no width
/// and are not drawn. Both trees are the flame graph's own (`FlameTree`), so names reach the picture
/// as the traces spell them, and the work is linear in the frames of each tree, however deep.
pub fn to_diff_flame_graph(
    base: &ProfilerTrace,
    new: &ProfilerTrace,
    options: &FlameGraphOptions,
) -> Result<String> {
    check_width(options)?;
    Ok(draw_diff(
        &FlameTree::new(base),
        &FlameTree::new(new),
        options,
        Unit::Ms,
    ))
}

/// The differential SVG of two trees whose weights are `unit`s.
pub(crate) fn draw_diff(
    was: &FlameTree,
    tree: &FlameTree,
    options: &FlameGraphOptions,
    unit: Unit,
) -> String {
    let (was, tree) = (was, tree);
    // The base's children of each node by label, and by unplaced label (`None`: more than one).
    let mut exact: HashMap<(usize, &str), usize> = HashMap::new();
    let mut loose: HashMap<(usize, Cow<str>), Option<usize>> = HashMap::new();
    for (i, n) in was.nodes.iter().enumerate() {
        if let Some(p) = n.parent {
            exact.insert((p, n.label.as_str()), i);
            loose
                .entry((p, unplaced(&n.label)))
                .and_modify(|only| *only = None)
                .or_insert(Some(i));
        }
    }
    // The base node of each node (parents come first).
    let mut matched: Vec<Option<usize>> = vec![None; tree.nodes.len()];
    matched[0] = Some(0);
    for (i, n) in tree.nodes.iter().enumerate().skip(1) {
        let parent = n.parent.and_then(|p| matched[p]);
        matched[i] = parent.and_then(|p| {
            exact
                .get(&(p, n.label.as_str()))
                .copied()
                .or_else(|| loose.get(&(p, unplaced(&n.label))).copied().flatten())
        });
    }
    let share = |t: &FlameTree, i: usize| {
        if t.total() > 0.0 {
            t.nodes[i].weight / t.total()
        } else {
            0.0
        }
    };
    let shares: Vec<(f64, f64)> = (0..tree.nodes.len())
        .map(|i| (share(tree, i), matched[i].map_or(0.0, |b| share(was, b))))
        .collect();
    let layout = Layout::new(tree, options);
    let largest = (0..tree.nodes.len())
        .filter(|&i| layout.boxes[i].is_some())
        .map(|i| (shares[i].0 - shares[i].1).abs())
        .fold(0.0, f64::max);
    let legend = match unit {
        Unit::Ms => DIFF_LEGEND,
        Unit::Bytes => "width: share of the new profile's bytes · red: grew since the base · blue: shrank · hover for figures",
    };
    layout.svg(options, legend, |i, n| {
        let (now, before) = shares[i];
        let delta = now - before;
        let title = format!(
            "{} — {:.2}% {} (base {:.2}%, {}{:.2} points)",
            visible(&n.label),
            now * 100.0,
            unit.of_what(),
            before * 100.0,
            if delta >= 0.0 { "+" } else { "" },
            delta * 100.0
        );
        (diff_colour(delta, largest), title)
    })
}

/// Grey for no change; red (grew) or blue (shrank), deeper the closer `delta` is to `largest`.
fn diff_colour(delta: f64, largest: f64) -> (u8, u8, u8) {
    if largest <= 0.0 || delta.abs() < 1e-12 {
        return (220, 220, 220);
    }
    let k = (delta.abs() / largest).min(1.0);
    let fade = (220.0 - 190.0 * k).round() as u8;
    if delta > 0.0 {
        (250, fade, fade)
    } else {
        (fade, fade, 250)
    }
}

/// The start of `label` that fits in `px` (with `..` when cut; empty when not even 3 characters fit).
fn fit(label: &str, px: f64) -> String {
    let room = (px / CHAR_WIDTH).floor().max(0.0) as usize;
    let count = label.chars().count();
    if count <= room {
        label.to_owned()
    } else if room < 3 {
        String::new()
    } else {
        let mut s: String = label.chars().take(room - 2).collect();
        s.push_str("..");
        s
    }
}

/// The explorable page's script and style; the data goes into `<script type="application/json">`.
const HTML_TEMPLATE: &str = include_str!("flamegraph.html");

/// A single self-contained HTML page (no external requests; a Content-Security-Policy forbids them)
/// with the flame graph: click a frame to zoom into it, search (highlights frames and says what share
/// of the samples matched), colours by kind and package, tooltips with time, share, package@version
/// and source location.
///
/// A labelled trace's page also has a picker of label values (one endpoint, one trace): the whole tree
/// drawn with only the samples of that value, each weighing what it weighs in the whole trace (as the
/// `label` option does). At most [`MAX_VIEW_KEYS`] keys, the [`MAX_VIEW_VALUES`] heaviest values of each
/// and [`MAX_VIEW_ENTRIES`] node entries in all, so the page stays bounded; the picker says how many
/// values it leaves out (the `label` option draws any of them).
pub fn to_flame_graph_html(trace: &ProfilerTrace, options: &FlameGraphOptions) -> Result<String> {
    check_width(options)?;
    let tree = tree_of(trace, options);
    let views = if options.label.is_none() {
        label_views(trace, &tree, &trace.sample_weights())
    } else {
        LabelViews::default()
    };
    Ok(draw_html(&tree, options, Unit::Ms, &views))
}

pub(crate) const MAX_VIEW_KEYS: usize = 16;
pub(crate) const MAX_VIEW_VALUES: usize = 50;
pub(crate) const MAX_VIEW_ENTRIES: usize = 250_000;

/// The HTML page's label views: per key, per value, the nodes its samples touch (ascending) with their
/// totals over those samples alone.
#[derive(Debug, Default)]
pub(crate) struct LabelViews {
    keys: Vec<KeyView>,
    /// Keys beyond [`MAX_VIEW_KEYS`].
    omitted_keys: usize,
}

#[derive(Debug)]
struct KeyView {
    key: String,
    values: Vec<ValueView>,
    /// Values beyond [`MAX_VIEW_VALUES`] or the entry budget.
    omitted: usize,
}

#[derive(Debug)]
struct ValueView {
    value: String,
    /// For every node with a sample of this value at or below it.
    nodes: Vec<ViewEntry>,
}

/// (node, samples, self samples, ms)
type ViewEntry = (usize, u64, u64, f64);

/// The views of a labelled trace's tree (`weights`: the trace's sample weights, the tree's own).
fn label_views(trace: &ProfilerTrace, tree: &FlameTree, weights: &[f64]) -> LabelViews {
    let Some(ext) = trace.jsprof.as_ref().filter(|e| e.has_labels()) else {
        return LabelViews::default();
    };
    let labels: Vec<Option<&crate::trace::LabelSet>> =
        (0..trace.samples.len()).map(|i| ext.labels_of(i)).collect();
    // Per key, per value: (weight, samples), to pick the heaviest values.
    let mut totals: std::collections::BTreeMap<&str, HashMap<&str, (f64, u64)>> = Default::default();
    for (i, set) in labels.iter().enumerate() {
        for (k, v) in set.iter().flat_map(|s| s.iter()) {
            let t = totals.entry(k).or_default().entry(v).or_default();
            t.0 += weights[i];
            t.1 += 1;
        }
    }
    let mut views = LabelViews {
        omitted_keys: totals.len().saturating_sub(MAX_VIEW_KEYS),
        ..LabelViews::default()
    };
    let mut entries = 0usize;
    for (key, values) in totals.into_iter().take(MAX_VIEW_KEYS) {
        let mut order: Vec<(&str, (f64, u64))> = values.into_iter().collect();
        order.sort_by(|a, b| {
            b.1 .0
                .total_cmp(&a.1 .0)
                .then(b.1 .1.cmp(&a.1 .1))
                .then(a.0.cmp(b.0))
        });
        let shown = order.len().min(MAX_VIEW_VALUES);
        let index: HashMap<&str, usize> = order[..shown]
            .iter()
            .enumerate()
            .map(|(i, (v, _))| (*v, i))
            .collect();
        // Each shown value's own samples by their node: (samples, self samples, ms).
        let mut own: Vec<std::collections::BTreeMap<usize, (u64, u64, f64)>> =
            vec![Default::default(); shown];
        for (i, set) in labels.iter().enumerate() {
            let Some(&slot) = set.and_then(|s| s.get(key)).and_then(|v| index.get(v.as_str())) else {
                continue;
            };
            let e = own[slot].entry(tree.sample_node[i]).or_default();
            e.0 += 1;
            e.1 += 1;
            e.2 += weights[i];
        }
        let mut kv = KeyView {
            key: key.to_owned(),
            values: Vec::new(),
            omitted: order.len() - shown,
        };
        for (slot, mut acc) in own.into_iter().enumerate() {
            // Totals up the tree: a parent's index is below its children's (depth-first order), so
            // taking the highest index first sees every child before its parent.
            let mut nodes = Vec::new();
            while let Some((n, (samples, self_samples, ms))) = acc.pop_last() {
                if let Some(p) = tree.nodes[n].parent {
                    let e = acc.entry(p).or_default();
                    e.0 += samples;
                    e.2 += ms;
                }
                nodes.push((n, samples, self_samples, ms));
            }
            if entries + nodes.len() > MAX_VIEW_ENTRIES {
                kv.omitted += shown - slot;
                break;
            }
            entries += nodes.len();
            nodes.reverse();
            kv.values.push(ValueView {
                value: order[slot].0.to_owned(),
                nodes,
            });
        }
        views.keys.push(kv);
    }
    views
}

impl LabelViews {
    /// The page's JSON for the views; weights by the tree's rule (time, or samples when it spans none).
    fn to_json(&self, by_time: bool) -> serde_json::Value {
        let round = |v: f64| (v * 1000.0).round() / 1000.0;
        let keys: Vec<serde_json::Value> = self
            .keys
            .iter()
            .map(|k| {
                let values: Vec<serde_json::Value> = k
                    .values
                    .iter()
                    .map(|v| {
                        let col = |f: &dyn Fn(&ViewEntry) -> serde_json::Value| -> Vec<serde_json::Value> {
                            v.nodes.iter().map(f).collect()
                        };
                        serde_json::json!({
                            "value": visible(&v.value),
                            "node": col(&|e| e.0.into()),
                            "samples": col(&|e| e.1.into()),
                            "self": col(&|e| e.2.into()),
                            "ms": col(&|e| round(e.3).into()),
                            "weight": col(&|e| if by_time { round(e.3).into() } else { e.1.into() }),
                        })
                    })
                    .collect();
                serde_json::json!({ "key": visible(&k.key), "values": values, "omitted": k.omitted })
            })
            .collect();
        serde_json::json!({ "keys": keys, "omittedKeys": self.omitted_keys })
    }
}

/// The HTML page of a tree whose weights are `unit`s, with a labelled trace's `views`.
pub(crate) fn draw_html(
    tree: &FlameTree,
    options: &FlameGraphOptions,
    unit: Unit,
    views: &LabelViews,
) -> String {
    let title = options.title.as_deref().unwrap_or("Flame Graph");
    // The page draws its own colour legend.
    let subtitle = options.subtitle.as_deref().unwrap_or("");
    // Column arrays keep the page small: one entry per node, in depth-first order.
    let mut labels: Vec<String> = Vec::new();
    let mut label_ids: HashMap<String, usize> = HashMap::new();
    let mut packages: Vec<String> = Vec::new();
    let mut package_ids: HashMap<String, usize> = HashMap::new();
    let intern = |table: &mut Vec<String>, ids: &mut HashMap<String, usize>, s: String| -> usize {
        *ids.entry(s.clone()).or_insert_with(|| {
            table.push(s);
            table.len() - 1
        })
    };
    let n = tree.nodes.len();
    let (mut label, mut parent, mut group, mut samples, mut self_samples) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut ms, mut weight, mut package, mut colours) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for node in &tree.nodes {
        label.push(intern(
            &mut labels,
            &mut label_ids,
            visible(&node.label).into_owned(),
        ));
        parent.push(node.parent.map_or(-1, |p| p as i64));
        group.push(node.group.code());
        samples.push(node.samples);
        self_samples.push(node.self_samples);
        ms.push((node.ms * 1000.0).round() / 1000.0);
        weight.push((node.weight * 1000.0).round() / 1000.0);
        package.push(node.package.as_ref().map_or(-1, |p| {
            let shown = match &node.version {
                Some(v) => format!("{p}@{v}"),
                None => p.clone(),
            };
            intern(&mut packages, &mut package_ids, visible(&shown).into_owned()) as i64
        }));
        let (r, g, b) = node_colour(node);
        colours.push(((r as u32) << 16) | ((g as u32) << 8) | b as u32);
    }
    let data = serde_json::json!({
        "unit": unit.code(),
        "title": visible(title),
        "subtitle": visible(subtitle),
        "labels": labels,
        "packages": packages,
        "views": views.to_json(tree.nodes[0].ms > 0.0),
        "nodes": {
            "label": label, "parent": parent, "group": group, "samples": samples,
            "self": self_samples, "ms": ms, "weight": weight, "package": package, "colour": colours,
        },
    });
    let json = script_safe_json(&data.to_string());
    // Split once, so text from the trace is never searched for placeholders.
    let (head, rest) = HTML_TEMPLATE
        .split_once("{{TITLE}}")
        .expect("template has {{TITLE}}");
    let (middle, tail) = rest.split_once("{{DATA}}").expect("template has {{DATA}}");
    [head, &markup_text(title), middle, &json, tail].concat()
}

/// JSON text that can sit inside a `<script>` element: `<`, `>` and `&` (only ever inside JSON
/// strings) as `\u` escapes, so `</script>` or `<!--` in a name cannot end or change the element;
/// U+2028/U+2029 too, for any reader that takes it as JavaScript.
fn script_safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;

    #[test]
    fn a_label_filter_keeps_only_its_samples_at_their_own_weight() {
        let trace = crate::trace::tests::labelled_trace();
        let all = FlameTree::new(&trace);
        let only_a = tree_of(
            &trace,
            &FlameGraphOptions {
                label: Some(("route".into(), "GET /a".into())),
                ..Default::default()
            },
        );
        // Samples 0 and 1 (chunk under work under main): their weights in the whole trace.
        let weights = trace.sample_weights();
        assert!((only_a.total() - (weights[0] + weights[1])).abs() < 1e-9);
        assert!(only_a.total() < all.total());
        let svg = to_flame_graph(
            &trace,
            &FlameGraphOptions {
                label: Some(("route".into(), "nothing".into())),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(svg.starts_with("<?xml") || svg.starts_with("<svg"));
    }

    /// Each node's path of labels from the root, with its samples and ms.
    fn by_path(tree: &FlameTree, totals: impl Iterator<Item = (usize, u64, f64)>) -> Vec<(String, u64, f64)> {
        let path = |mut n: usize| {
            let mut parts = vec![tree.nodes[n].label.clone()];
            while let Some(p) = tree.nodes[n].parent {
                parts.push(tree.nodes[p].label.clone());
                n = p;
            }
            parts.reverse();
            parts.join(";")
        };
        let mut out: Vec<(String, u64, f64)> = totals.map(|(n, s, ms)| (path(n), s, ms)).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    #[test]
    fn html_label_views_are_the_label_filters_trees() {
        let trace = crate::trace::tests::labelled_trace();
        let tree = FlameTree::new(&trace);
        let views = label_views(&trace, &tree, &trace.sample_weights());
        let keys: Vec<&str> = views.keys.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["route", "span_id", "span_name", "trace_id"]);
        let route = &views.keys[0];
        assert_eq!(route.values.len(), 2);
        assert_eq!(route.omitted, 0);
        for v in &route.values {
            let filtered = tree_of(
                &trace,
                &FlameGraphOptions {
                    label: Some(("route".into(), v.value.clone())),
                    ..Default::default()
                },
            );
            let want = by_path(
                &filtered,
                filtered
                    .nodes
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (i, n.samples, n.ms)),
            );
            let got = by_path(&tree, v.nodes.iter().map(|&(n, s, _, ms)| (n, s, ms)));
            assert_eq!(got.len(), want.len(), "{}", v.value);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((&g.0, g.1), (&w.0, w.1));
                assert!((g.2 - w.2).abs() < 1e-9);
            }
            // Nodes ascend, so a parent comes before its children in the page's arrays.
            assert!(v.nodes.windows(2).all(|w| w[0].0 < w[1].0));
        }
        // The heavier value first: GET /a has two samples.
        assert_eq!(route.values[0].value, "GET /a");
        // The page carries them; a hostile value stays inside its JSON string.
        let html = to_flame_graph_html(&trace, &FlameGraphOptions::default()).unwrap();
        assert!(html.contains("\"key\":\"route\""));
        assert!(!html.contains('\u{1b}'));
        // None when a label is already chosen, or for a trace without labels.
        let chosen = FlameGraphOptions {
            label: Some(("route".into(), "GET /a".into())),
            ..Default::default()
        };
        assert!(to_flame_graph_html(&trace, &chosen)
            .unwrap()
            .contains("\"views\":{\"keys\":[]"));
        assert!(label_views(
            &sample_trace(),
            &FlameTree::new(&sample_trace()),
            &sample_trace().sample_weights()
        )
        .keys
        .is_empty());
    }

    #[test]
    fn html_label_views_are_bounded() {
        let mut trace = sample_trace();
        // More samples than values shown: the trace's own, repeated at 1 ms steps.
        let own = trace.samples.clone();
        trace.samples = (0..2 * MAX_VIEW_VALUES)
            .map(|i| {
                let mut s = own[i % own.len()];
                s.timestamp = i as f64;
                s
            })
            .collect();
        let n = trace.samples.len();
        let sets: Vec<crate::trace::LabelSet> = (0..MAX_VIEW_VALUES + 10)
            .map(|i| {
                let mut set: crate::trace::LabelSet = (0..MAX_VIEW_KEYS + 2)
                    .map(|k| (format!("k{k:02}"), "x".to_owned()))
                    .collect();
                set.insert("id".into(), format!("v{i}"));
                set
            })
            .collect();
        let count = sets.len();
        trace.jsprof = Some(crate::trace::Extension {
            label_sets: Some(sets),
            sample_labels: Some((0..n).map(|i| Some((i % count) as u32)).collect()),
            ..Default::default()
        });
        let tree = FlameTree::new(&trace);
        let views = label_views(&trace, &tree, &trace.sample_weights());
        assert_eq!(views.keys.len(), MAX_VIEW_KEYS);
        assert_eq!(views.omitted_keys, 3);
        let id = views.keys.iter().find(|k| k.key == "id").unwrap();
        assert_eq!(id.values.len(), MAX_VIEW_VALUES);
        assert_eq!(id.omitted, count - MAX_VIEW_VALUES);
        trace.validate().unwrap();
    }

    #[test]
    fn draws_frames_with_kind_colours_and_tooltips() {
        let svg = to_flame_graph(
            &sample_trace(),
            &FlameGraphOptions {
                title: Some("T <1>".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("T &lt;1&gt;"));
        assert!(svg.contains("<title>work (/app/main.js:10:1) (3 ms, 3 samples, 33.33%; kind: app)</title>"));
        assert!(svg.contains("<title>(garbage collector) (2 ms, 2 samples, 22.22%; kind: gc)</title>"));
        assert!(svg.contains("<title>all (9 ms, 9 samples, 100%)</title>"));
        let (r, g, b) = colour(Group::Pseudo(Pseudo::GarbageCollector), "");
        assert!(svg.contains(&format!("fill=\"rgb({r},{g},{b})\"")));
        let (r, g, b) = colour(Group::Kind(Kind::App), "main (/app/main.js:1:1)");
        assert!(svg.contains(&format!("fill=\"rgb({r},{g},{b})\"")));
    }

    #[test]
    fn the_tree_merges_stacks_by_label_and_sums_samples_and_time() {
        let tree = FlameTree::new(&sample_trace());
        let labels: Vec<(&str, usize, u64, u64)> = tree
            .nodes
            .iter()
            .map(|n| (n.label.as_str(), n.depth, n.samples, n.self_samples))
            .collect();
        assert_eq!(
            labels,
            vec![
                ("all", 0, 9, 0),
                ("(garbage collector)", 1, 2, 2),
                ("(idle)", 1, 1, 1),
                ("(program)", 1, 1, 1),
                ("main (/app/main.js:1:1)", 1, 5, 0),
                ("(anonymous) (/app/main.js:20:1)", 2, 1, 1),
                ("now", 2, 1, 1),
                ("work (/app/main.js:10:1)", 2, 3, 1),
                ("chunk (/app/node_modules/lodash/chunk.js:5:1)", 3, 2, 2),
            ]
        );
        for (i, n) in tree.nodes.iter().enumerate().skip(1) {
            assert!(n.parent.unwrap() < i, "parents come first");
        }
        // Durations: gaps to the next sample; the last weighs the median gap (1 ms).
        assert!((tree.nodes[0].ms - 9.0).abs() < 1e-9, "{}", tree.nodes[0].ms);
        assert_eq!(tree.nodes[8].package.as_deref(), Some("lodash"));
    }

    /// The sample trace with the native frame `now` (one sample, under `main`) renamed.
    fn one_frame(name: &str) -> ProfilerTrace {
        let mut trace = sample_trace();
        trace.frames[3].name = name.into();
        trace
    }

    #[test]
    fn names_are_kept_as_the_trace_spells_them_and_shown_safely() {
        for (name, shown) in [
            ("x 999", "x 999"),
            (" lead", " lead"),
            ("a;b", "a;b"),
            (
                "</script><img src=x onerror=alert(1)>",
                "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;",
            ),
            ("nul\0bell\x07tab\tnl\n", "nul\\x00bell\\x07tab\\x09nl\\x0a"),
            ("\u{fffe}\u{ffff}\u{202e}", "\\u{fffe}\\u{ffff}\\u{202e}"),
        ] {
            let svg = to_flame_graph(&one_frame(name), &FlameGraphOptions::default()).unwrap();
            let title = format!("<title>{shown} (1.5 ms, 1 sample, 16.67%; kind: native)</title>");
            assert!(svg.contains(&title), "{name:?}: {svg}");
            assert!(!svg.contains(['\0', '\x07', '\u{fffe}']));
            let tree = FlameTree::new(&one_frame(name));
            assert!(tree.nodes.iter().any(|n| n.label == name && n.depth == 2));
        }
        assert_eq!(visible("a\\b"), "a\\b");
    }

    #[test]
    fn html_embeds_the_data_so_no_name_ends_the_script() {
        let html = to_flame_graph_html(
            &one_frame("</script><script>alert(1)</script>\u{2028}&"),
            &FlameGraphOptions {
                title: Some("<b>t</b>".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            html.matches("</script>").count(),
            2,
            "only the page's own two script elements"
        );
        assert!(html.contains("<title>&lt;b&gt;t&lt;/b&gt;</title>"));
        let start = html
            .find("<script type=\"application/json\" id=\"data\">")
            .unwrap();
        let json = &html[start..];
        let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
        assert!(!json.contains(['<', '>', '&', '\u{2028}']));
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        let labels = value["labels"].as_array().unwrap();
        assert!(labels.contains(&"</script><script>alert(1)</script>\\u{2028}&".into()));
        assert_eq!(value["nodes"]["samples"][0], 9);
    }

    /// A trace of one sample per entry: the stack (frame names, outermost first, all in one file).
    fn stacks_trace(samples: &[&[&str]]) -> ProfilerTrace {
        let mut b = crate::trace::TraceBuilder::new();
        let resource = b.resource_id("file:///app/a.js");
        for (i, names) in samples.iter().enumerate() {
            let mut stack = None;
            for name in names.iter() {
                let (name, line) = name.split_once('@').unwrap_or((name, "1"));
                let frame = b.frame_id(crate::trace::Frame {
                    name: name.into(),
                    resource_id: Some(resource),
                    line: Some(line.parse().unwrap()),
                    column: Some(1),
                });
                stack = Some(b.stack_id(frame, stack));
            }
            b.push_sample(crate::trace::TraceSample {
                timestamp: i as f64,
                stack_id: stack,
                marker: Some(crate::trace::Marker::Script),
            });
        }
        b.finish()
    }

    /// `(tooltip, fill)` of every frame drawn.
    fn boxes(svg: &str) -> Vec<(String, (u8, u8, u8))> {
        svg.split("<g><title>")
            .skip(1)
            .map(|g| {
                let title = g[..g.find("</title>").unwrap()].to_string();
                let fill = &g[g.find("fill=\"rgb(").unwrap() + 10..];
                let rgb: Vec<u8> = fill[..fill.find(')').unwrap()]
                    .split(',')
                    .map(|v| v.parse().unwrap())
                    .collect();
                (title, (rgb[0], rgb[1], rgb[2]))
            })
            .collect()
    }

    #[test]
    fn the_diff_colours_frames_by_the_change_of_their_share() {
        // main -> slow grows from 1 of 4 samples to 3 of 4; main -> steady shrinks; gone only in the base.
        let base = stacks_trace(&[
            &["main", "slow"],
            &["main", "steady"],
            &["main", "steady"],
            &["main", "gone"],
        ]);
        let new = stacks_trace(&[
            &["main", "slow"],
            &["main", "slow"],
            &["main", "slow"],
            &["main", "steady"],
        ]);
        let svg = to_diff_flame_graph(&base, &new, &FlameGraphOptions::default()).unwrap();
        let boxes = boxes(&svg);
        let find = |name: &str| boxes.iter().find(|(t, _)| t.starts_with(name)).cloned().unwrap();
        let (title, (r, g, b)) = find("slow (");
        assert_eq!(
            title,
            "slow (/app/a.js:1:1) — 75.00% of the time (base 25.00%, +50.00 points)"
        );
        assert!(
            r > g && r > b,
            "grew: red, as deep as the largest change: {r},{g},{b}"
        );
        assert_eq!((r, g, b), (250, 30, 30));
        let (title, (r, _, b)) = find("steady (");
        assert_eq!(
            title,
            "steady (/app/a.js:1:1) — 25.00% of the time (base 50.00%, -25.00 points)"
        );
        assert!(b > r, "shrank: blue");
        assert_eq!(find("main (").1, (220, 220, 220), "unchanged: grey");
        assert!(!svg.contains("gone ("), "a frame only in the base has no width");
        assert!(svg.contains(DIFF_LEGEND));
    }

    #[test]
    fn the_diff_matches_a_function_moved_by_an_edit_and_keeps_names_as_spelled() {
        let base = stacks_trace(&[&["main", "a;b@3"], &["main", "x 999@5"]]);
        let new = stacks_trace(&[&["main", "a;b@4"], &["main", "x 999@5"], &["main", "x 999@5"]]);
        let svg = to_diff_flame_graph(&base, &new, &FlameGraphOptions::default()).unwrap();
        let titles: Vec<String> = boxes(&svg).into_iter().map(|(t, _)| t).collect();
        assert!(
            titles.contains(
                &"a;b (/app/a.js:4:1) — 33.33% of the time (base 50.00%, -16.67 points)".to_string()
            ),
            "{titles:?}"
        );
        assert!(
            titles.contains(
                &"x 999 (/app/a.js:5:1) — 66.67% of the time (base 50.00%, +16.67 points)".to_string()
            ),
            "{titles:?}"
        );
        // Two candidates at other positions: no guess, the frame is new.
        let two = stacks_trace(&[&["main", "f@1"], &["main", "f@2"]]);
        let moved = stacks_trace(&[&["main", "f@3"]]);
        let svg = to_diff_flame_graph(&two, &moved, &FlameGraphOptions::default()).unwrap();
        assert!(
            svg.contains("f (/app/a.js:3:1) — 100.00% of the time (base 0.00%, +100.00 points)"),
            "{svg}"
        );
    }

    #[test]
    fn the_diff_of_a_20000_deep_chain_draws_every_level_once() {
        let depth = 20_000;
        let names: Vec<String> = (0..depth).map(|i| format!("f{i}@{}", i + 1)).collect();
        let chain: Vec<&str> = names.iter().map(String::as_str).collect();
        let trace = stacks_trace(&[&chain, &chain[..depth / 2]]);
        let svg = to_diff_flame_graph(&trace, &trace, &FlameGraphOptions::default()).unwrap();
        let boxes = boxes(&svg);
        assert_eq!(boxes.len(), depth + 1, "every level, and the root");
        assert!(
            boxes.iter().all(|(_, fill)| *fill == (220, 220, 220)),
            "a trace against itself: no change"
        );
        assert!(boxes
            .iter()
            .any(|(t, _)| t.starts_with("f19999 (/app/a.js:20000:1) — ")));
    }

    #[test]
    fn unplaced_drops_only_a_line_and_column() {
        for (label, loose) in [
            ("f (/app/a.js:3:9)", "f (/app/a.js)"),
            ("f (generated:3:9)", "f (generated)"),
            ("f (/app/a.js)", "f (/app/a.js)"),
            ("f (/app/a.js:3)", "f (/app/a.js:3)"),
            ("now", "now"),
            ("a)", "a)"),
            ("x (y:1:z)", "x (y:1:z)"),
        ] {
            assert_eq!(super::super::unplaced(label), loose, "{label}");
        }
    }

    #[test]
    fn fits_labels_by_characters() {
        assert_eq!(fit("abcdef", 100.0), "abcdef");
        assert_eq!(fit("abcdefghijklmnop", 6.0 * CHAR_WIDTH), "abcd..");
        assert_eq!(fit("ééééééé", 5.0 * CHAR_WIDTH), "ééé..");
        assert_eq!(fit("abcdef", 2.0 * CHAR_WIDTH), "");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(percent(1.0, 3.0), "33.33");
        assert_eq!(percent(1.0, 2.0), "50");
        assert_eq!(milliseconds(12.5), "12.5 ms");
        assert_eq!(milliseconds(1234.4), "1,234 ms");
        assert_eq!(percent(3.0, 3.0), "100");
    }

    #[test]
    fn kind_bands_do_not_overlap() {
        let kinds = [Kind::App, Kind::Dependency, Kind::Node, Kind::Native];
        for (i, a) in kinds.iter().enumerate() {
            for b in &kinds[i + 1..] {
                for s in ["a", "b", "c", "longer label", ""] {
                    for u in ["x", "y", "zz", ""] {
                        assert_ne!(colour(Group::Kind(*a), s), colour(Group::Kind(*b), u));
                    }
                }
            }
        }
    }

    #[test]
    fn an_empty_trace_still_gives_an_svg_and_bad_widths_are_rejected() {
        let svg = to_flame_graph(&ProfilerTrace::default(), &FlameGraphOptions::default()).unwrap();
        assert!(svg.contains("<svg") && svg.contains("No samples"));
        let html = to_flame_graph_html(&ProfilerTrace::default(), &FlameGraphOptions::default()).unwrap();
        assert!(html.contains("\"samples\":[0]"));
        let e = to_flame_graph(
            &sample_trace(),
            &FlameGraphOptions {
                width: Some(1),
                ..Default::default()
            },
        );
        assert!(e.unwrap_err().message.contains("width"));
    }
}
