//! Exporters: a [`ProfilerTrace`] written in the formats other tools read. One module per format, all
//! fed by the same validated trace ([`parse_trace`] / [`validate`]) and the same helpers, so every format
//! agrees on what a sample's stack, duration and package are:
//!
//! - [`cpuprofile`]: V8's `.cpuprofile` (Chrome DevTools, VS Code, `fromCpuProfile`).
//! - [`gecko`]: the Firefox Profiler's processed profile format.
//! - [`speedscope`]: speedscope's file format.
//! - [`pprof`]: gzipped `profile.proto` (`go tool pprof`).
//! - [`collapsed`]: folded stacks (`flamegraph.pl`, inferno).
//! - [`otlp`]: an OTLP/HTTP `ExportProfilesServiceRequest` (OpenTelemetry profiles).
//! - [`flamegraph`]: flame graphs from the stack tree, coloured by kind: SVG, and an explorable HTML page.
//!
//! Stackless samples are shown as one pseudo-frame each, named as V8 names them: `(idle)` (no marker),
//! `(garbage collector)` (`gc`) and `(program)` (any other marker).

pub mod collapsed;
pub mod cpuprofile;
pub mod flamegraph;
pub mod gecko;
pub mod otlp;
pub mod pprof;
pub mod speedscope;

use std::borrow::Cow;
use std::collections::HashMap;

use crate::attribution::{frame_without_resource, generated_name, Attribution, Attributor, Kind};
use crate::error::{Error, Result};
use crate::trace::{Marker, ProfilerTrace, TraceSample};

/// Parses and validates a trace given as JSON text (the JS facade passes `JSON.stringify(trace)`).
/// Every problem is a `Type` error: the value came from JS as an object, so a bad one has the wrong shape.
pub fn parse_trace(json: &str) -> Result<ProfilerTrace> {
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
                crate::json_path::describe_error(json, &e)
            ))
        })?,
    };
    validate(&trace)?;
    Ok(trace)
}

/// JSON text with each lone surrogate escape (`\ud800` with no partner: `JSON.stringify` writes them for
/// JS strings that are not well-formed UTF-16, and serde_json rejects them) replaced by the visible text
/// `\u{d800}`, as [`crate::text::visible`] writes other characters no output may hold. Borrowed as is
/// when there is none. The readers call it only after serde_json failed, so good text pays nothing.
pub fn lone_surrogates_visible(json: &str) -> std::borrow::Cow<'_, str> {
    let bytes = json.as_bytes();
    let hex = |at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(at) = bytes.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + at;
        if bytes.get(at + 1) != Some(&b'u') {
            i = at + 2; // \\, \", \n…: never the start of a \u escape
            continue;
        }
        let Some(code) = hex(at + 2) else {
            i = at + 2;
            continue;
        };
        let paired = (0xD800..=0xDBFF).contains(&code)
            && bytes.get(at + 6..at + 8) == Some(&b"\\u"[..])
            && hex(at + 8).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        if paired {
            i = at + 12;
        } else if (0xD800..=0xDFFF).contains(&code) {
            let out = out.get_or_insert_with(|| String::with_capacity(json.len() + 16));
            out.push_str(&json[copied..at]);
            out.push_str(&format!("\\\\u{{{code:x}}}"));
            copied = at + 6;
            i = at + 6;
        } else {
            i = at + 6;
        }
    }
    match out {
        None => std::borrow::Cow::Borrowed(json),
        Some(mut out) => {
            out.push_str(&json[copied..]);
            std::borrow::Cow::Owned(out)
        }
    }
}

/// The furthest a sample may be from its trace's time origin, ms (31 years). Every output can hold
/// the times within it exactly: µs stay below 2^53 (cpuprofile `timeDeltas`, speedscope), ns within
/// an i64 (pprof), and no sum of durations overflows to infinity (`null` in JSON).
pub const MAX_TIMESTAMP_MS: f64 = 1e12;

