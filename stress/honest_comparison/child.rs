//! One cell of the matrix, in its own process: load, reopen, warm, then every measured
//! operation, each answer checked and each write read back, and the final table compared with
//! the model of what it must hold; then the unclean stop (opens.rs).

mod opens;

pub use opens::victim;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use augur_bench::alloc::allocated_bytes;
use augur_bench::augur_side;
use augur_bench::budget::account;
use augur_bench::keys::{mix, Dist, KeySet, Rng};
use augur_bench::measure::{disk_bytes, Rss};
use augur_bench::stats::{median, spread_pct};
use hdrhistogram::Histogram;

use crate::systems::{self, Load, SqliteConfig, System};
use crate::turns::Turn;
use crate::{Args, Cell, CellOut, Check, Memory, Observation, ResultRow};

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

/// The budget every side gets, bytes.
pub fn budget(a: &Args) -> usize {
    a.budget_mib << 20
}

/// Raw RocksDB: Augur's store options, but the whole budget as block cache (it has no row
/// cache) and a 10 bits/key bloom filter (it answers absent keys itself, where Augur's index
/// answers them before RocksDB is asked).
pub fn rocks_options(a: &Args) -> augur::store::StoreOptions {
    augur::store::StoreOptions {
        block_cache_bytes: budget(a),
        bloom_bits_per_key: 10.0,
        ..augur_side::options(budget(a)).store
    }
}

/// The loads a cell measures, in order; the table the last one builds is the one measured.
/// SQLite's default cell measures both insert orders, its other configurations their fastest
/// (sorted) one; raw RocksDB its WriteBatch and its SST ingest (kept: its best read layout).
pub fn load_plan(c: &Cell) -> Vec<Load> {
    match (c.system.as_str(), c.layer.as_str(), c.config.as_str()) {
        ("augur", "api", _) => vec![Load::Loader],
        ("augur", "sql", _) => vec![Load::Copy],
        ("sqlite", _, "default") => vec![Load::Inserts, Load::InsertsSorted],
        ("sqlite", _, _) => vec![Load::InsertsSorted],
        _ => vec![Load::Inserts, Load::Loader],
    }
}

fn make_system(a: &Args, cell: &Cell, dir: &Path) -> Result<Box<dyn System>> {
    Ok(match (cell.system.as_str(), cell.layer.as_str()) {
        ("augur", "api") => Box::new(systems::AugurApi::create(dir, augur_side::options(budget(a)))?),
        ("augur", "sql") => Box::new(systems::AugurSql::create(dir, augur_side::options(budget(a)))?),
        ("sqlite", "api") => Box::new(systems::Sqlite::create(
            dir,
            budget(a),
            SqliteConfig::parse(&cell.config)?,
        )?),
        ("rocksdb", "api") => Box::new(systems::Rocks::create(dir, rocks_options(a))?),
        other => bail!("no such cell {other:?}"),
    })
}

fn parse_dist(s: &str) -> Result<Dist> {
    Ok(match s {
        "seq" => Dist::Seq,
        "random" => Dist::Random,
        "lognormal" => Dist::LogNormal,
        _ => bail!("unknown distribution {s}"),
    })
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

/// The wrong write `--fault` asks for (a test hook; see the tests of this crate).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    None,
    Bulk,
    Update,
    Mixed,
    Insert,
    Delete,
}

fn parse_fault(f: Option<&str>) -> Result<Fault> {
    Ok(match f {
        None => Fault::None,
        Some("bulk") => Fault::Bulk,
        Some("update") => Fault::Update,
        Some("mixed") => Fault::Mixed,
        Some("insert") => Fault::Insert,
        Some("delete") => Fault::Delete,
        Some(other) => bail!("unknown --fault {other}"),
    })
}

/// The same value with its last byte changed: what a lost or torn write would leave.
fn corrupted(v: &[u8]) -> Vec<u8> {
    let mut w = v.to_vec();
    if let Some(b) = w.last_mut() {
        *b ^= 0xFF;
    }
    w
}

struct Child<'a> {
    a: &'a Args,
    cell: Cell,
    ks: KeySet,
    sys: Box<dyn System>,
    out: CellOut,
    disk: u64,
    fault: Fault,
    /// Current generation of modified keys; deleted keys; inserted keys.
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
    turn: Turn,
}

