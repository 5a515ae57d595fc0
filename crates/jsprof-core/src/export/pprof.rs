//! pprof's `profile.proto`, gzipped, as `go tool pprof` reads it. Sample types `samples/count` and
//! `cpu/nanoseconds` (each sample's time by the trace's one rule, `trace/weights.rs`; period = the
//! trace's interval). One function and one location per trace frame; stackless samples get a
//! location of their own pseudo-function (`(idle)`, `(garbage collector)`, `(program)`). Samples with the
//! same stack and labels are merged. Every sample carries the labels `package` and `kind` of the code its
//! time is charged to, named as `summarize` names its rows (a package's name, or `(app)`, `(node)`,
//! `(native)`, `(generated, called from …)`; `(idle)`, `(gc)`, `(other)` without a stack), so
//! `go tool pprof -tagfocus=package=lodash` gives `jsprof report`'s share. A trace's own labels
//! (`jsprof.labelSets`: a route, a tenant, `trace_id`/`span_id`/`span_name`) are string labels of
//! their samples too (`-tagfocus route=GET\ /users/:id`), and samples of different label sets are
//! never merged; Pyroscope reads them as its dynamic labels (`span_id` as a span profile's).
//!
//! The message structs are written by hand from `profile.proto` (field numbers as in
//! github.com/google/pprof/proto/profile.proto), so no `protoc` is needed to build.

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

use super::{file_name, frame_attributions, ns, Pseudo};
use crate::error::{Error, Result};
use crate::interner::Interner;
use crate::trace::time_span;
use crate::trace::{Clock, ProfilerTrace};

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Sample {
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
    #[prost(int64, tag = "3")]
    pub column: i64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

/// The string table: index 0 is "" as the format requires; ids are the format's int64.
struct Strings(Interner<String>);

impl Strings {
    fn new() -> Self {
        let mut s = Strings(Interner::new());
        s.id("");
        s
    }
    fn id(&mut self, s: &str) -> i64 {
        i64::from(self.0.id(s))
    }
}

/// The profile message of a validated trace.
/// What a trace does not say itself.
#[derive(Debug, Clone, Default)]
pub struct PprofOptions {
    /// The recording's clock, over the trace's own (`Clock::given_or`): with the Unix epoch of the time
    /// origin, `time_nanos` is a real clock time (else ms since the origin, which `go tool pprof` shows
    /// as 1970). pprof has no field for the pid.
    pub clock: Clock,
}

/// What a profile's samples measure and when it was taken: the part of a `profile.proto` that differs
/// between a CPU trace and a heap profile (`crate::heap`). The rest — functions, locations, one sample
/// per distinct stack with its `package`/`kind` labels — is [`profile_of`]'s, the same for both.
pub(crate) struct Measure<'a> {
    /// `(type, unit)` of each value, e.g. `("cpu", "nanoseconds")`.
    pub sample_types: Vec<(&'a str, &'a str)>,
    pub default_sample_type: &'a str,
    pub period_type: (&'a str, &'a str),
    pub period: i64,
    /// Adds trace sample `i`'s values to its stack's (one per sample type).
    pub add: &'a dyn Fn(usize, &mut [i64]),
    pub time_nanos: i64,
    pub duration_nanos: i64,
    pub comment: &'a str,
}

pub(crate) fn to_profile(trace: &ProfilerTrace, options: &PprofOptions) -> Profile {
    let durations = trace.sample_weights();
    let (first, last) = time_span(&trace.samples);
    let period = ns(trace.sample_interval());
    let origin = options.clock.given_or(trace.jsprof.as_ref()).time_origin_ms;
    let add = |i: usize, value: &mut [i64]| {
        value[0] += 1;
        value[1] = value[1].saturating_add(ns(durations[i]));
    };
    profile_of(
        trace,
        &Measure {
            sample_types: vec![("samples", "count"), ("cpu", "nanoseconds")],
            default_sample_type: "cpu",
            period_type: ("cpu", "nanoseconds"),
            period,
            add: &add,
            time_nanos: if first.is_finite() {
                ns(first + origin.unwrap_or(0.0))
            } else {
                0
            },
            duration_nanos: if first.is_finite() {
                ns(last - first) + period
            } else {
                0
            },
            comment: if origin.is_some() {
                "jsprof-node: times are Unix epoch times"
            } else {
                "jsprof-node: times are ms from the trace's time origin (its epoch was not given)"
            },
        },
    )
}

