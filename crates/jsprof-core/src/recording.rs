//! What one `Profiler` keeps of the samples its thread's shared sampler harvests.
//!
//! The sampler runs V8 at the smallest interval any live Profiler asked for and harvests V8's profile
//! in [`Chunk`]s. Each Profiler owns a [`Recording`] that takes, from every chunk, only the samples in
//! its own window (from its construction to its `stop()` call) and at (about) its own interval, and
//! never more than its `maxBufferSize`. Chunks are shared (`Arc`): profilers that overlap keep one copy.
//!
//! A recording cut to intervals (a request's: only the times its own code ran) is a trace cut out of a
//! longer run: its trace says what weighing its samples needs ([`Recording::into_trace_with`]: the
//! `jsprof` member's `sampleInterval` and `windows`, see `trace/weights.rs`), and when it keeps fewer
//! samples than V8 took it keeps one per interval of *its own* time, so each kept sample stands for one
//! interval of it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::convert::sample_timestamp;
use crate::convert::{CallGraph, OwnCode, ProfileConverter, ScriptSources};
use crate::error::Result;
use crate::intervals::IntervalSet;
use crate::trace::labels::LabelSet;
use crate::trace::{Extension, ProfilerTrace, TraceBuilder, MAX_SAMPLE_INTERVAL_MS};
use crate::v8::{InspectorColumns, NodeKind, Profile};

/// What the thread ran under from one change of its timeline on: the label set, and the request
/// context as `(context, request)` ids (`(0, 0)`: none). See [`Chunk::label_samples_by`].
pub type RunningUnder = (Option<Arc<LabelSet>>, (u32, u32));

/// One harvest of the sampler: V8's profile between two harvests and the interval V8 sampled at.
#[derive(Debug)]
pub struct Chunk {
    pub profile: Profile,
    pub interval_us: f64,
    /// The label set each sample was taken under (same order as the samples), or empty when the
    /// chunk's samples carry no labels. See [`Chunk::label_samples`].
    pub labels: Vec<Option<Arc<LabelSet>>>,
    /// The request context each sample was taken in, as `(context, request)` ids (same order as the
    /// samples; `(0, 0)` for none), or empty when no sample was taken in one. Only a sample with code
    /// running is in a context (see [`Chunk::label_samples_by`]). A request profile keeps the samples
    /// of its request ([`Recording::keep_request`]: its own context and those its code entered); a
    /// trace built later asks each context its labels then ([`Recording::relabel`]).
    pub contexts: Vec<(u32, u32)>,
}

impl Chunk {
    /// The chunk of a harvest's inspector reply (see [`InspectorColumns`]), sampled every `interval_us`,
    /// without the samples stamped within the sampler's own harvests (`own_windows`: `[from, to, from,
    /// to, …]` µs, see [`Chunk::drop_samples_within`]). Returns it and how many samples were dropped.
    pub fn from_inspector(
        columns: &InspectorColumns,
        interval_us: f64,
        own_windows: &[f64],
    ) -> Result<(Chunk, usize)> {
        let profile = Profile::from_inspector(columns)?;
        let mut chunk = Chunk {
            profile,
            interval_us,
            labels: Vec::new(),
            contexts: Vec::new(),
        };
        let windows: Vec<(f64, f64)> = own_windows.chunks_exact(2).map(|w| (w[0], w[1])).collect();
        let dropped = chunk.drop_samples_within(&windows);
        Ok((chunk, dropped))
    }

    /// A chunk of no samples and no call tree, at `interval_us`: what a chunk becomes once every
    /// subscription had it (the recordings that keep some of its samples hold their own reference).
    pub fn empty(interval_us: f64) -> Chunk {
        Chunk {
            profile: Profile::default(),
            interval_us,
            labels: Vec::new(),
            contexts: Vec::new(),
        }
    }

    /// For many requests at once, how many of the chunk's samples each one holds (`requests[i]`: the
    /// id of request i's own context; 0 counts nothing).
    pub fn count_in_requests(&self, requests: &[u32]) -> Vec<u32> {
        let mut counts: HashMap<u32, u32> = requests
            .iter()
            .filter(|&&id| id != 0)
            .map(|&id| (id, 0))
            .collect();
        if !counts.is_empty() {
            for (_, request) in &self.contexts {
                if let Some(n) = counts.get_mut(request) {
                    *n += 1;
                }
            }
        }
        requests
            .iter()
            .map(|id| counts.get(id).copied().unwrap_or(0))
            .collect()
    }

    /// The runs of consecutive samples (in time order) of request `request`, as `[begin, end]` µs
    /// pairs from each run's first sample to its last: the request's own time within this chunk, cut
    /// where another request's sample, or one with no code running, came between.
    fn request_runs(&self, request: u32) -> Vec<f64> {
        let samples = &self.profile.samples;
        let mut order: Vec<usize> = (0..samples.len()).collect();
        order.sort_by(|&a, &b| samples[a].time.total_cmp(&samples[b].time));
        let mut runs = Vec::new();
        let mut open: Option<(f64, f64)> = None;
        for i in order {
            let t = samples[i].time;
            if self.request_of(i) == request {
                open = Some(open.map_or((t, t), |(begin, _)| (begin, t)));
            } else if let Some((begin, end)) = open.take() {
                runs.extend([begin, end]);
            }
        }
        if let Some((begin, end)) = open {
            runs.extend([begin, end]);
        }
        runs
    }

    /// Drops the samples stamped within any of `windows` (`[from_us, to_us]` pairs, µs on V8's clock):
    /// the sampler's own harvests. V8 adds a sample of the current stack whenever a profile starts
    /// (`CpuProfiler::StartProfiling` calls `AddCurrentStack`), and a harvest starts two (the bridge
    /// and the next profile): without this, each harvest put a sample of itself into every running
    /// profile — one sample in ten at 10 harvests a second and a 10 ms interval, all charged to the
    /// Node internals that ran the harvest. Returns how many samples were dropped.
    pub fn drop_samples_within(&mut self, windows: &[(f64, f64)]) -> usize {
        let before = self.profile.samples.len();
        if windows.is_empty() {
            return 0;
        }
        let inside = |t: f64| windows.iter().any(|&(from, to)| t >= from && t <= to);
        let samples = &self.profile.samples;
        if self.labels.len() == before {
            let mut i = 0;
            self.labels.retain(|_| {
                i += 1;
                !inside(samples[i - 1].time)
            });
        }
        if self.contexts.len() == before {
            let mut i = 0;
            self.contexts.retain(|_| {
                i += 1;
                !inside(samples[i - 1].time)
            });
        }
        self.profile.samples.retain(|s| !inside(s.time));
        before - self.profile.samples.len()
    }

