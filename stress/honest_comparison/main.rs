//! honest_comparison: Augur vs SQLite (in each of its configurations) and raw RocksDB at
//! 10K-10M rows, at the API layer and the SQL layer. Rules: docs/BENCHMARKING.md.
//!
//! The parent process refuses to produce a report of record from a dirty work tree (unless
//! `--draft`), builds the matrix (size x distribution x system x configuration x layer) and runs
//! every cell in a fresh child process (a re-exec of this binary with `--child`) with its own
//! fresh database directory, so that RSS and allocator counts belong to one system only; the
//! cells of one distribution and size run as one group taking turns, their durable writes
//! alternated in small blocks (turns.rs). Each child loads (every load method of its system,
//! each repeated into fresh directories), closes and reopens, then measures point hits, point
//! misses, 100-key range scans, and (nosync, then sync) update, delete, single-row inserts and a
//! 70/30 read/write mix; the API cells of Augur and SQLite also time point reads in the first
//! second after the reopen, and (Augur, SQLite's default) an open after SIGKILL with up to
//! 100,000 updates to recover (child/opens.rs). Every read's answer is checked, every write is
//! read back (untimed), and the final table is compared row by row with the model; any wrong
//! answer fails the run.
//!
//! Writes `<out>/honest_comparison.md`, `.json` and `.svg`.

mod charts;
mod child;
mod compare;
mod facts;
mod open_report;
mod report;
mod systems;
mod turns;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Result};
use augur_bench::alloc::CountingAlloc;
use augur_bench::budget::{Accounting, Part};
use augur_bench::machine;
use augur_bench::measure::Rss;
use augur_bench::provenance::{Notes, Provenance};
use clap::Parser;
use serde::{Deserialize, Serialize};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[derive(Parser, Debug, Clone)]
#[command(
    about = "Augur vs SQLite vs raw RocksDB: the honest comparison (docs/BENCHMARKING.md)",
    // scripts/bench passes its defaults first and the caller's arguments after: the last wins.
    args_override_self = true
)]
pub struct Args {
    /// Row counts.
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "10000,100000,1000000,10000000")]
    sizes: Vec<usize>,
    /// Key distributions: seq, random, lognormal.
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "seq,random,lognormal")]
    dists: Vec<String>,
    /// Sizes at or above this use only `--large-dists` and `--large-runs` (time budget).
    #[arg(long, default_value_t = 10_000_000)]
    large_from: usize,
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "random,seq,lognormal")]
    large_dists: Vec<String>,
    /// Measured runs per operation at sizes >= --large-from.
    #[arg(long, default_value_t = 3)]
    large_runs: usize,
    /// Systems: augur, sqlite, rocksdb.
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "augur,sqlite,rocksdb")]
    systems: Vec<String>,
    /// SQLite configurations, each its own cell: default, mmap, exclusive, mmap+exclusive.
    #[arg(
        long,
        value_delimiter = ',',
        action = clap::ArgAction::Set,
        default_value = "default,mmap,exclusive,mmap+exclusive"
    )]
    sqlite_configs: Vec<String>,
    /// Layers: api, sql (sql: Augur's Session vs SQLite's SQL).
    #[arg(long, value_delimiter = ',', action = clap::ArgAction::Set, default_value = "api,sql")]
    layers: Vec<String>,
    /// The Augur SQL layer is measured up to this size.
    #[arg(long, default_value_t = 10_000_000)]
    sql_max_size: usize,
    /// Memory budget of every side, MiB (Augur: `Options::with_memory_budget`, its indexes
    /// charged first and its caches sized to the rest; SQLite: cache_size; raw RocksDB: block
    /// cache).
    #[arg(long, default_value_t = 512)]
    budget_mib: usize,
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
    /// The cells of one distribution and size take turns in their durable writes, this many
    /// operations each (docs/BENCHMARKING.md, "Durable writes").
    #[arg(long, default_value_t = 10)]
    durable_block: usize,
    /// Only the durable writes (after the load, reopen and full read every cell makes): no
    /// point reads, scans or nosync writes.
    #[arg(long)]
    durable_only: bool,
    /// Loads are repeated once per run up to this size (each into a fresh directory), once
    /// above it (single run).
    #[arg(long, default_value_t = 10_000_000)]
    bulk_repeat_max: usize,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Output directory.
    #[arg(long, default_value = "reports/")]
    out: PathBuf,
    /// Where the databases are created (removed after each cell).
    #[arg(long, default_value = "/tmp/augur-honest-comparison")]
    data_dir: PathBuf,
    /// Hand-written notes included verbatim in their own dated section of the report.
    #[arg(long, default_value = "stress/honest_comparison/notes.md")]
    notes: PathBuf,
    /// Allow a dirty work tree; the report then says it is a draft, not a report of record.
    /// Refused when writing into the repository's reports/ directory.
    #[arg(long)]
    draft: bool,
    /// No progress lines.
    #[arg(long)]
    quiet: bool,
    /// Test hook: hand the system a wrong write (bulk, update, mixed, insert, delete) to prove
    /// the read-back checks catch it; the run must fail.
    #[arg(long, hide = true)]
    fault: Option<String>,
    /// Internal: run one cell ("system,config,layer,dist,size") and write its JSON to --child-out.
    #[arg(long, hide = true)]
    child: Option<String>,
    #[arg(long, hide = true)]
    child_out: Option<PathBuf>,
    /// Internal: the child takes turns with the other cells of its group (turns.rs).
    #[arg(long, hide = true)]
    turns: bool,
    /// Internal: the process a cell starts for its unclean stop: opens the cell's database,
    /// applies the updates it is sent, then waits to be killed (child/opens.rs).
    #[arg(long, hide = true)]
    victim: bool,
    /// Point reads are timed for this long right after an open returns (the clean reopen and
    /// the open after SIGKILL; issue 23 asks for the first second: 1000).
    #[arg(long, default_value_t = 1000)]
    first_second_ms: u64,
    /// Single-row updates written after the last checkpoint before the unclean stop (SIGKILL)
    /// of the Augur API cell and SQLite's default cell: min(rows, this); 0 leaves the unclean
    /// stop out.
    #[arg(long, default_value_t = 100_000)]
    unclean_updates: usize,
}

