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