/// Checks what serde cannot: every id in range, stack parents acyclic, timestamps finite. One function
/// for every exporter, so they can index the tables without further checks.
pub fn validate(trace: &ProfilerTrace) -> Result<()> {
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

/// Sample indexes sorted by timestamp (ties keep V8's order): V8 may reorder samples, and the Firefox
/// Profiler and speedscope want time order. (4 bytes a sample: a trace never has 2^32 samples.)
pub fn time_order(samples: &[TraceSample]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..samples.len() as u32).collect();
    // The index breaks ties, so an unstable sort gives the one order (and needs no buffer).
    order.sort_unstable_by(|&a, &b| {
        samples[a as usize]
            .timestamp
            .total_cmp(&samples[b as usize].timestamp)
            .then(a.cmp(&b))
    });
    order
}

/// What a stackless sample stands for, named as V8 names its pseudo-nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pseudo {
    Idle,
    GarbageCollector,
    Program,
}

impl Pseudo {
    pub fn of(sample: &TraceSample) -> Option<Pseudo> {
        match (sample.stack_id, sample.marker) {
            (Some(_), _) => None,
            (None, None) => Some(Pseudo::Idle),
            (None, Some(Marker::Gc)) => Some(Pseudo::GarbageCollector),
            (None, Some(_)) => Some(Pseudo::Program),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pseudo::Idle => "(idle)",
            Pseudo::GarbageCollector => "(garbage collector)",
            Pseudo::Program => "(program)",
        }
    }

    pub const ALL: [Pseudo; 3] = [Pseudo::Idle, Pseudo::GarbageCollector, Pseudo::Program];
}

/// The most frame references a format that repeats whole stacks writes (speedscope's sampled profiles
/// per sample; pprof and collapsed stacks per distinct stack): their size grows with stacks × depth, so a deep trace (a 20,000-deep recursion sampled at each level: 200 million references)
/// would take minutes and gigabytes, then fail in V8. Beyond it they refuse with a RangeError that
/// names the limit; the tree formats (cpuprofile, Gecko, the flame graphs) have no such limit.
pub const MAX_FRAME_REFERENCES: u64 = 50_000_000;

/// The number of frames of every stack (its depth), in one pass over the stacks. Only for validated
/// traces (parent chains end).
pub fn stack_depths(trace: &ProfilerTrace) -> Vec<u64> {
    let mut depth = vec![0u64; trace.stacks.len()];
    let mut path = Vec::new();
    for start in 0..trace.stacks.len() {
        let mut cursor = Some(start);
        let mut base = 0;
        while let Some(v) = cursor {
            if depth[v] > 0 {
                base = depth[v];
                break;
            }
            path.push(v);
            cursor = trace.stacks[v].parent_id.map(|p| p as usize);
        }
        for v in path.drain(..).rev() {
            base += 1;
            depth[v] = base;
        }
    }
    depth
}

/// Refuses (RangeError) a trace whose `references` (frames `format` would write in all) exceed
/// [`MAX_FRAME_REFERENCES`].
pub fn check_frame_references(references: u64, format: &str) -> Result<()> {
    if references > MAX_FRAME_REFERENCES {
        return Err(Error::range(format!(
            "{format} repeats whole stacks, and this trace's stacks hold {references} frames in all, more \
             than its limit of {MAX_FRAME_REFERENCES}: too many samples or too deep stacks for the format \
             (toCpuProfile, toGeckoProfile and the flame graphs have no such limit)"
        )));
    }
    Ok(())
}

/// Frames written once per distinct sampled stack (pprof, collapsed): the sum of their depths.
pub fn distinct_frame_references(trace: &ProfilerTrace) -> u64 {
    let depths = stack_depths(trace);
    let mut sampled = vec![false; trace.stacks.len()];
    for s in &trace.samples {
        if let Some(id) = s.stack_id {
            sampled[id as usize] = true;
        }
    }
    depths
        .iter()
        .zip(&sampled)
        .filter(|(_, &s)| s)
        .map(|(d, _)| d)
        .sum()
}

