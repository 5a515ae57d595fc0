//! OpenTelemetry profiles (OTLP, `v1development`): the body of an OTLP/HTTP export request,
//! `ExportProfilesServiceRequest` in protobuf, as `POST /v1development/profiles` takes it.
//!
//! One `ResourceProfiles` (the resource: `service.name`, `process.runtime.*`, `telemetry.sdk.*`,
//! `process.pid`, then the caller's own attributes, which win), one `ScopeProfiles` (scope
//! `jsprof-node`), one `Profile` of sample type `cpu`/`nanoseconds`, and the request's shared
//! dictionary:
//! - one function and one location (line and column) per trace frame, file names as plain paths (as in
//!   pprof), plus a location of its own for each pseudo-frame of stackless samples (`(idle)`,
//!   `(garbage collector)`, `(program)`); every table starts with its zero value, as the proto requires;
//! - one stack per distinct sampled stack (locations leaf first) and one `Sample` per stack, with each
//!   sample's time in `values` (ns: the gap to the next sample, the weight every other view uses) and
//!   its clock time in `timestamps_unix_nano`, in the same order;
//! - per-sample attributes `jsprof.package` and `jsprof.kind`, charged as `summarize` charges
//!   (builtins to the code that called them; generated code as `(generated, called from …)`), so a
//!   backend's "by package" view gives `jsprof report`'s shares.
//!
//! Times need the trace's time origin as a Unix epoch (`time_origin_ms`); without it they count from
//! 1970, as in pprof. The message types are prost's, generated from the vendored official protos
//! (`crates/jsprof-core/proto`, Apache-2.0) and committed, so building needs no `protoc`.

use std::collections::HashMap;

use prost::Message;
use serde_json::{Map, Value};

use super::{file_name, frame_attributions, ns, sample_durations, Pseudo};
use crate::error::{Error, Result};
use crate::interner::Interner;
use crate::trace::ProfilerTrace;

#[allow(clippy::all, missing_docs)]
pub mod proto {
    pub mod opentelemetry {
        pub mod proto {
            pub mod common {
                pub mod v1 {
                    include!("proto/opentelemetry.proto.common.v1.rs");
                }
            }
            pub mod resource {
                pub mod v1 {
                    include!("proto/opentelemetry.proto.resource.v1.rs");
                }
            }
            pub mod profiles {
                pub mod v1development {
                    include!("proto/opentelemetry.proto.profiles.v1development.rs");
                }
            }
            pub mod collector {
                pub mod profiles {
                    pub mod v1development {
                        include!("proto/opentelemetry.proto.collector.profiles.v1development.rs");
                    }
                }
            }
        }
    }
    pub use opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
    pub use opentelemetry::proto::common::v1::{
        any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue,
    };
    pub use opentelemetry::proto::profiles::v1development::*;
    pub use opentelemetry::proto::resource::v1::Resource;
}

use proto::{
    any_value, AnyValue, ArrayValue, ExportProfilesServiceRequest, Function, InstrumentationScope, KeyValue,
    KeyValueAndUnit, Line, Location, Mapping, Profile, ProfilesDictionary, Resource, ResourceProfiles,
    Sample, ScopeProfiles, Stack, ValueType,
};

/// The attribute keys of each sample: the npm package (or `(app)`, `(node)`, `(native)`, `(idle)`,
/// `(vm)`, `(generated, called from …)`) and the kind of code its time is charged to.
pub const PACKAGE_KEY: &str = "jsprof.package";
pub const KIND_KEY: &str = "jsprof.kind";

/// What the trace does not say itself.
#[derive(Debug, Clone, Default)]
pub struct OtlpOptions {
    /// The Unix epoch, ms, of the trace's time origin.
    pub time_origin_ms: Option<f64>,
    /// `process.pid` of the resource.
    pub pid: Option<u32>,
    /// `process.runtime.version` (Node's version, without the `v`).
    pub runtime_version: Option<String>,
    /// `telemetry.sdk.version` (jsprof-node's version).
    pub sdk_version: Option<String>,
    /// Resource attributes (`service.name`, `deployment.environment.name`, …), over the defaults.
    pub resource: Map<String, Value>,
    /// Attributes of the profile itself.
    pub attributes: Map<String, Value>,
}

