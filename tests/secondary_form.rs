//! Opening secondary indexes from their persisted form (`docs/ARCHITECTURE.md`, "Recovery"):
//! after a clean close, after an unclean stop with updates that change indexed values, deletes
//! and re-inserts since the checkpoint, with a damaged, stale or missing form, with an index
//! the form does not hold, with a refused primary image, on a B-tree keyed table, and with a
//! checkpoint taken while writers commit. Each case checks invariant 4 for every index
//! (`verify_integrity`, which compares each secondary index with the entries the stored rows
//! give), the answers of index scans, and that a unique index still refuses duplicates.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use augur::types::codec::encode_key_values;
use augur::{ColumnDef, DataType, Database, IndexDef, Key, Options, TableDef, Value};

fn opts() -> Options {
    Options {
        maintenance_interval: Duration::from_millis(10),
        // No checkpoint in the background unless a test asks for one (clean close writes one).
        checkpoint_every: u64::MAX,
        ..Options::default()
    }
}

/// (v, w) of each key: `v` indexed by `t_v` (NULL: no entry), `w` by the unique `t_w`.
type Model = BTreeMap<i64, (Option<i64>, String)>;

/// A write of a key: `Some((v, w))` upserts, `None` deletes.
type Write = (i64, Option<(Option<i64>, String)>);

fn create(db: &Database) {
    db.create_table(
        TableDef::new(
            "t",
            vec![
                ColumnDef::new("k", DataType::Int8),
                ColumnDef::new("v", DataType::Int8),
                ColumnDef::new("w", DataType::Text(None)),
            ],
            &["k"],
        )
        .unwrap(),
    )
    .unwrap();
    db.create_index("t", index("t_v", 1, false), false).unwrap();
    db.create_index("t", index("t_w", 2, true), false).unwrap();
}

fn index(name: &str, column: usize, unique: bool) -> IndexDef {
    IndexDef {
        name: name.into(),
        columns: vec![column],
        unique,
    }
}

fn row(k: i64, v: Option<i64>, w: &str) -> Vec<Value> {
    vec![
        Value::Int(k),
        v.map_or(Value::Null, Value::Int),
        Value::Text(w.into()),
    ]
}

/// Upserts (`Some`) and deletes (`None`) in one transaction, and in the model.
fn apply(db: &Database, model: &mut Model, writes: &[Write]) {
    db.transaction(|tx| {
        for (k, w) in writes {
            match w {
                Some((v, w)) => {
                    tx.upsert("t", row(*k, *v, w))?;
                }
                None => {
                    tx.delete("t", &Key::Int(*k))?;
                }
            }
        }
        Ok(())
    })
    .unwrap();
    for (k, w) in writes {
        match w {
            Some(w) => {
                model.insert(*k, w.clone());
            }
            None => {
                model.remove(k);
            }
        }
    }
}

/// A write of key `k` in round `round`: its indexed value changes (NULL for some keys), and so
/// does its unique value.
fn put(k: i64, round: i64) -> Write {
    let v = if (k + round) % 13 == 0 {
        None
    } else {
        Some((k * 7 + round) % 101 - 50)
    };
    (k, Some((v, format!("w{k}.{round}"))))
}

/// 8,000 keys, then updates, deletes and NULLs; closed cleanly (so it has a checkpoint).
fn populated(dir: &Path) -> Model {
    let db = Database::open(dir, opts()).unwrap();
    create(&db);
    let mut model = Model::new();
    let w: Vec<_> = (0..8000).map(|k| put(k, 0)).collect();
    apply(&db, &mut model, &w);
    let w: Vec<_> = (0..8000)
        .step_by(3)
        .map(|k| if k % 2 == 0 { (k, None) } else { put(k, 1) })
        .collect();
    apply(&db, &mut model, &w);
    shut(db);
    model
}

