//! `.cpuprofile` text straight to a trace, in one pass of serde_json (through serde's visitors): each
//! node goes into the [`ProfileBuilder`] as it is read, each sample is converted as its id is read and
//! gets its timestamp as its delta is read. Neither `Vec`s of nodes nor the number arrays nor a
//! [`Profile`]'s samples are ever held (for ten million samples, 320 MB that never exist).
//!
//! It takes the order V8, Node and DevTools write (`nodes` before `samples`; `startTime` and `samples`
//! before `timeDeltas`), with the validator ([`ProfileBuilder`], [`NodeIds`], [`SampleClock`]) and the
//! rules ([`ProfileConverter`]) every road shares. Anything else — another member order, a member
//! twice, `null` where an array belongs, and every error — makes it give up; then [`Profile::from_json`]
//! (serde_json) reads the text from the start and either gives the same trace or words the error, naming
//! the member or sample at fault, as it always did. So the answer never depends on the road.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::{
    sample_timestamp, trace_from_profile_hiding, CallGraph, OwnCode, ProfileConverter, ScriptSources,
};
use crate::error::Result;
use crate::trace::{Marker, ProfilerTrace, TraceBuilder, TraceSample};
use crate::v8::{NodeIds, Profile, ProfileBuilder, RawCallFrame, RawLineTicks, SampleClock};

/// Where the pass puts the samples: each one's stack and marker as `samples` is read, then each one's
/// timestamp, in the same order, as `timeDeltas` is read.
pub trait SampleSink: Default {
    fn reserve(&mut self, additional: usize);
    fn push_leaf(&mut self, stack_id: Option<u32>, marker: Option<Marker>);
    /// Gives the next sample without one its timestamp; false when every sample has one.
    fn push_timestamp(&mut self, timestamp: f64) -> bool;
    /// Every sample has its timestamp.
    fn complete(&self) -> bool;

    /// A sink holding `samples` (for text the one pass left to the road by way of a [`Profile`]).
    fn of_samples(samples: &[TraceSample]) -> Self {
        let mut sink = Self::default();
        sink.reserve(samples.len());
        for s in samples {
            sink.push_leaf(s.stack_id, s.marker);
            sink.push_timestamp(s.timestamp);
        }
        sink
    }
}

/// A [`ProfilerTrace`]'s samples, timestamps filled in order.
#[derive(Default)]
pub struct TraceSamples {
    pub samples: Vec<TraceSample>,
    timed: usize,
}

impl SampleSink for TraceSamples {
    fn reserve(&mut self, additional: usize) {
        self.samples.reserve_exact(additional);
    }

    #[inline]
    fn push_leaf(&mut self, stack_id: Option<u32>, marker: Option<Marker>) {
        self.samples.push(TraceSample {
            timestamp: f64::NAN,
            stack_id,
            marker,
        });
    }

    #[inline]
    fn push_timestamp(&mut self, timestamp: f64) -> bool {
        let Some(sample) = self.samples.get_mut(self.timed) else {
            return false;
        };
        sample.timestamp = timestamp;
        self.timed += 1;
        true
    }

    fn complete(&self) -> bool {
        self.timed == self.samples.len()
    }
}

/// A V8 CPU profile's JSON text (or the inspector's `{ "profile": … }` reply) as a trace, timestamps
/// in ms from `time_origin_us` (default: the profile's `startTime`), `own` code left out of the stacks:
/// what [`Profile::from_json`] and `trace_from_profile_hiding` give, errors included.
pub fn trace_from_json(
    text: &str,
    time_origin_us: Option<f64>,
    own: Option<&OwnCode>,
) -> Result<ProfilerTrace> {
    trace_from_json_with(text, time_origin_us, own, None)
}

