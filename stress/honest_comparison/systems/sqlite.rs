//! SQLite as a system under test (rusqlite, prepared cached statements), in each of the
//! configurations the report names: default, mmap, exclusive locking, both.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use augur_bench::budget::Part;

use super::{ik, uk, Load, Observations, System};

/// A SQLite configuration: the pragmas that differ from the measured default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqliteConfig {
    /// `mmap_size` at least the database file (requested: 1 TiB; SQLite caps it at its
    /// compile-time SQLITE_MAX_MMAP_SIZE, and `check_config` fails if that is below the file).
    pub mmap: bool,
    /// `locking_mode=EXCLUSIVE`: the connection keeps its lock (and WAL index in heap memory)
    /// for its whole life, as Augur owns its directory for the whole process.
    pub exclusive: bool,
}

/// Requested `mmap_size` of the mmap configurations.
const MMAP_REQUEST: i64 = 1 << 40;

impl SqliteConfig {
    pub const ALL: [SqliteConfig; 4] = [
        SqliteConfig {
            mmap: false,
            exclusive: false,
        },
        SqliteConfig {
            mmap: true,
            exclusive: false,
        },
        SqliteConfig {
            mmap: false,
            exclusive: true,
        },
        SqliteConfig {
            mmap: true,
            exclusive: true,
        },
    ];

    pub fn name(self) -> &'static str {
        match (self.mmap, self.exclusive) {
            (false, false) => "default",
            (true, false) => "mmap",
            (false, true) => "exclusive",
            (true, true) => "mmap+exclusive",
        }
    }

    pub fn parse(s: &str) -> Result<SqliteConfig> {
        Self::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| {
            anyhow!("unknown SQLite configuration {s} (default, mmap, exclusive, mmap+exclusive)")
        })
    }

    /// The pragmas that differ from the default configuration.
    pub fn pragmas(self) -> String {
        let mut v = Vec::new();
        if self.exclusive {
            v.push("locking_mode=EXCLUSIVE (set before journal_mode=WAL)".to_string());
        }
        if self.mmap {
            v.push(format!(
                "mmap_size={MMAP_REQUEST} requested (effective value read back and checked ≥ the file size)"
            ));
        }
        if v.is_empty() {
            "mmap_size=0, locking_mode=NORMAL (SQLite's defaults)".into()
        } else {
            v.join(", ")
        }
    }
}

pub struct Sqlite {
    file: PathBuf,
    cache_kib: i64,
    config: SqliteConfig,
    conn: Option<rusqlite::Connection>,
    sync: bool,
    mmap_effective: i64,
}

pub const SQLITE_PRAGMAS: &str = "journal_mode=WAL, synchronous=FULL (sync) / NORMAL (nosync), cache_size=-<budget KiB>, page_size=4096 (default), wal_autocheckpoint=1000 (default), table `t(k INTEGER PRIMARY KEY, v BLOB NOT NULL)` (rowid table: the B-tree is clustered on k)";

