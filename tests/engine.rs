//! Engine behaviour: the invariants of docs/INVARIANTS.md, tested through the embedded API.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::time::Duration;

use augur::{
    ColumnDef, DataType, Database, IndexDef, Isolation, Key, KeyRange, Locked, Options, SqlState, TableDef,
    Value,
};
use proptest::prelude::*;

fn opts() -> Options {
    Options {
        maintenance_interval: Duration::from_millis(10),
        checkpoint_every: 500,
        ..Options::default()
    }
}

fn kv_table(db: &Database, name: &str) {
    db.create_table(
        TableDef::new(
            name,
            vec![
                ColumnDef::new("k", DataType::Int8),
                ColumnDef::new("v", DataType::Int8),
            ],
            &["k"],
        )
        .unwrap(),
    )
    .unwrap();
}

fn val(db: &Database, table: &str, k: i64) -> Option<i64> {
    db.get(table, &Key::Int(k)).unwrap().map(|r| match r[1] {
        Value::Int(v) => v,
        ref o => panic!("unexpected {o:?}"),
    })
}

#[test]
fn insert_get_update_delete_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        kv_table(&db, "t");
        db.transaction(|tx| {
            for k in (0..1000).rev() {
                tx.insert("t", vec![Value::Int(k * 7 - 3000), Value::Int(k)])?;
            }
            Ok(())
        })
        .unwrap();
        let e = db
            .insert("t", vec![Value::Int(-3000), Value::Int(1)])
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
        db.transaction(|tx| {
            assert!(tx.update("t", &Key::Int(3), vec![Value::Int(3), Value::Int(-1)])?);
            assert!(tx.delete("t", &Key::Int(10))?);
            assert!(!tx.delete("t", &Key::Int(12))?);
            Ok(())
        })
        .unwrap();
        assert_eq!(val(&db, "t", 3), Some(-1));
        assert_eq!(val(&db, "t", 10), None);
        assert_eq!(db.verify_integrity().unwrap(), 999);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_eq!(val(&db, "t", 3), Some(-1));
    assert_eq!(val(&db, "t", 10), None);
    assert_eq!(val(&db, "t", -3000), Some(0));
    let rows = db.begin().scan("t", KeyRange::all()).unwrap();
    assert_eq!(rows.len(), 999);
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0), "scan is ordered");
    assert_eq!(db.verify_integrity().unwrap(), 999);
}

#[test]
fn rollback_leaves_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    db.insert("t", vec![Value::Int(1), Value::Int(1)]).unwrap();
    let mut tx = db.begin();
    tx.insert("t", vec![Value::Int(2), Value::Int(2)]).unwrap();
    tx.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(100)])
        .unwrap();
    assert_eq!(
        tx.get("t", &Key::Int(2)).unwrap().unwrap()[1],
        Value::Int(2),
        "read your writes"
    );
    tx.rollback();
    // A transaction dropped without commit also rolls back.
    {
        let mut tx = db.begin();
        tx.insert("t", vec![Value::Int(3), Value::Int(3)]).unwrap();
    }
    assert_eq!(val(&db, "t", 1), Some(1));
    assert_eq!(val(&db, "t", 2), None);
    assert_eq!(val(&db, "t", 3), None);
    assert_eq!(db.verify_integrity().unwrap(), 1);
}

#[test]
fn savepoints_undo_exactly_later_writes_and_release_later_locks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    for k in 1..=3 {
        db.insert("t", vec![Value::Int(k), Value::Int(k)]).unwrap();
    }
    let mut tx = db.begin();
    tx.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(10)])
        .unwrap();
    let outer = tx.savepoint().unwrap();
    // Rewrites of a key written before the savepoint, a new key, a delete, a lock on key 3.
    tx.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(100)])
        .unwrap();
    tx.insert("t", vec![Value::Int(4), Value::Int(4)]).unwrap();
    tx.delete("t", &Key::Int(2)).unwrap();
    let t = tx.table("t").unwrap();
    tx.lock_row(&t, &Key::Int(3)).unwrap();
    let inner = tx.savepoint().unwrap();
    tx.insert("t", vec![Value::Int(5), Value::Int(5)]).unwrap();
    tx.release(inner).unwrap();
    assert_eq!(tx.savepoint_depth(), 1);
    assert_eq!(
        tx.release(inner).unwrap_err().sqlstate(),
        SqlState("3B001"),
        "a released savepoint is gone"
    );
    // Key 3 is locked: another writer cannot take it.
    let mut other = db.begin();
    other.set_lock_timeout(Some(Duration::from_millis(20)));
    assert_eq!(
        other
            .update("t", &Key::Int(3), vec![Value::Int(3), Value::Int(30)])
            .unwrap_err()
            .sqlstate(),
        SqlState::LOCK_NOT_AVAILABLE
    );
    tx.rollback_to(outer).unwrap();
    // Back to the state at the savepoint: key 1 as written before it, 2 present, 4 and 5 gone.
    let rows: Vec<(Key, i64)> = tx
        .scan("t", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(k, r)| (k, if let Value::Int(v) = r[1] { v } else { -1 }))
        .collect();
    assert_eq!(rows, vec![(Key::Int(1), 10), (Key::Int(2), 2), (Key::Int(3), 3)]);
    // The lock on key 3 taken after the savepoint is released; key 1's (taken before) is not.
    other
        .update("t", &Key::Int(3), vec![Value::Int(3), Value::Int(30)])
        .unwrap();
    assert_eq!(
        other
            .update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(11)])
            .unwrap_err()
            .sqlstate(),
        SqlState::LOCK_NOT_AVAILABLE
    );
    other.commit().unwrap();
    // The savepoint stays open after rollback_to; nested() keeps Ok and undoes Err.
    tx.insert("t", vec![Value::Int(6), Value::Int(6)]).unwrap();
    tx.nested(|tx| tx.insert("t", vec![Value::Int(7), Value::Int(7)]))
        .unwrap();
    let e = tx
        .nested(|tx| {
            tx.insert("t", vec![Value::Int(8), Value::Int(8)])?;
            tx.insert("t", vec![Value::Int(1), Value::Int(1)])
        })
        .unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
    tx.release(outer).unwrap();
    tx.commit().unwrap();
    assert_eq!(val(&db, "t", 1), Some(10));
    assert_eq!(val(&db, "t", 2), Some(2));
    assert_eq!(val(&db, "t", 3), Some(30));
    assert_eq!(val(&db, "t", 4), None);
    assert_eq!(val(&db, "t", 5), None);
    assert_eq!(val(&db, "t", 6), Some(6));
    assert_eq!(val(&db, "t", 7), Some(7));
    assert_eq!(val(&db, "t", 8), None);
    assert_eq!(db.verify_integrity().unwrap(), 5);
}

