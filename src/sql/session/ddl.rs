//! DDL: CREATE / DROP TABLE, CREATE / DROP INDEX, CREATE / DROP SEQUENCE (and the sequences of
//! serial and identity columns), TRUNCATE (ALTER TABLE: alter.rs; views: view.rs). Each applies
//! at once, durably, through the engine's catalog calls; inside a transaction block,
//! block_ddl.rs records it so that the block's rollback undoes it.

use sqlparser::ast as A;

use super::sequence_params::{init_params, integer_max, sequence_type};
use super::Session;
use crate::engine::catalog::Identity;
use crate::engine::{ColumnDef, IndexDef, SequenceDef, TableDef};
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::{check_name, ident, object_name, parse_type, Binder};
use crate::sql::dml::bind_default;
use crate::sql::result::StatementResult;
use crate::types::DataType;

impl Session {
    pub(super) fn relation_exists(&self, name: &str) -> bool {
        self.db.table(name).is_ok()
            || self.db.has_sequence(name).unwrap_or(false)
            || self.db.view(name).ok().flatten().is_some()
            || self
                .db
                .tables()
                .iter()
                .any(|t| t.def().indexes.iter().any(|i| i.name == name))
    }

    /// The name of the sequence of serial column `column` of `table`: `<table>_<column>_seq`,
    /// or, if a relation has that name, the first of `..._seq1`, `..._seq2`, ... that none
    /// has (PostgreSQL's ChooseRelationName).
    fn serial_sequence_name(&self, table: &str, column: &str) -> String {
        let base = format!("{table}_{column}_seq");
        let mut n = base.clone();
        let mut k = 0;
        while self.relation_exists(&n) {
            k += 1;
            n = format!("{base}{k}");
        }
        n
    }