impl OtlpOptions {
    /// Reads `resource` / `attributes` given as JSON text: each must be an object (its values are
    /// checked when encoding).
    pub fn attributes_from_json(text: Option<&str>, what: &str) -> Result<Map<String, Value>> {
        let Some(text) = text else {
            return Ok(Map::new());
        };
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(Value::Null) => Ok(Map::new()),
            _ => Err(Error::invalid(format!(
                "options.{what} must be an object of attribute names to values"
            ))),
        }
    }
}

/// The scope name of the profiles this crate encodes.
const SCOPE: &str = "jsprof-node";

/// An epoch time in ns, exact to the ns: the origin (about 1.7e12 ms) in whole ms and its fraction
/// apart, since in ns it is past the integers an f64 holds exactly (2^53).
fn epoch_ns(origin_ms: f64, ms: f64) -> u64 {
    let whole = origin_ms.trunc();
    let ns = (whole as i64)
        .saturating_mul(1_000_000)
        .saturating_add(ns(origin_ms - whole))
        .saturating_add(ns(ms));
    ns.max(0) as u64
}

/// An attribute value from JSON: a string, a finite number (an integer as `int_value`), a boolean, or
/// an array of them. Anything else is a `TypeError` naming where it was.
fn any_value(value: &Value, at: &str) -> Result<AnyValue> {
    let v = match value {
        Value::String(s) => any_value::Value::StringValue(s.clone()),
        Value::Bool(b) => any_value::Value::BoolValue(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => any_value::Value::IntValue(i),
            (None, Some(f)) if f.is_finite() => any_value::Value::DoubleValue(f),
            _ => return Err(Error::invalid(format!("{at} must be a finite number"))),
        },
        Value::Array(items) => any_value::Value::ArrayValue(ArrayValue {
            values: items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::Array(_) => Err(Error::invalid(format!("{at}[{i}] must not be an array"))),
                    _ => any_value(item, &format!("{at}[{i}]")),
                })
                .collect::<Result<_>>()?,
        }),
        Value::Null | Value::Object(_) => {
            return Err(Error::invalid(format!(
                "{at} must be a string, a number, a boolean or an array of them"
            )))
        }
    };
    Ok(AnyValue { value: Some(v) })
}

fn string_value(s: &str) -> AnyValue {
    AnyValue {
        value: Some(any_value::Value::StringValue(s.to_owned())),
    }
}

/// The resource's attributes: the defaults of the semantic conventions, then the caller's (which
/// replace a default of the same key), in key order after the defaults.
fn resource_attributes(options: &OtlpOptions) -> Result<Vec<KeyValue>> {
    let mut defaults: Vec<(&str, AnyValue)> = vec![
        ("service.name", string_value("unknown_service:node")),
        ("process.runtime.name", string_value("nodejs")),
        ("process.runtime.description", string_value("Node.js")),
        ("telemetry.sdk.name", string_value(SCOPE)),
        ("telemetry.sdk.language", string_value("nodejs")),
    ];
    if let Some(v) = &options.runtime_version {
        defaults.push(("process.runtime.version", string_value(v)));
    }
    if let Some(v) = &options.sdk_version {
        defaults.push(("telemetry.sdk.version", string_value(v)));
    }
    if let Some(pid) = options.pid {
        defaults.push((
            "process.pid",
            AnyValue {
                value: Some(any_value::Value::IntValue(i64::from(pid))),
            },
        ));
    }
    let mut out: Vec<KeyValue> = defaults
        .into_iter()
        .filter(|(key, _)| !options.resource.contains_key(*key))
        .map(|(key, value)| KeyValue {
            key: key.to_owned(),
            value: Some(value),
            ..Default::default()
        })
        .collect();
    for (key, value) in &options.resource {
        check_key(key, "resource")?;
        out.push(KeyValue {
            key: key.clone(),
            value: Some(any_value(value, &format!("resource[{key:?}]"))?),
            ..Default::default()
        });
    }
    Ok(out)
}

fn check_key(key: &str, what: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid(format!("{what} attribute keys must not be empty")));
    }
    Ok(())
}

/// The dictionary's attribute table: each distinct `(key, value)` once, after the zero value.
struct Attributes {
    table: Vec<KeyValueAndUnit>,
    ids: HashMap<(i32, String), i32>,
}

impl Attributes {
    fn new() -> Self {
        Attributes {
            table: vec![KeyValueAndUnit::default()],
            ids: HashMap::new(),
        }
    }

