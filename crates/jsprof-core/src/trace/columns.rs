//! A small trace as numbers over a string table kept between traces: what the facade turns into the
//! spec's objects for the traces it builds on the main thread (a Profiler's, a request's), one per
//! request when every request is profiled.
//!
//! Why not JSON text: serde's text and `JSON.parse` of it cost a small trace more than this way
//! (docs/bench.md#building-a-small-trace: V8's parser makes each small object by map transitions),
//! and each trace's frame names and URLs, the same from one trace to the next, were serialized,
//! scanned and internalized again every time. Here each
//! distinct string crosses into JS once: [`TraceStrings`] gives it an id the first time a trace uses
//! it, and the facade keeps the JS strings by id.
//!
//! The caller says how many strings it holds (`held`): when that is not the table's count (a call that
//! failed after the table grew, whose strings never reached JS), the table starts again, so an id
//! never names a string the caller lacks.
//!
//! Layout of `ints` (all `i32`): a header of [`HEADER`] words — frames, resources, stacks, samples,
//! the count of new strings, 1 when the table was reset before this trace (its old ids are void), the
//! UTF-16 length of the `jsprof` member's JSON (0 without it), a word left to the caller (the binding
//! says there whether the trace's buffer filled) — then the UTF-16 length of each new
//! string, then per frame `name, resourceId, line, column`, per resource its string id, per stack
//! `frameId, parentId`, per sample `stackId, marker code`; -1 stands for an absent member. `floats`
//! holds the samples' timestamps. The new strings, then the `jsprof` JSON, come back as one text.

use foldhash::HashMap;

use super::{Marker, ProfilerTrace};

/// Words before the columns in `ints`.
pub const HEADER: usize = 8;

/// Past this many strings, or this many bytes of them, the table starts again (memory stays bounded
/// whatever code a process runs; the facade drops its copy when told).
const MAX_STRINGS: usize = 1 << 16;
const MAX_BYTES: usize = 16 << 20;

/// The ids of the strings the facade already holds, for one JS thread.
#[derive(Debug, Default)]
pub struct TraceStrings {
    ids: HashMap<Box<str>, u32>,
    bytes: usize,
}

impl TraceStrings {
    pub fn new() -> Self {
        TraceStrings::default()
    }

    /// How many strings the table holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    fn id(&mut self, s: &str, fresh: &mut Vec<u32>, text: &mut String) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(s.into(), id);
        self.bytes += s.len();
        fresh.push(utf16_len(s));
        text.push_str(s);
        id
    }
}

fn utf16_len(s: &str) -> u32 {
    s.chars().map(char::len_utf16).sum::<usize>() as u32
}

/// What writing a trace needs: `ints` and `floats` words at most.
fn columns_needed(trace: &ProfilerTrace) -> (usize, usize) {
    let (f, r, s, n) = (
        trace.frames.len(),
        trace.resources.len(),
        trace.stacks.len(),
        trace.samples.len(),
    );
    // A new string per frame name and resource at most.
    (HEADER + (f + r) + 4 * f + r + 2 * s + 2 * n, n)
}

