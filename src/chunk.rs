//! `Chunk`: one harvest of the per-thread sampler, made from the columns the sampler packs from an
//! inspector reply ([`InspectorColumns`]) and shared by every `Recording` that keeps samples from it.

use std::sync::Arc;

use jsprof_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;
use crate::own_code::new_recording;
use crate::trace_columns::TraceStrings;
use crate::trace_file::TraceSidecar;

/// The columns the sampler packs from an inspector `Profiler.stop` reply it already holds as an
/// object (Node parsed it; going back to JSON text would cost the main thread as much again).
#[napi(object)]
pub struct InspectorColumns {
    pub ids: Int32Array,
    /// For each node, how many of `children` are its children (in node order).
    pub child_counts: Uint32Array,
    pub children: Int32Array,
    /// Indexes into `strings`.
    pub names: Uint32Array,
    pub urls: Uint32Array,
    pub lines: Int32Array,
    pub columns: Int32Array,
    pub strings: Vec<String>,
    pub samples: Int32Array,
    pub time_deltas: Float64Array,
    pub start_time: f64,
    pub end_time: f64,
    /// Each node's number of `positionTicks`, then their lines and ticks, back to back (in node order).
    pub tick_counts: Option<Uint32Array>,
    pub tick_lines: Option<Int32Array>,
    pub ticks: Option<Uint32Array>,
}

/// One harvest of the per-thread sampler, shared by every Recording that keeps samples from it.
#[napi]
pub struct Chunk {
    pub(crate) inner: Arc<core::Chunk>,
    /// Samples dropped because the sampler's own harvest windows held them.
    dropped_own: u32,
}

#[napi]
impl Chunk {
    /// A chunk from packed inspector columns; `intervalUs` is the interval V8 sampled at;
    /// `ownWindows`: `[from, to, from, to, …]` µs of the sampler's own harvests, whose samples are
    /// dropped (see `Chunk::drop_samples_within`); `contextRing`: the thread's context ring, which
    /// says what each request context's labels are now (jsprof-core label_recorder.rs).
    #[napi(factory, catch_unwind)]
    pub fn from_inspector(
        columns: InspectorColumns,
        interval_us: f64,
        own_windows: Option<Vec<f64>>,
        context_ring: Option<Uint32Array>,
    ) -> Result<Chunk> {
        let c = &columns;
        let columns = core::InspectorColumns {
            ids: &c.ids,
            child_counts: &c.child_counts,
            children: &c.children,
            names: &c.names,
            urls: &c.urls,
            lines: &c.lines,
            columns: &c.columns,
            strings: &c.strings,
            samples: &c.samples,
            time_deltas: &c.time_deltas,
            start_time: c.start_time,
            end_time: c.end_time,
            tick_counts: c.tick_counts.as_deref().unwrap_or_default(),
            tick_lines: c.tick_lines.as_deref().unwrap_or_default(),
            ticks: c.ticks.as_deref().unwrap_or_default(),
        };
        let own_windows = own_windows.unwrap_or_default();
        let (mut chunk, dropped) =
            core::Chunk::from_inspector(&columns, interval_us, &own_windows).map_err(core_error)?;
        // Each sample gets the label set and request context current on this thread at its time
        // (lib/labels.js).
        crate::labels::label_chunk(&mut chunk, context_ring.as_deref());
        crate::inlined_calls::add(&chunk.profile);
        let dropped_own = dropped as u32;
        Ok(Chunk {
            inner: Arc::new(chunk),
            dropped_own,
        })
    }

    #[napi(getter)]
    pub fn sample_count(&self) -> u32 {
        self.inner.profile.samples.len() as u32
    }

    /// How many of V8's samples were dropped as the sampler's own (see `ownWindows`).
    #[napi(getter)]
    pub fn dropped_own_samples(&self) -> u32 {
        self.dropped_own
    }

    /// The chunk's sample times (µs, V8's clock) in ascending order (V8 records a few samples out of
    /// time order). The engine reads them once per chunk, so each subscription can tell in JS, by a
    /// binary search, whether the chunk holds any of its samples.
    #[napi(catch_unwind)]
    pub fn sorted_sample_times(&self) -> Float64Array {
        Float64Array::new(self.inner.sorted_sample_times())
    }

    /// For many requests in one call, how many of the chunk's samples each one holds (`requests[i]`:
    /// the id of request i's own context, lib/labels.js). Lets the request profiler skip every
    /// request that has no sample in a chunk, without a native object per request.
    #[napi(catch_unwind)]
    pub fn count_in_requests(&self, requests: Uint32Array) -> Uint32Array {
        Uint32Array::new(self.inner.count_in_requests(&requests))
    }

    /// The trace of one subscription's window of this chunk, for a subscription whose whole window
    /// lies in it (its samples from `startUs`, after it when `startExclusive`, to `stopUs`, at
    /// `intervalUs`, at most `maxSamples`), written as `Recording.buildColumns` writes a trace, with
    /// `ints[7]` 1 when the window held more than `maxSamples` (its buffer filled): what a Recording
    /// would give, without one (a Profiler around a request: its native object, calls and finalizer
    /// are saved, docs/bench.md#building-a-small-trace).
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn build_window_columns(
        &self,
        strings: &mut TraceStrings,
        ints: Int32Array,
        floats: Float64Array,
        start_us: f64,
        stop_us: f64,
        interval_us: f64,
        max_samples: u32,
        start_exclusive: bool,
        time_origin_us: f64,
        clock: Option<TraceSidecar>,
    ) -> Result<String> {
        let mut recording = new_recording(start_us, interval_us, max_samples);
        recording.set_start_exclusive(start_exclusive);
        recording.stop_at(stop_us);
        let full = recording.add_chunk(&self.inner).became_full;
        let trace = recording.into_trace_clocked(time_origin_us, clock.map(|c| c.clock()));
        strings.write(trace, full, ints, floats)
    }

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
        self.inner = Arc::new(core::Chunk::empty(self.inner.interval_us));
    }
}
