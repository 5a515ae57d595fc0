//! napi export of source-map resolution: `resolveSourceMaps` hands the trace's tables (as columns, no
//! samples) and its options (JSON text) to [`jsprof_core::resolve_source_maps`] on the libuv pool, where
//! maps are read and parsed, and gives back the mapped tables (columns), where each old stack went, and
//! the stats.
//!
//! One process-wide [`MapCache`] serves every call that does not opt out, so a map is read once per
//! version of its file however often traces are mapped.

use std::collections::HashMap;
use std::sync::LazyLock;

use jsprof_core::{ExplicitMap, MapCache, MapOptions};
use jsprof_core::{Frame, ProfilerTrace, Stack};
use napi::bindgen_prelude::*;
use napi_derive::napi;
use serde::Deserialize;

use crate::{core_error, guarded};

static CACHE: LazyLock<MapCache> = LazyLock::new(MapCache::new);

/// The options as the facade sends them (already checked there).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Options {
    /// `[resource, { path } | { text }]`
    explicit: Vec<(String, Explicit)>,
    comments: bool,
    adjacent: bool,
    max_bytes: f64,
    cache: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
enum Explicit {
    Path(String),
    Text(String),
}

/// A trace's tables as columns, the cheapest shape to build and read on the main thread: strings as
/// JSON arrays, numbers as `Float64Array`s with -1 where a member is absent.
#[napi(object)]
pub struct TableColumns {
    /// JSON array of the resources.
    pub resources: String,
    /// JSON array of the frames' names.
    pub names: String,
    pub frame_resource: Float64Array,
    pub frame_line: Float64Array,
    pub frame_column: Float64Array,
    pub stack_frame: Float64Array,
    pub stack_parent: Float64Array,
}

/// The mapped tables as [`TableColumns`], where each old stack went (`stackMap[old] = new`), and the
/// stats as JSON.
#[napi(object)]
pub struct MappedTables {
    pub tables: TableColumns,
    pub stack_map: Uint32Array,
    pub stats: String,
}

/// [`TableColumns`] as plain vectors (sendable to the libuv pool).
struct Columns {
    resources: String,
    names: String,
    frame_resource: Vec<f64>,
    frame_line: Vec<f64>,
    frame_column: Vec<f64>,
    stack_frame: Vec<f64>,
    stack_parent: Vec<f64>,
}

impl Columns {
    fn from_js(t: &TableColumns) -> Columns {
        Columns {
            resources: t.resources.clone(),
            names: t.names.clone(),
            frame_resource: t.frame_resource.to_vec(),
            frame_line: t.frame_line.to_vec(),
            frame_column: t.frame_column.to_vec(),
            stack_frame: t.stack_frame.to_vec(),
            stack_parent: t.stack_parent.to_vec(),
        }
    }

    fn into_js(self) -> TableColumns {
        TableColumns {
            resources: self.resources,
            names: self.names,
            frame_resource: self.frame_resource.into(),
            frame_line: self.frame_line.into(),
            frame_column: self.frame_column.into(),
            stack_frame: self.stack_frame.into(),
            stack_parent: self.stack_parent.into(),
        }
    }

