//! From measured rows to comparisons: Augur against SQLite's fastest configuration (by mean
//! and by p50), SQLite's default and raw RocksDB's best; the per-layer summary of wins and
//! losses (with the reasons of `facts`), and the issues' targets (7, 20, 23), each judged from
//! this run's comparisons.

use augur_bench::stats::{fmt_count, fmt_ratio, Ratio};
use serde::Serialize;

use crate::facts::Facts;
use crate::ResultRow;

/// One row of the comparison tables: which Augur op meets which ops of the others.
pub struct Kind {
    pub layer: &'static str,
    /// The name a reader sees.
    pub title: &'static str,
    pub augur_op: &'static str,
    pub durability: &'static str,
    /// SQLite ops competing (every configuration of each); the fastest is the headline.
    pub sqlite_ops: &'static [&'static str],
    /// The op of SQLite's default configuration shown as "default".
    pub sqlite_default_op: &'static str,
    pub rocks_ops: &'static [&'static str],
}

const BULK_SQLITE: &[&str] = &["bulk_inserts", "bulk_inserts_sorted"];

macro_rules! same {
    ($layer:expr, $op:expr, $dur:expr, $title:expr) => {
        Kind {
            layer: $layer,
            title: $title,
            augur_op: $op,
            durability: $dur,
            sqlite_ops: &[$op],
            sqlite_default_op: $op,
            rocks_ops: &[$op],
        }
    };
}

pub const KINDS: &[Kind] = &[
    Kind {
        layer: "api",
        title: "bulk loader vs INSERTs: one durable transaction, µs per row (Augur Database::bulk_insert; SQLite INSERTs, in generation order or sorted first; RocksDB WriteBatch or SST ingest)",
        augur_op: "bulk_loader",
        durability: "sync",
        sqlite_ops: BULK_SQLITE,
        sqlite_default_op: "bulk_inserts",
        rocks_ops: &["bulk_inserts", "bulk_loader"],
    },
    same!("api", "point_hit", "n/a", "point lookup, present keys"),
    same!("api", "point_miss", "n/a", "point lookup, absent keys"),
    same!("api", "range100", "n/a", "range scan, 100 keys"),
    same!("api", "update", "nosync", "update, one commit per row"),
    same!("api", "update", "sync", "update, one commit per row"),
    same!("api", "delete", "nosync", "delete, one commit per row"),
    same!("api", "delete", "sync", "delete, one commit per row"),
    same!("api", "single_insert", "nosync", "insert, one commit per row"),
    same!("api", "single_insert", "sync", "insert, one commit per row"),
    same!("api", "mixed70_30", "nosync", "70% point reads / 30% updates"),
    same!("api", "mixed70_30", "sync", "70% point reads / 30% updates"),
    same!("api", "reopen", "n/a", "close + open + first lookup"),
    same!(
        "api",
        "first_second",
        "n/a",
        "point lookups of present keys in the first second after the clean reopen returned"
    ),
    same!(
        "api",
        "reopen_sigkill",
        "n/a",
        "open + first lookup after SIGKILL, with up to 100,000 single-row updates committed after the last checkpoint (SQLite: its default configuration only)"
    ),
    same!(
        "api",
        "first_second_sigkill",
        "n/a",
        "point lookups of present keys in the first second after the open after SIGKILL"
    ),
    same!(
        "api",
        "warm",
        "n/a",
        "one full read of the table before the reads (Augur: after its own warm-up after open)"
    ),
    Kind {
        layer: "sql",
        title: "COPY vs INSERTs: the SQL layer's bulk path, one durable transaction, µs per row (Augur COPY FROM STDIN; SQLite INSERTs, in generation order or sorted first)",
        augur_op: "bulk_copy",
        durability: "sync",
        sqlite_ops: BULK_SQLITE,
        sqlite_default_op: "bulk_inserts",
        rocks_ops: &[],
    },
    same!("sql", "point_hit", "n/a", "point SELECT, present keys"),
    same!("sql", "point_miss", "n/a", "point SELECT, absent keys"),
    same!("sql", "range100", "n/a", "range SELECT, 100 keys"),
    same!("sql", "update", "nosync", "UPDATE, one commit per row"),
    same!("sql", "update", "sync", "UPDATE, one commit per row"),
    same!("sql", "delete", "nosync", "DELETE, one commit per row"),
    same!("sql", "delete", "sync", "DELETE, one commit per row"),
    same!("sql", "single_insert", "nosync", "INSERT, one commit per row"),
    same!("sql", "single_insert", "sync", "INSERT, one commit per row"),
    same!("sql", "mixed70_30", "nosync", "70% SELECT / 30% UPDATE"),
    same!("sql", "mixed70_30", "sync", "70% SELECT / 30% UPDATE"),
];