/// The database equals the model: invariant 4 (every index), full scans of both secondary
/// indexes in (value, key) order, point lookups by value, and the unique index's refusals.
fn check(db: &Database, model: &Model) {
    assert_eq!(db.verify_integrity().unwrap(), model.len());
    let t = db.table("t").unwrap();
    let tx = db.begin();
    let got: Vec<(i64, i64)> = tx
        .index_scan_in(&t, 0, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .into_iter()
        .map(|(k, r)| match (k, &r[1]) {
            (Key::Int(k), Value::Int(v)) => (*v, k),
            o => panic!("unexpected {o:?}"),
        })
        .collect();
    let mut want: Vec<(i64, i64)> = model
        .iter()
        .filter_map(|(&k, (v, _))| v.map(|v| (v, k)))
        .collect();
    want.sort();
    assert_eq!(got, want, "t_v in order");
    for probe in [-50i64, -1, 0, 7, 50] {
        let e = encode_key_values(&[Value::Int(probe)]);
        let got: Vec<i64> = tx
            .index_scan_in(&t, 0, Bound::Included(&e), Bound::Included(&e))
            .unwrap()
            .into_iter()
            .map(|(k, _)| match k {
                Key::Int(k) => k,
                o => panic!("unexpected {o:?}"),
            })
            .collect();
        let want: Vec<i64> = model
            .iter()
            .filter(|(_, (v, _))| *v == Some(probe))
            .map(|(&k, _)| k)
            .collect();
        assert_eq!(got, want, "t_v = {probe}");
    }
    let got: Vec<(String, i64)> = tx
        .index_scan_in(&t, 1, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .into_iter()
        .map(|(k, r)| match (k, &r[2]) {
            (Key::Int(k), Value::Text(w)) => (w.clone(), k),
            o => panic!("unexpected {o:?}"),
        })
        .collect();
    let mut want: Vec<(String, i64)> = model.iter().map(|(&k, (_, w))| (w.clone(), k)).collect();
    want.sort();
    assert_eq!(got, want, "t_w in order");
    drop(tx);
    // Every tenth live key's unique value is refused to a new key.
    for (i, (_, (_, w))) in model.iter().enumerate() {
        if i % 10 == 0 {
            let e = db.insert("t", row(1_000_000 + i as i64, None, w)).unwrap_err();
            assert_eq!(e.sqlstate().code(), "23505", "{w}: {e}");
        }
    }
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("index"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The one secondary index form of the database (there is one table).
fn the_form(dir: &Path) -> PathBuf {
    let v = files(dir, "sec");
    assert_eq!(v.len(), 1, "{v:?}");
    v[0].clone()
}

/// A clean close; the database is released when its handle goes.
fn shut(db: Database) {
    db.close().unwrap();
}

fn assert_loaded(db: &Database) {
    let s = db.stats();
    assert_eq!(
        (s.secondary_loaded, s.secondary_rebuilt, s.secondary_forms_refused),
        (1, 0, 0),
        "loaded, rebuilt, refused"
    );
}

#[test]
fn open_after_clean_close_loads_the_form() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = populated(dir.path());
    the_form(dir.path());
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_loaded(&db);
    assert_eq!(db.stats().open_replayed_versions, 0);
    check(&db, &model);
    // A unique value freed by a delete or an update is free again after the open.
    apply(&db, &mut model, &[(9_000_001, Some((Some(1), "w0.0".into())))]);
    apply(
        &db,
        &mut model,
        &[put(1, 5), (9_000_002, Some((None, "w1.0".into())))],
    );
    check(&db, &model);
    shut(db);
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_loaded(&db);
    check(&db, &model);
    shut(db);
}

#[test]
fn open_after_an_unclean_stop_applies_the_changes_since_the_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = populated(dir.path());
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        apply(
            &db,
            &mut model,
            &(0..200).map(|k| put(k * 11, 2)).collect::<Vec<_>>(),
        );
        db.checkpoint().unwrap();
        // Since the checkpoint: indexed values changed (twice for some keys, to NULL for
        // some), keys deleted (live at the checkpoint, or written since), keys deleted before
        // the checkpoint inserted again, new keys; the versions they replace collected, so
        // open cannot read the checkpointed versions' rows.
        apply(
            &db,
            &mut model,
            &(0..500).map(|k| put(k * 5 + 1, 3)).collect::<Vec<_>>(),
        );
        apply(
            &db,
            &mut model,
            &(0..100).map(|k| put(k * 10 + 1, 4)).collect::<Vec<_>>(),
        );
        let deletes: Vec<_> = (0..300)
            .map(|k| (k * 7 + 2, None))
            .chain([(11, None), (1, None)])
            .collect();
        apply(&db, &mut model, &deletes);
        apply(
            &db,
            &mut model,
            &(0..100).map(|k| put(k * 6, 5)).collect::<Vec<_>>(),
        );
        apply(
            &db,
            &mut model,
            &(20_000..20_300).map(|k| put(k, 6)).collect::<Vec<_>>(),
        );
        db.collect_garbage().unwrap();
        db.abandon();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_loaded(&db);
    assert!(db.stats().open_replayed_versions > 1000);
    check(&db, &model);
    // Once the sweep has collected what the stop left, the indexes hold the newest versions'
    // entries and nothing else (the strict form of the check).
    assert!(db.wait_for_sweep(Duration::from_secs(30)));
    db.collect_garbage().unwrap();
    check(&db, &model);
    apply(
        &db,
        &mut model,
        &(0..100).map(|k| put(k * 13, 7)).collect::<Vec<_>>(),
    );
    db.abandon();
    // Twice in a row: the changes since the checkpoint are now two stops' worth.
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_loaded(&db);
    check(&db, &model);
    shut(db);
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_loaded(&db);
    check(&db, &model);
    shut(db);
}

/// Flips one byte of `path` at `at` (a fraction of its length).
fn corrupt(path: &Path, at: f64) {
    let mut b = std::fs::read(path).unwrap();
    let i = ((b.len() - 1) as f64 * at) as usize;
    b[i] ^= 0x20;
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_damaged_or_stale_form_is_refused_and_the_indexes_rebuilt_from_the_rows() {
    type Damage = fn(&Path, &[u8]);
    let cases: [(&str, Damage); 6] = [
        ("entries", |p, _| corrupt(p, 0.6)),
        ("header", |p, _| corrupt(p, 0.0)),
        ("checksum", |p, _| corrupt(p, 1.0)),
        ("truncated", |p, _| {
            let b = std::fs::read(p).unwrap();
            std::fs::write(p, &b[..b.len() / 2]).unwrap();
        }),
        ("missing", |p, _| std::fs::remove_file(p).unwrap()),
        // The form of the checkpoint before, under the current one's name.
        ("stale", |p, old| std::fs::write(p, old).unwrap()),
    ];
    for (what, damage) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut model = populated(dir.path());
        let old = std::fs::read(the_form(dir.path())).unwrap();
        {
            let db = Database::open(dir.path(), opts()).unwrap();
            apply(
                &db,
                &mut model,
                &(0..300).map(|k| put(k * 3, 8)).collect::<Vec<_>>(),
            );
            shut(db);
        }
        damage(&the_form(dir.path()), &old);
        {
            let db = Database::open(dir.path(), opts()).unwrap();
            let s = db.stats();
            assert_eq!(
                (s.secondary_loaded, s.secondary_rebuilt, s.secondary_forms_refused),
                (0, 1, 1),
                "{what}"
            );
            assert_eq!(s.index_images_refused, 0, "{what}");
            check(&db, &model);
            apply(
                &db,
                &mut model,
                &(0..100).map(|k| put(k * 17, 9)).collect::<Vec<_>>(),
            );
            check(&db, &model);
            shut(db);
        }
        // The close wrote a good form again.
        let db = Database::open(dir.path(), opts()).unwrap();
        assert_loaded(&db);
        check(&db, &model);
        shut(db);
    }
}

#[test]
fn an_index_the_form_does_not_hold_is_rebuilt_and_a_dropped_one_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let model = populated(dir.path());
    {
        // Created after the last checkpoint, then a stop: the form lacks it.
        let db = Database::open(dir.path(), opts()).unwrap();
        db.create_index("t", index("t_vw", 1, false), false).unwrap();
        db.abandon();
    }
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let s = db.stats();
        assert_eq!((s.secondary_loaded, s.secondary_forms_refused), (0, 1));
        check(&db, &model);
        // No commit since the last checkpoint, but its form lacks an index: the close
        // checkpoints again.
        shut(db);
    }
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        assert_loaded(&db);
        check(&db, &model);
        // Dropped after the checkpoint: the form holds an index the table no longer has.
        assert!(db.drop_index("t_vw").unwrap());
        db.abandon();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_loaded(&db);
    check(&db, &model);
    shut(db);
    assert_eq!(files(dir.path(), "sec").len(), 1);
}

