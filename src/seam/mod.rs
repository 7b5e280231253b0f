//! The engine seam: the calls `sql/` and `server/` make on a storage engine, as traits
//! ([`Engine`], [`EngineTable`], [`EngineTxn`]), and the engine they run on ([`AnyEngine`]).
//!
//! `sql/` and `server/` name no engine type: they hold an [`AnyEngine`], [`AnyTable`]s and
//! [`AnyTxn`]s, enums with one variant per engine that implement the same traits by one
//! `match` per call (generic, so no `dyn` and no lost inlining on point reads and scans).
//! Today's engine ([`crate::engine::Database`], `local.rs`) is the one variant; a second engine
//! implements the three traits and adds a variant in `any.rs`, without touching `sql/` or
//! `server/`. docs/DISTRIBUTED.md ("The engine seam") gives the reasons for this form.
//!
//! Plain data (definitions, keys, rows, ranges, isolation levels, interrupts, statistics)
//! stays shared: re-exported here, used by every engine as it is.
//!
//! # Contract
//!
//! What every engine guarantees, and the SQL layer relies on:
//!
//! - **Snapshots.** A transaction reads one snapshot plus its own writes (read-your-writes,
//!   including deletes). Under [`Isolation::Snapshot`] the snapshot is taken by
//!   [`Engine::begin`]; under [`Isolation::ReadCommitted`] [`EngineTxn::begin_statement`] takes
//!   a new one, so every statement reads one consistent state. A commit is visible to a
//!   snapshot entirely or not at all.
//! - **Row locks.** Every write of a key first takes that key's row lock, held until commit or
//!   rollback (or the rollback to a savepoint older than the lock). A second writer waits;
//!   the wait ends with 55P03 at the lock timeout ([`EngineTxn::set_lock_timeout`]), 57014
//!   when the statement's [`Interrupt`] fires (timeout, cancel), 40P01 on a deadlock. Having
//!   the lock, a writer whose row changed after its snapshot fails with 40001 under snapshot
//!   isolation, and gets the newest version ([`Locked::Changed`]) under read committed.
//! - **Commit.** All of a transaction's writes become visible at once, or none do; a commit
//!   acknowledged as durable survives a crash. Write conflicts detected at commit fail with
//!   40001 and leave nothing. Dropping an unfinished transaction rolls it back.
//! - **Errors.** Every error carries a SQLSTATE: 42P01 unknown table, 23505 duplicate key or
//!   unique value, 23502 NULL in a NOT NULL column, 22003 / 22001 / 42804 a value that does
//!   not fit its column, 40001 serialization failure, 40P01 deadlock, 55P03 lock timeout,
//!   57014 canceled statement, 57P02 / 57P03 engine restarting, 58030 storage failure, 08007
//!   commit outcome unknown, XX001 corrupt data. Bad input never changes data.
//! - **Tables.** A table handle names one incarnation of a table: TRUNCATE and rebuilding
//!   DDL make a new one and mark the old one dropped ([`EngineTable::is_dropped`]). A read
//!   through an old handle fails (40001 when the name now has a new incarnation, else 42P01),
//!   and a transaction that wrote through one fails by its commit at the latest (42P01). DDL
//!   is not transactional: it applies and is durable when the call returns.

mod any;
mod local;

pub use any::{AnyEngine, AnyTable, AnyTxn};

use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::engine::catalog::{CheckDef, FkAction, ForeignKeyDef, Identity, RowCheck};
pub use crate::engine::{
    canceled_by_user, statement_timeout, BatchError, CancelHandle, ColumnDef, IndexDef, IndexStats,
    Interrupt, Isolation, KeyRange, Locked, MemoryReport, Request, Savepoint, SequenceDef, SequenceMemory,
    Stats, TableDef, ViewDef,
};
use crate::error::Result;
pub use crate::index::keyed::IndexKind;
use crate::types::{Key, Row, RowRef};

/// What `sql/` and `server/` import to use an engine: the engine, table and transaction
/// types they hold, and the traits whose methods they call.
pub mod prelude {
    pub use super::{AnyEngine, AnyTable, AnyTxn, Engine, EngineTable, EngineTxn};
}

