//! Key-range scans, secondary indexes and unique constraints, each merging the transaction's
//! own writes.

use std::collections::BTreeMap;
use std::ops::Bound;

use augur::{ColumnDef, DataType, Database, IndexDef, Key, KeyRange, SqlState, TableDef, Value};
use proptest::prelude::*;

use super::{kv_table, opts};

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
