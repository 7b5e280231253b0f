//! `stress_100m`: ALEX vs `BTreeMap` vs a sorted `Vec` (binary search) from 10M to 100M keys.
//!
//! For every size and structure: bulk-load time, insert throughput (the second half inserted
//! into a structure loaded with the first half), lookup latency (p50/p95/p99 from an
//! hdrhistogram, mean from batched runs) over present and absent keys, 100-key range scans,
//! memory (allocator-counted bytes per key and RSS), depth. Every lookup result is checked;
//! the binary prints `hits=X/Y` and exits non-zero on any wrong answer.
//!
//! Writes `<out>/stress_100m.md`, `<out>/stress_100m.json` and `<out>/stress_100m.svg`.

use std::collections::{BTreeMap, HashSet};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use augur::index::alex::Alex;
use augur_bench::alloc::{allocated_bytes, CountingAlloc};
use augur_bench::counters::Counters;
use augur_bench::keys::{Dist, KeySet};
use augur_bench::machine::Machine;
use augur_bench::measure::Rss;
use augur_bench::provenance::Provenance;
use augur_bench::stress_report::{write_reports, Paired, Record, Run};
use clap::{Parser, ValueEnum};
use hdrhistogram::Histogram;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[derive(Parser, Debug)]
#[command(about = "ALEX vs BTreeMap vs sorted Vec, 10M to 100M keys")]
struct Args {
    /// Comma-separated key counts.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000000,25000000,50000000,75000000,100000000"
    )]
    keys: Vec<usize>,
    /// Key distribution.
    #[arg(long, value_enum, default_value_t = DistArg::Random)]
    dist: DistArg,
    /// Output directory for the reports.
    #[arg(long, default_value = "reports/")]
    out: PathBuf,
    /// Lookups per measured run (present keys; the same number of absent keys).
    #[arg(long, default_value_t = 1_000_000)]
    lookups: usize,
    /// Batched runs whose median gives the mean lookup latency.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// 100-key range scans per structure.
    #[arg(long, default_value_t = 100_000)]
    scans: usize,
    /// Seed of the key generator.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Structures to measure.
    #[arg(long, value_delimiter = ',', default_value = "alex,btreemap,sorted_vec")]
    structures: Vec<String>,
    /// Skip the insert phase (second half into a half-loaded structure).
    #[arg(long)]
    no_inserts: bool,
    /// Paired lookup passes per size: ALEX and BTreeMap built side by side, their batched
    /// passes alternated (ALEX first, then BTreeMap first, ...), the ratio taken pass by pass.
    /// 0 skips. Needs both structures in --structures.
    #[arg(long, default_value_t = 6)]
    pairs: usize,
    /// Allow a dirty work tree; the report then says it is a draft, not a report of record.
    #[arg(long)]
    draft: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum DistArg {
    Random,
    Seq,
    Lognormal,
}

/// The operations measured, for any of the three structures.
trait Structure {
    fn name() -> &'static str;
    fn build(sorted: &[(u64, u64)]) -> Self;
    fn get(&self, k: u64) -> Option<u64>;
    /// Sum of the payloads of up to `n` entries from the first key `>= k`; and the count.
    fn scan(&self, k: u64, n: usize) -> (u64, usize);
    /// Inserts; `None` when the structure has no practical insert (sorted Vec).
    fn insert(&mut self, k: u64, v: u64) -> Option<bool>;
    fn depth(&self) -> Option<f64>;
    fn own_bytes(&self) -> Option<usize>;
}

impl Structure for Alex<u64> {
    fn name() -> &'static str {
        "alex"
    }
    fn build(sorted: &[(u64, u64)]) -> Self {
        Alex::bulk_load(sorted).expect("keys are strictly increasing")
    }
    #[inline]
    fn get(&self, k: u64) -> Option<u64> {
        Alex::get(self, k)
    }
    fn scan(&self, k: u64, n: usize) -> (u64, usize) {
        self.range(k..)
            .take(n)
            .fold((0, 0), |(s, c), (_, v)| (s.wrapping_add(v), c + 1))
    }
    fn insert(&mut self, k: u64, v: u64) -> Option<bool> {
        Some(Alex::insert(self, k, v).is_ok())
    }
    fn depth(&self) -> Option<f64> {
        Some(self.stats().avg_key_depth)
    }
    fn own_bytes(&self) -> Option<usize> {
        Some(self.stats().bytes)
    }
}

