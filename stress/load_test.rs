//! Load and soak test of `augur serve` over the PostgreSQL wire protocol (tokio-postgres).
//!
//! N connections run a bank-style mixed workload for a duration:
//! - `read`: point read of one account's balance (prepared);
//! - `transfer`: `BEGIN; UPDATE a -= x; UPDATE b += x; INSERT INTO history; COMMIT` (retried on
//!   SQLSTATE 40001 or 40P01, retries counted apart from errors);
//! - `event`: autocommit INSERT into an append-only events table;
//! - `scan`: a 100-row primary-key range of accounts (row count checked);
//! - `count`: `SELECT count(*) FROM accounts` (checked against the number of accounts).
//!
//! At the end the invariants are checked: the sum of balances is unchanged, history holds one
//! row per committed transfer, events one row per acknowledged insert (less the rows deleted
//! with `--retain`, which keeps both tables at a steady size for soaks). Reports throughput,
//! p50/p99/max per operation (HdrHistogram), errors by SQLSTATE (any error, or a broken
//! invariant, exits non-zero), and the server's RSS sampled from /proc/PID/status with the
//! throughput of each sampling interval. Every sample also records each operation's throughput
//! and p50/p99 latency over that interval, the machine's load average, and (with a metrics
//! port) server counters: row cache, garbage collection, commits and fsyncs, lock waits, RocksDB
//! memtables, compaction and write stalls. The report ends with a trend: the first window of
//! the run against the last (throughput, latency, RSS). Writes a Markdown report and its JSON
//! twin.
//!
//! `load_test` starts its own server (the `augur` binary beside this one) on a temporary
//! directory unless `--addr` is given (then `--server-pid` gives its RSS).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Parser;
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use tokio_postgres::{Client, NoTls, Statement};

#[derive(Parser, Debug, Clone, Serialize)]
#[command(about = "Mixed read/write/scan load against augur serve, with invariants and RSS over time")]
struct Args {
    /// Concurrent client connections.
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// How long to run: 60s, 30m, 1h.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    #[serde(serialize_with = "ser_duration")]
    duration: Duration,
    /// Warm-up excluded from the trend: the first window of the trend starts here (data reaching
    /// its --retain size, caches filling to their budgets). 0s: the trend starts at the start.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    #[serde(serialize_with = "ser_duration")]
    warmup: Duration,
    /// Server to load (host:port). Default: start `augur serve` on a temporary directory.
    #[arg(long)]
    addr: Option<String>,
    /// PID of the server given with --addr, for RSS sampling.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Metrics port (on 127.0.0.1) of the server given with --addr, for cache sizes.
    #[arg(long)]
    metrics_port: Option<u16>,
    /// The augur binary to start (default: `augur` beside this binary).
    #[arg(long)]
    augur: Option<PathBuf>,
    /// Extra arguments for the started server (e.g. "--no-sync --metrics 127.0.0.1:9187").
    #[arg(long, default_value = "")]
    server_args: String,
    /// Accounts in the bank.
    #[arg(long, default_value_t = 100_000)]
    accounts: i64,
    /// Starting balance of every account.
    #[arg(long, default_value_t = 1_000)]
    balance: i64,
    /// Seconds between RSS and throughput samples.
    #[arg(long, default_value_t = 5)]
    sample_secs: u64,
    /// Markdown report (a .json twin is written beside it).
    #[arg(long, default_value = "reports/load_test.md")]
    report: PathBuf,
    /// Mix in percent: read,transfer,event,scan,count.
    #[arg(long, default_value = "50,20,15,12,3")]
    mix: String,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep history and events at about this many rows each (0: they grow without end). Each
    /// worker keeps retain/connections of each: a transfer also deletes the worker's oldest
    /// history row, an event insert its oldest event (in the same transaction), so the data
    /// reaches a steady size and memory can level off.
    #[arg(long, default_value_t = 0)]
    retain: u64,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| format!("bad duration {s:?}"))?;
    Ok(Duration::from_secs(match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("bad duration unit in {s:?} (s, m, h)")),
    }))
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}s", d.as_secs()))
}

const OPS: [&str; 5] = ["read", "transfer", "event", "scan", "count"];

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram bounds")
}

/// Latencies of the current sampling interval, per operation; the sampler takes them at each
/// sample (a short lock per operation: the workers share two threads).
struct Interval {
    hist: [Mutex<Histogram<u64>>; 5],
}

impl Interval {
    fn new() -> Interval {
        Interval {
            hist: std::array::from_fn(|_| Mutex::new(new_hist())),
        }
    }

    fn record(&self, op: usize, us: u64) {
        self.hist[op].lock().saturating_record(us);
    }

    /// The interval's histograms, leaving empty ones.
    fn take(&self) -> [Histogram<u64>; 5] {
        std::array::from_fn(|i| {
            let mut h = self.hist[i].lock();
            let out = h.clone();
            h.reset();
            out
        })
    }
}

/// The first window after the warm-up and the last window of the run (5 minutes, or a third
/// of what follows the warm-up): the operations' latencies in each, to compare the end of a soak
/// with its start.
struct Windows {
    secs: f64,
    /// Where the first window starts (the end of the warm-up).
    start: f64,
    run_secs: f64,
    /// (histograms, seconds covered) of the first and of the last window.
    first: ([Histogram<u64>; 5], f64),
    last: ([Histogram<u64>; 5], f64),
}

impl Windows {
    fn new(run_secs: f64, warmup_secs: f64) -> Windows {
        let start = warmup_secs.min(run_secs);
        Windows {
            secs: ((run_secs - start) / 3.0).min(300.0),
            start,
            run_secs,
            first: (std::array::from_fn(|_| new_hist()), 0.0),
            last: (std::array::from_fn(|_| new_hist()), 0.0),
        }
    }

    /// Adds the interval [from, to): to the first window if it lies in it, to the last window
    /// if it starts in it (a sample's timing jitter of a few ms is tolerated).
    fn add(&mut self, from: f64, to: f64, h: &[Histogram<u64>; 5]) {
        let put = |w: &mut ([Histogram<u64>; 5], f64)| {
            for (a, b) in w.0.iter_mut().zip(h) {
                a.add(b).expect("same bounds");
            }
            w.1 += to - from;
        };
        if from >= self.start - 0.5 && to <= self.start + self.secs + 0.5 {
            put(&mut self.first);
        }
        if from >= self.run_secs - self.secs - 0.5 {
            put(&mut self.last);
        }
    }
}

/// The 1-minute load average from /proc/loadavg.
fn load1() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What one worker measured.
struct WorkerResult {
    hist: Vec<Histogram<u64>>,
    ok: [u64; 5],
    retries: u64,
    errors: BTreeMap<String, u64>,
    transfers_committed: u64,
    amount_committed: i64,
    events_inserted: u64,
    /// Rows deleted by --retain (history rows with their amounts, events).
    history_deleted: u64,
    amount_deleted: i64,
    events_deleted: u64,
    wrong_results: Vec<String>,
}

