//! Reading files named by a profile, with bounded work. Paths in a profile come from code nobody here
//! wrote: a `package.json` or a source map may be a FIFO (an open would wait for a writer forever), a
//! symlink to `/dev/zero` (a read would never end) or just huge. Every such read goes through
//! [`read_regular`]: regular files only, opened without blocking, read with a hard cap — the smaller of
//! the caller's cap and the size the file states, so a file whose size lies (most of `/proc` says 0 and
//! streams without end) costs a byte, not the cap.

use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub(crate) enum ReadProblem {
    NotFound(std::io::Error),
    Unreadable(std::io::Error),
    /// A directory, FIFO, socket or device.
    NotRegular,
    /// Larger than the cap (`len`: its size, or the cap + 1 when it grew while read).
    TooLarge {
        len: u64,
        max: u64,
    },
    /// More bytes than its size says: a special file (`/proc`, `/sys`) or one growing while read.
    SizeLies {
        stated: u64,
    },
}

impl ReadProblem {
    fn io(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::NotFound {
            ReadProblem::NotFound(e)
        } else {
            ReadProblem::Unreadable(e)
        }
    }
}

/// Checks that `meta` is a regular file of at most `max_bytes`.
pub(crate) fn check_regular(meta: &std::fs::Metadata, max_bytes: u64) -> Result<(), ReadProblem> {
    if !meta.is_file() {
        return Err(ReadProblem::NotRegular);
    }
    if meta.len() > max_bytes {
        return Err(ReadProblem::TooLarge {
            len: meta.len(),
            max: max_bytes,
        });
    }
    Ok(())
}

/// The metadata of `path` when it is a regular file of at most `max_bytes` (follows symlinks).
pub(crate) fn regular_metadata(path: &Path, max_bytes: u64) -> Result<std::fs::Metadata, ReadProblem> {
    let meta = std::fs::metadata(path).map_err(ReadProblem::io)?;
    check_regular(&meta, max_bytes)?;
    Ok(meta)
}

/// Reads a regular file of at most `max_bytes`. Opened without blocking (a FIFO swapped in after a
/// `stat` cannot stall the thread), checked again on the open file, and read with a hard cap: at most
/// one byte more than the size it states (more is [`ReadProblem::SizeLies`]).
pub(crate) fn read_regular(path: &Path, max_bytes: u64) -> Result<Vec<u8>, ReadProblem> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).map_err(ReadProblem::io)?;
    let meta = file.metadata().map_err(ReadProblem::io)?;
    check_regular(&meta, max_bytes)?;
    let stated = meta.len();
    let mut bytes = Vec::with_capacity(stated as usize);
    file.take(stated.min(max_bytes) + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadProblem::io)?;
    let read = bytes.len() as u64;
    if read > max_bytes {
        return Err(ReadProblem::TooLarge {
            len: read,
            max: max_bytes,
        });
    }
    if read > stated {
        return Err(ReadProblem::SizeLies { stated });
    }
    Ok(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn reads_regular_files_only_and_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.json");
        std::fs::write(&file, b"{}").unwrap();
        assert_eq!(read_regular(&file, 10).unwrap(), b"{}");
        assert!(matches!(
            read_regular(&file, 1),
            Err(ReadProblem::TooLarge { len: 2, max: 1 })
        ));
        assert!(matches!(
            read_regular(dir.path(), 10),
            Err(ReadProblem::NotRegular)
        ));
        assert!(matches!(
            read_regular(&dir.path().join("none"), 10),
            Err(ReadProblem::NotFound(_))
        ));
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(read_regular(&fifo, 10), Err(ReadProblem::NotRegular)));
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(matches!(read_regular(&zero, 10), Err(ReadProblem::NotRegular)));
    }

    #[test]
    fn a_file_whose_size_lies_costs_one_byte() {
        // /proc files say they are empty regular files and stream far more.
        let path = Path::new("/proc/self/maps");
        if std::fs::metadata(path)
            .map(|m| m.is_file() && m.len() == 0)
            .unwrap_or(false)
        {
            assert!(matches!(
                read_regular(path, 1 << 30),
                Err(ReadProblem::SizeLies { stated: 0 })
            ));
        }
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(read_regular(&empty, 10).unwrap(), b"");
    }
}
