//! Fault paths reached through fail points (src/failpoint.rs; this target needs `--features
//! failpoints`): a bulk commit whose rows are ingested but whose next step fails answers
//! "outcome unknown" (08007), and the engine reopens by itself with the rows stored and the
//! index equal to them; a write RocksDB holds stopped during `Database::close` is ended with a
//! definite error once `Options::stalled_write_limit` has passed, and nothing is lost.

use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use augur::engine::BULK_COMMIT_ROWS;
use augur::{Database, ImageCheck, Key, KeyRange, Options, SqlState};

mod common;
use common::{far_data_node, kv, quiet_maintenance, row};

/// Fail points are process-wide: one test at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Turns fail point `name` on with `actions` until dropped.
struct Point(&'static str);

impl Point {
    fn on(name: &'static str, actions: &str) -> Point {
        fail::cfg(name, actions).unwrap();
        Point(name)
    }
}

impl Drop for Point {
    fn drop(&mut self) {
        fail::remove(self.0);
    }
}

/// Waits until the engine has reopened the database `n` times by itself.
fn wait_recoveries(db: &Database, n: u64) {
    let t0 = Instant::now();
    while db.stats().storage_recoveries < n {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the engine did not reopen the database: {:?}",
            db.stats()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!db.stats().storage_degraded);
}

/// The table holds exactly `keys`, each with its own row, and the index equals the rows.
fn check(db: &Database, keys: impl Iterator<Item = i64> + Clone) {
    let want: Vec<i64> = keys.collect();
    let tx = db.begin();
    let got: Vec<i64> = tx
        .scan("kv", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(k, _)| match k {
            Key::Int(k) => k,
            k => panic!("unexpected key {k:?}"),
        })
        .collect();
    let mut sorted = want.clone();
    sorted.sort_unstable();
    assert_eq!(got.len(), sorted.len());
    assert!(got == sorted, "the table does not hold the rows committed");
    for &k in want.iter().step_by(997).chain(want.last()) {
        assert_eq!(db.get("kv", &Key::Int(k)).unwrap(), Some(row(k)));
    }
    assert_eq!(db.verify_integrity().unwrap(), want.len());
}

/// After the failure: the engine reopened by itself, the rows are there, a later commit takes
/// positions after them (none overwritten), and all of it holds after a clean reopen.
fn recovered(db: Database, dir: &std::path::Path, n: i64) {
    wait_recoveries(&db, 1);
    check(&db, -1..n);
    db.insert("kv", row(n)).unwrap();
    check(&db, -1..=n);
    db.close().unwrap();
    drop(db);
    let db = Database::open(dir, quiet_maintenance()).unwrap();
    check(&db, -1..=n);
}

#[test]
fn a_bulk_commit_whose_positions_fail_to_be_recorded_answers_unknown_and_keeps_its_rows() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    kv(&db);
    db.insert("kv", row(-1)).unwrap();
    let n = BULK_COMMIT_ROWS as i64;
    let e = {
        // The commit's rows are ingested as a file; the next write, recording `next_rowid`, fails.
        let _p = Point::on("store-write", "1*return");
        db.transaction(|tx| {
            for k in 0..n {
                tx.insert("kv", row(k))?;
            }
            Ok(())
        })
        .unwrap_err()
    };
    assert_eq!(e.sqlstate(), SqlState::TRANSACTION_RESOLUTION_UNKNOWN, "{e}");
    recovered(db, dir.path(), n);
}

#[test]
fn a_bulk_load_whose_index_build_fails_answers_unknown_and_keeps_its_rows() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    kv(&db);
    let n = 20_000i64;
    let e = {
        // Into an empty table the index is bulk-loaded beside the ingestion; that build fails.
        let _p = Point::on("bulk-index-build", "return");
        db.bulk_insert("kv", (0..n).map(row)).unwrap_err()
    };
    assert_eq!(e.sqlstate(), SqlState::TRANSACTION_RESOLUTION_UNKNOWN, "{e}");
    wait_recoveries(&db, 1);
    db.insert("kv", row(-1)).unwrap();
    recovered(db, dir.path(), n);
}

#[test]
fn a_bulk_load_whose_positions_fail_to_be_recorded_answers_unknown_and_keeps_its_rows() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    kv(&db);
    db.insert("kv", row(-1)).unwrap();
    let n = 20_000i64;
    let e = {
        let _p = Point::on("store-write", "1*return");
        db.bulk_insert("kv", (0..n).map(row)).unwrap_err()
    };
    assert_eq!(e.sqlstate(), SqlState::TRANSACTION_RESOLUTION_UNKNOWN, "{e}");
    recovered(db, dir.path(), n);
}

