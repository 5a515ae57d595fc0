//! Recordings: any window, interval and buffer size over chunks parsed from fuzzed profile text.
#![no_main]
use std::sync::Arc;

use arbitrary::Arbitrary;
use jsprof_core::{Chunk, Profile, Recording};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    start: f64,
    interval: f64,
    max: u32,
    stop: Option<f64>,
    origin: f64,
    chunks: Vec<(String, f64)>,
}

fuzz_target!(|input: Input| {
    let mut r = Recording::new(input.start, input.interval, input.max);
    if let Some(s) = input.stop {
        r.stop_at(s);
    }
    let mut accepted = 0;
    for (text, interval_us) in &input.chunks {
        if let Ok(profile) = Profile::from_json(text) {
            accepted += r
                .add_chunk(&Arc::new(Chunk {
                    profile,
                    interval_us: *interval_us,
                    labels: Vec::new(),
                    contexts: Vec::new(),
                }))
                .accepted;
        }
    }
    assert!(accepted <= input.max as usize);
    assert_eq!(r.build(input.origin).samples.len(), accepted);
});
