//! A heap profile in every view a trace has: `summarize`'s rows, the flame graphs, pprof, OTLP profiles
//! and folded stacks. Each is the trace's own view (one charging rule, one tree, one label per stack)
//! with a sample's weight its bytes instead of its time; what differs is only what the format calls the
//! values:
//!
//! - pprof: `space`/`bytes` for the `inuse` view, `alloc_space`/`bytes` for `allocated` (the names of
//!   Datadog's and Pyroscope's Node heap profiles, and of Go's allocation profile); period type
//!   `space`/`bytes`, period the sampling interval. No `objects` count: V8's inspector profile gives
//!   bytes per sample, not objects (`crate::v8::heap`).
//! - OTLP: one profile of sample type `space`/`bytes` (or `alloc_space`), a value per stack.

use serde::Serialize;

use super::{HeapProfile, HeapView};
use crate::attribution::Attributor;
use crate::error::Result;
use crate::export::collapsed::{folded_text, folded_weights};
use crate::export::flamegraph::{
    check_width, draw_diff, draw_html, draw_svg, FlameGraphOptions, FlameTree, Unit,
};
use crate::export::otlp::{self, OtlpOptions};
use crate::export::pprof::{self, PprofOptions};
use crate::export::{check_frame_references, distinct_frame_references, ns};
use crate::summary::{summarize_weighted, By};

/// One row of a heap profile's summary: bytes and V8 samples in the row's own code (self) and under it
/// (total), charged as `summarize` charges time.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeapRow {
    pub name: String,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub self_size: u64,
    pub total_size: u64,
    pub self_samples: u64,
    pub total_samples: u64,
}

/// `summarize`'s rows of a valid heap profile, by self bytes.
pub fn summarize_heap(heap: &HeapProfile, by: By, attributor: &mut Attributor) -> Vec<HeapRow> {
    summarize_weighted(&heap.trace, &heap.weights(), Some(&heap.counts), by, attributor)
        .into_iter()
        .map(|r| HeapRow {
            name: r.name,
            kind: r.kind,
            package: r.package,
            version: r.version,
            self_size: r.self_time.round() as u64,
            total_size: r.total_time.round() as u64,
            self_samples: r.self_samples,
            total_samples: r.total_samples,
        })
        .collect()
}

fn tree(heap: &HeapProfile) -> FlameTree {
    FlameTree::weighted(&heap.trace, &heap.weights(), Some(&heap.counts))
}

/// The SVG flame graph of a heap profile: widths by bytes.
pub fn to_heap_flame_graph(heap: &HeapProfile, options: &FlameGraphOptions) -> Result<String> {
    check_width(options)?;
    Ok(draw_svg(&tree(heap), options, Unit::Bytes))
}

/// The explorable HTML flame graph of a heap profile.
pub fn to_heap_flame_graph_html(heap: &HeapProfile, options: &FlameGraphOptions) -> Result<String> {
    check_width(options)?;
    Ok(draw_html(&tree(heap), options, Unit::Bytes, &Default::default()))
}

/// The differential flame graph of two heap profiles (`jsprof diff`): `new`'s tree coloured by how each
/// frame's share of the bytes changed since `base`.
pub fn to_heap_diff_flame_graph(
    base: &HeapProfile,
    new: &HeapProfile,
    options: &FlameGraphOptions,
) -> Result<String> {
    check_width(options)?;
    Ok(draw_diff(&tree(base), &tree(new), options, Unit::Bytes))
}

/// Folded stacks, each line's count its bytes.
pub fn to_heap_collapsed(heap: &HeapProfile) -> Result<String> {
    check_frame_references(distinct_frame_references(&heap.trace), "toCollapsed")?;
    Ok(folded_text(folded_weights(&heap.trace, &heap.weights())))
}

/// The sample type of a view, as pprof and OTLP name it.
fn sample_type(view: HeapView) -> &'static str {
    match view {
        HeapView::Inuse => "space",
        HeapView::Allocated => "alloc_space",
    }
}

/// When the profile's sampling began and how long it ran, in ns: from `jsprof.heap`'s times and the
/// epoch of their origin (`origin`: resolved by `Clock::given_or`), 0 when unknown.
fn span_ns(heap: &HeapProfile, origin: Option<f64>) -> (Option<f64>, f64, i64) {
    let h = &heap.info.heap;
    let start = h.start_time.or(h.end_time);
    let duration = match (h.start_time, h.end_time) {
        (Some(s), Some(e)) if e >= s => ns(e - s),
        _ => 0,
    };
    (origin, start.unwrap_or(0.0), duration)
}

/// Gzipped pprof of a valid heap profile (`go tool pprof -sample_index=space`).
pub fn to_heap_pprof(heap: &HeapProfile, options: &PprofOptions) -> Result<Vec<u8>> {
    check_frame_references(distinct_frame_references(&heap.trace), "toPprof")?;
    let own = Some(&heap.info.clock);
    let (origin, start, duration) = span_ns(heap, options.clock.given_or(own).time_origin_ms);
    let sizes = &heap.sizes;
    let add = |i: usize, value: &mut [i64]| value[0] = value[0].saturating_add(sizes[i] as i64);
    let kind = sample_type(heap.info.heap.view);
    let profile = pprof::profile_of(
        &heap.trace,
        &pprof::Measure {
            sample_types: vec![(kind, "bytes")],
            default_sample_type: kind,
            period_type: ("space", "bytes"),
            period: heap.info.heap.sampling_interval.map_or(0, |v| v.round() as i64),
            add: &add,
            time_nanos: origin.map_or(0, |o| ns(o + start)),
            duration_nanos: duration,
            comment: match heap.info.heap.view {
                HeapView::Inuse => "jsprof-node heap profile: bytes of sampled objects alive when it was taken (V8's sampling heap profiler)",
                HeapView::Allocated => "jsprof-node heap profile: bytes of every sampled allocation, collected or not (V8's sampling heap profiler)",
            },
        },
    );
    pprof::gzip(&prost::Message::encode_to_vec(&profile))
}