/// Frames written per sample (speedscope's sampled profiles): the sum of the sampled stacks' depths.
pub fn sample_frame_references(trace: &ProfilerTrace) -> u64 {
    let depths = stack_depths(trace);
    trace
        .samples
        .iter()
        .filter_map(|s| s.stack_id.map(|id| depths[id as usize]))
        .sum()
}

/// Frame ids of a stack from the outermost frame to the leaf. Only for validated traces.
pub fn stack_frames(trace: &ProfilerTrace, stack_id: u32) -> Vec<u32> {
    let mut frames = Vec::new();
    let mut cursor = Some(stack_id);
    while let Some(s) = cursor {
        let stack = &trace.stacks[s as usize];
        frames.push(stack.frame_id);
        cursor = stack.parent_id;
    }
    frames.reverse();
    frames
}

/// A frame's display name: `(anonymous)` for the spec's empty name, as DevTools shows it.
pub fn display_name(name: &str) -> &str {
    if name.is_empty() {
        "(anonymous)"
    } else {
        name
    }
}

/// A resource as a short location: `file://` dropped (the path stays whole so two files never merge).
pub fn short_resource(resource: &str) -> &str {
    resource.strip_prefix("file://").unwrap_or(resource)
}

/// `name (path:line:column)`, `name (path)`, `name (generated:line:column)` for generated code (a frame
/// with a position but no resource: `new Function`, `eval`), or `name` for builtins.
pub fn frame_label(trace: &ProfilerTrace, frame_id: u32) -> String {
    let f = &trace.frames[frame_id as usize];
    let name = display_name(&f.name);
    match f.resource_id {
        None => match (f.line, f.column) {
            (Some(l), Some(c)) => format!("{name} (generated:{l}:{c})"),
            (Some(l), None) => format!("{name} (generated:{l})"),
            _ => name.to_owned(),
        },
        Some(r) => {
            let path = short_resource(&trace.resources[r as usize]);
            match (f.line, f.column) {
                (Some(l), Some(c)) => format!("{name} ({path}:{l}:{c})"),
                (Some(l), None) => format!("{name} ({path}:{l})"),
                _ => format!("{name} ({path})"),
            }
        }
    }
}

/// A [`frame_label`] without its `:line:column` (`name (path:3:9)` -> `name (path)`): the same
/// function at another position, as after an edit moved it. A label without both stays as it is.
pub fn unplaced(label: &str) -> Cow<'_, str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let Some(inner) = label.strip_suffix(')') else {
        return Cow::Borrowed(label);
    };
    let mut parts = inner.rsplitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(column), Some(line), Some(rest)) if digits(column) && digits(line) => {
            Cow::Owned(format!("{rest})"))
        }
        _ => Cow::Borrowed(label),
    }
}

/// Each sample's duration in ms: the gap to the next sample in time order; the last sample gets the
/// median gap (0 when there is a single sample). Durations never go negative, whatever the order.
pub fn sample_durations(samples: &[TraceSample]) -> Vec<f64> {
    sample_durations_with_last(samples, None)
}

/// [`sample_durations`], the last sample (in time order) weighing `last` ms when given. Memory: the
/// time order (4 bytes a sample) and the durations themselves, which hold the gaps for the median first.
pub fn sample_durations_with_last(samples: &[TraceSample], last: Option<f64>) -> Vec<f64> {
    let order = time_order(samples);
    let time = |k: usize| samples[order[k] as usize].timestamp;
    let mut durations = vec![0.0; samples.len()];
    let gaps = order.len().saturating_sub(1);
    let last = last.unwrap_or_else(|| {
        for (k, gap) in durations[..gaps].iter_mut().enumerate() {
            *gap = time(k + 1) - time(k);
        }
        median(&mut durations[..gaps])
    });
    for k in 0..gaps {
        durations[order[k] as usize] = time(k + 1) - time(k);
    }
    if let Some(&index) = order.last() {
        durations[index as usize] = last;
    }
    durations
}

