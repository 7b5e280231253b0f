//! RocksDB: column families, key layout, durable writes with group commit.
//!
//! This layer knows bytes and column families, not SQL.
//!
//! | column family | key | value |
//! |---|---|---|
//! | `catalog` | table id (u32 BE) | table definition (JSON) |
//! | `rows` | table id (u32 BE) ‖ rowid (u64 BE) | one row version ([`crate::types::codec`]) |
//! | `meta` | ASCII name | counters, index checkpoint headers, clean-shutdown marker |
//! | `idxsnap` | table id ‖ generation (u64 BE) ‖ chunk (u32 BE) | sorted (key, rowid) pairs of a B-tree index checkpoint |
//!
//! ALEX index checkpoints are image files beside these (`engine::recovery`), mapped at open.
//!
//! Rowids only grow, so every row write RocksDB sees is an append at the end of its table's key
//! range, whatever the order of the primary keys.
//!
//! Write failures (docs/ARCHITECTURE.md, "When the disk fails"): a write refused before its
//! record reached the WAL is a definite error; a failed WAL sync or ingestion is an unknown
//! outcome ([`Error::OutcomeUnknown`]). Either marks the store faulted ([`Store::fault`]): it
//! accepts no more writes, and the engine reopens it ([`Store::close`], then a new `Store`).
//! A write RocksDB stops for good after a background error never returns to fault the store
//! itself; the engine's watchdog (`Store::break_stall`) ends it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, MappedRwLockReadGuard, Mutex, RwLock, RwLockReadGuard};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, Direction,
    IteratorMode, Options, ReadOptions, WriteBatch, WriteOptions, DB,
};

use crate::error::{Error, Result, SqlState};

pub mod direct;
mod fault;
mod read;
pub mod wait;
mod wal;

pub(crate) use wal::free_bytes;

pub const CF_CATALOG: &str = "catalog";
pub const CF_ROWS: &str = "rows";
pub const CF_META: &str = "meta";
pub const CF_IDXSNAP: &str = "idxsnap";

/// RocksDB tuning a user may want to change. Defaults suit a machine with a few GiB to spare.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// RocksDB block cache for the rows column family, bytes (with `Options::memory_budget`,
    /// only its initial size: the budget then sizes it).
    pub block_cache_bytes: usize,
    /// Bits per key of the bloom filter on row blocks (0 disables it, the default: the engine
    /// reads a row version only at a position an index handed it, so the read never misses and
    /// a filter would cost build time, memory and a probe per read without saving any I/O).
    pub bloom_bits_per_key: f64,
    /// Compress row blocks with LZ4 (default off: the direct read path serves rows from
    /// uncompressed blocks in place; compressed ones are read through RocksDB).
    pub compression: bool,
    /// Memtable size, bytes.
    pub write_buffer_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            block_cache_bytes: 32 << 20,
            bloom_bits_per_key: 0.0,
            compression: false,
            write_buffer_bytes: 64 << 20,
        }
    }
}

/// `table id ‖ rowid`, the key of a row version.
#[inline]
pub fn row_key(table: u32, rowid: u64) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..4].copy_from_slice(&table.to_be_bytes());
    k[4..].copy_from_slice(&rowid.to_be_bytes());
    k
}

pub fn decode_row_key(k: &[u8]) -> Option<(u32, u64)> {
    if k.len() != 12 {
        return None;
    }
    Some((
        u32::from_be_bytes(k[..4].try_into().ok()?),
        u64::from_be_bytes(k[4..].try_into().ok()?),
    ))
}

pub fn idxsnap_key(table: u32, generation: u64, chunk: u32) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&table.to_be_bytes());
    k[4..12].copy_from_slice(&generation.to_be_bytes());
    k[12..].copy_from_slice(&chunk.to_be_bytes());
    k
}

struct SyncState {
    /// Tickets handed out to writes that reached the WAL (not yet necessarily synced).
    written: u64,
    /// Every ticket up to this one is on stable storage.
    synced: u64,
    syncing: bool,
}

/// A write failure that stopped the store (see [`Store::fault`]).
#[derive(Clone, Debug)]
pub struct Fault {
    /// The device was full (ENOSPC): the engine waits for free space before it reopens.
    pub no_space: bool,
    /// RocksDB's or the file system's message.
    pub message: String,
}

