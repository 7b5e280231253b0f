//! honest_comparison end to end at tiny sizes: the rules a program can check (docs/
//! BENCHMARKING.md) hold in what it writes: p50 ratios beside mean ratios, every SQLite
//! configuration named, summaries for both layers, single runs without spread, the checks it
//! claims, and a failed run on any wrong write.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// A draft run (the work tree may be dirty while developing) into a scratch directory.
fn run(dir: &Path, extra: &[&str]) -> Output {
    let out = dir.join("out");
    let data = dir.join("data");
    Command::new(env!("CARGO_BIN_EXE_honest_comparison"))
        .args([
            "--draft",
            "--quiet",
            "--dists",
            "random",
            "--lookups",
            "300",
            "--scans",
            "50",
            "--write-ops",
            "60",
            "--sync-ops",
            "4",
            "--first-second-ms",
            "200",
            "--out",
            out.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ])
        .args(extra)
        .output()
        .expect("honest_comparison runs")
}

fn report(dir: &Path) -> (String, Value) {
    let md = std::fs::read_to_string(dir.join("out/honest_comparison.md")).unwrap();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("out/honest_comparison.json")).unwrap())
            .unwrap();
    (md, json)
}

#[test]
fn the_report_follows_the_rules() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[
            "--sizes",
            "3000",
            "--runs",
            "2",
            "--sqlite-configs",
            "default,mmap+exclusive",
            "--notes",
            "honest_comparison/notes.md",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (md, json) = report(d.path());
    assert!(
        std::fs::metadata(d.path().join("out/honest_comparison.svg"))
            .unwrap()
            .len()
            > 1000
    );

    // A draft says so.
    assert!(md.contains("DRAFT — not a report of record"));
    assert_eq!(json["draft"], true);

    // Rule 7: a p50 ratio beside every mean ratio; a single run has no spread.
    let comps = json["comparisons"].as_array().unwrap();
    assert!(comps.len() > 20, "{} comparisons", comps.len());
    for c in comps {
        let r = &c["vs_sqlite"];
        assert!(r.get("mean").is_some() && r.get("p50").is_some(), "{c}");
        if !c["kind"].as_str().unwrap().contains("bulk_")
            && c["augur"]["op"] != "reopen"
            && c["augur"]["op"] != "reopen_sigkill"
            && c["augur"]["op"] != "warm"
        {
            assert!(r["p50"].is_number(), "no p50 ratio: {c}");
        }
    }
    for r in json["results"].as_array().unwrap() {
        let runs = r["runs"].as_u64().unwrap();
        assert_eq!(r["spread_pct"].is_null(), runs < 2, "{r}");
    }
    assert!(md.contains("single run"));
    assert!(md.contains("×p50"));

    // Rule 4: every SQLite configuration named, the headline against the fastest.
    for cfg in ["default", "mmap+exclusive"] {
        assert!(
            json["results"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["system"] == "sqlite" && r["config"] == cfg),
            "no {cfg} rows"
        );
        assert!(md.contains(cfg));
    }
    for c in comps.iter().filter(|c| c["sqlite_fastest_by_mean"].is_object()) {
        let best = c["sqlite_fastest_by_mean"]["mean_us"].as_f64().unwrap();
        if let Some(def) = c["sqlite_default"]["mean_us"].as_f64() {
            assert!(best <= def, "fastest {best} slower than default {def}: {c}");
        }
    }
    // Rule 4, loads: SQLite sorted first, raw RocksDB through SST ingest, Augur's loader named.
    for op in ["bulk_inserts", "bulk_inserts_sorted", "bulk_loader", "bulk_copy"] {
        assert!(
            json["results"].as_array().unwrap().iter().any(|r| r["op"] == op),
            "no {op}"
        );
    }
    assert!(md.contains("bulk loader vs INSERTs"));
    assert!(md.contains("COPY vs INSERTs"));

    // Rules 4 and 12: the summary covers both layers, by mean and by p50.
    assert!(md.contains("Where Augur wins and where it loses: API layer"));
    assert!(md.contains("Where Augur wins and where it loses: SQL layer"));
    assert_eq!(json["summary"].as_array().unwrap().len(), 2);

    // Rule 3: each side's parts and its RSS, anonymous and file-backed apart.
    for m in json["memory"].as_array().unwrap() {
        assert!(m["rss_end"]["anon"].as_u64().unwrap() > 0, "{m}");
        assert!(m["rss_end"].get("file").is_some());
        assert!(!m["parts_end"].as_array().unwrap().is_empty());
        if m["system"] == "augur" {
            let parts = m["parts_end"].as_array().unwrap();
            assert!(parts
                .iter()
                .any(|p| p["name"].as_str().unwrap().starts_with("primary index") && p["charged"] == true));
        }
    }
    assert!(md.contains("Memory beside the headline"));

    // Rule 9: the checks claimed are the checks made, with counts; writes are read back.
    let checks = json["checks"].as_array().unwrap();
    for op in ["update", "mixed70_30", "single_insert", "delete", "final_state"] {
        let c = checks
            .iter()
            .find(|c| c["op"] == op)
            .unwrap_or_else(|| panic!("no {op} check"));
        let what = c["what"].as_str().unwrap();
        assert!(what.contains("read back"), "{op}: {what}");
        assert!(c["expected"].as_u64().unwrap() > 0);
        assert_eq!(c["expected"], c["checked"]);
        assert_eq!(c["checked"], c["correct"]);
        assert!(md.contains(what), "the report does not claim {what}");
    }

    // Issue 23: the opens. The first second after the clean reopen (Augur and every SQLite
    // configuration) and the open after SIGKILL (Augur and SQLite's default) with the first
    // second after it: rows with sane figures, every answer checked, Augur's open split by
    // phase with the versions the SIGKILL left to replay, all in the report.
    let results = json["results"].as_array().unwrap();
    let row = |sys: &str, cfg: &str, op: &str| {
        results
            .iter()
            .find(|r| r["system"] == sys && r["config"] == cfg && r["op"] == op && r["layer"] == "api")
            .unwrap_or_else(|| panic!("no {sys} {cfg} {op} row"))
    };
    for (sys, cfg, op) in [
        ("augur", "default", "first_second"),
        ("sqlite", "default", "first_second"),
        ("sqlite", "mmap+exclusive", "first_second"),
        ("augur", "default", "first_second_sigkill"),
        ("sqlite", "default", "first_second_sigkill"),
    ] {
        let r = row(sys, cfg, op);
        let (mean, p50, p99) = (
            r["mean_us"].as_f64().unwrap(),
            r["p50_us"].as_f64().unwrap(),
            r["p99_us"].as_f64().unwrap(),
        );
        assert!(mean > 0.0 && p50 > 0.0 && p99 >= p50 && mean < 10_000.0, "{r}");
    }
    for sys in ["augur", "sqlite"] {
        let r = row(sys, "default", "reopen_sigkill");
        assert!(r["mean_us"].as_f64().unwrap() > 0.0, "{r}");
    }
    assert!(
        !results
            .iter()
            .any(|r| r["config"] == "mmap+exclusive" && r["op"] == "reopen_sigkill"),
        "only SQLite's default configuration is stopped uncleanly"
    );
    for op in ["first_second", "first_second_sigkill", "reopen_sigkill"] {
        let cs: Vec<&Value> = checks.iter().filter(|c| c["op"] == op).collect();
        assert_eq!(cs.len(), if op == "first_second" { 3 } else { 2 }, "{op}: {cs:?}");
        for c in cs {
            assert!(c["expected"].as_u64().unwrap() > 0, "{c}");
            assert_eq!(c["expected"], c["correct"], "{c}");
        }
    }
    let opens = json["opens"].as_array().unwrap();
    let augur_open = |kind: &str| {
        opens
            .iter()
            .find(|o| o["system"] == "augur" && o["kind"] == kind)
            .unwrap_or_else(|| panic!("no Augur {kind} open"))
    };
    for kind in ["clean", "sigkill"] {
        let o = augur_open(kind);
        let s = &o["split"];
        assert!(o["open_us"].as_f64().unwrap() > 0.0, "{o}");
        assert!(s["rocksdb_us"].as_f64().unwrap() > 0.0, "{o}");
        let phases: f64 = [
            "rocksdb_us",
            "map_us",
            "verify_us",
            "replay_us",
            "other_engine_us",
            "outside_us",
        ]
        .iter()
        .map(|p| s[p].as_f64().unwrap())
        .sum();
        assert!(phases <= o["open_us"].as_f64().unwrap() * 1.01 + 1.0, "{o}");
        assert!(o["first_second"]["reads"].as_u64().unwrap() > 100, "{o}");
    }
    let unclean = augur_open("sigkill");
    // min(3000 rows, 100,000) updates, all past the checkpoint the clean close wrote.
    assert_eq!(unclean["updates_before"], 3000, "{unclean}");
    assert_eq!(unclean["split"]["replayed_versions"], 3000, "{unclean}");
    assert_eq!(augur_open("clean")["split"]["replayed_versions"], 0);
    assert!(opens
        .iter()
        .all(|o| o["system"] != "sqlite" || o["split"].is_null()));
    assert!(md.contains("## Opens: where the time goes, and the first second after them"));
    assert!(
        md.contains("| random | 3K | after SIGKILL | 3K |"),
        "no split row for the SIGKILL open"
    );
    assert!(md.contains("after SIGKILL with 100K versions to replay ≤ 300 ms"));
    assert!(md.contains("first second after the clean reopen within 2x of the warm figure"));

    // Rule 11: the JSON twin has the per-cell times and the generated words; the notes come
    // verbatim under their own dated heading.
    assert!(!json["cell_seconds"].as_array().unwrap().is_empty());
    assert!(!json["why"].as_array().unwrap().is_empty());
    assert!(md.contains("## Notes (hand-written, not generated;"));
    assert!(md.contains("These notes are written by hand"));
}

