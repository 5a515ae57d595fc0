//! The pure-Rust core of jsprof-node. Nothing here knows about Node or napi: the binding crate converts
//! types, and everything that decides what a trace contains lives here, covered by `cargo test`.
//!
//! A sample walks: V8 profile (`cpuprofile`) -> optional per-Profiler selection (`recording`) ->
//! the spec's rules (`convert`) -> the `ProfilerTrace` tables (`trace`).

pub mod attribution;
pub mod convert;
pub mod error;
pub mod export;
pub mod files;
pub mod interner;
pub mod intervals;
pub mod json_text;
pub mod record_file;
pub mod recording;
pub mod sourcemap;
pub mod summary;
pub mod text;
pub mod trace;
pub mod v8;

pub use convert::{read_in_one_pass, trace_from_profile, OwnCode, Straight, TraceSamples};
pub use error::{Error, ErrorKind, Result};
pub use intervals::IntervalSet;
pub use recording::{Chunk, Recording};
pub use trace::{Frame, Marker, ProfilerTrace, Stack, TraceBuilder, TraceSample};
pub use v8::{InspectorColumns, Profile, ProfileBuilder};
