//! `jsprof record`'s trace files, built in Rust as bytes ready to write (no JS objects for the
//! samples on the way): from a side file's chunk lines (`traceFromChunkLines`) or from a V8 CPU
//! profile (`traceFileFromCpuProfile`, `jsprof attach`'s). The formats: `jsprof_core::trace_file_json`.

use jsprof_core::{span_ms, trace_file_json, trace_from_lines, Extension, ProfilerTrace};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;
use crate::own_code::own_code;

/// The clock fields of a trace's `jsprof` member (see `jsprof_core::Extension`), as the recorder
/// knows them: the process, the thread (0: main), the Unix epoch (ms) of its time origin.
#[napi(object)]
pub struct TraceSidecar {
    pub pid: Option<u32>,
    pub thread_id: Option<u32>,
    pub time_origin: Option<f64>,
    /// A stall trace's stall (`watchStalls`), checked with the trace.
    pub stall: Option<StallSidecar>,
}

/// `jsprof.stall` as JS gives it (see `jsprof_core::Stall`).
#[napi(object)]
#[derive(Clone)]
pub struct StallSidecar {
    pub duration_ms: f64,
    pub ended: bool,
    pub stack: Option<Vec<String>>,
    pub stack_delay_ms: Option<f64>,
    pub start: f64,
    pub threshold_ms: f64,
}

impl TraceSidecar {
    pub(crate) fn clock(&self) -> Extension {
        Extension {
            stall: self.stall.as_ref().map(|s| jsprof_core::Stall {
                duration_ms: s.duration_ms,
                ended: s.ended,
                stack: s.stack.clone(),
                stack_delay_ms: s.stack_delay_ms,
                start: s.start,
                threshold_ms: s.threshold_ms,
            }),
            ..Extension::clock(self.pid, self.thread_id, self.time_origin)
        }
    }
}

/// A trace file's bytes and what `jsprof record` says about it.
#[napi(object)]
pub struct RecordedTrace {
    pub json: Buffer,
    pub samples: u32,
    pub duration_ms: f64,
}

/// The trace file of `trace` with `sidecar`'s clock in its `jsprof` member, and what `jsprof record`
/// says about it.
pub(crate) fn recorded(mut trace: ProfilerTrace, sidecar: &TraceSidecar) -> RecordedTrace {
    RecordedTrace {
        json: trace_file_json(&mut trace, &sidecar.clock()).into(),
        samples: trace.samples.len() as u32,
        duration_ms: span_ms(&trace),
    }
}

/// The trace file of a side file's chunk lines (torn lines skipped), all their samples at
/// `intervalUs`, jsprof-node's own code left out as in every trace it records.
#[napi(catch_unwind)]
pub fn trace_from_chunk_lines(
    lines: &[u8],
    interval_us: f64,
    time_origin_us: f64,
    sidecar: TraceSidecar,
) -> RecordedTrace {
    let text = String::from_utf8_lossy(lines);
    let (trace, _) = trace_from_lines(&text, interval_us, time_origin_us, own_code());
    recorded(trace, &sidecar)
}

/// The trace file of a V8 CPU profile given as JSON text (UTF-8 bytes), timestamps relative to
/// `timeOriginUs` (default: the profile's `startTime`): `jsprof attach`'s, written as `record`'s are.
#[napi(catch_unwind)]
pub fn trace_file_from_cpu_profile(
    json: &[u8],
    time_origin_us: Option<f64>,
    sidecar: TraceSidecar,
) -> Result<RecordedTrace> {
    let text = String::from_utf8_lossy(json);
    let origin = time_origin_us.filter(|t| t.is_finite());
    let trace = jsprof_core::trace_from_json(&text, origin, None).map_err(core_error)?;
    Ok(recorded(trace, &sidecar))
}
