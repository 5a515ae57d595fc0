//! napi exports of the analysis area: `attribute(resource)` and `summarize(trace, { by })`.
//!
//! One process-wide [`Attributor`] behind a mutex serves every call (from any thread or worker), so a
//! `package.json` is read at most once per process however often its package is attributed.

use std::sync::{LazyLock, Mutex, MutexGuard};

use jsprof_core::Error as CoreError;
use jsprof_core::{summarize, summarize_by_label, Attributor, SummaryBy};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;

static ATTRIBUTOR: LazyLock<Mutex<Attributor>> = LazyLock::new(|| Mutex::new(Attributor::new()));

pub(crate) fn attributor() -> MutexGuard<'static, Attributor> {
    // A panic while attributing leaves only caches behind: still usable.
    ATTRIBUTOR.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `{ kind, package?, version?, root? }` of one resource.
#[napi(object)]
pub struct ResourceAttribution {
    /// `app`, `dependency`, `node` or `native`.
    pub kind: String,
    pub package: Option<String>,
    pub version: Option<String>,
    pub root: Option<String>,
}

/// Which code a resource (URL or path) is, with its package, version and root folder.
#[napi(catch_unwind)]
pub fn attribute_resource(resource: String) -> ResourceAttribution {
    let a = attributor().attribute(&resource);
    ResourceAttribution {
        kind: a.kind.as_str().to_owned(),
        package: a.package,
        version: a.version,
        root: a.root,
    }
}

/// A summary of a trace (as JSON text) by `package`, `function`, `resource` or `label:<key>`, as JSON
/// text of the rows.
#[napi(catch_unwind)]
pub fn summarize_trace(
    trace: crate::trace_handle::TraceInput<'_>,
    by: String,
    sample_interval: Option<f64>,
) -> Result<String> {
    let by = SummaryBy::parse(&by, false).map_err(core_error)?;
    if let Some(i) = sample_interval.filter(|i| !(i.is_finite() && *i >= 0.0)) {
        let message = format!("RangeError: sampleInterval must be a finite number of ms >= 0, got {i}");
        return Err(Error::new(Status::InvalidArg, message));
    }
    // The exporters' reader (lone surrogates, which JSON.stringify writes, read as visible text), or a
    // TraceHandle's trace as it is.
    let trace = match trace {
        Either::A(json) => std::sync::Arc::new(
            jsprof_core::ProfilerTrace::from_json(&json)
                .map_err(|e| core_error(CoreError::invalid(format!("malformed trace: {}", e.message))))?,
        ),
        Either::B(handle) => handle.inner.clone(),
    };
    let malformed = |e: CoreError| core_error(CoreError::invalid(format!("malformed trace: {}", e.message)));
    let rows = match by {
        SummaryBy::Label(key) => {
            trace.validate().map_err(malformed)?;
            summarize_by_label(&trace, &key, sample_interval).map_err(core_error)?
        }
        SummaryBy::Code(by) => {
            summarize(&trace, by, sample_interval, &mut attributor()).map_err(malformed)?
        }
    };
    serde_json::to_string(&rows).map_err(|e| Error::from_reason(e.to_string()))
}

/// Checks a summary's `by` (`jsprof report`/`diff --by`, before and after reading their inputs) by the
/// one rule of what it accepts (jsprof-core `SummaryBy::parse`); `heap`: for a heap profile.
#[napi(catch_unwind)]
pub fn check_summary_by(by: String, heap: bool) -> Result<()> {
    SummaryBy::parse(&by, heap).map(drop).map_err(core_error)
}

/// Test hook: how many `package.json` files the process-wide attributor has asked the filesystem for.
#[napi]
pub fn attribution_reads() -> u32 {
    attributor().reads() as u32
}

/// Forgets every `package.json` read so far (after packages were installed or upgraded in place).
#[napi]
pub fn clear_attribution_cache() {
    attributor().clear();
}
