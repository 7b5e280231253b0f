//! DDL: CREATE / DROP / ALTER TABLE, CREATE / DROP INDEX, TRUNCATE. Not transactional: each
//! applies at once, durably, through the engine's catalog calls.

use sqlparser::ast as A;

use super::Session;
use crate::engine::{ColumnDef, IndexDef, TableDef};
use crate::error::{Error, Result, SqlState};
use crate::sql::bind::{check_name, ident, object_name, parse_type, Binder};
use crate::sql::dml::bind_default;
use crate::sql::result::StatementResult;

impl Session {
    fn relation_exists(&self, name: &str) -> bool {
        self.db.table(name).is_ok()
            || self
                .db
                .tables()
                .iter()
                .any(|t| t.def().indexes.iter().any(|i| i.name == name))
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
        let mut pk: Vec<String> = Vec::new();
        let mut pk_name = None;
        let mut uniques: Vec<(Option<String>, Vec<String>)> = Vec::new();
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
            for o in &c.options {
                match &o.option {
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
        if ct.if_not_exists {
            self.db.create_table_if_not_exists(def)?;
        } else {
            self.db.create_table(def)?;
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

    pub(super) fn drop(
        &mut self,
        ty: A::ObjectType,
        if_exists: bool,
        names: &[A::ObjectName],
    ) -> Result<StatementResult> {
        let names: Vec<String> = names.iter().map(object_name).collect::<Result<_>>()?;
        match ty {
            A::ObjectType::Table => {
                if !if_exists {
                    for n in &names {
                        self.db.table(n)?;
                    }
                }
                for n in &names {
                    self.db.drop_table(n, if_exists)?;
                }
                Ok(StatementResult::Command {
                    tag: "DROP TABLE".into(),
                })
            }
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

    pub(super) fn alter_table(&mut self, at: &A::AlterTable) -> Result<StatementResult> {
        let table = object_name(&at.name)?;
        if self.db.table(&table).is_err() && at.if_exists {
            return Ok(StatementResult::Command {
                tag: "ALTER TABLE".into(),
            });
        }
        self.db.table(&table)?;
        for op in &at.operations {
            match op {
                A::AlterTableOperation::AddConstraint {
                    constraint: A::TableConstraint::PrimaryKey(p),
                    ..
                } => {
                    let cols: Vec<String> = p
                        .columns
                        .iter()
                        .map(|c| match &c.column.expr {
                            A::Expr::Identifier(i) => Ok(ident(i)),
                            e => Err(Error::unsupported(format!("key expression {e}"))),
                        })
                        .collect::<Result<_>>()?;
                    let pname = p.name.as_ref().map(ident);
                    self.db.rebuild_table(&table, |d| {
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
                    })?;
                }
                A::AlterTableOperation::AddConstraint {
                    constraint: A::TableConstraint::Unique(u),
                    ..
                } => {
                    let t = self.db.table(&table)?;
                    let d = t.def();
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
                    self.db.create_index(
                        &table,
                        IndexDef {
                            name,
                            columns,
                            unique: true,
                        },
                        false,
                    )?;
                }
                other => {
                    return Err(Error::unsupported(format!(
                        "ALTER TABLE {other} is not supported"
                    )))
                }
            }
        }
        Ok(StatementResult::Command {
            tag: "ALTER TABLE".into(),
        })
    }

    /// `TRUNCATE t, ...`: every table must exist before any is emptied.
    pub(super) fn truncate(&mut self, t: &A::Truncate) -> Result<StatementResult> {
        let names: Vec<String> = t
            .table_names
            .iter()
            .map(|n| object_name(&n.name))
            .collect::<Result<_>>()?;
        for n in &names {
            self.db.table(n)?;
        }
        for n in &names {
            self.db.truncate(n)?;
        }
        Ok(StatementResult::Command {
            tag: "TRUNCATE TABLE".into(),
        })
    }
}
