//! The maintenance thread: after an unclean shutdown the crash sweep, then until close: keeping
//! the direct read path's mapped files in step with RocksDB's, garbage collection, index
//! checkpoints.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{gc, Inner};

/// Where the sweep after an unclean open stands.
enum Sweep {
    /// Nothing to sweep, or swept and collected.
    Done,
    /// Not yet scanned (or the last scan failed); try again at this time.
    Scan { at: Instant, backoff: Duration },
    /// Scanned and queued (this many versions); done once a collection round succeeds.
    Collect(usize),
}

/// The maintenance thread's body, until the database shuts down.
pub(crate) fn run(inner: Arc<Inner>) {
    inner.store.refresh_direct();
    let mut sweep = match *inner.pending_sweep.lock() {
        Some(_) => Sweep::Scan {
            at: Instant::now(),
            backoff: Duration::from_millis(100),
        },
        None => Sweep::Done,
    };
    // First thing: the sweep (and its collection), so that orphaned versions go early.
    sweep_step(&inner, &mut sweep);
    let interval = inner.opts.maintenance_interval;
    let mut last = Instant::now();
    let mut last_fit = Instant::now();
    while !inner.shutdown.load(Ordering::Acquire) {
        // Map the files RocksDB flushed, compacted or ingested since the last look (one property
        // read when nothing changed).
        inner.store.refresh_direct();
        // First the index images opened with lazy checks: a data node checked per step.
        // Then bring newly mapped files into the page tables (and, after a large load, back
        // into the page cache), 16 MiB per step; sleep only when there is nothing to do.
        // Then move mapped index images into huge pages, 16 MiB per step.
        if !check_step(&inner)
            && !inner.store.direct().populate_step(16 << 20)
            && !super::memory::promote_step(&inner, 8)
        {
            std::thread::sleep(Duration::from_millis(20).min(interval));
        }
        if last.elapsed() < interval {
            continue;
        }
        last = Instant::now();
        // Keep the live WAL file extended ahead of the commits (a new one after each switch).
        inner.store.extend_wal();
        // With a memory budget, the caches follow the indexes' growth (a walk of the indexes:
        // every few seconds, not every round).
        if last_fit.elapsed() >= std::time::Duration::from_secs(5) {
            super::memory::fit_caches(&inner);
            last_fit = Instant::now();
        }
        // Until it has succeeded, the sweep is retried (backing off); collection meanwhile
        // keeps tombstone rows (`gc::collect`).
        if !sweep_step(&inner, &mut sweep) {
            if let Err(e) = gc::collect(&inner) {
                tracing::warn!(error = %e, "garbage collection failed; it is retried");
            }
        }
        if inner.versions_since_ckpt.load(Ordering::Relaxed) >= inner.opts.checkpoint_every {
            if let Err(e) = inner.checkpoint_all() {
                tracing::warn!(error = %e, "index checkpoint failed");
            }
        }
    }
}

/// The background pass over index images opened with lazy checks ([`ImageCheck::Lazy`]): checks
/// the next unchecked data node of some table's image, under the index's read lock (readers
/// go on; a reader that needs that node waits for its check). A table whose checks are all
/// done (or one failed) then has its lazy state dropped under the write lock (`KeyIndex::settle`,
/// which swaps in the index rebuilt from the rows if a node failed). Returns whether it did
/// anything.
///
/// [`ImageCheck::Lazy`]: super::ImageCheck::Lazy
fn check_step(inner: &Inner) -> bool {
    let background = inner.opts.image_check == super::ImageCheck::Lazy;
    let tables: Vec<_> = inner.tables.read().values().cloned().collect();
    for t in tables {
        if background && t.pk.read().check_step() {
            return true;
        }
        if t.pk.read().checks_done() {
            t.pk.write().settle();
            return true;
        }
    }
    false
}

/// Advances the sweep after an unclean open: scans (when due), then collects; returns whether it
/// ran a collection round. Marks the sweep done (`pending_sweep` cleared) only once a round
/// after a complete scan succeeded; a scan cut short by shutdown leaves it pending, so that the
/// close leaves the database marked unclean and the next open sweeps again (else orphans stay).
fn sweep_step(inner: &Inner, sweep: &mut Sweep) -> bool {
    if let Sweep::Scan { at, backoff } = *sweep {
        if Instant::now() < at {
            return false;
        }
        let Some(w) = *inner.pending_sweep.lock() else {
            *sweep = Sweep::Done;
            return false;
        };
        match gc::sweep(inner, w) {
            Ok(Some(n)) => *sweep = Sweep::Collect(n),
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(error = %e, retry_ms = backoff.as_millis() as u64, "crash sweep failed; it is retried");
                *sweep = Sweep::Scan {
                    at: Instant::now() + backoff,
                    backoff: (backoff * 2).min(Duration::from_secs(10)),
                };
                return false;
            }
        }
    }
    let Sweep::Collect(n) = *sweep else {
        return false;
    };
    match gc::collect(inner) {
        Ok(_) => {
            inner.stats.lock().swept_versions = n as u64;
            tracing::info!(versions = n, "crash sweep collected orphaned versions");
            *inner.pending_sweep.lock() = None;
            *sweep = Sweep::Done;
        }
        Err(e) => tracing::warn!(error = %e, "collecting what the crash sweep found failed; it is retried"),
    }
    true
}
