//! `jsprof record`'s files (see `jsprof_core::record_file`): a harvested chunk as a side-file line, and
//! the trace file built in Rust, bytes ready to write (no JS objects for the samples on the way).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use jsprof_core::{span_ms, trace_file_json, trace_from_lines, Sidecar};

use crate::{own_code, Chunk, Recording};

/// The `jsprof` member of a recorded trace (see `jsprof_core::record_file::Sidecar`).
#[napi(object)]
pub struct TraceSidecar {
    pub pid: Option<u32>,
    pub thread_id: Option<u32>,
    pub time_origin: Option<f64>,
}

/// A trace file's bytes and what `jsprof record` says about it.
#[napi(object)]
pub struct RecordedTrace {
    pub json: Buffer,
    pub samples: u32,
    pub duration_ms: f64,
}

fn recorded(trace: &jsprof_core::ProfilerTrace, sidecar: &TraceSidecar) -> RecordedTrace {
    let sidecar = Sidecar::new(sidecar.pid, sidecar.thread_id, sidecar.time_origin);
    RecordedTrace {
        json: trace_file_json(trace, &sidecar).into(),
        samples: trace.samples.len() as u32,
        duration_ms: span_ms(trace),
    }
}

#[napi]
impl Chunk {
    /// The chunk as a side-file line, newline included.
    #[napi(catch_unwind)]
    pub fn to_line(&self) -> Buffer {
        let mut line = self.inner.to_line().into_bytes();
        line.push(b'\n');
        line.into()
    }

    /// Lets go of the chunk's samples and call tree once every subscription had it (the Recordings
    /// that keep some hold their own reference): V8 knows nothing of this native memory, so without
    /// it the chunk would live until the small JS object around it happens to be collected — in a
    /// long `jsprof record` of an app that allocates little, hundreds of MB an hour. The chunk is
    /// empty afterwards.
    #[napi]
    pub fn release(&mut self) {
        self.inner = std::sync::Arc::new(jsprof_core::Chunk::empty(self.inner.interval_us));
    }
}

#[napi]
impl Recording {
    /// The trace file of the kept samples (timestamps relative to `timeOriginUs`, V8's clock), built on
    /// the calling thread: `jsprof record` writes it inside 'exit', where no other turn comes. The
    /// recording is empty afterwards.
    #[napi(catch_unwind)]
    pub fn build_file(&mut self, time_origin_us: f64, sidecar: TraceSidecar) -> RecordedTrace {
        let recording = self.inner.take();
        recorded(&recording.into_trace(time_origin_us), &sidecar)
    }

    /// Converts the samples as each chunk comes and lets the chunk go (see
    /// `jsprof_core::Recording::stream_into_trace`): `jsprof record`'s recording, hours long, holds the
    /// trace's tables and a small sample each instead of every harvest's call tree. Call it before
    /// the first chunk; the trace's timestamps count from `timeOriginUs`.
    #[napi]
    pub fn stream_into_trace(&mut self, time_origin_us: f64) {
        self.inner.stream_into_trace(time_origin_us);
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
    recorded(&trace, &sidecar)
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
    let trace = jsprof_core::trace_from_json(&text, origin, None).map_err(crate::core_error)?;
    Ok(recorded(&trace, &sidecar))
}
