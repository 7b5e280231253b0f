//! stress_100m's Markdown report, its JSON twin and the SVG chart: the index structures alone,
//! in memory, with per-operation and batched lookup figures side by side.

use std::fmt::Write as _;
use std::path::Path;

use augur::index::alex::AlexStats;
use plotters::prelude::*;
use serde::Serialize;

use crate::counters::CounterValues;
use crate::machine::Machine;
use crate::provenance::Provenance;
use crate::stats::fmt_count;

#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub structure: String,
    pub keys: usize,
    pub build_s: f64,
    pub insert_ns_mean: Option<f64>,
    pub inserts_per_s: Option<f64>,
    pub lookup_ns_p50: f64,
    pub lookup_ns_p95: f64,
    pub lookup_ns_p99: f64,
    /// Median over the batched runs of (run time / lookups).
    pub lookup_ns_mean: f64,
    pub lookup_ns_mean_runs: Vec<f64>,
    /// Mean of the per-op timed pass (timer overhead subtracted).
    pub lookup_ns_hist_mean: f64,
    pub miss_ns_p50: f64,
    pub miss_ns_p99: f64,
    pub miss_ns_mean: f64,
    pub scan100_ns_mean: f64,
    pub scan100_ns_p50: f64,
    pub scan100_ns_p99: f64,
    /// Allocator-counted bytes of the bulk-loaded structure / keys.
    pub bytes_per_key: f64,
    /// Allocator-counted bytes after the insert phase / keys.
    pub bytes_per_key_after_inserts: Option<f64>,
    /// The structure's own count (ALEX `stats().bytes`, Vec capacity) / keys.
    pub own_bytes_per_key: Option<f64>,
    /// Process RSS right after the bulk load (includes the generated key arrays), and its
    /// anonymous and file-backed parts.
    pub rss_bytes: u64,
    pub rss_anon_bytes: u64,
    pub rss_file_bytes: u64,
    pub rss_delta_bytes: u64,
    /// ALEX: mean depth over keys; sorted Vec: binary-search steps; BTreeMap: not exposed.
    pub depth: Option<f64>,
    pub hits: u64,
    pub queries: u64,
    pub absent_found: u64,
    pub absent_queries: u64,
    pub wrong_answers: u64,
    pub counters: CounterValues,
}

impl Record {
    pub fn one_line(&self) -> String {
        format!(
            "{:>10} n={:>11} build={:.2}s lookup mean={:.0}ns p50={:.0} p99={:.0} miss={:.0}ns scan100={:.0}ns insert={} B/key={:.2}",
            self.structure,
            self.keys,
            self.build_s,
            self.lookup_ns_mean,
            self.lookup_ns_p50,
            self.lookup_ns_p99,
            self.miss_ns_mean,
            self.scan100_ns_mean,
            self.insert_ns_mean.map(|x| format!("{x:.0}ns")).unwrap_or_else(|| "n/a".into()),
            self.bytes_per_key
        )
    }
}

/// ALEX and BTreeMap lookups measured side by side, passes alternated.
#[derive(Clone, Debug, Serialize)]
pub struct Paired {
    pub keys: usize,
    /// Mean ns per lookup of each ALEX pass.
    pub alex_ns: Vec<f64>,
    /// Mean ns per lookup of each BTreeMap pass (same index = same pair).
    pub btreemap_ns: Vec<f64>,
    /// BTreeMap / ALEX per pair.
    pub ratios: Vec<f64>,
    pub ratio_median: f64,
}

impl Paired {
    pub fn one_line(&self) -> String {
        let (lo, hi) = min_max(&self.ratios);
        format!(
            "    paired n={:>11} pairs={} BTreeMap/ALEX lookup mean ratio median={:.2}x (min {:.2}x, max {:.2}x); ALEX {} ns; BTreeMap {} ns",
            self.keys,
            self.ratios.len(),
            self.ratio_median,
            lo,
            hi,
            list(&self.alex_ns),
            list(&self.btreemap_ns),
        )
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
        (a.min(x), b.max(x))
    })
}