#[test]
fn writers_of_one_row_wait_and_snapshots_are_stable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    db.insert("t", vec![Value::Int(1), Value::Int(10)]).unwrap();
    let mut a = db.begin();
    let mut b = db.begin();
    let reader = db.begin();
    a.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(11)])
        .unwrap();
    // b waits for a's row lock; a bounded wait fails with 55P03 and leaves b usable.
    b.set_lock_timeout(Some(Duration::from_millis(30)));
    let e = b
        .update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(12)])
        .unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::LOCK_NOT_AVAILABLE);
    // Unbounded: b blocks until a commits, then (snapshot isolation) fails with 40001 because
    // the row changed after b's snapshot: first updater wins.
    b.set_lock_timeout(None);
    let waiter = std::thread::spawn(move || {
        let r = b.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(12)]);
        (r.map_err(|e| e.sqlstate()), b)
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(!waiter.is_finished(), "b must wait for a's lock");
    a.commit().unwrap();
    let (r, b) = waiter.join().unwrap();
    assert_eq!(r, Err(SqlState::SERIALIZATION_FAILURE));
    drop(b);
    assert_eq!(val(&db, "t", 1), Some(11));
    // Under read committed the waiter goes on with the newest version instead.
    let mut c = db.begin();
    let mut d = db.begin();
    d.set_isolation(Isolation::ReadCommitted);
    c.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(20)])
        .unwrap();
    let t = db.table("t").unwrap();
    let waiter = std::thread::spawn(move || {
        let r = d.lock_row(&t, &Key::Int(1)).unwrap();
        (r, d)
    });
    std::thread::sleep(Duration::from_millis(50));
    c.commit().unwrap();
    let (r, mut d) = waiter.join().unwrap();
    match r {
        Locked::Changed(Some(row)) => assert_eq!(row[1], Value::Int(20)),
        other => panic!("expected the newest version, got {other:?}"),
    }
    d.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(21)])
        .unwrap();
    d.commit().unwrap();
    assert_eq!(val(&db, "t", 1), Some(21));
    // The old snapshot still sees the old value, even after garbage collection runs.
    db.collect_garbage().unwrap();
    assert_eq!(reader.get("t", &Key::Int(1)).unwrap().unwrap()[1], Value::Int(10));
    // Concurrent inserts of the same key: the second waits, then sees a duplicate.
    let mut c = db.begin();
    let mut d = db.begin();
    c.insert("t", vec![Value::Int(5), Value::Int(1)]).unwrap();
    let waiter = std::thread::spawn(move || {
        d.insert("t", vec![Value::Int(5), Value::Int(2)])
            .map_err(|e| e.sqlstate())
    });
    std::thread::sleep(Duration::from_millis(50));
    c.commit().unwrap();
    assert_eq!(waiter.join().unwrap(), Err(SqlState::UNIQUE_VIOLATION));
    // If the first inserter rolls back, the second goes on.
    let mut c = db.begin();
    let mut d = db.begin();
    c.insert("t", vec![Value::Int(6), Value::Int(1)]).unwrap();
    let waiter = std::thread::spawn(move || {
        d.insert("t", vec![Value::Int(6), Value::Int(2)]).unwrap();
        d.commit()
    });
    std::thread::sleep(Duration::from_millis(50));
    c.rollback();
    waiter.join().unwrap().unwrap();
    assert_eq!(val(&db, "t", 6), Some(2));
    // A reader does not see a commit that happened after it began.
    assert!(reader.get("t", &Key::Int(5)).unwrap().is_none());
    drop(reader);
    assert_eq!(db.stats().row_locks_held, 0, "every lock released");
}

#[test]
fn crossed_updates_deadlock_one_side() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    db.insert("t", vec![Value::Int(1), Value::Int(0)]).unwrap();
    db.insert("t", vec![Value::Int(2), Value::Int(0)]).unwrap();
    let mut a = db.begin();
    let mut b = db.begin();
    a.update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(1)])
        .unwrap();
    b.update("t", &Key::Int(2), vec![Value::Int(2), Value::Int(2)])
        .unwrap();
    let waiter = std::thread::spawn(move || {
        let r = a.update("t", &Key::Int(2), vec![Value::Int(2), Value::Int(1)]);
        r.and_then(|_| a.commit())
    });
    std::thread::sleep(Duration::from_millis(50));
    let e = b
        .update("t", &Key::Int(1), vec![Value::Int(1), Value::Int(2)])
        .unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::DEADLOCK_DETECTED);
    assert!(e.is_retryable());
    b.rollback();
    waiter.join().unwrap().unwrap();
    assert_eq!(val(&db, "t", 1), Some(1));
    assert_eq!(val(&db, "t", 2), Some(1));
    assert!(db.stats().deadlocks >= 1);
    assert_eq!(db.stats().row_locks_held, 0);
}

#[test]
fn bank_transfers_keep_the_total_under_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "acct");
    const N: i64 = 20;
    db.transaction(|tx| {
        for k in 0..N {
            tx.insert("acct", vec![Value::Int(k), Value::Int(1000)])?;
        }
        Ok(())
    })
    .unwrap();
    let mut hs = Vec::new();
    for th in 0..4u64 {
        let db = db.clone();
        hs.push(std::thread::spawn(move || {
            let mut x = th * 7919 + 1;
            let mut done = 0;
            while done < 300 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let from = ((x >> 33) % N as u64) as i64;
                let to = ((x >> 40) % N as u64) as i64;
                if from == to {
                    continue;
                }
                let r = db.transaction(|tx| {
                    let f = tx.get("acct", &Key::Int(from))?.unwrap();
                    let t = tx.get("acct", &Key::Int(to))?.unwrap();
                    let (Value::Int(fv), Value::Int(tv)) = (&f[1], &t[1]) else {
                        unreachable!()
                    };
                    tx.update(
                        "acct",
                        &Key::Int(from),
                        vec![Value::Int(from), Value::Int(fv - 1)],
                    )?;
                    tx.update("acct", &Key::Int(to), vec![Value::Int(to), Value::Int(tv + 1)])?;
                    Ok(())
                });
                match r {
                    Ok(()) => done += 1,
                    Err(e) if e.is_retryable() => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }));
    }
    // Readers check the invariant on consistent snapshots while writers run.
    for _ in 0..50 {
        let rows = db.begin().scan("acct", KeyRange::all()).unwrap();
        let total: i64 = rows
            .iter()
            .map(|(_, r)| if let Value::Int(v) = r[1] { v } else { 0 })
            .sum();
        assert_eq!(total, N * 1000, "a snapshot saw a torn transfer");
    }
    for h in hs {
        h.join().unwrap();
    }
    let rows = db.begin().scan("acct", KeyRange::all()).unwrap();
    let total: i64 = rows
        .iter()
        .map(|(_, r)| if let Value::Int(v) = r[1] { v } else { 0 })
        .sum();
    assert_eq!(total, N * 1000);
    assert!(db.stats().commits >= 1200);
    std::thread::sleep(Duration::from_millis(50));
    db.collect_garbage().unwrap();
    assert!(db.stats().versions_collected > 0, "old versions are collected");
    assert_eq!(db.verify_integrity().unwrap(), N as usize);
}