/// Writes `trace` into `ints` and `floats` (see the module's layout) and returns the new strings
/// followed by the `jsprof` member's JSON; when the buffers are too small, nothing is written and the
/// error is the `ints` and `floats` words needed ([`columns_needed`]). `held`: how many of the
/// table's strings the caller holds.
pub fn write_columns(
    trace: &ProfilerTrace,
    strings: &mut TraceStrings,
    held: usize,
    ints: &mut [i32],
    floats: &mut [f64],
) -> Result<String, (usize, usize)> {
    let (need_ints, need_floats) = columns_needed(trace);
    if ints.len() < need_ints || floats.len() < need_floats {
        return Err((need_ints, need_floats));
    }
    let reset = held != strings.len()
        || strings.len() + trace.frames.len() + trace.resources.len() > MAX_STRINGS
        || strings.bytes > MAX_BYTES;
    if reset {
        *strings = TraceStrings::new();
    }
    let mut fresh = Vec::new();
    let mut text = String::new();
    let opt = |v: Option<u32>| v.map_or(-1, |v| v as i32);
    // The columns after the new strings' lengths, whose count is known only at the end.
    let mut cols = Vec::with_capacity(need_ints - HEADER);
    for f in &trace.frames {
        let name = strings.id(&f.name, &mut fresh, &mut text);
        // Positions fit: V8's reader clamps them below i32::MAX before the +1 (`ProfileBuilder::add_node`).
        cols.extend_from_slice(&[name as i32, opt(f.resource_id), opt(f.line), opt(f.column)]);
    }
    for url in &trace.resources {
        cols.push(strings.id(url, &mut fresh, &mut text) as i32);
    }
    for s in &trace.stacks {
        cols.extend_from_slice(&[s.frame_id as i32, opt(s.parent_id)]);
    }
    for (i, s) in trace.samples.iter().enumerate() {
        cols.extend_from_slice(&[opt(s.stack_id), i32::from(Marker::code(s.marker))]);
        floats[i] = s.timestamp;
    }
    let jsprof_len = match &trace.jsprof {
        Some(ext) => {
            let json = serde_json::to_string(ext).unwrap_or_else(|_| "{}".to_owned());
            text.push_str(&json);
            utf16_len(&json)
        }
        None => 0,
    };
    let header = [
        trace.frames.len(),
        trace.resources.len(),
        trace.stacks.len(),
        trace.samples.len(),
        fresh.len(),
        usize::from(reset),
        jsprof_len as usize,
        0,
    ];
    for (slot, v) in ints.iter_mut().zip(header) {
        *slot = v as i32;
    }
    let at = HEADER + fresh.len();
    for (slot, &len) in ints[HEADER..at].iter_mut().zip(&fresh) {
        *slot = len as i32;
    }
    ints[at..at + cols.len()].copy_from_slice(&cols);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::{labelled_trace, sample_trace};

    /// Reads the columns back into a trace, as the facade does (lib/trace.js), with its string table.
    fn read(ints: &[i32], floats: &[f64], text: &str, table: &mut Vec<String>) -> ProfilerTrace {
        let h = |i: usize| ints[i] as usize;
        let (f, r, s, n, fresh) = (h(0), h(1), h(2), h(3), h(4));
        if ints[5] == 1 {
            table.clear();
        }
        let units: Vec<u16> = text.encode_utf16().collect();
        let mut at = 0;
        for k in 0..fresh {
            let len = ints[HEADER + k] as usize;
            table.push(String::from_utf16(&units[at..at + len]).unwrap());
            at += len;
        }
        let jsprof_len = h(6);
        let jsprof = (jsprof_len > 0).then(|| {
            serde_json::from_str(&String::from_utf16(&units[at..at + jsprof_len]).unwrap()).unwrap()
        });
        let opt = |v: i32| (v != -1).then_some(v as u32);
        let mut c = HEADER + fresh;
        let mut next = || {
            c += 1;
            ints[c - 1]
        };
        let frames = (0..f)
            .map(|_| {
                let name = table[next() as usize].clone();
                let (resource_id, line, column) = (opt(next()), opt(next()), opt(next()));
                crate::trace::Frame {
                    name,
                    resource_id,
                    line,
                    column,
                }
            })
            .collect();
        let resources = (0..r).map(|_| table[next() as usize].clone()).collect();
        let stacks = (0..s)
            .map(|_| crate::trace::Stack {
                frame_id: next() as u32,
                parent_id: opt(next()),
            })
            .collect();
        let samples = (0..n)
            .map(|i| crate::trace::TraceSample {
                stack_id: opt(next()),
                marker: Marker::from_code(next() as u8),
                timestamp: floats[i],
            })
            .collect();
        ProfilerTrace {
            frames,
            jsprof,
            resources,
            samples,
            stacks,
        }
    }

    /// `trace` written into buffers of the size it needs, for a caller holding `held` strings.
    fn write(trace: &ProfilerTrace, strings: &mut TraceStrings, held: usize) -> (Vec<i32>, Vec<f64>, String) {
        let (ni, nf) = columns_needed(trace);
        let (mut ints, mut floats) = (vec![0; ni], vec![0.0; nf]);
        let text = write_columns(trace, strings, held, &mut ints, &mut floats).unwrap();
        (ints, floats, text)
    }

    fn round_trip(
        trace: &ProfilerTrace,
        strings: &mut TraceStrings,
        table: &mut Vec<String>,
    ) -> ProfilerTrace {
        let (ints, floats, text) = write(trace, strings, table.len());
        read(&ints, &floats, &text, table)
    }

    #[test]
    fn a_trace_reads_back_the_same_and_strings_cross_once() {
        let mut strings = TraceStrings::new();
        let mut table = Vec::new();
        let trace = sample_trace();
        assert_eq!(round_trip(&trace, &mut strings, &mut table), trace);
        let held = table.len();
        assert!(held > 0);
        // The same trace again: no new strings, the same result.
        let (ints, floats, text) = write(&trace, &mut strings, table.len());
        assert_eq!((ints[4], text.as_str()), (0, ""));
        assert_eq!(read(&ints, &floats, &text, &mut table), trace);
        assert_eq!(table.len(), held);
        // The extension member, labels included, and non-ASCII strings (UTF-16 lengths).
        let mut labelled = labelled_trace();
        labelled.frames[0].name = "😀 café \u{7}".to_owned();
        assert_eq!(round_trip(&labelled, &mut strings, &mut table), labelled);
    }

    #[test]
    fn an_empty_name_as_the_only_new_string_crosses_as_an_empty_text() {
        // A frame named "" (an anonymous function) is a string like any other: counted as new, of
        // length 0, in a text that is then empty (the binding hands it over as such, never as "none").
        let mut strings = TraceStrings::new();
        let mut table = Vec::new();
        let anonymous = sample_trace();
        let unnamed = anonymous.frames.iter().position(|f| f.name.is_empty()).unwrap();
        // First the same trace with that frame named: every other string crosses.
        let mut named = anonymous.clone();
        named.frames[unnamed].name = "named".to_owned();
        round_trip(&named, &mut strings, &mut table);
        let (ints, floats, text) = write(&anonymous, &mut strings, table.len());
        assert_eq!((ints[4], ints[HEADER], text.as_str()), (1, 0, ""));
        assert_eq!(read(&ints, &floats, &text, &mut table), anonymous);
    }

    #[test]
    fn small_buffers_write_nothing() {
        let mut strings = TraceStrings::new();
        let trace = sample_trace();
        let (ni, nf) = columns_needed(&trace);
        let (mut ints, mut floats) = (vec![7; ni - 1], vec![0.0; nf]);
        assert_eq!(
            write_columns(&trace, &mut strings, 0, &mut ints, &mut floats),
            Err((ni, nf))
        );
        assert!(ints.iter().all(|&v| v == 7) && strings.is_empty());
    }

    #[test]
    fn a_full_table_starts_again_and_says_so() {
        let mut strings = TraceStrings::new();
        for i in 0..MAX_STRINGS {
            strings.id(&i.to_string(), &mut Vec::new(), &mut String::new());
        }
        let mut table = vec!["stale".to_owned(); MAX_STRINGS];
        let trace = sample_trace();
        let (ints, floats, text) = write(&trace, &mut strings, table.len());
        assert_eq!(ints[5], 1);
        assert_eq!(read(&ints, &floats, &text, &mut table), trace);
        assert_eq!(strings.len(), table.len());
    }

    #[test]
    fn a_caller_missing_strings_gets_a_fresh_table() {
        let mut strings = TraceStrings::new();
        let mut table = Vec::new();
        let trace = sample_trace();
        round_trip(&trace, &mut strings, &mut table);
        // The strings of that call never reached the caller (it failed after the table grew).
        table.clear();
        let (ints, floats, text) = write(&trace, &mut strings, table.len());
        assert_eq!(ints[5], 1);
        assert_eq!(read(&ints, &floats, &text, &mut table), trace);
    }
}
