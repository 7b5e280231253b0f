//! The Markdown report of `honest_comparison` and its JSON twin (every number of the
//! Markdown, and the raw rows behind it). Every word comes from this program except the notes
//! file, which is included verbatim under its own dated heading.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use augur_bench::augur_side;
use augur_bench::budget::{self, Part};
use augur_bench::machine::Machine;
use augur_bench::provenance::{Notes, Provenance};
use augur_bench::stats::{fmt_count, fmt_ratio, median};
use serde_json::json;

use crate::child::{budget as budget_bytes, rocks_options};
use crate::compare::{self, Comparison, Side, Verdict, KINDS};
use crate::facts::Facts;
use crate::systems::{SqliteConfig, SQLITE_PRAGMAS};
use crate::{Args, CellOut, CellRun, Check};

pub struct Context {
    pub args: Args,
    pub argv: String,
    pub fsync_us: f64,
    pub load_start: (String, String),
    pub load_end: (String, String),
    pub started_utc: String,
    pub total_seconds: f64,
    pub cell_runs: Vec<CellRun>,
    pub machine: Machine,
    pub provenance: Provenance,
    pub notes: Option<Notes>,
}

/// Median latency of a 100-byte write + fsync in `dir` (what one durable commit costs at least).
pub fn fsync_latency_us(dir: &Path) -> f64 {
    let _ = std::fs::create_dir_all(dir);
    let p = dir.join("fsync-probe");
    let Ok(mut f) = std::fs::File::create(&p) else {
        return 0.0;
    };
    let mut v = Vec::new();
    for _ in 0..50 {
        let t = std::time::Instant::now();
        let _ = f.write_all(&[7u8; 100]);
        let _ = f.sync_data();
        v.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let _ = std::fs::remove_file(&p);
    median(&v).unwrap_or(0.0)
}

fn rocksdb_version() -> String {
    let lock = include_str!("../../Cargo.lock");
    let mut it = lock.lines();
    while let Some(l) = it.next() {
        if l == "name = \"librocksdb-sys\"" {
            if let Some(v) = it.next() {
                let v = v.trim_start_matches("version = ").trim_matches('"');
                return format!(
                    "RocksDB {} (librocksdb-sys {}, rust-rocksdb 0.25)",
                    v.split('+').nth(1).unwrap_or("?"),
                    v
                );
            }
        }
    }
    "unknown".into()
}

fn disk_description(dir: &Path) -> String {
    let df = std::process::Command::new("df")
        .args(["--output=source,fstype", &dir.to_string_lossy()])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .nth(1)
                .unwrap_or("")
                .to_string()
        })
        .unwrap_or_default();
    let dev = df.split_whitespace().next().unwrap_or("").to_string();
    let name = dev.trim_start_matches("/dev/");
    let rot = std::fs::read_to_string(format!("/sys/block/{name}/queue/rotational"))
        .map(|s| {
            if s.trim() == "1" {
                "rotational"
            } else {
                "non-rotational"
            }
            .to_string()
        })
        .unwrap_or_else(|_| "rotational: unknown".into());
    format!("{} ({rot})", df.trim())
}

pub fn sys_label(s: &str) -> &str {
    match s {
        "augur" => "Augur",
        "sqlite" => "SQLite",
        "rocksdb" => "RocksDB",
        _ => s,
    }
}

