//! The Markdown report, its JSON twin and the SVG charts of `honest_comparison`.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;
use serde_json::json;

use super::{augur_options, cache_budget, Args, Cell, CellOut, ResultRow};
use augur_bench::machine::Machine;

pub struct Context {
    pub args: Args,
    pub argv: String,
    pub fsync_us: f64,
    pub load_start: (String, String),
    pub load_end: (String, String),
    pub total_seconds: f64,
    pub cell_seconds: Vec<(Cell, f64)>,
    /// Detected when the run started (git hash of the tree the binary was built from, if
    /// nobody committed in between).
    pub machine: Machine,
    /// Modification time of the binary.
    pub built: String,
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
    super::median(&v)
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
    format!("{} ({rot}; virtual disk of a VM)", df.trim())
}

fn sys_label(s: &str) -> &str {
    match s {
        "augur" => "Augur",
        "sqlite" => "SQLite",
        "rocksdb" => "RocksDB",
        _ => s,
    }
}

pub fn fmt_n(n: usize) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}K", n / 1000)
    } else {
        n.to_string()
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

fn fmt_rate(x: f64) -> String {
    if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}K", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn mib(b: u64) -> String {
    format!("{:.0}", b as f64 / (1u64 << 20) as f64)
}

struct Idx<'a>(&'a [ResultRow]);

impl<'a> Idx<'a> {
    fn get(
        &self,
        sys: &str,
        layer: &str,
        dur: &str,
        op: &str,
        dist: &str,
        size: usize,
    ) -> Option<&'a ResultRow> {
        self.0.iter().find(|r| {
            r.system == sys
                && r.layer == layer
                && r.durability == dur
                && r.op == op
                && r.dist == dist
                && r.size == size
        })
    }
    /// SQLite's SQL is its API: the sql layer compares against sqlite/api rows.
    fn sqlite(&self, dur: &str, op: &str, dist: &str, size: usize) -> Option<&'a ResultRow> {
        self.get("sqlite", "api", dur, op, dist, size)
    }
}

const OPS: &[(&str, &str, &str)] = &[
    ("bulk_insert", "sync", "bulk insert, one transaction (µs per row)"),
    ("point_hit", "sync", "point lookup, present keys"),
    ("point_miss", "sync", "point lookup, absent keys"),
    ("range100", "sync", "range scan, 100 keys"),
    ("update", "nosync", "update, one commit per row"),
    ("update", "sync", "update, one commit per row"),
    ("delete", "nosync", "delete, one commit per row"),
    ("delete", "sync", "delete, one commit per row"),
    ("single_insert", "nosync", "insert, one commit per row"),
    ("single_insert", "sync", "insert, one commit per row"),
    ("mixed70_30", "nosync", "70% point reads / 30% updates"),
    ("mixed70_30", "sync", "70% point reads / 30% updates"),
    ("reopen", "sync", "close + open + first lookup"),
    (
        "warm",
        "sync",
        "cache warm-up before the reads (API cells: after the reopen): one full read of the table (Augur: after its row-cache prewarm)",
    ),
];

fn dur_label(op: &str, d: &str) -> &'static str {
    match (op, d) {
        ("point_hit" | "point_miss" | "range100", _) => "n/a (read)",
        ("reopen" | "warm", _) => "n/a",
        (_, "sync") => "sync",
        _ => "nosync",
    }
}

struct Verdict {
    text: String,
    holds: bool,
}

fn ratio(other: Option<&ResultRow>, augur: Option<&ResultRow>) -> Option<f64> {
    match (other, augur) {
        (Some(o), Some(a)) if a.mean_us > 0.0 => Some(o.mean_us / a.mean_us),
        _ => None,
    }
}

