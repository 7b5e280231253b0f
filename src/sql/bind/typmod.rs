//! The type modifier a result column keeps (`varchar(10)` described with typmod 14, not -1), by
//! PostgreSQL's exprTypmod rules: a column reference keeps its column's, a cast with a length
//! has that length (an array subscript is bound as a cast to its array's), a CASE, COALESCE,
//! GREATEST, LEAST or `ARRAY[...]` keeps the one all its results (elements) share, a scalar
//! subquery its column's;
//! anything else has none.

use super::{Binder, Scope};
use crate::sql::expr::{Expr, Func};
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
            Expr::Func(Func::Coalesce | Func::Greatest | Func::Least | Func::ArrayConstruct, args, _) => {
                self.shared_len(args, scope)
            }
            // Without ELSE, the NULL it stands for has none.
            Expr::Case { whens, els, .. } => {
                let els = els.as_deref()?;
                let results: Vec<&Expr> = whens.iter().map(|w| &w.1).chain([els]).collect();
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
}
