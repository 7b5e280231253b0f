//! Schema changes inside the engine: create and drop tables and indexes, rebuild a table under
//! a new id (TRUNCATE, ALTER), each one durable write of the catalog and its data.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rocksdb::WriteBatch;

use super::{table, IndexDef, Inner, Table, TableDef};
use crate::error::{Error, Result, SqlState};
use crate::index::keyed::{KeyIndex, TOMBSTONE};
use crate::store::{CF_CATALOG, CF_IDXSNAP, CF_META, CF_ROWS};
use crate::types::{Key, Row};

impl Inner {
    pub(super) fn create_table(&self, mut def: TableDef, if_not_exists: bool) -> Result<Arc<Table>> {
        self.check_open()?;
        def.validate()?;
        let mut c = self.commit.lock();
        if let Some(t) = self.tables.read().get(&def.name) {
            if if_not_exists {
                return Ok(t.clone());
            }
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", def.name),
            ));
        }
        def.id = c.next_table_id;
        let mut b = WriteBatch::default();
        self.put_def(&mut b, &def)?;
        b.put_cf(
            self.store.db()?.cf(CF_META),
            b"next_table_id",
            (def.id as u64 + 1).to_be_bytes(),
        );
        self.store.write_sync(b)?;
        c.next_table_id += 1;
        let t = Arc::new(Table::new(def.clone(), KeyIndex::new(def.key_kind()))?);
        self.tables.write().insert(def.name.clone(), t.clone());
        self.referenced.changed();
        Ok(t)
    }

    pub(super) fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool> {
        self.check_open()?;
        let _c = self.commit.lock();
        let Some(t) = self.tables.read().get(name).cloned() else {
            if if_exists {
                return Ok(false);
            }
            return Err(Error::undefined_table(name));
        };
        let mut b = WriteBatch::default();
        self.delete_table_data(&mut b, t.id)?;
        self.store.write_sync(b)?;
        t.dropped.store(true, Ordering::Release);
        self.tables.write().remove(name);
        self.referenced.changed();
        self.gc.lock().forget_table(t.id);
        Ok(true)
    }

    /// Adds to `b` the catalog entry of `def`.
    pub(super) fn put_def(&self, b: &mut WriteBatch, def: &TableDef) -> Result<()> {
        let json = serde_json::to_vec(def).expect("a TableDef always serializes");
        b.put_cf(self.store.db()?.cf(CF_CATALOG), def.id.to_be_bytes(), json);
        Ok(())
    }

    /// Adds to `b` the deletion of everything stored for table `id`.
    pub(super) fn delete_table_data(&self, b: &mut WriteBatch, id: u32) -> Result<()> {
        let db = self.store.db()?;
        b.delete_cf(db.cf(CF_CATALOG), id.to_be_bytes());
        b.delete_range_cf(
            db.cf(CF_ROWS),
            crate::store::row_key(id, 0),
            crate::store::row_key(id + 1, 0),
        );
        b.delete_range_cf(
            db.cf(CF_IDXSNAP),
            crate::store::idxsnap_key(id, 0, 0),
            crate::store::idxsnap_key(id + 1, 0, 0),
        );
        b.delete_cf(db.cf(CF_META), format!("ckpt/{id}"));
        Ok(())
    }

    /// Creates a table under a new id from `f(old definition)`, copies the live rows into it
    /// (when `copy_rows`; each row completed to the old definition, then through `map`), and
    /// swaps it in atomically; the old rows are deleted, or with `keep_old` kept as a retired
    /// table (`retire.rs`) that a transaction block's rollback can put back. Returns the old id.
    pub(super) fn rebuild_table(
        &self,
        name: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        copy_rows: bool,
        map: &dyn Fn(Row) -> Result<Row>,
        keep_old: bool,
    ) -> Result<u32> {
        self.check_open()?;
        let mut c = self.commit.lock();
        let old = self.table(name)?;
        let old_def = old.def();
        let mut def = f(&old_def)?;
        def.id = c.next_table_id;
        def.name = old_def.name.clone();
        def.validate()?;
        // Read every live row at the latest state (the commit lock keeps writers out).
        let mut rows: Vec<(Key, Row)> = Vec::new();
        if copy_rows {
            let snapshot = c.next_rowid - 1;
            let entries = old.pk.read().entries()?;
            for (k, p) in entries {
                if let Some(row) = self.resolve(old.id, p, snapshot)? {
                    let row = def.check_row(map(old_def.complete_row(Arc::unwrap_or_clone(row)))?)?;
                    let key = if def.has_primary_key() {
                        def.key_of(&row)?
                    } else {
                        k
                    };
                    rows.push((key, row));
                }
            }
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
                let _ = w;
                return Err(Error::new(
                    SqlState::UNIQUE_VIOLATION,
                    format!(
                        "could not create unique index \"{}\": key is duplicated",
                        def.pkey_name.clone().unwrap_or_default()
                    ),
                ));
            }
        }
        let mut b = WriteBatch::default();
        let mut entries = Vec::with_capacity(rows.len());
        let mut buf = Vec::new();
        let db = self.store.db()?;
        let cf_rows = db.cf(CF_ROWS);
        let mut rowid = c.next_rowid;
        for (k, row) in &rows {
            crate::types::codec::encode_version(0, k, Some(row), &mut buf);
            b.put_cf(cf_rows, crate::store::row_key(def.id, rowid), &buf);
            entries.push((k.clone(), rowid));
            rowid += 1;
        }
        self.put_def(&mut b, &def)?;
        b.put_cf(
            self.store.db()?.cf(CF_META),
            b"next_table_id",
            (def.id as u64 + 1).to_be_bytes(),
        );
        b.put_cf(self.store.db()?.cf(CF_META), b"next_rowid", rowid.to_be_bytes());
        let retired = keep_old.then(|| super::retire::retired_def(&old_def));
        match &retired {
            Some(r) => self.put_def(&mut b, r)?,
            None => self.delete_table_data(&mut b, old.id)?,
        }
        self.store.write_sync(b)?;
        c.next_table_id += 1;
        c.next_rowid = rowid;
        let t = Arc::new(Table::new(
            def.clone(),
            KeyIndex::bulk_load(def.key_kind(), entries),
        )?);
        for (i, (k, row)) in rows.iter().enumerate() {
            t.add_secondary_entries(row, k, c.next_rowid - rows.len() as u64 + i as u64);
        }
        let mut m = self.tables.write();
        m.insert(def.name.clone(), t);
        match retired {
            Some(r) => {
                let n = r.name.clone();
                old.set_def(r);
                m.insert(n, old.clone());
            }
            None => old.dropped.store(true, Ordering::Release),
        }
        drop(m);
        self.referenced.changed();
        if !keep_old {
            self.gc.lock().forget_table(old.id);
        }
        self.visible.fetch_max(rowid - 1, Ordering::AcqRel);
        Ok(old.id)
    }

    pub(super) fn create_index(&self, table: &str, index: IndexDef, if_not_exists: bool) -> Result<()> {
        self.check_open()?;
        let c = self.commit.lock();
        if self
            .tables
            .read()
            .values()
            .filter(|t| !t.is_retired())
            .any(|t| t.def().indexes.iter().any(|i| i.name == index.name))
        {
            if if_not_exists {
                return Ok(());
            }
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", index.name),
            ));
        }
        let t = self.table(table)?;
        let mut def = (*t.def()).clone();
        if index.columns.is_empty() || index.columns.iter().any(|&i| i >= def.columns.len()) {
            return Err(Error::new(
                SqlState::UNDEFINED_COLUMN,
                "index column does not exist",
            ));
        }
        // Build from the newest version of every key.
        let snapshot = c.next_rowid - 1;
        let mut entries = std::collections::BTreeSet::new();
        for (k, p) in t.pk.read().entries()? {
            if let Some(row) = self.resolve(t.id, p, snapshot)? {
                if let Some(val) = def.index_value(&index, &row) {
                    entries.insert((val, k, p & !TOMBSTONE));
                }
            }
        }
        if index.unique {
            let mut prev: Option<&Vec<u8>> = None;
            for (v, _, _) in &entries {
                if prev == Some(v) {
                    return Err(Error::new(
                        SqlState::UNIQUE_VIOLATION,
                        format!(
                            "could not create unique index \"{}\": a key is duplicated",
                            index.name
                        ),
                    ));
                }
                prev = Some(v);
            }
        }
        def.indexes.push(index.clone());
        let mut b = WriteBatch::default();
        self.put_def(&mut b, &def)?;
        self.store.write_sync(b)?;
        t.secondary
            .write()
            .push(table::SecondaryIndex { def: index, entries });
        t.set_def(def);
        Ok(())
    }

    pub(super) fn drop_index(&self, name: &str) -> Result<bool> {
        self.check_open()?;
        let _c = self.commit.lock();
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        for t in tables.into_iter().filter(|t| !t.is_retired()) {
            let mut def = (*t.def()).clone();
            if let Some(pos) = def.indexes.iter().position(|i| i.name == name) {
                def.indexes.remove(pos);
                let mut b = WriteBatch::default();
                self.put_def(&mut b, &def)?;
                self.store.write_sync(b)?;
                t.secondary.write().remove(pos);
                t.set_def(def);
                return Ok(true);
            }
        }
        Ok(false)
    }
}
