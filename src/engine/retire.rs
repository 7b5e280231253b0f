//! Retired tables: the old incarnation of a table that an ALTER TABLE inside a transaction
//! block rebuilt (DROP COLUMN, ADD PRIMARY KEY, ADD COLUMN with a volatile default), kept with
//! its rows, indexes and id under a name no statement can reach, so that the block's rollback
//! (or a crash inside it) can put it back exactly, as PostgreSQL's rollback of such an ALTER
//! does. [`Database::rebuild_table_keeping`] makes one, [`Database::restore_retired`] puts it
//! back (dropping the rebuilt incarnation), [`Database::drop_retired`] drops it once the block
//! has committed. A retired table is listed by no catalog (`Database::tables`), found by no
//! name lookup, and takes part in no foreign key or index-name check; the collector, the
//! checkpoints and the integrity checks treat it as the table it is. An open drops every
//! retired table left after the leftover undo records are applied: a crash inside the block
//! put them back through those records, so what is left belongs to blocks that committed.

use std::sync::atomic::Ordering;

use rocksdb::WriteBatch;

use super::catalog::TableDef;
use super::{Database, Inner};
use crate::error::{Error, Result};
use crate::types::Row;

const PREFIX: &str = "\u{1}retired/";

/// The name a retired table with id `id` has.
pub(crate) fn retired_name(id: u32) -> String {
    format!("{PREFIX}{id}")
}

/// Whether `name` is a retired table's.
pub(crate) fn is_retired_name(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// The definition `old` keeps while retired: the same, under its retired name.
pub(super) fn retired_def(old: &TableDef) -> TableDef {
    TableDef {
        name: retired_name(old.id),
        ..old.clone()
    }
}

impl Database {
    /// [`Database::rebuild_table_with`], keeping the old incarnation as a retired table instead
    /// of deleting it. Returns its id (the id the table had before).
    pub fn rebuild_table_keeping(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<u32> {
        if is_retired_name(name) {
            return Err(Error::undefined_table(name));
        }
        self.inner().rebuild_table(name, f, true, map, true)
    }

    /// Puts back `def`, the definition a retired table (`def.id`) had before its rebuild,
    /// and drops the table that now holds `def.name` (the rebuilt incarnation), in one durable
    /// write. When no table holds `def.name` (the block created the table, and its rollback
    /// dropped the new incarnation first) the retired one is dropped instead. Returns false,
    /// changing nothing, when no retired table has that id.
    pub fn restore_retired(&self, def: TableDef) -> Result<bool> {
        self.inner().restore_retired(def)
    }

    /// Drops the retired table with id `id`, if there is one (its block committed).
    pub fn drop_retired(&self, id: u32) -> Result<bool> {
        self.inner().drop_table(&retired_name(id), true)
    }
}

impl Inner {
    pub(super) fn restore_retired(&self, mut def: TableDef) -> Result<bool> {
        self.check_open()?;
        let _c = self.commit.lock();
        let Some(old) = self.tables.read().get(&retired_name(def.id)).cloned() else {
            return Ok(false);
        };
        if is_retired_name(&def.name) {
            return Err(Error::internal("restore_retired of a retired definition"));
        }
        def.validate()?;
        if def.primary_key != old.def().primary_key || def.indexes != old.def().indexes {
            return Err(Error::internal(
                "restore_retired: the retired table's key or indexes differ from the definition",
            ));
        }
        let Some(current) = self.tables.read().get(&def.name).cloned() else {
            // Nothing holds the name: the block created the table and its rollback dropped
            // the new incarnation already, so the old one goes too.
            let mut b = WriteBatch::default();
            self.delete_table_data(&mut b, old.id)?;
            self.store.write_sync(b)?;
            old.dropped.store(true, Ordering::Release);
            self.tables.write().remove(&retired_name(def.id));
            self.gc.lock().forget_table(old.id);
            return Ok(true);
        };
        let mut b = WriteBatch::default();
        self.delete_table_data(&mut b, current.id)?;
        self.put_def(&mut b, &def)?;
        self.store.write_sync(b)?;
        let mut m = self.tables.write();
        current.dropped.store(true, Ordering::Release);
        m.remove(&def.name);
        m.remove(&retired_name(def.id));
        let name = def.name.clone();
        old.set_def(def);
        m.insert(name, old);
        drop(m);
        self.referenced.changed();
        self.gc.lock().forget_table(current.id);
        Ok(true)
    }

    /// Drops every retired table (at open, after the leftover undo records put back those of
    /// blocks a crash ended: see the module docs).
    pub(super) fn drop_leftover_retired(&self) -> Result<()> {
        let names: Vec<String> = self
            .tables
            .read()
            .keys()
            .filter(|n| is_retired_name(n))
            .cloned()
            .collect();
        for n in names {
            self.drop_table(&n, true)?;
        }
        Ok(())
    }
}
