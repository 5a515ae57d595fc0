//! Labels on samples, the native half (`lib/labels.js` is the JS half): the process-wide registry of
//! distinct label sets (`internLabels`: each set checked once by the core's label rule and given an
//! id; at most `MAX_LABEL_SETS`, past which a new set gets [`DROPPED`]) and each thread's timeline of
//! label-set changes (`labelTransitions`: what the JS ring held, appended at every flush), which
//! [`label_chunk`] joins to a chunk's samples when the sampler harvests.
//!
//! Sets that hold a span context (one per request: `trace_id`, `span_id`) are not kept for good:
//! `internTransientLabels` puts them in a ring of [`TRANSIENT_SLOTS`] slots, the oldest overwritten
//! first; an id names its slot and the slot's generation, so an id whose slot was reused since reads
//! as "no labels" (a request older than 65,536 newer span sets loses its span labels, it never gets
//! another request's).
//!
//! Ids: 0 is "no labels", [`DROPPED`] a set past the cap (its samples show none and are counted in
//! the trace's `jsprof.labelsDropped`), 1..2^31 the registered sets, and ids with the top bit set
//! transient ones (bits 16-30 the generation, 0-15 the slot).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use jsprof_core as core;
use jsprof_core::LabelSet;
use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::core_error;

/// The id of a label set the registry could not keep (past the cap).
pub(crate) const DROPPED: u32 = u32::MAX;

/// How long (µs) the timeline keeps changes before the latest: a harvest takes samples at most about
/// 10 s old (sampler/schedule.js), so 30 s keeps every change a chunk can need, and bounds memory when
/// nothing harvests (no profiler running).
const KEEP_US: f64 = 30_000_000.0;
/// And at most this many changes (16 MB): a thread switching label sets faster than 35,000 times a
/// second keeps less than 30 s (the oldest go first; a harvest is due every ~10 s at most).
const MAX_TIMELINE: usize = 1 << 20;

/// The ring of transient sets: 2^16 slots.
const TRANSIENT_SLOTS: usize = 1 << 16;
const TRANSIENT_BIT: u32 = 1 << 31;
/// Generations run 0..0x7fff, so no transient id is [`DROPPED`].
const GENERATIONS: u32 = 0x7fff;

#[derive(Default)]
struct Registry {
    /// Index i holds id i + 1.
    sets: Vec<Arc<LabelSet>>,
    ids: HashMap<Arc<LabelSet>, u32>,
    /// Transient sets: (generation, set) per slot, and the next slot to write.
    transient: Vec<(u32, Arc<LabelSet>)>,
    next_slot: usize,
    generation: u32,
}

impl Registry {
    fn get(&self, id: u32) -> Option<Arc<LabelSet>> {
        match id {
            0 => None,
            DROPPED => Some(Arc::clone(&DROPPED_SET)),
            id if id & TRANSIENT_BIT != 0 => {
                let slot = (id & 0xffff) as usize;
                let generation = (id >> 16) & 0x7fff;
                self.transient
                    .get(slot)
                    .filter(|(g, _)| *g == generation)
                    .map(|(_, set)| Arc::clone(set))
            }
            id => self.sets.get(id as usize - 1).cloned(),
        }
    }

    fn add_transient(&mut self, set: LabelSet) -> u32 {
        let slot = self.next_slot;
        let entry = (self.generation, Arc::new(set));
        if slot < self.transient.len() {
            self.transient[slot] = entry;
        } else {
            self.transient.push(entry);
        }
        let id = TRANSIENT_BIT | (self.generation << 16) | slot as u32;
        self.next_slot += 1;
        if self.next_slot == TRANSIENT_SLOTS {
            self.next_slot = 0;
            self.generation = (self.generation + 1) % GENERATIONS;
        }
        id
    }
}

static REGISTRY: LazyLock<Mutex<Registry>> = LazyLock::new(|| Mutex::new(Registry::default()));
static DROPPED_SET: LazyLock<Arc<LabelSet>> = LazyLock::new(|| Arc::new(LabelSet::new()));

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

thread_local! {
    /// This thread's label-set changes, ascending in time: (µs on V8's clock, id).
    static TIMELINE: RefCell<Vec<(f64, u32)>> = const { RefCell::new(Vec::new()) };
}

/// The id of the label set of `keys[i]: values[i]` (registered on first use). An empty set is 0. A key
/// or value the label rule refuses is a `TypeError`/`RangeError`; past the cap of distinct sets, the
/// set is not kept and the id is [`DROPPED`] (4294967295).
#[napi(catch_unwind)]
pub fn intern_labels(keys: Vec<String>, values: Vec<String>) -> Result<u32> {
    let set = core::label_set(&keys, &values).map_err(core_error)?;
    if set.is_empty() {
        return Ok(0);
    }
    let mut r = registry();
    if let Some(&id) = r.ids.get(&set) {
        return Ok(id);
    }
    if r.sets.len() >= core::MAX_LABEL_SETS {
        return Ok(DROPPED);
    }
    let set = Arc::new(set);
    r.sets.push(Arc::clone(&set));
    let id = r.sets.len() as u32;
    r.ids.insert(set, id);
    Ok(id)
}

