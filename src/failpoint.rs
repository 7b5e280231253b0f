//! Fault injection points for tests: named places in the commit and close paths where a test
//! built with the `failpoints` feature makes a step fail (tikv's `fail` crate); without the
//! feature every point is the constant `false` and nothing of the crate is compiled.
//!
//! They stand in for failures that cannot be produced on cue from outside: release RocksDB has
//! no sync points, and libfiu (tests/disk_faults.rs) fails system calls, not a chosen step.
//! The points, by name:
//! - `store-write`: a RocksDB write (`Store::append`, `Store::write_nosync`,
//!   `Store::write_unlogged`) fails with an I/O error before its record reaches the WAL (or
//!   the memtable).
//! - `rocksdb-write-stop`: RocksDB has stopped writes after a background error and does not
//!   resume them (a full device, "When the disk fails" in docs/ARCHITECTURE.md): a write waits,
//!   as in RocksDB's `DBImpl::DelayWrite`, until background work is cancelled, then fails, and
//!   the store's probes of `rocksdb.is-write-stopped` and `rocksdb.background-errors` say so.
//! - `bulk-index-build`: building a bulk load's index fails (configure it with `panic`).
//! - `point-read-fetch`: a point read between its primary-index lookup and the fetch of the
//!   version it found (a test holds the read there with a callback, to collect garbage under
//!   it).
//! - `store-row-scan`: a read of a table's rows in rowid order (`Store::for_each_row`, what an
//!   index is rebuilt from) fails with an I/O error.
//! - `block-ddl-finish`: the end of a transaction block whose rows committed fails before its
//!   ALTER undo records are deleted and its retired tables dropped (what a crash there
//!   leaves: `sql/session/block_ddl.rs`).

/// Whether point `name` is on (a `return` action); runs its other actions (`panic`, `sleep`,
/// `pause`) in place.
#[inline(always)]
pub(crate) fn hit(name: &str) -> bool {
    #[cfg(feature = "failpoints")]
    {
        fail::eval(name, |_| ()).is_some()
    }
    #[cfg(not(feature = "failpoints"))]
    {
        let _ = name;
        false
    }
}
