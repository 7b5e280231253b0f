//! honest_comparison: Augur vs SQLite (and raw RocksDB) at 10K-10M rows (issue 7).
//!
//! The parent process builds the matrix (size x distribution x system x layer) and runs every
//! cell in a fresh child process (a re-exec of this binary with `--child`) with its own fresh
//! database directory, so that RSS and allocator counts belong to one system only. Each child
//! bulk loads, closes and reopens, then measures point hits, point misses, 100-key range scans,
//! and (nosync, then sync) update, delete, single-row inserts and a 70/30 read/write mix. Every
//! result is checked against the seeded data; any wrong answer fails the run.
//!
//! Writes `<out>/honest_comparison.md`, `.json` and `.svg`. Rules: `../shared/BENCHMARKING.md`.

mod report;
mod systems;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use augur_bench::alloc::{allocated_bytes, CountingAlloc};
use augur_bench::keys::{mix, Dist, KeySet, Rng};
use augur_bench::machine;
use systems::System;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[derive(Parser, Debug, Clone)]
#[command(about = "Augur vs SQLite vs raw RocksDB: the honest comparison (issue 7)")]
pub struct Args {
    /// Row counts.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000,10000000")]
    sizes: Vec<usize>,
    /// Key distributions: seq, random, lognormal.
    #[arg(long, value_delimiter = ',', default_value = "seq,random,lognormal")]
    dists: Vec<String>,
    /// Sizes at or above this use only `--large-dists` and `--large-runs` (time budget).
    #[arg(long, default_value_t = 10_000_000)]
    large_from: usize,
    #[arg(long, value_delimiter = ',', default_value = "random,seq")]
    large_dists: Vec<String>,
    #[arg(long, default_value_t = 1)]
    large_runs: usize,
    /// Systems: augur, sqlite, rocksdb.
    #[arg(long, value_delimiter = ',', default_value = "augur,sqlite,rocksdb")]
    systems: Vec<String>,
    /// Layers: api, sql (sql: Augur's Session vs SQLite's SQL).
    #[arg(long, value_delimiter = ',', default_value = "api,sql")]
    layers: Vec<String>,
    /// The Augur SQL layer is measured up to this size.
    #[arg(long, default_value_t = 1_000_000)]
    sql_max_size: usize,
    /// Value bytes per row (the key is 8 more).
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Measured runs per operation (after one warm-up run).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Point lookups per run (hits; the same number of misses).
    #[arg(long, default_value_t = 50_000)]
    lookups: usize,
    /// 100-key range scans per run.
    #[arg(long, default_value_t = 5_000)]
    scans: usize,
    /// Operations per run of update/delete/insert/mix without fsync.
    #[arg(long, default_value_t = 5_000)]
    write_ops: usize,
    /// Operations per run of update/delete/insert/mix with fsync per commit (fsync-bound).
    #[arg(long, default_value_t = 200)]
    sync_ops: usize,
    /// Bulk loads are repeated `runs` times only up to this size (each in a fresh directory).
    #[arg(long, default_value_t = 1_000_000)]
    bulk_repeat_max: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Output directory.
    #[arg(long, default_value = "reports/")]
    out: PathBuf,
    /// Where the databases are created (removed after each cell).
    #[arg(long, default_value = "/tmp/augur-honest-comparison")]
    data_dir: PathBuf,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Internal: run one cell ("system,layer,dist,size") and write its JSON to --child-out.
    #[arg(long, hide = true)]
    child: Option<String>,
    #[arg(long, hide = true)]
    child_out: Option<PathBuf>,
}

/// One row of the JSON `results`, exactly the schema.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ResultRow {
    pub system: String,
    pub layer: String,
    pub durability: String,
    pub op: String,
    pub dist: String,
    pub size: usize,
    pub ops_per_sec: f64,
    pub mean_us: f64,
    pub p50_us: Option<f64>,
    pub p95_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub runs: usize,
    pub spread_pct: f64,
    pub rss_bytes: u64,
    pub disk_bytes: u64,
}

/// Correctness of one (cell, op, durability): answers checked / answers right.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Check {
    pub system: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
    pub op: String,
    pub durability: String,
    pub expected: u64,
    pub correct: u64,
}

