//! napi exports of the exporters: each takes the trace as JSON text (the facade passes
//! `JSON.stringify(trace)`), validates it once in the core and returns the format as text, or as bytes
//! for pprof. Errors are `TypeError: …` for the facade to rethrow.

use jsprof_core::{
    otlp_partial_success, to_collapsed, to_cpu_profile, to_diff_flame_graph, to_flame_graph,
    to_flame_graph_html, to_gecko_json, to_otlp_profiles, to_pprof, to_speedscope, unplaced, Clock,
    FlameGraphOptions, GeckoOptions, OtlpOptions, PprofOptions,
};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;
use crate::trace_handle::{trace_of, TraceInput};

/// JSON text as UTF-8 bytes (a Buffer): a large profile's JSON goes to a file without being made a JS
/// string (hundreds of MB for ten million samples), and the public functions parse it from there.
fn to_json<T: serde::Serialize>(value: &T) -> Result<Buffer> {
    serde_json::to_vec(value)
        .map(Buffer::from)
        .map_err(|e| Error::from_reason(format!("jsprof-node: could not write JSON: {e}")))
}

/// `.cpuprofile` JSON, as UTF-8 bytes.
#[napi(catch_unwind)]
pub fn export_cpu_profile(trace: TraceInput<'_>) -> Result<Buffer> {
    to_json(&to_cpu_profile(&*trace_of(trace)?))
}

/// The clock options of every exporter that shows times (`ExportClockOptions`); the core puts them over
/// the trace's own `jsprof` member.
pub(crate) fn clock(time_origin_ms: Option<f64>, pid: Option<u32>) -> Clock {
    Clock { time_origin_ms, pid }
}

/// Firefox Profiler processed-profile JSON, as UTF-8 bytes (see [`to_json`]).
#[napi(catch_unwind)]
pub fn export_gecko_profile(
    trace: TraceInput<'_>,
    thread_name: Option<String>,
    start_time: Option<f64>,
    time_origin_ms: Option<f64>,
    pid: Option<u32>,
) -> Result<Buffer> {
    let options = GeckoOptions {
        thread_name,
        start_time,
        clock: clock(time_origin_ms, pid),
    };
    to_gecko_json(&*trace_of(trace)?, &options)
        .map(Buffer::from)
        .map_err(|e| Error::from_reason(format!("jsprof-node: could not write JSON: {e}")))
}

/// speedscope JSON, as UTF-8 bytes.
#[napi(catch_unwind)]
pub fn export_speedscope(
    trace: TraceInput<'_>,
    name: Option<String>,
    time_origin_ms: Option<f64>,
    pid: Option<u32>,
) -> Result<Buffer> {
    let options = clock(time_origin_ms, pid);
    to_json(&to_speedscope(&*trace_of(trace)?, name.as_deref(), options).map_err(core_error)?)
}

/// Gzipped `profile.proto` bytes.
#[napi(catch_unwind)]
pub fn export_pprof(trace: TraceInput<'_>, time_origin_ms: Option<f64>) -> Result<Buffer> {
    let options = PprofOptions {
        clock: clock(time_origin_ms, None),
    };
    Ok(to_pprof(&*trace_of(trace)?, &options).map_err(core_error)?.into())
}

/// What an OTLP export is told beside the profile (CPU or heap).
#[napi(object)]
pub struct OtlpArgs {
    /// The options' clock (`timeOrigin`, `pid`), over the profile's own.
    pub time_origin: Option<f64>,
    pub pid: Option<u32>,
    /// This process's clock, for a profile that says nothing of its own.
    pub process_time_origin: f64,
    pub process_pid: u32,
    pub runtime_version: String,
    pub sdk_version: String,
    /// JSON text of objects of attribute names to values.
    pub resource: Option<String>,
    pub attributes: Option<String>,
}

impl OtlpArgs {
    pub(crate) fn options(self) -> Result<OtlpOptions> {
        let attributes = |text: Option<String>, what| {
            OtlpOptions::attributes_from_json(text.as_deref(), what).map_err(core_error)
        };
        Ok(OtlpOptions {
            clock: clock(self.time_origin, self.pid),
            process_clock: clock(Some(self.process_time_origin), Some(self.process_pid)),
            runtime_version: Some(self.runtime_version),
            sdk_version: Some(self.sdk_version),
            resource: attributes(self.resource, "resource")?,
            attributes: attributes(self.attributes, "attributes")?,
        })
    }
}

/// OTLP/HTTP `ExportProfilesServiceRequest` protobuf bytes.
#[napi(catch_unwind)]
pub fn export_otlp_profiles(trace: TraceInput<'_>, args: OtlpArgs) -> Result<Buffer> {
    let options = args.options()?;
    Ok(to_otlp_profiles(&*trace_of(trace)?, &options)
        .map_err(core_error)?
        .into())
}

/// What an OTLP export response says of rejected profiles (`null` when it says nothing).
#[napi(object)]
pub struct OtlpPartialSuccess {
    pub rejected_profiles: f64,
    pub error_message: String,
}

/// Reads an `ExportProfilesServiceResponse` body's `partial_success` (`cut`: only its start was read).
#[napi(catch_unwind)]
pub fn decode_otlp_partial_success(body: Buffer, cut: Option<bool>) -> Result<Option<OtlpPartialSuccess>> {
    Ok(otlp_partial_success(&body, cut.unwrap_or(false))
        .map_err(core_error)?
        .map(|(rejected, message)| OtlpPartialSuccess {
            rejected_profiles: rejected as f64,
            error_message: message,
        }))
}

/// Folded stacks text.
#[napi(catch_unwind)]
pub fn export_collapsed(trace: TraceInput<'_>) -> Result<String> {
    to_collapsed(&*trace_of(trace)?).map_err(core_error)
}

/// SVG text, or with `html` the self-contained HTML page.
#[napi(catch_unwind)]
pub fn export_flame_graph(
    trace: TraceInput<'_>,
    title: Option<String>,
    subtitle: Option<String>,
    width: Option<u32>,
    html: Option<bool>,
    label_key: Option<String>,
    label_value: Option<String>,
) -> Result<String> {
    let options = FlameGraphOptions {
        title,
        subtitle,
        width,
        label: label_key.zip(label_value),
    };
    let trace = trace_of(trace)?;
    if html == Some(true) {
        to_flame_graph_html(&trace, &options).map_err(core_error)
    } else {
        to_flame_graph(&trace, &options).map_err(core_error)
    }
}

/// The differential flame graph of `jsprof diff -o diff.svg` (SVG text): `next`'s tree coloured by how
/// each frame's share changed since `base`.
#[napi(catch_unwind)]
pub fn export_diff_flame_graph(
    base: TraceInput<'_>,
    next: TraceInput<'_>,
    title: Option<String>,
) -> Result<String> {
    let options = FlameGraphOptions {
        title,
        ..Default::default()
    };
    let (base, next) = (trace_of(base)?, trace_of(next)?);
    to_diff_flame_graph(&base, &next, &options).map_err(core_error)
}

/// A frame label (or a `summarize` row name) without its `:line:column`: how `jsprof diff` knows a
/// function moved by an edit.
#[napi(catch_unwind)]
pub fn unplaced_label(label: String) -> String {
    unplaced(&label).into_owned()
}
