//! An engine instance's life: opening one from the directory (recovery, the maintenance thread),
//! shutting it down cleanly, and the recovery thread that replaces a faulted instance with a
//! freshly recovered one ("When the disk fails" in docs/ARCHITECTURE.md).

use super::*;

#[derive(Default)]
pub(super) struct Wake {
    m: Mutex<()>,
    cv: Condvar,
}

impl Wake {
    pub(super) fn notify(&self) {
        let _g = self.m.lock();
        self.cv.notify_all();
    }
    /// Sleeps up to `d` unless notified.
    pub(super) fn sleep(&self, d: Duration) {
        let mut g = self.m.lock();
        self.cv.wait_for(&mut g, d);
    }
}

pub(super) struct Background {
    pub(super) core: Arc<Core>,
    pub(super) recovery: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = shutdown(self);
    }
}

/// Stops the recovery thread, then closes the current engine instance cleanly.
pub(super) fn shutdown(bg: &Background) -> Result<()> {
    stop_recovery(bg);
    let inner = bg.core.cur.load_full();
    // The recovery thread's stall watchdog has stopped, and the close writes (collection,
    // checkpoints, the clean-shutdown marker): a write RocksDB stops for good after a background
    // error on a full device must not hang the close, so a watchdog runs for its length. Its
    // stop flag is read and set under one mutex, so its last sleep ends with the close.
    let limit = bg.core.opts.stalled_write_limit;
    let period = stall_check_period(limit);
    let done = Mutex::new(false);
    let ended = Condvar::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut d = done.lock();
            while !*d {
                inner.store.break_stall(limit);
                ended.wait_for(&mut d, period);
            }
        });
        let r = shutdown_inner(&inner);
        *done.lock() = true;
        ended.notify_all();
        r
    })
}

/// How often a stall watchdog looks (`Store::break_stall`).
fn stall_check_period(limit: Duration) -> Duration {
    (limit / 2).clamp(Duration::from_millis(10), Duration::from_millis(500))
}

pub(super) fn stop_recovery(bg: &Background) {
    bg.core.stop.store(true, Ordering::Release);
    bg.core.wake.notify();
    if let Some(h) = bg.recovery.lock().take() {
        let _ = h.join();
    }
}

pub(super) fn stop_maintenance(inner: &Inner) {
    inner.shutdown.store(true, Ordering::Release);
    let h = inner.maint.lock().take();
    if let Some(h) = h {
        let _ = h.join();
    }
}

pub(super) fn shutdown_inner(inner: &Arc<Inner>) -> Result<()> {
    stop_maintenance(inner);
    if inner.closed.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    // Best effort: if it fails, each sequence keeps its durable bound and the next open
    // resumes after it (a gap, never a repeat); the close goes on.
    let _ = inner.release_sequences();
    // Collect what can be collected, then checkpoint so the next open replays nothing, then
    // delete the tombstone rows that checkpoint covers (a clean open does not sweep: left
    // waiting for a later checkpoint, they would stay stored for good).
    gc::collect(inner)?;
    inner.checkpoint_all()?;
    gc::collect(inner)?;
    if inner.pending_sweep.lock().is_some() {
        // The sweep after an unclean open did not finish (a close right after the open, or
        // after the engine reopened itself): stay unclean so the next open runs it again.
        return Ok(());
    }
    if inner.gc.lock().pending() > 0 {
        // Versions a snapshot still open could see (a transaction not ended before the close):
        // the queue is not stored, and a clean open does not sweep, so they would stay for
        // good, and a superseded one would outlive its key's tombstone row (a deleted key
        // coming back). Stay unclean: the next open's sweep finds them.
        return Ok(());
    }
    let mut b = WriteBatch::default();
    b.put_cf(inner.store.db()?.cf(CF_META), b"clean_shutdown", [1u8]);
    inner.store.write_sync(b)?;
    // Leave the WAL with nothing to replay: otherwise the next open flushes the recovered
    // memtables (a file and an fsync per column family), which was most of a clean open.
    inner.store.flush_memtables()?;
    Ok(())
}

