//! The Firefox Profiler's *processed* profile format, version 58 (`meta.preprocessedProfileVersion`),
//! which profiler.firefox.com opens directly and upgrades to its current version on load. At version 58
//! strings live in `shared.stringArray` and source files in `shared.sources`; each thread has its own
//! `stackTable`, `frameTable`, `funcTable`, `resourceTable`, `nativeSymbols`, `samples` and `markers`
//! (the layout of firefox-devtools/profiler `src/types/profile.ts` and
//! `docs-developer/CHANGELOG-formats.md` at that version).
//!
//! Mapping: one func per distinct (name, resource, line, column), one frame per trace frame, one
//! stack-table row per trace stack (same index), then one row per pseudo-frame for stackless samples.
//! Categories tell the kinds of code apart (JavaScript = app, Dependency with one subcategory per
//! package, Node.js, Native, GC / CC, Idle, Other). Consecutive `gc` samples become one `GC` interval
//! marker from the first of them to the next non-GC sample. Times are the trace's ms.

use std::collections::HashMap;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::{display_name, frame_attributions, Pseudo};
use crate::attribution::Kind;
use crate::interner::Interner;
use crate::trace::Weigher;
use crate::trace::{Clock, Marker, ProfilerTrace};

pub(crate) const PROCESSED_PROFILE_VERSION: u32 = 58;
/// The Gecko (raw) profile format version of the same era; informational in processed profiles.
pub(crate) const GECKO_PROFILE_VERSION: u32 = 31;

/// Category indexes (see [`categories`]).
pub(crate) const CATEGORY_OTHER: u32 = 0;
pub(crate) const CATEGORY_IDLE: u32 = 1;
pub(crate) const CATEGORY_JAVASCRIPT: u32 = 2;
pub(crate) const CATEGORY_DEPENDENCY: u32 = 3;
pub(crate) const CATEGORY_NODE: u32 = 4;
pub(crate) const CATEGORY_NATIVE: u32 = 5;
pub(crate) const CATEGORY_GC: u32 = 6;
/// Code compiled from a string without a URL (`new Function`, `eval`, `vm` without a filename).
pub(crate) const CATEGORY_GENERATED: u32 = 7;

