//! The local engine (ALEX over RocksDB, `crate::engine`) behind the seam's traits: each call is
//! the inherent method of the same name, so behaviour is exactly the engine's.
//!
//! Inherent methods are named by path (`Transaction::get_in(self, ..)`), never as
//! `self.get_in(..)`: on `Arc<Table>` the trait method would be found first and recurse.

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

impl Engine for Database {
    type Table = Arc<Table>;
    type Txn = Transaction;

    #[inline]
    fn begin(&self) -> Transaction {
        Database::begin(self)
    }
    #[inline]
    fn get_with<R>(&self, t: &Arc<Table>, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
        Database::get_with(self, t, key, f)
    }
    #[inline]
    fn table(&self, name: &str) -> Result<Arc<Table>> {
        Database::table(self, name)
    }
    fn tables(&self) -> Vec<Arc<Table>> {
        Database::tables(self)
    }
    fn create_table(&self, def: TableDef) -> Result<Arc<Table>> {
        Database::create_table(self, def)
    }
    fn create_table_if_not_exists(&self, def: TableDef) -> Result<Arc<Table>> {
        Database::create_table_if_not_exists(self, def)
    }
    fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool> {
        Database::drop_table(self, name, if_exists)
    }
    fn truncate(&self, name: &str) -> Result<()> {
        Database::truncate(self, name)
    }
    fn rebuild_table(&self, name: &str, f: impl FnOnce(&TableDef) -> Result<TableDef>) -> Result<()> {
        Database::rebuild_table(self, name, f)
    }
    fn rebuild_table_with(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<()> {
        Database::rebuild_table_with(self, name, f, map)
    }
    fn alter_table_def(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        check: Option<RowCheck<'_>>,
    ) -> Result<()> {
        Database::alter_table_def(self, name, f, check)
    }
    fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        Database::rename_table(self, from, to)
    }
    fn restore_table_def(&self, def: TableDef) -> Result<()> {
        Database::restore_table_def(self, def)
    }
    fn rebuild_table_keeping(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<u32> {
        Database::rebuild_table_keeping(self, name, f, map)
    }
    fn restore_retired(&self, def: TableDef) -> Result<bool> {
        Database::restore_retired(self, def)
    }
    fn drop_retired(&self, id: u32) -> Result<bool> {
        Database::drop_retired(self, id)
    }
    fn lock_table(
        &self,
        id: u32,
        owner: u64,
        lock_deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<()> {
        Database::lock_table(self, id, owner, lock_deadline, stop)
    }
    fn wait_table(
        &self,
        id: u32,
        owner: u64,
        lock_deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<bool> {
        Database::wait_table(self, id, owner, lock_deadline, stop)
    }
    fn unlock_tables(&self, owner: u64) {
        Database::unlock_tables(self, owner)
    }
    fn tables_locked_by_others(&self, owner: u64) -> Vec<u32> {
        Database::tables_locked_by_others(self, owner)
    }
    fn record_undo(&self, owner: u64, seq: u64, defs: &[TableDef]) -> Result<()> {
        Database::record_undo(self, owner, seq, defs)
    }
    fn forget_undo(&self, owner: u64, from: u64) -> Result<()> {
        Database::forget_undo(self, owner, from)
    }
    fn create_index(&self, table: &str, index: IndexDef, if_not_exists: bool) -> Result<()> {
        Database::create_index(self, table, index, if_not_exists)
    }
    fn drop_index(&self, name: &str) -> Result<bool> {
        Database::drop_index(self, name)
    }
    fn create_view(&self, def: ViewDef, or_replace: bool) -> Result<()> {
        Database::create_view(self, def, or_replace)
    }
    fn drop_view(&self, name: &str) -> Result<bool> {
        Database::drop_view(self, name)
    }
    fn view(&self, name: &str) -> Result<Option<Arc<ViewDef>>> {
        Database::view(self, name)
    }
    fn views(&self) -> Result<Vec<Arc<ViewDef>>> {
        Database::views(self)
    }
    fn views_depending_on(&self, name: &str) -> Result<Vec<Arc<ViewDef>>> {
        Database::views_depending_on(self, name)
    }
    fn create_sequence(&self, def: SequenceDef, if_not_exists: bool) -> Result<bool> {
        Database::create_sequence(self, def, if_not_exists)
    }
    fn drop_sequence(&self, name: &str, if_exists: bool) -> Result<bool> {
        Database::drop_sequence(self, name, if_exists)
    }
    fn drop_owned_sequences(&self, table: &str) -> Result<()> {
        Database::drop_owned_sequences(self, table)
    }
    fn set_sequence_owner(&self, name: &str, owned_by: Option<(String, String)>) -> Result<()> {
        Database::set_sequence_owner(self, name, owned_by)
    }
    fn alter_sequence(&self, name: &str, new: &SequenceDef, restart: Option<i64>) -> Result<SequenceDef> {
        Database::alter_sequence(self, name, new, restart)
    }
    fn restore_sequence(&self, old: &SequenceDef) -> Result<()> {
        Database::restore_sequence(self, old)
    }
    fn rename_sequence(&self, from: &str, to: &str) -> Result<()> {
        Database::rename_sequence(self, from, to)
    }
    fn sequences(&self) -> Result<Vec<SequenceDef>> {
        Database::sequences(self)
    }
    fn has_sequence(&self, name: &str) -> Result<bool> {
        Database::has_sequence(self, name)
    }
    fn cancel_handle(&self) -> CancelHandle {
        CancelHandle::new(self)
    }
    fn stats(&self) -> Stats {
        Database::stats(self)
    }
    fn index_stats(&self) -> Vec<IndexStats> {
        Database::index_stats(self)
    }
    fn store_property(&self, name: &str) -> Option<u64> {
        Database::rocksdb_property(self, name)
    }
    fn disk_bytes(&self) -> u64 {
        Database::disk_bytes(self)
    }
    fn memory(&self) -> MemoryReport {
        Database::memory(self)
    }
    fn location(&self) -> String {
        Database::path(self).display().to_string()
    }
}

impl EngineTable for Arc<Table> {
    #[inline]
    fn def(&self) -> Arc<TableDef> {
        Table::def(self)
    }
    #[inline]
    fn has_def(&self, d: &Arc<TableDef>) -> bool {
        Table::has_def(self, d)
    }
    fn name(&self) -> String {
        Table::name(self)
    }
    #[inline]
    fn is_dropped(&self) -> bool {
        Table::is_dropped(self)
    }
    #[inline]
    fn lock_owner(&self) -> u64 {
        Table::lock_owner(self)
    }
    #[inline]
    fn key_index_kind(&self) -> IndexKind {
        Table::key_index_kind(self)
    }
    fn index_len(&self) -> usize {
        Table::index_len(self)
    }
    fn index_heap_bytes(&self) -> usize {
        Table::index_heap_bytes(self)
    }
    fn index_candidates(&self, index: usize, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Key> {
        self.secondary
            .read()
            .get(index)
            .map(|s| s.candidates(lo, hi))
            .unwrap_or_default()
    }
}

impl EngineTxn for Transaction {
    type Table = Arc<Table>;

    #[inline]
    fn isolation(&self) -> Isolation {
        Transaction::isolation(self)
    }
    #[inline]
    fn set_isolation(&mut self, iso: Isolation) {
        Transaction::set_isolation(self, iso)
    }
    #[inline]
    fn set_lock_timeout(&mut self, t: Option<Duration>) {
        Transaction::set_lock_timeout(self, t)
    }
    #[inline]
    fn set_interrupt(&mut self, stop: Interrupt) {
        Transaction::set_interrupt(self, stop)
    }
    #[inline]
    fn set_sync(&mut self, sync: bool) {
        Transaction::set_sync(self, sync)
    }
    #[inline]
    fn saw_constraints_at(&mut self, stamp: u64) {
        Transaction::saw_constraints_at(self, stamp)
    }
    #[inline]
    fn set_lock_party(&mut self, owner: u64) {
        Transaction::set_lock_party(self, owner)
    }
    #[inline]
    fn forget_undo_on_commit(&mut self, owner: u64) {
        Transaction::forget_undo_on_commit(self, owner)
    }
    #[inline]
    fn set_sequence_memory(&mut self, m: SequenceMemory) {
        Transaction::set_sequence_memory(self, m)
    }
    #[inline]
    fn begin_statement(&mut self) {
        Transaction::begin_statement(self)
    }
    #[inline]
    fn get_in(&self, t: &Arc<Table>, key: &Key) -> Result<Option<Arc<Row>>> {
        Transaction::get_in(self, t, key)
    }
    #[inline]
    fn get_with<R>(&self, t: &Arc<Table>, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
        Transaction::get_with(self, t, key, f)
    }
    #[inline]
    fn scan_with(
        &self,
        t: &Arc<Table>,
        range: &KeyRange,
        reverse: bool,
        f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        Transaction::scan_with(self, t, range, reverse, f)
    }
    #[inline]
    fn scan_first(
        &self,
        t: &Arc<Table>,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        Transaction::scan_first(self, t, range, reverse, limit, f)
    }
    #[inline]
    fn count_in(&self, t: &Arc<Table>, range: &KeyRange, check: impl FnMut() -> Result<()>) -> Result<u64> {
        Transaction::count_in(self, t, range, check)
    }
    #[inline]
    fn index_scan_in(
        &self,
        t: &Arc<Table>,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        Transaction::index_scan_in(self, t, index, lo, hi)
    }
    fn get_latest_in(&self, t: &Arc<Table>, key: &Key) -> Result<Option<Arc<Row>>> {
        Transaction::get_latest_in(self, t, key)
    }
    fn scan_latest_in(
        &self,
        t: &Arc<Table>,
        range: &KeyRange,
        f: impl FnMut(&Key, &Arc<Row>) -> Result<bool>,
    ) -> Result<()> {
        Transaction::scan_latest_in(self, t, range, f)
    }
    fn index_latest_in(
        &self,
        t: &Arc<Table>,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        Transaction::index_latest_in(self, t, index, lo, hi)
    }
    fn table(&self, name: &str) -> Result<Arc<Table>> {
        Transaction::table(self, name)
    }
    fn tables(&self) -> Vec<Arc<Table>> {
        Transaction::tables(self)
    }
    fn referencing(&self, name: &str) -> Vec<Arc<Table>> {
        Transaction::referencing(self, name)
    }
    #[inline]
    fn insert_in(&mut self, t: &Arc<Table>, row: Row) -> Result<Key> {
        Transaction::insert_in(self, t, row)
    }
    fn insert_batch_in(&mut self, t: &Arc<Table>, rows: Vec<Row>) -> std::result::Result<u64, BatchError> {
        Transaction::insert_batch_in(self, t, rows)
    }
    #[inline]
    fn update_in(&mut self, t: &Arc<Table>, key: &Key, row: Row) -> Result<bool> {
        Transaction::update_in(self, t, key, row)
    }
    #[inline]
    fn delete_in(&mut self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        Transaction::delete_in(self, t, key)
    }
    #[inline]
    fn lock_row_by(&self, t: &Arc<Table>, key: &Key, stop: &Interrupt) -> Result<Locked> {
        Transaction::lock_row_by(self, t, key, stop)
    }
    fn start_micros(&self) -> i64 {
        Transaction::start_micros(self)
    }
    fn nextval(&self, name: &str) -> Result<i64> {
        Transaction::nextval(self, name)
    }
    fn setval(&self, name: &str, v: i64, is_called: bool) -> Result<i64> {
        Transaction::setval(self, name, v, is_called)
    }
    fn currval(&self, name: &str) -> Result<i64> {
        Transaction::currval(self, name)
    }
    fn savepoint(&mut self) -> Result<Savepoint> {
        Transaction::savepoint(self)
    }
    fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        Transaction::rollback_to(self, sp)
    }
    fn release(&mut self, sp: Savepoint) -> Result<()> {
        Transaction::release(self, sp)
    }
    #[inline]
    fn has_writes(&self) -> bool {
        Transaction::has_writes(self)
    }
    fn commit(self) -> Result<()> {
        Transaction::commit(self)
    }
    fn rollback(self) {
        Transaction::rollback(self)
    }
}

impl StatementWrites for Transaction {
    #[inline]
    fn insert_row(&mut self, t: &Arc<Table>, row: Row) -> Result<Key> {
        Transaction::insert_row(self, t, row)
    }
    fn insert_rows(&mut self, t: &Arc<Table>, rows: Vec<Row>) -> std::result::Result<u64, BatchError> {
        Transaction::insert_rows(self, t, rows)
    }
    #[inline]
    fn update_row(&mut self, t: &Arc<Table>, key: &Key, row: Row) -> Result<bool> {
        Transaction::update_row(self, t, key, row)
    }
    #[inline]
    fn delete_row(&mut self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        Transaction::delete_row(self, t, key)
    }
    fn delete_latest(&mut self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        Transaction::delete_latest(self, t, key)
    }
    fn update_latest(&mut self, t: &Arc<Table>, key: &Key, row: Row) -> Result<bool> {
        Transaction::update_latest(self, t, key, row)
    }
}
