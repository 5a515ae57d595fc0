//! The binding's column road (`Chunk.fromInspector`): any ids, names, positions, links, samples and
//! floats, fed to `ProfileBuilder` the way src/lib.rs does (links only for nodes that exist).
#![no_main]
use arbitrary::Arbitrary;
use jsprof_core::{trace_from_profile, ProfileBuilder};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Columns {
    nodes: Vec<(i64, String, String, i64, i64)>,
    children: Vec<Vec<i64>>,
    parents: Vec<Option<i64>>,
    samples: Vec<i64>,
    deltas: Vec<f64>,
    start: f64,
    end: f64,
}

fuzz_target!(|c: Columns| {
    let mut b = ProfileBuilder::with_capacity(c.nodes.len());
    for (id, name, url, line, col) in &c.nodes {
        if b.add_node(*id, name, url, *line, *col).is_err() {
            return;
        }
    }
    for (i, kids) in c.children.iter().enumerate().take(c.nodes.len()) {
        if b.set_children(i, kids).is_err() {
            return;
        }
    }
    for (i, parent) in c.parents.iter().enumerate().take(c.nodes.len()) {
        if let Some(p) = parent {
            if b.set_parent(i, *p).is_err() {
                return;
            }
        }
    }
    if let Ok(profile) = b.finish(&c.samples, &c.deltas, c.start, c.end) {
        let trace = trace_from_profile(&profile, c.start);
        assert_eq!(trace.samples.len(), c.samples.len());
    }
});
