//! Rules 10 and 11 of docs/BENCHMARKING.md: a report of record comes from a clean committed
//! tree (a dirty one is refused unless the run is a draft, and the draft says so), and
//! hand-written notes are dated by their commit.

use std::path::Path;
use std::process::Command;

use augur_bench::provenance::{Notes, Provenance};

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .status()
        .expect("git (a prerequisite of these tests) runs");
    assert!(st.success(), "git {args:?}");
}

fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q"]);
    std::fs::write(d.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(d.path().join("notes.md"), "A note.\n").unwrap();
    git(d.path(), &["add", "."]);
    git(d.path(), &["commit", "-q", "-m", "first"]);
    d
}

#[test]
fn a_clean_tree_is_accepted_with_its_commit() {
    let d = repo();
    let p = Provenance::establish(d.path(), false).unwrap();
    assert!(!p.draft);
    assert!(p.dirty_files.is_empty());
    assert_eq!(p.commit.len(), 40);
    assert!(p.describe().contains("clean work tree"), "{}", p.describe());
    assert!(p.head_unchanged());
    git(d.path(), &["commit", "-q", "--allow-empty", "-m", "second"]);
    assert!(!p.head_unchanged());
}

#[test]
fn a_dirty_tree_is_refused_unless_draft() {
    let d = repo();
    std::fs::write(d.path().join("a.txt"), "two\n").unwrap();
    let e = Provenance::establish(d.path(), false).unwrap_err();
    assert!(e.contains("uncommitted") && e.contains("--draft"), "{e}");
    let p = Provenance::establish(d.path(), true).unwrap();
    assert!(p.draft);
    assert_eq!(p.dirty_files.len(), 1);
    assert!(p.describe().contains("draft"), "{}", p.describe());

    // An untracked file makes the tree dirty too.
    let d = repo();
    std::fs::write(d.path().join("new.rs"), "").unwrap();
    assert!(Provenance::establish(d.path(), false).is_err());

    // Outside any repository there is no commit to name.
    let plain = tempfile::tempdir().unwrap();
    let e = Provenance::establish(plain.path(), false).unwrap_err();
    assert!(e.contains("--draft"), "{e}");
    assert!(Provenance::establish(plain.path(), true).unwrap().draft);
}

#[test]
fn notes_are_dated_by_their_commit() {
    let d = repo();
    let n = Notes::read(&d.path().join("notes.md")).unwrap();
    assert_eq!(n.text, "A note.\n");
    assert!(n.dated.starts_with("last changed 20"), "{}", n.dated);
    std::fs::write(d.path().join("loose.md"), "x").unwrap();
    assert!(Notes::read(&d.path().join("loose.md"))
        .unwrap()
        .dated
        .contains("undated"));
    assert!(Notes::read(&d.path().join("missing.md")).is_none());
}

/// The programs themselves refuse: honest_comparison and stress_100m exit with an error before
/// measuring anything when started in a dirty tree without --draft.
#[test]
fn the_programs_refuse_a_dirty_tree() {
    let d = repo();
    std::fs::write(d.path().join("a.txt"), "dirty\n").unwrap();
    let out = d.path().join("out");
    for (exe, args) in [
        (
            env!("CARGO_BIN_EXE_honest_comparison"),
            vec!["--sizes", "1000", "--out", out.to_str().unwrap()],
        ),
        (
            env!("CARGO_BIN_EXE_stress_100m"),
            vec!["--keys", "1000", "--out", out.to_str().unwrap()],
        ),
    ] {
        let o = Command::new(exe)
            .args(&args)
            .current_dir(d.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{exe} accepted a dirty tree");
        assert!(err.contains("uncommitted"), "{exe}: {err}");
        assert!(!out.exists(), "{exe} wrote a report");
    }
    // A draft may not overwrite the repository's reports of record.
    std::fs::create_dir(d.path().join("reports")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_honest_comparison"))
        .args(["--draft", "--sizes", "1000", "--out", "reports"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("reports of record"));
}