struct Prepared {
    read: Statement,
    debit: Statement,
    credit: Statement,
    history: Statement,
    event: Statement,
    scan: Statement,
    count: Statement,
    history_del: Statement,
    event_del: Statement,
}

async fn connect(addr: &str) -> anyhow::Result<Client> {
    let (host, port) = addr.rsplit_once(':').context("--addr is host:port")?;
    let (client, conn) =
        tokio_postgres::connect(&format!("host={host} port={port} user=augur dbname=augur"), NoTls)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

fn code_of(e: &tokio_postgres::Error) -> String {
    match e.code() {
        Some(c) => c.code().to_string(),
        None if e.is_closed() => "connection-closed".into(),
        None => format!("client: {e}"),
    }
}

/// One transfer in an explicit transaction block (deleting the history row `old` too, for
/// --retain); Ok(rows `old` deleted) once committed.
#[allow(clippy::too_many_arguments)]
async fn transfer(
    c: &Client,
    p: &Prepared,
    a: i64,
    b: i64,
    amount: i64,
    hid: i64,
    old: Option<i64>,
    retries: &mut u64,
) -> Result<u64, tokio_postgres::Error> {
    loop {
        let r: Result<u64, tokio_postgres::Error> = async {
            c.batch_execute("BEGIN").await?;
            let n1 = c.execute(&p.debit, &[&amount, &a]).await?;
            let n2 = c.execute(&p.credit, &[&amount, &b]).await?;
            c.execute(&p.history, &[&hid, &a, &b, &amount]).await?;
            debug_assert!(n1 == 1 && n2 == 1);
            let deleted = match old {
                Some(o) => c.execute(&p.history_del, &[&o]).await?,
                None => 0,
            };
            c.batch_execute("COMMIT").await?;
            Ok(deleted)
        }
        .await;
        match r {
            Ok(d) => return Ok(d),
            Err(e) => {
                let _ = c.batch_execute("ROLLBACK").await;
                // Serialization failures and deadlocks (two transfers locking the same two
                // accounts in opposite orders) are retried, as an application would.
                use tokio_postgres::error::SqlState as S;
                if e.code() == Some(&S::T_R_SERIALIZATION_FAILURE)
                    || e.code() == Some(&S::T_R_DEADLOCK_DETECTED)
                {
                    *retries += 1;
                    continue;
                }
                return Err(e);
            }
        }
    }
}

async fn worker(
    id: usize,
    addr: String,
    args: Arc<Args>,
    mix: [u32; 5],
    stop: Arc<AtomicBool>,
    ops_done: Arc<AtomicU64>,
    interval: Arc<Interval>,
) -> anyhow::Result<WorkerResult> {
    let c = connect(&addr).await?;
    let p = Prepared {
        read: c.prepare("SELECT balance FROM accounts WHERE id = $1").await?,
        debit: c
            .prepare("UPDATE accounts SET balance = balance - $1 WHERE id = $2")
            .await?,
        credit: c
            .prepare("UPDATE accounts SET balance = balance + $1 WHERE id = $2")
            .await?,
        history: c
            .prepare("INSERT INTO history (id, src, dst, amount) VALUES ($1, $2, $3, $4)")
            .await?,
        event: c
            .prepare("INSERT INTO events (id, account, kind) VALUES ($1, $2, $3)")
            .await?,
        scan: c
            .prepare("SELECT id, balance FROM accounts WHERE id >= $1 AND id < $2")
            .await?,
        count: c.prepare("SELECT count(*) FROM accounts").await?,
        history_del: c.prepare("DELETE FROM history WHERE id = $1").await?,
        event_del: c.prepare("DELETE FROM events WHERE id = $1").await?,
    };
    // --retain: this worker's history rows (id, amount) and events, oldest first.
    let keep = match args.retain {
        0 => usize::MAX,
        r => (r as usize / args.connections.max(1)).max(1),
    };
    let mut kept_history: std::collections::VecDeque<(i64, i64)> = Default::default();
    let mut kept_events: std::collections::VecDeque<i64> = Default::default();
    let mut rng = StdRng::seed_from_u64(args.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut res = WorkerResult {
        hist: (0..5).map(|_| new_hist()).collect(),
        ok: [0; 5],
        retries: 0,
        errors: BTreeMap::new(),
        transfers_committed: 0,
        amount_committed: 0,
        events_inserted: 0,
        history_deleted: 0,
        amount_deleted: 0,
        events_deleted: 0,
        wrong_results: vec![],
    };
    // Unique ids per worker: worker id in the high bits.
    let base = (id as i64 + 1) << 40;
    let mut seq = 0i64;
    let total: u32 = mix.iter().sum();
    let n = args.accounts;
    while !stop.load(Ordering::Relaxed) {
        let pick = rng.random_range(0..total);
        let mut op = 0;
        let mut acc = 0;
        for (i, w) in mix.iter().enumerate() {
            acc += w;
            if pick < acc {
                op = i;
                break;
            }
        }
        let t0 = Instant::now();
        let r: Result<(), tokio_postgres::Error> = match op {
            0 => {
                let k = rng.random_range(0..n);
                match c.query_opt(&p.read, &[&k]).await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => {
                        res.wrong_results.push(format!("read: account {k} missing"));
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            1 => {
                let a = rng.random_range(0..n);
                let mut b = rng.random_range(0..n);
                if b == a {
                    b = (a + 1) % n;
                }
                let amount = rng.random_range(1..=100i64);
                seq += 1;
                let old = (kept_history.len() >= keep).then(|| kept_history[0]);
                let r = transfer(
                    &c,
                    &p,
                    a,
                    b,
                    amount,
                    base + seq,
                    old.map(|o| o.0),
                    &mut res.retries,
                )
                .await;
                if let Ok(deleted) = r {
                    res.transfers_committed += 1;
                    res.amount_committed += amount;
                    if let Some((oid, oamount)) = old {
                        kept_history.pop_front();
                        if deleted == 1 {
                            res.history_deleted += 1;
                            res.amount_deleted += oamount;
                        } else {
                            res.wrong_results
                                .push(format!("delete of history row {oid} deleted {deleted} rows"));
                        }
                    }
                    if args.retain > 0 {
                        kept_history.push_back((base + seq, amount));
                    }
                }
                r.map(|_| ())
            }
            2 => {
                seq += 1;
                let k = rng.random_range(0..n);
                let id = base + seq;
                let r = match (kept_events.len() >= keep).then(|| kept_events[0]) {
                    None => c.execute(&p.event, &[&id, &k, &"login"]).await.map(|_| None),
                    Some(old) => {
                        // With --retain: the insert and the delete of the worker's oldest event
                        // in one transaction (no other session writes these keys).
                        let r: Result<u64, tokio_postgres::Error> = async {
                            c.batch_execute("BEGIN").await?;
                            c.execute(&p.event, &[&id, &k, &"login"]).await?;
                            let d = c.execute(&p.event_del, &[&old]).await?;
                            c.batch_execute("COMMIT").await?;
                            Ok(d)
                        }
                        .await;
                        if r.is_err() {
                            let _ = c.batch_execute("ROLLBACK").await;
                        }
                        r.map(|d| Some((old, d)))
                    }
                };
                if let Ok(deleted) = &r {
                    res.events_inserted += 1;
                    if let Some((old, d)) = deleted {
                        kept_events.pop_front();
                        if *d == 1 {
                            res.events_deleted += 1;
                        } else {
                            res.wrong_results
                                .push(format!("delete of event {old} deleted {d} rows"));
                        }
                    }
                    if args.retain > 0 {
                        kept_events.push_back(id);
                    }
                }
                r.map(|_| ())
            }
            3 => {
                let lo = rng.random_range(0..(n - 100).max(1));
                match c.query(&p.scan, &[&lo, &(lo + 100)]).await {
                    Ok(rows) => {
                        let want = (n - lo).min(100) as usize;
                        if rows.len() != want {
                            res.wrong_results
                                .push(format!("scan from {lo}: {} rows, want {want}", rows.len()));
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            _ => match c.query_one(&p.count, &[]).await {
                Ok(row) => {
                    let got: i64 = row.get(0);
                    if got != n {
                        res.wrong_results.push(format!("count(*) = {got}, want {n}"));
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            },
        };
        let us = t0.elapsed().as_micros().max(1) as u64;
        match r {
            Ok(()) => {
                res.hist[op].saturating_record(us);
                interval.record(op, us);
                res.ok[op] += 1;
                ops_done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let code = code_of(&e);
                *res.errors.entry(format!("{}: {code}", OPS[op])).or_default() += 1;
                if e.is_closed() {
                    break;
                }
            }
        }
    }
    Ok(res)
}

/// CPU seconds (user + system) the process has used, from /proc/PID/stat.
fn cpu_secs(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // utime and stime are in USER_HZ ticks, which Linux fixes at 100 per second for /proc.
    Some(ticks as f64 / 100.0)
}

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// One operation over one sampling interval.
#[derive(Serialize, Clone)]
struct OpSample {
    ok: u64,
    per_sec: f64,
    p50_us: u64,
    p99_us: u64,
    max_us: u64,
}

#[derive(Serialize, Clone)]
struct Sample {
    t_secs: f64,
    rss_mib: Option<f64>,
    /// From the server's metrics endpoint (when load_test started the server): bytes held by
    /// the bounded caches and buffers (row cache, RocksDB block cache, memtables, table readers)
    /// and by the ALEX primary indexes (which grow with the data).
    caches_mib: Option<f64>,
    alex_mib: Option<f64>,
    ops: u64,
    ops_per_sec: f64,
    /// Per operation (in `OPS` order), over the interval that ends at this sample.
    per_op: Vec<OpSample>,
    /// The machine's 1-minute load average at the sample.
    load1: Option<f64>,
    /// The server's CPU time over the interval (user + system, /proc/PID/stat): percent of one
    /// core, and microseconds per operation completed (independent of how busy the machine is).
    server_cpu_pct: Option<f64>,
    server_cpu_us_per_op: Option<f64>,
    /// Server counters over the interval (rates) and gauges at the sample.
    server: Option<ServerSample>,
}

/// What the server's metrics say about one sampling interval.
#[derive(Serialize, Clone, Default)]
struct ServerSample {
    commits_per_sec: f64,
    wal_fsyncs_per_sec: f64,
    /// Mean time of one WAL fsync over the interval, µs (absent on older servers).
    wal_fsync_us: Option<f64>,
    /// Old row versions garbage-collected per second.
    gc_per_sec: f64,
    /// Versions waiting for garbage collection at the sample (absent on older servers).
    gc_pending: Option<f64>,
    row_cache_hits_per_sec: f64,
    row_cache_misses_per_sec: f64,
    lock_waits_per_sec: f64,
    /// Mean server time of the interval's statements, by kind (µs).
    select_us: f64,
    insert_us: f64,
    update_us: f64,
    commit_us: f64,
    row_cache_mib: f64,
    block_cache_mib: f64,
    memtables_mib: f64,
    table_readers_mib: f64,
    /// Row versions in the rows column family (RocksDB's estimate) and the SST files' size.
    rocksdb_keys: f64,
    sst_mib: f64,
    pending_compaction_mib: f64,
    immutable_memtables: f64,
    /// RocksDB write throttling: the delayed write rate (0 when not delayed) and a full stop.
    delayed_write_rate: Option<f64>,
    write_stopped: Option<f64>,
}

/// A scrape of the server's `/metrics`: series (name with labels) -> value.
type Scrape = std::collections::HashMap<String, f64>;

/// Scrapes the server's `/metrics` (blocking; loopback).
fn scrape(port: u16) -> Option<Scrape> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (_, body) = text.split_once("\r\n\r\n")?;
    Some(
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, v) = l.rsplit_once(' ')?;
                Some((series.to_string(), v.parse().ok()?))
            })
            .collect(),
    )
}

fn rocks(m: &Scrape, name: &str) -> Option<f64> {
    m.get(&format!("augur_rocksdb_property{{name=\"rocksdb.{name}\"}}"))
        .copied()
}

/// What the caches and the ALEX indexes hold, MiB: (caches, ALEX).
fn memory_of(m: &Scrape) -> (f64, f64) {
    let mut caches = m.get("augur_row_cache_bytes").copied().unwrap_or(0.0);
    for p in [
        "block-cache-usage",
        "cur-size-all-mem-tables",
        "estimate-table-readers-mem",
    ] {
        caches += rocks(m, p).unwrap_or(0.0);
    }
    let alex: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("augur_alex_bytes{"))
        .map(|(_, v)| v)
        .sum();
    (caches / 1048576.0, alex / 1048576.0)
}

/// The server's side of the interval between two scrapes `secs` apart.
fn server_sample(before: &Scrape, now: &Scrape, secs: f64) -> ServerSample {
    let g = |k: &str| now.get(k).copied().unwrap_or(0.0);
    let rate = |k: &str| (g(k) - before.get(k).copied().unwrap_or(0.0)).max(0.0) / secs.max(1e-9);
    let mean_us = |sum: &str, count: &str| {
        let n = g(count) - before.get(count).copied().unwrap_or(0.0);
        let t = g(sum) - before.get(sum).copied().unwrap_or(0.0);
        if n > 0.0 {
            t / n * 1e6
        } else {
            0.0
        }
    };
    let stmt = |kind: &str| {
        mean_us(
            &format!("augur_statement_duration_seconds_sum{{kind=\"{kind}\"}}"),
            &format!("augur_statement_duration_seconds_count{{kind=\"{kind}\"}}"),
        )
    };
    let mib = |v: Option<f64>| v.unwrap_or(0.0) / 1048576.0;
    ServerSample {
        commits_per_sec: rate("augur_commits_total"),
        wal_fsyncs_per_sec: rate("augur_wal_fsyncs_total"),
        wal_fsync_us: now
            .contains_key("augur_wal_fsync_seconds_total")
            .then(|| mean_us("augur_wal_fsync_seconds_total", "augur_wal_fsyncs_total")),
        gc_per_sec: rate("augur_versions_collected_total"),
        gc_pending: now.get("augur_gc_pending_versions").copied(),
        row_cache_hits_per_sec: rate("augur_row_cache_hits_total"),
        row_cache_misses_per_sec: rate("augur_row_cache_misses_total"),
        lock_waits_per_sec: rate("augur_row_lock_waits_total"),
        select_us: stmt("select"),
        insert_us: stmt("insert"),
        update_us: stmt("update"),
        commit_us: mean_us(
            "augur_commit_duration_seconds_sum",
            "augur_commit_duration_seconds_count",
        ),
        row_cache_mib: g("augur_row_cache_bytes") / 1048576.0,
        block_cache_mib: mib(rocks(now, "block-cache-usage")),
        memtables_mib: mib(rocks(now, "cur-size-all-mem-tables")),
        table_readers_mib: mib(rocks(now, "estimate-table-readers-mem")),
        rocksdb_keys: rocks(now, "estimate-num-keys").unwrap_or(0.0),
        sst_mib: mib(rocks(now, "total-sst-files-size")),
        pending_compaction_mib: mib(rocks(now, "estimate-pending-compaction-bytes")),
        immutable_memtables: rocks(now, "num-immutable-mem-table").unwrap_or(0.0),
        delayed_write_rate: rocks(now, "actual-delayed-write-rate"),
        write_stopped: rocks(now, "is-write-stopped"),
    }
}

#[derive(Serialize)]
struct Minute {
    minute: u64,
    ops_per_sec: f64,
    rss_mib: Option<f64>,
    caches_mib: Option<f64>,
    alex_mib: Option<f64>,
}

#[derive(Serialize)]
struct OpReport {
    op: &'static str,
    ok: u64,
    per_sec: f64,
    p50_us: u64,
    p99_us: u64,
    p999_us: u64,
    max_us: u64,
}

#[derive(Serialize)]
struct Report {
    args: Args,
    machine: String,
    server: String,
    elapsed_secs: f64,
    total_ops: u64,
    ops_per_sec: f64,
    ops: Vec<OpReport>,
    retries_40001: u64,
    errors: BTreeMap<String, u64>,
    error_count: u64,
    transfers_committed: u64,
    events_inserted: u64,
    history_deleted: u64,
    events_deleted: u64,
    invariants: Vec<(String, bool)>,
    wrong_results: Vec<String>,
    samples: Vec<Sample>,
    per_minute: Vec<Minute>,
    trend: Option<Trend>,
    passed: bool,
}

/// One operation in the first and in the last window.
#[derive(Serialize)]
struct TrendOp {
    op: &'static str,
    first_per_sec: f64,
    last_per_sec: f64,
    first_p50_us: u64,
    last_p50_us: u64,
    first_p99_us: u64,
    last_p99_us: u64,
}

/// The first window of the run against the last one.
#[derive(Serialize)]
struct Trend {
    window_secs: f64,
    /// Where the first window starts (the warm-up before it is left out).
    first_start_secs: f64,
    first_ops_per_sec: f64,
    last_ops_per_sec: f64,
    per_op: Vec<TrendOp>,
    /// Server memory (MiB) at the end of the first window (after warm-up) and at the end.
    rss_first_end_mib: Option<f64>,
    rss_end_mib: Option<f64>,
    rss_max_last_mib: Option<f64>,
    /// Least-squares slope of RSS over the last window, MiB per minute.
    rss_slope_last_mib_per_min: Option<f64>,
    /// RSS - caches - ALEX at the end of the first window and at the end.
    rest_first_end_mib: Option<f64>,
    rest_end_mib: Option<f64>,
    load1_first_mean: Option<f64>,
    load1_last_mean: Option<f64>,
    /// Server CPU time per operation in each window, µs (not affected by other processes
    /// taking the CPU, unlike throughput).
    cpu_us_per_op_first: Option<f64>,
    cpu_us_per_op_last: Option<f64>,
}

fn trend_of(w: &Windows, samples: &[Sample]) -> Option<Trend> {
    if w.first.1 <= 0.0 || w.last.1 <= 0.0 {
        return None;
    }
    let rate = |h: &[Histogram<u64>; 5], secs: f64| h.iter().map(|h| h.len()).sum::<u64>() as f64 / secs;
    let in_first: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.t_secs > w.start + 0.5 && s.t_secs <= w.start + w.secs + 0.5)
        .collect();
    let in_last: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.t_secs >= w.run_secs - w.secs - 0.5)
        .collect();
    let rest = |s: &Sample| {
        s.rss_mib
            .zip(s.caches_mib)
            .zip(s.alex_mib)
            .map(|((a, b), c)| a - b - c)
    };
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let cpu_per_op = |v: &[&Sample]| {
        let (cpu, ops) = v
            .iter()
            .fold((0.0, 0u64), |(c, n), s| match s.server_cpu_us_per_op {
                Some(u) => (c + u * s.ops as f64, n + s.ops),
                None => (c, n),
            });
        (ops > 0).then(|| cpu / ops as f64)
    };
    let slope = {
        let pts: Vec<(f64, f64)> = in_last
            .iter()
            .filter_map(|s| s.rss_mib.map(|r| (s.t_secs / 60.0, r)))
            .collect();
        let n = pts.len() as f64;
        let (mx, my) = (
            pts.iter().map(|p| p.0).sum::<f64>() / n,
            pts.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let var: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
        (pts.len() >= 2 && var > 0.0).then(|| pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / var)
    };
    Some(Trend {
        window_secs: w.secs,
        first_start_secs: w.start,
        first_ops_per_sec: rate(&w.first.0, w.first.1),
        last_ops_per_sec: rate(&w.last.0, w.last.1),
        per_op: (0..5)
            .map(|i| TrendOp {
                op: OPS[i],
                first_per_sec: w.first.0[i].len() as f64 / w.first.1,
                last_per_sec: w.last.0[i].len() as f64 / w.last.1,
                first_p50_us: w.first.0[i].value_at_quantile(0.5),
                last_p50_us: w.last.0[i].value_at_quantile(0.5),
                first_p99_us: w.first.0[i].value_at_quantile(0.99),
                last_p99_us: w.last.0[i].value_at_quantile(0.99),
            })
            .collect(),
        rss_first_end_mib: in_first.last().and_then(|s| s.rss_mib),
        rss_end_mib: samples.last().and_then(|s| s.rss_mib),
        rss_max_last_mib: in_last
            .iter()
            .filter_map(|s| s.rss_mib)
            .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r)))),
        rss_slope_last_mib_per_min: slope,
        rest_first_end_mib: in_first.last().and_then(|s| rest(s)),
        rest_end_mib: samples.last().and_then(rest),
        load1_first_mean: mean(in_first.iter().filter_map(|s| s.load1).collect()),
        load1_last_mean: mean(in_last.iter().filter_map(|s| s.load1).collect()),
        cpu_us_per_op_first: cpu_per_op(&in_first),
        cpu_us_per_op_last: cpu_per_op(&in_last),
    })
}

