//! Recording options for production profiling: per-request sample intervals and exact hand-off
//! between consecutive continuous-mode chunks.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::{core_error, Recording};

#[napi]
impl Recording {
    /// Keeps only samples inside the given `[begin, end]` µs intervals (flat: begin0, end0, …), e.g. the
    /// times a request's own code ran. Drops samples already kept outside them.
    #[napi(catch_unwind)]
    pub fn keep_intervals(&mut self, flat: Float64Array) -> Result<()> {
        self.inner.keep_intervals(&flat).map_err(core_error)
    }

    /// A sample exactly at the start time belongs to the recording this one takes over from.
    #[napi(catch_unwind)]
    pub fn set_start_exclusive(&mut self, exclusive: bool) {
        self.inner.set_start_exclusive(exclusive);
    }
}

#[napi]
impl Recording {
    /// Builds the trace on the calling thread. For the few samples of one request this is cheaper than
    /// a thread-pool hop (`build`); the recording is empty afterwards.
    #[napi(catch_unwind)]
    pub fn build_sync(&mut self, time_origin_us: f64) -> Result<crate::TraceParts> {
        let recording = std::mem::replace(&mut self.inner, jsprof_core::Recording::new(0.0, 1.0, 0));
        Ok(crate::PlainParts::from_trace(recording.build(time_origin_us))?.into_js())
    }
}
