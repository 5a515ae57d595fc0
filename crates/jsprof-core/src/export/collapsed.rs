//! Folded stacks, the input of `flamegraph.pl` and inferno: one line per distinct stack,
//! `outer;…;leaf count`, the count being the stack's time in whole microseconds: each sample weighs its
//! time by the trace's one rule (`trace/weights.rs`), as `summarize`, the report, pprof and the flame
//! graphs weigh it, so shares agree
//! across views (a trace that spans no time, a single sample, counts samples instead). Frames are named
//! `name (path:line:column)` (see [`frame_label`]), anonymous functions `(anonymous)`; stackless samples
//! are one-frame stacks `(idle)`, `(garbage collector)` and `(program)`. Lines are sorted by their stack
//! text (byte order), so the output is deterministic. The format has no escapes, and its readers split
//! on `;`, on the last spaces and on line ends, and trim: so `;` inside a name becomes `:`; other
//! controls (line breaks included) are visible escapes (`\x0a`, [`crate::text::visible`]); and a space
//! that would let a name read as a count (`x 999`: inferno takes `… 999 5` for a differential line) or be
//! trimmed (a leading one) is a no-break space (U+00A0), which looks the same and no reader splits on.

use std::collections::BTreeMap;

use super::{frame_label, stack_frames, Pseudo};
use crate::error::Result;
use crate::trace::ProfilerTrace;

/// The folded text of a stack.
fn folded(trace: &ProfilerTrace, labels: &[String], stack_id: u32) -> String {
    stack_frames(trace, stack_id)
        .iter()
        .map(|&f| labels[f as usize].as_str())
        .collect::<Vec<_>>()
        .join(";")
}

/// `(stack text, weight)`, sorted by stack text: the weight in whole µs of time (in samples when the
/// trace spans no time); stacks that weigh nothing are left out. Samples are summed per stack id first,
/// so each distinct stack is spelled out once.
pub(crate) fn folded_counts(trace: &ProfilerTrace) -> BTreeMap<String, u64> {
    let durations = trace.sample_weights();
    let by_time = durations.iter().sum::<f64>() > 0.0;
    let weights: Vec<f64> = durations
        .iter()
        .map(|&ms| if by_time { ms * 1000.0 } else { 1.0 })
        .collect();
    folded_weights(trace, &weights)
}

/// `(stack text, weight)` of a valid trace whose samples weigh `weights` (µs of time; a heap profile's
/// bytes), sorted by stack text, rounded to whole numbers; stacks that weigh nothing are left out.
pub(crate) fn folded_weights(trace: &ProfilerTrace, weights: &[f64]) -> BTreeMap<String, u64> {
    let mut per_stack = vec![0f64; trace.stacks.len()];
    let mut per_pseudo = [0f64; 3];
    for (s, &weight) in trace.samples.iter().zip(weights) {
        match (s.stack_id, Pseudo::of(s)) {
            (Some(id), None) => per_stack[id as usize] += weight,
            (_, p) => per_pseudo[p.map_or(0, |p| p as usize)] += weight,
        }
    }
    let labels: Vec<String> = (0..trace.frames.len() as u32)
        .map(|f| sanitize(&frame_label(trace, f)))
        .collect();
    let mut weights: BTreeMap<String, f64> = BTreeMap::new();
    for (id, &w) in per_stack.iter().enumerate() {
        if w > 0.0 {
            // Two stack ids can spell the same text (a hand-made trace may repeat a stack).
            *weights.entry(folded(trace, &labels, id as u32)).or_insert(0.0) += w;
        }
    }
    for (p, &w) in Pseudo::ALL.iter().zip(&per_pseudo) {
        if w > 0.0 {
            *weights.entry(p.name().to_owned()).or_insert(0.0) += w;
        }
    }
    // Rounded once per line: the format takes whole numbers.
    weights
        .into_iter()
        .map(|(stack, w)| (stack, w.round() as u64))
        .filter(|&(_, n)| n > 0)
        .collect()
}

pub fn to_collapsed(trace: &ProfilerTrace) -> Result<String> {
    // One line per distinct sampled stack, each the whole stack: refused past the limit.
    super::check_frame_references(super::distinct_frame_references(trace), "toCollapsed")?;
    Ok(folded_text(folded_counts(trace)))
}

/// The lines of `(stack, count)` pairs.
pub(crate) fn folded_text(counts: BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    for (stack, count) in counts {
        out.push_str(&stack);
        out.push(' ');
        out.push_str(&count.to_string());
        out.push('\n');
    }
    out
}

pub(crate) fn sanitize(label: &str) -> String {
    let mut text = crate::text::visible(label).replace(';', ":");
    if text.starts_with(' ') {
        text.replace_range(0..1, "\u{a0}");
    }
    // `name 123` at the end of a line would read as one more count column.
    if let Some(at) = text.rfind(' ') {
        let tail = &text[at + 1..];
        if !tail.is_empty() && tail.parse::<f64>().is_ok() {
            text.replace_range(at..at + 1, "\u{a0}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;

    #[test]
    fn a_trace_without_time_counts_samples() {
        let mut t = sample_trace();
        t.samples.truncate(1);
        assert_eq!(
            to_collapsed(&t).unwrap(),
            "main (/app/main.js:1:1);work (/app/main.js:10:1);chunk (/app/node_modules/lodash/chunk.js:5:1) 1\n"
        );
    }

    #[test]
    fn folds_counts_and_sorts() {
        let text = to_collapsed(&sample_trace()).unwrap();
        assert_eq!(
            text,
            // µs: the `(idle)` sample lasts 0.5 ms, `now` 1.5 ms, the last sample the median gap (1 ms).
            "(garbage collector) 2000\n\
             (idle) 500\n\
             (program) 1000\n\
             main (/app/main.js:1:1);(anonymous) (/app/main.js:20:1) 1000\n\
             main (/app/main.js:1:1);now 1500\n\
             main (/app/main.js:1:1);work (/app/main.js:10:1) 1000\n\
             main (/app/main.js:1:1);work (/app/main.js:10:1);chunk (/app/node_modules/lodash/chunk.js:5:1) 2000\n"
        );
    }

    #[test]
    fn names_that_would_read_as_counts_or_lose_a_space_keep_their_text() {
        let mut t = sample_trace();
        t.frames[3].name = "x 999".into();
        assert!(to_collapsed(&t)
            .unwrap()
            .contains("main (/app/main.js:1:1);x\u{a0}999 1500\n"));
        t.frames[3].name = " lead\x1b".into();
        assert!(to_collapsed(&t)
            .unwrap()
            .contains("main (/app/main.js:1:1);\u{a0}lead\\x1b 1500\n"));
    }

    #[test]
    fn separators_in_names_are_replaced() {
        let mut t = sample_trace();
        t.frames[3].name = "a;b\nc".into();
        assert!(to_collapsed(&t)
            .unwrap()
            .contains("main (/app/main.js:1:1);a:b\\x0ac 1500\n"));
    }
}
