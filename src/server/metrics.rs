//! `augur serve --metrics ADDR`: counters and histograms in the Prometheus text exposition
//! format on `GET /metrics` (the `prometheus` crate's registry and encoder; a minimal HTTP/1.1
//! responder on tokio, one request per connection).
//!
//! Two kinds of metric:
//! - recorded on the hot path (connections, statements by kind, errors by SQLSTATE class,
//!   statement and commit latency): pre-resolved counters and histograms, so recording is a few
//!   relaxed atomic operations and no lock or allocation (an error's class label is looked up
//!   by name, on the error path only). Nothing is recorded when `--metrics` is not given.
//! - read at scrape time from the engine (commits, WAL fsyncs, row cache, per-table index
//!   structure, RocksDB properties): no cost between scrapes.
//!
//! See `docs/SERVER.md` ("Metrics").

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use parking_lot::Mutex;
use prometheus::{
    Counter, Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, warn};

use crate::seam::prelude::*;
use crate::sql::TxStatus;

/// Statement kinds, from a statement's leading keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Kind {
    Select,
    Insert,
    Update,
    Delete,
    Begin,
    Commit,
    Rollback,
    Ddl,
    Copy,
    Other,
}

const KINDS: [(&str, Kind); 10] = [
    ("select", Kind::Select),
    ("insert", Kind::Insert),
    ("update", Kind::Update),
    ("delete", Kind::Delete),
    ("begin", Kind::Begin),
    ("commit", Kind::Commit),
    ("rollback", Kind::Rollback),
    ("ddl", Kind::Ddl),
    ("copy", Kind::Copy),
    ("other", Kind::Other),
];

impl Kind {
    /// The kind of a statement from its upper-case leading keyword.
    pub fn of(keyword: &str) -> Kind {
        match keyword {
            "SELECT" | "WITH" | "VALUES" | "TABLE" | "SHOW" | "EXPLAIN" => Kind::Select,
            "INSERT" => Kind::Insert,
            "UPDATE" => Kind::Update,
            "DELETE" => Kind::Delete,
            "BEGIN" | "START" => Kind::Begin,
            "COMMIT" | "END" => Kind::Commit,
            "ROLLBACK" | "ABORT" => Kind::Rollback,
            "CREATE" | "DROP" | "ALTER" | "TRUNCATE" => Kind::Ddl,
            "COPY" => Kind::Copy,
            _ => Kind::Other,
        }
    }

    fn writes(self) -> bool {
        matches!(self, Kind::Insert | Kind::Update | Kind::Delete | Kind::Copy)
    }
}

/// Latency buckets, seconds: 10 µs to 10 s.
const LATENCY_BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5, 5.0, 10.0,
];

/// RocksDB integer properties of the rows column family exported as gauges (no statistics
/// object: properties cost nothing between scrapes).
const ROCKSDB_PROPERTIES: &[&str] = &[
    "rocksdb.estimate-num-keys",
    "rocksdb.estimate-live-data-size",
    "rocksdb.live-sst-files-size",
    "rocksdb.total-sst-files-size",
    "rocksdb.cur-size-all-mem-tables",
    "rocksdb.size-all-mem-tables",
    "rocksdb.block-cache-usage",
    "rocksdb.block-cache-pinned-usage",
    "rocksdb.block-cache-capacity",
    "rocksdb.estimate-table-readers-mem",
    "rocksdb.num-running-compactions",
    "rocksdb.num-running-flushes",
    "rocksdb.estimate-pending-compaction-bytes",
    "rocksdb.num-immutable-mem-table",
    "rocksdb.background-errors",
    "rocksdb.actual-delayed-write-rate",
    "rocksdb.is-write-stopped",
];

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    pub connections_current: IntGauge,
    pub connections_total: IntCounter,
    pub connections_refused: IntCounter,
    statements: Vec<IntCounter>,
    latency: Vec<Histogram>,
    commit_latency: Histogram,
    errors: IntCounterVec,
    // Read from the engine at scrape time.
    db: AnyEngine,
    scrape: Mutex<()>,
    commits: IntCounter,
    wal_syncs: IntCounter,
    wal_sync_secs: Counter,
    conflicts: IntCounter,
    lock_waits: IntCounter,
    deadlocks: IntCounter,
    row_locks_held: IntGauge,
    cache_hits: IntCounter,
    cache_misses: IntCounter,
    checkpoints: IntCounter,
    versions_collected: IntCounter,
    gc_pending: IntGauge,
    mapped_reads: IntCounter,
    rocksdb_reads: IntCounter,
    read_retries: IntCounter,
    mapped_files: IntGauge,
    mapped_bytes: IntGauge,
    mapped_unpopulated: IntGauge,
    unmapped_files: IntGauge,
    row_cache_bytes: IntGauge,
    storage_recoveries: IntCounter,
    storage_degraded: IntGauge,
    index_keys: IntGaugeVec,
    alex_depth: IntGaugeVec,
    alex_nodes: IntGaugeVec,
    alex_bytes: IntGaugeVec,
    rocksdb: IntGaugeVec,
    disk_bytes: IntGauge,
    malloc: IntGaugeVec,
    memory: IntGaugeVec,
}

