//! The maintenance thread: after an unclean shutdown the crash sweep, then until close: keeping
//! the direct read path's mapped files in step with RocksDB's, garbage collection, index
//! checkpoints.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{gc, Inner};

/// The maintenance thread's body, until the database shuts down.
pub(crate) fn run(inner: Arc<Inner>) {
    inner.store.refresh_direct();
    let sweep_from = *inner.pending_sweep.lock();
    if let Some(w) = sweep_from {
        let r = gc::sweep(&inner, w).and_then(|n| gc::collect(&inner).map(|_| n));
        let done = r.is_ok();
        match r {
            Ok(n) => {
                inner.stats.lock().swept_versions = n as u64;
                tracing::info!(versions = n, "crash sweep collected orphaned versions")
            }
            Err(e) => tracing::warn!(error = %e, "crash sweep failed; the next open sweeps again"),
        }
        // A sweep cut short by shutdown or by an error stays pending: the close then leaves the
        // database marked unclean, so that the next open sweeps again (else orphans stay).
        if !inner.shutdown.load(Ordering::Acquire) && done {
            *inner.pending_sweep.lock() = None;
        }
    }
    let interval = inner.opts.maintenance_interval;
    let mut last = Instant::now();
    let mut last_fit = Instant::now();
    while !inner.shutdown.load(Ordering::Acquire) {
        // Map the files RocksDB flushed, compacted or ingested since the last look (one property
        // read when nothing changed).
        inner.store.refresh_direct();
        // Bring newly mapped files into the page tables (and, after a large load, back into the
        // page cache), 16 MiB per step; sleep only when there is nothing to read.
        if !inner.store.direct().populate_step(16 << 20) {
            std::thread::sleep(Duration::from_millis(20).min(interval));
        }
        if last.elapsed() < interval {
            continue;
        }
        last = Instant::now();
        // With a memory budget, the caches follow the indexes' growth (a walk of the indexes:
        // every few seconds, not every round).
        if last_fit.elapsed() >= std::time::Duration::from_secs(5) {
            super::memory::fit_caches(&inner);
            last_fit = Instant::now();
        }
        if let Err(e) = gc::collect(&inner) {
            tracing::warn!(error = %e, "garbage collection failed");
        }
        if inner.versions_since_ckpt.load(Ordering::Relaxed) >= inner.opts.checkpoint_every {
            if let Err(e) = inner.checkpoint_all() {
                tracing::warn!(error = %e, "index checkpoint failed");
            }
        }
    }
}
