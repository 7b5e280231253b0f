//! Binding subqueries used as expressions (scalar, EXISTS, IN, ANY/ALL), correlated or not:
//! a name the subquery cannot resolve is looked up in the enclosing queries' scopes and becomes
//! an argument of the subquery ([`SubRef::args`], read inside as [`Expr::Outer`]).

use sqlparser::ast as A;

use super::{Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{CmpOp, Expr, Func, SubRef, Ty};
use crate::sql::plan::{Column, Plan};
use crate::types::Value;

/// An enclosing query seen from a subquery: its scope, and the expressions over its rows the
/// subquery has captured so far (the subquery's arguments, in order).
pub struct OuterFrame {
    scope: Scope,
    captures: Vec<Expr>,
}

impl Binder<'_> {
    /// A column reference: in `scope`, else in an enclosing query's scope (an outer reference).
    pub(super) fn resolve_column(
        &mut self,
        scope: &Scope,
        qual: Option<&str>,
        name: &str,
    ) -> Result<(Expr, Ty)> {
        match self.resolve(scope, qual, name) {
            Ok((c, t)) => Ok((Expr::Col(c), t)),
            Err(e) if e.sqlstate() == SqlState::AMBIGUOUS_COLUMN => Err(e),
            Err(e) => match self.outer.len().checked_sub(1) {
                Some(level) => self.capture(level, qual, name)?.ok_or(e),
                None => Err(e),
            },
        }
    }

    /// Resolves a name in the scope of frame `level` (or further out), capturing it as an
    /// argument of that frame's subquery: returns the `Outer` reference valid inside it.
    fn capture(&mut self, level: usize, qual: Option<&str>, name: &str) -> Result<Option<(Expr, Ty)>> {
        let (outer_expr, ty) = match self.resolve(&self.outer[level].scope, qual, name) {
            Ok((c, t)) => (Expr::Col(c), t),
            Err(e) if e.sqlstate() == SqlState::AMBIGUOUS_COLUMN => return Err(e),
            Err(_) if level == 0 => return Ok(None),
            Err(_) => match self.capture(level - 1, qual, name)? {
                Some(x) => x,
                None => return Ok(None),
            },
        };
        let caps = &mut self.outer[level].captures;
        let k = match caps.iter().position(|c| *c == outer_expr) {
            Some(k) => k,
            None => {
                caps.push(outer_expr);
                caps.len() - 1
            }
        };
        Ok(Some((Expr::Outer(k), ty)))
    }

    /// Binds a subquery used inside an expression over `scope` and adds its plan to the
    /// statement's subplans.
    pub(super) fn subquery(&mut self, q: &A::Query, scope: &Scope) -> Result<(SubRef, Vec<Column>)> {
        let saved = self.agg_sink.take();
        let saved_win = self.win_sink.take();
        let saved_srf = self.srf_sink.take();
        let saved_in = std::mem::replace(&mut self.in_agg, false);
        let saved_in_window = std::mem::replace(&mut self.in_window, false);
        let volatile_before = self.volatile_calls;
        self.outer.push(OuterFrame {
            scope: scope.clone(),
            captures: Vec::new(),
        });
        let r = self.bind_query(q);
        let frame = self.outer.pop().expect("pushed above");
        self.agg_sink = saved;
        self.win_sink = saved_win;
        self.srf_sink = saved_srf;
        self.in_agg = saved_in;
        self.in_window = saved_in_window;
        let (plan, cols) = r?;
        self.subplans.push(plan);
        Ok((
            SubRef {
                id: self.subplans.len() - 1,
                args: frame.captures,
                volatile: self.volatile_calls > volatile_before,
            },
            cols,
        ))
    }

    /// `x [NOT] IN (subquery)`: a hashed membership test when both sides have one type, else
    /// `x = ANY` / `x <> ALL` (comparing numbers of different types by value).
    pub(super) fn bind_in_subquery(
        &mut self,
        (x, xt): (Expr, Ty),
        q: &A::Query,
        negated: bool,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let (s, cols) = self.subquery(q, scope)?;
        if cols.len() != 1 {
            return Err(Error::syntax("subquery has too many columns"));
        }
        // `x` keeps a varchar[] type, which does not compare with text[] (42883).
        super::array_ops::array_operands(xt, cols[0].ty, if negated { "<>" } else { "=" })?;
        let (xt, st) = (xt.operand(), cols[0].ty.operand());
        let (x, _) = self.comparable((x, xt), (Expr::Lit(Value::Null), st), "=")?;
        let x = self.key_arrays(x, &s, st);
        if xt != st && xt != Ty::Unknown && !(xt.is_int() && st.is_int()) {
            let (op, all) = if negated {
                (CmpOp::Ne, true)
            } else {
                (CmpOp::Eq, false)
            };
            return Ok((Expr::Quant(op, Box::new(x), s, all), Ty::Bool));
        }
        Ok((Expr::InSub(Box::new(x), s, negated), Ty::Bool))
    }

    /// When the subquery's column `ty` is an array type: `x` and that column as the bytes
    /// arrays compare by ([`Func::ArrayKey`]: element by element as the element type, so
    /// `{9} < {10}` and `{1.5} = {1.50}`), for the membership test and comparisons. Returns
    /// `x` to compare.
    fn key_arrays(&mut self, x: Expr, s: &SubRef, ty: Ty) -> Expr {
        if !matches!(ty, Ty::Array(_)) {
            return x;
        }
        let key = |e: Expr| Expr::Func(Func::ArrayKey, vec![e], ty);
        let plan = std::mem::replace(&mut self.subplans[s.id], Plan::Values(vec![]));
        self.subplans[s.id] = match plan {
            // Keyed in its own projection, which decorrelation may still turn into a join.
            Plan::Project(input, mut proj) if !proj.is_empty() => {
                let first = std::mem::replace(&mut proj[0], Expr::Lit(Value::Null));
                proj[0] = key(first);
                Plan::Project(input, proj)
            }
            p => Plan::Project(Box::new(p), vec![key(Expr::Col(0))]),
        };
        key(x)
    }

    /// `x op ANY (subquery)` / `x op ALL (subquery)`.
    pub(super) fn bind_quantified(
        &mut self,
        left: &A::Expr,
        op: &A::BinaryOperator,
        right: &A::Expr,
        all: bool,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        use A::BinaryOperator as B;
        let op = match op {
            B::Eq => CmpOp::Eq,
            B::NotEq => CmpOp::Ne,
            B::Lt => CmpOp::Lt,
            B::LtEq => CmpOp::Le,
            B::Gt => CmpOp::Gt,
            B::GtEq => CmpOp::Ge,
            other => return Err(super::unsupported(format!("operator {other} with ANY/ALL"))),
        };
        if let Some(elems) = array_elems(right) {
            return self.quantified_array(left, op, elems, all, scope);
        }
        let (x, xt) = self.bind_expr(left, scope)?;
        let sub = match right {
            A::Expr::Subquery(q) => Some(q),
            A::Expr::Nested(inner) => match inner.as_ref() {
                A::Expr::Subquery(q) => Some(q),
                _ => None,
            },
            _ => None,
        };
        let elements;
        let mut array = None;
        let q = match sub {
            Some(q) => q,
            None => {
                let (query, a) = self.array_elements_query(right, xt, op, scope)?;
                elements = query;
                array = Some(a);
                &elements
            }
        };
        let (s, cols) = self.subquery(q, scope)?;
        if cols.len() != 1 {
            return Err(Error::syntax("subquery has too many columns"));
        }
        let st = cols[0].ty.operand();
        let (x, _) = self.comparable((x, xt), (Expr::Lit(Value::Null), st), op.sym())?;
        let x = self.key_arrays(x, &s, st);
        let quant = Expr::Quant(op, Box::new(x), s, all);
        Ok(match array {
            // Over a NULL array the answer is NULL (not the empty set's false / true), as in
            // PostgreSQL.
            Some(a) => (
                Expr::Case {
                    operand: None,
                    whens: vec![(Expr::IsNull(Box::new(a), false), Expr::Lit(Value::Null))],
                    els: Some(Box::new(quant)),
                },
                Ty::Bool,
            ),
            None => (quant, Ty::Bool),
        })
    }

    /// `x op ANY (array)` of an array-valued expression (a column such as pg_policy.polroles,
    /// a function's result, a literal `'{1,2}'`): the query over its elements,
    /// `SELECT CAST(e AS elem) FROM unnest(array) AS e`, which the subquery form then
    /// compares. An untyped literal is an array of the left side's type, as in PostgreSQL.
    /// Also returns the array bound, for the NULL test.
    fn array_elements_query(
        &mut self,
        right: &A::Expr,
        xt: Ty,
        op: CmpOp,
        scope: &Scope,
    ) -> Result<(Box<A::Query>, Expr)> {
        let (a, at) = self.bind_expr(right, scope)?;
        let elem = match at {
            Ty::Array(e) => *e,
            Ty::Unknown if xt == Ty::Unknown => Ty::Text,
            Ty::Unknown if xt.array().is_some() => xt,
            _ => {
                return Err(Error::new(
                    SqlState("42809"),
                    format!("op {} ANY/ALL (array) requires array on right side", op.sym()),
                ))
            }
        };
        // A parameter (`id = ANY ($1)`) is an array of the left side's type, as PostgreSQL
        // infers it, so a driver sends it as one.
        let a = match (&a, at, elem.array()) {
            (Expr::Param(..), Ty::Unknown, Some(arr)) => self.coerce(a, at, arr)?,
            _ => a,
        };
        let sql = format!(
            "SELECT CAST(augur_elements.e AS {}) FROM unnest({right}) AS augur_elements(e)",
            elem.name()
        );
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let q = sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(&sql)
            .and_then(|mut p| p.parse_query())
            .map_err(|e| Error::syntax(format!("ANY ({right}): {e}")))?;
        Ok((q, a))
    }

    /// `x op ANY (ARRAY[a, b])` / `ALL`: the comparisons joined by OR / AND (NULLs as
    /// PostgreSQL's, through three-valued logic; no elements: false for ANY, true for ALL).
    fn quantified_array(
        &mut self,
        left: &A::Expr,
        op: CmpOp,
        elems: &[A::Expr],
        all: bool,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let x = self.bind_expr(left, scope)?;
        let mut acc: Option<Expr> = None;
        for el in elems {
            let y = self.bind_expr(el, scope)?;
            let (c, _) = self.compare(op, x.clone(), y)?;
            acc = Some(match acc {
                None => c,
                Some(a) if all => Expr::And(Box::new(a), Box::new(c)),
                Some(a) => Expr::Or(Box::new(a), Box::new(c)),
            });
        }
        Ok((acc.unwrap_or(Expr::Lit(Value::Bool(all))), Ty::Bool))
    }
}

/// The elements of an `ARRAY[...]` constructor (possibly parenthesized or cast).
fn array_elems(e: &A::Expr) -> Option<&[A::Expr]> {
    match e {
        A::Expr::Array(a) => Some(a.elem.as_slice()),
        A::Expr::Nested(inner) => array_elems(inner),
        A::Expr::Cast { expr, .. } => array_elems(expr),
        _ => None,
    }
}
