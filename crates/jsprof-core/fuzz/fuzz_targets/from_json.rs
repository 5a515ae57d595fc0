//! `Profile::from_json` on any bytes (the facade decodes Buffers as UTF-8), then the V8 -> trace rules
//! on whatever is accepted.
#![no_main]
use jsprof_core::{trace_from_profile, Profile};
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
});
