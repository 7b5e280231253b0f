//! Augur as every benchmark configures and accounts it: the options for a memory budget and the
//! measured parts of its memory. One place, so that the comparison cannot drift between
//! programs.
//!
//! The engine keeps the budget itself (`Options::with_memory_budget`): its indexes, the direct
//! read path's models and RocksDB's table readers first, then the block cache and the row cache
//! from what they leave, each within its own cap. `Database::memory()` names every part; the harness charges the same parts,
//! the caches by the bytes they hold (as SQLite's page cache and raw RocksDB's block cache are
//! charged), and lists the rest apart.

use augur::{Database, Options};

use crate::budget::Part;

/// Augur's options for a memory budget of `budget` bytes.
pub fn options(budget: usize) -> Options {
    Options::default().with_memory_budget(budget)
}

/// The budget `options` gives Augur for the data (0 when none is set).
pub fn configured_bytes(o: &Options) -> u64 {
    o.memory_budget.unwrap_or(0) as u64
}

/// How the budget is spent, for the report's settings.
pub fn describe_options(o: &Options) -> String {
    match o.memory_budget {
        Some(b) => format!(
            "`Options::with_memory_budget({} MiB)`: the engine charges its indexes (heap, and \
             the mapped image's pages in use), the direct read path's models and RocksDB's table \
             readers first; of what they leave, its block cache gets a small fraction and its row \
             cache at most a fixed cap (with the direct read path the row cache only holds rows \
             not yet in a mapped file), so Augur may be charged less than its budget",
            b >> 20
        ),
        None => format!(
            "no memory budget: row cache {} MiB + RocksDB block cache {} MiB, the indexes on top",
            o.row_cache_bytes >> 20,
            o.store.block_cache_bytes >> 20
        ),
    }
}

/// The measured parts of Augur's memory (`Database::memory()`): the parts the engine charges
/// to its budget, the two caches by the bytes they hold (their capacity named beside), and,
/// listed apart, the memtables and the mapped SST files (the OS page cache's pages).
pub fn memory_parts(db: &Database) -> Vec<Part> {
    let m = db.memory();
    let mib = |b: u64| b >> 20;
    vec![
        Part::charged(
            "primary index, heap (Database::memory: primary_index_heap)",
            m.primary_index_heap,
        ),
        Part::charged(
            "primary index, mapped image pages in use (primary_index_mapped)",
            m.primary_index_mapped,
        ),
        Part::charged("secondary indexes (secondary_indexes)", m.secondary_indexes),
        Part::charged(
            "direct-read models and block tables (direct_models)",
            m.direct_models,
        ),
        Part::charged(
            "RocksDB table readers (rocksdb_table_readers)",
            m.rocksdb_table_readers,
        ),
        Part::charged(
            format!(
                "block cache, in use (block_cache_used; capacity {} MiB)",
                mib(m.block_cache)
            ),
            m.block_cache_used,
        ),
        Part::charged(
            format!(
                "row cache, in use (row_cache_used; capacity {} MiB)",
                mib(m.row_cache)
            ),
            m.row_cache_used,
        ),
        Part::listed("memtables (memtables)", m.memtables),
        Part::listed(
            "mapped SST files (mapped_files: file-backed, the OS page cache's pages)",
            m.mapped_files,
        ),
    ]
}