/// The median gap between consecutive samples in time order, in ms (the mean of the two middle gaps
/// for an even count; 0 with fewer than two samples).
pub fn median_interval(samples: &[TraceSample]) -> f64 {
    let mut times: Vec<f64> = samples.iter().map(|s| s.timestamp).collect();
    times.sort_unstable_by(f64::total_cmp);
    // The gaps in place of the times.
    for k in 1..times.len() {
        times[k - 1] = times[k] - times[k - 1];
    }
    times.pop();
    median(&mut times)
}

/// The median of `values` (the mean of the two middle ones for an even count; 0 for none), found by
/// selection in linear time (reordering `values`).
fn median(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    let mid = n / 2;
    let (lower, &mut at_mid, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        at_mid
    } else {
        let below = lower.iter().copied().max_by(f64::total_cmp).unwrap_or(at_mid);
        (below + at_mid) / 2.0
    }
}

/// Where a stack's time is charged (`frames` root first): the index in `frames` of the innermost app,
/// dependency or generated frame (a builtin or `node:` internal charges the code that called it), else
/// of the innermost Node frame, else of the leaf; `None` for an empty stack. `summarize`'s rule: the
/// pprof `package`/`kind` labels use it, so `go tool pprof -tagfocus package=express` and
/// `jsprof report` give the same share.
pub fn charged_position(frames: &[u32], attributions: &[Attribution]) -> Option<usize> {
    let kind = |f: &u32| attributions[*f as usize].kind;
    frames
        .iter()
        .rposition(|f| kind(f).is_code())
        .or_else(|| frames.iter().rposition(|f| kind(f) == Kind::Node))
        .or(frames.len().checked_sub(1))
}

/// One stack (or one pseudo-frame) as pprof and OTLP merge samples: what its samples are charged to,
/// by [`charged_position`]'s rule.
pub struct ChargedStack {
    /// The stack id, or the pseudo-frame of stackless samples.
    pub key: std::result::Result<u32, Pseudo>,
    /// The stack's frames, root first (empty for a pseudo-frame).
    pub frames: Vec<u32>,
    /// The `package` label: the npm package, `(app)`, `(node)`, `(native)`, `(generated, called from
    /// …)`, or `(idle)` / `(vm)` for pseudo-frames.
    pub package: String,
    /// The `kind` label: `app`, `dependency`, `node`, `generated`, `native`, `idle` or `vm`.
    pub kind: &'static str,
}

/// The distinct stacks of the trace's samples (stackless ones by pseudo-frame), in first-seen order,
/// and for each sample the index of its stack there (4 bytes a sample, not a list per stack): each
/// distinct stack's frames are walked once, however many samples it has.
pub fn charged_stacks(trace: &ProfilerTrace, attributions: &[Attribution]) -> (Vec<ChargedStack>, Vec<u32>) {
    let mut index: HashMap<std::result::Result<u32, Pseudo>, u32> = HashMap::new();
    let mut stacks: Vec<ChargedStack> = Vec::new();
    let mut group_of = Vec::with_capacity(trace.samples.len());
    for sample in &trace.samples {
        let key = match (sample.stack_id, Pseudo::of(sample)) {
            (Some(id), None) => Ok(id),
            (_, pseudo) => Err(pseudo.unwrap_or(Pseudo::Program)),
        };
        let at = *index.entry(key).or_insert_with(|| {
            let (frames, package, kind) = match key {
                Ok(id) => {
                    let frames = stack_frames(trace, id);
                    let at = charged_position(&frames, attributions).unwrap_or(0);
                    let kind = kind_name(attributions[frames[at] as usize].kind);
                    let package = charged_package_label(&frames, at, attributions);
                    (frames, package, kind)
                }
                Err(Pseudo::Idle) => (Vec::new(), "(idle)".to_owned(), "idle"),
                Err(_) => (Vec::new(), "(vm)".to_owned(), "vm"),
            };
            stacks.push(ChargedStack {
                key,
                frames,
                package,
                kind,
            });
            (stacks.len() - 1) as u32
        });
        group_of.push(at);
    }
    (stacks, group_of)
}

