//! Row-cache prewarm after open: a database that restarts comes back with its row cache full
//! instead of paying a RocksDB read for every row until the cache has warmed up query by query
//! (as InnoDB reloads its buffer pool at startup). Runs on the maintenance thread before its
//! first garbage collection and stops at shutdown; reads and writes go on meanwhile.
//!
//! Which rows: the newest row versions, by position, across all tables, until the cache's byte
//! budget is used (newest window first; see [`fill`]). Positions grow with every write, so the
//! newest versions are the rows written or updated last, and they include every current version
//! of a table that fits. A version already superseded is cached too (telling it apart would need
//! an index lookup per row); the garbage collector evicts what it deletes, as for any cached
//! version.
//!
//! Safe alongside everything else because a version's bytes never change once written: the
//! prewarm only fills empty ways (it never evicts what queries cached), and a version the
//! garbage collector deleted meanwhile can only waste its way (no index or version chain points
//! to a collected version, and positions are never reused).

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::cache::Fill;
use super::Inner;

/// Fills the row cache from the newest row versions; records what it did in the stats.
pub(crate) fn prewarm(inner: &Inner) {
    let t0 = Instant::now();
    let tables: Vec<u32> = inner.tables.read().values().map(|t| t.id).collect();
    let (kept, r) = fill(inner, &tables);
    let ms = t0.elapsed().as_millis() as u64;
    match r {
        Ok(()) => tracing::info!(rows = kept, ms, "row cache prewarmed"),
        Err(e) => tracing::warn!(error = %e, rows = kept, "row cache prewarm stopped"),
    }
    let mut s = inner.stats.lock();
    s.prewarm_rows = kept;
    s.prewarm_ms = ms;
    s.prewarm_done = true;
}

/// Newest first, in windows of positions read forward. Reading backward would defeat the
/// operating system's readahead: after a restart the files are often not in the page cache,
/// and a reverse pass then costs one disk read per block (1M rows: 2.8 s, against a fraction
/// of that forward). Within a window the older rows come first, so the budget may run out a
/// window's width short of the newest; windows are small next to the cache for that reason.
fn fill(inner: &Inner, tables: &[u32]) -> (u64, crate::error::Result<()>) {
    let (mut kept, mut offered) = (0u64, 0u64);
    // Stop after offering twice as many rows as the table has ways: with rows so small that the
    // ways run out before the bytes, the rest of a large table would only be skipped.
    let ways = inner.cache.ways() as u64;
    let window = (ways / 16).max(256);
    let mut hi = inner.commit.lock().next_rowid;
    // Set when the budget is used or the database is shutting down.
    let mut stop = false;
    while hi > 1 && !stop && offered < 2 * ways {
        let lo = hi.saturating_sub(window).max(1);
        for &t in tables {
            let r = inner.store.for_each_row(t, lo, hi, |rowid, v| {
                offered += 1;
                if offered % 4096 == 0 && inner.shutdown.load(Ordering::Acquire) {
                    stop = true;
                    return Ok(false);
                }
                match inner.cache.fill(rowid, v) {
                    Fill::Kept => kept += 1,
                    Fill::NoWay => {}
                    Fill::Full => {
                        stop = true;
                        return Ok(false);
                    }
                }
                Ok(true)
            });
            if let Err(e) = r {
                return (kept, Err(e));
            }
            if stop {
                break;
            }
        }
        hi = lo;
    }
    (kept, Ok(()))
}