impl Structure for BTreeMap<u64, u64> {
    fn name() -> &'static str {
        "btreemap"
    }
    fn build(sorted: &[(u64, u64)]) -> Self {
        sorted.iter().copied().collect()
    }
    #[inline]
    fn get(&self, k: u64) -> Option<u64> {
        BTreeMap::get(self, &k).copied()
    }
    fn scan(&self, k: u64, n: usize) -> (u64, usize) {
        self.range(k..)
            .take(n)
            .fold((0, 0), |(s, c), (_, v)| (s.wrapping_add(*v), c + 1))
    }
    fn insert(&mut self, k: u64, v: u64) -> Option<bool> {
        Some(BTreeMap::insert(self, k, v).is_none())
    }
    fn depth(&self) -> Option<f64> {
        None
    }
    fn own_bytes(&self) -> Option<usize> {
        None
    }
}

struct SortedVec(Vec<(u64, u64)>);

impl Structure for SortedVec {
    fn name() -> &'static str {
        "sorted_vec"
    }
    fn build(sorted: &[(u64, u64)]) -> Self {
        SortedVec(sorted.to_vec())
    }
    #[inline]
    fn get(&self, k: u64) -> Option<u64> {
        self.0.binary_search_by_key(&k, |e| e.0).ok().map(|i| self.0[i].1)
    }
    fn scan(&self, k: u64, n: usize) -> (u64, usize) {
        let i = self.0.partition_point(|e| e.0 < k);
        self.0[i..]
            .iter()
            .take(n)
            .fold((0, 0), |(s, c), e| (s.wrapping_add(e.1), c + 1))
    }
    fn insert(&mut self, _: u64, _: u64) -> Option<bool> {
        None
    }
    fn depth(&self) -> Option<f64> {
        Some((self.0.len().max(1) as f64).log2().ceil())
    }
    fn own_bytes(&self) -> Option<usize> {
        Some(self.0.capacity() * 16)
    }
}

/// Median of the nanoseconds an empty `Instant` pair costs (subtracted from per-op samples).
fn timer_overhead_ns() -> u64 {
    let mut v: Vec<u64> = (0..100_000)
        .map(|_| {
            let t = Instant::now();
            black_box(());
            t.elapsed().as_nanos() as u64
        })
        .collect();
    v.sort_unstable();
    v[v.len() / 2]
}

struct LookupResult {
    hist: Histogram<u64>,
    mean_runs: Vec<f64>,
    hits: u64,
    queries: u64,
    wrong: u64,
    /// Batched passes whose payload sum or hit count was wrong.
    wrong_passes: u64,
}

/// The query keys of one size: measured present and absent keys, and warm-up keys drawn apart
/// from them (a warm-up on the measured keys would leave exactly those in the CPU caches).
struct Queries {
    present: Vec<u64>,
    absent: Vec<u64>,
    warm_present: Vec<u64>,
    warm_absent: Vec<u64>,
    /// Start keys of the range scans, drawn apart from the lookups.
    scans: Vec<u64>,
    /// (payload sum, hits) a batched pass over `present` must produce.
    present_expect: (u64, usize),
}

