//! `TraceParts`: a trace in the shape that is cheapest to turn into JS objects (what `Recording.build`
//! and `fromCpuProfile` return). [`PlainParts`] is the same before the typed arrays exist, so it can be
//! built off the main thread; [`SampleColumns`] is the core's `SampleSink` that `fromCpuProfile`'s one
//! pass writes the samples into.

use jsprof_core::{Marker, ProfilerTrace, SampleSink};
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// A trace in the shape that is cheapest to turn into JS objects: the frames and resources (strings)
/// as JSON text (`JSON.parse` is V8's fastest object factory for them), the stacks and the samples,
/// which are many and small, as columns the facade zips into `{ frameId, parentId? }` and
/// `{ timestamp, stackId?, marker? }` objects.
#[napi(object)]
pub struct TraceParts {
    /// `{"frames":[…],"jsprof":{…},"resources":[…]}` (`jsprof` only when the trace has the member)
    pub tables: String,
    pub stack_frames: Uint32Array,
    /// -1 where the stack has no parent.
    pub stack_parents: Int32Array,
    pub timestamps: Float64Array,
    /// -1 where the sample has no stack.
    pub stack_ids: Int32Array,
    /// 0 none, 1 script, 2 gc, 3 other, 4 style, 5 layout, 6 paint.
    pub markers: Uint8Array,
}

/// [`TraceParts`] before the typed arrays exist: plain data that can be built off the main thread.
pub struct PlainParts {
    tables: String,
    stack_frames: Vec<u32>,
    stack_parents: Vec<i32>,
    samples: SampleColumns,
}

/// The samples as the columns of [`TraceParts`]; what `fromCpuProfile`'s one pass writes them into.
#[derive(Default)]
pub(crate) struct SampleColumns {
    timestamps: Vec<f64>,
    stack_ids: Vec<i32>,
    markers: Vec<u8>,
}

impl SampleSink for SampleColumns {
    fn reserve(&mut self, additional: usize) {
        self.timestamps.reserve_exact(additional);
        self.stack_ids.reserve_exact(additional);
        self.markers.reserve_exact(additional);
    }

    #[inline]
    fn push_leaf(&mut self, stack_id: Option<u32>, marker: Option<Marker>) {
        self.stack_ids.push(stack_id.map_or(-1, |id| id as i32));
        self.markers.push(Marker::code(marker));
    }

    #[inline]
    fn push_timestamp(&mut self, timestamp: f64) -> bool {
        let room = self.timestamps.len() < self.stack_ids.len();
        if room {
            self.timestamps.push(timestamp);
        }
        room
    }

    fn complete(&self) -> bool {
        self.timestamps.len() == self.stack_ids.len()
    }
}

impl PlainParts {
    /// The parts of a trace's tables (its samples, if any, are not looked at).
    pub(crate) fn of_tables(tables: &ProfilerTrace, samples: SampleColumns) -> Result<PlainParts> {
        #[derive(serde::Serialize)]
        struct Tables<'a> {
            frames: &'a [jsprof_core::Frame],
            #[serde(skip_serializing_if = "Option::is_none")]
            jsprof: Option<&'a jsprof_core::Extension>,
            resources: &'a [String],
        }
        let json = serde_json::to_string(&Tables {
            frames: &tables.frames,
            jsprof: tables.jsprof.as_ref(),
            resources: &tables.resources,
        })
        .map_err(|e| Error::from_reason(e.to_string()))?;
        Ok(PlainParts {
            tables: json,
            stack_frames: tables.stacks.iter().map(|s| s.frame_id).collect(),
            stack_parents: tables
                .stacks
                .iter()
                .map(|s| s.parent_id.map_or(-1, |p| p as i32))
                .collect(),
            samples,
        })
    }

    pub(crate) fn from_trace(trace: ProfilerTrace) -> Result<PlainParts> {
        let samples = SampleColumns::of_samples(&trace.samples);
        Self::of_tables(&trace, samples)
    }

    pub(crate) fn into_js(self) -> TraceParts {
        TraceParts {
            tables: self.tables,
            stack_frames: Uint32Array::new(self.stack_frames),
            stack_parents: Int32Array::new(self.stack_parents),
            timestamps: Float64Array::new(self.samples.timestamps),
            stack_ids: Int32Array::new(self.samples.stack_ids),
            markers: Uint8Array::new(self.samples.markers),
        }
    }
}
