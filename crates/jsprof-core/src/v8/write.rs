//! V8 profile JSON written: the `.cpuprofile` members in the order V8 writes them. One set of structs
//! for both writers, `toCpuProfile` (a trace's stack trie as V8's call tree, `crate::export::cpuprofile`)
//! and `jsprof record`'s side file (a harvested [`Profile`] as a line, `crate::record_file`); what they
//! write, [`Profile::from_json`] reads back.

use serde::Serialize;

use super::Profile;

/// A V8 CPU profile as `.cpuprofile` JSON has it, ready to serialize: node ids 1..=n, children listed,
/// sample times as the signed deltas V8 writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuProfile {
    pub nodes: Vec<CpuProfileNode>,
    pub start_time: f64,
    pub end_time: f64,
    pub samples: Vec<u32>,
    pub time_deltas: Vec<f64>,
}

/// One node of the call tree.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuProfileNode {
    pub id: u32,
    pub call_frame: CallFrame,
    pub hit_count: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<u32>,
}

/// What a node stands for; positions are the inspector's 0-based values, -1 when unknown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFrame {
    pub function_name: String,
    pub script_id: String,
    pub url: String,
    pub line_number: i64,
    pub column_number: i64,
}

impl CallFrame {
    /// The frame of a pseudo-node (`(root)`, `(program)`, `(idle)`, `(garbage collector)`).
    pub fn pseudo(name: &str) -> CallFrame {
        CallFrame {
            function_name: name.to_owned(),
            script_id: "0".into(),
            url: String::new(),
            line_number: -1,
            column_number: -1,
        }
    }
}

impl CpuProfile {
    /// `profile` as V8 would write it: node `i` gets id `i + 1`, each parent lists its children, and a
    /// sample's time is the delta from the previous one (from `startTime` for the first).
    pub fn of_profile(profile: &Profile) -> CpuProfile {
        let p = profile;
        let mut nodes: Vec<CpuProfileNode> = p
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| CpuProfileNode {
                id: i as u32 + 1,
                call_frame: CallFrame {
                    function_name: p.string(n.name).to_owned(),
                    script_id: "0".into(),
                    url: p.string(n.url).to_owned(),
                    line_number: n.line.into(),
                    column_number: n.column.into(),
                },
                hit_count: 0,
                children: Vec::new(),
            })
            .collect();
        for (i, n) in p.nodes.iter().enumerate() {
            if let Some(parent) = n.parent {
                nodes[parent as usize].children.push(i as u32 + 1);
            }
        }
        let mut last = p.start_time;
        let time_deltas = p
            .samples
            .iter()
            .map(|s| {
                let delta = s.time - last;
                last = s.time;
                delta
            })
            .collect();
        CpuProfile {
            nodes,
            start_time: p.start_time,
            end_time: p.end_time,
            samples: p.samples.iter().map(|s| s.node + 1).collect(),
            time_deltas,
        }
    }
}