impl Kind {
    pub fn id(&self) -> String {
        if self.durability == "n/a" {
            format!("{}/{}", self.layer, self.augur_op)
        } else {
            format!("{}/{}/{}", self.layer, self.augur_op, self.durability)
        }
    }
    /// "update (nosync)", "point_hit".
    pub fn short(&self) -> String {
        if self.durability == "n/a" {
            self.augur_op.to_string()
        } else {
            format!("{} ({})", self.augur_op, self.durability)
        }
    }
    pub fn is_load(&self) -> bool {
        self.augur_op.starts_with("bulk_")
    }
}

/// One side of a comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Side {
    pub system: String,
    pub config: String,
    pub op: String,
    pub mean_us: f64,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub runs: usize,
    pub spread_pct: Option<f64>,
}

impl Side {
    fn of(r: &ResultRow) -> Side {
        Side {
            system: r.system.clone(),
            config: r.config.clone(),
            op: r.op.clone(),
            mean_us: r.mean_us,
            p50_us: r.p50_us,
            p99_us: r.p99_us,
            runs: r.runs,
            spread_pct: r.spread_pct,
        }
    }
    /// "mmap+exclusive" or "default, bulk_inserts_sorted".
    pub fn label(&self) -> String {
        if self.op.starts_with("bulk_") {
            format!("{}, {}", self.config, self.op)
        } else {
            self.config.clone()
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub kind: String,
    pub layer: String,
    pub title: String,
    pub durability: String,
    pub dist: String,
    pub size: usize,
    pub augur: Side,
    /// SQLite's configuration (and op) with the lowest mean; and with the lowest p50.
    pub sqlite_fastest_by_mean: Option<Side>,
    pub sqlite_fastest_by_p50: Option<Side>,
    pub sqlite_default: Option<Side>,
    /// Raw RocksDB's op with the lowest mean.
    pub rocksdb: Option<Side>,
    /// SQLite's fastest mean / Augur's mean, SQLite's fastest p50 / Augur's p50 (> 1: Augur
    /// faster).
    pub vs_sqlite: Ratio,
    pub vs_sqlite_default: Ratio,
    pub vs_rocksdb: Ratio,
}

fn find<'a>(
    rows: &'a [ResultRow],
    sys: &str,
    layer: &str,
    ops: &[&str],
    dur: &str,
    dist: &str,
    size: usize,
) -> Vec<&'a ResultRow> {
    rows.iter()
        .filter(|r| {
            r.system == sys
                && r.layer == layer
                && ops.contains(&r.op.as_str())
                && r.durability == dur
                && r.dist == dist
                && r.size == size
                && r.mean_us > 0.0
        })
        .collect()
}

