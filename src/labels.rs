//! Labels on samples, the native half (`lib/labels.js` is the JS half): the process-wide registry of
//! distinct label sets (`internLabels`: each set checked once by the core's label rule and given an
//! id; at most `MAX_LABEL_SETS`, past which a new set gets [`DROPPED`]) and each thread's timeline of
//! label-set changes (`labelTransitions`: what the JS ring held, appended at every flush), which
//! [`label_chunk`] joins to a chunk's samples when the sampler harvests.
//!
//! Sets that hold a span context (one per request: `trace_id`, `span_id`) are not kept for good, in
//! one of two rings of [`TRANSIENT_SLOTS`] slots, the oldest overwritten first; an id names its slot
//! and the slot's generation, so an id whose slot was reused since reads as "no labels" (a request
//! older than 65,536 newer span sets loses its span labels, it never gets another request's):
//! - the **span ring**, the request integration's: lib/labels.js writes each request's span into a
//!   `Uint32Array` of its own — the registered set it extends and the ids' 48 hex digits as six
//!   numbers, [`SPAN_RING_WORDS`] words a slot — with no call into Rust per request, and each harvest
//!   hands the array over; only the sets some sample lands in are ever built ([`label_chunk`]).
//!   Measured: a native call per request building its set cost span ids most of their CPU
//!   (docs/bench.md#span-ids-built-only-where-a-sample-lands).
//! - the **transient ring** here, for any other set holding a `span_id` (`withLabels` given one, a
//!   `setLabels` inside a traced request): `internTransientLabels` checks and stores it.
//!
//! Ids: 0 is "no labels", [`DROPPED`] a set past the cap (its samples show none and are counted in
//! the trace's `jsprof.labelsDropped`), 1..2^31 the registered sets, ids with the top bit set the
//! rings' (bit 30 set: the span ring's; bits 16-29 the generation, 0-15 the slot).

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
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

/// Each ring of transient sets: 2^16 slots.
const TRANSIENT_SLOTS: usize = 1 << 16;
const TRANSIENT_BIT: u32 = 1 << 31;
/// Generations run 0..0x3fff (14 bits), so no id of either ring is [`DROPPED`].
const GENERATIONS: u32 = 0x3fff;
const GENERATION_SHIFT: u32 = 16;

/// The span ring's layout, which lib/labels.js reads from here: its ids are `SPAN_RING_ID_BASE |
/// generation << 16 | slot` (generation below `SPAN_RING_GENERATIONS`), and slot `s` is the words
/// `s * SPAN_RING_WORDS ..` ([`core::SPAN_RING_WORDS`] says which).
#[napi]
pub const SPAN_RING_SLOTS: u32 = TRANSIENT_SLOTS as u32;
#[napi]
pub const SPAN_RING_WORDS: u32 = core::SPAN_RING_WORDS as u32;
#[napi]
pub const SPAN_RING_ID_BASE: u32 = TRANSIENT_BIT | SPAN_RING_BIT;
#[napi]
pub const SPAN_RING_GENERATIONS: u32 = GENERATIONS;
const SPAN_RING_BIT: u32 = 1 << 30;

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
            id if id & SPAN_RING_BIT != 0 && id & TRANSIENT_BIT != 0 => None,
            id if id & TRANSIENT_BIT != 0 => {
                let slot = (id & 0xffff) as usize;
                let generation = (id >> GENERATION_SHIFT) & GENERATIONS;
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
        let id = TRANSIENT_BIT | (self.generation << GENERATION_SHIFT) | slot as u32;
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
    /// This thread's label-set changes, ascending in time: (µs on V8's clock, id). A deque: the
    /// oldest go at every flush once it holds 30 s, which a Vec would pay by moving all the others
    /// (measured: ~1 ms a flush of a full timeline, docs/bench.md#span-ids-built-only-where-a-sample-lands).
    static TIMELINE: RefCell<VecDeque<(f64, u32)>> = const { RefCell::new(VecDeque::new()) };
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
            if !t.is_finite() || timeline.back().is_some_and(|&(last, _)| t < last) {
                continue;
            }
            timeline.push_back((t, id));
        }
        if let Some(&(latest, _)) = timeline.back() {
            trim(&mut timeline, latest - KEEP_US);
        }
        if timeline.len() > MAX_TIMELINE {
            let excess = timeline.len() - MAX_TIMELINE;
            timeline.drain(..excess);
        }
    });
}

/// Lets go of the changes before `from_us`, keeping the last of them (the set current at `from_us`).
fn trim(timeline: &mut VecDeque<(f64, u32)>, from_us: f64) {
    let before = timeline.partition_point(|&(t, _)| t < from_us);
    if before > 1 {
        timeline.drain(..before - 1);
    }
}

/// Gives the chunk's samples the label sets of this thread's timeline (see `Chunk::label_samples`);
/// `span_ring`: this thread's span ring (lib/labels.js), whose sets are built here, each once, only
/// where a sample lands.
pub(crate) fn label_chunk(chunk: &mut core::Chunk, span_ring: Option<&[u32]>) {
    TIMELINE.with(|timeline| {
        let timeline = timeline.borrow();
        if timeline.is_empty() {
            return;
        }
        // Only the changes from the one current at the chunk's first sample to its last sample's:
        // the timeline holds 30 s, a chunk is a harvest's.
        let samples = &chunk.profile.samples;
        let first = samples.iter().map(|s| s.time).fold(f64::INFINITY, f64::min);
        let last = samples.iter().map(|s| s.time).fold(f64::NEG_INFINITY, f64::max);
        let from = timeline.partition_point(|&(t, _)| t <= first).saturating_sub(1);
        let to = timeline.partition_point(|&(t, _)| t <= last).max(from);
        let times: Vec<f64> = timeline.range(from..to).map(|&(t, _)| t).collect();
        let r = registry();
        let mut spans: HashMap<u32, Option<Arc<LabelSet>>> = HashMap::new();
        chunk.label_samples_by(&times, |i| {
            let id = timeline[from + i].1;
            if id & SPAN_RING_ID_BASE != SPAN_RING_ID_BASE || id == DROPPED {
                return r.get(id);
            }
            spans
                .entry(id)
                .or_insert_with(|| span_set(&r, span_ring.unwrap_or_default(), id).map(Arc::new))
                .clone()
        });
    });
}

/// The set of span-ring id `id` (see [`core::span_slot_set`]); None when its slot was reused since.
fn span_set(r: &Registry, ring: &[u32], id: u32) -> Option<LabelSet> {
    let slot = core::span_slot_set(
        ring,
        (id & 0xffff) as usize,
        (id >> GENERATION_SHIFT) & GENERATIONS,
    )?;
    let base = match slot.base {
        0 | DROPPED => None,
        base => r.get(base),
    };
    Some(slot.extend(base.as_deref().unwrap_or(&LabelSet::new())))
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
        let mut t = VecDeque::from([(1.0, 1), (2.0, 2), (3.0, 0), (10.0, 3)]);
        trim(&mut t, 5.0);
        assert_eq!(t, [(3.0, 0), (10.0, 3)]);
        trim(&mut t, 0.0);
        assert_eq!(t.len(), 2);
    }
}