fn fmt_us(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2} s", x / 1e6)
    } else if x >= 1000.0 {
        format!("{:.2} ms", x / 1000.0)
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn opt_us(x: Option<f64>) -> String {
    x.map(fmt_us).unwrap_or_else(|| "–".into())
}

fn fmt_spread(s: Option<f64>) -> String {
    s.map(|x| format!("{x:.0}%"))
        .unwrap_or_else(|| "single run".into())
}

fn mib(b: u64) -> String {
    format!("{:.0}", b as f64 / (1u64 << 20) as f64)
}

fn parts_text(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| {
            format!(
                "{}{}: {} MiB",
                p.name,
                if p.charged { "" } else { " (not charged)" },
                mib(p.bytes)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The correctness claims, one per (op, what), with checked/expected counts: exactly the checks
/// the code made, as the children recorded them.
fn check_lines(checks: &[Check]) -> Vec<(String, String, u64, u64, u64)> {
    let mut v: Vec<(String, String, u64, u64, u64)> = Vec::new();
    for c in checks {
        let op = if c.durability == "n/a" {
            c.op.clone()
        } else {
            format!("{}/{}", c.op, c.durability)
        };
        match v.iter_mut().find(|x| x.0 == op && x.1 == c.what) {
            Some(x) => {
                x.2 += c.expected;
                x.3 += c.checked;
                x.4 += c.correct;
            }
            None => v.push((op, c.what.clone(), c.expected, c.checked, c.correct)),
        }
    }
    v
}

pub fn write(dir: &Path, ctx: &Context, all: &CellOut) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut m = ctx.machine.clone();
    m.git_hash = ctx.provenance.describe.clone();
    m.disk = format!(
        "{}; measured write+fsync of 100 bytes: {:.0} µs (median of 50)",
        disk_description(&ctx.args.data_dir),
        ctx.fsync_us
    );
    let comps = compare::comparisons(&all.results);
    let facts = Facts {
        all,
        fsync_us: ctx.fsync_us,
        value_size: ctx.args.value_size,
        budget_bytes: budget_bytes(&ctx.args) as u64,
    };
    let summary = compare::summary(&comps, &facts);
    let why = facts.why(&comps);
    let targets = compare::targets(&comps);
    let md = markdown(ctx, &m, all, &comps, &summary, &why, &targets);
    let doc = json!({
        "provenance": ctx.provenance,
        "draft": ctx.provenance.draft,
        "machine": {
            "cpu_model": m.cpu_model, "cores": m.cores, "ram_bytes": m.ram_bytes,
            "kernel": m.kernel, "disk": m.disk, "augur_git": m.git_hash, "rustc": m.rustc,
            "profile": m.profile, "rocksdb": rocksdb_version(), "sqlite": rusqlite::version(),
            "fsync_median_us": ctx.fsync_us,
            "dependent_load_ns": m.memory_latency.iter()
                .map(|&(b, ns)| json!({"working_set_bytes": b, "ns": ns}))
                .collect::<Vec<_>>(),
        },
        "settings": settings(ctx),
        "started_utc": ctx.started_utc,
        "total_seconds": ctx.total_seconds,
        "other_load_at_start": {"loadavg": ctx.load_start.0, "processes": ctx.load_start.1},
        "other_load_at_end": {"loadavg": ctx.load_end.0, "processes": ctx.load_end.1},
        "summary": summary.iter().map(|(l, v)| json!({"layer": l, "verdicts": v})).collect::<Vec<_>>(),
        "targets": targets.iter().map(|set| json!({
            "title": set.title,
            "lines": set.lines.iter().map(|(h, t)| json!({"holds": h, "text": t})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "why": why,
        "notes": ctx.notes,
        "comparisons": comps,
        "cell_seconds": ctx.cell_runs.iter().map(|r| json!({
            "cell": r.cell,
            "seconds": r.seconds,
            "memory_ns_1gib_before": r.memory_ns.map(|m| m.0),
            "memory_ns_1gib_after": r.memory_ns.map(|m| m.1),
        })).collect::<Vec<_>>(),
        "results": all.results,
        "checks": all.checks,
        "memory": all.memory,
        "observations": all.observations,
        "opens": all.opens,
    });
    std::fs::write(
        dir.join("honest_comparison.json"),
        serde_json::to_string_pretty(&doc)?,
    )?;
    std::fs::write(dir.join("honest_comparison.md"), md)?;
    crate::charts::draw(&dir.join("honest_comparison.svg"), ctx, all)
        .map_err(|e| anyhow::anyhow!("chart: {e}"))?;
    Ok(())
}

fn settings(ctx: &Context) -> serde_json::Value {
    let a = &ctx.args;
    let o = augur_side::options(budget_bytes(a));
    let r = rocks_options(a);
    json!({
        "command": ctx.argv,
        "sizes": a.sizes, "dists": a.dists, "large_from": a.large_from,
        "large_dists": a.large_dists, "large_runs": a.large_runs,
        "systems": a.systems, "sqlite_configs": a.sqlite_configs, "layers": a.layers,
        "sql_max_size": a.sql_max_size, "budget_bytes": budget_bytes(a),
        "value_size": a.value_size, "key_bytes": 8, "runs": a.runs,
        "lookups_per_run": a.lookups, "scans_per_run": a.scans,
        "write_ops_per_run_nosync": a.write_ops, "write_ops_per_run_sync": a.sync_ops,
        "bulk_repeat_max": a.bulk_repeat_max, "seed": a.seed,
        "data_dir": a.data_dir,
        "augur": {
            "options": augur_side::describe_options(&o),
            "sync_commits": o.sync_commits,
            "row_cache_bytes": o.row_cache_bytes,
            "block_cache_bytes": o.store.block_cache_bytes,
            "bloom_bits_per_key": o.store.bloom_bits_per_key,
            "compression_lz4": o.store.compression,
            "write_buffer_bytes": o.store.write_buffer_bytes,
            "checkpoint_every": o.checkpoint_every,
            "nosync": "Transaction::set_sync(false) (SQL: SET synchronous_commit = off)",
            "loads": "API: Database::bulk_insert (rows as an iterator); SQL: COPY t (k, v) FROM STDIN in text format, Session::copy_in per 65,536 rows, inside BEGIN ... COMMIT (text made inside the timed span)",
        },
        "sqlite": {
            "version": rusqlite::version(),
            "cache_size_bytes": budget_bytes(a),
            "pragmas": SQLITE_PRAGMAS,
            "configurations": SqliteConfig::ALL.iter().map(|c| json!({"name": c.name(), "pragmas": c.pragmas()})).collect::<Vec<_>>(),
            "statements": "prepare_cached, created once per connection",
            "loads": "INSERTs in one transaction: in key-generation order (default configuration only) and sorted by key first (sort timed, every configuration); the measured table is the last sorted load",
        },
        "rocksdb": {
            "version": rocksdb_version(),
            "options": "augur::store::Store::open with Augur's rows column-family options, except block cache = the whole budget (no row cache) and a 10 bits/key bloom filter",
            "block_cache_bytes": r.block_cache_bytes,
            "bloom_bits_per_key": r.bloom_bits_per_key,
            "key": "8-byte big-endian primary key in the rows column family",
            "loads": "one WriteBatch written with sync=true (generation order), and keys sorted (timed) into one SstFileWriter file ingested (augur::store::Store::ingest_rows); the measured table is the ingested one",
            "update_delete_insert": "get (existence, like SQL semantics) then put/delete with WriteOptions::set_sync(sync)",
        },
        "page_cache": "not dropped (no privilege in the container to write /proc/sys/vm/drop_caches); every cell loads its own data into a fresh directory, reads its whole table once, then measures: every system runs with its files in the OS page cache (warm), consistently",
        "process": "each (system, configuration, layer, distribution, size) runs in a fresh child process with a fresh database directory",
    })
}

/// Every load's µs per row (median of its runs) side by side: what sorting first does for
/// SQLite, what SST ingest does for raw RocksDB, and Augur's two bulk paths.
fn loads_table(w: &mut String, all: &CellOut) {
    const COLS: [(&str, &str, &str, &str); 6] = [
        ("augur", "api", "bulk_loader", "Augur bulk loader"),
        ("augur", "sql", "bulk_copy", "Augur SQL COPY"),
        (
            "sqlite",
            "api",
            "bulk_inserts",
            "SQLite INSERTs, generation order",
        ),
        (
            "sqlite",
            "api",
            "bulk_inserts_sorted",
            "SQLite INSERTs, sorted first (best configuration)",
        ),
        ("rocksdb", "api", "bulk_inserts", "RocksDB WriteBatch"),
        ("rocksdb", "api", "bulk_loader", "RocksDB SST ingest"),
    ];
    let mut cells: Vec<(usize, String)> = all
        .results
        .iter()
        .filter(|r| r.op.starts_with("bulk_"))
        .map(|r| (r.size, r.dist.clone()))
        .collect();
    cells.sort();
    cells.dedup();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(w, "Loads, µs per row (median of the runs; every load one durable transaction into a fresh directory):\n");
    let _ = write!(w, "| rows | dist |");
    for c in COLS {
        let _ = write!(w, " {} |", c.3);
    }
    let _ = writeln!(w, "\n|---:|---|---:|---:|---:|---:|---:|---:|");
    for (n, d) in cells {
        let _ = write!(w, "| {} | {d} |", fmt_count(n));
        for (sys, layer, op, _) in COLS {
            let best = all
                .results
                .iter()
                .filter(|r| r.system == sys && r.layer == layer && r.op == op && r.size == n && r.dist == d)
                .min_by(|a, b| a.mean_us.total_cmp(&b.mean_us));
            let _ = write!(
                w,
                " {} |",
                best.map(|r| format!(
                    "{}{}",
                    fmt_us(r.mean_us),
                    if r.runs == 1 { " (single run)" } else { "" }
                ))
                .unwrap_or_else(|| "–".into())
            );
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(w);
}

#[allow(clippy::too_many_arguments)]
fn markdown(
    ctx: &Context,
    m: &Machine,
    all: &CellOut,
    comps: &[Comparison],
    summary: &[(String, Vec<Verdict>)],
    why: &[String],
    targets: &[compare::TargetSet],
) -> String {
    let a = &ctx.args;
    let budget = budget_bytes(a);
    let o = augur_side::options(budget);
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "# honest_comparison: Augur vs SQLite vs raw RocksDB\n");
    if ctx.provenance.draft {
        let _ = writeln!(
            w,
            "> **DRAFT — not a report of record.** Run with `--draft`{}: figures may not match any commit.\n",
            if ctx.provenance.dirty_files.is_empty() {
                String::new()
            } else {
                format!(
                    " on a work tree with uncommitted changes ({})",
                    ctx.provenance.dirty_files.join(", ")
                )
            }
        );
    }
    let _ = writeln!(
        w,
        "Generated by `honest_comparison` (source `stress/honest_comparison/`, run by `scripts/bench`) from {}, started {}. Every number is also in `honest_comparison.json`; charts in `honest_comparison.svg`. Rules: `docs/BENCHMARKING.md`. Everything but the Notes section is written by the program from this run's measurements.\n",
        ctx.provenance.describe(),
        ctx.started_utc
    );
    let _ = writeln!(w, "Command: `{}`\n", ctx.argv);

    // ---------------------------------------------------------------- correctness
    let total: u64 = all.checks.iter().map(|c| c.expected).sum();
    let checked: u64 = all.checks.iter().map(|c| c.checked).sum();
    let ok: u64 = all.checks.iter().map(|c| c.correct).sum();
    let _ = writeln!(
        w,
        "**Correctness:** {ok} answers right of {checked} checked ({total} expected), over every cell; the run fails on any wrong answer. The checks made, per operation (right / checked / expected):\n"
    );
    for (op, what, e, c, r) in check_lines(&all.checks) {
        let _ = writeln!(w, "- `{op}`: {what} — {r} / {c} / {e}");
    }
    let _ = writeln!(w);

    // ---------------------------------------------------------------- summary
    let _ = writeln!(w, "## Summary\n");
    let _ = writeln!(w, "Ratios are speedups against SQLite's **fastest configuration** for each operation, size and distribution (the configuration named in the tables): SQLite's mean ÷ Augur's mean, and SQLite's p50 ÷ Augur's p50, so > 1 means Augur is faster. \"Faster\" below means faster by both; \"split\" means the mean and the p50 disagree.\n");
    let _ = writeln!(
        w,
        "### Memory beside the headline (end of each cell, API layer, budget {} MiB)\n",
        budget >> 20
    );
    let _ = writeln!(w, "| rows | dist | Augur charged MiB | over budget MiB | Augur RSS MiB (anon / file) | SQLite default charged MiB | SQLite RSS MiB (anon / file) | SQLite mmap RSS MiB (anon / file) |");
    let _ = writeln!(w, "|---:|---|---:|---:|---|---:|---|---|");
    let mut mcells: Vec<(usize, String)> = all.memory.iter().map(|mm| (mm.size, mm.dist.clone())).collect();
    mcells.sort();
    mcells.dedup();
    for (n, d) in &mcells {
        let find = |sys: &str, cfg: &str| {
            all.memory.iter().find(|mm| {
                mm.system == sys && mm.config == cfg && mm.layer == "api" && mm.size == *n && mm.dist == *d
            })
        };
        let rss = |mm: Option<&crate::Memory>| {
            mm.map(|mm| {
                format!(
                    "{} ({} / {})",
                    mib(mm.rss_end.total),
                    mib(mm.rss_end.anon),
                    mib(mm.rss_end.file)
                )
            })
            .unwrap_or_else(|| "–".into())
        };
        let au = find("augur", "default");
        let sq = find("sqlite", "default");
        let _ = writeln!(
            w,
            "| {} | {d} | {} | {} | {} | {} | {} | {} |",
            fmt_count(*n),
            au.map(|x| mib(x.accounting_end.charged_bytes))
                .unwrap_or_else(|| "–".into()),
            au.map(|x| mib(x.accounting_end.over_budget_bytes))
                .unwrap_or_else(|| "–".into()),
            rss(au),
            sq.map(|x| mib(x.accounting_end.charged_bytes))
                .unwrap_or_else(|| "–".into()),
            rss(sq),
            rss(find("sqlite", "mmap")),
        );
    }
    let _ = writeln!(w, "\nCharged = the parts rule 3 charges to the budget (Augur, as its engine charges them: its indexes, the direct read path's models, RocksDB's table readers, and the block cache and row cache by the bytes they hold; SQLite: its page cache; raw RocksDB: its block cache and table readers; mapped file pages are the OS page cache's and show as file-backed RSS); every part is listed under \"Memory and disk\". {}\n", augur_side::describe_options(&o));
    for (layer, lines) in summary {
        let _ = writeln!(
            w,
            "### Where Augur wins and where it loses: {} layer\n",
            if layer == "api" { "API" } else { "SQL" }
        );
        for v in lines {
            let _ = writeln!(w, "- {}", v.line);
            for x in &v.not_faster {
                let _ = writeln!(w, "  - {x}");
            }
        }
        let _ = writeln!(w);
    }
    for set in targets {
        let _ = writeln!(w, "### {}\n", set.title);
        for (holds, t) in &set.lines {
            let _ = writeln!(w, "- {} {t}", if *holds { "✅" } else { "❌" });
        }
        if set.title.starts_with("Issue 20") {
            if let Some(l) = latency_around(&ctx.cell_runs, compare::TEN_M, "random") {
                let _ = writeln!(
                    w,
                    "- Memory latency (1 GiB, before / after) around the cells these ratios compare: {l}."
                );
            }
        }
        let _ = writeln!(w);
    }

    // ---------------------------------------------------------------- why
    let _ = writeln!(w, "## Why: what this run measured about the mechanisms\n");
    for l in why {
        let _ = writeln!(w, "- {l}");
    }
    let _ = writeln!(w);
    loads_table(w, all);
    match &ctx.notes {
        Some(n) => {
            let _ = writeln!(
                w,
                "## Notes (hand-written, not generated; `{}`, {})\n",
                n.path, n.dated
            );
            let _ = writeln!(w, "{}\n", n.text.trim());
        }
        None => {
            let _ = writeln!(
                w,
                "## Notes\n\nNone (no notes file at `{}`).\n",
                a.notes.display()
            );
        }
    }

    // ---------------------------------------------------------------- machine
    let _ = writeln!(w, "## Machine, versions and settings\n");
    let _ = writeln!(w, "| | |\n|---|---|");
    let _ = writeln!(w, "| CPU | {} |", m.cpu_model);
    let _ = writeln!(w, "| cores | {} |", m.cores);
    let _ = writeln!(w, "| RAM | {:.1} GiB |", m.ram_bytes as f64 / (1u64 << 30) as f64);
    let _ = writeln!(w, "| kernel | Linux {} |", m.kernel);
    let _ = writeln!(w, "| disk | {} |", m.disk);
    let _ = writeln!(w, "{}", m.memory_row());
    let _ = writeln!(
        w,
        "| Augur | {} ({}, {} build) |",
        ctx.provenance.describe(),
        m.rustc,
        m.profile
    );
    let _ = writeln!(w, "| RocksDB | {} |", rocksdb_version());
    let _ = writeln!(w, "| SQLite | {} (rusqlite 0.41, bundled) |", rusqlite::version());
    for (label, l) in [("start", &ctx.load_start), ("end", &ctx.load_end)] {
        let _ = writeln!(
            w,
            "| other load at {label} | loadavg {}; {} |",
            l.0,
            if l.1.is_empty() {
                "no rustc/cargo/pgbench running".into()
            } else {
                l.1.clone()
            }
        );
    }
    let _ = writeln!(w, "| wall time | {:.0} s |", ctx.total_seconds);
    let _ = writeln!(w);
    let _ = writeln!(w, "| setting | value |\n|---|---|");
    let _ = writeln!(w, "| rows | 8-byte integer key + {}-byte value (incompressible bytes derived from key and generation; LZ4 gains nothing) |", a.value_size);
    let _ = writeln!(w, "| keys | seeded (seed {}): seq = 1,000,000 + 2i; random = splitmix64 of consecutive integers (uniform 64-bit); lognormal = exp(2·N(0,1))·1e12, distinct. Mapped order-preservingly to i64 (`k xor 2^63`) so all three systems order keys identically |", a.seed);
    let _ = writeln!(w, "| queries | hits drawn uniformly from the loaded keys, misses from keys never loaded (same range), a fresh seeded set per run (warm-up included); the same sets for every system |");
    let _ = writeln!(w, "| memory budget | {} MiB for every system. Augur: {}. SQLite: `cache_size` = {} MiB. Raw RocksDB: block cache {} MiB (it has no row cache) |", budget >> 20, augur_side::describe_options(&o), budget >> 20, rocks_options(a).block_cache_bytes >> 20);
    let _ = writeln!(w, "| Augur | `Options::default()` except the caches: sync_commits = {}, bloom {} bits/key, LZ4 = {}, memtable {} MiB, checkpoint every {} versions. nosync = `Transaction::set_sync(false)` (SQL: `SET synchronous_commit = off`). Each read is its own transaction (`begin` + `get_with`, or `scan_first` for the rows a range reads: the row lent in place, its value copied out, as rusqlite's `get_ref` on the SQLite side), each write its own commit |", o.sync_commits, o.store.bloom_bits_per_key, o.store.compression, o.store.write_buffer_bytes >> 20, o.checkpoint_every);
    let _ = writeln!(w, "| SQLite | {SQLITE_PRAGMAS}; every statement `prepare_cached` once per connection; autocommit per statement except the loads (one transaction). nosync = `synchronous=NORMAL` (in WAL mode: no fsync per commit, like Augur's nosync) |");
    for c in SqliteConfig::ALL {
        let _ = writeln!(w, "| SQLite configuration `{}` | {} |", c.name(), c.pragmas());
    }
    let _ = writeln!(w, "| loads | every load is one durable transaction into a fresh directory, repeated {} times up to {} rows (once above: single run); µs per row; one figure per load, so no percentiles. Augur API: `Database::bulk_insert` (its bulk loader: sorts, one ingested SST file). Augur SQL: `COPY t (k, v) FROM STDIN` (text format, `Session::copy_in` per 65,536 rows, in `BEGIN ... COMMIT`; the text is made inside the timed span). SQLite: INSERTs in key-generation order (default configuration) and sorted by key first (sort timed; every configuration); the table measured afterwards is the sorted load. Raw RocksDB: one WriteBatch with sync, and keys sorted (timed) into one SST file ingested (`Store::ingest_rows`); the table measured is the ingested one |", a.runs, fmt_count(a.bulk_repeat_max));
    let _ = writeln!(w, "| raw RocksDB | opened through `augur::store::Store` (Augur's DB and rows column-family options, but the whole budget as block cache and a 10 bits/key bloom filter, which it needs for absent keys while Augur's index answers those before RocksDB); key = 8-byte big-endian primary key; writes = `get` (existence check, the SQL semantics) then put/delete with `WriteOptions::set_sync` |");
    let _ = writeln!(w, "| SQL layer | Augur `Session::prepare` once; reads by `query_prepared_with`, which lends each row's values as rusqlite's `get_ref` lends SQLite's (`SELECT v FROM t WHERE k = $1`, `SELECT k, v FROM t WHERE k >= $1 ORDER BY k LIMIT $2`), writes by `execute_prepared` (`UPDATE`, `DELETE`, `INSERT`); compared with SQLite's rows (rusqlite is SQLite's SQL). Measured up to {} rows |", fmt_count(a.sql_max_size));
    let _ = writeln!(w, "| runs | one warm-up pass (not timed, answers still checked), then {} runs per operation ({} at ≥ {} rows); table = median of run means; spread = (max−min)/median of run means, none for a single run; p50/p95/p99 from an HDR histogram of every timed operation of all runs |", a.runs, a.large_runs, fmt_count(a.large_from));
    let _ = writeln!(w, "| timing | each operation timed alone (`Instant` around the call); checks and read-backs run right after, outside the timed span (a read-back touches the caches, on every side alike) |");
    if a.durable_only {
        let _ = writeln!(w, "| per run | writes: {} ops with fsync per commit (`--durable-only`: no point reads, scans or nosync writes) |", a.sync_ops);
    } else {
        let _ = writeln!(w, "| per run | {} point hits, {} misses, {} scans; writes: {} ops without fsync, {} with fsync per commit (fsync-bound, so fewer) |", a.lookups, a.lookups, a.scans, a.write_ops, a.sync_ops);
    }
    let _ = writeln!(w, "| reopen | after a clean close: open + one lookup, {} runs + warm-up; the first open after the load is the warm-up. Augur's phases of each open are read from `Database::stats()` (section \"Opens\") |", a.runs);
    let _ = writeln!(w, "| first second | API cells of Augur and SQLite: right after the last timed reopen returned, point reads of present keys for {} ms (seeded, the same keys on every side), each timed alone into a histogram (op `first_second`) and checked; they come before the full read of `warm`, which every cell makes next anyway, so they change no later measurement, and they meet the OS page cache as the load and the reopens left it (page faults shown in section \"Opens\") |", a.first_second_ms);
    if a.unclean_updates > 0 {
        let _ = writeln!(w, "| open after SIGKILL | Augur's API cell and SQLite's default cell, last in the cell (after the final check, the memory figures and every other measurement, so that it disturbs none): the cell closes its database; a second process (the same binary) opens it, commits min(rows, {}) single-row updates of keys never deleted (drawn with repeats, without fsync but the last, whose fsync carries them all: past the last checkpoint, which the clean close wrote; Augur checkpoints every {} versions) and is killed with SIGKILL by the cell, which then times the open + one lookup (op `reopen_sigkill`; SQLite: its WAL recovery), the first second's reads (op `first_second_sigkill`) and reads back every updated key (checked). A single run |", fmt_count(a.unclean_updates), o.checkpoint_every);
    }
    let _ = writeln!(w, "| caches before the reads | every cell is closed and reopened first (the Augur SQL cells too, untimed: only the API cell's reopen is a measurement), so each system's in-process cache starts empty; then every system reads its whole table once through its API (op `warm`, timed, row count checked): SQLite `SELECT count(*), sum(length(v)) FROM t`, raw RocksDB one iterator pass, Augur one `scan_with` of the table after waiting for its own warm-up after open (`Database::wait_for_prewarm`: every live file mapped and populated). |");
    let _ = writeln!(w, "| isolation | each (system, configuration, layer, distribution, size) in a fresh child process and a fresh directory under `{}` (same disk) |", a.data_dir.display());
    let _ = writeln!(w, "| durable writes | the cells of one distribution and size run as one group that takes turns: one cell works at a time; each cell's load, reads and nosync writes in one turn, then the durable writes (update, delete, insert, mix) of all the group's cells alternated, {} operations per turn (`--durable-block`), each cell on its own database drawing the same keys from the same seed, so that every system's durable phase spans the same minutes of the disk (which moves between a fast and a slow state here); before each durable phase every cell reads its whole table once more in its turn (untimed, the full read of `warm`), because its data has sat untouched since its own reads, longest for the cells that ran first, and on this VM memory untouched for a minute or more is slow to touch again |", a.durable_block);

    let _ = writeln!(w, "| OS page cache | not dropped (no privilege to write `/proc/sys/vm/drop_caches` here); every system's reads measured right after its own load and full read, so all run warm, consistently; the first second after the clean reopen alone comes before the full read (its row above) |");
    let _ = writeln!(w, "| left out | sizes ≥ {} only with {}; Augur SQL layer only up to {} rows; reopen only on the API layer (the first second: Augur's and SQLite's API cells; the open after SIGKILL: Augur's API cell and SQLite's default one) |", fmt_count(a.large_from), a.large_dists.join(","), fmt_count(a.sql_max_size));
    let _ = writeln!(w);

    // ---------------------------------------------------------------- memory
    let _ = writeln!(w, "## Memory and disk (measured)\n");
    let _ = writeln!(w, "RSS from `/proc/self/status` of the child process: total (VmRSS), anonymous (RssAnon: private memory) and file-backed (RssFile: mapped file pages, shared with the OS page cache). Parts are each system's own counters, charged to the budget or listed apart; Rust heap = bytes live in the Rust global allocator (a counting allocator) minus those before the database was created: it sees Augur's structures but not SQLite's or RocksDB's C/C++ allocations. Disk counts every inode once.\n");
    let _ = writeln!(w, "| system | config | layer | dist | rows | RSS before MiB | RSS after load MiB (anon/file) | RSS end MiB (anon/file) | Rust heap after load MiB | parts at the end | charged MiB | budget MiB | over MiB | disk after load MiB |");
    let _ = writeln!(
        w,
        "|---|---|---|---|---:|---:|---|---|---:|---|---:|---:|---:|---:|"
    );
    for mm in &all.memory {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} ({}/{}) | {} ({}/{}) | {:.0} | {} | {} | {} | {} | {} |",
            sys_label(&mm.system),
            mm.config,
            mm.layer,
            mm.dist,
            fmt_count(mm.size),
            mib(mm.rss_before.total),
            mib(mm.rss_after_load.total),
            mib(mm.rss_after_load.anon),
            mib(mm.rss_after_load.file),
            mib(mm.rss_end.total),
            mib(mm.rss_end.anon),
            mib(mm.rss_end.file),
            mm.rust_heap_after_load_bytes as f64 / (1u64 << 20) as f64,
            parts_text(&mm.parts_end),
            mib(mm.accounting_end.charged_bytes),
            mib(mm.accounting_end.budget_bytes),
            mib(mm.accounting_end.over_budget_bytes),
            mib(mm.disk_after_load_bytes)
        );
    }
    let _ = writeln!(w);
    for mm in all
        .memory
        .iter()
        .filter(|mm| mm.system == "augur" && mm.layer == "api")
    {
        let _ = writeln!(
            w,
            "- Augur {} {} after the load: {}",
            mm.dist,
            fmt_count(mm.size),
            budget::describe(
                &mm.parts_after_load,
                &budget::account(mm.accounting_end.budget_bytes, &mm.parts_after_load)
            )
        );
    }
    let _ = writeln!(w);

    crate::open_report::section(w, all, a.first_second_ms);

    // ---------------------------------------------------------------- tables
    for (layer, heading) in [
        ("api", "## API layer: Augur's Rust API vs rusqlite vs raw RocksDB"),
        ("sql", "## SQL layer: Augur's SQL (`Session`) vs SQLite's SQL"),
    ] {
        if !comps.iter().any(|c| c.layer == layer) {
            continue;
        }
        let _ = writeln!(w, "{heading}\n");
        let _ = writeln!(w, "Mean = median over runs of the run's mean latency (µs; loads: µs per row); p50/p99 from every timed operation. \"fastest\" = SQLite's configuration with the lowest mean (for ×p50: the lowest p50, which may be another configuration); \"default\" = SQLite's default configuration. ×: speedup of Augur (other ÷ Augur; > 1: Augur faster).{}\n", if layer == "sql" { " SQLite's figures are its API cells: rusqlite prepared statements are SQLite's SQL." } else { "" });
        for k in KINDS.iter().filter(|k| k.layer == layer) {
            let rows: Vec<&Comparison> = comps.iter().filter(|c| c.kind == k.id()).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(
                w,
                "### {} — {} — durability: {}\n",
                k.augur_op,
                k.title,
                if k.durability == "n/a" {
                    "n/a"
                } else {
                    k.durability
                }
            );
            let _ = writeln!(w, "| dist | rows | Augur mean | p50 | p99 | spread | SQLite fastest | mean | p50 | SQLite default mean | p50 | RocksDB best mean | p50 | ×SQLite fastest mean | ×p50 | ×default mean | ×p50 | ×RocksDB mean | ×p50 |");
            let _ = writeln!(w, "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for c in rows {
                let side = |s: &Option<Side>, f: &dyn Fn(&Side) -> String| {
                    s.as_ref().map(f).unwrap_or_else(|| "–".into())
                };
                let _ = writeln!(
                    w,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | **{}** | **{}** | {} | {} | {} | {} |",
                    c.dist,
                    fmt_count(c.size),
                    fmt_us(c.augur.mean_us),
                    opt_us(c.augur.p50_us),
                    opt_us(c.augur.p99_us),
                    fmt_spread(c.augur.spread_pct),
                    side(&c.sqlite_fastest_by_mean, &|s| s.label()),
                    side(&c.sqlite_fastest_by_mean, &|s| format!("{}{}", fmt_us(s.mean_us), if s.runs == 1 { " (single run)" } else { "" })),
                    side(&c.sqlite_fastest_by_p50, &|s| format!("{}{}", opt_us(s.p50_us), if s.config != c.sqlite_fastest_by_mean.as_ref().map(|x| x.config.clone()).unwrap_or_default() { format!(" ({})", s.config) } else { String::new() })),
                    side(&c.sqlite_default, &|s| fmt_us(s.mean_us)),
                    side(&c.sqlite_default, &|s| opt_us(s.p50_us)),
                    side(&c.rocksdb, &|s| if k.is_load() {
                        format!("{} ({})", fmt_us(s.mean_us), if s.op == "bulk_loader" { "SST ingest" } else { "WriteBatch" })
                    } else {
                        fmt_us(s.mean_us)
                    }),
                    side(&c.rocksdb, &|s| opt_us(s.p50_us)),
                    fmt_ratio(c.vs_sqlite.mean),
                    fmt_ratio(c.vs_sqlite.p50),
                    fmt_ratio(c.vs_sqlite_default.mean),
                    fmt_ratio(c.vs_sqlite_default.p50),
                    fmt_ratio(c.vs_rocksdb.mean),
                    fmt_ratio(c.vs_rocksdb.p50),
                );
            }
            let _ = writeln!(w);
        }
    }

    // ---------------------------------------------------------------- every SQLite configuration
    let configs: Vec<String> = SqliteConfig::ALL
        .iter()
        .map(|c| c.name().to_string())
        .filter(|c| all.results.iter().any(|r| r.system == "sqlite" && &r.config == c))
        .collect();
    if !configs.is_empty() {
        let _ = writeln!(w, "## SQLite, every configuration\n");
        let _ = writeln!(
            w,
            "Mean / p50 in µs (loads: µs per row, no p50). Spread and runs are in the JSON.\n"
        );
        let mut ops: Vec<(String, String)> = Vec::new();
        for r in all.results.iter().filter(|r| r.system == "sqlite") {
            let key = (r.op.clone(), r.durability.clone());
            if !ops.contains(&key) {
                ops.push(key);
            }
        }
        let _ = write!(w, "| op | durability | dist | rows |");
        for c in &configs {
            let _ = write!(w, " {c} |");
        }
        let _ = writeln!(w);
        let _ = write!(w, "|---|---|---|---:|");
        for _ in &configs {
            let _ = write!(w, "---|");
        }
        let _ = writeln!(w);
        let mut cells: Vec<(usize, String)> = all.results.iter().map(|r| (r.size, r.dist.clone())).collect();
        cells.sort();
        cells.dedup();
        for (op, dur) in &ops {
            for (n, d) in &cells {
                let get = |c: &str| {
                    all.results.iter().find(|r| {
                        r.system == "sqlite"
                            && r.config == *c
                            && &r.op == op
                            && &r.durability == dur
                            && r.size == *n
                            && &r.dist == d
                    })
                };
                if configs.iter().all(|c| get(c).is_none()) {
                    continue;
                }
                let _ = write!(w, "| {op} | {dur} | {d} | {} |", fmt_count(*n));
                for c in &configs {
                    let _ = write!(
                        w,
                        " {} |",
                        get(c)
                            .map(|r| format!("{} / {}", fmt_us(r.mean_us), opt_us(r.p50_us)))
                            .unwrap_or_else(|| "–".into())
                    );
                }
                let _ = writeln!(w);
            }
        }
        let _ = writeln!(w);
    }

    // ---------------------------------------------------------------- per cell
    let _ = writeln!(w, "## Correctness per cell\n");
    let _ = writeln!(
        w,
        "| system | config | layer | dist | rows | expected | checked | right |"
    );
    let _ = writeln!(w, "|---|---|---|---|---:|---:|---:|---:|");
    let mut seen: Vec<(String, String, String, String, usize)> = Vec::new();
    for c in &all.checks {
        let key = (
            c.system.clone(),
            c.config.clone(),
            c.layer.clone(),
            c.dist.clone(),
            c.size,
        );
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let (e, k, r) = all
            .checks
            .iter()
            .filter(|x| {
                x.system == key.0
                    && x.config == key.1
                    && x.layer == key.2
                    && x.dist == key.3
                    && x.size == key.4
            })
            .fold((0, 0, 0), |(e, k, r), x| {
                (e + x.expected, k + x.checked, r + x.correct)
            });
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {e} | {k} | {r} |",
            sys_label(&key.0),
            key.1,
            key.2,
            key.3,
            fmt_count(key.4)
        );
    }
    let _ = writeln!(w, "\n## Time per cell\n");
    let _ = writeln!(
        w,
        "Cells of {} rows and more measure the memory latency (one dependent load over 1 GiB, as in the machine table) just before and just after they run: a ratio between two cells is also a ratio between the memories they ran on.\n",
        fmt_count(crate::CELL_LATENCY_FROM)
    );
    let _ = writeln!(
        w,
        "| system | config | layer | dist | rows | seconds | memory latency before / after |\n|---|---|---|---|---:|---:|---:|"
    );
    for r in &ctx.cell_runs {
        let c = &r.cell;
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {:.1} | {} |",
            sys_label(&c.system),
            c.config,
            c.layer,
            c.dist,
            fmt_count(c.size),
            r.seconds,
            fmt_latency_pair(r.memory_ns)
        );
    }
    let _ = writeln!(
        w,
        "\n## Charts\n\n![latency and throughput vs size](honest_comparison.svg)\n"
    );
    s
}

/// "212 / 230 ns", or "not measured".
pub fn fmt_latency_pair(m: Option<(f64, f64)>) -> String {
    match m {
        Some((a, b)) => format!("{a:.0} / {b:.0} ns"),
        None => "not measured".into(),
    }
}

/// The memory latency around each cell of one size and distribution, as "Augur api 212 / 230
/// ns, ..."; None when none was measured.
fn latency_around(runs: &[CellRun], size: usize, dist: &str) -> Option<String> {
    let parts: Vec<String> = runs
        .iter()
        .filter(|r| r.cell.size == size && r.cell.dist == dist)
        .filter_map(|r| {
            let sys = if r.cell.system == "sqlite" {
                format!("SQLite {}", r.cell.config)
            } else {
                format!("{} {}", sys_label(&r.cell.system), r.cell.layer)
            };
            r.memory_ns
                .map(|m| format!("{sys} {}", fmt_latency_pair(Some(m))))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}
