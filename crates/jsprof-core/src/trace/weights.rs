//! How much time a sample stands for, decided once for every consumer (summaries, the exporters, the
//! CLI's timing line): a sample weighs the gap to the next sample in time order (V8 records a few out
//! of order), and the last one the median gap (or a weight the caller gives). Only for valid traces.

use crate::trace::{ProfilerTrace, TraceSample};

/// How many samples a trace has, over how long, at which interval: what `jsprof report` prints first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub samples: usize,
    /// Latest minus earliest sample time, ms (0 with fewer than 2 samples).
    pub duration_ms: f64,
    /// The median gap between samples in time order, ms (0 with fewer than 2 samples).
    pub interval_ms: f64,
}

impl ProfilerTrace {
    /// The trace's [`Timing`].
    pub fn timing(&self) -> Timing {
        let samples = &self.samples;
        let (first, last) = time_span(samples);
        let several = samples.len() > 1;
        Timing {
            samples: samples.len(),
            duration_ms: if several { last - first } else { 0.0 },
            interval_ms: if several { median_interval(samples) } else { 0.0 },
        }
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

/// Each sample's duration in ms: the gap to the next sample in time order; the last sample gets the
/// median gap (0 when there is a single sample). Durations never go negative, whatever the order.
pub(crate) fn sample_durations(samples: &[TraceSample]) -> Vec<f64> {
    sample_durations_with_last(samples, None)
}

/// [`sample_durations`], the last sample (in time order) weighing `last` ms when given. Memory: the
/// time order (4 bytes a sample) and the durations themselves, which hold the gaps for the median first.
pub(crate) fn sample_durations_with_last(samples: &[TraceSample], last: Option<f64>) -> Vec<f64> {
    let order = time_order(samples);
    let time = |k: usize| samples[order[k] as usize].timestamp;
    let mut durations = vec![0.0; samples.len()];
    let gaps = order.len().saturating_sub(1);
    let last = last.unwrap_or_else(|| {
        for (k, gap) in durations[..gaps].iter_mut().enumerate() {
            *gap = time(k + 1) - time(k);
        }
        median(&mut durations[..gaps])
    });
    for k in 0..gaps {
        durations[order[k] as usize] = time(k + 1) - time(k);
    }
    if let Some(&index) = order.last() {
        durations[index as usize] = last;
    }
    durations
}

/// The median gap between consecutive samples in time order, in ms (the mean of the two middle gaps
/// for an even count; 0 with fewer than two samples).
pub(crate) fn median_interval(samples: &[TraceSample]) -> f64 {
    let mut times: Vec<f64> = samples.iter().map(|s| s.timestamp).collect();
    times.sort_unstable_by(f64::total_cmp);
    // The gaps in place of the times.
    for k in 1..times.len() {
        times[k - 1] = times[k] - times[k - 1];
    }
    times.pop();
    median(&mut times)
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

    #[test]
    fn durations_are_gaps_in_time_order_and_the_median_for_the_last() {
        let s = |t| TraceSample {
            timestamp: t,
            stack_id: None,
            marker: None,
        };
        let d = sample_durations(&[s(1.0), s(4.0), s(2.0), s(3.0)]);
        assert_eq!(d, vec![1.0, 1.0, 1.0, 1.0]);
        let d = sample_durations(&[s(0.0), s(1.0), s(3.0), s(6.0)]);
        assert_eq!(d, vec![1.0, 2.0, 3.0, 2.0]);
        assert_eq!(sample_durations(&[s(5.0)]), vec![0.0]);
    }
}
