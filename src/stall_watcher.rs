//! The event-loop stall watcher (`watchStalls`, lib/api/stalls.js): a native thread that notices when
//! the watched thread's event loop has not turned for longer than a threshold.
//!
//! The watched thread beats (`StallWatcher.beat()`, from an unref'd timer of its event loop): each beat
//! stores the time (this module's monotonic clock) in an atomic. The watcher thread sleeps until the
//! last beat it saw is `thresholdMs` old (so it wakes about once per threshold while the loop beats,
//! and sees a stall the moment it passes the threshold), then every `checkMs` while a stall lasts.
//! When the last beat is older than `thresholdMs`, it tells the listener once for that beat
//! (`{ kind: 'stall', seq, blockedMs }`), and when beats come again after a reported stall, once more
//! (`{ kind: 'end', seq, blockedMs }`: how long the loop was not seen turning). The listener is a
//! threadsafe function of another thread (the helper worker of lib/api/stalls-worker.js, whose event
//! loop is free while the watched one blocks): it reaches the blocked thread through a V8 interrupt.
//!
//! Why a timer and not a libuv prepare/check hook: a hook runs around the poll phase, and a request
//! handler runs inside it (an I/O callback), so a hook cannot tell a loop waiting for I/O from one
//! blocked in a handler; only a timer due bounds the poll. The timer's wake-up is then the whole cost
//! on an idle loop, whatever the beat stores (docs/bench.md#what-the-watcher-costs).
//!
//! Nothing here decides what a stall is worth (rate limits, traces): it only measures. The watched
//! thread owns a `StallWatcher` object; the listener finds its state by id (`listenStalls`), so the two
//! threads share nothing else. The thread ends when the watcher is stopped or garbage-collected.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;

/// What the listener is told.
#[napi(object)]
#[derive(Clone)]
pub struct StallEvent {
    /// `'stall'`: the loop has not turned for `blockedMs` (≥ the threshold); `'end'`: it turned again
    /// after a reported stall, having been blocked for `blockedMs`.
    pub kind: String,
    /// The stall's number (1, 2, …) for this watcher; an `'end'` has its stall's.
    pub seq: u32,
    /// Milliseconds since the last beat before the stall.
    pub blocked_ms: f64,
}

type Listener = ThreadsafeFunction<StallEvent, (), StallEvent, Status, false>;

