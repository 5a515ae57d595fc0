//! Labels as a recording process keeps them (the binding's `src/labels.rs` holds one
//! [`LabelRegistry`] per process and one [`LabelTimeline`] per thread, and converts types): the
//! distinct label sets and their ids, the rings of sets that hold a span context, and each thread's
//! timeline of label-set changes, joined to a chunk's samples when the sampler harvests.
//!
//! Ids: 0 is "no labels", [`DROPPED`] a set past the cap (its samples show none and are counted in
//! the trace's `jsprof.labelsDropped`), 1..=[`MAX_LABEL_SETS`] the registered sets, ids with bit 29
//! set the context ring's and with the top bit set the transient ring's (bits 16-28 the generation,
//! 0-15 the slot). A context id stays below 2^30, a small integer in V8 (no number boxed when JS
//! records one, which it does at nearly every context switch).
//!
//! The cap: the registry keeps sets for good, so it keeps at most [`MAX_LABEL_SETS`] of them and
//! [`MAX_REGISTRY_BYTES`] of their keys and values, whichever comes first (a set is ~50 bytes: the count
//! is the cap in practice; the bytes bound what 65,536 sets of long values would hold). Past it a new
//! set is [`DROPPED`] for its samples only: lib/labels.js still gives the code its labels (`getLabels()`,
//! nesting, propagation), held by the async contexts running under it and forgotten with them, and the
//! sets registered before keep their ids.
//!
//! Two rings of 65,536 slots hold what is not kept for good, the oldest overwritten first; an id names
//! its slot and the slot's generation, so an id whose slot was reused since reads as "no labels" (a
//! context older than 65,536 newer ones loses what its slot said, it never gets another's):
//! - the **context ring**, one slot per request context (lib/labels.js): what the thread's timeline
//!   records while a request's code runs is its context's id, and the slot says — when a harvest
//!   reads it, not when the sample was taken — which label set the context has now (a request learns
//!   its route after its first middleware ran: every sample of it then carries the route), which
//!   request it belongs to (a request profile keeps the samples of its own context and of the
//!   contexts its code entered: `setLabels` in a middleware), and the span context of the request's
//!   local root span. JS writes the slots into a `Uint32Array` of its own ([`CONTEXT_RING_WORDS`]
//!   words a slot) with no call into Rust per request, and each harvest hands the array over; only
//!   the slots some sample lands in are read ([`LabelTimeline::label`]). Measured: a native call per
//!   request building its set cost span ids most of their CPU
//!   (docs/bench.md#span-ids-built-only-where-a-sample-lands).
//! - the **transient ring** of the registry, for any other set holding a `span_id` (`withLabels` given
//!   one outside a request): [`LabelRegistry::intern_transient`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::recording::{Chunk, RunningUnder};
use crate::trace::labels::{extend_label_set, LabelSet, MAX_LABEL_SETS};

/// The id of a label set the registry could not keep (past the cap).
pub const DROPPED: u32 = u32::MAX;

/// The registry keeps at most this many bytes of keys and values (UTF-8), besides [`MAX_LABEL_SETS`] sets.
pub(crate) const MAX_REGISTRY_BYTES: usize = 16 << 20;

/// Slots of each ring (the context ring, the registry's transient ring).
pub const RING_SLOTS: u32 = 1 << 16;
/// Words per slot of the context ring: the slot's generation + 1 (0: never written); the context's
/// label set, a registered set's id (0: none), rewritten when the context's labels change; the id of
/// the request context it belongs to (its own for a request's); 1 when the request's span follows,
/// else 0; the span's trace id, 32 hex digits as four 8-digit numbers, and its span id, 16 as two
/// (read from the request's own slot, whichever context of the request a sample is in).
pub const CONTEXT_RING_WORDS: usize = 10;
/// Generations run below this (13 bits), so no id of either ring is [`DROPPED`] and a context id
/// stays below 2^30.
pub const RING_GENERATIONS: u32 = 0x1fff;
const TRANSIENT_BIT: u32 = 1 << 31;
const CONTEXT_RING_BIT: u32 = 1 << 29;
/// The context ring's ids are `CONTEXT_RING_ID_BASE + generation * RING_SLOTS + slot`.
pub const CONTEXT_RING_ID_BASE: u32 = CONTEXT_RING_BIT;
const GENERATION_SHIFT: u32 = 16;
// Registered ids stay below the context ring's.
const _: () = assert!(MAX_LABEL_SETS < CONTEXT_RING_BIT as usize);

