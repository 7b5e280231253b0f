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
//!
//! This file: the transaction's state, settings, row locks and sequences; `read.rs`: reads and
//! scans; `write.rs`: buffered writes; `batch.rs`: many inserts at once (COPY);
//! `savepoint.rs`: savepoints; `commit.rs`: rollback and the commit protocol.

mod altered;
mod batch;
mod commit;
mod read;
mod savepoint;
mod write;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rocksdb::WriteBatch;

pub use batch::BatchError;
pub(crate) use read::{lend_stored, read_stored, read_version};

use super::catalog::TableDef;
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
    /// `ops`' rows by their secondary-index values, for index reads ([`OwnIndexes`]): built
    /// by the first index read that needs it, then kept in step by every write through
    /// [`TableWrites::set`] and [`TableWrites::unset`]; writes made in bulk drop it.
    own: RefCell<Option<OwnIndexes>>,
}

impl TableWrites {
    fn new(table: Arc<Table>) -> TableWrites {
        TableWrites {
            table,
            ops: BTreeMap::new(),
            own: RefCell::new(None),
        }
    }

    /// Makes `p` the pending write of `key`; returns the one it replaced.
    fn set(&mut self, key: Key, p: Pending) -> Option<Pending> {
        if let Some(own) = self.own.get_mut() {
            if let Some(old) = self.ops.get(&key) {
                own.remove(&key, old);
            }
            own.add(&key, &p);
        }
        self.ops.insert(key, p)
    }

    /// Forgets the pending write of `key`; returns it.
    fn unset(&mut self, key: &Key) -> Option<Pending> {
        let before = self.ops.remove(key);
        if let (Some(own), Some(old)) = (self.own.get_mut(), &before) {
            own.remove(key, old);
        }
        before
    }

    /// Primary keys of the pending rows whose value in index `index` of `def` lies within the
    /// bounds (pending deletes have none), in (value, key) order.
    fn own_keys_in(&self, def: &Arc<TableDef>, index: usize, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Key> {
        let mut own = self.own.borrow_mut();
        // Built now if not yet, or if DDL has replaced the definition it was built with.
        if !own.as_ref().is_some_and(|o| Arc::ptr_eq(&o.def, def)) {
            *own = Some(OwnIndexes::build(def.clone(), &self.ops));
        }
        own.as_ref().map_or_else(Vec::new, |o| o.keys_in(index, lo, hi))
    }
}

/// A transaction's pending rows as the table's secondary indexes would hold them: (encoded
/// value, primary key) per index, so that an index read finds the transaction's own rows in
/// its range by a range lookup instead of visiting every pending write (an INSERT checking a
/// unique index did that once per row: quadratic in a transaction's inserts).
struct OwnIndexes {
    /// The definition the values were computed with.
    def: Arc<TableDef>,
    entries: Vec<BTreeSet<(Vec<u8>, Key)>>,
}

impl OwnIndexes {
    fn build(def: Arc<TableDef>, ops: &BTreeMap<Key, Pending>) -> OwnIndexes {
        let mut o = OwnIndexes {
            entries: vec![BTreeSet::new(); def.indexes.len()],
            def,
        };
        for (k, p) in ops {
            o.add(k, p);
        }
        o
    }

    fn add(&mut self, key: &Key, p: &Pending) {
        if let Pending::Put(row) = p {
            for (idx, set) in self.def.indexes.iter().zip(&mut self.entries) {
                if let Some(v) = self.def.index_value(idx, row) {
                    set.insert((v, key.clone()));
                }
            }
        }
    }

    fn remove(&mut self, key: &Key, p: &Pending) {
        if let Pending::Put(row) = p {
            for (idx, set) in self.def.indexes.iter().zip(&mut self.entries) {
                if let Some(v) = self.def.index_value(idx, row) {
                    set.remove(&(v, key.clone()));
                }
            }
        }
    }