/// The id of a label set used for a short while (one request's span context): not interned, written
/// into the ring of transient sets (see the module's note). Checked as `internLabels` checks.
#[napi(catch_unwind)]
pub fn intern_transient_labels(keys: Vec<String>, values: Vec<String>) -> Result<u32> {
    let set = core::label_set(&keys, &values).map_err(core_error)?;
    if set.is_empty() {
        return Ok(0);
    }
    Ok(registry().add_transient(set))
}

/// The id of a transient set: the registered set `base` (0: none) with a span context added —
/// `trace_id`, `span_id` and `span_name` when given — checked as `internLabels` checks the added
/// labels (the registered part was checked when it was registered). One call of four arguments per
/// request, where `internTransientLabels` would convert and check every label again.
#[napi(catch_unwind)]
pub fn intern_span_labels(
    base: u32,
    trace_id: String,
    span_id: String,
    span_name: Option<String>,
) -> Result<u32> {
    let mut r = registry();
    let base = match base {
        0 | DROPPED => None,
        id => r.get(id),
    };
    let empty = LabelSet::new();
    let base = base.as_deref().unwrap_or(&empty);
    let set = match &span_name {
        Some(name) => core::extend_label_set(
            base,
            &["span_id", "span_name", "trace_id"],
            &[&span_id, name, &trace_id],
        ),
        None => core::extend_label_set(base, &["span_id", "trace_id"], &[&span_id, &trace_id]),
    }
    .map_err(core_error)?;
    Ok(r.add_transient(set))
}

/// How many distinct label sets the process has registered.
#[napi]
pub fn label_set_count() -> u32 {
    registry().sets.len() as u32
}

/// Appends the first `count` changes of the JS ring to this thread's timeline: `times` µs on V8's
/// clock, `ids` label-set ids. A change earlier than the last one kept is ignored (the timeline stays
/// ascending), and changes older than 30 s before the latest (or past the newest 2^20) are let go.
#[napi(catch_unwind)]
pub fn label_transitions(times: Float64Array, ids: Uint32Array, count: u32) {
    let n = (count as usize).min(times.len()).min(ids.len());
    TIMELINE.with(|timeline| {
        let mut timeline = timeline.borrow_mut();
        for (&t, &id) in times[..n].iter().zip(&ids[..n]) {
            if !t.is_finite() || timeline.last().is_some_and(|&(last, _)| t < last) {
                continue;
            }
            timeline.push((t, id));
        }
        if let Some(&(latest, _)) = timeline.last() {
            trim(&mut timeline, latest - KEEP_US);
        }
        if timeline.len() > MAX_TIMELINE {
            let excess = timeline.len() - MAX_TIMELINE;
            timeline.drain(..excess);
        }
    });
}

/// Lets go of the changes before `from_us`, keeping the last of them (the set current at `from_us`).
fn trim(timeline: &mut Vec<(f64, u32)>, from_us: f64) {
    let before = timeline.partition_point(|&(t, _)| t < from_us);
    if before > 1 {
        timeline.drain(..before - 1);
    }
}

/// Gives the chunk's samples the label sets of this thread's timeline (see `Chunk::label_samples`).
pub(crate) fn label_chunk(chunk: &mut core::Chunk) {
    TIMELINE.with(|timeline| {
        let timeline = timeline.borrow();
        if timeline.is_empty() {
            return;
        }
        let r = registry();
        let times: Vec<f64> = timeline.iter().map(|&(t, _)| t).collect();
        let sets: Vec<Option<Arc<LabelSet>>> = timeline.iter().map(|&(_, id)| r.get(id)).collect();
        drop(r);
        chunk.label_samples(&times, &sets);
    });
}

/// Test hook: forgets this thread's timeline.
#[napi]
pub fn clear_label_transitions() {
    TIMELINE.with(|timeline| timeline.borrow_mut().clear());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_transient_slot_reads_as_no_labels() {
        let mut r = Registry::default();
        let set = |v: &str| LabelSet::from([("span_id".to_owned(), v.to_owned())]);
        let first = r.add_transient(set("a"));
        assert_eq!(r.get(first).unwrap()["span_id"], "a");
        assert_ne!(first, DROPPED);
        for i in 0..TRANSIENT_SLOTS {
            let id = r.add_transient(set(&i.to_string()));
            assert_ne!(id, DROPPED);
        }
        assert_eq!(r.get(first), None, "its slot holds a newer set");
        assert_eq!(r.transient.len(), TRANSIENT_SLOTS);
        // Generations wrap without ever making DROPPED.
        r.generation = GENERATIONS - 1;
        r.next_slot = TRANSIENT_SLOTS - 1;
        let last = r.add_transient(set("z"));
        assert_ne!(last, DROPPED);
        assert_eq!(r.generation, 0);
        assert_eq!(r.get(last).unwrap()["span_id"], "z");
    }

    #[test]
    fn trimming_keeps_the_set_current_at_the_cut() {
        let mut t = vec![(1.0, 1), (2.0, 2), (3.0, 0), (10.0, 3)];
        trim(&mut t, 5.0);
        assert_eq!(t, vec![(3.0, 0), (10.0, 3)]);
        trim(&mut t, 0.0);
        assert_eq!(t.len(), 2);
    }
}
