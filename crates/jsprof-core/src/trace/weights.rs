//! How much time a sample stands for, decided once for every view (summaries, `jsprof report`, every
//! exporter, both flame graphs): [`Weigher`]. Only for valid traces. The rule (docs/analysis.md,
//! "How long a sample stands for"):
//!
//! - The trace's **interval** `I` is the rate V8 really delivered: the median gap between consecutive
//!   samples of one run (see below). On a loaded machine V8 often ticks slower than it was asked to, and
//!   then each sample stands for that longer time. A trace with fewer than [`MIN_RUN_GAPS`] such gaps
//!   says little about the rate: its `I` is its `jsprof.sampleInterval` when it carries one (the
//!   interval its samples were kept at), else the median of the gaps it has (0 with none).
//! - A sample weighs the **gap to the next sample** in time order (V8 records a few out of order) when
//!   both lie in one contiguous run of the sampler: within one of `jsprof.windows`, or anywhere when the
//!   trace has no windows (it is one run). The gap is capped at `2 × I`: a gap longer than that means
//!   V8 missed whole ticks (the sampler thread or the sampled thread did not run, or jsprof-node dropped
//!   the samples of its own harvest), and the thread's time then was not observed; one interval of
//!   lateness is kept, as V8's ticks on a loaded machine often come that late.
//! - A sample whose run ends with it — the last sample of the trace, or the last one of its window —
//!   weighs `I` (never more than the gap to the next sample): the next tick was due one interval later.
//!   Over many windows this is unbiased: a window of length `L` holds on average `L / I` samples.
//! - With `I = 0` (a single sample, no interval given) nothing is capped and the last sample weighs 0.
//!
//! So a trace where nothing was cut (a `Profiler`'s, a continuous chunk, `jsprof record`'s) weighs as
//! before — the gap to the next sample, the last one the median gap — except where V8 missed ticks;
//! and a request profile, whose samples lie in the request's own windows, weighs the time its samples
//! stand for, not the other requests' time between them.

use crate::trace::{round_to_microseconds, ProfilerTrace, TraceSample};

/// A gap within a run is capped at this many intervals (see the module's rule).
pub(crate) const RUN_GAP_CAP_INTERVALS: f64 = 2.0;

/// Fewer gaps within runs than this, and a trace's carried `sampleInterval` is its interval rather
/// than the median of those gaps (see the module's rule).
pub(crate) const MIN_RUN_GAPS: usize = 4;

/// How many samples a trace has, over how long, at which interval: what `jsprof report` prints first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub samples: usize,
    /// Latest minus earliest sample time, ms (0 with fewer than 2 samples).
    pub duration_ms: f64,
    /// The trace's interval `I`, ms: the median gap between consecutive samples of one run, or for a
    /// trace with few of those its `jsprof.sampleInterval` (see the module's rule).
    pub interval_ms: f64,
    /// The time all samples stand for, ms (the sum of their weights, at µs precision).
    pub sampled_ms: f64,
}

impl ProfilerTrace {
    /// The trace's [`Timing`].
    pub fn timing(&self) -> Timing {
        let samples = &self.samples;
        let (first, last) = time_span(samples);
        let weigher = Weigher::new(self, None);
        Timing {
            samples: samples.len(),
            duration_ms: if samples.len() > 1 { last - first } else { 0.0 },
            interval_ms: weigher.interval(),
            sampled_ms: round_to_microseconds((0..samples.len()).map(|k| weigher.in_time_order(k)).sum()),
        }
    }

    /// The interval `I` of the weighting rule, ms (see the module).
    pub fn sample_interval(&self) -> f64 {
        Weigher::new(self, None).interval()
    }

    /// Each sample's weight in ms, by sample index (see the module's rule).
    pub(crate) fn sample_weights(&self) -> Vec<f64> {
        Weigher::new(self, None).by_sample()
    }
}

/// The weights of a trace's samples, by the one rule (see the module). It holds the samples' time order
/// (4 bytes a sample) and works each weight out when asked, so a writer that goes through the samples
/// in time order (Gecko) holds no column of weights.
pub(crate) struct Weigher<'t> {
    samples: &'t [TraceSample],
    order: Vec<u32>,
    interval: f64,
    /// Empty: the samples are one run.
    windows: &'t [[f64; 2]],
}