/// The open RocksDB database, borrowed for one operation: [`Store::close`] waits until no such
/// borrow is left. Holds a read lock, so keep it for one call or one batch, never across a wait.
pub struct Db<'a>(MappedRwLockReadGuard<'a, DB>);

impl std::ops::Deref for Db<'_> {
    type Target = DB;
    fn deref(&self) -> &DB {
        &self.0
    }
}

impl Db<'_> {
    pub fn cf(&self, name: &str) -> &ColumnFamily {
        self.0.cf_handle(name).expect("column family created at open")
    }

    pub fn db(&self) -> &DB {
        &self.0
    }
}

/// The RocksDB database and the group-commit state around it.
pub struct Store {
    /// None once closed: the engine closes a faulted store to reopen it (RocksDB's lock on the
    /// directory allows one open instance), while transactions of the old engine may still hold
    /// this `Store`; what they try then fails cleanly instead of touching a closed database.
    db: RwLock<Option<DB>>,
    sync: Mutex<SyncState>,
    synced_cv: Condvar,
    /// Set with `fault` on the first write failure: no write is accepted after it, and no
    /// commit waiting for a WAL sync is acknowledged, until the engine reopens the database
    /// (PostgreSQL PANICs and crash-restarts in this case).
    poisoned: AtomicBool,
    fault: Mutex<Option<Fault>>,
    /// Set when this store answers a write "outcome unknown" (see [`Store::outcome_pending`]).
    unsure: AtomicBool,
    /// Called once, on the first fault (the engine wakes its recovery thread).
    on_fault: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// WAL fsyncs done by group commit (commits / this = commits sharing one fsync).
    wal_syncs: AtomicU64,
    /// Time spent in those fsyncs, nanoseconds.
    wal_sync_nanos: AtomicU64,
    /// Options of the rows column family (an SST written for ingestion must match them).
    rows_opts: Options,
    /// Point reads by position do not fill the block cache: the engine keeps the row itself in
    /// its row cache, so the block would be a second copy, and the insertion (allocate, LRU
    /// insert, evict and free another block) cost a tenth of a read that missed both caches
    /// (perf of `engine_perf --rows 10000000 --values random`). Scans still fill it.
    point_read: ReadOptions,
    /// Reads of row versions straight from the mapped SST files (`direct`).
    direct: direct::Direct,
    path: std::path::PathBuf,
    /// Test hook ([`Store::fail_row_reads`]): row reads through RocksDB fail while set.
    row_read_faults: AtomicBool,
    block_cache: Cache,
    /// RocksDB writes begun and ended (`append`, `write_nosync`, ingestion), for the watchdog
    /// ([`Store::break_stall`]).
    writes_begun: AtomicU64,
    writes_ended: AtomicU64,
    /// When the watchdog first saw writes in flight and `writes_ended` at this count.
    stall_seen: Mutex<Option<(u64, Instant)>>,
    /// Set by [`Store::stop_background_work`] (RocksDB then ends the writes it holds stopped).
    background_stopped: AtomicBool,
    /// Bytes of the batches written since open, and how far the live WAL file has been
    /// extended ahead of them ([`Store::extend_wal`]).
    wal_bytes: AtomicU64,
    wal_ahead: Mutex<wal::WalAhead>,
    /// The ticket of a WAL write that must be on stable storage before anything is made durable
    /// outside the WAL (an ingested file): the clearing of the clean-shutdown marker, appended
    /// at open without an fsync of its own. 0: none.
    sync_before_ingest: AtomicU64,
}

/// Whether files in `dir` can be opened with O_DIRECT (tmpfs, for one, refuses it; RocksDB
/// would then fail every flush).
fn direct_io_supported(dir: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let probe = dir.join(".direct-io-probe");
        let ok = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&probe)
            .is_ok();
        let _ = std::fs::remove_file(&probe);
        ok
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        false
    }
}

