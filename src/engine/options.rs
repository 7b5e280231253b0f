//! The engine's options ([`Options`]) and its monitoring counters ([`Stats`], [`IndexStats`]).

use std::time::Duration;

use crate::store::StoreOptions;

/// Options for [`Database::open`](crate::Database::open).
#[derive(Clone, Debug)]
pub struct Options {
    /// fsync the write-ahead log before a commit returns (default: true). When false, a commit
    /// that returned may be lost in a crash (but never torn).
    pub sync_commits: bool,
    /// Byte budget of the in-process row cache (row versions by rowid; it holds the versions of
    /// recent small commits, which sit in RocksDB's memtable where the direct read path does not
    /// reach, and rows read through RocksDB). With `memory_budget`, only its initial size.
    pub row_cache_bytes: usize,
    /// One budget, in bytes, for everything the engine keeps in process memory for the data
    /// (default: none). The indexes are charged first (primary and secondary, mapped index
    /// images included), then the direct read path's models and RocksDB's table readers; the
    /// block cache and the row cache get what is left, and are resized as the indexes grow.
    /// `Database::memory` reports every part. See [`Options::with_memory_budget`].
    pub memory_budget: Option<usize>,
    /// RocksDB tuning.
    pub store: StoreOptions,
    /// Write a new index checkpoint after this many row versions (recovery replays at most
    /// about this many versions per table after a crash).
    pub checkpoint_every: u64,
    /// How often the background thread collects old versions and checks for checkpoints.
    pub maintenance_interval: Duration,
    /// After a write failed because the device was full, the engine reopens the database (and
    /// writes resume) once the file system has at least this many bytes free (default 64 MiB:
    /// the reopen writes a new WAL and flushes what it recovered).
    pub resume_free_bytes: u64,
    /// A write RocksDB keeps waiting in a write stop after a background error (a flush or
    /// compaction failed) for this long, with no other write ending meanwhile, makes the engine
    /// treat the store as failed and reopen it (default 10 s). RocksDB itself would hold it
    /// until its own recovery succeeds, which after a full device is never while less than a
    /// memtable's worth of space is free ("When the disk fails" in docs/ARCHITECTURE.md).
    pub stalled_write_limit: Duration,
    /// When open checksums the data nodes of the primary indexes' images (default
    /// [`ImageCheck::Lazy`]).
    pub image_check: ImageCheck,
    /// Row versions the crash sweep after an unclean open reads per step (default 16,384). The
    /// sweep starts once the maintenance thread's warm-up (image checks, the rows' populate,
    /// huge-page promotion) has nothing left to do, and pauses after each step for as long as
    /// the step took, so that it takes at most about half of that thread's time
    /// (docs/ARCHITECTURE.md, "Garbage collection").
    pub sweep_batch: usize,
}

/// When the data nodes of an index image (nearly all of its bytes) are checksummed. The header,
/// the node directory and the model nodes are checked at open in every case, and a node that
/// fails is never read: the index is rebuilt from the rows (`docs/ARCHITECTURE.md`,
/// "Recovery").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageCheck {
    /// All of them before open returns.
    AtOpen,
    /// Each the first time a read or write touches it, and the rest by the maintenance thread
    /// in the background, from the open on.
    Lazy,
    /// Each the first time a read or write touches it, and no background pass (for tests).
    OnTouchOnly,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sync_commits: true,
            row_cache_bytes: 64 << 20,
            memory_budget: None,
            store: StoreOptions::default(),
            checkpoint_every: 1_000_000,
            maintenance_interval: Duration::from_millis(200),
            resume_free_bytes: 64 << 20,
            stalled_write_limit: Duration::from_secs(10),
            image_check: ImageCheck::Lazy,
            sweep_batch: 16_384,
        }
    }
}

impl Options {
    /// These options with one memory budget covering indexes and caches (see
    /// [`Options::memory_budget`]).
    ///
    /// ```
    /// let o = augur::Options::default().with_memory_budget(512 << 20);
    /// assert_eq!(o.memory_budget, Some(512 << 20));
    /// ```
    pub fn with_memory_budget(mut self, bytes: usize) -> Options {
        self.memory_budget = Some(bytes);
        self
    }
}

