//! Augur as a system under test: the embedded API (`Database::get_with`,
//! `Transaction::scan_first`) and the SQL layer (`Session` with prepared statements, rows lent by
//! `query_prepared_with`, COPY for the load).

use std::fmt::Write as _;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use augur::{
    ColumnDef, DataType, Database, Key, KeyRange, Options, RowRef, Session, StatementResult, Table, TableDef,
    Value, ValueRef,
};
use augur_bench::augur_side;
use augur_bench::budget::Part;

use super::{ik, uk, Load, Observations, System};

// ---------------------------------------------------------------- Augur, embedded API

pub struct AugurApi {
    path: PathBuf,
    opts: Options,
    db: Option<Database>,
    t: Option<Arc<Table>>,
    /// How long the last warm waited for the engine's own warm-up after open.
    warm_wait_ms: f64,
}

fn table_def() -> Result<TableDef> {
    Ok(TableDef::new(
        "t",
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Bytea),
        ],
        &["k"],
    )?)
}

fn bytes_of(row: RowRef<'_>, out: &mut Vec<u8>) -> Result<()> {
    match row.get(1)? {
        Some(ValueRef::Bytes(b)) => {
            out.extend_from_slice(b);
            Ok(())
        }
        other => bail!("unexpected value column {other:?}"),
    }
}

fn augur_observe(db: &Database, warm_wait_ms: f64) -> Observations {
    let s = db.stats();
    let mut obs: Observations = vec![
        ("row_cache_hits".into(), s.cache_hits as f64),
        ("row_cache_misses".into(), s.cache_misses as f64),
        ("row_cache_bytes".into(), s.row_cache_bytes as f64),
        ("row_cache_budget".into(), db.options().row_cache_bytes as f64),
        ("direct_reads".into(), s.direct_reads as f64),
        ("store_reads".into(), s.store_reads as f64),
        ("mapped_bytes".into(), s.direct.mapped_bytes as f64),
        ("mapped_files".into(), s.direct.files as f64),
        ("warm_wait_ms".into(), warm_wait_ms),
    ];
    if let Some(b) = sst_pmd_mapped_bytes() {
        obs.push(("mapped_huge_bytes".into(), b));
    }
    obs
}

/// Bytes of this process's mappings of SST files that the kernel maps with 2 MiB page-table
/// entries (`FilePmdMapped` in /proc/self/smaps): a read of those pays no 4 KiB page walk.
/// None where smaps cannot be read.
fn sst_pmd_mapped_bytes() -> Option<f64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let (mut sst, mut kib) = (false, 0u64);
    for line in smaps.lines() {
        if let Some(v) = line.strip_prefix("FilePmdMapped:") {
            if sst {
                kib += v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
            }
        } else if line
            .split_whitespace()
            .next()
            .is_some_and(|f| f.contains('-') && !f.ends_with(':'))
        {
            // A mapping's first line: "start-end perms offset dev inode [path]".
            sst = line.ends_with(".sst");
        }
    }
    Some(kib as f64 * 1024.0)
}

impl AugurApi {
    pub fn create(path: &Path, opts: Options) -> Result<Self> {
        let db = Database::open(path, opts.clone())?;
        let t = db.create_table(table_def()?)?;
        Ok(AugurApi {
            path: path.to_path_buf(),
            opts,
            db: Some(db),
            t: Some(t),
            warm_wait_ms: 0.0,
        })
    }
    /// The database already in `path`, not opened yet (`reopen` opens it).
    pub fn attach(path: &Path, opts: Options) -> Self {
        AugurApi {
            path: path.to_path_buf(),
            opts,
            db: None,
            t: None,
            warm_wait_ms: 0.0,
        }
    }
    fn db(&self) -> &Database {
        self.db.as_ref().expect("open")
    }
    fn t(&self) -> &Arc<Table> {
        self.t.as_ref().expect("open")
    }
}