    fn string(&mut self, key: i32, value: &str) -> i32 {
        if let Some(&id) = self.ids.get(&(key, value.to_owned())) {
            return id;
        }
        self.table.push(KeyValueAndUnit {
            key_strindex: key,
            value: Some(string_value(value)),
            unit_strindex: 0,
        });
        let id = (self.table.len() - 1) as i32;
        self.ids.insert((key, value.to_owned()), id);
        id
    }

    fn any(&mut self, key: i32, value: AnyValue) -> i32 {
        self.table.push(KeyValueAndUnit {
            key_strindex: key,
            value: Some(value),
            unit_strindex: 0,
        });
        (self.table.len() - 1) as i32
    }
}

/// The export request message of a validated trace.
pub fn to_request(trace: &ProfilerTrace, options: &OtlpOptions) -> Result<ExportProfilesServiceRequest> {
    let mut strings: Interner<String> = Interner::new();
    let mut s = |text: &str| strings.id(text) as i32;
    s("");
    let attributions = frame_attributions(trace);

    // Functions and locations: index 0 is the zero value, frame i is index i + 1, then the pseudo-frames.
    let mut function_table = vec![Function::default()];
    let mut location_table = vec![Location::default()];
    for f in &trace.frames {
        let name = s(super::display_name(&f.name));
        let filename = f
            .resource_id
            .map_or(0, |r| s(&file_name(&trace.resources[r as usize])));
        let line = f.line.map_or(0, i64::from);
        function_table.push(Function {
            name_strindex: name,
            system_name_strindex: name,
            filename_strindex: filename,
            start_line: line,
        });
        location_table.push(Location {
            lines: vec![Line {
                function_index: (function_table.len() - 1) as i32,
                line,
                column: f.column.map_or(0, i64::from),
            }],
            ..Default::default()
        });
    }
    let pseudo_base = location_table.len();
    for p in Pseudo::ALL {
        function_table.push(Function {
            name_strindex: s(p.name()),
            system_name_strindex: s(p.name()),
            ..Default::default()
        });
        location_table.push(Location {
            lines: vec![Line {
                function_index: (function_table.len() - 1) as i32,
                ..Default::default()
            }],
            ..Default::default()
        });
    }

    let (package_key, kind_key) = (s(PACKAGE_KEY), s(KIND_KEY));
    let mut attributes = Attributes::new();
    let origin = options.time_origin_ms.unwrap_or(0.0);
    let durations = sample_durations(&trace.samples);
    let mut stack_table = vec![Stack::default()];
    // One Sample per distinct stack (or pseudo-frame): its identity is its stack and its attributes,
    // which the stack decides.
    let (stacks, group_of) = super::charged_stacks(trace, &attributions);
    let mut samples: Vec<Sample> = Vec::with_capacity(stacks.len());
    for group in stacks {
        stack_table.push(Stack {
            location_indices: match group.key {
                // Leaf first, as pprof lists them.
                Ok(_) => group.frames.iter().rev().map(|&f| f as i32 + 1).collect(),
                Err(p) => vec![(pseudo_base + p as usize) as i32],
            },
        });
        samples.push(Sample {
            stack_index: (stack_table.len() - 1) as i32,
            attribute_indices: vec![
                attributes.string(package_key, &group.package),
                attributes.string(kind_key, group.kind),
            ],
            ..Default::default()
        });
    }
    for (i, &g) in group_of.iter().enumerate() {
        let out = &mut samples[g as usize];
        out.values.push(ns(durations[i]));
        out.timestamps_unix_nano
            .push(epoch_ns(origin, trace.samples[i].timestamp));
    }

    let (first, last) = super::time_span(&trace.samples);
    let period = ns(super::median_interval(&trace.samples));
    let mut profile_attributes = Vec::new();
    for (key, value) in &options.attributes {
        check_key(key, "profile")?;
        let value = any_value(value, &format!("attributes[{key:?}]"))?;
        let key = s(key);
        profile_attributes.push(attributes.any(key, value));
    }
    let cpu = ValueType {
        type_strindex: s("cpu"),
        unit_strindex: s("nanoseconds"),
    };
    let profile = Profile {
        sample_type: Some(cpu),
        samples,
        time_unix_nano: if first.is_finite() {
            epoch_ns(origin, first)
        } else {
            0
        },
        duration_nano: if first.is_finite() {
            (ns(last - first) + period).max(0) as u64
        } else {
            0
        },
        period_type: Some(cpu),
        period,
        attribute_indices: profile_attributes,
        ..Default::default()
    };
    let resource = Resource {
        attributes: resource_attributes(options)?,
        ..Default::default()
    };
    Ok(ExportProfilesServiceRequest {
        resource_profiles: vec![ResourceProfiles {
            resource: Some(resource),
            scope_profiles: vec![ScopeProfiles {
                scope: Some(InstrumentationScope {
                    name: SCOPE.to_owned(),
                    version: options.sdk_version.clone().unwrap_or_default(),
                    ..Default::default()
                }),
                profiles: vec![profile],
                ..Default::default()
            }],
            ..Default::default()
        }],
        dictionary: Some(ProfilesDictionary {
            mapping_table: vec![Mapping::default()],
            location_table,
            function_table,
            string_table: strings.into_values(),
            attribute_table: attributes.table,
            stack_table,
            ..Default::default()
        }),
    })
}