#[test]
fn text_composite_and_keyless_tables() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        db.create_table(
            TableDef::new(
                "names",
                vec![
                    ColumnDef::new("name", DataType::Text(None)),
                    ColumnDef::new("n", DataType::Int4),
                ],
                &["name"],
            )
            .unwrap(),
        )
        .unwrap();
        db.create_table(
            TableDef::new(
                "pairs",
                vec![
                    ColumnDef::new("a", DataType::Int4),
                    ColumnDef::new("b", DataType::Text(None)),
                    ColumnDef::new("c", DataType::Float8),
                ],
                &["a", "b"],
            )
            .unwrap(),
        )
        .unwrap();
        db.create_table(
            TableDef::new("log", vec![ColumnDef::new("msg", DataType::Text(None))], &[]).unwrap(),
        )
        .unwrap();
        assert_eq!(
            db.table("names").unwrap().key_index_kind().name(),
            "ordered fallback (B-tree)"
        );
        assert_eq!(db.table("log").unwrap().key_index_kind().name(), "ALEX");
        db.transaction(|tx| {
            for w in ["pear", "apple", "fig", "", "apple pie", "Zebra"] {
                tx.insert("names", vec![w.into(), Value::Int(w.len() as i64)])?;
            }
            for (a, b) in [(2, "x"), (1, "z"), (1, "a"), (-5, "m"), (1, "")] {
                tx.insert("pairs", vec![Value::Int(a), b.into(), Value::Float(0.5)])?;
            }
            for m in ["one", "two", "two"] {
                tx.insert("log", vec![m.into()])?;
            }
            Ok(())
        })
        .unwrap();
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let tx = db.begin();
    let names: Vec<String> = tx
        .scan("names", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(_, r)| r[0].to_string())
        .collect();
    assert_eq!(names, ["", "Zebra", "apple", "apple pie", "fig", "pear"]);
    let pairs: Vec<(String, String)> = tx
        .scan("pairs", KeyRange::all())
        .unwrap()
        .into_iter()
        .map(|(_, r)| (r[0].to_string(), r[1].to_string()))
        .collect();
    let expect: Vec<(String, String)> = [(-5, "m"), (1, ""), (1, "a"), (1, "z"), (2, "x")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(pairs, expect);
    let log = tx.scan("log", KeyRange::all()).unwrap();
    assert_eq!(log.len(), 3, "keyless tables keep duplicate rows");
    let def = db.table("pairs").unwrap().def();
    let k = def.key_from_values(&[Value::Int(1), "a".into()]).unwrap();
    assert!(tx.get("pairs", &k).unwrap().is_some());
    let e = def
        .key_from_values(&[Value::Text("nope".into()), "a".into()])
        .unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
}

#[test]
fn range_scans_merge_own_writes_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    db.transaction(|tx| {
        for k in (0..2000).step_by(2) {
            tx.insert("t", vec![Value::Int(k), Value::Int(k)])?;
        }
        Ok(())
    })
    .unwrap();
    let mut tx = db.begin();
    tx.insert("t", vec![Value::Int(101), Value::Int(-1)]).unwrap();
    tx.delete("t", &Key::Int(100)).unwrap();
    tx.update("t", &Key::Int(102), vec![Value::Int(102), Value::Int(-2)])
        .unwrap();
    let range = KeyRange {
        lo: Bound::Included(Key::Int(96)),
        hi: Bound::Excluded(Key::Int(106)),
    };
    let t = tx.table("t").unwrap();
    let mut fwd = Vec::new();
    tx.scan_in(&t, &range, false, |k, r| {
        fwd.push((k.clone(), r[1].clone()));
        Ok(true)
    })
    .unwrap();
    let keys: Vec<Key> = fwd.iter().map(|x| x.0.clone()).collect();
    assert_eq!(keys, [96, 98, 101, 102, 104].map(Key::Int));
    assert_eq!(fwd[3].1, Value::Int(-2));
    let mut rev = Vec::new();
    tx.scan_in(&t, &range, true, |k, _| {
        rev.push(k.clone());
        Ok(rev.len() < 3)
    })
    .unwrap();
    assert_eq!(rev, [104, 102, 101].map(Key::Int));
    // A long scan crosses batch boundaries.
    let all = tx.scan("t", KeyRange::all()).unwrap();
    assert_eq!(all.len(), 1000);
    // Empty and inverted ranges.
    let empty = KeyRange {
        lo: Bound::Excluded(Key::Int(5)),
        hi: Bound::Excluded(Key::Int(6)),
    };
    tx.scan_in(&t, &empty, false, |_, _| panic!("nothing in range"))
        .unwrap();
    let inverted = KeyRange {
        lo: Bound::Included(Key::Int(9)),
        hi: Bound::Included(Key::Int(1)),
    };
    tx.scan_in(&t, &inverted, false, |_, _| panic!("nothing in range"))
        .unwrap();
}

/// `scan_first(limit)` visits exactly what `scan_with` visits before it is told to stop after
/// `limit` rows: deleted rows in the window, the transaction's own writes, both directions,
/// limits on and around the engine's read-ahead batches.
#[test]
fn scan_first_is_the_first_rows_of_scan_with() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    db.transaction(|tx| {
        for k in 0..1500 {
            tx.insert("t", vec![Value::Int(k), Value::Int(k)])?;
        }
        Ok(())
    })
    .unwrap();
    // Committed deletes: tombstones inside the first read-ahead windows.
    db.transaction(|tx| {
        for k in (3..700).step_by(5) {
            tx.delete("t", &Key::Int(k))?;
        }
        Ok(())
    })
    .unwrap();
    let mut tx = db.begin();
    tx.insert("t", vec![Value::Int(-5), Value::Int(-5)]).unwrap();
    tx.delete("t", &Key::Int(40)).unwrap();
    tx.update("t", &Key::Int(41), vec![Value::Int(41), Value::Int(-41)])
        .unwrap();
    let t = tx.table("t").unwrap();
    let row = |k: &Key, r: augur::RowRef<'_>| -> (Key, Value) {
        (k.clone(), r.get(1).unwrap().unwrap().to_value())
    };
    for (lo, reverse) in [
        (Bound::Unbounded, false),
        (Bound::Included(Key::Int(30)), false),
        (Bound::Unbounded, true),
    ] {
        let range = KeyRange {
            lo,
            hi: Bound::Unbounded,
        };
        let mut all = Vec::new();
        tx.scan_with(&t, &range, reverse, |k, r| {
            all.push(row(k, r));
            Ok(true)
        })
        .unwrap();
        for limit in [0, 1, 2, 15, 16, 17, 100, 127, 128, 129, 255, 256, 257, 600, 5000] {
            let mut got = Vec::new();
            tx.scan_first(&t, &range, reverse, limit, |k, r| {
                got.push(row(k, r));
                Ok(true)
            })
            .unwrap();
            assert_eq!(
                got,
                all[..limit.min(all.len())],
                "limit {limit}, reverse {reverse}"
            );
            // The caller may still stop earlier.
            let mut early = Vec::new();
            tx.scan_first(&t, &range, reverse, limit, |k, r| {
                early.push(row(k, r));
                Ok(early.len() < 7)
            })
            .unwrap();
            assert_eq!(early, all[..limit.min(7).min(all.len())]);
        }
    }
}

