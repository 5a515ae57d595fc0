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
//! The helper may come up after the watched thread already blocks (a stall from start-up: its thread
//! boots in tens of ms, more on a loaded machine): a stall told before any listener is kept and told to
//! the listener when it registers, if it still lasts.
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

/// The listener, and the stall told while there was none (told to the listener when it comes).
#[derive(Default)]
struct Listening {
    listener: Option<Listener>,
    pending: Option<StallEvent>,
}

/// Shared by the watched thread (beats), the watcher thread and the listener.
struct Shared {
    /// Nanoseconds since `epoch()` of the last beat.
    last_beat_ns: AtomicU64,
    threshold_ns: u64,
    check: Duration,
    stopped: AtomicBool,
    listening: Mutex<Listening>,
    /// The current stall's number while one is reported and not ended (0: none).
    stalled_seq: AtomicU32,
    /// The last beat before the reported stall (`u64::MAX`: none): a later beat ends it at once for
    /// `stall_state`, before the watcher thread next looks.
    stall_beat_ns: AtomicU64,
    /// The watched thread's CPU-time clock, which other threads can read (Linux); None elsewhere.
    cpu_clock: Option<CpuClock>,
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
        if let Ok(mut guard) = self.listening.lock() {
            if let Some(listener) = guard.listener.as_ref() {
                listener.call(event, ThreadsafeFunctionCallMode::NonBlocking);
            } else if event.kind == "stall" {
                guard.pending = Some(event);
            } else {
                // Ended before anyone listened: the watched thread's next beat saw it.
                guard.pending = None;
            }
        }
    }

    /// The stall being reported (its seq), while no beat came after it; 0 when none.
    fn current_stall(&self) -> u32 {
        let seq = self.stalled_seq.load(Ordering::Acquire);
        if seq != 0 && self.last_beat_ns.load(Ordering::Acquire) != self.stall_beat_ns.load(Ordering::Acquire)
        {
            return 0;
        }
        seq
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
            shared.stall_beat_ns.store(u64::MAX, Ordering::Release);
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
            shared.stall_beat_ns.store(beat, Ordering::Release);
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
            listening: Mutex::new(Listening::default()),
            stalled_seq: AtomicU32::new(0),
            stall_beat_ns: AtomicU64::new(u64::MAX),
            cpu_clock: this_thread_cpu_clock(),
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
        if let Ok(mut listening) = self.shared.listening.lock() {
            *listening = Listening::default();
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
/// earlier listener), starting with the stall told before it listened, if that still lasts. Returns
/// false when no such watcher runs (stopped already).
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
        .listening
        .lock()
        .map_err(|_| Error::from_reason("stall watcher poisoned"))?;
    if let Some(event) = guard.pending.take() {
        if shared.current_stall() == event.seq {
            listener.call(event, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
    guard.listener = Some(listener);
    Ok(true)
}

/// How long (ms) the watched thread of watcher `id` has not beaten, and the stall being reported
/// (`seq`, 0 when none, or when the thread beat since); null when no such watcher runs.
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
        seq: shared.current_stall(),
    })
}

/// libuv's `uv_now` and `uv_hrtime`, looked up in the running process (Node exports libuv's symbols
/// for addons; a Node linked to a shared libuv has them in that library). None when absent, and on
/// Windows, where the lookup is not written yet.
#[cfg(unix)]
fn libuv_clocks() -> Option<(UvNow, UvHrtime)> {
    static CLOCKS: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    let (now, hrtime) = (*CLOCKS.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only looks symbols up.
        let now = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"uv_now".as_ptr()) };
        let hrtime = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"uv_hrtime".as_ptr()) };
        (!now.is_null() && !hrtime.is_null()).then_some((now as usize, hrtime as usize))
    }))?;
    // SAFETY: the addresses are libuv's functions of these signatures (uv.h), resolved above.
    unsafe {
        Some((
            std::mem::transmute::<usize, UvNow>(now),
            std::mem::transmute::<usize, UvHrtime>(hrtime),
        ))
    }
}

#[cfg(not(unix))]
fn libuv_clocks() -> Option<(UvNow, UvHrtime)> {
    None
}

type UvNow = unsafe extern "C" fn(*const std::ffi::c_void) -> u64;
type UvHrtime = unsafe extern "C" fn() -> u64;

/// How long ago (ms) the calling thread's event loop last updated its time: when it woke from its
/// wait for I/O (an I/O callback runs in that turn), or just before it ran its timers (a timer's
/// callback) — the start of the turn running now, unless code in the turn asked for the loop's time
/// since (Node's timers do when one is set). Called inside a stalled turn (watchStalls' detection),
/// it tells when the turn began. Null when libuv's clocks cannot be found.
#[napi(catch_unwind)]
pub fn loop_turn_age_ms(env: Env) -> Result<Option<f64>> {
    let Some((uv_now, uv_hrtime)) = libuv_clocks() else {
        return Ok(None);
    };
    let uv_loop = env.get_uv_event_loop()?;
    if uv_loop.is_null() {
        return Ok(None);
    }
    // SAFETY: the calling thread's own loop (napi_get_uv_event_loop), read on that thread.
    let (now_ns, loop_ms) = unsafe { (uv_hrtime(), uv_now(uv_loop.cast_const().cast())) };
    Ok(Some((now_ns as f64 / 1e6 - loop_ms as f64).max(0.0)))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
type CpuClock = libc::clockid_t;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
type CpuClock = ();

/// The calling thread's CPU-time clock, readable from any thread of the process (Linux).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn this_thread_cpu_clock() -> Option<CpuClock> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: pthread_self() is the calling thread, and `clock` a valid place for the answer.
    let status = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    (status == 0).then_some(clock)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn this_thread_cpu_clock() -> Option<CpuClock> {
    None
}

/// The CPU time (ms) a thread's clock reads now.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn cpu_ms(clock: CpuClock) -> Option<f64> {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid place for the answer; a clock of a thread that ended is an error.
    let status = unsafe { libc::clock_gettime(clock, &mut time) };
    (status == 0).then(|| time.tv_sec as f64 * 1e3 + time.tv_nsec as f64 / 1e6)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn cpu_ms(_clock: CpuClock) -> Option<f64> {
    None
}

/// The CPU time (ms) the thread watched by watcher `id` has run so far, read from any thread: between
/// the helper's request and the stack the watched thread took, how long it ran without taking the
/// interrupt (JS takes one at once; native code only once it returns), whatever the machine's load.
/// Null where a thread's CPU clock cannot be read by another (Linux only), or no such watcher runs.
#[napi(catch_unwind)]
pub fn stall_thread_cpu_ms(id: u32) -> Option<f64> {
    cpu_ms(shared_of(id)?.cpu_clock?)
}