/// One measured figure: an operation of one cell.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ResultRow {
    pub system: String,
    /// SQLite: default, mmap, exclusive, mmap+exclusive; "default" for the others.
    pub config: String,
    pub layer: String,
    /// sync, nosync, or n/a (reads, reopen, warm).
    pub durability: String,
    pub op: String,
    pub dist: String,
    pub size: usize,
    pub ops_per_sec: f64,
    /// Median over the runs of each run's mean latency (loads: µs per row).
    pub mean_us: f64,
    /// From a histogram of every timed operation of all runs; none for loads, reopen, warm.
    pub p50_us: Option<f64>,
    pub p95_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub runs: usize,
    /// Each run's mean (µs).
    pub run_means_us: Vec<f64>,
    /// (max - min) / median of the run means, %; none for a single run.
    pub spread_pct: Option<f64>,
    pub rss: Rss,
    pub disk_bytes: u64,
}

/// Correctness of one (cell, op, durability).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Check {
    pub system: String,
    pub config: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
    pub op: String,
    pub durability: String,
    /// What is compared, e.g. "value compared byte for byte with the model".
    pub what: String,
    /// Answers that should have been checked.
    pub expected: u64,
    /// Answers checked.
    pub checked: u64,
    /// Answers right.
    pub correct: u64,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.checked == self.expected && self.correct == self.checked
    }
}

