//! The live write-ahead-log file kept longer than what RocksDB has written to it, so that a
//! commit's record lands inside the file's size and its fdatasync has no new size to make
//! durable ("Life of a commit", step 5, in docs/ARCHITECTURE.md).
//!
//! RocksDB preallocates its WAL with `FALLOC_FL_KEEP_SIZE` (hard-coded for WAL files in
//! `fs_posix.cc`), so every append still grows the file, and on ext4 an fdatasync after a size
//! change commits the journal: a 100-byte write + fdatasync cost 252-269 µs appended and
//! 158-173 µs inside space allocated with the size extended (reports/log/
//! 2026-11-durable-commit.md). So Augur extends the live WAL itself, `fallocate` without
//! `KEEP_SIZE`, a step ahead of RocksDB's writes. What that leaves after the last record reads
//! as zeros (unwritten extents), which RocksDB's log reader skips as preallocated padding
//! (`kZeroType` with length 0: no corruption reported, in every recovery mode), and RocksDB
//! trims the file to what it wrote when it closes it (`PosixWritableFile::Close`).

use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::*;

/// How far the live WAL is extended at a time, bytes.
const STEP: u64 = 32 << 20;
/// The WAL is not extended on a file system with less free space than this: the space is
/// reserved for real, and a nearly full device needs it for flushes (and the disk-full
/// recovery waits for `Options::resume_free_bytes`).
const MIN_FREE: u64 = 1 << 30;

/// The WAL file extended last: its number, and [`Store`]'s count of appended bytes then.
#[derive(Default)]
pub(super) struct WalAhead {
    number: u64,
    bytes_at: u64,
}

impl Store {
    /// Extends the live WAL file by [`STEP`] when it is a file not yet extended (RocksDB
    /// switched to a new one) or when half of the last step has been appended since. Best
    /// effort: a failure leaves the WAL as RocksDB made it (appends, a slower sync). Called at
    /// open and by the maintenance thread every `Options::maintenance_interval`.
    pub(crate) fn extend_wal(&self) {
        let bytes = self.wal_bytes.load(Ordering::Relaxed);
        let mut ahead = self.wal_ahead.lock();
        let Some((number, file)) = newest_wal(&self.path) else {
            return;
        };
        if number == ahead.number && bytes - ahead.bytes_at < STEP / 2 {
            return;
        }
        if free_bytes(&self.path).is_none_or(|b| b < MIN_FREE) {
            return;
        }
        match extend(&file) {
            Ok(()) => {
                *ahead = WalAhead {
                    number,
                    bytes_at: bytes,
                }
            }
            Err(e) => tracing::debug!(error = %e, file = %file.display(), "extending the WAL failed"),
        }
    }
}

/// Extends `file` by [`STEP`] bytes past its current size (unwritten extents, read as zeros).
fn extend(file: &Path) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new().write(true).open(file)?;
    let len = f.metadata()?.len();
    // SAFETY: fallocate on a file descriptor this function owns; mode 0 allocates the range
    // and extends the size to cover it.
    let r = unsafe { libc::fallocate(f.as_raw_fd(), 0, len as libc::off_t, STEP as libc::off_t) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The newest WAL file in `dir` (RocksDB names them `NNNNNN.log` with growing numbers; the
/// newest is the one being written).
fn newest_wal(dir: &Path) -> Option<(u64, PathBuf)> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_suffix(".log")?.parse::<u64>().ok()?;
            Some((n, e.path()))
        })
        .max_by_key(|(n, _)| *n)
}

/// Free bytes (for an unprivileged user) of the file system holding `path`.
pub(crate) fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct it is given; `c` is a valid C string.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }
}
