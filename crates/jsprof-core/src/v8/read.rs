//! V8 profile JSON read whole (serde_json into borrowed structs), then validated by the
//! [`ProfileBuilder`] into a [`Profile`]: [`Profile::from_json`], the road that words every error,
//! naming the member or sample at fault. A `SyntaxError` for text that is not JSON, a `TypeError` for
//! JSON of the wrong shape. [`RawCallFrame`] is the one pass's too (`crate::convert::one_pass`).

use std::borrow::Cow;

use serde::Deserialize;

use super::{Profile, ProfileBuilder};
use crate::error::{Error, Result};

impl Profile {
    /// Parses a V8 CPU profile from JSON text: a `.cpuprofile` file, or the inspector's
    /// `Profiler.stop` result (`{ "profile": { … } }`).
    pub fn from_json(text: &str) -> Result<Profile> {
        let raw: RawProfile = match serde_json::from_str(text) {
            Ok(raw) => raw,
            // A name that is not well-formed UTF-16 (JSON.stringify writes a lone surrogate as
            // `\ud800`, which serde_json rejects): read it as the visible text `\u{d800}`.
            Err(e) => match crate::json_text::lone_surrogates_visible(text) {
                Cow::Owned(fixed) => return Profile::from_json(&fixed),
                Cow::Borrowed(_) => return Err(json_error(text, e)),
            },
        };
        raw.into_profile_unwrapped()
    }
}

/// serde_json's error as ours: malformed JSON is a `SyntaxError`, a wrong shape a `TypeError`.
fn json_error(text: &str, e: serde_json::Error) -> Error {
    // Which value, by its path (`timeDeltas[1]: string "x" where a number belongs`), not a column.
    let described = crate::json_text::describe_error(text, &e);
    if e.is_data() {
        Error::invalid(format!("invalid V8 CPU profile: {described}"))
    } else {
        Error::syntax(format!("the CPU profile is not valid JSON: {described}"))
    }
}

/// A member that may be absent but, when present, is read as given (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<f64>>, D::Error> {
    Option::<f64>::deserialize(d).map(Some)
}

fn not_a_number(member: &str) -> Error {
    Error::invalid(format!(
        "invalid V8 CPU profile: `{member}` is null, not a finite number (JSON.stringify writes a JS object's Infinity or NaN as null)"
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawProfile<'a> {
    #[serde(borrow, default)]
    nodes: Option<Vec<RawNode<'a>>>,
    /// Outer `None`: the member is absent; `Some(None)`: it is `null`, which is what `JSON.stringify`
    /// makes of a JS object's `Infinity` or `NaN` — refused, never read as absent.
    #[serde(default, deserialize_with = "present")]
    start_time: Option<Option<f64>>,
    #[serde(default, deserialize_with = "present")]
    end_time: Option<Option<f64>>,
    #[serde(default)]
    samples: Option<Vec<i64>>,
    #[serde(default)]
    time_deltas: Option<Vec<f64>>,
    /// The inspector's `Profiler.stop` reply wraps the profile in `{ "profile": … }`.
    #[serde(borrow, default)]
    profile: Option<Box<RawProfile<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawNode<'a> {
    id: i64,
    #[serde(borrow)]
    call_frame: RawCallFrame<'a>,
    #[serde(default)]
    children: Option<Vec<i64>>,
    /// The older DevTools form names the parent instead of the children.
    #[serde(default)]
    parent: Option<i64>,
    /// V8's per-line ticks of the node's own samples.
    #[serde(default)]
    position_ticks: Option<Vec<RawLineTicks>>,
}

/// One of a node's `positionTicks`.
#[derive(Deserialize)]
pub(crate) struct RawLineTicks {
    pub(crate) line: i64,
    pub(crate) ticks: i64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawCallFrame<'a> {
    #[serde(borrow, default)]
    pub(crate) function_name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) url: Cow<'a, str>,
    #[serde(default = "unknown_position")]
    pub(crate) line_number: i64,
    #[serde(default = "unknown_position")]
    pub(crate) column_number: i64,
}

fn unknown_position() -> i64 {
    -1
}

impl RawProfile<'_> {
    /// The profile itself, or the one an inspector reply wraps.
    fn into_profile_unwrapped(self) -> Result<Profile> {
        match self.profile {
            Some(inner) if self.nodes.is_none() => inner.into_profile(),
            _ => self.into_profile(),
        }
    }

    fn into_profile(self) -> Result<Profile> {
        let nodes = self.nodes.ok_or_else(|| {
            Error::invalid("invalid V8 CPU profile: `nodes` is missing (a profile has nodes, startTime, samples and timeDeltas)")
        })?;
        let samples = self
            .samples
            .ok_or_else(|| Error::invalid("invalid V8 CPU profile: `samples` is missing"))?;
        let deltas = self
            .time_deltas
            .ok_or_else(|| Error::invalid("invalid V8 CPU profile: `timeDeltas` is missing"))?;
        let start_time = self
            .start_time
            .ok_or_else(|| Error::invalid("invalid V8 CPU profile: `startTime` is missing"))?
            .ok_or_else(|| not_a_number("startTime"))?;
        let end_time = match self.end_time {
            None => start_time,
            Some(given) => given.ok_or_else(|| not_a_number("endTime"))?,
        };
        ProfileBuilder::of_nodes(&nodes)?.finish(&samples, &deltas, start_time, end_time)
    }
}

impl ProfileBuilder {
    /// A builder holding `nodes` and their links (children or parent ids), in the text's order.
    fn of_nodes(nodes: &[RawNode]) -> Result<ProfileBuilder> {
        let mut builder = ProfileBuilder::with_capacity(nodes.len());
        for node in nodes {
            builder.add_node(
                node.id,
                &node.call_frame.function_name,
                &node.call_frame.url,
                node.call_frame.line_number,
                node.call_frame.column_number,
            )?;
        }
        for (index, node) in nodes.iter().enumerate() {
            if let Some(children) = &node.children {
                builder.set_children(index, children)?;
            }
            if let Some(parent) = node.parent {
                builder.set_parent(index, parent)?;
            }
            for t in node.position_ticks.iter().flatten() {
                builder.add_line_ticks(index, t.line, t.ticks)?;
            }
        }
        Ok(builder)
    }
}
