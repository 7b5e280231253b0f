//! Garbage collection when reads fail (docs/ARCHITECTURE.md, "Garbage collection" and "When the
//! disk fails"): a collection round that fails deletes nothing and is retried whole, and no
//! tombstone row is deleted while the sweep after an unclean open is pending. Either mistake
//! leaves an older live version of a deleted key behind its collected tombstone: the stored rows
//! then say the key is live (`verify_integrity` fails, and an index rebuilt from the rows would
//! bring the deleted key back).
//!
//! Read failures are injected through test hooks (`Store::fail_row_reads`,
//! `Database::fail_sweeps`), so that the failing read is exactly the one each scenario needs.

use std::path::Path;
use std::time::Duration;

use augur::{Database, Key, Options, Value};

mod common;

/// No background collection or checkpoint unless `background`: the rounds that run are the
/// ones the test starts.
fn opts(background: bool) -> Options {
    Options {
        maintenance_interval: if background {
            Duration::from_millis(10)
        } else {
            Duration::from_secs(3600)
        },
        ..Options::default()
    }
}

fn open(path: &Path, background: bool) -> Database {
    let db = Database::open(path, opts(background)).unwrap();
    db.create_table_if_not_exists(common::int_pair_table("kv"))
        .unwrap();
    db
}

fn put(db: &Database, k: i64, v: i64) {
    db.transaction(|tx| tx.upsert("kv", vec![Value::Int(k), Value::Int(v)]).map(|_| ()))
        .unwrap();
}

fn delete(db: &Database, k: i64) {
    db.transaction(|tx| tx.delete("kv", &Key::Int(k)).map(|_| ()))
        .unwrap();
}

/// The stored versions of `k` as (rowid, is_tombstone, prev), oldest first.
fn versions(db: &Database, k: i64) -> Vec<(u64, bool, u64)> {
    db.debug_key("kv", &Key::Int(k)).unwrap().0
}

#[test]
fn a_failed_collection_round_is_retried_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), false);
    // Key 2, inserted and deleted: once collected, its tombstone row waits for a checkpoint,
    // which then covers it, so that the next round reads it (walking its version chain).
    put(&db, 2, 20);
    delete(&db, 2);
    db.collect_garbage().unwrap();
    db.checkpoint().unwrap();
    // Key 1, updated: its first version is queued for collection.
    put(&db, 1, 10);
    put(&db, 1, 11);
    let pending = db.stats().gc_pending;
    assert!(pending >= 2, "queued: {pending}");

    // The round fails reading key 2's tombstone row: it must delete nothing and keep its work.
    db.store().fail_row_reads(true);
    let r = db.collect_garbage();
    db.store().fail_row_reads(false);
    assert!(r.is_err(), "the round did not read a row: {r:?}");
    assert_eq!(
        db.stats().gc_pending,
        pending,
        "a failed round dropped queued work"
    );
    assert_eq!(versions(&db, 1).len(), 2);

    // Key 1 deleted and collected, its tombstone row too once a checkpoint covers it: the
    // version the failed round did not delete must not outlive them.
    delete(&db, 1);
    db.collect_garbage().unwrap();
    db.checkpoint().unwrap();
    db.collect_garbage().unwrap();
    assert_eq!(versions(&db, 1), vec![], "versions of the deleted key 1 are left");
    assert_eq!(versions(&db, 2), vec![], "versions of the deleted key 2 are left");
    assert_eq!(db.stats().gc_pending, 0);
    db.verify_integrity().unwrap();
    assert_eq!(db.get("kv", &Key::Int(1)).unwrap(), None);
    db.close().unwrap();
    drop(db);

    let db = open(dir.path(), false);
    db.verify_integrity().unwrap();
    assert_eq!(db.get("kv", &Key::Int(1)).unwrap(), None);
    assert_eq!(versions(&db, 1), vec![]);
    db.close().unwrap();
}

#[test]
fn tombstone_rows_stay_while_the_crash_sweep_is_pending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    Database::fail_sweeps(&path, true);
    // Key 1 updated, then the process "dies" before any collection: its first version is an
    // orphan only the sweep after the next open can find (nothing queues it otherwise).
    let db = open(&path, false);
    put(&db, 1, 10);
    put(&db, 1, 11);
    db.abandon();

    // The sweep fails (a read error) and is retried, while collection goes on.
    let db = open(&path, true);
    assert!(!db.wait_for_sweep(Duration::from_millis(300)));
    delete(&db, 1);
    db.collect_garbage().unwrap();
    db.checkpoint().unwrap();
    db.collect_garbage().unwrap();
    // The tombstone row stays: without it the orphan would be the key's newest version.
    let v = versions(&db, 1);
    assert!(
        v.last().is_some_and(|v| v.1),
        "key 1's newest stored version is not its tombstone: {v:?}"
    );
    db.verify_integrity().unwrap();

    // Once the sweep succeeds, every version of the key goes.
    Database::fail_sweeps(&path, false);
    assert!(
        db.wait_for_sweep(Duration::from_secs(60)),
        "the sweep did not finish"
    );
    db.checkpoint().unwrap();
    db.collect_garbage().unwrap();
    assert_eq!(versions(&db, 1), vec![], "versions of the deleted key 1 are left");
    db.verify_integrity().unwrap();
    db.close().unwrap();
    drop(db);

    let db = open(&path, false);
    db.verify_integrity().unwrap();
    assert_eq!(db.get("kv", &Key::Int(1)).unwrap(), None);
    assert_eq!(versions(&db, 1), vec![]);
    db.close().unwrap();
}

#[test]
fn versions_a_snapshot_held_at_close_are_collected_after_the_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), false);
    put(&db, 1, 10);
    // A transaction still open at close holds its snapshot: key 1's first version, superseded
    // after it began, cannot be collected by the close.
    let tx = db.begin();
    put(&db, 1, 11);
    db.close().unwrap();
    drop(tx);
    drop(db);

    let db = open(dir.path(), false);
    assert!(
        db.wait_for_sweep(Duration::from_secs(60)),
        "the sweep did not finish"
    );
    delete(&db, 1);
    db.collect_garbage().unwrap();
    db.checkpoint().unwrap();
    db.collect_garbage().unwrap();
    assert_eq!(versions(&db, 1), vec![], "versions of the deleted key 1 are left");
    db.verify_integrity().unwrap();
    db.close().unwrap();
}
