//! Writes inside a transaction: insert, upsert, update, delete, buffered under row locks,
//! with primary-key and unique-index checks against what the transaction sees. Every public
//! write (by table name, or `*_in` with a table handle) also enforces CHECK and FOREIGN KEY
//! constraints, each as one write. The crate-private `*_row` writes are the SQL layer's
//! statement primitives (its statements run those constraints once, at their end) and the
//! `*_latest` ones the referential actions' writes.

use super::*;
use crate::engine::{constraint, fk};
use crate::seam::{AnyTable, AnyTxn};

impl Transaction {
    /// What holds a transaction's place while [`Transaction::as_any`] lends it out: it
    /// registers no snapshot and is already finished, so making and dropping it is a few
    /// stores, and any use of it fails as a finished transaction's would.
    fn stand_in(db: Arc<Inner>) -> Transaction {
        Transaction::with(db, 0, 0, true)
    }

    /// Runs `f` on this transaction in the seam's form, [`AnyTxn`], which the CHECK evaluator
    /// and the foreign-key actions take (they serve every engine). The transaction is moved in
    /// and back, not copied; if `f` panics, it is dropped (rolled back) and this one is left
    /// finished.
    pub(super) fn as_any<R>(&mut self, f: impl FnOnce(&mut AnyTxn) -> Result<R>) -> Result<R> {
        let stand_in = Transaction::stand_in(self.db.clone());
        let mut any = AnyTxn::from(std::mem::replace(self, stand_in));
        let r = f(&mut any);
        let AnyTxn::Local(tx) = any;
        *self = tx;
        r
    }

    /// Fails with 23514 when a CHECK constraint of `def` is false for `row` (fitted to the
    /// columns already). The constraints are evaluated in this transaction (a CHECK reads no
    /// table), so a check opens no transaction of its own.
    fn check_constraints(&mut self, def: &Arc<TableDef>, row: &[Value]) -> Result<()> {
        if def.checks.is_empty() {
            return Ok(());
        }
        self.as_any(|tx| constraint::evaluator().check(tx, def, row))
    }

    /// Whether a foreign key references table `t` (its deletes and key changes have
    /// actions): the table keeps the answer until a definition changes.
    #[inline]
    fn referenced(&self, t: &Table) -> bool {
        self.db.referenced.contains(t, || self.all_defs())
    }

    /// Applies the foreign keys that reference `t` to the rows `changes` removed or re-keyed
    /// (see [`fk::on_parent_change`]).
    fn parent_changed(&mut self, t: &Arc<Table>, changes: &[(Arc<Row>, Option<Row>)]) -> Result<()> {
        let parent = AnyTable::from(t.clone());
        let stop = self.stop.clone();
        self.as_any(|tx| fk::on_parent_change(tx, &parent, changes, 0, &stop))
    }

    pub(super) fn duplicate_key(t: &Table, row: &[Value]) -> Error {
        let def = t.def();
        def.unique_violation(&def.pkey_constraint(), &def.primary_key, row)
    }

