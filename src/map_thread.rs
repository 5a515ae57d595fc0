//! The source-map thread: `resolveSourceMaps` reads files (maps, generated scripts) and decodes maps,
//! which can take long on a big or hostile trace. Run on the libuv pool, that work would hold one of
//! its four threads, and the app's own file I/O, DNS and zlib would queue behind it. Here the work runs
//! on one thread of its own, started on first use; calls run one after another, in call order, and
//! each resolves its promise from there.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;

static QUEUE: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

fn queue() -> std::io::Result<&'static Mutex<Sender<Job>>> {
    if let Some(q) = QUEUE.get() {
        return Ok(q);
    }
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("jsprof-sourcemaps".into())
        .spawn(move || {
            for job in rx {
                job();
            }
        })?;
    // Another call may have raced us here: its thread is kept, ours ends with its channel.
    Ok(QUEUE.get_or_init(|| Mutex::new(tx)))
}

/// Runs `job` on the source-map thread.
pub(crate) fn run(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let q = queue()?;
    let sender = q.lock().unwrap_or_else(|p| p.into_inner());
    sender
        .send(Box::new(job))
        .map_err(|_| std::io::Error::other("the source-map thread is gone"))
}