impl System for AugurApi {
    fn load(&mut self, how: Load, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
        if how != Load::Loader {
            bail!("augur api: no load {how:?}");
        }
        // The embedded API's bulk path: one atomic insert of all rows, fsynced before it
        // returns whatever `sync_commits` says (an ingested SST file plus a WAL record). Rows
        // are made as the engine takes them: each is encoded and freed before the next.
        let mut buf = Vec::new();
        let rows = keys.iter().map(|&k| {
            buf.clear();
            value(k, &mut buf);
            vec![Value::Int(ik(k)), Value::Bytes(buf.clone())]
        });
        self.db().bulk_insert("t", rows)?;
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        self.t = None;
        if let Some(db) = self.db.take() {
            db.close()?;
        }
        Ok(())
    }
    fn reopen(&mut self, probe: u64) -> Result<()> {
        let db = Database::open(&self.path, self.opts.clone())?;
        let t = db.table("t")?;
        let tx = db.begin();
        if tx.get_in(&t, &Key::Int(ik(probe)))?.is_none() {
            bail!("augur: probe key missing after reopen");
        }
        drop(tx);
        self.db = Some(db);
        self.t = Some(t);
        Ok(())
    }
    fn warm(&mut self) -> Result<u64> {
        // Its own warm-up first (every live file mapped and populated: wait_for_prewarm), then
        // the same full read the other systems get, so that every system's files have been
        // read once (the OS page cache holds what was read).
        let t = std::time::Instant::now();
        self.db().wait_for_prewarm();
        self.warm_wait_ms = t.elapsed().as_secs_f64() * 1e3;
        let tx = self.db().begin();
        let all = KeyRange {
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        };
        let mut n = 0u64;
        tx.scan_with(self.t(), &all, false, |_, _| {
            n += 1;
            Ok(true)
        })?;
        Ok(n)
    }
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool> {
        // An autocommit read, as rusqlite's SELECT outside a transaction is, with the row lent
        // in place (as rusqlite's `get_ref` lends SQLite's cell): one copy, into `out`, as on
        // the other sides.
        match self
            .db()
            .get_with(self.t(), &Key::Int(ik(k)), |row| bytes_of(row, out))?
        {
            Some(r) => r.map(|()| true),
            None => Ok(false),
        }
    }
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()> {
        let tx = self.db().begin();
        let r = KeyRange {
            lo: Bound::Included(Key::Int(ik(k))),
            hi: Bound::Unbounded,
        };
        let mut err = None;
        tx.scan_first(self.t(), &r, false, n, |key, row| {
            match key {
                Key::Int(i) => keys.push(uk(*i)),
                _ => err = Some(anyhow!("non-integer key")),
            }
            if let Err(e) = bytes_of(row, vals) {
                err = Some(e);
            }
            Ok(keys.len() < n)
        })?;
        err.map_or(Ok(()), Err)
    }
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        let t = self.t().clone();
        let mut tx = self.db().begin();
        tx.set_sync(sync);
        let ok = tx.update_in(
            &t,
            &Key::Int(ik(k)),
            vec![Value::Int(ik(k)), Value::Bytes(v.to_vec())],
        )?;
        tx.commit()?;
        Ok(ok)
    }
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool> {
        let t = self.t().clone();
        let mut tx = self.db().begin();
        tx.set_sync(sync);
        let ok = tx.delete_in(&t, &Key::Int(ik(k)))?;
        tx.commit()?;
        Ok(ok)
    }
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        let t = self.t().clone();
        let mut tx = self.db().begin();
        tx.set_sync(sync);
        match tx.insert_in(&t, vec![Value::Int(ik(k)), Value::Bytes(v.to_vec())]) {
            Ok(_) => {}
            Err(e) if e.sqlstate().code() == "23505" => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        tx.commit()?;
        Ok(true)
    }
    fn budget_bytes(&self) -> u64 {
        augur_side::configured_bytes(&self.opts)
    }
    fn memory_parts(&self) -> Vec<Part> {
        augur_side::memory_parts(self.db())
    }
    fn observe(&self) -> Observations {
        augur_observe(self.db(), self.warm_wait_ms)
    }
    fn open_split(&self, took_us: f64) -> Option<crate::OpenSplit> {
        let s = self.db.as_ref()?.stats();
        let other = s.open_setup_us
            + s.open_marker_us
            + s.open_catalog_us
            + s.open_secondary_us
            + s.open_tables_other_us
            + s.open_rest_us;
        let phases = s.open_store_us + s.open_map_us + s.open_verify_us + s.open_replay_us + other;
        Some(crate::OpenSplit {
            rocksdb_us: s.open_store_us as f64,
            map_us: s.open_map_us as f64,
            verify_us: s.open_verify_us as f64,
            replay_us: s.open_replay_us as f64,
            other_engine_us: other as f64,
            outside_us: (took_us - phases as f64).max(0.0),
            replayed_versions: s.open_replayed_versions,
            copied_image_bytes: s.open_copied_image_bytes,
            images_refused: s.index_images_refused,
        })
    }
}

