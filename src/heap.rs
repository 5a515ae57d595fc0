//! napi exports of heap profiles: V8's sampling heap profile converted (`fromHeapProfile`, the heap
//! sampler's takes) and written back (`toHeapProfile`), summaries, the exporters, and the CLI's reader.
//! A heap profile crosses as its JSON text (small: one entry per stack holding memory); the core
//! validates it once per call. Errors are `TypeError: …` / `SyntaxError: …` for the facade to rethrow.

use jsprof_core::{
    read_heap_file, summarize_heap, to_heap_collapsed, to_heap_diff_flame_graph, to_heap_flame_graph,
    to_heap_flame_graph_html, to_heap_otlp_profiles, to_heap_pprof, FlameGraphOptions, FromV8Options,
    HeapInfo, HeapProfile, HeapTree, PprofOptions, SummaryBy,
};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;
use crate::own_code::own_code;

/// A heap profile from JS (its JSON text), validated; `what` names the caller in the message.
fn heap_of(json: &str, what: &str) -> Result<HeapProfile> {
    HeapProfile::from_json(json).map_err(|e| {
        let reason = e
            .message
            .strip_prefix("not a valid heap profile: ")
            .unwrap_or(&e.message);
        core_error(jsprof_core::Error::invalid(format!(
            "{what}: malformed heap profile: {reason}"
        )))
    })
}

/// A heap profile converted from V8's, and the largest ordinal among V8's samples (0 for none): where a
/// profiler that starts on a running sampler, or takes the next chunk, starts.
///
/// `json` is a JS string, never a Buffer of Rust's memory: Node frees an external buffer's memory only
/// on a later turn of the event loop (its free callback is queued, not called at GC), so a loop of
/// HeapProfiler cycles that never yields (awaiting only settled promises) held every take's JSON:
/// RSS grew ~0.75 KB a cycle, flat once the loop turned. A string lives in V8's heap and goes at GC.
#[napi(object)]
pub struct HeapConversion {
    pub json: String,
    pub last_ordinal: f64,
}

/// Our heap profile of V8's (JSON text of `getSamplingProfile`'s reply, a `.heapprofile`): only the
/// samples after `afterOrdinal` when given; `info` is the `jsprof` member as JSON text;
/// `hideOwnCode`: jsprof-node's own frames left out (the sampler's takes; not a file's).
#[napi(catch_unwind)]
pub fn heap_profile_from_v8(
    text: &[u8],
    after_ordinal: Option<f64>,
    info: Option<String>,
    hide_own_code: bool,
) -> Result<HeapConversion> {
    let text = String::from_utf8_lossy(text);
    let tree = HeapTree::from_json(&text).map_err(core_error)?;
    drop(text);
    let info: HeapInfo = match info {
        Some(json) => serde_json::from_str(&json)
            .map_err(|e| Error::from_reason(format!("jsprof-node: bad heap profile info: {e}")))?,
        None => HeapInfo::default(),
    };
    let own = if hide_own_code { own_code() } else { None };
    let profile = HeapProfile::from_v8(
        &tree,
        &FromV8Options {
            own: own.as_deref(),
            after_ordinal,
            info,
        },
    );
    let last_ordinal = tree
        .samples
        .iter()
        .flatten()
        .map(|s| s.ordinal)
        .fold(0.0, f64::max);
    Ok(HeapConversion {
        json: profile.to_json(),
        last_ordinal,
    })
}

/// The most frames a HeapProfiler's `stackDepth` asks V8 to keep (jsprof-core's rule).
#[napi]
pub const MAX_HEAP_STACK_DEPTH: u32 = jsprof_core::MAX_HEAP_STACK_DEPTH;

/// V8's `.heapprofile` JSON of a heap profile of ours, as UTF-8 bytes: `as_object`, for
/// `toHeapProfile`'s object (refused past the depth `JSON.stringify` serializes, a `RangeError`), else
/// the text `jsprof convert` writes, at any depth.
#[napi(catch_unwind)]
pub fn heap_profile_to_v8(json: String, as_object: bool) -> Result<Buffer> {
    let heap = heap_of(&json, "toHeapProfile")?;
    let text = if as_object {
        heap.to_v8_object_json().map_err(|mut e| {
            e.message = format!("toHeapProfile: {}", e.message);
            core_error(e)
        })?
    } else {
        heap.to_v8_json()
    };
    Ok(text.into_bytes().into())
}

