//! The CHECK and FOREIGN KEY definitions a statement declares, checked and named as
//! PostgreSQL does: shared by CREATE TABLE (ddl.rs) and ALTER TABLE (alter.rs).

use sqlparser::ast as A;

use super::Session;
use crate::engine::catalog::{CheckDef, FkAction, ForeignKeyDef};
use crate::engine::TableDef;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::{ident, object_name, Binder};
use crate::sql::dml::bind_check;
use crate::sql::expr::Ty;

impl Session {
    /// A CHECK constraint for `def`, bound once to check it (unknown columns, non-boolean,
    /// subqueries), named as PostgreSQL names it when no name is given:
    /// `<table>_<column>_check` when it reads one column, else `<table>_check`, with a number
    /// added if the table has a constraint of that name.
    pub(super) fn new_check(&self, def: &TableDef, name: Option<String>, expr: &A::Expr) -> Result<CheckDef> {
        let text = expr.to_string();
        let mut b = Binder::new(&self.db, None);
        let e = bind_check(&mut b, def, &text)?;
        let taken = |n: &str| {
            def.checks.iter().any(|c| c.name == n)
                || def.indexes.iter().any(|i| i.name == n)
                || def.pkey_name.as_deref() == Some(n)
                || def.foreign_keys.iter().any(|f| f.name == n)
        };
        let name = match name {
            Some(n) => {
                if taken(&n) {
                    return Err(Error::new(
                        SqlState::DUPLICATE_OBJECT,
                        format!("constraint \"{n}\" for relation \"{}\" already exists", def.name),
                    ));
                }
                n
            }
            None => {
                let mut cols = e.columns();
                cols.sort_unstable();
                cols.dedup();
                let base = match cols.as_slice() {
                    [c] => format!("{}_{}_check", def.name, def.columns[*c].name),
                    _ => format!("{}_check", def.name),
                };
                let mut n = base.clone();
                let mut k = 0;
                while taken(&n) {
                    k += 1;
                    n = format!("{base}{k}");
                }
                n
            }
        };
        Ok(CheckDef { name, expr: text })
    }

