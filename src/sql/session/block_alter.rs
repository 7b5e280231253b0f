//! ALTER TABLE inside a transaction block of a table the block did not create (or created
//! before a savepoint still open), for the operations that leave the rows where they are: the
//! block sees the change at once, and its rollback (or ROLLBACK TO a savepoint opened before
//! it) puts the old definitions back from an undo log ([`Altered`], one entry per statement).
//! The ALTER first takes the table's lock (`Engine::lock_table`, PostgreSQL's ACCESS
//! EXCLUSIVE), held until the block ends: other sessions' statements on the table wait for it
//! (55P03 at their `lock_timeout`, 57014 at `statement_timeout` or a cancel, 40P01 when the
//! holder waits for one of their block's rows: `LockTable::join`), so none reads or
//! writes the table under a definition that may still be rolled back. Operations that rewrite
//! the rows (DROP COLUMN, ADD PRIMARY KEY, ADD COLUMN with a volatile default or of a serial
//! type) make a new incarnation of the table and keep the old one, retired, for the rollback
//! to put back (`Database::rebuild_table_keeping`). Each statement also leaves an undo record in the engine (`Engine::record_undo`:
//! first the altered table's definition, then those of every table the statement changed),
//! deleted when the block ends, so that a crash inside the block rolls the ALTERs back at
//! the next open.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use sqlparser::ast as A;

use super::block_ddl::Created;
use super::Session;
use crate::engine::catalog::{CheckDef, ForeignKeyDef};
use crate::engine::fk;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::seam::{SequenceDef, TableDef};
use crate::sql::bind::object_name;
use crate::sql::lexer::lex;
use crate::sql::parse::parse_tokens;
use crate::sql::result::StatementResult;

/// The lock owner of the next session (table locks are held by sessions).
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// A new session's table-lock owner id, unique in the process.
pub(super) fn new_owner() -> u64 {
    NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
}

/// What one ALTER TABLE statement of a block may change, as it was before: every table's
/// definition (the statement changes the altered table's, and a rename those of the tables
/// whose foreign keys name it) and every sequence's owner (renames move them).
pub(super) struct Altered {
    tables: Vec<Arc<TableDef>>,
    owners: Vec<(String, Option<(String, String)>)>,
    /// What the block had created, under the names it had.
    created: Vec<Created>,
    /// The definition of the sequence an ALTER SEQUENCE changed, as it was before
    /// ([`Session::altered_sequence`]).
    sequence: Option<SequenceDef>,
}

fn quote(n: &str) -> String {
    format!("\"{}\"", n.replace('"', "\"\""))
}

impl Session {
    fn lock_deadline(&self) -> Option<Instant> {
        self.lock_timeout.map(|d| Instant::now() + d)
    }

    /// Waits while other sessions hold the table lock of a table in `deps` (an ALTER in their
    /// open block). Returns whether it waited. While no table lock is held (the usual case)
    /// this is one atomic load.
    pub(super) fn wait_for_tables(&self, deps: &[(AnyTable, Arc<TableDef>)]) -> Result<bool> {
        let locked = self.db.tables_locked_by_others(self.owner);
        if locked.is_empty() {
            return Ok(false);
        }
        let mut waited = false;
        for (_, d) in deps.iter().filter(|(_, d)| locked.contains(&d.id)) {
            waited |= self
                .db
                .wait_table(d.id, self.owner, self.lock_deadline(), &self.interrupt())?;
        }
        Ok(waited)
    }

    /// Whether another session holds the table lock of a table in `deps` (a statement on
    /// them then takes the path that waits): each table's lock owner, no mutex.
    pub(super) fn tables_locked(&self, deps: &[(AnyTable, Arc<TableDef>)]) -> bool {
        deps.iter().any(|(t, _)| {
            let o = t.lock_owner();
            o != 0 && o != self.owner
        })
    }

    /// Plans `st` as [`Session::plan`] does; if that fails while another session's block holds
    /// the lock of a table `st` names (by its current name), waits for it and plans again:
    /// the error may come from the definition that block may still roll back.
    pub(super) fn plan_waiting(&self, st: &A::Statement) -> Result<Option<super::prepared::PlannedStmt>> {
        let r = self.plan(st, &[]);
        if r.is_ok() {
            return r;
        }
        let locked = self.db.tables_locked_by_others(self.owner);
        if locked.is_empty() {
            return r;
        }
        let text = st.to_string().to_lowercase();
        let mut waited = false;
        for t in self.db.tables() {
            let d = t.def();
            if locked.contains(&d.id) && text.contains(&d.name.to_lowercase()) {
                waited |= self
                    .db
                    .wait_table(d.id, self.owner, self.lock_deadline(), &self.interrupt())?;
            }
        }
        if waited {
            return self.plan(st, &[]);
        }
        r
    }

