//! CREATE [OR REPLACE] VIEW and DROP VIEW, and the dependency rule they share with DROP TABLE:
//! a table or view that a view reads is dropped only with CASCADE, which drops the views too.

use std::collections::BTreeSet;

use sqlparser::ast as A;

use super::Session;
use crate::engine::ViewDef;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::{check_name, ident, object_name, Binder};
use crate::sql::expr::Ty;
use crate::sql::result::StatementResult;
use crate::types::DataType;

impl Session {
    pub(super) fn create_view(&mut self, cv: &A::CreateView) -> Result<StatementResult> {
        if cv.materialized
            || cv.temporary
            || cv.or_alter
            || cv.secure
            || cv.to.is_some()
            || cv.params.is_some()
            || cv.with_no_schema_binding
            || !matches!(cv.options, A::CreateTableOptions::None)
        {
            return Err(Error::unsupported("this form of CREATE VIEW is not supported"));
        }
        if cv.if_not_exists {
            // Not PostgreSQL syntax.
            return Err(Error::syntax("syntax error at or near \"NOT\""));
        }
        let name = match cv.name.0.last() {
            Some(A::ObjectNamePart::Identifier(i)) => {
                object_name(&cv.name)?;
                check_name(i)?
            }
            _ => return Err(Error::syntax("invalid view name")),
        };
        let existing = self.db.view(&name)?;
        if (existing.is_some() && !cv.or_replace) || (existing.is_none() && self.relation_exists(&name)) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let mut b = Binder::new(&self.db, None);
        // A view's columns have the modifiers of its query unfolded, as PostgreSQL stores them.
        b.parse_typmods = true;
        let (_, cols) = b.bind_query(&cv.query)?;
        if !b.params.is_empty() {
            return Err(Error::new(SqlState("42P02"), "there is no parameter $1"));
        }
        if cv.columns.len() > cols.len() {
            return Err(Error::syntax(
                "CREATE VIEW specifies more column names than columns",
            ));
        }
        let mut columns: Vec<(String, DataType)> = cols.iter().map(|c| (c.name.clone(), c.dt())).collect();
        for (c, n) in columns.iter_mut().zip(&cv.columns) {
            c.0 = ident(&n.name);
        }
        let mut seen = BTreeSet::new();
        for (n, _) in &columns {
            if !seen.insert(n.as_str()) {
                return Err(Error::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column \"{n}\" specified more than once"),
                ));
            }
        }
        if let Some(old) = &existing {
            // PostgreSQL's rule for a replacement: the old columns stay, in order, with their
            // names and types; new ones may follow.
            let bad = |m: String| Error::new(SqlState::INVALID_PRIMARY_KEY, m);
            if columns.len() < old.columns.len() {
                return Err(bad("cannot drop columns from view".into()));
            }
            for ((on, ot), (nn, nt)) in old.columns.iter().zip(&columns) {
                if on != nn {
                    return Err(bad(format!(
                        "cannot change name of view column \"{on}\" to \"{nn}\""
                    )));
                }
                if ot != nt && (old.typmods || !same_without_typmods(*ot, *nt)) {
                    return Err(bad(format!(
                        "cannot change data type of view column \"{on}\" from {} to {}",
                        ot.sql_name(),
                        nt.sql_name()
                    )));
                }
            }
        }
        let mut depends_on: Vec<String> = b.tables.iter().map(|t| t.name()).collect();
        depends_on.extend(b.views.iter().map(|v| v.name.clone()));
        depends_on.sort();
        depends_on.dedup();
        if self.reaches(&depends_on, &name)? {
            return Err(Error::new(
                SqlState("42P17"),
                format!("infinite recursion detected in rules for relation \"{name}\""),
            ));
        }
        self.db.create_view(
            ViewDef {
                name,
                sql: cv.query.to_string(),
                columns,
                depends_on,
                typmods: true,
            },
            cv.or_replace,
        )?;
        self.clear_plan_cache();
        Ok(StatementResult::Command {
            tag: "CREATE VIEW".into(),
        })
    }

    /// Whether `target` is among `names` or the views they read, transitively.
    fn reaches(&self, names: &[String], target: &str) -> Result<bool> {
        let mut todo: Vec<String> = names.to_vec();
        let mut seen = BTreeSet::new();
        while let Some(n) = todo.pop() {
            if n == target {
                return Ok(true);
            }
            if !seen.insert(n.clone()) {
                continue;
            }
            if let Some(v) = self.db.view(&n)? {
                todo.extend(v.depends_on.iter().cloned());
            }
        }
        Ok(false)
    }

    /// Fails with 2BP01 if views read `name` (a table or view), unless `cascade`: then drops
    /// them (and the views that read those) first.
    pub(super) fn drop_dependent_views(&mut self, kind: &str, name: &str, cascade: bool) -> Result<()> {
        let deps = self.db.views_depending_on(name)?;
        let Some(first) = deps.first() else {
            return Ok(());
        };
        if !cascade {
            return Err(Error::new(
                SqlState("2BP01"),
                format!(
                    "cannot drop {kind} {name} because other objects depend on it (view {} depends on {kind} {name}); use DROP ... CASCADE to drop the dependent objects too",
                    first.name
                ),
            ));
        }
        for v in deps {
            self.drop_dependent_views("view", &v.name, true)?;
            self.db.drop_view(&v.name)?;
        }
        Ok(())
    }

    /// Fails with 2BP01 if views read `name`: ALTER TABLE changes that would break the text
    /// of a view (renames, dropped columns) are refused while one does.
    pub(super) fn check_no_dependent_views(&self, table: &str, what: &str) -> Result<()> {
        if let Some(v) = self.db.views_depending_on(table)?.first() {
            return Err(Error::new(
                SqlState("2BP01"),
                format!(
                    "cannot {what} table {table} because view {} depends on it (Augur keeps a view as its query text); drop the view first",
                    v.name
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn drop_views(
        &mut self,
        if_exists: bool,
        names: &[String],
        cascade: bool,
    ) -> Result<StatementResult> {
        for n in names {
            if self.db.view(n)?.is_none() {
                if self.db.table(n).is_ok() {
                    return Err(Error::new(
                        SqlState("42809"),
                        format!("\"{n}\" is not a view (use DROP TABLE to remove a table)"),
                    ));
                }
                if !if_exists {
                    return Err(Error::new(
                        SqlState::UNDEFINED_TABLE,
                        format!("view \"{n}\" does not exist"),
                    ));
                }
            }
        }
        if !cascade {
            for n in names {
                // Views among the ones named may depend on each other (all go together).
                if let Some(v) = self
                    .db
                    .views_depending_on(n)?
                    .into_iter()
                    .find(|v| !names.contains(&v.name))
                {
                    return Err(Error::new(
                        SqlState("2BP01"),
                        format!(
                            "cannot drop view {n} because other objects depend on it (view {} depends on view {n}); use DROP ... CASCADE to drop the dependent objects too",
                            v.name
                        ),
                    ));
                }
            }
        }
        for n in names {
            if self.db.view(n)?.is_some() {
                self.drop_dependent_views("view", n, true)?;
                self.db.drop_view(n)?;
            }
        }
        self.clear_plan_cache();
        Ok(StatementResult::Command {
            tag: "DROP VIEW".into(),
        })
    }
}

/// Whether a column stored by a view without type modifiers (`old`, [`ViewDef::typmods`] false)
/// is `new` but for the modifier it did not keep: the same type, or text where an older Augur
/// stored a varchar column's (text[] for varchar[]).
fn same_without_typmods(old: DataType, new: DataType) -> bool {
    let (o, n) = (Ty::from_dt(old), Ty::from_dt(new));
    (old.typmod_len().is_none() && o == n)
        || (o == Ty::Text && n == Ty::Varchar)
        || (o == Ty::Array(&Ty::Text) && n == Ty::Array(&Ty::Varchar))
}
