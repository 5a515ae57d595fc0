//! `jsprof record`'s files (see `jsprof_core::record_file`): a harvested chunk as a side-file line, and
//! the trace file built in Rust, bytes ready to write (no JS objects for the samples on the way).

use napi::bindgen_prelude::*;
use napi_derive::napi;

use jsprof_core::record_file::{self, Sidecar};

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
    let sidecar = Sidecar {
        pid: sidecar.pid,
        thread_id: sidecar.thread_id,
        time_origin: sidecar.time_origin.filter(|t| t.is_finite()),
    };
    RecordedTrace {
        json: record_file::trace_file_json(trace, &sidecar).into(),
        samples: trace.samples.len() as u32,
        duration_ms: record_file::span_ms(trace),
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
}

#[napi]
impl Recording {
    /// The trace file of the kept samples (timestamps relative to `timeOriginUs`, V8's clock), built on
    /// the calling thread: `jsprof record` writes it inside 'exit', where no other turn comes. The
    /// recording is empty afterwards.
    #[napi(catch_unwind)]
    pub fn build_file(&mut self, time_origin_us: f64, sidecar: TraceSidecar) -> RecordedTrace {
        let recording = std::mem::replace(&mut self.inner, jsprof_core::Recording::new(0.0, 1.0, 0));
        recorded(&recording.build(time_origin_us), &sidecar)
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
    let (mut recording, _) = record_file::recording_from_lines(&text, interval_us);
    if let Some(own) = own_code() {
        recording.hide_own_code(own);
    }
    recorded(&recording.build(time_origin_us), &sidecar)
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
    let profile = jsprof_core::Profile::from_json(&text).map_err(crate::core_error)?;
    let origin = time_origin_us
        .filter(|t| t.is_finite())
        .unwrap_or(profile.start_time);
    Ok(recorded(
        &jsprof_core::trace_from_profile(&profile, origin),
        &sidecar,
    ))
}
