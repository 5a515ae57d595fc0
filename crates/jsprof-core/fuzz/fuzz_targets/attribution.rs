//! `Attributor::attribute` on any resource string (URLs, paths, `node:` ids, garbage).
#![no_main]
use jsprof_core::Attributor;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|resources: Vec<String>| {
    let mut a = Attributor::new();
    for r in &resources {
        let first = a.attribute(r);
        assert_eq!(a.attribute(r), first);
    }
});
