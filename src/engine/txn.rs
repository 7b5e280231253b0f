//! Transactions: snapshot reads with read-your-writes, buffered writes under row write locks,
//! validation, and the commit protocol (one WriteBatch, group fsync, then publish).
//!
//! Every write of a key first takes that key's row lock ([`super::locks`]), held until commit or
//! rollback, so a second writer of the same row waits for the first instead of failing. When it
//! gets the lock, the row may have been changed by a transaction that committed after its
//! snapshot: under [`Isolation::Snapshot`] that is a serialization failure (40001, as
//! PostgreSQL's REPEATABLE READ); under [`Isolation::ReadCommitted`] the writer gets the newest
//! version ([`Locked::Changed`]) and the SQL layer re-evaluates its statement on it (as
//! PostgreSQL's READ COMMITTED does).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksdb::WriteBatch;

use super::gc::GcItem;
use super::interrupt::{statement_timeout, Interrupt};
use super::{Inner, Table};
use crate::error::{Error, Result, SqlState};
use crate::index::keyed::TOMBSTONE;
use crate::store::{row_key, CF_META, CF_ROWS};
use crate::types::codec::encode_version;
use crate::types::{Key, Row, RowRef, Value};

#[derive(Clone, Debug)]
enum Pending {
    Put(Arc<Row>),
    Delete,
}

struct TableWrites {
    table: Arc<Table>,
    ops: BTreeMap<Key, Pending>,
}

/// Bounds on the primary key for [`Transaction::scan`].
#[derive(Clone, Debug)]
pub struct KeyRange {
    pub lo: Bound<Key>,
    pub hi: Bound<Key>,
}

impl KeyRange {
    pub fn all() -> KeyRange {
        KeyRange {
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        }
    }
    pub fn contains(&self, k: &Key) -> bool {
        (match &self.lo {
            Bound::Unbounded => true,
            Bound::Included(l) => k >= l,
            Bound::Excluded(l) => k > l,
        }) && (match &self.hi {
            Bound::Unbounded => true,
            Bound::Included(h) => k <= h,
            Bound::Excluded(h) => k < h,
        })
    }
}

/// Isolation level of a [`Transaction`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Snapshot isolation (PostgreSQL's REPEATABLE READ): every read sees the database as of the
    /// transaction's start; writing a row that another transaction changed since then fails
    /// with 40001. The default of [`crate::Database::begin`].
    #[default]
    Snapshot,
    /// PostgreSQL's READ COMMITTED: [`Transaction::begin_statement`] takes a new snapshot for
    /// each statement, and a write to a row changed since the statement began waits for the
    /// other writer, then goes on with the newest version. The SQL layer's default.
    ReadCommitted,
}

/// What [`Transaction::lock_row`] found once it held the lock.
#[derive(Clone, Debug)]
pub enum Locked {
    /// The newest committed version is the one this transaction's snapshot sees.
    Unchanged,
    /// (Read committed only.) A transaction that committed after this snapshot changed the
    /// row: its newest version (`None`: deleted).
    Changed(Option<Arc<Row>>),
}

/// A transaction. Reads see a snapshot of the database (one per transaction or per statement,
/// see [`Isolation`]) plus this transaction's own writes; writes take row locks and are buffered
/// until [`Transaction::commit`]. Dropping an uncommitted transaction rolls it back.
pub struct Transaction {
    db: Arc<Inner>,
    id: u64,
    snapshot: u64,
    isolation: Isolation,
    writes: HashMap<u32, TableWrites>,
    /// Row locks held: table id → key → the key's index payload when the lock was taken.
    /// A RefCell so that a statement can lock rows while it reads through `&Transaction`.
    locks: RefCell<HashMap<u32, HashMap<Key, u64>>>,
    lock_timeout: Option<Duration>,
    /// What interrupts this transaction's row-lock waits (the running statement's
    /// statement_timeout and cancel request); see [`Transaction::set_interrupt`].
    stop: Interrupt,
    finished: bool,
    /// Per-transaction override of `Options::sync_commits`.
    sync: Option<bool>,
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.finish();
    }
}

const SCAN_BATCH: usize = 256;