#[test]
fn a_write_stalled_during_close_is_ended_with_a_definite_error_after_the_limit() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let limit = Duration::from_millis(300);
    let o = Options {
        stalled_write_limit: limit,
        ..quiet_maintenance()
    };
    let db = Arc::new(Database::open(dir.path(), o.clone()).unwrap());
    kv(&db);
    for k in -1..100 {
        db.insert("kv", row(k)).unwrap();
    }
    // RocksDB stops writes for good (as after a background error on a full device): the close's
    // writes (its checkpoint, its clean-shutdown marker) wait in the write stop, and only the
    // close's own watchdog can end them.
    let p = Point::on("rocksdb-write-stop", "return");
    let (tx, rx) = mpsc::channel();
    let closing = db.clone();
    let t0 = Instant::now();
    let closer = std::thread::spawn(move || {
        let r = closing.close();
        let _ = tx.send((r, t0.elapsed()));
    });
    let (r, took) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("Database::close hung on a write RocksDB stopped");
    drop(p);
    let e = r.expect_err("a close whose write failed reports it");
    assert!(!e.is_outcome_unknown(), "nothing reached the WAL: {e}");
    assert_eq!(e.sqlstate(), SqlState::IO_ERROR, "{e}");
    assert!(took >= limit, "ended after {took:?}, before the limit");
    // Both handles gone before the reopen (the closing thread's clone too: it may still hold
    // it after sending, and the open would find RocksDB's lock taken).
    closer.join().unwrap();
    drop(db);
    // The close was not clean (no marker): the next open recovers, and nothing acknowledged is
    // missing.
    let db = Database::open(dir.path(), o).unwrap();
    check(&db, -1..100);
}

/// A double fault: a data node of the index image fails its checksum on first touch, and the
/// rows the index would be rebuilt from cannot be read either (`store-row-scan`). Reads and
/// commits that need the index fail with XX001 (data_corrupted) instead of panicking, nothing
/// is changed, every later read tries again, and once the rows can be read the next read
/// rebuilds the index and every answer is right.
#[test]
fn a_damaged_image_node_whose_rows_cannot_be_read_fails_cleanly_and_is_retried() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        image_check: ImageCheck::OnTouchOnly,
        checkpoint_every: u64::MAX,
        ..quiet_maintenance()
    };
    // 16 dense runs far apart: model nodes over several data nodes.
    let clustered = |i: i64| ((i % 16) << 58) + (i / 16) * 7;
    let n = 200_000;
    {
        let db = Database::open(dir.path(), o.clone()).unwrap();
        kv(&db);
        db.bulk_insert("kv", (0..n).map(|i| row(clustered(i)))).unwrap();
        db.close().unwrap();
    }
    let images: Vec<_> = std::fs::read_dir(dir.path().join("index"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(images.len(), 1, "{images:?}");
    let mut b = std::fs::read(&images[0]).unwrap();
    let (at, min, max) = far_data_node(&b);
    b[at] ^= 0x40;
    std::fs::write(&images[0], b).unwrap();

    let db = Database::open(dir.path(), o.clone()).unwrap();
    assert_eq!(db.stats().index_images_damaged, 0);
    let in_node = (0..n).map(clustered).find(|&k| (min..=max).contains(&k)).unwrap();
    {
        let _p = Point::on("store-row-scan", "return");
        for _ in 0..3 {
            let tx = db.begin();
            // The scan reads the damaged node whole; a point read may read only a clean chunk
            // of it, so it comes second (then the index is known damaged whatever it reads).
            let e = tx.scan("kv", KeyRange::all()).unwrap_err();
            assert_eq!(e.sqlstate(), SqlState::DATA_CORRUPTED, "{e}");
            let e = tx.get("kv", &Key::Int(in_node)).unwrap_err();
            assert_eq!(e.sqlstate(), SqlState::DATA_CORRUPTED, "{e}");
        }
        // A commit that needs the index fails before anything of it is stored.
        let e = db
            .transaction(|tx| tx.upsert("kv", row(clustered(3))).map(|_| ()))
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::DATA_CORRUPTED, "{e}");
    }
    // The rows can be read again: the next read rebuilds the index and answers right.
    let tx = db.begin();
    assert_eq!(tx.get("kv", &Key::Int(in_node)).unwrap().unwrap(), row(in_node));
    drop(tx);
    assert_eq!(db.stats().index_images_damaged, 1);
    assert_eq!(db.verify_integrity().unwrap(), n as usize);
    check(&db, {
        let mut all: Vec<i64> = (0..n).map(clustered).collect();
        all.sort();
        all.into_iter()
    });
    db.close().unwrap();
}