/// How long (µs) a timeline keeps changes before the latest: a harvest takes samples at most about
/// 10 s old (sampler/schedule.js), so 30 s keeps every change a chunk can need, and bounds memory when
/// nothing harvests (no profiler running).
const KEEP_US: f64 = 30_000_000.0;
/// And at most this many changes (16 MB): a thread switching label sets faster than 35,000 times a
/// second keeps less than 30 s (the oldest go first; a harvest is due every ~10 s at most).
const MAX_TIMELINE: usize = 1 << 20;

/// The slot and generation a ring id names.
fn slot_of(id: u32) -> (usize, u32) {
    (
        (id & 0xffff) as usize,
        (id >> GENERATION_SHIFT) & RING_GENERATIONS,
    )
}

fn is_context_id(id: u32) -> bool {
    id & (TRANSIENT_BIT | CONTEXT_RING_BIT) == CONTEXT_RING_BIT
}

/// The distinct label sets of a process: registered ones for good (at most [`MAX_LABEL_SETS`]), and
/// the transient ring.
#[derive(Debug, Default)]
pub struct LabelRegistry {
    /// Index i holds id i + 1.
    sets: Vec<Arc<LabelSet>>,
    ids: HashMap<Arc<LabelSet>, u32>,
    /// Bytes of the registered sets' keys and values.
    bytes: usize,
    /// Transient sets: (generation, set) per slot, and the next slot to write.
    transient: Vec<(u32, Arc<LabelSet>)>,
    next_slot: usize,
    generation: u32,
    /// What a dropped set's samples carry: an empty set, which the trace counts.
    dropped: Arc<LabelSet>,
}

impl LabelRegistry {
    /// The id of `set`, registered on first use: 0 for an empty set, [`DROPPED`] past the cap.
    pub fn intern(&mut self, set: LabelSet) -> u32 {
        if set.is_empty() {
            return 0;
        }
        if let Some(&id) = self.ids.get(&set) {
            return id;
        }
        let bytes: usize = set.iter().map(|(k, v)| k.len() + v.len()).sum();
        if self.sets.len() >= MAX_LABEL_SETS || self.bytes + bytes > MAX_REGISTRY_BYTES {
            return DROPPED;
        }
        self.bytes += bytes;
        let set = Arc::new(set);
        self.sets.push(Arc::clone(&set));
        let id = self.sets.len() as u32;
        self.ids.insert(set, id);
        id
    }

    /// The id of a set used for a short while, written into the transient ring (0 for an empty set).
    pub fn intern_transient(&mut self, set: LabelSet) -> u32 {
        if set.is_empty() {
            return 0;
        }
        let slot = self.next_slot;
        let entry = (self.generation, Arc::new(set));
        if slot < self.transient.len() {
            self.transient[slot] = entry;
        } else {
            self.transient.push(entry);
        }
        let id = TRANSIENT_BIT | (self.generation << GENERATION_SHIFT) | slot as u32;
        self.next_slot += 1;
        if self.next_slot == RING_SLOTS as usize {
            self.next_slot = 0;
            self.generation = (self.generation + 1) % RING_GENERATIONS;
        }
        id
    }

    /// How many sets are registered for good.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// The set of a registered or transient id (None: no labels, an unknown id, a reused slot, or a
    /// context id, which only [`LabelTimeline::label`] reads, with its ring).
    pub fn get(&self, id: u32) -> Option<Arc<LabelSet>> {
        match id {
            0 => None,
            DROPPED => Some(Arc::clone(&self.dropped)),
            id if is_context_id(id) => None,
            id if id & TRANSIENT_BIT != 0 => {
                let (slot, generation) = slot_of(id);
                self.transient
                    .get(slot)
                    .filter(|(g, _)| *g == generation)
                    .map(|(_, set)| Arc::clone(set))
            }
            id => self.sets.get(id as usize - 1).cloned(),
        }
    }