/// Memory of one cell, measured (never a formula).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Memory {
    pub system: String,
    pub config: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
    /// Before creating the database (the key arrays of the benchmark itself).
    pub rss_before: Rss,
    pub rss_after_load: Rss,
    /// After the reads and writes.
    pub rss_end: Rss,
    /// Bytes held through Rust's global allocator after load minus before (C/C++ allocations
    /// of SQLite and RocksDB are not counted here; see the parts).
    pub rust_heap_after_load_bytes: i64,
    pub rust_heap_end_bytes: i64,
    pub parts_after_load: Vec<Part>,
    pub parts_end: Vec<Part>,
    pub accounting_end: Accounting,
    pub disk_after_load_bytes: u64,
}

/// A counter or size a system reported during a phase (deltas for counters).
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Observation {
    pub system: String,
    pub config: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
    /// The phase: an op name, or "after_warm" / "end" for snapshots.
    pub phase: String,
    pub name: String,
    pub value: f64,
}

/// Where an Augur open's time went, from `Database::stats()` of the database just opened
/// (microseconds). `other_engine_us` sums the engine's other phases (its state, the
/// clean-shutdown marker, counters and catalog, secondary indexes, the tables' other work,
/// and what follows recovery); `outside_us` is the open's total less every phase (the first
/// lookup included).
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct OpenSplit {
    pub rocksdb_us: f64,
    pub map_us: f64,
    pub verify_us: f64,
    pub replay_us: f64,
    pub other_engine_us: f64,
    pub outside_us: f64,
    /// Row versions the open replayed (written after their table's checkpoint).
    pub replayed_versions: u64,
    /// Bytes of index image read into memory rather than mapped.
    pub copied_image_bytes: u64,
    /// Index images refused (rebuilt from the rows).
    pub images_refused: u64,
}

impl OpenSplit {
    /// Everything but RocksDB, map, verify and replay.
    pub fn rest_us(&self) -> f64 {
        self.other_engine_us + self.outside_us
    }
}

/// The point reads of the first second after an open returned (present keys, every answer
/// checked), and the page faults the process took meanwhile.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct FirstSecond {
    pub reads: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

/// One measured open of a cell: after a clean close (the median of the timed reopens, and the
/// first second after the last one) or after SIGKILL.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct OpenRecord {
    pub system: String,
    pub config: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
    /// "clean" or "sigkill".
    pub kind: String,
    /// Open + one lookup, µs (clean: the median run's).
    pub open_us: f64,
    /// Augur's phases of that open; None for the other systems.
    pub split: Option<OpenSplit>,
    /// Single-row updates committed after the last checkpoint before the SIGKILL (0: clean).
    pub updates_before: u64,
    pub first_second: FirstSecond,
}

#[derive(Serialize, Deserialize, Default)]
pub struct CellOut {
    pub results: Vec<ResultRow>,
    pub checks: Vec<Check>,
    pub memory: Vec<Memory>,
    pub observations: Vec<Observation>,
    #[serde(default)]
    pub opens: Vec<OpenRecord>,
    pub seconds: f64,
}

/// One cell as the parent ran it: how long it took (its own turns, not its waits for the other
/// cells of its group) and, for cells whose reads leave the CPU caches, the machine's memory
/// latency just before and just after its group (it moves by a third within minutes on some
/// machines, so two cells compared may have run on different memories).
#[derive(Clone, Debug, Serialize)]
pub struct CellRun {
    pub cell: Cell,
    pub seconds: f64,
    /// ns per dependent load over a 1 GiB working set, (before, after) its group; None below
    /// [`CELL_LATENCY_FROM`] rows.
    pub memory_ns: Option<(f64, f64)>,
}

/// Groups of cells at or above this size measure the memory latency around them.
pub const CELL_LATENCY_FROM: usize = 1_000_000;

/// The working set and loads of the per-cell latency probe (about half a second).
fn cell_memory_ns() -> f64 {
    augur_bench::memlat::dependent_load_ns(1 << 30, 500_000).unwrap_or(f64::NAN)
}

#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub system: String,
    pub config: String,
    pub layer: String,
    pub dist: String,
    pub size: usize,
}