/// Every kind of write is read back: a system handed a wrong value (or a skipped delete) fails
/// the run, naming the operation.
#[test]
fn a_wrong_write_fails_the_run() {
    for (fault, op) in [
        ("update", "update/nosync"),
        ("mixed", "mixed70_30/nosync"),
        ("insert", "single_insert/nosync"),
        ("delete", "delete/nosync"),
        // The loaded row with the wrong value is met by whichever check reads it first (a
        // point lookup, a range scan or the final comparison), each of which says "right".
        ("bulk", "right"),
    ] {
        let d = tempfile::tempdir().unwrap();
        let o = run(
            d.path(),
            &[
                "--sizes",
                "2000",
                "--runs",
                "1",
                "--systems",
                "augur",
                "--layers",
                "api",
                "--fault",
                fault,
            ],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "--fault {fault} passed:\n{err}");
        assert!(err.contains(op), "--fault {fault}: expected {op} in\n{err}");
        assert!(
            !d.path().join("out/honest_comparison.md").exists(),
            "--fault {fault} wrote a report"
        );
    }
}

/// scripts/bench passes its matrix first and the caller's arguments after: a later list
/// replaces an earlier one (it used to be appended, which ran cells twice).
#[test]
fn later_arguments_replace_earlier_ones() {
    let d = tempfile::tempdir().unwrap();
    let o = run(
        d.path(),
        &[
            "--sizes",
            "1000,2000",
            "--dists",
            "seq,random",
            "--runs",
            "1",
            "--systems",
            "augur",
            "--layers",
            "api",
            "--sizes",
            "1500",
            "--dists",
            "random",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, json) = report(d.path());
    let cells = json["cell_seconds"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{cells:?}");
    assert_eq!(cells[0]["cell"]["size"], 1500);
    assert_eq!(cells[0]["cell"]["dist"], "random");
}