/// The store's database-wide RocksDB options for a database at `path`.
fn db_options(path: &Path) -> Result<Options> {
    let mut db_opts = Options::default();
    db_opts.create_if_missing(true);
    db_opts.create_missing_column_families(true);
    db_opts.set_max_background_jobs(2);
    // No `bytes_per_sync` (RocksDB's default, 0): it would only reach the MANIFEST and OPTIONS
    // files here (flushes and compactions write with O_DIRECT, the WAL has its own setting,
    // SstFileWriter takes the rows' options), and with a reused MANIFEST past 1 MiB RocksDB
    // 11.8.1's first range sync after an open asks for a negative length, which fails every
    // later metadata write with EINVAL (`manifest_tests`).
    db_opts.set_keep_log_file_num(4);
    // Flushes and compactions write their files around the OS page cache (O_DIRECT), where
    // the directory's filesystem takes it. A file written through the cache stays there in
    // the small pieces the writes made, which the direct read path's mapping can only map
    // page by page (4 KiB, a page-table walk per read); a file that starts on the disk
    // only is read back by the populate pass through the huge-page mapping, in 2 MiB pieces
    // (`direct::mapping`). SstFileWriter's files (bulk loads, large commits) already start
    // on the disk only.
    db_opts.set_use_direct_io_for_flush_and_compaction(direct_io_supported(path));
    // An open appends to the existing MANIFEST instead of writing and syncing a new one, and
    // a clean close leaves less for the next open to record (RocksDB 11.8; it falls back
    // to a new MANIFEST by itself where reuse is unsafe). After an unclean stop the WAL's
    // records are replayed into the memtable and left there, with the WAL kept until the
    // next flush, instead of flushed to a new file before open returns
    // (`avoid_flush_during_recovery`). No setters in the Rust crate.
    db_opts = db_opts.get_options_from_string(
        "reuse_manifest_on_open=true;optimize_manifest_for_recovery=true;avoid_flush_during_recovery=true",
    )?;
    Ok(db_opts)
}

impl Store {
    pub fn open(path: &Path, o: &StoreOptions) -> Result<Store> {
        std::fs::create_dir_all(path)?;
        let cache = Cache::new_lru_cache(o.block_cache_bytes.max(1 << 20));
        let db_opts = db_options(path)?;

        let mut rows = Options::default();
        let mut bb = BlockBasedOptions::default();
        bb.set_block_cache(&cache);
        // Small blocks, every entry a restart point: a point read by rowid touches one 4 KiB
        // block, and the direct read path finds the entry at the restart point its rowid
        // predicts (rowids are dense), one probe instead of a search (`direct::file`).
        bb.set_block_size(4 << 10);
        bb.set_block_restart_interval(1);
        // Index and filter blocks stay in the table readers' memory rather than in the block
        // cache: the cache is split into shards of a few MiB, and the filter of one large SST
        // (a bulk load of 10M rows writes one) does not fit in a shard, so with
        // cache_index_and_filter_blocks every point read re-read and re-checksummed it
        // (measured: minutes for 100K reads at 10M rows).
        bb.set_cache_index_and_filter_blocks(false);
        // The file format the direct read path reads in place (`direct::format`), pinned so
        // that a RocksDB upgrade does not change it underneath; a file of any other shape is
        // read through RocksDB.
        bb.set_format_version(7);
        bb.set_checksum_type(rocksdb::ChecksumType::XXH3);
        if o.bloom_bits_per_key > 0.0 {
            bb.set_bloom_filter(o.bloom_bits_per_key, false);
        }
        rows.set_block_based_table_factory(&bb);
        rows.set_compression_type(if o.compression {
            DBCompressionType::Lz4
        } else {
            DBCompressionType::None
        });
        rows.set_write_buffer_size(o.write_buffer_bytes);
        rows.set_level_compaction_dynamic_level_bytes(true);
        rows.set_memtable_whole_key_filtering(true);
        rows.set_memtable_prefix_bloom_ratio(0.05);

        let mut small = Options::default();
        small.set_write_buffer_size(8 << 20);
        let mut snap = Options::default();
        snap.set_write_buffer_size(32 << 20);
        snap.set_compression_type(DBCompressionType::None);

        let cfs = vec![
            ColumnFamilyDescriptor::new(CF_CATALOG, small.clone()),
            ColumnFamilyDescriptor::new(CF_ROWS, rows.clone()),
            ColumnFamilyDescriptor::new(CF_META, small),
            ColumnFamilyDescriptor::new(CF_IDXSNAP, snap),
        ];
        let db = DB::open_cf_descriptors(&db_opts, path, cfs)?;
        // Names left in the ingest directory by a crash (a file being written) are not needed.
        if let Ok(dir) = std::fs::read_dir(path.join("ingest")) {
            for e in dir.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let store = Store {
            db: RwLock::new(Some(db)),
            sync: Mutex::new(SyncState {
                written: 0,
                synced: 0,
                syncing: false,
            }),
            synced_cv: Condvar::new(),
            poisoned: AtomicBool::new(false),
            fault: Mutex::new(None),
            unsure: AtomicBool::new(false),
            on_fault: OnceLock::new(),
            wal_syncs: AtomicU64::new(0),
            wal_sync_nanos: AtomicU64::new(0),
            rows_opts: rows,
            point_read: {
                let mut ro = ReadOptions::default();
                ro.fill_cache(false);
                ro
            },
            direct: direct::Direct::new(path),
            path: path.to_path_buf(),
            row_read_faults: AtomicBool::new(false),
            block_cache: cache,
            writes_begun: AtomicU64::new(0),
            writes_ended: AtomicU64::new(0),
            stall_seen: Mutex::new(None),
            background_stopped: AtomicBool::new(false),
            wal_bytes: AtomicU64::new(0),
            wal_ahead: Mutex::new(wal::WalAhead::default()),
            sync_before_ingest: AtomicU64::new(0),
        };
        // The WAL RocksDB opened is extended before the first commit appends to it.
        store.extend_wal();
        Ok(store)
    }

    /// The direct read path (row versions read in place from mapped SST files).
    pub fn direct(&self) -> &direct::Direct {
        &self.direct
    }

    /// Brings the direct read path's file set in step with RocksDB's live files of the rows
    /// column family (cheap when nothing changed: one property read).
    pub fn refresh_direct(&self) {
        let Ok(db) = self.db() else {
            return;
        };
        let Ok(Some(version)) =
            db.property_int_value_cf(db.cf(CF_ROWS), "rocksdb.current-super-version-number")
        else {
            return;
        };
        self.direct.refresh(version, || {
            let files = db.live_files().ok()?;
            Some(
                files
                    .into_iter()
                    .filter(|f| f.column_family_name == CF_ROWS)
                    .map(|f| (f.name, f.end_key))
                    .collect(),
            )
        });
    }

    /// The open database, for one operation; fails with 57P03 once [`Store::close`] ran.
    pub fn db(&self) -> Result<Db<'_>> {
        // Recursive: a caller may hold one borrow (building a batch) while `append` takes
        // another, and `close` waiting for the write lock must not deadlock that caller.
        RwLockReadGuard::try_map(self.db.read_recursive(), |d| d.as_ref())
            .map(Db)
            .map_err(|_| {
                Error::new(
                    SqlState::CANNOT_CONNECT_NOW,
                    "the database system is in recovery mode: the storage engine is reopening after a write failure",
                )
            })
    }

