//! ALTER TABLE: ADD / DROP / RENAME COLUMN, RENAME TO, ALTER COLUMN SET / DROP DEFAULT and
//! SET / DROP NOT NULL, ADD / DROP CONSTRAINT (PRIMARY KEY, UNIQUE, CHECK). Each operation
//! applies at once, durably; inside a transaction block block_ddl.rs and block_alter.rs make
//! the block's rollback undo it. ADD PRIMARY KEY, DROP COLUMN,
//! and ADD COLUMN with a volatile DEFAULT or of a serial type rewrite the rows; any other ADD
//! COLUMN records the value the rows already stored read for the new column instead
//! (`ColumnDef::missing`).

use sqlparser::ast as A;
use sqlparser::tokenizer::Token;

use super::Session;
use crate::engine::catalog::{CheckDef, ForeignKeyDef, RowCheck};
use crate::engine::fk;
use crate::engine::{ColumnDef, IndexDef, TableDef};
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::{check_name, ident, object_name, parse_type, Binder};
use crate::sql::dml::{bind_check, bind_default};
use crate::sql::exec::Exec;
use crate::sql::expr::{assign, has_subquery, Expr, Func};
use crate::sql::result::StatementResult;
use crate::types::{Row, Value};

fn no_column(col: &str, table: &str) -> Error {
    Error::new(
        SqlState::UNDEFINED_COLUMN,
        format!("column \"{col}\" of relation \"{table}\" does not exist"),
    )
}

/// Whether an expression gives a new value at each evaluation (PostgreSQL's volatile
/// functions among Augur's), so that it cannot stand for every stored row at once.
fn is_volatile(e: &Expr) -> bool {
    let mut v = has_subquery(e);
    e.walk(&mut |x| {
        if let Expr::Func(
            Func::Random
            | Func::GenRandomUuid
            | Func::NextVal
            | Func::CurrVal
            | Func::SetVal
            | Func::ClockTimestamp,
            _,
            _,
        ) = x
        {
            v = true;
        }
    });
    v
}

/// `text` (a CHECK condition) with the identifier `from` renamed to `to`: the tokens that name
/// it are replaced, the rest of the text is kept byte for byte.
fn rename_in_text(text: &str, from: &str, to: &str) -> Result<String> {
    let l = crate::sql::lexer::lex(text)?;
    let mut out = String::with_capacity(text.len() + to.len());
    for (t, r) in l.tokens.iter().zip(&l.ranges) {
        match &t.token {
            Token::Word(w)
                if (w.quote_style.is_none() && w.value.to_lowercase() == from)
                    || (w.quote_style == Some('"') && w.value == from) =>
            {
                out.push('"');
                out.push_str(&to.replace('"', "\"\""));
                out.push('"');
            }
            _ => out.push_str(&text[r.clone()]),
        }
    }
    Ok(out)
}

impl Session {
    pub(super) fn alter_table(&mut self, at: &A::AlterTable) -> Result<StatementResult> {
        let table = object_name(&at.name)?;
        if self.db.table(&table).is_err() {
            if self.db.view(&table)?.is_some() {
                return Err(Error::new(
                    SqlState("42809"),
                    format!("\"{table}\" is not a table"),
                ));
            }
            if at.if_exists {
                return Ok(StatementResult::Command {
                    tag: "ALTER TABLE".into(),
                });
            }
            return Err(Error::undefined_table(&table));
        }
        // Several operations apply one after another (PostgreSQL applies them as one).
        let r = at.operations.iter().try_for_each(|op| self.alter_op(&table, op));
        self.clear_plan_cache();
        r?;
        Ok(StatementResult::Command {
            tag: "ALTER TABLE".into(),
        })
    }

