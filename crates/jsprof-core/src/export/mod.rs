//! Exporters: a [`ProfilerTrace`] written in the formats other tools read. One module per format, each
//! readable alone, all fed a trace already valid ([`ProfilerTrace::validate`]: they never check), weighed
//! by the trace's one rule ([`crate::trace::Weigher`]) and described by the helpers below, so
//! every format agrees on what a sample's stack, duration and package are:
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

pub(crate) mod collapsed;
pub(crate) mod cpuprofile;
pub(crate) mod flamegraph;
pub(crate) mod gecko;
pub(crate) mod otlp;
pub(crate) mod pprof;
pub(crate) mod speedscope;

use std::borrow::Cow;
use std::collections::HashMap;

use crate::attribution::{
    frame_without_resource, generated_name, package_name, Attribution, Attributor, Kind,
};
use crate::error::{Error, Result};
use crate::trace::{Frame, Marker, ProfilerTrace, TraceSample};

/// What a stackless sample stands for, named as V8 names its pseudo-nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Pseudo {
    Idle,
    GarbageCollector,
    Program,
}

impl Pseudo {
    pub(crate) fn of(sample: &TraceSample) -> Option<Pseudo> {
        match (sample.stack_id, sample.marker) {
            (Some(_), _) => None,
            (None, None) => Some(Pseudo::Idle),
            (None, Some(Marker::Gc)) => Some(Pseudo::GarbageCollector),
            (None, Some(_)) => Some(Pseudo::Program),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Pseudo::Idle => "(idle)",
            Pseudo::GarbageCollector => "(garbage collector)",
            Pseudo::Program => "(program)",
        }
    }

    pub(crate) const ALL: [Pseudo; 3] = [Pseudo::Idle, Pseudo::GarbageCollector, Pseudo::Program];
}

/// The most frame references a format that repeats whole stacks writes (speedscope's sampled profiles
/// per sample; pprof and collapsed stacks per distinct stack): their size grows with stacks × depth, so a deep trace (a 20,000-deep recursion sampled at each level: 200 million references)
/// would take minutes and gigabytes, then fail in V8. Beyond it they refuse with a RangeError that
/// names the limit; the tree formats (cpuprofile, Gecko, the flame graphs) have no such limit.
pub(crate) const MAX_FRAME_REFERENCES: u64 = 50_000_000;

