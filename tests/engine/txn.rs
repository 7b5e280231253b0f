//! Transactions: reads and writes, rollback, savepoints, row locks and isolation, against a
//! model of snapshot isolation.

use std::collections::BTreeMap;
use std::time::Duration;

use augur::{Database, Isolation, Key, KeyRange, Locked, SqlState, Value};
use proptest::prelude::*;

use super::{kv_table, opts, val};

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

/// `Database::get_with`, the read outside a transaction: the newest committed row, never a
/// pending write of an open transaction, while an older snapshot still reads its own versions
/// (the autocommit read's snapshot registers and ends without disturbing them), through
/// commits, deletes, garbage collection and a checkpoint; and a clear error for a dropped table.
#[test]
fn autocommit_reads_see_the_newest_committed_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv_table(&db, "t");
    let t = db.table("t").unwrap();
    let read = |k: i64| {
        db.get_with(&t, &Key::Int(k), |row| match row.get(1) {
            Ok(Some(augur::ValueRef::Int(v))) => v,
            other => panic!("unexpected {other:?}"),
        })
        .unwrap()
    };
    let mut model: BTreeMap<i64, i64> = BTreeMap::new();
    db.transaction(|tx| {
        for k in 0..300 {
            tx.insert("t", vec![Value::Int(k), Value::Int(k)])?;
            model.insert(k, k);
        }
        Ok(())
    })
    .unwrap();
    let old = db.begin();
    let old_model = model.clone();
    let mut pending = db.begin();
    pending
        .update("t", &Key::Int(5), vec![Value::Int(5), Value::Int(-5)])
        .unwrap();
    pending
        .insert("t", vec![Value::Int(1000), Value::Int(1)])
        .unwrap();
    for round in 0..6i64 {
        db.transaction(|tx| {
            for k in (round..300).step_by(7) {
                if k == 5 {
                    continue; // locked by `pending`
                }
                if (k + round) % 3 == 0 {
                    tx.delete("t", &Key::Int(k))?;
                    model.remove(&k);
                } else if let Some(v) = model.get_mut(&k) {
                    tx.update("t", &Key::Int(k), vec![Value::Int(k), Value::Int(k * 10 + round)])?;
                    *v = k * 10 + round;
                } else {
                    tx.insert("t", vec![Value::Int(k), Value::Int(round)])?;
                    model.insert(k, round);
                }
            }
            Ok(())
        })
        .unwrap();
        db.collect_garbage().unwrap();
        if round == 3 {
            db.checkpoint().unwrap();
        }
        for k in -1..=300 {
            assert_eq!(read(k), model.get(&k).copied(), "key {k}, round {round}");
        }
        assert_eq!(read(1000), None, "a pending insert is not read");
        for k in 0..300 {
            let seen = old.get("t", &Key::Int(k)).unwrap().map(|r| r[1].clone());
            assert_eq!(
                seen,
                old_model.get(&k).map(|&v| Value::Int(v)),
                "old snapshot, key {k}"
            );
        }
    }
    pending.commit().unwrap();
    assert_eq!(read(5), Some(-5));
    assert_eq!(read(1000), Some(1));
    drop(old);
    db.drop_table("t", false).unwrap();
    let e = db.get_with(&t, &Key::Int(1), |_| ()).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::UNDEFINED_TABLE);
}
