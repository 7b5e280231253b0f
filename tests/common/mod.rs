//! Helpers shared by test binaries: the storage-fault tests' (disk_faults, failpoints,
//! durable_wal) one-table schema and its rows, and the `(k int8, v int8)` table of the engine
//! tests, a database for the SQL tests, and where an index image keeps a data node far from
//! the root. Each binary uses some of them.
#![allow(dead_code)]

use std::time::Duration;

use augur::{ColumnDef, DataType, Database, Options, TableDef, Value};

/// Options that hold maintenance off (no checkpoint or collection write while a fault is
/// injected: the write that fails is the one the test makes).
pub fn quiet_maintenance() -> Options {
    Options {
        maintenance_interval: Duration::from_secs(3600),
        ..Options::default()
    }
}

/// A fresh database in a temporary directory, commits not synced (the SQL tests check answers,
/// not durability).
pub fn open_nosync() -> (tempfile::TempDir, Database) {
    let dir = tempfile::tempdir().unwrap();
    let db = open_nosync_at(dir.path());
    (dir, db)
}

/// The database in `dir`, opened (again) as [`open_nosync`] opens it.
pub fn open_nosync_at(dir: &std::path::Path) -> Database {
    Database::open(
        dir,
        Options {
            sync_commits: false,
            ..Options::default()
        },
    )
    .unwrap()
}

/// Creates table `kv (k int8 primary key, v text)`.
pub fn kv(db: &Database) {
    db.create_table(
        TableDef::new(
            "kv",
            vec![
                ColumnDef::new("k", DataType::Int8),
                ColumnDef::new("v", DataType::Text(None)),
            ],
            &["k"],
        )
        .unwrap(),
    )
    .unwrap();
}

/// The row of key `k` in `kv`.
pub fn row(k: i64) -> Vec<Value> {
    vec![Value::Int(k), Value::Text(format!("value {k}"))]
}

/// The definition of table `name (k int8 primary key, v int8)`.
pub fn int_pair_table(name: &str) -> TableDef {
    TableDef::new(
        name,
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Int8),
        ],
        &["k"],
    )
    .unwrap()
}

/// A data node of `image` far from the root (the last leaf holding keys, in key order), by
/// the image's directory (`index::alex::image`: 128-byte header with the node count at 24;
/// 112-byte records: kind at 0 (2 = data), slots offset at 8, capacity at 16, min and max key
/// at 72 and 80): the byte offset of the middle of its slot array, and its key range.
pub fn far_data_node(image: &[u8]) -> (usize, i64, i64) {
    let u64_at = |at: usize| u64::from_le_bytes(image[at..at + 8].try_into().unwrap());
    let nodes = u64_at(24) as usize;
    // (min key, middle of the slots, max key)
    let mut best: Option<(i64, usize, i64)> = None;
    for id in 0..nodes {
        let r = 128 + 112 * id;
        if u32::from_le_bytes(image[r..r + 4].try_into().unwrap()) != 2 {
            continue;
        }
        let (off, cap) = (u64_at(r + 8) as usize, u64_at(r + 16) as usize);
        let (min, max) = (u64_at(r + 72) as i64, u64_at(r + 80) as i64);
        if best.is_none_or(|b| min > b.0) && min < max {
            best = Some((min, off + cap * 16 / 2, max));
        }
    }
    let (min, at, max) = best.expect("a data node holding keys");
    (at, min, max)
}

/// The SQLSTATE of a statement's error, or "ok".
pub fn sql_code(r: augur::Result<Vec<augur::StatementResult>>) -> String {
    r.map(|_| "ok".to_string())
        .unwrap_or_else(|e| e.sqlstate().code().to_string())
}

/// Runs `sql`, panicking with it on an error.
pub fn sql_ok(s: &mut augur::Session, sql: &str) {
    s.execute(sql, &[]).unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The rows of the last statement of `sql`.
pub fn sql_rows(s: &mut augur::Session, sql: &str) -> Vec<Vec<Value>> {
    s.execute(sql, &[]).unwrap().pop().unwrap().rows().to_vec()
}
