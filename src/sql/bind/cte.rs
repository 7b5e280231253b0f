//! Binding WITH: each common table expression is bound once and inlined (its plan copied) where
//! the query names it; `WITH RECURSIVE` over `base UNION [ALL] step` where `step` names the CTE
//! becomes a [`Plan::Recursive`] whose step reads the previous round's rows from a work table.

use sqlparser::ast as A;

use super::{ident, Binder};
use crate::error::{Error, Result, SqlState};
use crate::sql::plan::{Column, Plan, SetOpKind};

/// A CTE in scope: its name, plan and output columns.
pub struct CteEntry {
    name: String,
    plan: Plan,
    cols: Vec<Column>,
}

impl Binder<'_> {
    /// Binds a WITH clause's CTEs, in order (each sees the ones before it), into scope.
    pub(super) fn bind_with(&mut self, w: &A::With) -> Result<()> {
        let first = self.ctes.len();
        for cte in &w.cte_tables {
            let name = ident(&cte.alias.name);
            if self.ctes[first..].iter().any(|c| c.name == name) {
                return Err(Error::new(
                    SqlState("42712"),
                    format!("WITH query name \"{name}\" specified more than once"),
                ));
            }
            let (plan, cols) = if w.recursive {
                self.bind_recursive(&name, cte)?
            } else {
                let (p, c) = self.bind_query(&cte.query)?;
                (p, rename(&name, c, &cte.alias.columns)?)
            };
            self.ctes.push(CteEntry { name, plan, cols });
        }
        Ok(())
    }

    /// Runs `f` with the CTEs of `with` in scope: the WITH clause of an INSERT, UPDATE or
    /// DELETE, whose source query, subqueries and RETURNING list may read them.
    pub fn with_ctes<T>(
        &mut self,
        with: Option<&A::With>,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let depth = self.ctes.len();
        let r = match with {
            Some(w) => self.bind_with(w).and_then(|()| f(self)),
            None => f(self),
        };
        self.ctes.truncate(depth);
        r
    }

    /// The plan and columns of CTE `name` if one is in scope (innermost WITH first).
    pub(super) fn cte(&self, name: &A::ObjectName) -> Option<(Plan, Vec<Column>)> {
        let [A::ObjectNamePart::Identifier(i)] = name.0.as_slice() else {
            return None;
        };
        let n = ident(i);
        self.ctes
            .iter()
            .rev()
            .find(|c| c.name == n)
            .map(|c| (c.plan.clone(), c.cols.clone()))
    }

    fn bind_recursive(&mut self, name: &str, cte: &A::Cte) -> Result<(Plan, Vec<Column>)> {
        let q = &cte.query;
        let (
            A::SetExpr::SetOperation {
                op: A::SetOperator::Union,
                set_quantifier,
                left,
                right,
            },
            None,
            None,
            None,
        ) = (q.body.as_ref(), &q.with, &q.order_by, &q.limit_clause)
        else {
            let (p, c) = self.bind_query(q)?;
            return Ok((p, rename(name, c, &cte.alias.columns)?));
        };
        let all = matches!(set_quantifier, A::SetQuantifier::All);
        let (base, cols) = self.bind_set_expr(left)?;
        let (base, cols) = self.resolve_unknown_columns(base, cols)?;
        let cols = rename(name, cols, &cte.alias.columns)?;
        let id = self.work_tables;
        self.work_tables += 1;
        self.ctes.push(CteEntry {
            name: name.to_string(),
            plan: Plan::WorkTable {
                id,
                names: cols.iter().map(|c| format!("{name}.{}", c.name)).collect(),
            },
            cols: cols.clone(),
        });
        let r = self.bind_set_expr(right);
        self.ctes.pop();
        let (step, scols) = r?;
        if !reads_work_table(&step, id) {
            // Not recursive after all: an ordinary UNION.
            return self.set_op(SetOpKind::Union, all, (base, cols), (step, scols));
        }
        self.unify_columns("UNION", &cols, &scols)?;
        let step = self.cast_columns(step, &scols, &cols)?;
        Ok((
            Plan::Recursive {
                id,
                base: Box::new(base),
                step: Box::new(step),
                distinct: !all,
            },
            cols,
        ))
    }
}

/// Applies a CTE's column aliases (fewer than its columns rename a prefix).
fn rename(name: &str, mut cols: Vec<Column>, aliases: &[A::TableAliasColumnDef]) -> Result<Vec<Column>> {
    if aliases.len() > cols.len() {
        return Err(Error::new(
            SqlState("42P10"),
            format!(
                "WITH query \"{name}\" has {} columns available but {} columns specified",
                cols.len(),
                aliases.len()
            ),
        ));
    }
    for (c, a) in cols.iter_mut().zip(aliases) {
        c.name = ident(&a.name);
    }
    Ok(cols)
}

fn reads_work_table(p: &Plan, id: usize) -> bool {
    match p {
        Plan::WorkTable { id: w, .. } => *w == id,
        Plan::Values(_) | Plan::Scan(_) | Plan::IndexMinMax { .. } | Plan::IndexCount { .. } => false,
        Plan::Join { left, right, .. }
        | Plan::FullJoin { left, right, .. }
        | Plan::SemiJoin { left, right, .. }
        | Plan::SetOp { left, right, .. } => reads_work_table(left, id) || reads_work_table(right, id),
        Plan::Recursive { base, step, .. } => reads_work_table(base, id) || reads_work_table(step, id),
        Plan::Filter(p, _) | Plan::Project(p, _) | Plan::Distinct(p, _) | Plan::Sort(p, _) => {
            reads_work_table(p, id)
        }
        Plan::Aggregate { input, .. }
        | Plan::Limit { input, .. }
        | Plan::Window { input, .. }
        | Plan::ProjectSet { input, .. }
        | Plan::Lateral { left: input, .. } => reads_work_table(input, id),
    }
}