pub fn comparisons(rows: &[ResultRow]) -> Vec<Comparison> {
    let mut cells: Vec<(String, usize)> = rows.iter().map(|r| (r.dist.clone(), r.size)).collect();
    cells.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    cells.dedup();
    let mut out = Vec::new();
    for k in KINDS {
        for (dist, size) in &cells {
            let Some(a) = find(rows, "augur", k.layer, &[k.augur_op], k.durability, dist, *size)
                .into_iter()
                .next()
            else {
                continue;
            };
            // SQLite's only interface is SQL: its rows are its api cells, for both layers.
            let sq = find(rows, "sqlite", "api", k.sqlite_ops, k.durability, dist, *size);
            let by_mean = sq
                .iter()
                .min_by(|x, y| x.mean_us.total_cmp(&y.mean_us))
                .map(|r| Side::of(r));
            let by_p50 = sq
                .iter()
                .filter(|r| r.p50_us.is_some())
                .min_by(|x, y| {
                    x.p50_us
                        .unwrap_or(f64::MAX)
                        .total_cmp(&y.p50_us.unwrap_or(f64::MAX))
                })
                .map(|r| Side::of(r));
            let default = sq
                .iter()
                .find(|r| r.config == "default" && r.op == k.sqlite_default_op)
                .map(|r| Side::of(r));
            let rocks = find(rows, "rocksdb", "api", k.rocks_ops, k.durability, dist, *size)
                .into_iter()
                .min_by(|x, y| x.mean_us.total_cmp(&y.mean_us))
                .map(Side::of);
            let ratio = |mean: Option<&Side>, p50: Option<&Side>| Ratio {
                mean: mean.and_then(|s| Ratio::of(s.mean_us, None, a.mean_us, None).mean),
                p50: p50.and_then(|s| Ratio::of(0.0, s.p50_us, 0.0, a.p50_us).p50),
            };
            out.push(Comparison {
                kind: k.id(),
                layer: k.layer.into(),
                title: k.title.into(),
                durability: k.durability.into(),
                dist: dist.clone(),
                size: *size,
                augur: Side::of(a),
                vs_sqlite: ratio(by_mean.as_ref(), by_p50.as_ref()),
                vs_sqlite_default: ratio(default.as_ref(), default.as_ref()),
                vs_rocksdb: ratio(rocks.as_ref(), rocks.as_ref()),
                sqlite_fastest_by_mean: by_mean,
                sqlite_fastest_by_p50: by_p50,
                sqlite_default: default,
                rocksdb: rocks,
            });
        }
    }
    out
}

/// One operation's verdict in the summary: the headline, then every cell where Augur is not
/// faster by both mean and p50, with the reason where the numbers show one.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub kind: String,
    pub line: String,
    pub not_faster: Vec<String>,
}

/// Per layer: where Augur wins and where it loses against SQLite's fastest configuration, by
/// mean and by p50.
pub fn summary(comps: &[Comparison], facts: &Facts) -> Vec<(String, Vec<Verdict>)> {
    let mut out = Vec::new();
    for layer in ["api", "sql"] {
        let mut lines = Vec::new();
        for k in KINDS.iter().filter(|k| k.layer == layer) {
            let cs: Vec<&Comparison> = comps
                .iter()
                .filter(|c| c.kind == k.id() && c.sqlite_fastest_by_mean.is_some())
                .collect();
            if cs.is_empty() {
                continue;
            }
            let win = |c: &Comparison| {
                c.vs_sqlite.mean.is_some_and(|m| m >= 1.0) && c.vs_sqlite.p50.is_none_or(|p| p >= 1.0)
            };
            let loss = |c: &Comparison| {
                c.vs_sqlite.mean.is_some_and(|m| m < 1.0) && c.vs_sqlite.p50.is_none_or(|p| p < 1.0)
            };
            let range = |v: Vec<f64>| -> String {
                let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if v.is_empty() {
                    "n/a".into()
                } else if fmt_ratio(Some(lo)) == fmt_ratio(Some(hi)) {
                    fmt_ratio(Some(lo))
                } else {
                    format!("{}–{}", fmt_ratio(Some(lo)), fmt_ratio(Some(hi)))
                }
            };
            let wins: Vec<&Comparison> = cs.iter().copied().filter(|c| win(c)).collect();
            let losses = cs.iter().filter(|c| loss(c)).count();
            let mut line = format!(
                "**{}**: Augur faster in {} of {} cells, slower in {}, split in {}",
                k.short(),
                wins.len(),
                cs.len(),
                losses,
                cs.len() - wins.len() - losses
            );
            if !wins.is_empty() {
                line.push_str(&format!(
                    "; where faster: {} by mean, {} by p50",
                    range(wins.iter().filter_map(|c| c.vs_sqlite.mean).collect()),
                    range(wins.iter().filter_map(|c| c.vs_sqlite.p50).collect())
                ));
            }
            let not_faster = cs
                .iter()
                .filter(|c| !win(c))
                .map(|c| {
                    let mut s = format!(
                        "{} at {} {} ({}{})",
                        if loss(c) {
                            "slower"
                        } else {
                            "split: mean and p50 disagree"
                        },
                        fmt_count(c.size),
                        c.dist,
                        c.vs_sqlite.describe(),
                        if c.augur.runs == 1 { ", single run" } else { "" }
                    );
                    if let Some(r) = facts.reason(k, c) {
                        s.push_str(&format!(": {r}"));
                    }
                    s
                })
                .collect();
            lines.push(Verdict {
                kind: k.id(),
                line,
                not_faster,
            });
        }
        if !lines.is_empty() {
            out.push((layer.to_string(), lines));
        }
    }
    out
}

