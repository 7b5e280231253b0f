//! The engine seam's contract (`augur::seam`): snapshots, row locks, errors, scans, savepoints
//! and table incarnations, checked through the traits alone so that any engine can be held to
//! it. Each check runs on the local engine itself and on the same engine behind `AnyEngine`,
//! the type `sql/` and `server/` hold.

use std::ops::Bound;
use std::time::{Duration, Instant};

use augur::seam::{AnyEngine, Engine, EngineTable, EngineTxn, Interrupt, Isolation, KeyRange, Locked};
use augur::{ColumnDef, DataType, Database, Key, Options, Result, TableDef, Value};

/// Runs `$check` on a fresh local engine, then on a fresh one behind `AnyEngine`.
macro_rules! on_each_engine {
    ($check:ident) => {{
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), Options::default()).unwrap();
        $check(&db);
        drop(db);
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), Options::default()).unwrap();
        $check(&AnyEngine::from(db));
    }};
}

fn kv<E: Engine>(e: &E) -> E::Table {
    let def = TableDef::new(
        "kv",
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Text(None)),
        ],
        &["k"],
    )
    .unwrap();
    e.create_table(def).unwrap()
}

fn row(k: i64, v: &str) -> Vec<Value> {
    vec![Value::Int(k), Value::from(v)]
}

/// The value column of row `k`, as `tx` sees it.
fn value<T: EngineTxn>(tx: &T, t: &T::Table, k: i64) -> Option<Value> {
    tx.get_in(t, &Key::Int(k)).unwrap().map(|r| r[1].clone())
}

/// "ok", or the error's SQLSTATE.
fn code<T>(r: Result<T>) -> String {
    match r {
        Ok(_) => "ok".to_string(),
        Err(e) => e.sqlstate().code().to_string(),
    }
}

fn put<E: Engine>(e: &E, t: &E::Table, k: i64, v: &str) {
    let mut w = e.begin();
    w.insert_in(t, row(k, v)).unwrap();
    w.commit().unwrap();
}

fn snapshots<E: Engine>(e: &E) {
    let t = kv(e);
    let mut w = e.begin();
    w.insert_in(&t, row(1, "a")).unwrap();
    assert_eq!(
        value(&w, &t, 1),
        Some(Value::from("a")),
        "a transaction reads its own writes"
    );
    let mut si = e.begin();
    assert_eq!(si.isolation(), Isolation::Snapshot, "begin's default");
    let mut rc = e.begin();
    rc.set_isolation(Isolation::ReadCommitted);
    rc.begin_statement();
    assert_eq!(value(&si, &t, 1), None, "uncommitted writes are invisible");
    w.commit().unwrap();
    assert_eq!(value(&si, &t, 1), None, "a snapshot does not move");
    assert_eq!(value(&rc, &t, 1), None, "nor does a read-committed statement's");
    rc.begin_statement();
    assert_eq!(
        value(&rc, &t, 1),
        Some(Value::from("a")),
        "the next statement sees the commit"
    );
    si.begin_statement();
    assert_eq!(
        value(&si, &t, 1),
        None,
        "snapshot isolation: one snapshot per transaction"
    );
    assert_eq!(value(&e.begin(), &t, 1), Some(Value::from("a")));
}

fn write_conflicts<E: Engine>(e: &E) {
    let t = kv(e);
    put(e, &t, 1, "a");
    let mut si = e.begin();
    let mut rc = e.begin();
    rc.set_isolation(Isolation::ReadCommitted);
    rc.begin_statement();
    let mut w = e.begin();
    assert!(w.update_in(&t, &Key::Int(1), row(1, "b")).unwrap());
    w.commit().unwrap();
    assert_eq!(
        code(si.update_in(&t, &Key::Int(1), row(1, "c"))),
        "40001",
        "first updater wins under snapshot isolation"
    );
    si.rollback();
    match rc.lock_row_by(&t, &Key::Int(1), &Interrupt::default()).unwrap() {
        Locked::Changed(Some(r)) => assert_eq!(r[1], Value::from("b")),
        other => panic!("read committed locks the newest version, got {other:?}"),
    }
    rc.rollback();
    assert_eq!(value(&e.begin(), &t, 1), Some(Value::from("b")));
}

fn lock_waits<E: Engine>(e: &E) {
    let t = kv(e);
    put(e, &t, 1, "a");
    let mut holder = e.begin();
    assert!(holder.update_in(&t, &Key::Int(1), row(1, "b")).unwrap());
    let mut waiter = e.begin();
    waiter.set_lock_timeout(Some(Duration::from_millis(50)));
    assert_eq!(
        code(waiter.update_in(&t, &Key::Int(1), row(1, "c"))),
        "55P03",
        "lock_timeout"
    );
    let mut stopped = e.begin();
    stopped.set_interrupt(Interrupt::deadline(Some(
        Instant::now() + Duration::from_millis(50),
    )));
    assert_eq!(
        code(stopped.delete_in(&t, &Key::Int(1))),
        "57014",
        "the statement's interrupt"
    );
    holder.rollback();
    let mut next = e.begin();
    next.set_lock_timeout(Some(Duration::from_millis(50)));
    assert!(
        next.update_in(&t, &Key::Int(1), row(1, "d")).unwrap(),
        "a rollback releases the lock"
    );
    next.commit().unwrap();
    assert_eq!(value(&e.begin(), &t, 1), Some(Value::from("d")));
}