#[derive(Debug, Clone, Default)]
pub struct GeckoOptions {
    /// The thread's name; defaults to "Main Thread".
    pub thread_name: Option<String>,
    /// `meta.startTime`: ms since the Unix epoch of the trace's time origin; default: the clock's.
    pub start_time: Option<f64>,
    /// The recording's clock, over the trace's own (`Clock::given_or`): the time origin's epoch (0
    /// when unknown) and the process id shown (1 when unknown).
    pub clock: Clock,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct FrameTable {
    address: Vec<i64>,
    inline_depth: Vec<u32>,
    category: Vec<Option<u32>>,
    subcategory: Vec<Option<u32>>,
    func: Vec<u32>,
    native_symbol: Vec<Option<u32>>,
    #[serde(rename = "innerWindowID")]
    inner_window_id: Vec<Option<u64>>,
    line: Vec<Option<u32>>,
    column: Vec<Option<u32>>,
    length: usize,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct FuncTable {
    name: Vec<u32>,
    #[serde(rename = "isJS")]
    is_js: Vec<bool>,
    #[serde(rename = "relevantForJS")]
    relevant_for_js: Vec<bool>,
    resource: Vec<i64>,
    source: Vec<Option<u32>>,
    line_number: Vec<Option<u32>>,
    column_number: Vec<Option<u32>>,
    length: usize,
}

#[derive(Serialize, Default)]
struct ResourceTable {
    length: usize,
    lib: Vec<Option<u32>>,
    name: Vec<u32>,
    host: Vec<Option<u32>>,
    #[serde(rename = "type")]
    kind: Vec<u32>,
}

#[derive(Serialize, Default)]
struct StackTable {
    frame: Vec<u32>,
    prefix: Vec<Option<u32>>,
    length: usize,
}

/// (name, resource, line, column): what makes a func distinct.
type FuncKey = (u32, Option<u32>, Option<u32>, Option<u32>);

/// `ResourceType.Url` of the profiler's `ResourceType` enum.
const RESOURCE_TYPE_URL: u32 = 5;

/// The categories, in the order of the `CATEGORY_*` indexes; the dependency category gets one
/// subcategory per package.
fn categories(packages: &[String]) -> Value {
    let mut dependency_subcategories = vec!["Other".to_owned()];
    dependency_subcategories.extend(packages.iter().cloned());
    json!([
        { "name": "Other", "color": "grey", "subcategories": ["Other"] },
        { "name": "Idle", "color": "transparent", "subcategories": ["Other"] },
        { "name": "JavaScript", "color": "yellow", "subcategories": ["Other"] },
        { "name": "Dependency", "color": "blue", "subcategories": dependency_subcategories },
        { "name": "Node.js", "color": "green", "subcategories": ["Other"] },
        { "name": "Native", "color": "purple", "subcategories": ["Other"] },
        { "name": "GC / CC", "color": "orange", "subcategories": ["Other"] },
        { "name": "Generated code", "color": "lightblue", "subcategories": ["Other"] },
    ])
}

/// The sample table, written straight from the trace in time order as it is serialized: no column
/// of it is ever held (as `Value`s or as typed columns it took far more memory for a large profile:
/// docs/bench.md#large-inputs-through-the-cli).
struct SampleTable<'t> {
    trace: &'t ProfilerTrace,
    /// The samples' weights, and their order in time (`weigher.order()`).
    weigher: Weigher<'t>,
    /// Stack id -> stack table row.
    row_of: Vec<u32>,
    pseudo_stack_base: u32,
    markers: GcMarkers,
}

/// The thread's GC markers (runs of consecutive gc samples in time order) as columns, each marker's
/// `data` object made as it is written (as JSON values, many markers took hundreds of MB:
/// docs/bench.md#large-inputs-through-the-cli).
#[derive(Default)]
struct GcMarkers {
    /// The string id of "GC".
    name: u32,
    start: Vec<f64>,
    end: Vec<f64>,
    samples: Vec<u32>,
}

impl Serialize for GcMarkers {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Data(u32);
        impl Serialize for Data {
            fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "GC")?;
                map.serialize_entry("samples", &self.0)?;
                map.end()
            }
        }
        let n = self.samples.len();
        let mut map = serializer.serialize_map(Some(7))?;
        map.serialize_entry("data", &Seq(|| self.samples.iter().map(|&count| Data(count))))?;
        map.serialize_entry("name", &Seq(|| std::iter::repeat_n(self.name, n)))?;
        map.serialize_entry("startTime", &self.start)?;
        map.serialize_entry("endTime", &self.end)?;
        map.serialize_entry("phase", &Seq(|| std::iter::repeat_n(1, n)))?;
        map.serialize_entry("category", &Seq(|| std::iter::repeat_n(CATEGORY_GC, n)))?;
        map.serialize_entry("length", &n)?;
        map.end()
    }
}

/// A sequence (a column of the sample table, of the markers) made as it is written, never held.
struct Seq<F>(F);

impl<F, I> Serialize for Seq<F>
where
    F: Fn() -> I,
    I: Iterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

impl SampleTable<'_> {
    fn stack(&self, i: usize) -> u32 {
        let s = &self.trace.samples[i];
        match (s.stack_id, Pseudo::of(s)) {
            (Some(id), None) => self.row_of[id as usize],
            (_, p) => self.pseudo_stack_base + p.map_or(0, |p| p as u32),
        }
    }

    /// Each sample weighs its time by the trace's one rule, as in summarize and every other view: the
    /// profiler's call tree then shows ms ('tracing-ms'), not sample counts.
    fn weight(&self, k: usize) -> f64 {
        (self.weigher.in_time_order(k) * 1e6).round() / 1e6
    }
}

impl Serialize for SampleTable<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(5))?;
        let samples = &self.trace.samples;
        map.serialize_entry(
            "stack",
            &Seq(|| self.weigher.order().iter().map(|&i| self.stack(i as usize))),
        )?;
        map.serialize_entry(
            "time",
            &Seq(|| {
                self.weigher
                    .order()
                    .iter()
                    .map(|&i| samples[i as usize].timestamp)
            }),
        )?;
        let count = self.weigher.order().len();
        map.serialize_entry("weight", &Seq(|| (0..count).map(|k| self.weight(k))))?;
        map.serialize_entry("weightType", "tracing-ms")?;
        map.serialize_entry("length", &count)?;
        map.end()
    }
}

/// A processed profile: everything but the samples as a JSON value (small: tables of frames and
/// stacks), the samples from the trace; serialized as one object with `threads: [thread + samples]`.
struct GeckoProfile<'t> {
    top: Map<String, Value>,
    thread: Map<String, Value>,
    samples: SampleTable<'t>,
}