impl Cell {
    pub fn spec(&self) -> String {
        format!(
            "{},{},{},{},{}",
            self.system, self.config, self.layer, self.dist, self.size
        )
    }
    fn parse(spec: &str) -> Result<Cell> {
        let p: Vec<&str> = spec.split(',').collect();
        if p.len() != 5 {
            bail!("bad cell {spec}");
        }
        Ok(Cell {
            system: p[0].into(),
            config: p[1].into(),
            layer: p[2].into(),
            dist: p[3].into(),
            size: p[4].parse()?,
        })
    }
    pub fn label(&self) -> String {
        let sys = if self.system == "sqlite" {
            format!("sqlite[{}]", self.config)
        } else {
            self.system.clone()
        };
        format!("{sys} {} {} {}", self.layer, self.dist, self.size)
    }
}

fn main() {
    let args = Args::parse();
    let r = if let (Some(cell), true) = (args.child.clone(), args.victim) {
        Cell::parse(&cell).and_then(|c| child::victim(&args, c))
    } else if let Some(cell) = args.child.clone() {
        Cell::parse(&cell).and_then(|c| child::run(&args, c))
    } else {
        run_parent(&args)
    };
    if let Err(e) = r {
        eprintln!("honest_comparison: FAILED: {e:#}");
        std::process::exit(1);
    }
}

fn matrix(a: &Args) -> Result<Vec<Cell>> {
    let configs: Vec<String> = a
        .sqlite_configs
        .iter()
        .map(|c| systems::SqliteConfig::parse(c).map(|c| c.name().to_string()))
        .collect::<Result<_>>()?;
    let mut v = Vec::new();
    for &size in &a.sizes {
        let dists: Vec<String> = if size >= a.large_from {
            a.dists
                .iter()
                .filter(|d| a.large_dists.contains(d))
                .cloned()
                .collect()
        } else {
            a.dists.clone()
        };
        for dist in dists {
            for layer in &a.layers {
                for system in &a.systems {
                    // SQLite's only interface is SQL: its api rows (rusqlite prepared
                    // statements) are the SQL rows too; raw RocksDB has no SQL.
                    let cfgs: Vec<String> = match (layer.as_str(), system.as_str()) {
                        ("api", "sqlite") => configs.clone(),
                        ("api", "augur" | "rocksdb") => vec!["default".into()],
                        ("sql", "augur") if size <= a.sql_max_size => vec!["default".into()],
                        ("sql", "augur" | "sqlite" | "rocksdb") => vec![],
                        other => bail!("unknown layer or system {other:?}"),
                    };
                    for config in cfgs {
                        v.push(Cell {
                            system: system.clone(),
                            config,
                            layer: layer.clone(),
                            dist: dist.clone(),
                            size,
                        });
                    }
                }
            }
        }
    }
    Ok(v)
}