    /// A FOREIGN KEY for `def` (the referencing table, which may not exist yet) from its parsed
    /// form (`column`: the column of a column-level REFERENCES), checked as PostgreSQL checks
    /// it: the referenced columns are the parent's primary key (the default) or a unique
    /// index's columns (42830), as many as the referencing ones (42830), of comparable types
    /// (42804). Named `<table>_<columns>_fkey` unless named.
    pub(super) fn new_foreign_key(
        &self,
        def: &TableDef,
        name: Option<String>,
        fk: &A::ForeignKeyConstraint,
        column: Option<&str>,
    ) -> Result<ForeignKeyDef> {
        let names: Vec<String> = if fk.columns.is_empty() {
            column.map(|c| vec![c.to_string()]).unwrap_or_default()
        } else {
            fk.columns.iter().map(ident).collect()
        };
        let missing = |c: &str| {
            Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{c}\" referenced in foreign key constraint does not exist"),
            )
        };
        let columns: Vec<usize> = names
            .iter()
            .map(|c| def.column_index(c).map_err(|_| missing(c)))
            .collect::<Result<_>>()?;
        let parent = object_name(&fk.foreign_table)?;
        let pdef: TableDef = if parent == def.name {
            def.clone()
        } else {
            match self.db.table(&parent) {
                Ok(t) => (*t.def()).clone(),
                Err(e) => {
                    if self.db.view(&parent)?.is_some() {
                        return Err(Error::new(
                            SqlState("42809"),
                            format!("referenced relation \"{parent}\" is not a table"),
                        ));
                    }
                    return Err(e);
                }
            }
        };
        let parent_columns: Vec<String> = if fk.referred_columns.is_empty() {
            if pdef.primary_key.is_empty() {
                return Err(Error::new(
                    SqlState("42830"),
                    format!("there is no primary key for referenced table \"{parent}\""),
                ));
            }
            pdef.primary_key
                .iter()
                .map(|&i| pdef.columns[i].name.clone())
                .collect()
        } else {
            fk.referred_columns.iter().map(ident).collect()
        };
        let ppos: Vec<usize> = parent_columns
            .iter()
            .map(|c| pdef.column_index(c).map_err(|_| missing(c)))
            .collect::<Result<_>>()?;
        if ppos.len() != columns.len() {
            return Err(Error::new(
                SqlState("42830"),
                "number of referencing and referenced columns for foreign key disagree",
            ));
        }
        let fk_name = name
            .or_else(|| fk.name.as_ref().map(ident))
            .unwrap_or_else(|| format!("{}_{}_fkey", def.name, names.join("_")));
        if def.foreign_keys.iter().any(|f| f.name == fk_name) || def.checks.iter().any(|c| c.name == fk_name)
        {
            return Err(Error::new(
                SqlState::DUPLICATE_OBJECT,
                format!(
                    "constraint \"{fk_name}\" for relation \"{}\" already exists",
                    def.name
                ),
            ));
        }
        // The referenced columns must be the primary key or a unique index's.
        let sorted = |v: &[usize]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v
        };
        let target = sorted(&ppos);
        let unique = (!pdef.primary_key.is_empty() && sorted(&pdef.primary_key) == target)
            || pdef
                .indexes
                .iter()
                .any(|i| i.unique && sorted(&i.columns) == target);
        if !unique {
            return Err(Error::new(
                SqlState("42830"),
                format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    parent
                ),
            ));
        }
        let int = |t: Ty| matches!(t, Ty::Int2 | Ty::Int4 | Ty::Int8);
        for (&c, &p) in columns.iter().zip(&ppos) {
            let (ct, pt) = (Ty::from_dt(def.columns[c].ty), Ty::from_dt(pdef.columns[p].ty));
            if ct != pt && !(int(ct) && int(pt)) {
                return Err(Error::new(
                    SqlState::DATATYPE_MISMATCH,
                    format!(
                        "foreign key constraint \"{fk_name}\" cannot be implemented: key columns \"{}\" and \"{}\" are of incompatible types: {} and {}",
                        def.columns[c].name,
                        pdef.columns[p].name,
                        def.columns[c].ty.sql_name(),
                        pdef.columns[p].ty.sql_name()
                    ),
                ));
            }
        }
        let action = |a: &Option<A::ReferentialAction>| match a {
            None | Some(A::ReferentialAction::NoAction) => FkAction::NoAction,
            Some(A::ReferentialAction::Restrict) => FkAction::Restrict,
            Some(A::ReferentialAction::Cascade) => FkAction::Cascade,
            Some(A::ReferentialAction::SetNull) => FkAction::SetNull,
            Some(A::ReferentialAction::SetDefault) => FkAction::SetDefault,
        };
        let on_delete = action(&fk.on_delete);
        let on_update = action(&fk.on_update);
        // PostgreSQL 15's `ON DELETE SET NULL (cols)`: columns of the key, each set alone.
        let on_delete_set = match crate::sql::set_columns::of(fk)? {
            None => None,
            Some(set) => {
                let mut pos = Vec::with_capacity(set.len());
                for c in &set {
                    let name = ident(c);
                    let i = def.column_index(&name).map_err(|_| missing(&name))?;
                    if !columns.contains(&i) {
                        return Err(Error::new(
                            SqlState("42P10"),
                            format!("column \"{name}\" referenced in ON DELETE SET action must be part of foreign key"),
                        ));
                    }
                    pos.push(i);
                }
                Some(pos)
            }
        };
        if fk
            .match_kind
            .as_ref()
            .is_some_and(|m| !matches!(m, A::ConstraintReferenceMatchKind::Simple))
        {
            return Err(Error::unsupported(
                "MATCH FULL / PARTIAL foreign keys are not supported",
            ));
        }
        if fk.characteristics.is_some() {
            return Err(Error::unsupported("DEFERRABLE foreign keys are not supported"));
        }
        Ok(ForeignKeyDef {
            name: fk_name,
            columns,
            parent,
            parent_columns,
            on_delete,
            on_update,
            on_delete_set,
        })
    }
}
