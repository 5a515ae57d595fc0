//! Folded stacks, the input of `flamegraph.pl` and inferno: one line per distinct stack,
//! `outer;…;leaf count`, the count being the number of samples. Frames are named
//! `name (path:line:column)` (see [`frame_label`]), anonymous functions `(anonymous)`; stackless samples
//! are one-frame stacks `(idle)`, `(garbage collector)` and `(program)`. Lines are sorted by their stack
//! text (byte order), so the output is deterministic. `;` inside a name becomes `:` and line breaks
//! become spaces, since both are separators of the format.

use std::collections::BTreeMap;

use super::{frame_label, stack_frames, Pseudo};
use crate::trace::ProfilerTrace;

/// The folded stack of every sample, as text, in sample order (shared with the flame graph).
pub fn folded_stacks(trace: &ProfilerTrace) -> Vec<String> {
    let labels: Vec<String> = (0..trace.frames.len() as u32)
        .map(|f| sanitize(&frame_label(trace, f)))
        .collect();
    let mut by_stack: Vec<Option<String>> = vec![None; trace.stacks.len()];
    trace
        .samples
        .iter()
        .map(|s| match (s.stack_id, Pseudo::of(s)) {
            (_, Some(p)) => p.name().to_owned(),
            (Some(id), None) => by_stack[id as usize]
                .get_or_insert_with(|| {
                    stack_frames(trace, id)
                        .iter()
                        .map(|&f| labels[f as usize].as_str())
                        .collect::<Vec<_>>()
                        .join(";")
                })
                .clone(),
            (None, None) => unreachable!("Pseudo::of is None only for samples with a stack"),
        })
        .collect()
}

/// `(stack text, sample count)`, sorted by stack text.
pub fn folded_counts(trace: &ProfilerTrace) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in folded_stacks(trace) {
        *counts.entry(line).or_insert(0) += 1;
    }
    counts
}

pub fn to_collapsed(trace: &ProfilerTrace) -> String {
    let mut out = String::new();
    for (stack, count) in folded_counts(trace) {
        out.push_str(&stack);
        out.push(' ');
        out.push_str(&count.to_string());
        out.push('\n');
    }
    out
}

pub(crate) fn sanitize(label: &str) -> String {
    label.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::tests::sample_trace;

    #[test]
    fn folds_counts_and_sorts() {
        let text = to_collapsed(&sample_trace());
        assert_eq!(
            text,
            "(garbage collector) 2\n\
             (idle) 1\n\
             (program) 1\n\
             main (/app/main.js:1:1);(anonymous) (/app/main.js:20:1) 1\n\
             main (/app/main.js:1:1);now 1\n\
             main (/app/main.js:1:1);work (/app/main.js:10:1) 1\n\
             main (/app/main.js:1:1);work (/app/main.js:10:1);chunk (/app/node_modules/lodash/chunk.js:5:1) 2\n"
        );
    }

    #[test]
    fn separators_in_names_are_replaced() {
        let mut t = sample_trace();
        t.frames[3].name = "a;b\nc".into();
        assert!(to_collapsed(&t).contains("main (/app/main.js:1:1);a:b c 1\n"));
    }
}
