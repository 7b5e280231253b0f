//! Decorrelation: a WHERE conjunct `[NOT] EXISTS (subquery)` or `x [NOT] IN (subquery)` whose
//! subquery reads one table and refers to the enclosing query through equalities in its filter
//! (`inner.c = outer.d`, no index answering them) becomes a hash semi-join (anti-join for NOT)
//! of the enclosing rows with that table on those equalities, instead of one run of the
//! subquery per distinct outer value. `NOT IN` becomes an anti-join only when both sides are
//! NOT NULL columns: with a NULL on either side it is NULL, which no anti-join produces. Other
//! shapes (an index lookup per outer row, joins, aggregates, LIMIT in the subquery) stay
//! per-row subqueries.

use super::Binder;
use crate::engine::TableDef;
use crate::sql::expr::{has_subquery, CmpOp, Expr};
use crate::sql::plan::access::{conjoin, split_and};
use crate::sql::plan::{Access, Plan};

/// A WHERE conjunct turned into the right side of a semi- or anti-join.
pub(super) struct SemiJoin {
    right: Plan,
    /// (over the enclosing row, over the subquery table's row).
    keys: Vec<(Expr, Expr)>,
    /// The other correlated conjuncts, over the enclosing row followed by the table's.
    residual: Option<Expr>,
    anti: bool,
}

impl SemiJoin {
    /// The join over `left`, the enclosing query's FROM rows (after its other WHERE conjuncts).
    pub(super) fn apply(self, left: Plan) -> Plan {
        Plan::SemiJoin {
            left: Box::new(left),
            right: Box::new(self.right),
            keys: self.keys,
            residual: self.residual,
            anti: self.anti,
        }
    }
}

fn has_outer(e: &Expr) -> bool {
    let mut h = false;
    e.walk(&mut |x| h |= matches!(x, Expr::Outer(_)));
    h
}

/// Reads the enclosing row (some `Outer`) and nothing of the subquery's own row.
fn outer_only(e: &Expr) -> bool {
    has_outer(e) && e.columns().is_empty()
}

/// Reads the subquery's own row and nothing of the enclosing one.
fn inner_only(e: &Expr) -> bool {
    !has_outer(e) && !e.columns().is_empty()
}

/// The expressions an access path evaluates (its key values and bounds).
fn access_exprs(a: &Access) -> Vec<&Expr> {
    match a {
        Access::Full => vec![],
        Access::Point(v) | Access::In(v) | Access::Prefix(v) => v.iter().collect(),
        Access::Range { lo, hi } => lo.iter().chain(hi).map(|b| &b.0).collect(),
        Access::Index { eq, lo, hi, .. } => eq.iter().chain(lo.iter().chain(hi).map(|b| &b.0)).collect(),
    }
}

/// Which output columns of a FROM plan can never be NULL (NOT NULL and primary-key columns of
/// tables read on the non-nullable side of inner joins).
pub(super) fn not_null_cols(p: &Plan) -> Vec<bool> {
    fn of_def(def: &TableDef) -> Vec<bool> {
        def.columns
            .iter()
            .enumerate()
            .map(|(i, c)| !c.nullable || def.primary_key.contains(&i))
            .collect()
    }
    match p {
        Plan::Scan(s) => of_def(&s.def),
        Plan::Filter(p, _) => not_null_cols(p),
        Plan::Project(p, exprs) => {
            let inner = not_null_cols(p);
            exprs
                .iter()
                .map(|e| matches!(e, Expr::Col(i) if inner.get(*i) == Some(&true)))
                .collect()
        }
        Plan::Join {
            left,
            right,
            left_join,
            lookup,
            ..
        } => {
            let mut v = not_null_cols(left);
            let r = match lookup {
                Some(l) => of_def(&l.def),
                None => not_null_cols(right),
            };
            if *left_join {
                v.extend(std::iter::repeat_n(false, r.len()));
            } else {
                v.extend(r);
            }
            v
        }
        p => vec![false; p.width()],
    }
}