/// Runs `Database::get_with` of key 1 on another thread, holds it between its index lookup and
/// its fetch while `meanwhile` runs, then lets it finish. Returns its answer (column `v`).
fn read_held_while(db: &Database, meanwhile: impl FnOnce()) -> augur::Result<Option<String>> {
    let (at_point, reached) = mpsc::channel::<()>();
    let (release, wait) = mpsc::channel::<()>();
    let (at_point, wait) = (Mutex::new(at_point), Mutex::new(wait));
    fail::cfg_callback("point-read-fetch", move || {
        at_point.lock().unwrap().send(()).unwrap();
        wait.lock().unwrap().recv().unwrap();
    })
    .unwrap();
    let _p = Point("point-read-fetch");
    let t = db.table("kv").unwrap();
    let reader = {
        let db = db.clone();
        std::thread::spawn(move || {
            db.get_with(&t, &Key::Int(1), |r| match r.get(1) {
                Ok(Some(augur::ValueRef::Text(s))) => s.to_string(),
                other => panic!("column v: {other:?}"),
            })
        })
    };
    reached.recv_timeout(Duration::from_secs(30)).unwrap();
    // Only the held read stops at the point.
    fail::remove("point-read-fetch");
    meanwhile();
    release.send(()).unwrap();
    reader.join().unwrap()
}

#[test]
fn a_read_outside_a_transaction_whose_version_is_collected_under_it_reads_again() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    kv(&db);
    db.insert("kv", row(1)).unwrap();

    // Updated, and the version the read found collected: the read holds no registered
    // snapshot, finds that version gone, and reads again under one (the new value).
    let got = read_held_while(&db, || {
        db.transaction(|tx| {
            tx.update(
                "kv",
                &Key::Int(1),
                vec![augur::Value::Int(1), augur::Value::Text("two".into())],
            )
            .map(|_| ())
        })
        .unwrap();
        assert_eq!(db.collect_garbage().unwrap(), 1);
    });
    assert_eq!(got.unwrap().as_deref(), Some("two"));
    assert_eq!(db.stats().read_retries, 1);

    // Deleted, and the tombstone collected with the version it replaced: gone.
    let got = read_held_while(&db, || {
        assert!(db.transaction(|tx| tx.delete("kv", &Key::Int(1))).unwrap());
        assert!(db.collect_garbage().unwrap() >= 1);
    });
    assert_eq!(got.unwrap(), None);
    assert_eq!(db.stats().read_retries, 2);

    // Nothing collected under it: one read, no retry.
    db.insert("kv", row(1)).unwrap();
    assert_eq!(read_held_while(&db, || ()).unwrap(), Some("value 1".into()));
    assert_eq!(db.stats().read_retries, 2);
    db.close().unwrap();
}

#[test]
fn a_crash_after_a_block_committed_keeps_its_alters_and_its_rows() {
    // The block's ALTER undo records are deleted in its commit's own write: a crash after the
    // commit (here: the block's end fails before the session forgets them, and the process
    // dies) must not roll back the schema its committed rows were written for.
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let run = |s: &mut augur::Session, sql: &str| {
        s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
    };
    {
        let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
        let mut s = augur::Session::new(db.clone());
        run(&mut s, "CREATE TABLE t (id int PRIMARY KEY, v text)");
        run(&mut s, "INSERT INTO t VALUES (1, 'a')");
        let _p = Point::on("block-ddl-finish", "return");
        run(&mut s, "BEGIN");
        run(&mut s, "ALTER TABLE t DROP COLUMN v");
        run(&mut s, "ALTER TABLE t ADD COLUMN w int DEFAULT 5");
        run(&mut s, "INSERT INTO t VALUES (2, 6)");
        assert!(s.execute("COMMIT", &[]).is_err());
        db.abandon();
        drop(s);
    }
    let db = Database::open(dir.path(), quiet_maintenance()).unwrap();
    let mut s = augur::Session::new(db.clone());
    let got = s
        .execute("SELECT * FROM t ORDER BY id", &[])
        .unwrap()
        .pop()
        .unwrap()
        .rows()
        .to_vec();
    assert_eq!(
        got,
        vec![
            vec![augur::Value::Int(1), augur::Value::Int(5)],
            vec![augur::Value::Int(2), augur::Value::Int(6)]
        ]
    );
    // The old incarnation the block kept is dropped at open.
    assert_eq!(db.verify_integrity().unwrap(), 2);
}
