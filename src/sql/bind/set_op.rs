//! Binding set operations (UNION / INTERSECT / EXCEPT [ALL], nested and parenthesised):
//! branches must have as many columns, and each column's types unify as PostgreSQL's
//! (42804 otherwise); each branch is cast to the unified types.

use sqlparser::ast as A;

use super::{unsupported, Binder};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Ty};
use crate::sql::plan::{array_cols, Column, Plan, SetOpKind};
use crate::types::Value;

impl Binder<'_> {
    /// A query body without the enclosing query's ORDER BY / LIMIT.
    pub(super) fn bind_set_expr(&mut self, e: &A::SetExpr) -> Result<(Plan, Vec<Column>)> {
        match e {
            A::SetExpr::Select(s) => {
                self.set_op_leaf = true;
                self.bind_select(s, &[], None, None)
            }
            A::SetExpr::Query(q) => {
                // A parenthesised SELECT alone is still a branch of the operation.
                let bare = q.with.is_none()
                    && q.order_by.is_none()
                    && q.limit_clause.is_none()
                    && q.fetch.is_none()
                    && matches!(q.body.as_ref(), A::SetExpr::Select(_));
                self.set_op_leaf = bare;
                self.bind_query(q)
            }
            A::SetExpr::Values(v) => self.bind_values(v),
            A::SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => {
                let kind = match op {
                    A::SetOperator::Union => SetOpKind::Union,
                    A::SetOperator::Intersect => SetOpKind::Intersect,
                    A::SetOperator::Except => SetOpKind::Except,
                    other => return Err(unsupported(format!("{other}"))),
                };
                let all = match set_quantifier {
                    A::SetQuantifier::All => true,
                    A::SetQuantifier::Distinct | A::SetQuantifier::None => false,
                    other => return Err(unsupported(format!("{} {other}", kind.keyword()))),
                };
                let l = self.bind_set_expr(left)?;
                let r = self.bind_set_expr(right)?;
                self.set_op(kind, all, l, r)
            }
            other => Err(unsupported(format!("query {other}"))),
        }
    }

    /// Combines two bound branches: column counts checked, types unified, branches cast.
    pub(super) fn set_op(
        &mut self,
        kind: SetOpKind,
        all: bool,
        (lp, lc): (Plan, Vec<Column>),
        (rp, rc): (Plan, Vec<Column>),
    ) -> Result<(Plan, Vec<Column>)> {
        let cols = self.unify_columns(kind.keyword(), &lc, &rc)?;
        let left = self.cast_columns(lp, &lc, &cols)?;
        let right = self.cast_columns(rp, &rc, &cols)?;
        Ok((
            Plan::SetOp {
                kind,
                all,
                left: Box::new(left),
                right: Box::new(right),
                arrays: array_cols(cols.iter().map(|c| c.ty)),
            },
            cols,
        ))
    }

    /// The output columns of two branches: the left's names, the types both unify to.
    pub(super) fn unify_columns(&mut self, what: &str, lc: &[Column], rc: &[Column]) -> Result<Vec<Column>> {
        if lc.len() != rc.len() {
            return Err(Error::syntax(format!(
                "each {what} query must have the same number of columns"
            )));
        }
        lc.iter()
            .zip(rc)
            .map(|(l, r)| {
                let ty = Ty::unify(l.ty, r.ty).ok_or_else(|| {
                    Error::new(
                        SqlState::DATATYPE_MISMATCH,
                        format!(
                            "{what} types {} and {} cannot be matched",
                            l.ty.name(),
                            r.ty.name()
                        ),
                    )
                })?;
                Ok(Column {
                    name: l.name.clone(),
                    ty: if ty == Ty::Unknown { Ty::Text } else { ty },
                    // Kept when both branches have it (PostgreSQL's transformSetOperationTree).
                    len: if l.len == r.len { l.len } else { None },
                })
            })
            .collect()
    }

    /// `plan` (with columns `from`) cast to the types of `to`, column by column. A branch's
    /// unknown-typed constant or parameter is coerced where its select list makes it, as
    /// PostgreSQL replaces such a constant by its coerced value: `SELECT 'x' UNION SELECT 1`
    /// fails to read 'x' as an integer while planning, and `$1` gets the operation's type.
    pub(super) fn cast_columns(&mut self, plan: Plan, from: &[Column], to: &[Column]) -> Result<Plan> {
        if from.iter().zip(to).all(|(f, t)| f.ty == t.ty) {
            return Ok(plan);
        }
        let mut from = from.to_vec();
        let plan = match plan {
            Plan::Project(input, exprs) => Plan::Project(input, self.retype_unknown(exprs, &mut from, to)?),
            p => p,
        };
        if from.iter().zip(to).all(|(f, t)| f.ty == t.ty) {
            return Ok(plan);
        }
        let exprs = from
            .iter()
            .zip(to)
            .enumerate()
            .map(|(i, (f, t))| self.coerce(Expr::Col(i), f.ty, t.ty))
            .collect::<Result<Vec<_>>>()?;
        Ok(Plan::Project(Box::new(plan), exprs))
    }

    /// Coerces the unknown-typed constants and parameters among a select list's outputs to
    /// the types of `to`, updating `cols` (their types) to match.
    fn retype_unknown(
        &mut self,
        mut exprs: Vec<Expr>,
        cols: &mut [Column],
        to: &[Column],
    ) -> Result<Vec<Expr>> {
        for ((e, c), t) in exprs.iter_mut().zip(cols.iter_mut()).zip(to) {
            if c.ty == Ty::Unknown && matches!(e, Expr::Lit(_) | Expr::Param(_, Ty::Unknown)) {
                let x = std::mem::replace(e, Expr::Lit(Value::Null));
                *e = self.coerce(x, Ty::Unknown, t.ty)?;
                c.ty = t.ty;
            }
        }
        Ok(exprs)
    }

    /// A branch's outputs still of unknown type resolved as text, as a query outside a set
    /// operation resolves them (the non-recursive term of a recursive CTE fixes its types).
    pub(super) fn resolve_unknown_columns(
        &mut self,
        plan: Plan,
        cols: Vec<Column>,
    ) -> Result<(Plan, Vec<Column>)> {
        let to: Vec<Column> = cols
            .iter()
            .map(|c| Column {
                name: c.name.clone(),
                ty: if c.ty == Ty::Unknown { Ty::Text } else { c.ty },
                len: c.len,
            })
            .collect();
        let plan = self.cast_columns(plan, &cols, &to)?;
        Ok((plan, to))
    }
}