    /// The tables (no samples), every problem a `TypeError` naming the member.
    fn to_trace(&self) -> Result<ProfilerTrace> {
        let invalid = |m: String| core_error(jsprof_core::Error::invalid(m));
        let resources: Vec<String> = serde_json::from_str(&self.resources)
            .map_err(|e| invalid(format!("trace.resources must be strings: {e}")))?;
        let names: Vec<String> = serde_json::from_str(&self.names)
            .map_err(|e| invalid(format!("every frame's name must be a string: {e}")))?;
        let n = names.len();
        if [&self.frame_resource, &self.frame_line, &self.frame_column]
            .iter()
            .any(|c| c.len() != n)
            || self.stack_frame.len() != self.stack_parent.len()
        {
            return Err(Error::from_reason(
                "jsprof-node internal error: columns of different lengths",
            ));
        }
        let id = |value: f64, what: &dyn Fn() -> String| -> Result<Option<u32>> {
            if value == -1.0 {
                return Ok(None);
            }
            if value.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&value) {
                return Ok(Some(value as u32));
            }
            Err(invalid(format!(
                "{} must be an integer >= 0, got {value}",
                what()
            )))
        };
        let mut frames = Vec::with_capacity(n);
        for (i, name) in names.into_iter().enumerate() {
            frames.push(Frame {
                name,
                resource_id: id(self.frame_resource[i], &|| format!("frames[{i}].resourceId"))?,
                line: id(self.frame_line[i], &|| format!("frames[{i}].line"))?,
                column: id(self.frame_column[i], &|| format!("frames[{i}].column"))?,
            });
        }
        let mut stacks = Vec::with_capacity(self.stack_frame.len());
        for i in 0..self.stack_frame.len() {
            let frame_id = id(self.stack_frame[i], &|| format!("stacks[{i}].frameId"))?
                .ok_or_else(|| invalid(format!("stacks[{i}].frameId must be an integer >= 0")))?;
            let parent_id = id(self.stack_parent[i], &|| format!("stacks[{i}].parentId"))?;
            stacks.push(Stack { frame_id, parent_id });
        }
        let trace = ProfilerTrace {
            resources,
            frames,
            stacks,
            samples: Vec::new(),
            jsprof: None,
        };
        trace.validate().map_err(core_error)?;
        Ok(trace)
    }

    fn from_trace(trace: &ProfilerTrace) -> Result<Columns> {
        let opt = |v: Option<u32>| v.map_or(-1.0, f64::from);
        let names: Vec<&str> = trace.frames.iter().map(|f| f.name.as_str()).collect();
        Ok(Columns {
            resources: json(&trace.resources)?,
            names: json(&names)?,
            frame_resource: trace.frames.iter().map(|f| opt(f.resource_id)).collect(),
            frame_line: trace.frames.iter().map(|f| opt(f.line)).collect(),
            frame_column: trace.frames.iter().map(|f| opt(f.column)).collect(),
            stack_frame: trace.stacks.iter().map(|s| f64::from(s.frame_id)).collect(),
            stack_parent: trace.stacks.iter().map(|s| opt(s.parent_id)).collect(),
        })
    }
}

pub struct ResolveSourceMaps {
    input: Columns,
    options_json: String,
}

pub struct Output {
    tables: Columns,
    stack_map: Vec<u32>,
    stats: String,
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::from_reason(e.to_string()))
}

impl ResolveSourceMaps {
    fn compute(&mut self) -> Result<Output> {
        guarded("resolving source maps", || {
            let tables = self.input.to_trace()?;
            let options: Options = serde_json::from_str(&self.options_json)
                .map_err(|e| Error::from_reason(format!("jsprof-node internal error: options: {e}")))?;
            let explicit: HashMap<String, ExplicitMap> = options
                .explicit
                .into_iter()
                .map(|(resource, map)| {
                    let map = match map {
                        Explicit::Path(p) => ExplicitMap::Location(p),
                        Explicit::Text(t) => ExplicitMap::Text(t),
                    };
                    (resource, map)
                })
                .collect();
            let map_options = MapOptions {
                explicit,
                comments: options.comments,
                adjacent: options.adjacent,
                max_bytes: options.max_bytes as u64,
            };
            let own;
            let cache = if options.cache {
                &*CACHE
            } else {
                own = MapCache::new();
                &own
            };
            let resolved = jsprof_core::resolve_source_maps(&tables, &map_options, cache);
            Ok(Output {
                tables: Columns::from_trace(&resolved.trace)?,
                stack_map: resolved.stack_map,
                stats: json(&resolved.stats)?,
            })
        })
    }
}

/// Maps a trace's tables off the main thread, on the source-map thread (never the libuv pool: the
/// app's own file I/O does not wait behind it); the samples stay in JS, only their stack ids change.
#[napi(catch_unwind, ts_return_type = "Promise<MappedTables>")]
pub fn resolve_source_maps(env: &Env, tables: TableColumns, options_json: String) -> Result<Object<'_>> {
    let mut task = ResolveSourceMaps {
        input: Columns::from_js(&tables),
        options_json,
    };
    let (deferred, promise) = env.create_deferred()?;
    crate::map_thread::run(move || match task.compute() {
        Ok(output) => deferred.resolve(move |_env| {
            Ok(MappedTables {
                tables: output.tables.into_js(),
                stack_map: output.stack_map.into(),
                stats: output.stats,
            })
        }),
        Err(e) => deferred.reject(e),
    })
    .map_err(|e| Error::from_reason(format!("cannot start the source-map thread: {e}")))?;
    Ok(promise)
}

/// Test hook: how many files the process-wide source-map cache has read from disk.
#[napi]
pub fn source_map_reads() -> f64 {
    CACHE.reads() as f64
}

/// Forgets every map read so far.
#[napi]
pub fn clear_source_map_cache() {
    CACHE.clear();
}