/// Counters for monitoring and tests.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Stats {
    pub commits: u64,
    /// Commits or writes refused with 40001.
    pub conflicts: u64,
    /// Writes that waited for another transaction's row lock.
    pub lock_waits: u64,
    /// Lock waits refused with 40P01.
    pub deadlocks: u64,
    /// Row locks held by open transactions now.
    pub row_locks_held: u64,
    pub versions_collected: u64,
    /// Row versions queued for garbage collection now (superseded versions and tombstones
    /// waiting for the oldest snapshot, tombstone rows waiting for an index checkpoint).
    pub gc_pending: u64,
    /// Old incarnations of tables kept for the rollback of open transaction blocks that
    /// rewrote them (`ALTER TABLE ... DROP COLUMN` in a block: `engine/retire.rs`).
    pub retired_tables: u64,
    pub checkpoints: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub row_cache_bytes: u64,
    pub recovery_ms: u64,
    pub recovered_unclean: bool,
    /// Open, by phase (microseconds): RocksDB's own open (its WAL recovery included); then,
    /// summed over tables, reading the index checkpoints
    /// (mapping images and reading their node directories; or reading sorted chunks and
    /// bulk-loading them), checksumming images, and replaying the versions written after the
    /// checkpoints (`open_secondary_us` apart). The other phases below account for the rest.
    pub open_store_us: u64,
    /// Open's other phases (microseconds): the engine's in-memory state (the row cache's set
    /// table is mapped here, not written: its pages are faulted in by use), clearing the
    /// clean-shutdown marker (a WAL write; the first durable write after the open syncs it); reading the counters and the catalog; the
    /// tables' work outside the index phases (their definitions and `Table::new`); and after
    /// recovery, removing unused image files, fitting the caches to a memory budget and
    /// starting the maintenance thread.
    pub open_setup_us: u64,
    pub open_marker_us: u64,
    pub open_catalog_us: u64,
    pub open_tables_other_us: u64,
    pub open_rest_us: u64,
    pub open_map_us: u64,
    pub open_verify_us: u64,
    pub open_replay_us: u64,
    /// Row versions the open replayed (written after their table's checkpoint).
    pub open_replayed_versions: u64,
    /// Bytes of index images the open read into memory (checked as they were read) rather
    /// than mapped, because the replay onto them was dense enough to reach most of their
    /// pages; that read is part of `open_verify_us`.
    pub open_copied_image_bytes: u64,
    /// Index images refused at open (checksum, format, or not the checkpoint's own), their
    /// indexes rebuilt from the rows.
    pub index_images_refused: u64,
    /// Index images a data node of which failed its checksum after the open returned (checked
    /// lazily: [`ImageCheck::Lazy`]), their indexes rebuilt from the rows.
    pub index_images_damaged: u64,
    /// Open's time for the secondary indexes (microseconds, summed over tables): loading each
    /// table's persisted form and applying the replayed versions, or rebuilding from the rows.
    pub open_secondary_us: u64,
    /// Tables whose secondary indexes open loaded from their checkpoint's form.
    pub secondary_loaded: u64,
    /// Tables whose secondary indexes open built from the rows: no checkpoint yet, its image
    /// refused (then from the versions replay read), or its form refused.
    pub secondary_rebuilt: u64,
    /// Secondary index forms refused at open (missing from the checkpoint, length, checksum,
    /// format, not the checkpoint's own, or an index it does not hold), their tables' indexes
    /// rebuilt from the rows (a row read per key).
    pub secondary_forms_refused: u64,
    /// Versions the post-crash sweep found orphaned and collected.
    pub swept_versions: u64,
    /// WAL fsyncs done by group commit; `commits / wal_syncs` is how many commits share one.
    pub wal_syncs: u64,
    /// Seconds spent in those fsyncs (`wal_sync_secs / wal_syncs` is the mean fsync time).
    pub wal_sync_secs: f64,
    /// The warm-up after open has finished: every live file of the rows column family is mapped
    /// and brought into the page tables (and the page cache), and the primary indexes' mapped
    /// images are in huge pages, so reads run at full speed.
    pub prewarm_done: bool,
    /// Row versions read in place from a mapped SST file (the direct read path) and read through
    /// RocksDB (rows the mapped files do not cover: the memtable, a file not yet mapped).
    pub direct_reads: u64,
    pub store_reads: u64,
    /// Reads outside a transaction ([`Database::get_with`](crate::Database::get_with)) that
    /// found a version collected under them and were done again under a registered snapshot.
    pub read_retries: u64,
    /// The direct read path's mapped files and models.
    pub direct: crate::store::direct::DirectStats,
    /// Times the engine reopened the database by itself after a write failure (see
    /// docs/ARCHITECTURE.md, "When the disk fails").
    pub storage_recoveries: u64,
    /// A write failed and the engine has not yet reopened the database: writes are refused
    /// (53100 while the device is full, 57P03 otherwise); reads go on.
    pub storage_degraded: bool,
}

/// A table's primary index, for monitoring ([`Database::index_stats`](crate::Database::index_stats)).
#[derive(Debug, Clone)]
pub struct IndexStats {
    pub table: String,
    /// `alex` or `btree`.
    pub kind: &'static str,
    pub keys: usize,
    /// The ALEX structure (None for a B-tree index).
    pub alex: Option<crate::index::alex::AlexStats>,
}