fn errors_leave_data<E: Engine>(e: &E) {
    let t = kv(e);
    assert_eq!(code(e.table("nope")), "42P01");
    put(e, &t, 1, "a");
    let mut w = e.begin();
    assert!(!w.has_writes());
    w.insert_in(&t, row(2, "b")).unwrap();
    assert_eq!(code(w.insert_in(&t, row(1, "dup"))), "23505");
    assert_eq!(
        code(w.insert_in(&t, vec![Value::Null, Value::from("x")])),
        "23502"
    );
    assert!(w.has_writes());
    w.rollback();
    let r = e.begin();
    assert_eq!(value(&r, &t, 1), Some(Value::from("a")));
    assert_eq!(
        value(&r, &t, 2),
        None,
        "a rolled-back transaction leaves no trace"
    );
}

fn scans_and_savepoints<E: Engine>(e: &E) {
    let t = kv(e);
    let mut w = e.begin();
    for k in [3, 1, 2] {
        w.insert_in(&t, row(k, "x")).unwrap();
    }
    let sp = w.savepoint().unwrap();
    w.insert_in(&t, row(4, "x")).unwrap();
    assert!(w.delete_in(&t, &Key::Int(1)).unwrap());
    w.rollback_to(sp).unwrap();
    w.release(sp).unwrap();
    w.commit().unwrap();
    let r = e.begin();
    let keys = |reverse: bool| {
        let mut v = Vec::new();
        r.scan_with(&t, &KeyRange::all(), reverse, |k, _| {
            v.push(k.clone());
            Ok(true)
        })
        .unwrap();
        v
    };
    assert_eq!(
        keys(false),
        [Key::Int(1), Key::Int(2), Key::Int(3)],
        "savepoint undone exactly"
    );
    assert_eq!(keys(true), [Key::Int(3), Key::Int(2), Key::Int(1)]);
    assert_eq!(r.count_in(&t, &KeyRange::all(), || Ok(())).unwrap(), 3);
    let above_one = KeyRange {
        lo: Bound::Excluded(Key::Int(1)),
        hi: Bound::Unbounded,
    };
    assert_eq!(r.count_in(&t, &above_one, || Ok(())).unwrap(), 2);
    let mut first = Vec::new();
    r.scan_with(&t, &KeyRange::all(), false, |k, _| {
        first.push(k.clone());
        Ok(false)
    })
    .unwrap();
    assert_eq!(first, [Key::Int(1)], "a scan stops when told");
    for (reverse, limit, want) in [
        (false, 2, vec![Key::Int(1), Key::Int(2)]),
        (true, 2, vec![Key::Int(3), Key::Int(2)]),
        (false, 9, vec![Key::Int(1), Key::Int(2), Key::Int(3)]),
        (false, 0, vec![]),
    ] {
        let mut got = Vec::new();
        r.scan_first(&t, &KeyRange::all(), reverse, limit, |k, _| {
            got.push(k.clone());
            Ok(true)
        })
        .unwrap();
        assert_eq!(
            got, want,
            "scan_first(reverse {reverse}, limit {limit}) is scan_with's first rows"
        );
    }
    assert_eq!(r.get_with(&t, &Key::Int(2), |_| 7).unwrap(), Some(7));
    assert_eq!(r.get_with(&t, &Key::Int(9), |_| 7).unwrap(), None);
}

fn table_incarnations<E: Engine>(e: &E) {
    let t = kv(e);
    put(e, &t, 1, "a");
    assert!(!t.is_dropped());
    e.truncate("kv").unwrap();
    assert!(t.is_dropped(), "TRUNCATE makes a new incarnation");
    assert_eq!(
        code(e.begin().get_in(&t, &Key::Int(1))),
        "40001",
        "a read through the old one"
    );
    let mut w = e.begin();
    let wrote = match w.insert_in(&t, row(2, "b")) {
        Ok(_) => w.commit(),
        Err(err) => Err(err),
    };
    assert_ne!(
        code(wrote),
        "ok",
        "a write through the old one fails by its commit"
    );
    let now = e.table("kv").unwrap();
    assert_eq!(value(&e.begin(), &now, 1), None);
    assert_eq!(e.tables().iter().map(|t| t.name()).collect::<Vec<_>>(), ["kv"]);
    assert!(e.drop_table("kv", false).unwrap());
    assert!(now.is_dropped());
    assert_eq!(code(e.table("kv")), "42P01");
    assert!(!e.drop_table("kv", true).unwrap());
}

#[test]
fn snapshots_and_read_your_writes() {
    on_each_engine!(snapshots);
}

#[test]
fn first_updater_wins_and_read_committed_gets_the_newest() {
    on_each_engine!(write_conflicts);
}

#[test]
fn lock_waits_end_at_the_lock_timeout_or_the_interrupt() {
    on_each_engine!(lock_waits);
}

#[test]
fn errors_carry_sqlstates_and_leave_data_intact() {
    on_each_engine!(errors_leave_data);
}

#[test]
fn scans_counts_and_savepoints() {
    on_each_engine!(scans_and_savepoints);
}

#[test]
fn truncate_and_drop_replace_table_handles() {
    on_each_engine!(table_incarnations);
}
