//! The type modifier a result column keeps (`varchar(10)` described with typmod 14, not -1), by
//! PostgreSQL's exprTypmod rules: a column reference keeps its column's, a cast with a length
//! has that length (an array subscript is bound as a cast to its array's), a CASE, COALESCE,
//! GREATEST, LEAST or `ARRAY[...]` keeps the one all its results (elements) share, a scalar
//! subquery its column's;
//! anything else has none.
//!
//! PostgreSQL's planner folds constants before a portal describes its rows: a CASE drops the
//! WHENs whose condition is constant false or NULL and ends at one that is constant true (`CASE
//! WHEN true THEN v END` is `v`), a COALESCE drops NULL arguments and ends at a constant one
//! (`coalesce(NULL, v)` is `v`). So a query's rows carry the modifiers of the folded
//! expressions, while parse analysis (a prepared statement's Describe, a view's columns) sees
//! them unfolded: [`Binder::parse_typmods`] chooses which, and [`Binder::typmods_folded`]
//! records that the two may differ.

use super::{Binder, Scope};
use crate::sql::expr::{CmpOp, Expr, Func};
use crate::types::Value;

impl Binder<'_> {
    /// The type modifier ([`crate::sql::plan::Column::len`]) of `e`, bound over `scope`.
    pub(crate) fn expr_len(&self, e: &Expr, scope: &Scope) -> Option<u32> {
        match e {
            Expr::Col(i) => scope.cols.get(*i)?.len,
            Expr::Cast(_, _, len) => *len,
            // An array cast carries its length as its third argument.
            Expr::Func(Func::ArrayCast, args, _) => match args.get(2) {
                Some(Expr::Lit(Value::Int(n))) => u32::try_from(*n).ok(),
                _ => None,
            },
            Expr::Func(Func::Coalesce, args, _) => {
                let kept = if self.parse_typmods {
                    args.iter().collect()
                } else {
                    self.fold_coalesce(args)
                };
                match kept.as_slice() {
                    [] => None,
                    // A COALESCE left with one argument is that argument.
                    [one] if !self.parse_typmods => self.expr_len(one, scope),
                    _ => self.shared_len(kept, scope),
                }
            }
            Expr::Func(Func::Greatest | Func::Least | Func::ArrayConstruct, args, _) => {
                self.shared_len(args, scope)
            }
            Expr::Case { operand, whens, els } => {
                let (results, has_else) = if self.parse_typmods {
                    let r: Vec<&Expr> = whens.iter().map(|w| &w.1).chain(els.as_deref()).collect();
                    (r, els.is_some())
                } else {
                    self.fold_case(operand.as_deref(), whens, els.as_deref())
                };
                // Without ELSE, the NULL it stands for has none.
                if !has_else {
                    return None;
                }
                self.shared_len(results, scope)
            }
            Expr::ScalarSub(s) => self.sub_lens.get(&s.id).copied(),
            _ => None,
        }
    }

    /// The modifier every one of `items` has, if they share one.
    fn shared_len<'e>(&self, items: impl IntoIterator<Item = &'e Expr>, scope: &Scope) -> Option<u32> {
        let mut it = items.into_iter();
        let first = self.expr_len(it.next()?, scope)?;
        it.all(|e| self.expr_len(e, scope) == Some(first))
            .then_some(first)
    }

    /// The results a CASE keeps once its constant conditions are folded, and whether it still
    /// has a default (its ELSE, or the result of a WHEN that is constant true).
    fn fold_case<'e>(
        &self,
        operand: Option<&'e Expr>,
        whens: &'e [(Expr, Expr)],
        els: Option<&'e Expr>,
    ) -> (Vec<&'e Expr>, bool) {
        let mut kept = Vec::new();
        for (cond, result) in whens {
            let truth = match operand {
                // `CASE x WHEN v`: the test is `x = v`.
                Some(x) => match (const_value(x), const_value(cond)) {
                    (Some(a), Some(b)) => cmp_truth(CmpOp::Eq, &a, &b),
                    _ => None,
                },
                None => const_truth(cond),
            };
            match truth {
                Some(Some(true)) => {
                    self.typmods_folded.set(true);
                    kept.push(result);
                    return (kept, true);
                }
                Some(_) => self.typmods_folded.set(true),
                None => kept.push(result),
            }
        }
        kept.extend(els);
        (kept, els.is_some())
    }

    /// The arguments a COALESCE keeps once folded: NULL constants dropped, none after the first
    /// other constant.
    fn fold_coalesce<'e>(&self, args: &'e [Expr]) -> Vec<&'e Expr> {
        let mut kept = Vec::new();
        for a in args {
            match const_value(a) {
                Some(Value::Null) => self.typmods_folded.set(true),
                Some(_) => {
                    kept.push(a);
                    break;
                }
                None => kept.push(a),
            }
        }
        if kept.len() == 1 && args.len() > 1 {
            self.typmods_folded.set(true);
        }
        kept
    }
}

/// The value of a constant expression the planner folds: a literal, a cast of one, `NOT`, `AND`,
/// `OR`, `IS [NOT] NULL` and comparisons of such; None for anything else.
fn const_value(e: &Expr) -> Option<Value> {
    Some(match e {
        Expr::Lit(v) => v.clone(),
        Expr::Cast(x, _, _) => match const_value(x)? {
            Value::Null => Value::Null,
            _ => return None,
        },
        Expr::Not(_) | Expr::And(..) | Expr::Or(..) | Expr::IsNull(..) | Expr::Cmp(..) => {
            match const_truth(e)? {
                Some(b) => Value::Bool(b),
                None => Value::Null,
            }
        }
        _ => return None,
    })
}

/// The truth of a constant condition (Some(None) for NULL), None when it is not constant.
fn const_truth(e: &Expr) -> Option<Option<bool>> {
    match e {
        Expr::Not(x) => Some(const_truth(x)?.map(|b| !b)),
        Expr::And(a, b) => match (const_truth(a), const_truth(b)) {
            (Some(Some(false)), _) | (_, Some(Some(false))) => Some(Some(false)),
            (Some(x), Some(y)) => Some(x.zip(y).map(|_| true)),
            _ => None,
        },
        Expr::Or(a, b) => match (const_truth(a), const_truth(b)) {
            (Some(Some(true)), _) | (_, Some(Some(true))) => Some(Some(true)),
            (Some(x), Some(y)) => Some(x.zip(y).map(|_| false)),
            _ => None,
        },
        Expr::IsNull(x, negated) => Some(Some(matches!(const_value(x)?, Value::Null) != *negated)),
        Expr::Cmp(op, a, b) => cmp_truth(*op, &const_value(a)?, &const_value(b)?),
        _ => match const_value(e)? {
            Value::Bool(b) => Some(Some(b)),
            Value::Null => Some(None),
            _ => None,
        },
    }
}

/// `a op b` of two constants (Some(None) when either is NULL); None when they are of different
/// kinds, which this does not fold.
fn cmp_truth(op: CmpOp, a: &Value, b: &Value) -> Option<Option<bool>> {
    if matches!(a, Value::Null) || matches!(b, Value::Null) {
        return Some(None);
    }
    if std::mem::discriminant(a) != std::mem::discriminant(b) {
        return None;
    }
    Some(Some(op.test(a.sql_cmp(b)?)))
}