/// A row a scan reached: this transaction's own write, or a stored version's bytes.
enum Found<'a> {
    Own(&'a Arc<Row>),
    Stored(&'a [u8]),
}

/// Where a commit writes each encoded version: a WriteBatch or an SST file.
type PutFn<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// Commits with at least this many row versions are written as an ingested SST file.
pub const BULK_COMMIT_ROWS: usize = 50_000;

impl Transaction {
    pub(crate) fn new(db: Arc<Inner>) -> Transaction {
        let snapshot = db.begin_snapshot();
        Transaction {
            id: db.new_txn_id(),
            db,
            snapshot,
            isolation: Isolation::Snapshot,
            writes: HashMap::new(),
            locks: RefCell::new(HashMap::new()),
            lock_timeout: None,
            stop: Interrupt::default(),
            finished: false,
            sync: None,
        }
    }

    /// This transaction's identifier (unique while the database is open).
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Sets the isolation level; call before the first statement.
    pub fn set_isolation(&mut self, iso: Isolation) {
        self.isolation = iso;
    }

    /// How long a write waits for another transaction's row lock before failing with 55P03
    /// (`None`: no limit, the default, as PostgreSQL's `lock_timeout = 0`).
    pub fn set_lock_timeout(&mut self, t: Option<Duration>) {
        self.lock_timeout = t;
    }

    /// Row-lock waits of this transaction's writes (`insert_in`, `update_in`, `lock_row`, ...)
    /// fail with 57014 when `stop` says so (a statement deadline, a canceled request), until
    /// it is replaced. The SQL layer sets it for each statement.
    pub fn set_interrupt(&mut self, stop: Interrupt) {
        self.stop = stop;
    }

    /// Marks the start of a statement: under read committed, later reads see everything
    /// committed until now (plus this transaction's writes). A no-op under snapshot isolation.
    pub fn begin_statement(&mut self) {
        if self.isolation == Isolation::ReadCommitted && !self.finished {
            let s = self.db.begin_snapshot();
            self.db.end_snapshot(self.snapshot);
            self.snapshot = s;
        }
    }

    /// Takes the write lock on `key` of `t` (waiting while another transaction holds it, up to
    /// the lock timeout; 40P01 on a deadlock) and reports whether the row changed after this
    /// transaction's snapshot. Under snapshot isolation a change is a serialization failure.
    /// Held until commit or rollback; taking a lock this transaction holds returns at once.
    pub fn lock_row(&self, t: &Table, key: &Key) -> Result<Locked> {
        self.lock_row_by(t, key, &self.stop)
    }

    /// [`Transaction::lock_row`] within a statement that `stop` interrupts: a wait past its
    /// deadline (`statement_timeout`) or a cancel of its request fails with 57014.
    pub fn lock_row_by(&self, t: &Table, key: &Key, stop: &Interrupt) -> Result<Locked> {
        self.check_active()?;
        self.check_table(t)?;
        let Some(latest) = self.acquire(t, key, stop)? else {
            return Ok(Locked::Unchanged);
        };
        if latest & !TOMBSTONE <= self.snapshot {
            return Ok(Locked::Unchanged);
        }
        match self.isolation {
            Isolation::Snapshot => {
                self.db.stats.lock().conflicts += 1;
                Err(Error::serialization())
            }
            Isolation::ReadCommitted => Ok(Locked::Changed(self.db.resolve(t.id, latest, u64::MAX)?)),
        }
    }

    /// Takes the row lock; returns the key's newest index payload, or None if this
    /// transaction already held the lock.
    fn acquire(&self, t: &Table, key: &Key, stop: &Interrupt) -> Result<Option<u64>> {
        let stmt_deadline = stop.deadline;
        if self
            .locks
            .borrow()
            .get(&t.id)
            .is_some_and(|m| m.contains_key(key))
        {
            return Ok(None);
        }
        let lock_deadline = self.lock_timeout.map(|d| Instant::now() + d);
        let statement_first = match (stmt_deadline, lock_deadline) {
            (Some(s), Some(l)) => s < l,
            (s, _) => s.is_some(),
        };
        let deadline = if statement_first {
            stmt_deadline
        } else {
            lock_deadline
        };
        match self.db.locks.acquire(self.id, t.id, key, deadline, stop) {
            Ok(true) => self.db.stats.lock().lock_waits += 1,
            Ok(false) => {}
            Err(e) => {
                if e.sqlstate() == SqlState::DEADLOCK_DETECTED {
                    self.db.stats.lock().deadlocks += 1;
                }
                if e.sqlstate() == SqlState::LOCK_NOT_AVAILABLE && statement_first {
                    return Err(statement_timeout());
                }
                return Err(e);
            }
        }
        let latest = t.pk.read().get(key).unwrap_or(0);
        self.locks
            .borrow_mut()
            .entry(t.id)
            .or_default()
            .insert(key.clone(), latest);
        Ok(Some(latest))
    }

    /// Whether the newest committed version of `key` is a live row (call holding its lock).
    fn committed_live(&self, t: &Table, key: &Key) -> bool {
        let p = self
            .locks
            .borrow()
            .get(&t.id)
            .and_then(|m| m.get(key))
            .copied()
            .unwrap_or(0);
        p != 0 && p & TOMBSTONE == 0
    }

    /// The snapshot (a rowid watermark) this transaction reads at.
    pub fn snapshot(&self) -> u64 {
        self.snapshot
    }

    /// Whether this transaction has buffered any write.
    pub fn has_writes(&self) -> bool {
        self.writes.values().any(|w| !w.ops.is_empty())
    }

    /// Overrides whether this commit waits for fsync.
    pub fn set_sync(&mut self, sync: bool) {
        self.sync = Some(sync);
    }

    /// Fails once the transaction has finished, or once its engine instance was retired by a
    /// storage recovery (57P02 / 57P03, see `Inner::retired_error`).
    #[inline]
    fn check_active(&self) -> Result<()> {
        if self.finished || self.db.retired.load(Ordering::Relaxed) {
            return Err(self.inactive());
        }
        Ok(())
    }

    #[cold]
    fn inactive(&self) -> Error {
        if let Some(e) = self.db.retired_error(self.id) {
            return e;
        }
        Error::new(
            SqlState::NO_ACTIVE_SQL_TRANSACTION,
            "transaction already finished",
        )
    }

    /// Fails for a table that was dropped, or replaced (TRUNCATE, ALTER, or the engine reopening
    /// after a write failure, which replaces every table) since the caller looked it up: its
    /// index no longer describes the stored rows.
    #[inline]
    fn check_table(&self, t: &Table) -> Result<()> {
        if t.is_dropped() {
            return Err(self.table_gone(t));
        }
        Ok(())
    }

    #[cold]
    fn table_gone(&self, t: &Table) -> Error {
        if let Some(e) = self.db.retired_error(self.id) {
            return e;
        }
        let name = t.name();
        if self.db.table(&name).is_ok() {
            return Error::new(
                SqlState::SERIALIZATION_FAILURE,
                format!("could not serialize access: relation \"{name}\" was replaced while this statement ran; retry it"),
            );
        }
        Error::undefined_table(&name)
    }

    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.db.table(name)
    }

    fn pending(&self, t: &Table, key: &Key) -> Option<&Pending> {
        self.writes.get(&t.id).and_then(|w| w.ops.get(key))
    }

    fn put_pending(&mut self, t: &Arc<Table>, key: Key, p: Pending) {
        self.writes
            .entry(t.id)
            .or_insert_with(|| TableWrites {
                table: t.clone(),
                ops: BTreeMap::new(),
            })
            .ops
            .insert(key, p);
    }

    /// Reads the row with primary key `key` (for tables without a primary key: its row identity).
    pub fn get(&self, table: &str, key: &Key) -> Result<Option<Row>> {
        let t = self.db.table(table)?;
        Ok(self.get_in(&t, key)?.map(|r| (*r).clone()))
    }

    /// [`Transaction::get`] on a resolved table, without cloning the row.
    pub fn get_in(&self, t: &Table, key: &Key) -> Result<Option<Arc<Row>>> {
        self.check_active()?;
        self.check_table(t)?;
        if let Some(p) = self.pending(t, key) {
            return Ok(match p {
                Pending::Put(r) => Some(r.clone()),
                Pending::Delete => None,
            });
        }
        let payload = t.pk.read().get(key);
        match payload {
            None => Ok(None),
            Some(p) => self.db.resolve(t.id, p, self.snapshot),
        }
    }

    /// Reads the row with primary key `key` and lends it to `f` in place (no decoding into an
    /// owned row, no allocation for a stored row); `None` when there is no such row.
    ///
    /// ```
    /// # use augur::{Database, Options, TableDef, ColumnDef, DataType, Value, Key, ValueRef};
    /// # let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path(), Options::default())?;
    /// let t = db.create_table(TableDef::new("kv", vec![
    ///     ColumnDef::new("k", DataType::Int8),
    ///     ColumnDef::new("v", DataType::Bytea),
    /// ], &["k"])?)?;
    /// db.insert("kv", vec![Value::Int(7), Value::Bytes(vec![1, 2, 3])])?;
    /// let tx = db.begin();
    /// let mut out = Vec::new();
    /// let found = tx.get_with(&t, &Key::Int(7), |row| -> augur::Result<()> {
    ///     if let Some(ValueRef::Bytes(b)) = row.get(1)? {
    ///         out.extend_from_slice(b);
    ///     }
    ///     Ok(())
    /// })?;
    /// assert!(found.transpose()?.is_some());
    /// assert_eq!(out, [1, 2, 3]);
    /// assert!(tx.get_with(&t, &Key::Int(8), |_| ())?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_with<R>(&self, t: &Table, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
        self.check_active()?;
        self.check_table(t)?;
        if let Some(p) = self.pending(t, key) {
            return Ok(match p {
                Pending::Put(r) => Some(f(RowRef::values(r))),
                Pending::Delete => None,
            });
        }
        let payload = t.pk.read().get(key);
        let Some(p) = payload else {
            return Ok(None);
        };
        let files = self.db.files();
        let Some(bytes) = self.db.resolve_bytes(&files, t.id, p, self.snapshot)? else {
            return Ok(None);
        };
        Ok(crate::types::codec::row_view(&bytes)?.map(|v| f(RowRef::stored(v))))
    }

    /// Visits rows with primary key in `range`, in key order (descending when `reverse`),
    /// until `f` returns false. Each row is decoded into an owned [`Row`];
    /// [`Transaction::scan_with`] lends it in place instead.
    pub fn scan_in(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        mut f: impl FnMut(&Key, &Arc<Row>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_core(t, range, reverse, |k, found| match found {
            Found::Own(r) => f(k, r),
            Found::Stored(b) => match crate::types::codec::decode_version(b)?.row {
                Some(row) => f(k, &Arc::new(row)),
                None => Ok(true),
            },
        })
    }

    /// [`Transaction::scan_in`] without decoding: each row is lent to `f` as a [`RowRef`] read
    /// in place from the stored version (the row cache's copy or RocksDB's buffer), so a scan
    /// that copies out or inspects a column allocates nothing per row.
    ///
    /// ```
    /// # use augur::{Database, Options, TableDef, ColumnDef, DataType, Value, Key, KeyRange, ValueRef};
    /// # use std::ops::Bound;
    /// # let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path(), Options::default())?;
    /// let t = db.create_table(TableDef::new("kv", vec![
    ///     ColumnDef::new("k", DataType::Int8),
    ///     ColumnDef::new("v", DataType::Text(None)),
    /// ], &["k"])?)?;
    /// db.insert("kv", vec![Value::Int(1), Value::Text("one".into())])?;
    /// db.insert("kv", vec![Value::Int(2), Value::Text("two".into())])?;
    /// let tx = db.begin();
    /// let mut total = 0;
    /// tx.scan_with(&t, &KeyRange { lo: Bound::Included(Key::Int(1)), hi: Bound::Unbounded }, false, |_, row| {
    ///     if let Some(ValueRef::Text(s)) = row.get(1)? {
    ///         total += s.len();
    ///     }
    ///     Ok(true)
    /// })?;
    /// assert_eq!(total, 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_with(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        mut f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_core(t, range, reverse, |k, found| match found {
            Found::Own(r) => f(k, RowRef::values(r)),
            Found::Stored(b) => match crate::types::codec::row_view(b)? {
                Some(v) => f(k, RowRef::stored(v)),
                None => Ok(true),
            },
        })
    }

    /// The scan behind [`Transaction::scan_in`] and [`Transaction::scan_with`]: hands `f` each
    /// key with this transaction's own row or the bytes of the version its snapshot sees
    /// (which may be a tombstone: the caller skips those).
    fn scan_core(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        mut f: impl FnMut(&Key, Found<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.check_active()?;
        self.check_table(t)?;
        // This transaction's own writes in the range, merged by key order.
        let mut mine: Vec<(Key, Pending)> = match self.writes.get(&t.id) {
            None => Vec::new(),
            Some(w) => w
                .ops
                .iter()
                .filter(|(k, _)| range.contains(k))
                .map(|(k, p)| (k.clone(), p.clone()))
                .collect(),
        };
        if reverse {
            mine.reverse();
        }
        let mut mine = mine.into_iter().peekable();
        let before = |a: &Key, b: &Key| if reverse { a > b } else { a < b };

        let mut lo = range.lo.clone();
        let mut hi = range.hi.clone();
        let mut batch: Vec<(Key, u64)> = Vec::with_capacity(SCAN_BATCH);
        let mut chunk = 16;
        let files = self.db.files();
        let mut pre = Vec::new();
        loop {
            batch.clear();
            let mut next_fetch = 0;
            let more =
                t.pk.read()
                    .range_batch(bound_ref(&lo), bound_ref(&hi), reverse, SCAN_BATCH, &mut batch);
            for (i, (k, p)) in batch.iter().enumerate() {
                if i == next_fetch {
                    // Read the next rows together (one iterator pass or one multi-get) rather
                    // than one point read each; chunks grow so that a short scan reads little.
                    let end = (i + chunk).min(batch.len());
                    let mut want: Vec<u64> = batch[i..end]
                        .iter()
                        .filter(|(_, p)| p & TOMBSTONE == 0 && *p <= self.snapshot)
                        .map(|(_, p)| *p)
                        .collect();
                    want.sort_unstable();
                    pre = self.db.fetch_many(&files, t.id, &want)?;
                    next_fetch = end;
                    chunk = (chunk * 2).min(SCAN_BATCH);
                }
                // Own writes that sort before this key come first.
                while let Some((mk, _)) = mine.peek() {
                    if before(mk, k) {
                        let (mk, mp) = mine.next().expect("peeked");
                        if let Pending::Put(r) = mp {
                            if !f(&mk, Found::Own(&r))? {
                                return Ok(());
                            }
                        }
                    } else {
                        break;
                    }
                }
                if let Some((mk, _)) = mine.peek() {
                    if mk == k {
                        let (mk, mp) = mine.next().expect("peeked");
                        if let Pending::Put(r) = mp {
                            if !f(&mk, Found::Own(&r))? {
                                return Ok(());
                            }
                        }
                        continue;
                    }
                }
                // The common case, the newest version visible and read with its chunk, without
                // touching its reference count; else the version chain (an older version, or
                // one the chunk's read did not return).
                let rowid = p & !TOMBSTONE;
                let at = if p & TOMBSTONE == 0 && rowid <= self.snapshot {
                    pre.binary_search_by_key(&rowid, |e| e.0).ok()
                } else {
                    None
                };
                let go = match at {
                    Some(i) => f(k, Found::Stored(&pre[i].1))?,
                    None => match self.db.resolve_bytes(&files, t.id, *p, self.snapshot)? {
                        Some(b) => f(k, Found::Stored(&b))?,
                        None => true,
                    },
                };
                if !go {
                    return Ok(());
                }
            }
            if !more {
                break;
            }
            let last = batch.last().expect("a full batch").0.clone();
            if reverse {
                hi = Bound::Excluded(last);
            } else {
                lo = Bound::Excluded(last);
            }
        }
        for (mk, mp) in mine {
            if let Pending::Put(r) = mp {
                if !f(&mk, Found::Own(&r))? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The number of rows with primary key in `range` this transaction sees: what
    /// [`Transaction::scan_in`] would visit, counted from the primary index without reading
    /// rows. A payload at or below the snapshot is the visible version itself (live unless it
    /// carries the tombstone bit); only a key written after the snapshot needs its version
    /// chain read. `check` runs once per index batch (statement timeout, cancel).
    pub fn count_in(
        &self,
        t: &Table,
        range: &KeyRange,
        mut check: impl FnMut() -> Result<()>,
    ) -> Result<u64> {
        self.check_active()?;
        let mine = self.writes.get(&t.id).map(|w| &w.ops).filter(|o| !o.is_empty());
        let mut n: u64 = match mine {
            None => 0,
            Some(ops) => ops
                .range((bound_ref(&range.lo), bound_ref(&range.hi)))
                .filter(|(_, p)| matches!(p, Pending::Put(_)))
                .count() as u64,
        };
        let mut lo = range.lo.clone();
        let mut batch: Vec<(Key, u64)> = Vec::with_capacity(SCAN_BATCH);
        loop {
            check()?;
            batch.clear();
            let more = t.pk.read().range_batch(
                bound_ref(&lo),
                bound_ref(&range.hi),
                false,
                SCAN_BATCH,
                &mut batch,
            );
            for (k, p) in &batch {
                // Keys this transaction wrote were counted from its own writes.
                if mine.is_some_and(|ops| ops.contains_key(k)) {
                    continue;
                }
                let visible = if p & !TOMBSTONE <= self.snapshot {
                    p & TOMBSTONE == 0
                } else {
                    self.db.resolve(t.id, *p, self.snapshot)?.is_some()
                };
                n += visible as u64;
            }
            if !more {
                break;
            }
            lo = Bound::Excluded(batch.last().expect("a full batch").0.clone());
        }
        Ok(n)
    }

    /// Collects the rows with primary key in `range`, in key order.
    pub fn scan(&self, table: &str, range: KeyRange) -> Result<Vec<(Key, Row)>> {
        let t = self.db.table(table)?;
        let mut out = Vec::new();
        self.scan_in(&t, &range, false, |k, r| {
            out.push((k.clone(), (**r).clone()));
            Ok(true)
        })?;
        Ok(out)
    }

    /// Rows whose secondary index `index` (position in the table's index list) has encoded
    /// values within the bounds, ordered by (value, key).
    pub fn index_scan_in(
        &self,
        t: &Table,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        self.check_active()?;
        let def = t.def();
        let idx = def
            .indexes
            .get(index)
            .ok_or_else(|| Error::internal(format!("no index {index} on {}", def.name)))?
            .clone();
        let mut keys = t
            .secondary
            .read()
            .get(index)
            .map(|s| s.candidates(lo, hi))
            .unwrap_or_default();
        if let Some(w) = self.writes.get(&t.id) {
            keys.extend(w.ops.keys().cloned());
        }
        keys.sort();
        keys.dedup();
        let in_range = |v: &[u8]| {
            (match lo {
                Bound::Unbounded => true,
                Bound::Included(l) => v >= l,
                Bound::Excluded(l) => v > l,
            }) && (match hi {
                Bound::Unbounded => true,
                Bound::Included(h) => v <= h,
                Bound::Excluded(h) => v < h,
            })
        };
        let mut out = Vec::new();
        for k in keys {
            if let Some(row) = self.get_in(t, &k)? {
                if let Some(v) = def.index_value(&idx, &row) {
                    if in_range(&v) {
                        out.push((v, k, row));
                    }
                }
            }
        }
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        Ok(out.into_iter().map(|(_, k, r)| (k, r)).collect())
    }

    fn duplicate_key(t: &Table) -> Error {
        let def = t.def();
        Error::new(
            SqlState::UNIQUE_VIOLATION,
            format!(
                "duplicate key value violates unique constraint \"{}\"",
                def.pkey_name
                    .clone()
                    .unwrap_or_else(|| format!("{}_pkey", def.name))
            ),
        )
    }

    /// Checks unique secondary indexes for `row` (with key `key`) against what this transaction sees.
    fn check_unique(&self, t: &Table, key: &Key, row: &[Value]) -> Result<()> {
        let def = t.def();
        for (i, idx) in def.indexes.iter().enumerate() {
            if !idx.unique {
                continue;
            }
            let Some(v) = def.index_value(idx, row) else {
                continue;
            };
            let conflict = self
                .index_scan_in(t, i, Bound::Included(&v), Bound::Included(&v))?
                .into_iter()
                .any(|(k, _)| &k != key);
            if conflict {
                return Err(Error::new(
                    SqlState::UNIQUE_VIOLATION,
                    format!("duplicate key value violates unique constraint \"{}\"", idx.name),
                ));
            }
        }
        Ok(())
    }

    /// Inserts a row; fails with 23505 if its primary key exists. Returns the row's key.
    pub fn insert(&mut self, table: &str, row: Row) -> Result<Key> {
        let t = self.db.table(table)?;
        self.insert_in(&t, row)
    }

    pub fn insert_in(&mut self, t: &Arc<Table>, row: Row) -> Result<Key> {
        self.check_active()?;
        let def = t.def();
        let row = def.check_row(row)?;
        let key = if def.has_primary_key() {
            def.key_of(&row)?
        } else {
            Key::Int(t.hidden_next.fetch_add(1, Ordering::Relaxed))
        };
        if !def.indexes.is_empty() {
            self.check_unique(t, &key, &row)?;
        }
        // A pending put is a duplicate and a pending delete frees the key; otherwise, holding
        // the key's lock, the newest committed version decides (a row committed after this
        // snapshot is a duplicate too, as in PostgreSQL).
        match self.pending(t, &key) {
            Some(Pending::Put(_)) => return Err(Self::duplicate_key(t)),
            Some(Pending::Delete) => {}
            None if def.has_primary_key() => {
                // Unique checks are not snapshot-bound: a row another transaction committed
                // after this snapshot is a duplicate (23505), as in PostgreSQL.
                self.acquire(t, &key, &self.stop)?;
                if self.committed_live(t, &key) {
                    return Err(Self::duplicate_key(t));
                }
            }
            None => {} // a fresh hidden row identity
        }
        self.put_pending(t, key.clone(), Pending::Put(Arc::new(row)));
        Ok(key)
    }

    /// Inserts or replaces the row with the same primary key. Returns the key.
    pub fn upsert(&mut self, table: &str, row: Row) -> Result<Key> {
        let t = self.db.table(table)?;
        self.check_active()?;
        let def = t.def();
        if !def.has_primary_key() {
            return self.insert_in(&t, row);
        }
        let row = def.check_row(row)?;
        let key = def.key_of(&row)?;
        self.check_unique(&t, &key, &row)?;
        self.lock_row(&t, &key)?;
        self.put_pending(&t, key.clone(), Pending::Put(Arc::new(row)));
        Ok(key)
    }

    /// Replaces the row with key `key` by `row` (whose key may differ: then it moves, with a
    /// uniqueness check). Returns false if no such row (or, under read committed, if a
    /// concurrent transaction deleted it).
    pub fn update_in(&mut self, t: &Arc<Table>, key: &Key, row: Row) -> Result<bool> {
        self.check_active()?;
        if self.get_in(t, key)?.is_none() {
            return Ok(false);
        }
        if let Locked::Changed(None) = self.lock_row(t, key)? {
            return Ok(false);
        }
        let def = t.def();
        let row = def.check_row(row)?;
        let new_key = if def.has_primary_key() {
            def.key_of(&row)?
        } else {
            key.clone()
        };
        if &new_key != key {
            let taken = match self.pending(t, &new_key) {
                Some(p) => matches!(p, Pending::Put(_)),
                None => {
                    self.acquire(t, &new_key, &self.stop)?;
                    self.committed_live(t, &new_key)
                }
            };
            if taken {
                return Err(Self::duplicate_key(t));
            }
            self.put_pending(t, key.clone(), Pending::Delete);
        }
        self.check_unique(t, &new_key, &row)?;
        self.put_pending(t, new_key, Pending::Put(Arc::new(row)));
        Ok(true)
    }

    pub fn update(&mut self, table: &str, key: &Key, row: Row) -> Result<bool> {
        let t = self.db.table(table)?;
        self.update_in(&t, key, row)
    }

    /// Deletes the row with key `key`; returns false if there was none.
    pub fn delete_in(&mut self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        self.check_active()?;
        if self.get_in(t, key)?.is_none() {
            return Ok(false);
        }
        if let Locked::Changed(None) = self.lock_row(t, key)? {
            return Ok(false);
        }
        self.put_pending(t, key.clone(), Pending::Delete);
        Ok(true)
    }

    pub fn delete(&mut self, table: &str, key: &Key) -> Result<bool> {
        let t = self.db.table(table)?;
        self.delete_in(&t, key)
    }

    /// Discards every write.
    pub fn rollback(mut self) {
        self.finish();
    }

    /// Ends the transaction: releases its snapshot and its row locks (after a commit: once the
    /// commit is visible, so a waiter that gets a lock sees the version that held it).
    fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.db.end_snapshot(self.snapshot);
            self.release_locks();
        }
    }

    fn release_locks(&self) {
        let locks = self.locks.take();
        if !locks.is_empty() {
            let keys = locks.iter().flat_map(|(t, m)| m.keys().map(move |k| (*t, k)));
            self.db.locks.release(self.id, keys);
        }
    }

    /// Commits: validates (every written key still has the version seen when its lock was
    /// taken, else 40001), writes one RocksDB batch, publishes to the indexes, releases the row
    /// locks, waits for the WAL fsync (shared with concurrent commits), then makes the commit
    /// visible. All or nothing.
    pub fn commit(mut self) -> Result<()> {
        if !self.finished && self.db.retired.load(Ordering::Acquire) {
            // Nothing of this transaction reached the WAL (its writes are buffered until
            // commit), so the failure is definite: 40001 tells the client to run it again.
            let e = match self.db.retired_error(self.id) {
                Some(e) if e.sqlstate() == SqlState::CRASH_SHUTDOWN => Error::new(
                    SqlState::SERIALIZATION_FAILURE,
                    "could not serialize access: the storage engine restarted after a write failure while this transaction was open; nothing it wrote was stored, run it again",
                ),
                Some(e) => e,
                None => Error::internal("retired engine instance without an error"),
            };
            self.finish();
            return Err(e);
        }
        self.check_active()?;
        let r = self.commit_inner();
        self.finish();
        r
    }

    fn commit_inner(&mut self) -> Result<()> {
        let writes = std::mem::take(&mut self.writes);
        let n: usize = writes.values().map(|w| w.ops.len()).sum();
        let db = self.db.clone();
        let sync = self.sync.unwrap_or(db.opts.sync_commits);
        if n == 0 {
            // Nothing written, but a row lock may have shown this transaction a version a
            // commit has not yet made durable (locks are released before the fsync, step 4):
            // what it decided on that must not be acknowledged before that commit is.
            if sync && !self.locks.borrow().is_empty() {
                db.store.wait_durable(db.store.last_ticket())?;
            }
            return Ok(());
        }
        db.check_open()?;
        let mut c = db.commit.lock();

        // 1. Validate against everything committed so far (including commits not yet synced).
        //    The row locks make this hold by construction; it guards against writers that do
        //    not take row locks (bulk loads, DDL). Keys without a lock (fresh hidden row
        //    identities) must not have changed since the snapshot.
        let mut prevs: Vec<Vec<u64>> = Vec::with_capacity(writes.len());
        let locks = self.locks.borrow();
        for w in writes.values() {
            if w.table.is_dropped() {
                return Err(Error::undefined_table(&w.table.name()));
            }
            let pk = w.table.pk.read();
            let locked = locks.get(&w.table.id);
            let mut p = Vec::with_capacity(w.ops.len());
            for k in w.ops.keys() {
                let cur = pk.get(k).unwrap_or(0);
                let changed = match locked.and_then(|m| m.get(k)) {
                    // A tombstone the collector removed from the index meanwhile is no change.
                    Some(&seen) => cur != seen && !(cur == 0 && seen & TOMBSTONE != 0),
                    None => cur & !TOMBSTONE > self.snapshot,
                };
                if changed {
                    db.stats.lock().conflicts += 1;
                    return Err(Error::serialization());
                }
                p.push(cur);
            }
            prevs.push(p);
        }
        drop(locks);
        for w in writes.values() {
            check_unique_committed(&db, &w.table, &w.ops)?;
        }

        // 2. One atomic write: every version appended at fresh positions. Small commits go
        //    through the WAL as one WriteBatch (fsync shared by group commit); large ones are
        //    written as one SST file and ingested (atomic and durable by itself).
        let first = c.next_rowid;
        let bulk = n >= BULK_COMMIT_ROWS;
        // Small commits put their versions in the row cache: they sit in RocksDB's memtable,
        // which the direct read path does not cover, until a flush writes them to a file.
        // Large ones are ingested as a file, which is mapped before the commit returns
        // (`Store::ingest_rows`), so their reads start from the mapping instead.
        let mut cached: Vec<super::cache::Bytes> = Vec::with_capacity(if bulk { 0 } else { n });
        let mut batch = WriteBatch::default();
        let rocks = db.store.db()?;
        let cf_rows = rocks.cf(CF_ROWS);
        // Tables in id order, keys in key order: with ascending rowids the row keys ascend too.
        let mut order: Vec<usize> = (0..writes.len()).collect();
        let tables: Vec<&TableWrites> = writes.values().collect();
        order.sort_by_key(|&i| tables[i].table.id);
        let emit = |put: &mut PutFn<'_>| -> Result<u64> {
            let mut buf = Vec::with_capacity(128);
            let mut rowid = first;
            for &i in &order {
                let w = tables[i];
                for ((k, op), prev) in w.ops.iter().zip(&prevs[i]) {
                    let row = match op {
                        Pending::Put(r) => Some(r.as_slice()),
                        Pending::Delete => None,
                    };
                    encode_version(prev & !TOMBSTONE, k, row, &mut buf);
                    put(&row_key(w.table.id, rowid), &buf)?;
                    rowid += 1;
                }
            }
            Ok(rowid)
        };
        let rowid = if bulk {
            let mut end = first;
            db.store.ingest_rows(|put| {
                end = emit(put)?;
                Ok(())
            })?;
            end
        } else {
            emit(&mut |k, v| {
                batch.put_cf(cf_rows, k, v);
                cached.push(Arc::from(v));
                Ok(())
            })?
        };
        let last = rowid - 1;
        batch.put_cf(db.store.db()?.cf(CF_META), b"next_rowid", rowid.to_be_bytes());
        c.next_rowid = rowid;
        let ticket = db.store.append(batch)?;

        // 3. Publish to the indexes and the row cache (readers with older snapshots follow the
        //    version chain past these positions, so publishing before the fsync is safe).
        let mut rowid = first;
        let mut gc_items = Vec::new();
        let mut writes: Vec<(TableWrites, Vec<u64>)> = writes.into_values().zip(prevs).collect();
        writes.sort_by_key(|(w, _)| w.table.id);
        for (w, p) in writes {
            let t = &w.table;
            let has_sec = !t.def().indexes.is_empty();
            let mut pk = t.pk.write();
            if pk.is_empty()
                && w.ops.len() >= BULK_COMMIT_ROWS
                && w.ops.values().all(|o| matches!(o, Pending::Put(_)))
            {
                // Loading an empty table: build the index in bulk from the sorted keys.
                let entries: Vec<(Key, u64)> = w.ops.keys().cloned().zip(rowid..).collect();
                *pk = crate::index::keyed::KeyIndex::bulk_load(pk.kind(), entries);
                for (k, op) in w.ops {
                    if let Pending::Put(r) = op {
                        if has_sec {
                            t.add_secondary_entries(&r, &k, rowid);
                        }
                    }
                    rowid += 1;
                }
                continue;
            }
            for ((k, op), prev) in w.ops.into_iter().zip(p) {
                let prev_rowid = prev & !TOMBSTONE;
                match op {
                    Pending::Put(r) => {
                        pk.upsert(&k, rowid);
                        if has_sec {
                            t.add_secondary_entries(&r, &k, rowid);
                        }
                        if prev_rowid != 0 {
                            gc_items.push(GcItem::superseded(t.id, prev_rowid, rowid));
                        }
                    }
                    Pending::Delete => {
                        pk.upsert(&k, rowid | TOMBSTONE);
                        gc_items.push(GcItem::tombstone(t.id, k, rowid, prev_rowid));
                    }
                }
                rowid += 1;
            }
        }
        // The versions of a small commit, at consecutive positions from `first` (replacing
        // older versions in their sets).
        let cache = db.cache.load();
        for (b, rowid) in cached.into_iter().zip(first..) {
            cache.insert(rowid, b);
        }
        db.gc.lock().push(gc_items);
        drop(c);

        // 4. Early lock release: the versions are published and their batch is in the WAL
        //    ahead of any later commit, so the next writer of these rows may go on now instead
        //    of after the fsync. Its own commit is appended after this one and acknowledged
        //    only once durable, and the WAL is sequential: that fsync covers this commit too.
        //    Snapshots do not see this commit until it is durable (step 5), so only writers,
        //    through their row locks, ever see a version that is not yet durable.
        self.release_locks();

        // 5. Durability, then visibility.
        if sync {
            db.store.wait_durable(ticket)?;
        }
        db.visible.fetch_max(last, Ordering::AcqRel);
        db.versions_since_ckpt.fetch_add(n as u64, Ordering::Relaxed);
        db.stats.lock().commits += 1;
        Ok(())
    }
}