    /// Gives each sample the label set that was current on its thread when it was taken: `times_us`
    /// (V8's clock, ascending) are the moments the thread's label set changed, `sets[i]` the set from
    /// `times_us[i]` on (`None`: no labels). A sample takes the last change at or before its time; one
    /// before the first change has none. No change at all leaves the chunk without labels.
    ///
    /// A sample with no code running (its leaf `(idle)`, `(program)` or `(root)`: the event loop
    /// waiting, native work outside JS) carries no labels whatever the timeline says: the labels are
    /// the running code's, and the JS side (lib/labels.js) leaves the last set current when a callback
    /// returns to the event loop rather than recording "no labels" after every callback.
    pub fn label_samples(&mut self, times_us: &[f64], sets: &[Option<Arc<LabelSet>>]) {
        let n = times_us.len().min(sets.len());
        if sets[..n].iter().all(Option::is_none) {
            self.labels = Vec::new();
            self.contexts = Vec::new();
            return;
        }
        self.label_samples_by(&times_us[..n], |i| (sets[i].clone(), (0, 0)));
    }

    /// [`Chunk::label_samples`] with what holds from `times_us[i]` on given by `context_of(i)`: the
    /// label set, and the request context the thread ran in, `(context, request)` (`(0, 0)`: none) —
    /// asked only for the changes some sample falls in (a timeline holds a context per request, most
    /// of which no sample lands in: the binding reads only those that do). The rule for a sample with
    /// no code running is the labels' for its context too: it is in no request's context (the thread
    /// may as well have been waiting for the next callback of any request).
    pub fn label_samples_by(&mut self, times_us: &[f64], mut context_of: impl FnMut(usize) -> RunningUnder) {
        self.labels = Vec::new();
        self.contexts = Vec::new();
        if times_us.is_empty() {
            return;
        }
        let mut labels = Vec::with_capacity(self.profile.samples.len());
        let mut contexts = Vec::with_capacity(self.profile.samples.len());
        for s in &self.profile.samples {
            let running = self
                .profile
                .nodes
                .get(s.node as usize)
                .is_some_and(|n| matches!(n.kind, NodeKind::Code | NodeKind::GarbageCollector));
            let after = times_us.partition_point(|&t| t <= s.time);
            let (set, context) = match after.checked_sub(1) {
                Some(i) if running => context_of(i),
                _ => (None, (0, 0)),
            };
            labels.push(set);
            contexts.push(context);
        }
        if labels.iter().any(Option::is_some) {
            self.labels = labels;
        }
        if contexts.iter().any(|&(_, request)| request != 0) {
            self.contexts = contexts;
        }
    }

    /// The label set of sample `i`.
    pub fn labels_of(&self, i: usize) -> Option<&Arc<LabelSet>> {
        self.labels.get(i).and_then(Option::as_ref)
    }

    /// The request context sample `i` was taken in (0: none).
    pub fn context_of(&self, i: usize) -> u32 {
        self.contexts.get(i).map_or(0, |&(context, _)| context)
    }

    /// The request sample `i` belongs to: the id of its own context (0: none).
    pub fn request_of(&self, i: usize) -> u32 {
        self.contexts.get(i).map_or(0, |&(_, request)| request)
    }

    /// The sample times (µs) in ascending order.
    pub fn sorted_sample_times(&self) -> Vec<f64> {
        let mut times: Vec<f64> = self.profile.samples.iter().map(|s| s.time).collect();
        times.sort_by(f64::total_cmp);
        times
    }
}

/// The result of offering a chunk to a recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Added {
    /// Samples of the chunk this recording keeps.
    pub accepted: usize,
    /// True the first time a sample would have exceeded the buffer: dispatch `samplebufferfull`.
    pub became_full: bool,
}

#[derive(Debug)]
pub struct Recording {
    start_us: f64,
    interval_us: f64,
    max_samples: u32,
    stop_us: Option<f64>,
    chunks: Vec<Arc<Chunk>>,
    /// (index into `chunks`, index into that chunk's samples), in V8's order.
    selected: Vec<(u32, u32)>,
    next_due_us: f64,
    /// For a recording cut to intervals that keeps fewer samples than V8 takes: the time (µs) its own
    /// V8 samples seen since the last one kept stand for, which decides the next (NaN before the
    /// first), and the last of them seen (its time, and the start of its interval).
    credit_us: f64,
    last_candidate: Option<(f64, f64)>,
    /// The longest interval (µs) V8 ran at in a chunk this recording kept samples of.
    kept_chunk_interval_us: f64,
    /// Time of the latest kept sample. Chunks from harvests that overlap (a full restart next to a
    /// profile that kept running) would hold the same ticks, so a later chunk's sample at or before it
    /// is one already kept. Within a chunk V8's order is kept as it is, a sample V8 reordered (a
    /// negative time delta) included, as Chrome keeps it.
    last_kept_us: f64,
    full: bool,
    /// When true, a sample taken exactly at `start_us` belongs to the previous recording (hand-off).
    start_exclusive: bool,
    /// When set: only the samples of this request are kept (see [`Recording::keep_request`]).
    request: Option<u32>,
    /// For a recording cut to a request: the runs of its samples in the chunks so far (the windows
    /// its samples are weighed within, see [`Recording::into_trace_with`]).
    intervals: Option<IntervalSet>,
    /// The labels of the kept samples as their contexts say them now ([`Recording::relabel`]), in
    /// the order of `selected`; empty: each sample's as its chunk's harvest found them.
    relabelled: Vec<Option<Arc<LabelSet>>>,
    /// The profiler's own code, left out of the trace's stacks (see [`OwnCode`]).
    own_code: Option<Arc<OwnCode>>,
    /// Set for a recording converted as it goes (see [`Recording::stream_into_trace`]).
    streamed: Option<Streamed>,
    /// Set when the samples of code V8 inlined go to the inlined function (see
    /// [`Recording::split_inlined`]).
    inlined: Option<Inlined>,
}

/// What a recording that gives inlined functions their samples reads: the calls V8 saw (the thread's,
/// gathered from every harvest) and the scripts' sources.
#[derive(Clone)]
struct Inlined {
    graph: Arc<Mutex<CallGraph>>,
    sources: Arc<dyn ScriptSources>,
}

impl std::fmt::Debug for Inlined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inlined").finish_non_exhaustive()
    }
}

