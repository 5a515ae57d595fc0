//! `gatherInlinedCalls`: the calls V8 showed on this thread, gathered from every chunk harvested once a
//! consumer asked for inlined functions' samples (`inlined: true`), so a harvest whose code V8 has
//! long inlined still knows which functions it called: the graph each such Recording reads
//! (`jsprof_core::Recording::split_inlined`; the rule: `jsprof-core`'s `convert::inlined`).

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use jsprof_core as core;
use napi_derive::napi;

thread_local! {
    /// This thread's calls, once gathered (a worker has its own).
    static GRAPH: RefCell<Option<Arc<Mutex<core::CallGraph>>>> = const { RefCell::new(None) };
}

/// This thread's graph, gathering from now on.
pub(crate) fn thread_graph() -> Arc<Mutex<core::CallGraph>> {
    GRAPH.with(|cell| Arc::clone(cell.borrow_mut().get_or_insert_with(Default::default)))
}

/// Adds a harvested profile's calls to this thread's graph, when it gathers.
pub(crate) fn add(profile: &core::Profile) {
    GRAPH.with(|cell| {
        if let Some(graph) = cell.borrow().as_ref() {
            graph
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .add(profile);
        }
    });
}

/// From now on, every chunk this thread harvests adds the calls it shows to the thread's graph.
#[napi]
pub fn gather_inlined_calls() {
    thread_graph();
}
