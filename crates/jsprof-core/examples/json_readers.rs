//! Times the ways to read `.cpuprofile` text into a `Profile`: the hand-written scanner (with its
//! read-ahead thread), serde_json and sonic-rs into the same borrowed structs.
//!
//!   node bench/synth-profile.mjs …   (or any .cpuprofile files)
//!   cargo run --release -p jsprof-core --features bench-json --example json_readers -- a.cpuprofile …
//!
//! Per file: checks the three give the same Profile, then times them interleaved (S J R S J R …),
//! 5 warm-ups and 21 timed calls each, and prints min / median ms per call. With `--only <road>` it
//! makes one call of that road (after the agreement check), for `valgrind --tool=callgrind`;
//! `--only none` makes none, the baseline to subtract.
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
        eprintln!("usage: json_readers <profile.cpuprofile>…");
        std::process::exit(2);
    }
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable UTF-8 file");
        let reference = readers::serde_json(&text).expect("a valid profile");
        let scanned = readers::scanner(&text)
            .expect("the scanner takes it")
            .expect("valid");
        assert!(scanned == reference, "scanner and serde_json disagree");
        assert!(
            readers::sonic_rs(&text).expect("valid") == reference,
            "sonic-rs and serde_json disagree"
        );
        type Reader = fn(&str) -> bool;
        let roads: [(&str, Reader); 3] = [
            ("scanner", |t| readers::scanner(t).is_some()),
            ("serde_json", |t| readers::serde_json(t).is_ok()),
            ("sonic-rs", |t| readers::sonic_rs(t).is_ok()),
        ];
        // `--only <road>`: one call of that road and nothing else (for valgrind --tool=callgrind).
        if let Some(only) = only.as_deref() {
            if only == "none" {
                continue; // the baseline: everything but the one call
            }
            let (_, read) = roads.iter().find(|(name, _)| *name == only).expect("a road name");
            assert!(read(&text));
            continue;
        }
        let mut times = vec![Vec::new(); roads.len()];
        for round in 0..26 {
            for (i, (_, read)) in roads.iter().enumerate() {
                let t0 = Instant::now();
                assert!(read(&text));
                if round >= 5 {
                    times[i].push(t0.elapsed().as_secs_f64() * 1000.0);
                }
            }
        }
        println!(
            "{file}: {:.1} MB, {} nodes, {} samples",
            text.len() as f64 / 1e6,
            reference.nodes.len(),
            reference.samples.len()
        );
        for ((name, _), t) in roads.iter().zip(&mut times) {
            t.sort_by(f64::total_cmp);
            println!(
                "  {name:<10} min {:7.2} ms  median {:7.2} ms",
                t[0],
                t[t.len() / 2]
            );
        }
    }
}
