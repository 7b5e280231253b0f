//! The report's section on opens (issue 23): where each Augur open's time went, by the engine's
//! phases, and the point reads of the first second after each measured open beside the same
//! cell's warm point reads. Generated from the cells' `OpenRecord`s and result rows.

use std::fmt::Write as _;

use augur_bench::stats::fmt_count;

use crate::report::sys_label;
use crate::{CellOut, OpenRecord};

fn ms(us: f64) -> String {
    format!("{:.1}", us / 1000.0)
}

fn cold(kind: &str) -> &'static str {
    if kind == "sigkill" {
        "after SIGKILL"
    } else {
        "after a clean close"
    }
}

/// Cells in size, distribution, system, configuration and kind order (clean first).
fn sorted(all: &CellOut) -> Vec<&OpenRecord> {
    let mut v: Vec<&OpenRecord> = all.opens.iter().collect();
    v.sort_by(|a, b| {
        (a.size, &a.dist, &a.system, &a.config, a.kind != "clean").cmp(&(
            b.size,
            &b.dist,
            &b.system,
            &b.config,
            b.kind != "clean",
        ))
    });
    v
}

/// Writes the section; nothing when no open was recorded.
pub fn section(w: &mut String, all: &CellOut, first_second_ms: u64) {
    if all.opens.is_empty() {
        return;
    }
    let opens = sorted(all);
    let _ = writeln!(
        w,
        "## Opens: where the time goes, and the first second after them\n"
    );
    let _ = writeln!(w, "Augur's open split by the engine's own phases (`Database::stats()` of the database just opened): RocksDB's open (its WAL recovery included), mapping the index images (or reading and bulk-loading sorted checkpoints), checksumming them, replaying the versions written after the checkpoints, and the rest (the engine's other phases plus the first lookup and whatever lies outside the phases). After a clean close: the run of median time among the timed reopens. After SIGKILL: one open, after the updates shown were committed by another process (one row per commit, all without fsync but the last, whose fsync carries them) which was then killed with SIGKILL; every updated key is read back after the open and compared with its last value. All in ms.\n");
    let _ = writeln!(w, "| dist | rows | open | updates before | total | RocksDB | map | verify | replay | versions replayed | rest | image read into memory MiB | images refused |");
    let _ = writeln!(
        w,
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for o in opens.iter().filter(|o| o.system == "augur") {
        let Some(s) = &o.split else { continue };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} |",
            o.dist,
            fmt_count(o.size),
            cold(&o.kind),
            fmt_count(o.updates_before as usize),
            ms(o.open_us),
            ms(s.rocksdb_us),
            ms(s.map_us),
            ms(s.verify_us),
            ms(s.replay_us),
            fmt_count(s.replayed_versions as usize),
            ms(s.rest_us()),
            s.copied_image_bytes as f64 / (1u64 << 20) as f64,
            s.images_refused
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "Point reads in the first {first_second_ms} ms after each open returned (the same seeded keys on every side, drawn uniformly from keys present then; each read timed alone, each answer checked against the model), beside the same cell's warm point reads (`point_hit`: measured after the clean reopen's first second and a full read of the table, before the unclean stop and its updates). × = first second ÷ warm (issue 23's target: within 2x). Page faults: the whole process's during those reads (the cold pages of an image or a file show here). Latencies in µs.\n");
    let _ = writeln!(w, "| system | config | dist | rows | open | open ms | reads | mean | p50 | p99 | warm mean | p50 | p99 | ×mean | ×p50 | ×p99 | page faults (minor / major) |");
    let _ = writeln!(
        w,
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for o in &opens {
        let f = &o.first_second;
        let warm = all.results.iter().find(|r| {
            r.system == o.system
                && r.config == o.config
                && r.layer == o.layer
                && r.dist == o.dist
                && r.size == o.size
                && r.op == "point_hit"
        });
        let x = |a: f64, b: Option<f64>| match b {
            Some(b) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "–".into(),
        };
        let opt = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.2}"));
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {} / {} |",
            sys_label(&o.system),
            o.config,
            o.dist,
            fmt_count(o.size),
            cold(&o.kind),
            ms(o.open_us),
            fmt_count(f.reads as usize),
            f.mean_us,
            f.p50_us,
            f.p99_us,
            opt(warm.map(|r| r.mean_us)),
            opt(warm.and_then(|r| r.p50_us)),
            opt(warm.and_then(|r| r.p99_us)),
            x(f.mean_us, warm.map(|r| r.mean_us)),
            x(f.p50_us, warm.and_then(|r| r.p50_us)),
            x(f.p99_us, warm.and_then(|r| r.p99_us)),
            f.minor_faults,
            f.major_faults
        );
    }
    let _ = writeln!(w);
    // Reads that went to the disk: the first second after the clean reopen comes before any
    // full read of the table, so it meets the OS page cache as the load and the reopens left it.
    let disk: Vec<String> = opens
        .iter()
        .filter(|o| o.first_second.major_faults > 0)
        .map(|o| {
            format!(
                "{} {} {} {} {} ({} major faults in {} reads)",
                sys_label(&o.system),
                o.config,
                o.dist,
                fmt_count(o.size),
                cold(&o.kind),
                o.first_second.major_faults,
                fmt_count(o.first_second.reads as usize)
            )
        })
        .collect();
    if !disk.is_empty() {
        let _ = writeln!(w, "Major page faults (reads from the disk) in a first second: {}. The first second after a clean close comes before any full read of the table, right after the load and the timed reopens, so it meets the OS page cache as they left it (which files a load leaves outside the page cache: the notes' \"Loads\"); the first second after SIGKILL comes after every other measurement.\n", disk.join("; "));
    }
}