fn list(v: &[f64]) -> String {
    v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join("/")
}

#[derive(Serialize)]
pub struct Run {
    pub machine: Machine,
    pub dist: String,
    pub args: String,
    pub lookups: usize,
    pub runs: usize,
    pub seed: u64,
    pub timer_overhead_ns: u64,
    pub hardware_counters: String,
    pub results: Vec<Record>,
    #[serde(serialize_with = "ser_stats")]
    pub alex_stats: Vec<(usize, AlexStats)>,
    pub paired: Vec<Paired>,
    pub failures: u64,
    /// Warm-up keys that were also measured keys, over all sizes (0: warm-ups are apart).
    pub warmup_keys_measured: usize,
    pub provenance: Provenance,
}

/// ALEX's speedup over another structure at one size, three ways: per operation (p50 and mean
/// of the per-op timed pass, one lookup at a time) and batched (consecutive lookups of a loop,
/// which the CPU overlaps: a micro-setting, never the end-to-end figure).
#[derive(Clone, Debug, Serialize)]
pub struct Speedup {
    pub keys: usize,
    pub other: String,
    pub per_op_p50: f64,
    pub per_op_mean: f64,
    pub batched_mean: f64,
    pub miss_per_op_p50: f64,
}

pub fn speedups(run: &Run) -> Vec<Speedup> {
    let mut out = Vec::new();
    let mut sizes: Vec<usize> = run.results.iter().map(|r| r.keys).collect();
    sizes.dedup();
    for &n in &sizes {
        let Some(a) = by(run, "alex", n) else {
            continue;
        };
        for other in ["btreemap", "sorted_vec"] {
            if let Some(b) = by(run, other, n) {
                out.push(Speedup {
                    keys: n,
                    other: other.into(),
                    per_op_p50: b.lookup_ns_p50 / a.lookup_ns_p50,
                    per_op_mean: b.lookup_ns_hist_mean / a.lookup_ns_hist_mean,
                    batched_mean: b.lookup_ns_mean / a.lookup_ns_mean,
                    miss_per_op_p50: b.miss_ns_p50 / a.miss_ns_p50,
                });
            }
        }
    }
    out
}

fn ser_stats<S: serde::Serializer>(v: &[(usize, AlexStats)], s: S) -> Result<S::Ok, S::Error> {
    let arr: Vec<serde_json::Value> = v
        .iter()
        .map(|(n, st)| {
            serde_json::json!({
                "keys": n,
                "model_nodes": st.model_nodes,
                "data_nodes": st.data_nodes,
                "max_depth": st.max_depth,
                "avg_depth": st.avg_depth,
                "avg_key_depth": st.avg_key_depth,
                "bytes": st.bytes,
                "bytes_per_key": st.bytes as f64 / (*n).max(1) as f64,
                "density": st.density,
                "root_fanout": st.root_fanout,
                "max_fanout": st.max_fanout,
            })
        })
        .collect();
    arr.serialize(s)
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map(|v| format!("{v:.prec$}")).unwrap_or_else(|| "n/a".into())
}

fn by<'a>(run: &'a Run, s: &str, n: usize) -> Option<&'a Record> {
    run.results.iter().find(|r| r.structure == s && r.keys == n)
}

pub fn write_reports(dir: &Path, run: &Run) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let doc = serde_json::json!({ "run": run, "speedups": speedups(run) });
    let json = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("stress_100m.json"), json)?;
    std::fs::write(dir.join("stress_100m.md"), markdown(run))?;
    chart(&dir.join("stress_100m.svg"), run).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(())
}

