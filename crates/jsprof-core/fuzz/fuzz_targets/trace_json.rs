//! `ProfilerTrace` JSON, the exporters' input: parse any bytes, with serde alone and with
//! `ProfilerTrace::from_json` (what the binding calls: serde, lone surrogates, then the validation);
//! what parses serializes back. And any bytes as a file the CLI reads (`read_profile_file`: a trace or
//! a V8 profile): a valid trace or a one-line error. The exporters are fuzzed on valid traces in
//! `exporters.rs`.
#![no_main]
use jsprof_core::{read_profile_file, ProfilerTrace};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match read_profile_file(&String::from_utf8_lossy(data)) {
        Ok(file) => assert!(file.trace.validate().is_ok()),
        Err(e) => assert!(!e.message.contains('\n'), "{:?}", e.message),
    }
    if let Ok(trace) = ProfilerTrace::from_json(&String::from_utf8_lossy(data)) {
        let text = serde_json::to_string(&trace).expect("a valid trace serializes");
        let back = ProfilerTrace::from_json(&text).expect("a valid trace's JSON is valid");
        assert_eq!(back.frames, trace.frames);
        assert_eq!(back.stacks, trace.stacks);
    }
    if let Ok(trace) = serde_json::from_slice::<ProfilerTrace>(data) {
        let text = serde_json::to_string(&trace).expect("a parsed trace serializes");
        let back: ProfilerTrace = serde_json::from_str(&text).expect("a serialized trace parses");
        assert_eq!(back.frames, trace.frames);
        assert_eq!(back.stacks, trace.stacks);
    }
});