/// The earliest and latest sample time (ms), as `(INFINITY, NEG_INFINITY)` for no samples.
pub fn time_span(samples: &[TraceSample]) -> (f64, f64) {
    samples
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(first, last), s| {
            (first.min(s.timestamp), last.max(s.timestamp))
        })
}

/// ms as whole ns (`as` saturates, so absurd inputs cannot overflow).
pub fn ns(ms: f64) -> i64 {
    (ms * 1e6).round() as i64
}

/// A resource as profilers' tools look files up: a `file:` URL as its local path (so `go tool pprof
/// -list fn` finds the file), anything else as it is.
pub fn file_name(resource: &str) -> std::borrow::Cow<'_, str> {
    if resource.starts_with("file:") {
        if let Some(path) = url::Url::parse(resource).ok().and_then(|u| u.to_file_path().ok()) {
            return std::borrow::Cow::Owned(path.to_string_lossy().into_owned());
        }
    }
    std::borrow::Cow::Borrowed(resource)
}

/// The attribution of every frame (by its resource; frames without one are generated code when they
/// have a position, native code otherwise: [`frame_without_resource`]).
pub fn frame_attributions(trace: &ProfilerTrace) -> Vec<Attribution> {
    let mut attributor = Attributor::new();
    let by_resource: Vec<Attribution> = trace.resources.iter().map(|r| attributor.attribute(r)).collect();
    trace
        .frames
        .iter()
        .map(|f| match f.resource_id {
            Some(r) => by_resource[r as usize].clone(),
            None => frame_without_resource(f.line),
        })
        .collect()
}

/// The package label of the frame a stack is charged to (`frames` root first, `charged` its index in
/// `frames`): [`package_label`], and for generated code the label of the app or dependency code that
/// called it, as `summarize` names its row (`(generated, called from express)`).
pub fn charged_package_label(frames: &[u32], charged: usize, attributions: &[Attribution]) -> String {
    let attribution = &attributions[frames[charged] as usize];
    if attribution.kind != Kind::Generated {
        return package_label(attribution);
    }
    let caller = frames[..charged]
        .iter()
        .rev()
        .map(|&f| &attributions[f as usize])
        .find(|a| matches!(a.kind, Kind::App | Kind::Dependency));
    generated_name(caller.map(package_label).as_deref())
}

/// The lower-case name of a kind, as the exports label it.
pub fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::App => "app",
        Kind::Dependency => "dependency",
        Kind::Node => "node",
        Kind::Generated => "generated",
        Kind::Native => "native",
    }
}

