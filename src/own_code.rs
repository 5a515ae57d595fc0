//! `setOwnCode`: where jsprof-node's own code lives, set once by the facade at load (lib/native.js);
//! every recording and `convertCpuProfile(…, hideOwnCode)` leaves those frames out.

use std::sync::Arc;

use jsprof_core::{OwnCode, Recording};
use napi_derive::napi;

/// jsprof-node's own code (URL and path prefixes of its files), set once by the facade at load.
static OWN_CODE: std::sync::RwLock<Option<Arc<OwnCode>>> = std::sync::RwLock::new(None);

/// Tells the binding where jsprof-node's own code lives: the traces it records leave those frames
/// (and the builtins and internals they call) out, so their time goes to the caller, as in Chrome.
#[napi(catch_unwind)]
pub fn set_own_code(prefixes: Vec<String>) {
    let own = Arc::new(OwnCode::new(prefixes));
    *OWN_CODE.write().unwrap_or_else(|e| e.into_inner()) = Some(own);
}

/// The own code set by [`set_own_code`], if any.
pub(crate) fn own_code() -> Option<Arc<OwnCode>> {
    OWN_CODE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// A core recording as every recording of the binding makes it (a `Recording` object's, and a chunk
/// window's without one: `Chunk.buildWindowColumns`): jsprof-node's own code left out of its stacks.
pub(crate) fn new_recording(start_us: f64, interval_us: f64, max_samples: u32) -> Recording {
    let mut recording = Recording::new(start_us, interval_us, max_samples);
    if let Some(own) = own_code() {
        recording.hide_own_code(own);
    }
    recording
}
