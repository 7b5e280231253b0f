//! Whether an UPDATE or DELETE finds its row: decided from the primary index when the newest
//! version is one the snapshot sees (no row read), and down the version chain when a later
//! commit wrote the key. The answers must be those of reading the row.

use augur::{Database, Isolation, Key, Options, SqlState, Value};

mod common;

/// No collector round between the steps below: tombstones stay in the index.
fn opts() -> Options {
    common::quiet_maintenance()
}

fn kv(db: &Database) {
    db.create_table(common::int_pair_table("t")).unwrap();
}

fn row(k: i64, v: i64) -> Vec<Value> {
    vec![Value::Int(k), Value::Int(v)]
}

/// Row reads of any kind the engine counts (mapped file, row cache, RocksDB).
fn reads(db: &Database) -> u64 {
    let s = db.stats();
    s.direct_reads + s.cache_hits + s.cache_misses + s.store_reads
}

#[test]
fn update_and_delete_of_a_visible_row_read_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv(&db);
    let t = db.table("t").unwrap();
    db.transaction(|tx| {
        for k in 0..100 {
            tx.insert("t", row(k, k))?;
        }
        Ok(())
    })
    .unwrap();
    let before = reads(&db);
    let mut tx = db.begin();
    assert!(tx.update_in(&t, &Key::Int(5), row(5, 50)).unwrap());
    assert!(tx.delete_in(&t, &Key::Int(6)).unwrap());
    tx.commit().unwrap();
    assert_eq!(reads(&db), before, "an update or delete of a visible row read it");
    assert_eq!(db.get("t", &Key::Int(5)).unwrap(), Some(row(5, 50)));
    assert_eq!(db.get("t", &Key::Int(6)).unwrap(), None);
    db.close().unwrap();
}

#[test]
fn existence_follows_own_writes_tombstones_and_later_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv(&db);
    let t = db.table("t").unwrap();
    for k in 1..=4 {
        db.insert("t", row(k, k)).unwrap();
    }
    db.transaction(|tx| tx.delete("t", &Key::Int(2))).unwrap();

    // A tombstone at or below the snapshot: no row, nothing written.
    let mut tx = db.begin();
    assert!(!tx.update_in(&t, &Key::Int(2), row(2, 20)).unwrap());
    assert!(!tx.delete_in(&t, &Key::Int(2)).unwrap());
    // A key never written.
    assert!(!tx.update_in(&t, &Key::Int(99), row(99, 0)).unwrap());
    assert!(!tx.delete_in(&t, &Key::Int(99)).unwrap());
    // Own writes decide first: a pending delete hides the row, a pending insert shows one.
    assert!(tx.delete_in(&t, &Key::Int(1)).unwrap());
    assert!(!tx.update_in(&t, &Key::Int(1), row(1, 10)).unwrap());
    assert!(!tx.delete_in(&t, &Key::Int(1)).unwrap());
    tx.insert_in(&t, row(2, 22)).unwrap();
    assert!(tx.update_in(&t, &Key::Int(2), row(2, 23)).unwrap());
    tx.commit().unwrap();
    assert_eq!(db.get("t", &Key::Int(1)).unwrap(), None);
    assert_eq!(db.get("t", &Key::Int(2)).unwrap(), Some(row(2, 23)));

    // Commits after the snapshot: the snapshot's version decides existence, and a write to a
    // row a later commit changed fails as any write conflict (snapshot isolation).
    let mut old = db.begin();
    let mut rc = db.begin();
    rc.set_isolation(Isolation::ReadCommitted);
    db.insert("t", row(7, 7)).unwrap(); // absent from both snapshots
    db.transaction(|tx| tx.delete("t", &Key::Int(3))).unwrap(); // in both snapshots
    db.transaction(|tx| tx.update("t", &Key::Int(4), row(4, 40)))
        .unwrap();
    assert!(!old.update_in(&t, &Key::Int(7), row(7, 70)).unwrap());
    assert!(!old.delete_in(&t, &Key::Int(7)).unwrap());
    let e = old.update_in(&t, &Key::Int(3), row(3, 30)).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::SERIALIZATION_FAILURE);
    drop(old);
    // Under read committed a row deleted since is gone, and one updated since is written.
    assert!(!rc.update_in(&t, &Key::Int(3), row(3, 30)).unwrap());
    assert!(rc.update_in(&t, &Key::Int(4), row(4, 41)).unwrap());
    rc.commit().unwrap();
    assert_eq!(db.get("t", &Key::Int(3)).unwrap(), None);
    assert_eq!(db.get("t", &Key::Int(4)).unwrap(), Some(row(4, 41)));
    assert_eq!(db.get("t", &Key::Int(7)).unwrap(), Some(row(7, 7)));
    db.close().unwrap();
}
