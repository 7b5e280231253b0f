//! The sweep after an unclean open (docs/ARCHITECTURE.md, "Garbage collection"): it runs in
//! paced steps of `Options::sweep_batch` versions after the maintenance thread's warm-up, and
//! must still find every version the crash left orphaned, below the last checkpoint too, while
//! writes, collection and checkpoints go on beside it. A sweep skipped, or a step that missed a
//! range of versions, leaves an older version of some key stored after everything is collected,
//! and these tests count every key's stored versions.

use std::path::Path;
use std::time::Duration;

use augur::{Database, Key, Options, Value};

mod common;

const N: i64 = 2000;
/// Keys 0..D are deleted before the crash.
const D: i64 = 300;

fn opts(background: bool, sweep_batch: usize) -> Options {
    Options {
        maintenance_interval: if background {
            Duration::from_millis(10)
        } else {
            Duration::from_secs(3600)
        },
        sweep_batch,
        ..Options::default()
    }
}

fn open(path: &Path, background: bool, sweep_batch: usize) -> Database {
    let db = Database::open(path, opts(background, sweep_batch)).unwrap();
    db.create_table_if_not_exists(common::int_pair_table("kv"))
        .unwrap();
    db
}

/// Upserts `(k, v)` for each pair, `per_tx` to a transaction.
fn put_all(db: &Database, pairs: &[(i64, i64)], per_tx: usize) {
    for chunk in pairs.chunks(per_tx) {
        db.transaction(|tx| {
            for &(k, v) in chunk {
                tx.upsert("kv", vec![Value::Int(k), Value::Int(v)])?;
            }
            Ok(())
        })
        .unwrap();
    }
}

fn delete_all(db: &Database, keys: impl Iterator<Item = i64>, per_tx: usize) {
    let keys: Vec<i64> = keys.collect();
    for chunk in keys.chunks(per_tx) {
        db.transaction(|tx| {
            for &k in chunk {
                tx.delete("kv", &Key::Int(k))?;
            }
            Ok(())
        })
        .unwrap();
    }
}

/// Loads keys 0..N, checkpoints (so their first versions lie below the checkpoint's
/// watermark), updates every key and deletes keys 0..D, collects nothing and "dies": every
/// first version, and the updated version and the tombstone of each deleted key, are orphans
/// only the sweep after the next open can find (nothing queues them otherwise).
fn crash_with_orphans(path: &Path) {
    let db = open(path, false, 16_384);
    put_all(&db, &(0..N).map(|k| (k, k)).collect::<Vec<_>>(), 500);
    db.checkpoint().unwrap();
    put_all(&db, &(0..N).map(|k| (k, k + 1_000_000)).collect::<Vec<_>>(), 500);
    delete_all(&db, 0..D, 100);
    db.abandon();
}

/// Collects everything (the tombstone rows once a checkpoint covers them) and checks that
/// every key has exactly its expected value and no version but its newest stored.
fn assert_fully_collected(db: &Database, expected: &dyn Fn(i64) -> Option<i64>) {
    for _ in 0..2 {
        db.checkpoint().unwrap();
        db.collect_garbage().unwrap();
    }
    assert_eq!(db.stats().gc_pending, 0, "versions still queued");
    for k in 0..N {
        let want = expected(k);
        let got = db.get("kv", &Key::Int(k)).unwrap();
        assert_eq!(got, want.map(|v| vec![Value::Int(k), Value::Int(v)]), "key {k}");
        let versions = db.debug_key("kv", &Key::Int(k)).unwrap().0;
        assert_eq!(
            versions.len(),
            usize::from(want.is_some()),
            "key {k}: stored versions {versions:?} (an orphan the sweep missed)"
        );
    }
    db.verify_integrity().unwrap();
}

#[test]
fn a_paced_sweep_finds_every_orphan_while_writes_race_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    crash_with_orphans(&path);

    // Steps of 16 versions, each followed by a pause: the scan of about 4,600 versions takes
    // hundreds of steps, and the writes below run while it does.
    let db = open(&path, true, 16);
    assert!(
        !db.wait_for_sweep(Duration::ZERO),
        "no sweep after an unclean open"
    );
    // Racing writes, small transactions: keys D..D+500 updated again (their versions at open
    // become garbage the commits queue), keys D+500..D+700 deleted, keys 0..100 inserted again
    // (new chains over keys whose old versions the sweep has yet to find).
    put_all(
        &db,
        &(D..D + 500).map(|k| (k, k + 2_000_000)).collect::<Vec<_>>(),
        25,
    );
    delete_all(&db, D + 500..D + 700, 25);
    put_all(&db, &(0..100).map(|k| (k, -k)).collect::<Vec<_>>(), 25);
    assert!(
        !db.wait_for_sweep(Duration::ZERO),
        "the sweep ended before the racing writes did: nothing raced it"
    );
    let expected = |k: i64| -> Option<i64> {
        match k {
            0..100 => Some(-k),
            k if k < D => None,
            k if k < D + 500 => Some(k + 2_000_000),
            k if k < D + 700 => None,
            k => Some(k + 1_000_000),
        }
    };
    // Reads meanwhile see every write.
    for k in (0..N).step_by(7) {
        let got = db.get("kv", &Key::Int(k)).unwrap();
        assert_eq!(
            got,
            expected(k).map(|v| vec![Value::Int(k), Value::Int(v)]),
            "key {k}"
        );
    }
    assert!(
        db.wait_for_sweep(Duration::from_secs(120)),
        "the sweep did not finish"
    );
    // Found: every first version, and the updated version and tombstone of each key deleted
    // before the crash; and, for a key deleted since whose tombstone left the index before the
    // scan reached it, its version at open (garbage by then too).
    let swept = db.stats().swept_versions;
    let least = (N + 2 * D) as u64;
    assert!(
        (least..=least + 200).contains(&swept),
        "swept {swept}, expected {least} to {}",
        least + 200
    );
    assert_fully_collected(&db, &expected);
    db.close().unwrap();
    drop(db);

    let db = open(&path, false, 16_384);
    assert!(
        db.wait_for_sweep(Duration::ZERO),
        "a clean close left a sweep pending"
    );
    assert_fully_collected(&db, &expected);
    db.close().unwrap();
}

#[test]
fn a_sweep_cut_short_by_a_close_is_done_by_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    crash_with_orphans(&path);

    // One version per step: the close comes long before the scan ends.
    let db = open(&path, true, 1);
    std::thread::sleep(Duration::from_millis(50));
    assert!(!db.wait_for_sweep(Duration::ZERO));
    db.close().unwrap();
    drop(db);

    // The close left the database unclean: this open sweeps again, from the start.
    let db = open(&path, true, 16_384);
    assert!(
        db.wait_for_sweep(Duration::from_secs(60)),
        "the sweep did not finish"
    );
    assert_eq!(db.stats().swept_versions, (N + 2 * D) as u64);
    let expected = |k: i64| (k >= D).then_some(k + 1_000_000);
    assert_fully_collected(&db, &expected);
    db.close().unwrap();
}
