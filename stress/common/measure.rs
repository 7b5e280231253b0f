//! Measured memory and disk: the process's resident set split into anonymous and file-backed
//! pages, and the bytes a directory holds on disk with every inode counted once.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Resident set of this process (`/proc/self/status`), bytes. `anon` is private memory (heaps,
/// caches kept by the process); `file` is file-backed pages mapped into it (executables, and the
/// database file for SQLite with `mmap_size` > 0); those pages are the OS page cache's, shared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rss {
    pub total: u64,
    pub anon: u64,
    pub file: u64,
    pub shmem: u64,
}

impl Rss {
    pub fn now() -> Rss {
        std::fs::read_to_string("/proc/self/status")
            .map(|s| Rss::parse(&s))
            .unwrap_or_default()
    }

    /// Parses the `VmRSS`, `RssAnon`, `RssFile` and `RssShmem` lines (kB) of a status file.
    pub fn parse(status: &str) -> Rss {
        let kb = |name: &str| -> u64 {
            status
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(0, |v| v * 1024)
        };
        Rss {
            total: kb("VmRSS:"),
            anon: kb("RssAnon:"),
            file: kb("RssFile:"),
            shmem: kb("RssShmem:"),
        }
    }

    /// "1234 MiB (anon 1000, file 234)".
    pub fn describe(&self) -> String {
        format!(
            "{} MiB (anon {}, file {})",
            self.total >> 20,
            self.anon >> 20,
            self.file >> 20
        )
    }
}

/// Bytes of the regular files under `p`, each inode counted once: a file with two names (a
/// hard link, as RocksDB makes when it ingests a file by linking it) occupies its blocks once.
pub fn disk_bytes(p: &Path) -> u64 {
    fn walk(p: &Path, seen: &mut HashSet<(u64, u64)>) -> u64 {
        let Ok(rd) = std::fs::read_dir(p) else {
            return 0;
        };
        rd.flatten()
            .map(|e| match e.metadata() {
                Ok(m) if m.is_dir() => walk(&e.path(), seen),
                Ok(m) if seen.insert((m.dev(), m.ino())) => m.len(),
                _ => 0,
            })
            .sum()
    }
    walk(p, &mut HashSet::new())
}

/// Page faults of this process so far: (minor, major).
pub fn page_faults() -> (u64, u64) {
    // SAFETY: getrusage fills the zeroed struct it is given; RUSAGE_SELF is always valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    (u.ru_minflt as u64, u.ru_majflt as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_lines_are_parsed() {
        let s = "Name:\tx\nVmRSS:\t  3000 kB\nRssAnon:\t  2000 kB\nRssFile:\t   900 kB\nRssShmem:\t 100 kB\n";
        let r = Rss::parse(s);
        assert_eq!(r.total, 3000 * 1024);
        assert_eq!(r.anon, 2000 * 1024);
        assert_eq!(r.file, 900 * 1024);
        assert_eq!(r.shmem, 100 * 1024);
        let me = Rss::now();
        assert!(me.total > 0 && me.anon > 0, "{me:?}");
    }

    #[test]
    fn a_hard_link_is_counted_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), vec![1u8; 1000]).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/b"), vec![1u8; 300]).unwrap();
        assert_eq!(disk_bytes(d.path()), 1300);
        std::fs::hard_link(d.path().join("a"), d.path().join("sub/a-again")).unwrap();
        assert_eq!(disk_bytes(d.path()), 1300);
    }
}