impl Queries {
    fn draw(ks: &KeySet, lookups: usize, scans: usize, seed: u64) -> Queries {
        let present = ks.present_queries(lookups, seed ^ 1);
        let absent = ks.absent_queries(lookups, seed ^ 2);
        let apart = |v: Vec<u64>, from: &[u64]| -> Vec<u64> {
            let measured: HashSet<u64> = from.iter().copied().collect();
            v.into_iter().filter(|k| !measured.contains(k)).collect()
        };
        let warm = lookups.min(100_000);
        let warm_present = apart(ks.present_queries(warm, seed ^ 3), &present);
        let warm_absent = apart(ks.absent_queries(warm, seed ^ 4), &absent);
        let present_expect = (
            present.iter().fold(0u64, |a, &q| a.wrapping_add(ks.payload(q))),
            present.len(),
        );
        Queries {
            scans: ks.present_queries(scans, seed ^ 5),
            present,
            absent,
            warm_present,
            warm_absent,
            present_expect,
        }
    }

    /// Warm-up keys that are also measured keys (0 by construction; the report prints it).
    fn warm_measured(&self) -> usize {
        let p: HashSet<u64> = self.present.iter().copied().collect();
        let a: HashSet<u64> = self.absent.iter().copied().collect();
        self.warm_present.iter().filter(|k| p.contains(k)).count()
            + self.warm_absent.iter().filter(|k| a.contains(k)).count()
    }
}

/// Lookups: a warm-up pass over `warm`, `runs` batched passes (mean; each pass's payload sum
/// and hit count checked against `batched_expect`), then one per-op timed pass (percentiles).
/// Every warm-up and per-op answer is checked against `expect` of its key.
fn measure_lookups<S: Structure>(
    s: &S,
    queries: &[u64],
    warm: &[u64],
    expect: impl Fn(u64) -> Option<u64>,
    batched_expect: (u64, usize),
    runs: usize,
    overhead: u64,
) -> LookupResult {
    let mut r = LookupResult {
        hist: Histogram::new_with_bounds(1, 100_000_000, 3).expect("histogram bounds"),
        mean_runs: Vec::new(),
        hits: 0,
        queries: 0,
        wrong: 0,
        wrong_passes: 0,
    };
    for &q in warm {
        if black_box(s.get(q)) != expect(q) {
            r.wrong += 1;
        }
    }
    for _ in 0..runs {
        // The same loop as the paired passes.
        let (ns, ok) = batched_pass(s, queries, batched_expect);
        r.mean_runs.push(ns);
        r.wrong_passes += u64::from(!ok);
    }
    for &q in queries {
        let t = Instant::now();
        let got = s.get(black_box(q));
        let ns = (t.elapsed().as_nanos() as u64).saturating_sub(overhead).max(1);
        let _ = r.hist.record(ns);
        let exp = expect(q);
        r.queries += 1;
        if got.is_some() {
            r.hits += 1;
        }
        if got != exp {
            r.wrong += 1;
        }
    }
    r
}

