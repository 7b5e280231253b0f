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

mod report;
mod sample;
mod server;
mod workload;

use report::*;
use sample::*;
use server::*;
use workload::*;

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
    let sum = scalar(&admin, "SELECT sum(balance)::int8 FROM accounts").await?;
    let naccounts = scalar(&admin, "SELECT count(*) FROM accounts").await?;
    let nhist = scalar(&admin, "SELECT count(*) FROM history").await?;
    let hist_amount = if nhist == 0 {
        0
    } else {
        scalar(&admin, "SELECT sum(amount)::int8 FROM history").await?
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
