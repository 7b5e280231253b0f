//! DDL inside a transaction block, so that the block's ROLLBACK leaves the catalog as it was.
//! What the block creates (tables, indexes, sequences, views) exists at once and is dropped
//! again if the block rolls back; what it drops that it did not create is checked at once and
//! dropped when the block commits; TRUNCATE deletes the rows through the block's transaction;
//! ALTER TABLE of a table the block did not create (or created before a savepoint still open)
//! runs under an undo log of old definitions (`block_alter.rs`); CREATE OR REPLACE of a view
//! the block did not create is refused with 25001 before anything changes. ROLLBACK TO
//! SAVEPOINT drops what the block created after the savepoint and puts back the definitions
//! altered after it, but cannot restore a dropped object, so DROP and CREATE OR REPLACE VIEW
//! of an object the block created before a savepoint still open are refused with 0A000.

use sqlparser::ast as A;

use super::block_alter::Altered;
use super::Session;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::object_name;
use crate::sql::lexer::lex;
use crate::sql::parse::parse_tokens;
use crate::sql::result::StatementResult;

/// An object a transaction block created (in the order undoing drops them last to first:
/// a table's sequences before it, its indexes after it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Created {
    Sequence(String),
    Table(String),
    Index(String),
    View(String),
}

impl Created {
    fn name(&self) -> &str {
        match self {
            Created::Sequence(n) | Created::Table(n) | Created::Index(n) | Created::View(n) => n,
        }
    }
}

/// The schema changes of the open transaction block.
#[derive(Default)]
pub(super) struct BlockDdl {
    /// What the block created, oldest first.
    created: Vec<Created>,
    /// DROP statements of objects the block did not create, to run once it commits, with the
    /// names each drops.
    drops: Vec<(A::Statement, Vec<String>)>,
    /// The undo log of ALTER TABLE statements run under it (`block_alter.rs`), oldest first.
    pub(super) altered: Vec<Altered>,
}

/// Where a block's schema changes stand: lengths of its created, drops and altered lists.
pub(super) type Mark = (usize, usize, usize);

/// The mark of a block that has changed nothing.
pub(super) const START: Mark = (0, 0, 0);

impl BlockDdl {
    /// Where the block's schema changes stand (what a savepoint rolls back to).
    pub(super) fn mark(&self) -> Mark {
        (self.created.len(), self.drops.len(), self.altered.len())
    }

    /// The names of what the block created, as they are now (an undo of a rename puts them
    /// back: [`Session::restore_altered`]).
    pub(super) fn created_list(&self) -> Vec<Created> {
        self.created.clone()
    }

    /// Puts back the names of the objects the block created, from `list` (an earlier
    /// [`BlockDdl::created_list`]), for those still recorded.
    pub(super) fn rename_created(&mut self, list: Vec<Created>) {
        for (c, was) in self.created.iter_mut().zip(list) {
            *c = was;
        }
    }

    /// Where `c` stands among what the block created (None: the block did not create it).
    pub(super) fn position(&self, c: &Created) -> Option<usize> {
        self.created.iter().position(|x| x == c)
    }

    fn created(&self, name: &str) -> bool {
        self.created.iter().any(|c| c.name() == name)
    }

    fn dropping(&self, name: &str) -> bool {
        self.drops.iter().any(|(_, n)| n.iter().any(|x| x == name))
    }
}

fn refused(what: &str) -> Error {
    Error::new(
        SqlState::ACTIVE_SQL_TRANSACTION,
        format!(
            "{what} cannot run inside a transaction block in Augur unless the block created the object (a ROLLBACK could not undo it); run it outside a transaction block"
        ),
    )
}

/// The 0A000 of `what` (a DROP or CREATE OR REPLACE) of `name`, an object the block
/// created before a savepoint that is still open: ROLLBACK TO that savepoint would not undo it.
fn behind_savepoint(what: &str, name: &str) -> Error {
    Error::unsupported(format!(
        "{what} of \"{name}\", created in this transaction block before an open savepoint, is not supported in Augur (ROLLBACK TO SAVEPOINT could not undo it); run it before the SAVEPOINT or after RELEASE"
    ))
}

fn command(tag: &str) -> Result<StatementResult> {
    Ok(StatementResult::Command { tag: tag.into() })
}