fn bound_ref(b: &Bound<Key>) -> Bound<&Key> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
    }
}

/// Under the commit lock: no committed row other than the one being replaced holds a value
/// this transaction puts into a unique index, and the transaction does not put one twice.
fn check_unique_committed(db: &Inner, t: &Table, ops: &BTreeMap<Key, Pending>) -> Result<()> {
    let def = t.def();
    if !def.indexes.iter().any(|i| i.unique) {
        return Ok(());
    }
    let sec = t.secondary.read();
    let pk = t.pk.read();
    for (i, idx) in def.indexes.iter().enumerate() {
        if !idx.unique {
            continue;
        }
        let mut mine: HashMap<Vec<u8>, &Key> = HashMap::new();
        for (k, op) in ops {
            let Pending::Put(row) = op else { continue };
            let Some(v) = def.index_value(idx, row) else {
                continue;
            };
            if mine.insert(v.clone(), k).is_some() {
                return Err(unique_err(&idx.name));
            }
            for k2 in sec[i].candidates(Bound::Included(&v), Bound::Included(&v)) {
                if &k2 == k || ops.contains_key(&k2) {
                    continue; // replaced or deleted by this transaction
                }
                // Does the newest committed version of k2 still hold v?
                if let Some(p) = pk.get(&k2) {
                    if p & TOMBSTONE == 0 {
                        let ver = db.fetch(t.id, p)?;
                        if ver.row.as_ref().and_then(|r| def.index_value(idx, r)).as_ref() == Some(&v) {
                            return Err(unique_err(&idx.name));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn unique_err(name: &str) -> Error {
    Error::new(
        SqlState::UNIQUE_VIOLATION,
        format!("duplicate key value violates unique constraint \"{name}\""),
    )
}
