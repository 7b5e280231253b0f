//! From measured rows to comparisons: Augur against SQLite's fastest configuration (by mean
//! and by p50), SQLite's default and raw RocksDB's best; the per-layer summary of wins and
//! losses (with the reasons of `facts`), and issue 7's targets.

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

/// Issue 7's targets, measured against SQLite's fastest configuration (by mean; p50 shown).
pub fn targets(comps: &[Comparison]) -> Vec<(bool, String)> {
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