/// [`trace_from_json`], with the samples of code V8 inlined into a node's function given that
/// function's frame when `inlined` (its scripts' sources) says where V8's per-line ticks go
/// (`crate::convert::inlined`).
pub fn trace_from_json_with(
    text: &str,
    time_origin_us: Option<f64>,
    own: Option<&OwnCode>,
    inlined: Option<&dyn ScriptSources>,
) -> Result<ProfilerTrace> {
    match read_straight::<TraceSamples>(text, time_origin_us, own, inlined) {
        Some(read) => {
            let mut trace = read.tables;
            trace.samples = read.samples.samples;
            // The vector grew by doubling (serde_json does not know an array's length ahead).
            trace.samples.shrink_to_fit();
            Ok(trace)
        }
        None => trace_by_profile_with(text, time_origin_us, own, inlined),
    }
}

/// [`trace_from_json`] with the samples put in a sink of the caller's (the binding's typed-array
/// columns) instead of the trace: its tables (no samples), and the sink.
pub fn trace_from_json_into<S: SampleSink>(
    text: &str,
    time_origin_us: Option<f64>,
    own: Option<&OwnCode>,
    inlined: Option<&dyn ScriptSources>,
) -> Result<(ProfilerTrace, S)> {
    match read_straight::<S>(text, time_origin_us, own, inlined) {
        Some(read) => Ok((read.tables, read.samples)),
        None => {
            let mut trace = trace_by_profile_with(text, time_origin_us, own, inlined)?;
            let samples = std::mem::take(&mut trace.samples);
            Ok((trace, S::of_samples(&samples)))
        }
    }
}

/// [`trace_from_json`] by way of a whole [`Profile`]: the road for text the one pass does not take
/// (and for every error, which it words).
pub fn trace_by_profile(
    text: &str,
    time_origin_us: Option<f64>,
    own: Option<&OwnCode>,
) -> Result<ProfilerTrace> {
    trace_by_profile_with(text, time_origin_us, own, None)
}

/// [`trace_by_profile`], inlined functions' samples as [`trace_from_json_with`] gives them.
pub fn trace_by_profile_with(
    text: &str,
    time_origin_us: Option<f64>,
    own: Option<&OwnCode>,
    inlined: Option<&dyn ScriptSources>,
) -> Result<ProfilerTrace> {
    let profile = Profile::from_json(text)?;
    let origin = time_origin_us.unwrap_or(profile.start_time);
    let graph = inlined.map(|_| CallGraph::of(&profile));
    let inlined = graph.as_ref().zip(inlined);
    Ok(trace_from_profile_hiding(&profile, origin, own, inlined))
}

/// What the one pass read.
pub struct Straight<S> {
    /// The trace's resources, frames and stacks (its `samples` are empty: they are in `samples`).
    pub tables: ProfilerTrace,
    pub samples: S,
    /// The profile's `startTime` (µs, V8's clock).
    pub start_time: f64,
}

/// The one pass over serde_json; `None` when the text is not in the common shape or has any error
/// (then [`Profile::from_json`] decides).
pub(crate) fn read_straight<S: SampleSink>(
    text: &str,
    time_origin_us: Option<f64>,
    own: Option<&OwnCode>,
    inlined: Option<&dyn ScriptSources>,
) -> Option<Straight<S>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = ProfileSeed::<S> {
        inlined,
        ..ProfileSeed::new(time_origin_us, own)
    };
    let read = seed.deserialize(&mut de).ok()??;
    de.end().ok()?;
    Some(read)
}

/// The one pass over any serde `Deserializer` of a profile's text: serde_json's for
/// [`trace_from_json`], sonic-rs's in `examples/json_readers.rs`, which times both. `None` when the
/// text is not in the common shape or has any error; the caller checks that nothing follows the value.
pub fn read_in_one_pass<'de, D: Deserializer<'de>, S: SampleSink>(
    deserializer: D,
    time_origin_us: Option<f64>,
    own: Option<&OwnCode>,
) -> Option<Straight<S>> {
    ProfileSeed::<S>::new(time_origin_us, own)
        .deserialize(deserializer)
        .ok()?
}

