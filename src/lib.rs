#![deny(clippy::all)]
//! The napi binding of jsprof-node: it only converts types between Node and `jsprof-core`.
//! Everything that decides what a trace contains lives in the core; the WebIDL behaviour lives in the
//! hand-written JS facade (`lib/`; `index.js` only gathers its public exports).
//!
//! Errors cross as `Error`s whose message starts with the JS constructor the facade rethrows
//! (`TypeError: …`, `SyntaxError: …`). Every export catches panics, so no Rust panic reaches Node.

mod analysis;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use jsprof_core::{self as core, ErrorKind, Marker, ProfilerTrace, SampleSink};
use napi::bindgen_prelude::*;
use napi_derive::napi;

mod export;
mod prod;
mod record;
mod signals;
mod sourcemap;
mod text;
mod trace_handle;

pub(crate) fn core_error(e: core::Error) -> Error {
    let constructor = match e.kind {
        ErrorKind::Syntax => "SyntaxError",
        ErrorKind::Type => "TypeError",
        ErrorKind::Range => "RangeError",
    };
    Error::new(Status::InvalidArg, format!("{constructor}: {}", e.message))
}

/// Runs `f`, turning a panic into a JS `Error` (for work that runs off the main thread, where
/// `#[napi(catch_unwind)]` does not reach).
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let detail = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::from_reason(format!(
            "jsprof-node internal error in {what}: {detail}"
        )))
    })
}

/// A trace in the shape that is cheapest to turn into JS objects: the frames and resources (strings)
/// as JSON text (`JSON.parse` is V8's fastest object factory for them), the stacks and the samples,
/// which are many and small, as columns the facade zips into `{ frameId, parentId? }` and
/// `{ timestamp, stackId?, marker? }` objects.
#[napi(object)]
pub struct TraceParts {
    /// `{"frames":[…],"resources":[…]}`
    pub tables: String,
    pub stack_frames: Uint32Array,
    /// -1 where the stack has no parent.
    pub stack_parents: Int32Array,
    pub timestamps: Float64Array,
    /// -1 where the sample has no stack.
    pub stack_ids: Int32Array,
    /// 0 none, 1 script, 2 gc, 3 other, 4 style, 5 layout, 6 paint.
    pub markers: Uint8Array,
}

/// [`TraceParts`] before the typed arrays exist: plain data that can be built off the main thread.
pub struct PlainParts {
    tables: String,
    stack_frames: Vec<u32>,
    stack_parents: Vec<i32>,
    samples: SampleColumns,
}

/// The samples as the columns of [`TraceParts`]; what `fromCpuProfile`'s one pass writes them into.
#[derive(Default)]
struct SampleColumns {
    timestamps: Vec<f64>,
    stack_ids: Vec<i32>,
    markers: Vec<u8>,
}

impl SampleSink for SampleColumns {
    fn reserve(&mut self, additional: usize) {
        self.timestamps.reserve_exact(additional);
        self.stack_ids.reserve_exact(additional);
        self.markers.reserve_exact(additional);
    }

    #[inline]
    fn push_leaf(&mut self, stack_id: Option<u32>, marker: Option<Marker>) {
        self.stack_ids.push(stack_id.map_or(-1, |id| id as i32));
        self.markers.push(Marker::code(marker));
    }

    #[inline]
    fn push_timestamp(&mut self, timestamp: f64) -> bool {
        let room = self.timestamps.len() < self.stack_ids.len();
        if room {
            self.timestamps.push(timestamp);
        }
        room
    }

    fn complete(&self) -> bool {
        self.timestamps.len() == self.stack_ids.len()
    }
}

impl PlainParts {
    /// The parts of a trace's tables (its samples, if any, are not looked at).
    fn of_tables(tables: &ProfilerTrace, samples: SampleColumns) -> Result<PlainParts> {
        #[derive(serde::Serialize)]
        struct Tables<'a> {
            frames: &'a [core::Frame],
            resources: &'a [String],
        }
        let json = serde_json::to_string(&Tables {
            frames: &tables.frames,
            resources: &tables.resources,
        })
        .map_err(|e| Error::from_reason(e.to_string()))?;
        Ok(PlainParts {
            tables: json,
            stack_frames: tables.stacks.iter().map(|s| s.frame_id).collect(),
            stack_parents: tables
                .stacks
                .iter()
                .map(|s| s.parent_id.map_or(-1, |p| p as i32))
                .collect(),
            samples,
        })
    }

    pub(crate) fn from_trace(trace: ProfilerTrace) -> Result<PlainParts> {
        let samples = SampleColumns::of_samples(&trace.samples);
        Self::of_tables(&trace, samples)
    }

    pub(crate) fn into_js(self) -> TraceParts {
        TraceParts {
            tables: self.tables,
            stack_frames: Uint32Array::new(self.stack_frames),
            stack_parents: Int32Array::new(self.stack_parents),
            timestamps: Float64Array::new(self.samples.timestamps),
            stack_ids: Int32Array::new(self.samples.stack_ids),
            markers: Uint8Array::new(self.samples.markers),
        }
    }
}

