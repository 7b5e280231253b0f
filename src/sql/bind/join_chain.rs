//! Inner join chains (`a JOIN b ON ... JOIN c ON ...`) taken apart into the join planner's
//! relations: each ON condition is bound where it is written (it sees only its chain's tables
//! so far) and joins the WHERE clause's conjuncts, so `plan::join_order` orders explicit inner
//! joins as it orders a comma-separated FROM list. Chains with an outer join stay as written.
//! A function reading the relations to its left joins them first (see `bind_rel`).

use sqlparser::ast as A;

use super::{from_fn, Binder, Scope};
use crate::error::Result;
use crate::sql::expr::Expr;
use crate::sql::plan::access::conjoin;
use crate::sql::plan::join_order::plan_joins;
use crate::sql::plan::Plan;

/// The relations so far (`plans`), joined under the conditions so far (`conds`), both taken.
fn join_so_far(plans: &mut Vec<Plan>, conds: &mut Vec<Expr>) -> Plan {
    let (joined, rest) = plan_joins(std::mem::take(plans), conjoin(std::mem::take(conds)));
    match conjoin(rest) {
        Some(r) => Plan::Filter(Box::new(joined), r),
        None => joined,
    }
}

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
                let before = plans.len();
                let (p, s) = self.bind_rel(&twj.relation, &scope, &mut plans, &mut conds)?;
                if plans.len() < before {
                    // A function that read the relations before it, which it now holds: the
                    // chain's joins go onto all of their columns.
                    let (p, s) = self.bind_joins(p, scope.concat(s), &twj.joins)?;
                    plans.push(p);
                    scope = s;
                } else {
                    let (p, s) = self.bind_joins(p, s, &twj.joins)?;
                    plans.push(p);
                    scope = scope.concat(s);
                }
                continue;
            }
            // The chain's columns start here in the FROM list's row.
            let off = scope.cols.len();
            let (p, mut local) = self.bind_rel(&twj.relation, &scope, &mut plans, &mut conds)?;
            plans.push(p);
            for j in &twj.joins {
                let left = scope.clone().concat(local.clone());
                let (rp, rs) = self.bind_rel(&j.relation, &left, &mut plans, &mut conds)?;
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

    /// One relation of the list, after `plans` (whose columns `left` names). A function
    /// reading their columns (implicitly LATERAL) cannot be ordered apart from them: the
    /// relations so far are joined now (under the conditions `conds` so far), and the function
    /// runs per row of that join, which becomes the list's only relation so far.
    fn bind_rel(
        &mut self,
        f: &A::TableFactor,
        left: &Scope,
        plans: &mut Vec<Plan>,
        conds: &mut Vec<Expr>,
    ) -> Result<(Plan, Scope)> {
        if !plans.is_empty() && super::from::is_lateral_subquery(f) {
            // Run per row of the relations so far, joined now, as a function reading them is.
            let joined = join_so_far(plans, conds);
            let (p, s) = self.lateral_subquery(joined, left.clone(), f, None, false)?;
            let lw = left.cols.len();
            let fs = super::Scope {
                cols: s.cols[lw..].to_vec(),
                tables: s.tables[left.tables.len()..].to_vec(),
            };
            return Ok((p, fs));
        }
        if plans.is_empty() || !from_fn::is_function(f) {
            return self.bind_factor(f);
        }
        let (fp, fs, reads) = self.bind_lateral_factor(f, left)?;
        if !reads {
            return Ok((fp, fs));
        }
        let joined = join_so_far(plans, conds);
        // The caller pushes this one relation, holding the list's columns so far and the
        // function's (the scope it gets is the function's, appended to the list's).
        Ok((from_fn::graft(fp, joined, left.cols.len(), false)?, fs))
    }
}