/// Not in the shape this road takes: [`Profile::from_json`] decides.
fn give_up<E: de::Error>() -> E {
    E::custom("not in the common shape")
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Member {
    Nodes,
    StartTime,
    EndTime,
    Samples,
    TimeDeltas,
    Profile,
    #[serde(other)]
    Other,
}

/// How deep `{ "profile": … }` wrappers may nest on this road (the inspector's reply has one); deeper
/// ones are left to serde_json, whose recursion limit keeps the stack bounded.
const MAX_WRAPPERS: u8 = 2;

/// Reads one profile object; `Ok(None)` when it lacks a member (see [`Profile::from_json`]'s errors).
struct ProfileSeed<'o, S> {
    time_origin_us: Option<f64>,
    own: Option<&'o OwnCode>,
    inlined: Option<&'o dyn ScriptSources>,
    wrappers: u8,
    sink: std::marker::PhantomData<S>,
}

impl<'o, S> ProfileSeed<'o, S> {
    fn new(time_origin_us: Option<f64>, own: Option<&'o OwnCode>) -> Self {
        ProfileSeed {
            time_origin_us,
            own,
            inlined: None,
            wrappers: 0,
            sink: std::marker::PhantomData,
        }
    }
}

impl<'de, S: SampleSink> DeserializeSeed<'de> for ProfileSeed<'_, S> {
    type Value = Option<Straight<S>>;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, S: SampleSink> Visitor<'de> for ProfileSeed<'_, S> {
    type Value = Option<Straight<S>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a V8 CPU profile")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
        let mut tree: Option<(Profile, NodeIds)> = None;
        let (mut start_time, mut end_time) = (None::<f64>, None::<f64>);
        let mut builder = TraceBuilder::new();
        let mut sink: Option<S> = None;
        let mut timed = false;
        let mut inner: Option<Option<Straight<S>>> = None;
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Nodes if tree.is_none() => {
                    let built = map.next_value_seed(Nodes)?.into_tree();
                    tree = Some(built.map_err(de::Error::custom)?);
                }
                Member::StartTime if start_time.is_none() => start_time = Some(map.next_value()?),
                Member::EndTime if end_time.is_none() => end_time = Some(map.next_value()?),
                Member::Samples if sink.is_none() => {
                    let (Some((profile, ids)), Some(origin)) = (&tree, self.time_origin_us.or(start_time))
                    else {
                        return Err(give_up());
                    };
                    let converter = ProfileConverter::new(profile, origin);
                    let converter = match self.own {
                        Some(own) => converter.hiding(own),
                        None => converter,
                    };
                    let graph = self.inlined.map(|_| CallGraph::of(profile));
                    let converter = converter.splitting_inlined(graph.as_ref().zip(self.inlined));
                    sink = Some(map.next_value_seed(SampleIds {
                        ids,
                        converter,
                        builder: &mut builder,
                        sink: S::default(),
                    })?);
                }
                Member::TimeDeltas if !timed => {
                    let (Some(sink), Some(start)) = (&mut sink, start_time) else {
                        return Err(give_up());
                    };
                    map.next_value_seed(Deltas {
                        clock: SampleClock::new(start),
                        time_origin_us: self.time_origin_us.unwrap_or(start),
                        sink,
                    })?;
                    timed = true;
                }
                Member::Profile if inner.is_none() && self.wrappers < MAX_WRAPPERS => {
                    let seed = ProfileSeed {
                        wrappers: self.wrappers + 1,
                        inlined: self.inlined,
                        ..ProfileSeed::new(self.time_origin_us, self.own)
                    };
                    inner = Some(map.next_value_seed(seed)?);
                }
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => return Err(give_up()),
            }
        }
        if tree.is_none() {
            // The inspector's reply: `{ "profile": { … } }`.
            return Ok(inner.flatten());
        }
        let (Some(samples), Some(start_time), true) = (sink, start_time, timed) else {
            return Ok(None);
        };
        if !start_time.is_finite() || !end_time.unwrap_or(start_time).is_finite() {
            return Ok(None);
        }
        Ok(Some(Straight {
            tables: builder.finish(),
            samples,
            start_time,
        }))
    }
}