    fn keys_in(&self, index: usize, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Key> {
        let Some(set) = self.entries.get(index) else {
            return Vec::new();
        };
        // (v, the smallest key) is the first entry with value v; the bounds on the value are
        // checked on each entry.
        let start = match lo {
            Bound::Unbounded => Bound::Unbounded,
            Bound::Included(v) | Bound::Excluded(v) => Bound::Included((v.to_vec(), Key::Int(i64::MIN))),
        };
        set.range((start, Bound::Unbounded))
            .skip_while(|(v, _)| matches!(lo, Bound::Excluded(l) if v.as_slice() == l))
            .take_while(|(v, _)| match hi {
                Bound::Unbounded => true,
                Bound::Included(h) => v.as_slice() <= h,
                Bound::Excluded(h) => v.as_slice() < h,
            })
            .map(|(_, k)| k.clone())
            .collect()
    }
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
    /// Open savepoints, innermost last, and the logs that undo what came after them (kept
    /// only while a savepoint is open: a transaction without one pays nothing).
    savepoints: Vec<SavepointMark>,
    undo: Vec<Undo>,
    /// Row locks taken while a savepoint is open, in order (a RefCell as `locks` is).
    lock_log: RefCell<Vec<(u32, Key)>>,
    /// The last value `nextval` returned per sequence in this session (`currval`), shared with
    /// the session's other transactions ([`Transaction::set_sequence_memory`]).
    seq_shared: Option<SequenceMemory>,
    /// This transaction's own memory when none is shared: made on first use, so that a
    /// transaction that calls no sequence function allocates none.
    seq_own: OnceLock<SequenceMemory>,
    /// When the transaction began, in microseconds since 1970-01-01 UTC (what `now()` and
    /// `transaction_timestamp()` read in the defaults and CHECK constraints the embedded API
    /// evaluates, as PostgreSQL's transaction start).
    started: i64,
    /// The lock owner whose undo records of ALTER TABLE in a block this commit deletes
    /// ([`Transaction::forget_undo_on_commit`]).
    undo_owner: Option<u64>,
    /// The session this transaction belongs to, as the owner of its table locks
    /// ([`Transaction::set_lock_party`]), and whether it joined the lock table's wait-for
    /// graph as that session (on its first row lock).
    party: Option<u64>,
    joined: std::cell::Cell<bool>,
    /// The constraint stamp its rows were checked against ([`Transaction::saw_constraints_at`]).
    seen_constraints: u64,
}

/// What `currval` reads: the last value of each sequence in a session.
pub type SequenceMemory = Arc<parking_lot::Mutex<HashMap<String, i64>>>;

/// Where a savepoint starts in the undo and lock logs.
#[derive(Clone, Copy, Debug)]
struct SavepointMark {
    undo: usize,
    locks: usize,
}

/// One buffered write as it was before a write made under a savepoint replaced it.
struct Undo {
    table: Arc<Table>,
    key: Key,
    before: Option<Pending>,
}

/// A savepoint of a [`Transaction`] ([`Transaction::savepoint`]): rolling back to it undoes
/// exactly the writes made after it and releases the row locks taken after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint(usize);

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
        let id = db.new_txn_id();
        Transaction::with(db, id, snapshot, false)
    }

    /// A transaction with no writes, locks or savepoints yet (`new`, and `stand_in`'s finished
    /// one that holds no snapshot).
    pub(super) fn with(db: Arc<Inner>, id: u64, snapshot: u64, finished: bool) -> Transaction {
        Transaction {
            db,
            id,
            snapshot,
            isolation: Isolation::Snapshot,
            writes: HashMap::new(),
            locks: RefCell::new(HashMap::new()),
            lock_timeout: None,
            stop: Interrupt::default(),
            finished,
            sync: None,
            savepoints: Vec::new(),
            undo: Vec::new(),
            lock_log: RefCell::new(Vec::new()),
            seq_shared: None,
            seq_own: OnceLock::new(),
            started: crate::types::now_micros(),
            undo_owner: None,
            party: None,
            joined: std::cell::Cell::new(false),
            seen_constraints: crate::engine::table::constraint_stamp(),
        }
    }

    /// This transaction's identifier (unique while the database is open).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// When the transaction began: microseconds since 1970-01-01 00:00:00 UTC.
    pub fn start_micros(&self) -> i64 {
        self.started
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
            Isolation::ReadCommitted => Ok(Locked::Changed(
                self.db.resolve(t.id, latest, u64::MAX)?.map(|r| t.complete(r)),
            )),
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
        self.join_lock_graph();
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
        let latest = t.pk.read().get(key)?.unwrap_or(0);
        self.locks
            .borrow_mut()
            .entry(t.id)
            .or_default()
            .insert(key.clone(), latest);
        if !self.savepoints.is_empty() {
            self.lock_log.borrow_mut().push((t.id, key.clone()));
        }
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

    /// Makes this transaction's commit delete the undo records of lock owner `owner` (the ALTER
    /// TABLE statements of its block: `Database::record_undo`) in the same atomic write as its
    /// rows, so that a crash after the commit does not roll back the block's schema changes
    /// under rows written for them. A commit that writes no rows leaves them to the caller.
    pub fn forget_undo_on_commit(&mut self, owner: u64) {
        self.undo_owner = Some(owner);
    }

    /// Names the session (by the owner id of its table locks, `Database::lock_table`) this
    /// transaction belongs to, so that a deadlock through a table lock and a row lock is
    /// detected (40P01) rather than waited out. Costs nothing until the first row lock.
    pub fn set_lock_party(&mut self, owner: u64) {
        self.party = Some(owner);
    }

    /// Joins the lock table's wait-for graph as its session, once, before a row lock.
    pub(super) fn join_lock_graph(&self) {
        if let Some(owner) = self.party {
            if !self.joined.replace(true) {
                self.db.locks.join(self.id, owner);
            }
        }
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
        table_gone(&self.db, self.id, t)
    }

    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.db.table(name)
    }