/// One issue's targets as this run judged them: (holds, the line a reader sees).
pub struct TargetSet {
    pub title: &'static str,
    pub lines: Vec<(bool, String)>,
}

/// The issues' targets, each judged from this run (a target whose cells were not measured
/// does not hold, and says so).
pub fn targets(comps: &[Comparison]) -> Vec<TargetSet> {
    vec![
        TargetSet {
            title: "Issue 7 targets",
            lines: issue7(comps),
        },
        TargetSet {
            title: "Issue 20 targets (10M random keys: reads past the cache)",
            lines: issue20(comps),
        },
        TargetSet {
            title: "Issue 23 targets (10M rows: open and durable commits)",
            lines: issue23(comps),
        },
    ]
}

fn one<'a>(comps: &'a [Comparison], kind: &str, size: usize, dist: &str) -> Option<&'a Comparison> {
    comps
        .iter()
        .find(|c| c.kind == kind && c.size == size && c.dist == dist)
}

fn not_measured(name: &str) -> (bool, String) {
    (false, format!("**{name}**: not measured in this run."))
}

fn verdict_line(name: &str, holds: bool, detail: String) -> (bool, String) {
    (
        holds,
        format!(
            "**{name}**: {} — {detail}",
            if holds { "HOLDS" } else { "DOES NOT HOLD" }
        ),
    )
}

/// Issue 20's cell: 10M random keys.
pub const TEN_M: usize = 10_000_000;

/// A ratio target at 10M random keys: Augur's speed over SQLite's (`by`: "fastest" or
/// "default") by mean, p50 shown.
fn ratio_at(comps: &[Comparison], name: &str, kind: &str, by: &str, goal: f64) -> (bool, String) {
    let Some(c) = one(comps, kind, TEN_M, "random") else {
        return not_measured(name);
    };
    let r = if by == "default" {
        &c.vs_sqlite_default
    } else {
        &c.vs_sqlite
    };
    let Some(mean) = r.mean else {
        return not_measured(name);
    };
    let against = match (by, &c.sqlite_fastest_by_mean, &c.sqlite_default) {
        ("default", _, Some(d)) => format!("SQLite default {:.3} µs", d.mean_us),
        (_, Some(f), _) => format!("SQLite fastest ({}) {:.3} µs", f.label(), f.mean_us),
        _ => "SQLite".to_string(),
    };
    verdict_line(
        name,
        mean >= goal,
        format!(
            "{} by mean (p50 {}), Augur {:.3} µs, {against}",
            fmt_ratio(Some(mean)),
            fmt_ratio(r.p50),
            c.augur.mean_us
        ),
    )
}

fn issue20(comps: &[Comparison]) -> Vec<(bool, String)> {
    let mut out = vec![
        ratio_at(
            comps,
            "API point lookup ≥ 5x SQLite's default configuration",
            "api/point_hit",
            "default",
            5.0,
        ),
        ratio_at(
            comps,
            "API point lookup ≥ 3x SQLite's fastest configuration",
            "api/point_hit",
            "fastest",
            3.0,
        ),
    ];
    let name = "No collapse: the 10M point-lookup ratio ≥ half of 1M's";
    out.push(
        match (
            one(comps, "api/point_hit", TEN_M, "random").and_then(|c| c.vs_sqlite.mean),
            one(comps, "api/point_hit", 1_000_000, "random").and_then(|c| c.vs_sqlite.mean),
        ) {
            (Some(big), Some(small)) => verdict_line(
                name,
                big >= small / 2.0,
                format!("10M {}, 1M {}", fmt_ratio(Some(big)), fmt_ratio(Some(small))),
            ),
            _ => not_measured(name),
        },
    );
    out.push(ratio_at(
        comps,
        "Range scan of 100 keys (API) ≥ 2x SQLite's fastest",
        "api/range100",
        "fastest",
        2.0,
    ));
    out.push(ratio_at(
        comps,
        "SQL point SELECT ≥ 3x SQLite's SQL (fastest configuration)",
        "sql/point_hit",
        "fastest",
        3.0,
    ));
    let name = "p99 of point reads (API) not above SQLite's lowest p99";
    out.push(match one(comps, "api/point_hit", TEN_M, "random") {
        Some(c) => {
            let sqlite = [
                &c.sqlite_fastest_by_mean,
                &c.sqlite_fastest_by_p50,
                &c.sqlite_default,
            ]
            .into_iter()
            .flatten()
            .filter_map(|s| s.p99_us.map(|p| (p, s.label())))
            .min_by(|a, b| a.0.total_cmp(&b.0));
            match (c.augur.p99_us, sqlite) {
                (Some(a), Some((s, label))) => verdict_line(
                    name,
                    a <= s,
                    format!("Augur p99 {a:.3} µs, SQLite {s:.3} µs ({label})"),
                ),
                _ => not_measured(name),
            }
        }
        None => not_measured(name),
    });
    out
}

