//! The report: per-minute samples, the first-against-last trend, and the Markdown text.

use super::*;

#[derive(Serialize)]
pub(crate) struct Minute {
    pub(crate) minute: u64,
    pub(crate) ops_per_sec: f64,
    pub(crate) rss_mib: Option<f64>,
    pub(crate) caches_mib: Option<f64>,
    pub(crate) alex_mib: Option<f64>,
}

#[derive(Serialize)]
pub(crate) struct OpReport {
    pub(crate) op: &'static str,
    pub(crate) ok: u64,
    pub(crate) per_sec: f64,
    pub(crate) p50_us: u64,
    pub(crate) p99_us: u64,
    pub(crate) p999_us: u64,
    pub(crate) max_us: u64,
}

#[derive(Serialize)]
pub(crate) struct Report {
    pub(crate) args: Args,
    pub(crate) machine: String,
    pub(crate) server: String,
    pub(crate) elapsed_secs: f64,
    pub(crate) total_ops: u64,
    pub(crate) ops_per_sec: f64,
    pub(crate) ops: Vec<OpReport>,
    pub(crate) retries_40001: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    pub(crate) error_count: u64,
    pub(crate) transfers_committed: u64,
    pub(crate) events_inserted: u64,
    pub(crate) history_deleted: u64,
    pub(crate) events_deleted: u64,
    pub(crate) invariants: Vec<(String, bool)>,
    pub(crate) wrong_results: Vec<String>,
    pub(crate) samples: Vec<Sample>,
    pub(crate) per_minute: Vec<Minute>,
    pub(crate) trend: Option<Trend>,
    pub(crate) passed: bool,
}

/// One operation in the first and in the last window.
#[derive(Serialize)]
pub(crate) struct TrendOp {
    pub(crate) op: &'static str,
    pub(crate) first_per_sec: f64,
    pub(crate) last_per_sec: f64,
    pub(crate) first_p50_us: u64,
    pub(crate) last_p50_us: u64,
    pub(crate) first_p99_us: u64,
    pub(crate) last_p99_us: u64,
}

/// The first window of the run against the last one.
#[derive(Serialize)]
pub(crate) struct Trend {
    pub(crate) window_secs: f64,
    /// Where the first window starts (the warm-up before it is left out).
    pub(crate) first_start_secs: f64,
    pub(crate) first_ops_per_sec: f64,
    pub(crate) last_ops_per_sec: f64,
    pub(crate) per_op: Vec<TrendOp>,
    /// Server memory (MiB) at the end of the first window (after warm-up) and at the end.
    pub(crate) rss_first_end_mib: Option<f64>,
    pub(crate) rss_end_mib: Option<f64>,
    pub(crate) rss_max_last_mib: Option<f64>,
    /// Least-squares slope of RSS over the last window, MiB per minute.
    pub(crate) rss_slope_last_mib_per_min: Option<f64>,
    /// RSS - caches - ALEX at the end of the first window and at the end.
    pub(crate) rest_first_end_mib: Option<f64>,
    pub(crate) rest_end_mib: Option<f64>,
    pub(crate) load1_first_mean: Option<f64>,
    pub(crate) load1_last_mean: Option<f64>,
    /// Server CPU time per operation in each window, µs (not affected by other processes
    /// taking the CPU, unlike throughput).
    pub(crate) cpu_us_per_op_first: Option<f64>,
    pub(crate) cpu_us_per_op_last: Option<f64>,
}

pub(crate) fn trend_of(w: &Windows, samples: &[Sample]) -> Option<Trend> {
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

pub(crate) fn markdown(r: &Report) -> String {
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
