#![deny(clippy::all)]
//! The napi binding of jsprof-node: it only converts types between Node and `jsprof-core`.
//! Everything that decides what a trace contains lives in the core; the WebIDL behaviour lives in the
//! hand-written JS facade (`lib/`; `index.js` only gathers its public exports).
//!
//! One file per class JS sees, and one per group of free functions, named after what it exposes:
//!
//! - `chunk.rs`: `Chunk` (one harvest of the sampler) and the `InspectorColumns` it is made from.
//! - `recording.rs`: `Recording` (what one Profiler keeps of the chunks).
//! - `trace_handle.rs`: `TraceHandle` (a trace that stays in Rust) and `readProfileFile`.
//! - `trace_parts.rs`: `TraceParts`, the shape a trace crosses in when JS needs its objects.
//! - `cpu_profile.rs`: `convertCpuProfile`, `convertCpuProfileText` (`fromCpuProfile`).
//! - `own_code.rs`: `setOwnCode` (jsprof-node's own frames, left out of what it records), and the
//!   core recording every `Recording` and chunk window starts from, those frames hidden.
//! - `trace_file.rs`: `traceFromChunkLines`, `traceFileFromCpuProfile` (`jsprof record`'s trace files).
//! - `heap.rs`: heap profiles (V8's converted and written back, summaries, exporters, the CLI's reader).
//! - `export.rs`: the exporters; `analysis.rs`: `attributeResource`, `summarizeTrace`;
//!   `sourcemap.rs`: `resolveSourceMaps`; `text.rs`: `visibleText`, `markupText`;
//!   `inlined_calls.rs`: each thread's calls for inlined functions' samples (`gatherInlinedCalls`);
//!   `inlining.rs`: the process-wide count of the heap sampler's consumers that keep V8's inlining off;
//!   `signals.rs`: the native signal watcher of `jsprof record` and `jsprof-node/register`;
//!   `stall_watcher.rs`: the event-loop stall watcher of `watchStalls`; `labels.rs`: the label-set
//!   registry and each thread's timeline of label changes (`internLabels`, `labelTransitions`).
//!
//! Errors cross as `Error`s whose message starts with the JS constructor the facade rethrows
//! (`TypeError: …`, `SyntaxError: …`, `RangeError: …`: [`core_error`], turned back into the
//! constructor by `lib/native.js`). Every export catches panics, so no Rust panic reaches Node.

use std::panic::{catch_unwind, AssertUnwindSafe};

use jsprof_core::ErrorKind;
use napi::bindgen_prelude::*;

mod analysis;
mod chunk;
mod cpu_profile;
mod export;
mod heap;
mod inlined_calls;
mod inlining;
mod labels;
mod map_thread;
mod own_code;
mod recording;
mod signals;
mod sourcemap;
mod stall_watcher;
mod text;
mod trace_columns;
mod trace_file;
mod trace_handle;
mod trace_parts;

/// A core error as the JS error the facade rethrows: `<constructor>: <message>`.
pub(crate) fn core_error(e: jsprof_core::Error) -> Error {
    let constructor = match e.kind {
        ErrorKind::Syntax => "SyntaxError",
        ErrorKind::Type => "TypeError",
        ErrorKind::Range => "RangeError",
    };
    Error::new(Status::InvalidArg, format!("{constructor}: {}", e.message))
}

/// Runs `f`, turning a panic into a JS `Error` (for work that runs off the main thread, where
/// `#[napi(catch_unwind)]` does not reach).
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let detail = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::from_reason(format!(
            "jsprof-node internal error in {what}: {detail}"
        )))
    })
}
