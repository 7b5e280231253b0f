//! The systems under test behind one interface: Augur (embedded API), Augur (SQL `Session`
//! with prepared statements), SQLite (rusqlite, prepared cached statements) and raw RocksDB
//! (keyed by primary key, opened through Augur's own `Store` so its options are identical).
//!
//! Every operation has the same semantics on every side: reads copy the value out; update and
//! delete report whether the key existed; insert fails on an existing key (RocksDB: a `get`
//! first, since it has no such check of its own).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use augur::store::{Store, StoreOptions, CF_ROWS};
use augur::{
    ColumnDef, DataType, Database, Key, KeyRange, Options, RowRef, Session, Table, TableDef, Value, ValueRef,
};
use rocksdb::{WriteBatch, WriteOptions};
use std::ops::Bound;
use std::sync::Arc;

/// Order-preserving map of a u64 key to the i64 column value (so that u64 order = i64 order on
/// every side: ALEX, SQLite's INTEGER PRIMARY KEY and RocksDB's big-endian bytes agree).
#[inline]
pub fn ik(k: u64) -> i64 {
    (k ^ (1u64 << 63)) as i64
}
#[inline]
pub fn uk(i: i64) -> u64 {
    (i as u64) ^ (1u64 << 63)
}

pub trait System {
    /// Inserts every key with its generation-0 value in one durable (fsynced) transaction.
    fn bulk_insert(&mut self, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()>;
    /// Closes every handle (clean shutdown).
    fn close(&mut self) -> Result<()>;
    /// Opens again (recovery) and answers one lookup.
    fn reopen(&mut self, probe: u64) -> Result<()>;
    /// Copies the value of `k` into `out`; false when absent.
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool>;
    /// The first `n` rows with key >= k, in key order.
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()>;
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool>;
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool>;
    /// Inserts a new key in its own commit; false if it existed.
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool>;
    /// Memory the system reports about itself, as (name, bytes).
    fn self_reported_memory(&self) -> Vec<(String, u64)>;
    /// After a reopen, before the read measurements: one full read of the table through the
    /// system's API (Augur first waits for its own row-cache prewarm), which leaves each cache
    /// holding what its design keeps and every system's files read once. Returns the rows read.
    /// API-layer cells are reopened first; SQL-layer cells (compared with SQLite's API-cell
    /// figures) get the full read without a reopen. The default (no rows read) fails the
    /// harness's row-count check if a system ever lacks its own.
    fn warm(&mut self) -> Result<u64> {
        Ok(0)
    }
}

pub fn dir_bytes(p: &Path) -> u64 {
    std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

// ---------------------------------------------------------------- Augur, embedded API

pub struct AugurApi {
    path: PathBuf,
    opts: Options,
    db: Option<Database>,
    t: Option<Arc<Table>>,
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

impl AugurApi {
    pub fn create(path: &Path, opts: Options) -> Result<Self> {
        let db = Database::open(path, opts.clone())?;
        let t = db.create_table(table_def()?)?;
        Ok(AugurApi {
            path: path.to_path_buf(),
            opts,
            db: Some(db),
            t: Some(t),
        })
    }
    fn db(&self) -> &Database {
        self.db.as_ref().expect("open")
    }
    fn t(&self) -> &Arc<Table> {
        self.t.as_ref().expect("open")
    }
}

impl System for AugurApi {
    fn bulk_insert(&mut self, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
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
        // Its own prewarm first (the row cache), then the same full read the other systems
        // get, so that every system's files have been read once (the OS page cache holds what
        // was read; RocksDB's SstFileWriter drops a bulk-loaded file's pages as it writes them).
        self.db().wait_for_prewarm();
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
        // The row lent in place (as rusqlite's `get_ref` lends SQLite's cell): one copy, into
        // `out`, as on the other sides.
        let tx = self.db().begin();
        match tx.get_with(self.t(), &Key::Int(ik(k)), |row| bytes_of(row, out))? {
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
        tx.scan_with(self.t(), &r, false, |key, row| {
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
    fn self_reported_memory(&self) -> Vec<(String, u64)> {
        let mut v = vec![(
            "augur row cache (Stats::row_cache_bytes)".to_string(),
            self.db().stats().row_cache_bytes,
        )];
        v.push((
            "augur primary index heap (Table::index_heap_bytes)".into(),
            self.t().index_heap_bytes() as u64,
        ));
        v
    }
}

// ---------------------------------------------------------------- Augur, SQL layer

pub struct AugurSql {
    api: AugurApi,
    s: Session,
    p_get: Arc<augur::sql::Prepared>,
    p_range: Arc<augur::sql::Prepared>,
    p_update: Arc<augur::sql::Prepared>,
    p_delete: Arc<augur::sql::Prepared>,
    p_insert: Arc<augur::sql::Prepared>,
    sync: bool,
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
        };
        let mut s = Session::new(db);
        let p_get = s.prepare("SELECT v FROM t WHERE k = $1")?;
        let p_range = s.prepare("SELECT k, v FROM t WHERE k >= $1 ORDER BY k LIMIT $2")?;
        let p_update = s.prepare("UPDATE t SET v = $2 WHERE k = $1")?;
        let p_delete = s.prepare("DELETE FROM t WHERE k = $1")?;
        let p_insert = s.prepare("INSERT INTO t (k, v) VALUES ($1, $2)")?;
        Ok(AugurSql {
            api,
            s,
            p_get,
            p_range,
            p_update,
            p_delete,
            p_insert,
            sync: true,
        })
    }
    fn set_sync(&mut self, sync: bool) -> Result<()> {
        if sync != self.sync {
            self.s.execute(
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
    fn bulk_insert(&mut self, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
        self.set_sync(true)?;
        self.s.execute("BEGIN", &[])?;
        let p = self.p_insert.clone();
        let mut buf = Vec::new();
        for &k in keys {
            buf.clear();
            value(k, &mut buf);
            self.s
                .execute_prepared(&p, &[Value::Int(ik(k)), Value::Bytes(buf.clone())])?;
        }
        self.s.execute("COMMIT", &[])?;
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        bail!("reopen is measured on the API layer only")
    }
    fn reopen(&mut self, _probe: u64) -> Result<()> {
        bail!("reopen is measured on the API layer only")
    }
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool> {
        let p = self.p_get.clone();
        let r = self.s.execute_prepared(&p, &[Value::Int(ik(k))])?;
        match r.rows().first() {
            Some(row) => match row.first() {
                Some(Value::Bytes(b)) => {
                    out.extend_from_slice(b);
                    Ok(true)
                }
                other => bail!("unexpected column {other:?}"),
            },
            None => Ok(false),
        }
    }
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()> {
        let p = self.p_range.clone();
        let r = self
            .s
            .execute_prepared(&p, &[Value::Int(ik(k)), Value::Int(n as i64)])?;
        for row in r.rows() {
            match (&row[0], &row[1]) {
                (Value::Int(i), Value::Bytes(b)) => {
                    keys.push(uk(*i));
                    vals.extend_from_slice(b);
                }
                other => bail!("unexpected row {other:?}"),
            }
        }
        Ok(())
    }
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let p = self.p_update.clone();
        let r = self
            .s
            .execute_prepared(&p, &[Value::Int(ik(k)), Value::Bytes(v.to_vec())])?;
        Ok(r.count() == 1)
    }
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let p = self.p_delete.clone();
        let r = self.s.execute_prepared(&p, &[Value::Int(ik(k))])?;
        Ok(r.count() == 1)
    }
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        self.set_sync(sync)?;
        let p = self.p_insert.clone();
        match self
            .s
            .execute_prepared(&p, &[Value::Int(ik(k)), Value::Bytes(v.to_vec())])
        {
            Ok(_) => Ok(true),
            Err(e) if e.sqlstate().code() == "23505" => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    fn self_reported_memory(&self) -> Vec<(String, u64)> {
        self.api.self_reported_memory()
    }
    fn warm(&mut self) -> Result<u64> {
        // The same engine and caches as the API cell: the same full read.
        self.api.warm()
    }
}

// ---------------------------------------------------------------- SQLite

pub struct Sqlite {
    file: PathBuf,
    cache_kib: i64,
    conn: Option<rusqlite::Connection>,
    sync: bool,
}

pub const SQLITE_PRAGMAS: &str = "journal_mode=WAL, synchronous=FULL (sync) / NORMAL (nosync), cache_size=-<budget KiB>, mmap_size=0 (default), page_size=4096 (default), wal_autocheckpoint=1000 (default), table `t(k INTEGER PRIMARY KEY, v BLOB NOT NULL)` (rowid table: the B-tree is clustered on k)";

impl Sqlite {
    pub fn create(dir: &Path, cache_bytes: usize) -> Result<Self> {
        std::fs::create_dir_all(dir)?;
        let mut s = Sqlite {
            file: dir.join("bench.sqlite"),
            cache_kib: (cache_bytes / 1024) as i64,
            conn: None,
            sync: true,
        };
        s.open()?;
        s.c()
            .execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB NOT NULL);")?;
        Ok(s)
    }
    fn open(&mut self) -> Result<()> {
        let c = rusqlite::Connection::open(&self.file)?;
        let mode: String = c.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if mode != "wal" {
            bail!("sqlite: journal_mode is {mode}");
        }
        c.execute_batch(&format!(
            "PRAGMA synchronous=FULL; PRAGMA cache_size=-{};",
            self.cache_kib
        ))?;
        c.set_prepared_statement_cache_capacity(16);
        self.sync = true;
        self.conn = Some(c);
        Ok(())
    }
    fn c(&self) -> &rusqlite::Connection {
        self.conn.as_ref().expect("open")
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
}

impl System for Sqlite {
    fn bulk_insert(&mut self, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
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
    fn self_reported_memory(&self) -> Vec<(String, u64)> {
        // SAFETY: sqlite3_memory_used only reads SQLite's global memory statistics.
        let used = unsafe { rusqlite::ffi::sqlite3_memory_used() };
        vec![("sqlite3_memory_used".into(), used.max(0) as u64)]
    }
}

// ---------------------------------------------------------------- raw RocksDB

pub struct Rocks {
    path: PathBuf,
    opts: StoreOptions,
    store: Option<Store>,
}

impl Rocks {
    pub fn create(path: &Path, opts: StoreOptions) -> Result<Self> {
        let store = Store::open(path, &opts)?;
        Ok(Rocks {
            path: path.to_path_buf(),
            opts,
            store: Some(store),
        })
    }
    fn s(&self) -> &Store {
        self.store.as_ref().expect("open")
    }
    fn wo(sync: bool) -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        wo
    }
    fn exists(&self, k: u64) -> Result<bool> {
        let s = self.s();
        Ok(s.db().get_pinned_cf(s.cf(CF_ROWS), k.to_be_bytes())?.is_some())
    }
}

impl System for Rocks {
    fn bulk_insert(&mut self, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
        let s = self.s();
        let cf = s.cf(CF_ROWS);
        let mut b = WriteBatch::default();
        let mut buf = Vec::new();
        for &k in keys {
            buf.clear();
            value(k, &mut buf);
            b.put_cf(cf, k.to_be_bytes(), &buf);
        }
        s.db().write_opt(b, &Self::wo(true))?;
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        if let Some(s) = self.store.take() {
            s.db().flush_wal(true)?;
            drop(s);
        }
        Ok(())
    }
    fn reopen(&mut self, probe: u64) -> Result<()> {
        self.store = Some(Store::open(&self.path, &self.opts)?);
        if !self.exists(probe)? {
            bail!("rocksdb: probe key missing after reopen");
        }
        Ok(())
    }
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool> {
        let s = self.s();
        match s.db().get_pinned_cf(s.cf(CF_ROWS), k.to_be_bytes())? {
            Some(v) => {
                out.extend_from_slice(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn warm(&mut self) -> Result<u64> {
        // Through the block cache (fill_cache is on by default).
        let s = self.s();
        let mut it = s.db().raw_iterator_cf(s.cf(CF_ROWS));
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()> {
        let s = self.s();
        let mut it = s.db().raw_iterator_cf(s.cf(CF_ROWS));
        it.seek(k.to_be_bytes());
        while it.valid() && keys.len() < n {
            let key = it.key().expect("valid");
            keys.push(u64::from_be_bytes(key.try_into()?));
            vals.extend_from_slice(it.value().expect("valid"));
            it.next();
        }
        it.status()?;
        Ok(())
    }
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        if !self.exists(k)? {
            return Ok(false);
        }
        let s = self.s();
        s.db()
            .put_cf_opt(s.cf(CF_ROWS), k.to_be_bytes(), v, &Self::wo(sync))?;
        Ok(true)
    }
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool> {
        if !self.exists(k)? {
            return Ok(false);
        }
        let s = self.s();
        s.db()
            .delete_cf_opt(s.cf(CF_ROWS), k.to_be_bytes(), &Self::wo(sync))?;
        Ok(true)
    }
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        if self.exists(k)? {
            return Ok(false);
        }
        let s = self.s();
        s.db()
            .put_cf_opt(s.cf(CF_ROWS), k.to_be_bytes(), v, &Self::wo(sync))?;
        Ok(true)
    }
    fn self_reported_memory(&self) -> Vec<(String, u64)> {
        let s = self.s();
        let mut v = Vec::new();
        for p in [
            "rocksdb.block-cache-usage",
            "rocksdb.cur-size-all-mem-tables",
            "rocksdb.estimate-table-readers-mem",
        ] {
            if let Ok(Some(x)) = s.db().property_int_value_cf(s.cf(CF_ROWS), p) {
                v.push((p.to_string(), x));
            }
        }
        v
    }
}