fn markdown(run: &Run) -> String {
    let m = &run.machine;
    let mut s = String::new();
    let _ = writeln!(s, "# stress_100m: ALEX vs BTreeMap vs sorted Vec\n");
    if run.provenance.draft {
        let _ = writeln!(
            s,
            "> **DRAFT — not a report of record** (run with `--draft`; figures may not match any commit).\n"
        );
    }
    let _ = writeln!(s, "Generated by `stress_100m` (source `stress/stress_100m.rs`) from {}; raw numbers in `stress_100m.json`, chart in `stress_100m.svg`. Rules: `docs/BENCHMARKING.md`.\n", run.provenance.describe());
    let _ = writeln!(s, "These are the index structures alone, in memory (u64 keys, u64 payloads), not Augur's reads: an Augur point read also takes a snapshot and reads the row (see `honest_comparison`). Quote these figures only as what they are.\n");
    let _ = writeln!(s, "## Summary\n");
    let _ = writeln!(s, "ALEX's speedup (other ÷ ALEX) per size. **Per operation**: one lookup timed at a time (p50 and mean of that pass). **Batched**: the mean of a loop of lookups, where the CPU overlaps consecutive lookups' memory misses; batched ratios are larger and are not what one lookup costs.\n");
    let _ = writeln!(
        s,
        "| keys | vs | per-op p50 | per-op mean | batched mean | absent keys, per-op p50 |"
    );
    let _ = writeln!(s, "|---:|---|---:|---:|---:|---:|");
    for x in speedups(run) {
        let _ = writeln!(
            s,
            "| {} | {} | **{:.2}x** | {:.2}x | {:.2}x | {:.2}x |",
            fmt_count(x.keys),
            x.other,
            x.per_op_p50,
            x.per_op_mean,
            x.batched_mean,
            x.miss_per_op_p50
        );
    }
    let _ = writeln!(s);
    let mut sizes: Vec<usize> = run.results.iter().map(|r| r.keys).collect();
    sizes.dedup();
    for &n in &sizes {
        if let (Some(a), Some(b)) = (by(run, "alex", n), by(run, "btreemap", n)) {
            let _ = writeln!(
                s,
                "- {} keys: ALEX lookup p50 {:.0} ns per op vs BTreeMap {:.0} ns ({:.2}x; batched mean {:.0} vs {:.0} ns, {:.2}x); {:.2} B/key counted (BTreeMap {:.2}); bulk load {:.2} s; inserts {} ns mean ({} /s).",
                fmt_count(n),
                a.lookup_ns_p50,
                b.lookup_ns_p50,
                b.lookup_ns_p50 / a.lookup_ns_p50,
                a.lookup_ns_mean,
                b.lookup_ns_mean,
                b.lookup_ns_mean / a.lookup_ns_mean,
                a.bytes_per_key,
                b.bytes_per_key,
                a.build_s,
                opt(a.insert_ns_mean, 0),
                a.inserts_per_s.map(|x| format!("{:.2}M", x / 1e6)).unwrap_or_else(|| "n/a".into()),
            );
        }
    }
    if !run.paired.is_empty() {
        let _ = writeln!(s, "\nPaired batched passes (ALEX and BTreeMap built side by side, their batched passes alternated, ratio per pair, so that both see the same machine on a VM whose memory latency drifts between minutes; batched, so a micro-setting like the batched column above):\n");
        let _ = writeln!(
            s,
            "| keys | pairs | BTreeMap / ALEX median | min | max | ALEX ns per pass | BTreeMap ns per pass |"
        );
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|---|---|");
        for p in &run.paired {
            let (lo, hi) = min_max(&p.ratios);
            let _ = writeln!(
                s,
                "| {} | {} | {:.2}x | {:.2}x | {:.2}x | {} | {} |",
                fmt_count(p.keys),
                p.ratios.len(),
                p.ratio_median,
                lo,
                hi,
                list(&p.alex_ns),
                list(&p.btreemap_ns)
            );
        }
    }
    let queries: u64 = run.results.iter().map(|r| r.queries + r.absent_queries).sum();
    let _ = writeln!(
        s,
        "\nCorrectness: {} wrong answers. Checked: every per-op lookup ({} present and absent, each answer compared), the payload sum and hit count of every batched and paired pass (warm-ups included), every 100-key scan's count and payload sum, and after the insert phase a sample of both halves. Warm-ups read keys drawn apart from the measured ones ({} warm-up keys were measured keys).\n",
        run.failures, queries, run.warmup_keys_measured
    );
    let _ = writeln!(s, "## Machine and settings\n");
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| CPU | {} |", m.cpu_model);
    let _ = writeln!(s, "| cores | {} |", m.cores);
    let _ = writeln!(s, "| RAM | {:.1} GiB |", m.ram_bytes as f64 / (1u64 << 30) as f64);
    let _ = writeln!(s, "| kernel | Linux {} |", m.kernel);
    let _ = writeln!(s, "| disk | {} |", m.disk);
    let _ = writeln!(s, "{}", m.memory_row());
    let _ = writeln!(s, "| augur (git) | {} |", run.provenance.describe());
    let _ = writeln!(s, "| compiler | {} ({} profile) |", m.rustc, m.profile);
    let _ = writeln!(s, "| command | `{}` |", run.args);
    let _ = writeln!(
        s,
        "| key distribution | {} (u64 keys, payload = a fixed function of the key) |",
        run.dist
    );
    let _ = writeln!(s, "| lookups | {} present + {} absent per size and structure, after a warm-up pass over other keys; batched mean = median of {} batched runs (present keys; one for absent keys); per-op p50/p95/p99 and mean from one more pass timing each lookup alone |", run.lookups, run.lookups, run.runs);
    let _ = writeln!(
        s,
        "| timer overhead | {} ns, subtracted from every per-op sample (percentiles, scans) |",
        run.timer_overhead_ns
    );
    let _ = writeln!(s, "| perf counters | {} |", run.hardware_counters);
    let _ = writeln!(s, "| memory | `bytes/key` = bytes allocated by the global allocator (a counting `#[global_allocator]`) across the build / keys; `own` = the structure's count (`Alex::stats().bytes`, Vec capacity); RSS = whole process after the build (includes the key arrays of the benchmark itself), anonymous and file-backed apart |");
    let _ = writeln!(s, "| inserts | the second half of the keys (generation order: random, or increasing for seq) into the structure bulk loaded with the first half; single run |");
    let _ = writeln!(s, "| runs | every size is a single run (one build each; no spread); lookups have {} batched runs (each in JSON `lookup_ns_mean_runs`) and one per-op pass |", run.runs);
    let _ = writeln!(s, "\n## Results\n");
    let _ = writeln!(s, "| structure | keys | build s | lookup batched mean ns | per-op mean | p50 | p95 | p99 | miss batched mean ns | miss p50 | miss p99 | scan100 mean ns | p50 | insert ns | inserts/s | bytes/key | own bytes/key | bytes/key after inserts | RSS MiB (anon/file) | depth | hits |");
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
    );
    for r in &run.results {
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {:.2} | {} | {} | {:.0} ({:.0}/{:.0}) | {} | {}/{} |",
            r.structure,
            fmt_count(r.keys),
            r.build_s,
            r.lookup_ns_mean,
            r.lookup_ns_hist_mean,
            r.lookup_ns_p50,
            r.lookup_ns_p95,
            r.lookup_ns_p99,
            r.miss_ns_mean,
            r.miss_ns_p50,
            r.miss_ns_p99,
            r.scan100_ns_mean,
            r.scan100_ns_p50,
            opt(r.insert_ns_mean, 0),
            r.inserts_per_s.map(|x| format!("{:.2}M", x / 1e6)).unwrap_or_else(|| "n/a".into()),
            r.bytes_per_key,
            opt(r.own_bytes_per_key, 2),
            opt(r.bytes_per_key_after_inserts, 2),
            r.rss_bytes as f64 / (1u64 << 20) as f64,
            r.rss_anon_bytes as f64 / (1u64 << 20) as f64,
            r.rss_file_bytes as f64 / (1u64 << 20) as f64,
            opt(r.depth, 2),
            r.hits,
            r.queries,
        );
    }
    let _ = writeln!(
        s,
        "\nSorted Vec inserts are n/a: an insert into a sorted array moves O(n) elements."
    );
    let _ = writeln!(s, "BTreeMap depth is not exposed by std.\n");
    let _ = writeln!(s, "## Counters during the lookup runs (per lookup)\n");
    let _ = writeln!(
        s,
        "| structure | keys | instructions | cache misses | task clock ms | page faults | context switches |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    for r in &run.results {
        let c = &r.counters;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.structure,
            fmt_count(r.keys),
            opt(c.instructions_per_lookup, 1),
            opt(c.cache_misses_per_lookup, 2),
            opt(c.task_clock_ms, 0),
            c.page_faults
                .map(|x| x.to_string())
                .unwrap_or_else(|| "n/a".into()),
            c.context_switches
                .map(|x| x.to_string())
                .unwrap_or_else(|| "n/a".into()),
        );
    }
    let _ = writeln!(s, "\n## ALEX structure after bulk load\n");
    let _ = writeln!(s, "| keys | model nodes | data nodes | max depth | avg depth (keys) | root fanout | density | stats().bytes / key |");
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (n, st) in &run.alex_stats {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2} | {} | {:.3} | {:.2} |",
            fmt_count(*n),
            st.model_nodes,
            st.data_nodes,
            st.max_depth,
            st.avg_key_depth,
            st.root_fanout,
            st.density,
            st.bytes as f64 / (*n).max(1) as f64
        );
    }
    s
}

