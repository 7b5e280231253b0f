//! Augur as every benchmark configures and accounts it: the options for a memory budget and the
//! measured parts of its memory. One place, so that the comparison cannot drift between
//! programs, and so that the engine's budget API replaces exactly these two functions.
//!
//! TODO(engine budget API): when `augur::Options::with_memory_budget(bytes)` (row cache + block
//! cache + every index charged to one budget) and `augur::Database::memory()` (the parts, by
//! name) are on main, `options` becomes `Options::default().with_memory_budget(budget)` and
//! `memory_parts` maps `Database::memory()`. Until then the budget is split between the two
//! caches and the index comes on top of it: `memory_parts` charges it anyway (rule 3), so
//! the accounting shows Augur over its budget by the index's size.

use augur::{Database, Options};

use crate::budget::Part;

/// Augur's options for a memory budget of `budget` bytes.
pub fn options(budget: usize) -> Options {
    let mut o = Options {
        row_cache_bytes: budget / 2,
        ..Options::default()
    };
    o.store.block_cache_bytes = budget - budget / 2;
    o
}

/// What `options` lets Augur keep for the data by configuration (today: the two caches; the
/// index is not bounded by any option).
pub fn configured_bytes(o: &Options) -> u64 {
    (o.row_cache_bytes + o.store.block_cache_bytes) as u64
}

/// How the budget is spent, for the report's settings.
pub fn describe_options(o: &Options) -> String {
    format!(
        "row cache {} MiB + RocksDB block cache {} MiB (the budget split in two; the index is \
         not bounded by any option until Options::with_memory_budget exists, and is charged \
         on top)",
        o.row_cache_bytes >> 20,
        o.store.block_cache_bytes >> 20
    )
}

/// The measured parts of Augur's memory: charged to the budget (row cache, block cache, every
/// table's primary index, the direct read path's models) and listed apart (mapped files,
/// memtables, table readers).
pub fn memory_parts(db: &Database) -> Vec<Part> {
    let mut v = vec![Part::charged(
        "row cache (Stats::row_cache_bytes)",
        db.stats().row_cache_bytes,
    )];
    v.push(Part::charged(
        "block cache (rocksdb.block-cache-usage)",
        db.rocksdb_property("rocksdb.block-cache-usage").unwrap_or(0),
    ));
    let mut tables = db.tables();
    tables.sort_by_key(|t| t.def().name.clone());
    for t in tables {
        v.push(Part::charged(
            format!(
                "primary index of {} ({}, Table::index_heap_bytes)",
                t.def().name,
                t.key_index_kind().name()
            ),
            t.index_heap_bytes() as u64,
        ));
    }
    let st = db.stats();
    v.push(Part::charged(
        "direct-read models and block tables (Stats::direct.model_bytes)",
        st.direct.model_bytes,
    ));
    v.push(Part::listed(
        "mapped SST files (Stats::direct.mapped_bytes: file-backed, the OS page cache's pages)",
        st.direct.mapped_bytes,
    ));
    v.push(Part::listed(
        "memtables (rocksdb.cur-size-all-mem-tables)",
        db.rocksdb_property("rocksdb.cur-size-all-mem-tables")
            .unwrap_or(0),
    ));
    v.push(Part::listed(
        "table readers (rocksdb.estimate-table-readers-mem)",
        db.rocksdb_property("rocksdb.estimate-table-readers-mem")
            .unwrap_or(0),
    ));
    v
}