impl Session {
    /// Runs `st` if it is DDL and a transaction block is open; None otherwise (the statement
    /// runs as it would outside a block).
    pub(super) fn ddl_in_block(&mut self, st: &A::Statement) -> Option<Result<StatementResult>> {
        self.tx.as_ref()?;
        Some(match st {
            A::Statement::CreateTable(ct) => match object_name(&ct.name) {
                Ok(t) => self.recording(&t, |s| s.create_table(ct)),
                Err(e) => Err(e),
            },
            A::Statement::CreateIndex(ci) => match object_name(&ci.table_name) {
                Ok(t) => self.recording(&t, |s| s.create_index(ci)),
                Err(e) => Err(e),
            },
            A::Statement::CreateSequence { name, .. } => self.create_sequence_in_block(st, name),
            A::Statement::CreateView(cv) => self.create_view_in_block(cv),
            A::Statement::AlterTable(at) => self.alter_in_block(at),
            A::Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => self.drop_in_block(st, *object_type, *if_exists, names, *cascade),
            A::Statement::Truncate(t) => self.truncate_in_block(t),
            _ => return None,
        })
    }

    /// Whether the block created `c` before a savepoint that is still open: ROLLBACK TO that
    /// savepoint drops only what was created after it, so it could not undo a change or a
    /// drop of `c`.
    pub(super) fn created_before_savepoint(&self, c: &Created) -> bool {
        let Some(i) = self.block.position(c) else {
            return false;
        };
        self.savepoints.iter().any(|(_, _, mark)| mark.0 > i)
    }

    /// A table, its indexes and the sequences it owns (serial and identity columns).
    fn objects_of(&self, table: &str) -> Result<Vec<Created>> {
        let Ok(t) = self.db.table(table) else {
            return Ok(Vec::new());
        };
        let mut v: Vec<Created> = self
            .db
            .sequences()?
            .into_iter()
            .filter(|s| s.owned_by.as_ref().is_some_and(|(o, _)| o == table))
            .map(|s| Created::Sequence(s.name))
            .collect();
        v.push(Created::Table(table.to_string()));
        v.extend(t.def().indexes.iter().map(|i| Created::Index(i.name.clone())));
        Ok(v)
    }

    /// Runs a statement that creates `table` or objects of it, and records each object that
    /// is new afterwards, also when the statement fails part way (so that the block's rollback
    /// removes what it left behind).
    fn recording(
        &mut self,
        table: &str,
        f: impl FnOnce(&mut Session) -> Result<StatementResult>,
    ) -> Result<StatementResult> {
        let before = self.objects_of(table)?;
        let r = f(self);
        let mut new: Vec<Created> = self
            .objects_of(table)?
            .into_iter()
            .filter(|c| !before.contains(c))
            .collect();
        new.sort();
        self.block.created.extend(new);
        r
    }

    fn create_sequence_in_block(
        &mut self,
        st: &A::Statement,
        name: &A::ObjectName,
    ) -> Result<StatementResult> {
        let n = object_name(name)?;
        let existed = self.db.has_sequence(&n)?;
        let r = self.run_ddl(st);
        if !existed && self.db.has_sequence(&n)? {
            self.block.created.push(Created::Sequence(n));
        }
        r
    }

    fn create_view_in_block(&mut self, cv: &A::CreateView) -> Result<StatementResult> {
        let n = object_name(&cv.name)?;
        let existed = self.db.view(&n)?.is_some();
        if existed && cv.or_replace && !self.block.created(&n) {
            return Err(refused("CREATE OR REPLACE VIEW of an existing view"));
        }
        if existed && cv.or_replace && self.created_before_savepoint(&Created::View(n.clone())) {
            return Err(behind_savepoint("CREATE OR REPLACE VIEW", &n));
        }
        let r = self.create_view(cv);
        if !existed && self.db.view(&n)?.is_some() {
            self.block.created.push(Created::View(n));
        }
        r
    }

    /// ALTER TABLE inside a block. Of a table the block created after every open savepoint,
    /// it applies (the block's rollback drops the table, whatever was altered; a rename moves
    /// the record to the new name). Of a table the block did not create, or created before a
    /// savepoint still open, it runs under the undo log (`block_alter.rs`), where the
    /// operations that rewrite the rows keep the table's old incarnation for the rollback.
    fn alter_in_block(&mut self, at: &A::AlterTable) -> Result<StatementResult> {
        let name = object_name(&at.name)?;
        if !self.block.created.contains(&Created::Table(name.clone())) {
            if self.db.table(&name).is_ok() {
                return self.alter_logged(at, &name);
            }
            // No such table: the statement's own error (or nothing, with IF EXISTS).
            return self.alter_table(at);
        }
        if self.created_before_savepoint(&Created::Table(name.clone())) {
            return self.alter_logged(at, &name);
        }
        self.alter_recording(at, &name)
    }