pub fn run(a: &Args, cell: Cell) -> Result<()> {
    let mut turn = Turn::from_parent(a.turns, a.durable_block)?;
    // Started before the first wait, which `waited` counts too.
    let started = Instant::now();
    turn.wait()?;
    let fault = parse_fault(a.fault.as_deref())?;
    let dist = parse_dist(&cell.dist)?;
    let ks = KeySet::generate(dist, cell.size, a.seed);
    let sh = shuffled(&ks.sorted, a.seed ^ 0x5151);
    let (deletable, stable) = sh.split_at(sh.len() / 2);
    let dir = a.data_dir.join(cell.spec().replace(',', "-"));
    let rss_before = Rss::now();
    let heap_before = allocated_bytes() as i64;

    // Loads: every method of the plan, each repeated into fresh directories; the last one
    // measured leaves the table the rest of the cell uses.
    let load_runs = if cell.size <= a.bulk_repeat_max {
        a.runs.max(1)
    } else {
        1
    };
    let plan = load_plan(&cell);
    let vs = a.value_size;
    // A bulk fault: one row loaded with another generation's value than the model's.
    let victim = ks.gen[ks.gen.len() / 2];
    let mut load_times: Vec<(Load, Vec<f64>)> = Vec::new();
    let mut sys: Option<Box<dyn System>> = None;
    for &how in &plan {
        let mut times = Vec::new();
        for _ in 0..load_runs {
            if let Some(mut s) = sys.take() {
                s.close()?;
            }
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            let mut s = make_system(a, &cell, &dir)?;
            let t = Instant::now();
            s.load(how, &ks.gen, &mut |k, b| {
                let gen = u32::from(fault == Fault::Bulk && k == victim);
                value_of(k, gen, vs, b)
            })
            .with_context(|| format!("load {how:?}"))?;
            times.push(t.elapsed().as_secs_f64() * 1e6 / cell.size.max(1) as f64);
            sys = Some(s);
        }
        load_times.push((how, times));
    }
    let sys = sys.context("no load")?;
    let rss_after_load = Rss::now();
    let heap_after_load = allocated_bytes() as i64 - heap_before;
    let parts_after_load = sys.memory_parts();

    let mut c = Child {
        a,
        cell: cell.clone(),
        ks,
        sys,
        out: CellOut::default(),
        disk: 0,
        fault,
        gens: HashMap::new(),
        deleted: HashSet::new(),
        inserted: HashSet::new(),
        deletable: deletable.to_vec(),
        stable: stable.to_vec(),
        next_delete: 0,
        rng: Rng::new(a.seed ^ 0x77),
        buf: Vec::with_capacity(4096),
        exp: Vec::with_capacity(4096),
        turn,
    };
    for (how, times) in &load_times {
        c.push_plain(how.op(), "sync", times);
    }

    // Reopen (API only): close, then time open + one lookup (Augur: with its phases); then
    // the first second's reads after the last one (opens.rs).
    if cell.layer == "api" {
        c.sys.close()?;
        c.disk = disk_bytes(&dir);
        let probe = c.ks.sorted[c.ks.sorted.len() / 2];
        let (mut times, mut splits) = (Vec::new(), Vec::new());
        for r in 0..=c.runs() {
            if r > 0 {
                c.sys.close()?;
            }
            let t = Instant::now();
            c.sys.reopen(probe)?;
            if r > 0 {
                let us = t.elapsed().as_secs_f64() * 1e6;
                times.push(us);
                splits.push(c.sys.open_split(us));
            }
        }
        c.push_plain("reopen", "n/a", &times);
        c.after_clean_reopen(&times, splits)?;
    } else {
        // The SQL cell is compared with SQLite's figures and read beside Augur's API cell, both
        // measured after a reopen and a full read: it is closed and reopened too (untimed; the
        // reopen is the API cell's measurement), then gets the same full read.
        c.sys.close()?;
        c.disk = disk_bytes(&dir);
        c.sys.reopen(c.ks.sorted[c.ks.sorted.len() / 2])?;
    }
    // Warm caches for the reads: one full read of the table (System::warm), timed and checked:
    // the full read must see every row.
    let t = Instant::now();
    let read = c.sys.warm()?;
    let warm_us = t.elapsed().as_secs_f64() * 1e6;
    c.check(
        "warm",
        "n/a",
        "rows seen by one full read = rows loaded",
        1,
        1,
        u64::from(read == cell.size as u64),
    );
    c.push_plain("warm", "n/a", &[warm_us]);
    c.sys.check_config()?;
    c.snapshot("after_warm");

    if !a.durable_only {
        c.point_hits()?;
        c.point_misses()?;
        c.ranges()?;
        c.updates(false)?;
        c.deletes(false)?;
        c.inserts(false)?;
        c.mixed(false)?;
    }
    // The durable writes take turns with the other cells of this distribution and size.
    c.turn.yield_turn()?;
    c.rewarm("update/sync")?;
    c.updates(true)?;
    c.rewarm("delete/sync")?;
    c.deletes(true)?;
    c.rewarm("single_insert/sync")?;
    c.inserts(true)?;
    c.rewarm("mixed70_30/sync")?;
    c.mixed(true)?;
    c.turn.end_durable()?;
    c.sys.check_config()?;
    c.final_state()?;
    c.snapshot("end");
    let rss_end = Rss::now();
    let heap_end = allocated_bytes() as i64 - heap_before;
    let parts_end = c.sys.memory_parts();
    let accounting_end = account(c.sys.budget_bytes(), &parts_end);
    c.out.memory.push(Memory {
        system: cell.system.clone(),
        config: cell.config.clone(),
        layer: cell.layer.clone(),
        dist: cell.dist.clone(),
        size: cell.size,
        rss_before,
        rss_after_load,
        rss_end,
        rust_heap_after_load_bytes: heap_after_load,
        rust_heap_end_bytes: heap_end,
        parts_after_load,
        parts_end,
        accounting_end,
        disk_after_load_bytes: c.disk,
    });
    // Load rows carry the RSS right after the load.
    for r in c.out.results.iter_mut() {
        if r.op.starts_with("bulk_") {
            r.rss = rss_after_load;
        }
    }
    // Last, so that it disturbs no other measurement: updates past the last checkpoint by
    // another process, its SIGKILL, and the open after it (opens.rs).
    c.unclean_stop()?;
    let _ = c.sys.close();
    c.out.seconds = (started.elapsed().saturating_sub(c.turn.waited)).as_secs_f64();
    let out = a.child_out.clone().context("--child-out")?;
    std::fs::write(&out, serde_json::to_vec(&c.out)?)?;
    drop(c);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram bounds")
}

