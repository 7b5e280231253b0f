//! The storage engine: tables in RocksDB, ALEX from primary keys to row positions, snapshot
//! isolation, durable group commits, recovery.
//!
//! See `docs/ARCHITECTURE.md` ("Life of a commit") for the protocol; the invariants it defends
//! are listed in `docs/INVARIANTS.md`.
//!
//! ```
//! use augur::{Database, Options, ColumnDef, DataType, TableDef, Value, Key};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Database::open(dir.path(), Options::default()).unwrap();
//! db.create_table(TableDef::new("users", vec![
//!     ColumnDef::new("id", DataType::Int8),
//!     ColumnDef::new("name", DataType::Text(None)),
//! ], &["id"]).unwrap()).unwrap();
//! db.transaction(|tx| {
//!     tx.insert("users", vec![Value::Int(1), "ada".into()])?;
//!     tx.insert("users", vec![Value::Int(2), "grace".into()])?;
//!     Ok(())
//! }).unwrap();
//! let row = db.get("users", &Key::Int(2)).unwrap().unwrap();
//! assert_eq!(row[1], Value::from("grace"));
//! ```

mod alter;
pub(crate) mod block_undo;
mod bulk;
mod cache;
pub mod catalog;
pub(crate) mod constraint;
mod ddl;
mod fetch;
pub(crate) mod fk;
mod gc;
mod integrity;
mod interrupt;
mod lifecycle;
mod locks;
mod maintenance;
mod memory;
mod options;
mod recovery;
mod retire;
mod secondary_form;
pub mod sequence;
pub mod table;
pub(crate) mod tally;
mod txn;
pub mod view;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex, RwLock};
use rocksdb::WriteBatch;

pub use catalog::{ColumnDef, IndexDef, TableDef};
pub use interrupt::{canceled_by_user, statement_timeout, CancelHandle, Interrupt, Request};
pub use memory::MemoryReport;
pub use options::{ImageCheck, IndexStats, Options, Stats};
pub use sequence::SequenceDef;
pub use table::Table;
pub use txn::{
    BatchError, Isolation, KeyRange, Locked, Savepoint, SequenceMemory, Transaction, BULK_COMMIT_ROWS,
};
pub use view::ViewDef;

use crate::error::{Error, Result, SqlState};
use crate::store::{Store, CF_META};
use crate::types::{Key, Row, RowRef};
use cache::RowCache;
use fetch::Resolved;
pub(crate) use lifecycle::sweep_fails;
use lifecycle::{
    open_inner, recovery_loop, shutdown, stop_maintenance, stop_recovery, Background, Wake, FAILING_SWEEPS,
};

/// The stored versions of one key as (rowid, is_tombstone, prev rowid), oldest first.
pub type VersionHistory = Vec<(u64, bool, u64)>;

struct CommitState {
    next_rowid: u64,
    next_table_id: u32,
}

pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) opts: Options,
    tables: RwLock<HashMap<String, Arc<Table>>>,
    commit: Mutex<CommitState>,
    /// Every rowid at or below this is committed, applied to the indexes and (for durable commits)
    /// synced. A snapshot is a value of this watermark.
    visible: AtomicU64,
    /// Active snapshots as (value, readers), ascending by value, for garbage collection. Values
    /// only grow (each is read from `visible` under this lock), so a new snapshot is the last
    /// entry or a new one after it; an entry leaves when its last reader ends. A deque rather
    /// than a map: no allocation per transaction, and it holds one entry per distinct snapshot
    /// in use (a few, even with many sessions).
    snapshots: Mutex<VecDeque<(u64, usize)>>,
    /// The row cache (replaced by a resized one when a memory budget asks: `memory::fit_caches`).
    pub(crate) cache: ArcSwap<RowCache>,
    gc: Mutex<gc::GcQueue>,
    /// One garbage collection round at a time (`gc::collect`): a round that fails puts what it
    /// took back, and no other round may delete a tombstone row meanwhile.
    gc_run: Mutex<()>,
    versions_since_ckpt: AtomicU64,
    /// One checkpoint at a time.
    ckpt_lock: Mutex<()>,
    /// Set by recovery after an unclean shutdown: the maintenance thread sweeps versions at or
    /// below this position for garbage the crash left behind.
    pending_sweep: Mutex<Option<u64>>,
    /// Set at open when RocksDB replayed rows from its WAL into the memtable (an unclean stop:
    /// `avoid_flush_during_recovery`), whose reads go through RocksDB until a flush puts them
    /// in a file the direct path maps: the warm-up's first step flushes them.
    recovered_rows: AtomicBool,
    shutdown: AtomicBool,
    closed: AtomicBool,
    stats: Mutex<Stats>,
    /// Row write locks of open transactions.
    pub(crate) locks: locks::LockTable,
    /// Sequences (sequence.rs), loaded on first use.
    sequences: sequence::Sequences,
    /// Views (view.rs), loaded on first use.
    views: view::Views,
    /// Which tables foreign keys reference (the named writes' question, kept per catalog
    /// change: every DDL that can change it calls `changed`).
    pub(crate) referenced: catalog::Referenced,
    next_txn: AtomicU64,
    /// Row versions read from a mapped file (the direct read path), and read from RocksDB.
    direct_reads: tally::Tally,
    store_reads: AtomicU64,
    /// Reads outside a transaction done again under a registered snapshot.
    read_retries: AtomicU64,
    /// Set when a write failure made the engine replace this instance with a freshly recovered
    /// one (see `Core`): its store is closed, its transactions end with 57P02 (begun before)
    /// or 57P03 (begun after; the engine is reopening).
    pub(crate) retired: AtomicBool,
    /// The first transaction id not begun before the retirement.
    retired_txn: AtomicU64,
    /// The maintenance thread (garbage collection, checkpoints, read-back).
    maint: Mutex<Option<JoinHandle<()>>>,
}

/// A database handle. Cheap to clone; all clones share one engine. The database closes (final
/// checkpoint, clean-shutdown marker) when [`Database::close`] is called or the last clone drops.
///
/// The engine instance behind it (`Inner`: RocksDB, indexes, caches) is replaced when a write
/// failure makes the engine reopen the database ("When the disk fails" in
/// docs/ARCHITECTURE.md); every clone sees the new one.
#[derive(Clone)]
pub struct Database {
    core: Arc<Core>,
    _bg: Arc<Background>,
}

/// What every clone of a [`Database`] shares: the current engine instance and the recovery
/// thread's state.
pub(crate) struct Core {
    /// The current engine instance.
    pub(crate) cur: ArcSwap<Inner>,
    path: PathBuf,
    opts: Options,
    /// Wakes the recovery thread (a store fault, or shutdown).
    wake: Arc<Wake>,
    stop: AtomicBool,
    recoveries: AtomicU64,
}