/// `fromCpuProfile` on JSON text given as UTF-8 bytes (a Buffer or typed array, a file's contents),
/// with timestamps relative to `timeOriginUs` (default: the profile's `startTime`). Invalid UTF-8 is
/// read as `Buffer#toString` would read it (U+FFFD for each bad sequence).
///
/// `hideOwnCode`: leave jsprof-node's own code out of the stacks (see [`set_own_code`]), for the
/// profiles jsprof-node records itself (`jsprof record`).
#[napi(catch_unwind)]
pub fn convert_cpu_profile(
    json: &[u8],
    time_origin_us: Option<f64>,
    hide_own_code: Option<bool>,
) -> Result<TraceParts> {
    // `from_utf8` checks ASCII a word at a time; the lossy reading is only for text that needs it.
    let text = match std::str::from_utf8(json) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(json),
    };
    let own = hide_own_code.unwrap_or(false).then(own_code).flatten();
    let (tables, samples) =
        core::trace_from_json_into::<SampleColumns>(&text, time_origin_us, own.as_deref())
            .map_err(core_error)?;
    let parts = PlainParts::of_tables(&tables, samples)?;
    Ok(parts.into_js())
}

/// Strings up to this many UTF-16 units are copied into [`TEXT`], kept for the next call.
const TEXT_REUSE_MAX_UNITS: usize = 4 << 20;

thread_local! {
    /// The UTF-8 copy of `fromCpuProfile`'s text, kept between calls: fresh memory for each call costs
    /// a page fault per 4 KB (docs/bench.md#hand-over). At most 3 × 4 Mi units + 1 (12 MiB), and
    /// only as much of it is ever touched as the largest text needed.
    static TEXT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `fromCpuProfile` on JSON text given as a JS string: copied once as UTF-8 (a lone surrogate becomes
/// U+FFFD, as `Buffer.from(text)` makes it), with no JS Buffer in between: the facade would otherwise
/// scan the string for its UTF-8 length and copy it into fresh memory.
#[napi(catch_unwind)]
pub fn convert_cpu_profile_text(
    text: napi::JsString,
    time_origin_us: Option<f64>,
    hide_own_code: Option<bool>,
) -> Result<TraceParts> {
    let units = text.utf16_len()?;
    if units > TEXT_REUSE_MAX_UNITS {
        return convert_cpu_profile(text.into_utf8()?.as_slice(), time_origin_us, hide_own_code);
    }
    TEXT.with(|cell| {
        let mut buffer = cell.borrow_mut();
        // A UTF-16 unit is at most 3 bytes of UTF-8 (a surrogate pair, two units, is 4), plus the NUL
        // napi writes.
        let capacity = units * 3 + 1;
        buffer.clear();
        buffer.reserve(capacity);
        let value = napi::JsValue::value(&text);
        let mut written = 0usize;
        // SAFETY: the buffer has room for `capacity` bytes; napi writes at most that many, and says
        // how many (without the NUL) it wrote.
        let status = unsafe {
            napi::sys::napi_get_value_string_utf8(
                value.env,
                value.value,
                buffer.as_mut_ptr().cast(),
                capacity,
                &mut written,
            )
        };
        if status != napi::sys::Status::napi_ok || written >= capacity {
            return Err(Error::from_reason(
                "jsprof-node: could not read the profile's text",
            ));
        }
        unsafe { buffer.set_len(written) };
        convert_cpu_profile(&buffer, time_origin_us, hide_own_code)
    })
}

/// jsprof-node's own code (URL and path prefixes of its files), set once by the facade at load.
static OWN_CODE: std::sync::RwLock<Option<Arc<core::OwnCode>>> = std::sync::RwLock::new(None);

/// Tells the binding where jsprof-node's own code lives: the traces it records leave those frames
/// (and the builtins and internals they call) out, so their time goes to the caller, as in Chrome.
#[napi(catch_unwind)]
pub fn set_own_code(prefixes: Vec<String>) {
    let own = Arc::new(core::OwnCode::new(prefixes));
    *OWN_CODE.write().unwrap_or_else(|e| e.into_inner()) = Some(own);
}

fn own_code() -> Option<Arc<core::OwnCode>> {
    OWN_CODE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

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
}

/// One harvest of the per-thread sampler, shared by every Recording that keeps samples from it.
#[napi]
pub struct Chunk {
    inner: Arc<core::Chunk>,
    /// Samples dropped because the sampler's own harvest windows held them.
    dropped_own: u32,
}

#[napi]
impl Chunk {
    /// A chunk from packed inspector columns; `intervalUs` is the interval V8 sampled at;
    /// `ownWindows`: `[from, to, from, to, …]` µs of the sampler's own harvests, whose samples are
    /// dropped (see `Chunk::drop_samples_within`).
    #[napi(factory, catch_unwind)]
    pub fn from_inspector(
        columns: InspectorColumns,
        interval_us: f64,
        own_windows: Option<Vec<f64>>,
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
        };
        let own_windows = own_windows.unwrap_or_default();
        let (chunk, dropped) =
            core::Chunk::from_inspector(&columns, interval_us, &own_windows).map_err(core_error)?;
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
}

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
        let mut inner = core::Recording::new(start_us, interval_us, max_samples);
        if let Some(own) = own_code() {
            inner.hide_own_code(own);
        }
        Recording { inner }
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
    /// afterwards, so what it held is released as soon as the trace is built.
    #[napi(ts_return_type = "Promise<TraceParts>")]
    pub fn build(&mut self, time_origin_us: f64) -> AsyncTask<BuildTrace> {
        let recording = self.inner.take();
        AsyncTask::new(BuildTrace {
            recording,
            time_origin_us,
        })
    }
}

pub struct BuildTrace {
    recording: core::Recording,
    time_origin_us: f64,
}

impl Task for BuildTrace {
    type Output = PlainParts;
    type JsValue = TraceParts;

    fn compute(&mut self) -> Result<PlainParts> {
        guarded("building a trace", || {
            let recording = self.recording.take();
            PlainParts::from_trace(recording.into_trace(self.time_origin_us))
        })
    }

    fn resolve(&mut self, _env: Env, output: PlainParts) -> Result<TraceParts> {
        Ok(output.into_js())
    }
}