impl Sqlite {
    pub fn create(dir: &Path, cache_bytes: usize, config: SqliteConfig) -> Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut s = Sqlite::attach(dir, cache_bytes, config);
        s.open()?;
        s.c()
            .execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL);")?;
        Ok(s)
    }
    /// The database already in `dir`, not opened yet (`reopen` opens it).
    pub fn attach(dir: &Path, cache_bytes: usize, config: SqliteConfig) -> Self {
        Sqlite {
            file: dir.join("bench.sqlite"),
            cache_kib: (cache_bytes / 1024) as i64,
            config,
            conn: None,
            sync: true,
            mmap_effective: 0,
        }
    }
    fn open(&mut self) -> Result<()> {
        let c = rusqlite::Connection::open(&self.file)?;
        if self.config.exclusive {
            let mode: String = c.query_row("PRAGMA locking_mode=EXCLUSIVE", [], |r| r.get(0))?;
            if mode != "exclusive" {
                bail!("sqlite: locking_mode is {mode}");
            }
        }
        let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if mode != "wal" {
            bail!("sqlite: journal_mode is {mode}");
        }
        c.execute_batch(&format!(
            "PRAGMA synchronous=FULL; PRAGMA cache_size=-{};",
            self.cache_kib
        ))?;
        self.mmap_effective = if self.config.mmap {
            c.query_row(&format!("PRAGMA mmap_size={MMAP_REQUEST}"), [], |r| r.get(0))?
        } else {
            c.query_row("PRAGMA mmap_size", [], |r| r.get(0))?
        };
        c.set_prepared_statement_cache_capacity(16);
        self.sync = true;
        self.conn = Some(c);
        Ok(())
    }
    fn c(&self) -> &rusqlite::Connection {
        self.conn.as_ref().expect("open")
    }
    fn file_bytes(&self) -> Result<i64> {
        let pages: i64 = self.c().query_row("PRAGMA page_count", [], |r| r.get(0))?;
        let size: i64 = self.c().query_row("PRAGMA page_size", [], |r| r.get(0))?;
        Ok(pages * size)
    }
    fn set_sync(&mut self, sync: bool) -> Result<()> {
        if sync != self.sync {
            self.c().execute_batch(if sync {
                "PRAGMA synchronous=FULL"
            } else {
                "PRAGMA synchronous=NORMAL"
            })?;
            self.sync = sync;
        }
        Ok(())
    }
    fn get_inner(c: &rusqlite::Connection, k: u64, out: &mut Vec<u8>) -> Result<bool> {
        let mut st = c.prepare_cached("SELECT v FROM t WHERE k = ?1")?;
        let mut rows = st.query([ik(k)])?;
        match rows.next()? {
            Some(r) => {
                out.extend_from_slice(r.get_ref(0)?.as_blob()?);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    /// Bytes of this connection's page cache (SQLITE_DBSTATUS_CACHE_USED).
    fn cache_used(&self) -> u64 {
        let (mut cur, mut hi) = (0i32, 0i32);
        // SAFETY: the handle is the open connection's, valid while `self.conn` holds it;
        // sqlite3_db_status only reads the connection's statistics into the two integers.
        let rc = unsafe {
            rusqlite::ffi::sqlite3_db_status(
                self.c().handle(),
                rusqlite::ffi::SQLITE_DBSTATUS_CACHE_USED,
                &mut cur,
                &mut hi,
                0,
            )
        };
        if rc == 0 {
            cur.max(0) as u64
        } else {
            0
        }
    }
}

impl System for Sqlite {
    fn load(&mut self, how: Load, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
        let sorted;
        let keys = match how {
            Load::Inserts => keys,
            Load::InsertsSorted => {
                let mut v = keys.to_vec();
                v.sort_unstable();
                sorted = v;
                &sorted[..]
            }
            other => bail!("sqlite: no load {other:?}"),
        };
        self.set_sync(true)?;
        let c = self.conn.as_mut().expect("open");
        let tx = c.transaction()?;
        {
            let mut st = tx.prepare_cached("INSERT INTO t (k, v) VALUES (?1, ?2)")?;
            let mut buf = Vec::new();
            for &k in keys {
                buf.clear();
                value(k, &mut buf);
                st.execute(rusqlite::params![ik(k), &buf[..]])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        if let Some(c) = self.conn.take() {
            c.close().map_err(|(_, e)| e)?;
        }
        Ok(())
    }
    fn reopen(&mut self, probe: u64) -> Result<()> {
        self.open()?;
        let mut buf = Vec::new();
        if !Self::get_inner(self.c(), probe, &mut buf)? {
            bail!("sqlite: probe key missing after reopen");
        }
        Ok(())
    }
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool> {
        Self::get_inner(self.c(), k, out)
    }
    fn warm(&mut self) -> Result<u64> {
        // Every leaf page passes through the pager (and stays while cache_size allows).
        let (n, _bytes): (i64, i64) =
            self.c()
                .query_row("SELECT count(*), sum(length(v)) FROM t", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
        Ok(n as u64)
    }
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()> {
        let mut st = self
            .c()
            .prepare_cached("SELECT k, v FROM t WHERE k >= ?1 ORDER BY k LIMIT ?2")?;
        let mut rows = st.query(rusqlite::params![ik(k), n as i64])?;
        while let Some(r) = rows.next()? {
            keys.push(uk(r.get::<_, i64>(0)?));
            vals.extend_from_slice(r.get_ref(1)?.as_blob()?);
        }
        Ok(())
    }
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let mut st = self.c().prepare_cached("UPDATE t SET v = ?2 WHERE k = ?1")?;
        Ok(st.execute(rusqlite::params![ik(k), v])? == 1)
    }
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let mut st = self.c().prepare_cached("DELETE FROM t WHERE k = ?1")?;
        Ok(st.execute([ik(k)])? == 1)
    }
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let mut st = self.c().prepare_cached("INSERT INTO t (k, v) VALUES (?1, ?2)")?;
        match st.execute(rusqlite::params![ik(k), v]) {
            Ok(_) => Ok(true),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
    fn budget_bytes(&self) -> u64 {
        self.cache_kib as u64 * 1024
    }
    fn memory_parts(&self) -> Vec<Part> {
        let cache = self.cache_used();
        // SAFETY: sqlite3_memory_used only reads SQLite's global memory statistics.
        let used = unsafe { rusqlite::ffi::sqlite3_memory_used() }.max(0) as u64;
        vec![
            Part::charged("page cache (SQLITE_DBSTATUS_CACHE_USED)", cache),
            Part::listed(
                "other SQLite heap (sqlite3_memory_used minus the page cache)",
                used.saturating_sub(cache),
            ),
        ]
    }
    fn observe(&self) -> Observations {
        vec![
            ("file_bytes".into(), self.file_bytes().unwrap_or(0) as f64),
            ("mmap_size".into(), self.mmap_effective as f64),
            ("page_cache_bytes".into(), self.cache_used() as f64),
        ]
    }
    fn check_config(&self) -> Result<()> {
        if self.config.mmap {
            let file = self.file_bytes()?;
            if self.mmap_effective < file {
                bail!(
                    "sqlite {}: effective mmap_size {} is below the file's {} bytes (SQLITE_MAX_MMAP_SIZE): the configuration is not what the report would name",
                    self.config.name(),
                    self.mmap_effective,
                    file
                );
            }
        }
        Ok(())
    }
}