    /// Closes RocksDB (after every borrow from [`Store::db`] has ended); later operations fail
    /// with 57P03. The engine calls this on a faulted store before it opens the directory again.
    pub fn close(&self) {
        // A writer RocksDB holds in a write stop would keep its borrow forever.
        self.stop_background_work();
        let db = self.db.write().take();
        drop(db);
        self.poisoned.store(true, Ordering::Release);
        let _s = self.sync.lock();
        self.synced_cv.notify_all();
    }

    /// Writes `batch` to the WAL and memtables without syncing and returns a ticket for
    /// [`Store::wait_durable`]. An error is definite: RocksDB failed before the record was
    /// complete in the WAL (a refusal in `PreprocessWrite`, or a failed `write(2)`, after which
    /// RocksDB neither retries nor flushes the rest of that WAL file, so recovery drops the
    /// torn tail), and no write with `sync` set shares the group (`write_sync` syncs through
    /// `wait_durable`), so no group fsync can fail after the record was written.
    pub fn append(&self, batch: WriteBatch) -> Result<u64> {
        self.write(batch, true)?;
        let mut s = self.sync.lock();
        s.written += 1;
        Ok(s.written)
    }

    /// One RocksDB write without sync (`append`, `write_nosync`, `write_unlogged`), through the
    /// WAL if `logged`; a failure faults the store.
    fn write(&self, batch: WriteBatch, logged: bool) -> Result<()> {
        self.check_poisoned()?;
        let mut wo = WriteOptions::default();
        wo.set_sync(false);
        if logged {
            self.wal_bytes
                .fetch_add(batch.size_in_bytes() as u64, Ordering::Relaxed);
        } else {
            wo.disable_wal(true);
        }
        let r = {
            let _w = self.in_flight();
            if let Some(e) = self.injected_write_failure() {
                Err(e)
            } else {
                self.db()?.write_opt(batch, &wo).map_err(Error::from)
            }
        };
        if let Err(e) = r {
            self.set_fault(&e);
            return Err(e);
        }
        Ok(())
    }

