//! `inliningOffEnter`, `inliningOffLeave`: the process-wide count of the consumers that keep V8's
//! inlining off (`lib/heap/inlining.js`). V8's flags belong to the process, shared by every thread:
//! the first consumer of any thread turns inlining off, the last one of all threads turns it back on.
//! The callback that changes the flags runs while the count's lock is held, so one thread's turning
//! off and another's turning back on never interleave.

use std::sync::Mutex;

use napi::bindgen_prelude::*;
use napi_derive::napi;

static HOLDERS: Mutex<u32> = Mutex::new(0);

fn holders() -> std::sync::MutexGuard<'static, u32> {
    // A panic cannot happen while it is held (a callback's error is a Result): never poisoned in use.
    HOLDERS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One more consumer keeps inlining off; the first one calls `turnOff` first (its exception is
/// thrown, and the count is left as it was). Returns the consumers now.
#[napi(catch_unwind)]
pub fn inlining_off_enter(#[napi(ts_arg_type = "() => void")] turn_off: Function<(), ()>) -> Result<u32> {
    let mut count = holders();
    if *count == 0 {
        turn_off.call(())?;
    }
    *count += 1;
    Ok(*count)
}

/// One consumer fewer; the last one calls `turnOn` (the count drops to 0 whatever it throws). Returns
/// the consumers left; a call without a consumer left does nothing.
#[napi(catch_unwind)]
pub fn inlining_off_leave(#[napi(ts_arg_type = "() => void")] turn_on: Function<(), ()>) -> Result<u32> {
    let mut count = holders();
    if *count == 0 {
        return Ok(0);
    }
    *count -= 1;
    if *count == 0 {
        turn_on.call(())?;
    }
    Ok(*count)
}
