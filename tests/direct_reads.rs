//! The direct read path (row versions read in place from mapped SST files) against RocksDB's
//! own answers: after every kind of write, flush and compaction, a row read from a mapping is
//! byte for byte what RocksDB's `Get` returns; files it cannot read (another format, a damaged
//! block) fall back or fail cleanly, never with wrong bytes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use augur::store::direct::Lookup;
use augur::store::StoreOptions;
use augur::{ColumnDef, DataType, Database, Key, KeyRange, Options, TableDef, Value};
use proptest::prelude::*;

fn opts() -> Options {
    Options {
        maintenance_interval: Duration::from_millis(10),
        checkpoint_every: 2_000,
        // Small memtables: rows reach files (and then compactions) quickly.
        store: StoreOptions {
            write_buffer_bytes: 256 << 10,
            ..StoreOptions::default()
        },
        ..Options::default()
    }
}

fn kv(db: &Database, name: &str) -> std::sync::Arc<augur::Table> {
    db.create_table(
        TableDef::new(
            name,
            vec![
                ColumnDef::new("k", DataType::Int8),
                ColumnDef::new("v", DataType::Text(None)),
            ],
            &["k"],
        )
        .unwrap(),
    )
    .unwrap()
}

/// Row versions from about 20 to 330 bytes: entries whose value length takes one byte and two.
fn text(k: i64, generation: u32) -> Value {
    Value::Text(format!(
        "value-{k}-{generation}-{}",
        "x".repeat((k.unsigned_abs() % 97 * 3) as usize)
    ))
}

/// How the direct path answered for every row version RocksDB holds.
#[derive(Debug, Default)]
struct Oracle {
    hits: usize,
    fallbacks: usize,
    /// Rowids RocksDB does not hold but a mapping served anyway.
    ghost_hits: usize,
}

/// Compares the direct read path with RocksDB for every rowid of `table` up to the largest
/// stored one. Any byte difference fails the test at once.
fn oracle(db: &Database, table: &str) -> Oracle {
    let t = db.table(table).unwrap();
    let store = db.store();
    store.refresh_direct();
    let files = store.direct().files();
    let mut stored: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    store
        .for_each_row(t.id, 0, u64::MAX, |rowid, bytes| {
            stored.insert(rowid, bytes.to_vec());
            Ok(true)
        })
        .unwrap();
    let max = stored.keys().next_back().copied().unwrap_or(0);
    let mut o = Oracle::default();
    for rowid in 1..=max + 10 {
        match (files.get(t.id, rowid), stored.get(&rowid)) {
            (Lookup::Hit(b), Some(want)) => {
                assert_eq!(b, &want[..], "rowid {rowid}: mapped bytes differ from RocksDB's");
                o.hits += 1;
            }
            (Lookup::Hit(_), None) => o.ghost_hits += 1,
            (_, Some(_)) => o.fallbacks += 1,
            (_, None) => {}
        }
    }
    o
}

/// Every key of `model` reads back with its value through the engine (point reads and one full
/// scan), and nothing else is there.
fn check_engine(db: &Database, table: &str, model: &BTreeMap<i64, Value>) {
    let t = db.table(table).unwrap();
    let tx = db.begin();
    for (k, v) in model {
        let row = tx
            .get_in(&t, &Key::Int(*k))
            .unwrap()
            .unwrap_or_else(|| panic!("key {k} missing"));
        assert_eq!(&row[1], v, "key {k}");
    }
    let mut seen = Vec::new();
    tx.scan_in(&t, &KeyRange::all(), false, |k, r| {
        seen.push((k.clone(), r[1].clone()));
        Ok(true)
    })
    .unwrap();
    let want: Vec<(Key, Value)> = model.iter().map(|(k, v)| (Key::Int(*k), v.clone())).collect();
    assert_eq!(seen, want, "full scan differs from the model");
}