fn targets(ix: &Idx, sizes: &[usize], dists: &[String]) -> Vec<Verdict> {
    let mut out = Vec::new();
    let collect = |op: &str, dur: &str, layer: &str, only: &[usize], ds: &[&str]| {
        let mut v = Vec::new();
        for &n in sizes.iter().filter(|n| only.is_empty() || only.contains(n)) {
            for d in dists.iter().filter(|d| ds.is_empty() || ds.contains(&d.as_str())) {
                if let Some(r) = ratio(ix.sqlite(dur, op, d, n), ix.get("augur", layer, dur, op, d, n)) {
                    v.push((n, d.clone(), r));
                }
            }
        }
        v
    };
    let verdict = |name: &str, goal: f64, v: Vec<(usize, String, f64)>| {
        if v.is_empty() {
            return Verdict {
                text: format!("**{name}** (target ≥ {goal}x): not measured in this run."),
                holds: false,
            };
        }
        let fails: Vec<String> = v
            .iter()
            .filter(|x| x.2 < goal)
            .map(|(n, d, r)| format!("{} {d} {r:.2}x", fmt_n(*n)))
            .collect();
        let min = v.iter().map(|x| x.2).fold(f64::INFINITY, f64::min);
        let max = v.iter().map(|x| x.2).fold(0.0, f64::max);
        let all: Vec<String> = v
            .iter()
            .map(|(n, d, r)| format!("{} {d} {r:.2}x", fmt_n(*n)))
            .collect();
        Verdict {
            holds: fails.is_empty(),
            text: format!(
                "**{name}** (target ≥ {goal}x): {} — measured {min:.2}x to {max:.2}x ({}){}",
                if fails.is_empty() {
                    "HOLDS"
                } else {
                    "DOES NOT HOLD"
                },
                all.join(", "),
                if fails.is_empty() {
                    String::new()
                } else {
                    format!("; below target: {}", fails.join(", "))
                }
            ),
        }
    };
    out.push(verdict(
        "API point lookup, present keys, Augur vs SQLite, every size and distribution",
        5.0,
        collect("point_hit", "sync", "api", &[], &[]),
    ));
    out.push(verdict(
        "Durable bulk insert at 1M and 10M, seq and random",
        5.0,
        collect(
            "bulk_insert",
            "sync",
            "api",
            &[1_000_000, 10_000_000],
            &["seq", "random"],
        ),
    ));
    out.push(verdict(
        "Range scan of 100 keys (API)",
        2.0,
        collect("range100", "sync", "api", &[], &[]),
    ));
    out.push(verdict(
        "SQL point SELECT, Augur SQL vs SQLite SQL",
        3.0,
        collect("point_hit", "sync", "sql", &[], &[]),
    ));
    // Collapse: the point-lookup speedup at the largest size vs the smallest, per distribution.
    let mut txt = Vec::new();
    let mut holds = true;
    for d in dists {
        let v: Vec<(usize, f64)> = sizes
            .iter()
            .filter_map(|&n| {
                ratio(
                    ix.sqlite("sync", "point_hit", d, n),
                    ix.get("augur", "api", "sync", "point_hit", d, n),
                )
                .map(|r| (n, r))
            })
            .collect();
        if v.len() >= 2 {
            let first = v[0].1;
            let last = v[v.len() - 1].1;
            if last < first * 0.5 || last < 1.5 {
                holds = false;
            }
            txt.push(format!(
                "{d}: {}",
                v.iter()
                    .map(|(n, r)| format!("{} {r:.2}x", fmt_n(*n)))
                    .collect::<Vec<_>>()
                    .join(" → ")
            ));
        }
    }
    out.push(Verdict {
        text: format!(
            "**No collapse of the point-lookup speedup with size** (criterion used here: the largest size keeps ≥ half the smallest size's speedup and ≥ 1.5x): {} — {}",
            if holds { "HOLDS" } else { "DOES NOT HOLD" },
            txt.join("; ")
        ),
        holds,
    });
    out
}

