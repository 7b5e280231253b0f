//! EXPLAIN golden files: every `tests/explain/*.sql` runs in a fresh database; each EXPLAIN's
//! plan is compared exactly with `tests/explain/*.out`. `UPDATE_GOLDEN=1` rewrites the files.

mod common;

use std::path::PathBuf;

use augur::{Session, Value};

fn run_file(path: &std::path::Path) -> String {
    let (_dir, db) = common::open_nosync();
    let mut s = Session::new(db);
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for stmt in text.split(";\n") {
        let body: Vec<&str> = stmt
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect();
        let sql = body.join("\n");
        let sql = sql.trim().trim_end_matches(';');
        if sql.is_empty() {
            continue;
        }
        let res = s
            .execute(sql, &[])
            .unwrap_or_else(|e| panic!("{}: {sql}: {e}", path.display()));
        if sql.to_uppercase().starts_with("EXPLAIN") {
            out.push_str(&format!("{sql}\n"));
            for r in res.last().unwrap().rows() {
                if let Value::Text(line) = &r[0] {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            out.push('\n');
        }
    }
    out
}

#[test]
fn explain_golden_files() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/explain");
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut mismatches = Vec::new();
    for f in files {
        let actual = run_file(&f);
        let golden = f.with_extension("out");
        if update {
            std::fs::write(&golden, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != actual {
            mismatches.push(format!(
                "{}:\n--- expected\n{expected}\n--- actual\n{actual}",
                golden.display()
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "EXPLAIN output changed (UPDATE_GOLDEN=1 to accept):\n{}",
        mismatches.join("\n")
    );
}