/// The package a frame belongs to for labels: the npm package for dependency code, else the kind in
/// parentheses (`(app)`, `(node)`, `(native)`; a dependency whose name is unknown is `(dependency)`).
pub fn package_label(attribution: &Attribution) -> String {
    match (&attribution.kind, &attribution.package) {
        (Kind::Dependency, Some(p)) => p.clone(),
        (kind, _) => format!("({})", kind_name(*kind)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn generated_code_is_charged_and_labelled_by_its_caller() {
        let a = |kind, package: Option<&str>| Attribution {
            kind,
            package: package.map(str::to_owned),
            version: None,
            root: None,
        };
        // 0 app, 1 express, 2 generated, 3 native, 4 generated
        let attributions = [
            a(Kind::App, Some("my-app")),
            a(Kind::Dependency, Some("express")),
            a(Kind::Generated, None),
            a(Kind::Native, None),
            a(Kind::Generated, None),
        ];
        let frames = [0, 1, 2, 4, 3];
        let at = charged_position(&frames, &attributions).unwrap();
        assert_eq!(
            at, 3,
            "the innermost generated frame, not the builtin below it nor express"
        );
        assert_eq!(
            charged_package_label(&frames, at, &attributions),
            "(generated, called from express)"
        );
        assert_eq!(charged_package_label(&[2, 3], 0, &attributions), "(generated)");
        assert_eq!(charged_position(&[], &attributions), None);
    }
    use crate::trace::{Frame, Stack};

    /// main (app) -> work (app) -> chunk (lodash) ; main -> now (native); + idle, gc, program samples.
    pub fn sample_trace() -> ProfilerTrace {
        let frame = |name: &str, resource_id, line| Frame {
            name: name.into(),
            resource_id,
            line,
            column: line.map(|_| 1),
        };
        ProfilerTrace {
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

    fn err(json: &str) -> String {
        let e = parse_trace(json).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Type);
        e.message
    }

    #[test]
    fn accepts_a_valid_trace() {
        let json = serde_json::to_string(&sample_trace()).unwrap();
        assert_eq!(parse_trace(&json).unwrap(), sample_trace());
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
    fn lone_surrogates_become_visible_text_and_pairs_stay() {
        let json = r#"{"resources":[],"frames":[{"name":"a\ud800b\udc00c\ud83d\ude00\\ud800\u00e9"}],"stacks":[],"samples":[]}"#;
        let trace = parse_trace(json).unwrap();
        assert_eq!(
            trace.frames[0].name,
            "a\\u{d800}b\\u{dc00}c\u{1f600}\\ud800\u{e9}"
        );
        let plain = r#"{"a":"\n\u0041"}"#;
        assert!(matches!(
            lone_surrogates_visible(plain),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(lone_surrogates_visible(r#""\udbff\u""#), r#""\\u{dbff}\u""#);
        assert_eq!(lone_surrogates_visible(r#""\ud800"#), r#""\\u{d800}"#);
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

    #[test]
    fn durations_are_gaps_in_time_order_and_the_median_for_the_last() {
        let s = |t| TraceSample {
            timestamp: t,
            stack_id: None,
            marker: None,
        };
        let d = sample_durations(&[s(1.0), s(4.0), s(2.0), s(3.0)]);
        assert_eq!(d, vec![1.0, 1.0, 1.0, 1.0]);
        let d = sample_durations(&[s(0.0), s(1.0), s(3.0), s(6.0)]);
        assert_eq!(d, vec![1.0, 2.0, 3.0, 2.0]);
        assert_eq!(sample_durations(&[s(5.0)]), vec![0.0]);
    }

    #[test]
    fn depths_in_one_pass_and_the_frame_reference_limit() {
        let t = sample_trace();
        let depths = stack_depths(&t);
        for (id, &d) in depths.iter().enumerate() {
            assert_eq!(d, stack_frames(&t, id as u32).len() as u64);
        }
        assert!(check_frame_references(MAX_FRAME_REFERENCES, "toPprof").is_ok());
        let err = check_frame_references(MAX_FRAME_REFERENCES + 1, "toPprof").unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::Range);
        assert!(err
            .message
            .starts_with("toPprof repeats whole stacks, and this trace's stacks hold 50000001 frames"));
    }

    #[test]
    fn labels_frames_and_pseudo_samples() {
        let t = sample_trace();
        assert_eq!(frame_label(&t, 0), "main (/app/main.js:1:1)");
        assert_eq!(frame_label(&t, 3), "now");
        assert_eq!(frame_label(&t, 4), "(anonymous) (/app/main.js:20:1)");
        assert_eq!(stack_frames(&t, 2), vec![0, 1, 2]);
        let pseudo: Vec<_> = t.samples.iter().map(Pseudo::of).collect();
        assert_eq!(pseudo[3], Some(Pseudo::GarbageCollector));
        assert_eq!(pseudo[6], Some(Pseudo::Idle));
        assert_eq!(pseudo[7], Some(Pseudo::Program));
        assert_eq!(pseudo[0], None);
    }
}