/// A storage engine: the catalog, DDL, transactions, cancellation and monitoring. Cheap to
/// clone; every clone is the same engine.
pub trait Engine: Clone + Send + Sync + 'static {
    type Table: EngineTable;
    type Txn: EngineTxn<Table = Self::Table>;

    /// A new transaction, under snapshot isolation until [`EngineTxn::set_isolation`].
    fn begin(&self) -> Self::Txn;
    /// The row of `t` with primary key `key` as of now, outside any transaction (an autocommit
    /// read), lent to `f`; `None` when there is none.
    fn get_with<R>(&self, t: &Self::Table, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>>;
    /// The table named `name` (42P01 if none).
    fn table(&self, name: &str) -> Result<Self::Table>;
    /// Every table, ordered by name.
    fn tables(&self) -> Vec<Self::Table>;

    // DDL: applied and durable when the call returns; not part of any transaction.

    /// Creates a table (42P07 if the name is taken by a table or a view).
    fn create_table(&self, def: TableDef) -> Result<Self::Table>;
    /// Creates a table, or returns the existing one of that name.
    fn create_table_if_not_exists(&self, def: TableDef) -> Result<Self::Table>;
    /// Drops a table and its rows; `Ok(false)` if there is none and `if_exists`, else 42P01.
    fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool>;
    /// Removes every row: the table gets a new incarnation with the same definition.
    fn truncate(&self, name: &str) -> Result<()>;
    /// Replaces the table by a new incarnation with definition `f(current)`, copying the rows
    /// (which must fit it; nothing changes on an error).
    fn rebuild_table(&self, name: &str, f: impl FnOnce(&TableDef) -> Result<TableDef>) -> Result<()>;
    /// [`Engine::rebuild_table`] with each live row passed through `map` (DROP COLUMN).
    fn rebuild_table_with(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<()>;
    /// Replaces the definition without rewriting rows (columns added at the end read their
    /// `missing` value); `check` first sees every live row, and its first error changes nothing.
    fn alter_table_def(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        check: Option<RowCheck<'_>>,
    ) -> Result<()>;
    /// Renames a table; its rows, indexes and constraints stay.
    fn rename_table(&self, from: &str, to: &str) -> Result<()>;
    /// Puts back an earlier definition of the table with `def.id` (its name, columns,
    /// defaults, constraints; not its indexes): the undo of a rolled-back block's ALTER TABLE.
    /// May remove columns added at the end, which no committed row may hold a value for.
    fn restore_table_def(&self, def: TableDef) -> Result<()>;
    /// [`Engine::rebuild_table_with`], keeping the old incarnation (retired: unreachable by
    /// name) so that a block's rollback can put it back; returns its id.
    fn rebuild_table_keeping(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<u32>;
    /// Puts back the retired incarnation `def.id` with definition `def`, dropping the table
    /// that holds its name now; `Ok(false)` if there is no such retired table.
    fn restore_retired(&self, def: TableDef) -> Result<bool>;
    /// Drops the retired incarnation with id `id`, if any (its block committed).
    fn drop_retired(&self, id: u32) -> Result<bool>;

    // Table locks: what an ALTER TABLE inside a transaction block holds until the block ends
    // (PostgreSQL's ACCESS EXCLUSIVE), so that no other session uses the table under a
    // definition that may still be rolled back. Owners are sessions, not transactions.

    /// Takes the lock of table `id` for `owner`, waiting while another owner holds it (55P03
    /// once `lock_deadline` passes, 57014 when `stop` fires).
    fn lock_table(&self, id: u32, owner: u64, lock_deadline: Option<Instant>, stop: &Interrupt)
        -> Result<()>;
    /// Waits, as `lock_table`, while an owner other than `owner` holds the lock of table `id`,
    /// without taking it. Returns whether it waited.
    fn wait_table(
        &self,
        id: u32,
        owner: u64,
        lock_deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<bool>;
    /// Releases every table lock `owner` holds.
    fn unlock_tables(&self, owner: u64);
    /// The ids of the tables whose locks owners other than `owner` hold.
    fn tables_locked_by_others(&self, owner: u64) -> Vec<u32>;
    /// Writes undo record `seq` of `owner`: the definitions `defs` as they are before an ALTER
    /// in its block, put back at open if a crash ends the block (durable when it returns).
    fn record_undo(&self, owner: u64, seq: u64, defs: &[TableDef]) -> Result<()>;
    /// Deletes the undo records of `owner` numbered `from` and up.
    fn forget_undo(&self, owner: u64, from: u64) -> Result<()>;
    /// Builds a secondary index over the table's rows (23505 if a unique one finds a duplicate).
    fn create_index(&self, table: &str, index: IndexDef, if_not_exists: bool) -> Result<()>;
    /// Drops the index named `name`; `Ok(false)` if there is none.
    fn drop_index(&self, name: &str) -> Result<bool>;

    // Views and sequences: catalog entries, durable when the call returns.

    fn create_view(&self, def: ViewDef, or_replace: bool) -> Result<()>;
    /// `Ok(false)` if there is no such view.
    fn drop_view(&self, name: &str) -> Result<bool>;
    fn view(&self, name: &str) -> Result<Option<Arc<ViewDef>>>;
    /// Every view, ordered by name.
    fn views(&self) -> Result<Vec<Arc<ViewDef>>>;
    /// The views whose definitions name relation `name`.
    fn views_depending_on(&self, name: &str) -> Result<Vec<Arc<ViewDef>>>;
    /// Creates a sequence; `Ok(false)` if it exists and `if_not_exists`, else 42P07.
    fn create_sequence(&self, def: SequenceDef, if_not_exists: bool) -> Result<bool>;
    /// `Ok(false)` if there is none and `if_exists`, else 42P01.
    fn drop_sequence(&self, name: &str, if_exists: bool) -> Result<bool>;
    /// Drops the sequences owned by a column of `table`.
    fn drop_owned_sequences(&self, table: &str) -> Result<()>;
    fn set_sequence_owner(&self, name: &str, owned_by: Option<(String, String)>) -> Result<()>;
    /// `ALTER SEQUENCE`: `new`'s definition, from the last value handed out or from `restart`.
    fn alter_sequence(&self, name: &str, new: &SequenceDef, restart: Option<i64>) -> Result<SequenceDef>;
    /// Puts back the parameters of an earlier definition of a sequence (the undo of ALTER
    /// SEQUENCE in a rolled-back block); its position never moves back.
    fn restore_sequence(&self, old: &SequenceDef) -> Result<()>;
    /// Renames a sequence (42P07 if a sequence of the new name exists).
    fn rename_sequence(&self, from: &str, to: &str) -> Result<()>;
    /// Every sequence, ordered by name.
    fn sequences(&self) -> Result<Vec<SequenceDef>>;
    fn has_sequence(&self, name: &str) -> Result<bool>;

    // Cancellation and monitoring.

    /// A handle that cancels one session's running request, waking it if it waits on a lock.
    fn cancel_handle(&self) -> CancelHandle;
    /// Counters since open (commits, conflicts, lock waits, cache and read-path figures).
    fn stats(&self) -> Stats;
    /// Per-table primary index figures, ordered by table name.
    fn index_stats(&self) -> Vec<IndexStats>;
    /// A named numeric property of the engine's storage (for the local engine, a RocksDB
    /// property of the rows column family); `None` when the engine has no such property.
    fn store_property(&self, name: &str) -> Option<u64>;
    /// Bytes the engine's data takes on disk.
    fn disk_bytes(&self) -> u64;
    /// Memory the engine holds, by part.
    fn memory(&self) -> MemoryReport;
    /// Where the data lives, for people: a directory, or a cluster's endpoints.
    fn location(&self) -> String;
}

/// Writes that run no CHECK or FOREIGN KEY constraint: the SQL layer's statement primitives
/// (INSERT, UPDATE, DELETE and COPY run the constraints once per statement, after its writes:
/// `src/sql/dml/`, `engine/fk.rs`) and the writes of the referential actions. Crate-private,
/// so the embedded API has no way around the constraints: [`EngineTxn`]'s writes enforce them.
pub(crate) trait StatementWrites: EngineTxn {
    /// `insert_in` without the constraints.
    fn insert_row(&mut self, t: &Self::Table, row: Row) -> Result<Key>;
    /// `insert_batch_in` without the constraints: as `insert_row` of each row in turn would.
    fn insert_rows(&mut self, t: &Self::Table, rows: Vec<Row>) -> std::result::Result<u64, BatchError>;
    /// `update_in` without the constraints.
    fn update_row(&mut self, t: &Self::Table, key: &Key, row: Row) -> Result<bool>;
    /// `delete_in` without the actions of the keys that reference the table.
    fn delete_row(&mut self, t: &Self::Table, key: &Key) -> Result<bool>;
    /// Deletes the newest version of `key` (ON DELETE CASCADE); false if there is none.
    fn delete_latest(&mut self, t: &Self::Table, key: &Key) -> Result<bool>;
    /// Replaces the newest version of `key` (SET NULL, SET DEFAULT, ON UPDATE CASCADE; the
    /// key moves if the row's key columns changed, 23505 if the new key is taken).
    fn update_latest(&mut self, t: &Self::Table, key: &Key, row: Row) -> Result<bool>;
}

/// One incarnation of a table (see the contract above): cheap to clone.
pub trait EngineTable: Clone + Send + Sync + 'static {
    fn def(&self) -> Arc<TableDef>;
    /// Whether `d` is the current definition (a prepared plan's check, without a clone).
    fn has_def(&self, d: &Arc<TableDef>) -> bool;
    fn name(&self) -> String;
    /// Whether DROP, TRUNCATE or a rebuild replaced this incarnation (plans re-check it).
    fn is_dropped(&self) -> bool;
    /// The session holding the table's lock (an ALTER in its open block), 0 for none.
    fn lock_owner(&self) -> u64;
    /// The structure that answers primary-key lookups (what EXPLAIN and `\d` name).
    fn key_index_kind(&self) -> IndexKind;
    /// Keys in the primary index (an estimate of the row count for the planner: it may count
    /// versions not yet collected).
    fn index_len(&self) -> usize;
    /// Bytes of the primary index in memory.
    fn index_heap_bytes(&self) -> usize;
    /// Primary keys that may have a row version (committed or not yet collected) whose
    /// secondary index `index` (position in `def().indexes`) has encoded values within the
    /// bounds: a superset the caller re-checks against the version it reads. May repeat a key.
    fn index_candidates(&self, index: usize, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Key>;
}

/// A transaction (see the contract above). Reads take `&self` so that a statement can lock
/// rows while it reads; writes take `&mut self`.
pub trait EngineTxn: Send {
    type Table: EngineTable;

    // Settings: called before the statements they govern.

    fn isolation(&self) -> Isolation;
    /// Sets the isolation level; call before the first statement.
    fn set_isolation(&mut self, iso: Isolation);
    /// How long a row-lock wait lasts before 55P03 (`None`: no limit).
    fn set_lock_timeout(&mut self, t: Option<Duration>);
    /// What interrupts the row-lock waits of the writes that follow (57014), until replaced.
    fn set_interrupt(&mut self, stop: Interrupt);
    /// Whether the commit waits until it is durable (`synchronous_commit`).
    fn set_sync(&mut self, sync: bool);
    /// Lowers the constraint stamp (`engine::table::constraint_stamp`, read before a statement
    /// was planned) that the transaction's writes were checked against: its commit checks
    /// again the writes to tables whose constraints changed after it.
    fn saw_constraints_at(&mut self, stamp: u64);
    /// Names the session (`owner` of its table locks) the transaction belongs to, for deadlock
    /// detection across table and row locks.
    fn set_lock_party(&mut self, owner: u64);
    /// Makes the commit delete `owner`'s ALTER undo records in the same write as its rows.
    fn forget_undo_on_commit(&mut self, owner: u64);
    /// The session's `currval` memory, shared by its transactions.
    fn set_sequence_memory(&mut self, m: SequenceMemory);
    /// Marks the start of a statement: under read committed, a new snapshot.
    fn begin_statement(&mut self);

    // Reads: the snapshot plus this transaction's writes, unless named "latest".

    /// The row with primary key `key` (keyless tables: its row identity).
    fn get_in(&self, t: &Self::Table, key: &Key) -> Result<Option<Arc<Row>>>;
    /// The row with primary key `key`, lent to `f` in place; `None` when there is none.
    fn get_with<R>(&self, t: &Self::Table, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>>;
    /// Visits the rows with primary key in `range` in key order (descending when `reverse`),
    /// lending each to `f` until it returns false.
    fn scan_with(
        &self,
        t: &Self::Table,
        range: &KeyRange,
        reverse: bool,
        f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()>;
    /// `scan_with` for at most `limit` rows, the first ones of the scan: the engine may size
    /// its read-ahead to them. Visits exactly the rows `scan_with` would visit first.
    fn scan_first(
        &self,
        t: &Self::Table,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()>;
    /// The number of rows `scan_with` would visit; `check` runs between batches (57014).
    fn count_in(&self, t: &Self::Table, range: &KeyRange, check: impl FnMut() -> Result<()>) -> Result<u64>;
    /// Rows whose secondary index `index` (position in `def().indexes`) has encoded values
    /// within the bounds, ordered by (value, key).
    fn index_scan_in(
        &self,
        t: &Self::Table,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>>;
    /// The newest committed version of `key`, or this transaction's own write (foreign keys).
    fn get_latest_in(&self, t: &Self::Table, key: &Key) -> Result<Option<Arc<Row>>>;
    /// Every row in `range` as the newest committed versions and this transaction's writes
    /// have it, in key order (foreign-key actions).
    fn scan_latest_in(
        &self,
        t: &Self::Table,
        range: &KeyRange,
        f: impl FnMut(&Key, &Arc<Row>) -> Result<bool>,
    ) -> Result<()>;
    /// `index_scan_in` over the newest committed versions and this transaction's writes
    /// (foreign keys: the rows referencing a parent, by an index on their columns).
    fn index_latest_in(
        &self,
        t: &Self::Table,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>>;
    /// The table named `name` (42P01 if none).
    fn table(&self, name: &str) -> Result<Self::Table>;
    /// Every table.
    fn tables(&self) -> Vec<Self::Table>;
    /// The tables with a foreign key that references the table named `name`, by name.
    fn referencing(&self, name: &str) -> Vec<Self::Table>;

    // Writes: each takes the row's lock first (see the contract), and each enforces the
    // table's CHECK constraints (23514) and FOREIGN KEYs (23503 for a missing parent, the
    // actions of the keys that reference a deleted or re-keyed row) as one write: a refused
    // write leaves the transaction as it was.

    /// Inserts a row (23505 if its key exists; 23502 and the other row checks); its key.
    fn insert_in(&mut self, t: &Self::Table, row: Row) -> Result<Key>;
    /// Inserts `rows` as one INSERT of them would, in one pass; on failure the error names
    /// the earliest failing row and none of the batch is written.
    fn insert_batch_in(&mut self, t: &Self::Table, rows: Vec<Row>) -> std::result::Result<u64, BatchError>;
    /// Replaces the row with key `key` (its key may change: a move, checked for uniqueness);
    /// false if there is no such row (or, under read committed, a concurrent delete).
    fn update_in(&mut self, t: &Self::Table, key: &Key, row: Row) -> Result<bool>;
    /// Deletes the row with key `key`; false if there was none.
    fn delete_in(&mut self, t: &Self::Table, key: &Key) -> Result<bool>;
    /// Takes the row lock of `key` (waits interrupted by `stop`) and tells whether the row
    /// changed after the snapshot (40001 under snapshot isolation if it did).
    fn lock_row_by(&self, t: &Self::Table, key: &Key, stop: &Interrupt) -> Result<Locked>;

    /// When the transaction began (microseconds since 1970-01-01 UTC): the time `now()` reads
    /// in what the engine evaluates for it (defaults, CHECK constraints).
    fn start_micros(&self) -> i64;

    // Sequences: not transactional (a rollback does not give a value back).

    fn nextval(&self, name: &str) -> Result<i64>;
    fn setval(&self, name: &str, v: i64, is_called: bool) -> Result<i64>;
    /// The value `nextval` last returned in this session (55000 before the first).
    fn currval(&self, name: &str) -> Result<i64>;

    // Savepoints and the end.

    /// Opens a savepoint; savepoints nest.
    fn savepoint(&mut self) -> Result<Savepoint>;
    /// Undoes the writes after `sp` and releases the row locks taken after it; `sp` stays open.
    fn rollback_to(&mut self, sp: Savepoint) -> Result<()>;
    /// Closes `sp` and the savepoints after it, keeping their writes.
    fn release(&mut self, sp: Savepoint) -> Result<()>;
    /// Whether the transaction has buffered any write.
    fn has_writes(&self) -> bool;
    /// Commits all of the writes or none (40001 on a write conflict found at commit).
    fn commit(self) -> Result<()>;
    /// Discards every write and releases the row locks.
    fn rollback(self);
}