#[test]
fn secondary_indexes_and_unique_constraints() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        db.create_table(
            TableDef::new(
                "u",
                vec![
                    ColumnDef::new("id", DataType::Int8),
                    ColumnDef::new("email", DataType::Text(None)),
                    ColumnDef::new("age", DataType::Int4),
                ],
                &["id"],
            )
            .unwrap(),
        )
        .unwrap();
        db.transaction(|tx| {
            for i in 0..100 {
                tx.insert(
                    "u",
                    vec![Value::Int(i), format!("u{i}@x").into(), Value::Int(i % 10)],
                )?;
            }
            Ok(())
        })
        .unwrap();
        db.create_index(
            "u",
            IndexDef {
                name: "u_email".into(),
                columns: vec![1],
                unique: true,
            },
            false,
        )
        .unwrap();
        db.create_index(
            "u",
            IndexDef {
                name: "u_age".into(),
                columns: vec![2],
                unique: false,
            },
            false,
        )
        .unwrap();
        let e = db
            .insert("u", vec![Value::Int(1000), "u5@x".into(), Value::Int(1)])
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
        // Moving the value away frees it.
        db.transaction(|tx| {
            tx.update(
                "u",
                &Key::Int(5),
                vec![Value::Int(5), "five@x".into(), Value::Int(42)],
            )?;
            tx.insert("u", vec![Value::Int(1000), "u5@x".into(), Value::Int(42)])?;
            Ok(())
        })
        .unwrap();
        // Two concurrent transactions claiming one value: the second commit fails.
        let mut a = db.begin();
        let mut b = db.begin();
        a.insert("u", vec![Value::Int(2000), "same@x".into(), Value::Null])
            .unwrap();
        b.insert("u", vec![Value::Int(2001), "same@x".into(), Value::Null])
            .unwrap();
        a.commit().unwrap();
        assert_eq!(b.commit().unwrap_err().sqlstate(), SqlState::UNIQUE_VIOLATION);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    let t = db.table("u").unwrap();
    let tx = db.begin();
    let enc = |v: i64| augur::types::codec::encode_key_values(&[Value::Int(v)]);
    let (lo, hi) = (enc(42), enc(42));
    let hits = tx
        .index_scan_in(&t, 1, Bound::Included(&lo), Bound::Included(&hi))
        .unwrap();
    let ids: Vec<Key> = hits.into_iter().map(|(k, _)| k).collect();
    assert_eq!(ids, [Key::Int(5), Key::Int(1000)]);
    let (lo, hi) = (enc(3), enc(4));
    assert_eq!(
        tx.index_scan_in(&t, 1, Bound::Included(&lo), Bound::Included(&hi))
            .unwrap()
            .len(),
        20
    );
    assert!(db.drop_index("u_age").unwrap());
    assert!(!db.drop_index("u_age").unwrap());
}

/// What a transaction does to a table with a secondary index, between index reads.
#[derive(Clone, Debug)]
enum IxOp {
    Put(i64, i64),
    Del(i64),
    /// `insert_batch_in` of n fresh keys with this value (the bulk path into the write set).
    Batch(usize, i64),
    Savepoint,
    RollbackTo(usize),
    Release(usize),
    /// An index read of values in [lo, hi], each bound 0 unbounded, 1 included, 2 excluded.
    Read(i64, u8, i64, u8),
}

/// A bound on an encoded index value: 0 unbounded, 1 included, 2 excluded.
fn ix_bound(kind: u8, e: &[u8]) -> Bound<&[u8]> {
    match kind {
        0 => Bound::Unbounded,
        1 => Bound::Included(e),
        _ => Bound::Excluded(e),
    }
}

