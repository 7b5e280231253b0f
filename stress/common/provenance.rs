//! Where a report's numbers come from (rules 10 and 11 of docs/BENCHMARKING.md): the commit of a
//! clean work tree (a dirty tree is refused unless the run is a draft), and hand-written notes
//! kept apart, dated by the commit that last changed them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Provenance {
    /// `git rev-parse HEAD`.
    pub commit: String,
    /// `git describe --always --dirty --abbrev=12`.
    pub describe: String,
    /// Committer date of HEAD (ISO 8601).
    pub commit_date: String,
    /// Tracked files with changes and untracked files (`git status --porcelain`), at the start.
    pub dirty_files: Vec<String>,
    /// A draft: the tree may be dirty and the report says it is not a report of record.
    pub draft: bool,
    /// The top of the work tree.
    pub root: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("running git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

impl Provenance {
    /// The commit of the work tree holding `dir`. Refuses (an error saying why) a tree with
    /// uncommitted changes or untracked files, or no git tree at all, unless `draft`.
    pub fn establish(dir: &Path, draft: bool) -> Result<Provenance, String> {
        let found = git(dir, &["rev-parse", "--show-toplevel"]).and_then(|root| {
            let root = PathBuf::from(root);
            let commit = git(&root, &["rev-parse", "HEAD"])?;
            let describe = git(&root, &["describe", "--always", "--dirty", "--abbrev=12"])?;
            let commit_date = git(&root, &["log", "-1", "--format=%cI"])?;
            let status = git(&root, &["status", "--porcelain"])?;
            Ok(Provenance {
                commit,
                describe,
                commit_date,
                dirty_files: status.lines().map(|l| l.trim().to_string()).collect(),
                draft,
                root,
            })
        });
        match found {
            Ok(p) if p.dirty_files.is_empty() || draft => Ok(p),
            Ok(p) => Err(format!(
                "the work tree {} has uncommitted changes or untracked files ({}); a report of \
                 record is built from a clean committed tree: commit or stash them, or pass \
                 --draft (the report then says it is a draft)",
                p.root.display(),
                p.dirty_files.join(", ")
            )),
            Err(e) if draft => Ok(Provenance {
                commit: "unknown".into(),
                describe: format!("unknown ({e})"),
                commit_date: "unknown".into(),
                dirty_files: vec![],
                draft,
                root: dir.to_path_buf(),
            }),
            Err(e) => Err(format!(
                "cannot tell which commit this run measures ({e}); run it from the repository \
                 (scripts/bench), or pass --draft"
            )),
        }
    }

    /// Whether HEAD is still the commit the run started from.
    pub fn head_unchanged(&self) -> bool {
        git(&self.root, &["rev-parse", "HEAD"]).is_ok_and(|h| h == self.commit)
    }

    /// One line for a report header.
    pub fn describe(&self) -> String {
        if self.draft {
            format!(
                "git {} (a draft: {} uncommitted or untracked files at the start)",
                self.describe,
                self.dirty_files.len()
            )
        } else {
            format!(
                "git {} ({}, committed {}), clean work tree",
                self.describe, self.commit, self.commit_date
            )
        }
    }
}

/// Hand-written notes a report includes verbatim, under its own heading.
#[derive(Clone, Debug, Serialize)]
pub struct Notes {
    pub path: String,
    pub text: String,
    /// "last changed 2026-11-26 (commit abc123)", or why the date is unknown.
    pub dated: String,
}

impl Notes {
    pub fn read(path: &Path) -> Option<Notes> {
        let text = std::fs::read_to_string(path).ok()?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name()?.to_string_lossy().to_string();
        let dated = match git(dir, &["log", "-1", "--format=%cs %h", "--", &name]) {
            Ok(s) if !s.is_empty() => {
                let (date, hash) = s.split_once(' ').unwrap_or((&s, "?"));
                format!("last changed {date} (commit {hash})")
            }
            _ => "not committed: undated".into(),
        };
        Some(Notes {
            path: path.display().to_string(),
            text,
            dated,
        })
    }
}