/// Memory of one cell, measured (never a formula).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Memory {
    pub system: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
    /// VmRSS of the child before creating the database (key arrays of the benchmark itself).
    pub rss_before_bytes: u64,
    pub rss_after_load_bytes: u64,
    pub rss_end_bytes: u64,
    /// Bytes held through Rust's global allocator after load minus before (C/C++ allocations
    /// of SQLite and RocksDB are not counted here; see `self_reported`).
    pub rust_heap_after_load_bytes: i64,
    pub rust_heap_end_bytes: i64,
    pub self_reported: Vec<(String, u64)>,
    pub disk_after_load_bytes: u64,
}

#[derive(Serialize, Deserialize, Default)]
pub struct CellOut {
    pub results: Vec<ResultRow>,
    pub checks: Vec<Check>,
    pub memory: Vec<Memory>,
    pub seconds: f64,
}

fn parse_dist(s: &str) -> Result<Dist> {
    Ok(match s {
        "seq" => Dist::Seq,
        "random" => Dist::Random,
        "lognormal" => Dist::LogNormal,
        _ => bail!("unknown distribution {s}"),
    })
}

pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// The value of key `k` at generation `gen`: 4 bytes of generation, then incompressible bytes
/// derived from (k, gen). Compression therefore gains nothing on any side.
pub fn value_of(k: u64, gen: u32, size: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&gen.to_le_bytes()[..size.min(4)]);
    let mut i = 0u64;
    while out.len() < size {
        let w = mix(k ^ ((gen as u64) << 40) ^ i.wrapping_mul(0x9E37_79B9));
        let take = (size - out.len()).min(8);
        out.extend_from_slice(&w.to_le_bytes()[..take]);
        i += 1;
    }
}

fn main() {
    let args = Args::parse();
    let r = if let Some(cell) = args.child.clone() {
        run_child(&args, &cell)
    } else {
        run_parent(&args)
    };
    if let Err(e) = r {
        eprintln!("honest_comparison: FAILED: {e:#}");
        std::process::exit(1);
    }
}

// ====================================================================== parent

#[derive(Clone, Debug)]
pub struct Cell {
    pub system: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
}

fn matrix(a: &Args) -> Vec<Cell> {
    let mut v = Vec::new();
    for &size in &a.sizes {
        let dists = if size >= a.large_from {
            a.dists
                .iter()
                .filter(|d| a.large_dists.contains(d))
                .cloned()
                .collect::<Vec<_>>()
        } else {
            a.dists.clone()
        };
        for dist in dists {
            for layer in &a.layers {
                for system in &a.systems {
                    let ok = match (layer.as_str(), system.as_str()) {
                        ("api", _) => true,
                        // SQLite's only interface is SQL: its api rows (rusqlite prepared
                        // statements) are the SQL rows too; raw RocksDB has no SQL.
                        ("sql", "augur") => size <= a.sql_max_size,
                        _ => false,
                    };
                    if ok {
                        v.push(Cell {
                            system: system.clone(),
                            layer: layer.clone(),
                            dist: dist.clone(),
                            size,
                        });
                    }
                }
            }
        }
    }
    v
}