// ---------------------------------------------------------------- Augur, SQL layer

pub struct AugurSql {
    api: AugurApi,
    /// The session and its statements; None while the database is closed (a session holds the
    /// database open).
    sql: Option<SqlSide>,
    sync: bool,
}

struct SqlSide {
    s: Session,
    p_get: Arc<augur::sql::Prepared>,
    p_range: Arc<augur::sql::Prepared>,
    p_update: Arc<augur::sql::Prepared>,
    p_delete: Arc<augur::sql::Prepared>,
    p_insert: Arc<augur::sql::Prepared>,
}

/// Rows per `Session::copy_in` call of the COPY load (one transaction block around all calls).
const COPY_CHUNK_ROWS: usize = 65_536;

/// Lowercase hex digits: the bytea text of a COPY is made a byte at a time inside the timed
/// span, so by table lookup rather than a formatter call per byte.
const HEX: &[u8; 16] = b"0123456789abcdef";

impl SqlSide {
    /// A new session on `db` and its prepared statements.
    fn new(db: Database) -> Result<SqlSide> {
        let mut s = Session::new(db);
        Ok(SqlSide {
            p_get: s.prepare("SELECT v FROM t WHERE k = $1")?,
            p_range: s.prepare("SELECT k, v FROM t WHERE k >= $1 ORDER BY k LIMIT $2")?,
            p_update: s.prepare("UPDATE t SET v = $2 WHERE k = $1")?,
            p_delete: s.prepare("DELETE FROM t WHERE k = $1")?,
            p_insert: s.prepare("INSERT INTO t (k, v) VALUES ($1, $2)")?,
            s,
        })
    }
}

impl AugurSql {
    pub fn create(path: &Path, opts: Options) -> Result<Self> {
        let db = Database::open(path, opts.clone())?;
        db.execute("CREATE TABLE t (k bigint PRIMARY KEY, v bytea NOT NULL)", &[])?;
        let t = db.table("t")?;
        let api = AugurApi {
            path: path.to_path_buf(),
            opts,
            db: Some(db.clone()),
            t: Some(t),
            warm_wait_ms: 0.0,
        };
        Ok(AugurSql {
            api,
            sql: Some(SqlSide::new(db)?),
            sync: true,
        })
    }
    fn sql(&mut self) -> Result<&mut SqlSide> {
        self.sql.as_mut().context("augur sql: the database is closed")
    }
    fn set_sync(&mut self, sync: bool) -> Result<()> {
        if sync != self.sync {
            self.sql()?.s.execute(
                if sync {
                    "SET synchronous_commit = on"
                } else {
                    "SET synchronous_commit = off"
                },
                &[],
            )?;
            self.sync = sync;
        }
        Ok(())
    }
}