fn ix_op() -> impl Strategy<Value = IxOp> {
    prop_oneof![
        6 => (0..40i64, 0..8i64).prop_map(|(k, v)| IxOp::Put(k, v)),
        2 => (0..40i64).prop_map(IxOp::Del),
        1 => (1..4usize, 0..8i64).prop_map(|(n, v)| IxOp::Batch(n, v)),
        1 => Just(IxOp::Savepoint),
        1 => (0..4usize).prop_map(IxOp::RollbackTo),
        1 => (0..4usize).prop_map(IxOp::Release),
        4 => (0..8i64, 0..3u8, 0..8i64, 0..3u8).prop_map(|(a, x, b, y)| IxOp::Read(a, x, b, y)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// An index read inside a transaction finds the transaction's own rows by a range lookup in
    /// its pending writes (kept in step by every put, delete, batch and savepoint rollback):
    /// it returns exactly the rows the transaction sees with a value in range, committed or
    /// its own, in (value, key) order.
    #[test]
    fn index_reads_see_the_transactions_own_writes(ops in proptest::collection::vec(ix_op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), opts()).unwrap();
        kv_table(&db, "s");
        db.create_index("s", IndexDef { name: "s_v".into(), columns: vec![1], unique: false }, false).unwrap();
        let mut view: BTreeMap<i64, i64> = (0..20).map(|k| (k, k % 6)).collect();
        db.transaction(|tx| {
            for (&k, &v) in &view {
                tx.insert("s", vec![Value::Int(k), Value::Int(v)])?;
            }
            Ok(())
        })
        .unwrap();
        let t = db.table("s").unwrap();
        let mut tx = db.begin();
        let mut marks: Vec<(augur::Savepoint, BTreeMap<i64, i64>)> = Vec::new();
        let mut fresh = 1000i64;
        let enc = |v: i64| augur::types::codec::encode_key_values(&[Value::Int(v)]);
        for op in ops {
            match op {
                IxOp::Put(k, v) => {
                    tx.upsert("s", vec![Value::Int(k), Value::Int(v)]).unwrap();
                    view.insert(k, v);
                }
                IxOp::Del(k) => {
                    let got = tx.delete("s", &Key::Int(k)).unwrap();
                    prop_assert_eq!(got, view.remove(&k).is_some());
                }
                IxOp::Batch(n, v) => {
                    let keys = fresh..fresh + n as i64;
                    fresh += n as i64;
                    let rows = keys.clone().map(|k| vec![Value::Int(k), Value::Int(v)]).collect();
                    prop_assert_eq!(tx.insert_batch_in(&t, rows).unwrap(), n as u64);
                    view.extend(keys.map(|k| (k, v)));
                }
                IxOp::Savepoint => marks.push((tx.savepoint().unwrap(), view.clone())),
                IxOp::RollbackTo(i) if !marks.is_empty() => {
                    let i = i % marks.len();
                    tx.rollback_to(marks[i].0).unwrap();
                    marks.truncate(i + 1);
                    view = marks[i].1.clone();
                }
                IxOp::Release(i) if !marks.is_empty() => {
                    let i = i % marks.len();
                    tx.release(marks[i].0).unwrap();
                    marks.truncate(i);
                }
                IxOp::Read(a, x, b, y) => {
                    let (ea, eb) = (enc(a), enc(b));
                    let got: Vec<(i64, i64)> = tx
                        .index_scan_in(&t, 0, ix_bound(x, &ea), ix_bound(y, &eb))
                        .unwrap()
                        .into_iter()
                        .map(|(k, r)| match (k, &r[1]) {
                            (Key::Int(k), Value::Int(v)) => (*v, k),
                            other => panic!("unexpected {other:?}"),
                        })
                        .collect();
                    let above = |v: i64| match x { 0 => true, 1 => v >= a, _ => v > a };
                    let below = |v: i64| match y { 0 => true, 1 => v <= b, _ => v < b };
                    let mut want: Vec<(i64, i64)> =
                        view.iter().filter(|&(_, &v)| above(v) && below(v)).map(|(&k, &v)| (v, k)).collect();
                    want.sort();
                    prop_assert_eq!(got, want, "values in {} {} .. {} {}", a, x, b, y);
                }
                _ => {}
            }
        }
    }
}

/// What a transaction does to a plain table, between primary-key scans.
#[derive(Clone, Debug)]
enum ScanOp {
    Put(i64, i64),
    Del(i64),
    /// `insert_batch_in` of n fresh keys with this value (the bulk path into the write set).
    Batch(usize, i64),
    Savepoint,
    RollbackTo(usize),
    Release(usize),
    /// A scan of keys in [lo, hi] (each bound 0 unbounded, 1 included, 2 excluded), in reverse
    /// or not, by `scan_in` (0), `scan_with` (1), `scan_first` of `limit` rows (2), `count_in` (3).
    Scan(i64, u8, i64, u8, bool, u8, usize),
}

fn key_bound(kind: u8, k: i64) -> Bound<Key> {
    match kind {
        0 => Bound::Unbounded,
        1 => Bound::Included(Key::Int(k)),
        _ => Bound::Excluded(Key::Int(k)),
    }
}

fn scan_op() -> impl Strategy<Value = ScanOp> {
    // Bounds among the committed and written keys (0..40), the batches' keys (1000..) and
    // beyond both, so that ranges are empty, inverted or one key excluded at both ends too.
    let key = || prop_oneof![-2..45i64, 995..1012i64];
    prop_oneof![
        6 => (0..40i64, 0..8i64).prop_map(|(k, v)| ScanOp::Put(k, v)),
        2 => (0..40i64).prop_map(ScanOp::Del),
        1 => (1..4usize, 0..8i64).prop_map(|(n, v)| ScanOp::Batch(n, v)),
        1 => Just(ScanOp::Savepoint),
        1 => (0..4usize).prop_map(ScanOp::RollbackTo),
        1 => (0..4usize).prop_map(ScanOp::Release),
        5 => (key(), 0..3u8, key(), 0..3u8, any::<bool>(), 0..4u8, 1..6usize)
            .prop_map(|(a, x, b, y, r, how, n)| ScanOp::Scan(a, x, b, y, r, how, n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// A primary-key scan inside a transaction takes the transaction's own writes in its range
    /// by a range lookup in its pending writes: `scan_in`, `scan_with`, `scan_first` and
    /// `count_in` see exactly the rows the transaction sees in range (committed or its own,
    /// after puts, deletes, batches and savepoint rollbacks), in key order or reversed; an
    /// empty or inverted range sees none.
    #[test]
    fn scans_see_the_transactions_own_writes_exactly(ops in proptest::collection::vec(scan_op(), 1..60)) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), opts()).unwrap();
        kv_table(&db, "p");
        let mut view: BTreeMap<i64, i64> = (0..20).map(|k| (k, k % 6)).collect();
        db.transaction(|tx| {
            for (&k, &v) in &view {
                tx.insert("p", vec![Value::Int(k), Value::Int(v)])?;
            }
            Ok(())
        })
        .unwrap();
        let t = db.table("p").unwrap();
        let mut tx = db.begin();
        let mut marks: Vec<(augur::Savepoint, BTreeMap<i64, i64>)> = Vec::new();
        let mut fresh = 1000i64;
        for op in ops {
            match op {
                ScanOp::Put(k, v) => {
                    tx.upsert("p", vec![Value::Int(k), Value::Int(v)]).unwrap();
                    view.insert(k, v);
                }
                ScanOp::Del(k) => {
                    let got = tx.delete("p", &Key::Int(k)).unwrap();
                    prop_assert_eq!(got, view.remove(&k).is_some());
                }
                ScanOp::Batch(n, v) => {
                    let keys = fresh..fresh + n as i64;
                    fresh += n as i64;
                    let rows = keys.clone().map(|k| vec![Value::Int(k), Value::Int(v)]).collect();
                    prop_assert_eq!(tx.insert_batch_in(&t, rows).unwrap(), n as u64);
                    view.extend(keys.map(|k| (k, v)));
                }
                ScanOp::Savepoint => marks.push((tx.savepoint().unwrap(), view.clone())),
                ScanOp::RollbackTo(i) if !marks.is_empty() => {
                    let i = i % marks.len();
                    tx.rollback_to(marks[i].0).unwrap();
                    marks.truncate(i + 1);
                    view = marks[i].1.clone();
                }
                ScanOp::Release(i) if !marks.is_empty() => {
                    let i = i % marks.len();
                    tx.release(marks[i].0).unwrap();
                    marks.truncate(i);
                }
                ScanOp::Scan(a, x, b, y, reverse, how, limit) => {
                    let range = KeyRange { lo: key_bound(x, a), hi: key_bound(y, b) };
                    let above = |k: i64| match x { 0 => true, 1 => k >= a, _ => k > a };
                    let below = |k: i64| match y { 0 => true, 1 => k <= b, _ => k < b };
                    let mut want: Vec<(i64, i64)> =
                        view.iter().filter(|&(&k, _)| above(k) && below(k)).map(|(&k, &v)| (k, v)).collect();
                    if reverse {
                        want.reverse();
                    }
                    let pair = |k: &Key, v: Option<&Value>| match (k, v) {
                        (Key::Int(k), Some(Value::Int(v))) => (*k, *v),
                        other => panic!("unexpected {other:?}"),
                    };
                    let mut got = Vec::new();
                    match how {
                        0 => tx
                            .scan_in(&t, &range, reverse, |k, r| {
                                got.push(pair(k, r.get(1)));
                                Ok(true)
                            })
                            .unwrap(),
                        1 => tx
                            .scan_with(&t, &range, reverse, |k, r| {
                                got.push(pair(k, r.get(1)?.map(|v| v.to_value()).as_ref()));
                                Ok(true)
                            })
                            .unwrap(),
                        2 => {
                            want.truncate(limit);
                            tx.scan_first(&t, &range, reverse, limit, |k, r| {
                                got.push(pair(k, r.get(1)?.map(|v| v.to_value()).as_ref()));
                                Ok(true)
                            })
                            .unwrap()
                        }
                        _ => {
                            let n = tx.count_in(&t, &range, || Ok(())).unwrap();
                            prop_assert_eq!(n, want.len() as u64, "count in {} {} .. {} {}", a, x, b, y);
                            continue;
                        }
                    }
                    prop_assert_eq!(got, want, "scan {} of {} {} .. {} {} reverse {}", how, a, x, b, y, reverse);
                }
                _ => {}
            }
        }
    }
}

#[test]
fn ddl_truncate_drop_and_add_primary_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    db.create_table(
        TableDef::new(
            "h",
            vec![
                ColumnDef::new("a", DataType::Int4),
                ColumnDef::new("b", DataType::Int4),
            ],
            &[],
        )
        .unwrap(),
    )
    .unwrap();
    db.transaction(|tx| {
        for i in 0..50 {
            tx.insert("h", vec![Value::Int(i), Value::Int(i * 2)])?;
        }
        Ok(())
    })
    .unwrap();
    db.rebuild_table("h", |d| {
        let mut d = d.clone();
        d.primary_key = vec![0];
        Ok(d)
    })
    .unwrap();
    assert_eq!(val(&db, "h", 7), Some(14));
    assert_eq!(
        db.insert("h", vec![Value::Int(7), Value::Int(0)])
            .unwrap_err()
            .sqlstate(),
        SqlState::UNIQUE_VIOLATION
    );
    // Adding a primary key over duplicates fails and changes nothing.
    db.insert("h", vec![Value::Int(100), Value::Int(2)]).unwrap();
    let e = db
        .rebuild_table("h", |d| {
            let mut d = d.clone();
            d.primary_key = vec![1];
            Ok(d)
        })
        .unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
    assert_eq!(val(&db, "h", 7), Some(14));
    db.truncate("h").unwrap();
    assert_eq!(db.begin().scan("h", KeyRange::all()).unwrap().len(), 0);
    assert!(db.drop_table("h", false).unwrap());
    assert_eq!(
        db.get("h", &Key::Int(1)).unwrap_err().sqlstate(),
        SqlState::UNDEFINED_TABLE
    );
    assert!(!db.drop_table("h", true).unwrap());
    kv_table(&db, "h");
    assert_eq!(
        db.create_table(TableDef::new("h", vec![ColumnDef::new("x", DataType::Int4)], &[]).unwrap())
            .err()
            .unwrap()
            .sqlstate(),
        SqlState::DUPLICATE_TABLE
    );
    db.close().unwrap();
    drop(db);
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_eq!(db.tables().len(), 1);
    assert_eq!(db.verify_integrity().unwrap(), 0);
}