/// The profile message of a validated trace whose samples `measure` values.
pub(crate) fn profile_of(trace: &ProfilerTrace, measure: &Measure) -> Profile {
    let mut strings = Strings::new();
    let sample_type = measure
        .sample_types
        .iter()
        .map(|(t, u)| ValueType {
            r#type: strings.id(t),
            unit: strings.id(u),
        })
        .collect();
    let attributions = frame_attributions(trace);
    let mut function = Vec::with_capacity(trace.frames.len() + 3);
    let mut location = Vec::with_capacity(trace.frames.len() + 3);
    for (i, f) in trace.frames.iter().enumerate() {
        let id = i as u64 + 1;
        let name = strings.id(&super::function_name(trace, f));
        let system_name = strings.id(super::display_name(&f.name));
        let filename = f
            .resource_id
            .map_or(0, |r| strings.id(&file_name(&trace.resources[r as usize])));
        let line = f.line.map_or(0, i64::from);
        function.push(Function {
            id,
            name,
            system_name,
            filename,
            start_line: line,
        });
        location.push(Location {
            id,
            line: vec![Line {
                function_id: id,
                line,
                column: f.column.map_or(0, i64::from),
            }],
            ..Default::default()
        });
    }
    let pseudo_base = trace.frames.len() as u64 + 1;
    for (k, p) in Pseudo::ALL.iter().enumerate() {
        let id = pseudo_base + k as u64;
        let name = strings.id(p.name());
        function.push(Function {
            id,
            name,
            system_name: name,
            ..Default::default()
        });
        location.push(Location {
            id,
            line: vec![Line {
                function_id: id,
                ..Default::default()
            }],
            ..Default::default()
        });
    }
    let (package_key, kind_key) = (strings.id("package"), strings.id("kind"));

    // One pprof sample per distinct stack (or pseudo-frame): its locations are listed once, so the
    // work is the distinct stacks' frames, not every sample's.
    let width = measure.sample_types.len();
    let (stacks, group_of) = super::charged_stacks(trace, &attributions);
    // Split further by label set: the samples' own labels (a route, a span) beside package and kind.
    let (groups, group_of) = super::labelled_groups(trace, &group_of);
    let label_sets = trace.label_sets();
    let mut sample: Vec<Sample> = groups
        .into_iter()
        .map(|(g, labels)| {
            let group = &stacks[g as usize];
            let mut label = vec![
                Label {
                    key: package_key,
                    str: strings.id(&group.package),
                    ..Default::default()
                },
                Label {
                    key: kind_key,
                    str: strings.id(group.kind),
                    ..Default::default()
                },
            ];
            for (k, v) in labels
                .and_then(|l| label_sets.get(l as usize))
                .into_iter()
                .flatten()
            {
                label.push(Label {
                    key: strings.id(k),
                    str: strings.id(v),
                    ..Default::default()
                });
            }
            Sample {
                location_id: match group.key {
                    // pprof lists locations leaf first.
                    Ok(_) => group.frames.iter().rev().map(|&f| f as u64 + 1).collect(),
                    Err((p, _)) => vec![pseudo_base + p as u64],
                },
                value: vec![0; width],
                label,
            }
        })
        .collect();
    for (i, &g) in group_of.iter().enumerate() {
        (measure.add)(i, &mut sample[g as usize].value);
    }

    let comment = vec![strings.id(measure.comment)];
    Profile {
        sample_type,
        sample,
        location,
        function,
        time_nanos: measure.time_nanos,
        duration_nanos: measure.duration_nanos,
        period_type: Some(ValueType {
            r#type: strings.id(measure.period_type.0),
            unit: strings.id(measure.period_type.1),
        }),
        period: measure.period,
        comment,
        default_sample_type: strings.id(measure.default_sample_type),
        string_table: strings.0.into_values(),
        ..Default::default()
    }
}