    /// What context `id` of `ring` says now: its label set, with the span ids of its request's
    /// slot (the set alone when the two would take it past the cap of labels), and the id of the
    /// request it belongs to. None when its slot was reused since or never written, or `id` is not
    /// a context's.
    pub fn context(&self, ring: &[u32], id: u32) -> Option<(Option<Arc<LabelSet>>, u32)> {
        let slot = context_slot(ring, id)?;
        let set = match slot.set {
            0 => None,
            set => self.get(set),
        };
        let span = context_slot(ring, slot.request).and_then(|request| request.span);
        let Some((trace_id, span_id)) = span else {
            return Some((set, slot.request));
        };
        let base = set.as_deref().cloned().unwrap_or_default();
        let with_span =
            extend_label_set(&base, &["span_id", "trace_id"], &[&span_id, &trace_id]).unwrap_or(base);
        Some((Some(Arc::new(with_span)), slot.request))
    }
}

/// Slot `id` of a context ring when it still holds context `id` (None: reused since, never written,
/// or past the ring's end): its set, its request, and its span's ids in lowercase hex, as W3C trace
/// context writes them.
fn context_slot(ring: &[u32], id: u32) -> Option<ContextSlot> {
    if !is_context_id(id) {
        return None;
    }
    let (slot, generation) = slot_of(id);
    let w = ring.get(slot * CONTEXT_RING_WORDS..(slot + 1) * CONTEXT_RING_WORDS)?;
    if w[0] == 0 || w[0] != generation.wrapping_add(1) {
        return None;
    }
    Some(ContextSlot {
        set: w[1],
        request: w[2],
        span: (w[3] == 1).then(|| {
            (
                format!("{:08x}{:08x}{:08x}{:08x}", w[4], w[5], w[6], w[7]),
                format!("{:08x}{:08x}", w[8], w[9]),
            )
        }),
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ContextSlot {
    set: u32,
    request: u32,
    /// (trace id, span id)
    span: Option<(String, String)>,
}

/// One thread's label-set changes, ascending in time: (µs on V8's clock, id). A deque: the oldest go
/// at every flush once it holds 30 s, which a Vec would pay by moving all the others (measured:
/// docs/bench.md#span-ids-built-only-where-a-sample-lands).
#[derive(Debug, Default)]
pub struct LabelTimeline {
    changes: VecDeque<(f64, u32)>,
}

impl LabelTimeline {
    /// Appends changes (`times[i]` µs, `ids[i]`). A change earlier than the last one kept is ignored
    /// (the timeline stays ascending), and changes older than 30 s before the latest (or past the
    /// newest 2^20) are let go.
    pub fn append(&mut self, times: &[f64], ids: &[u32]) {
        for (&t, &id) in times.iter().zip(ids) {
            if !t.is_finite() || self.changes.back().is_some_and(|&(last, _)| t < last) {
                continue;
            }
            self.changes.push_back((t, id));
        }
        if let Some(&(latest, _)) = self.changes.back() {
            self.trim(latest - KEEP_US);
        }
        if self.changes.len() > MAX_TIMELINE {
            let excess = self.changes.len() - MAX_TIMELINE;
            self.changes.drain(..excess);
        }
    }

    /// Lets go of the changes before `from_us`, keeping the last of them (the set current at `from_us`).
    fn trim(&mut self, from_us: f64) {
        let before = self.changes.partition_point(|&(t, _)| t < from_us);
        if before > 1 {
            self.changes.drain(..before - 1);
        }
    }

    pub fn clear(&mut self) {
        self.changes.clear();
    }

    /// Gives `chunk`'s samples the sets and request contexts of this timeline (see
    /// [`Chunk::label_samples_by`]), reading only the changes of the chunk's own time span; `ring`:
    /// the thread's context ring, whose slots are read here, each once, only where a sample lands.
    pub fn label(&self, chunk: &mut Chunk, registry: &LabelRegistry, ring: &[u32]) {
        if self.changes.is_empty() {
            return;
        }
        // From the change current at the chunk's first sample to its last sample's: the timeline
        // holds 30 s, a chunk is a harvest's.
        let samples = &chunk.profile.samples;
        let first = samples.iter().map(|s| s.time).fold(f64::INFINITY, f64::min);
        let last = samples.iter().map(|s| s.time).fold(f64::NEG_INFINITY, f64::max);
        let from = self
            .changes
            .partition_point(|&(t, _)| t <= first)
            .saturating_sub(1);
        let to = self.changes.partition_point(|&(t, _)| t <= last).max(from);
        let times: Vec<f64> = self.changes.range(from..to).map(|&(t, _)| t).collect();
        let mut contexts: HashMap<u32, RunningUnder> = HashMap::new();
        chunk.label_samples_by(&times, |i| {
            let id = self.changes[from + i].1;
            if !is_context_id(id) {
                return (registry.get(id), (0, 0));
            }
            contexts
                .entry(id)
                .or_insert_with(|| match registry.context(ring, id) {
                    Some((set, request)) => (set, (id, request)),
                    None => (None, (0, 0)),
                })
                .clone()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::labels::{label_set, MAX_LABELS};

    fn set(route: &str) -> LabelSet {
        LabelSet::from([("route".to_owned(), route.to_owned())])
    }

    fn context_id(generation: u32, slot: u32) -> u32 {
        CONTEXT_RING_ID_BASE + generation * RING_SLOTS + slot
    }

    const SPAN: [u32; 6] = [
        0x00af_7651,
        0x916c_d43d,
        0xd848_4f5a,
        0x1234_5678,
        0x00f0_67aa,
        0x0ba9_02b7,
    ];

    /// Writes context (`generation`, `slot`) of `set` into `ring`, belonging to `request` (its own id
    /// when None), with the span [`SPAN`] when `span`.
    fn write(ring: &mut [u32], slot: usize, generation: u32, set: u32, request: Option<u32>, span: bool) {
        let own = context_id(generation, slot as u32);
        let mut words = [
            generation + 1,
            set,
            request.unwrap_or(own),
            span as u32,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        if span {
            words[4..].copy_from_slice(&SPAN);
        }
        ring[slot * CONTEXT_RING_WORDS..(slot + 1) * CONTEXT_RING_WORDS].copy_from_slice(&words);
    }

    /// A context ring of `slots` slots with one request's context in `slot` at `generation`, with a span.
    fn ring_with(slots: usize, slot: usize, generation: u32, set: u32) -> Vec<u32> {
        let mut ring = vec![0; slots * CONTEXT_RING_WORDS];
        write(&mut ring, slot, generation, set, None, true);
        ring
    }

    /// A chunk of samples of one function at `times`.
    fn chunk(times: &[f64]) -> Chunk {
        Arc::try_unwrap(crate::recording::tests::chunk(times, 1_000.0)).unwrap()
    }

    fn routes(c: &Chunk) -> Vec<Option<String>> {
        (0..c.profile.samples.len())
            .map(|i| {
                c.labels_of(i)
                    .map(|s| s.get("route").cloned().unwrap_or_default())
            })
            .collect()
    }

    #[test]
    fn registered_sets_are_interned_once_and_capped() {
        let mut r = LabelRegistry::default();
        assert_eq!(r.intern(LabelSet::new()), 0);
        let a = r.intern(set("a"));
        assert_eq!(r.intern(set("a")), a);
        assert_ne!(r.intern(set("b")), a);
        assert_eq!(r.len(), 2);
        assert_eq!(r.get(a).unwrap()["route"], "a");
        assert_eq!(r.get(0), None);
        assert_eq!(
            r.get(DROPPED).unwrap().len(),
            0,
            "an empty set: counted as dropped"
        );
        for i in r.len()..MAX_LABEL_SETS {
            r.intern(set(&i.to_string()));
        }
        assert_eq!(r.intern(set("one too many")), DROPPED);
        assert_eq!(r.intern(set("a")), a, "a known set keeps its id");
        assert_eq!(r.get(a).unwrap()["route"], "a", "and its labels");
    }

    #[test]
    fn the_registry_keeps_a_bounded_number_of_bytes() {
        let mut r = LabelRegistry::default();
        let long = |i: usize| LabelSet::from([(format!("k{i}"), "v".repeat(1024))]);
        let mut kept = Vec::new();
        for i in 0.. {
            let id = r.intern(long(i));
            if id == DROPPED {
                break;
            }
            kept.push(id);
        }
        // 16 MiB of sets of ~1 KB: about 16,000 sets, far below the count's cap.
        assert!(kept.len() < MAX_LABEL_SETS / 2, "{}", kept.len());
        assert!(r.bytes <= MAX_REGISTRY_BYTES);
        assert!(r.bytes + 1030 > MAX_REGISTRY_BYTES, "filled up to the budget");
        assert_eq!(r.intern(long(0)), kept[0], "a known set keeps its id");
        assert_eq!(r.intern(set("small")), r.len() as u32, "a small set still fits");
    }

    #[test]
    fn a_reused_transient_slot_reads_as_no_labels() {
        let mut r = LabelRegistry::default();
        let first = r.intern_transient(set("a"));
        assert_eq!(r.get(first).unwrap()["route"], "a");
        assert!(!is_context_id(first));
        for i in 0..RING_SLOTS {
            let id = r.intern_transient(set(&i.to_string()));
            assert_ne!(id, DROPPED);
        }
        assert_eq!(r.get(first), None, "its slot holds a newer set");
        assert_eq!(r.transient.len(), RING_SLOTS as usize);
        // Generations wrap without ever making DROPPED.
        r.generation = RING_GENERATIONS - 1;
        r.next_slot = RING_SLOTS as usize - 1;
        let last = r.intern_transient(set("z"));
        assert_ne!(last, DROPPED);
        assert_eq!(r.generation, 0);
        assert_eq!(r.get(last).unwrap()["route"], "z");
    }

    #[test]
    fn a_context_reads_as_its_set_now_with_its_requests_span() {
        let mut r = LabelRegistry::default();
        let base = r.intern(set("GET /a"));
        let id = context_id(5, 3);
        assert!(is_context_id(id));
        let (s, request) = r.context(&ring_with(4, 3, 5, base), id).unwrap();
        let s = s.unwrap();
        // Every word as 8 hex digits, leading zeros kept: W3C's 32 and 16 lowercase digits.
        assert_eq!(s["trace_id"], "00af7651916cd43dd8484f5a12345678");
        assert_eq!(s["span_id"], "00f067aa0ba902b7");
        assert_eq!(s["route"], "GET /a");
        assert_eq!(request, id, "a request's own context");
        assert_eq!(r.get(id), None, "the registry itself has no contexts");
        // No registered set: the ids alone.
        let (s, _) = r.context(&ring_with(4, 3, 5, 0), id).unwrap();
        assert_eq!(s.unwrap().len(), 2);
        // A full set keeps its own labels rather than lose the request's.
        let keys: Vec<String> = (0..MAX_LABELS).map(|i| format!("k{i}")).collect();
        let full = r.intern(label_set(&keys, &vec![String::new(); MAX_LABELS]).unwrap());
        let (s, _) = r.context(&ring_with(4, 3, 5, full), id).unwrap();
        assert_eq!(s.unwrap().len(), MAX_LABELS);
        // A context the request's code entered (a middleware's setLabels): its own set, the
        // request's span and request.
        let tenant = r.intern(LabelSet::from([("tenant".to_owned(), "acme".to_owned())]));
        let mut ring = ring_with(4, 3, 5, base);
        write(&mut ring, 1, 5, tenant, Some(id), false);
        let (s, request) = r.context(&ring, context_id(5, 1)).unwrap();
        let s = s.unwrap();
        assert_eq!(
            (s["tenant"].as_str(), s["span_id"].as_str()),
            ("acme", "00f067aa0ba902b7")
        );
        assert_eq!(request, id);
        // Without a span: the set alone; no set either: a context in a request, with no labels.
        write(&mut ring, 2, 5, 0, None, false);
        assert_eq!(r.context(&ring, context_id(5, 2)), Some((None, context_id(5, 2))));
        // The largest id of either ring is not DROPPED; a context id is a small integer in V8.
        assert_ne!(context_id(RING_GENERATIONS - 1, RING_SLOTS - 1), DROPPED);
        assert!(context_id(RING_GENERATIONS - 1, RING_SLOTS - 1) < 1 << 30);
        assert!(!is_context_id(DROPPED) && !is_context_id(MAX_LABEL_SETS as u32));
    }

    #[test]
    fn a_reused_or_unwritten_context_slot_reads_as_nothing() {
        let r = LabelRegistry::default();
        let id = context_id(5, 3);
        assert_eq!(r.context(&ring_with(4, 3, 6, 0), id), None, "reused");
        assert_eq!(r.context(&ring_with(4, 2, 5, 0), id), None, "unwritten");
        assert_eq!(r.context(&ring_with(3, 2, 5, 0), id), None, "past the end");
        assert_eq!(r.context(&[], id), None, "no ring");
        assert_eq!(
            context_slot(&[0; CONTEXT_RING_WORDS], context_id(RING_GENERATIONS, 0)),
            None,
            "no wrap to 0"
        );
        // A context whose request's slot was reused keeps its set, without the span.
        let mut r = LabelRegistry::default();
        let tenant = r.intern(set("t"));
        let mut ring = ring_with(4, 3, 6, 0);
        write(&mut ring, 1, 5, tenant, Some(id), false);
        let (s, request) = r.context(&ring, context_id(5, 1)).unwrap();
        assert_eq!(s.unwrap().len(), 1);
        assert_eq!(request, id);
    }

    #[test]
    fn trimming_keeps_the_set_current_at_the_cut() {
        let mut t = LabelTimeline::default();
        t.append(&[1.0, 2.0, 3.0, 10.0], &[1, 2, 0, 3]);
        t.trim(5.0);
        assert_eq!(t.changes, [(3.0, 0), (10.0, 3)]);
        t.trim(0.0);
        assert_eq!(t.changes.len(), 2);
        // Out of order and non-finite changes are ignored; 30 s after the latest, the older go.
        t.append(&[9.0, f64::NAN, 11.0, 40_000_011.0], &[4, 4, 5, 6]);
        assert_eq!(t.changes, [(11.0, 5), (40_000_011.0, 6)]);
    }

    #[test]
    fn a_chunk_reads_its_own_window_of_a_long_timeline() {
        let mut r = LabelRegistry::default();
        let (a, b) = (r.intern(set("a")), r.intern(set("b")));
        let mut t = LabelTimeline::default();
        let times: Vec<f64> = (0..200_000).map(|i| 1e6 + i as f64 * 100.0).collect();
        let mut ids: Vec<u32> = (0..200_000).map(|i| if i % 2 == 0 { a } else { b }).collect();
        ids[150_000] = context_id(3, 7);
        ids[150_002] = context_id(3, 8);
        t.append(&times, &ids);
        let mut ring = ring_with(16, 7, 3, a);
        ring[8 * CONTEXT_RING_WORDS] = 4 + 1; // slot 8 written again since: generation 4
        let at = |i: usize| 1e6 + i as f64 * 100.0;
        let mut c = chunk(&[
            500_000.0,
            at(100_000),
            at(100_000) + 99.0,
            at(100_001),
            at(150_000) + 1.0,
            at(150_002),
            at(200_000) + 5e6,
        ]);
        t.label(&mut c, &r, &ring);
        let got = routes(&c);
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            got,
            [None, some("a"), some("a"), some("b"), some("a"), None, some("b")]
        );
        assert_eq!(c.labels_of(4).unwrap()["span_id"], "00f067aa0ba902b7");
        // Only the samples in a request's context say so.
        let requests: Vec<u32> = (0..7).map(|i| c.request_of(i)).collect();
        assert_eq!(requests, [0, 0, 0, 0, context_id(3, 7), 0, 0]);
        // A context is read once however many samples land in it.
        let mut c = chunk(&[at(150_000) + 1.0, at(150_000) + 2.0]);
        t.label(&mut c, &r, &ring);
        assert!(Arc::ptr_eq(c.labels_of(0).unwrap(), c.labels_of(1).unwrap()));
    }
}
