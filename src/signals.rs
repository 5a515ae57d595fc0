//! A native signal watcher for `jsprof record` (lib/record/preload.js, lib/record/watcher.js) and
//! `jsprof-node/register` (lib/register/exit.js).
//!
//! A JS signal handler (`process.on('SIGTERM')`) runs on the main thread's event loop, so a process
//! spinning in a synchronous loop never runs it. Here the handler is a C function that only writes the
//! signal number into a pipe (async-signal-safe); a thread reads the pipe and calls a JS callback
//! through a threadsafe function in the thread that registered it (the recorder's worker thread, whose
//! event loop is free), which then stops the profile through the inspector even while the main
//! thread spins. Nothing else happens in the handler, and nothing here decides what a signal means.
//!
//! `jsprof-node/register` has no thread of its own: its callback runs on the app's main thread
//! (`watch_signals_within`), without keeping that thread's event loop alive, and a deadline makes a
//! delivery end the process by the signal at most that long after it, whatever the main thread does
//! (a main thread spinning in a loop never runs the callback; the signal still ends it, only later).
//!
//! Not the `signal-hook` crate: its registry installs an OS handler once per signal and chains to
//! the previous one (Node's own SIGINT/SIGTERM handler would re-raise the signal and end the process
//! at once), and it cannot re-install its handler after libuv has replaced it — which happens
//! whenever the app adds a `process.on(signal)` listener and restores `SIG_DFL` when it removes the
//! last. That hand-over is this module's whole job (`rearm_signal`), so it is a plain `sigaction`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

#[cfg(unix)]
mod imp {
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
    use std::sync::{Mutex, Once};