/// Gzips an encoded `profile.proto` message.
pub(crate) fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut gz = GzEncoder::new(Vec::with_capacity(bytes.len() / 3 + 64), Compression::default());
    gz.write_all(bytes)
        .and_then(|_| gz.finish())
        .map_err(|e| Error::invalid(format!("gzip failed: {e}")))
}

/// The gzipped bytes of `to_profile` (the `profile.proto` message).
pub fn to_pprof(trace: &ProfilerTrace, options: &PprofOptions) -> Result<Vec<u8>> {
    super::check_frame_references(super::distinct_frame_references(trace), "toPprof")?;
    gzip(&to_profile(trace, options).encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;
    use std::io::Read;

    #[test]
    fn a_traces_own_labels_are_string_labels_and_split_samples() {
        let trace = crate::trace::tests::labelled_trace();
        let p = to_profile(&trace, &PprofOptions::default());
        let s = |i: i64| p.string_table[i as usize].as_str();
        let label = |x: &Sample, key: &str| {
            x.label
                .iter()
                .find(|l| s(l.key) == key)
                .map(|l| s(l.str).to_owned())
        };
        // Samples 0 and 1 share a stack but not a span: two pprof samples.
        let chunk: Vec<&Sample> = p
            .sample
            .iter()
            .filter(|x| x.location_id == vec![3, 2, 1])
            .collect();
        assert_eq!(chunk.len(), 2);
        assert!(chunk
            .iter()
            .all(|x| x.value[0] == 1 && label(x, "route").as_deref() == Some("GET /a")));
        assert_eq!(label(chunk[0], "span_id").as_deref(), Some("00f067aa0ba902b7"));
        assert_eq!(label(chunk[0], "package").as_deref(), Some("lodash"));
        let b = p.sample.iter().find(|x| x.location_id == vec![2, 1]).unwrap();
        assert_eq!(label(b, "route").as_deref(), Some("GET /b\u{1b}[2J\n"));
        // Unlabelled samples carry package and kind only; every sample is counted once.
        let gc = p.sample.iter().find(|x| x.location_id == vec![7]).unwrap();
        assert_eq!(gc.label.len(), 2);
        assert_eq!(p.sample.iter().map(|x| x.value[0]).sum::<i64>(), 9);
        let mut bytes = Vec::new();
        let gz = to_pprof(&trace, &PprofOptions::default()).unwrap();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut bytes)
            .unwrap();
        assert_eq!(Profile::decode(&bytes[..]).unwrap(), p);
    }

    #[test]
    fn encodes_merged_samples_with_labels_and_decodes_back() {
        let gz = to_pprof(&sample_trace(), &PprofOptions::default()).unwrap();
        assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut bytes)
            .unwrap();
        let p = Profile::decode(&bytes[..]).unwrap();
        assert_eq!(p, to_profile(&sample_trace(), &PprofOptions::default()));
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(s(0), "");
        assert_eq!(
            (s(p.sample_type[1].r#type), s(p.sample_type[1].unit)),
            ("cpu", "nanoseconds")
        );
        let total: i64 = p.sample.iter().map(|x| x.value[0]).sum();
        assert_eq!(total, 9);
        // chunk (lodash) under work under main, leaf first.
        let chunk = p.sample.iter().find(|x| x.location_id == vec![3, 2, 1]).unwrap();
        assert_eq!(chunk.value, vec![2, 2_000_000]);
        assert_eq!(
            (s(chunk.label[0].key), s(chunk.label[1].str)),
            ("package", "dependency")
        );
        let gc = p.sample.iter().find(|x| x.location_id == vec![7]).unwrap();
        assert_eq!(
            (gc.value[0], s(gc.label[0].str), s(gc.label[1].str)),
            (2, "(gc)", "gc")
        );
        let work = p.sample.iter().find(|x| x.location_id == vec![2, 1]).unwrap();
        assert_eq!(s(work.label[0].str), "(app)");
        assert_eq!(p.period, 1_000_000);
    }
}
