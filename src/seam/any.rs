//! The engine `sql/` and `server/` run on: one enum variant per engine, each call one `match`
//! to that engine's implementation of the seam's traits (monomorphized: no `dyn`, and a
//! one-variant match compiles to the direct call).
//!
//! Adding an engine: implement [`Engine`], [`EngineTable`] and [`EngineTxn`] for it, add a
//! variant to the three enums and an arm to each macro below (`txn_table!` also gets the arm
//! for a table of another engine: an internal error, XX000).

use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    BatchError, CancelHandle, Engine, EngineTable, EngineTxn, IndexDef, IndexKind, IndexStats, Interrupt,
    Isolation, KeyRange, Locked, MemoryReport, RowCheck, Savepoint, SequenceDef, SequenceMemory,
    StatementWrites, Stats, TableDef, ViewDef,
};
use crate::engine::{Database, Table, Transaction};
use crate::error::Result;
use crate::types::{Key, Row, RowRef};

/// An engine (see the module comment). Cheap to clone.
#[derive(Clone)]
pub enum AnyEngine {
    /// ALEX over RocksDB in this process (`crate::engine`).
    Local(Database),
}

/// A table of an [`AnyEngine`]. Cheap to clone.
#[derive(Clone)]
pub enum AnyTable {
    Local(Arc<Table>),
}

/// A transaction of an [`AnyEngine`]. Dropping it unfinished rolls it back.
pub enum AnyTxn {
    Local(Transaction),
}

impl From<Database> for AnyEngine {
    fn from(db: Database) -> AnyEngine {
        AnyEngine::Local(db)
    }
}

impl From<Arc<Table>> for AnyTable {
    fn from(t: Arc<Table>) -> AnyTable {
        AnyTable::Local(t)
    }
}

impl From<Transaction> for AnyTxn {
    fn from(tx: Transaction) -> AnyTxn {
        AnyTxn::Local(tx)
    }
}

/// `$body` with `$x` bound to the engine inside an `AnyEngine`.
macro_rules! engine {
    ($e:expr, $x:ident => $body:expr) => {
        match $e {
            AnyEngine::Local($x) => $body,
        }
    };
}

/// `$body` with `$x` bound to the table inside an `AnyTable`.
macro_rules! table {
    ($e:expr, $x:ident => $body:expr) => {
        match $e {
            AnyTable::Local($x) => $body,
        }
    };
}

/// `$body` with `$x` bound to the transaction inside an `AnyTxn`.
macro_rules! txn {
    ($e:expr, $x:ident => $body:expr) => {
        match $e {
            AnyTxn::Local($x) => $body,
        }
    };
}

/// `$body` with a transaction and a table of the same engine.
macro_rules! txn_table {
    ($tx:expr, $t:expr, ($x:ident, $y:ident) => $body:expr) => {
        match ($tx, $t) {
            (AnyTxn::Local($x), AnyTable::Local($y)) => $body,
        }
    };
}

impl Engine for AnyEngine {
    type Table = AnyTable;
    type Txn = AnyTxn;