fn other_load() -> (String, String) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let out = Command::new("pgrep")
        .args(["-a", "rustc|pgbench|cargo"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default();
    let procs: Vec<String> = out
        .lines()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .collect();
    (load.trim().to_string(), procs.join("; "))
}

fn run_parent(a: &Args) -> Result<()> {
    let cells = matrix(a);
    // The children run a private copy of this binary: a concurrent `cargo build` replacing the
    // target file mid-run cannot mix two builds into one report.
    let machine = machine::Machine::detect();
    let built = std::fs::metadata(std::env::current_exe()?)
        .and_then(|m| m.modified())
        .ok()
        .map(|t| {
            let s = t
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            format!("unix time {s}")
        })
        .unwrap_or_else(|| "unknown".into());
    std::fs::create_dir_all(&a.data_dir)?;
    let exe = a.data_dir.join("honest_comparison.bin");
    std::fs::copy(std::env::current_exe()?, &exe)?;
    let started = Instant::now();
    let load_start = other_load();
    let fsync_us = report::fsync_latency_us(&a.data_dir);
    let pb = if a.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let pb = indicatif::ProgressBar::new(cells.len() as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
            )
            .expect("template"),
        );
        pb.enable_steady_tick(Duration::from_millis(200));
        pb
    };
    let mut all = CellOut::default();
    let tmp = a.data_dir.join("cells");
    std::fs::create_dir_all(&tmp)?;
    let mut cell_seconds = Vec::new();
    for c in &cells {
        pb.set_message(format!("{} {} {} {}", c.system, c.layer, c.dist, c.size));
        let out = tmp.join(format!("{}-{}-{}-{}.json", c.system, c.layer, c.dist, c.size));
        let mut cmd = Command::new(&exe);
        cmd.args(std::env::args_os().skip(1));
        cmd.arg("--child")
            .arg(format!("{},{},{},{}", c.system, c.layer, c.dist, c.size))
            .arg("--child-out")
            .arg(&out);
        let st = cmd.status().context("spawning a child")?;
        if !st.success() {
            pb.abandon();
            bail!("cell {c:?} failed ({st})");
        }
        let co: CellOut = serde_json::from_slice(&std::fs::read(&out)?)?;
        let _ = std::fs::remove_file(&out);
        for ch in &co.checks {
            if ch.correct != ch.expected {
                bail!("wrong answers: {ch:?}");
            }
        }
        cell_seconds.push((c.clone(), co.seconds));
        if !a.quiet || pb.is_hidden() {
            let hits: Vec<String> = co
                .checks
                .iter()
                .map(|ch| format!("{}/{}={}/{}", ch.op, ch.durability, ch.correct, ch.expected))
                .collect();
            let line = format!(
                "{} {} {} {}: {:.1}s, checks {}",
                c.system,
                c.layer,
                c.dist,
                c.size,
                co.seconds,
                hits.join(" ")
            );
            if pb.is_hidden() {
                if !a.quiet {
                    eprintln!("{line}");
                }
            } else {
                pb.println(line);
            }
        }
        all.results.extend(co.results);
        all.checks.extend(co.checks);
        all.memory.extend(co.memory);
    }
    pb.finish_and_clear();
    let load_end = other_load();
    let ctx = report::Context {
        args: a.clone(),
        argv: std::env::args().collect::<Vec<_>>().join(" "),
        fsync_us,
        load_start,
        load_end,
        total_seconds: started.elapsed().as_secs_f64(),
        cell_seconds,
        machine,
        built,
    };
    report::write(&a.out, &ctx, &all)?;
    let total: u64 = all.checks.iter().map(|c| c.expected).sum();
    let ok: u64 = all.checks.iter().map(|c| c.correct).sum();
    println!(
        "honest_comparison: {} results, checks {ok}/{total} correct, report in {}",
        all.results.len(),
        a.out.join("honest_comparison.md").display()
    );
    if ok != total {
        bail!("{} wrong answers", total - ok);
    }
    Ok(())
}

// ====================================================================== child

pub fn augur_options() -> augur::Options {
    augur::Options::default()
}

/// The cache budget every side gets: Augur's row cache + RocksDB block cache.
/// Raw RocksDB: Augur's rows column-family options, but the whole memory budget as block cache
/// (it has no row cache) and a 10 bits/key bloom filter (it answers absent keys itself, where
/// Augur's index answers them before RocksDB is asked).
pub fn rocks_options() -> augur::store::StoreOptions {
    augur::store::StoreOptions {
        block_cache_bytes: cache_budget(),
        bloom_bits_per_key: 10.0,
        ..augur_options().store
    }
}

pub fn cache_budget() -> usize {
    let o = augur_options();
    o.row_cache_bytes + o.store.block_cache_bytes
}

struct Stat {
    hist: Histogram<u64>,
    run_means_us: Vec<f64>,
}

impl Stat {
    fn new() -> Self {
        Stat {
            hist: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram"),
            run_means_us: Vec::new(),
        }
    }
}

struct Child<'a> {
    a: &'a Args,
    cell: Cell,
    ks: KeySet,
    sys: Box<dyn System>,
    out: CellOut,
    disk: u64,
    /// Current generation of modified keys; deleted keys.
    gens: HashMap<u64, u32>,
    deleted: HashSet<u64>,
    inserted: HashSet<u64>,
    /// Keys that may be deleted (first half of a shuffle) and keys that never are.
    deletable: Vec<u64>,
    stable: Vec<u64>,
    next_delete: usize,
    rng: Rng,
    buf: Vec<u8>,
    exp: Vec<u8>,
}