fn issue23(comps: &[Comparison]) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let name = "Open of a 10M-row table after a clean close ≤ 50 ms (close + open + first lookup)";
    let reopens: Vec<&Comparison> = comps
        .iter()
        .filter(|c| c.kind == "api/reopen" && c.size == TEN_M)
        .collect();
    out.push(if reopens.is_empty() {
        not_measured(name)
    } else {
        let worst = reopens.iter().map(|c| c.augur.mean_us).fold(0.0, f64::max);
        verdict_line(
            name,
            worst <= 50_000.0,
            reopens
                .iter()
                .map(|c| format!("{} {:.1} ms", c.dist, c.augur.mean_us / 1000.0))
                .collect::<Vec<_>>()
                .join(", "),
        )
    });
    let name =
        "Open of a 10M-row table after SIGKILL with 100K versions to replay ≤ 300 ms (open + first lookup)";
    let unclean: Vec<&Comparison> = comps
        .iter()
        .filter(|c| c.kind == "api/reopen_sigkill" && c.size == TEN_M)
        .collect();
    out.push(if unclean.is_empty() {
        not_measured(name)
    } else {
        let worst = unclean.iter().map(|c| c.augur.mean_us).fold(0.0, f64::max);
        verdict_line(
            name,
            worst <= 300_000.0,
            unclean
                .iter()
                .map(|c| format!("{} {:.1} ms", c.dist, c.augur.mean_us / 1000.0))
                .collect::<Vec<_>>()
                .join(", "),
        )
    });
    for (op, after) in [
        ("first_second", "the clean reopen"),
        ("first_second_sigkill", "the open after SIGKILL"),
    ] {
        out.push(first_second_target(comps, op, after));
    }
    for (op, what) in [
        ("update", "update"),
        ("delete", "delete"),
        ("single_insert", "insert"),
    ] {
        let kind = format!("api/{op}/sync");
        let name = format!("Durable single-row {what} ≥ SQLite's fastest by mean and by p50");
        let cells: Vec<&Comparison> = comps
            .iter()
            .filter(|c| c.kind == kind && c.size == TEN_M)
            .collect();
        if cells.is_empty() {
            out.push(not_measured(&name));
            continue;
        }
        let holds = cells
            .iter()
            .all(|c| c.vs_sqlite.mean.is_some_and(|x| x >= 1.0) && c.vs_sqlite.p50.is_some_and(|x| x >= 1.0));
        out.push(verdict_line(
            &name,
            holds,
            cells
                .iter()
                .map(|c| {
                    format!(
                        "{} {} (p50 {})",
                        c.dist,
                        fmt_ratio(c.vs_sqlite.mean),
                        fmt_ratio(c.vs_sqlite.p50)
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
        ));
    }
    out
}

/// Point reads in the first second after an open (`op`) within 2x of the same cell's warm
/// point reads at 10M rows, by mean and by p50 (p99 shown), in every distribution measured.
fn first_second_target(comps: &[Comparison], op: &str, after: &str) -> (bool, String) {
    let name = format!("Point reads in the first second after {after} within 2x of the warm figure, by mean and by p50 (10M rows)");
    let pairs: Vec<(&Comparison, &Comparison)> = comps
        .iter()
        .filter(|c| c.kind == format!("api/{op}") && c.size == TEN_M)
        .filter_map(|c| one(comps, "api/point_hit", TEN_M, &c.dist).map(|w| (c, w)))
        .collect();
    if pairs.is_empty() {
        return not_measured(&name);
    }
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let mut holds = true;
    let detail = pairs
        .iter()
        .map(|(f, w)| {
            let mean = ratio(Some(f.augur.mean_us), Some(w.augur.mean_us));
            let p50 = ratio(f.augur.p50_us, w.augur.p50_us);
            let p99 = ratio(f.augur.p99_us, w.augur.p99_us);
            holds &= mean.is_some_and(|x| x <= 2.0) && p50.is_some_and(|x| x <= 2.0);
            let x = |r: Option<f64>| r.map_or("n/a".to_string(), |r| format!("{r:.2}x"));
            format!(
                "{} {} of warm by mean ({:.3} µs vs {:.3} µs), p50 {}, p99 {}",
                f.dist,
                x(mean),
                f.augur.mean_us,
                w.augur.mean_us,
                x(p50),
                x(p99)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    verdict_line(&name, holds, detail)
}

/// Issue 7's targets, measured against SQLite's fastest configuration (by mean; p50 shown).
fn issue7(comps: &[Comparison]) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut verdict =
        |name: &str, goal: f64, kind: &str, sizes: &[usize], dists: &[&str]| {
            let v: Vec<&Comparison> = comps
                .iter()
                .filter(|c| c.kind == kind)
                .filter(|c| sizes.is_empty() || sizes.contains(&c.size))
                .filter(|c| dists.is_empty() || dists.contains(&c.dist.as_str()))
                .filter(|c| c.vs_sqlite.mean.is_some())
                .collect();
            if v.is_empty() {
                out.push((
                    false,
                    format!("**{name}** (target ≥ {goal}x): not measured in this run."),
                ));
                return;
            }
            let fails: Vec<String> = v
                .iter()
                .filter(|c| c.vs_sqlite.mean.unwrap_or(0.0) < goal)
                .map(|c| format!("{} {} {}", fmt_count(c.size), c.dist, fmt_ratio(c.vs_sqlite.mean)))
                .collect();
            let all: Vec<String> = v
                .iter()
                .map(|c| {
                    format!(
                        "{} {} {} (p50 {})",
                        fmt_count(c.size),
                        c.dist,
                        fmt_ratio(c.vs_sqlite.mean),
                        fmt_ratio(c.vs_sqlite.p50)
                    )
                })
                .collect();
            out.push((
                fails.is_empty(),
                format!(
                "**{name}** (target ≥ {goal}x by mean, against SQLite's fastest configuration): {} — {}{}",
                if fails.is_empty() { "HOLDS" } else { "DOES NOT HOLD" },
                all.join(", "),
                if fails.is_empty() {
                    String::new()
                } else {
                    format!("; below target: {}", fails.join(", "))
                }
            ),
            ));
        };
    verdict(
        "API point lookup, present keys, every size and distribution",
        5.0,
        "api/point_hit",
        &[],
        &[],
    );
    verdict(
        "Durable bulk load at 1M and 10M, seq and random (Augur's bulk loader vs SQLite's fastest INSERTs)",
        5.0,
        "api/bulk_loader/sync",
        &[1_000_000, 10_000_000],
        &["seq", "random"],
    );
    verdict("Range scan of 100 keys (API)", 2.0, "api/range100", &[], &[]);
    verdict(
        "SQL point SELECT, Augur SQL vs SQLite SQL",
        3.0,
        "sql/point_hit",
        &[],
        &[],
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(system: &str, config: &str, mean: f64, p99: f64) -> Side {
        Side {
            system: system.into(),
            config: config.into(),
            op: "point_hit".into(),
            mean_us: mean,
            p50_us: Some(mean),
            p99_us: Some(p99),
            runs: 3,
            spread_pct: None,
        }
    }

    /// A comparison of Augur's `augur` µs against SQLite's fastest `fast` and default `def`.
    fn comp(kind: &str, size: usize, augur: f64, fast: f64, def: f64) -> Comparison {
        let r = |o: f64| Ratio::of(o, Some(o), augur, Some(augur));
        Comparison {
            kind: kind.into(),
            layer: kind.split('/').next().unwrap().into(),
            title: String::new(),
            durability: "n/a".into(),
            dist: "random".into(),
            size,
            augur: side("augur", "default", augur, augur * 2.0),
            sqlite_fastest_by_mean: Some(side("sqlite", "mmap", fast, fast * 3.0)),
            sqlite_fastest_by_p50: Some(side("sqlite", "mmap", fast, fast * 3.0)),
            sqlite_default: Some(side("sqlite", "default", def, def * 3.0)),
            rocksdb: None,
            vs_sqlite: r(fast),
            vs_sqlite_default: r(def),
            vs_rocksdb: Ratio {
                mean: None,
                p50: None,
            },
        }
    }

    fn set<'a>(sets: &'a [TargetSet], title: &str) -> &'a [(bool, String)] {
        &sets.iter().find(|s| s.title.starts_with(title)).unwrap().lines
    }

    #[test]
    fn issue_20_targets_are_judged_at_10m_random() {
        let comps = vec![
            comp("api/point_hit", 1_000_000, 1.0, 5.0, 6.0),
            comp("api/point_hit", 10_000_000, 1.0, 3.5, 4.0),
            comp("api/range100", 10_000_000, 10.0, 21.0, 30.0),
            comp("sql/point_hit", 10_000_000, 1.3, 3.5, 4.0),
        ];
        let sets = targets(&comps);
        let l = set(&sets, "Issue 20");
        // 4.0x default < 5x; 3.5x fastest >= 3x; 3.5 >= 5.0 / 2; 2.1x >= 2x; 3.5 / 1.3 < 3x;
        // Augur p99 2.0 <= SQLite's 10.5.
        let holds: Vec<bool> = l.iter().map(|(h, _)| *h).collect();
        assert_eq!(holds, [false, true, true, true, false, true], "{l:#?}");
        assert!(l[4].1.contains("2.69x by mean"), "{}", l[4].1);
        let l23 = set(&sets, "Issue 23");
        assert!(
            l23.iter().all(|(h, t)| !h && t.contains("not measured")),
            "{l23:#?}"
        );
    }

    #[test]
    fn durable_commit_targets_need_mean_and_p50() {
        let mut slow_p50 = comp("api/update/sync", 10_000_000, 100.0, 120.0, 130.0);
        slow_p50.vs_sqlite.p50 = Some(0.9);
        let comps = vec![
            slow_p50,
            comp("api/delete/sync", 10_000_000, 100.0, 120.0, 130.0),
            comp("api/reopen", 10_000_000, 40_000.0, 1_000.0, 1_000.0),
        ];
        let sets = targets(&comps);
        let holds: Vec<bool> = set(&sets, "Issue 23").iter().map(|(h, _)| *h).collect();
        // reopen 40 ms <= 50; SIGKILL open and first seconds not measured; update's p50 below
        // SQLite's; delete holds; insert not measured.
        assert_eq!(holds, [true, false, false, false, false, true, false]);
    }

    #[test]
    fn open_targets_are_judged_against_300_ms_and_the_warm_reads() {
        let mut cold_p50 = comp("api/first_second_sigkill", TEN_M, 1.5, 2.0, 2.0);
        cold_p50.augur.p50_us = Some(2.5);
        let comps = vec![
            comp("api/point_hit", TEN_M, 1.0, 2.0, 2.0),
            comp("api/reopen", TEN_M, 60_000.0, 1_000.0, 1_000.0),
            comp("api/reopen_sigkill", TEN_M, 250_000.0, 5_000.0, 5_000.0),
            comp("api/first_second", TEN_M, 1.9, 2.0, 2.0),
            cold_p50,
        ];
        let sets = targets(&comps);
        let l = set(&sets, "Issue 23");
        let holds: Vec<bool> = l.iter().map(|(h, _)| *h).collect();
        // clean 60 ms > 50; SIGKILL 250 ms <= 300; first second 1.9x by mean and p50; after
        // SIGKILL 1.5x by mean but 2.5x by p50.
        assert_eq!(&holds[..4], [false, true, true, false], "{l:#?}");
        assert!(l[2].1.contains("1.90x of warm by mean"), "{}", l[2].1);
        assert!(l[3].1.contains("p50 2.50x"), "{}", l[3].1);
    }
}