    /// Every table.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.db.listed_tables()
    }

    /// Every table's current definition.
    fn all_defs(&self) -> Vec<Arc<TableDef>> {
        self.db.listed_tables().iter().map(|t| t.def()).collect()
    }

    /// The tables with a foreign key that references the table named `name` (what a delete or
    /// key change of its rows must look at), sorted by name: the database keeps the answer
    /// until a definition changes.
    pub fn referencing(&self, name: &str) -> Vec<Arc<Table>> {
        let names = self.db.referenced.referencing(name, || self.all_defs());
        let found: Vec<Arc<Table>> = names.iter().filter_map(|n| self.db.table(n).ok()).collect();
        if found.len() == names.len() {
            return found;
        }
        // A table renamed or dropped since the answer was kept: look at every definition.
        let mut v: Vec<Arc<Table>> = self
            .tables()
            .into_iter()
            .filter(|t| t.def().foreign_keys.iter().any(|f| f.parent == name))
            .collect();
        v.sort_by_key(|t| t.name());
        v
    }

    fn pending(&self, t: &Table, key: &Key) -> Option<&Pending> {
        self.writes.get(&t.id).and_then(|w| w.ops.get(key))
    }

    fn put_pending(&mut self, t: &Arc<Table>, key: Key, p: Pending) {
        let w = self
            .writes
            .entry(t.id)
            .or_insert_with(|| TableWrites::new(t.clone()));
        if self.savepoints.is_empty() {
            w.set(key, p);
        } else {
            let before = w.set(key.clone(), p);
            self.undo.push(Undo {
                table: t.clone(),
                key,
                before,
            });
        }
    }

    /// Shares `m` as this transaction's `currval` memory (a session passes the same one to
    /// each of its transactions, as PostgreSQL keeps currval per session).
    pub fn set_sequence_memory(&mut self, m: SequenceMemory) {
        // A plain field, not `OnceLock::from`: setting a OnceLock runs its `Once` (dozens of
        // instructions on every autocommit statement of a session).
        self.seq_shared = Some(m);
    }

    fn sequence_memory(&self) -> &SequenceMemory {
        match &self.seq_shared {
            Some(m) => m,
            None => self.seq_own.get_or_init(SequenceMemory::default),
        }
    }

    /// `nextval`: the sequence's next value (not undone by a rollback, as in PostgreSQL).
    pub fn nextval(&self, name: &str) -> Result<i64> {
        self.check_active()?;
        let v = self.db.nextval(name)?;
        self.sequence_memory().lock().insert(name.to_string(), v);
        Ok(v)
    }

    /// `setval`: see [`crate::Database::setval`]; `currval` then returns `v`.
    pub fn setval(&self, name: &str, v: i64, is_called: bool) -> Result<i64> {
        self.check_active()?;
        let r = self.db.setval(name, v, is_called)?;
        if is_called {
            self.sequence_memory().lock().insert(name.to_string(), v);
        }
        Ok(r)
    }

    /// `currval`: the value `nextval` last returned for the sequence in this session (55000
    /// before the first).
    pub fn currval(&self, name: &str) -> Result<i64> {
        self.sequence_memory().lock().get(name).copied().ok_or_else(|| {
            Error::new(
                SqlState("55000"),
                format!("currval of sequence \"{name}\" is not yet defined in this session"),
            )
        })
    }
}

/// The error for a read or write of table `t` after it was dropped or replaced, by
/// transaction `txn` of `db` (see [`Transaction::check_table`]).
#[cold]
pub(crate) fn table_gone(db: &Inner, txn: u64, t: &Table) -> Error {
    if let Some(e) = db.retired_error(txn) {
        return e;
    }
    let name = t.name();
    if db.table(&name).is_ok() {
        return Error::new(
            SqlState::SERIALIZATION_FAILURE,
            format!("could not serialize access: relation \"{name}\" was replaced while this statement ran; retry it"),
        );
    }
    Error::undefined_table(&name)
}