/// One batched pass over `queries`: mean ns per lookup, and whether every answer was right
/// (the payload sum and the hit count equal the expected ones).
fn batched_pass<S: Structure>(
    s: &S,
    queries: &[u64],
    (expect_sum, expect_hits): (u64, usize),
) -> (f64, bool) {
    let t = Instant::now();
    let mut acc = 0u64;
    let mut hits = 0usize;
    for &q in queries {
        if let Some(v) = s.get(black_box(q)) {
            acc = acc.wrapping_add(v);
            hits += 1;
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / queries.len() as f64;
    (ns, black_box(acc) == expect_sum && hits == expect_hits)
}

/// ALEX and BTreeMap side by side, batched lookup passes alternated so both see the same
/// machine (this VM's memory latency drifts by tens of percent between minutes).
fn paired_lookups(
    n: usize,
    ks: &KeySet,
    sorted: &[(u64, u64)],
    q: &Queries,
    pairs: usize,
    failures: &mut u64,
) -> Paired {
    eprintln!("[paired {n}] building ALEX and BTreeMap side by side");
    let a = <Alex<u64> as Structure>::build(sorted);
    let b = <BTreeMap<u64, u64> as Structure>::build(sorted);
    let _ = ks;
    let expect = q.present_expect;
    let present_q = &q.present[..];
    // Warm-up of both, on keys apart from the measured ones (answers checked too).
    let warm_expect = (
        q.warm_present
            .iter()
            .fold(0u64, |acc, &k| acc.wrapping_add(ks.payload(k))),
        q.warm_present.len(),
    );
    for st in [
        batched_pass(&a, &q.warm_present, warm_expect),
        batched_pass(&b, &q.warm_present, warm_expect),
    ] {
        if !st.1 {
            eprintln!("[paired {n}] WRONG ANSWERS in the warm-up pass");
            *failures += 1;
        }
    }
    let mut p = Paired {
        keys: n,
        alex_ns: Vec::new(),
        btreemap_ns: Vec::new(),
        ratios: Vec::new(),
        ratio_median: 0.0,
    };
    for i in 0..pairs {
        let ((ta, oka), (tb, okb)) = if i % 2 == 0 {
            let x = batched_pass(&a, present_q, expect);
            (x, batched_pass(&b, present_q, expect))
        } else {
            let y = batched_pass(&b, present_q, expect);
            (batched_pass(&a, present_q, expect), y)
        };
        if !oka || !okb {
            eprintln!("[paired {n}] WRONG ANSWERS in pass {i} (alex ok={oka}, btreemap ok={okb})");
            *failures += 1;
        }
        p.alex_ns.push(ta);
        p.btreemap_ns.push(tb);
        p.ratios.push(tb / ta);
    }
    p.ratio_median = median(&mut p.ratios.clone());
    println!("{}", p.one_line());
    p
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

#[allow(clippy::too_many_arguments)]
fn run_structure<S: Structure>(
    args: &Args,
    ks: &KeySet,
    sorted: &[(u64, u64)],
    q: &Queries,
    overhead: u64,
    counters: &mut Counters,
    failures: &mut u64,
) -> Record {
    let (present_q, absent_q) = (&q.present[..], &q.absent[..]);
    let n = sorted.len();
    let name = S::name();
    eprintln!("[{name} {n}] bulk load");
    let before = allocated_bytes();
    let rss_before = Rss::now();
    let t = Instant::now();
    let s = S::build(sorted);
    let build_s = t.elapsed().as_secs_f64();
    let bytes = allocated_bytes().saturating_sub(before);
    let rss = Rss::now();
    eprintln!(
        "[{name} {n}] built in {build_s:.2}s, {:.2} B/key",
        bytes as f64 / n as f64
    );

    // Present keys: every one must be found with its payload.
    counters.start();
    let hit = measure_lookups(
        &s,
        present_q,
        &q.warm_present,
        |k| Some(ks.payload(k)),
        q.present_expect,
        args.runs,
        overhead,
    );
    let hw = counters.stop((present_q.len() as u64) * (args.runs as u64 + 1) + q.warm_present.len() as u64);
    // Absent keys: none may be found.
    let miss = measure_lookups(&s, absent_q, &q.warm_absent, |_| None, (0, 0), 1, overhead);
    let wrong = hit.wrong + miss.wrong + hit.wrong_passes + miss.wrong_passes;
    if hit.wrong_passes + miss.wrong_passes > 0 {
        println!(
            "{name:>10} n={n:>11} WRONG BATCHED PASSES: {} present, {} absent",
            hit.wrong_passes, miss.wrong_passes
        );
    }
    println!(
        "{name:>10} n={n:>11} hits={}/{} absent_found={}/{}{}",
        hit.hits,
        hit.queries,
        miss.hits,
        miss.queries,
        if wrong > 0 { "  WRONG ANSWERS" } else { "" }
    );
    *failures += wrong;

    // 100-key range scans from random present keys (drawn apart from the lookups).
    let scans = q.scans.len();
    let mut scan_hist = Histogram::<u64>::new_with_bounds(1, 1_000_000_000, 3).expect("histogram bounds");
    let mut scan_wrong = 0u64;
    for &k in &q.scans {
        let t = Instant::now();
        let (sum, cnt) = s.scan(k, 100);
        let ns = (t.elapsed().as_nanos() as u64).saturating_sub(overhead).max(1);
        let _ = scan_hist.record(ns);
        let rank = ks.rank(k);
        let exp_cnt = (n - rank).min(100);
        if cnt != exp_cnt || sum != ks.payload_sum(rank, exp_cnt) {
            scan_wrong += 1;
        }
    }
    // Mean of the per-scan timings (the loop also verifies each scan, which is not timed).
    let scan_mean = scan_hist.mean();
    if scan_wrong > 0 {
        println!("{name:>10} n={n:>11} RANGE SCANS WRONG: {scan_wrong}/{scans}");
        *failures += scan_wrong;
    }
    let depth = s.depth();
    let own = s.own_bytes();
    drop(s);

    // Inserts: second half (in generation order) into the first half, bulk loaded.
    let mut insert_ns = None;
    let mut insert_bytes_per_key = None;
    if !args.no_inserts {
        let (first, second) = ks.halves();
        // Counted from before the half's input array exists (it is freed before the count).
        let before = allocated_bytes();
        let mut half: Vec<(u64, u64)> = first.iter().map(|&k| (k, ks.payload(k))).collect();
        half.sort_unstable();
        let mut s = S::build(&half);
        drop(half);
        let pb = indicatif::ProgressBar::new(second.len() as u64);
        pb.set_style(
            indicatif::ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} {per_sec} eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        pb.set_message(format!("[{name} {n}] inserts"));
        let t = Instant::now();
        let mut supported = true;
        let mut dup = 0u64;
        for (i, chunk) in second.chunks(1 << 20).enumerate() {
            for &k in chunk {
                match s.insert(k, ks.payload(k)) {
                    Some(true) => {}
                    Some(false) => dup += 1,
                    None => {
                        supported = false;
                        break;
                    }
                }
            }
            if !supported {
                break;
            }
            pb.set_position(((i + 1) * (1 << 20)).min(second.len()) as u64);
        }
        let el = t.elapsed().as_nanos() as f64;
        pb.finish_and_clear();
        if supported {
            insert_ns = Some(el / second.len().max(1) as f64);
            insert_bytes_per_key = Some(allocated_bytes().saturating_sub(before) as f64 / n as f64);
            // Every key of both halves must now be found: check a sample of each.
            let mut bad = dup;
            for &k in first.iter().step_by((first.len() / 200_000).max(1)) {
                if s.get(k) != Some(ks.payload(k)) {
                    bad += 1;
                }
            }
            for &k in second.iter().step_by((second.len() / 200_000).max(1)) {
                if s.get(k) != Some(ks.payload(k)) {
                    bad += 1;
                }
            }
            if bad > 0 {
                println!("{name:>10} n={n:>11} AFTER INSERTS: {bad} keys wrong");
                *failures += bad;
            }
        }
    }

    let mut runs = hit.mean_runs.clone();
    let q = |h: &Histogram<u64>, p: f64| h.value_at_quantile(p) as f64;
    Record {
        structure: name.to_string(),
        keys: n,
        build_s,
        insert_ns_mean: insert_ns,
        inserts_per_s: insert_ns.map(|x| 1e9 / x),
        lookup_ns_p50: q(&hit.hist, 0.50),
        lookup_ns_p95: q(&hit.hist, 0.95),
        lookup_ns_p99: q(&hit.hist, 0.99),
        lookup_ns_mean: median(&mut runs),
        lookup_ns_mean_runs: hit.mean_runs.clone(),
        lookup_ns_hist_mean: hit.hist.mean(),
        miss_ns_p50: q(&miss.hist, 0.50),
        miss_ns_p99: q(&miss.hist, 0.99),
        miss_ns_mean: miss.mean_runs.first().copied().unwrap_or(f64::NAN),
        scan100_ns_mean: scan_mean,
        scan100_ns_p50: q(&scan_hist, 0.50),
        scan100_ns_p99: q(&scan_hist, 0.99),
        bytes_per_key: bytes as f64 / n as f64,
        bytes_per_key_after_inserts: insert_bytes_per_key,
        own_bytes_per_key: own.map(|b| b as f64 / n as f64),
        rss_bytes: rss.total,
        rss_anon_bytes: rss.anon,
        rss_file_bytes: rss.file,
        rss_delta_bytes: rss.total.saturating_sub(rss_before.total),
        depth,
        hits: hit.hits,
        queries: hit.queries,
        absent_found: miss.hits,
        absent_queries: miss.queries,
        wrong_answers: wrong + scan_wrong,
        counters: hw,
    }
}

fn main() {
    let args = Args::parse();
    // A report of record comes from a clean committed tree (docs/BENCHMARKING.md, rule 10).
    let prov = match Provenance::establish(&std::env::current_dir().unwrap_or_default(), args.draft) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("stress_100m: {e}");
            std::process::exit(2);
        }
    };
    let mut machine = Machine::detect();
    machine.git_hash = prov.describe();
    machine.measure_memory();
    println!("{}", machine.describe());
    println!(
        "memory latency: {}",
        augur_bench::memlat::describe(&machine.memory_latency)
    );
    let mut counters = Counters::open();
    println!("{}", counters.describe());
    let overhead = timer_overhead_ns();
    println!("timer overhead (subtracted from per-op samples): {overhead} ns");
    let dist = match args.dist {
        DistArg::Random => Dist::Random,
        DistArg::Seq => Dist::Seq,
        DistArg::Lognormal => Dist::LogNormal,
    };
    let mut records = Vec::new();
    let mut alex_stats = Vec::new();
    let mut paired = Vec::new();
    let mut failures = 0u64;
    let mut warmup_keys_measured = 0usize;
    for &n in &args.keys {
        eprintln!("== {n} keys ({dist:?}) ==");
        let ks = KeySet::generate(dist, n, args.seed);
        let sorted: Vec<(u64, u64)> = ks.sorted.iter().map(|&k| (k, ks.payload(k))).collect();
        let q = Queries::draw(&ks, args.lookups, args.scans, args.seed);
        warmup_keys_measured += q.warm_measured();
        for st in &args.structures {
            let rec = match st.as_str() {
                "alex" => {
                    let r = run_structure::<Alex<u64>>(
                        &args,
                        &ks,
                        &sorted,
                        &q,
                        overhead,
                        &mut counters,
                        &mut failures,
                    );
                    // Structure statistics of a fresh bulk load (depth, nodes, counted bytes).
                    let a = Alex::bulk_load(&sorted).expect("sorted");
                    alex_stats.push((n, a.stats()));
                    r
                }
                "btreemap" => run_structure::<BTreeMap<u64, u64>>(
                    &args,
                    &ks,
                    &sorted,
                    &q,
                    overhead,
                    &mut counters,
                    &mut failures,
                ),
                "sorted_vec" => run_structure::<SortedVec>(
                    &args,
                    &ks,
                    &sorted,
                    &q,
                    overhead,
                    &mut counters,
                    &mut failures,
                ),
                other => {
                    eprintln!("unknown structure {other}");
                    std::process::exit(2);
                }
            };
            println!("{}", rec.one_line());
            records.push(rec);
        }
        let both = ["alex", "btreemap"]
            .iter()
            .all(|x| args.structures.iter().any(|s| s == x));
        if both && args.pairs > 0 {
            paired.push(paired_lookups(n, &ks, &sorted, &q, args.pairs, &mut failures));
        }
    }
    let run = Run {
        machine,
        dist: format!("{dist:?}").to_lowercase(),
        args: format!("{:?}", std::env::args().collect::<Vec<_>>()),
        lookups: args.lookups,
        runs: args.runs,
        seed: args.seed,
        timer_overhead_ns: overhead,
        hardware_counters: counters.describe(),
        results: records,
        alex_stats,
        paired,
        failures,
        warmup_keys_measured,
        provenance: prov,
    };
    if let Err(e) = write_reports(&args.out, &run) {
        eprintln!("writing reports: {e}");
        std::process::exit(3);
    }
    println!("reports written to {}", args.out.display());
    if failures > 0 {
        println!("FAILED: {failures} wrong answers");
        std::process::exit(1);
    }
}
