//! Engine behaviour: the invariants of docs/INVARIANTS.md, tested through the embedded API.
//! One test binary; its modules by topic.

#[path = "../common/mod.rs"]
mod common;
mod scans;
mod storage;
mod txn;

use std::time::Duration;

use augur::{Database, Key, Options, Value};

fn opts() -> Options {
    Options {
        maintenance_interval: Duration::from_millis(10),
        checkpoint_every: 500,
        ..Options::default()
    }
}

fn kv_table(db: &Database, name: &str) {
    db.create_table(common::int_pair_table(name)).unwrap();
}

fn val(db: &Database, table: &str, k: i64) -> Option<i64> {
    db.get(table, &Key::Int(k)).unwrap().map(|r| match r[1] {
        Value::Int(v) => v,
        ref o => panic!("unexpected {o:?}"),
    })
}
