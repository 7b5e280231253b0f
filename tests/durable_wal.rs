//! The live write-ahead-log file is extended ahead of the commits (src/store/wal.rs), so that a
//! durable commit's record lands inside the file's size; a crash leaves that zero-filled tail
//! behind, and recovery must find every commit before it and nothing after.

use std::path::{Path, PathBuf};
use std::time::Duration;

use augur::{Database, Key, KeyRange, Options};

mod common;
use common::{kv, row};

fn opts() -> Options {
    Options {
        sync_commits: true,
        maintenance_interval: Duration::from_millis(20),
        ..Options::default()
    }
}

/// WAL files (`NNNNNN.log`) in `dir`, oldest first, with their sizes.
fn wals(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut v: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| (e.path(), e.metadata().unwrap().len()))
        .collect();
    v.sort();
    v
}

/// Copies the database's files as they are while it runs: what a crash at this moment leaves
/// on the disk (every acknowledged commit is in the WAL's page cache and on the disk alike).
fn crash_image(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            crash_image(&e.path(), &to.join(e.file_name()));
        } else if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn the_live_wal_is_extended_and_a_crash_with_its_zero_tail_recovers_every_commit() {
    let root = tempfile::tempdir().unwrap();
    let free = fs_free(root.path());
    assert!(
        free >= 2 << 30,
        "this test needs 2 GiB free in the temporary directory (the WAL is extended only with 1 GiB free), {free} bytes are"
    );
    let live = root.path().join("live");
    let db = Database::open(&live, opts()).unwrap();
    kv(&db);
    for k in 0..500 {
        db.insert("kv", row(k)).unwrap();
    }
    // The newest WAL file is longer than what was written to it: 500 records of ~60 bytes
    // would be ~30 KiB, and the file holds a 32 MiB step.
    let (wal, len) = wals(&live).pop().expect("a live WAL file");
    assert!(len >= 32 << 20, "{} is {len} bytes: not extended", wal.display());
    let image = root.path().join("image");
    crash_image(&live, &image);
    // Committed after the image: absent from it.
    db.insert("kv", row(500)).unwrap();
    // A clean close leaves no extension behind (RocksDB trims the WAL it closes).
    db.close().unwrap();
    drop(db);
    for (f, len) in wals(&live) {
        assert!(
            len < 1 << 20,
            "{} is {len} bytes after a clean close",
            f.display()
        );
    }

    let db = Database::open(&image, opts()).unwrap();
    let tx = db.begin();
    let keys: Vec<Key> = tx
        .scan("kv", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    drop(tx);
    assert_eq!(keys, (0..500).map(Key::Int).collect::<Vec<_>>());
    assert_eq!(db.get("kv", &Key::Int(499)).unwrap(), Some(row(499)));
    assert_eq!(db.verify_integrity().unwrap(), 500);
    // And the recovered database takes commits again, durably, past the old tail.
    db.insert("kv", row(500)).unwrap();
    db.close().unwrap();
    drop(db);
    let db = Database::open(&image, opts()).unwrap();
    assert_eq!(db.get("kv", &Key::Int(500)).unwrap(), Some(row(500)));
    assert_eq!(db.verify_integrity().unwrap(), 501);
}

/// Free bytes of the file system holding `path`.
fn fs_free(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs fills the zeroed struct it is given; `c` is a valid C string.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c.as_ptr(), &mut st), 0);
        st.f_bavail as u64 * st.f_frsize as u64
    }
}
