//! The maintenance thread, until close: the warm-up after an open (image checks, the rows'
//! populate, huge-page promotion), then, after an unclean shutdown, the crash sweep, paced;
//! keeping the direct read path's mapped files in step with RocksDB's, garbage collection,
//! index checkpoints.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{gc, Inner};

/// Where the sweep after an unclean open stands.
enum Sweep {
    /// Nothing to sweep, or swept and collected.
    Done,
    /// Scanning, a step at a time; the next step is due at `at` (paced, or backing off after a
    /// failed step).
    Scan {
        scan: gc::SweepScan,
        at: Instant,
        backoff: Duration,
    },
    /// Scanned and queued (this many versions); done once a collection round succeeds.
    Collect(usize),
}

/// The maintenance thread's body, until the database shuts down.
pub(crate) fn run(inner: Arc<Inner>) {
    inner.store.refresh_direct();
    let pending = *inner.pending_sweep.lock();
    let mut sweep = match pending {
        Some(w) => Sweep::Scan {
            scan: gc::SweepScan::new(&inner, w),
            at: Instant::now(),
            backoff: Duration::from_millis(100),
        },
        None => Sweep::Done,
    };
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
        // Then, once that warm-up has nothing left, the crash sweep's scan, a paced step at a
        // time: it reads every stored version through RocksDB and looks each up in the index,
        // which in the first seconds after an open would take the CPU, memory bandwidth and
        // disk the first reads need.
        if !flush_recovered_step(&inner)
            && !check_step(&inner)
            && !inner.store.direct().populate_step(16 << 20)
            && !super::memory::promote_step(&inner, 8)
            && !sweep_scan_step(&inner, &mut sweep)
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
        // Until the sweep's collection has succeeded, collection keeps tombstone rows
        // (`gc::collect`).
        if !sweep_collect_step(&inner, &mut sweep) {
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

/// After an unclean stop: flushes the rows RocksDB replayed from its WAL into the memtable to
/// a file (the next `refresh_direct` maps it), so that their reads leave RocksDB's path. Done
/// here, not before open returns, so the open does not wait for the write. Returns whether
/// it did anything (a failure is retried at the next step).
fn flush_recovered_step(inner: &Inner) -> bool {
    if !inner.recovered_rows.load(Ordering::Acquire) {
        return false;
    }
    match inner.store.flush_rows(false) {
        Ok(()) => inner.recovered_rows.store(false, Ordering::Release),
        Err(e) => {
            tracing::warn!(error = %e, "flushing the rows recovered from the WAL failed; it is retried");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    true
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

/// One step of the sweep's scan after an unclean open, if one is due: reads up to
/// `Options::sweep_batch` stored versions, then makes the next step wait as long as this one
/// took (the sweep takes at most about half of the maintenance thread's time, and leaves the
/// rest to the reads meanwhile). A failed step is retried, backing off to 10 s; a complete scan
/// queues what it found and collects it. Returns whether it read anything.
fn sweep_scan_step(inner: &Inner, sweep: &mut Sweep) -> bool {
    let Sweep::Scan { scan, at, backoff } = sweep else {
        return false;
    };
    if Instant::now() < *at {
        return false;
    }
    if inner.pending_sweep.lock().is_none() {
        *sweep = Sweep::Done;
        return false;
    }
    let t0 = Instant::now();
    match scan.step(inner, inner.opts.sweep_batch) {
        Ok(gc::SweepProgress::More) => {
            *at = Instant::now() + t0.elapsed();
        }
        Ok(gc::SweepProgress::Scanned) => {
            let Sweep::Scan { scan, .. } = std::mem::replace(sweep, Sweep::Done) else {
                unreachable!("matched above");
            };
            *sweep = Sweep::Collect(scan.finish(inner));
            // Collected at once, not at the next round (a failure is retried by the rounds).
            sweep_collect_step(inner, sweep);
        }
        // Shutdown: the sweep stays pending, the close leaves the database unclean.
        Ok(gc::SweepProgress::Stopped) => return false,
        Err(e) => {
            tracing::warn!(error = %e, retry_ms = backoff.as_millis() as u64, "crash sweep failed; it is retried");
            *at = Instant::now() + *backoff;
            *backoff = (*backoff * 2).min(Duration::from_secs(10));
        }
    }
    true
}

/// Collects what the sweep's complete scan queued; returns whether it ran a collection round.
/// Marks the sweep done (`pending_sweep` cleared) only once that round succeeded; until then
/// (a scan cut short by shutdown included) the close leaves the database marked unclean and
/// the next open sweeps again (else orphans stay).
fn sweep_collect_step(inner: &Inner, sweep: &mut Sweep) -> bool {
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
