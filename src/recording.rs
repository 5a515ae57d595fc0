//! `Recording`: what one Profiler keeps of the shared chunks (its window, its interval, its buffer
//! limit), and the ways its trace is built: off the main thread as [`TraceParts`] (`build`), on it as
//! numbers over the thread's string table (`buildColumns`), as JSON text (`buildJson`: a stall's trace,
//! which goes to a file) or as `jsprof record`'s trace file (`buildFile`).

use jsprof_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::chunk::Chunk;
use crate::guarded;
use crate::own_code::new_recording;
use crate::trace_columns::TraceStrings;
use crate::trace_file::{recorded, RecordedTrace, TraceSidecar};
use crate::trace_parts::{PlainParts, TraceParts};

/// What one Profiler keeps: its window, its interval, its buffer limit, over shared chunks.
#[napi]
pub struct Recording {
    inner: core::Recording,
}

#[napi(object)]
pub struct Added {
    pub accepted: u32,
    pub became_full: bool,
}

#[napi]
impl Recording {
    /// `startUs` on V8's clock (µs); `maxSamples` is the spec's `maxBufferSize`.
    #[napi(constructor)]
    pub fn new(start_us: f64, interval_us: f64, max_samples: u32) -> Self {
        Recording {
            inner: new_recording(start_us, interval_us, max_samples),
        }
    }

    #[napi(catch_unwind)]
    pub fn add_chunk(&mut self, chunk: &Chunk) -> Added {
        let added = self.inner.add_chunk(&chunk.inner);
        Added {
            accepted: added.accepted as u32,
            became_full: added.became_full,
        }
    }

    #[napi]
    pub fn stop_at(&mut self, stop_us: f64) {
        self.inner.stop_at(stop_us);
    }

    #[napi(getter)]
    pub fn sample_count(&self) -> u32 {
        self.inner.sample_count() as u32
    }

    #[napi(getter)]
    pub fn is_full(&self) -> bool {
        self.inner.is_full()
    }

    /// Builds the trace off the main thread. The recording hands its samples to the task and is empty
    /// afterwards, so what it held is released as soon as the trace is built. With `clock`, the trace
    /// has a `jsprof` member: the clock and what weighing its samples needs (see
    /// `jsprof_core::Recording::into_trace_with`); without, it is a plain spec trace (a `Profiler`'s).
    #[napi(ts_return_type = "Promise<TraceParts>")]
    pub fn build(&mut self, time_origin_us: f64, clock: Option<TraceSidecar>) -> AsyncTask<BuildTrace> {
        let recording = self.inner.take();
        AsyncTask::new(BuildTrace {
            recording,
            time_origin_us,
            clock: clock.map(|c| c.clock()),
        })
    }

    /// Keeps only the samples of request `request` (the id of its own context, lib/labels.js: its own
    /// code, what it started, and the contexts its code entered). Drops samples already kept of others.
    #[napi(catch_unwind)]
    pub fn keep_request(&mut self, request: u32) {
        self.inner.keep_request(request);
    }

    /// Gives the kept samples taken in a request context the labels that context has now in the
    /// thread's context ring `ring` (lib/labels.js): called just before the trace is built, so that
    /// a request that learned its route after some of its samples were harvested says it on all of
    /// them (`jsprof_core::Recording::relabel`).
    #[napi(catch_unwind)]
    pub fn relabel(&mut self, ring: Uint32Array) {
        crate::labels::relabel(&mut self.inner, &ring);
    }

    /// A sample exactly at the start time belongs to the recording this one takes over from.
    #[napi(catch_unwind)]
    pub fn set_start_exclusive(&mut self, exclusive: bool) {
        self.inner.set_start_exclusive(exclusive);
    }

    /// The trace built on the calling thread, written as numbers into `ints` and `floats` over the
    /// thread's string table `strings` (`TraceStrings::write`; layout: `jsprof_core::write_columns`):
    /// for the few samples of one request or a short Profiler this is cheaper than a thread-pool hop
    /// (`build`) and than JSON text (docs/bench.md#building-a-small-trace). The recording is empty
    /// afterwards. `clock` as for `build`.
    #[napi(catch_unwind)]
    pub fn build_columns(
        &mut self,
        strings: &mut TraceStrings,
        ints: Int32Array,
        floats: Float64Array,
        time_origin_us: f64,
        clock: Option<TraceSidecar>,
    ) -> Result<String> {
        let trace = self
            .inner
            .take()
            .into_trace_clocked(time_origin_us, clock.map(|c| c.clock()));
        strings.write(trace, false, ints, floats)
    }

    /// The trace as JSON text, built on the calling thread (a stall's trace, written to a file by the
    /// watcher thread). The recording is empty afterwards. `clock` as for `build`.
    #[napi(catch_unwind)]
    pub fn build_json(&mut self, time_origin_us: f64, clock: Option<TraceSidecar>) -> Result<String> {
        let trace = self
            .inner
            .take()
            .into_trace_clocked(time_origin_us, clock.map(|c| c.clock()));
        serde_json::to_string(&trace).map_err(|e| Error::from_reason(e.to_string()))
    }

    /// The trace file of the kept samples (timestamps relative to `timeOriginUs`, V8's clock), built on
    /// the calling thread: `jsprof record` writes it inside 'exit', where no other turn comes. The
    /// recording is empty afterwards.
    #[napi(catch_unwind)]
    pub fn build_file(&mut self, time_origin_us: f64, sidecar: TraceSidecar) -> RecordedTrace {
        let recording = self.inner.take();
        recorded(
            recording.into_trace_with(time_origin_us, sidecar.clock()),
            &sidecar,
        )
    }

    /// Converts the samples as each chunk comes and lets the chunk go (see
    /// `jsprof_core::Recording::stream_into_trace`): `jsprof record`'s recording, hours long, holds the
    /// trace's tables and a small sample each instead of every harvest's call tree. Call it before
    /// the first chunk; the trace's timestamps count from `timeOriginUs`.
    #[napi]
    pub fn stream_into_trace(&mut self, time_origin_us: f64) {
        self.inner.stream_into_trace(time_origin_us);
    }

    /// Gives the samples of code V8 inlined into a function the inlined function's frame, as V8's
    /// per-line ticks say, by the calls this thread's chunks showed (`gatherInlinedCalls`, which this
    /// starts) and the scripts' files (`jsprof_core::Recording::split_inlined`).
    #[napi]
    pub fn split_inlined(&mut self) {
        let sources: std::sync::Arc<dyn core::ScriptSources> = std::sync::Arc::new(core::SourceFiles);
        self.inner
            .split_inlined(crate::inlined_calls::thread_graph(), sources);
    }
}

pub struct BuildTrace {
    recording: core::Recording,
    time_origin_us: f64,
    clock: Option<core::Extension>,
}

impl Task for BuildTrace {
    type Output = PlainParts;
    type JsValue = TraceParts;

    fn compute(&mut self) -> Result<PlainParts> {
        guarded("building a trace", || {
            PlainParts::from_trace(
                self.recording
                    .take()
                    .into_trace_clocked(self.time_origin_us, self.clock.take()),
            )
        })
    }

    fn resolve(&mut self, _env: Env, output: PlainParts) -> Result<TraceParts> {
        Ok(output.into_js())
    }
}