#[test]
fn mapped_rows_equal_rocksdb_after_loads_commits_updates_deletes_gc_and_compactions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    kv(&db, "a");
    kv(&db, "b");
    let mut model = BTreeMap::new();
    // A bulk load (one ingested file), then single-row commits into both tables, interleaved.
    db.bulk_insert(
        "a",
        (0..20_000i64).map(|k| vec![Value::Int(k * 3), text(k * 3, 0)]),
    )
    .unwrap();
    for k in 0..20_000i64 {
        model.insert(k * 3, text(k * 3, 0));
    }
    for k in 0..3_000i64 {
        let key = 100_000 + k;
        db.insert("a", vec![Value::Int(key), text(key, 0)]).unwrap();
        db.insert("b", vec![Value::Int(k), text(k, 0)]).unwrap();
        model.insert(key, text(key, 0));
    }
    let o = oracle(&db, "a");
    assert!(
        o.hits > 20_000,
        "the loaded file and flushed commits are read in place: {o:?}"
    );
    // Updates and deletes: new versions, tombstones, superseded versions for GC.
    let t = db.table("a").unwrap();
    for k in (0..20_000i64).step_by(4) {
        let mut tx = db.begin();
        tx.update_in(&t, &Key::Int(k * 3), vec![Value::Int(k * 3), text(k * 3, 1)])
            .unwrap();
        tx.commit().unwrap();
        model.insert(k * 3, text(k * 3, 1));
    }
    for k in (1..20_000i64).step_by(10) {
        let mut tx = db.begin();
        assert!(tx.delete_in(&t, &Key::Int(k * 3)).unwrap());
        tx.commit().unwrap();
        model.remove(&(k * 3));
    }
    check_engine(&db, "a", &model);
    oracle(&db, "a");
    db.collect_garbage().unwrap();
    db.checkpoint().unwrap();
    db.collect_garbage().unwrap();
    db.store().flush_rows(false).unwrap();
    oracle(&db, "a");
    check_engine(&db, "a", &model);
    // One full compaction: every stored version is in a mapped file, read in place, and no
    // deleted version is served.
    db.store().flush_rows(true).unwrap();
    let o = oracle(&db, "a");
    assert_eq!(
        o.fallbacks, 0,
        "after a full compaction every row is in a mapped file: {o:?}"
    );
    assert_eq!(
        o.ghost_hits, 0,
        "no collected version is served after compaction: {o:?}"
    );
    check_engine(&db, "a", &model);
    let s = db.stats();
    assert!(s.direct_reads > 0 && s.direct.files > 0, "{s:?}");
    assert_eq!(s.direct.unsupported_files, 0, "{s:?}");
    // And after a reopen.
    db.close().unwrap();
    drop((db, t));
    let db = Database::open(dir.path(), opts()).unwrap();
    check_engine(&db, "a", &model);
    let o = oracle(&db, "a");
    assert_eq!(o.fallbacks, 0, "{o:?}");
}

#[test]
fn a_file_compacted_away_while_mapped_still_reads_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    let t = kv(&db, "a");
    db.bulk_insert("a", (0..5_000i64).map(|k| vec![Value::Int(k), text(k, 0)]))
        .unwrap();
    db.store().refresh_direct();
    let old = db.store().direct().files();
    let before: Vec<Vec<u8>> = (1..=5_000u64)
        .map(|r| match old.get(t.id, r) {
            Lookup::Hit(b) => b.to_vec(),
            other => panic!("rowid {r} not read in place: {other:?}"),
        })
        .collect();
    let old_files: Vec<_> = sst_files(dir.path());
    // New rows, then a compaction that rewrites every file.
    for k in 5_000..6_000i64 {
        db.insert("a", vec![Value::Int(k), text(k, 0)]).unwrap();
    }
    db.store().flush_rows(true).unwrap();
    db.store().refresh_direct();
    let now = sst_files(dir.path());
    assert!(
        old_files.iter().all(|f| !now.contains(f)),
        "the compaction replaced every file: {old_files:?} -> {now:?}"
    );
    // The old set still maps the deleted files and returns the same bytes.
    for (i, want) in before.iter().enumerate() {
        assert_eq!(old.get(t.id, i as u64 + 1), Lookup::Hit(want), "rowid {}", i + 1);
    }
    let new = db.store().direct().files();
    for (i, want) in before.iter().enumerate() {
        assert_eq!(new.get(t.id, i as u64 + 1), Lookup::Hit(want), "rowid {}", i + 1);
    }
}