    /// Waits while another session holds the table lock of the table named `name`, if any.
    pub(super) fn wait_for_table(&self, name: &str) -> Result<()> {
        if self.db.tables_locked_by_others(self.owner).is_empty() {
            return Ok(());
        }
        if let Ok(t) = self.db.table(name) {
            self.db
                .wait_table(t.def().id, self.owner, self.lock_deadline(), &self.interrupt())?;
        }
        Ok(())
    }

    /// Waits for the table locks of the tables DDL statement `st` changes or drops.
    pub(super) fn wait_for_ddl_tables(&self, st: &A::Statement) -> Result<()> {
        let names: Vec<&A::ObjectName> = match st {
            A::Statement::AlterTable(at) => vec![&at.name],
            A::Statement::CreateIndex(ci) => vec![&ci.table_name],
            A::Statement::Drop {
                object_type: A::ObjectType::Table,
                names,
                ..
            } => names.iter().collect(),
            A::Statement::Truncate(t) => t.table_names.iter().map(|t| &t.name).collect(),
            _ => return Ok(()),
        };
        for n in names {
            if let Ok(n) = object_name(n) {
                self.wait_for_table(&n)?;
            }
        }
        Ok(())
    }

    /// Releases the table locks of the block that ended.
    pub(super) fn unlock_block_tables(&self) {
        self.db.unlock_tables(self.owner);
    }

    fn snapshot(&self) -> Result<Altered> {
        Ok(Altered {
            tables: self.db.tables().iter().map(|t| t.def()).collect(),
            owners: self
                .db
                .sequences()?
                .into_iter()
                .map(|s| (s.name, s.owned_by))
                .collect(),
            created: self.block.created_list(),
            sequence: None,
        })
    }

    /// Records `old`, the definition of a sequence before an ALTER SEQUENCE of the block
    /// changed it, for the block's rollback (and ROLLBACK TO a savepoint opened before it) to
    /// put back: its parameters and owner, not its position (`Database::restore_sequence`).
    /// Not undone by a crash inside the block (the undo records hold table definitions).
    pub(super) fn altered_sequence(&mut self, old: SequenceDef) {
        let created = self.block.created_list();
        self.block.altered.push(Altered {
            tables: Vec::new(),
            owners: Vec::new(),
            created,
            sequence: Some(old),
        });
    }

    /// Runs ALTER TABLE `at` of `table` under the undo log: takes the table's lock, records
    /// the definitions as they are, and runs the statement with [`Session::alter_undo`] set
    /// (rewrites keep the old incarnation). A statement that fails is undone at once (it is
    /// all or nothing, as in PostgreSQL).
    pub(super) fn alter_logged(&mut self, at: &A::AlterTable, table: &str) -> Result<StatementResult> {
        let id = self.db.table(table)?.def().id;
        self.db
            .lock_table(id, self.owner, self.lock_deadline(), &self.interrupt())?;
        // As it is now that the lock is held (another block may have changed it meanwhile).
        let def = self.db.table(table)?.def();
        let mark = self.block.mark();
        let snap = self.snapshot()?;
        // A crash from here on puts the table back at open (the record is completed with the
        // other tables the statement changed once it has run).
        let seq = mark.2 as u64;
        self.db.record_undo(self.owner, seq, &[(*def).clone()])?;
        self.block.altered.push(snap);
        self.alter_undo = true;
        let r = self.alter_recording(at, table);
        self.alter_undo = false;
        let r = r.and_then(|ok| {
            // Only what the statement changed is kept (and put back): a table another
            // session alters later must not be put back by this block's rollback.
            let now = self.snapshot()?;
            let a = self.block.altered.last_mut().expect("pushed above");
            // (A table no longer listed was rewritten: its old incarnation is retired.)
            a.tables.retain(|old| {
                now.tables
                    .iter()
                    .find(|t| t.id == old.id)
                    .is_none_or(|t| **t != **old)
            });
            a.owners.retain(|o| !now.owners.contains(o));
            let defs: Vec<TableDef> = a.tables.iter().map(|d| (**d).clone()).collect();
            // The other tables it changed (foreign keys naming a renamed table or column)
            // are locked too, so that no other session changes them before the block ends.
            for d in defs.iter().filter(|d| d.id != def.id) {
                self.db
                    .lock_table(d.id, self.owner, self.lock_deadline(), &self.interrupt())?;
            }
            self.db.record_undo(self.owner, seq, &defs)?;
            Ok(ok)
        });
        if r.is_err() {
            let _ = self.undo_block_ddl(mark);
        }
        r
    }

