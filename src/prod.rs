//! Recording options for production profiling: per-request sample intervals and exact hand-off
//! between consecutive continuous-mode chunks.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::{core_error, Chunk, Recording};

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
    /// The trace as JSON text, built on the calling thread: for the few samples of one request or a
    /// short Profiler this is cheaper than a thread-pool hop (`build`) and than typed-array columns
    /// (one string, one `JSON.parse`; the members are already in WebIDL's order). The recording is
    /// empty afterwards.
    #[napi(catch_unwind)]
    pub fn build_json(&mut self, time_origin_us: f64) -> Result<String> {
        let recording = self.inner.take();
        serde_json::to_string(&recording.into_trace(time_origin_us))
            .map_err(|e| Error::from_reason(e.to_string()))
    }
}

#[napi]
impl Chunk {
    /// For many requests in one call, how many of the chunk's samples lie inside each one's
    /// `[begin, end]` µs intervals: `flat` holds every request's intervals back to back (begin0, end0,
    /// …), `ends[i]` is where request i's values end in `flat`. Lets the request profiler skip every
    /// request that has no sample in a chunk, without a native object per request.
    #[napi(catch_unwind)]
    pub fn count_in_many(&self, flat: Float64Array, ends: Uint32Array) -> Result<Uint32Array> {
        let counts = self.inner.count_in_many(&flat, &ends).map_err(core_error)?;
        Ok(Uint32Array::new(counts))
    }
}