pub fn write(dir: &Path, ctx: &Context, all: &CellOut) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut m = ctx.machine.clone();
    m.git_hash = format!(
        "{} at run start (binary built {}; HEAD at report time: {})",
        m.git_hash,
        ctx.built,
        Machine::detect().git_hash
    );
    m.disk = format!(
        "{}; measured write+fsync of 100 bytes: {:.0} µs (median of 50)",
        disk_description(&ctx.args.data_dir),
        ctx.fsync_us
    );
    let o = augur_options();
    let a = &ctx.args;
    let settings = json!({
        "command": ctx.argv,
        "sizes": a.sizes, "dists": a.dists, "large_from": a.large_from,
        "large_dists": a.large_dists, "large_runs": a.large_runs,
        "systems": a.systems, "layers": a.layers, "sql_max_size": a.sql_max_size,
        "value_size": a.value_size, "key_bytes": 8, "runs": a.runs,
        "lookups_per_run": a.lookups, "scans_per_run": a.scans,
        "write_ops_per_run_nosync": a.write_ops, "write_ops_per_run_sync": a.sync_ops,
        "bulk_repeat_max": a.bulk_repeat_max, "seed": a.seed,
        "data_dir": a.data_dir,
        "augur": {
            "options": "Options::default()",
            "sync_commits": o.sync_commits,
            "row_cache_bytes": o.row_cache_bytes,
            "block_cache_bytes": o.store.block_cache_bytes,
            "bloom_bits_per_key": o.store.bloom_bits_per_key,
            "compression_lz4": o.store.compression,
            "write_buffer_bytes": o.store.write_buffer_bytes,
            "checkpoint_every": o.checkpoint_every,
            "nosync": "Transaction::set_sync(false) (SQL: SET synchronous_commit = off)",
        },
        "sqlite": {
            "version": rusqlite::version(),
            "cache_size_bytes": cache_budget(),
            "pragmas": super::systems::SQLITE_PRAGMAS,
            "statements": "prepare_cached, created once per connection",
            "sql_layer_note": "SQLite's only interface is SQL: the sqlite/api rows (rusqlite prepared statements) are also what the Augur sql rows are compared with",
        },
        "rocksdb": {
            "version": rocksdb_version(),
            "options": "augur::store::Store::open with Augur's rows column-family options, except block cache = the whole memory budget (no row cache) and a 10 bits/key bloom filter",
            "block_cache_bytes": super::rocks_options().block_cache_bytes,
            "bloom_bits_per_key": super::rocks_options().bloom_bits_per_key,
            "key": "8-byte big-endian primary key in the rows column family",
            "bulk_insert": "one WriteBatch written with sync=true",
            "update_delete_insert": "get (existence, like SQL semantics) then put/delete with WriteOptions::set_sync(sync)",
        },
        "page_cache": "not dropped (no privilege in the container to write /proc/sys/vm/drop_caches); every cell loads its own data into a fresh directory and then measures, so every system runs with its files in the OS page cache (warm), consistently",
        "process": "each (system, layer, distribution, size) runs in a fresh child process with a fresh database directory",
        "other_load_at_start": {"loadavg": ctx.load_start.0, "processes": ctx.load_start.1},
        "other_load_at_end": {"loadavg": ctx.load_end.0, "processes": ctx.load_end.1},
        "total_seconds": ctx.total_seconds,
    });
    let doc = json!({
        "machine": {
            "cpu_model": m.cpu_model, "cores": m.cores, "ram_bytes": m.ram_bytes,
            "kernel": m.kernel, "disk": m.disk, "augur_git": m.git_hash, "rustc": m.rustc,
            "profile": m.profile, "rocksdb": rocksdb_version(), "sqlite": rusqlite::version(),
        },
        "settings": settings,
        "results": all.results,
        "checks": all.checks,
        "memory": all.memory,
    });
    std::fs::write(
        dir.join("honest_comparison.json"),
        serde_json::to_string_pretty(&doc)?,
    )?;
    std::fs::write(dir.join("honest_comparison.md"), markdown(ctx, &m, all))?;
    charts(&dir.join("honest_comparison.svg"), ctx, all).map_err(|e| anyhow::anyhow!("chart: {e}"))?;
    Ok(())
}