    /// Checks unique secondary indexes for `row` (with key `key`) against what this transaction sees.
    pub(super) fn check_unique(&self, t: &Table, key: &Key, row: &[Value]) -> Result<()> {
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
                return Err(def.unique_violation(&idx.name, &idx.columns, row));
            }
        }
        Ok(())
    }

    /// Inserts a row into the table named `table`, as [`Transaction::insert_in`].
    pub fn insert(&mut self, table: &str, row: Row) -> Result<Key> {
        let t = self.db.table(table)?;
        self.insert_in(&t, row)
    }

    /// Inserts a row; fails with 23505 if its primary key exists, 23514 if a CHECK constraint
    /// refuses it, 23503 if a parent row it references is missing (whose row lock it then
    /// holds until the transaction ends). Returns the row's key. A failure writes nothing.
    pub fn insert_in(&mut self, t: &Arc<Table>, row: Row) -> Result<Key> {
        let def = t.def();
        if def.checks.is_empty() && def.foreign_keys.is_empty() {
            return self.insert_with(t, &def, row);
        }
        self.check_active()?;
        let row = def.check_row(row)?;
        self.check_constraints(&def, &row)?;
        if def.foreign_keys.is_empty() {
            return self.insert_with(t, &def, row);
        }
        // One write: if it fails, what it and its actions wrote is undone (`nested`).
        self.nested(|tx| {
            let key = tx.insert_with(t, &def, row.clone())?;
            let stop = tx.stop.clone();
            fk::check_parents(&*tx, &def, &row, None, &stop)?;
            Ok(key)
        })
    }

    /// Inserts a row without CHECK or FOREIGN KEY constraints (the SQL layer's statement
    /// primitive: the statement runs them).
    pub(crate) fn insert_row(&mut self, t: &Arc<Table>, row: Row) -> Result<Key> {
        let def = t.def();
        self.insert_with(t, &def, row)
    }

    /// [`Transaction::insert_row`] with the table's definition at hand.
    fn insert_with(&mut self, t: &Arc<Table>, def: &TableDef, row: Row) -> Result<Key> {
        self.check_active()?;
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
            Some(Pending::Put(_)) => return Err(Self::duplicate_key(t, &row)),
            Some(Pending::Delete) => {}
            None if def.has_primary_key() => {
                // Unique checks are not snapshot-bound: a row another transaction committed
                // after this snapshot is a duplicate (23505), as in PostgreSQL.
                self.acquire(t, &key, &self.stop)?;
                if self.committed_live(t, &key) {
                    return Err(Self::duplicate_key(t, &row));
                }
            }
            None => {} // a fresh hidden row identity
        }
        self.put_pending(t, key.clone(), Pending::Put(Arc::new(row)));
        Ok(key)
    }

    /// Inserts or replaces the row with the same primary key, with the constraints of
    /// [`Transaction::insert`] and [`Transaction::update`]. Returns the key.
    pub fn upsert(&mut self, table: &str, row: Row) -> Result<Key> {
        let t = self.db.table(table)?;
        self.check_active()?;
        let def = t.def();
        if !def.has_primary_key() {
            return self.insert(table, row);
        }
        let row = def.check_row(row)?;
        self.check_constraints(&def, &row)?;
        if def.foreign_keys.is_empty() && !self.referenced(&t) {
            return self.upsert_row(&t, row);
        }
        // One write: if it fails, what it and its actions wrote is undone (`nested`).
        self.nested(|tx| {
            let old = tx.get_in(&t, &def.key_of(&row)?)?;
            let key = tx.upsert_row(&t, row.clone())?;
            let stop = tx.stop.clone();
            fk::check_parents(&*tx, &def, &row, old.as_deref().map(|r| r.as_slice()), &stop)?;
            if let Some(old) = old {
                tx.parent_changed(&t, &[(old, Some(row))])?;
            }
            Ok(key)
        })
    }

    /// Puts `row` (fitted to the columns already) at its primary key, whatever is there.
    fn upsert_row(&mut self, t: &Arc<Table>, row: Row) -> Result<Key> {
        let def = t.def();
        let key = def.key_of(&row)?;
        self.check_unique(t, &key, &row)?;
        self.lock_row(t, &key)?;
        self.put_pending(t, key.clone(), Pending::Put(Arc::new(row)));
        Ok(key)
    }

    /// Replaces the row with key `key` by `row` (whose key may differ: then it moves, with a
    /// uniqueness check), without CHECK or FOREIGN KEY constraints (the SQL layer's statement
    /// primitive: the statement runs them). Returns false if no such row (or, under read
    /// committed, if a concurrent transaction deleted it).
    pub(crate) fn update_row(&mut self, t: &Arc<Table>, key: &Key, row: Row) -> Result<bool> {
        let def = t.def();
        self.update_with(t, &def, key, row)
    }

    /// [`Transaction::update_row`] with the table's definition at hand.
    fn update_with(&mut self, t: &Arc<Table>, def: &TableDef, key: &Key, row: Row) -> Result<bool> {
        self.check_active()?;
        if !self.exists_in(t, key)? {
            return Ok(false);
        }
        if let Locked::Changed(None) = self.lock_row(t, key)? {
            return Ok(false);
        }
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
                return Err(Self::duplicate_key(t, &row));
            }
            self.put_pending(t, key.clone(), Pending::Delete);
        }
        self.check_unique(t, &new_key, &row)?;
        self.put_pending(t, new_key, Pending::Put(Arc::new(row)));
        Ok(true)
    }

    /// Updates the row with key `key` of the table named `table`, as [`Transaction::update_in`].
    pub fn update(&mut self, table: &str, key: &Key, row: Row) -> Result<bool> {
        let t = self.db.table(table)?;
        self.update_in(&t, key, row)
    }

    /// Replaces the row with key `key` by `row` (whose key may differ: then it moves, with a
    /// uniqueness check, 23505), enforcing the table's CHECK constraints (23514), the parents
    /// of its foreign keys (23503) and the ON UPDATE actions of the foreign keys that
    /// reference its old values. Returns false if no such row (or, under read committed, if a
    /// concurrent transaction deleted it). A failure writes nothing. A missing key returns
    /// false before the new row is looked at, as an UPDATE whose WHERE matches no row fails no
    /// constraint.
    pub fn update_in(&mut self, t: &Arc<Table>, key: &Key, row: Row) -> Result<bool> {
        let def = t.def();
        let fks = !def.foreign_keys.is_empty() || self.referenced(t);
        if def.checks.is_empty() && !fks {
            return self.update_with(t, &def, key, row);
        }
        self.check_active()?;
        if !self.exists_in(t, key)? {
            return Ok(false);
        }
        let row = def.check_row(row)?;
        self.check_constraints(&def, &row)?;
        if !fks {
            return self.update_with(t, &def, key, row);
        }
        // One write: if it fails, what it and its actions wrote is undone (`nested`).
        self.nested(|tx| {
            let Some(old) = tx.get_in(t, key)? else {
                return Ok(false);
            };
            if !tx.update_with(t, &def, key, row.clone())? {
                return Ok(false);
            }
            let stop = tx.stop.clone();
            fk::check_parents(&*tx, &def, &row, Some(old.as_slice()), &stop)?;
            tx.parent_changed(t, &[(old, Some(row))])?;
            Ok(true)
        })
    }

    /// Deletes the row with key `key` without applying the foreign keys that reference the
    /// table (the SQL layer's statement primitive: the statement applies them); returns false
    /// if there was none.
    pub(crate) fn delete_row(&mut self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        self.check_active()?;
        if !self.exists_in(t, key)? {
            return Ok(false);
        }
        if let Locked::Changed(None) = self.lock_row(t, key)? {
            return Ok(false);
        }
        self.put_pending(t, key.clone(), Pending::Delete);
        Ok(true)
    }

    /// Deletes the row with key `key` of the table named `table`, as [`Transaction::delete_in`].
    pub fn delete(&mut self, table: &str, key: &Key) -> Result<bool> {
        let t = self.db.table(table)?;
        self.delete_in(&t, key)
    }

    /// Deletes the row with key `key`; returns false if there was none. Each foreign key that
    /// references the row applies its ON DELETE action to the rows referencing it: NO ACTION
    /// and RESTRICT fail (23503), CASCADE deletes them, SET NULL and SET DEFAULT change their
    /// columns. A failure writes nothing.
    pub fn delete_in(&mut self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        if !self.referenced(t) {
            return self.delete_row(t, key);
        }
        // One write: if it fails, what it and its actions wrote is undone (`nested`).
        self.nested(|tx| {
            let Some(old) = tx.get_in(t, key)? else {
                return Ok(false);
            };
            if !tx.delete_row(t, key)? {
                return Ok(false);
            }
            tx.parent_changed(t, &[(old, None)])?;
            Ok(true)
        })
    }

    /// Takes the lock of `key` and tells whether its newest version (whatever this
    /// transaction's snapshot; see [`Transaction::scan_latest_in`]) is a live row. Under
    /// snapshot isolation a version newer than the snapshot fails with 40001, as any write.
    fn lock_latest(&self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        Ok(match self.lock_row(t, key)? {
            Locked::Changed(r) => r.is_some(),
            Locked::Unchanged => self.exists_in(t, key)?,
        })
    }

    /// Deletes the newest version of `key` (a referential action: `ON DELETE CASCADE` deletes
    /// the rows [`Transaction::scan_latest_in`] found). Returns false if there is none.
    pub(crate) fn delete_latest(&mut self, t: &Arc<Table>, key: &Key) -> Result<bool> {
        self.check_active()?;
        self.check_table(t)?;
        if !self.lock_latest(t, key)? {
            return Ok(false);
        }
        self.put_pending(t, key.clone(), Pending::Delete);
        Ok(true)
    }

    /// Replaces the newest version of `key` by `row` (a referential action: `SET NULL`, `SET
    /// DEFAULT`, `ON UPDATE CASCADE`). The row's key may differ when the action changed
    /// primary-key columns: it then moves, and 23505 if its new key is taken. Returns false if
    /// there is no such row.
    pub(crate) fn update_latest(&mut self, t: &Arc<Table>, key: &Key, row: Row) -> Result<bool> {
        self.check_active()?;
        self.check_table(t)?;
        if !self.lock_latest(t, key)? {
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
            if self.lock_latest(t, &new_key)? {
                return Err(Self::duplicate_key(t, &row));
            }
            self.put_pending(t, key.clone(), Pending::Delete);
        }
        self.check_unique(t, &new_key, &row)?;
        self.put_pending(t, new_key, Pending::Put(Arc::new(row)));
        Ok(true)
    }
}