impl System for AugurSql {
    fn load(&mut self, how: Load, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
        if how != Load::Copy {
            bail!("augur sql: no load {how:?}");
        }
        // The SQL layer's bulk path, as psql's \copy drives it: COPY FROM STDIN, the data in
        // PostgreSQL's text format (bytea as \\x hex), made here and handed over in chunks,
        // all inside one transaction block so the load commits (durably) once.
        self.set_sync(true)?;
        let s = &mut self.sql()?.s;
        s.execute("BEGIN", &[])?;
        let st = match s.execute("COPY t (k, v) FROM STDIN", &[])?.pop() {
            Some(StatementResult::CopyIn(st)) => st,
            other => bail!("COPY did not ask for data: {other:?}"),
        };
        let mut text = String::new();
        let mut buf = Vec::new();
        for chunk in keys.chunks(COPY_CHUNK_ROWS) {
            text.clear();
            for &k in chunk {
                buf.clear();
                value(k, &mut buf);
                let _ = write!(text, "{}\t\\\\x", ik(k));
                for &b in &buf {
                    text.push(HEX[(b >> 4) as usize] as char);
                    text.push(HEX[(b & 15) as usize] as char);
                }
                text.push('\n');
            }
            let n = s.copy_in(&st, text.as_bytes())?;
            if n != chunk.len() as u64 {
                bail!("COPY loaded {n} of {} rows", chunk.len());
            }
        }
        s.execute("COMMIT", &[])?;
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        // The session and its statements hold the database open: they go first.
        self.sql = None;
        self.api.close()
    }
    fn reopen(&mut self, probe: u64) -> Result<()> {
        self.api.reopen(probe)?;
        self.sql = Some(SqlSide::new(self.api.db().clone())?);
        self.sync = true;
        Ok(())
    }
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool> {
        // Rows lent (`query_prepared_with`), as rusqlite's `get_ref` lends SQLite's: one copy,
        // into `out`, as on the other sides.
        let q = self.sql()?;
        let p = q.p_get.clone();
        let mut bad = None;
        let n = q.s.query_prepared_with(&p, &[Value::Int(ik(k))], |vals| {
            match vals.first() {
                Some(ValueRef::Bytes(b)) => out.extend_from_slice(b),
                other => bad = Some(format!("{other:?}")),
            }
            Ok(())
        })?;
        if let Some(b) = bad {
            bail!("unexpected column {b}");
        }
        Ok(n > 0)
    }
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()> {
        let q = self.sql()?;
        let p = q.p_range.clone();
        let mut bad = None;
        q.s.query_prepared_with(&p, &[Value::Int(ik(k)), Value::Int(n as i64)], |row| {
            match row {
                [ValueRef::Int(i), ValueRef::Bytes(b)] => {
                    keys.push(uk(*i));
                    vals.extend_from_slice(b);
                }
                other => bad = Some(format!("{other:?}")),
            }
            Ok(())
        })?;
        if let Some(b) = bad {
            bail!("unexpected row {b}");
        }
        Ok(())
    }
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let q = self.sql()?;
        let p = q.p_update.clone();
        let r =
            q.s.execute_prepared(&p, &[Value::Int(ik(k)), Value::Bytes(v.to_vec())])?;
        Ok(r.count() == 1)
    }
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let q = self.sql()?;
        let p = q.p_delete.clone();
        let r = q.s.execute_prepared(&p, &[Value::Int(ik(k))])?;
        Ok(r.count() == 1)
    }
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let q = self.sql()?;
        let p = q.p_insert.clone();
        match q
            .s
            .execute_prepared(&p, &[Value::Int(ik(k)), Value::Bytes(v.to_vec())])
        {
            Ok(_) => Ok(true),
            Err(e) if e.sqlstate().code() == "23505" => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    fn budget_bytes(&self) -> u64 {
        self.api.budget_bytes()
    }
    fn memory_parts(&self) -> Vec<Part> {
        self.api.memory_parts()
    }
    fn observe(&self) -> Observations {
        self.api.observe()
    }
    fn warm(&mut self) -> Result<u64> {
        // The same engine and caches as the API cell: the same full read.
        self.api.warm()
    }
}