#[test]
fn checkpoint_plus_replay_equals_rows_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        checkpoint_every: u64::MAX,
        ..opts()
    };
    {
        let db = Database::open(dir.path(), o.clone()).unwrap();
        kv_table(&db, "t");
        db.transaction(|tx| {
            for k in 0..5000 {
                tx.insert("t", vec![Value::Int(k * 13 % 5000), Value::Int(k)])?;
            }
            Ok(())
        })
        .unwrap();
        db.checkpoint().unwrap();
        // After the checkpoint: deletes, updates and re-inserts that replay must apply.
        db.transaction(|tx| {
            for k in 0..1000 {
                tx.delete("t", &Key::Int(k))?;
            }
            for k in 1000..1500 {
                tx.update("t", &Key::Int(k), vec![Value::Int(k), Value::Int(-k)])?;
            }
            Ok(())
        })
        .unwrap();
        db.transaction(|tx| {
            for k in 0..10 {
                tx.insert("t", vec![Value::Int(k), Value::Int(7)])?;
            }
            Ok(())
        })
        .unwrap();
        // Let GC drop the deleted keys from the index (tombstone rows stay until a checkpoint).
        std::thread::sleep(Duration::from_millis(50));
        db.collect_garbage().unwrap();
        // Reopen without a clean close (no final checkpoint, no clean-shutdown marker).
        db.abandon();
    }
    let db = Database::open(dir.path(), o).unwrap();
    assert!(db.stats().recovered_unclean);
    assert_eq!(db.verify_integrity().unwrap(), 4010);
    assert_eq!(val(&db, "t", 5), Some(7));
    assert_eq!(val(&db, "t", 500), None);
    assert_eq!(val(&db, "t", 1200), Some(-1200));
}

#[derive(Debug, Clone)]
enum Op {
    Begin,
    Put(usize, i64, i64),
    Del(usize, i64),
    Get(usize, i64),
    Scan(usize),
    Commit(usize),
    Rollback(usize),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Begin),
        6 => (0..4usize, 0..24i64, any::<i64>()).prop_map(|(t, k, v)| Op::Put(t, k, v)),
        2 => (0..4usize, 0..24i64).prop_map(|(t, k)| Op::Del(t, k)),
        3 => (0..4usize, 0..24i64).prop_map(|(t, k)| Op::Get(t, k)),
        1 => (0..4usize).prop_map(Op::Scan),
        3 => (0..4usize).prop_map(Op::Commit),
        1 => (0..4usize).prop_map(Op::Rollback),
        1 => Just(Op::Reopen),
    ]
}

/// The model of snapshot isolation: committed state with a commit counter per key.
struct ModelTx {
    snap: BTreeMap<i64, i64>,
    snap_version: u64,
    writes: BTreeMap<i64, Option<i64>>,
    /// Keys whose row lock this transaction holds.
    locked: std::collections::BTreeSet<i64>,
}

/// What the model expects of a write to `k` by transaction `i`: it takes the row lock (55P03 at
/// once if another open transaction holds it: the test runs them on one thread with a zero lock
/// timeout), then fails with 40001 if `k` was committed after `i`'s snapshot.
fn model_lock(
    open: &mut [(augur::Transaction, ModelTx)],
    i: usize,
    k: i64,
    last_write: &BTreeMap<i64, u64>,
) -> Result<(), SqlState> {
    if open
        .iter()
        .enumerate()
        .any(|(j, (_, m))| j != i && m.locked.contains(&k))
    {
        return Err(SqlState::LOCK_NOT_AVAILABLE);
    }
    let m = &mut open[i].1;
    if !m.locked.insert(k) {
        return Ok(());
    }
    if last_write.get(&k).is_some_and(|&v| v > m.snap_version) {
        return Err(SqlState::SERIALIZATION_FAILURE);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// Interleaved transactions against a model of snapshot isolation with row locks (first
    /// updater wins; a locked row refuses other writers at once with a zero lock timeout).
    #[test]
    fn interleaved_transactions_match_the_model(ops in proptest::collection::vec(op(), 1..80)) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Database::open(dir.path(), opts()).unwrap();
        kv_table(&db, "t");
        let mut committed: BTreeMap<i64, i64> = BTreeMap::new();
        let mut last_write: BTreeMap<i64, u64> = BTreeMap::new();
        let mut version = 0u64;
        let mut open: Vec<(augur::Transaction, ModelTx)> = Vec::new();
        for op in ops {
            match op {
                Op::Begin if open.len() < 4 => {
                    let mut tx = db.begin();
                    tx.set_lock_timeout(Some(Duration::ZERO));
                    open.push((tx, ModelTx { snap: committed.clone(), snap_version: version, writes: BTreeMap::new(), locked: Default::default() }));
                }
                Op::Put(i, k, v) if i < open.len() => {
                    let want = model_lock(&mut open, i, k, &last_write);
                    let (tx, m) = &mut open[i];
                    let got = tx.upsert("t", vec![Value::Int(k), Value::Int(v)]).map(|_| ()).map_err(|e| e.sqlstate());
                    prop_assert_eq!(got, want);
                    if want.is_ok() {
                        m.writes.insert(k, Some(v));
                    }
                }
                Op::Del(i, k) if i < open.len() => {
                    let model_has = {
                        let m = &open[i].1;
                        match m.writes.get(&k) { Some(w) => w.is_some(), None => m.snap.contains_key(&k) }
                    };
                    // A row this transaction does not see is not locked.
                    let want = if model_has { model_lock(&mut open, i, k, &last_write).map(|_| true) } else { Ok(false) };
                    let (tx, m) = &mut open[i];
                    let got = tx.delete("t", &Key::Int(k)).map_err(|e| e.sqlstate());
                    prop_assert_eq!(got, want);
                    if want == Ok(true) { m.writes.insert(k, None); }
                }
                Op::Get(i, k) if i < open.len() => {
                    let (tx, m) = &open[i];
                    let got = tx.get("t", &Key::Int(k)).unwrap().map(|r| r[1].clone());
                    let want = match m.writes.get(&k) { Some(w) => *w, None => m.snap.get(&k).copied() };
                    prop_assert_eq!(got, want.map(Value::Int));
                }
                Op::Scan(i) if i < open.len() => {
                    let (tx, m) = &open[i];
                    let got: Vec<(i64, i64)> = tx.scan("t", KeyRange::all()).unwrap().into_iter()
                        .map(|(k, r)| (match k { Key::Int(k) => k, _ => unreachable!() }, match r[1] { Value::Int(v) => v, _ => unreachable!() }))
                        .collect();
                    let mut want = m.snap.clone();
                    for (k, w) in &m.writes { match w { Some(v) => { want.insert(*k, *v); } None => { want.remove(k); } } }
                    prop_assert_eq!(got, want.into_iter().collect::<Vec<_>>());
                }
                Op::Commit(i) if i < open.len() => {
                    // With row locks every conflict was refused at write time: commits succeed.
                    let (tx, m) = open.remove(i);
                    tx.commit().unwrap();
                    if !m.writes.is_empty() {
                        version += 1;
                        for (k, w) in m.writes {
                            last_write.insert(k, version);
                            match w { Some(v) => { committed.insert(k, v); } None => { committed.remove(&k); } }
                        }
                    }
                }
                Op::Rollback(i) if i < open.len() => {
                    let (tx, _) = open.remove(i);
                    tx.rollback();
                }
                Op::Reopen if open.is_empty() => {
                    db.close().unwrap();
                    drop(db);
                    db = Database::open(dir.path(), opts()).unwrap();
                    prop_assert_eq!(db.verify_integrity().unwrap(), committed.len());
                }
                _ => {}
            }
        }
        drop(open);
        let got: Vec<(i64, i64)> = db.begin().scan("t", KeyRange::all()).unwrap().into_iter()
            .map(|(k, r)| (match k { Key::Int(k) => k, _ => unreachable!() }, match r[1] { Value::Int(v) => v, _ => unreachable!() }))
            .collect();
        prop_assert_eq!(got, committed.clone().into_iter().collect::<Vec<_>>());
        prop_assert_eq!(db.verify_integrity().unwrap(), committed.len());
    }
}