/// The number of frames of every stack (its depth), in one pass over the stacks. Only for validated
/// traces (parent chains end).
pub(crate) fn stack_depths(trace: &ProfilerTrace) -> Vec<u64> {
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
pub(crate) fn check_frame_references(references: u64, format: &str) -> Result<()> {
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
pub(crate) fn distinct_frame_references(trace: &ProfilerTrace) -> u64 {
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
pub(crate) fn sample_frame_references(trace: &ProfilerTrace) -> u64 {
    let depths = stack_depths(trace);
    trace
        .samples
        .iter()
        .filter_map(|s| s.stack_id.map(|id| depths[id as usize]))
        .sum()
}

/// Frame ids of a stack from the outermost frame to the leaf. Only for validated traces.
pub(crate) fn stack_frames(trace: &ProfilerTrace, stack_id: u32) -> Vec<u32> {
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
pub(crate) fn display_name(name: &str) -> &str {
    if name.is_empty() {
        "(anonymous)"
    } else {
        name
    }
}

/// A resource as a short location: `file://` dropped (the path stays whole so two files never merge).
pub(crate) fn short_resource(resource: &str) -> &str {
    resource.strip_prefix("file://").unwrap_or(resource)
}

/// `name (path:line:column)`, `name (path)`, `name (generated:line:column)` for generated code (a frame
/// with a position but no resource: `new Function`, `eval`), or `name` for builtins.
pub(crate) fn frame_label(trace: &ProfilerTrace, frame_id: u32) -> String {
    let f = &trace.frames[frame_id as usize];
    let name = display_name(&f.name);
    match frame_place(trace, f, |r| Cow::Borrowed(short_resource(r))) {
        Some(place) => format!("{name} ({place})"),
        None => name.to_owned(),
    }
}

/// Where a frame is: `path:line:column` (`:column`, then `:line`, left out when unknown),
/// `generated:line:column` for generated code (a position but no resource), `None` for a builtin
/// (neither); `path` is the resource as `shown` gives it.
fn frame_place<'a>(
    trace: &'a ProfilerTrace,
    f: &Frame,
    shown: impl Fn(&'a str) -> Cow<'a, str>,
) -> Option<String> {
    let path = match f.resource_id {
        Some(r) => shown(&trace.resources[r as usize]),
        None if f.line.is_some() => Cow::Borrowed("generated"),
        None => return None,
    };
    Some(match (f.line, f.column) {
        (Some(l), Some(c)) => format!("{path}:{l}:{c}"),
        (Some(l), None) => format!("{path}:{l}"),
        _ => path.into_owned(),
    })
}

/// A frame's function name in pprof and OTLP: its display name, and for an anonymous function its place
/// too, `(anonymous /app/a.js:12:5)` (the path as pprof's `filename` has it). `go tool pprof -top`, and
/// OTLP's viewers, merge the functions of one name into one row, so every anonymous handler and callback
/// was one `(anonymous)` row. The function's `system_name`, `filename` and `start_line` stay its own.
pub(crate) fn function_name<'a>(trace: &'a ProfilerTrace, f: &'a Frame) -> Cow<'a, str> {
    if !f.name.is_empty() {
        return Cow::Borrowed(&f.name);
    }
    match frame_place(trace, f, file_name) {
        Some(place) => Cow::Owned(format!("(anonymous {place})")),
        None => Cow::Borrowed(display_name(&f.name)),
    }
}

/// A `frame_label` without its `:line:column` (`name (path:3:9)` -> `name (path)`): the same
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

/// Where a stack's time is charged (`frames` root first): the index in `frames` of the innermost app,
/// dependency or generated frame (a builtin or `node:` internal charges the code that called it), else
/// of the innermost Node frame, else of the leaf; `None` for an empty stack. `summarize`'s rule: the
/// pprof `package`/`kind` labels use it, so `go tool pprof -tagfocus package=express` and
/// `jsprof report` give the same share.
pub(crate) fn charged_position(frames: &[u32], attributions: &[Attribution]) -> Option<usize> {
    let kind = |f: &u32| attributions[*f as usize].kind;
    frames
        .iter()
        .rposition(|f| kind(f).is_code())
        .or_else(|| frames.iter().rposition(|f| kind(f) == Kind::Node))
        .or(frames.len().checked_sub(1))
}

/// One stack (or one pseudo-frame) as pprof and OTLP merge samples: what its samples are charged to,
/// by [`charged_position`]'s rule, named as `summarize` names its rows by package (one naming across
/// views: [`package_name`], `summary::stackless_row`).
pub(crate) struct ChargedStack {
    /// The stack id, or the pseudo-frame of stackless samples (and their marker, which names them).
    pub key: std::result::Result<u32, (Pseudo, Option<Marker>)>,
    /// The stack's frames, root first (empty for a pseudo-frame).
    pub frames: Vec<u32>,
    /// The `package` label: the package (dependency or app), `(app)`, `(dependency)`, `(node)`,
    /// `(native)`, `(generated, called from …)`, or for samples without a stack `(idle)`, `(gc)`,
    /// `(other)`.
    pub package: String,
    /// The `kind` label: `app`, `dependency`, `node`, `generated`, `native`, or `idle`, `gc`, `other`.
    pub kind: &'static str,
}

/// The trace's samples grouped by (charged stack, label set): pprof and OTLP write one sample per
/// group, so samples of two label sets (two routes, two spans) never merge. Returns each group as
/// `(index into the charged stacks, index into jsprof.labelSets)` in first-seen order, and each
/// trace sample's group. A trace without labels gets the charged stacks as they are.
pub(crate) fn labelled_groups(
    trace: &ProfilerTrace,
    group_of: &[u32],
) -> (Vec<(u32, Option<u32>)>, Vec<u32>) {
    let per_sample = trace
        .jsprof
        .as_ref()
        .filter(|e| e.has_labels())
        .and_then(|e| e.sample_labels.as_deref());
    let Some(per_sample) = per_sample else {
        let groups = group_of.iter().max().map_or(0, |&g| g as usize + 1);
        return ((0..groups as u32).map(|g| (g, None)).collect(), group_of.to_vec());
    };
    let mut index: HashMap<(u32, Option<u32>), u32> = HashMap::new();
    let mut groups = Vec::new();
    let out = group_of
        .iter()
        .zip(per_sample)
        .map(|(&g, &label)| {
            *index.entry((g, label)).or_insert_with(|| {
                groups.push((g, label));
                (groups.len() - 1) as u32
            })
        })
        .collect();
    (groups, out)
}

/// The distinct stacks of the trace's samples (stackless ones by pseudo-frame), in first-seen order,
/// and for each sample the index of its stack there (4 bytes a sample, not a list per stack): each
/// distinct stack's frames are walked once, however many samples it has.
pub(crate) fn charged_stacks(
    trace: &ProfilerTrace,
    attributions: &[Attribution],
) -> (Vec<ChargedStack>, Vec<u32>) {
    let mut index: HashMap<std::result::Result<u32, (Pseudo, Option<Marker>)>, u32> = HashMap::new();
    let mut stacks: Vec<ChargedStack> = Vec::new();
    let mut group_of = Vec::with_capacity(trace.samples.len());
    for sample in &trace.samples {
        let key = match (sample.stack_id, Pseudo::of(sample)) {
            (Some(id), None) => Ok(id),
            (_, pseudo) => Err((pseudo.unwrap_or(Pseudo::Program), sample.marker)),
        };
        let at = *index.entry(key).or_insert_with(|| {
            let (frames, package, kind) = match key {
                Ok(id) => {
                    let frames = stack_frames(trace, id);
                    let at = charged_position(&frames, attributions).unwrap_or(0);
                    let kind = attributions[frames[at] as usize].kind.as_str();
                    let package = charged_package_label(&frames, at, attributions);
                    (frames, package, kind)
                }
                Err((_, marker)) => {
                    let (kind, name) = crate::summary::stackless_row(marker);
                    (Vec::new(), name.to_owned(), kind)
                }
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

/// ms as whole ns (`as` saturates, so absurd inputs cannot overflow).
pub(crate) fn ns(ms: f64) -> i64 {
    (ms * 1e6).round() as i64
}

/// A resource as profilers' tools look files up: a `file:` URL as its local path (so `go tool pprof
/// -list fn` finds the file), anything else as it is.
pub(crate) fn file_name(resource: &str) -> std::borrow::Cow<'_, str> {
    if resource.starts_with("file:") {
        if let Some(path) = url::Url::parse(resource).ok().and_then(|u| u.to_file_path().ok()) {
            return std::borrow::Cow::Owned(path.to_string_lossy().into_owned());
        }
    }
    std::borrow::Cow::Borrowed(resource)
}

/// The attribution of every frame (by its resource; frames without one are generated code when they
/// have a position, native code otherwise: [`frame_without_resource`]).
pub(crate) fn frame_attributions(trace: &ProfilerTrace) -> Vec<Attribution> {
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
/// `frames`): [`package_name`], and for generated code the name of the app or dependency code that
/// called it, as `summarize` names its row (`(generated, called from express)`).
pub(crate) fn charged_package_label(frames: &[u32], charged: usize, attributions: &[Attribution]) -> String {
    let attribution = &attributions[frames[charged] as usize];
    if attribution.kind != Kind::Generated {
        return package_name(attribution);
    }
    let caller = frames[..charged]
        .iter()
        .rev()
        .map(|&f| &attributions[f as usize])
        .find(|a| matches!(a.kind, Kind::App | Kind::Dependency));
    generated_name(caller.map(package_name).as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;

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
        // pprof's and OTLP's function names: an anonymous function's place tells it from the others.
        let name = |t: &ProfilerTrace, i: usize| function_name(t, &t.frames[i]).into_owned();
        assert_eq!(name(&t, 0), "main");
        assert_eq!(name(&t, 4), "(anonymous /app/main.js:20:1)");
        let mut odd = t.clone();
        odd.resources.push("file:///srv/my%20app/a.js".into());
        let anonymous = |resource_id, line, column| Frame {
            name: String::new(),
            resource_id,
            line,
            column,
        };
        odd.frames = vec![
            anonymous(Some(odd.resources.len() as u32 - 1), Some(3), Some(9)),
            anonymous(None, Some(7), Some(2)),
            anonymous(Some(0), Some(5), None),
            anonymous(Some(0), None, None),
            anonymous(None, None, None),
        ];
        let names: Vec<String> = (0..odd.frames.len()).map(|i| name(&odd, i)).collect();
        assert_eq!(
            names,
            [
                "(anonymous /srv/my app/a.js:3:9)",
                "(anonymous generated:7:2)",
                "(anonymous /app/main.js:5)",
                "(anonymous /app/main.js)",
                "(anonymous)"
            ]
        );
        assert_eq!(stack_frames(&t, 2), vec![0, 1, 2]);
        let pseudo: Vec<_> = t.samples.iter().map(Pseudo::of).collect();
        assert_eq!(pseudo[3], Some(Pseudo::GarbageCollector));
        assert_eq!(pseudo[6], Some(Pseudo::Idle));
        assert_eq!(pseudo[7], Some(Pseudo::Program));
        assert_eq!(pseudo[0], None);
    }
}