/// The body of an OTLP/HTTP export of a valid heap profile.
pub fn to_heap_otlp_profiles(heap: &HeapProfile, options: &OtlpOptions) -> Result<Vec<u8>> {
    check_frame_references(distinct_frame_references(&heap.trace), "toOtlpProfiles")?;
    let options = options.resolved(Some(&heap.info.clock));
    let (origin, start, duration) = span_ns(heap, options.clock.time_origin_ms);
    let sizes = &heap.sizes;
    let value = |i: usize| sizes[i] as i64;
    let request = otlp::request_of(
        &heap.trace,
        &options,
        &otlp::Measure {
            sample_type: (sample_type(heap.info.heap.view), "bytes"),
            period_type: ("space", "bytes"),
            period: heap.info.heap.sampling_interval.map_or(0, |v| v.round() as i64),
            value: &value,
            timestamp: None,
            time_unix_nano: origin.map_or(0, |o| otlp::epoch_ns(o, start)),
            duration_nano: duration.max(0) as u64,
        },
    )?;
    Ok(prost::Message::encode_to_vec(&request))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::tests::heap_profile;
    use std::io::Read;

    fn attributor() -> Attributor {
        Attributor::with_reader(Box::new(|_| None))
    }

    #[test]
    fn summarizes_bytes_by_package_and_function() {
        let h = heap_profile();
        let rows = summarize_heap(&h, By::Package, &mut attributor());
        let leaky = rows.iter().find(|r| r.name == "leaky").unwrap();
        assert_eq!(
            (leaky.kind, leaky.self_size, leaky.self_samples),
            ("dependency", 300, 2)
        );
        assert_eq!(rows[0].name, "leaky", "sorted by self bytes");
        let app = rows.iter().find(|r| r.name == "(app)").unwrap();
        assert_eq!((app.self_size, app.total_size), (100, 400));
        assert_eq!(rows.iter().map(|r| r.self_size).sum::<u64>(), 450);
        let rows = summarize_heap(&h, By::Function, &mut attributor());
        assert_eq!(
            rows[0].name,
            "remember (file:///app/node_modules/leaky/index.js:10:3)"
        );
    }

    #[test]
    fn pprof_names_space_and_alloc_space() {
        let mut h = heap_profile();
        h.info.heap.sampling_interval = Some(524288.0);
        let decode = |gz: Vec<u8>| {
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut bytes)
                .unwrap();
            <pprof::Profile as prost::Message>::decode(&bytes[..]).unwrap()
        };
        let p = decode(to_heap_pprof(&h, &PprofOptions::default()).unwrap());
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(
            (s(p.sample_type[0].r#type), s(p.sample_type[0].unit)),
            ("space", "bytes")
        );
        assert_eq!(p.sample_type.len(), 1);
        assert_eq!(p.period, 524288);
        assert_eq!(p.sample.iter().map(|x| x.value[0]).sum::<i64>(), 450);
        let leak = p.sample.iter().find(|x| x.value[0] == 300).unwrap();
        assert_eq!(s(leak.label[0].str), "leaky");
        h.info.heap.view = HeapView::Allocated;
        let p = decode(to_heap_pprof(&h, &PprofOptions::default()).unwrap());
        assert_eq!(p.string_table[p.sample_type[0].r#type as usize], "alloc_space");
    }

    #[test]
    fn otlp_has_one_value_per_stack() {
        let h = heap_profile();
        let body = to_heap_otlp_profiles(&h, &OtlpOptions::default()).unwrap();
        let request =
            <otlp::proto::ExportProfilesServiceRequest as prost::Message>::decode(&body[..]).unwrap();
        let dictionary = request.dictionary.unwrap();
        let profile = &request.resource_profiles[0].scope_profiles[0].profiles[0];
        let st = profile.sample_type.unwrap();
        assert_eq!(dictionary.string_table[st.type_strindex as usize], "space");
        let values: Vec<i64> = profile.samples.iter().flat_map(|s| s.values.clone()).collect();
        assert_eq!(values.iter().sum::<i64>(), 450);
        assert_eq!(values.len(), 3);
        assert!(profile.samples.iter().all(|s| s.timestamps_unix_nano.is_empty()));
    }

    #[test]
    fn flame_graphs_and_folded_stacks_weigh_bytes() {
        let h = heap_profile();
        let svg = to_heap_flame_graph(&h, &FlameGraphOptions::default()).unwrap();
        assert!(svg.contains("<title>remember (/app/node_modules/leaky/index.js:10:3) (300 B, 2 samples, 66.67%; kind: dependency, package: leaky)</title>"), "{svg}");
        let html = to_heap_flame_graph_html(&h, &FlameGraphOptions::default()).unwrap();
        assert!(html.contains(r#""unit":"bytes""#));
        let folded = to_heap_collapsed(&h).unwrap();
        assert!(
            folded.contains("main (/app/main.js:1:1);remember (/app/node_modules/leaky/index.js:10:3) 300\n"),
            "{folded}"
        );
        let diff = to_heap_diff_flame_graph(&h, &h, &FlameGraphOptions::default()).unwrap();
        assert!(diff.contains("of the bytes (base"));
    }
}
