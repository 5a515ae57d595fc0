//! summarize and every exporter on traces of any shape, deep ones above all: the bytes become a trace
//! whose stacks point back at earlier stacks by an offset (0 = a root), so long chains — recursion
//! thousands deep — are common. Each must return (Ok or a clean Err), never panic, and stay linear
//! where its format allows (libFuzzer's timeout catches a quadratic walk).
#![no_main]
use jsprof_core::{
    summarize, to_collapsed, to_cpu_profile, to_flame_graph, to_flame_graph_html, to_gecko_profile, to_pprof,
    to_speedscope, Attributor, By, Frame, ProfilerTrace, Stack, TraceSample,
};
use libfuzzer_sys::fuzz_target;

fn trace_of(data: &[u8]) -> ProfilerTrace {
    let frames: Vec<Frame> = (0..8)
        .map(|i| Frame {
            name: format!("f{i}"),
            resource_id: (i % 2 == 0).then_some(0),
            line: Some(i),
            column: Some(1),
        })
        .collect();
    let mut stacks = Vec::new();
    for (i, &b) in data.iter().enumerate() {
        // Low bits: the frame; high bits: how far back the parent is (mostly the previous stack).
        let back = (b >> 3) as usize;
        let parent = match back {
            0 => None,
            1..=24 => i.checked_sub(1),
            _ => i.checked_sub(back - 24),
        };
        stacks.push(Stack {
            frame_id: (b & 7) as u32,
            parent_id: parent.map(|p| p as u32),
        });
    }
    let samples = (0..stacks.len())
        .map(|i| TraceSample {
            timestamp: i as f64,
            stack_id: (data[i] != 0xff).then_some(i as u32),
            marker: None,
        })
        .collect();
    ProfilerTrace {
        resources: vec!["file:///app/fuzz.js".into()],
        frames,
        stacks,
        samples,
        jsprof: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let trace = trace_of(data);
    if trace.validate().is_err() {
        return;
    }
    let mut attributor = Attributor::with_reader(Box::new(|_| None));
    for by in [By::Function, By::Package, By::Resource] {
        summarize(&trace, by, None, &mut attributor).expect("a valid trace summarizes");
    }
    let _ = to_cpu_profile(&trace);
    let _ = to_gecko_profile(&trace, &Default::default());
    let _ = to_flame_graph(&trace, &Default::default());
    let _ = to_flame_graph_html(&trace, &Default::default());
    let _ = to_pprof(&trace, &Default::default());
    let _ = to_speedscope(&trace, None, Default::default());
    let _ = to_collapsed(&trace);
});