impl Binder<'_> {
    /// Splits WHERE (over the FROM rows, `lw` columns, `not_null` per column) into the
    /// conjuncts that stay a filter and those that become semi- or anti-joins.
    pub(super) fn decorrelate(
        &mut self,
        w: Expr,
        lw: usize,
        not_null: &[bool],
    ) -> (Option<Expr>, Vec<SemiJoin>) {
        let mut conj = Vec::new();
        split_and(w, &mut conj);
        let mut keep = Vec::new();
        let mut joins = Vec::new();
        for c in conj {
            match self.semi_join_of(&c, lw, not_null) {
                Some(j) => joins.push(j),
                None => keep.push(c),
            }
        }
        (conjoin(keep), joins)
    }

    fn semi_join_of(&mut self, c: &Expr, lw: usize, not_null: &[bool]) -> Option<SemiJoin> {
        let (s, x, anti) = match c {
            Expr::Exists(s, neg) => (s, None, *neg),
            Expr::Not(e) => match e.as_ref() {
                Expr::Exists(s, neg) => (s, None, !*neg),
                _ => return None,
            },
            Expr::InSub(x, s, neg) => (s, Some(x.as_ref()), *neg),
            _ => return None,
        };
        if s.args.is_empty() || s.args.iter().any(has_subquery) || x.is_some_and(has_subquery) {
            return None;
        }
        let Some(Plan::Project(input, proj)) = self.subplans.get(s.id) else {
            return None;
        };
        let Plan::Scan(scan) = input.as_ref() else {
            return None;
        };
        if scan.stop_after.is_some() || access_exprs(&scan.access).into_iter().any(has_outer) {
            return None;
        }
        let mut conj = Vec::new();
        if let Some(f) = &scan.filter {
            split_and(f.clone(), &mut conj);
        }
        let subst = |e: &Expr| {
            e.clone().rewrite(&mut |y| {
                Ok(match y {
                    Expr::Outer(k) => s.args.get(k).cloned().unwrap_or(Expr::Outer(k)),
                    y => y,
                })
            })
        };
        let mut inner = Vec::new();
        let mut keys = Vec::new();
        let mut residual = Vec::new();
        for c in conj {
            if has_subquery(&c) {
                return None;
            }
            if !has_outer(&c) {
                inner.push(c);
                continue;
            }
            if let Expr::Cmp(CmpOp::Eq, a, b) = &c {
                if outer_only(a) && inner_only(b) {
                    keys.push((subst(a.as_ref()).ok()?, (**b).clone()));
                    continue;
                }
                if outer_only(b) && inner_only(a) {
                    keys.push((subst(b.as_ref()).ok()?, (**a).clone()));
                    continue;
                }
            }
            // Over the enclosing row followed by the table's.
            let r = c
                .rewrite(&mut |y| {
                    Ok(match y {
                        Expr::Col(i) => Expr::Col(lw + i),
                        Expr::Outer(k) => s.args.get(k).cloned().unwrap_or(Expr::Outer(k)),
                        y => y,
                    })
                })
                .ok()?;
            residual.push(r);
        }
        if let Some(x) = x {
            let y = proj.first()?;
            if has_outer(y) || has_subquery(y) {
                return None;
            }
            if anti {
                // NOT IN: only where neither side can be NULL.
                let x_not_null = matches!(x, Expr::Col(i) if not_null.get(*i) == Some(&true));
                let y_not_null = matches!(y, Expr::Col(j) if scan.def.columns.get(*j).is_some_and(|c| !c.nullable || scan.def.primary_key.contains(j)));
                if !x_not_null || !y_not_null {
                    return None;
                }
            }
            keys.push((x.clone(), y.clone()));
        }
        if keys.is_empty() {
            return None;
        }
        let mut right = scan.clone();
        right.filter = conjoin(inner);
        // The subquery now runs as the join's right side: its plan is left as an empty
        // placeholder (subquery numbers stay as bound).
        self.subplans[s.id] = Plan::Values(vec![]);
        Some(SemiJoin {
            right: Plan::Scan(right),
            keys,
            residual: conjoin(residual),
            anti,
        })
    }
}