    /// Drops the old incarnations the block's rewrites kept (`Session::rewrite`), once it has
    /// committed: of each table its undo log recorded, the retired one, if there is one.
    pub(super) fn drop_block_retired(&self) -> Result<()> {
        for d in self.block.altered.iter().flat_map(|a| &a.tables) {
            self.db.drop_retired(d.id)?;
        }
        Ok(())
    }

    /// Puts back the definitions `a` recorded (newest entry first is the caller's order).
    pub(super) fn restore_altered(&mut self, a: Altered) -> Result<()> {
        let now = self.db.tables();
        for old in a.tables {
            let Some(cur) = now.iter().find(|t| t.def().id == old.id) else {
                // Rewritten by the ALTER: its old incarnation comes back and the new one goes.
                // Else dropped since: a table the block created (its undo dropped it).
                self.db.restore_retired((*old).clone())?;
                continue;
            };
            let cur = cur.def();
            if *cur == *old {
                continue;
            }
            // Indexes the ALTER made were recorded as created and are dropped before this;
            // one left over (a failed statement) goes here.
            for ix in &cur.indexes {
                if !old.indexes.iter().any(|o| o.name == ix.name) {
                    self.db.drop_index(&ix.name)?;
                }
            }
            self.db.restore_table_def((*old).clone())?;
        }
        if let Some(old) = &a.sequence {
            self.db.restore_sequence(old)?;
        }
        let seqs = self.db.sequences()?;
        for (name, owner) in a.owners {
            if seqs.iter().any(|s| s.name == name && s.owned_by != owner) {
                self.db.set_sequence_owner(&name, owner)?;
            }
        }
        self.block.rename_created(a.created);
        Ok(())
    }

    /// Checks the rows the block's transaction sees in `table` (its own writes included)
    /// against the constraints an ALTER adds, where the engine's check of the committed rows
    /// would miss or misjudge them: CHECKs `checks` (23514), NOT NULL of columns `not_null`
    /// (23502) and FOREIGN KEYs `fks` (23503). `def` is the table's new definition.
    pub(super) fn check_block_rows(
        &mut self,
        table: &str,
        def: &TableDef,
        checks: &[CheckDef],
        not_null: &[usize],
        fks: &[ForeignKeyDef],
    ) -> Result<()> {
        let t = quote(table);
        for &i in not_null {
            let c = &def.columns[i].name;
            if self.any_row(&format!("SELECT 1 FROM {t} WHERE {} IS NULL LIMIT 1", quote(c)))? {
                return Err(Error::new(
                    SqlState::NOT_NULL_VIOLATION,
                    format!("column \"{c}\" of relation \"{table}\" contains null values"),
                ));
            }
        }
        for c in checks {
            if self.any_row(&format!("SELECT 1 FROM {t} WHERE NOT ({}) LIMIT 1", c.expr))? {
                return Err(Error::new(
                    SqlState("23514"),
                    format!(
                        "check constraint \"{}\" of relation \"{table}\" is violated by some row",
                        c.name
                    ),
                ));
            }
        }
        for f in fks {
            let cols: Vec<String> = f
                .columns
                .iter()
                .map(|&i| format!("c.{}", quote(&def.columns[i].name)))
                .collect();
            let present: Vec<String> = cols.iter().map(|c| format!("{c} IS NOT NULL")).collect();
            let matches: Vec<String> = cols
                .iter()
                .zip(&f.parent_columns)
                .map(|(c, p)| format!("p.{} = {c}", quote(p)))
                .collect();
            let sql = format!(
                "SELECT 1 FROM {t} AS c WHERE {} AND NOT EXISTS (SELECT 1 FROM {} AS p WHERE {}) LIMIT 1",
                present.join(" AND "),
                quote(&f.parent),
                matches.join(" AND ")
            );
            if self.any_row(&sql)? {
                return Err(fk::child_violation(table, &f.name));
            }
        }
        Ok(())
    }

    /// Whether query `sql`, run in the block's transaction, returns a row.
    fn any_row(&mut self, sql: &str) -> Result<bool> {
        let st = parse_tokens(lex(sql)?.tokens)?
            .pop()
            .ok_or_else(|| Error::internal("a check query did not parse"))?;
        Ok(!self.run_ddl(&st)?.rows().is_empty())
    }
}