    fn alter_op(&mut self, table: &str, op: &A::AlterTableOperation) -> Result<()> {
        match op {
            A::AlterTableOperation::AddConstraint { constraint, .. } => {
                self.add_constraint(table, constraint)
            }
            A::AlterTableOperation::AddColumn {
                if_not_exists,
                column_def,
                column_position: None,
                ..
            } => self.add_column(table, column_def, *if_not_exists),
            A::AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                ..
            } => column_names
                .iter()
                .try_for_each(|c| self.drop_column(table, &ident(c), *if_exists)),
            A::AlterTableOperation::RenameColumn {
                old_column_name,
                new_column_name,
            } => self.rename_column(table, &ident(old_column_name), &check_name(new_column_name)?),
            A::AlterTableOperation::RenameTable {
                table_name: A::RenameTableNameKind::To(n) | A::RenameTableNameKind::As(n),
            } => self.rename_table(table, &object_name(n)?),
            A::AlterTableOperation::AlterColumn { column_name, op } => {
                self.alter_column(table, &ident(column_name), op)
            }
            A::AlterTableOperation::DropConstraint { if_exists, name, .. } => {
                self.drop_constraint(table, &ident(name), *if_exists)
            }
            // Every table is logged (crash-safe): SET LOGGED has nothing to do, as in
            // PostgreSQL for a logged table, and an unlogged table is kept as a logged one.
            A::AlterTableOperation::SetLogged | A::AlterTableOperation::SetUnlogged => Ok(()),
            other => Err(Error::unsupported(format!(
                "ALTER TABLE {other} is not supported"
            ))),
        }
    }

    /// Refuses `what`, which rewrites a table's rows, inside a transaction block that has
    /// written rows: the engine's rewrite (`Database::rebuild_table_with`) reads committed rows
    /// only, so the block's own rows would be left out of the new table (PostgreSQL rewrites
    /// them too). Under the block's undo log (`block_alter.rs`: a table the block did not
    /// create, or created before an open savepoint) the rewrite keeps the old incarnation for
    /// the rollback ([`Session::rewrite`]).
    fn check_rewrite(&self, what: &str) -> Result<()> {
        if self.tx.as_ref().is_some_and(|t| t.has_writes()) {
            return Err(Error::unsupported(format!(
                "{what} is not supported in a transaction block that has written rows"
            )));
        }
        Ok(())
    }

    /// Rebuilds `table` under definition `f(current)` with each live row passed through `map`
    /// (`Database::rebuild_table_with`). Under the block's undo log the old incarnation is
    /// kept, retired, for the block's rollback to put back (`Database::rebuild_table_keeping`;
    /// the commit drops it: [`Session::drop_block_retired`]), and the new one is locked as the
    /// old one was.
    fn rewrite(
        &self,
        table: &str,
        f: impl FnOnce(&TableDef) -> Result<TableDef>,
        map: &dyn Fn(Row) -> Result<Row>,
    ) -> Result<()> {
        if !self.alter_undo {
            return self.db.rebuild_table_with(table, f, map);
        }
        self.db.rebuild_table_keeping(table, f, map)?;
        let id = self.db.table(table)?.def().id;
        self.db.lock_table(id, self.owner, None, &self.interrupt())
    }

    /// Refuses `what`, which builds a unique index, under the block's undo log once the block
    /// has written rows: the index is built from the committed rows, so the block's own would
    /// escape its uniqueness check.
    fn check_unique_in_block(&self, what: &str) -> Result<()> {
        if self.alter_undo && self.tx.as_ref().is_some_and(|t| t.has_writes()) {
            return Err(Error::unsupported(format!(
                "{what} of a table the transaction block did not create is not supported in Augur once the block has written rows; run it first in the block"
            )));
        }
        Ok(())
    }

    /// Replaces the definition `old` of `table` with `new` (rows not rewritten), after checking
    /// every live row against the CHECK constraints `checks` (23514), the NOT NULL of the
    /// columns `not_null` (23502) and the FOREIGN KEYs `fks` (23503). Fails with 40001 if
    /// another session changed the table meanwhile.
    pub(super) fn apply_def(
        &mut self,
        table: &str,
        old: &TableDef,
        new: TableDef,
        checks: &[CheckDef],
        not_null: &[usize],
        fks: &[ForeignKeyDef],
    ) -> Result<()> {
        self.apply_def_filling(table, old, new, checks, not_null, fks, None)
    }

    /// [`Session::apply_def`], and when `fill` is given (the volatile DEFAULT of a column added
    /// last), the rows rewritten with `fill` evaluated for each of them, as PostgreSQL rewrites
    /// the table for such a default (`Database::rebuild_table_with`), each then checked.
    #[allow(clippy::too_many_arguments)]
    fn apply_def_filling(
        &mut self,
        table: &str,
        old: &TableDef,
        new: TableDef,
        checks: &[CheckDef],
        not_null: &[usize],
        fks: &[ForeignKeyDef],
        fill: Option<&Expr>,
    ) -> Result<()> {
        let scan = !checks.is_empty() || !not_null.is_empty() || !fks.is_empty();
        if fill.is_none() && scan && self.alter_undo && self.tx.as_ref().is_some_and(|t| t.has_writes()) {
            // The block has written rows: the committed ones are not what it sees (its
            // updates may have fixed them, its inserts are not among them), so its own view
            // is checked, under the new definition (undone by the caller on an error).
            let def = new.clone();
            self.db.alter_table_def(
                table,
                |cur| {
                    if cur != old {
                        return Err(Error::serialization());
                    }
                    Ok(new)
                },
                None,
            )?;
            return self.check_block_rows(table, &def, checks, not_null, fks);
        }
        let parents: Vec<(AnyTable, &ForeignKeyDef)> = fks
            .iter()
            .map(|f| Ok((self.db.table(&f.parent)?, f)))
            .collect::<Result<_>>()?;
        let mut b = Binder::new(&self.db, None);
        let bound: Vec<(String, Expr)> = checks
            .iter()
            .map(|c| Ok((c.name.clone(), bind_check(&mut b, &new, &c.expr)?)))
            .collect::<Result<_>>()?;
        let stop = self.interrupt();
        let tx = self.db.begin();
        let ex = Exec::new(&tx, &[], &[], self.clock(), &stop);
        let cx = ex.ctx();
        let names: Vec<String> = new.columns.iter().map(|c| c.name.clone()).collect();
        let check = |row: &[Value]| -> Result<()> {
            cx.check()?;
            for &i in not_null {
                if row[i].is_null() {
                    return Err(Error::new(
                        SqlState::NOT_NULL_VIOLATION,
                        format!(
                            "column \"{}\" of relation \"{table}\" contains null values",
                            names[i]
                        ),
                    ));
                }
            }
            for (n, e) in &bound {
                if let Value::Bool(false) = e.eval(row, &cx)? {
                    return Err(Error::new(
                        SqlState("23514"),
                        format!("check constraint \"{n}\" of relation \"{table}\" is violated by some row"),
                    ));
                }
            }
            for (parent, f) in &parents {
                let Some(vals) = fk::tuple(row, &f.columns) else {
                    continue;
                };
                // No row lock here: this runs under the engine's commit lock.
                if !fk::parent_exists(&tx, parent, f, vals, None)? {
                    return Err(fk::child_violation(table, &f.name));
                }
            }
            Ok(())
        };
        let last = new.columns.last().map(|c| (c.ty, c.name.clone()));
        let same = |cur: &TableDef| {
            if cur != old {
                return Err(Error::serialization());
            }
            Ok(new)
        };
        if let Some(fill) = fill {
            let (ty, name) = last.ok_or_else(|| Error::internal("a filled column"))?;
            return self.rewrite(table, same, &|mut r: Row| -> Result<Row> {
                cx.check()?;
                let v = fill.eval(&[], &cx)?;
                r.push(assign(v, ty, &name)?);
                check(&r)?;
                Ok(r)
            });
        }
        let scan = !bound.is_empty() || !not_null.is_empty() || !parents.is_empty();
        let check: Option<RowCheck<'_>> = if scan { Some(&check) } else { None };
        self.db.alter_table_def(table, same, check)
    }

    fn add_constraint(&mut self, table: &str, c: &A::TableConstraint) -> Result<()> {
        match c {
            A::TableConstraint::PrimaryKey(p) => {
                let cols: Vec<String> = p
                    .columns
                    .iter()
                    .map(|c| match &c.column.expr {
                        A::Expr::Identifier(i) => Ok(ident(i)),
                        e => Err(Error::unsupported(format!("key expression {e}"))),
                    })
                    .collect::<Result<_>>()?;
                let pname = p.name.as_ref().map(ident);
                self.check_rewrite("ALTER TABLE ADD PRIMARY KEY")?;
                self.rewrite(
                    table,
                    |d| {
                        if d.has_primary_key() {
                            return Err(Error::new(
                                SqlState::INVALID_PRIMARY_KEY,
                                format!("multiple primary keys for table \"{}\" are not allowed", d.name),
                            ));
                        }
                        let mut nd = d.clone();
                        nd.primary_key = cols.iter().map(|c| d.column_index(c)).collect::<Result<_>>()?;
                        nd.pkey_name = pname.clone();
                        Ok(nd)
                    },
                    &Ok,
                )
            }
            A::TableConstraint::Unique(u) => {
                let d = self.db.table(table)?.def();
                let mut columns = Vec::new();
                let mut names = Vec::new();
                for c in &u.columns {
                    let A::Expr::Identifier(i) = &c.column.expr else {
                        return Err(Error::unsupported("unique constraint on an expression"));
                    };
                    names.push(ident(i));
                    columns.push(d.column_index(&ident(i))?);
                }
                let name = u
                    .name
                    .as_ref()
                    .map(ident)
                    .unwrap_or_else(|| format!("{table}_{}_key", names.join("_")));
                self.check_unique_in_block("ALTER TABLE ADD UNIQUE")?;
                self.db.create_index(
                    table,
                    IndexDef {
                        name,
                        columns,
                        unique: true,
                    },
                    false,
                )
            }
            A::TableConstraint::Check(ck) => {
                let old = self.db.table(table)?.def();
                let check = self.new_check(&old, ck.name.as_ref().map(ident), &ck.expr)?;
                let mut new = (*old).clone();
                new.checks.push(check.clone());
                self.apply_def(table, &old, new, &[check], &[], &[])
            }
            A::TableConstraint::ForeignKey(f) => {
                let old = self.db.table(table)?.def();
                let fk = self.new_foreign_key(&old, None, f, None)?;
                let mut new = (*old).clone();
                new.foreign_keys.push(fk.clone());
                self.apply_def(table, &old, new, &[], &[], std::slice::from_ref(&fk))?;
                self.touch_parent(table, &fk.parent)
            }
            other => Err(Error::unsupported(format!(
                "ALTER TABLE ADD {other} is not supported"
            ))),
        }
    }

    fn add_column(&mut self, table: &str, cd: &A::ColumnDef, if_not_exists: bool) -> Result<()> {
        let old = self.db.table(table)?.def();
        let cname = check_name(&cd.name)?;
        if old.column_index(&cname).is_ok() {
            if if_not_exists {
                return Ok(());
            }
            return Err(Error::new(
                SqlState::DUPLICATE_COLUMN,
                format!("column \"{cname}\" of relation \"{table}\" already exists"),
            ));
        }
        let type_name = cd.data_type.to_string().to_lowercase();
        let serial = matches!(
            type_name.as_str(),
            "serial" | "serial4" | "bigserial" | "serial8" | "smallserial" | "serial2"
        );
        let (ty, _) = parse_type(&cd.data_type)?;
        let mut col = ColumnDef::new(cname.clone(), ty);
        // A serial column: a sequence owned by the column, its NOT NULL default (each stored
        // row then takes its own value as the table is rewritten), as in CREATE TABLE.
        let seq = if serial {
            if cd
                .options
                .iter()
                .any(|o| matches!(o.option, A::ColumnOption::Default(_)))
            {
                return Err(Error::syntax(format!(
                    "multiple default values specified for column \"{cname}\" of table \"{table}\""
                )));
            }
            let sd = self.column_sequence(table, &cname, ty)?;
            col.default = Some(super::ddl::nextval_default(&sd));
            col.nullable = false;
            Some(sd)
        } else {
            None
        };
        let mut checks: Vec<(Option<String>, A::Expr)> = Vec::new();
        let mut unique: Option<Option<String>> = None;
        let mut references: Vec<(Option<String>, &A::ForeignKeyConstraint)> = Vec::new();
        for o in &cd.options {
            match &o.option {
                A::ColumnOption::Null if seq.is_some() => {
                    return Err(Error::syntax(format!(
                        "conflicting NULL/NOT NULL declarations for column \"{cname}\" of table \"{table}\""
                    )))
                }
                A::ColumnOption::Null => col.nullable = true,
                A::ColumnOption::NotNull => col.nullable = false,
                A::ColumnOption::Default(e) => col.default = Some(e.to_string()),
                A::ColumnOption::Check(ck) => checks.push((
                    o.name.as_ref().or(ck.name.as_ref()).map(ident),
                    (*ck.expr).clone(),
                )),
                A::ColumnOption::Unique(u) => unique = Some(o.name.as_ref().or(u.name.as_ref()).map(ident)),
                A::ColumnOption::ForeignKey(f) => references.push((o.name.as_ref().map(ident), f)),
                other => {
                    return Err(Error::unsupported(format!(
                        "ALTER TABLE ADD COLUMN with {other} is not supported"
                    )))
                }
            }
        }
        if let Some(sd) = &seq {
            self.check_rewrite("ALTER TABLE ADD COLUMN of a serial column")?;
            self.db.create_sequence(sd.clone(), false)?;
        }
        let r = self.add_column_def(table, &old, col, checks, unique, references);
        if let (Err(_), Some(sd)) = (&r, &seq) {
            self.db.drop_sequence(&sd.name, true)?;
        }
        r
    }

    /// The rest of [`Session::add_column`]: `col` (its options read) added to `old`, its
    /// default filled in, its constraints checked against the stored rows.
    fn add_column_def(
        &mut self,
        table: &str,
        old: &TableDef,
        mut col: ColumnDef,
        checks: Vec<(Option<String>, A::Expr)>,
        unique: Option<Option<String>>,
        references: Vec<(Option<String>, &A::ForeignKeyConstraint)>,
    ) -> Result<()> {
        let (cname, ty) = (col.name.clone(), col.ty);
        let mut fill = None;
        if let Some(text) = &col.default {
            // The rows already stored read the default evaluated once, now (PostgreSQL does the
            // same for a non-volatile default; a volatile one makes it rewrite the table).
            let mut b = Binder::new(&self.db, None);
            let e = bind_default(&mut b, text, ty, &cname)?;
            if is_volatile(&e) {
                // Each stored row gets its own evaluation: the table is rewritten below.
                self.check_rewrite("ALTER TABLE ADD COLUMN with a volatile DEFAULT")?;
                fill = Some(e);
            } else {
                let stop = self.interrupt();
                let tx = self.db.begin();
                let ex = Exec::new(&tx, &[], &[], self.clock(), &stop);
                let v = assign(e.eval(&[], &ex.ctx())?, ty, &cname)?;
                col.missing = Some(v).filter(|v| !v.is_null());
            }
        }
        let not_null = if col.nullable {
            vec![]
        } else {
            vec![old.columns.len()]
        };
        let mut new = old.clone();
        new.columns.push(col);
        let mut added = Vec::new();
        for (n, e) in checks {
            let c = self.new_check(&new, n, &e)?;
            new.checks.push(c.clone());
            added.push(c);
        }
        let mut fks = Vec::new();
        for (n, f) in references {
            let fk = self.new_foreign_key(&new, n, f, Some(&cname))?;
            new.foreign_keys.push(fk.clone());
            fks.push(fk);
        }
        self.apply_def_filling(table, old, new, &added, &not_null, &fks, fill.as_ref())?;
        for f in &fks {
            self.touch_parent(table, &f.parent)?;
        }
        if let Some(n) = unique {
            self.check_unique_in_block("ALTER TABLE ADD COLUMN ... UNIQUE")?;
            let columns = vec![old.columns.len()];
            let name = n.unwrap_or_else(|| format!("{table}_{cname}_key"));
            self.db.create_index(
                table,
                IndexDef {
                    name,
                    columns,
                    unique: true,
                },
                false,
            )?;
        }
        Ok(())
    }

    fn drop_column(&mut self, table: &str, cname: &str, if_exists: bool) -> Result<()> {
        let old = self.db.table(table)?.def();
        let Ok(i) = old.column_index(cname) else {
            if if_exists {
                return Ok(());
            }
            return Err(no_column(cname, table));
        };
        self.check_no_dependent_views(table, "drop a column of")?;
        self.check_rewrite("ALTER TABLE DROP COLUMN")?;
        if old.primary_key.contains(&i) {
            return Err(Error::unsupported(
                "dropping a primary key column is not supported",
            ));
        }
        if old.columns.len() == 1 {
            return Err(Error::unsupported(
                "dropping the last column of a table is not supported",
            ));
        }
        for t in self.db.tables() {
            let d = t.def();
            if let Some(f) = d
                .foreign_keys
                .iter()
                .find(|f| f.parent == table && f.parent_columns.iter().any(|c| c == cname))
            {
                return Err(Error::new(
                    SqlState("2BP01"),
                    format!(
                        "cannot drop column {cname} of table {table} because other objects depend on it (constraint {} on table {} depends on it)",
                        f.name, d.name
                    ),
                ));
            }
        }
        // Indexes and CHECK constraints that use the column go with it, as in PostgreSQL.
        let mut b = Binder::new(&self.db, None);
        let mut checks = Vec::new();
        for c in &old.checks {
            if !bind_check(&mut b, &old, &c.expr)?.columns().contains(&i) {
                checks.push(c.clone());
            }
        }
        let shift = |p: usize| if p > i { p - 1 } else { p };
        let indexes: Vec<IndexDef> = old
            .indexes
            .iter()
            .filter(|x| !x.columns.contains(&i))
            .map(|x| IndexDef {
                columns: x.columns.iter().map(|&p| shift(p)).collect(),
                ..x.clone()
            })
            .collect();
        let primary_key: Vec<usize> = old.primary_key.iter().map(|&p| shift(p)).collect();
        // The table's own foreign keys over the column go with it too.
        let foreign_keys: Vec<ForeignKeyDef> = old
            .foreign_keys
            .iter()
            .filter(|f| !f.columns.contains(&i))
            .map(|f| ForeignKeyDef {
                columns: f.columns.iter().map(|&p| shift(p)).collect(),
                on_delete_set: f
                    .on_delete_set
                    .as_ref()
                    .map(|set| set.iter().map(|&p| shift(p)).collect()),
                ..f.clone()
            })
            .collect();
        self.rewrite(
            table,
            |cur| {
                if *cur != *old {
                    return Err(Error::serialization());
                }
                let mut d = cur.clone();
                d.columns.remove(i);
                d.primary_key = primary_key;
                d.indexes = indexes;
                d.checks = checks;
                d.foreign_keys = foreign_keys;
                Ok(d)
            },
            &|mut r: Row| -> Result<Row> {
                if i < r.len() {
                    r.remove(i);
                }
                Ok(r)
            },
        )?;
        // The sequence of a serial or identity column goes with it, as in PostgreSQL (in a
        // block's undo log, when the block commits: its rollback brings the column back).
        for s in self.db.sequences()? {
            if s.owned_by.as_ref().is_some_and(|(t, c)| t == table && c == cname) {
                if self.alter_undo {
                    self.drop_sequence_at_commit(&s.name)?;
                } else {
                    self.db.drop_sequence(&s.name, true)?;
                }
            }
        }
        Ok(())
    }

    fn rename_column(&mut self, table: &str, from: &str, to: &str) -> Result<()> {
        let old = self.db.table(table)?.def();
        let i = old.column_index(from).map_err(|_| no_column(from, table))?;
        if old.column_index(to).is_ok() {
            return Err(Error::new(
                SqlState::DUPLICATE_COLUMN,
                format!("column \"{to}\" of relation \"{table}\" already exists"),
            ));
        }
        self.check_no_dependent_views(table, "rename a column of")?;
        let mut new = (*old).clone();
        new.columns[i].name = to.to_string();
        for c in &mut new.checks {
            c.expr = rename_in_text(&c.expr, from, to)?;
        }
        let rename = |d: &mut TableDef| {
            for f in &mut d.foreign_keys {
                if f.parent == table {
                    for c in &mut f.parent_columns {
                        if c == from {
                            *c = to.to_string();
                        }
                    }
                }
            }
        };
        rename(&mut new);
        self.apply_def(table, &old, new, &[], &[], &[])?;
        // Foreign keys of other tables name the referenced columns.
        for t in self.db.tables() {
            let d = t.def();
            if d.name != table
                && d.foreign_keys
                    .iter()
                    .any(|f| f.parent == table && f.parent_columns.iter().any(|c| c == from))
            {
                let mut nd = (*d).clone();
                rename(&mut nd);
                self.apply_def(&d.name, &d, nd, &[], &[], &[])?;
            }
        }
        for s in self.db.sequences()? {
            if s.owned_by.as_ref().is_some_and(|(t, c)| t == table && c == from) {
                self.db
                    .set_sequence_owner(&s.name, Some((table.to_string(), to.to_string())))?;
            }
        }
        Ok(())
    }

    fn rename_table(&mut self, table: &str, to: &str) -> Result<()> {
        if self.relation_exists(to) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{to}\" already exists"),
            ));
        }
        self.check_no_dependent_views(table, "rename")?;
        self.db.rename_table(table, to)?;
        // Foreign keys name the table they reference (its own, if it references itself).
        for t in self.db.tables() {
            let d = t.def();
            if d.foreign_keys.iter().any(|f| f.parent == table) {
                let mut nd = (*d).clone();
                for f in &mut nd.foreign_keys {
                    if f.parent == table {
                        f.parent = to.to_string();
                    }
                }
                self.apply_def(&d.name, &d, nd, &[], &[], &[])?;
            }
        }
        for s in self.db.sequences()? {
            if let Some((t, c)) = &s.owned_by {
                if t == table {
                    self.db
                        .set_sequence_owner(&s.name, Some((to.to_string(), c.clone())))?;
                }
            }
        }
        Ok(())
    }

    fn alter_column(&mut self, table: &str, cname: &str, op: &A::AlterColumnOperation) -> Result<()> {
        let old = self.db.table(table)?.def();
        let i = old.column_index(cname).map_err(|_| no_column(cname, table))?;
        let col = &old.columns[i];
        let identity = || {
            Error::syntax(format!(
                "column \"{cname}\" of relation \"{table}\" is an identity column"
            ))
        };
        let mut new = (*old).clone();
        match op {
            A::AlterColumnOperation::SetNotNull | A::AlterColumnOperation::DropNotNull => {
                let nullable = matches!(op, A::AlterColumnOperation::DropNotNull);
                if nullable {
                    if old.primary_key.contains(&i) {
                        return Err(Error::new(
                            SqlState::INVALID_PRIMARY_KEY,
                            format!("column \"{cname}\" is in a primary key"),
                        ));
                    }
                    if col.identity.is_some() {
                        return Err(identity());
                    }
                } else if !col.nullable {
                    return Ok(());
                }
                new.columns[i].nullable = nullable;
                // The stored rows are checked only when the column becomes NOT NULL.
                let check: &[usize] = if nullable { &[] } else { &[i] };
                self.apply_def(table, &old, new, &[], check, &[])
            }
            A::AlterColumnOperation::SetDefault { .. } | A::AlterColumnOperation::DropDefault => {
                if col.identity.is_some() {
                    return Err(identity());
                }
                let default = match op {
                    A::AlterColumnOperation::SetDefault { value } => {
                        let text = value.to_string();
                        let mut b = Binder::new(&self.db, None);
                        bind_default(&mut b, &text, col.ty, cname)?;
                        Some(text)
                    }
                    _ => None,
                };
                new.columns[i].default = default;
                self.apply_def(table, &old, new, &[], &[], &[])
            }
            other => Err(Error::unsupported(format!(
                "ALTER TABLE ALTER COLUMN {other} is not supported"
            ))),
        }
    }

    /// Removes the foreign keys that reference `parent` from the tables not in `except` (DROP
    /// TABLE ... CASCADE of the parent, as PostgreSQL drops the constraints, not the tables).
    pub(super) fn drop_referencing_fks(&mut self, parent: &str, except: &[String]) -> Result<()> {
        for t in self.db.tables() {
            let d = t.def();
            if !except.contains(&d.name) && d.foreign_keys.iter().any(|f| f.parent == parent) {
                let mut nd = (*d).clone();
                nd.foreign_keys.retain(|f| f.parent != parent);
                self.apply_def(&d.name, &d, nd, &[], &[], &[])?;
            }
        }
        Ok(())
    }

    /// Gives the parent of a new foreign key a new definition (the same), so that plans made
    /// for writes to it before the key existed are made again, now with the key's checks.
    pub(super) fn touch_parent(&mut self, table: &str, parent: &str) -> Result<()> {
        if parent != table {
            self.db.alter_table_def(parent, |d| Ok(d.clone()), None)?;
        }
        Ok(())
    }

    fn drop_constraint(&mut self, table: &str, name: &str, if_exists: bool) -> Result<()> {
        let old = self.db.table(table)?.def();
        if let Some(pos) = old.checks.iter().position(|c| c.name == name) {
            let mut new = (*old).clone();
            new.checks.remove(pos);
            return self.apply_def(table, &old, new, &[], &[], &[]);
        }
        if let Some(pos) = old.foreign_keys.iter().position(|c| c.name == name) {
            let mut new = (*old).clone();
            new.foreign_keys.remove(pos);
            return self.apply_def(table, &old, new, &[], &[], &[]);
        }
        if old.indexes.iter().any(|x| x.name == name && x.unique) {
            if self.alter_undo {
                // Under the block's undo log the table is rewritten without the index and the
                // old incarnation, index and all, kept for the rollback to put back.
                self.check_rewrite("ALTER TABLE DROP CONSTRAINT of a UNIQUE constraint")?;
                return self.rewrite(
                    table,
                    |d| {
                        let mut nd = d.clone();
                        nd.indexes.retain(|x| x.name != name);
                        Ok(nd)
                    },
                    &Ok,
                );
            }
            self.db.drop_index(name)?;
            return Ok(());
        }
        if old.pkey_name.as_deref() == Some(name) {
            return Err(Error::unsupported(
                "ALTER TABLE DROP CONSTRAINT of a primary key is not supported",
            ));
        }
        if if_exists {
            return Ok(());
        }
        Err(Error::new(
            SqlState::UNDEFINED_OBJECT,
            format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
        ))
    }
}