/// The heap profile's JSON text, checked (the one validation), for the facade's `isHeapProfile` roads.
#[napi(catch_unwind)]
pub fn check_heap_profile(json: String, what: String) -> Result<()> {
    heap_of(&json, &what).map(|_| ())
}

/// Rows of a heap profile by `package`, `function` or `resource`, as JSON text.
#[napi(catch_unwind)]
pub fn summarize_heap_profile(json: String, by: String) -> Result<String> {
    let by = SummaryBy::parse_heap(&by).map_err(core_error)?;
    let heap = heap_of(&json, "summarize")?;
    let rows = summarize_heap(&heap, by, &mut crate::analysis::attributor());
    serde_json::to_string(&rows).map_err(|e| Error::from_reason(e.to_string()))
}

/// Gzipped pprof bytes of a heap profile.
#[napi(catch_unwind)]
pub fn export_heap_pprof(json: String, time_origin_ms: Option<f64>) -> Result<Buffer> {
    let heap = heap_of(&json, "toPprof")?;
    let options = PprofOptions {
        clock: crate::export::clock(time_origin_ms, None),
    };
    Ok(to_heap_pprof(&heap, &options).map_err(core_error)?.into())
}

/// OTLP/HTTP `ExportProfilesServiceRequest` bytes of a heap profile (`resource`, `attributes`: JSON text).
#[napi(catch_unwind)]
pub fn export_heap_otlp_profiles(json: String, args: crate::export::OtlpArgs) -> Result<Buffer> {
    let heap = heap_of(&json, "toOtlpProfiles")?;
    let options = args.options()?;
    Ok(to_heap_otlp_profiles(&heap, &options).map_err(core_error)?.into())
}

/// Folded stacks of a heap profile, each line's count its bytes.
#[napi(catch_unwind)]
pub fn export_heap_collapsed(json: String) -> Result<String> {
    to_heap_collapsed(&heap_of(&json, "toCollapsed")?).map_err(core_error)
}

/// A heap profile's flame graph: SVG text, or with `html` the explorable page.
#[napi(catch_unwind)]
pub fn export_heap_flame_graph(
    json: String,
    title: Option<String>,
    subtitle: Option<String>,
    width: Option<u32>,
    html: Option<bool>,
) -> Result<String> {
    let heap = heap_of(&json, "toFlameGraph")?;
    let options = FlameGraphOptions {
        title,
        subtitle,
        width,
        ..Default::default()
    };
    if html == Some(true) {
        to_heap_flame_graph_html(&heap, &options).map_err(core_error)
    } else {
        to_heap_flame_graph(&heap, &options).map_err(core_error)
    }
}

/// The differential flame graph of two heap profiles (`jsprof diff -o diff.svg`).
#[napi(catch_unwind)]
pub fn export_heap_diff_flame_graph(base: String, next: String, title: Option<String>) -> Result<String> {
    let (base, next) = (
        heap_of(&base, "toDiffFlameGraph")?,
        heap_of(&next, "toDiffFlameGraph")?,
    );
    let options = FlameGraphOptions {
        title,
        ..Default::default()
    };
    to_heap_diff_flame_graph(&base, &next, &options).map_err(core_error)
}

/// A file the CLI was given, when it is a heap profile (V8's `.heapprofile` or ours): its JSON text
/// as UTF-8 bytes; `null` when it is not one. An error's message is what follows the file's name.
#[napi(catch_unwind)]
pub fn read_heap_profile_file(bytes: &[u8]) -> Result<Option<Buffer>> {
    let text = String::from_utf8_lossy(bytes);
    match read_heap_file(&text) {
        None => Ok(None),
        Some(Ok(profile)) => Ok(Some(profile.to_json().into_bytes().into())),
        Some(Err(e)) => Err(core_error(e)),
    }
}