#[test]
fn bulk_insert_is_atomic_and_checks_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        kv_table(&db, "t");
        let rows: Vec<_> = (0..60_000)
            .rev()
            .map(|k| vec![Value::Int(k * 3), Value::Int(k)])
            .collect();
        assert_eq!(db.bulk_insert("t", rows).unwrap(), 60_000);
        assert_eq!(val(&db, "t", 300), Some(100));
        // A duplicate inside the batch, or against the table, fails the whole call.
        let e = db.bulk_insert(
            "t",
            vec![
                vec![Value::Int(1), Value::Int(0)],
                vec![Value::Int(1), Value::Int(0)],
            ],
        );
        assert_eq!(e.unwrap_err().sqlstate(), SqlState::UNIQUE_VIOLATION);
        let e = db.bulk_insert(
            "t",
            vec![
                vec![Value::Int(2), Value::Int(0)],
                vec![Value::Int(300), Value::Int(0)],
            ],
        );
        assert_eq!(e.unwrap_err().sqlstate(), SqlState::UNIQUE_VIOLATION);
        assert_eq!(
            val(&db, "t", 2),
            None,
            "nothing of a failed bulk insert is visible"
        );
        // Into a non-empty table, over a deleted key.
        db.transaction(|tx| tx.delete("t", &Key::Int(0)).map(|_| ()))
            .unwrap();
        db.bulk_insert(
            "t",
            vec![
                vec![Value::Int(0), Value::Int(-5)],
                vec![Value::Int(1), Value::Int(-6)],
            ],
        )
        .unwrap();
        assert_eq!(val(&db, "t", 0), Some(-5));
        assert_eq!(db.verify_integrity().unwrap(), 60_001);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_eq!(db.verify_integrity().unwrap(), 60_001);
    assert_eq!(val(&db, "t", 1), Some(-6));
    let rows = db.begin().scan("t", KeyRange::all()).unwrap();
    assert_eq!(rows.len(), 60_001);
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0));
}

/// Waits for the warm-up after open (fails the test after 60 s).
fn wait_prewarm(db: &Database) -> augur::Stats {
    let t0 = std::time::Instant::now();
    loop {
        let s = db.stats();
        if s.prewarm_done {
            return s;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "warm-up did not finish");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Writes 2,000 keys into each of two tables in small transactions, then newer versions of
/// some keys and deletes of others.
fn two_tables_with_history(db: &Database) {
    kv_table(db, "a");
    kv_table(db, "b");
    for chunk in 0..4 {
        db.transaction(|tx| {
            for k in chunk * 500..(chunk + 1) * 500 {
                tx.insert("a", vec![Value::Int(k), Value::Int(k)])?;
                tx.insert("b", vec![Value::Int(-k), Value::Int(k)])?;
            }
            Ok(())
        })
        .unwrap();
    }
    db.transaction(|tx| {
        for k in 0..100 {
            tx.update("a", &Key::Int(k), vec![Value::Int(k), Value::Int(k + 10_000)])?;
            tx.delete("b", &Key::Int(-k))?;
        }
        Ok(())
    })
    .unwrap();
}

fn check_two_tables(db: &Database) {
    for k in 0..2000 {
        let want_a = if k < 100 { k + 10_000 } else { k };
        assert_eq!(val(db, "a", k), Some(want_a));
        assert_eq!(val(db, "b", -k), if k < 100 { None } else { Some(k) });
    }
}

#[test]
fn after_reopen_every_read_is_served_without_rocksdb() {
    // After a clean close and after a crash (RocksDB replays its log into files at open), every
    // row is in a mapped file once the warm-up is done: reads go neither to RocksDB nor to the
    // row cache, and answers are right (newest versions, deleted keys absent).
    for clean in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), opts()).unwrap();
        two_tables_with_history(&db);
        if clean {
            db.close().unwrap();
            drop(db);
        } else {
            db.abandon();
        }
        let db = Database::open(dir.path(), opts()).unwrap();
        let s0 = wait_prewarm(&db);
        assert!(s0.direct.files > 0, "{:?}", s0.direct);
        check_two_tables(&db);
        let s1 = db.stats();
        assert_eq!(
            s1.store_reads, s0.store_reads,
            "a read after the warm-up went to RocksDB (clean={clean})"
        );
        assert!(s1.direct_reads >= s0.direct_reads + 3900, "clean={clean}");
        db.close().unwrap();
    }
}

#[test]
fn rows_in_the_memtable_are_read_from_the_row_cache_and_loads_from_the_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    // Small commits sit in RocksDB's memtable, which no mapped file covers: the commit put
    // them in the row cache, so their reads are hits.
    two_tables_with_history(&db);
    let s0 = db.stats();
    check_two_tables(&db);
    let s1 = db.stats();
    assert_eq!(
        s1.store_reads, s0.store_reads,
        "a recent row was read through RocksDB"
    );
    assert!(s1.cache_hits >= s0.cache_hits + 3900);
    // A large transaction is ingested as a file and mapped before commit returns: its reads
    // come from the mapping, and it leaves the row cache as it was.
    kv_table(&db, "big");
    let n = augur::engine::BULK_COMMIT_ROWS as i64 + 1000; // takes the ingest path
    db.transaction(|tx| {
        for k in 0..n {
            tx.insert("big", vec![Value::Int(k), Value::Int(-k)])?;
        }
        Ok(())
    })
    .unwrap();
    let s2 = db.stats();
    assert!(
        s2.row_cache_bytes <= s1.row_cache_bytes,
        "the load was not written to the row cache ({} -> {} bytes)",
        s1.row_cache_bytes,
        s2.row_cache_bytes
    );
    for k in (0..n).step_by(97) {
        assert_eq!(val(&db, "big", k), Some(-k));
    }
    let s3 = db.stats();
    assert_eq!(
        s3.store_reads, s2.store_reads,
        "a read after the load went to RocksDB"
    );
    assert!(s3.direct_reads > s2.direct_reads + (n as u64 / 97) - 2);
    db.close().unwrap();
}