fn sst_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst"))
        .collect();
    v.sort();
    v
}

#[test]
fn compressed_files_are_left_to_rocksdb_and_read_correctly() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        store: StoreOptions {
            compression: true,
            ..opts().store
        },
        ..opts()
    };
    let db = Database::open(dir.path(), o).unwrap();
    kv(&db, "a");
    let mut model = BTreeMap::new();
    db.bulk_insert("a", (0..3_000i64).map(|k| vec![Value::Int(k), text(k, 0)]))
        .unwrap();
    for k in 0..3_000i64 {
        model.insert(k, text(k, 0));
    }
    db.store().flush_rows(true).unwrap();
    let o = oracle(&db, "a");
    assert_eq!(o.hits, 0, "no LZ4 block is read in place: {o:?}");
    check_engine(&db, "a", &model);
    let s = db.stats();
    assert!(s.direct.unsupported_files > 0, "{s:?}");
    assert_eq!(s.direct_reads, 0, "{s:?}");
}

#[test]
fn a_damaged_block_fails_its_read_cleanly_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let no_cache = Options {
        row_cache_bytes: 0,
        ..opts()
    };
    let db = Database::open(dir.path(), no_cache.clone()).unwrap();
    kv(&db, "a");
    let rows = 20_000i64;
    db.bulk_insert("a", (0..rows).map(|k| vec![Value::Int(k), text(k, 0)]))
        .unwrap();
    db.store().flush_rows(true).unwrap();
    db.close().unwrap();
    drop(db);
    // Flip one byte in the middle of the (only) SST file: inside a data block.
    let files = sst_files(dir.path());
    let big = files
        .iter()
        .max_by_key(|f| std::fs::metadata(dir.path().join(f)).unwrap().len())
        .unwrap();
    let path = dir.path().join(big);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x5a;
    std::fs::write(&path, &bytes).unwrap();

    let db = Database::open(dir.path(), no_cache).unwrap();
    db.store().refresh_direct();
    let t = db.table("a").unwrap();
    let (mut ok, mut failed) = (0, 0);
    let tx = db.begin();
    for k in 0..rows {
        match tx.get_in(&t, &Key::Int(k)) {
            Ok(Some(row)) => {
                assert_eq!(row[1], text(k, 0), "key {k}: a damaged read returned wrong bytes");
                ok += 1;
            }
            Ok(None) => panic!("key {k} missing"),
            Err(e) => {
                assert_eq!(e.sqlstate().code(), "XX001", "{e}");
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "the damaged block was read ({ok} rows read)");
    assert!(failed < 200, "only the damaged block's rows fail ({failed} did)");
    assert!(db.stats().direct_reads > 0);
}

#[derive(Debug, Clone)]
enum Op {
    Insert(i64),
    Update(i64),
    Delete(i64),
    Bulk(i64, i64),
    Gc,
    Flush,
    Compact,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..400i64).prop_map(Op::Insert),
        4 => (0..400i64).prop_map(Op::Update),
        2 => (0..400i64).prop_map(Op::Delete),
        1 => (0..4i64, 1..300i64).prop_map(|(a, n)| Op::Bulk(1_000 + a * 1_000, n)),
        1 => Just(Op::Gc),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random writes with flushes, compactions, collections and reopens at random points: the
    /// engine's answers equal a model, and mapped bytes equal RocksDB's, after every step.
    #[test]
    fn random_operations_keep_mapped_reads_equal_to_rocksdb(ops in proptest::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Database::open(dir.path(), opts()).unwrap();
        kv(&db, "a");
        let mut model: BTreeMap<i64, Value> = BTreeMap::new();
        let mut generation = 0u32;
        for op in ops {
            generation += 1;
            let t = db.table("a").unwrap();
            match op.clone() {
                Op::Insert(k) => {
                    if let std::collections::btree_map::Entry::Vacant(e) = model.entry(k) {
                        db.insert("a", vec![Value::Int(k), text(k, generation)]).unwrap();
                        e.insert(text(k, generation));
                    }
                }
                Op::Update(k) => {
                    let mut tx = db.begin();
                    let done = tx.update_in(&t, &Key::Int(k), vec![Value::Int(k), text(k, generation)]).unwrap();
                    tx.commit().unwrap();
                    prop_assert_eq!(done, model.contains_key(&k));
                    if done {
                        model.insert(k, text(k, generation));
                    }
                }
                Op::Delete(k) => {
                    let mut tx = db.begin();
                    let done = tx.delete_in(&t, &Key::Int(k)).unwrap();
                    tx.commit().unwrap();
                    prop_assert_eq!(done, model.remove(&k).is_some());
                }
                Op::Bulk(from, n) => {
                    let keys: Vec<i64> = (from..from + n).filter(|k| !model.contains_key(k)).collect();
                    db.bulk_insert("a", keys.iter().map(|&k| vec![Value::Int(k), text(k, generation)])).unwrap();
                    for k in keys {
                        model.insert(k, text(k, generation));
                    }
                }
                Op::Gc => {
                    db.collect_garbage().unwrap();
                }
                Op::Flush => db.store().flush_rows(false).unwrap(),
                Op::Compact => db.store().flush_rows(true).unwrap(),
                Op::Reopen => {
                    drop(t);
                    db.close().unwrap();
                    drop(db);
                    db = Database::open(dir.path(), opts()).unwrap();
                    continue;
                }
            }
            let mut o = oracle(&db, "a");
            if matches!(op, Op::Compact) {
                // Everything is in files now: all of it read in place, nothing collected served.
                // The maintenance thread may collect a version after the compaction (the sweep
                // after an unclean close runs in the background): that version is still in the
                // new file until the next compaction, and the engine never asks for it. So a
                // ghost must go with one more collection and compaction; one that stays means
                // the file set did not follow RocksDB's files.
                for _ in 0..3 {
                    if o.ghost_hits == 0 {
                        break;
                    }
                    db.collect_garbage().unwrap();
                    db.store().flush_rows(true).unwrap();
                    o = oracle(&db, "a");
                }
                prop_assert_eq!(o.fallbacks, 0, "{:?}", o);
                prop_assert_eq!(o.ghost_hits, 0, "{:?}", o);
            }
            check_engine(&db, "a", &model);
        }
    }
}