    /// Runs ALTER TABLE `at` of `name` and records the objects it made (the indexes of
    /// UNIQUE constraints) as created by the block; a rename moves the table's record.
    pub(super) fn alter_recording(&mut self, at: &A::AlterTable, name: &str) -> Result<StatementResult> {
        let name = name.to_string();
        let before = self.objects_of(&name)?;
        let r = self.alter_table(at);
        let now = if self.db.table(&name).is_ok() {
            name.clone()
        } else {
            at.operations
                .iter()
                .find_map(|op| match op {
                    A::AlterTableOperation::RenameTable {
                        table_name: A::RenameTableNameKind::To(n) | A::RenameTableNameKind::As(n),
                    } => object_name(n).ok(),
                    _ => None,
                })
                .unwrap_or_else(|| name.clone())
        };
        if now != name {
            for c in &mut self.block.created {
                if *c == Created::Table(name.clone()) {
                    *c = Created::Table(now.clone());
                }
            }
        }
        let mut new: Vec<Created> = self
            .objects_of(&now)?
            .into_iter()
            .filter(|c| !before.contains(c) && *c != Created::Table(now.clone()))
            .collect();
        new.sort();
        self.block.created.extend(new);
        r
    }

    /// Whether object `name` of kind `ty` exists, counting the block's pending drops as done.
    fn exists_for_drop(&self, ty: A::ObjectType, name: &str) -> Result<bool> {
        if self.block.dropping(name) {
            return Ok(false);
        }
        Ok(match ty {
            A::ObjectType::Table => self.db.table(name).is_ok(),
            A::ObjectType::View => self.db.view(name)?.is_some(),
            A::ObjectType::Sequence => self.db.has_sequence(name)?,
            _ => self
                .db
                .tables()
                .iter()
                .any(|t| t.def().indexes.iter().any(|i| i.name == name)),
        })
    }

    /// DROP inside a block: of objects the block created, at once; otherwise checked now and
    /// run when the block commits.
    fn drop_in_block(
        &mut self,
        st: &A::Statement,
        ty: A::ObjectType,
        if_exists: bool,
        names: &[A::ObjectName],
        cascade: bool,
    ) -> Result<StatementResult> {
        let tag = match ty {
            A::ObjectType::Table => "DROP TABLE",
            A::ObjectType::View => "DROP VIEW",
            A::ObjectType::Sequence => "DROP SEQUENCE",
            A::ObjectType::Index => "DROP INDEX",
            _ => return self.run_ddl(st),
        };
        let names: Vec<String> = names.iter().map(object_name).collect::<Result<_>>()?;
        if names.iter().all(|n| self.block.created(n)) {
            // ROLLBACK TO a savepoint opened after an object was created could not bring it
            // back (nor what goes with it, all recorded after it).
            if let Some(n) = names.iter().find(|n| {
                self.block
                    .created
                    .iter()
                    .any(|c| c.name() == n.as_str() && self.created_before_savepoint(c))
            }) {
                return Err(behind_savepoint(tag, n));
            }
            let r = self.run_ddl(st);
            // Forget what is gone (a table's indexes and sequences go with it).
            let mut gone = Vec::new();
            for c in &self.block.created {
                let exists = match c {
                    Created::Table(n) => self.db.table(n).is_ok(),
                    Created::View(n) => self.db.view(n)?.is_some(),
                    Created::Sequence(n) => self.db.has_sequence(n)?,
                    Created::Index(n) => self
                        .db
                        .tables()
                        .iter()
                        .any(|t| t.def().indexes.iter().any(|i| &i.name == n)),
                };
                if !exists {
                    gone.push(c.clone());
                }
            }
            self.block.created.retain(|c| !gone.contains(c));
            return r;
        }
        for n in &names {
            if self.exists_for_drop(ty, n)? {
                continue;
            }
            if ty == A::ObjectType::Table && self.db.view(n)?.is_some() {
                return Err(Error::new(
                    SqlState("42809"),
                    format!("\"{n}\" is not a table (use DROP VIEW to remove a view)"),
                ));
            }
            if !if_exists {
                return Err(match ty {
                    A::ObjectType::Index => Error::new(
                        SqlState::UNDEFINED_OBJECT,
                        format!("index \"{n}\" does not exist"),
                    ),
                    A::ObjectType::View => {
                        Error::new(SqlState::UNDEFINED_TABLE, format!("view \"{n}\" does not exist"))
                    }
                    _ => Error::undefined_table(n),
                });
            }
        }
        if ty == A::ObjectType::Table && !cascade {
            // What depends on the tables must be gone too (dropped by this statement or
            // earlier in the block), as the DROP itself will check.
            let gone = |x: &str| names.iter().any(|n| n == x) || self.block.dropping(x);
            for t in self.db.tables() {
                let d = t.def();
                if gone(&d.name) {
                    continue;
                }
                if let Some(f) = d.foreign_keys.iter().find(|f| names.contains(&f.parent)) {
                    return Err(Error::new(
                        SqlState("2BP01"),
                        format!(
                            "cannot drop table {} because other objects depend on it (constraint {} on table {} depends on table {}); use DROP ... CASCADE to drop the dependent objects too",
                            f.parent, f.name, d.name, f.parent
                        ),
                    ));
                }
            }
        }
        self.block.drops.push((st.clone(), names));
        command(tag)
    }

