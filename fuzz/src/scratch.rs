//! Scratch databases for the SQL and wire harnesses: on `/dev/shm` when it is writable (no disk
//! I/O per execution), in the temp dir otherwise; small caches, no fsync. Each directory is named
//! after the process, and directories left by processes that no longer exist are removed.
//!
//! Shared with `tests/fuzz_regressions.rs` (included there by path): `augur` and `std` only.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use augur::store::StoreOptions;
use augur::{Database, Options, Session};

const PREFIX: &str = "augur-fuzz-";

fn base() -> PathBuf {
    let shm = PathBuf::from("/dev/shm");
    let probe = shm.join(format!("{PREFIX}probe-{}", std::process::id()));
    if std::fs::create_dir_all(&probe).is_ok() {
        let _ = std::fs::remove_dir(&probe);
        shm
    } else {
        std::env::temp_dir()
    }
}

/// Removes `augur-fuzz-<name>-<pid>-<n>` directories whose process is gone.
fn remove_stale(base: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let parts: Vec<&str> = rest.rsplitn(3, '-').collect();
        if let [_, pid, _] = parts[..] {
            if let Ok(pid) = pid.parse::<u32>() {
                if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
}

/// A fresh directory for a scratch database.
pub fn dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let base = base();
    remove_stale(&base);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let d = base.join(format!("{PREFIX}{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("creating a scratch directory");
    d
}

/// Opens a scratch database with small caches and no fsync.
pub fn open(name: &str) -> Database {
    let opts = Options {
        sync_commits: false,
        row_cache_bytes: 8 << 20,
        store: StoreOptions {
            block_cache_bytes: 8 << 20,
            write_buffer_bytes: 4 << 20,
            ..StoreOptions::default()
        },
        maintenance_interval: Duration::from_millis(500),
        ..Options::default()
    };
    Database::open(dir(name), opts).expect("opening a scratch database")
}

/// The tables every execution starts from: integer, text, composite and hidden keys, a
/// secondary index, NULLs and the extreme integers.
pub const SCHEMA: &[&str] = &[
    "CREATE TABLE t (id int8 PRIMARY KEY, v text, n int4, f float8, b bool, ts timestamp)",
    "INSERT INTO t VALUES (-9223372036854775808, 'min', -2147483648, -1.5e300, false, '1970-01-01 00:00:00'), \
     (-1, NULL, NULL, NULL, NULL, NULL), (0, '', 0, 0.0, false, '2000-01-01 00:00:00'), \
     (1, 'one', 1, 0.5, true, '2024-02-29 12:34:56.789'), (2, 'two', 2, 'NaN', true, NULL), \
     (42, 'answer', 42, 42.0, NULL, '1999-12-31 23:59:59'), \
     (9223372036854775807, 'max', 2147483647, 1e300, true, '2262-04-11 00:00:00')",
    "CREATE INDEX t_n ON t (n)",
    "CREATE TABLE s (k text PRIMARY KEY, id int8, w varchar(5))",
    "INSERT INTO s VALUES ('a', 1, 'x'), ('b', 2, NULL), ('', 0, ''), ('zz', 42, 'zzzzz')",
    "CREATE TABLE c (a int4, b int2, v bytea, PRIMARY KEY (a, b))",
    "INSERT INTO c VALUES (1, 1, '\\x00ff'), (1, 2, NULL), (2, -1, '\\x')",
    "CREATE TABLE h (x int4, y text)",
    "INSERT INTO h VALUES (1, 'a'), (1, 'a'), (NULL, NULL)",
];

/// Rows [`SCHEMA`] puts in `table`.
pub fn seed_rows(table: &str) -> usize {
    let prefix = format!("INSERT INTO {table} VALUES ");
    SCHEMA
        .iter()
        .filter_map(|s| s.strip_prefix(&prefix))
        .map(|v| v.matches("), (").count() + 1)
        .sum()
}

/// Drops every table and recreates [`SCHEMA`].
pub fn reset(db: &Database) {
    for t in db.tables() {
        db.drop_table(&t.def().name, true).expect("dropping a table");
    }
    let mut s = Session::new(db.clone());
    for sql in SCHEMA {
        if let Err(e) = s.execute(sql, &[]) {
            panic!("seed statement failed: {sql}: {e}");
        }
    }
}
