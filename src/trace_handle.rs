//! A trace that stays in Rust: `readProfileFile(bytes)` reads a file the CLI was given (a trace or a
//! V8 CPU profile) without making a JS object per sample, and every exporter and `summarize` accept the
//! handle where they take a trace ([`TraceInput`]). This is how `jsprof report`/`convert` read a
//! `.cpuprofile` of ten million samples in a fraction of the memory the JS way (JSON.parse, a sample
//! object each, JSON.stringify back for Rust) took (docs/bench.md#large-inputs-through-the-cli); past
//! V8's longest string that way cannot work at all.

use std::sync::Arc;

use jsprof_core::{self as core, ProfilerTrace};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde::{Deserialize, Serialize};

use crate::core_error;

#[napi]
pub struct TraceHandle {
    pub(crate) inner: Arc<ProfilerTrace>,
}

/// The tables of a trace, without its samples (what source maps rewrite).
#[derive(Serialize, Deserialize)]
struct Tables {
    resources: Vec<String>,
    frames: Vec<core::Frame>,
    stacks: Vec<core::Stack>,
}

#[napi(object)]
pub struct TraceTiming {
    pub samples: u32,
    /// Latest minus earliest sample time, ms.
    pub duration_ms: f64,
    /// The trace's interval, ms: its `jsprof.sampleInterval`, else the median gap between samples in
    /// time order (0 with fewer than 2).
    pub interval_ms: f64,
    /// The time the samples stand for, ms (the sum of their weights).
    pub sampled_ms: f64,
}

/// What `readProfileFile` read: the trace, its format, and a trace file's `jsprof` member.
#[napi(object, object_from_js = false)]
pub struct ProfileFile<'env> {
    pub trace: ClassInstance<'env, TraceHandle>,
    #[napi(ts_type = "'trace' | 'cpuprofile'")]
    pub format: String,
    /// A trace file's `jsprof` member (`jsprof record`'s, a request profile's …) as JSON text, checked
    /// with the trace (`jsprof_core::Extension`); absent when the file has none.
    pub jsprof: Option<String>,
}

/// A profile file's bytes (UTF-8, read as `Buffer#toString` reads them) as the CLI reads them, in one
/// call: a ProfilerTrace (with `jsprof record`'s sidecar) or a V8 CPU profile (by `fromCpuProfile`'s
/// rules, times from its start), told apart by content and validated by the core. An error's message
/// is what follows the file's name in the CLI's one line (`is not valid JSON (…)`, `is not a valid
/// ProfilerTrace: …`): a `SyntaxError` for text that is not JSON, a `TypeError` otherwise.
#[napi(catch_unwind)]
pub fn read_profile_file<'env>(env: &'env Env, bytes: &[u8]) -> Result<ProfileFile<'env>> {
    let text = String::from_utf8_lossy(bytes);
    let file = core::read_profile_file(&text).map_err(core_error)?;
    drop(text);
    let format = match file.format {
        core::FileFormat::Trace => "trace",
        core::FileFormat::CpuProfile => "cpuprofile",
    };
    let jsprof = match &file.trace.jsprof {
        Some(e) => Some(serde_json::to_string(e).map_err(|e| Error::from_reason(e.to_string()))?),
        None => None,
    };
    let trace = TraceHandle {
        inner: Arc::new(file.trace),
    }
    .into_instance(env)?;
    Ok(ProfileFile {
        trace,
        format: format.to_owned(),
        jsprof,
    })
}

#[napi]
impl TraceHandle {
    /// A ProfilerTrace given as JSON text (UTF-8 bytes), parsed and validated as the exporters do.
    #[napi(factory, catch_unwind)]
    pub fn from_trace_json(bytes: &[u8]) -> Result<TraceHandle> {
        let text = String::from_utf8_lossy(bytes);
        let trace = ProfilerTrace::from_json(&text).map_err(core_error)?;
        Ok(TraceHandle {
            inner: Arc::new(trace),
        })
    }

    #[napi(getter)]
    pub fn sample_count(&self) -> u32 {
        self.inner.samples.len() as u32
    }

    /// How many samples, over how long, at which interval (what `jsprof report` prints first).
    #[napi(catch_unwind)]
    pub fn timing(&self) -> TraceTiming {
        let timing = self.inner.timing();
        TraceTiming {
            samples: timing.samples as u32,
            duration_ms: timing.duration_ms,
            interval_ms: timing.interval_ms,
            sampled_ms: timing.sampled_ms,
        }
    }

    /// `{ resources, frames, stacks }` as JSON text: the trace without its samples.
    #[napi(catch_unwind)]
    pub fn tables_json(&self) -> Result<String> {
        let t = &self.inner;
        serde_json::to_string(&Tables {
            resources: t.resources.clone(),
            frames: t.frames.clone(),
            stacks: t.stacks.clone(),
        })
        .map_err(|e| Error::from_reason(e.to_string()))
    }

    /// The same samples over new tables (`{ resources, frames, stacks }` JSON, from source maps),
    /// each sample's stack renumbered through `stackMap` (old id -> new id). The samples move to the
    /// new handle (this one keeps its tables and no samples): ten million of them are 240 MB, not to be
    /// held twice. When nothing changed (no frame had a map), both handles share the trace.
    #[napi(catch_unwind)]
    pub fn with_tables(&mut self, tables_json: String, stack_map: Uint32Array) -> Result<TraceHandle> {
        let tables: Tables = serde_json::from_str(&tables_json)
            .map_err(|e| core_error(core::Error::invalid(format!("malformed tables: {e}"))))?;
        let tables = ProfilerTrace {
            resources: tables.resources,
            frames: tables.frames,
            stacks: tables.stacks,
            samples: Vec::new(),
            jsprof: None,
        };
        let inner = ProfilerTrace::with_tables(&mut self.inner, tables, &stack_map).map_err(core_error)?;
        Ok(TraceHandle { inner })
    }

    /// Frees the memory of `bytes` (an input this handle was read from) now, instead of whenever V8
    /// collects it: the buffer is detached (its length becomes 0). For the CLI, which reads files of
    /// up to 512 MiB and has no further use for them.
    #[napi(catch_unwind)]
    pub fn release_input(bytes: ArrayBuffer) {
        // A buffer V8 cannot detach (shared, or Wasm memory) is left to the GC.
        let _ = bytes.detach();
    }
}

/// A trace given as JSON text (parsed and validated here) or as a [`TraceHandle`] (validated when
/// it was made): the exporters and `summarize` take either.
pub(crate) type TraceInput<'a> = Either<String, &'a TraceHandle>;

pub(crate) fn trace_of(input: TraceInput<'_>) -> Result<Arc<ProfilerTrace>> {
    match input {
        Either::A(json) => Ok(Arc::new(ProfilerTrace::from_json(&json).map_err(core_error)?)),
        Either::B(handle) => Ok(handle.inner.clone()),
    }
}