#[test]
fn a_refused_image_rebuilds_the_secondary_indexes_from_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let model = populated(dir.path());
    let images = files(dir.path(), "alex");
    assert_eq!(images.len(), 1);
    corrupt(&images[0], 0.5);
    // Refused at open: its data nodes checked before open returns, not lazily.
    let at_open = Options {
        image_check: augur::ImageCheck::AtOpen,
        ..opts()
    };
    let db = Database::open(dir.path(), at_open).unwrap();
    let s = db.stats();
    assert_eq!(s.index_images_refused, 1);
    assert_eq!(
        (s.secondary_loaded, s.secondary_rebuilt, s.secondary_forms_refused),
        (0, 1, 0)
    );
    check(&db, &model);
    shut(db);
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_loaded(&db);
    check(&db, &model);
    shut(db);
}

#[test]
fn a_table_keyed_by_text_loads_its_form() {
    let dir = tempfile::tempdir().unwrap();
    let name = |k: i64| Value::Text(format!("key-{k:05}"));
    let expect = |db: &Database, live: &BTreeMap<i64, i64>| {
        assert_eq!(db.verify_integrity().unwrap(), live.len());
        let t = db.table("s").unwrap();
        let got: Vec<(i64, Value)> = db
            .begin()
            .index_scan_in(&t, 0, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .into_iter()
            .map(|(_, r)| match &r[1] {
                Value::Int(v) => (*v, r[0].clone()),
                o => panic!("unexpected {o:?}"),
            })
            .collect();
        let mut want: Vec<(i64, Value)> = live.iter().map(|(&k, &v)| (v, name(k))).collect();
        want.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| format!("{:?}", a.1).cmp(&format!("{:?}", b.1)))
        });
        assert_eq!(got, want);
    };
    let mut live = BTreeMap::new();
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        db.create_table(
            TableDef::new(
                "s",
                vec![
                    ColumnDef::new("name", DataType::Text(None)),
                    ColumnDef::new("n", DataType::Int8),
                ],
                &["name"],
            )
            .unwrap(),
        )
        .unwrap();
        db.create_index("s", index("s_n", 1, false), false).unwrap();
        db.transaction(|tx| {
            for k in 0..3000 {
                tx.insert("s", vec![name(k), Value::Int(k % 17)])?;
            }
            Ok(())
        })
        .unwrap();
        live.extend((0..3000).map(|k| (k, k % 17)));
        db.checkpoint().unwrap();
        db.transaction(|tx| {
            for k in (0..3000).step_by(4) {
                tx.upsert("s", vec![name(k), Value::Int(100 + k % 5)])?;
                live.insert(k, 100 + k % 5);
            }
            let def = db.table("s")?.def();
            for k in (1..3000).step_by(9) {
                tx.delete("s", &def.key_from_values(&[name(k)])?)?;
                live.remove(&k);
            }
            Ok(())
        })
        .unwrap();
        db.collect_garbage().unwrap();
        db.abandon();
    }
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_eq!(db.stats().secondary_loaded, 1);
    expect(&db, &live);
    shut(db);
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_eq!(db.stats().secondary_loaded, 1);
    expect(&db, &live);
    shut(db);
}

