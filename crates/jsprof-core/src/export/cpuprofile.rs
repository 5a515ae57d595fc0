//! V8's `.cpuprofile`, as the inspector writes it: a `(root)` node, one node per trace stack (the stack
//! trie *is* V8's call tree), and a `(program)`, `(idle)` or `(garbage collector)` node under the root
//! for stackless samples, created when used. Positions go back to the inspector's 0-based values (-1 when
//! unknown).
//!
//! Times: V8 counts µs on its own clock; a trace counts ms from its time origin. The profile puts
//! sample `i` at `round(timestamp[i] * 1000)` µs, so `startTime` is the first sample's time and the
//! first delta is 0. `fromCpuProfile(profile, { timeOrigin: 0 })` therefore gives back the very same
//! timestamps (microsecond precision, as traces have). Without `timeOrigin`, `fromCpuProfile` measures
//! from `startTime`, so timestamps come back shifted to start at 0.

use super::Pseudo;
use crate::trace::ProfilerTrace;
use crate::v8::{CallFrame, CpuProfile, CpuProfileNode};

const ROOT_ID: u32 = 1;

fn stack_node_id(stack: u32) -> u32 {
    stack + 2
}

/// Builds the profile of a validated trace.
pub fn to_cpu_profile(trace: &ProfilerTrace) -> CpuProfile {
    let mut nodes = Vec::with_capacity(trace.stacks.len() + 4);
    nodes.push(CpuProfileNode {
        id: ROOT_ID,
        call_frame: CallFrame::pseudo("(root)"),
        hit_count: 0,
        children: Vec::new(),
    });
    for stack in &trace.stacks {
        let f = &trace.frames[stack.frame_id as usize];
        let position = |p: Option<u32>| p.map_or(-1, |v| v as i64 - 1);
        nodes.push(CpuProfileNode {
            id: 0, // set below, kept equal to the index + 1
            call_frame: CallFrame {
                function_name: f.name.clone(),
                script_id: f.resource_id.map_or("0".into(), |r| (r + 1).to_string()),
                url: f
                    .resource_id
                    .map_or(String::new(), |r| trace.resources[r as usize].clone()),
                line_number: position(f.line),
                column_number: position(f.column),
            },
            hit_count: 0,
            children: Vec::new(),
        });
    }
    for (i, stack) in trace.stacks.iter().enumerate() {
        let id = stack_node_id(i as u32);
        nodes[(id - 1) as usize].id = id;
        let parent = stack.parent_id.map_or(ROOT_ID, stack_node_id);
        nodes[(parent - 1) as usize].children.push(id);
    }
    let mut pseudo_ids: [Option<u32>; 3] = [None; 3];
    let mut samples = Vec::with_capacity(trace.samples.len());
    for s in &trace.samples {
        let id = match Pseudo::of(s) {
            None => stack_node_id(s.stack_id.unwrap_or_default()),
            Some(p) => *pseudo_ids[p as usize].get_or_insert_with(|| {
                let id = nodes.len() as u32 + 1;
                nodes.push(CpuProfileNode {
                    id,
                    call_frame: CallFrame::pseudo(p.name()),
                    hit_count: 0,
                    children: Vec::new(),
                });
                nodes[0].children.push(id);
                id
            }),
        };
        nodes[(id - 1) as usize].hit_count += 1;
        samples.push(id);
    }
    let times: Vec<f64> = trace
        .samples
        .iter()
        .map(|s| (s.timestamp * 1000.0).round())
        .collect();
    let start_time = times.first().copied().unwrap_or(0.0);
    let end_time = times.iter().copied().fold(start_time, f64::max);
    let mut previous = start_time;
    let time_deltas = times
        .iter()
        .map(|&t| {
            let delta = t - previous;
            previous = t;
            delta
        })
        .collect();
    CpuProfile {
        nodes,
        start_time,
        end_time,
        samples,
        time_deltas,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::trace_from_profile;
    use crate::trace::tests::sample_trace;
    use crate::v8::Profile;

    #[test]
    fn round_trips_through_the_v8_converter() {
        let t = sample_trace();
        let json = serde_json::to_string(&to_cpu_profile(&t)).unwrap();
        let back = trace_from_profile(&Profile::from_json(&json).unwrap(), 0.0);
        // The sample trace is in first-use order, as every trace the converter makes.
        assert_eq!(back.samples, t.samples);
        assert_eq!(back.resources, t.resources);
        assert_eq!(back.frames, t.frames);
        assert_eq!(back.stacks, t.stacks);
    }

    #[test]
    fn writes_zero_based_positions_pseudo_nodes_and_microseconds() {
        let p = to_cpu_profile(&sample_trace());
        let work = p
            .nodes
            .iter()
            .find(|n| n.call_frame.function_name == "work")
            .unwrap();
        assert_eq!(
            (work.call_frame.line_number, work.call_frame.column_number),
            (9, 0)
        );
        let now = p
            .nodes
            .iter()
            .find(|n| n.call_frame.function_name == "now")
            .unwrap();
        assert_eq!(
            (now.call_frame.line_number, now.call_frame.url.as_str()),
            (-1, "")
        );
        let names: Vec<_> = p
            .nodes
            .iter()
            .map(|n| n.call_frame.function_name.as_str())
            .collect();
        assert_eq!(&names[6..], ["(garbage collector)", "(idle)", "(program)"]);
        assert_eq!(p.nodes[0].children, vec![2, 7, 8, 9]);
        assert_eq!((p.start_time, p.end_time), (10000.0, 18000.0));
        assert_eq!(p.time_deltas[..4], [0.0, 1000.0, 1000.0, 1000.0]);
        assert_eq!(p.time_deltas[6], 1500.0);
        let gc = p
            .nodes
            .iter()
            .find(|n| n.call_frame.function_name == "(garbage collector)")
            .unwrap();
        assert_eq!(gc.hit_count, 2);
    }

    #[test]
    fn an_empty_trace_is_a_root_alone() {
        let p = to_cpu_profile(&ProfilerTrace::default());
        assert_eq!(p.nodes.len(), 1);
        assert!(p.samples.is_empty());
        assert_eq!((p.start_time, p.end_time), (0.0, 0.0));
    }
}
