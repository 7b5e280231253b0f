//! The Markdown report, its JSON twin and the SVG chart.

use std::fmt::Write as _;
use std::path::Path;

use augur::index::alex::AlexStats;
use plotters::prelude::*;
use serde::Serialize;

use crate::counters::CounterValues;
use crate::machine::Machine;

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
    /// Process RSS right after the bulk load (includes the generated key arrays).
    pub rss_bytes: u64,
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
    let json = serde_json::to_string_pretty(run).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("stress_100m.json"), json)?;
    std::fs::write(dir.join("stress_100m.md"), markdown(run))?;
    chart(&dir.join("stress_100m.svg"), run).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(())
}

fn markdown(run: &Run) -> String {
    let m = &run.machine;
    let mut s = String::new();
    let _ = writeln!(s, "# stress_100m: ALEX vs BTreeMap vs sorted Vec\n");
    let _ = writeln!(s, "Generated by `stress_100m` (source `stress/stress_100m.rs`); raw numbers in `stress_100m.json`, chart in `stress_100m.svg`.\n");
    let _ = writeln!(s, "## Summary\n");
    let mut sizes: Vec<usize> = run.results.iter().map(|r| r.keys).collect();
    sizes.dedup();
    for &n in &sizes {
        if let (Some(a), Some(b)) = (by(run, "alex", n), by(run, "btreemap", n)) {
            let _ = writeln!(
                s,
                "- {} keys: ALEX lookup mean {:.0} ns vs BTreeMap {:.0} ns ({:.1}x); {:.2} B/key counted (BTreeMap {:.2}); bulk load {:.2} s; inserts {} ns mean ({} /s).",
                fmt_n(n),
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
        let _ = writeln!(s, "\nPaired lookup passes (ALEX and BTreeMap built side by side, their batched passes alternated, ratio per pair; the fairest ratio on a VM whose memory latency drifts between minutes):\n");
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
                fmt_n(p.keys),
                p.ratios.len(),
                p.ratio_median,
                lo,
                hi,
                list(&p.alex_ns),
                list(&p.btreemap_ns)
            );
        }
    }
    let _ = writeln!(
        s,
        "\nCorrectness: every lookup result was checked ({}); {} wrong answers.\n",
        if run.failures == 0 {
            "all present keys found with their payload, no absent key found, every 100-key scan matched"
        } else {
            "FAILURES"
        },
        run.failures
    );
    let _ = writeln!(s, "## Machine and settings\n");
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(s, "| CPU | {} |", m.cpu_model);
    let _ = writeln!(s, "| cores | {} |", m.cores);
    let _ = writeln!(s, "| RAM | {:.1} GiB |", m.ram_bytes as f64 / (1u64 << 30) as f64);
    let _ = writeln!(s, "| kernel | Linux {} |", m.kernel);
    let _ = writeln!(s, "| disk | {} |", m.disk);
    let _ = writeln!(s, "| augur (git) | {} |", m.git_hash);
    let _ = writeln!(s, "| compiler | {} ({} profile) |", m.rustc, m.profile);
    let _ = writeln!(s, "| command | `{}` |", run.args);
    let _ = writeln!(
        s,
        "| key distribution | {} (u64 keys, payload = a fixed function of the key) |",
        run.dist
    );
    let _ = writeln!(s, "| lookups | {} present + {} absent per size and structure; mean = median of {} batched runs; percentiles from one more per-op timed run |", run.lookups, run.lookups, run.runs);
    let _ = writeln!(
        s,
        "| timer overhead | {} ns, subtracted from every per-op sample (percentiles, scans) |",
        run.timer_overhead_ns
    );
    let _ = writeln!(s, "| perf counters | {} |", run.hardware_counters);
    let _ = writeln!(s, "| memory | `bytes/key` = bytes allocated by the global allocator (a counting `#[global_allocator]`) across the build / keys; `own` = the structure's count (`Alex::stats().bytes`, Vec capacity); RSS = whole process (includes the key arrays of the benchmark itself) |");
    let _ = writeln!(s, "| inserts | the second half of the keys (generation order: random, or increasing for seq) into the structure bulk loaded with the first half; single run |");
    let _ = writeln!(s, "| runs | sizes are single runs (one build each); lookups have {} batched runs (spread in JSON `lookup_ns_mean_runs`) |", run.runs);
    let _ = writeln!(s, "\n## Results\n");
    let _ = writeln!(s, "| structure | keys | build s | lookup mean ns | p50 | p95 | p99 | miss mean ns | miss p99 | scan100 mean ns | insert ns | inserts/s | bytes/key | own bytes/key | bytes/key after inserts | RSS MiB | depth | hits |");
    let _ = writeln!(
        s,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for r in &run.results {
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} | {:.2} | {} | {} | {:.0} | {} | {}/{} |",
            r.structure,
            fmt_n(r.keys),
            r.build_s,
            r.lookup_ns_mean,
            r.lookup_ns_p50,
            r.lookup_ns_p95,
            r.lookup_ns_p99,
            r.miss_ns_mean,
            r.miss_ns_p99,
            r.scan100_ns_mean,
            opt(r.insert_ns_mean, 0),
            r.inserts_per_s.map(|x| format!("{:.2}M", x / 1e6)).unwrap_or_else(|| "n/a".into()),
            r.bytes_per_key,
            opt(r.own_bytes_per_key, 2),
            opt(r.bytes_per_key_after_inserts, 2),
            r.rss_bytes as f64 / (1u64 << 20) as f64,
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
            fmt_n(r.keys),
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
            fmt_n(*n),
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

fn fmt_n(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn chart(path: &Path, run: &Run) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
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
            format!("Lookup latency vs keys ({} keys)", run.dist),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0f64..max_keys * 1.05, 0f64..max_ns)?;
    ch.configure_mesh()
        .x_desc("keys (millions)")
        .y_desc("ns per lookup")
        .draw()?;
    let colors = [("alex", RED), ("btreemap", BLUE), ("sorted_vec", GREEN)];
    for (name, color) in colors {
        let pts: Vec<(f64, f64)> = run
            .results
            .iter()
            .filter(|r| r.structure == name)
            .map(|r| (r.keys as f64 / 1e6, r.lookup_ns_mean))
            .collect();
        if pts.is_empty() {
            continue;
        }
        ch.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(format!("{name} mean"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        ch.draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
        let p99: Vec<(f64, f64)> = run
            .results
            .iter()
            .filter(|r| r.structure == name)
            .map(|r| (r.keys as f64 / 1e6, r.lookup_ns_p99))
            .collect();
        ch.draw_series(LineSeries::new(p99, color.mix(0.5).stroke_width(1)))?
            .label(format!("{name} p99"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.mix(0.5)));
    }
    ch.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