impl Inlined {
    /// `converter` splitting the samples of its profile's nodes by V8's per-line ticks.
    fn apply<'p>(&self, converter: ProfileConverter<'p>) -> ProfileConverter<'p> {
        let graph = self.graph.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        converter.splitting_inlined(Some((&graph, &*self.sources)))
    }
}

/// The samples a streaming recording has already converted, and the time origin they count from.
struct Streamed {
    time_origin_us: f64,
    builder: TraceBuilder,
    samples: usize,
}

impl std::fmt::Debug for Streamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streamed")
            .field("time_origin_us", &self.time_origin_us)
            .field("samples", &self.samples)
            .finish_non_exhaustive()
    }
}

impl Recording {
    /// A recording of samples taken from `start_us` on (V8's clock), one every `interval_us`, at most
    /// `max_samples` of them.
    pub fn new(start_us: f64, interval_us: f64, max_samples: u32) -> Self {
        Recording {
            start_us,
            interval_us,
            max_samples,
            stop_us: None,
            chunks: Vec::new(),
            selected: Vec::new(),
            next_due_us: start_us,
            credit_us: f64::NAN,
            last_candidate: None,
            kept_chunk_interval_us: 0.0,
            last_kept_us: f64::NEG_INFINITY,
            full: false,
            start_exclusive: false,
            request: None,
            intervals: None,
            relabelled: Vec::new(),
            own_code: None,
            streamed: None,
            inlined: None,
        }
    }

    /// Gives the samples of code V8 inlined into a function the inlined function's frame, as V8's
    /// per-line ticks say (`crate::convert::inlined`): by the calls in `graph` (the caller keeps it
    /// holding the calls of every chunk, this recording's included), the scripts read through
    /// `sources`.
    pub fn split_inlined(&mut self, graph: Arc<Mutex<CallGraph>>, sources: Arc<dyn ScriptSources>) {
        self.inlined = Some(Inlined { graph, sources });
    }

    /// This recording, leaving an empty one of no samples in its place: for building its trace
    /// elsewhere (another thread) while the owner keeps a valid value.
    pub fn take(&mut self) -> Recording {
        std::mem::replace(self, Recording::new(0.0, 1.0, 0))
    }

    /// Converts the samples into the trace (timestamps relative to `time_origin_us`) as each chunk
    /// comes, and lets the chunk go: what it holds is the trace's tables and one small sample each,
    /// however long it runs. For a recording with no end in sight (`jsprof record`, hours long):
    /// keeping every chunk's call tree would grow with each harvest. Such a recording keeps what it
    /// took: a later `stop_at` or `keep_request` applies to the chunks after it only. Get its
    /// trace with [`Recording::into_trace`].
    pub fn stream_into_trace(&mut self, time_origin_us: f64) {
        if self.streamed.is_none() {
            self.streamed = Some(Streamed {
                time_origin_us,
                builder: TraceBuilder::new(),
                samples: 0,
            });
        }
    }

    /// Leaves the profiler's own code out of the stacks of the built trace.
    pub fn hide_own_code(&mut self, own: Arc<OwnCode>) {
        self.own_code = Some(own);
    }

    /// Makes the window start strictly after `start_us`: a recording that takes over from one stopped
    /// at `start_us` (continuous profiling) shares no sample with it and misses none.
    pub fn set_start_exclusive(&mut self, exclusive: bool) {
        self.start_exclusive = exclusive;
    }

    /// Keeps only the samples of request `request` (the id of its own context, see
    /// [`Chunk::contexts`]): a request's profile, cut from the thread's one record of which context
    /// runs. Applies to samples already taken (dropped from the recording) and to later chunks. The
    /// trace's windows, within which its samples are weighed, are the runs of the request's samples
    /// in each chunk: a sample followed by another request's stands for one interval, not for the
    /// other's time.
    pub fn keep_request(&mut self, request: u32) {
        let chunks = &self.chunks;
        self.selected
            .retain(|&(c, i)| chunks[c as usize].request_of(i as usize) == request);
        self.relabelled.clear();
        let mut runs = IntervalSet::default();
        for chunk in &self.chunks {
            runs.extend_flat(&chunk.request_runs(request));
        }
        self.request = Some(request);
        self.intervals = Some(runs);
    }

    /// Gives the kept samples taken in a request context the labels `labels_of(context)` says that
    /// context has now (None: it cannot say, its slot reused since: the harvest's labels stay), each
    /// context asked once: a trace built after the request learned its route (or its span its final
    /// name) says so of every sample of it, also of those harvested before. For the trace built next.
    pub fn relabel(&mut self, mut labels_of: impl FnMut(u32) -> Option<Option<Arc<LabelSet>>>) {
        let mut known: HashMap<u32, Option<Option<Arc<LabelSet>>>> = HashMap::new();
        let chunks = &self.chunks;
        let relabelled: Vec<Option<Arc<LabelSet>>> = self
            .selected
            .iter()
            .map(|&(c, i)| {
                let chunk = &chunks[c as usize];
                let harvested = chunk.labels_of(i as usize).cloned();
                match chunk.context_of(i as usize) {
                    0 => harvested,
                    context => known
                        .entry(context)
                        .or_insert_with(|| labels_of(context))
                        .clone()
                        .unwrap_or(harvested),
                }
            })
            .collect();
        if !known.is_empty() {
            self.relabelled = relabelled;
        }
    }

    /// Samples taken after `stop_us` are not kept (the spec: samples after `stop()` are excluded).
    pub fn stop_at(&mut self, stop_us: f64) {
        self.stop_us = Some(self.stop_us.map_or(stop_us, |s| s.min(stop_us)));
    }

    pub fn is_full(&self) -> bool {
        self.full
    }

    pub fn sample_count(&self) -> usize {
        self.selected.len() + self.streamed.as_ref().map_or(0, |s| s.samples)
    }