fn shuffled(v: &[u64], seed: u64) -> Vec<u64> {
    let mut v = v.to_vec();
    let mut rng = Rng::new(seed);
    for i in (1..v.len()).rev() {
        let j = rng.below(i + 1);
        v.swap(i, j);
    }
    v
}

fn run_child(a: &Args, spec: &str) -> Result<()> {
    let started = Instant::now();
    let p: Vec<&str> = spec.split(',').collect();
    let cell = Cell {
        system: p[0].into(),
        layer: p[1].into(),
        dist: p[2].into(),
        size: p[3].parse()?,
    };
    let dist = parse_dist(&cell.dist)?;
    let ks = KeySet::generate(dist, cell.size, a.seed);
    let sh = shuffled(&ks.sorted, a.seed ^ 0x5151);
    let (deletable, stable) = sh.split_at(sh.len() / 2);
    let dir = a.data_dir.join(format!(
        "{}-{}-{}-{}",
        cell.system, cell.layer, cell.dist, cell.size
    ));
    let rss_before = rss_bytes();
    let heap_before = allocated_bytes() as i64;

    let bulk_runs = if cell.size <= a.bulk_repeat_max {
        a.runs.max(1)
    } else {
        1
    };
    let mut bulk_times = Vec::new();
    let mut sys: Option<Box<dyn System>> = None;
    for _ in 0..bulk_runs {
        if let Some(mut s) = sys.take() {
            let _ = s.close();
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let mut s = make_system(&cell, &dir)?;
        let vs = a.value_size;
        let t = Instant::now();
        s.bulk_insert(&ks.gen, &mut |k, b| value_of(k, 0, vs, b))?;
        bulk_times.push(t.elapsed().as_secs_f64());
        sys = Some(s);
    }
    let sys = sys.expect("at least one load");
    let rss_after_load = rss_bytes();
    let heap_after_load = allocated_bytes() as i64 - heap_before;
    let self_reported = sys.self_reported_memory();

    let mut c = Child {
        a,
        cell: cell.clone(),
        ks,
        sys,
        out: CellOut::default(),
        disk: 0,
        gens: HashMap::new(),
        deleted: HashSet::new(),
        inserted: HashSet::new(),
        deletable: deletable.to_vec(),
        stable: stable.to_vec(),
        next_delete: 0,
        rng: Rng::new(a.seed ^ 0x77),
        buf: Vec::with_capacity(4096),
        exp: Vec::with_capacity(4096),
    };
    // Bulk insert: time per row of each load (no warm-up: every load is a fresh directory).
    let per_row_us: Vec<f64> = bulk_times.iter().map(|s| s * 1e6 / cell.size as f64).collect();

    // Reopen (API only): close, then time open + one lookup.
    if cell.layer == "api" {
        c.sys.close()?;
        c.disk = systems::dir_bytes(&dir);
        let probe = c.ks.sorted[c.ks.sorted.len() / 2];
        let mut times = Vec::new();
        for r in 0..=a.runs {
            if r > 0 {
                c.sys.close()?;
            }
            let t = Instant::now();
            c.sys.reopen(probe)?;
            if r > 0 {
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        c.push_plain("reopen", "sync", &times, None);
        // Warm caches for the reads: one full read of the table (System::warm); timed from the
        // end of the last reopen, and checked: the full read must see every row.
        let t = Instant::now();
        let read = c.sys.warm()?;
        let warm_us = t.elapsed().as_secs_f64() * 1e6;
        c.check("warm", "sync", 1, u64::from(read == cell.size as u64));
        c.push_plain("warm", "sync", &[warm_us], None);
    } else {
        c.disk = systems::dir_bytes(&dir);
        // The SQL cell is not reopened, but it is compared with SQLite figures measured after
        // a reopen and a full read: it gets the same full read before its own reads.
        let t = Instant::now();
        let read = c.sys.warm()?;
        let warm_us = t.elapsed().as_secs_f64() * 1e6;
        c.check("warm", "sync", 1, u64::from(read == cell.size as u64));
        c.push_plain("warm", "sync", &[warm_us], None);
    }
    c.push_plain("bulk_insert", "sync", &per_row_us, None);

    c.point_hits()?;
    c.point_misses()?;
    c.ranges()?;
    for sync in [false, true] {
        c.updates(sync)?;
        c.deletes(sync)?;
        c.inserts(sync)?;
        c.mixed(sync)?;
    }
    let rss_end = rss_bytes();
    let heap_end = allocated_bytes() as i64 - heap_before;
    let self_end = c.sys.self_reported_memory();
    let mut sr = self_reported;
    sr.extend(self_end.into_iter().map(|(n, v)| (format!("{n} (end)"), v)));
    c.out.memory.push(Memory {
        system: cell.system.clone(),
        layer: cell.layer.clone(),
        dist: cell.dist.clone(),
        size: cell.size,
        rss_before_bytes: rss_before,
        rss_after_load_bytes: rss_after_load,
        rss_end_bytes: rss_end,
        rust_heap_after_load_bytes: heap_after_load,
        rust_heap_end_bytes: heap_end,
        self_reported: sr,
        disk_after_load_bytes: c.disk,
    });
    // Bulk rows carry the RSS right after the load.
    for r in c.out.results.iter_mut() {
        if r.op == "bulk_insert" {
            r.rss_bytes = rss_after_load;
        }
    }
    let _ = c.sys.close();
    c.out.seconds = started.elapsed().as_secs_f64();
    let out = a.child_out.clone().context("--child-out")?;
    std::fs::write(&out, serde_json::to_vec(&c.out)?)?;
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn make_system(cell: &Cell, dir: &Path) -> Result<Box<dyn System>> {
    Ok(match (cell.system.as_str(), cell.layer.as_str()) {
        ("augur", "api") => Box::new(systems::AugurApi::create(dir, augur_options())?),
        ("augur", "sql") => Box::new(systems::AugurSql::create(dir, augur_options())?),
        ("sqlite", "api") => Box::new(systems::Sqlite::create(dir, cache_budget())?),
        ("rocksdb", "api") => Box::new(systems::Rocks::create(dir, rocks_options())?),
        other => bail!("no such cell {other:?}"),
    })
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        return 0.0;
    }
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

impl Child<'_> {
    fn row(&self, op: &str, durability: &str, means: &[f64], hist: Option<&Histogram<u64>>) -> ResultRow {
        let m = median(means);
        let lo = means.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = means.iter().cloned().fold(0.0, f64::max);
        let q = |p: f64| hist.map(|h| h.value_at_quantile(p) as f64 / 1000.0);
        ResultRow {
            system: self.cell.system.clone(),
            layer: self.cell.layer.clone(),
            durability: durability.into(),
            op: op.into(),
            dist: self.cell.dist.clone(),
            size: self.cell.size,
            ops_per_sec: if m > 0.0 { 1e6 / m } else { 0.0 },
            mean_us: m,
            p50_us: q(0.50),
            p95_us: q(0.95),
            p99_us: q(0.99),
            runs: means.len(),
            spread_pct: if m > 0.0 { (hi - lo) / m * 100.0 } else { 0.0 },
            rss_bytes: rss_bytes(),
            disk_bytes: self.disk,
        }
    }

    fn push_plain(&mut self, op: &str, durability: &str, means_us: &[f64], hist: Option<&Histogram<u64>>) {
        let r = self.row(op, durability, means_us, hist);
        self.out.results.push(r);
    }

    fn check(&mut self, op: &str, durability: &str, expected: u64, correct: u64) {
        self.out.checks.push(Check {
            system: self.cell.system.clone(),
            layer: self.cell.layer.clone(),
            dist: self.cell.dist.clone(),
            size: self.cell.size,
            op: op.into(),
            durability: durability.into(),
            expected,
            correct,
        });
    }

    fn expected_value(&mut self, k: u64) -> Option<u32> {
        if self.deleted.contains(&k) {
            None
        } else {
            Some(self.gens.get(&k).copied().unwrap_or(0))
        }
    }

    /// Whether `self.buf` holds the expected value of `k`.
    fn value_ok(&mut self, k: u64, gen: u32) -> bool {
        self.exp.clear();
        value_of(k, gen, self.a.value_size, &mut self.exp);
        self.exp == self.buf
    }

    /// Runs `warm-up + runs` passes of `ops_per_run` operations made by `op(self, run, i)`,
    /// which returns whether the answer was right; per-op latencies go to one histogram.
    fn measure(
        &mut self,
        name: &str,
        durability: &str,
        ops_per_run: usize,
        runs: usize,
        mut op: impl FnMut(&mut Self, usize, usize) -> Result<(Duration, bool)>,
    ) -> Result<()> {
        let mut st = Stat::new();
        let (mut expected, mut correct) = (0u64, 0u64);
        for run in 0..=runs {
            let mut total = Duration::ZERO;
            for i in 0..ops_per_run {
                let (dt, ok) = op(self, run, i)?;
                // Warm-up answers are checked too.
                expected += 1;
                correct += ok as u64;
                if run > 0 {
                    total += dt;
                    st.hist.saturating_record(dt.as_nanos().max(1) as u64);
                }
            }
            if run > 0 {
                st.run_means_us
                    .push(total.as_secs_f64() * 1e6 / ops_per_run.max(1) as f64);
            }
        }
        self.check(name, durability, expected, correct);
        let r = self.row(name, durability, &st.run_means_us, Some(&st.hist));
        self.out.results.push(r);
        if correct != expected {
            bail!(
                "{} {} {} {}: {name}/{durability}: {correct}/{expected} correct",
                self.cell.system,
                self.cell.layer,
                self.cell.dist,
                self.cell.size
            );
        }
        Ok(())
    }

    fn runs(&self) -> usize {
        if self.cell.size >= self.a.large_from {
            self.a.large_runs.max(1)
        } else {
            self.a.runs.max(1)
        }
    }

    fn point_hits(&mut self) -> Result<()> {
        let runs = self.runs();
        let n = self.a.lookups;
        let qs: Vec<Vec<u64>> = (0..=runs)
            .map(|r| self.ks.present_queries(n, self.a.seed ^ (0x1000 + r as u64)))
            .collect();
        self.measure("point_hit", "sync", n, runs, |c, run, i| {
            let k = qs[run][i];
            c.buf.clear();
            let t = Instant::now();
            let found = c.sys.get(k, &mut c.buf)?;
            let dt = t.elapsed();
            Ok((dt, found && c.value_ok(k, 0)))
        })
    }

    fn point_misses(&mut self) -> Result<()> {
        let runs = self.runs();
        let n = self.a.lookups;
        let qs: Vec<Vec<u64>> = (0..=runs)
            .map(|r| self.ks.absent_queries(n, self.a.seed ^ (0x2000 + r as u64)))
            .collect();
        self.measure("point_miss", "sync", n, runs, |c, run, i| {
            c.buf.clear();
            let t = Instant::now();
            let found = c.sys.get(qs[run][i], &mut c.buf)?;
            Ok((t.elapsed(), !found))
        })
    }

    fn ranges(&mut self) -> Result<()> {
        let runs = self.runs();
        let n = self.a.scans;
        let qs: Vec<Vec<u64>> = (0..=runs)
            .map(|r| self.ks.present_queries(n, self.a.seed ^ (0x3000 + r as u64)))
            .collect();
        let mut keys = Vec::with_capacity(128);
        let vs = self.a.value_size;
        self.measure("range100", "sync", n, runs, |c, run, i| {
            let k = qs[run][i];
            keys.clear();
            c.buf.clear();
            let t = Instant::now();
            c.sys.range(k, 100, &mut keys, &mut c.buf)?;
            let dt = t.elapsed();
            let rank = c.ks.rank(k);
            let want = &c.ks.sorted[rank..(rank + 100).min(c.ks.sorted.len())];
            let mut ok = keys.as_slice() == want && c.buf.len() == want.len() * vs;
            if ok {
                for (j, &kk) in want.iter().enumerate() {
                    c.exp.clear();
                    value_of(kk, 0, vs, &mut c.exp);
                    if c.exp[..] != c.buf[j * vs..(j + 1) * vs] {
                        ok = false;
                        break;
                    }
                }
            }
            Ok((dt, ok))
        })
    }

    fn write_ops(&self, sync: bool) -> usize {
        if sync {
            self.a.sync_ops
        } else {
            self.a.write_ops
        }
    }

    fn updates(&mut self, sync: bool) -> Result<()> {
        let runs = self.runs();
        let n = self.write_ops(sync);
        let d = if sync { "sync" } else { "nosync" };
        self.measure("update", d, n, runs, |c, _, _| {
            let k = c.stable[c.rng.below(c.stable.len())];
            let gen = c.gens.get(&k).copied().unwrap_or(0) + 1;
            c.exp.clear();
            value_of(k, gen, c.a.value_size, &mut c.exp);
            let v = std::mem::take(&mut c.exp);
            let t = Instant::now();
            let ok = c.sys.update(k, &v, sync)?;
            let dt = t.elapsed();
            c.exp = v;
            c.gens.insert(k, gen);
            Ok((dt, ok))
        })
    }

    fn deletes(&mut self, sync: bool) -> Result<()> {
        let runs = self.runs();
        let budget = self.deletable.len() / 2 / (runs + 1);
        let n = self.write_ops(sync).min(budget.max(1));
        let d = if sync { "sync" } else { "nosync" };
        self.measure("delete", d, n, runs, |c, _, _| {
            let k = c.deletable[c.next_delete % c.deletable.len()];
            c.next_delete += 1;
            let t = Instant::now();
            let ok = c.sys.delete(k, sync)?;
            let dt = t.elapsed();
            c.deleted.insert(k);
            // Read back (untimed): the key must be gone.
            c.buf.clear();
            let gone = !c.sys.get(k, &mut c.buf)?;
            Ok((dt, ok && gone))
        })
    }

    /// A fresh key for a single-row insert: appends for seq, random absent keys otherwise.
    fn new_key(&mut self) -> u64 {
        loop {
            let k = match self.ks.dist {
                Dist::Seq => {
                    let last = *self.ks.sorted.last().expect("non-empty");
                    last + 2 * (self.inserted.len() as u64 + 1)
                }
                _ => {
                    let lo = self.ks.sorted[0];
                    let hi = *self.ks.sorted.last().expect("non-empty");
                    lo + self.rng.next_u64() % (hi - lo).max(1)
                }
            };
            if self.ks.sorted.binary_search(&k).is_err() && !self.inserted.contains(&k) {
                return k;
            }
        }
    }

    fn inserts(&mut self, sync: bool) -> Result<()> {
        let runs = self.runs();
        let n = self.write_ops(sync);
        let d = if sync { "sync" } else { "nosync" };
        let mut fresh: Vec<u64> = Vec::with_capacity(n * (runs + 1));
        for _ in 0..n * (runs + 1) {
            let k = self.new_key();
            self.inserted.insert(k);
            fresh.push(k);
        }
        let mut it = fresh.into_iter();
        self.measure("single_insert", d, n, runs, |c, _, _| {
            let k = it.next().expect("enough keys");
            c.exp.clear();
            value_of(k, 0, c.a.value_size, &mut c.exp);
            let v = std::mem::take(&mut c.exp);
            let t = Instant::now();
            let ok = c.sys.insert(k, &v, sync)?;
            let dt = t.elapsed();
            // Read back (untimed).
            c.buf.clear();
            let back = c.sys.get(k, &mut c.buf)? && c.buf == v;
            c.exp = v;
            Ok((dt, ok && back))
        })
    }

    fn mixed(&mut self, sync: bool) -> Result<()> {
        let runs = self.runs();
        let n = self.write_ops(sync);
        let d = if sync { "sync" } else { "nosync" };
        self.measure("mixed70_30", d, n, runs, |c, _, _| {
            let k = c.stable[c.rng.below(c.stable.len())];
            if c.rng.below(10) < 7 {
                c.buf.clear();
                let t = Instant::now();
                let found = c.sys.get(k, &mut c.buf)?;
                let dt = t.elapsed();
                let ok = match c.expected_value(k) {
                    Some(g) => found && c.value_ok(k, g),
                    None => !found,
                };
                Ok((dt, ok))
            } else {
                let gen = c.gens.get(&k).copied().unwrap_or(0) + 1;
                c.exp.clear();
                value_of(k, gen, c.a.value_size, &mut c.exp);
                let v = std::mem::take(&mut c.exp);
                let t = Instant::now();
                let ok = c.sys.update(k, &v, sync)?;
                let dt = t.elapsed();
                c.exp = v;
                c.gens.insert(k, gen);
                Ok((dt, ok))
            }
        })
    }
}