#[test]
fn borrowed_reads_match_owned_reads_with_own_writes_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    db.transaction(|tx| {
        for k in 0..300 {
            tx.insert("t", vec![Value::Int(k), Value::Int(k)])?;
        }
        Ok(())
    })
    .unwrap();
    let t = db.table("t").unwrap();
    let reader = db.begin(); // sees 0..300 as first written
    db.transaction(|tx| {
        for k in (0..300).step_by(3) {
            tx.update("t", &Key::Int(k), vec![Value::Int(k), Value::Int(k * 10)])?;
        }
        for k in (1..300).step_by(7) {
            tx.delete("t", &Key::Int(k))?;
        }
        Ok(())
    })
    .unwrap();
    let mut tx = db.begin();
    tx.insert("t", vec![Value::Int(1000), Value::Int(7)]).unwrap();
    tx.update("t", &Key::Int(2), vec![Value::Int(2), Value::Int(-2)])
        .unwrap();
    tx.delete("t", &Key::Int(5)).unwrap();
    let all = KeyRange {
        lo: Bound::Unbounded,
        hi: Bound::Unbounded,
    };
    for (name, x) in [("reader", &reader), ("writer", &tx)] {
        for reverse in [false, true] {
            let mut owned = Vec::new();
            x.scan_in(&t, &all, reverse, |k, r| {
                owned.push((k.clone(), (**r).clone()));
                Ok(true)
            })
            .unwrap();
            let mut lent = Vec::new();
            x.scan_with(&t, &all, reverse, |k, r| {
                lent.push((k.clone(), r.to_row()?));
                Ok(true)
            })
            .unwrap();
            assert_eq!(owned, lent, "{name} reverse={reverse}");
            assert!(owned.len() > 200, "{name}: {}", owned.len());
        }
        for k in [0, 1, 2, 3, 5, 8, 299, 1000, 5000] {
            let owned = x.get_in(&t, &Key::Int(k)).unwrap().map(|r| (*r).clone());
            let lent = x
                .get_with(&t, &Key::Int(k), |r| r.to_row())
                .unwrap()
                .transpose()
                .unwrap();
            assert_eq!(owned, lent, "{name} key {k}");
        }
    }
    // The snapshot matters: the reader sees the old value, the writer its own.
    let v = |x: &augur::Transaction, k: i64| {
        x.get_with(&t, &Key::Int(k), |r| r.get(1).unwrap().map(|v| v.to_value()))
            .unwrap()
            .flatten()
    };
    assert_eq!(v(&reader, 3), Some(Value::Int(3)));
    assert_eq!(v(&tx, 3), Some(Value::Int(30)));
    assert_eq!(v(&tx, 2), Some(Value::Int(-2)));
    assert_eq!(v(&tx, 5), None);
    assert_eq!(v(&reader, 8), Some(Value::Int(8)));
    assert_eq!(v(&tx, 8), None);
}

#[test]
fn a_large_load_is_mapped_populated_and_leaves_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let ingest_names = |d: &std::path::Path| -> usize {
        std::fs::read_dir(d.join("ingest")).map_or(0, |r| r.flatten().count())
    };
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        kv_table(&db, "t");
        db.bulk_insert("t", (0..20_000).map(|k| vec![Value::Int(k), Value::Int(-k)]))
            .unwrap();
        // The loaded file is mapped at once; the maintenance thread then brings all of it into
        // the page tables (reading it back from the disk: the SST writer dropped it from the
        // page cache).
        let s = db.stats();
        assert!(
            s.direct.files >= 1 && s.direct.mapped_bytes > 20_000 * 10,
            "{:?}",
            s.direct
        );
        let t0 = std::time::Instant::now();
        while db.stats().direct.unpopulated_bytes > 0 {
            assert!(t0.elapsed() < Duration::from_secs(60), "populate did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(ingest_names(dir.path()), 0);
        let before = db.stats().direct_reads;
        assert_eq!(val(&db, "t", 19_999), Some(-19_999));
        assert_eq!(
            db.stats().direct_reads,
            before + 1,
            "the row was read from the mapping"
        );
        db.close().unwrap();
    }
    // A name left behind by a crash (a file being written) is removed at open, and the data is
    // intact.
    std::fs::create_dir_all(dir.path().join("ingest")).unwrap();
    std::fs::write(dir.path().join("ingest").join("bulk-1-2.sst"), b"partial").unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_eq!(ingest_names(dir.path()), 0);
    for k in [0, 7_777, 19_999] {
        assert_eq!(val(&db, "t", k), Some(-k));
    }
}

/// One memory budget: the indexes are charged first, the caches get what is left, and the
/// report names every part.
#[test]
fn a_memory_budget_charges_the_indexes_and_gives_the_caches_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 48usize << 20;
    let db = Database::open(dir.path(), opts().with_memory_budget(budget)).unwrap();
    kv_table(&db, "t");
    let idx = TableDef::new(
        "s",
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Int8),
        ],
        &["k"],
    )
    .unwrap();
    db.create_table(idx).unwrap();
    db.create_index(
        "s",
        IndexDef {
            name: "s_v".into(),
            columns: vec![1],
            unique: false,
        },
        false,
    )
    .unwrap();
    db.transaction(|tx| {
        for k in 0..5_000 {
            tx.insert("s", vec![Value::Int(k), Value::Int(k % 7)])?;
        }
        Ok(())
    })
    .unwrap();
    // The load fits the caches to what the indexes leave (as a maintenance round does every
    // few seconds).
    db.bulk_insert("t", (0..300_000).map(|k| vec![Value::Int(k * 3), Value::Int(k)]))
        .unwrap();
    let m = db.memory();
    assert_eq!(m.budget, Some(budget as u64));
    assert!(
        m.primary_index_heap + m.primary_index_mapped > 300_000 * 8,
        "{m:?}"
    );
    assert!(m.secondary_indexes >= 5_000 * 8, "{m:?}");
    assert!(m.row_cache > 0 && m.block_cache > 0, "{m:?}");
    let parts = m.primary_index_heap
        + m.primary_index_mapped
        + m.secondary_indexes
        + m.direct_models
        + m.rocksdb_table_readers
        + m.block_cache
        + m.row_cache;
    assert_eq!(m.charged, parts);
    assert!(
        m.charged <= budget as u64,
        "charged {} > budget {budget}: {m:?}",
        m.charged
    );

    // A budget the indexes alone exceed: the caches shrink to (almost) nothing and the report
    // says so rather than pretending the budget holds.
    db.close().unwrap();
    drop(db);
    let db = Database::open(dir.path(), opts().with_memory_budget(1 << 20)).unwrap();
    let m = db.memory();
    assert_eq!(m.row_cache, 0, "{m:?}");
    assert!(m.charged > 1 << 20, "{m:?}");
}
