//! When a write fails: the store's fault state (poisoned, no space, an outcome still unknown),
//! the errors it answers (definite or 08007), and the watchdog that ends a write RocksDB has
//! stopped for good ("When the disk fails" in docs/ARCHITECTURE.md).

use super::*;

/// One RocksDB write in flight (see [`Store::break_stall`]); counted ended when dropped,
/// whichever way the write returns.
pub(super) struct InFlight<'a>(&'a Store);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.writes_ended.fetch_add(1, Ordering::AcqRel);
    }
}

impl Store {
    pub(super) fn in_flight(&self) -> InFlight<'_> {
        self.writes_begun.fetch_add(1, Ordering::AcqRel);
        InFlight(self)
    }

    /// The watchdog for a write RocksDB has stopped for good, run every few hundred
    /// milliseconds by the engine's recovery thread. RocksDB holds a writer in
    /// `DBImpl::DelayWrite` while writes are stopped (too many memtables or level-0 files) and
    /// its error handler reports a recovery in progress; after a flush failed on a full device
    /// that recovery is the `SstFileManager`'s, which resumes only once a memtable's worth of
    /// space (`write_buffer_size`, 64 MiB for the default column family) is free, so on a
    /// smaller or still full device the writer waits forever, holding RocksDB's write queue
    /// and a borrow of the database, and nothing ever faults the store (docs/ARCHITECTURE.md,
    /// "When the disk fails"). So: when writes are in flight, none has ended for `limit`,
    /// RocksDB says writes are stopped and it has had a background error since this open, this
    /// stops RocksDB's background work ([`Store::stop_background_work`]), which makes every
    /// stopped writer return its error before writing anything, and marks the store faulted
    /// (the writers' own errors first: 53100 when the device is full). Returns whether it did.
    pub(crate) fn break_stall(&self, limit: Duration) -> bool {
        // Ended before begun: every write counted ended was counted begun before it.
        let ended = self.writes_ended.load(Ordering::Acquire);
        let begun = self.writes_begun.load(Ordering::Acquire);
        let mut seen = self.stall_seen.lock();
        if begun == ended || self.poisoned.load(Ordering::Acquire) {
            *seen = None;
            return false;
        }
        let since = match *seen {
            Some((at, t)) if at == ended => t,
            _ => {
                *seen = Some((ended, Instant::now()));
                return false;
            }
        };
        if since.elapsed() < limit {
            return false;
        }
        let Ok(db) = self.db() else {
            return false;
        };
        let int = |name: &str| db.property_int_value(name).ok().flatten().unwrap_or(0);
        let injected = crate::failpoint::hit("rocksdb-write-stop");
        let stopped = int("rocksdb.is-write-stopped") == 1 || injected;
        let background_errors = int("rocksdb.background-errors").max(u64::from(injected));
        drop(db);
        if !stopped || background_errors == 0 {
            // A write stop with no error behind it is RocksDB's flow control: it ends when the
            // flush or compaction running now does.
            return false;
        }
        *seen = None;
        drop(seen);
        tracing::error!(
            waited_ms = since.elapsed().as_millis() as u64,
            background_errors,
            "RocksDB has stopped writes after a background error and does not resume them: ending the stopped writes and reopening the database"
        );
        self.stop_background_work();
        // The writers it woke fail with their own errors (the first fault wins).
        let t0 = Instant::now();
        while self.writes_ended.load(Ordering::Acquire) < begun && t0.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.set_fault(&Error::Storage(format!(
            "RocksDB stopped writes after a background error and did not resume them within {} ms",
            limit.as_millis()
        )));
        true
    }

    /// Stops RocksDB's background work (`DB::CancelAllBackgroundWork`, without waiting), as its
    /// close does first, on a store that will be closed: every writer waiting in a write stop
    /// then returns an error before its record is written (`DelayWrite` gives up once
    /// `shutting_down_` is set), and so gives back its borrow. No flush runs first: RocksDB
    /// flushes at this point only data written without the WAL, and Augur writes none.
    pub(crate) fn stop_background_work(&self) {
        if let Ok(db) = self.db() {
            db.cancel_all_background_work(false);
        }
        self.background_stopped.store(true, Ordering::Release);
    }

    /// A failure a test injected in place of the RocksDB write about to start (the fail points
    /// `store-write` and `rocksdb-write-stop`, src/failpoint.rs); None without the feature.
    pub(super) fn injected_write_failure(&self) -> Option<Error> {
        if crate::failpoint::hit("store-write") {
            return Some(Error::Storage("IO error: injected write failure".into()));
        }
        if crate::failpoint::hit("rocksdb-write-stop") {
            // As `DBImpl::DelayWrite`: wait while writes are stopped, until shutdown begins.
            while !self.background_stopped.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
            }
            return Some(Error::Storage("Shutdown in progress: stalled writes".into()));
        }
        None
    }

    /// The write failure that stopped this store, if one did.
    pub fn fault(&self) -> Option<Fault> {
        self.fault.lock().clone()
    }

    /// Sets what to call on the first fault (once; later calls are ignored).
    pub fn set_on_fault(&self, f: Box<dyn Fn() + Send + Sync>) {
        let _ = self.on_fault.set(f);
    }

    /// Records a write failure (the first one wins) and stops further writes.
    pub(super) fn set_fault(&self, e: &Error) {
        let first = {
            let mut f = self.fault.lock();
            let first = f.is_none();
            if first {
                *f = Some(Fault {
                    no_space: e.sqlstate() == SqlState::DISK_FULL,
                    message: e.to_string(),
                });
            }
            first
        };
        self.poisoned.store(true, Ordering::Release);
        if first {
            tracing::error!(error = %e, "storage write failed: writes stop until the engine has reopened the database");
            if let Some(f) = self.on_fault.get() {
                f();
            }
        }
    }

    /// The definite error of a write refused because an earlier one failed: 53100 while the
    /// device is full, otherwise 57P03 (the engine is reopening the database).
    pub(crate) fn check_poisoned(&self) -> Result<()> {
        if !self.poisoned.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(match self.fault() {
            Some(f) if f.no_space => Error::new(
                SqlState::DISK_FULL,
                format!("could not write to the database: disk full ({}); writes resume once space is freed", f.message),
            ),
            f => Error::new(
                SqlState::CANNOT_CONNECT_NOW,
                format!(
                    "the database system is in recovery mode: an earlier write failed ({}); the storage engine is reopening",
                    f.map_or_else(|| "the store is closed".to_string(), |f| f.message)
                ),
            ),
        })
    }

    /// Whether this faulted store may hold a write that no reader of it can see: a commit
    /// whose record reached the WAL but was never synced (answered, or about to be answered,
    /// "outcome unknown"), or an ingestion that failed after RocksDB may have linked its file.
    /// Such a commit never became visible, so what a transaction of this engine instance reads
    /// may be contradicted once the reopen has decided the outcome; the engine acknowledges no
    /// commit that rests on such reads alone (`Transaction::commit` of one that wrote nothing).
    /// False while the store is healthy.
    pub(crate) fn outcome_pending(&self) -> bool {
        if !self.poisoned.load(Ordering::Acquire) {
            return false;
        }
        if self.unsure.load(Ordering::Acquire) {
            return true;
        }
        let s = self.sync.lock();
        s.written > s.synced
    }

    /// The error for a commit whose record may be in the WAL but whose sync (or whose
    /// ingestion) failed.
    pub(super) fn unknown(&self, what: &str, e: &Error) -> Error {
        self.unsure.store(true, Ordering::Release);
        Error::OutcomeUnknown(format!(
            "{what} failed ({e}); the commit may or may not have been stored (the storage engine reopens the database, after which a read tells)"
        ))
    }

    /// The error for a commit whose rows an ingestion has already made durable when a later
    /// step fails (recording its positions, building its index): the client must not be told
    /// it did not happen, so the outcome is unknown (08007), and the store is faulted so that
    /// the engine reopens it and recovery rebuilds from the rows what memory missed.
    pub(crate) fn failed_after_ingest(&self, what: &str, e: &Error) -> Error {
        self.set_fault(e);
        self.unknown(what, e)
    }
}
