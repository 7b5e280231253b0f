//! What is stored and how it is read back: DDL, checkpoints and replay, bulk loads, the direct
//! read path, the caches and the memory budget.

use std::ops::Bound;
use std::time::Duration;

use augur::{ColumnDef, DataType, Database, IndexDef, Key, KeyRange, Options, SqlState, TableDef, Value};

use super::{kv_table, opts, val};

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

/// The clean-shutdown marker is cleared at open without an fsync of its own: the first write
/// made durable afterwards carries it. An ingested file syncs no WAL, so a large commit waits for
/// that fsync first (docs/INVARIANTS.md, "The clean-shutdown marker never outlives a change").
#[test]
fn a_clean_open_leaves_the_markers_fsync_to_the_first_durable_write() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        sync_commits: false,
        checkpoint_every: u64::MAX,
        ..opts()
    };
    let insert = |db: &Database, keys: std::ops::Range<i64>| {
        db.transaction(|tx| {
            for k in keys.clone() {
                tx.insert("t", vec![Value::Int(k), Value::Int(k)])?;
            }
            Ok(())
        })
        .unwrap();
    };
    {
        let db = Database::open(dir.path(), o.clone()).unwrap();
        kv_table(&db, "t");
        insert(&db, 0..10);
        db.close().unwrap();
    }
    let db = Database::open(dir.path(), o.clone()).unwrap();
    assert!(!db.stats().recovered_unclean);
    assert_eq!(db.stats().wal_syncs, 0, "the open syncs nothing");
    // A small commit that is not durable: through the WAL, no fsync.
    insert(&db, 10..20);
    assert_eq!(db.stats().wal_syncs, 0);
    // A large one is ingested as a file, durable without the WAL: the marker's clearing is
    // synced before it, once.
    let bulk = augur::engine::BULK_COMMIT_ROWS as i64;
    insert(&db, 100..100 + bulk);
    assert_eq!(
        db.stats().wal_syncs,
        1,
        "the clearing is synced before the ingestion"
    );
    insert(&db, 200_000..200_000 + bulk);
    assert_eq!(db.stats().wal_syncs, 1, "and only before the first");
    // The process dies: the next open sweeps, and every row is there.
    db.abandon();
    let db = Database::open(dir.path(), o).unwrap();
    assert!(db.stats().recovered_unclean);
    assert_eq!(db.verify_integrity().unwrap(), 20 + 2 * bulk as usize);
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
        let e = e.unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
        // PostgreSQL's DETAIL names the duplicate key, as every other write path's 23505 does.
        assert_eq!(e.detail(), Some("Key (k)=(1) already exists."), "{e}");
        let e = db.bulk_insert(
            "t",
            vec![
                vec![Value::Int(2), Value::Int(0)],
                vec![Value::Int(300), Value::Int(0)],
            ],
        );
        let e = e.unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::UNIQUE_VIOLATION);
        assert_eq!(e.detail(), Some("Key (k)=(300) already exists."), "{e}");
        assert!(e.to_string().contains("\"t_pkey\""), "{e}");
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
    // After a clean close and after a crash (RocksDB replays its log into the memtable at open,
    // the warm-up flushes it to a file), every row is in a mapped file once the warm-up is done: reads go neither to RocksDB nor to the
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
