//! The facts a report states about the mechanisms, each computed from this run's measured rows,
//! counters and memory parts: the reason a comparison comes out as it does, and the "why"
//! section.

use augur_bench::stats::{fmt_count, median};

use crate::compare::{Comparison, Kind, KINDS};
use crate::{CellOut, Memory, ResultRow};

/// The numbers the reasons and the "why" section are stated from.
pub struct Facts<'a> {
    pub all: &'a CellOut,
    pub fsync_us: f64,
    pub value_size: usize,
    pub budget_bytes: u64,
}

fn mib(b: f64) -> String {
    format!("{:.0} MiB", b / (1u64 << 20) as f64)
}

impl Facts<'_> {
    fn obs(&self, sys: &str, layer: &str, dist: &str, size: usize, phase: &str, name: &str) -> Option<f64> {
        self.all
            .observations
            .iter()
            .find(|o| {
                o.system == sys
                    && o.layer == layer
                    && o.dist == dist
                    && o.size == size
                    && o.phase == phase
                    && o.name == name
                    && (sys != "sqlite" || o.config == "default")
            })
            .map(|o| o.value)
    }

    fn memory(&self, sys: &str, config: &str, layer: &str, dist: &str, size: usize) -> Option<&Memory> {
        self.all.memory.iter().find(|m| {
            m.system == sys && m.config == config && m.layer == layer && m.dist == dist && m.size == size
        })
    }

    fn row(
        &self,
        sys: &str,
        layer: &str,
        op: &str,
        dur: &str,
        dist: &str,
        size: usize,
    ) -> Option<&ResultRow> {
        self.all.results.iter().find(|r| {
            r.system == sys
                && r.layer == layer
                && r.op == op
                && r.durability == dur
                && r.dist == dist
                && r.size == size
                && (sys != "sqlite" || r.config == "default")
        })
    }

    /// Rows × (8-byte key + value): what every system stores, before its own overheads.
    pub fn table_bytes(&self, size: usize) -> f64 {
        size as f64 * (8 + self.value_size) as f64
    }

    /// Where Augur's row reads came from during a phase, from its counters: (rows read, share
    /// read in place from mapped files, share from the row cache, share through RocksDB). The
    /// engine tries a mapped file first, then the row cache, then RocksDB.
    fn sources(&self, layer: &str, dist: &str, size: usize, phase: &str) -> Option<(f64, f64, f64, f64)> {
        let get = |name: &str| self.obs("augur", layer, dist, size, phase, name);
        let (direct, cached, store) = (get("direct_reads")?, get("row_cache_hits")?, get("store_reads")?);
        let total = direct + cached + store;
        Some(if total > 0.0 {
            (total, direct / total, cached / total, store / total)
        } else {
            (0.0, 0.0, 0.0, 0.0)
        })
    }

    /// Why a comparison comes out as it does, where the measured numbers say so.
    pub fn reason(&self, k: &Kind, c: &Comparison) -> Option<String> {
        let (d, n) = (c.dist.as_str(), c.size);
        let mut why = Vec::new();
        if k.layer == "sql" && !k.is_load() {
            if let (Some(s), Some(a)) = (
                self.row("augur", "sql", k.augur_op, k.durability, d, n),
                self.row("augur", "api", k.augur_op, k.durability, d, n),
            ) {
                if a.mean_us > 0.0 && s.mean_us / a.mean_us >= 1.2 {
                    why.push(format!(
                        "Augur's SQL layer costs {:.2}x its API for this op here (mean)",
                        s.mean_us / a.mean_us
                    ));
                }
            }
        }
        match k.augur_op {
            "point_hit" | "range100" | "mixed70_30" => {
                let phase = phase_name(k.augur_op, k.durability);
                if let Some((total, direct, cached, store)) = self.sources(k.layer, d, n, &phase) {
                    if total > 0.0 {
                        why.push(format!(
                            "Augur's rows came {:.0}% in place from mapped files, {:.0}% from its row cache, {:.0}% through RocksDB (Stats counters); the rows are {} against a {} budget",
                            direct * 100.0,
                            cached * 100.0,
                            store * 100.0,
                            mib(self.table_bytes(n)),
                            mib(self.budget_bytes as f64)
                        ));
                    }
                }
            }
            "reopen" => {
                let at = |sys: &str, s: usize| self.row(sys, "api", "reopen", "n/a", d, s).map(|r| r.mean_us);
                let sizes = self.sizes_of("augur", "api", "reopen", d);
                if let (Some(&lo), Some(&hi)) = (sizes.first(), sizes.last()) {
                    if let (Some(a0), Some(a1), Some(s0), Some(s1)) = (
                        at("augur", lo),
                        at("augur", hi),
                        at("sqlite", lo),
                        at("sqlite", hi),
                    ) {
                        why.push(format!(
                            "Augur's reopen takes {:.1} ms at {} and {:.1} ms at {}; SQLite's {:.2} ms and {:.2} ms",
                            a0 / 1000.0,
                            fmt_count(lo),
                            a1 / 1000.0,
                            fmt_count(hi),
                            s0 / 1000.0,
                            s1 / 1000.0
                        ));
                    }
                }
            }
            "reopen_sigkill" => {
                if let Some(o) = self
                    .all
                    .opens
                    .iter()
                    .find(|o| o.system == "augur" && o.kind == "sigkill" && o.dist == d && o.size == n)
                {
                    if let Some(s) = &o.split {
                        why.push(format!(
                            "Augur's open after SIGKILL ({:.1} ms): RocksDB {:.1} ms, map {:.1} ms, verify {:.1} ms, replay of {} versions {:.1} ms, rest {:.1} ms",
                            o.open_us / 1000.0,
                            s.rocksdb_us / 1000.0,
                            s.map_us / 1000.0,
                            s.verify_us / 1000.0,
                            fmt_count(s.replayed_versions as usize),
                            s.replay_us / 1000.0,
                            s.rest_us() / 1000.0
                        ));
                    }
                }
            }
            "warm" => {
                if let Some(ms) = self.obs("augur", "api", d, n, "after_warm", "warm_wait_ms") {
                    why.push(format!(
                        "Augur's warm includes {ms:.0} ms waiting for its own warm-up after the open (every file mapped and populated: Database::wait_for_prewarm)"
                    ));
                }
            }
            _ => {}
        }
        if k.durability == "sync" && !k.is_load() {
            let f = self.fsync_us;
            let sq = c.sqlite_fastest_by_mean.as_ref();
            if k.augur_op == "mixed70_30" {
                if let Some(s) = sq {
                    if c.augur.mean_us >= 0.15 * f && s.mean_us >= 0.15 * f {
                        why.push(format!(
                            "its 30% updates commit durably: one 100-byte write + fsync costs {} on this disk; mean Augur {}, SQLite {}",
                            us(f),
                            us(c.augur.mean_us),
                            us(s.mean_us)
                        ));
                    }
                }
            } else if let (Some(a), Some(s)) = (
                c.augur.p50_us,
                c.sqlite_fastest_by_p50.as_ref().and_then(|x| x.p50_us),
            ) {
                if f > 0.0 && (a >= 0.5 * f || s >= 0.5 * f) {
                    why.push(format!(
                        "a durable commit: one 100-byte write + fsync costs {} on this disk; p50 Augur {} ({:.1} of those), SQLite {} ({:.1})",
                        us(f),
                        us(a),
                        a / f,
                        us(s),
                        s / f
                    ));
                }
            }
        }
        if let (Some(m), Some(p)) = (c.vs_sqlite.mean, c.vs_sqlite.p50) {
            if (m >= 1.0) != (p >= 1.0) {
                for (who, side) in [
                    ("SQLite", c.sqlite_fastest_by_mean.as_ref()),
                    ("Augur", Some(&c.augur)),
                ] {
                    if let Some(s) = side {
                        if let Some(p50) = s.p50_us.filter(|&p| p > 0.0) {
                            if s.mean_us / p50 >= 1.5 {
                                why.push(format!(
                                    "{who}'s mean is {:.1}x its p50 (p99 {}): a slow minority of operations carries its mean",
                                    s.mean_us / p50,
                                    s.p99_us.map(us).unwrap_or_else(|| "n/a".into())
                                ));
                            }
                        }
                    }
                }
            }
        }
        if k.is_load() {
            if let Some(s) = &c.sqlite_fastest_by_mean {
                why.push(format!("SQLite's fastest load here: {}", s.label()));
            }
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    fn sizes_of(&self, sys: &str, layer: &str, op: &str, dist: &str) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .all
            .results
            .iter()
            .filter(|r| r.system == sys && r.layer == layer && r.op == op && r.dist == dist)
            .map(|r| r.size)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The "why" section: mechanisms stated as the facts this run measured.
    pub fn why(&self, comps: &[Comparison]) -> Vec<String> {
        let mut out = Vec::new();
        let mut cells: Vec<(usize, String)> = self
            .all
            .memory
            .iter()
            .filter(|m| m.layer == "api")
            .map(|m| (m.size, m.dist.clone()))
            .collect();
        cells.sort();
        cells.dedup();
        // Per cell: the table against the budget, what each side keeps in memory, and where
        // Augur's reads were served from.
        for (n, d) in &cells {
            let n = *n;
            let rows = self.table_bytes(n);
            let mut s = format!(
                "**{} {d}**: the rows are {} against a {} budget ({}).",
                fmt_count(n),
                mib(rows),
                mib(self.budget_bytes as f64),
                if rows <= self.budget_bytes as f64 {
                    "the table fits"
                } else {
                    "the table does not fit"
                }
            );
            if let Some(m) = self.memory("augur", "default", "api", d, n) {
                let index: u64 = m
                    .parts_end
                    .iter()
                    .filter(|p| p.name.starts_with("primary index"))
                    .map(|p| p.bytes)
                    .sum();
                s.push_str(&format!(
                    " Augur charged {} (index {}){}.",
                    mib(m.accounting_end.charged_bytes as f64),
                    mib(index as f64),
                    if m.accounting_end.over_budget_bytes > 0 {
                        format!(
                            ", {} over the budget",
                            mib(m.accounting_end.over_budget_bytes as f64)
                        )
                    } else {
                        ", within the budget".into()
                    }
                ));
            }
            if let (Some(b), Some(f)) = (
                self.obs("augur", "api", d, n, "after_warm", "mapped_bytes"),
                self.obs("augur", "api", d, n, "after_warm", "mapped_files"),
            ) {
                let huge = match self.obs("augur", "api", d, n, "after_warm", "mapped_huge_bytes") {
                    Some(h) => format!(", {} of it mapped with 2 MiB pages", mib(h)),
                    None => String::new(),
                };
                s.push_str(&format!(
                    " After the warm-up it had {f:.0} SST files mapped ({}: file-backed, the OS page cache's pages, not charged{huge}).",
                    mib(b)
                ));
            }
            if let Some((total, direct, cached, store)) = self.sources("api", d, n, "point_hit") {
                if total > 0.0 {
                    s.push_str(&format!(
                        " During the point lookups its rows came {:.1}% in place from mapped SST files (the direct read path), {:.1}% from its row cache, {:.1}% through RocksDB.",
                        direct * 100.0,
                        cached * 100.0,
                        store * 100.0
                    ));
                }
            }
            if let Some((total, ..)) = self.sources("api", d, n, "point_miss") {
                let probes = self
                    .obs("augur", "api", d, n, "point_miss", "row_cache_misses")
                    .unwrap_or(0.0);
                if total == 0.0 && probes == 0.0 {
                    s.push_str(
                        " Absent keys were answered by its index alone (no row read, no row-cache probe).",
                    );
                } else {
                    s.push_str(&format!(
                        " During the absent-key lookups it still read {total} rows and probed its row cache {probes} times."
                    ));
                }
            }
            if let Some(m) = self.memory("sqlite", "default", "api", d, n) {
                let file = self.obs("sqlite", "api", d, n, "end", "file_bytes");
                s.push_str(&format!(
                    " SQLite's page cache held {}{}.",
                    mib(m.accounting_end.charged_bytes as f64),
                    file.map(|f| format!(
                        " of its {} file ({:.0}%)",
                        mib(f),
                        (m.accounting_end.charged_bytes as f64 / f * 100.0).min(100.0)
                    ))
                    .unwrap_or_default()
                ));
            }
            out.push(s);
        }
        out.push(format!(
            "Every durable commit waits for at least one fsync: a 100-byte write + fsync in the data directory takes {} here (median of 50), on every side alike.",
            us(self.fsync_us)
        ));
        // The SQL layer's cost over the API, per op.
        let mut sql = Vec::new();
        for k in KINDS.iter().filter(|k| k.layer == "sql" && !k.is_load()) {
            let v: Vec<f64> = comps
                .iter()
                .filter(|c| c.kind == k.id())
                .filter_map(|c| {
                    let api = self.row("augur", "api", k.augur_op, k.durability, &c.dist, c.size)?;
                    (api.mean_us > 0.0).then(|| c.augur.mean_us / api.mean_us)
                })
                .collect();
            if let Some(m) = median(&v) {
                sql.push(format!("{} {m:.2}x", k.short()));
            }
        }
        if !sql.is_empty() {
            out.push(format!(
                "Augur's SQL layer over its API (median over the cells of Augur SQL mean ÷ Augur API mean): {}.",
                sql.join(", ")
            ));
        }
        // Means far from medians, per system and op.
        let mut skew: Vec<(String, usize, usize, f64)> = Vec::new();
        for r in self.all.results.iter().filter(|r| r.p50_us.is_some()) {
            let key = format!("{} {} {}", r.system, r.layer, phase_name(&r.op, &r.durability));
            let ratio = r.p50_us.filter(|&p| p > 0.0).map_or(0.0, |p| r.mean_us / p);
            let e = match skew.iter().position(|x| x.0 == key) {
                Some(i) => &mut skew[i],
                None => {
                    skew.push((key, 0, 0, 0.0));
                    skew.last_mut().expect("pushed")
                }
            };
            e.2 += 1;
            if ratio >= 2.0 {
                e.1 += 1;
                e.3 = e.3.max(ratio);
            }
        }
        let skew: Vec<String> = skew
            .into_iter()
            .filter(|x| x.1 > 0)
            .map(|(k, hit, of, max)| format!("{k} in {hit} of {of} cells (up to {max:.1}x)"))
            .collect();
        if !skew.is_empty() {
            out.push(format!(
                "Means at least twice their p50 (a slow minority of operations carries the mean; the p50 ratio is the fairer one there): {}.",
                skew.join("; ")
            ));
        }
        let single: Vec<String> = self
            .all
            .results
            .iter()
            .filter(|r| r.runs == 1 && r.op != "warm")
            .map(|r| {
                format!(
                    "{}[{}] {} {} {}",
                    r.system,
                    r.config,
                    r.op,
                    r.dist,
                    fmt_count(r.size)
                )
            })
            .collect();
        if !single.is_empty() {
            out.push(format!(
                "Single runs (no spread; marked \"single run\" wherever quoted): {}.",
                single.join(", ")
            ));
        }
        out
    }
}

fn phase_name(op: &str, durability: &str) -> String {
    if durability == "n/a" {
        op.to_string()
    } else {
        format!("{op}/{durability}")
    }
}

fn us(x: f64) -> String {
    if x >= 1000.0 {
        format!("{:.2} ms", x / 1000.0)
    } else if x >= 10.0 {
        format!("{x:.0} µs")
    } else {
        format!("{x:.2} µs")
    }
}