/// Shared by the watched thread (beats), the watcher thread and the listener.
struct Shared {
    /// Nanoseconds since `epoch()` of the last beat.
    last_beat_ns: AtomicU64,
    threshold_ns: u64,
    check: Duration,
    stopped: AtomicBool,
    listener: Mutex<Option<Listener>>,
    /// The current stall's number while one is reported and not ended (0: none).
    stalled_seq: AtomicU32,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ns() -> u64 {
    u64::try_from(epoch().elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn registry() -> &'static Mutex<HashMap<u32, Arc<Shared>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u32, Arc<Shared>>>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(HashMap::new()))
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

impl Shared {
    fn tell(&self, event: StallEvent) {
        if let Ok(guard) = self.listener.lock() {
            if let Some(listener) = guard.as_ref() {
                listener.call(event, ThreadsafeFunctionCallMode::NonBlocking);
            }
        }
    }

    fn blocked_ns(&self) -> u64 {
        now_ns().saturating_sub(self.last_beat_ns.load(Ordering::Acquire))
    }
}

fn watch(shared: Arc<Shared>) {
    let mut seq = 0u32;
    // The beat a stall was reported for: one report per stalled turn.
    let mut reported_beat = u64::MAX;
    let mut wait = Duration::from_nanos(shared.threshold_ns);
    while !shared.stopped.load(Ordering::Acquire) {
        // Sleeps until the last beat is a threshold old (nothing to look at before), so the thread
        // wakes about once per threshold while the loop beats; during a reported stall, every `check`.
        std::thread::park_timeout(wait);
        if shared.stopped.load(Ordering::Acquire) {
            break;
        }
        let beat = shared.last_beat_ns.load(Ordering::Acquire);
        let blocked = now_ns().saturating_sub(beat);
        if reported_beat != u64::MAX && beat != reported_beat {
            // The loop turned again after a reported stall.
            let current = shared.stalled_seq.swap(0, Ordering::AcqRel);
            shared.tell(StallEvent {
                kind: "end".into(),
                seq: current,
                blocked_ms: beat.saturating_sub(reported_beat) as f64 / 1e6,
            });
            reported_beat = u64::MAX;
        }
        if reported_beat == u64::MAX && blocked >= shared.threshold_ns {
            seq = seq.wrapping_add(1).max(1);
            reported_beat = beat;
            shared.stalled_seq.store(seq, Ordering::Release);
            shared.tell(StallEvent {
                kind: "stall".into(),
                seq,
                blocked_ms: blocked as f64 / 1e6,
            });
        }
        wait = if reported_beat != u64::MAX {
            shared.check
        } else {
            Duration::from_nanos(shared.threshold_ns.saturating_sub(blocked).max(1_000_000))
        };
    }
}

/// The watched thread's side: beats, and ends the watcher thread when stopped or collected.
#[napi]
pub struct StallWatcher {
    id: u32,
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn check_ms(name: &str, value: f64, min: f64, max: f64) -> Result<f64> {
    if value.is_finite() && value >= min && value <= max {
        Ok(value)
    } else {
        Err(Error::new(
            Status::InvalidArg,
            format!("RangeError: {name} must be a number of ms in [{min}, {max}], got {value}"),
        ))
    }
}

#[napi]
impl StallWatcher {
    /// Watches the calling thread's beats: a stall is no beat for `thresholdMs`; its end is looked
    /// for every `checkMs`. The first beat is now.
    #[napi(constructor, catch_unwind)]
    pub fn new(threshold_ms: f64, check_ms_: f64) -> Result<Self> {
        let threshold_ms = check_ms("thresholdMs", threshold_ms, 1.0, 3_600_000.0)?;
        let check_ms_ = check_ms("checkMs", check_ms_, 1.0, 60_000.0)?;
        let shared = Arc::new(Shared {
            last_beat_ns: AtomicU64::new(now_ns()),
            threshold_ns: (threshold_ms * 1e6) as u64,
            check: Duration::from_micros((check_ms_ * 1000.0) as u64),
            stopped: AtomicBool::new(false),
            listener: Mutex::new(None),
            stalled_seq: AtomicU32::new(0),
        });
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let for_thread = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("jsprof-stalls".into())
            .spawn(move || watch(for_thread))
            .map_err(|e| Error::from_reason(format!("cannot start the stall watcher: {e}")))?;
        registry()
            .lock()
            .map_err(|_| Error::from_reason("stall watcher registry poisoned"))?
            .insert(id, Arc::clone(&shared));
        Ok(StallWatcher {
            id,
            shared,
            thread: Some(thread),
        })
    }

    /// Its id, for `listenStalls` in another thread.
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The loop turned: stores the time.
    #[napi]
    pub fn beat(&self) {
        self.shared.last_beat_ns.store(now_ns(), Ordering::Release);
    }

    /// Ends the watcher thread (idempotent).
    #[napi(catch_unwind)]
    pub fn stop(&mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.stopped.store(true, Ordering::Release);
        if let Ok(mut map) = registry().lock() {
            map.remove(&self.id);
        }
        if let Ok(mut listener) = self.shared.listener.lock() {
            listener.take();
        }
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for StallWatcher {
    fn drop(&mut self) {
        self.halt();
    }
}

fn shared_of(id: u32) -> Option<Arc<Shared>> {
    registry().lock().ok()?.get(&id).cloned()
}

/// Sends the stall watcher `id`'s events to `onEvent` on the calling thread's event loop (replacing an
/// earlier listener). Returns false when no such watcher runs (stopped already).
#[napi(catch_unwind)]
pub fn listen_stalls(
    id: u32,
    #[napi(ts_arg_type = "(event: StallEvent) => void")] on_event: Function<StallEvent, ()>,
) -> Result<bool> {
    let Some(shared) = shared_of(id) else {
        return Ok(false);
    };
    let listener = on_event
        .build_threadsafe_function::<StallEvent>()
        .callee_handled::<false>()
        .build()?;
    let mut guard = shared
        .listener
        .lock()
        .map_err(|_| Error::from_reason("stall watcher poisoned"))?;
    *guard = Some(listener);
    Ok(true)
}

/// How long (ms) the watched thread of watcher `id` has not beaten, and the stall being reported
/// (`seq`, 0 when none); null when no such watcher runs.
#[napi(object)]
pub struct StallState {
    pub blocked_ms: f64,
    pub seq: u32,
}

#[napi(catch_unwind)]
pub fn stall_state(id: u32) -> Option<StallState> {
    let shared = shared_of(id)?;
    Some(StallState {
        blocked_ms: shared.blocked_ns() as f64 / 1e6,
        seq: shared.stalled_seq.load(Ordering::Acquire),
    })
}
