//! Times the ways to read `.cpuprofile` text into a trace: serde_json into a `Profile` then converted
//! (the road of every error), and the one pass (`cpuprofile/direct.rs`) with serde_json (what
//! `fromCpuProfile` does) or with sonic-rs.
//!
//!   node bench/synth-profile.mjs …   (or any .cpuprofile files)
//!   cargo run --release -p jsprof-core --features bench-json --example json_readers -- a.cpuprofile …
//!
//! Per file: checks the roads give the same trace, then times them interleaved (A B C A B C …),
//! 5 warm-ups and 21 timed calls each, and prints min / median ms per call. With `--only <road>` it
//! makes one call of that road (after the agreement check), `LOOPS=n` times, for `perf record` or
//! `valgrind --tool=callgrind`; `--only none` makes none, the baseline to subtract.
use std::time::Instant;

use jsprof_core::cpuprofile::readers;

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