struct Spawned {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // SIGTERM for a clean shutdown, then wait (kill after 30 s).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `augur serve` with `--metrics` on a second free port; returns (address, metrics port).
fn start_server(args: &Args) -> anyhow::Result<(String, u16, Spawned)> {
    let bin = match &args.augur {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("binary directory")?
            .join("augur"),
    };
    let dir = tempfile::Builder::new().prefix("augur-load-").tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let addr = format!("127.0.0.1:{port}");
    let mport = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log = std::fs::File::create(dir.path().join("server.log"))?;
    let child = Command::new(&bin)
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("db"))
        .args(["--listen", &addr, "--log-level", "warn"])
        .args(["--metrics", &format!("127.0.0.1:{mport}")])
        .args(args.server_args.split_whitespace())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let s = Spawned { child, _dir: dir };
    let t0 = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("server did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((addr, mport, s))
}

async fn setup(c: &Client, n: i64, balance: i64) -> anyhow::Result<()> {
    c.batch_execute(
        "DROP TABLE IF EXISTS accounts; DROP TABLE IF EXISTS history; DROP TABLE IF EXISTS events;
         CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL);
         CREATE TABLE history (id BIGINT PRIMARY KEY, src BIGINT NOT NULL, dst BIGINT NOT NULL,
                               amount BIGINT NOT NULL);
         CREATE TABLE events (id BIGINT PRIMARY KEY, account BIGINT NOT NULL, kind TEXT NOT NULL);",
    )
    .await?;
    let mut k = 0;
    while k < n {
        let hi = (k + 1000).min(n);
        let values: Vec<String> = (k..hi).map(|i| format!("({i},{balance})")).collect();
        c.batch_execute(&format!("INSERT INTO accounts VALUES {}", values.join(",")))
            .await?;
        k = hi;
    }
    Ok(())
}

