//! `.cpuprofile` text on any bytes (the facade decodes Buffers as UTF-8): the one pass
//! (`trace_from_json`, what `fromCpuProfile` and the CLI use) must answer exactly as the road by way of
//! a whole `Profile` (`Profile::from_json`, then the V8 -> trace rules), errors included.
#![no_main]
use jsprof_core::{trace_by_profile, trace_from_json, trace_from_profile, Profile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(profile) = Profile::from_json(&text) {
        let trace = trace_from_profile(&profile, profile.start_time);
        assert_eq!(trace.samples.len(), profile.samples.len());
        for s in &trace.samples {
            if let Some(id) = s.stack_id {
                assert!((id as usize) < trace.stacks.len());
            }
        }
    }
    match (
        trace_from_json(&text, None, None),
        trace_by_profile(&text, None, None),
    ) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!((a.kind, a.message), (b.kind, b.message)),
        (a, b) => panic!("the roads disagree: {a:?} vs {b:?}"),
    }
});