struct ThreadOut<'a, 't>(&'a Map<String, Value>, &'a SampleTable<'t>);

impl Serialize for ThreadOut<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len() + 2))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry("markers", &self.1.markers)?;
        map.serialize_entry("samples", self.1)?;
        map.end()
    }
}

impl Serialize for GeckoProfile<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.top.len() + 1))?;
        for (k, v) in &self.top {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry("threads", &[ThreadOut(&self.thread, &self.samples)])?;
        map.end()
    }
}

/// The processed profile as a JSON value (tests and tools that want to look inside).
pub fn to_gecko_profile(trace: &ProfilerTrace, options: &GeckoOptions) -> Value {
    serde_json::to_value(build(trace, options)).unwrap_or(Value::Null)
}

/// The processed profile as JSON text (UTF-8 bytes), written without a `Value` per sample.
pub fn to_gecko_json(trace: &ProfilerTrace, options: &GeckoOptions) -> Result<Vec<u8>, serde_json::Error> {
    // Sized up front from what a sample takes (its stack row, time and weight: about 30 bytes), so a
    // large profile's text is not copied while it grows (doubling held the old and the new buffer).
    let mut out = Vec::with_capacity(trace.samples.len() * 32 + trace.frames.len() * 64 + 64 * 1024);
    serde_json::to_writer(&mut out, &build(trace, options))?;
    Ok(out)
}

