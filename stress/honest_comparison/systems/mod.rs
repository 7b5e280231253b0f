//! The systems under test behind one interface: Augur (embedded API), Augur (SQL `Session`
//! with prepared statements), SQLite (rusqlite, prepared cached statements) in each of its
//! configurations, and raw RocksDB (keyed by primary key, opened through Augur's own `Store` so
//! its options are identical).
//!
//! Every operation has the same semantics on every side: reads copy the value out; update and
//! delete report whether the key existed; insert fails on an existing key (RocksDB: a `get`
//! first, since it has no such check of its own).

mod augur_db;
mod rocks;
mod sqlite;

pub use augur_db::{AugurApi, AugurSql};
pub use rocks::Rocks;
pub use sqlite::{Sqlite, SqliteConfig, SQLITE_PRAGMAS};

use anyhow::Result;
use augur_bench::budget::Part;

/// Order-preserving map of a u64 key to the i64 column value (so that u64 order = i64 order on
/// every side: ALEX, SQLite's INTEGER PRIMARY KEY and RocksDB's big-endian bytes agree).
#[inline]
pub fn ik(k: u64) -> i64 {
    (k ^ (1u64 << 63)) as i64
}
#[inline]
pub fn uk(i: i64) -> u64 {
    (i as u64) ^ (1u64 << 63)
}

/// How a cell's table is loaded: every method writes all rows in one durable (fsynced) step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// The system's bulk loader: Augur `Database::bulk_insert` (sorts, writes one SST file and
    /// ingests it); raw RocksDB: keys sorted, one `SstFileWriter` file, ingested.
    Loader,
    /// Augur's SQL layer: `COPY t (k, v) FROM STDIN` in one transaction block.
    Copy,
    /// INSERTs (SQLite) or puts in one WriteBatch (raw RocksDB) in key-generation order (random
    /// order for random and lognormal keys), one transaction.
    Inserts,
    /// The same, rows sorted by key first (sort time counted): SQLite's fastest load.
    InsertsSorted,
}

impl Load {
    /// The op name of its result row.
    pub fn op(self) -> &'static str {
        match self {
            Load::Loader => "bulk_loader",
            Load::Copy => "bulk_copy",
            Load::Inserts => "bulk_inserts",
            Load::InsertsSorted => "bulk_inserts_sorted",
        }
    }
}

/// What a system reports about itself after a phase, as (name, value): counters the child turns
/// into per-phase deltas (Augur's row-cache hits and misses) and sizes (SQLite's file).
pub type Observations = Vec<(String, f64)>;

pub trait System {
    /// Loads every key with its generation-0 value by `how`, durably. Called once per fresh
    /// directory.
    fn load(&mut self, how: Load, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()>;
    /// Closes every handle (clean shutdown).
    fn close(&mut self) -> Result<()>;
    /// Opens again (recovery) and answers one lookup.
    fn reopen(&mut self, probe: u64) -> Result<()>;
    /// Copies the value of `k` into `out`; false when absent.
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool>;
    /// The first `n` rows with key >= k, in key order.
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()>;
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool>;
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool>;
    /// Inserts a new key in its own commit; false if it existed.
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool>;
    /// The memory the system is allowed to keep for the data by its configuration.
    fn budget_bytes(&self) -> u64;
    /// The measured parts of its memory (rule 3): charged to the budget, or listed apart.
    fn memory_parts(&self) -> Vec<Part>;
    /// Counters and sizes the report's facts are computed from.
    fn observe(&self) -> Observations {
        Vec::new()
    }
    /// Where the last open's `took_us` went, by the engine's phases (Augur only).
    fn open_split(&self, _took_us: f64) -> Option<crate::OpenSplit> {
        None
    }
    /// Fails if the system is not in the configuration the report names (SQLite: `mmap_size`
    /// smaller than the file).
    fn check_config(&self) -> Result<()> {
        Ok(())
    }
    /// After a reopen, before the read measurements: one full read of the table through the
    /// system's API (Augur first waits for its own warm-up after open), which leaves each cache
    /// holding what its design keeps and every system's files read once. Returns the rows read.
    fn warm(&mut self) -> Result<u64>;
}
