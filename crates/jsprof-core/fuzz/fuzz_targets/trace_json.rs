//! `ProfilerTrace` JSON, the exporters' input: parse any bytes; what parses serializes back.
//! When an exporter entry point exists, feed `trace` to it here.
#![no_main]
use jsprof_core::ProfilerTrace;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = serde_json::from_slice::<ProfilerTrace>(data) {
        let text = serde_json::to_string(&trace).expect("a parsed trace serializes");
        let back: ProfilerTrace = serde_json::from_str(&text).expect("a serialized trace parses");
        assert_eq!(back.frames, trace.frames);
        assert_eq!(back.stacks, trace.stacks);
    }
});
