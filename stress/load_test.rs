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
//! row per committed transfer, events one row per acknowledged insert. Reports throughput,
//! p50/p99/max per operation (HdrHistogram), errors by SQLSTATE (any error, or a broken
//! invariant, exits non-zero), and the server's RSS sampled from /proc/PID/status with the
//! throughput of each sampling interval. Writes a Markdown report and its JSON twin.
//!
//! `load_test` starts its own server (the `augur` binary beside this one) on a temporary
//! directory unless `--addr` is given (then `--server-pid` gives its RSS).

#[path = "common/machine.rs"]
mod machine;

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

/// What one worker measured.
struct WorkerResult {
    hist: Vec<Histogram<u64>>,
    ok: [u64; 5],
    retries: u64,
    errors: BTreeMap<String, u64>,
    transfers_committed: u64,
    amount_committed: i64,
    events_inserted: u64,
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

/// One transfer in an explicit transaction block; Ok(retries) once committed.
async fn transfer(
    c: &Client,
    p: &Prepared,
    a: i64,
    b: i64,
    amount: i64,
    hid: i64,
    retries: &mut u64,
) -> Result<(), tokio_postgres::Error> {
    loop {
        let r: Result<(), tokio_postgres::Error> = async {
            c.batch_execute("BEGIN").await?;
            let n1 = c.execute(&p.debit, &[&amount, &a]).await?;
            let n2 = c.execute(&p.credit, &[&amount, &b]).await?;
            c.execute(&p.history, &[&hid, &a, &b, &amount]).await?;
            debug_assert!(n1 == 1 && n2 == 1);
            c.batch_execute("COMMIT").await
        }
        .await;
        match r {
            Ok(()) => return Ok(()),
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
    };
    let mut rng = StdRng::seed_from_u64(args.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut res = WorkerResult {
        hist: (0..5)
            .map(|_| Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram bounds"))
            .collect(),
        ok: [0; 5],
        retries: 0,
        errors: BTreeMap::new(),
        transfers_committed: 0,
        amount_committed: 0,
        events_inserted: 0,
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
                let r = transfer(&c, &p, a, b, amount, base + seq, &mut res.retries).await;
                if r.is_ok() {
                    res.transfers_committed += 1;
                    res.amount_committed += amount;
                }
                r
            }
            2 => {
                seq += 1;
                let k = rng.random_range(0..n);
                let r = c.execute(&p.event, &[&(base + seq), &k, &"login"]).await;
                if r.is_ok() {
                    res.events_inserted += 1;
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

fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
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
}

/// Scrapes the server's `/metrics` (blocking; loopback) and sums what the caches and the ALEX
/// indexes hold: (caches MiB, ALEX MiB).
fn scrape_memory(port: u16) -> Option<(f64, f64)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (mut caches, mut alex) = (0.0, 0.0);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, v)) = line.rsplit_once(' ') else {
            continue;
        };
        let v: f64 = v.parse().unwrap_or(0.0);
        if series == "augur_row_cache_bytes"
            || series.contains("\"rocksdb.block-cache-usage\"")
            || series.contains("\"rocksdb.cur-size-all-mem-tables\"")
            || series.contains("\"rocksdb.estimate-table-readers-mem\"")
        {
            caches += v;
        } else if series.starts_with("augur_alex_bytes{") {
            alex += v;
        }
    }
    Some((caches / 1048576.0, alex / 1048576.0))
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
    invariants: Vec<(String, bool)>,
    wrong_results: Vec<String>,
    samples: Vec<Sample>,
    per_minute: Vec<Minute>,
    passed: bool,
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
    let m = machine::Machine::detect();
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
        )));
    }
    // Sampler: RSS and throughput every sample_secs.
    let sampler = {
        let (stop, ops_done, samples) = (stop.clone(), ops_done.clone(), samples.clone());
        let every = Duration::from_secs(args.sample_secs.max(1));
        tokio::spawn(async move {
            let mut last_ops = 0;
            let mut last_t = 0.0;
            let push = |t: f64, ops: u64, last_ops: u64, last_t: f64, mem: Option<(f64, f64)>| {
                let s = Sample {
                    t_secs: t,
                    rss_mib: pid.and_then(rss_kib).map(|k| k as f64 / 1024.0),
                    caches_mib: mem.map(|m| m.0),
                    alex_mib: mem.map(|m| m.1),
                    ops: ops - last_ops,
                    ops_per_sec: (ops - last_ops) as f64 / (t - last_t).max(1e-9),
                };
                println!(
                    "t={:>6.0}s  rss={:>8}  caches={:>8}  alex={:>7}  ops/s={:>8.0}",
                    s.t_secs,
                    s.rss_mib.map_or("-".into(), |r| format!("{r:.1}MiB")),
                    s.caches_mib.map_or("-".into(), |r| format!("{r:.1}MiB")),
                    s.alex_mib.map_or("-".into(), |r| format!("{r:.2}MiB")),
                    s.ops_per_sec
                );
                samples.lock().push(s);
            };
            let mem = async || match metrics_port {
                Some(p) => tokio::task::spawn_blocking(move || scrape_memory(p))
                    .await
                    .ok()
                    .flatten(),
                None => None,
            };
            push(0.0, 0, 0, 0.0, mem().await);
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            while !stop.load(Ordering::Relaxed) {
                tick.tick().await;
                let t = t0.elapsed().as_secs_f64();
                let ops = ops_done.load(Ordering::Relaxed);
                let m = mem().await;
                push(t, ops, last_ops, last_t, m);
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
    let mut hist: Vec<Histogram<u64>> = (0..5)
        .map(|_| Histogram::new_with_bounds(1, 600_000_000, 3).expect("histogram bounds"))
        .collect();
    let mut ok = [0u64; 5];
    let mut errors = BTreeMap::new();
    let (mut retries, mut transfers, mut events, mut amount) = (0, 0, 0, 0i64);
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
            format!("count(history) = {nhist}, committed transfers {transfers}"),
            nhist as u64 == transfers,
        ),
        (
            format!("sum(history.amount) = {hist_amount}, committed amounts {amount}"),
            hist_amount == amount,
        ),
        (
            format!("count(events) = {nevents}, acknowledged inserts {events}"),
            nevents as u64 == events,
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
        invariants,
        wrong_results: wrong,
        samples,
        per_minute,
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
        "- workload: {} accounts of balance {}; mix read,transfer,event,scan,count = {} (percent); seed {}",
        a.accounts, a.balance, a.mix, a.seed
    );
    let _ = writeln!(
        s,
        "- command: `load_test --connections {} --duration {}s{}{}`\n",
        a.connections,
        a.duration.as_secs(),
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
        "\n`transfer` is BEGIN, two UPDATEs, an INSERT and COMMIT (five round trips), counted once \
         when committed; its time includes 40001/40P01 retries.\n"
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
         end of the minute, from its metrics endpoint (bounded by --row-cache-mb, --block-cache-mb \
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
    let _ = writeln!(s, "\n## Samples (every {} s)\n", a.sample_secs);
    let _ = writeln!(s, "| t (s) | ops/s | RSS (MiB) | caches (MiB) | ALEX (MiB) |");
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|");
    for x in &r.samples {
        let _ = writeln!(
            s,
            "| {:.0} | {:.0} | {} | {} | {} |",
            x.t_secs,
            x.ops_per_sec,
            f(x.rss_mib),
            f(x.caches_mib),
            x.alex_mib.map_or("-".into(), |r| format!("{r:.2}"))
        );
    }
    s
}