/// Pages of `path` in the OS page cache, out of all its pages (mincore on a fresh mapping).
fn resident_pages(path: &Path) -> (usize, usize) {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let pages = len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: a private read-only mapping of the whole file, unmapped before returning;
    // mincore writes one byte per page into `vec`, which has that many.
    unsafe {
        use std::os::fd::AsRawFd;
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
        libc::munmap(p, len);
    }
    (vec.iter().filter(|&&b| b & 1 != 0).count(), pages)
}

/// A compaction's output starts on the disk only (written with O_DIRECT), so that the populate
/// pass reads it in through the huge-page mapping, in 2 MiB pieces: a file written through
/// the page cache would stay there in the small pieces its writes made, mapped 4 KiB at a
/// time. Checked on the file before anything reads it (maintenance held off).
#[test]
fn a_compactions_output_is_not_left_in_the_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let o = Options {
        maintenance_interval: Duration::from_secs(3600),
        ..opts()
    };
    let db = Database::open(dir.path(), o).unwrap();
    let t = kv(&db, "a");
    for chunk in (0..20_000i64).collect::<Vec<_>>().chunks(500) {
        let mut tx = db.begin();
        for &k in chunk {
            tx.insert_in(&t, vec![Value::Int(k), text(k, 0)]).unwrap();
        }
        tx.commit().unwrap();
    }
    let before: Vec<_> = sst_files(dir.path());
    db.store().flush_rows(true).unwrap();
    let new: Vec<_> = sst_files(dir.path())
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert!(!new.is_empty(), "the compaction wrote no file");
    let (resident, pages) = new
        .iter()
        .map(|n| resident_pages(&dir.path().join(n)))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(
        pages >= 256 && resident * 10 < pages,
        "{resident} of the compaction output's {pages} pages are in the page cache"
    );
}