/// The encoded bytes of [`to_request`]: the body of an OTLP/HTTP `application/x-protobuf` request.
pub fn to_otlp_profiles(trace: &ProfilerTrace, options: &OtlpOptions) -> Result<Vec<u8>> {
    super::check_frame_references(super::distinct_frame_references(trace), "toOtlpProfiles")?;
    Ok(to_request(trace, options)?.encode_to_vec())
}

/// What an `ExportProfilesServiceResponse` body says of rejected profiles: `Some((count, message))`
/// when it has a `partial_success`, `None` when it has none; an error when it is not one.
pub fn partial_success(body: &[u8]) -> Result<Option<(i64, String)>> {
    let response = proto::opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceResponse::decode(body)
        .map_err(|e| Error::invalid(format!("not an OTLP profiles export response: {e}")))?;
    Ok(response
        .partial_success
        .map(|p| (p.rejected_profiles, p.error_message)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::tests::sample_trace;

    fn decode(bytes: &[u8]) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest::decode(bytes).unwrap()
    }

    #[test]
    fn every_sample_stack_and_name_round_trips() {
        let trace = sample_trace();
        let options = OtlpOptions {
            time_origin_ms: Some(1_700_000_000_000.0),
            pid: Some(42),
            runtime_version: Some("20.20.2".into()),
            sdk_version: Some("0.1.0".into()),
            ..Default::default()
        };
        let request = decode(&to_otlp_profiles(&trace, &options).unwrap());
        let dict = request.dictionary.unwrap();
        let text = |i: i32| dict.string_table[i as usize].as_str();
        assert_eq!(text(0), "");
        for table_zero in [
            dict.location_table[0] == Location::default(),
            dict.function_table[0] == Function::default(),
            dict.stack_table[0] == Stack::default(),
            dict.attribute_table[0] == KeyValueAndUnit::default(),
            dict.mapping_table[0] == Mapping::default(),
        ] {
            assert!(table_zero, "every table starts with its zero value");
        }
        let rp = &request.resource_profiles[0];
        let attr = |key: &str| {
            rp.resource
                .as_ref()
                .unwrap()
                .attributes
                .iter()
                .find(|kv| kv.key == key)
                .cloned()
        };
        assert_eq!(
            attr("service.name").unwrap().value,
            Some(string_value("unknown_service:node"))
        );
        assert_eq!(
            attr("process.runtime.version").unwrap().value,
            Some(string_value("20.20.2"))
        );
        assert_eq!(
            attr("process.pid").unwrap().value.unwrap().value,
            Some(any_value::Value::IntValue(42))
        );
        let profile = &rp.scope_profiles[0].profiles[0];
        let cpu = profile.sample_type.unwrap();
        assert_eq!(
            (text(cpu.type_strindex), text(cpu.unit_strindex)),
            ("cpu", "nanoseconds")
        );
        // Every trace sample once, by its stack, its time and its clock time.
        let mut seen = Vec::new();
        for s in &profile.samples {
            assert_eq!(s.values.len(), s.timestamps_unix_nano.len());
            let names: Vec<&str> = dict.stack_table[s.stack_index as usize]
                .location_indices
                .iter()
                .rev()
                .map(|&l| {
                    let line = &dict.location_table[l as usize].lines[0];
                    text(dict.function_table[line.function_index as usize].name_strindex)
                })
                .collect();
            let attrs: Vec<(&str, String)> = s
                .attribute_indices
                .iter()
                .map(|&a| {
                    let kv = &dict.attribute_table[a as usize];
                    let v = match kv.value.as_ref().unwrap().value.as_ref().unwrap() {
                        any_value::Value::StringValue(v) => v.clone(),
                        other => format!("{other:?}"),
                    };
                    (text(kv.key_strindex), v)
                })
                .collect();
            for (&v, &t) in s.values.iter().zip(&s.timestamps_unix_nano) {
                seen.push((t, v, names.join(";"), attrs.clone()));
            }
        }
        seen.sort();
        let origin_ns = 1_700_000_000_000_000_000u64;
        // (ms since the origin, weight in ns, stack, package, kind)
        let expected: Vec<(f64, i64, &str, &str, &str)> = vec![
            (10.0, 1_000_000, "main;work;chunk", "lodash", "dependency"),
            (11.0, 1_000_000, "main;work;chunk", "lodash", "dependency"),
            (12.0, 1_000_000, "main;work", "(app)", "app"),
            (13.0, 1_000_000, "(garbage collector)", "(vm)", "vm"),
            (14.0, 1_000_000, "(garbage collector)", "(vm)", "vm"),
            (15.0, 1_500_000, "main;now", "(app)", "app"),
            (16.5, 500_000, "(idle)", "(idle)", "idle"),
            (17.0, 1_000_000, "(program)", "(vm)", "vm"),
            (18.0, 1_000_000, "main;(anonymous)", "(app)", "app"),
        ];
        assert_eq!(seen.len(), expected.len());
        for (got, want) in seen.iter().zip(&expected) {
            assert_eq!(got.0, origin_ns + (want.0 * 1e6) as u64, "{got:?}");
            assert_eq!(got.1, want.1, "{got:?}");
            assert_eq!(got.2, want.2);
            assert_eq!(
                got.3,
                vec![(PACKAGE_KEY, want.3.to_owned()), (KIND_KEY, want.4.to_owned())]
            );
        }
        assert_eq!(profile.time_unix_nano, origin_ns + 10_000_000);
    }

    #[test]
    fn reads_a_partial_success() {
        use proto::opentelemetry::proto::collector::profiles::v1development::{
            ExportProfilesPartialSuccess, ExportProfilesServiceResponse,
        };
        let body = ExportProfilesServiceResponse {
            partial_success: Some(ExportProfilesPartialSuccess {
                rejected_profiles: 2,
                error_message: "too old".into(),
            }),
        }
        .encode_to_vec();
        assert_eq!(partial_success(&body).unwrap(), Some((2, "too old".to_owned())));
        assert_eq!(partial_success(&[]).unwrap(), None);
        assert!(partial_success(b"<html>").is_err());
    }

    #[test]
    fn functions_keep_lines_and_plain_paths() {
        let request = to_request(&sample_trace(), &OtlpOptions::default()).unwrap();
        let dict = request.dictionary.unwrap();
        let chunk = dict
            .function_table
            .iter()
            .find(|f| dict.string_table[f.name_strindex as usize] == "chunk")
            .unwrap();
        assert_eq!(
            dict.string_table[chunk.filename_strindex as usize],
            "/app/node_modules/lodash/chunk.js"
        );
        assert_eq!(chunk.start_line, 5);
    }

    #[test]
    fn attributes_are_typed_and_bad_ones_are_type_errors() {
        let mut options = OtlpOptions::default();
        options.resource.insert("service.name".into(), "checkout".into());
        options.resource.insert("replicas".into(), 3.into());
        options.attributes.insert("ratio".into(), 0.5.into());
        options
            .attributes
            .insert("tags".into(), serde_json::json!(["a", true]));
        let request = to_request(&sample_trace(), &options).unwrap();
        let attrs = &request.resource_profiles[0].resource.as_ref().unwrap().attributes;
        let names: Vec<&str> = attrs.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            names.iter().filter(|k| **k == "service.name").count(),
            1,
            "the caller's replaces the default"
        );
        assert!(attrs.contains(&KeyValue {
            key: "service.name".into(),
            value: Some(string_value("checkout")),
            ..Default::default()
        }));
        let profile = &request.resource_profiles[0].scope_profiles[0].profiles[0];
        assert_eq!(profile.attribute_indices.len(), 2);
        for bad in [
            serde_json::json!(null),
            serde_json::json!({"a": 1}),
            serde_json::json!([[1]]),
        ] {
            let mut options = OtlpOptions::default();
            options.resource.insert("x".into(), bad);
            let err = to_request(&sample_trace(), &options).unwrap_err();
            assert_eq!(err.kind, crate::error::ErrorKind::Type, "{err:?}");
            assert!(err.message.contains("resource[\"x\"]"), "{}", err.message);
        }
    }
}
