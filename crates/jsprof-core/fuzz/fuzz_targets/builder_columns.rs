//! The binding's column road (`Chunk.fromInspector`): columns of any contents and lengths through
//! `Chunk::from_inspector`, the core code the binding calls. The columns are mostly consistent (one
//! entry per node, small ids and string indexes) so the fuzzer gets past the length checks, and now
//! and then one column is cut short.
#![no_main]
use arbitrary::Arbitrary;
use jsprof_core::{trace_from_profile, Chunk, InspectorColumns};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Node {
    id: i16,
    child_count: u8,
    name: u8,
    url: u8,
    line: i32,
    column: i32,
}

#[derive(Arbitrary, Debug)]
struct Input {
    nodes: Vec<Node>,
    children: Vec<i16>,
    strings: Vec<String>,
    samples: Vec<(i16, f64)>,
    start: f64,
    end: f64,
    interval: f64,
    own_windows: Vec<f64>,
    /// Which column to cut short by one entry, if any.
    cut: Option<u8>,
}

fuzz_target!(|input: Input| {
    let n = &input.nodes;
    let mut ids: Vec<i32> = n.iter().map(|n| n.id.into()).collect();
    let mut child_counts: Vec<u32> = n.iter().map(|n| n.child_count.into()).collect();
    let mut names: Vec<u32> = n.iter().map(|n| n.name.into()).collect();
    let mut urls: Vec<u32> = n.iter().map(|n| n.url.into()).collect();
    let mut lines: Vec<i32> = n.iter().map(|n| n.line).collect();
    let mut columns: Vec<i32> = n.iter().map(|n| n.column).collect();
    match input.cut.map(|c| c % 6) {
        Some(0) => drop(ids.pop()),
        Some(1) => drop(child_counts.pop()),
        Some(2) => drop(names.pop()),
        Some(3) => drop(urls.pop()),
        Some(4) => drop(lines.pop()),
        Some(5) => drop(columns.pop()),
        _ => {}
    }
    let children: Vec<i32> = input.children.iter().map(|&c| c.into()).collect();
    let samples: Vec<i32> = input.samples.iter().map(|&(id, _)| id.into()).collect();
    let time_deltas: Vec<f64> = input.samples.iter().map(|&(_, d)| d).collect();
    let c = InspectorColumns {
        ids: &ids,
        child_counts: &child_counts,
        children: &children,
        names: &names,
        urls: &urls,
        lines: &lines,
        columns: &columns,
        strings: &input.strings,
        samples: &samples,
        time_deltas: &time_deltas,
        start_time: input.start,
        end_time: input.end,
        ..Default::default()
    };
    if let Ok((chunk, dropped)) = Chunk::from_inspector(&c, input.interval, &input.own_windows) {
        assert_eq!(chunk.profile.samples.len() + dropped, samples.len());
        let trace = trace_from_profile(&chunk.profile, input.start);
        assert_eq!(trace.samples.len(), chunk.profile.samples.len());
        for s in &trace.samples {
            if let Some(id) = s.stack_id {
                assert!((id as usize) < trace.stacks.len());
            }
        }
    }
});
