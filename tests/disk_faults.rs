//! When the disk fails (docs/ARCHITECTURE.md, "When the disk fails"): a failed WAL sync answers
//! "outcome unknown" (08007) and the engine reopens the database by itself; a failed WAL write
//! is a definite error whose commit is absent; a full device answers 53100 and writes resume
//! once space is freed; a failed read is a clean 58030; a truncated mapped file stops the
//! process with a message, and a restart recovers everything acknowledged.
//!
//! Failures are injected with libfiu (Debian's fiu-utils, installed by scripts/setup): a test
//! that needs it runs itself again in a child process under `fiu-run -x`, whose POSIX wrappers
//! fail the calls the child enables with `fiu_enable` at chosen moments. The full device is a
//! small tmpfs mounted by the test (root, as CI runs). A missing prerequisite fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use augur::{Database, Key, Options, SqlState, Value};

mod common;
use common::{kv, quiet_maintenance, row};

const CHILD: &str = "AUGUR_DISK_FAULT_CHILD";

/// True in the child: the caller runs the scenario. In the parent, runs test `name` again
/// under `fiu-run -x` and fails unless it passed there.
fn in_fiu_child(name: &str) -> bool {
    if std::env::var(CHILD).ok().as_deref() == Some(name) {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("fiu-run")
        .args(["-x", "-f", ""])
        .arg(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .output()
        .expect("running fiu-run (Debian's fiu-utils; scripts/setup installs it)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "the scenario failed under fiu-run ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// libfiu's control functions, found in the process (`fiu-run -x` preloads the library).
mod fiu {
    use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

    type Enable = unsafe extern "C" fn(*const c_char, c_int, *mut c_void, c_uint) -> c_int;
    type Disable = unsafe extern "C" fn(*const c_char) -> c_int;

    fn sym(name: &CStr) -> *mut c_void {
        // SAFETY: dlsym with RTLD_DEFAULT and a valid C string.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        assert!(
            !p.is_null(),
            "libfiu is not loaded: the test must run under fiu-run -x"
        );
        p
    }

    /// Makes every call through failure point `name` fail with `errno` until [`disable`].
    pub fn enable(name: &str, errno: i32) {
        // SAFETY: fiu_enable's C signature; libfiu copies the name.
        let f: Enable = unsafe { std::mem::transmute::<*mut c_void, Enable>(sym(c"fiu_enable")) };
        let n = CString::new(name).unwrap();
        assert_eq!(unsafe { f(n.as_ptr(), 1, errno as usize as *mut c_void, 0) }, 0);
    }

    pub fn disable(name: &str) {
        // SAFETY: fiu_disable's C signature.
        let f: Disable = unsafe { std::mem::transmute::<*mut c_void, Disable>(sym(c"fiu_disable")) };
        let n = CString::new(name).unwrap();
        unsafe { f(n.as_ptr()) };
    }
}

fn get(db: &Database, k: i64) -> augur::Result<Option<Vec<Value>>> {
    db.get("kv", &Key::Int(k))
}

/// Waits until the engine has reopened the database `n` times by itself.
fn wait_recoveries(db: &Database, n: u64) {
    let t0 = Instant::now();
    while db.stats().storage_recoveries < n {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the engine did not recover: {:?}",
            db.stats()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!db.stats().storage_degraded);
}

#[test]
fn a_failed_wal_sync_answers_unknown_and_the_engine_recovers_without_a_restart() {
    if !in_fiu_child("a_failed_wal_sync_answers_unknown_and_the_engine_recovers_without_a_restart") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    kv(&db);
    db.insert("kv", row(1)).unwrap();
    // Open across the recovery: one with a buffered write, one that has read.
    let mut writer = db.begin();
    writer.insert("kv", row(100)).unwrap();
    let reader = db.begin();
    assert!(reader.get("kv", &Key::Int(1)).unwrap().is_some());
    let session = db.clone();

    fiu::enable("posix/io/sync/fdatasync", libc::EIO);
    let e = db.insert("kv", row(2)).unwrap_err();
    fiu::disable("posix/io/sync/fdatasync");
    assert!(e.is_outcome_unknown(), "{e}");
    assert_eq!(e.sqlstate(), SqlState::TRANSACTION_RESOLUTION_UNKNOWN);

    // The engine reopens the database by itself; every clone of the handle goes on.
    wait_recoveries(&db, 1);
    session.insert("kv", row(3)).unwrap();
    assert_eq!(get(&db, 1).unwrap(), Some(row(1)));
    assert_eq!(get(&session, 3).unwrap(), Some(row(3)));
    // The unknown commit is all there or not at all (here the data reached the page cache, so
    // the reopened database has it: exactly why "did not happen" would have been false).
    if let Some(r) = get(&db, 2).unwrap() {
        assert_eq!(r, row(2));
    }
    // Transactions open across the recovery end cleanly: a read with 57P02, a commit with 40001
    // (nothing of it was stored; running it again is safe).
    assert_eq!(
        reader.get("kv", &Key::Int(1)).unwrap_err().sqlstate(),
        SqlState::CRASH_SHUTDOWN
    );
    assert_eq!(
        writer.commit().unwrap_err().sqlstate(),
        SqlState::SERIALIZATION_FAILURE
    );
    assert_eq!(get(&db, 100).unwrap(), None);
    db.verify_integrity().unwrap();
    let s = db.stats();
    assert_eq!(s.storage_recoveries, 1);
    assert!(s.commits >= 2, "counters go on across the reopen: {s:?}");
    db.close().unwrap();
    drop((db, session, reader));
    // And a restart sees the same state.
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    assert_eq!(get(&db, 3).unwrap(), Some(row(3)));
    db.verify_integrity().unwrap();
}

/// fault_test once found an acknowledged delete undone: a writer's commit was answered "outcome
/// unknown" (its record was in the WAL, its sync never happened), and the same writer's next
/// transaction, still on the faulted engine instance, deleted that row. Its snapshot could not
/// see the unknown commit (never visible), so the delete found nothing, wrote nothing and was
/// acknowledged; the reopen then found the row. The device here stays "full" (the sync fails
/// with ENOSPC and `resume_free_bytes` is never free), so the engine keeps the faulted instance
/// serving reads instead of reopening at once, as it does while a real device is full.
#[test]
fn a_commit_that_wrote_nothing_is_not_acknowledged_over_an_unknown_outcome() {
    if !in_fiu_child("a_commit_that_wrote_nothing_is_not_acknowledged_over_an_unknown_outcome") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        resume_free_bytes: u64::MAX,
        ..quiet_maintenance()
    };
    let db = Database::open(dir.path(), o).unwrap();
    kv(&db);
    db.insert("kv", row(1)).unwrap();
    fiu::enable("posix/io/sync/fdatasync", libc::ENOSPC);
    let e = db.insert("kv", row(7)).unwrap_err();
    fiu::disable("posix/io/sync/fdatasync");
    assert!(e.is_outcome_unknown(), "{e}");
    assert!(db.stats().storage_degraded);

    // Reads go on from the faulted instance, at the last durable state: key 7 is not there,
    // so the delete finds no row and writes nothing.
    let mut tx = db.begin();
    assert_eq!(tx.get("kv", &Key::Int(1)).unwrap(), Some(row(1)));
    assert!(!tx.delete("kv", &Key::Int(7)).unwrap());
    let e = tx
        .commit()
        .expect_err("a commit resting on reads that missed a commit of unknown outcome was acknowledged");
    assert!(!e.is_outcome_unknown(), "{e}");
    assert_eq!(e.sqlstate(), SqlState::SERIALIZATION_FAILURE, "{e}");
    // Plain reads are not refused.
    assert_eq!(get(&db, 1).unwrap(), Some(row(1)));
    assert!(db.stats().storage_degraded, "the instance was replaced meanwhile");
    // The close fails (the store is faulted); the next open recovers as after a crash.
    let _ = db.close();
    drop(db);

    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    // The unknown commit is all there or not at all; here its record was written before the
    // sync failed, so the reopen finds key 7: the delete's acknowledgement would have been false.
    if let Some(r) = get(&db, 7).unwrap() {
        assert_eq!(r, row(7));
    }
    assert_eq!(get(&db, 1).unwrap(), Some(row(1)));
    db.verify_integrity().unwrap();
    db.close().unwrap();
}

#[test]
fn a_failed_wal_write_is_a_definite_error_and_its_commit_is_absent() {
    if !in_fiu_child("a_failed_wal_write_is_a_definite_error_and_its_commit_is_absent") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    kv(&db);
    db.insert("kv", row(1)).unwrap();
    fiu::enable("posix/io/rw/write", libc::EIO);
    let e = db.insert("kv", row(2)).unwrap_err();
    // Refused while the engine is down: definite too.
    let again = db.insert("kv", row(4));
    fiu::disable("posix/io/rw/write");
    assert!(!e.is_outcome_unknown(), "{e}");
    assert_eq!(e.sqlstate(), SqlState::IO_ERROR, "{e}");
    if let Err(e) = &again {
        assert!(!e.is_outcome_unknown(), "{e}");
    }
    wait_recoveries(&db, 1);
    db.insert("kv", row(3)).unwrap();
    assert_eq!(
        get(&db, 2).unwrap(),
        None,
        "a commit answered with a definite error is present"
    );
    assert_eq!(get(&db, 1).unwrap(), Some(row(1)));
    assert_eq!(get(&db, 3).unwrap(), Some(row(3)));
    db.verify_integrity().unwrap();
}

#[test]
fn a_failed_read_is_a_clean_58030_for_that_statement() {
    if !in_fiu_child("a_failed_read_is_a_clean_58030_for_that_statement") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut o = quiet_maintenance();
    // Compressed blocks are read through RocksDB (pread), not from mapped files, and the row
    // cache starts empty after the reopen.
    o.store.compression = true;
    {
        let db = Database::open(dir.path(), o.clone()).unwrap();
        kv(&db);
        db.transaction(|tx| {
            for k in 0..2000 {
                tx.insert("kv", row(k))?;
            }
            Ok(())
        })
        .unwrap();
        db.store().flush_rows(true).unwrap();
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), o).unwrap();
    assert_eq!(get(&db, 5).unwrap(), Some(row(5))); // now in the row cache
    let other = db.clone();
    fiu::enable("posix/io/rw/pread", libc::EIO);
    let e = get(&db, 1500).unwrap_err();
    // Another session's read of a cached row goes on.
    let cached = get(&other, 5);
    fiu::disable("posix/io/rw/pread");
    assert_eq!(e.sqlstate(), SqlState::IO_ERROR, "{e}");
    assert_eq!(cached.unwrap(), Some(row(5)));
    // Only that statement failed: the store is not faulted, reads and writes go on.
    assert_eq!(get(&db, 1500).unwrap(), Some(row(1500)));
    db.insert("kv", row(5000)).unwrap();
    let s = db.stats();
    assert!(!s.storage_degraded);
    assert_eq!(s.storage_recoveries, 0);
    db.verify_integrity().unwrap();
}

/// A tmpfs of `mib` MiB mounted on a temporary directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(mib: u64) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("running mount");
        assert!(
            out.status.success(),
            "mounting a {mib} MiB tmpfs failed (the disk-full test needs root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_disk_answers_53100_reads_go_on_and_writes_resume_when_space_returns() {
    let fs = Tmpfs::mount(24);
    let ballast: PathBuf = fs.path().join("ballast");
    std::fs::write(&ballast, vec![7u8; 8 << 20]).unwrap();
    let mut o = quiet_maintenance();
    o.store.write_buffer_bytes = 1 << 20;
    o.row_cache_bytes = 1 << 20;
    o.resume_free_bytes = 4 << 20;
    let db = Database::open(fs.path().join("db"), o.clone()).unwrap();
    kv(&db);
    let pad = "p".repeat(1000);
    let mut acked = Vec::new();
    let mut next = 0i64;
    let e = loop {
        let keys: Vec<i64> = (next..next + 50).collect();
        next += 50;
        let r = db.transaction(|tx| {
            for &k in &keys {
                tx.insert("kv", vec![Value::Int(k), Value::Text(pad.clone())])?;
            }
            Ok(())
        });
        match r {
            Ok(()) => acked.extend(keys),
            Err(e) => break (e, keys),
        }
        assert!(next < 1_000_000, "the 24 MiB file system never filled");
    };
    let (e, refused) = e;
    assert_eq!(e.sqlstate(), SqlState::DISK_FULL, "{e}");
    // Reads go on; writes keep failing with 53100 while the device is full.
    assert!(get(&db, acked[0]).unwrap().is_some());
    assert!(get(&db, *acked.last().unwrap()).unwrap().is_some());
    let e2 = db
        .insert("kv", vec![Value::Int(-1), Value::Text("x".into())])
        .unwrap_err();
    assert_eq!(e2.sqlstate(), SqlState::DISK_FULL, "{e2}");
    assert!(db.stats().storage_degraded);
    // Space returns: writes resume by themselves.
    std::fs::remove_file(&ballast).unwrap();
    wait_recoveries(&db, 1);
    db.insert("kv", vec![Value::Int(-2), Value::Text("after".into())])
        .unwrap();
    for &k in acked.iter().step_by(7).chain(acked.last()) {
        assert!(get(&db, k).unwrap().is_some(), "acknowledged key {k} lost");
    }
    for k in refused.iter().chain([&-1]) {
        assert_eq!(get(&db, *k).unwrap(), None, "refused key {k} present");
    }
    db.verify_integrity().unwrap();
    db.close().unwrap();
    drop(db);
    let db = Database::open(fs.path().join("db"), o).unwrap();
    let tx = db.begin();
    let n = tx.scan("kv", augur::KeyRange::all()).unwrap().len();
    assert_eq!(n, acked.len() + 1);
    db.verify_integrity().unwrap();
}

const SIGBUS_CHILD: &str = "AUGUR_SIGBUS_CHILD";

/// The child: loads rows into a mapped SST file, says so, truncates the file (keeping a copy
/// for the parent to restore, as a disk that comes back would) and reads the rows again.
fn sigbus_child(dir: &Path) {
    let db = Database::open(dir, quiet_maintenance()).unwrap();
    kv(&db);
    db.transaction(|tx| {
        for k in 0..5000 {
            tx.insert("kv", row(k))?;
        }
        Ok(())
    })
    .unwrap();
    db.store().flush_rows(true).unwrap();
    db.store().refresh_direct();
    assert!(db.stats().direct.files >= 1, "no SST file is mapped");
    println!("ACKED 5000");
    let backup = dir.with_extension("backup");
    std::fs::create_dir_all(&backup).unwrap();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "sst") {
            std::fs::copy(e.path(), backup.join(e.file_name())).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(e.path())
                .unwrap()
                .set_len(0)
                .unwrap();
        }
    }
    for k in 0..5000 {
        let _ = get(&db, k);
    }
    println!("SURVIVED");
}

#[test]
fn a_truncated_mapped_file_stops_the_process_with_a_message_and_a_restart_recovers() {
    if let Ok(d) = std::env::var(SIGBUS_CHILD) {
        sigbus_child(Path::new(&d));
        return;
    }
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "a_truncated_mapped_file_stops_the_process_with_a_message_and_a_restart_recovers",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SIGBUS_CHILD, &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("ACKED 5000"), "{stdout}\n{stderr}");
    assert!(
        !stdout.contains("SURVIVED"),
        "reads of a truncated mapped file returned"
    );
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGBUS),
        "{}\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("augur: fatal: SIGBUS while reading a memory-mapped data file"),
        "the process died without saying why: {stderr}"
    );
    // The disk comes back: restore the files, restart, everything acknowledged is there.
    let backup = dir.with_extension("backup");
    for e in std::fs::read_dir(&backup).unwrap().flatten() {
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let db = Database::open(&dir, quiet_maintenance()).unwrap();
    for k in 0..5000 {
        assert_eq!(get(&db, k).unwrap(), Some(row(k)));
    }
    db.verify_integrity().unwrap();
}
