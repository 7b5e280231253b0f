//! Savepoints: marks in a transaction's undo log, rolled back to or released.

use super::*;

impl Transaction {
    /// Opens a savepoint (SQL `SAVEPOINT`): [`Transaction::rollback_to`] it undoes every
    /// write made after this call, [`Transaction::release`] keeps them. Savepoints nest.
    ///
    /// ```
    /// # use augur::{Database, Options, TableDef, ColumnDef, DataType, Value, Key};
    /// # let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path(), Options::default())?;
    /// db.create_table(TableDef::new("t", vec![ColumnDef::new("id", DataType::Int8)], &["id"])?)?;
    /// let mut tx = db.begin();
    /// tx.insert("t", vec![Value::Int(1)])?;
    /// let sp = tx.savepoint()?;
    /// tx.insert("t", vec![Value::Int(2)])?;
    /// tx.rollback_to(sp)?;                 // 2 is gone, 1 stays; sp stays open
    /// tx.insert("t", vec![Value::Int(3)])?;
    /// tx.release(sp)?;                     // 3 is kept
    /// tx.commit()?;
    /// assert!(db.get("t", &Key::Int(1))?.is_some());
    /// assert!(db.get("t", &Key::Int(2))?.is_none());
    /// assert!(db.get("t", &Key::Int(3))?.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn savepoint(&mut self) -> Result<Savepoint> {
        self.check_active()?;
        self.savepoints.push(SavepointMark {
            undo: self.undo.len(),
            locks: self.lock_log.borrow().len(),
        });
        Ok(Savepoint(self.savepoints.len() - 1))
    }

    /// The number of open savepoints.
    pub fn savepoint_depth(&self) -> usize {
        self.savepoints.len()
    }

    pub(super) fn mark(&self, sp: Savepoint) -> Result<SavepointMark> {
        self.savepoints.get(sp.0).copied().ok_or_else(|| {
            Error::new(
                SqlState("3B001"),
                "savepoint does not exist (released, or rolled back past)",
            )
        })
    }

    /// Undoes every write made after `sp` was opened and releases the row locks taken after
    /// it (as PostgreSQL does: a lock taken after a savepoint is released when the savepoint
    /// is rolled back to). Savepoints opened after `sp` are closed; `sp` stays open.
    pub fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        self.check_active()?;
        let m = self.mark(sp)?;
        self.savepoints.truncate(sp.0 + 1);
        while self.undo.len() > m.undo {
            let u = self.undo.pop().expect("longer than the mark");
            let Some(w) = self.writes.get_mut(&u.table.id) else {
                continue;
            };
            match u.before {
                Some(p) => {
                    w.set(u.key, p);
                }
                None => {
                    w.unset(&u.key);
                }
            }
        }
        let taken: Vec<(u32, Key)> = self.lock_log.borrow_mut().split_off(m.locks);
        if !taken.is_empty() {
            let mut locks = self.locks.borrow_mut();
            for (t, k) in &taken {
                if let Some(m) = locks.get_mut(t) {
                    m.remove(k);
                }
            }
            drop(locks);
            self.db.locks.release(self.id, taken.iter().map(|(t, k)| (*t, k)));
        }
        Ok(())
    }

    /// Closes `sp` and every savepoint opened after it, keeping their writes (SQL `RELEASE
    /// SAVEPOINT`): they now belong to the enclosing savepoint, or to the transaction.
    pub fn release(&mut self, sp: Savepoint) -> Result<()> {
        self.check_active()?;
        self.mark(sp)?;
        self.savepoints.truncate(sp.0);
        if self.savepoints.is_empty() {
            self.undo.clear();
            self.lock_log.borrow_mut().clear();
        }
        Ok(())
    }

    /// Runs `f` inside a savepoint: its writes are kept when it returns `Ok`, undone (and the
    /// transaction goes on) when it returns `Err`, like SQLAlchemy's `begin_nested` or
    /// Django's nested `atomic`.
    pub fn nested<T>(&mut self, f: impl FnOnce(&mut Transaction) -> Result<T>) -> Result<T> {
        let sp = self.savepoint()?;
        match f(self) {
            Ok(v) => {
                self.release(sp)?;
                Ok(v)
            }
            Err(e) => {
                if self.savepoints.len() > sp.0 {
                    self.rollback_to(sp)?;
                    self.release(sp)?;
                }
                Err(e)
            }
        }
    }
}