    /// The number of chunks this recording holds on to.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Takes this recording's samples from a harvested chunk. Once full it takes nothing more, so its
    /// memory stops growing.
    pub fn add_chunk(&mut self, chunk: &Arc<Chunk>) -> Added {
        let mut added = Added::default();
        if self.full {
            return added;
        }
        let chunk_index = self.chunks.len() as u32;
        // A profiler at the sampler's own interval keeps every sample V8 took, bursts included (a
        // loaded machine delays V8's sampler thread, which then samples twice in quick succession):
        // that is the trace Chrome gives at that interval. A slower one keeps one sample per interval,
        // with half a sampler tick of slack so 10x the sampler's interval keeps about every 10th: by
        // time for a contiguous window, by its own time for a recording cut to intervals: each of its
        // V8 samples stands for the time the weighting rule gives it (the gap from the one before in
        // the same interval, at most two ticks; one tick after a cut), and one sample is kept per
        // interval of that time. (By wall-clock time, a request's short intervals spread over a long
        // wait would each keep a sample, each standing for ten intervals of its time.)
        let decimate = self.interval_us > chunk.interval_us;
        let slack = chunk.interval_us / 2.0;
        let kept_before = self.last_kept_us;
        self.relabelled.clear();
        if let (Some(request), Some(runs)) = (self.request, self.intervals.as_mut()) {
            runs.extend_flat(&chunk.request_runs(request));
        }
        for (i, sample) in chunk.profile.samples.iter().enumerate() {
            let t = sample.time;
            if t < self.start_us
                || (self.start_exclusive && t <= self.start_us)
                || self.stop_us.is_some_and(|stop| t > stop)
                || t <= kept_before
                || self.request.is_some_and(|r| chunk.request_of(i) != r)
            {
                continue;
            }
            if decimate {
                if self.intervals.is_none() {
                    if t < self.next_due_us {
                        continue;
                    }
                } else {
                    let tick = chunk.interval_us;
                    let interval = self
                        .intervals
                        .as_ref()
                        .and_then(|iv| iv.index_of(t).and_then(|i| iv.get(i)))
                        .map_or(f64::NAN, |(begin, _)| begin);
                    let stands_for = match self.last_candidate {
                        Some((before, its)) if its == interval && t > before => (t - before).min(2.0 * tick),
                        _ => tick,
                    };
                    self.last_candidate = Some((t, interval));
                    if self.credit_us.is_nan() {
                        self.credit_us = self.interval_us - stands_for;
                    }
                    self.credit_us += stands_for;
                    if self.credit_us < self.interval_us - slack {
                        continue;
                    }
                }
            }
            if self.sample_count() >= self.max_samples as usize {
                self.full = true;
                added.became_full = true;
                break;
            }
            self.selected.push((chunk_index, i as u32));
            self.next_due_us = t + self.interval_us - slack;
            if decimate && self.intervals.is_some() {
                self.credit_us -= self.interval_us;
            }
            self.last_kept_us = self.last_kept_us.max(t);
            added.accepted += 1;
        }
        if added.accepted > 0 {
            self.chunks.push(Arc::clone(chunk));
            self.kept_chunk_interval_us = self.kept_chunk_interval_us.max(chunk.interval_us);
        }
        if let Some(streamed) = self.streamed.as_mut() {
            let converter = ProfileConverter::new(&chunk.profile, streamed.time_origin_us);
            let converter = match &self.own_code {
                Some(own) => converter.hiding(own),
                None => converter,
            };
            let mut converter = match &self.inlined {
                Some(inlined) => inlined.apply(converter),
                None => converter,
            };
            for &(_, sample) in &self.selected {
                let s = converter.sample(&mut streamed.builder, &chunk.profile.samples[sample as usize]);
                streamed
                    .builder
                    .push_labelled_sample(s, chunk.labels_of(sample as usize));
            }
            streamed.samples += self.selected.len();
            self.selected.clear();
            self.chunks.clear();
        }
        added
    }

    /// [`Recording::into_trace`] with the `jsprof` member: `clock` (the recording's pid, thread and
    /// time origin, as the caller knows them) and what weighing its samples needs, which the recording
    /// knows: `sampleInterval`, the interval its samples stand for (its own, or V8's when V8 ran slower
    /// for a while), and for a recording cut to intervals `windows`, the intervals (within its start
    /// and stop) that hold its samples, in the trace's ms.
    pub fn into_trace_with(self, time_origin_us: f64, clock: Extension) -> ProfilerTrace {
        let origin = self
            .streamed
            .as_ref()
            .map_or(time_origin_us, |s| s.time_origin_us);
        let windows = self.windows(origin);
        let sample_interval = Some(self.interval_us.max(self.kept_chunk_interval_us) / 1000.0)
            .filter(|ms| *ms > 0.0)
            .map(|ms| ms.min(MAX_SAMPLE_INTERVAL_MS));
        let mut trace = self.into_trace(time_origin_us);
        let labels = trace.jsprof.take().unwrap_or_default();
        let jsprof = Extension {
            label_sets: labels.label_sets,
            labels_dropped: labels.labels_dropped,
            sample_labels: labels.sample_labels,
            sample_interval,
            windows,
            ..clock
        };
        trace.jsprof = (!jsprof.is_empty()).then_some(jsprof);
        trace
    }

    /// [`Recording::into_trace_with`] when the caller gives a `clock` (`jsprof record`, a request, a
    /// stall), else the plain spec trace of a `Profiler` ([`Recording::into_trace`]).
    pub fn into_trace_clocked(self, time_origin_us: f64, clock: Option<Extension>) -> ProfilerTrace {
        match clock {
            Some(clock) => self.into_trace_with(time_origin_us, clock),
            None => self.into_trace(time_origin_us),
        }
    }

    /// The intervals of a cut recording that hold kept samples, clipped to its window, as `[begin,
    /// end]` ms from `time_origin_us` (rounded as the timestamps are, so each sample stays inside its
    /// window; two windows that meet once rounded are one). `None` for a recording not cut.
    fn windows(&self, time_origin_us: f64) -> Option<Vec<[f64; 2]>> {
        let set = self.intervals.as_ref()?;
        let mut used: Vec<usize> = self
            .selected
            .iter()
            .filter_map(|&(c, i)| set.index_of(self.chunks[c as usize].profile.samples[i as usize].time))
            .collect();
        used.sort_unstable();
        used.dedup();
        let mut windows: Vec<[f64; 2]> = Vec::with_capacity(used.len());
        for (begin, end) in used.into_iter().filter_map(|i| set.get(i)) {
            let begin = sample_timestamp(begin.max(self.start_us), time_origin_us);
            let end = sample_timestamp(self.stop_us.map_or(end, |stop| end.min(stop)), time_origin_us);
            match windows.last_mut() {
                Some(last) if begin <= last[1] => last[1] = last[1].max(end),
                _ => windows.push([begin, end]),
            }
        }
        Some(windows)
    }

    /// The trace of the kept samples, timestamps relative to `time_origin_us` — for a streaming
    /// recording, to the origin it was given then. A plain spec trace: no `jsprof` member (see
    /// [`Recording::into_trace_with`]).
    pub fn into_trace(self, time_origin_us: f64) -> ProfilerTrace {
        match self.streamed {
            Some(streamed) => streamed.builder.finish(),
            None => self.build(time_origin_us),
        }
    }

