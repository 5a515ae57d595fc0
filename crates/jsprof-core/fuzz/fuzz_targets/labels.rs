//! The label rule and `by` on any text: a label set from keys and values cut out of the bytes
//! (`label_set`), `SummaryBy::parse` of the text, and a trace carrying the set. Whatever the rule
//! refuses is a `Type` error (never a `Range` one), a key starting with `__` is always refused, a set it
//! takes a trace takes too, and `label:<key>` is accepted exactly when the key is.
#![no_main]
use jsprof_core::{label_set, ErrorKind, ProfilerTrace, SummaryBy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parts: Vec<String> = text.split('\u{0}').map(str::to_owned).collect();
    let (keys, values): (Vec<String>, Vec<String>) = parts
        .chunks(2)
        .map(|kv| (kv[0].clone(), kv.get(1).cloned().unwrap_or_default()))
        .unzip();
    match label_set(&keys, &values) {
        Ok(set) => {
            assert!(set.keys().all(|k| !k.starts_with("__")));
            let trace = serde_json::json!({ "frames": [], "jsprof": { "labelSets": [set], "sampleLabels": [0] },
                "resources": [], "samples": [{ "timestamp": 1 }], "stacks": [] });
            assert!(ProfilerTrace::from_json(&trace.to_string()).is_ok());
        }
        Err(e) => assert_eq!(e.kind, ErrorKind::Type, "{}", e.message),
    }
    for heap in [false, true] {
        match SummaryBy::parse(&text, heap) {
            Ok(SummaryBy::Label(key)) => {
                assert!(!heap);
                assert!(label_set(&[key], &[String::new()]).is_ok());
            }
            Ok(SummaryBy::Code(_)) => {}
            Err(e) => {
                assert!(!e.message.contains('\n'));
                if let (Some(key), false) = (text.strip_prefix("label:"), heap) {
                    assert!(label_set(&[key.to_owned()], &[String::new()]).is_err());
                }
            }
        }
    }
});