impl Child<'_> {
    fn row(&self, op: &str, durability: &str, means: &[f64], hist: Option<&Histogram<u64>>) -> ResultRow {
        let m = median(means).unwrap_or(0.0);
        let q = |p: f64| hist.map(|h| h.value_at_quantile(p) as f64 / 1000.0);
        ResultRow {
            system: self.cell.system.clone(),
            config: self.cell.config.clone(),
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
            run_means_us: means.to_vec(),
            spread_pct: spread_pct(means),
            rss: Rss::now(),
            disk_bytes: self.disk,
        }
    }

    fn push_plain(&mut self, op: &str, durability: &str, means_us: &[f64]) {
        let r = self.row(op, durability, means_us, None);
        self.out.results.push(r);
    }

    fn check(&mut self, op: &str, durability: &str, what: &str, expected: u64, checked: u64, correct: u64) {
        self.out.checks.push(Check {
            system: self.cell.system.clone(),
            config: self.cell.config.clone(),
            layer: self.cell.layer.clone(),
            dist: self.cell.dist.clone(),
            size: self.cell.size,
            op: op.into(),
            durability: durability.into(),
            what: what.into(),
            expected,
            checked,
            correct,
        });
    }

    fn observe(&mut self, phase: &str, name: &str, value: f64) {
        self.out.observations.push(Observation {
            system: self.cell.system.clone(),
            config: self.cell.config.clone(),
            layer: self.cell.layer.clone(),
            dist: self.cell.dist.clone(),
            size: self.cell.size,
            phase: phase.into(),
            name: name.into(),
            value,
        });
    }

    fn snapshot(&mut self, phase: &str) {
        for (name, v) in self.sys.observe() {
            self.observe(phase, &name, v);
        }
    }

    fn expected_value(&self, k: u64) -> Option<u32> {
        if self.deleted.contains(&k) {
            None
        } else {
            Some(self.gens.get(&k).copied().unwrap_or(0))
        }
    }

    /// Whether `self.buf` holds the value of `k` at generation `gen`.
    fn value_ok(&mut self, k: u64, gen: u32) -> bool {
        self.exp.clear();
        value_of(k, gen, self.a.value_size, &mut self.exp);
        self.exp == self.buf
    }

    /// Untimed read-back of a write: `k` must hold exactly `v`.
    fn read_back(&mut self, k: u64, v: &[u8]) -> Result<bool> {
        self.buf.clear();
        Ok(self.sys.get(k, &mut self.buf)? && self.buf == v)
    }

    fn runs(&self) -> usize {
        if self.cell.size >= self.a.large_from {
            self.a.large_runs.max(1)
        } else {
            self.a.runs.max(1)
        }
    }

    /// Runs `warm-up + runs` passes of `ops_per_run` operations made by `op(self, run, i)`,
    /// which returns the operation's time and whether its answer (and read-back) was right;
    /// per-op latencies go to one histogram. Counters the system reports are recorded as
    /// deltas over the measured runs.
    fn measure(
        &mut self,
        name: &str,
        durability: &str,
        what: &str,
        ops_per_run: usize,
        mut op: impl FnMut(&mut Self, usize, usize) -> Result<(Duration, bool)>,
    ) -> Result<()> {
        let runs = self.runs();
        let mut hist = new_hist();
        let mut run_means = Vec::new();
        let (mut expected, mut correct) = (0u64, 0u64);
        let mut before = Vec::new();
        for run in 0..=runs {
            if run == 1 {
                before = self.sys.observe();
            }
            let mut total = Duration::ZERO;
            for i in 0..ops_per_run {
                let (dt, ok) = op(self, run, i)?;
                if durability == "sync" {
                    self.turn.durable_op()?;
                }
                // Warm-up answers are checked too.
                expected += 1;
                correct += ok as u64;
                if run > 0 {
                    total += dt;
                    hist.saturating_record(dt.as_nanos().max(1) as u64);
                }
            }
            if run > 0 {
                run_means.push(total.as_secs_f64() * 1e6 / ops_per_run.max(1) as f64);
            }
        }
        let after = self.sys.observe();
        let phase = if durability == "n/a" {
            name.to_string()
        } else {
            format!("{name}/{durability}")
        };
        for (n, v) in after {
            if let Some((_, b)) = before.iter().find(|(m, _)| *m == n) {
                if n.ends_with("_hits") || n.ends_with("_misses") || n.ends_with("_reads") {
                    self.observe(&phase, &n, v - b);
                }
            }
        }
        self.check(name, durability, what, expected, expected, correct);
        let r = self.row(name, durability, &run_means, Some(&hist));
        self.out.results.push(r);
        if correct != expected {
            bail!(
                "{}: {name}/{durability}: {correct}/{expected} answers right ({what})",
                self.cell.label()
            );
        }
        Ok(())
    }

    fn point_hits(&mut self) -> Result<()> {
        let runs = self.runs();
        let n = self.a.lookups;
        let qs: Vec<Vec<u64>> = (0..=runs)
            .map(|r| self.ks.present_queries(n, self.a.seed ^ (0x1000 + r as u64)))
            .collect();
        self.measure(
            "point_hit",
            "n/a",
            "value compared byte for byte with the model",
            n,
            |c, run, i| {
                let k = qs[run][i];
                c.buf.clear();
                let t = Instant::now();
                let found = c.sys.get(k, &mut c.buf)?;
                let dt = t.elapsed();
                Ok((dt, found && c.value_ok(k, 0)))
            },
        )
    }

    fn point_misses(&mut self) -> Result<()> {
        let runs = self.runs();
        let n = self.a.lookups;
        let qs: Vec<Vec<u64>> = (0..=runs)
            .map(|r| self.ks.absent_queries(n, self.a.seed ^ (0x2000 + r as u64)))
            .collect();
        self.measure("point_miss", "n/a", "key reported absent", n, |c, run, i| {
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
        self.measure(
            "range100",
            "n/a",
            "the 100 keys and their values compared with the model",
            n,
            |c, run, i| {
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
            },
        )
    }

    /// Before each durable phase, in the cell's own turn: the full read of `System::warm` once
    /// more (untimed; its time is an observation). The group's durable phases come minutes
    /// after the cells' loads and reads, and later for the cells that ran first: on this VM a
    /// first touch of memory left untouched for a minute or more costs tens of microseconds
    /// with no fault the guest sees, and the guest drops page cache no process maps after a
    /// minute unused (docs/BENCHMARKING.md, rule 2). Without this, the reads and index walks of
    /// the durable phases measured how long each cell had waited for its turn.
    fn rewarm(&mut self, phase: &str) -> Result<()> {
        let t = Instant::now();
        self.sys.warm()?;
        self.observe(phase, "rewarm_ms", t.elapsed().as_secs_f64() * 1e3);
        Ok(())
    }

    fn write_ops(&self, sync: bool) -> usize {
        if sync {
            self.a.sync_ops
        } else {
            self.a.write_ops
        }
    }

    /// Writes the next generation of stable key `k` (timed), then reads it back (untimed).
    fn update_one(&mut self, k: u64, sync: bool, fault: bool) -> Result<(Duration, bool)> {
        let gen = self.gens.get(&k).copied().unwrap_or(0) + 1;
        let mut v = Vec::with_capacity(self.a.value_size);
        value_of(k, gen, self.a.value_size, &mut v);
        let written = if fault { corrupted(&v) } else { v.clone() };
        let t = Instant::now();
        let existed = self.sys.update(k, &written, sync)?;
        let dt = t.elapsed();
        self.gens.insert(k, gen);
        let back = self.read_back(k, &v)?;
        Ok((dt, existed && back))
    }

    fn updates(&mut self, sync: bool) -> Result<()> {
        let n = self.write_ops(sync);
        let d = if sync { "sync" } else { "nosync" };
        let fault = self.fault == Fault::Update;
        self.measure(
            "update",
            d,
            "returned 'existed', then read back (untimed) and compared with the new value",
            n,
            |c, _, _| {
                let k = c.stable[c.rng.below(c.stable.len())];
                c.update_one(k, sync, fault)
            },
        )
    }

    fn deletes(&mut self, sync: bool) -> Result<()> {
        let runs = self.runs();
        let budget = self.deletable.len() / 2 / (runs + 1);
        let n = self.write_ops(sync).min(budget.max(1));
        let d = if sync { "sync" } else { "nosync" };
        let fault = self.fault == Fault::Delete;
        self.measure(
            "delete",
            d,
            "returned 'existed', then read back (untimed): the key is absent",
            n,
            |c, _, _| {
                let k = c.deletable[c.next_delete % c.deletable.len()];
                c.next_delete += 1;
                let t = Instant::now();
                let existed = if fault { true } else { c.sys.delete(k, sync)? };
                let dt = t.elapsed();
                c.deleted.insert(k);
                c.buf.clear();
                let gone = !c.sys.get(k, &mut c.buf)?;
                Ok((dt, existed && gone))
            },
        )
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
        let fault = self.fault == Fault::Insert;
        self.measure(
            "single_insert",
            d,
            "returned 'inserted', then read back (untimed) and compared with the value",
            n,
            |c, _, _| {
                let k = it.next().expect("enough keys");
                let mut v = Vec::with_capacity(c.a.value_size);
                value_of(k, 0, c.a.value_size, &mut v);
                let written = if fault { corrupted(&v) } else { v.clone() };
                let t = Instant::now();
                let ok = c.sys.insert(k, &written, sync)?;
                let dt = t.elapsed();
                let back = c.read_back(k, &v)?;
                Ok((dt, ok && back))
            },
        )
    }

    fn mixed(&mut self, sync: bool) -> Result<()> {
        let n = self.write_ops(sync);
        let d = if sync { "sync" } else { "nosync" };
        let fault = self.fault == Fault::Mixed;
        self.measure(
            "mixed70_30",
            d,
            "reads: value compared with the model; updates: returned 'existed', then read back (untimed) and compared",
            n,
            |c, _, _| {
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
                    c.update_one(k, sync, fault)
                }
            },
        )
    }

    /// After every measurement: the whole table, read in key order (untimed, 1000 rows per
    /// range read), equals the model: the loaded rows at their latest generation, less the
    /// deleted, plus the inserted. This reads back the load and every write once more.
    fn final_state(&mut self) -> Result<()> {
        let mut want: Vec<u64> = self
            .ks
            .sorted
            .iter()
            .copied()
            .filter(|k| !self.deleted.contains(k))
            .chain(self.inserted.iter().copied())
            .collect();
        want.sort_unstable();
        let vs = self.a.value_size;
        let (mut checked, mut correct) = (0u64, 0u64);
        let mut next = Some(0u64);
        let mut keys = Vec::with_capacity(1000);
        let mut vals = Vec::with_capacity(1000 * vs);
        let mut exp = Vec::with_capacity(vs);
        while let Some(from) = next {
            keys.clear();
            vals.clear();
            self.sys.range(from, 1000, &mut keys, &mut vals)?;
            if vals.len() != keys.len() * vs {
                bail!("{}: final read: values of the wrong length", self.cell.label());
            }
            for (j, &k) in keys.iter().enumerate() {
                let at = checked as usize;
                checked += 1;
                if want.get(at) != Some(&k) {
                    continue;
                }
                exp.clear();
                value_of(k, self.gens.get(&k).copied().unwrap_or(0), vs, &mut exp);
                if exp[..] == vals[j * vs..(j + 1) * vs] {
                    correct += 1;
                }
            }
            next = match keys.last() {
                Some(&last) if keys.len() == 1000 => last.checked_add(1),
                _ => None,
            };
        }
        let expected = want.len() as u64;
        self.check(
            "final_state",
            "n/a",
            "every row read back in key order and compared with the model (load + every write)",
            expected,
            checked,
            correct,
        );
        if checked != expected || correct != expected {
            bail!(
                "{}: final state: {correct} of {expected} rows right, {checked} rows read",
                self.cell.label()
            );
        }
        Ok(())
    }
}
