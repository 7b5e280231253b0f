//! Schema changes that leave a table's rows where they are (`ALTER TABLE` ADD COLUMN, RENAME,
//! SET/DROP DEFAULT, SET/DROP NOT NULL, ADD/DROP CONSTRAINT): a new definition under the same
//! table id, checked first against the live rows when it constrains them; and DROP COLUMN,
//! which rewrites them.

use std::sync::Arc;

use rocksdb::WriteBatch;

use super::catalog::{RowCheck, TableDef};
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

    /// Replaces a table's definition and rewrites its live rows under it, each passed through
    /// `map` (from the old definition's columns to the new one's), as `ALTER TABLE ... DROP
    /// COLUMN` needs. Fails, changing nothing, if a row does not fit the new definition.
    pub fn rebuild_table_with(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<()> {
        self.inner().rebuild_table(name, f, true, map)
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
