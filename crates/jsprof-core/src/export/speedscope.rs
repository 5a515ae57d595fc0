//! speedscope's file format (`https://www.speedscope.app/file-format-schema.json`): one `sampled`
//! profile in milliseconds. Shared frames are the trace's frames (`name`, `file`, 1-based `line`/`col`)
//! followed by the three pseudo-frames `(idle)`, `(garbage collector)` and `(program)`. Samples are in time
//! order (a trace may list them otherwise), each a list of frame indexes from the outermost frame, weighted
//! by its time by the trace's one rule (`trace/weights.rs`).

use serde::Serialize;

use super::{display_name, stack_frames, Pseudo};
use crate::error::Result;
use crate::trace::{Clock, ProfilerTrace, Weigher};

pub(crate) const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct File {
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    pub shared: Shared,
    pub profiles: Vec<SampledProfile>,
    pub name: String,
    pub active_profile_index: u32,
    pub exporter: String,
}

#[derive(Serialize)]
pub struct Shared {
    pub frames: Vec<SpeedscopeFrame>,
}

#[derive(Serialize)]
pub struct SpeedscopeFrame {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub col: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SampledProfile {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub unit: &'static str,
    pub start_value: f64,
    pub end_value: f64,
    pub samples: Vec<Vec<u32>>,
    pub weights: Vec<f64>,
}

/// The profile's name when none is given and the recording's clock (given, else the trace's own:
/// `Clock::given_or`) is known: speedscope shows times from the profile's start only, so the name
/// carries when it started (UTC) and the pid: `jsprof-node profile, 2026-11-24 20:05:31.123 UTC, pid 123`.
fn clock_name(trace: &ProfilerTrace, clock: Clock) -> Option<String> {
    let time_origin_ms = clock.time_origin_ms?;
    let first = trace
        .samples
        .iter()
        .map(|s| s.timestamp)
        .fold(f64::INFINITY, f64::min);
    let at = if first.is_finite() {
        time_origin_ms + first
    } else {
        time_origin_ms
    };
    let mut name = format!("jsprof-node profile, {}", utc(at));
    if let Some(pid) = clock.pid {
        name.push_str(&format!(", pid {pid}"));
    }
    Some(name)
}

/// `2026-11-24 20:05:31.123 UTC` for a Unix time in ms (the proleptic Gregorian calendar; days from
/// the epoch to a civil date by Howard Hinnant's algorithm).
fn utc(ms: f64) -> String {
    let ms = ms.round().clamp(-8.64e15, 8.64e15) as i64;
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, sec, milli) = (
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000,
    );
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{sec:02}.{milli:03} UTC")
}

pub fn to_speedscope(trace: &ProfilerTrace, name: Option<&str>, clock: Clock) -> Result<File> {
    super::check_frame_references(super::sample_frame_references(trace), "toSpeedscope")?;
    let mut frames: Vec<SpeedscopeFrame> = trace
        .frames
        .iter()
        .map(|f| SpeedscopeFrame {
            name: display_name(&f.name).to_owned(),
            file: f.resource_id.map(|r| trace.resources[r as usize].clone()),
            line: f.line,
            col: f.column,
        })
        .collect();
    let pseudo_base = frames.len() as u32;
    frames.extend(Pseudo::ALL.iter().map(|p| SpeedscopeFrame {
        name: p.name().into(),
        file: None,
        line: None,
        col: None,
    }));

    let weigher = Weigher::new(trace, None);
    let order = weigher.order();
    let mut by_stack: Vec<Option<Vec<u32>>> = vec![None; trace.stacks.len()];
    let mut samples = Vec::with_capacity(order.len());
    let mut weights = Vec::with_capacity(order.len());
    for (k, i) in order.iter().map(|&i| i as usize).enumerate() {
        let s = &trace.samples[i];
        let stack = match (s.stack_id, Pseudo::of(s)) {
            (Some(id), None) => by_stack[id as usize]
                .get_or_insert_with(|| stack_frames(trace, id))
                .clone(),
            (_, pseudo) => vec![pseudo_base + pseudo.map_or(0, |p| p as u32)],
        };
        samples.push(stack);
        weights.push(round_ns(weigher.in_time_order(k)));
    }
    let start_value = order
        .first()
        .map_or(0.0, |&i| trace.samples[i as usize].timestamp);
    let end_value = round_ns(start_value + weights.iter().sum::<f64>());
    let name = match name {
        Some(name) => name.to_owned(),
        None => clock_name(trace, clock.given_or(trace.jsprof.as_ref()))
            .unwrap_or_else(|| "jsprof-node profile".to_owned()),
    };
    Ok(File {
        schema: SCHEMA,
        shared: Shared { frames },
        profiles: vec![SampledProfile {
            kind: "sampled",
            name: name.clone(),
            unit: "milliseconds",
            start_value,
            end_value,
            samples,
            weights,
        }],
        name,
        active_profile_index: 0,
        exporter: format!("jsprof-node@{}", env!("CARGO_PKG_VERSION")),
    })
}

/// Rounds ms to ns, so sums of µs-precision gaps print without float noise.
fn round_ns(ms: f64) -> f64 {
    (ms * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;

    #[test]
    fn samples_are_frame_paths_weighted_by_duration() {
        let f = to_speedscope(&sample_trace(), Some("run"), Clock::default()).unwrap();
        let p = &f.profiles[0];
        assert_eq!(f.shared.frames.len(), 5 + 3);
        assert_eq!(f.shared.frames[4].name, "(anonymous)");
        assert_eq!(f.shared.frames[6].name, "(garbage collector)");
        assert_eq!(p.samples[0], vec![0, 1, 2]);
        assert_eq!(p.samples[3], vec![6]);
        assert_eq!(p.samples[6], vec![5], "idle");
        assert_eq!(p.samples[7], vec![7], "program");
        assert_eq!(p.weights, vec![1.0, 1.0, 1.0, 1.0, 1.0, 1.5, 0.5, 1.0, 1.0]);
        assert_eq!((p.start_value, p.end_value), (10.0, 19.0));
        assert_eq!(p.name, "run");
        assert_eq!(utc(0.0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(utc(1_764_014_731_123.0), "2025-11-24 20:05:31.123 UTC");
        assert_eq!(utc(951_782_400_000.0), "2000-02-29 00:00:00.000 UTC");
        assert_eq!(utc(-1.0), "1969-12-31 23:59:59.999 UTC");
    }
}