    /// The spec's trace of the kept samples, timestamps relative to `time_origin_us` (V8's clock).
    /// A streaming recording holds its samples elsewhere: see [`Recording::into_trace`].
    pub fn build(&self, time_origin_us: f64) -> ProfilerTrace {
        let mut builder = TraceBuilder::new();
        let mut converters: Vec<ProfileConverter> = self
            .chunks
            .iter()
            .map(|c| {
                let converter = ProfileConverter::new(&c.profile, time_origin_us);
                let converter = match &self.own_code {
                    Some(own) => converter.hiding(own),
                    None => converter,
                };
                match &self.inlined {
                    Some(inlined) => inlined.apply(converter),
                    None => converter,
                }
            })
            .collect();
        for (k, &(chunk, sample)) in self.selected.iter().enumerate() {
            let c = &self.chunks[chunk as usize];
            let s = converters[chunk as usize].sample(&mut builder, &c.profile.samples[sample as usize]);
            let labels = match self.relabelled.get(k) {
                Some(now) => now.as_ref(),
                None => c.labels_of(sample as usize),
            };
            builder.push_labelled_sample(s, labels);
        }
        builder.finish()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::trace::Extension;
    use crate::v8::ProfileBuilder;

    /// A chunk with one code node and samples at the given times (µs).
    /// A chunk of samples of one function at `times`.
    pub(crate) fn chunk(times: &[f64], interval_us: f64) -> Arc<Chunk> {
        let mut b = ProfileBuilder::with_capacity(2);
        b.add_node(1, "(root)", "", -1, -1).unwrap();
        b.add_node(2, "f", "file:///f.js", 0, 0).unwrap();
        b.set_children(0, &[2]).unwrap();
        let mut deltas = Vec::new();
        let mut last = 0.0;
        for &t in times {
            deltas.push(t - last);
            last = t;
        }
        let samples = vec![2; times.len()];
        let profile = b.finish(&samples, &deltas, 0.0, last).unwrap();
        Arc::new(Chunk {
            profile,
            interval_us,
            labels: Vec::new(),
            contexts: Vec::new(),
        })
    }

    fn set(route: &str) -> Option<Arc<LabelSet>> {
        Some(Arc::new(LabelSet::from([("route".to_owned(), route.to_owned())])))
    }

    /// The request context of the tests' cut recordings.
    const OWN: u32 = 7;

    /// `c` with its samples in context [`OWN`] inside one of `[begin, end]` `ranges` (µs) and in
    /// another request's context (9) elsewhere, as the timeline would say.
    fn in_context(c: Arc<Chunk>, ranges: &[(f64, f64)]) -> Arc<Chunk> {
        let mut c = Arc::try_unwrap(c).unwrap();
        c.contexts = c
            .profile
            .samples
            .iter()
            .map(|s| {
                if ranges.iter().any(|&(b, e)| b <= s.time && s.time <= e) {
                    (OWN, OWN)
                } else {
                    (9, 9)
                }
            })
            .collect();
        Arc::new(c)
    }

    fn labelled(times: &[f64], changes: &[f64], sets: &[Option<Arc<LabelSet>>]) -> Arc<Chunk> {
        let mut c = Arc::try_unwrap(chunk(times, 1_000.0)).unwrap();
        c.label_samples(changes, sets);
        Arc::new(c)
    }

    #[test]
    fn each_sample_takes_the_label_set_current_at_its_time() {
        let (a, b) = (set("a"), set("b"));
        let c = labelled(
            &[500.0, 1_000.0, 1_500.0, 2_000.0, 3_000.0, 2_500.0],
            &[1_000.0, 2_000.0, 2_600.0],
            &[a.clone(), None, b.clone()],
        );
        let got: Vec<Option<&str>> = (0..6)
            .map(|i| c.labels_of(i).map(|s| s["route"].as_str()))
            .collect();
        // Before the first change: none; a change at a sample's very time applies to it; the one V8
        // reordered (2_500 after 3_000) takes the set of its own time.
        assert_eq!(got, [None, Some("a"), Some("a"), None, Some("b"), None]);
        // No change, or only changes to none: no labels at all.
        let mut plain = Arc::try_unwrap(chunk(&[1.0], 1_000.0)).unwrap();
        plain.label_samples(&[], &[]);
        assert!(plain.labels.is_empty());
        plain.label_samples(&[0.0], &[None]);
        assert!(plain.labels.is_empty());
    }

    #[test]
    fn only_the_changes_samples_fall_in_are_asked_for() {
        let mut c = Arc::try_unwrap(chunk(&[1_500.0, 1_600.0, 3_500.0], 1_000.0)).unwrap();
        let mut asked = Vec::new();
        c.label_samples_by(&[1_000.0, 2_000.0, 3_000.0, 4_000.0], |i| {
            asked.push(i);
            (set(&i.to_string()), (0, 0))
        });
        asked.sort_unstable();
        asked.dedup();
        assert_eq!(asked, [0, 2], "changes 1 and 3 hold no sample");
        let got: Vec<Option<&str>> = (0..3)
            .map(|i| c.labels_of(i).map(|s| s["route"].as_str()))
            .collect();
        assert_eq!(got, [Some("0"), Some("0"), Some("2")]);
    }

    #[test]
    fn samples_with_no_code_running_carry_no_labels_and_are_in_no_request() {
        // (root) -> f, (root) -> (program), (root) -> (idle), (root) -> (garbage collector).
        let mut b = ProfileBuilder::with_capacity(5);
        b.add_node(1, "(root)", "", -1, -1).unwrap();
        b.add_node(2, "f", "file:///f.js", 0, 0).unwrap();
        b.add_node(3, "(program)", "", -1, -1).unwrap();
        b.add_node(4, "(idle)", "", -1, -1).unwrap();
        b.add_node(5, "(garbage collector)", "", -1, -1).unwrap();
        b.set_children(0, &[2, 3, 4, 5]).unwrap();
        let profile = b.finish(&[2, 3, 4, 5, 1, 2], &[10.0; 6], 0.0, 60.0).unwrap();
        let mut c = Chunk {
            profile,
            interval_us: 10.0,
            labels: Vec::new(),
            contexts: Vec::new(),
        };
        // One set current all along (as the JS side leaves it when a callback returns to the loop).
        c.label_samples(&[0.0], &[set("a")]);
        let got: Vec<Option<&str>> = (0..6)
            .map(|i| c.labels_of(i).map(|s| s["route"].as_str()))
            .collect();
        assert_eq!(got, [Some("a"), None, None, Some("a"), None, Some("a")]);
        assert!(c.contexts.is_empty(), "no request context at all");
        // Request 7's context all along, then from 55 µs a context request 7's code entered, with
        // no labels: a request's samples are those with code running.
        c.label_samples_by(&[0.0, 55.0], |i| {
            [(set("a"), (OWN, OWN)), (None, (8, OWN))][i].clone()
        });
        let requests: Vec<u32> = (0..6).map(|i| c.request_of(i)).collect();
        assert_eq!(requests, [OWN, 0, 0, OWN, 0, OWN]);
        let contexts: Vec<u32> = (0..6).map(|i| c.context_of(i)).collect();
        assert_eq!(contexts, [OWN, 0, 0, OWN, 0, 8]);
        assert!(c.labels_of(5).is_none());
    }

    #[test]
    fn dropping_own_samples_keeps_the_labels_aligned() {
        let mut c = Arc::try_unwrap(labelled(
            &[1_000.0, 2_000.0, 3_000.0],
            &[0.0, 2_500.0],
            &[set("a"), set("b")],
        ))
        .unwrap();
        assert_eq!(c.drop_samples_within(&[(1_500.0, 2_000.0)]), 1);
        assert_eq!(c.labels.len(), 2);
        assert_eq!(c.labels_of(0).unwrap()["route"], "a");
        assert_eq!(c.labels_of(1).unwrap()["route"], "b");
    }

    #[test]
    fn a_cut_recording_keeps_the_labels_of_its_own_samples() {
        let (a, b) = (set("a"), set("b"));
        let first = labelled(
            &every(1_000.0, 4_000.0, 1_000.0),
            &[0.0, 2_500.0],
            &[a.clone(), b.clone()],
        );
        let second = labelled(
            &every(5_000.0, 7_000.0, 1_000.0),
            &[4_500.0],
            std::slice::from_ref(&a),
        );
        let own = [(2_000.0, 3_000.0), (6_000.0, 7_000.0)];
        let (first, second) = (in_context(first, &own), in_context(second, &own));
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.add_chunk(&first);
        r.keep_request(OWN);
        r.add_chunk(&second);
        let t = r.into_trace_with(0.0, Extension::default());
        let ts: Vec<f64> = t.samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(ts, [2.0, 3.0, 6.0, 7.0]);
        let ext = t.jsprof.as_ref().unwrap();
        assert_eq!(ext.label_sets.as_ref().unwrap().len(), 2);
        let routes: Vec<&str> = (0..4)
            .map(|i| ext.labels_of(i).unwrap()["route"].as_str())
            .collect();
        assert_eq!(routes, ["a", "b", "a", "a"]);
        assert!(ext.windows.is_some() && ext.sample_interval.is_some());
        t.validate().unwrap();
        // Through JSON and back.
        let back = ProfilerTrace::from_json(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn a_streaming_recording_carries_labels_and_counts_dropped_sets() {
        let dropped = Some(Arc::new(LabelSet::new()));
        let c = labelled(
            &[1_000.0, 2_000.0, 3_000.0],
            &[0.0, 1_500.0, 2_500.0],
            &[None, set("x"), dropped],
        );
        let mut kept = Recording::new(0.0, 1_000.0, 100);
        let mut streamed = Recording::new(0.0, 1_000.0, 100);
        streamed.stream_into_trace(0.0);
        kept.add_chunk(&c);
        streamed.add_chunk(&c);
        let t = streamed.into_trace(0.0);
        assert_eq!(t, kept.into_trace(0.0));
        let ext = t.jsprof.unwrap();
        assert_eq!(ext.sample_labels.as_deref(), Some(&[None, Some(0), None][..]));
        assert_eq!(ext.labels_dropped, Some(1));
    }

    #[test]
    fn the_samplers_own_windows_are_dropped() {
        let mut c = Arc::try_unwrap(chunk(&[10.0, 20.0, 30.0, 40.0, 50.0], 10.0)).unwrap();
        assert_eq!(c.drop_samples_within(&[]), 0);
        assert_eq!(c.drop_samples_within(&[(19.5, 30.0), (49.0, 49.9)]), 2);
        assert_eq!(c.sorted_sample_times(), vec![10.0, 40.0, 50.0]);
    }

    #[test]
    fn counts_each_requests_samples_by_its_context() {
        let c = in_context(chunk(&[10.0, 20.0, 30.0, 40.0, 50.0], 10.0), &[(15.0, 35.0)]);
        assert_eq!(c.count_in_requests(&[OWN, 3, 9, 0, OWN]), vec![2, 0, 3, 0, 2]);
        assert_eq!(c.count_in_requests(&[]), Vec::<u32>::new());
        assert_eq!(
            chunk(&[10.0], 10.0).count_in_requests(&[OWN]),
            vec![0],
            "no context at all"
        );
    }

    #[test]
    fn an_empty_chunk_and_a_taken_recording_hold_nothing() {
        let empty = Chunk::empty(250.0);
        assert_eq!((empty.profile.samples.len(), empty.profile.nodes.len()), (0, 0));
        assert_eq!(empty.interval_us, 250.0);
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.add_chunk(&chunk(&[1_000.0, 2_000.0], 1_000.0));
        let taken = r.take();
        assert_eq!(taken.sample_count(), 2);
        assert_eq!((r.sample_count(), r.chunk_count()), (0, 0));
        assert!(r.add_chunk(&chunk(&[3_000.0], 1_000.0)).became_full);
    }

    fn every(from: f64, to: f64, step: f64) -> Vec<f64> {
        let mut v = Vec::new();
        let mut t = from;
        while t <= to {
            v.push(t);
            t += step;
        }
        v
    }

    #[test]
    fn keeps_only_its_window() {
        let mut r = Recording::new(5_000.0, 1_000.0, 1000);
        r.stop_at(9_000.0);
        let added = r.add_chunk(&chunk(&every(1_000.0, 20_000.0, 1_000.0), 1_000.0));
        assert_eq!(
            added,
            Added {
                accepted: 5,
                became_full: false
            }
        );
        let t = r.build(5_000.0);
        let ts: Vec<f64> = t.samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(ts, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn same_interval_keeps_every_jittery_sample() {
        let times = [1_000.0, 1_900.0, 3_050.0, 3_980.0, 5_020.0];
        let mut r = Recording::new(0.0, 1_000.0, 100);
        assert_eq!(r.add_chunk(&chunk(&times, 1_000.0)).accepted, 5);
    }

    #[test]
    fn overlapping_harvests_give_each_tick_once_in_order() {
        // A harvest's profile, the bridge over the restart, and the next profile share ticks.
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.add_chunk(&chunk(&[1_000.0, 2_000.0, 3_000.0], 1_000.0));
        r.add_chunk(&chunk(&[2_000.0, 3_000.0, 3_500.0, 4_000.0], 1_000.0));
        r.add_chunk(&chunk(&[4_000.0, 5_000.0], 1_000.0));
        let ts: Vec<f64> = r.build(0.0).samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(ts, vec![1.0, 2.0, 3.0, 3.5, 4.0, 5.0]);
    }

    #[test]
    fn a_sample_v8_reordered_keeps_its_place_within_a_chunk() {
        // timeDeltas can be negative: V8 hands some samples out of time order. Chrome keeps V8's order.
        let times = [1_000.0, 2_000.0, 1_900.0, 3_000.0];
        let mut r = Recording::new(0.0, 1_000.0, 100);
        assert_eq!(r.add_chunk(&chunk(&times, 1_000.0)).accepted, 4);
        let ts: Vec<f64> = r.build(0.0).samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(ts, vec![1.0, 2.0, 1.9, 3.0]);
    }

    #[test]
    fn same_interval_keeps_a_burst_after_a_stall() {
        // V8's sampler thread starved for 5 ms, then two samples 0.1 ms apart: both are V8's samples.
        let times = [1_000.0, 2_000.0, 7_000.0, 7_100.0, 8_000.0];
        let mut r = Recording::new(0.0, 1_000.0, 100);
        assert_eq!(r.add_chunk(&chunk(&times, 1_000.0)).accepted, 5);
        // A slower profiler still thins the burst out.
        let mut slow = Recording::new(0.0, 2_000.0, 100);
        let kept = slow.add_chunk(&chunk(&times, 1_000.0)).accepted;
        assert_eq!(kept, 2, "1000 and 7000; the others come before the next is due");
    }

    #[test]
    fn a_slower_profiler_gets_about_its_own_interval() {
        let mut r = Recording::new(0.0, 10_000.0, 10_000);
        let added = r.add_chunk(&chunk(&every(0.0, 1_000_000.0, 1_000.0), 1_000.0));
        // One second at 1 ms, kept at 10 ms: about 100 samples.
        assert!((99..=101).contains(&added.accepted), "{added:?}");
        let t = r.build(0.0);
        for pair in t.samples.windows(2) {
            let gap = pair[1].timestamp - pair[0].timestamp;
            assert!((9.0..=11.0).contains(&gap), "gap {gap}");
        }
    }

    #[test]
    fn the_buffer_limit_holds_and_reports_once() {
        let mut r = Recording::new(0.0, 1_000.0, 3);
        let first = r.add_chunk(&chunk(&every(1_000.0, 10_000.0, 1_000.0), 1_000.0));
        assert_eq!(
            first,
            Added {
                accepted: 3,
                became_full: true
            }
        );
        assert!(r.is_full());
        let second = r.add_chunk(&chunk(&every(11_000.0, 20_000.0, 1_000.0), 1_000.0));
        assert_eq!(
            second,
            Added {
                accepted: 0,
                became_full: false
            }
        );
        assert_eq!(r.chunk_count(), 1, "a full recording holds no new chunk");
        assert_eq!(r.build(0.0).samples.len(), 3);
    }

    #[test]
    fn exactly_full_is_not_overflow() {
        let mut r = Recording::new(0.0, 1_000.0, 3);
        let added = r.add_chunk(&chunk(&[1_000.0, 2_000.0, 3_000.0], 1_000.0));
        assert_eq!(
            added,
            Added {
                accepted: 3,
                became_full: false
            }
        );
        let next = r.add_chunk(&chunk(&[4_000.0], 1_000.0));
        assert_eq!(
            next,
            Added {
                accepted: 0,
                became_full: true
            }
        );
    }

    #[test]
    fn zero_max_fills_on_the_first_sample() {
        let mut r = Recording::new(0.0, 1_000.0, 0);
        assert_eq!(
            r.add_chunk(&chunk(&[1_000.0], 1_000.0)),
            Added {
                accepted: 0,
                became_full: true
            }
        );
    }

    #[test]
    fn spans_several_chunks_with_one_set_of_tables() {
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.add_chunk(&chunk(&[1_000.0, 2_000.0], 1_000.0));
        r.add_chunk(&chunk(&[3_000.0, 4_000.0], 1_000.0));
        let t = r.build(0.0);
        assert_eq!(t.samples.len(), 4);
        assert_eq!(t.frames.len(), 1, "the same function in two chunks is one frame");
        assert_eq!(t.stacks.len(), 1);
        assert!(t.samples.iter().all(|s| s.stack_id == Some(0)));
    }

    #[test]
    fn a_cut_recording_says_its_interval_and_the_windows_that_hold_its_samples() {
        // A request's own code ran in [900, 2_500], [4_400, 4_600] and [7_000, 7_100] µs; V8 at 1 ms.
        let mut r = Recording::new(500.0, 1_000.0, 100);
        r.keep_request(OWN);
        let own = [(900.0, 2_500.0), (4_400.0, 4_600.0), (7_000.0, 7_100.0)];
        r.add_chunk(&in_context(
            chunk(&every(1_000.0, 9_000.0, 1_000.0), 1_000.0),
            &own,
        ));
        r.stop_at(8_000.0);
        let t = r.into_trace_with(500.0, Extension::clock(Some(7), Some(0), Some(1.7e12)));
        let ts: Vec<f64> = t.samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(ts, vec![0.5, 1.5, 6.5]);
        let ext = t.jsprof.clone().unwrap();
        assert_eq!(ext.sample_interval, Some(1.0));
        assert_eq!(
            ext.windows,
            Some(vec![[0.5, 1.5], [6.5, 6.5]]),
            "the runs of its own samples"
        );
        assert_eq!((ext.pid, ext.time_origin), (Some(7), Some(1.7e12)));
        t.validate().unwrap();
        assert_eq!(t.sample_weights(), vec![1.0, 1.0, 1.0]);
        // Not cut: the interval, no windows; a Profiler's plain trace has no member at all.
        let mut plain = Recording::new(0.0, 1_000.0, 100);
        plain.add_chunk(&chunk(&[1_000.0, 2_000.0], 1_000.0));
        let ext = plain.into_trace_with(0.0, Extension::default()).jsprof.unwrap();
        assert_eq!((ext.sample_interval, ext.windows), (Some(1.0), None));
        let mut plain = Recording::new(0.0, 1_000.0, 100);
        plain.add_chunk(&chunk(&[1_000.0, 2_000.0], 1_000.0));
        assert_eq!(plain.into_trace(0.0).jsprof, None);
        // What the binding hands out: a clock gives the member, none the plain trace.
        let clocked = |clock| {
            let mut r = Recording::new(0.0, 1_000.0, 100);
            r.add_chunk(&chunk(&[1_000.0, 2_000.0], 1_000.0));
            r.into_trace_clocked(0.0, clock).jsprof
        };
        assert_eq!(clocked(None), None);
        assert_eq!(
            clocked(Some(Extension::default())).unwrap().sample_interval,
            Some(1.0)
        );
    }

    #[test]
    fn a_cut_recording_slower_than_v8_keeps_one_sample_per_interval_of_its_own_time() {
        // 1,000 short intervals of 0.3 ms, 20 ms apart (a request waiting on I/O between callbacks):
        // 300 ms of its own time. V8 ticks every 0.1 ms; the request wants one sample per 10 ms of its
        // time: about 30 samples, each weighing 10 ms. (Thinned by wall-clock time it kept a sample of
        // nearly every interval: ~1,000 samples at 10 ms each, 10 s for 0.3 s of work.)
        let own: Vec<(f64, f64)> = (0..1_000)
            .map(|i| i as f64 * 20_000.0 - 50.0)
            .map(|begin| (begin, begin + 300.0))
            .collect();
        let mut r = Recording::new(0.0, 10_000.0, 100_000);
        r.keep_request(OWN);
        r.add_chunk(&in_context(chunk(&every(0.0, 20_000_000.0, 100.0), 100.0), &own));
        let t = r.into_trace_with(0.0, Extension::default());
        assert!(
            (29..=31).contains(&t.samples.len()),
            "{} samples",
            t.samples.len()
        );
        let total: f64 = t.sample_weights().iter().sum();
        assert!(
            (290.0..=310.0).contains(&total),
            "{total} ms for 300 ms of the request's time"
        );
        assert_eq!(t.jsprof.unwrap().sample_interval, Some(10.0));
    }

    #[test]
    fn a_cut_recording_counts_late_ticks_by_their_time() {
        // V8 asked for 1 ms ticks but, on a loaded machine, ticks every 1.5 ms: 300 ms of the request's
        // own time (one interval) hold 200 ticks. One sample per 10 ms of that time: ~30, not 20.
        let mut r = Recording::new(0.0, 10_000.0, 100_000);
        r.keep_request(OWN);
        r.add_chunk(&in_context(
            chunk(&every(0.0, 299_999.0, 1_500.0), 1_000.0),
            &[(0.0, 300_000.0)],
        ));
        let n = r.sample_count();
        assert!((29..=31).contains(&n), "{n} samples");
    }

    #[test]
    fn keeps_only_the_samples_of_its_context() {
        let own = [(900.0, 2_000.0), (4_500.0, 6_000.0)];
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.add_chunk(&in_context(
            chunk(&every(1_000.0, 5_000.0, 1_000.0), 1_000.0),
            &own,
        ));
        // Cut after a first chunk: its other samples go too.
        r.keep_request(OWN);
        r.add_chunk(&in_context(
            chunk(&every(6_000.0, 9_000.0, 1_000.0), 1_000.0),
            &own,
        ));
        let t = r.into_trace_with(0.0, Extension::default());
        let ts: Vec<f64> = t.samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(ts, vec![1.0, 2.0, 5.0, 6.0]);
        // Two chunks, three runs: each chunk's run ends with it.
        assert_eq!(
            t.jsprof.unwrap().windows,
            Some(vec![[1.0, 2.0], [5.0, 5.0], [6.0, 6.0]])
        );
    }

    #[test]
    fn a_trace_built_later_says_what_each_context_says_then() {
        // Samples of context 8 (request 7's, harvested with its method alone), of a context whose
        // slot was reused since (it keeps what the harvest found), and of no context.
        let mut c = Arc::try_unwrap(chunk(&[1_000.0, 2_000.0, 3_000.0, 4_000.0], 1_000.0)).unwrap();
        c.label_samples_by(&[0.0, 2_500.0, 3_500.0], |i| {
            [
                (set("GET"), (8, OWN)),
                (set("old"), (5, 5)),
                (set("plain"), (0, 0)),
            ][i]
                .clone()
        });
        let c = Arc::new(c);
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.add_chunk(&c);
        let mut asked = Vec::new();
        r.relabel(|context| {
            asked.push(context);
            (context == 8).then(|| set("GET /users/:id"))
        });
        assert_eq!(asked, [8, 5], "each context once, only contexts");
        let t = r.into_trace_with(0.0, Extension::default());
        let ext = t.jsprof.unwrap();
        let routes: Vec<&str> = (0..4)
            .map(|i| ext.labels_of(i).unwrap()["route"].as_str())
            .collect();
        assert_eq!(routes, ["GET /users/:id", "GET /users/:id", "old", "plain"]);
        // A chunk added after: its samples as harvested, until asked again.
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.add_chunk(&c);
        r.relabel(|_| Some(set("new")));
        r.add_chunk(&chunk(&[5_000.0], 1_000.0));
        assert_eq!(r.build(0.0).jsprof.unwrap().labels_of(0).unwrap()["route"], "GET");
    }

    #[test]
    fn a_context_with_no_sample_keeps_nothing() {
        let mut r = Recording::new(0.0, 1_000.0, 100);
        r.keep_request(OWN);
        let c = chunk(&every(1_000.0, 5_000.0, 1_000.0), 1_000.0);
        assert_eq!(r.add_chunk(&in_context(c, &[])).accepted, 0);
        assert_eq!(
            r.add_chunk(&chunk(&[6_000.0], 1_000.0)).accepted,
            0,
            "a chunk of no context"
        );
    }

    #[test]
    fn an_exclusive_start_hands_off_exactly() {
        let samples = chunk(&every(1_000.0, 10_000.0, 1_000.0), 1_000.0);
        let mut first = Recording::new(0.0, 1_000.0, 100);
        first.stop_at(5_000.0);
        let mut second = Recording::new(5_000.0, 1_000.0, 100);
        second.set_start_exclusive(true);
        assert_eq!(first.add_chunk(&samples).accepted, 5);
        assert_eq!(second.add_chunk(&samples).accepted, 5);
        assert_eq!(second.build(0.0).samples[0].timestamp, 6.0);
    }
}