    /// The ticket of the latest [`Store::append`] (waiting for it waits for every write so far).
    pub fn last_ticket(&self) -> u64 {
        self.sync.lock().written
    }

    /// Blocks until the write with `ticket` is on stable storage. Concurrent callers share one
    /// WAL fsync (group commit): whoever finds no sync in progress syncs everything written so
    /// far; the others wait for it.
    pub fn wait_durable(&self, ticket: u64) -> Result<()> {
        if self.sync.lock().synced >= ticket {
            return Ok(());
        }
        // An fsync, or waiting for another commit's: long enough for the server's hook.
        wait::blocking(|| self.wait_durable_slow(ticket))
    }

    fn wait_durable_slow(&self, ticket: u64) -> Result<()> {
        let mut s = self.sync.lock();
        loop {
            if s.synced >= ticket {
                return Ok(());
            }
            if self.poisoned.load(Ordering::Acquire) {
                // Written, not known to be synced: the sync that failed may have lost it or not.
                self.unsure.store(true, Ordering::Release);
                let f = self
                    .fault()
                    .map_or_else(|| "the store was closed".to_string(), |f| f.message);
                return Err(Error::OutcomeUnknown(format!(
                    "a write-ahead-log sync failed ({f}); the commit may or may not have been stored (the storage engine reopens the database, after which a read tells)"
                )));
            }
            if !s.syncing {
                s.syncing = true;
                let target = s.written;
                drop(s);
                let t0 = std::time::Instant::now();
                let r = self.db().and_then(|db| db.flush_wal(true).map_err(Error::from));
                let nanos = t0.elapsed().as_nanos() as u64;
                s = self.sync.lock();
                s.syncing = false;
                match r {
                    Ok(()) => {
                        s.synced = s.synced.max(target);
                        self.wal_syncs.fetch_add(1, Ordering::Relaxed);
                        self.wal_sync_nanos.fetch_add(nanos, Ordering::Relaxed);
                    }
                    Err(e) => {
                        self.set_fault(&e);
                        self.synced_cv.notify_all();
                        return Err(self.unknown("the write-ahead-log sync", &e));
                    }
                }
                self.synced_cv.notify_all();
            } else {
                self.synced_cv.wait(&mut s);
            }
        }
    }

    /// Writes rows into one SST file and ingests it: atomic (all rows or none become part of
    /// the database) and durable when this returns, without the WAL. `fill` receives a `put`
    /// function and must call it with keys in strictly ascending order. Used for large commits;
    /// rowids are fresh, so the file overlaps no existing key.
    pub fn ingest_rows(
        &self,
        fill: impl FnOnce(&mut dyn FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        self.check_poisoned()?;
        // An ingestion syncs no WAL: what the WAL holds that must precede it goes first.
        let before = self.sync_before_ingest.load(Ordering::Acquire);
        if before != 0 {
            self.wait_durable(before)?;
        }
        let dir = self.path.join("ingest");
        std::fs::create_dir_all(&dir)?;
        let file = dir.join(format!(
            "bulk-{}-{}.sst",
            std::process::id(),
            rand::random::<u64>()
        ));
        let mut w = rocksdb::SstFileWriter::create(&self.rows_opts);
        w.open(&file)?;
        let mut count = 0u64;
        let filled = {
            let mut put = |k: &[u8], v: &[u8]| -> Result<()> {
                w.put(k, v)?;
                count += 1;
                Ok(())
            };
            fill(&mut put)
        };
        if let Err(e) = filled {
            drop(w);
            let _ = std::fs::remove_file(&file);
            return Err(e);
        }
        if count == 0 {
            drop(w);
            let _ = std::fs::remove_file(&file);
            return Ok(());
        }
        w.finish()?;
        let mut io = rocksdb::IngestExternalFileOptions::default();
        io.set_move_files(true);
        // Past this point the outcome is unknown on failure: RocksDB may have linked the file
        // and logged it in the MANIFEST before the step that failed.
        let r = {
            // Ingestion waits in RocksDB's write queue like a write.
            let _w = self.in_flight();
            self.db().and_then(|db| {
                db.ingest_external_file_cf_opts(db.cf(CF_ROWS), &io, vec![&file])
                    .map_err(Error::from)
            })
        };
        let _ = std::fs::remove_file(&file);
        if let Err(e) = r {
            self.set_fault(&e);
            return Err(self.unknown("ingesting the commit's file", &e));
        }
        // Map the new file at once. RocksDB's SstFileWriter drops what it writes from the OS
        // page cache (its `invalidate_page_cache`, which the C API cannot turn off), so the file
        // starts on the disk only; the maintenance thread's populate step reads it back through
        // the mapping (`direct::Direct::populate_step`).
        self.refresh_direct();
        Ok(())
    }

    /// Makes every later ingestion wait until the write with `ticket` is on stable storage
    /// (see [`Store::ingest_rows`]).
    pub(crate) fn sync_before_ingest(&self, ticket: u64) {
        self.sync_before_ingest.fetch_max(ticket, Ordering::AcqRel);
    }

    /// A durable write (catalog changes, checkpoints): appended and synced like a commit, so
    /// that no RocksDB write ever carries `sync` (see [`Store::append`]). An error from the
    /// append is definite; one from the sync is [`Error::OutcomeUnknown`].
    pub fn write_sync(&self, batch: WriteBatch) -> Result<()> {
        let ticket = self.append(batch)?;
        self.wait_durable(ticket)
    }

    /// Flushes every column family's memtable to its files (at a clean close, so that the next
    /// open has no WAL to recover into memtables and flush again).
    pub fn flush_memtables(&self) -> Result<()> {
        let db = self.db()?;
        let cfs: Vec<&ColumnFamily> = [CF_CATALOG, CF_ROWS, CF_META, CF_IDXSNAP]
            .iter()
            .map(|n| db.cf(n))
            .collect();
        db.flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default())?;
        Ok(())
    }