/// `nodes`: each node added to a [`ProfileBuilder`] as it is read; the links (children ids, kept in
/// one array, or a parent id) applied once every node is known.
struct Nodes;

/// A node's links: its children in `Links::children[start..end]`, and its parent id.
struct Link {
    children: Option<(usize, usize)>,
    parent: Option<i64>,
}

impl<'de> DeserializeSeed<'de> for Nodes {
    type Value = ProfileBuilder;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Nodes {
    type Value = ProfileBuilder;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of nodes")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
        let mut builder = ProfileBuilder::with_capacity(seq.size_hint().unwrap_or(0));
        let mut children = Vec::new();
        let mut links = Vec::new();
        while let Some(link) = seq.next_element_seed(Node {
            builder: &mut builder,
            children: &mut children,
        })? {
            links.push(link);
        }
        for (index, link) in links.into_iter().enumerate() {
            if let Some((start, end)) = link.children {
                builder
                    .set_children(index, &children[start..end])
                    .map_err(de::Error::custom)?;
            }
            if let Some(parent) = link.parent {
                builder.set_parent(index, parent).map_err(de::Error::custom)?;
            }
        }
        Ok(builder)
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum NodeMember {
    Id,
    CallFrame,
    Children,
    Parent,
    PositionTicks,
    #[serde(other)]
    Other,
}

/// One node, added to the builder; its children ids appended to `children`.
struct Node<'a> {
    builder: &'a mut ProfileBuilder,
    children: &'a mut Vec<i64>,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Link;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Link, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Link;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Link, A::Error> {
        let (mut id, mut call_frame) = (None::<i64>, None::<RawCallFrame<'de>>);
        let (mut children, mut parent) = (None, None);
        let mut ticks: Option<Vec<RawLineTicks>> = None;
        while let Some(member) = map.next_key::<NodeMember>()? {
            match member {
                NodeMember::Id if id.is_none() => id = Some(map.next_value()?),
                NodeMember::CallFrame if call_frame.is_none() => call_frame = Some(map.next_value()?),
                NodeMember::Children if children.is_none() => {
                    let start = self.children.len();
                    map.next_value_seed(Ids(self.children))?;
                    children = Some((start, self.children.len()));
                }
                NodeMember::Parent if parent.is_none() => parent = Some(map.next_value::<i64>()?),
                NodeMember::PositionTicks if ticks.is_none() => ticks = Some(map.next_value()?),
                NodeMember::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => return Err(give_up()),
            }
        }
        let (Some(id), Some(frame)) = (id, call_frame) else {
            return Err(give_up());
        };
        let index = self.builder.node_count();
        self.builder
            .add_node(
                id,
                &frame.function_name,
                &frame.url,
                frame.line_number,
                frame.column_number,
            )
            .map_err(de::Error::custom)?;
        for t in ticks.iter().flatten() {
            self.builder
                .add_line_ticks(index, t.line, t.ticks)
                .map_err(de::Error::custom)?;
        }
        Ok(Link { children, parent })
    }
}

/// An array of ids, appended to a vector.
struct Ids<'a>(&'a mut Vec<i64>);

impl<'de> DeserializeSeed<'de> for Ids<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Ids<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of node ids")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(id) = seq.next_element()? {
            self.0.push(id);
        }
        Ok(())
    }
}

/// `samples`: each id converted at once to its stack and marker.
struct SampleIds<'a, 'p, S> {
    ids: &'a NodeIds,
    converter: ProfileConverter<'p>,
    builder: &'a mut TraceBuilder,
    sink: S,
}