impl Database {
    /// Opens (creating if needed) the database in `path` and recovers it: every committed
    /// transaction is visible, the primary indexes equal the persisted rows.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Database> {
        let path = path.as_ref().to_path_buf();
        let wake = Arc::new(Wake::default());
        let inner = open_inner(&path, &opts, &wake, None)?;
        // Blocks a crash ended with ALTERs in them roll back those ALTERs.
        inner.apply_leftover_undo()?;
        inner.drop_leftover_retired()?;
        let core = Arc::new(Core {
            cur: ArcSwap::new(inner),
            path,
            opts,
            wake,
            stop: AtomicBool::new(false),
            recoveries: AtomicU64::new(0),
        });
        let c = core.clone();
        let handle = std::thread::Builder::new()
            .name("augur-recovery".into())
            .spawn(move || recovery_loop(c))
            .map_err(|e| Error::Storage(format!("cannot start the recovery thread: {e}")))?;
        let bg = Arc::new(Background {
            core: core.clone(),
            recovery: Mutex::new(Some(handle)),
        });
        Ok(Database { core, _bg: bg })
    }

    /// The current engine instance.
    #[inline]
    fn inner(&self) -> arc_swap::Guard<Arc<Inner>> {
        self.core.cur.load()
    }

    /// Blocks until the warm-up after open has finished ([`Stats::prewarm_done`]): every live
    /// file of the rows column family mapped and brought into the page tables (and, if it was
    /// not there, the page cache), and the primary indexes' mapped images moved into huge
    /// pages, for a caller that wants its first reads at full speed, as benchmarks do.
    pub fn wait_for_prewarm(&self) {
        while !self.prewarm_done() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn prewarm_done(&self) -> bool {
        let inner = self.inner();
        let d = inner.store.direct().stats();
        d.refreshes > 0
            && d.unpopulated_bytes == 0
            && !memory::promotion_pending(&inner)
            && !inner.recovered_rows.load(Ordering::Acquire)
    }

    /// Closes cleanly: collects old versions, writes index checkpoints and the clean-shutdown
    /// marker. Later calls on any clone fail.
    pub fn close(&self) -> Result<()> {
        shutdown(&self._bg)
    }

    /// Stops background work and releases the database without the clean-shutdown steps (no
    /// final checkpoint, no marker), as if the process had died after its last commit. For
    /// recovery tests; durability itself is tested by SIGKILL in `crash_test`.
    #[doc(hidden)]
    pub fn abandon(self) {
        stop_recovery(&self._bg);
        let inner = self.inner();
        stop_maintenance(&inner);
        inner.closed.store(true, Ordering::Release);
    }

    pub fn path(&self) -> &Path {
        &self.core.path
    }

    pub fn options(&self) -> &Options {
        &self.core.opts
    }

    /// Starts a transaction at the current snapshot ([`Isolation::Snapshot`]; see
    /// [`Transaction::set_isolation`]).
    pub fn begin(&self) -> Transaction {
        Transaction::new(self.core.cur.load_full())
    }

    /// Reads the row with primary key `key` (for tables without a primary key: its row
    /// identity) as of now, outside any transaction, and lends it to `f` in place; `None` when
    /// there is no such row. What `begin()` then [`Transaction::get_with`] returns, without a
    /// transaction's set-up: an autocommit read (the SQL layer's point SELECT outside a
    /// transaction block reads this way).
    ///
    /// ```
    /// # use augur::{Database, Options, TableDef, ColumnDef, DataType, Value, Key, ValueRef};
    /// # let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path(), Options::default())?;
    /// let t = db.create_table(TableDef::new("kv", vec![
    ///     ColumnDef::new("k", DataType::Int8),
    ///     ColumnDef::new("v", DataType::Int8),
    /// ], &["k"])?)?;
    /// db.insert("kv", vec![Value::Int(7), Value::Int(70)])?;
    /// let v = db.get_with(&t, &Key::Int(7), |row| matches!(row.get(1), Ok(Some(ValueRef::Int(70)))))?;
    /// assert_eq!(v, Some(true));
    /// assert_eq!(db.get_with(&t, &Key::Int(8), |_| ())?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_with<R>(&self, t: &Table, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
        let inner = self.core.cur.load();
        inner.check_open()?;
        if t.is_dropped() {
            return Err(txn::table_gone(&inner, u64::MAX, t));
        }
        // First without registering the snapshot (docs/INVARIANTS.md, "A read outside a
        // transaction registers no snapshot"): a version collected under the read is not
        // stored, and the read is then done again under a registered snapshot, which the
        // collector waits for.
        let files = inner.files();
        let snapshot = inner.visible.load(Ordering::Acquire);
        match txn::read_version(&inner, &files, t, key, snapshot)? {
            Resolved::Found(bytes) => txn::lend_stored(t, &bytes, f),
            Resolved::Absent => Ok(None),
            Resolved::Missing(_) => {
                inner.read_retries.fetch_add(1, Ordering::Relaxed);
                let snapshot = SnapshotGuard::new(&inner);
                txn::read_stored(&inner, t, key, snapshot.0, f)
            }
        }
    }

    /// Runs `f` in a transaction and commits it; rolls back if `f` fails.
    pub fn transaction<T>(&self, f: impl FnOnce(&mut Transaction) -> Result<T>) -> Result<T> {
        let mut tx = self.begin();
        let out = f(&mut tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Like [`Database::transaction`], retrying up to `attempts` times on serialization failures
    /// (40001) and deadlocks (40P01).
    pub fn transaction_retry<T>(
        &self,
        attempts: usize,
        mut f: impl FnMut(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        let mut last = None;
        for _ in 0..attempts.max(1) {
            let mut tx = self.begin();
            match f(&mut tx).and_then(|v| tx.commit().map(|_| v)) {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retryable() => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(Error::serialization))
    }

    /// Reads one row by primary key at the latest snapshot.
    pub fn get(&self, table: &str, key: &Key) -> Result<Option<Row>> {
        self.begin().get(table, key)
    }

    /// Inserts one row in its own transaction.
    pub fn insert(&self, table: &str, row: Row) -> Result<Key> {
        self.transaction(|tx| tx.insert(table, row))
    }

    /// Creates a table. `def.id` is assigned here.
    pub fn create_table(&self, def: TableDef) -> Result<Arc<Table>> {
        self.inner().create_table(def, false)
    }

    /// Creates a table unless one with that name exists (then returns the existing one).
    pub fn create_table_if_not_exists(&self, def: TableDef) -> Result<Arc<Table>> {
        self.inner().create_table(def, true)
    }

    pub fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool> {
        self.inner().drop_table(name, if_exists)
    }

    /// Removes every row of a table (gives it a new table id; the old rows are deleted in bulk).
    pub fn truncate(&self, name: &str) -> Result<()> {
        self.inner()
            .rebuild_table(name, |d| Ok(d.clone()), false, &keep_row, false)
            .map(|_| ())
    }

    /// Replaces a table's definition and rewrites its live rows under it (ALTER TABLE ... ADD
    /// PRIMARY KEY uses this). Fails, changing nothing, if the rows do not fit the new definition.
    pub fn rebuild_table(&self, name: &str, f: impl FnOnce(&TableDef) -> Result<TableDef>) -> Result<()> {
        self.inner()
            .rebuild_table(name, f, true, &keep_row, false)
            .map(|_| ())
    }

    pub fn create_index(&self, table: &str, index: IndexDef, if_not_exists: bool) -> Result<()> {
        self.inner().create_index(table, index, if_not_exists)
    }

    /// Drops the index named `name` on any table; returns false if none exists.
    pub fn drop_index(&self, name: &str) -> Result<bool> {
        self.inner().drop_index(name)
    }

    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        if retire::is_retired_name(name) {
            return Err(Error::undefined_table(name));
        }
        self.inner().table(name)
    }

    /// Every table, sorted by name.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        let mut v = self.inner().listed_tables();
        v.sort_by_key(|t| t.name());
        v
    }

    /// Writes an index checkpoint for every table now.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner().checkpoint_all()
    }

    /// Collects row versions no snapshot can see, now.
    pub fn collect_garbage(&self) -> Result<usize> {
        gc::collect(&self.inner())
    }

    /// Where the engine's memory for the data goes, part by part (indexes, models, caches; see
    /// [`MemoryReport`]). Walks the indexes: for monitoring, not for a hot path.
    pub fn memory(&self) -> MemoryReport {
        memory::report(&self.inner())
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.inner().stats.lock().clone();
        let (h, m) = self.inner().cache.load().hits_misses();
        s.cache_hits = h;
        s.cache_misses = m;
        s.row_cache_bytes = self.inner().cache.load().weight();
        s.row_locks_held = self.inner().locks.held() as u64;
        s.wal_syncs = self.inner().store.wal_syncs();
        s.wal_sync_secs = self.inner().store.wal_sync_secs();
        s.gc_pending = self.inner().gc.lock().pending() as u64;
        s.retired_tables = self
            .inner()
            .tables
            .read()
            .values()
            .filter(|t| t.is_retired())
            .count() as u64;
        s.direct_reads = self.inner().direct_reads.sum();
        s.store_reads = self.inner().store_reads.load(Ordering::Relaxed);
        s.read_retries = self.inner().read_retries.load(Ordering::Relaxed);
        s.direct = self.inner().store.direct().stats();
        s.prewarm_done = self.prewarm_done();
        s.storage_recoveries = self.core.recoveries.load(Ordering::Acquire);
        s.storage_degraded = self.inner().store.fault().is_some();
        s
    }

    /// Every table's primary index: size and, for ALEX, its structure. Walks each ALEX index's
    /// nodes under its read lock (microseconds to a few milliseconds per table): for monitoring
    /// scrapes, not for a hot path.
    pub fn index_stats(&self) -> Vec<IndexStats> {
        let mut tables = self.tables();
        tables.sort_by_key(|t| t.def().name.clone());
        tables
            .iter()
            .map(|t| {
                let pk = t.pk.read();
                let alex = match &*pk {
                    crate::index::keyed::KeyIndex::Alex(a) => Some(a.stats()),
                    crate::index::keyed::KeyIndex::BTree(_) => None,
                };
                IndexStats {
                    table: t.def().name.clone(),
                    kind: if alex.is_some() { "alex" } else { "btree" },
                    keys: pk.len(),
                    alex,
                }
            })
            .collect()
    }

    /// A RocksDB integer property of the rows column family (e.g. `rocksdb.estimate-num-keys`,
    /// `rocksdb.block-cache-usage`), None if RocksDB does not know it.
    pub fn rocksdb_property(&self, name: &str) -> Option<u64> {
        self.inner().store.rows_property(name)
    }

    /// Verifies invariant 4 of the design: for every table, an ordered scan of the primary index
    /// equals the newest version of each key found by scanning the persisted rows. Returns the
    /// number of live keys checked. Expensive: reads every stored version.
    pub fn verify_integrity(&self) -> Result<usize> {
        self.inner().verify_integrity()
    }

    /// Waits (up to `timeout`) until the sweep that follows an unclean open has collected what
    /// the crash left behind. Returns false on timeout.
    pub fn wait_for_sweep(&self, timeout: std::time::Duration) -> bool {
        let t0 = std::time::Instant::now();
        while self.inner().pending_sweep.lock().is_some() {
            if t0.elapsed() > timeout {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        true
    }

    /// Test hook: while `on`, the sweep after an unclean open of the database in `path` fails as
    /// a scan hitting a read error does (it is retried, backing off, until it succeeds), so that
    /// what the engine does while a sweep is pending can be tested. Applies to every open of
    /// that path in this process, the engine's own reopens included.
    #[doc(hidden)]
    pub fn fail_sweeps(path: &Path, on: bool) {
        let mut v = FAILING_SWEEPS.lock().unwrap_or_else(|e| e.into_inner());
        v.retain(|p| p != path);
        if on {
            v.push(path.to_path_buf());
        }
    }

    /// Diagnostics for crash tests: every stored version of `key` as (rowid, is_tombstone,
    /// prev), the index payload for it, and the table's checkpoint watermark.
    #[doc(hidden)]
    pub fn debug_key(&self, table: &str, key: &Key) -> Result<(VersionHistory, Option<u64>, u64)> {
        let t = self.inner().table(table)?;
        let mut out = Vec::new();
        self.inner()
            .store
            .for_each_row(t.id, 0, u64::MAX, |rowid, bytes| {
                let (tomb, prev, k) = crate::types::codec::decode_version_header(bytes)?;
                if &k == key {
                    out.push((rowid, tomb, prev));
                }
                Ok(true)
            })?;
        let p = t.pk.read().get(key)?;
        Ok((out, p, t.ckpt_watermark.load(Ordering::Acquire)))
    }

    /// The storage layer underneath (RocksDB and the direct read path), for tests that compare
    /// the direct read path with RocksDB's own answers and force flushes and compactions.
    #[doc(hidden)]
    pub fn store(&self) -> StoreRef {
        StoreRef(self.core.cur.load_full())
    }

    /// Total bytes of the database directory on disk.
    pub fn disk_bytes(&self) -> u64 {
        fn walk(p: &Path) -> u64 {
            std::fs::read_dir(p)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| match e.metadata() {
                            Ok(m) if m.is_dir() => walk(&e.path()),
                            Ok(m) => m.len(),
                            Err(_) => 0,
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        walk(&self.core.path)
    }
}

/// The row mapping of a rebuild that keeps the columns as they are.
fn keep_row(r: Row) -> Result<Row> {
    Ok(r)
}

/// The store of the engine instance current when [`Database::store`] was called.
#[doc(hidden)]
pub struct StoreRef(Arc<Inner>);

impl std::ops::Deref for StoreRef {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.0.store
    }
}

impl Inner {
    pub(crate) fn new_txn_id(&self) -> u64 {
        self.next_txn.fetch_add(1, Ordering::Relaxed)
    }

    /// Every table a statement can name: all but the retired incarnations (`retire.rs`).
    pub(crate) fn listed_tables(&self) -> Vec<Arc<Table>> {
        self.tables
            .read()
            .values()
            .filter(|t| !t.is_retired())
            .cloned()
            .collect()
    }

    pub(crate) fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::undefined_table(name))
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.retired.load(Ordering::Acquire) {
            return Err(Error::new(
                SqlState::CANNOT_CONNECT_NOW,
                "the database system is in recovery mode: the storage engine is reopening after a write failure",
            ));
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(SqlState::IO_ERROR, "the database is closed"));
        }
        Ok(())
    }

    /// The error for a transaction whose engine instance was retired: 57P02 if it began before
    /// the retirement (PostgreSQL ends every session with it when it crash-restarts; nothing
    /// the transaction wrote was stored), 57P03 if it began on the retired instance while the
    /// new one was opening. None while the instance is current.
    pub(crate) fn retired_error(&self, txn: u64) -> Option<Error> {
        if !self.retired.load(Ordering::Acquire) {
            return None;
        }
        if txn < self.retired_txn.load(Ordering::Acquire) {
            return Some(Error::new(
                SqlState::CRASH_SHUTDOWN,
                "terminating transaction: the storage engine restarted after a write failure; nothing this transaction wrote was stored",
            ));
        }
        self.check_open().err()
    }

    pub(crate) fn begin_snapshot(&self) -> u64 {
        let mut s = self.snapshots.lock();
        let v = self.visible.load(Ordering::Acquire);
        match s.back_mut() {
            Some((last, n)) if *last == v => *n += 1,
            _ => {
                debug_assert!(s.back().is_none_or(|&(last, _)| last < v));
                s.push_back((v, 1));
            }
        }
        v
    }

    pub(crate) fn end_snapshot(&self, v: u64) {
        let mut s = self.snapshots.lock();
        // The newest snapshot first: a short read (one lookup, one scan) ends before anything
        // commits after it began, so its entry is usually the last.
        let i = match s.back() {
            Some(&(last, _)) if last == v => s.len() - 1,
            _ => match s.binary_search_by_key(&v, |e| e.0) {
                Ok(i) => i,
                Err(_) => return,
            },
        };
        s[i].1 -= 1;
        if s[i].1 == 0 {
            if i + 1 == s.len() {
                s.pop_back();
            } else {
                s.remove(i);
            }
        }
    }

    /// The oldest snapshot any reader may hold.
    pub(crate) fn oldest_snapshot(&self) -> u64 {
        let s = self.snapshots.lock();
        s.front()
            .map(|e| e.0)
            .unwrap_or_else(|| self.visible.load(Ordering::Acquire))
    }

    pub(crate) fn checkpoint_all(&self) -> Result<()> {
        let _one = self.ckpt_lock.lock();
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        for t in tables {
            recovery::checkpoint_table(self, &t)?;
        }
        // Images of tables dropped or truncated since (under the checkpoint lock: no image is
        // being written now).
        recovery::remove_unused_images(self);
        self.versions_since_ckpt.store(0, Ordering::Release);
        self.stats.lock().checkpoints += 1;
        Ok(())
    }
}

/// A snapshot registered for one read outside a transaction ([`Database::get_with`]); ends
/// when dropped.
struct SnapshotGuard<'a>(u64, &'a Inner);

impl<'a> SnapshotGuard<'a> {
    fn new(db: &'a Inner) -> SnapshotGuard<'a> {
        SnapshotGuard(db.begin_snapshot(), db)
    }
}

impl Drop for SnapshotGuard<'_> {
    fn drop(&mut self) {
        self.1.end_snapshot(self.0);
    }
}
