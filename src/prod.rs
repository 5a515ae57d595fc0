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
    /// Builds the trace on the calling thread. For the few samples of one request this is cheaper than
    /// a thread-pool hop (`build`); the recording is empty afterwards.
    #[napi(catch_unwind)]
    pub fn build_sync(&mut self, time_origin_us: f64) -> Result<crate::TraceParts> {
        let recording = std::mem::replace(&mut self.inner, jsprof_core::Recording::new(0.0, 1.0, 0));
        Ok(crate::PlainParts::from_trace(recording.build(time_origin_us))?.into_js())
    }
}

#[napi]
impl Chunk {
    /// How many of the chunk's samples lie inside the given `[begin, end]` µs intervals (flat: begin0,
    /// end0, …) — lets the request profiler skip every request that has no sample in a chunk.
    #[napi(catch_unwind)]
    pub fn count_in(&self, flat: Float64Array) -> Result<u32> {
        if !flat.len().is_multiple_of(2) {
            return Err(core_error(jsprof_core::Error::invalid(
                "intervals need (begin, end) pairs",
            )));
        }
        Ok(count_in(&self.inner.profile.samples, &flat))
    }
}

#[napi]
impl Chunk {
    /// `countIn` for many requests in one call: `flat` holds every request's intervals back to back,
    /// `ends[i]` is where request i's values end in `flat`. Returns each request's count.
    #[napi(catch_unwind)]
    pub fn count_in_many(&self, flat: Float64Array, ends: Uint32Array) -> Result<Uint32Array> {
        let mut counts = Vec::with_capacity(ends.len());
        let mut from = 0usize;
        for &end in ends.iter() {
            let end = end as usize;
            if end < from || end > flat.len() || !(end - from).is_multiple_of(2) {
                return Err(core_error(jsprof_core::Error::invalid(
                    "ends must cut flat into (begin, end) pairs",
                )));
            }
            counts.push(count_in(&self.inner.profile.samples, &flat[from..end]));
            from = end;
        }
        Ok(Uint32Array::new(counts))
    }
}

/// How many of `samples` lie inside the `[begin, end]` pairs of `flat` (even length).
fn count_in(samples: &[jsprof_core::cpuprofile::Sample], flat: &[f64]) -> u32 {
    let mut pairs: Vec<(f64, f64)> = flat
        .chunks_exact(2)
        .map(|p| (p[0], p[1]))
        .filter(|p| p.1 >= p.0)
        .collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    // V8's samples are in time order but for rare small steps back (negative time deltas): search
    // with a margin, then test each sample of the window.
    const MARGIN_US: f64 = 1_000.0;
    let mut count = 0u32;
    for (begin, end) in pairs {
        let from = samples.partition_point(|s| s.time < begin - MARGIN_US);
        count += samples[from..]
            .iter()
            .take_while(|s| s.time <= end + MARGIN_US)
            .filter(|s| s.time >= begin && s.time <= end)
            .count() as u32;
    }
    count
}