fn build<'t>(trace: &'t ProfilerTrace, options: &GeckoOptions) -> GeckoProfile<'t> {
    let clock = options.clock.given_or(trace.jsprof.as_ref());
    let mut strings = Interner::<String>::new();
    let attributions = frame_attributions(trace);

    // Packages -> dependency subcategories (1-based; 0 is "Other").
    let mut packages: Vec<String> = Vec::new();
    let mut package_sub: HashMap<String, u32> = HashMap::new();
    for a in &attributions {
        if let (Kind::Dependency, Some(p)) = (a.kind, &a.package) {
            if !package_sub.contains_key(p) {
                packages.push(p.clone());
                package_sub.insert(p.clone(), packages.len() as u32);
            }
        }
    }

    // Resources and sources: one each per trace resource.
    let mut resources = ResourceTable::default();
    let mut sources_filename = Vec::new();
    for r in &trace.resources {
        let name = strings.id(r);
        resources.lib.push(None);
        resources.name.push(name);
        resources.host.push(None);
        resources.kind.push(RESOURCE_TYPE_URL);
        sources_filename.push(name);
    }
    resources.length = trace.resources.len();

    let mut funcs = FuncTable::default();
    let mut func_index: HashMap<FuncKey, u32> = HashMap::new();
    let mut frames = FrameTable::default();
    let mut push_frame =
        |funcs: &mut FuncTable, frames: &mut FrameTable, key: FuncKey, is_js: bool, category: (u32, u32)| {
            let (name, resource, line, column) = key;
            let func = *func_index.entry(key).or_insert_with(|| {
                funcs.name.push(name);
                funcs.is_js.push(is_js);
                funcs.relevant_for_js.push(!is_js);
                funcs.resource.push(resource.map_or(-1, i64::from));
                funcs.source.push(resource);
                funcs.line_number.push(line);
                funcs.column_number.push(column);
                funcs.length += 1;
                funcs.length as u32 - 1
            });
            frames.address.push(-1);
            frames.inline_depth.push(0);
            frames.category.push(Some(category.0));
            frames.subcategory.push(Some(category.1));
            frames.func.push(func);
            frames.native_symbol.push(None);
            frames.inner_window_id.push(Some(0));
            frames.line.push(line);
            frames.column.push(column);
            frames.length += 1;
        };
    for (f, a) in trace.frames.iter().zip(&attributions) {
        let name = strings.id(display_name(&f.name));
        let category = match a.kind {
            Kind::App => (CATEGORY_JAVASCRIPT, 0),
            Kind::Dependency => (
                CATEGORY_DEPENDENCY,
                a.package
                    .as_ref()
                    .and_then(|p| package_sub.get(p))
                    .copied()
                    .unwrap_or(0),
            ),
            Kind::Node => (CATEGORY_NODE, 0),
            Kind::Generated => (CATEGORY_GENERATED, 0),
            Kind::Native => (CATEGORY_NATIVE, 0),
        };
        // Builtins without a script are not JS functions to the profiler; generated code is.
        let is_js = f.resource_id.is_some() || a.kind == Kind::Generated;
        push_frame(
            &mut funcs,
            &mut frames,
            (name, f.resource_id, f.line, f.column),
            is_js,
            category,
        );
    }
    let pseudo_frame_base = trace.frames.len() as u32;
    for p in Pseudo::ALL {
        let name = strings.id(p.name());
        let category = match p {
            Pseudo::Idle => CATEGORY_IDLE,
            Pseudo::GarbageCollector => CATEGORY_GC,
            Pseudo::Program => CATEGORY_OTHER,
        };
        push_frame(
            &mut funcs,
            &mut frames,
            (name, None, None, None),
            false,
            (category, 0),
        );
    }

    // The profiler needs every prefix before its stack: order the rows by depth (a trace made by a
    // Profiler already is; a hand-made one may not be).
    let depth = stack_depths(trace);
    let mut rows: Vec<usize> = (0..trace.stacks.len()).collect();
    rows.sort_by_key(|&i| depth[i]);
    let mut row_of = vec![0u32; trace.stacks.len()];
    for (row, &i) in rows.iter().enumerate() {
        row_of[i] = row as u32;
    }
    let mut stacks = StackTable::default();
    for &i in &rows {
        let s = &trace.stacks[i];
        stacks.frame.push(s.frame_id);
        stacks.prefix.push(s.parent_id.map(|p| row_of[p as usize]));
    }
    let pseudo_stack_base = trace.stacks.len() as u32;
    for k in 0..Pseudo::ALL.len() as u32 {
        stacks.frame.push(pseudo_frame_base + k);
        stacks.prefix.push(None);
    }
    stacks.length = stacks.frame.len();

    // Samples in time order, as the profiler expects, each weighing its time by the trace's rule.
    let weigher = Weigher::new(trace, None);
    let order = weigher.order();

    // GC markers: runs of consecutive gc samples in time order, each ending where its last sample's
    // time ends.
    let interval = weigher.interval();
    let mut markers = GcMarkers {
        name: strings.id("GC"),
        ..GcMarkers::default()
    };
    let mut k = 0;
    while k < order.len() {
        let sample = |k: usize| &trace.samples[order[k] as usize];
        let is_gc = |k: usize| sample(k).stack_id.is_none() && sample(k).marker == Some(Marker::Gc);
        if !is_gc(k) {
            k += 1;
            continue;
        }
        let start = sample(k).timestamp;
        let mut count = 0;
        while k < order.len() && is_gc(k) {
            count += 1;
            k += 1;
        }
        let end = sample(k - 1).timestamp + weigher.in_time_order(k - 1);
        markers.start.push(start);
        markers.end.push(end);
        markers.samples.push(count);
    }

    let first_time = order
        .first()
        .map_or(0.0, |&i| trace.samples[i as usize].timestamp);
    let last_time = order.last().map_or(0.0, |&i| trace.samples[i as usize].timestamp);
    let end_time = match order.len() {
        0 => 0.0,
        n => last_time + weigher.in_time_order(n - 1),
    };
    let thread = json!({
        "processType": "default",
        "processStartupTime": first_time,
        "processShutdownTime": null,
        "registerTime": first_time,
        "unregisterTime": null,
        "pausedRanges": [],
        "showMarkersInTimeline": true,
        "name": options.thread_name.as_deref().unwrap_or("Main Thread"),
        "isMainThread": true,
        "processName": "Node.js",
        "pid": clock.pid.unwrap_or(1).to_string(),
        "tid": 1,
        "stackTable": stacks,
        "frameTable": frames,
        "funcTable": funcs,
        "resourceTable": resources,
        "nativeSymbols": { "libIndex": [], "address": [], "name": [], "functionSize": [], "length": 0 },
    });
    let samples = SampleTable {
        trace,
        weigher,
        row_of,
        pseudo_stack_base,
        markers,
    };
    let source_count = sources_filename.len();
    let top = json!({
        "meta": {
            "interval": interval,
            "startTime": options.start_time.or(clock.time_origin_ms).unwrap_or(0.0),
            "profilingStartTime": first_time,
            "profilingEndTime": end_time,
            "processType": 0,
            "product": "Node.js (jsprof-node)",
            "importedFrom": "jsprof-node",
            "stackwalk": 0,
            "debug": false,
            "version": GECKO_PROFILE_VERSION,
            "preprocessedProfileVersion": PROCESSED_PROFILE_VERSION,
            "categories": categories(&packages),
            "markerSchema": [{
                "name": "GC",
                "tooltipLabel": "Garbage collection",
                "tableLabel": "Garbage collection ({marker.data.samples} samples)",
                "chartLabel": "GC",
                "display": ["marker-chart", "marker-table", "timeline-overview"],
                "description": "Samples taken while V8 was collecting garbage.",
                "fields": [{ "key": "samples", "label": "Samples", "format": "integer" }],
            }],
            "sampleUnits": { "time": "ms", "eventDelay": "ms", "threadCPUDelta": "µs" },
            "symbolicated": true,
            "symbolicationNotSupported": true,
            "usesOnlyOneStackType": true,
            "sourceCodeIsNotOnSearchfox": true,
        },
        "libs": [],
        "shared": {
            "stringArray": strings.values(),
            "sources": {
                "length": source_count,
                "uuid": vec![Value::Null; source_count],
                "filename": sources_filename,
            },
        },
    });
    let as_map = |v: Value| match v {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    GeckoProfile {
        top: as_map(top),
        thread: as_map(thread),
        samples,
    }
}

