//! `TraceStrings`: one JS thread's table of the strings its traces' columns refer to (see
//! `jsprof_core::write_columns`); the facade (lib/trace.js) keeps one and the JS strings by id. Every
//! small trace built on the main thread is written through it (`Recording.buildColumns`,
//! `Chunk.buildWindowColumns`).

use jsprof_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The ids of the frame names and URLs this thread's facade already holds as JS strings.
#[napi]
pub struct TraceStrings {
    inner: core::TraceStrings,
    /// A trace built but not written (the caller's buffers were too small), and whether its buffer
    /// filled: the caller grows them and calls `writePending`.
    pending: Option<(core::ProfilerTrace, bool)>,
}

impl Default for TraceStrings {
    fn default() -> Self {
        Self::new()
    }
}

#[napi]
impl TraceStrings {
    #[napi(constructor)]
    pub fn new() -> Self {
        TraceStrings {
            inner: core::TraceStrings::new(),
            pending: None,
        }
    }

    /// Writes the trace kept by the last call whose buffers were too small (see [`TraceStrings::write`]).
    #[napi(catch_unwind)]
    pub fn write_pending(&mut self, ints: Int32Array, floats: Float64Array) -> Result<String> {
        match self.pending.take() {
            Some((trace, full)) => self.write(trace, full, ints, floats),
            None => Err(Error::from_reason("writePending: no trace is pending")),
        }
    }
}

impl TraceStrings {
    /// Writes `trace` into the caller's `ints` and `floats` (`ints[0]` says on entry how many strings
    /// the caller holds; `ints[7]` is set to 1 when `full`: the trace's buffer filled) and returns the
    /// new strings (and the `jsprof` member's JSON) as one text: always a string, empty when there is
    /// no new string or only empty ones (a frame named `""` is a string like any other). When the
    /// buffers are too small, writes `-1` and the sizes needed into `ints[0..3]`, returns an empty
    /// text and keeps the trace for `writePending`.
    pub(crate) fn write(
        &mut self,
        trace: core::ProfilerTrace,
        full: bool,
        mut ints: Int32Array,
        mut floats: Float64Array,
    ) -> Result<String> {
        // SAFETY: the typed arrays are the caller's, on this (the JS) thread, for this call only; no
        // JS runs while they are written.
        let (ints, floats) = unsafe { (ints.as_mut(), floats.as_mut()) };
        if ints.len() < core::COLUMNS_HEADER {
            return Err(Error::from_reason(
                "trace columns: the ints buffer holds no header",
            ));
        }
        let held = usize::try_from(ints[0]).unwrap_or(usize::MAX);
        match core::write_columns(&trace, &mut self.inner, held, ints, floats) {
            Ok(text) => {
                ints[7] = i32::from(full);
                Ok(text)
            }
            Err((need_ints, need_floats)) => {
                let too_large = |_| Error::from_reason("trace columns: the trace is too large");
                ints[1] = i32::try_from(need_ints).map_err(too_large)?;
                ints[2] = i32::try_from(need_floats).map_err(too_large)?;
                ints[0] = -1;
                self.pending = Some((trace, full));
                Ok(String::new())
            }
        }
    }
}
