//! Inner join chains (`a JOIN b ON ... JOIN c ON ...`) taken apart into the join planner's
//! relations: each ON condition is bound where it is written (it sees only its chain's tables
//! so far) and joins the WHERE clause's conjuncts, so `plan::join_order` orders explicit inner
//! joins as it orders a comma-separated FROM list. Chains with an outer join stay as written.

use sqlparser::ast as A;

use super::{Binder, Scope};
use crate::error::Result;
use crate::sql::expr::Expr;
use crate::sql::plan::Plan;

/// Whether every join of `twj` is an inner or cross join.
fn inner_only(twj: &A::TableWithJoins) -> bool {
    twj.joins.iter().all(|j| {
        matches!(
            j.join_operator,
            A::JoinOperator::Join(_) | A::JoinOperator::Inner(_) | A::JoinOperator::CrossJoin(_)
        )
    })
}

impl Binder<'_> {
    /// The relations of a FROM list (inner join chains taken apart), the scope of their
    /// concatenated rows and the ON conditions of the chains taken apart, over those rows;
    /// None when the list is a single relation, with nothing to order.
    #[allow(clippy::type_complexity)]
    pub(super) fn bind_join_rels(
        &mut self,
        from: &[A::TableWithJoins],
    ) -> Result<Option<(Vec<Plan>, Scope, Vec<Expr>)>> {
        let n: usize = from
            .iter()
            .map(|t| if inner_only(t) { 1 + t.joins.len() } else { 1 })
            .sum();
        if n < 2 {
            return Ok(None);
        }
        let mut plans = Vec::with_capacity(n);
        let mut scope = Scope::default();
        let mut conds = Vec::new();
        for twj in from {
            if !inner_only(twj) {
                let (p, s) = self.bind_twj(twj)?;
                plans.push(p);
                scope = scope.concat(s);
                continue;
            }
            // The chain's columns start here in the FROM list's row.
            let off = scope.cols.len();
            let (p, mut local) = self.bind_factor(&twj.relation)?;
            plans.push(p);
            for j in &twj.joins {
                let (rp, rs) = self.bind_factor(&j.relation)?;
                plans.push(rp);
                let c = match &j.join_operator {
                    A::JoinOperator::Join(c) | A::JoinOperator::Inner(c) => Some(c),
                    _ => None,
                };
                let lw = local.cols.len();
                local = local.concat(rs);
                if let Some(e) = self.join_condition(c, &local, lw)? {
                    conds.push(e.rewrite(&mut |x| {
                        Ok(match x {
                            Expr::Col(i) => Expr::Col(i + off),
                            x => x,
                        })
                    })?);
                }
            }
            scope = scope.concat(local);
        }
        Ok(Some((plans, scope, conds)))
    }
}