    /// TRUNCATE inside a block: the rows are deleted through the block's transaction, so that
    /// a rollback brings them back.
    fn truncate_in_block(&mut self, t: &A::Truncate) -> Result<StatementResult> {
        let mut rest = self.truncate_targets(t)?;
        // Referencing tables first, so that no delete meets a foreign key to rows still there.
        let mut names = Vec::with_capacity(rest.len());
        while !rest.is_empty() {
            let referenced = |n: &String| {
                rest.iter().any(|o| {
                    o != n
                        && self
                            .db
                            .table(o)
                            .is_ok_and(|t| t.def().foreign_keys.iter().any(|f| &f.parent == n))
                })
            };
            let i = rest.iter().position(|n| !referenced(n)).unwrap_or(0);
            names.push(rest.remove(i));
        }
        for n in &names {
            let sql = format!("DELETE FROM \"{}\"", n.replace('"', "\"\""));
            let stmt = parse_tokens(lex(&sql)?.tokens)?
                .pop()
                .ok_or_else(|| Error::internal("DELETE did not parse"))?;
            self.run_in_tx(&stmt, &[], None)?;
        }
        command("TRUNCATE TABLE")
    }

    /// Undoes the block's schema changes back to `mark` ([`BlockDdl::mark`]): drops what it
    /// created since, newest first, and forgets the drops it asked for since. Every object is
    /// tried; the first error is returned.
    pub(super) fn undo_block_ddl(&mut self, mark: Mark) -> Result<()> {
        self.block.drops.truncate(mark.1);
        if self.block.created.len() <= mark.0 && self.block.altered.len() <= mark.2 {
            return Ok(());
        }
        let mut first = Ok(());
        while self.block.created.len() > mark.0 {
            let c = self.block.created.pop().expect("longer than the mark");
            if let Err(e) = self.drop_created(&c) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        // Then the definitions the block's ALTERs changed since, newest first (what they
        // made is dropped above; what the block created after them no longer stands on them).
        let undone = self.block.altered.len() > mark.2;
        while self.block.altered.len() > mark.2 {
            let a = self.block.altered.pop().expect("longer than the mark");
            if let Err(e) = self.restore_altered(a) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        // The crash-time undo records of what was just put back (kept if that failed).
        if undone && first.is_ok() {
            first = self.db.forget_undo(self.owner, mark.2 as u64);
        }
        self.clear_plan_cache();
        first
    }

    fn drop_created(&mut self, c: &Created) -> Result<()> {
        match c {
            Created::Table(n) => {
                if self.db.table(n).is_ok() {
                    self.drop_dependent_views("table", n, true)?;
                    self.drop_referencing_fks(n, std::slice::from_ref(n))?;
                    if self.db.drop_table(n, true)? {
                        self.db.drop_owned_sequences(n)?;
                    }
                }
            }
            Created::Index(n) => {
                self.db.drop_index(n)?;
            }
            Created::Sequence(n) => {
                self.db.drop_sequence(n, true)?;
            }
            Created::View(n) => {
                if self.db.view(n)?.is_some() {
                    self.drop_dependent_views("view", n, true)?;
                    self.db.drop_view(n)?;
                }
            }
        }
        Ok(())
    }

    /// Drops sequence `name` when the block commits (DROP COLUMN of the serial column that owns
    /// it, under the undo log: the block's rollback brings the column back).
    pub(super) fn drop_sequence_at_commit(&mut self, name: &str) -> Result<()> {
        let sql = format!("DROP SEQUENCE IF EXISTS \"{}\"", name.replace('"', "\"\""));
        let st = parse_tokens(lex(&sql)?.tokens)?
            .pop()
            .ok_or_else(|| Error::internal("a DROP SEQUENCE did not parse"))?;
        self.block.drops.push((st, vec![name.to_string()]));
        Ok(())
    }

    /// After the block committed: forgets what it created and runs the drops it asked for.
    pub(super) fn finish_block_ddl(&mut self) -> Result<()> {
        if crate::failpoint::hit("block-ddl-finish") {
            return Err(Error::internal("fail point block-ddl-finish"));
        }
        self.block.created.clear();
        if !self.block.altered.is_empty() {
            self.drop_block_retired()?;
            self.block.altered.clear();
            self.db.forget_undo(self.owner, 0)?;
        }
        for (st, _) in std::mem::take(&mut self.block.drops) {
            self.run_ddl(&st)?;
        }
        Ok(())
    }
}
