//! The inspector's `Profiler.stop` reply as the sampler packs it in JS: the profile is already an
//! object there (Node parsed the reply), so instead of JSON text it crosses as columns — one entry per
//! node, children ids back to back, strings once — and is validated here by the [`ProfileBuilder`]
//! every other road shares. A column of the wrong length or an index past its table is a `TypeError`.

use super::{Profile, ProfileBuilder};
use crate::error::{Error, Result};

/// A profile as columns (`Chunk.fromInspector`'s argument, borrowed from the JS typed arrays).
#[derive(Debug, Clone, Copy, Default)]
pub struct InspectorColumns<'a> {
    /// Each node's id.
    pub ids: &'a [i32],
    /// For each node, how many of `children` are its children (in node order).
    pub child_counts: &'a [u32],
    pub children: &'a [i32],
    /// Each node's function name and URL, as indexes into `strings`.
    pub names: &'a [u32],
    pub urls: &'a [u32],
    /// The inspector's 0-based positions (negative: unknown).
    pub lines: &'a [i32],
    pub columns: &'a [i32],
    pub strings: &'a [String],
    /// Each sample's node id, and its time delta (µs).
    pub samples: &'a [i32],
    pub time_deltas: &'a [f64],
    pub start_time: f64,
    pub end_time: f64,
    /// For each node, how many of its `positionTicks` follow in `tick_lines`/`ticks` (in node order);
    /// empty: no node has any.
    pub tick_counts: &'a [u32],
    pub tick_lines: &'a [i32],
    pub ticks: &'a [u32],
}

impl Profile {
    /// The profile of inspector columns, validated as [`Profile::from_json`] validates text.
    pub fn from_inspector(c: &InspectorColumns) -> Result<Profile> {
        let n = c.ids.len();
        let same_length = [
            c.child_counts.len(),
            c.names.len(),
            c.urls.len(),
            c.lines.len(),
            c.columns.len(),
        ];
        if same_length.iter().any(|&len| len != n) {
            return Err(Error::invalid("inspector columns have different lengths"));
        }
        let string = |i: u32| {
            c.strings
                .get(i as usize)
                .map(String::as_str)
                .ok_or_else(|| Error::invalid("string index out of range"))
        };
        let mut builder = ProfileBuilder::with_capacity(n);
        for i in 0..n {
            builder.add_node(
                c.ids[i] as i64,
                string(c.names[i])?,
                string(c.urls[i])?,
                c.lines[i] as i64,
                c.columns[i] as i64,
            )?;
        }
        let mut offset = 0usize;
        let mut ids: Vec<i64> = Vec::new();
        for i in 0..n {
            let count = c.child_counts[i] as usize;
            let end = offset.checked_add(count).filter(|&e| e <= c.children.len());
            let end = end.ok_or_else(|| Error::invalid("child counts exceed children"))?;
            ids.clear();
            ids.extend(c.children[offset..end].iter().map(|&id| id as i64));
            builder.set_children(i, &ids)?;
            offset = end;
        }
        if !c.tick_counts.is_empty() {
            if c.tick_counts.len() != n || c.tick_lines.len() != c.ticks.len() {
                return Err(Error::invalid("inspector columns have different lengths"));
            }
            let mut at = 0usize;
            for (i, &count) in c.tick_counts.iter().enumerate() {
                let end = at.checked_add(count as usize).filter(|&e| e <= c.ticks.len());
                let end = end.ok_or_else(|| Error::invalid("tick counts exceed the ticks"))?;
                for k in at..end {
                    builder.add_line_ticks(i, c.tick_lines[k] as i64, c.ticks[k] as i64)?;
                }
                at = end;
            }
        }
        let samples: Vec<i64> = c.samples.iter().map(|&id| id as i64).collect();
        builder.finish(&samples, c.time_deltas, c.start_time, c.end_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn strings() -> Vec<String> {
        ["(root)", "", "main", "file:///app/a.js"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn reads_the_columns_as_the_json_road_reads_the_text() {
        let strings = strings();
        let columns = InspectorColumns {
            ids: &[1, 2],
            child_counts: &[1, 0],
            children: &[2],
            names: &[0, 2],
            urls: &[1, 3],
            lines: &[-1, 4],
            columns: &[-1, 13],
            strings: &strings,
            samples: &[2, 2, 1],
            time_deltas: &[10.0, 20.0, -5.0],
            start_time: 1000.0,
            end_time: 2000.0,
            tick_counts: &[0, 2],
            tick_lines: &[5, 9],
            ticks: &[1, 1],
        };
        let text = r#"{"nodes":[
            {"id":1,"callFrame":{"functionName":"(root)","url":""},"children":[2]},
            {"id":2,"callFrame":{"functionName":"main","url":"file:///app/a.js",
                "lineNumber":4,"columnNumber":13},"positionTicks":[{"line":5,"ticks":1},{"line":9,"ticks":1}]}],
            "startTime":1000,"endTime":2000,"samples":[2,2,1],"timeDeltas":[10,20,-5]}"#;
        assert_eq!(
            Profile::from_inspector(&columns).unwrap(),
            Profile::from_json(text).unwrap()
        );
    }

    #[test]
    fn refuses_columns_that_do_not_fit_together() {
        let strings = strings();
        let good = InspectorColumns {
            ids: &[1, 2],
            child_counts: &[1, 0],
            children: &[2],
            names: &[0, 2],
            urls: &[1, 3],
            lines: &[-1, 4],
            columns: &[-1, 13],
            strings: &strings,
            ..Default::default()
        };
        assert!(Profile::from_inspector(&good).is_ok());
        let ticked = |tick_counts, tick_lines, ticks| InspectorColumns {
            tick_counts,
            tick_lines,
            ticks,
            ..good
        };
        let cases = [
            (
                InspectorColumns { urls: &[1], ..good },
                "inspector columns have different lengths",
            ),
            (
                InspectorColumns {
                    names: &[0, 9],
                    ..good
                },
                "string index out of range",
            ),
            (
                InspectorColumns {
                    child_counts: &[1, 1],
                    ..good
                },
                "child counts exceed children",
            ),
            (
                InspectorColumns {
                    child_counts: &[u32::MAX, 0],
                    ..good
                },
                "child counts exceed children",
            ),
            (
                ticked(&[1], &[3], &[1]),
                "inspector columns have different lengths",
            ),
            (
                ticked(&[0, 1], &[3], &[1, 1]),
                "inspector columns have different lengths",
            ),
            (ticked(&[0, 3], &[3, 4], &[1, 1]), "tick counts exceed the ticks"),
            (
                ticked(&[1, 0], &[0], &[1]),
                "node id 1: positionTicks line 0 is not a line number",
            ),
            (
                InspectorColumns {
                    samples: &[7],
                    time_deltas: &[1.0],
                    ..good
                },
                "samples[0] names unknown node id 7",
            ),
        ];
        for (columns, message) in cases {
            let e = Profile::from_inspector(&columns).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Type);
            assert!(e.message.contains(message), "{} vs {message}", e.message);
        }
    }
}