async fn scalar(c: &Client, sql: &str) -> anyhow::Result<i64> {
    let row = c.query_one(sql, &[]).await.with_context(|| sql.to_string())?;
    // sum() of BIGINT may come back as NUMERIC in PostgreSQL; Augur returns int8.
    row.try_get::<_, i64>(0)
        .with_context(|| format!("{sql}: not an int8"))
}

fn main() -> anyhow::Result<()> {
    let args = Arc::new(Args::parse());
    let mix: Vec<u32> = args
        .mix
        .split(',')
        .map(|s| s.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .context("--mix is five integers")?;
    let mix: [u32; 5] = mix
        .try_into()
        .map_err(|_| anyhow::anyhow!("--mix is five integers"))?;
    if mix.iter().sum::<u32>() == 0 || args.accounts < 2 {
        bail!("--mix must not be all zero; --accounts at least 2");
    }
    let (addr, metrics_port, spawned) = match &args.addr {
        Some(a) => (a.clone(), args.metrics_port, None),
        None => {
            let (a, mp, s) = start_server(&args)?;
            (a, Some(mp), Some(s))
        }
    };
    let pid = spawned.as_ref().map(|s| s.child.id()).or(args.server_pid);
    let m = augur_bench::machine::Machine::detect();
    let server_desc = match &spawned {
        Some(_) => format!(
            "started by load_test: augur serve --log-level warn --metrics ADDR {}",
            args.server_args
        ),
        None => format!("external server at {addr}"),
    };
    println!("{}", m.describe());
    println!("server: {server_desc}");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let report = rt.block_on(run(
        args.clone(),
        mix,
        addr,
        pid,
        metrics_port,
        m.describe(),
        server_desc,
    ))?;
    drop(spawned);

    std::fs::create_dir_all(args.report.parent().unwrap_or(std::path::Path::new(".")))?;
    std::fs::write(&args.report, markdown(&report))?;
    let json = args.report.with_extension("json");
    std::fs::write(&json, serde_json::to_string_pretty(&report)?)?;
    println!("report: {} and {}", args.report.display(), json.display());
    if !report.passed {
        eprintln!(
            "FAILED: {} errors, {} wrong results, invariants {:?}",
            report.error_count,
            report.wrong_results.len(),
            report.invariants
        );
        std::process::exit(1);
    }
    Ok(())
}

async fn run(
    args: Arc<Args>,
    mix: [u32; 5],
    addr: String,
    pid: Option<u32>,
    metrics_port: Option<u16>,
    machine: String,
    server: String,
) -> anyhow::Result<Report> {
    let admin = connect(&addr).await?;
    let t_setup = Instant::now();
    setup(&admin, args.accounts, args.balance).await?;
    println!(
        "loaded {} accounts in {:.1}s; running {} connections for {}s",
        args.accounts,
        t_setup.elapsed().as_secs_f64(),
        args.connections,
        args.duration.as_secs()
    );
    let expected_sum = args.accounts * args.balance;

    let stop = Arc::new(AtomicBool::new(false));
    let ops_done = Arc::new(AtomicU64::new(0));
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let interval = Arc::new(Interval::new());
    let windows = Arc::new(Mutex::new(Windows::new(
        args.duration.as_secs_f64(),
        args.warmup.as_secs_f64(),
    )));
    let t0 = Instant::now();
    let mut workers = Vec::new();
    for id in 0..args.connections {
        workers.push(tokio::spawn(worker(
            id,
            addr.clone(),
            args.clone(),
            mix,
            stop.clone(),
            ops_done.clone(),
            interval.clone(),
        )));
    }
    // Sampler: RSS, throughput, per-operation latency and server counters every sample_secs.
    let sampler = {
        let (stop, ops_done, samples) = (stop.clone(), ops_done.clone(), samples.clone());
        let (interval, windows) = (interval.clone(), windows.clone());
        let every = Duration::from_secs(args.sample_secs.max(1));
        tokio::spawn(async move {
            let scrape_now = async || match metrics_port {
                Some(p) => tokio::task::spawn_blocking(move || scrape(p))
                    .await
                    .ok()
                    .flatten(),
                None => None,
            };
            let mut last_ops = 0;
            let mut last_t = 0.0;
            let mut last_scrape = scrape_now().await.map(|m| (m, 0.0));
            let mut last_cpu = pid.and_then(cpu_secs);
            let mem = last_scrape.as_ref().map(|m| memory_of(&m.0));
            samples.lock().push(Sample {
                t_secs: 0.0,
                rss_mib: pid.and_then(rss_kib).map(|k| k as f64 / 1024.0),
                caches_mib: mem.map(|m| m.0),
                alex_mib: mem.map(|m| m.1),
                ops: 0,
                ops_per_sec: 0.0,
                per_op: vec![],
                load1: load1(),
                server_cpu_pct: None,
                server_cpu_us_per_op: None,
                server: None,
            });
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                let t = t0.elapsed().as_secs_f64();
                let ops = ops_done.load(Ordering::Relaxed);
                let hists = interval.take();
                let secs = (t - last_t).max(1e-9);
                let cpu = pid.and_then(cpu_secs);
                let cpu_used = cpu.zip(last_cpu).map(|(a, b)| a - b);
                last_cpu = cpu;
                let m = scrape_now().await;
                let mem = m.as_ref().map(memory_of);
                let server = match (&last_scrape, &m) {
                    (Some((a, ta)), Some(b)) => Some(server_sample(a, b, t - ta)),
                    _ => None,
                };
                windows.lock().add(t - secs, t, &hists);
                let s = Sample {
                    t_secs: t,
                    rss_mib: pid.and_then(rss_kib).map(|k| k as f64 / 1024.0),
                    caches_mib: mem.map(|m| m.0),
                    alex_mib: mem.map(|m| m.1),
                    ops: ops - last_ops,
                    ops_per_sec: (ops - last_ops) as f64 / secs,
                    per_op: hists
                        .iter()
                        .map(|h| OpSample {
                            ok: h.len(),
                            per_sec: h.len() as f64 / secs,
                            p50_us: h.value_at_quantile(0.5),
                            p99_us: h.value_at_quantile(0.99),
                            max_us: h.max(),
                        })
                        .collect(),
                    load1: load1(),
                    server_cpu_pct: cpu_used.map(|c| 100.0 * c / secs),
                    server_cpu_us_per_op: cpu_used
                        .filter(|_| ops > last_ops)
                        .map(|c| c * 1e6 / (ops - last_ops) as f64),
                    server,
                };
                println!(
                    "t={:>6.0}s  rss={:>8}  caches={:>8}  alex={:>7}  ops/s={:>6.0}  load={}  cpu/op={}us  {}",
                    s.t_secs,
                    s.rss_mib.map_or("-".into(), |r| format!("{r:.1}MiB")),
                    s.caches_mib.map_or("-".into(), |r| format!("{r:.1}MiB")),
                    s.alex_mib.map_or("-".into(), |r| format!("{r:.2}MiB")),
                    s.ops_per_sec,
                    s.load1.map_or("-".into(), |l| format!("{l:.2}")),
                    s.server_cpu_us_per_op.map_or("-".into(), |c| format!("{c:.0}")),
                    OPS.iter()
                        .zip(&s.per_op)
                        .map(|(n, o)| format!("{n}={:.0}/s,p50={:.1}ms", o.per_sec, o.p50_us as f64 / 1e3))
                        .collect::<Vec<_>>()
                        .join(" ")
                );
                samples.lock().push(s);
                if let Some(m) = m {
                    last_scrape = Some((m, t));
                }
                last_ops = ops;
                last_t = t;
            }
        })
    };
    tokio::time::sleep(args.duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut results = Vec::new();
    let mut setup_errors = Vec::new();
    for w in workers {
        match w.await {
            Ok(Ok(r)) => results.push(r),
            Ok(Err(e)) => setup_errors.push(format!("{e:#}")),
            Err(e) => setup_errors.push(format!("worker panicked: {e}")),
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    sampler.abort();
    let _ = sampler.await;

    // Merge.
    let mut hist: Vec<Histogram<u64>> = (0..5).map(|_| new_hist()).collect();
    let mut ok = [0u64; 5];
    let mut errors = BTreeMap::new();
    let (mut retries, mut transfers, mut events, mut amount) = (0, 0, 0, 0i64);
    let (mut hdel, mut adel, mut edel) = (0u64, 0i64, 0u64);
    let mut wrong = Vec::new();
    for r in &results {
        for i in 0..5 {
            hist[i].add(&r.hist[i]).expect("same bounds");
            ok[i] += r.ok[i];
        }
        for (k, v) in &r.errors {
            *errors.entry(k.clone()).or_insert(0) += v;
        }
        retries += r.retries;
        transfers += r.transfers_committed;
        amount += r.amount_committed;
        events += r.events_inserted;
        hdel += r.history_deleted;
        adel += r.amount_deleted;
        edel += r.events_deleted;
        wrong.extend(r.wrong_results.iter().take(10).cloned());
    }
    for e in setup_errors {
        *errors.entry(format!("worker setup: {e}")).or_insert(0) += 1;
    }

    // Invariants, after every worker stopped.
    let sum = scalar(&admin, "SELECT sum(balance) FROM accounts").await?;
    let naccounts = scalar(&admin, "SELECT count(*) FROM accounts").await?;
    let nhist = scalar(&admin, "SELECT count(*) FROM history").await?;
    let hist_amount = if nhist == 0 {
        0
    } else {
        scalar(&admin, "SELECT sum(amount) FROM history").await?
    };
    let nevents = scalar(&admin, "SELECT count(*) FROM events").await?;
    let invariants = vec![
        (
            format!("sum(balance) = {sum}, expected {expected_sum}"),
            sum == expected_sum,
        ),
        (
            format!("count(accounts) = {naccounts}, expected {}", args.accounts),
            naccounts == args.accounts,
        ),
        (
            format!("count(history) = {nhist}, committed transfers {transfers} - deleted {hdel}"),
            nhist as u64 == transfers - hdel,
        ),
        (
            format!("sum(history.amount) = {hist_amount}, committed amounts {amount} - deleted {adel}"),
            hist_amount == amount - adel,
        ),
        (
            format!("count(events) = {nevents}, acknowledged inserts {events} - deleted {edel}"),
            nevents as u64 == events - edel,
        ),
    ];
    let final_rss = pid.and_then(rss_kib).map(|k| k as f64 / 1024.0);
    let mut samples = samples.lock().clone();
    if let Some(last) = samples.last_mut() {
        if last.rss_mib.is_none() {
            last.rss_mib = final_rss;
        }
    }
    let total: u64 = ok.iter().sum();
    let ops: Vec<OpReport> = (0..5)
        .map(|i| OpReport {
            op: OPS[i],
            ok: ok[i],
            per_sec: ok[i] as f64 / elapsed,
            p50_us: hist[i].value_at_quantile(0.5),
            p99_us: hist[i].value_at_quantile(0.99),
            p999_us: hist[i].value_at_quantile(0.999),
            max_us: hist[i].max(),
        })
        .collect();
    // Per-minute throughput and the last RSS sample of each minute.
    type Acc = (u64, f64, Option<f64>, Option<f64>, Option<f64>);
    let mut per_minute: BTreeMap<u64, Acc> = BTreeMap::new();
    for w in samples.windows(2) {
        let minute = (w[0].t_secs / 60.0 + 1e-6).floor() as u64 + 1;
        let e = per_minute.entry(minute).or_insert((0, 0.0, None, None, None));
        e.0 += w[1].ops;
        e.1 += w[1].t_secs - w[0].t_secs;
        e.2 = w[1].rss_mib.or(e.2);
        e.3 = w[1].caches_mib.or(e.3);
        e.4 = w[1].alex_mib.or(e.4);
    }
    let per_minute: Vec<Minute> = per_minute
        .into_iter()
        .map(|(m, (ops, secs, rss, caches, alex))| Minute {
            minute: m,
            ops_per_sec: ops as f64 / secs.max(1e-9),
            rss_mib: rss,
            caches_mib: caches,
            alex_mib: alex,
        })
        .collect();
    let trend = trend_of(&windows.lock(), &samples);
    let error_count: u64 = errors.values().sum();
    let passed = error_count == 0 && wrong.is_empty() && invariants.iter().all(|(_, ok)| *ok);
    Ok(Report {
        args: (*args).clone(),
        machine,
        server,
        elapsed_secs: elapsed,
        total_ops: total,
        ops_per_sec: total as f64 / elapsed,
        ops,
        retries_40001: retries,
        errors,
        error_count,
        transfers_committed: transfers,
        events_inserted: events,
        history_deleted: hdel,
        events_deleted: edel,
        invariants,
        wrong_results: wrong,
        samples,
        per_minute,
        trend,
        passed,
    })
}

fn markdown(r: &Report) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let a = &r.args;
    let _ = writeln!(
        s,
        "# load_test: {} connections, {} s, mixed bank workload\n",
        a.connections,
        a.duration.as_secs()
    );
    let _ = writeln!(
        s,
        "**{}**: {:.0} ops/s over {:.0} s, {} errors, {} SQLSTATE 40001/40P01 retries, invariants {}.\n",
        if r.passed { "PASSED" } else { "FAILED" },
        r.ops_per_sec,
        r.elapsed_secs,
        r.error_count,
        r.retries_40001,
        if r.invariants.iter().all(|(_, ok)| *ok) {
            "hold"
        } else {
            "BROKEN"
        }
    );
    let _ = writeln!(s, "- {}", r.machine);
    let _ = writeln!(s, "- server: {}", r.server);
    let _ = writeln!(
        s,
        "- workload: {} accounts of balance {}; mix read,transfer,event,scan,count = {} (percent); seed {}{}",
        a.accounts,
        a.balance,
        a.mix,
        a.seed,
        if a.retain > 0 {
            format!(
                "; history and events kept at about {} rows each (each transfer deletes its \
                 worker's oldest history row, each event insert its oldest event, in the same \
                 transaction): {} history rows and {} events deleted",
                a.retain, r.history_deleted, r.events_deleted
            )
        } else {
            "; history and events grow".into()
        }
    );
    let _ = writeln!(
        s,
        "- command: `load_test --connections {} --duration {}s --sample-secs {}{}{}{}{}`\n",
        a.connections,
        a.duration.as_secs(),
        a.sample_secs,
        if a.warmup.is_zero() {
            String::new()
        } else {
            format!(" --warmup {}s", a.warmup.as_secs())
        },
        if a.retain > 0 {
            format!(" --retain {}", a.retain)
        } else {
            String::new()
        },
        if a.server_args.is_empty() {
            String::new()
        } else {
            format!(" --server-args '{}'", a.server_args)
        },
        if a.accounts == 100_000 {
            String::new()
        } else {
            format!(" --accounts {}", a.accounts)
        }
    );
    let _ = writeln!(s, "## Operations (latency measured by the client, µs)\n");
    let _ = writeln!(s, "| op | ok | per s | p50 | p99 | p99.9 | max |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    for o in &r.ops {
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {} | {} | {} | {} |",
            o.op, o.ok, o.per_sec, o.p50_us, o.p99_us, o.p999_us, o.max_us
        );
    }
    let _ = writeln!(
        s,
        "\n`transfer` is BEGIN, two UPDATEs, an INSERT{} and COMMIT, counted once when committed; \
         its time includes 40001/40P01 retries.{}\n",
        if a.retain > 0 {
            ", a DELETE of the worker's oldest history row"
        } else {
            ""
        },
        if a.retain > 0 {
            " With --retain, `event` is BEGIN, INSERT, DELETE of the worker's oldest event, COMMIT."
        } else {
            ""
        }
    );
    let _ = writeln!(s, "## Errors\n");
    if r.errors.is_empty() {
        let _ = writeln!(s, "None.");
    } else {
        for (k, v) in &r.errors {
            let _ = writeln!(s, "- {k}: {v}");
        }
    }
    let _ = writeln!(
        s,
        "\nSQLSTATE 40001/40P01 retries (not errors): {}. Wrong results: {}.\n",
        r.retries_40001,
        r.wrong_results.len()
    );
    for w in &r.wrong_results {
        let _ = writeln!(s, "- {w}");
    }
    let _ = writeln!(s, "## Invariants (checked after the run)\n");
    for (k, ok) in &r.invariants {
        let _ = writeln!(s, "- [{}] {k}", if *ok { "x" } else { " " });
    }
    let _ = writeln!(s, "\n## Throughput and server RSS per minute\n");
    let _ = writeln!(
        s,
        "Caches: the server's row cache + RocksDB block cache + memtables + table readers at the \
         end of the minute, from its metrics endpoint (bounded by --memory-mb \
         and the write buffers); ALEX: the primary indexes' allocations (they grow with the \
         rows); RSS - caches - ALEX is the rest of the server, which must not grow.\n"
    );
    let _ = writeln!(
        s,
        "| minute | ops/s | RSS (MiB) | caches (MiB) | ALEX (MiB) | RSS - caches - ALEX (MiB) |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|");
    let f = |x: Option<f64>| x.map_or("-".into(), |r| format!("{r:.1}"));
    for m in &r.per_minute {
        let _ = writeln!(
            s,
            "| {} | {:.0} | {} | {} | {} | {} |",
            m.minute,
            m.ops_per_sec,
            f(m.rss_mib),
            f(m.caches_mib),
            f(m.alex_mib),
            f(m.rss_mib
                .zip(m.caches_mib)
                .zip(m.alex_mib)
                .map(|((a, b), c)| a - b - c))
        );
    }
    if let Some(t) = &r.trend {
        let _ = writeln!(
            s,
            "\n## Trend: {0:.0} s from second {1:.0} against the last {0:.0} s\n",
            t.window_secs, t.first_start_secs
        );
        if t.first_start_secs > 0.0 {
            let _ = writeln!(
                s,
                "The first {:.0} s are warm-up (--warmup: the tables reach their --retain size, \
                 the caches fill) and are left out of the first window.\n",
                t.first_start_secs
            );
        }
        let _ = writeln!(
            s,
            "Throughput and client latency (µs) over each window; RSS at the end of the first \
             window (after warm-up), the end of the run, the largest in the last window, and \
             its least-squares slope over the last window; load: the mean 1-minute load \
             average of the machine in each window.\n"
        );
        let _ = writeln!(s, "| | first | last | last / first |");
        let _ = writeln!(s, "|---|---:|---:|---:|");
        let ratio = |a: f64, b: f64| {
            if a > 0.0 {
                format!("{:.2}", b / a)
            } else {
                "-".into()
            }
        };
        let _ = writeln!(
            s,
            "| all ops/s | {:.0} | {:.0} | {} |",
            t.first_ops_per_sec,
            t.last_ops_per_sec,
            ratio(t.first_ops_per_sec, t.last_ops_per_sec)
        );
        for o in &t.per_op {
            let _ = writeln!(
                s,
                "| {} ops/s | {:.0} | {:.0} | {} |",
                o.op,
                o.first_per_sec,
                o.last_per_sec,
                ratio(o.first_per_sec, o.last_per_sec)
            );
            let _ = writeln!(
                s,
                "| {} p50 / p99 | {} / {} | {} / {} | {} / {} |",
                o.op,
                o.first_p50_us,
                o.first_p99_us,
                o.last_p50_us,
                o.last_p99_us,
                ratio(o.first_p50_us as f64, o.last_p50_us as f64),
                ratio(o.first_p99_us as f64, o.last_p99_us as f64)
            );
        }
        let _ = writeln!(
            s,
            "| RSS (MiB): end of window / max in window | {} | {} / {} | {} |",
            f(t.rss_first_end_mib),
            f(t.rss_end_mib),
            f(t.rss_max_last_mib),
            t.rss_first_end_mib
                .zip(t.rss_end_mib)
                .map_or("-".into(), |(a, b)| ratio(a, b))
        );
        let _ = writeln!(
            s,
            "| RSS - caches - ALEX (MiB) | {} | {} | {} |",
            f(t.rest_first_end_mib),
            f(t.rest_end_mib),
            t.rest_first_end_mib
                .zip(t.rest_end_mib)
                .map_or("-".into(), |(a, b)| ratio(a, b))
        );
        let _ = writeln!(
            s,
            "| RSS slope in the window (MiB/min) | | {} | |",
            t.rss_slope_last_mib_per_min
                .map_or("-".into(), |v| format!("{v:.2}"))
        );
        let _ = writeln!(
            s,
            "| server CPU per operation (µs) | {} | {} | {} |",
            f(t.cpu_us_per_op_first),
            f(t.cpu_us_per_op_last),
            t.cpu_us_per_op_first
                .zip(t.cpu_us_per_op_last)
                .map_or("-".into(), |(a, b)| ratio(a, b))
        );
        let _ = writeln!(
            s,
            "| machine load (1-min average) | {} | {} | |",
            t.load1_first_mean.map_or("-".into(), |v| format!("{v:.2}")),
            t.load1_last_mean.map_or("-".into(), |v| format!("{v:.2}"))
        );
    }
    let _ = writeln!(s, "\n## Samples (every {} s)\n", a.sample_secs);
    let _ = writeln!(
        s,
        "| t (s) | ops/s | RSS (MiB) | caches (MiB) | ALEX (MiB) | load | server CPU % | CPU µs/op |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for x in &r.samples {
        let _ = writeln!(
            s,
            "| {:.0} | {:.0} | {} | {} | {} | {} | {} | {} |",
            x.t_secs,
            x.ops_per_sec,
            f(x.rss_mib),
            f(x.caches_mib),
            x.alex_mib.map_or("-".into(), |r| format!("{r:.2}")),
            x.load1.map_or("-".into(), |r| format!("{r:.2}")),
            x.server_cpu_pct.map_or("-".into(), |r| format!("{r:.0}")),
            x.server_cpu_us_per_op.map_or("-".into(), |r| format!("{r:.0}"))
        );
    }
    let _ = writeln!(
        s,
        "\n## Operations per sample (ops/s, client p50 / p99 in ms, over the interval ending at t)\n"
    );
    let _ = writeln!(s, "| t (s) | {} |", OPS.join(" | "));
    let _ = writeln!(s, "|---:|{}", "---:|".repeat(OPS.len()));
    for x in r.samples.iter().filter(|x| !x.per_op.is_empty()) {
        let cells: Vec<String> = x
            .per_op
            .iter()
            .map(|o| {
                format!(
                    "{:.0} ({:.1} / {:.1})",
                    o.per_sec,
                    o.p50_us as f64 / 1e3,
                    o.p99_us as f64 / 1e3
                )
            })
            .collect();
        let _ = writeln!(s, "| {:.0} | {} |", x.t_secs, cells.join(" | "));
    }
    if r.samples.iter().any(|x| x.server.is_some()) {
        let _ = writeln!(s, "\n## Server per sample (from its metrics endpoint)\n");
        let _ = writeln!(
            s,
            "Rates over the interval ending at t; GC: old versions collected; pending: versions \
             queued for collection; hit %: row cache; stmt µs: mean server time of SELECT and \
             of committing statements; fsync µs: mean WAL fsync time; memory columns in MiB (row cache, block cache, \
             memtables); SST: size of the rows' SST files; compaction: RocksDB's estimate of \
             pending compaction bytes (MiB); stall: delayed write rate (bytes/s, 0 = none) or \
             STOP.\n"
        );
        let _ = writeln!(
            s,
            "| t (s) | commits/s | fsyncs/s | fsync µs | GC/s | pending | hit % | misses/s | lock waits/s | select µs | commit µs | row cache | block cache | memtables | SST | compaction | stall |"
        );
        let _ = writeln!(s, "|---:|{}", "---:|".repeat(16));
        for x in &r.samples {
            let Some(v) = &x.server else { continue };
            let hits = v.row_cache_hits_per_sec + v.row_cache_misses_per_sec;
            let _ = writeln!(
                s,
                "| {:.0} | {:.0} | {:.0} | {} | {:.0} | {} | {} | {:.0} | {:.1} | {:.0} | {:.0} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                x.t_secs,
                v.commits_per_sec,
                v.wal_fsyncs_per_sec,
                v.wal_fsync_us.map_or("-".into(), |u| format!("{u:.0}")),
                v.gc_per_sec,
                v.gc_pending.map_or("-".into(), |p| format!("{p:.0}")),
                if hits > 0.0 {
                    format!("{:.1}", 100.0 * v.row_cache_hits_per_sec / hits)
                } else {
                    "-".into()
                },
                v.row_cache_misses_per_sec,
                v.lock_waits_per_sec,
                v.select_us,
                v.commit_us,
                v.row_cache_mib,
                v.block_cache_mib,
                v.memtables_mib,
                v.sst_mib,
                v.pending_compaction_mib,
                match (v.write_stopped, v.delayed_write_rate) {
                    (Some(w), _) if w > 0.0 => "STOP".into(),
                    (_, Some(d)) => format!("{d:.0}"),
                    _ => "-".into(),
                }
            );
        }
    }
    s
}