impl<'t> Weigher<'t> {
    /// The weigher of `trace`, with `interval` (ms) in place of the trace's own when given (`summarize`'s
    /// `sampleInterval` option).
    pub(crate) fn new(trace: &'t ProfilerTrace, interval: Option<f64>) -> Weigher<'t> {
        let mut weigher = Weigher {
            samples: &trace.samples,
            order: time_order(&trace.samples),
            interval: 0.0,
            windows: trace
                .jsprof
                .as_ref()
                .and_then(|e| e.windows.as_deref())
                .unwrap_or(&[]),
        };
        weigher.interval = match interval {
            Some(given) => given,
            None => weigher.run_interval(trace.jsprof.as_ref().and_then(|e| e.sample_interval)),
        };
        weigher
    }

    /// The median gap between consecutive samples of one run; with fewer than [`MIN_RUN_GAPS`] of
    /// them, `carried` when given, else their median (0 for none).
    fn run_interval(&self, carried: Option<f64>) -> f64 {
        let mut gaps: Vec<f64> = (1..self.order.len())
            .filter_map(|k| {
                let (a, b) = (self.time(k - 1), self.time(k));
                self.one_run(a, b).then_some(b - a)
            })
            .collect();
        match carried {
            Some(carried) if gaps.len() < MIN_RUN_GAPS => carried,
            _ => median(&mut gaps),
        }
    }

    /// Sample indexes in time order (ties keep the trace's order).
    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    /// The interval `I` the rule uses, ms.
    pub(crate) fn interval(&self) -> f64 {
        self.interval
    }

    fn time(&self, k: usize) -> f64 {
        self.samples[self.order[k] as usize].timestamp
    }

    /// The window holding time `t`, if any (windows are ascending and disjoint).
    fn window_of(&self, t: f64) -> Option<usize> {
        let i = self.windows.partition_point(|w| w[1] < t);
        self.windows.get(i).filter(|w| w[0] <= t).map(|_| i)
    }

    /// Whether the samples at `a` and at `b` (later) are consecutive samples of one run.
    fn one_run(&self, a: f64, b: f64) -> bool {
        if self.windows.is_empty() {
            return true;
        }
        match self.window_of(a) {
            Some(w) => self.window_of(b) == Some(w),
            None => false,
        }
    }

    /// The weight (ms) of the `k`-th sample in time order.
    pub(crate) fn in_time_order(&self, k: usize) -> f64 {
        let interval = self.interval;
        let t = self.time(k);
        let Some(next) = (k + 1 < self.order.len()).then(|| self.time(k + 1)) else {
            return interval;
        };
        let gap = next - t;
        if self.one_run(t, next) {
            if interval > 0.0 {
                gap.min(RUN_GAP_CAP_INTERVALS * interval)
            } else {
                gap
            }
        } else {
            gap.min(interval)
        }
    }

    /// Every sample's weight (ms), by sample index.
    pub(crate) fn by_sample(&self) -> Vec<f64> {
        let mut weights = vec![0.0; self.samples.len()];
        for k in 0..self.order.len() {
            weights[self.order[k] as usize] = self.in_time_order(k);
        }
        weights
    }
}

/// Sample indexes sorted by timestamp (ties keep V8's order): V8 may reorder samples, and the Firefox
/// Profiler and speedscope want time order. (4 bytes a sample: a trace never has 2^32 samples.)
pub(crate) fn time_order(samples: &[TraceSample]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..samples.len() as u32).collect();
    // The index breaks ties, so an unstable sort gives the one order (and needs no buffer).
    order.sort_unstable_by(|&a, &b| {
        samples[a as usize]
            .timestamp
            .total_cmp(&samples[b as usize].timestamp)
            .then(a.cmp(&b))
    });
    order
}