fn reg<T: prometheus::core::Collector + Clone + 'static>(r: &Registry, c: T) -> T {
    r.register(Box::new(c.clone())).expect("metric names are unique");
    c
}

fn counter(r: &Registry, name: &str, help: &str) -> IntCounter {
    reg(r, IntCounter::new(name, help).expect("valid metric"))
}

fn gauge(r: &Registry, name: &str, help: &str) -> IntGauge {
    reg(r, IntGauge::new(name, help).expect("valid metric"))
}

fn gauge_vec(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    reg(
        r,
        IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric"),
    )
}

impl Metrics {
    pub fn new(db: impl Into<AnyEngine>) -> Metrics {
        let db: AnyEngine = db.into();
        let r = Registry::new();
        let statements_vec = reg(
            &r,
            IntCounterVec::new(
                Opts::new(
                    "augur_statements_total",
                    "Statements executed, by kind (errors included)",
                ),
                &["kind"],
            )
            .expect("valid metric"),
        );
        let latency_vec = reg(
            &r,
            HistogramVec::new(
                HistogramOpts::new(
                    "augur_statement_duration_seconds",
                    "Statement execution time in the server (parse to result rows), by kind",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
                &["kind"],
            )
            .expect("valid metric"),
        );
        let statements = KINDS
            .iter()
            .map(|(n, _)| statements_vec.with_label_values(&[*n]))
            .collect();
        let latency = KINDS
            .iter()
            .map(|(n, _)| latency_vec.with_label_values(&[*n]))
            .collect();
        let commit_latency = reg(
            &r,
            Histogram::with_opts(
                HistogramOpts::new(
                    "augur_commit_duration_seconds",
                    "Time of statements that commit: COMMIT, and INSERT/UPDATE/DELETE/COPY outside a \
                     transaction block (includes the WAL fsync)",
                )
                .buckets(LATENCY_BUCKETS.to_vec()),
            )
            .expect("valid metric"),
        );
        let errors = reg(
            &r,
            IntCounterVec::new(
                Opts::new(
                    "augur_errors_total",
                    "Statements that failed, by SQLSTATE class (2 characters)",
                ),
                &["class"],
            )
            .expect("valid metric"),
        );
        Metrics {
            connections_current: gauge(&r, "augur_connections", "Open client connections"),
            connections_total: counter(&r, "augur_connections_total", "Client connections accepted"),
            connections_refused: counter(
                &r,
                "augur_connections_refused_total",
                "Connections refused with SQLSTATE 53300 (over --max-connections)",
            ),
            statements,
            latency,
            commit_latency,
            errors,
            commits: counter(&r, "augur_commits_total", "Transactions committed by the engine"),
            wal_syncs: counter(
                &r,
                "augur_wal_fsyncs_total",
                "WAL fsyncs by group commit (commits / fsyncs = commits sharing one fsync)",
            ),
            wal_sync_secs: reg(
                &r,
                Counter::new(
                    "augur_wal_fsync_seconds_total",
                    "Time spent in WAL fsyncs by group commit (seconds / fsyncs = mean fsync time)",
                )
                .expect("valid metric"),
            ),
            conflicts: counter(
                &r,
                "augur_serialization_conflicts_total",
                "Writes or commits refused with SQLSTATE 40001",
            ),
            lock_waits: counter(
                &r,
                "augur_row_lock_waits_total",
                "Writes that waited for another transaction's row lock",
            ),
            deadlocks: counter(&r, "augur_deadlocks_total", "Lock waits refused with 40P01"),
            row_locks_held: gauge(&r, "augur_row_locks_held", "Row locks held by open transactions"),
            cache_hits: counter(&r, "augur_row_cache_hits_total", "Row cache hits"),
            cache_misses: counter(&r, "augur_row_cache_misses_total", "Row cache misses"),
            checkpoints: counter(&r, "augur_index_checkpoints_total", "Index checkpoints written"),
            versions_collected: counter(
                &r,
                "augur_versions_collected_total",
                "Old row versions removed by garbage collection",
            ),
            gc_pending: gauge(
                &r,
                "augur_gc_pending_versions",
                "Row versions queued for garbage collection (waiting for the oldest snapshot or, \
                 for tombstone rows, for an index checkpoint)",
            ),
            mapped_reads: counter(
                &r,
                "augur_mapped_reads_total",
                "Row versions read in place from mapped SST files (the direct read path)",
            ),
            rocksdb_reads: counter(
                &r,
                "augur_rocksdb_reads_total",
                "Row versions read through RocksDB (not in the row cache nor a mapped file)",
            ),
            read_retries: counter(
                &r,
                "augur_read_retries_total",
                "Point reads outside a transaction done again under a registered snapshot (a \
                 version was collected under them)",
            ),
            mapped_files: gauge(&r, "augur_mapped_files", "SST files of the rows column family mapped and modelled"),
            mapped_bytes: gauge(&r, "augur_mapped_bytes", "Bytes of those files"),
            mapped_unpopulated: gauge(
                &r,
                "augur_mapped_unpopulated_bytes",
                "Mapped bytes not yet brought into the page tables (and page cache) by the background populate",
            ),
            unmapped_files: gauge(
                &r,
                "augur_unmapped_files",
                "Live SST files of the rows column family left to RocksDB's reads (a format the direct path does not read)",
            ),
            row_cache_bytes: gauge(&r, "augur_row_cache_bytes", "Bytes held by the row cache"),
            storage_recoveries: counter(
                &r,
                "augur_storage_recoveries_total",
                "Times the engine reopened the database by itself after a write failure \
                 (WAL write or sync error, disk full)",
            ),
            storage_degraded: gauge(
                &r,
                "augur_storage_degraded",
                "1 while a write failure stops writes (53100 while the disk is full, 57P03 while \
                 the engine reopens the database); reads go on",
            ),
            index_keys: gauge_vec(
                &r,
                "augur_index_keys",
                "Keys in a table's primary index",
                &["table", "index"],
            ),
            alex_depth: gauge_vec(
                &r,
                "augur_alex_max_depth",
                "Longest root-to-leaf path of a table's ALEX index (nodes)",
                &["table"],
            ),
            alex_nodes: gauge_vec(
                &r,
                "augur_alex_nodes",
                "Nodes of a table's ALEX index, by node type",
                &["table", "type"],
            ),
            alex_bytes: gauge_vec(
                &r,
                "augur_alex_bytes",
                "Bytes allocated by a table's ALEX index",
                &["table"],
            ),
            rocksdb: gauge_vec(
                &r,
                "augur_rocksdb_property",
                "RocksDB integer properties of the rows column family",
                &["name"],
            ),
            disk_bytes: gauge(&r, "augur_disk_bytes", "Bytes of the data directory on disk"),
            malloc: gauge_vec(
                &r,
                "augur_malloc_bytes",
                "glibc malloc (mallinfo2): in_use = bytes of live allocations, free = free bytes \
                 kept inside arenas, mmapped = bytes in chunks mapped on their own, arena = bytes \
                 of the arenas' heaps. RSS growing while in_use stays flat is fragmentation, \
                 not a leak",
                &["kind"],
            ),
            memory: gauge_vec(
                &r,
                "augur_memory_bytes",
                "The engine's memory for the data by part (Database::memory): budget, charged \
                 (the sum the budget covers), primary_index_heap, primary_index_mapped, \
                 secondary_indexes, direct_models, rocksdb_table_readers, block_cache, row_cache; \
                 not charged: memtables, mapped_files (page cache)",
                &["part"],
            ),
            db,
            scrape: Mutex::new(()),
            registry: r,
        }
    }

    /// Records one statement: its kind, its time, and its error's SQLSTATE if it failed.
    /// `before` is the session's transaction state before the statement (an autocommit write
    /// is a commit).
    #[inline]
    pub fn statement(&self, kind: Kind, before: TxStatus, elapsed: Duration, error: Option<&str>) {
        let i = kind as usize;
        self.statements[i].inc();
        let secs = elapsed.as_secs_f64();
        self.latency[i].observe(secs);
        if error.is_none() && (kind == Kind::Commit || (kind.writes() && before == TxStatus::Idle)) {
            self.commit_latency.observe(secs);
        }
        if let Some(code) = error {
            self.error(code);
        }
    }

    /// Counts an error by the class of its SQLSTATE (statement, parse or bind).
    pub fn error(&self, sqlstate: &str) {
        let class = sqlstate.get(..2).unwrap_or("XX");
        self.errors.with_label_values(&[class]).inc();
    }

    fn set_counter(c: &IntCounter, v: u64) {
        let cur = c.get();
        if v > cur {
            c.inc_by(v - cur);
        }
    }

    /// The exposition text: engine values refreshed, then every metric.
    pub fn render(&self) -> String {
        let _one = self.scrape.lock();
        let s = self.db.stats();
        Self::set_counter(&self.commits, s.commits);
        Self::set_counter(&self.wal_syncs, s.wal_syncs);
        let d = s.wal_sync_secs - self.wal_sync_secs.get();
        if d > 0.0 {
            self.wal_sync_secs.inc_by(d);
        }
        Self::set_counter(&self.conflicts, s.conflicts);
        Self::set_counter(&self.lock_waits, s.lock_waits);
        Self::set_counter(&self.deadlocks, s.deadlocks);
        self.row_locks_held.set(s.row_locks_held as i64);
        Self::set_counter(&self.cache_hits, s.cache_hits);
        Self::set_counter(&self.cache_misses, s.cache_misses);
        Self::set_counter(&self.checkpoints, s.checkpoints);
        Self::set_counter(&self.versions_collected, s.versions_collected);
        self.gc_pending.set(s.gc_pending as i64);
        Self::set_counter(&self.mapped_reads, s.direct_reads);
        Self::set_counter(&self.rocksdb_reads, s.store_reads);
        Self::set_counter(&self.read_retries, s.read_retries);
        self.mapped_files.set(s.direct.files as i64);
        self.mapped_bytes.set(s.direct.mapped_bytes as i64);
        self.mapped_unpopulated.set(s.direct.unpopulated_bytes as i64);
        self.unmapped_files.set(s.direct.unsupported_files as i64);
        self.row_cache_bytes.set(s.row_cache_bytes as i64);
        Self::set_counter(&self.storage_recoveries, s.storage_recoveries);
        self.storage_degraded.set(s.storage_degraded as i64);
        // Dropped tables disappear from the per-table series.
        self.index_keys.reset();
        self.alex_depth.reset();
        self.alex_nodes.reset();
        self.alex_bytes.reset();
        for ix in self.db.index_stats() {
            self.index_keys
                .with_label_values(&[ix.table.as_str(), ix.kind])
                .set(ix.keys as i64);
            if let Some(a) = &ix.alex {
                let t = ix.table.as_str();
                self.alex_depth.with_label_values(&[t]).set(a.max_depth as i64);
                self.alex_nodes
                    .with_label_values(&[t, "model"])
                    .set(a.model_nodes as i64);
                self.alex_nodes
                    .with_label_values(&[t, "data"])
                    .set(a.data_nodes as i64);
                self.alex_bytes.with_label_values(&[t]).set(a.bytes as i64);
            }
        }
        for p in ROCKSDB_PROPERTIES {
            if let Some(v) = self.db.store_property(p) {
                self.rocksdb
                    .with_label_values(&[*p])
                    .set(v.min(i64::MAX as u64) as i64);
            }
        }
        self.disk_bytes
            .set(self.db.disk_bytes().min(i64::MAX as u64) as i64);
        let m = self.db.memory();
        for (part, v) in [
            ("budget", m.budget.unwrap_or(0)),
            ("charged", m.charged),
            ("primary_index_heap", m.primary_index_heap),
            ("primary_index_mapped", m.primary_index_mapped),
            ("secondary_indexes", m.secondary_indexes),
            ("direct_models", m.direct_models),
            ("rocksdb_table_readers", m.rocksdb_table_readers),
            ("block_cache", m.block_cache),
            ("row_cache", m.row_cache),
            ("memtables", m.memtables),
            ("mapped_files", m.mapped_files),
        ] {
            self.memory
                .with_label_values(&[part])
                .set(v.min(i64::MAX as u64) as i64);
        }
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: mallinfo2 takes no arguments and returns a plain struct by value; it
            // takes each arena's lock while it sums it, as malloc and free do.
            let mi = unsafe { libc::mallinfo2() };
            let set = |k: &str, v: usize| {
                self.malloc
                    .with_label_values(&[k])
                    .set(v.min(i64::MAX as usize) as i64)
            };
            set("in_use", mi.uordblks + mi.hblkhd);
            set("free", mi.fordblks);
            set("mmapped", mi.hblkhd);
            set("arena", mi.arena);
        }
        let mut out = Vec::with_capacity(16 << 10);
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            warn!("encoding metrics: {e}");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Binds the metrics address. The endpoint has no authentication (Prometheus scrapes it as
/// plain HTTP) and its labels name tables, so like the SQL port without a password it refuses a
/// non-loopback address unless `allow_open` (`--insecure-no-auth`).
pub async fn bind(addr: &str, allow_open: bool) -> anyhow::Result<TcpListener> {
    let a: SocketAddr = tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("resolving --metrics {addr}"))?
        .next()
        .with_context(|| format!("no address for --metrics {addr}"))?;
    if !a.ip().is_loopback() {
        if !allow_open {
            anyhow::bail!(
                "refusing to serve metrics on {a}: the endpoint has no authentication; bind it to \
                 loopback (e.g. --metrics 127.0.0.1:9187) or pass --insecure-no-auth"
            );
        }
        warn!("metrics endpoint {a} is not on loopback and has no authentication");
    }
    TcpListener::bind(a)
        .await
        .with_context(|| format!("cannot listen on --metrics {a}"))
}

/// Serves `GET /metrics` (and `GET /` with a pointer to it) until the task is dropped.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    let limit = Arc::new(tokio::sync::Semaphore::new(16));
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                warn!("metrics accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = limit.clone().try_acquire_owned() else {
            continue; // too many scrapes at once: drop the connection
        };
        let m = metrics.clone();
        tokio::spawn(async move {
            if let Err(e) = tokio::time::timeout(Duration::from_secs(10), answer(sock, m)).await {
                debug!("metrics request from {peer}: {e}");
            }
            drop(permit);
        });
    }
}

async fn answer(mut sock: TcpStream, metrics: Arc<Metrics>) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    // Read the request head (bounded).
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && !buf.windows(2).any(|w| w == b"\n\n") {
        let n = sock.read(&mut chunk).await?;
        if n == 0 || buf.len() > 16 << 10 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => {
            let m = metrics.clone();
            let body = tokio::task::spawn_blocking(move || m.render())
                .await
                .unwrap_or_default();
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
        }
        ("GET" | "HEAD", "/") => (
            "200 OK",
            "text/plain; charset=utf-8",
            "Augur metrics: GET /metrics\n".to_string(),
        ),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_string(),
        ),
    };
    let mut resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        resp.extend_from_slice(body.as_bytes());
    }
    sock.write_all(&resp).await?;
    sock.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn kinds() {
        assert_eq!(Kind::of("SELECT"), Kind::Select);
        assert_eq!(Kind::of("END"), Kind::Commit);
        assert_eq!(Kind::of("TRUNCATE"), Kind::Ddl);
        assert_eq!(Kind::of("VACUUM"), Kind::Other);
        assert_eq!(super::KINDS[Kind::Copy as usize].1, Kind::Copy);
        assert_eq!(super::KINDS[Kind::Other as usize].1, Kind::Other);
    }
}