/// Each stack's number of ancestors (for a validated, acyclic trace).
fn stack_depths(trace: &ProfilerTrace) -> Vec<u32> {
    let mut depth: Vec<Option<u32>> = vec![None; trace.stacks.len()];
    let mut chain = Vec::new();
    for start in 0..trace.stacks.len() {
        let mut cursor = Some(start);
        while let Some(i) = cursor {
            if depth[i].is_some() {
                break;
            }
            chain.push(i);
            cursor = trace.stacks[i].parent_id.map(|p| p as usize);
        }
        let base = cursor.and_then(|i| depth[i]).map_or(0, |d| d + 1);
        for (d, &i) in (base..).zip(chain.iter().rev()) {
            depth[i] = Some(d);
        }
        chain.clear();
    }
    depth.into_iter().map(|d| d.unwrap_or(0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;

    #[test]
    fn tables_are_consistent_and_gc_runs_are_markers() {
        let p = to_gecko_profile(&sample_trace(), &GeckoOptions::default());
        assert_eq!(p["meta"]["preprocessedProfileVersion"], 58);
        let t = &p["threads"][0];
        let strings = p["shared"]["stringArray"].as_array().unwrap();
        let frames = &t["frameTable"];
        let funcs = &t["funcTable"];
        assert_eq!(frames["length"], 8);
        assert_eq!(t["stackTable"]["length"], 8);
        let name_of_frame = |f: usize| {
            let func = frames["func"][f].as_u64().unwrap() as usize;
            strings[funcs["name"][func].as_u64().unwrap() as usize]
                .as_str()
                .unwrap()
        };
        assert_eq!(name_of_frame(2), "chunk");
        assert_eq!(name_of_frame(4), "(anonymous)");
        assert_eq!(name_of_frame(6), "(garbage collector)");
        assert_eq!(t["samples"]["stack"][3], 6, "gc sample on the gc pseudo-stack");
        assert_eq!(frames["category"][2], CATEGORY_DEPENDENCY);
        assert_eq!(frames["category"][0], CATEGORY_JAVASCRIPT);
        assert_eq!(frames["category"][3], CATEGORY_NATIVE);
        let m = &t["markers"];
        assert_eq!(m["length"], 1);
        assert_eq!(
            (m["startTime"][0].as_f64(), m["endTime"][0].as_f64()),
            (Some(13.0), Some(15.0))
        );
        assert_eq!(m["data"][0]["samples"], 2);
        assert_eq!(strings[m["name"][0].as_u64().unwrap() as usize], "GC");
        assert_eq!(p["shared"]["sources"]["length"], 2);
    }

    #[test]
    fn orders_prefixes_before_stacks_and_samples_by_time() {
        let mut t = sample_trace();
        // Reverse the stack table: children now come before their parents.
        let n = t.stacks.len() as u32;
        t.stacks.reverse();
        for s in &mut t.stacks {
            s.parent_id = s.parent_id.map(|p| n - 1 - p);
        }
        for s in &mut t.samples {
            s.stack_id = s.stack_id.map(|id| n - 1 - id);
        }
        t.samples.swap(0, 8);
        let p = to_gecko_profile(&t, &GeckoOptions::default());
        let st = &p["threads"][0]["stackTable"];
        for (i, prefix) in st["prefix"].as_array().unwrap().iter().enumerate() {
            if let Some(prefix) = prefix.as_u64() {
                assert!((prefix as usize) < i, "prefix {prefix} of row {i}");
            }
        }
        let times: Vec<f64> = p["threads"][0]["samples"]["time"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        // The first sample in time (10 ms) hits chunk <- work <- main.
        let row = p["threads"][0]["samples"]["stack"][0].as_u64().unwrap() as usize;
        assert_eq!(st["frame"][row], 2);
    }
}