    use napi::bindgen_prelude::*;
    use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};

    pub type Callback = ThreadsafeFunction<u32, (), u32, Status, false>;
    /// A callback that does not keep its thread's event loop alive (the app's main thread's).
    pub type WeakCallback = ThreadsafeFunction<u32, (), u32, Status, false, true>;

    /// Whom a delivery is for.
    pub enum Receiver {
        Strong(Callback),
        Weak(WeakCallback),
    }

    impl Receiver {
        fn call(&self, signal: u32) {
            match self {
                Receiver::Strong(f) => f.call(signal, ThreadsafeFunctionCallMode::NonBlocking),
                Receiver::Weak(f) => f.call(signal, ThreadsafeFunctionCallMode::NonBlocking),
            };
        }
    }

    /// The pipe's write end, for the handler (-1: not set up).
    static WRITE_FD: AtomicI32 = AtomicI32::new(-1);
    static SETUP: Once = Once::new();
    /// Where deliveries go; until a callback is set, they wait in `pending`.
    static CALLBACK: Mutex<(Option<Receiver>, Vec<u32>)> = Mutex::new((None, Vec::new()));
    /// After a delivery the process dies of the signal at most this many ms later (0: no deadline).
    static DEADLINE_MS: AtomicU32 = AtomicU32::new(0);
    /// A deadline is running: the process is ending.
    static DYING: AtomicBool = AtomicBool::new(false);

    #[cfg(any(target_os = "linux", target_os = "android"))]
    unsafe fn errno() -> *mut libc::c_int {
        libc::__errno_location()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    unsafe fn errno() -> *mut libc::c_int {
        libc::__error()
    }

    extern "C" fn on_signal(signal: libc::c_int) {
        // Only async-signal-safe calls: write(2) on a non-blocking pipe (a full pipe drops the byte:
        // the watcher already has one to act on), errno saved and restored for the code interrupted.
        unsafe {
            let saved = *errno();
            let fd = WRITE_FD.load(Ordering::Relaxed);
            if fd >= 0 {
                let byte = signal as u8;
                libc::write(fd, (&byte as *const u8).cast(), 1);
            }
            *errno() = saved;
        }
    }

    fn set_flags(fd: libc::c_int, nonblocking: bool) -> bool {
        unsafe {
            let fd_flags = libc::fcntl(fd, libc::F_GETFD);
            if fd_flags < 0 || libc::fcntl(fd, libc::F_SETFD, fd_flags | libc::FD_CLOEXEC) < 0 {
                return false;
            }
            if nonblocking {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) < 0 {
                    return false;
                }
            }
        }
        true
    }

    fn reader(fd: libc::c_int) {
        loop {
            let mut byte = 0u8;
            let n = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
            if n == 1 {
                if let Ok(mut guard) = CALLBACK.lock() {
                    match guard.0.as_ref() {
                        Some(receiver) => receiver.call(u32::from(byte)),
                        None if guard.1.len() < 64 => guard.1.push(u32::from(byte)),
                        None => {}
                    }
                }
                arm_deadline(i32::from(byte));
            } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            } else {
                return;
            }
        }
    }

    /// With a deadline set, ends the process by `signal` that long from now, whatever JS does.
    fn arm_deadline(signal: i32) {
        let ms = DEADLINE_MS.load(Ordering::Relaxed);
        if ms == 0 || DYING.swap(true, Ordering::SeqCst) {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("jsprof-signal-deadline".into())
            .spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(u64::from(ms)));
                die_of(signal);
            });
        if spawned.is_err() {
            // No thread for the deadline: the signal ends the process now, as it would without us.
            die_of(signal);
        }
    }

    fn setup() -> Result<()> {
        let mut error = None;
        SETUP.call_once(|| {
            let mut fds = [0 as libc::c_int; 2];
            if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0
                || !set_flags(fds[0], false)
                || !set_flags(fds[1], true)
            {
                error = Some(std::io::Error::last_os_error());
                return;
            }
            let read_fd = fds[0];
            if let Err(e) = std::thread::Builder::new()
                .name("jsprof-signals".into())
                .spawn(move || reader(read_fd))
            {
                error = Some(e);
                return;
            }
            WRITE_FD.store(fds[1], Ordering::Relaxed);
        });
        if let Some(e) = error {
            return Err(Error::from_reason(format!("cannot watch signals: {e}")));
        }
        if WRITE_FD.load(Ordering::Relaxed) < 0 {
            return Err(Error::from_reason("cannot watch signals: set-up failed earlier"));
        }
        Ok(())
    }

    fn current(signal: i32) -> Option<libc::sighandler_t> {
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(signal, std::ptr::null(), &mut old) == 0).then_some(old.sa_sigaction)
        }
    }

    fn install(signal: i32) -> Result<()> {
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(Error::from_reason(format!(
                    "cannot watch signal {signal}: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
        Ok(())
    }

    pub fn watch(signals: &[i32], receiver: Option<Receiver>, deadline_ms: u32) -> Result<bool> {
        setup()?;
        DEADLINE_MS.store(deadline_ms, Ordering::Relaxed);
        if let Some(receiver) = receiver {
            let mut guard = CALLBACK
                .lock()
                .map_err(|_| Error::from_reason("signal watcher poisoned"))?;
            for signal in std::mem::take(&mut guard.1) {
                receiver.call(signal);
            }
            guard.0 = Some(receiver);
        }
        for &signal in signals {
            install(signal)?;
        }
        Ok(true)
    }

    pub fn restore(signal: i32) -> bool {
        let ours = on_signal as *const () as libc::sighandler_t;
        if current(signal) != Some(ours) {
            return false;
        }
        unsafe { libc::signal(signal, libc::SIG_DFL) };
        true
    }

    pub fn rearm(signal: i32) -> Result<bool> {
        if WRITE_FD.load(Ordering::Relaxed) < 0 || current(signal) != Some(libc::SIG_DFL) {
            return Ok(false);
        }
        install(signal)?;
        Ok(true)
    }

    pub fn die_of(signal: i32) {
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            // To the whole process (a thread-directed raise() would do too: the default action of
            // these signals ends the process).
            libc::kill(libc::getpid(), signal);
        }
    }
}

fn valid_signal(signal: i32) -> Result<i32> {
    // SIGKILL (9) and SIGSTOP (19 on Linux, 17 on macOS) cannot be caught; sigaction refuses them.
    if (1..=64).contains(&signal) {
        Ok(signal)
    } else {
        Err(Error::new(
            Status::InvalidArg,
            format!("RangeError: not a signal number: {signal}"),
        ))
    }
}

/// Watches `signals` with a native handler; each delivery calls `onSignal(signalNumber)` on the
/// event loop of the thread that passed it (deliveries before any callback was given wait for one).
/// Replaces the handlers in place (Node's own included) and the callback of an earlier call. Returns
/// false where signals do not exist (Windows).
#[napi(catch_unwind)]
pub fn watch_signals(
    signals: Vec<i32>,
    #[napi(ts_arg_type = "(signal: number) => void")] on_signal: Option<Function<u32, ()>>,
) -> Result<bool> {
    let signals = signals
        .into_iter()
        .map(valid_signal)
        .collect::<Result<Vec<_>>>()?;
    #[cfg(unix)]
    {
        let callback = match on_signal {
            Some(f) => Some(imp::Receiver::Strong(
                f.build_threadsafe_function::<u32>()
                    .callee_handled::<false>()
                    .build()?,
            )),
            None => None,
        };
        imp::watch(&signals, callback, 0)
    }
    #[cfg(not(unix))]
    {
        let _ = (signals, on_signal);
        Ok(false)
    }
}

/// As `watchSignals`, from the app's own thread (`jsprof-node/register`, on the main thread):
/// `onSignal` is called on its event loop without keeping that loop alive, and after a delivery the
/// process dies of the signal at most `deadlineMs` (at least 1) later, whatever that thread does: a
/// thread spinning in a loop never runs `onSignal`, and the signal still ends the process. Returns
/// false where signals do not exist (Windows).
#[napi(catch_unwind)]
pub fn watch_signals_within(
    signals: Vec<i32>,
    #[napi(ts_arg_type = "(signal: number) => void")] on_signal: Function<u32, ()>,
    deadline_ms: u32,
) -> Result<bool> {
    let signals = signals
        .into_iter()
        .map(valid_signal)
        .collect::<Result<Vec<_>>>()?;
    if deadline_ms == 0 {
        return Err(Error::new(
            Status::InvalidArg,
            "RangeError: deadlineMs must be at least 1".to_string(),
        ));
    }
    #[cfg(unix)]
    {
        let callback = on_signal
            .build_threadsafe_function::<u32>()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        imp::watch(&signals, Some(imp::Receiver::Weak(callback)), deadline_ms)
    }
    #[cfg(not(unix))]
    {
        let _ = (signals, on_signal);
        Ok(false)
    }
}

/// Puts the native handler back for `signal` if nothing handles it now (`SIG_DFL`: libuv restores
/// that when the app removes its last `process.on(signal)` listener). Returns whether it did.
#[napi(catch_unwind)]
pub fn rearm_signal(signal: i32) -> Result<bool> {
    let signal = valid_signal(signal)?;
    #[cfg(unix)]
    {
        imp::rearm(signal)
    }
    #[cfg(not(unix))]
    {
        let _ = signal;
        Ok(false)
    }
}

/// Gives `signal` back its default action if the native handler has it (when the watcher cannot
/// act on deliveries any more). Returns whether it did.
#[napi(catch_unwind)]
pub fn unwatch_signal(signal: i32) -> Result<bool> {
    let signal = valid_signal(signal)?;
    #[cfg(unix)]
    {
        Ok(imp::restore(signal))
    }
    #[cfg(not(unix))]
    {
        let _ = signal;
        Ok(false)
    }
}

/// Ends the process by `signal` with its default action (the exit status a shell shows as 128+n).
/// Returns only where that cannot happen (Windows, or a signal whose default action is not to end).
#[napi(catch_unwind)]
pub fn die_of_signal(signal: i32) -> Result<()> {
    let signal = valid_signal(signal)?;
    #[cfg(unix)]
    imp::die_of(signal);
    #[cfg(not(unix))]
    let _ = signal;
    Ok(())
}