/// The cells of one distribution and size, in matrix order: they run as one group, taking
/// turns (turns.rs).
fn groups(cells: &[Cell]) -> Vec<Vec<Cell>> {
    let mut v: Vec<Vec<Cell>> = Vec::new();
    for c in cells {
        match v.iter_mut().find(|g| g[0].size == c.size && g[0].dist == c.dist) {
            Some(g) => g.push(c.clone()),
            None => v.push(vec![c.clone()]),
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

/// The reports of record live in the repository's reports/ directory: a draft must not
/// replace them.
fn refuse_draft_over_record(prov: &Provenance, out: &Path) -> Result<()> {
    if !prov.draft {
        return Ok(());
    }
    let record = prov.root.join("reports");
    let (Ok(a), Ok(b)) = (std::fs::canonicalize(out), std::fs::canonicalize(&record)) else {
        return Ok(());
    };
    if a == b {
        bail!(
            "--draft would overwrite the reports of record in {}: pass --out <another directory>",
            record.display()
        );
    }
    Ok(())
}

fn run_parent(a: &Args) -> Result<()> {
    let cwd = std::env::current_dir()?;
    let prov = Provenance::establish(&cwd, a.draft).map_err(anyhow::Error::msg)?;
    refuse_draft_over_record(&prov, &a.out)?;
    let notes = Notes::read(&a.notes);
    let cells = matrix(a)?;
    let mut machine = machine::Machine::detect();
    // The children run a private copy of this binary: a concurrent `cargo build` replacing the
    // target file mid-run cannot mix two builds into one report.
    std::fs::create_dir_all(&a.data_dir)?;
    let exe = a.data_dir.join("honest_comparison.bin");
    std::fs::copy(std::env::current_exe()?, &exe)?;
    let started = Instant::now();
    let started_utc = utc_now();
    let load_start = other_load();
    let fsync_us = report::fsync_latency_us(&a.data_dir);
    // Before the cells (and their page cache) take the memory: what one random memory access
    // costs here, which bounds how fast any system's reads past the caches can be.
    machine.measure_memory();
    let mut all = CellOut::default();
    let tmp = a.data_dir.join("cells");
    std::fs::create_dir_all(&tmp)?;
    let mut cell_runs = Vec::new();
    let mut done = 0;
    for group in groups(&cells) {
        let latency_probe = group[0].size >= CELL_LATENCY_FROM;
        let before = latency_probe.then(cell_memory_ns);
        let outs: Vec<PathBuf> = group
            .iter()
            .map(|c| tmp.join(format!("{}.json", c.spec().replace(',', "-"))))
            .collect();
        let cmds = group
            .iter()
            .zip(&outs)
            .map(|(c, out)| {
                let mut cmd = Command::new(&exe);
                cmd.args(std::env::args_os().skip(1));
                cmd.arg("--child")
                    .arg(c.spec())
                    .arg("--child-out")
                    .arg(out)
                    .arg("--turns");
                (c.label(), cmd)
            })
            .collect();
        turns::run_group(cmds)?;
        let memory_ns = before.map(|b| (b, cell_memory_ns()));
        for (c, out) in group.iter().zip(&outs) {
            let co: CellOut = serde_json::from_slice(&std::fs::read(out)?)?;
            let _ = std::fs::remove_file(out);
            if let Some(ch) = co.checks.iter().find(|ch| !ch.passed()) {
                bail!("wrong answers: {ch:?}");
            }
            cell_runs.push(CellRun {
                cell: c.clone(),
                seconds: co.seconds,
                memory_ns,
            });
            done += 1;
            if !a.quiet {
                let checks: u64 = co.checks.iter().map(|ch| ch.correct).sum();
                eprintln!(
                    "[{done}/{}] {}: {:.1}s, {checks} answers checked, all right",
                    cells.len(),
                    c.label(),
                    co.seconds
                );
            }
            all.results.extend(co.results);
            all.checks.extend(co.checks);
            all.memory.extend(co.memory);
            all.observations.extend(co.observations);
            all.opens.extend(co.opens);
        }
    }
    if !prov.draft && !prov.head_unchanged() {
        bail!(
            "HEAD moved during the run (started at {}): the report would not describe one commit",
            prov.commit
        );
    }
    let ctx = report::Context {
        args: a.clone(),
        argv: std::env::args().collect::<Vec<_>>().join(" "),
        fsync_us,
        load_start,
        load_end: other_load(),
        started_utc,
        total_seconds: started.elapsed().as_secs_f64(),
        cell_runs,
        machine,
        provenance: prov,
        notes,
    };
    report::write(&a.out, &ctx, &all)?;
    let total: u64 = all.checks.iter().map(|c| c.expected).sum();
    let ok: u64 = all.checks.iter().map(|c| c.correct).sum();
    println!(
        "honest_comparison: {} results, checks {ok}/{total} correct, report in {}{}",
        all.results.len(),
        a.out.join("honest_comparison.md").display(),
        if ctx.provenance.draft { " (DRAFT)" } else { "" }
    );
    if ok != total {
        bail!("{} wrong answers", total - ok);
    }
    Ok(())
}

/// "2026-11-26 14:03:00 UTC" (from `date`, which every machine running this has).
fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%F %T UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| format!("{:?}", std::time::SystemTime::now()))
}