/// Opens the store in `path` and recovers an engine instance from it (the same path at startup
/// and after a write failure), with its maintenance thread running. `carry`: the instance it
/// replaces, whose cumulative counters go on in the new one.
pub(super) fn open_inner(
    path: &Path,
    opts: &Options,
    wake: &Arc<Wake>,
    carry: Option<&Inner>,
) -> Result<Arc<Inner>> {
    let t_store = std::time::Instant::now();
    let store = Store::open(path, &opts.store)?;
    let open_store_us = t_store.elapsed().as_micros() as u64;
    let recovered_rows = [
        "rocksdb.num-entries-active-mem-table",
        "rocksdb.num-entries-imm-mem-tables",
    ]
    .iter()
    .any(|p| store.rows_property(p).is_some_and(|n| n > 0));
    let w = wake.clone();
    store.set_on_fault(Box::new(move || w.notify()));
    let t_setup = std::time::Instant::now();
    let inner = Arc::new(Inner {
        cache: ArcSwap::from_pointee(RowCache::new(if opts.memory_budget.is_some() {
            0
        } else {
            opts.row_cache_bytes
        })),
        store,
        opts: opts.clone(),
        tables: RwLock::new(HashMap::new()),
        commit: Mutex::new(CommitState {
            next_rowid: 1,
            next_table_id: 1,
        }),
        visible: AtomicU64::new(0),
        snapshots: Mutex::new(VecDeque::new()),
        gc: Mutex::new(gc::GcQueue::default()),
        gc_run: Mutex::new(()),
        versions_since_ckpt: AtomicU64::new(0),
        ckpt_lock: Mutex::new(()),
        pending_sweep: Mutex::new(None),
        recovered_rows: AtomicBool::new(recovered_rows),
        shutdown: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        stats: Mutex::new(Stats::default()),
        locks: locks::LockTable::default(),
        sequences: sequence::Sequences::default(),
        views: view::Views::default(),
        referenced: Default::default(),
        next_txn: AtomicU64::new(1),
        direct_reads: Default::default(),
        store_reads: AtomicU64::new(0),
        read_retries: AtomicU64::new(0),
        retired: AtomicBool::new(false),
        retired_txn: AtomicU64::new(u64::MAX),
        maint: Mutex::new(None),
    });
    if let Some(old) = carry {
        let o = old.stats.lock().clone();
        let mut s = inner.stats.lock();
        s.commits = o.commits;
        s.conflicts = o.conflicts;
        s.lock_waits = o.lock_waits;
        s.deadlocks = o.deadlocks;
        s.versions_collected = o.versions_collected;
        s.checkpoints = o.checkpoints;
        drop(s);
        inner.store.carry_wal_syncs(&old.store);
        inner
            .next_txn
            .store(old.next_txn.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    let setup = t_setup.elapsed();
    recovery::recover(&inner)?;
    let t_rest = std::time::Instant::now();
    memory::fit_caches(&inner);
    let bg_inner = inner.clone();
    let handle = std::thread::Builder::new()
        .name("augur-maintenance".into())
        .spawn(move || maintenance::run(bg_inner))
        .map_err(|e| Error::Storage(format!("cannot start maintenance thread: {e}")))?;
    *inner.maint.lock() = Some(handle);
    let mut s = inner.stats.lock();
    s.open_store_us = open_store_us;
    s.open_setup_us = setup.as_micros() as u64;
    s.open_rest_us += t_rest.elapsed().as_micros() as u64;
    drop(s);
    Ok(inner)
}

/// Directories whose crash sweep fails ([`Database::fail_sweeps`]).
pub(super) static FAILING_SWEEPS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Whether a test made the crash sweep of the database in `path` fail.
pub(crate) fn sweep_fails(path: &Path) -> bool {
    FAILING_SWEEPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|p| p == path)
}

/// The recovery thread: waits for a store fault, then does what PostgreSQL's crash-restart
/// does, without the process restart: retires the faulted engine instance (its transactions
/// end, its RocksDB closes) and opens a new one from the directory, through the same recovery
/// as a start after a crash. After a full device it first waits for free space, while reads go
/// on from the faulted instance. If the reopen fails it retries, backing off to 5 s.
pub(super) fn recovery_loop(core: Arc<Core>) {
    let stopped = || core.stop.load(Ordering::Acquire);
    // Also how often the stall watchdog looks (`Store::break_stall`).
    let period = stall_check_period(core.opts.stalled_write_limit);
    loop {
        let fault = loop {
            if stopped() {
                return;
            }
            let cur = core.cur.load_full();
            if let Some(f) = cur.store.fault() {
                break f;
            }
            // A writer RocksDB has stopped for good never returns to fault the store.
            cur.store.break_stall(core.opts.stalled_write_limit);
            drop(cur);
            core.wake.sleep(period);
        };
        let old = core.cur.load_full();
        tracing::error!(fault = %fault.message, no_space = fault.no_space, "storage fault: the engine will reopen the database");
        // Writers RocksDB holds in a write stop (its no-space recovery waiting for space) get
        // their errors now rather than when space returns, and give back their borrows of the
        // database (`retire` waits for them, and for the maintenance thread, which may be one).
        old.store.stop_background_work();
        if fault.no_space {
            let mut said = false;
            while crate::store::free_bytes(&core.path).is_some_and(|b| b < core.opts.resume_free_bytes) {
                if !said {
                    tracing::warn!(
                        need = core.opts.resume_free_bytes,
                        "disk full: writes are refused until space is freed; reads go on"
                    );
                    said = true;
                }
                if stopped() {
                    return;
                }
                core.wake.sleep(Duration::from_millis(200));
            }
        }
        let t0 = std::time::Instant::now();
        retire(&old);
        let mut delay = Duration::from_millis(20);
        loop {
            if stopped() {
                return;
            }
            match open_inner(&core.path, &core.opts, &core.wake, Some(&old)) {
                Ok(new) => {
                    core.cur.store(new);
                    let n = core.recoveries.fetch_add(1, Ordering::AcqRel) + 1;
                    tracing::info!(
                        recoveries = n,
                        ms = t0.elapsed().as_millis() as u64,
                        "storage recovered: the database was reopened and writes resume"
                    );
                    break;
                }
                Err(e) => {
                    tracing::error!(error = %e, retry_ms = delay.as_millis() as u64, "reopening the database after a storage fault failed");
                    core.wake.sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }
}

/// Ends a faulted engine instance: no new work starts on it, its maintenance thread stops, its
/// tables count as dropped (statements planned against them plan again), and its RocksDB closes
/// once the operations running in it have returned.
pub(super) fn retire(old: &Inner) {
    old.retired_txn
        .store(old.next_txn.load(Ordering::Acquire), Ordering::Release);
    old.retired.store(true, Ordering::Release);
    old.closed.store(true, Ordering::Release);
    stop_maintenance(old);
    for t in old.tables.read().values() {
        t.dropped.store(true, Ordering::Release);
    }
    old.store.close();
}
