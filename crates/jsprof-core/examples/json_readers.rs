//! Times the ways to read `.cpuprofile` text into a trace: serde_json into a `Profile` then converted
//! (the road of every error), and the one pass (`src/convert/one_pass.rs`) with serde_json (what
//! `fromCpuProfile` does) or with sonic-rs. sonic-rs is an optional dependency of jsprof-core behind
//! the `bench-json` feature only for this example (sonic-rs 0.5 is not used for real: skipping a deeply
//! nested value overflows the stack, see cloudwego/sonic-rs#232).
//!
//!   node bench/synth-profile.mjs …   (or any .cpuprofile files)
//!   cargo run --release -p jsprof-core --features bench-json --example json_readers -- a.cpuprofile …
//!
//! Per file: checks the roads give the same trace, then times them interleaved (A B C A B C …),
//! 5 warm-ups and 21 timed calls each, and prints min / median ms per call. With `--only <road>` it
//! makes one call of that road (after the agreement check), `LOOPS=n` times, for `perf record` or
//! `valgrind --tool=callgrind`; `--only none` makes none, the baseline to subtract.
use std::time::Instant;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let only = args.iter().position(|a| a == "--only").map(|i| {
        let name = args.remove(i + 1);
        args.remove(i);
        name
    });
    let files = args;
    if files.is_empty() {
        eprintln!("usage: json_readers [--only <road>] <profile.cpuprofile>…");
        std::process::exit(2);
    }
    type Reader = fn(&str) -> Option<jsprof_core::ProfilerTrace>;
    let roads: [(&str, Reader); 3] = [
        ("serde_json", readers::serde_json_profile),
        ("serde_json/1", readers::serde_json_direct),
        ("sonic-rs/1", readers::sonic_rs_direct),
    ];
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable UTF-8 file");
        let reference = readers::serde_json_profile(&text).expect("a valid profile");
        for (name, read) in &roads {
            assert!(read(&text).as_ref() == Some(&reference), "{name} disagrees");
        }
        if let Some(only) = only.as_deref() {
            if only == "none" {
                continue; // the baseline: everything but the calls
            }
            let (_, read) = roads.iter().find(|(name, _)| *name == only).expect("a road name");
            let loops = std::env::var("LOOPS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            for _ in 0..loops {
                assert!(read(&text).is_some());
            }
            continue;
        }
        type Floor = fn(&str) -> usize;
        let floors: [(&str, Floor); 2] = [
            (
                "floor: serde_json validating only",
                readers::serde_json_validate_only,
            ),
            (
                "floor: serde_json keeping the number arrays only",
                readers::serde_json_arrays_only,
            ),
        ];
        let mut times = vec![Vec::new(); roads.len() + floors.len()];
        for round in 0..26 {
            for (i, (_, read)) in roads.iter().enumerate() {
                let t0 = Instant::now();
                assert!(read(&text).is_some());
                if round >= 5 {
                    times[i].push(t0.elapsed().as_secs_f64() * 1000.0);
                }
            }
            for (i, (_, read)) in floors.iter().enumerate() {
                let t0 = Instant::now();
                assert!(read(&text) > 0);
                if round >= 5 {
                    times[roads.len() + i].push(t0.elapsed().as_secs_f64() * 1000.0);
                }
            }
        }
        println!(
            "{file}: {:.1} MB, {} samples -> {} frames, {} stacks",
            text.len() as f64 / 1e6,
            reference.samples.len(),
            reference.frames.len(),
            reference.stacks.len()
        );
        let names = roads
            .iter()
            .map(|(name, _)| *name)
            .chain(floors.iter().map(|(name, _)| *name));
        for (name, t) in names.zip(&mut times) {
            t.sort_by(f64::total_cmp);
            println!(
                "  {name:<48} min {:7.2} ms  median {:7.2} ms",
                t[0],
                t[t.len() / 2]
            );
        }
    }
}

/// The ways to read `.cpuprofile` text into a trace, and two floors.
mod readers {
    use jsprof_core::{read_in_one_pass, trace_from_profile, Profile, ProfilerTrace, Straight, TraceSamples};

    /// serde_json into borrowed structs, validated into a `Profile`, then converted (what
    /// `Profile::from_json` and `trace_from_profile` do: the road of every error).
    pub fn serde_json_profile(text: &str) -> Option<ProfilerTrace> {
        let profile = Profile::from_json(text).ok()?;
        Some(trace_from_profile(&profile, profile.start_time))
    }

    fn straight(read: Straight<TraceSamples>) -> ProfilerTrace {
        let mut trace = read.tables;
        trace.samples = read.samples.samples;
        trace
    }

    /// The one pass (what `fromCpuProfile` does).
    pub fn serde_json_direct(text: &str) -> Option<ProfilerTrace> {
        let mut de = serde_json::Deserializer::from_str(text);
        let read = read_in_one_pass(&mut de, None, None)?;
        de.end().ok()?;
        Some(straight(read))
    }

    /// The one pass with sonic-rs.
    pub fn sonic_rs_direct(text: &str) -> Option<ProfilerTrace> {
        let mut de = sonic_rs::Deserializer::from_str(text);
        let read = read_in_one_pass(&mut de, None, None)?;
        de.end().ok()?;
        Some(straight(read))
    }

    /// Floors, not roads: serde_json reading the text and keeping nothing, and keeping only the two
    /// number arrays. Each gives the number of values it kept.
    pub fn serde_json_validate_only(text: &str) -> usize {
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_or(0, |_| 1)
    }

    pub fn serde_json_arrays_only(text: &str) -> usize {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Arrays {
            samples: Vec<i64>,
            time_deltas: Vec<f64>,
        }
        serde_json::from_str::<Arrays>(text).map_or(0, |a| a.samples.len() + a.time_deltas.len())
    }
}