    /// Sets the block cache's capacity (a memory budget resizes it).
    pub fn set_block_cache_bytes(&self, bytes: usize) {
        // `Cache` is a shared handle; resizing through a clone resizes the one cache.
        self.block_cache.clone().set_capacity(bytes);
    }

    /// The database directory.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// A write that need not be durable now, but must survive a crash if a later synced write
    /// does (a checkpoint's chunks before its header).
    pub fn write_nosync(&self, batch: WriteBatch) -> Result<()> {
        self.write(batch, true)
    }

    /// A write that need not survive a crash at all, kept out of the WAL: the collector's
    /// deletions of row versions no snapshot can see. A crash loses those not yet flushed to a
    /// file, and the sweep after the unclean open finds those versions again (`gc::SweepScan`), in
    /// the background. Through the WAL, RocksDB's own open replayed them into a memtable and
    /// flushed it before Augur's recovery began: at 100M rows, after 1M updates had been
    /// collected, that was 1.65 s of replay and a 0.75 s flush of the 27 MB of deletions
    /// (reports/log/2026-11-open.md). RocksDB flushes unlogged writes at a clean close.
    pub fn write_unlogged(&self, batch: WriteBatch) -> Result<()> {
        self.write(batch, false)
    }

    /// Continues the WAL fsync counters of the store this one replaces (after a reopen).
    pub(crate) fn carry_wal_syncs(&self, old: &Store) {
        self.wal_syncs.fetch_add(old.wal_syncs(), Ordering::Relaxed);
        self.wal_sync_nanos
            .fetch_add(old.wal_sync_nanos.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// WAL fsyncs group commit has done since open.
    pub fn wal_syncs(&self) -> u64 {
        self.wal_syncs.load(Ordering::Relaxed)
    }

    /// Seconds spent in those fsyncs since open.
    pub fn wal_sync_secs(&self) -> f64 {
        self.wal_sync_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Flushes the rows column family's memtable to a file and, when `compact`, compacts all of
    /// its files into the last level (the warm-up after an unclean open flushes the rows
    /// recovered from the WAL; tests of the direct read path move rows between files at
    /// chosen moments).
    #[doc(hidden)]
    pub fn flush_rows(&self, compact: bool) -> Result<()> {
        let db = self.db()?;
        let cf = db.cf(CF_ROWS);
        db.flush_cf(cf)?;
        if compact {
            let mut o = rocksdb::CompactOptions::default();
            o.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
            db.compact_range_cf_opt(cf, None::<&[u8]>, None::<&[u8]>, &o);
        }
        Ok(())
    }

    /// A RocksDB property of the rows column family, e.g. `rocksdb.estimate-live-data-size`.
    pub fn rows_property(&self, name: &str) -> Option<u64> {
        let db = self.db().ok()?;
        db.property_int_value_cf(db.cf(CF_ROWS), name).ok().flatten()
    }
}

#[cfg(test)]
mod manifest_tests;
