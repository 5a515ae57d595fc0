//! Labels on samples, the native half (`lib/labels.js` is the JS half): the process-wide registry of
//! distinct label sets (`internLabels`: each set checked once by the core's label rule and given an
//! id) and each thread's timeline of label-set changes (`labelTransitions`: what the JS ring held,
//! appended at every flush), which [`label_chunk`] joins to a chunk's samples (with the thread's
//! context ring, which says each request context's labels as the harvest finds them) when the sampler
//! harvests. What they are and how ids are made: jsprof-core's `label_recorder`; here they are only
//! held (one registry per process, one timeline per thread) and given their JS types.

use std::cell::RefCell;
use std::sync::{LazyLock, Mutex, MutexGuard};

use jsprof_core as core;
use jsprof_core::{LabelRegistry, LabelTimeline};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;

/// The context ring's layout, which lib/labels.js reads from here (jsprof-core's `label_recorder` says
/// what the words are): ids are `CONTEXT_RING_ID_BASE + generation * CONTEXT_RING_SLOTS + slot`, the
/// generation below `CONTEXT_RING_GENERATIONS`; slot `s` is the words `s * CONTEXT_RING_WORDS ..`.
#[napi]
pub const CONTEXT_RING_SLOTS: u32 = core::RING_SLOTS;
#[napi]
pub const CONTEXT_RING_WORDS: u32 = core::CONTEXT_RING_WORDS as u32;
#[napi]
pub const CONTEXT_RING_ID_BASE: u32 = core::CONTEXT_RING_ID_BASE;
#[napi]
pub const CONTEXT_RING_GENERATIONS: u32 = core::RING_GENERATIONS;

static REGISTRY: LazyLock<Mutex<LabelRegistry>> = LazyLock::new(Mutex::default);

fn registry() -> MutexGuard<'static, LabelRegistry> {
    REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

thread_local! {
    /// This thread's label-set changes.
    static TIMELINE: RefCell<LabelTimeline> = RefCell::new(LabelTimeline::default());
}

/// The id of the label set of `keys[i]: values[i]` (registered on first use). An empty set is 0. What
/// the label rule refuses is a `TypeError`; past the registry's cap, the set is not kept and the id is
/// 4294967295 (dropped).
#[napi(catch_unwind)]
pub fn intern_labels(keys: Vec<String>, values: Vec<String>) -> Result<u32> {
    let set = core::label_set(&keys, &values).map_err(core_error)?;
    Ok(registry().intern(set))
}

/// The id of a label set used for a short while (a span context outside the request integration):
/// not interned, written into the ring of transient sets. Checked as `internLabels` checks.
#[napi(catch_unwind)]
pub fn intern_transient_labels(keys: Vec<String>, values: Vec<String>) -> Result<u32> {
    let set = core::label_set(&keys, &values).map_err(core_error)?;
    Ok(registry().intern_transient(set))
}

/// How many distinct label sets the process has registered.
#[napi]
pub fn label_set_count() -> u32 {
    registry().len() as u32
}

/// Appends the first `count` changes of the JS ring to this thread's timeline: `times` µs on V8's
/// clock, `ids` label-set ids. A change earlier than the last one kept is ignored (the timeline stays
/// ascending), and changes older than 30 s before the latest (or past the newest 2^20) are let go.
#[napi(catch_unwind)]
pub fn label_transitions(times: Float64Array, ids: Uint32Array, count: u32) {
    let n = (count as usize).min(times.len()).min(ids.len());
    TIMELINE.with(|timeline| timeline.borrow_mut().append(&times[..n], &ids[..n]));
}

/// Gives the chunk's samples the label sets and request contexts of this thread's timeline; `ring`:
/// this thread's context ring (lib/labels.js).
pub(crate) fn label_chunk(chunk: &mut core::Chunk, ring: Option<&[u32]>) {
    TIMELINE.with(|timeline| {
        timeline
            .borrow()
            .label(chunk, &registry(), ring.unwrap_or_default())
    });
}

/// Gives `recording`'s samples taken in a request context the labels that context has now in `ring`.
pub(crate) fn relabel(recording: &mut core::Recording, ring: &[u32]) {
    let registry = registry();
    recording.relabel(|context| registry.context(ring, context).map(|(set, _)| set));
}

/// Test hook: forgets this thread's timeline.
#[napi]
pub fn clear_label_transitions() {
    TIMELINE.with(|timeline| timeline.borrow_mut().clear());
}
