//! napi export of source-map resolution: `resolveSourceMaps` hands the trace's tables (JSON text, no
//! samples) and its options (JSON text) to [`jsprof_core::sourcemap::resolve`] on the libuv pool, where
//! maps are read and parsed, and gives back the mapped tables, where each old stack went, and the stats.
//!
//! One process-wide [`MapCache`] serves every call that does not opt out, so a map is read once per
//! version of its file however often traces are mapped.

use std::collections::HashMap;
use std::sync::LazyLock;

use jsprof_core::sourcemap::{self, ExplicitMap, MapCache, MapOptions};
use jsprof_core::{export, ProfilerTrace};
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

/// The mapped tables (`{"resources","frames","stacks"}` JSON), `stackMap[old] = new`, and the stats JSON.
#[napi(object)]
pub struct MappedTables {
    pub tables: String,
    pub stack_map: Uint32Array,
    pub stats: String,
}

pub struct ResolveSourceMaps {
    tables_json: String,
    options_json: String,
}

pub struct Output {
    tables: String,
    stack_map: Vec<u32>,
    stats: String,
}

fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::from_reason(e.to_string()))
}

impl Task for ResolveSourceMaps {
    type Output = Output;
    type JsValue = MappedTables;

    fn compute(&mut self) -> Result<Output> {
        guarded("resolving source maps", || {
            let tables: ProfilerTrace = serde_json::from_str(&self.tables_json).map_err(|e| {
                core_error(jsprof_core::Error::invalid(format!(
                    "not a valid ProfilerTrace: {e}"
                )))
            })?;
            export::validate(&tables).map_err(core_error)?;
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
            let resolved = sourcemap::resolve(&tables, &map_options, cache);
            Ok(Output {
                tables: crate::PlainParts::tables_json(
                    &resolved.trace.resources,
                    &resolved.trace.frames,
                    &resolved.trace.stacks,
                )?,
                stack_map: resolved.stack_map,
                stats: json(&resolved.stats)?,
            })
        })
    }

    fn resolve(&mut self, _env: Env, output: Output) -> Result<MappedTables> {
        Ok(MappedTables {
            tables: output.tables,
            stack_map: output.stack_map.into(),
            stats: output.stats,
        })
    }
}

/// Maps a trace's tables (JSON text: resources, frames, stacks, `samples: []`) off the main thread.
#[napi(catch_unwind)]
pub fn resolve_source_maps(tables_json: String, options_json: String) -> AsyncTask<ResolveSourceMaps> {
    AsyncTask::new(ResolveSourceMaps {
        tables_json,
        options_json,
    })
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