    #[inline]
    fn begin(&self) -> AnyTxn {
        engine!(self, e => Engine::begin(e).into())
    }
    #[inline]
    fn get_with<R>(&self, t: &AnyTable, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
        match (self, t) {
            (AnyEngine::Local(e), AnyTable::Local(t)) => Engine::get_with(e, t, key, f),
        }
    }
    #[inline]
    fn table(&self, name: &str) -> Result<AnyTable> {
        engine!(self, e => Engine::table(e, name).map(Into::into))
    }
    fn tables(&self) -> Vec<AnyTable> {
        engine!(self, e => Engine::tables(e).into_iter().map(Into::into).collect())
    }
    fn create_table(&self, def: TableDef) -> Result<AnyTable> {
        engine!(self, e => Engine::create_table(e, def).map(Into::into))
    }
    fn create_table_if_not_exists(&self, def: TableDef) -> Result<AnyTable> {
        engine!(self, e => Engine::create_table_if_not_exists(e, def).map(Into::into))
    }
    fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool> {
        engine!(self, e => Engine::drop_table(e, name, if_exists))
    }
    fn truncate(&self, name: &str) -> Result<()> {
        engine!(self, e => Engine::truncate(e, name))
    }
    fn rebuild_table(&self, name: &str, f: impl FnOnce(&TableDef) -> Result<TableDef>) -> Result<()> {
        engine!(self, e => Engine::rebuild_table(e, name, f))
    }
    fn rebuild_table_with(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<()> {
        engine!(self, e => Engine::rebuild_table_with(e, name, f, map))
    }
    fn alter_table_def(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        check: Option<RowCheck<'_>>,
    ) -> Result<()> {
        engine!(self, e => Engine::alter_table_def(e, name, f, check))
    }
    fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        engine!(self, e => Engine::rename_table(e, from, to))
    }
    fn restore_table_def(&self, def: TableDef) -> Result<()> {
        engine!(self, e => Engine::restore_table_def(e, def))
    }
    fn rebuild_table_keeping(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<u32> {
        engine!(self, e => Engine::rebuild_table_keeping(e, name, f, map))
    }
    fn restore_retired(&self, def: TableDef) -> Result<bool> {
        engine!(self, e => Engine::restore_retired(e, def))
    }
    fn drop_retired(&self, id: u32) -> Result<bool> {
        engine!(self, e => Engine::drop_retired(e, id))
    }
    fn lock_table(
        &self,
        id: u32,
        owner: u64,
        lock_deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<()> {
        engine!(self, e => Engine::lock_table(e, id, owner, lock_deadline, stop))
    }
    fn wait_table(
        &self,
        id: u32,
        owner: u64,
        lock_deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<bool> {
        engine!(self, e => Engine::wait_table(e, id, owner, lock_deadline, stop))
    }
    fn unlock_tables(&self, owner: u64) {
        engine!(self, e => Engine::unlock_tables(e, owner))
    }
    fn tables_locked_by_others(&self, owner: u64) -> Vec<u32> {
        engine!(self, e => Engine::tables_locked_by_others(e, owner))
    }
    fn record_undo(&self, owner: u64, seq: u64, defs: &[TableDef]) -> Result<()> {
        engine!(self, e => Engine::record_undo(e, owner, seq, defs))
    }
    fn forget_undo(&self, owner: u64, from: u64) -> Result<()> {
        engine!(self, e => Engine::forget_undo(e, owner, from))
    }
    fn create_index(&self, table: &str, index: IndexDef, if_not_exists: bool) -> Result<()> {
        engine!(self, e => Engine::create_index(e, table, index, if_not_exists))
    }
    fn drop_index(&self, name: &str) -> Result<bool> {
        engine!(self, e => Engine::drop_index(e, name))
    }
    fn create_view(&self, def: ViewDef, or_replace: bool) -> Result<()> {
        engine!(self, e => Engine::create_view(e, def, or_replace))
    }
    fn drop_view(&self, name: &str) -> Result<bool> {
        engine!(self, e => Engine::drop_view(e, name))
    }
    fn view(&self, name: &str) -> Result<Option<Arc<ViewDef>>> {
        engine!(self, e => Engine::view(e, name))
    }
    fn views(&self) -> Result<Vec<Arc<ViewDef>>> {
        engine!(self, e => Engine::views(e))
    }
    fn views_depending_on(&self, name: &str) -> Result<Vec<Arc<ViewDef>>> {
        engine!(self, e => Engine::views_depending_on(e, name))
    }
    fn create_sequence(&self, def: SequenceDef, if_not_exists: bool) -> Result<bool> {
        engine!(self, e => Engine::create_sequence(e, def, if_not_exists))
    }
    fn drop_sequence(&self, name: &str, if_exists: bool) -> Result<bool> {
        engine!(self, e => Engine::drop_sequence(e, name, if_exists))
    }
    fn drop_owned_sequences(&self, table: &str) -> Result<()> {
        engine!(self, e => Engine::drop_owned_sequences(e, table))
    }
    fn set_sequence_owner(&self, name: &str, owned_by: Option<(String, String)>) -> Result<()> {
        engine!(self, e => Engine::set_sequence_owner(e, name, owned_by))
    }
    fn alter_sequence(&self, name: &str, new: &SequenceDef, restart: Option<i64>) -> Result<SequenceDef> {
        engine!(self, e => Engine::alter_sequence(e, name, new, restart))
    }
    fn restore_sequence(&self, old: &SequenceDef) -> Result<()> {
        engine!(self, e => Engine::restore_sequence(e, old))
    }
    fn rename_sequence(&self, from: &str, to: &str) -> Result<()> {
        engine!(self, e => Engine::rename_sequence(e, from, to))
    }
    fn sequences(&self) -> Result<Vec<SequenceDef>> {
        engine!(self, e => Engine::sequences(e))
    }
    fn has_sequence(&self, name: &str) -> Result<bool> {
        engine!(self, e => Engine::has_sequence(e, name))
    }
    fn cancel_handle(&self) -> CancelHandle {
        engine!(self, e => Engine::cancel_handle(e))
    }
    fn stats(&self) -> Stats {
        engine!(self, e => Engine::stats(e))
    }
    fn index_stats(&self) -> Vec<IndexStats> {
        engine!(self, e => Engine::index_stats(e))
    }
    fn store_property(&self, name: &str) -> Option<u64> {
        engine!(self, e => Engine::store_property(e, name))
    }
    fn disk_bytes(&self) -> u64 {
        engine!(self, e => Engine::disk_bytes(e))
    }
    fn memory(&self) -> MemoryReport {
        engine!(self, e => Engine::memory(e))
    }
    fn location(&self) -> String {
        engine!(self, e => Engine::location(e))
    }
}

impl EngineTable for AnyTable {
    #[inline]
    fn def(&self) -> Arc<TableDef> {
        table!(self, t => EngineTable::def(t))
    }
    #[inline]
    fn has_def(&self, d: &Arc<TableDef>) -> bool {
        table!(self, t => EngineTable::has_def(t, d))
    }
    fn name(&self) -> String {
        table!(self, t => EngineTable::name(t))
    }
    #[inline]
    fn is_dropped(&self) -> bool {
        table!(self, t => EngineTable::is_dropped(t))
    }
    #[inline]
    fn lock_owner(&self) -> u64 {
        table!(self, t => EngineTable::lock_owner(t))
    }
    #[inline]
    fn key_index_kind(&self) -> IndexKind {
        table!(self, t => EngineTable::key_index_kind(t))
    }
    fn index_len(&self) -> usize {
        table!(self, t => EngineTable::index_len(t))
    }
    fn index_heap_bytes(&self) -> usize {
        table!(self, t => EngineTable::index_heap_bytes(t))
    }
    fn index_candidates(&self, index: usize, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Key> {
        table!(self, t => EngineTable::index_candidates(t, index, lo, hi))
    }
}

impl EngineTxn for AnyTxn {
    type Table = AnyTable;

    #[inline]
    fn isolation(&self) -> Isolation {
        txn!(self, tx => EngineTxn::isolation(tx))
    }
    #[inline]
    fn set_isolation(&mut self, iso: Isolation) {
        txn!(self, tx => EngineTxn::set_isolation(tx, iso))
    }
    #[inline]
    fn set_lock_timeout(&mut self, t: Option<Duration>) {
        txn!(self, tx => EngineTxn::set_lock_timeout(tx, t))
    }
    #[inline]
    fn set_interrupt(&mut self, stop: Interrupt) {
        txn!(self, tx => EngineTxn::set_interrupt(tx, stop))
    }
    #[inline]
    fn set_sync(&mut self, sync: bool) {
        txn!(self, tx => EngineTxn::set_sync(tx, sync))
    }
    #[inline]
    fn saw_constraints_at(&mut self, stamp: u64) {
        txn!(self, tx => EngineTxn::saw_constraints_at(tx, stamp))
    }
    #[inline]
    fn set_lock_party(&mut self, owner: u64) {
        txn!(self, tx => EngineTxn::set_lock_party(tx, owner))
    }
    #[inline]
    fn forget_undo_on_commit(&mut self, owner: u64) {
        txn!(self, tx => EngineTxn::forget_undo_on_commit(tx, owner))
    }
    #[inline]
    fn set_sequence_memory(&mut self, m: SequenceMemory) {
        txn!(self, tx => EngineTxn::set_sequence_memory(tx, m))
    }
    #[inline]
    fn begin_statement(&mut self) {
        txn!(self, tx => EngineTxn::begin_statement(tx))
    }
    #[inline]
    fn get_in(&self, t: &AnyTable, key: &Key) -> Result<Option<Arc<Row>>> {
        txn_table!(self, t, (tx, t) => EngineTxn::get_in(tx, t, key))
    }
    #[inline]
    fn get_with<R>(&self, t: &AnyTable, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
        txn_table!(self, t, (tx, t) => EngineTxn::get_with(tx, t, key, f))
    }
    #[inline]
    fn scan_with(
        &self,
        t: &AnyTable,
        range: &KeyRange,
        reverse: bool,
        f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        txn_table!(self, t, (tx, t) => EngineTxn::scan_with(tx, t, range, reverse, f))
    }
    #[inline]
    fn scan_first(
        &self,
        t: &AnyTable,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        txn_table!(self, t, (tx, t) => EngineTxn::scan_first(tx, t, range, reverse, limit, f))
    }
    #[inline]
    fn count_in(&self, t: &AnyTable, range: &KeyRange, check: impl FnMut() -> Result<()>) -> Result<u64> {
        txn_table!(self, t, (tx, t) => EngineTxn::count_in(tx, t, range, check))
    }
    #[inline]
    fn index_scan_in(
        &self,
        t: &AnyTable,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        txn_table!(self, t, (tx, t) => EngineTxn::index_scan_in(tx, t, index, lo, hi))
    }
    fn get_latest_in(&self, t: &AnyTable, key: &Key) -> Result<Option<Arc<Row>>> {
        txn_table!(self, t, (tx, t) => EngineTxn::get_latest_in(tx, t, key))
    }
    fn scan_latest_in(
        &self,
        t: &AnyTable,
        range: &KeyRange,
        f: impl FnMut(&Key, &Arc<Row>) -> Result<bool>,
    ) -> Result<()> {
        txn_table!(self, t, (tx, t) => EngineTxn::scan_latest_in(tx, t, range, f))
    }
    fn index_latest_in(
        &self,
        t: &AnyTable,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        txn_table!(self, t, (tx, t) => EngineTxn::index_latest_in(tx, t, index, lo, hi))
    }
    fn table(&self, name: &str) -> Result<AnyTable> {
        txn!(self, tx => EngineTxn::table(tx, name).map(Into::into))
    }
    fn tables(&self) -> Vec<AnyTable> {
        txn!(self, tx => EngineTxn::tables(tx).into_iter().map(Into::into).collect())
    }
    fn referencing(&self, name: &str) -> Vec<AnyTable> {
        txn!(self, tx => EngineTxn::referencing(tx, name).into_iter().map(Into::into).collect())
    }
    #[inline]
    fn insert_in(&mut self, t: &AnyTable, row: Row) -> Result<Key> {
        txn_table!(self, t, (tx, t) => EngineTxn::insert_in(tx, t, row))
    }
    fn insert_batch_in(&mut self, t: &AnyTable, rows: Vec<Row>) -> std::result::Result<u64, BatchError> {
        txn_table!(self, t, (tx, t) => EngineTxn::insert_batch_in(tx, t, rows))
    }
    #[inline]
    fn update_in(&mut self, t: &AnyTable, key: &Key, row: Row) -> Result<bool> {
        txn_table!(self, t, (tx, t) => EngineTxn::update_in(tx, t, key, row))
    }
    #[inline]
    fn delete_in(&mut self, t: &AnyTable, key: &Key) -> Result<bool> {
        txn_table!(self, t, (tx, t) => EngineTxn::delete_in(tx, t, key))
    }
    #[inline]
    fn lock_row_by(&self, t: &AnyTable, key: &Key, stop: &Interrupt) -> Result<Locked> {
        txn_table!(self, t, (tx, t) => EngineTxn::lock_row_by(tx, t, key, stop))
    }
    fn start_micros(&self) -> i64 {
        txn!(self, tx => EngineTxn::start_micros(tx))
    }
    fn nextval(&self, name: &str) -> Result<i64> {
        txn!(self, tx => EngineTxn::nextval(tx, name))
    }
    fn setval(&self, name: &str, v: i64, is_called: bool) -> Result<i64> {
        txn!(self, tx => EngineTxn::setval(tx, name, v, is_called))
    }
    fn currval(&self, name: &str) -> Result<i64> {
        txn!(self, tx => EngineTxn::currval(tx, name))
    }
    fn savepoint(&mut self) -> Result<Savepoint> {
        txn!(self, tx => EngineTxn::savepoint(tx))
    }
    fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        txn!(self, tx => EngineTxn::rollback_to(tx, sp))
    }
    fn release(&mut self, sp: Savepoint) -> Result<()> {
        txn!(self, tx => EngineTxn::release(tx, sp))
    }
    #[inline]
    fn has_writes(&self) -> bool {
        txn!(self, tx => EngineTxn::has_writes(tx))
    }
    fn commit(self) -> Result<()> {
        txn!(self, tx => EngineTxn::commit(tx))
    }
    fn rollback(self) {
        txn!(self, tx => EngineTxn::rollback(tx))
    }
}

impl StatementWrites for AnyTxn {
    #[inline]
    fn insert_row(&mut self, t: &AnyTable, row: Row) -> Result<Key> {
        txn_table!(self, t, (tx, t) => StatementWrites::insert_row(tx, t, row))
    }
    fn insert_rows(&mut self, t: &AnyTable, rows: Vec<Row>) -> std::result::Result<u64, BatchError> {
        txn_table!(self, t, (tx, t) => StatementWrites::insert_rows(tx, t, rows))
    }
    #[inline]
    fn update_row(&mut self, t: &AnyTable, key: &Key, row: Row) -> Result<bool> {
        txn_table!(self, t, (tx, t) => StatementWrites::update_row(tx, t, key, row))
    }
    #[inline]
    fn delete_row(&mut self, t: &AnyTable, key: &Key) -> Result<bool> {
        txn_table!(self, t, (tx, t) => StatementWrites::delete_row(tx, t, key))
    }
    fn delete_latest(&mut self, t: &AnyTable, key: &Key) -> Result<bool> {
        txn_table!(self, t, (tx, t) => StatementWrites::delete_latest(tx, t, key))
    }
    fn update_latest(&mut self, t: &AnyTable, key: &Key, row: Row) -> Result<bool> {
        txn_table!(self, t, (tx, t) => StatementWrites::update_latest(tx, t, key, row))
    }
}