#[test]
fn a_checkpoint_taken_while_writers_commit_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    populated(dir.path());
    for round in 0..3 {
        let db = Database::open(dir.path(), opts()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2i64)
            .map(|th| {
                let db = db.clone();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut n = 0i64;
                    while !stop.load(Ordering::Acquire) {
                        let k = (n * 7919 + th * 4001) % 12_000;
                        let r = db.transaction(|tx| {
                            if n % 5 == 0 {
                                tx.delete("t", &Key::Int(k))?;
                            } else {
                                let (k, w) = put(k, 100 + n * 2 + th);
                                let (v, w) = w.unwrap();
                                tx.upsert("t", row(k, v, &w))?;
                            }
                            Ok(())
                        });
                        if let Err(e) = r {
                            assert!(matches!(e.sqlstate().code(), "40001" | "40P01"), "{e}");
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        for _ in 0..4 {
            std::thread::sleep(Duration::from_millis(30));
            db.checkpoint().unwrap();
            db.collect_garbage().unwrap();
        }
        stop.store(true, Ordering::Release);
        for w in writers {
            w.join().unwrap();
        }
        db.verify_integrity().unwrap();
        if round == 1 {
            shut(db);
        } else {
            db.abandon();
        }
        let db = Database::open(dir.path(), opts()).unwrap();
        assert_loaded(&db);
        db.verify_integrity().unwrap();
        assert!(db.wait_for_sweep(Duration::from_secs(30)));
        db.collect_garbage().unwrap();
        db.verify_integrity().unwrap();
        shut(db);
    }
}
