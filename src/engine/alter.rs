//! Schema changes that leave a table's rows where they are (`ALTER TABLE` ADD COLUMN, RENAME,
//! SET/DROP DEFAULT, SET/DROP NOT NULL, ADD/DROP CONSTRAINT): a new definition under the same
//! table id, checked first against the live rows when it constrains them; and DROP COLUMN,
//! which rewrites them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rocksdb::WriteBatch;

use super::catalog::{RowCheck, TableDef};
use super::interrupt::Interrupt;
use super::{Database, Inner};
use crate::error::{Error, Result, SqlState};
use crate::types::Row;

impl Database {
    /// Replaces the definition of table `name` with `f(current)` without rewriting its rows.
    /// The new definition keeps the table's id, primary key and indexes, and may only add
    /// columns at the end: rows stored before read each added column's
    /// [`super::ColumnDef::missing`] value. When `check` is given it sees every live row (the
    /// newest committed version, completed to the new definition) first; its first error
    /// leaves the table unchanged. Durable before it returns.
    pub fn alter_table_def(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        check: Option<RowCheck<'_>>,
    ) -> Result<()> {
        self.inner().alter_def(name, f, check)
    }

    /// Renames a table (PostgreSQL's `ALTER TABLE ... RENAME TO`): its id, rows, indexes and
    /// constraint names stay.
    pub fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        self.inner().rename_table(from, to)
    }

    /// Puts back `def`, an earlier definition of the table with its id (found under any
    /// name): the undo of `alter_table_def` and `rename_table` whose block rolled back
    /// (`sql/session/block_ddl.rs`). Unlike `alter_table_def` it may remove columns added at
    /// the end: the caller guarantees no committed row holds a value for them (the table was
    /// locked against other writers, and the block's own rows rolled back). The indexes and
    /// primary key must be the current ones. Durable before it returns.
    pub fn restore_table_def(&self, def: TableDef) -> Result<()> {
        self.inner().restore_def(def)
    }

    /// Takes the table lock of table `id` for `owner` (a session), waiting while another owner
    /// holds it: 55P03 once `lock_deadline` passes, 57014 when `stop` fires. Held until
    /// [`Database::unlock_tables`].
    pub fn lock_table(
        &self,
        id: u32,
        owner: u64,
        lock_deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<()> {
        let inner = self.inner();
        inner.locks.table_lock(owner, id, true, lock_deadline, stop)?;
        if let Some(t) = inner.table_by_id(id) {
            t.lock_owner.store(owner, Ordering::Release);
        }
        Ok(())
    }

    /// Waits while an owner other than `owner` holds the table lock of table `id` (as
    /// [`Database::lock_table`], without taking it). Returns whether it waited.
    pub fn wait_table(
        &self,
        id: u32,
        owner: u64,
        lock_deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<bool> {
        self.inner()
            .locks
            .table_lock(owner, id, false, lock_deadline, stop)
    }

    /// The ids of the tables whose locks owners other than `owner` hold.
    pub fn tables_locked_by_others(&self, owner: u64) -> Vec<u32> {
        self.inner().locks.tables_locked_by_others(owner)
    }

    /// Releases the table locks `owner` holds.
    pub fn unlock_tables(&self, owner: u64) {
        let inner = self.inner();
        for id in inner.locks.unlock_tables(owner) {
            if let Some(t) = inner.table_by_id(id) {
                let _ = t
                    .lock_owner
                    .compare_exchange(owner, 0, Ordering::AcqRel, Ordering::Acquire);
            }
        }
    }

    /// Replaces a table's definition and rewrites its live rows under it, each passed through
    /// `map` (from the old definition's columns to the new one's), as `ALTER TABLE ... DROP
    /// COLUMN` needs. Fails, changing nothing, if a row does not fit the new definition.
    pub fn rebuild_table_with(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<()> {
        self.inner().rebuild_table(name, f, true, map, false).map(|_| ())
    }
}

impl Inner {
    fn alter_def(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        check: Option<RowCheck<'_>>,
    ) -> Result<()> {
        self.check_open()?;
        // The commit lock keeps commits out while the rows are checked and the definition
        // changes, so no row committed meanwhile escapes the check.
        let c = self.commit.lock();
        let t = self.table(name)?;
        let old = t.def();
        let mut def = f(&old)?;
        def.id = old.id;
        def.name = old.name.clone();
        def.validate()?;
        if def.columns.len() < old.columns.len()
            || def.primary_key != old.primary_key
            || def.indexes != old.indexes
        {
            return Err(Error::internal(
                "alter_table_def cannot remove columns or change the primary key or indexes",
            ));
        }
        if let Some(check) = check {
            let snapshot = c.next_rowid - 1;
            let entries = t.pk.read().entries()?;
            for (_, p) in entries {
                if let Some(row) = self.resolve(t.id, p, snapshot)? {
                    let row = def.complete_row(Arc::unwrap_or_clone(row));
                    check(&row)?;
                }
            }
        }
        let mut b = WriteBatch::default();
        self.put_def(&mut b, &def)?;
        self.store.write_sync(b)?;
        t.set_def(def);
        self.referenced.changed();
        Ok(())
    }

    pub(super) fn restore_def(&self, mut def: TableDef) -> Result<()> {
        self.check_open()?;
        let _c = self.commit.lock();
        let t = {
            let m = self.tables.read();
            m.values()
                .find(|t| t.def().id == def.id)
                .cloned()
                .ok_or_else(|| Error::undefined_table(&def.name))?
        };
        let old = t.def();
        def.validate()?;
        if def.primary_key != old.primary_key || def.indexes != old.indexes {
            return Err(Error::internal(
                "restore_table_def cannot change the primary key or indexes",
            ));
        }
        if def.name != old.name && self.tables.read().contains_key(&def.name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", def.name),
            ));
        }
        let mut b = WriteBatch::default();
        self.put_def(&mut b, &def)?;
        self.store.write_sync(b)?;
        let (from, to) = (old.name.clone(), def.name.clone());
        t.set_def(def);
        if from != to {
            let mut m = self.tables.write();
            m.remove(&from);
            m.insert(to, t);
        }
        self.referenced.changed();
        Ok(())
    }

    fn rename_table(&self, from: &str, to: &str) -> Result<()> {
        self.check_open()?;
        let _c = self.commit.lock();
        let t = self.table(from)?;
        if self.tables.read().contains_key(to) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{to}\" already exists"),
            ));
        }
        let mut def = (*t.def()).clone();
        def.name = to.to_string();
        let mut b = WriteBatch::default();
        self.put_def(&mut b, &def)?;
        self.store.write_sync(b)?;
        t.set_def(def);
        let mut m = self.tables.write();
        m.remove(from);
        // Plans made under the old name see a new definition and look the name up again.
        m.insert(to.to_string(), t);
        drop(m);
        self.referenced.changed();
        Ok(())
    }
}

impl Inner {
    /// The table (of any name, retired ones included) with id `id`.
    pub(super) fn table_by_id(&self, id: u32) -> Option<Arc<super::table::Table>> {
        self.tables.read().values().find(|t| t.id == id).cloned()
    }
}
