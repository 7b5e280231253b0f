//! Helpers shared by the storage-fault tests (disk_faults, failpoints, durable_wal): the
//! one-table schema they write and its rows.

use std::time::Duration;

use augur::{ColumnDef, DataType, Database, Options, TableDef, Value};

/// Options that hold maintenance off (no checkpoint or collection write while a fault is
/// injected: the write that fails is the one the test makes).
#[allow(dead_code)] // durable_wal wants maintenance running
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