fn markdown(ctx: &Context, m: &Machine, all: &CellOut) -> String {
    let a = &ctx.args;
    let ix = Idx(&all.results);
    let o = augur_options();
    let mut sizes: Vec<usize> = all.results.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let dists: Vec<String> = a
        .dists
        .iter()
        .filter(|d| all.results.iter().any(|r| &r.dist == *d))
        .cloned()
        .collect();
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "# honest_comparison: Augur vs SQLite vs raw RocksDB\n");
    let _ = writeln!(
        w,
        "Generated by `scripts/bench` (source `src/bin/honest_comparison.rs`); every number is also in `honest_comparison.json`; charts in `honest_comparison.svg`. Rules: `../shared/BENCHMARKING.md`.\n"
    );
    let _ = writeln!(w, "Command: `{}`\n", ctx.argv);
    let total: u64 = all.checks.iter().map(|c| c.expected).sum();
    let ok: u64 = all.checks.iter().map(|c| c.correct).sum();
    let _ = writeln!(
        w,
        "**Correctness:** {ok}/{total} answers checked were right (every point lookup's value compared byte for byte, every absent key absent, every 100-key scan's keys and values compared, every update/delete/insert's result and read-back checked). The run fails on any wrong answer.\n"
    );

    // ---------------------------------------------------------------- summary
    let _ = writeln!(w, "## Summary\n");
    let _ = writeln!(w, "Ratios are speedups: SQLite (or RocksDB) mean latency ÷ Augur mean latency, so > 1 means Augur is faster. Reads do not depend on the durability mode.\n");
    let _ = writeln!(w, "### Issue 7 targets\n");
    for v in targets(&ix, &sizes, &dists) {
        let _ = writeln!(w, "- {} {}", if v.holds { "✅" } else { "❌" }, v.text);
    }
    let _ = writeln!(
        w,
        "\n### Where Augur wins and where it loses (API layer, vs SQLite)\n"
    );
    let mut wins = Vec::new();
    let mut losses = Vec::new();
    for &(op, dur, _) in OPS {
        let mut v = Vec::new();
        for &n in &sizes {
            for d in &dists {
                if let Some(r) = ratio(ix.sqlite(dur, op, d, n), ix.get("augur", "api", dur, op, d, n)) {
                    v.push(r);
                }
            }
        }
        if v.is_empty() {
            continue;
        }
        let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = v.iter().cloned().fold(0.0, f64::max);
        let line = format!("{op} ({}): {min:.2}x–{max:.2}x", dur_label(op, dur));
        if min >= 1.0 {
            wins.push(line);
        } else if max < 1.0 {
            losses.push(line);
        } else {
            losses.push(format!("{line} (mixed: wins at some sizes, loses at others)"));
        }
    }
    let _ = writeln!(
        w,
        "- **Augur faster everywhere measured:** {}",
        if wins.is_empty() {
            "nothing".into()
        } else {
            wins.join("; ")
        }
    );
    let _ = writeln!(
        w,
        "- **Augur slower somewhere:** {}\n",
        if losses.is_empty() {
            "nothing".into()
        } else {
            losses.join("; ")
        }
    );
    let _ = writeln!(w, "{}\n", include_str!("why.md").trim());

    // ---------------------------------------------------------------- machine
    let _ = writeln!(w, "## Machine, versions and settings\n");
    let _ = writeln!(w, "| | |\n|---|---|");
    let _ = writeln!(w, "| CPU | {} |", m.cpu_model);
    let _ = writeln!(w, "| cores | {} |", m.cores);
    let _ = writeln!(w, "| RAM | {:.1} GiB |", m.ram_bytes as f64 / (1u64 << 30) as f64);
    let _ = writeln!(w, "| kernel | Linux {} |", m.kernel);
    let _ = writeln!(w, "| disk | {} |", m.disk);
    let _ = writeln!(
        w,
        "| Augur | git {} ({}, {} build) |",
        m.git_hash, m.rustc, m.profile
    );
    let _ = writeln!(w, "| RocksDB | {} |", rocksdb_version());
    let _ = writeln!(w, "| SQLite | {} (rusqlite 0.41, bundled) |", rusqlite::version());
    let _ = writeln!(
        w,
        "| other load at start | loadavg {}; {} |",
        ctx.load_start.0,
        if ctx.load_start.1.is_empty() {
            "no rustc/cargo/pgbench running".into()
        } else {
            ctx.load_start.1.clone()
        }
    );
    let _ = writeln!(
        w,
        "| other load at end | loadavg {}; {} |",
        ctx.load_end.0,
        if ctx.load_end.1.is_empty() {
            "no rustc/cargo/pgbench running".into()
        } else {
            ctx.load_end.1.clone()
        }
    );
    let _ = writeln!(w, "| wall time | {:.0} s |", ctx.total_seconds);
    let _ = writeln!(w);
    let _ = writeln!(w, "| setting | value |\n|---|---|");
    let _ = writeln!(w, "| rows | 8-byte integer key + {}-byte value (incompressible bytes derived from key and generation; LZ4 gains nothing) |", a.value_size);
    let _ = writeln!(w, "| keys | seeded (seed {}): seq = 1,000,000 + 2i; random = splitmix64 of consecutive integers (uniform 64-bit); lognormal = exp(2·N(0,1))·1e12, distinct. Mapped order-preservingly to i64 (`k xor 2^63`) so all three systems order keys identically |", a.seed);
    let _ = writeln!(w, "| queries | hits drawn uniformly from the loaded keys, misses from keys never loaded (same range), a fresh seeded set per run; the same sets for every system |");
    let _ = writeln!(w, "| memory budget | {} MiB for every system: Augur row cache {} MiB + RocksDB block cache {} MiB; SQLite `cache_size` = {} MiB; raw RocksDB: block cache {} MiB (the whole budget: it has no row cache) |", cache_budget() >> 20, o.row_cache_bytes >> 20, o.store.block_cache_bytes >> 20, cache_budget() >> 20, super::rocks_options().block_cache_bytes >> 20);
    let _ = writeln!(w, "| Augur | `Options::default()` unchanged: sync_commits = {}, bloom {} bits/key, LZ4 = {}, memtable {} MiB, checkpoint every {} versions. nosync = `Transaction::set_sync(false)` (SQL: `SET synchronous_commit = off`). Each read is its own transaction (`begin` + `get_with`/`scan_with`: the row lent in place, its value copied out, as rusqlite's `get_ref` on the SQLite side), each write its own commit |", o.sync_commits, o.store.bloom_bits_per_key, o.store.compression, o.store.write_buffer_bytes >> 20, o.checkpoint_every);
    let _ = writeln!(w, "| SQLite | {}; every statement `prepare_cached` once per connection; autocommit per statement except the bulk load (one transaction). nosync = `synchronous=NORMAL` (in WAL mode: no fsync per commit, like Augur's nosync) |", super::systems::SQLITE_PRAGMAS);
    let _ = writeln!(w, "| raw RocksDB | opened through `augur::store::Store` (Augur's DB and rows column-family options, but the whole memory budget as block cache and a 10 bits/key bloom filter, which it needs for absent keys while Augur's index answers those before RocksDB); key = 8-byte big-endian primary key; bulk = one WriteBatch with sync; writes = `get` (existence check, the SQL semantics) then put/delete with `WriteOptions::set_sync` |");
    let _ = writeln!(w, "| SQL layer | Augur `Session::prepare` once + `execute_prepared` (`SELECT v FROM t WHERE k = $1`, `SELECT k, v FROM t WHERE k >= $1 ORDER BY k LIMIT $2`, `UPDATE`, `DELETE`, `INSERT`); compared with SQLite's rows (rusqlite is SQLite's SQL). Measured up to {} rows |", fmt_n(a.sql_max_size));
    let _ = writeln!(w, "| runs | one warm-up pass (not timed, answers still checked), then {} runs per operation ({} at ≥ {} rows: **single run** there); table = median of run means, spread = (max−min)/median of run means; p50/p95/p99 from an HDR histogram of every timed operation of all runs |", a.runs, a.large_runs, fmt_n(a.large_from));
    let _ = writeln!(w, "| timing | each operation timed alone (`Instant` around the call); the answer check runs right after, outside the timed span |");
    let _ = writeln!(w, "| per run | {} point hits, {} misses, {} scans; writes: {} ops without fsync, {} with fsync per commit (fsync-bound, so fewer) |", a.lookups, a.lookups, a.scans, a.write_ops, a.sync_ops);
    let _ = writeln!(w, "| bulk insert | all rows in one transaction, fsynced; repeated {} times into fresh directories up to {} rows, once above (single run); µs per row; no percentiles (one number per load) |", a.runs, fmt_n(a.bulk_repeat_max));
    let _ = writeln!(w, "| reopen | after a clean close: open + one lookup, {} runs + warm-up; the first open after load is the warm-up |", a.runs);
    let _ = writeln!(w, "| caches before the reads (API layer) | the reads run after the last reopen, so each system's in-process cache starts empty; then every system reads its whole table once through its API (op `warm`, timed, row count checked): SQLite `SELECT count(*), sum(length(v)) FROM t`, raw RocksDB one iterator pass, Augur one `scan_with` of the table after waiting for its row-cache prewarm (a background pass after open caching the newest row versions up to the row-cache budget; on by default, `Options::prewarm_row_cache`). Each cache keeps what its design keeps, and every system's files have been read once, so the OS page cache holds them alike. The Augur SQL cells are not reopened but get the same full read before their reads (they are compared with SQLite's API-cell figures). Query keys of every run (warm-up included) are independent draws |");
    let _ = writeln!(w, "| isolation | each (system, layer, distribution, size) in a fresh child process and a fresh directory under `{}` (same disk) |", a.data_dir.display());
    let _ = writeln!(w, "| OS page cache | not dropped (no privilege to write `/proc/sys/vm/drop_caches` here); every system measured right after its own load, so all run warm, consistently |");
    let _ = writeln!(w, "| left out | sizes ≥ {} only with {} and single runs; Augur SQL layer only up to {} rows; reopen only on the API layer |", fmt_n(a.large_from), a.large_dists.join(","), fmt_n(a.sql_max_size));
    let _ = writeln!(w);

    // ---------------------------------------------------------------- memory
    let _ = writeln!(w, "## Memory and disk (measured)\n");
    let _ = writeln!(w, "RSS from `/proc/self/status` (VmRSS) of the child process; Rust heap = bytes live in the Rust global allocator (a counting allocator) minus those before the database was created: it sees Augur's structures (ALEX, row cache, transaction buffers) but not SQLite's or RocksDB's C/C++ allocations, which are shown from their own counters. Baseline RSS (key arrays of the benchmark itself) is the 'before' column.\n");
    let _ = writeln!(w, "| system | layer | dist | rows | RSS before MiB | RSS after load MiB | RSS end MiB | Rust heap after load MiB | self-reported | disk after load MiB |");
    let _ = writeln!(w, "|---|---|---|---:|---:|---:|---:|---:|---|---:|");
    for mm in &all.memory {
        let sr: Vec<String> = mm
            .self_reported
            .iter()
            .map(|(n, v)| format!("{n}: {} MiB", mib(*v)))
            .collect();
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {:.0} | {} | {} |",
            sys_label(&mm.system),
            mm.layer,
            mm.dist,
            fmt_n(mm.size),
            mib(mm.rss_before_bytes),
            mib(mm.rss_after_load_bytes),
            mib(mm.rss_end_bytes),
            mm.rust_heap_after_load_bytes as f64 / (1u64 << 20) as f64,
            sr.join("; "),
            mib(mm.disk_after_load_bytes)
        );
    }
    let _ = writeln!(w);

    // ---------------------------------------------------------------- tables
    let _ = writeln!(w, "## API layer: Augur's Rust API vs rusqlite vs raw RocksDB\n");
    let _ = writeln!(w, "Mean = median over runs of the run's mean latency (µs); ops/s = 1e6 / mean (for bulk insert: rows/s). \"×SQLite\" = SQLite mean ÷ Augur mean; \"×RocksDB\" likewise. Spread = min–max of run means as % of the median.\n");
    for &(op, dur, title) in OPS {
        let have = all
            .results
            .iter()
            .any(|r| r.op == op && r.durability == dur && r.layer == "api");
        if !have {
            continue;
        }
        let _ = writeln!(w, "### {op} — {title} — durability: {}\n", dur_label(op, dur));
        let _ = writeln!(w, "| dist | rows | Augur mean µs | p50 | p95 | p99 | ops/s | spread | SQLite mean µs | p50 | p99 | ops/s | spread | RocksDB mean µs | p99 | ×SQLite | ×RocksDB | runs |");
        let _ = writeln!(
            w,
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for d in &dists {
            for &n in &sizes {
                let au = ix.get("augur", "api", dur, op, d, n);
                let sq = ix.sqlite(dur, op, d, n);
                let rk = ix.get("rocksdb", "api", dur, op, d, n);
                if au.is_none() && sq.is_none() && rk.is_none() {
                    continue;
                }
                let c = |r: Option<&ResultRow>, f: &dyn Fn(&ResultRow) -> String| {
                    r.map(f).unwrap_or_else(|| "–".into())
                };
                let p = |x: Option<f64>| x.map(fmt_us).unwrap_or_else(|| "–".into());
                let runs = au.or(sq).map(|r| r.runs).unwrap_or(0);
                let _ = writeln!(
                    w,
                    "| {d} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}{} |",
                    fmt_n(n),
                    c(au, &|r| fmt_us(r.mean_us)),
                    c(au, &|r| p(r.p50_us)),
                    c(au, &|r| p(r.p95_us)),
                    c(au, &|r| p(r.p99_us)),
                    c(au, &|r| fmt_rate(r.ops_per_sec)),
                    c(au, &|r| format!("{:.0}%", r.spread_pct)),
                    c(sq, &|r| fmt_us(r.mean_us)),
                    c(sq, &|r| p(r.p50_us)),
                    c(sq, &|r| p(r.p99_us)),
                    c(sq, &|r| fmt_rate(r.ops_per_sec)),
                    c(sq, &|r| format!("{:.0}%", r.spread_pct)),
                    c(rk, &|r| fmt_us(r.mean_us)),
                    c(rk, &|r| p(r.p99_us)),
                    ratio(sq, au).map(|x| format!("**{x:.2}**")).unwrap_or_else(|| "–".into()),
                    ratio(rk, au).map(|x| format!("{x:.2}")).unwrap_or_else(|| "–".into()),
                    runs,
                    if runs == 1 { " (single run)" } else { "" },
                );
            }
        }
        let _ = writeln!(w);
    }

    let _ = writeln!(
        w,
        "## SQL layer: Augur's SQL (`Session` prepared statements) vs SQLite's SQL\n"
    );
    let _ = writeln!(
        w,
        "SQLite columns repeat the rows above (rusqlite prepared statements are SQLite's SQL).\n"
    );
    let _ = writeln!(w, "| op | durability | dist | rows | Augur SQL mean µs | p50 | p99 | ops/s | SQLite mean µs | p99 | ×SQLite | Augur SQL ÷ Augur API cost | runs |");
    let _ = writeln!(
        w,
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for &(op, dur, _) in OPS {
        for d in &dists {
            for &n in &sizes {
                let Some(au) = ix.get("augur", "sql", dur, op, d, n) else {
                    continue;
                };
                let sq = ix.sqlite(dur, op, d, n);
                let api = ix.get("augur", "api", dur, op, d, n);
                let p = |x: Option<f64>| x.map(fmt_us).unwrap_or_else(|| "–".into());
                let _ = writeln!(
                    w,
                    "| {op} | {} | {d} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}{} |",
                    dur_label(op, dur),
                    fmt_n(n),
                    fmt_us(au.mean_us),
                    p(au.p50_us),
                    p(au.p99_us),
                    fmt_rate(au.ops_per_sec),
                    sq.map(|r| fmt_us(r.mean_us)).unwrap_or_else(|| "–".into()),
                    sq.map(|r| p(r.p99_us)).unwrap_or_else(|| "–".into()),
                    ratio(sq, Some(au))
                        .map(|x| format!("**{x:.2}**"))
                        .unwrap_or_else(|| "–".into()),
                    api.map(|r| format!("{:.2}x", au.mean_us / r.mean_us))
                        .unwrap_or_else(|| "–".into()),
                    au.runs,
                    if au.runs == 1 { " (single run)" } else { "" },
                );
            }
        }
    }
    let _ = writeln!(w);

    let _ = writeln!(w, "## Correctness per cell\n");
    let _ = writeln!(w, "| system | layer | dist | rows | checked (all ops) | right |");
    let _ = writeln!(w, "|---|---|---|---:|---:|---:|");
    let mut seen: Vec<(String, String, String, usize)> = Vec::new();
    for c in &all.checks {
        let key = (c.system.clone(), c.layer.clone(), c.dist.clone(), c.size);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key.clone());
        let (e, r) = all
            .checks
            .iter()
            .filter(|x| x.system == key.0 && x.layer == key.1 && x.dist == key.2 && x.size == key.3)
            .fold((0, 0), |(e, r), x| (e + x.expected, r + x.correct));
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {e} | {r} |",
            sys_label(&key.0),
            key.1,
            key.2,
            fmt_n(key.3)
        );
    }
    let _ = writeln!(w, "\n## Time per cell\n");
    let _ = writeln!(
        w,
        "| system | layer | dist | rows | seconds |\n|---|---|---|---:|---:|"
    );
    for (c, secs) in &ctx.cell_seconds {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {secs:.1} |",
            sys_label(&c.system),
            c.layer,
            c.dist,
            fmt_n(c.size)
        );
    }
    let _ = writeln!(
        w,
        "\n## Charts\n\n![latency and throughput vs size](honest_comparison.svg)\n"
    );
    s
}