fn chart(path: &Path, run: &Run) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let max_keys = run.results.iter().map(|r| r.keys).max().unwrap_or(1) as f64 / 1e6;
    let max_ns = run
        .results
        .iter()
        .map(|r| r.lookup_ns_p99.max(r.lookup_ns_mean))
        .fold(1.0, f64::max)
        * 1.1;
    let mut ch = ChartBuilder::on(&root)
        .caption(
            format!(
                "Lookup latency, ns per lookup, vs keys in millions ({} keys; structures alone, in memory)",
                run.dist
            ),
            ("sans-serif", 18),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0f64..max_keys * 1.05, 0f64..max_ns)?;
    // Whole numbers on the axes (plotters prints f64 ticks as "3000.0"), no light mesh.
    let whole = |v: &f64| {
        if v.fract().abs() < 1e-9 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    ch.configure_mesh()
        .x_desc("keys (millions)")
        .y_desc("ns per lookup")
        .x_label_formatter(&whole)
        .y_label_formatter(&whole)
        .light_line_style(TRANSPARENT)
        .draw()?;
    let colors = [("alex", RED), ("btreemap", BLUE), ("sorted_vec", GREEN)];
    for (name, color) in colors {
        let series = |f: fn(&Record) -> f64| -> Vec<(f64, f64)> {
            run.results
                .iter()
                .filter(|r| r.structure == name)
                .map(|r| (r.keys as f64 / 1e6, f(r)))
                .collect()
        };
        let p50 = series(|r| r.lookup_ns_p50);
        if p50.is_empty() {
            continue;
        }
        ch.draw_series(LineSeries::new(p50.clone(), color.stroke_width(2)))?
            .label(format!("{name} per-op p50"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        ch.draw_series(p50.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        ch.draw_series(DashedLineSeries::new(
            series(|r| r.lookup_ns_mean),
            6,
            4,
            color.stroke_width(1),
        ))?
        .label(format!("{name} batched mean"))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 8, y)], color.stroke_width(1)));
        ch.draw_series(LineSeries::new(
            series(|r| r.lookup_ns_p99),
            color.mix(0.4).stroke_width(1),
        ))?
        .label(format!("{name} per-op p99"))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.mix(0.4)));
    }
    ch.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
