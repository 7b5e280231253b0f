//! One memory budget for everything the engine keeps in process memory for the data: the
//! indexes first (primary ALEX or B-tree, their mapped images, secondary indexes), then the
//! direct read path's models and RocksDB's table readers (its index blocks), and the caches get
//! what is left. [`MemoryReport`] names every part.

use std::sync::Arc;

use super::cache::RowCache;
use super::Inner;
use crate::index::keyed::IndexBytes;
use crate::index::mapped::HugePage;

/// The block cache's share of what the indexes leave: it serves only reads the mapped files do
/// not (rows in RocksDB's memtable are in the row cache; iterators over unmapped files), so a
/// small one does.
const BLOCK_CACHE_MAX: usize = 32 << 20;
const BLOCK_CACHE_MIN: usize = 1 << 20;
/// The row cache's largest size under a budget. With the direct read path it holds only what the
/// mapped files do not: the versions of recent small commits (RocksDB's memtable, flushed at
/// 64 MiB) and versions read through RocksDB while a new file is not yet mapped. More would buy
/// no hits, and the cache's set table (a quarter of its size) is resident from the start; the
/// rest of the budget is left unused rather than spent on it.
const ROW_CACHE_MAX: usize = 64 << 20;
/// The budget's share (1/n) kept free for the growth of the indexes between two fits (the
/// maintenance thread fits every few seconds, and after each bulk load).
const GROWTH_RESERVE: u64 = 32;

/// Where the engine's memory for the data goes, in bytes. `charged` is the sum of the parts a
/// budget covers; the rest is reported beside it.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct MemoryReport {
    /// `Options::memory_budget`, if one is set.
    pub budget: Option<u64>,
    /// Primary indexes on the heap (ALEX nodes, B-tree keys).
    pub primary_index_heap: u64,
    /// Parts of mapped index images still in use (read in place from the image file).
    pub primary_index_mapped: u64,
    /// Secondary indexes (B-trees of value, key, rowid).
    pub secondary_indexes: u64,
    /// The direct read path's per-file models and block tables.
    pub direct_models: u64,
    /// RocksDB's table readers (each SST file's index block, held in memory).
    pub rocksdb_table_readers: u64,
    /// Block cache capacity (bytes in use beside it).
    pub block_cache: u64,
    pub block_cache_used: u64,
    /// Row cache capacity, its set table included (bytes in use beside it).
    pub row_cache: u64,
    pub row_cache_used: u64,
    /// The sum of the parts above the line: what a budget covers.
    pub charged: u64,
    /// Not charged: RocksDB's write buffers (rows not yet in a file).
    pub memtables: u64,
    /// Not charged: bytes of SST files mapped by the direct read path. These pages belong to
    /// the OS page cache, shared with every process and reclaimable, like the file pages any
    /// database reads through; they show as file-backed resident memory.
    pub mapped_files: u64,
}

fn index_bytes(inner: &Inner) -> (IndexBytes, u64) {
    let mut total = IndexBytes::default();
    let mut secondary = 0u64;
    for t in inner.tables.read().values() {
        let b = t.index_bytes();
        total.heap += b.heap;
        total.mapped += b.mapped;
        total.mapped_live += b.mapped_live;
        secondary += t.secondary_heap_bytes() as u64;
    }
    (total, secondary)
}

/// Measures every part now.
pub(crate) fn report(inner: &Inner) -> MemoryReport {
    let (idx, secondary) = index_bytes(inner);
    let d = inner.store.direct().stats();
    let prop = |n: &str| inner.store.rows_property(n).unwrap_or(0);
    let cache = inner.cache.load();
    let mut r = MemoryReport {
        budget: inner.opts.memory_budget.map(|b| b as u64),
        primary_index_heap: idx.heap as u64,
        primary_index_mapped: idx.mapped_live as u64,
        secondary_indexes: secondary,
        direct_models: d.model_bytes,
        rocksdb_table_readers: prop("rocksdb.estimate-table-readers-mem"),
        block_cache: prop("rocksdb.block-cache-capacity"),
        block_cache_used: prop("rocksdb.block-cache-usage"),
        row_cache: cache.capacity() as u64,
        row_cache_used: cache.weight(),
        charged: 0,
        memtables: prop("rocksdb.cur-size-all-mem-tables"),
        mapped_files: d.mapped_bytes,
    };
    r.charged = r.primary_index_heap
        + r.primary_index_mapped
        + r.secondary_indexes
        + r.direct_models
        + r.rocksdb_table_readers
        + r.block_cache
        + r.row_cache;
    r
}

/// With a budget: sizes the block cache and the row cache (at most [`ROW_CACHE_MAX`]) to what
/// the other parts leave.
/// Replaces the row cache (empty) only when its size would change by more than an eighth, so
/// that steady growth of the indexes does not keep emptying it.
pub(crate) fn fit_caches(inner: &Inner) {
    let Some(budget) = inner.opts.memory_budget else {
        return;
    };
    let r = report(inner);
    // Everything charged but the two caches this sizes.
    let fixed = r.charged - r.block_cache - r.row_cache;
    // A reserve for what the indexes and table readers add between two fits.
    let reserve = budget as u64 / GROWTH_RESERVE;
    let rest = (budget as u64).saturating_sub(fixed + reserve) as usize;
    let block = (rest / 16).clamp(BLOCK_CACHE_MIN, BLOCK_CACHE_MAX).min(rest);
    let row = (rest - block).min(ROW_CACHE_MAX);
    inner.store.set_block_cache_bytes(block.max(1));
    let now = inner.cache.load().capacity();
    if row.abs_diff(now) > now / 8 || (row == 0) != (now == 0) {
        let old = inner.cache.load_full();
        inner
            .cache
            .store(Arc::new(RowCache::new(row).counting_from(&old)));
    }
}

/// Moves up to `max` chunks of the mapped index images into anonymous huge pages (see
/// `index::mapped::Mapping::promote`: file pages cannot be huge pages, and an index read through
/// 4 KiB pages pays a TLB miss on nearly every node). Each page is allocated and faulted in
/// outside the lock; the index's write lock is held for one 2 MiB copy. Returns whether it did
/// anything; an error (no memory for the page) leaves the rest of the image as it is.
pub(crate) fn promote_step(inner: &Inner, max: usize) -> bool {
    let mut done = 0;
    let tables: Vec<_> = inner.tables.read().values().cloned().collect();
    for t in tables {
        while done < max && t.pk.read().promotion_pending() {
            t.pk.read().prefault_promotion();
            let page = match HugePage::new() {
                Ok(p) => p,
                Err(e) => {
                    tracing::debug!(error = %e, "index image left in file pages");
                    return false;
                }
            };
            match t.pk.write().promote(page) {
                Ok(true) => done += 1,
                Ok(false) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "index image left in file pages");
                    return false;
                }
            }
        }
    }
    done > 0
}

/// Whether any index image still has chunks in file pages.
pub(crate) fn promotion_pending(inner: &Inner) -> bool {
    inner
        .tables
        .read()
        .values()
        .any(|t| t.pk.read().promotion_pending())
}