type Panel<'a> = (&'a str, &'a str, &'a str, bool);

fn charts(path: &Path, ctx: &Context, all: &CellOut) -> Result<(), Box<dyn std::error::Error>> {
    let dist = if ctx.args.dists.iter().any(|d| d == "random") {
        "random"
    } else {
        ctx.args.dists[0].as_str()
    };
    let panels: [Panel; 6] = [
        ("point_hit", "sync", "point lookup (hits), mean µs", false),
        ("point_miss", "sync", "point lookup (misses), mean µs", false),
        ("range100", "sync", "range scan 100 keys, mean µs", false),
        ("bulk_insert", "sync", "bulk insert, rows/s (durable)", true),
        (
            "update",
            "nosync",
            "update, one commit each, ops/s (nosync)",
            true,
        ),
        ("update", "sync", "update, one commit each, ops/s (fsync)", true),
    ];
    let root = SVGBackend::new(path, (1200, 1050)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(
        &format!(
            "Augur vs SQLite vs raw RocksDB, API layer, {dist} keys (log-log; see honest_comparison.md)"
        ),
        ("sans-serif", 20),
    )?;
    let areas = body.split_evenly((3, 2));
    let series = [
        ("augur", "api", RED),
        ("sqlite", "api", BLUE),
        ("rocksdb", "api", GREEN),
        ("augur", "sql", MAGENTA),
    ];
    for (area, (op, dur, label, rate)) in areas.iter().zip(panels.iter()) {
        let pts = |sys: &str, layer: &str| -> Vec<(f64, f64)> {
            let mut v: Vec<(f64, f64)> = all
                .results
                .iter()
                .filter(|r| {
                    r.system == sys
                        && r.layer == layer
                        && r.op == *op
                        && r.durability == *dur
                        && r.dist == dist
                })
                .map(|r| (r.size as f64, if *rate { r.ops_per_sec } else { r.mean_us }))
                .filter(|p| p.1 > 0.0)
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        };
        let everything: Vec<(f64, f64)> = series.iter().flat_map(|(s, l, _)| pts(s, l)).collect();
        if everything.is_empty() {
            continue;
        }
        let xmin = everything.iter().map(|p| p.0).fold(f64::INFINITY, f64::min) / 1.5;
        let xmax = everything.iter().map(|p| p.0).fold(0.0, f64::max) * 1.5;
        let ymin = everything.iter().map(|p| p.1).fold(f64::INFINITY, f64::min) / 2.0;
        let ymax = everything.iter().map(|p| p.1).fold(0.0, f64::max) * 2.0;
        let mut ch = ChartBuilder::on(area)
            .caption(*label, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(60)
            .build_cartesian_2d((xmin..xmax).log_scale(), (ymin..ymax).log_scale())?;
        ch.configure_mesh().x_desc("rows").draw()?;
        for (sys, layer, color) in series {
            let p = pts(sys, layer);
            if p.is_empty() {
                continue;
            }
            let name = format!("{} {layer}", sys_label(sys));
            ch.draw_series(LineSeries::new(p.clone(), color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            ch.draw_series(p.iter().map(|&q| Circle::new(q, 3, color.filled())))?;
        }
        ch.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
