//! Helpers shared by test binaries: the storage-fault tests' (disk_faults, failpoints,
//! durable_wal) one-table schema and its rows, and the `(k int8, v int8)` table of the engine
//! tests. Each binary uses some of them.
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