/// The median of `values` (the mean of the two middle ones for an even count; 0 for none), found by
/// selection in linear time (reordering `values`).
fn median(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    let mid = n / 2;
    let (lower, &mut at_mid, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    if n % 2 == 1 {
        at_mid
    } else {
        let below = lower.iter().copied().max_by(f64::total_cmp).unwrap_or(at_mid);
        (below + at_mid) / 2.0
    }
}

/// The earliest and latest sample time (ms), as `(INFINITY, NEG_INFINITY)` for no samples.
pub(crate) fn time_span(samples: &[TraceSample]) -> (f64, f64) {
    samples
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(first, last), s| {
            (first.min(s.timestamp), last.max(s.timestamp))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Extension;

    fn trace(times: &[f64], jsprof: Option<Extension>) -> ProfilerTrace {
        ProfilerTrace {
            samples: times
                .iter()
                .map(|&timestamp| TraceSample {
                    timestamp,
                    stack_id: None,
                    marker: None,
                })
                .collect(),
            jsprof,
            ..ProfilerTrace::default()
        }
    }

    fn weights(times: &[f64], jsprof: Option<Extension>) -> Vec<f64> {
        trace(times, jsprof).sample_weights()
    }

    fn cut(interval: f64, windows: &[[f64; 2]]) -> Option<Extension> {
        Some(Extension {
            sample_interval: Some(interval),
            windows: Some(windows.to_vec()),
            ..Extension::default()
        })
    }

    #[test]
    fn a_plain_run_weighs_gaps_in_time_order_and_the_median_for_the_last() {
        assert_eq!(weights(&[1.0, 4.0, 2.0, 3.0], None), vec![1.0; 4]);
        assert_eq!(weights(&[0.0, 1.0, 3.0, 6.0], None), vec![1.0, 2.0, 3.0, 2.0]);
        assert_eq!(weights(&[5.0], None), vec![0.0], "one sample and no interval: 0");
        assert_eq!(weights(&[], None), Vec::<f64>::new());
    }

    #[test]
    fn a_gap_where_v8_missed_ticks_is_capped_at_two_intervals() {
        // 1 ms sampling; a 12 ms hole (a harvest, a starved sampler): the sample before it weighs 2 ms.
        let w = weights(&[0.0, 1.0, 2.0, 14.0, 15.0, 16.0], None);
        assert_eq!(w, vec![1.0, 1.0, 2.0, 1.0, 1.0, 1.0]);
        // Late ticks of up to one interval keep their gap: the time did pass in the run.
        assert_eq!(weights(&[0.0, 1.9, 2.9, 3.9], None), vec![1.9, 1.0, 1.0, 1.0]);
    }

    #[test]
    fn a_carried_interval_weighs_the_last_sample_and_a_lone_one() {
        let every = |i| {
            Some(Extension {
                sample_interval: Some(i),
                ..Extension::default()
            })
        };
        assert_eq!(weights(&[5.0], every(10.0)), vec![10.0]);
        assert_eq!(weights(&[0.0, 10.0, 20.0], every(10.0)), vec![10.0, 10.0, 10.0]);
        assert_eq!(trace(&[0.0, 7.0], every(10.0)).timing().interval_ms, 10.0);
    }

    #[test]
    fn the_interval_is_the_rate_v8_delivered_when_the_trace_shows_it() {
        // Asked for 1 ms, V8 ticked every 3 ms (a loaded machine): each sample stands for 3 ms, a 20 ms
        // hole is capped at 6 ms, the last sample weighs 3 ms.
        let asked = Some(Extension {
            sample_interval: Some(1.0),
            ..Extension::default()
        });
        let t = trace(&[0.0, 3.0, 6.0, 9.0, 12.0, 32.0, 35.0], asked);
        assert_eq!(t.sample_interval(), 3.0);
        assert_eq!(t.sample_weights(), vec![3.0, 3.0, 3.0, 3.0, 6.0, 3.0, 3.0]);
        // Too few gaps within runs to tell: the carried interval, which caps them too.
        assert_eq!(
            weights(&[0.0, 3.0, 6.0], cut(1.0, &[[0.0, 10.0]])),
            vec![2.0, 2.0, 1.0]
        );
    }

    #[test]
    fn a_cut_trace_weighs_what_its_samples_stand_for_not_the_time_between_windows() {
        // The issue's /orders request: two samples at 1 ms, 309 ms apart, in two windows of its own.
        let ext = cut(1.0, &[[0.0, 0.5], [309.0, 310.0]]);
        assert_eq!(weights(&[0.2, 309.5], ext.clone()), vec![1.0, 1.0]);
        let timing = trace(&[0.2, 309.5], ext).timing();
        assert_eq!((timing.interval_ms, timing.sampled_ms), (1.0, 2.0));
        // Within a window the gap (capped), the last of a window its interval, never more than the gap
        // to the next sample; a sample outside every window is a run of its own.
        let ext = cut(1.0, &[[0.0, 3.5], [3.7, 10.0]]);
        let w = weights(&[0.0, 1.0, 3.2, 3.8, 9.5, 20.0], ext);
        let rounded: Vec<f64> = w.iter().map(|x| (x * 1e9).round() / 1e9).collect();
        assert_eq!(rounded, vec![1.0, 2.0, 0.6, 2.0, 1.0, 1.0]);
        // 1000 windows of 0.3 ms (300 ms of the request's own time) hold about 300 samples at 1 ms,
        // each weighing 1 ms: about the windows' length, not the 10 s they are spread over.
        let windows: Vec<[f64; 2]> = (0..1000)
            .map(|i| [i as f64 * 10.0, i as f64 * 10.0 + 0.3])
            .collect();
        let times: Vec<f64> = (0..1000)
            .filter(|i| i % 10 < 3)
            .map(|i| i as f64 * 10.0 + 0.1)
            .collect();
        let total: f64 = weights(&times, cut(1.0, &windows)).iter().sum();
        assert_eq!(total, 300.0);
    }
}