    /// The sequence of serial or identity column `column` (of type `ty`) of `table`, owned by
    /// the column: named as [`Session::serial_sequence_name`] says, bounded by the column's
    /// type (22023 for a type that is not an integer).
    pub(super) fn column_sequence(&self, table: &str, column: &str, ty: DataType) -> Result<SequenceDef> {
        let mut sd = SequenceDef::new(self.serial_sequence_name(table, column));
        sd.max = integer_max(ty).ok_or_else(|| {
            Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("identity column type must be smallint, integer, or bigint, not {ty}"),
            )
        })?;
        sd.ty = Some(ty);
        sd.owned_by = Some((table.to_string(), column.to_string()));
        Ok(sd)
    }

    pub(super) fn create_table(&mut self, ct: &A::CreateTable) -> Result<StatementResult> {
        if ct.query.is_some() || ct.like.is_some() || ct.clone.is_some() || ct.partition_of.is_some() {
            return Err(Error::unsupported(
                "CREATE TABLE AS / LIKE / PARTITION OF is not supported",
            ));
        }
        let name = match ct.name.0.last() {
            Some(A::ObjectNamePart::Identifier(i)) => {
                object_name(&ct.name)?;
                check_name(i)?
            }
            _ => return Err(Error::syntax("invalid table name")),
        };
        if self.db.table(&name).is_ok() {
            if ct.if_not_exists {
                return Ok(StatementResult::Command {
                    tag: "CREATE TABLE".into(),
                });
            }
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        if self.relation_exists(&name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let mut cols = Vec::new();
        // Sequences to create for serial and identity columns: (column, sequence).
        let mut owned: Vec<SequenceDef> = Vec::new();
        let mut pk: Vec<String> = Vec::new();
        let mut pk_name = None;
        let mut uniques: Vec<(Option<String>, Vec<String>)> = Vec::new();
        // CHECK constraints (name if given, condition), column ones first as PostgreSQL orders them.
        let mut checks: Vec<(Option<String>, A::Expr)> = Vec::new();
        // FOREIGN KEYs (name if given, constraint, the column of a column-level REFERENCES).
        let mut fks: Vec<(Option<String>, A::ForeignKeyConstraint, Option<String>)> = Vec::new();
        let multiple_pk = || {
            Error::new(
                SqlState::INVALID_PRIMARY_KEY,
                format!("multiple primary keys for table \"{name}\" are not allowed"),
            )
        };
        for c in &ct.columns {
            let cname = check_name(&c.name)?;
            let (ty, _) = parse_type(&c.data_type)?;
            let mut cd = ColumnDef::new(cname.clone(), ty);
            let serial = matches!(
                c.data_type.to_string().to_lowercase().as_str(),
                "serial" | "serial4" | "bigserial" | "serial8" | "smallserial" | "serial2"
            );
            let mut identity: Option<&Option<Vec<A::SequenceOptions>>> = None;
            for o in &c.options {
                if let A::ColumnOption::Generated {
                    generated_as: g @ (A::GeneratedAs::Always | A::GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } = &o.option
                {
                    identity = Some(sequence_options);
                    cd.identity = Some(if matches!(g, A::GeneratedAs::Always) {
                        Identity::Always
                    } else {
                        Identity::ByDefault
                    });
                }
            }
            if serial || identity.is_some() {
                let mut sd = self.column_sequence(&name, &cname, ty)?;
                if let Some(Some(opts)) = identity {
                    init_params(&mut sd, None, opts, true)?;
                }
                cd.default = Some(nextval_default(&sd));
                cd.nullable = false;
                owned.push(sd);
            }
            for o in &c.options {
                match &o.option {
                    A::ColumnOption::Generated {
                        generation_expr: None,
                        ..
                    } if identity.is_some() => {}
                    A::ColumnOption::Default(_) if identity.is_some() || serial => {
                        return Err(Error::syntax(format!(
                            "multiple default values specified for column \"{cname}\" of table \"{name}\""
                        )))
                    }
                    A::ColumnOption::Null => cd.nullable = true,
                    A::ColumnOption::NotNull => cd.nullable = false,
                    A::ColumnOption::Default(e) => {
                        let text = e.to_string();
                        let mut b = Binder::new(&self.db, None);
                        bind_default(&mut b, &text, ty, &cname)?;
                        cd.default = Some(text);
                    }
                    A::ColumnOption::PrimaryKey(p) => {
                        if !pk.is_empty() {
                            return Err(multiple_pk());
                        }
                        pk.push(cname.clone());
                        pk_name = p.name.as_ref().map(ident);
                    }
                    A::ColumnOption::Unique(u) => {
                        uniques.push((u.name.as_ref().map(ident), vec![cname.clone()]))
                    }
                    A::ColumnOption::Check(ck) => checks.push((
                        o.name.as_ref().or(ck.name.as_ref()).map(ident),
                        (*ck.expr).clone(),
                    )),
                    A::ColumnOption::ForeignKey(f) => {
                        fks.push((o.name.as_ref().map(ident), f.clone(), Some(cname.clone())))
                    }
                    other => {
                        return Err(Error::unsupported(format!(
                            "column option {other} is not supported"
                        )))
                    }
                }
            }
            cols.push(cd);
        }
        let index_cols = |cols: &[A::IndexColumn]| -> Result<Vec<String>> {
            cols.iter()
                .map(|c| match &c.column.expr {
                    A::Expr::Identifier(i) => Ok(ident(i)),
                    e => Err(Error::unsupported(format!(
                        "index expression {e} is not supported"
                    ))),
                })
                .collect()
        };
        for c in &ct.constraints {
            match c {
                A::TableConstraint::PrimaryKey(p) => {
                    if !pk.is_empty() {
                        return Err(multiple_pk());
                    }
                    pk = index_cols(&p.columns)?;
                    pk_name = p.name.as_ref().map(ident);
                }
                A::TableConstraint::Unique(u) => {
                    uniques.push((u.name.as_ref().map(ident), index_cols(&u.columns)?))
                }
                A::TableConstraint::Check(ck) => {
                    checks.push((ck.name.as_ref().map(ident), (*ck.expr).clone()))
                }
                A::TableConstraint::ForeignKey(f) => fks.push((None, f.clone(), None)),
                other => {
                    return Err(Error::unsupported(format!(
                        "table constraint {other} is not supported"
                    )))
                }
            }
        }
        let pk_refs: Vec<&str> = pk.iter().map(String::as_str).collect();
        let mut def = TableDef::new(name.clone(), cols, &pk_refs).map_err(|e| match e {
            Error::Sql { state, message } if state == SqlState::UNDEFINED_COLUMN => Error::new(
                state,
                format!(
                    "{} in key",
                    message.replace(" does not exist", " named in key does not exist")
                ),
            ),
            e => e,
        })?;
        def.pkey_name = pk_name.or(def.pkey_name);
        for (n, e) in checks {
            let c = self.new_check(&def, n, &e)?;
            def.checks.push(c);
        }
        for (n, f, col) in &fks {
            let fk = self.new_foreign_key(&def, n.clone(), f, col.as_deref())?;
            def.foreign_keys.push(fk);
        }
        let parents: Vec<String> = def.foreign_keys.iter().map(|f| f.parent.clone()).collect();
        for sd in &owned {
            if self.relation_exists(&sd.name) {
                return Err(Error::new(
                    SqlState::DUPLICATE_TABLE,
                    format!("relation \"{}\" already exists", sd.name),
                ));
            }
        }
        for sd in &owned {
            self.db.create_sequence(sd.clone(), false)?;
        }
        let created = if ct.if_not_exists {
            self.db.create_table_if_not_exists(def)
        } else {
            self.db.create_table(def)
        };
        if let Err(e) = created {
            for sd in &owned {
                self.db.drop_sequence(&sd.name, true)?;
            }
            return Err(e);
        }
        for p in &parents {
            self.touch_parent(&name, p)?;
        }
        for (n, cols) in uniques {
            let iname = n.unwrap_or_else(|| format!("{name}_{}_key", cols.join("_")));
            let t = self.db.table(&name)?;
            let d = t.def();
            let columns = cols
                .iter()
                .map(|c| d.column_index(c))
                .collect::<Result<Vec<_>>>()?;
            self.db.create_index(
                &name,
                IndexDef {
                    name: iname,
                    columns,
                    unique: true,
                },
                false,
            )?;
        }
        Ok(StatementResult::Command {
            tag: "CREATE TABLE".into(),
        })
    }

    pub(super) fn create_sequence(
        &mut self,
        name: &A::ObjectName,
        if_not_exists: bool,
        data_type: Option<&A::DataType>,
        opts: &[A::SequenceOptions],
    ) -> Result<StatementResult> {
        let name = object_name(name)?;
        let tag = || {
            Ok(StatementResult::Command {
                tag: "CREATE SEQUENCE".into(),
            })
        };
        if self.db.has_sequence(&name)? && if_not_exists {
            return tag();
        }
        if self.relation_exists(&name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let mut sd = SequenceDef::new(name);
        let ty = data_type.map(sequence_type).transpose()?;
        init_params(&mut sd, ty, opts, true)?;
        self.db.create_sequence(sd, if_not_exists)?;
        tag()
    }

    pub(super) fn drop(
        &mut self,
        ty: A::ObjectType,
        if_exists: bool,
        names: &[A::ObjectName],
        cascade: bool,
    ) -> Result<StatementResult> {
        let names: Vec<String> = names.iter().map(object_name).collect::<Result<_>>()?;
        match ty {
            A::ObjectType::Table => {
                for n in &names {
                    if self.db.table(n).is_err() && self.db.view(n)?.is_some() {
                        return Err(Error::new(
                            SqlState("42809"),
                            format!("\"{n}\" is not a table (use DROP VIEW to remove a view)"),
                        ));
                    }
                    if !if_exists {
                        self.db.table(n)?;
                    }
                }
                for n in &names {
                    for t in self.db.tables() {
                        let d = t.def();
                        if names.contains(&d.name) || cascade {
                            continue;
                        }
                        if let Some(f) = d.foreign_keys.iter().find(|f| &f.parent == n) {
                            return Err(Error::new(
                                SqlState("2BP01"),
                                format!(
                                    "cannot drop table {n} because other objects depend on it (constraint {} on table {} depends on table {n}); use DROP ... CASCADE to drop the dependent objects too",
                                    f.name, d.name
                                ),
                            ));
                        }
                    }
                }
                if cascade {
                    for n in &names {
                        self.drop_referencing_fks(n, &names)?;
                    }
                }
                if !cascade {
                    for n in &names {
                        if let Some(v) = self
                            .db
                            .views_depending_on(n)?
                            .into_iter()
                            .find(|v| !names.contains(&v.name))
                        {
                            return Err(Error::new(
                                SqlState("2BP01"),
                                format!(
                                    "cannot drop table {n} because other objects depend on it (view {} depends on table {n}); use DROP ... CASCADE to drop the dependent objects too",
                                    v.name
                                ),
                            ));
                        }
                    }
                }
                for n in &names {
                    self.drop_dependent_views("table", n, true)?;
                    if self.db.drop_table(n, if_exists)? {
                        self.db.drop_owned_sequences(n)?;
                    }
                }
                Ok(StatementResult::Command {
                    tag: "DROP TABLE".into(),
                })
            }
            A::ObjectType::Sequence => {
                if !if_exists {
                    for n in &names {
                        if !self.db.has_sequence(n)? {
                            return Err(Error::undefined_table(n));
                        }
                    }
                }
                for n in &names {
                    self.db.drop_sequence(n, if_exists)?;
                }
                Ok(StatementResult::Command {
                    tag: "DROP SEQUENCE".into(),
                })
            }
            A::ObjectType::View => self.drop_views(if_exists, &names, cascade),
            A::ObjectType::Index => {
                for n in &names {
                    if !self.db.drop_index(n)? && !if_exists {
                        return Err(Error::new(
                            SqlState::UNDEFINED_OBJECT,
                            format!("index \"{n}\" does not exist"),
                        ));
                    }
                }
                Ok(StatementResult::Command {
                    tag: "DROP INDEX".into(),
                })
            }
            other => Err(Error::unsupported(format!("DROP {other} is not supported"))),
        }
    }

    pub(super) fn create_index(&mut self, ci: &A::CreateIndex) -> Result<StatementResult> {
        if ci.predicate.is_some() || !ci.include.is_empty() {
            return Err(Error::unsupported(
                "partial indexes and INCLUDE are not supported",
            ));
        }
        let table = object_name(&ci.table_name)?;
        let t = self.db.table(&table)?;
        let def = t.def();
        let mut columns = Vec::new();
        let mut cnames = Vec::new();
        for c in &ci.columns {
            match &c.column.expr {
                A::Expr::Identifier(i) => {
                    let n = ident(i);
                    columns.push(def.column_index(&n)?);
                    cnames.push(n);
                }
                e => {
                    return Err(Error::unsupported(format!(
                        "index expression {e} is not supported"
                    )))
                }
            }
        }
        let name = match &ci.name {
            Some(n) => object_name(n)?,
            None => format!("{table}_{}_idx", cnames.join("_")),
        };
        if self.db.table(&name).is_ok() {
            if ci.if_not_exists {
                return Ok(StatementResult::Command {
                    tag: "CREATE INDEX".into(),
                });
            }
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        self.db.create_index(
            &table,
            IndexDef {
                name,
                columns,
                unique: ci.unique,
            },
            ci.if_not_exists,
        )?;
        Ok(StatementResult::Command {
            tag: "CREATE INDEX".into(),
        })
    }

    /// `TRUNCATE t, ...`: every table must exist before any is emptied.
    pub(super) fn truncate(&mut self, t: &A::Truncate) -> Result<StatementResult> {
        for n in &self.truncate_targets(t)? {
            self.db.truncate(n)?;
        }
        Ok(StatementResult::Command {
            tag: "TRUNCATE TABLE".into(),
        })
    }

    /// The tables a TRUNCATE empties, once it is checked that each exists and that no other
    /// table references one of them.
    pub(super) fn truncate_targets(&self, t: &A::Truncate) -> Result<Vec<String>> {
        let names: Vec<String> = t
            .table_names
            .iter()
            .map(|n| object_name(&n.name))
            .collect::<Result<_>>()?;
        for n in &names {
            self.db.table(n)?;
        }
        for t in self.db.tables() {
            let d = t.def();
            if names.contains(&d.name) {
                continue;
            }
            if let Some(f) = d.foreign_keys.iter().find(|f| names.contains(&f.parent)) {
                return Err(Error::unsupported(format!(
                    "cannot truncate a table referenced in a foreign key constraint (table \"{}\" references \"{}\")",
                    d.name, f.parent
                )));
            }
        }
        Ok(names)
    }
}

/// The DEFAULT of a column that takes its values from sequence `sd`.
pub(super) fn nextval_default(sd: &SequenceDef) -> String {
    format!("nextval('{}')", sd.name.replace('\'', "''"))
}