impl<'de, S: SampleSink> DeserializeSeed<'de> for SampleIds<'_, '_, S> {
    type Value = S;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<S, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, S: SampleSink> Visitor<'de> for SampleIds<'_, '_, S> {
    type Value = S;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of node ids")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> std::result::Result<S, A::Error> {
        self.sink.reserve(seq.size_hint().unwrap_or(0));
        let mut i = 0;
        while let Some(id) = seq.next_element::<i64>()? {
            let node = self.ids.sample_node(i, id).map_err(de::Error::custom)?;
            let (stack_id, marker) = self.converter.stack_and_marker(self.builder, node);
            self.sink.push_leaf(stack_id, marker);
            i += 1;
        }
        Ok(self.sink)
    }
}

/// `timeDeltas`: each sample's timestamp, as its delta is read.
struct Deltas<'a, S> {
    clock: SampleClock,
    time_origin_us: f64,
    sink: &'a mut S,
}

impl<'de, S: SampleSink> DeserializeSeed<'de> for Deltas<'_, S> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, S: SampleSink> Visitor<'de> for Deltas<'_, S> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of time deltas")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> std::result::Result<(), A::Error> {
        let mut i = 0;
        while let Some(delta) = seq.next_element::<f64>()? {
            let time = self.clock.advance(i, delta).map_err(de::Error::custom)?;
            if !self
                .sink
                .push_timestamp(sample_timestamp(time, self.time_origin_us))
            {
                return Err(give_up());
            }
            i += 1;
        }
        if !self.sink.complete() {
            return Err(give_up());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::trace_from_profile;
    use proptest::prelude::*;

    /// The one pass, if it takes the text.
    fn straight(text: &str, origin: Option<f64>) -> Option<ProfilerTrace> {
        read_straight::<TraceSamples>(text, origin, None, None).map(|read| {
            let mut trace = read.tables;
            trace.samples = read.samples.samples;
            trace
        })
    }

    /// Whatever the one pass answers, the road by way of a whole `Profile` answers the same; and
    /// `trace_from_json` always answers as that road does.
    fn assert_agrees(text: &str) {
        let slow = trace_by_profile(text, None, None);
        match (straight(text, None), &slow) {
            (Some(fast), Ok(slow)) => assert_eq!(&fast, slow, "{text}"),
            (Some(fast), Err(e)) => panic!(
                "the one pass took text the Profile road refuses ({}): {fast:?}\n{text}",
                e.message
            ),
            (None, _) => {}
        }
        match (trace_from_json(text, None, None), slow) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!((a.kind, a.message), (b.kind, b.message)),
            (a, b) => panic!("the roads disagree on {text}: {a:?} vs {b:?}"),
        }
    }

    const SMALL: &str = r#"{"nodes":[
        {"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":0,"children":[2,3]},
        {"id":2,"callFrame":{"functionName":"(program)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":1,"positionTicks":[{"line":1,"ticks":2}]},
        {"id":3,"callFrame":{"functionName":"RegExp: ^\\s+\"$ \u00e9\u20ac","scriptId":"7","url":"file:///app/caf\u00e9 ü.js","lineNumber":4,"columnNumber":13},"hitCount":1,"deoptReason":null,"x":[true,false,{"y":-1.5e3}]}
      ],"startTime":1000,"endTime":2000.5,"samples":[2,3,3],"timeDeltas":[10,20,-5]}"#;

    #[test]
    fn reads_what_v8_writes_in_one_pass_as_the_profile_road_does() {
        let fast = straight(SMALL, None).expect("the common shape takes the one pass");
        assert_eq!(
            fast,
            trace_from_profile(&Profile::from_json(SMALL).unwrap(), 1000.0)
        );
        assert_eq!(fast.frames[0].name, "RegExp: ^\\s+\"$ é€");
        assert_eq!(fast.resources, vec!["file:///app/café ü.js"]);
        let times: Vec<f64> = fast.samples.iter().map(|s| s.timestamp).collect();
        assert_eq!(times, vec![0.01, 0.03, 0.025]);
        // The inspector's reply, and a time origin of the caller's.
        let wrapped = format!(" {{\"id\":4, \"profile\" : {SMALL} }}\n");
        assert_eq!(straight(&wrapped, None), Some(fast));
        let shifted = straight(SMALL, Some(0.0)).unwrap();
        assert_eq!(shifted.samples[0].timestamp, 1.01);
        assert_agrees(SMALL);
    }

    #[test]
    fn leaves_other_orders_duplicates_and_errors_to_the_profile_road() {
        let variants = [
            // Other member orders.
            r#"{"samples":[1],"nodes":[{"id":1,"callFrame":{}}],"startTime":0,"timeDeltas":[1]}"#.to_string(),
            r#"{"nodes":[{"id":1,"callFrame":{}}],"timeDeltas":[1],"samples":[1],"startTime":0}"#.to_string(),
            r#"{"nodes":[{"id":1,"callFrame":{}}],"samples":[1],"timeDeltas":[1],"startTime":0}"#.to_string(),
            // Members twice, nulls, missing members.
            SMALL.replace("\"startTime\":1000", "\"startTime\":1000,\"startTime\":1"),
            SMALL.replace(
                "\"hitCount\":0,\"children\":[2,3]",
                "\"children\":[2,3],\"children\":[2,3]",
            ),
            SMALL.replace("\"children\":[2,3]", "\"children\":null"),
            SMALL.replace(",\"endTime\":2000.5", ""),
            SMALL.replace("\"startTime\":1000,", ""),
            // Errors of every kind.
            SMALL.replace("[2,3,3]", "[2,3,9]"),
            SMALL.replace("[10,20,-5]", "[10,20]"),
            SMALL.replace("[10,20,-5]", "[10,20,-5,1]"),
            SMALL.replace("[2,3]", "[2,42]"),
            SMALL.replace("\"id\":3", "\"id\":2"),
            SMALL.replace("[2,3,3]", "[2,3,3.5]"),
            SMALL.replace("(program)", "\\ud83d"),
            SMALL.replace("(program)", "tab\there"),
            format!("{SMALL} x"),
            SMALL[..SMALL.len() - 3].to_string(),
            format!("{}{}", "[".repeat(300), "]".repeat(300)),
        ];
        for text in &variants {
            assert_agrees(text);
        }
        // Not in V8's order, yet the same trace.
        let reordered = &variants[0];
        assert!(straight(reordered, None).is_none());
        assert_eq!(trace_from_json(reordered, None, None).unwrap().samples.len(), 1);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        for depth in [200, 300, 100_000] {
            let nested = format!("{}{}", "{\"profile\":".repeat(depth), "}".repeat(depth));
            assert!(trace_from_json(&nested, None, None).is_err());
            let deep_member = format!(
                "{{\"nodes\":[],\"x\":{}1{},\"startTime\":0,\"samples\":[],\"timeDeltas\":[]}}",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            assert_agrees(&deep_member);
        }
    }

    /// Number tokens, mostly the plain integers V8 writes, sometimes any other kind.
    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            60 => (-2000i64..2000).prop_map(|v| v.to_string()),
            1 => any::<i64>().prop_map(|v| v.to_string()),
            1 => any::<u64>().prop_map(|v| v.to_string()),
            1 => (-1000.0f64..1000.0).prop_map(|v| format!("{v}")),
            1 => prop::sample::select(vec!["-0", "1e400", "0.5E-2", "12.0", "1e3"]).prop_map(String::from),
        ]
    }

    fn string() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-z/.:() ]{0,12}".prop_map(|s| format!("\"{s}\"")),
            1 => any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
            1 => Just(r#""a\u00e9\n\\\/b""#.to_string()),
        ]
    }

    /// A profile-shaped text: nodes with call frames, mostly numbered 1..n and linked to an earlier
    /// node (a tree) and sometimes not, samples and deltas, extra members, random whitespace.
    fn profile_text() -> impl Strategy<Value = String> {
        let call_frame =
            (string(), string(), number(), number(), prop::bool::ANY).prop_map(|(n, u, l, c, extra)| {
                let extra = if extra {
                    r#","scriptId":"12","codeType":"JS""#
                } else {
                    ""
                };
                format!(r#"{{"functionName":{n},"url":{u},"lineNumber":{l},"columnNumber":{c}{extra}}}"#)
            });
        let node = (
            call_frame,
            any::<prop::sample::Index>(),
            prop::option::weighted(0.1, 1i64..12),
            prop::option::weighted(0.1, number()),
        );
        let nodes = prop::collection::vec(node, 1..8).prop_map(|nodes| {
            let texts: Vec<String> = nodes
                .into_iter()
                .enumerate()
                .map(|(i, (cf, parent, child, odd_id))| {
                    let id = odd_id.unwrap_or_else(|| (i + 1).to_string());
                    let parent = if i > 0 {
                        format!(",\"parent\":{}", parent.index(i) + 1)
                    } else {
                        String::new()
                    };
                    let children = child.map(|c| format!(",\"children\":[{c}]")).unwrap_or_default();
                    format!(r#"{{"id":{id},"callFrame":{cf},"hitCount":3{parent}{children}}}"#)
                })
                .collect();
            (texts.len(), texts)
        });
        (
            nodes,
            prop::collection::vec(any::<prop::sample::Index>(), 0..8),
            prop::collection::vec(number(), 0..8),
        )
            .prop_flat_map(|((count, nodes), samples, deltas)| {
                let samples: Vec<String> = samples.iter().map(|s| (s.index(count) + 1).to_string()).collect();
                let n = samples.len().min(deltas.len());
                (
                    Just(nodes),
                    prop_oneof![4 => Just(samples[..n].to_vec()), 1 => prop::collection::vec(number(), 0..8)],
                    Just(deltas[..n].to_vec()),
                    number(),
                    prop::sample::select(vec!["", " ", "\n\t ", "\r\n"]),
                    prop::bool::ANY,
                )
            })
            .prop_map(|(nodes, samples, deltas, start, ws, wrap)| {
                let members = [
                    format!("\"nodes\":[{}]", nodes.join(&format!(",{ws}"))),
                    format!("\"startTime\"{ws}:{ws}{start}"),
                    format!("\"samples\":[{}]", samples.join(",")),
                    format!("\"timeDeltas\":[{}]", deltas.join(&format!("{ws},"))),
                    "\"title\":{\"a\":[null,true,false,1.5,\"x\"]}".to_string(),
                ];
                let text = format!("{ws}{{{}}}{ws}", members.join(","));
                if wrap {
                    format!("{{\"profile\":{text}}}")
                } else {
                    text
                }
            })
    }

    proptest! {
        #[test]
        fn agrees_with_the_profile_road(text in profile_text()) {
            assert_agrees(&text);
        }

        #[test]
        fn agrees_with_the_profile_road_on_damaged_text(text in profile_text(), at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let mut bytes = text.into_bytes();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            assert_agrees(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn takes_plain_profiles_in_one_pass(ids in prop::collection::vec(1i64..5, 0..50), deltas in prop::collection::vec(-100i64..1000, 0..50)) {
            let n = ids.len().min(deltas.len());
            let text = format!(
                r#"{{"nodes":[{{"id":1,"callFrame":{{"functionName":"(root)","url":""}},"children":[2,3,4]}},{{"id":2,"callFrame":{{"functionName":"a","url":"file:///a.js","lineNumber":1,"columnNumber":2}}}},{{"id":3,"callFrame":{{"functionName":"b","url":""}}}},{{"id":4,"callFrame":{{"functionName":"(idle)","url":""}}}}],"startTime":5,"endTime":9,"samples":{:?},"timeDeltas":{:?}}}"#,
                &ids[..n], &deltas[..n]
            );
            let fast = straight(&text, None).expect("plain profiles take the one pass");
            prop_assert_eq!(fast, trace_by_profile(&text, None, None).unwrap());
        }
    }
}
