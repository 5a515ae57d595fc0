//! The pure-Rust core of jsprof-node. Nothing here knows about Node or napi: the binding crate converts
//! types, and everything that decides what a trace contains lives here, covered by `cargo test`.
//!
//! The modules are private and depend on each other one way, lowest first:
//!
//! - `error`, `interner`, `text`, `json_text`, `files`: what every layer uses.
//! - `trace`: the spec's `ProfilerTrace`, its builder, its validation (`trace/validate.rs`) and the
//!   weight of a sample (`trace/weights.rs`).
//! - `v8`: the V8 CPU profile format in both directions (read, inspector columns, write), with the one
//!   validator of a profile. It knows nothing of traces.
//! - `convert`: V8 -> trace (the spec's rules, the own-code rule, the one pass from JSON text).
//! - `intervals`, `recording`, `record_file`, `profile_file`: what a Profiler keeps of the sampler's
//!   chunks, `jsprof record`'s files, and the files the CLI reads (a trace or a V8 profile).
//! - `attribution`, `summary`, `sourcemap`, `export`: reading a valid trace: packages, summaries,
//!   source maps, and one exporter per format.
//! - `heap`: heap profiles (V8's sampling heap profiler): the trace's tables with bytes per stack, drawn
//!   by the same views as a trace.
//!
//! What other crates (the napi binding, the fuzz targets, the tests and examples) may use is the list
//! below and nothing else, so the compiler says what they need: an item is `pub` only when this list
//! makes it reachable (`unreachable_pub`), `pub(crate)` or private otherwise.

#![warn(unreachable_pub)]

mod attribution;
mod convert;
mod error;
mod export;
mod files;
mod heap;
mod interner;
mod intervals;
mod json_text;
mod label_recorder;
mod profile_file;
mod record_file;
mod recording;
mod source_functions;
mod sourcemap;
mod summary;
mod text;
mod trace;
mod v8;

// What every layer uses.
pub use error::{Error, ErrorKind, Result};
pub use text::{markup as markup_text, visible as visible_text};

// The trace: its tables, its extension member, its validation (ProfilerTrace::from_json, ::validate),
// its timing and the weight of its samples.
pub use trace::{Clock, Extension, Frame, Marker, ProfilerTrace, Stack, Stall, Timing, TraceSample};
// A small trace as numbers over a string table kept between traces (the facade's main-thread build).
pub use trace::{write_columns, TraceStrings, COLUMNS_HEADER};
// Labels on samples: the one rule of a label, and its bounds.
pub use trace::{
    extend_label_set, label_set, LabelSet, MAX_KEY_CHARS, MAX_LABELS, MAX_LABEL_SETS, MAX_VALUE_CHARS,
};
// Labels as a recording process keeps them: the registry of sets, the context ring's layout, each
// thread's timeline of changes.
pub use label_recorder::{
    LabelRegistry, LabelTimeline, CONTEXT_RING_ID_BASE, CONTEXT_RING_WORDS, DROPPED, RING_GENERATIONS,
    RING_SLOTS,
};

// The V8 CPU profile format, and V8's sampling heap profile.
pub use v8::{write_heap_profile, HeapNodeOut, HeapTree, HeapTreeSample};
pub use v8::{
    CallFrame, CpuProfile, CpuProfileNode, InspectorColumns, Node, NodeKind, Profile, ProfileBuilder, Sample,
};

// V8 -> trace.
pub use convert::{
    read_in_one_pass, trace_by_profile, trace_by_profile_with, trace_from_json, trace_from_json_into,
    trace_from_json_with, trace_from_profile, CallGraph, OwnCode, SampleSink, ScriptSources, Straight,
    TraceSamples,
};

// Recordings, jsprof record's files, and the files the CLI reads.
pub use profile_file::{read_profile_file, FileFormat, ProfileFile};
pub use record_file::{span_ms, trace_file_json, trace_from_lines};
pub use recording::{Added, Chunk, Recording, RunningUnder};

// Reading a valid trace: attribution, summaries, source maps.
pub use attribution::{Attribution, Attributor, Kind};
pub use source_functions::{ScriptFunctions, ScriptKind, SourceFiles};
pub use sourcemap::{resolve as resolve_source_maps, ExplicitMap, MapCache, MapOptions, Resolved, Stats};
pub use summary::{summarize, summarize_by_label, By, Row, SummaryBy};

// The exporters, one format each.
pub use export::collapsed::to_collapsed;
pub use export::cpuprofile::to_cpu_profile;
pub use export::flamegraph::{to_diff_flame_graph, to_flame_graph, to_flame_graph_html, FlameGraphOptions};
pub use export::gecko::{to_gecko_json, to_gecko_profile, GeckoOptions};
pub use export::otlp::{partial_success as otlp_partial_success, to_otlp_profiles, OtlpOptions};
pub use export::pprof::{to_pprof, PprofOptions};
pub use export::speedscope::to_speedscope;
pub use export::unplaced;

// Heap profiles: the type, its validation and conversions, and its views.
pub use heap::views::{
    to_heap_collapsed, to_heap_diff_flame_graph, to_heap_flame_graph, to_heap_flame_graph_html,
    to_heap_otlp_profiles, to_heap_pprof,
};
pub use heap::{
    read_heap_file, summarize_heap, FromV8Options, HeapInfo, HeapProfile, HeapRow, HeapSettings, HeapView,
    MAX_HEAP_STACK_DEPTH, MAX_V8_OBJECT_DEPTH,
};
