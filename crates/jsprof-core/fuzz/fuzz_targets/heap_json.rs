//! Heap profile files on any bytes: V8's `.heapprofile` (`HeapTree::from_json`, read without
//! recursion), ours (`HeapProfile::from_json`), and the CLI's reader of either (`read_heap_file`). Never
//! a panic; errors on one line; what is accepted validates, and a V8 profile written from it reads back.
//! The bytes rule both readers share (whole bytes, 0 to 2^53) is checked on every accepted size.
#![no_main]
use jsprof_core::{read_heap_file, FromV8Options, HeapProfile, HeapTree};
use libfuzzer_sys::fuzz_target;

const MAX_BYTES: f64 = 9_007_199_254_740_992.0;

fn check(profile: &HeapProfile) {
    assert!(profile.validate().is_ok());
    assert!(profile.sizes.iter().all(|&s| s as f64 <= MAX_BYTES));
    let v8 = profile.to_v8_json();
    let back = HeapTree::from_json(&v8).expect("a written V8 heap profile reads back");
    assert!(back.self_sizes.iter().all(|&s| s.fract() == 0.0 && s <= MAX_BYTES));
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(tree) = HeapTree::from_json(&text) {
        assert!(tree.self_sizes.iter().all(|&s| s >= 0.0 && s.fract() == 0.0 && s <= MAX_BYTES));
        check(&HeapProfile::from_v8(&tree, &FromV8Options::default()));
    }
    if let Ok(profile) = HeapProfile::from_json(&text) {
        check(&profile);
    }
    match read_heap_file(&text) {
        Some(Ok(profile)) => check(&profile),
        Some(Err(e)) => assert!(!e.message.contains('\n'), "{:?}", e.message),
        None => {}
    }
});
