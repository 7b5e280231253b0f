//! Evaluating expressions over a row with PostgreSQL semantics: three-valued logic, NULLs,
//! comparisons, CASE, IN lists and subqueries (run by the executor, see [`super::SubqueryRunner`]).

use std::cmp::Ordering;
use std::sync::Arc;

use super::cast::{cast, text_arg};
use super::func::eval_func;
use super::ops::{arith, int_range, like};
use super::{Ctx, Expr, SubRef, SubResult, Ty};
use crate::error::{Error, Result, SqlState};
use crate::types::Value;

fn bool_of(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

impl Expr {
    /// Evaluates the expression over `row`.
    pub fn eval(&self, row: &[Value], cx: &Ctx) -> Result<Value> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Col(i) => row
                .get(*i)
                .cloned()
                .ok_or_else(|| Error::internal("column out of range"))?,
            Expr::Param(i, ty) => match (cx.params.get(*i), ty) {
                // A bigint parameter bound as one (a key lookup's usual case): nothing to convert.
                (Some(Value::Int(x)), Ty::Int8) => Value::Int(*x),
                (Some(v), _) => cast(v.clone(), *ty, None)?,
                (None, _) => {
                    return Err(Error::new(
                        SqlState::PROTOCOL_VIOLATION,
                        format!("no value for parameter ${}", i + 1),
                    ))
                }
            },
            Expr::Neg(a, ty) => match a.eval(row, cx)? {
                Value::Null => Value::Null,
                Value::Int(i) => int_range(
                    *ty,
                    i.checked_neg()
                        .ok_or_else(|| Error::out_of_range(format!("{} out of range", ty.name())))?,
                )?,
                Value::Float(f) => Value::Float(-f),
                Value::Numeric(d) => Value::Numeric(crate::types::numeric::canon(-d)),
                Value::Interval(i) => Value::Interval(i.neg()?),
                v => return Err(Error::internal(format!("cannot negate {v:?}"))),
            },
            Expr::Arith(op, a, b, ty) => {
                let x = a.eval(row, cx)?;
                let y = b.eval(row, cx)?;
                arith(*op, &x, &y, *ty)?
            }
            Expr::Cmp(op, a, b) => {
                let x = a.eval(row, cx)?;
                if x.is_null() {
                    // Still evaluate the other side for errors? PostgreSQL is strict: skip.
                    return Ok(Value::Null);
                }
                let y = b.eval(row, cx)?;
                match x.sql_cmp(&y) {
                    None => Value::Null,
                    Some(o) => Value::Bool(op.test(o)),
                }
            }
            Expr::And(a, b) => {
                let x = bool_of(&a.eval(row, cx)?);
                if x == Some(false) {
                    return Ok(Value::Bool(false));
                }
                let y = bool_of(&b.eval(row, cx)?);
                match (x, y) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            Expr::Or(a, b) => {
                let x = bool_of(&a.eval(row, cx)?);
                if x == Some(true) {
                    return Ok(Value::Bool(true));
                }
                let y = bool_of(&b.eval(row, cx)?);
                match (x, y) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            Expr::Not(a) => match bool_of(&a.eval(row, cx)?) {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::IsNull(a, neg) => Value::Bool(a.eval(row, cx)?.is_null() != *neg),
            Expr::IsBool(a, val, neg) => {
                let r = bool_of(&a.eval(row, cx)?) == Some(*val);
                Value::Bool(r != *neg)
            }
            Expr::IsDistinct(a, b, neg) => {
                let x = a.eval(row, cx)?;
                let y = b.eval(row, cx)?;
                let distinct = match (x.is_null(), y.is_null()) {
                    (true, true) => false,
                    (true, false) | (false, true) => true,
                    _ => x.sql_cmp(&y) != Some(Ordering::Equal),
                };
                Value::Bool(distinct != *neg)
            }
            Expr::InList(a, list, neg) => {
                let x = a.eval(row, cx)?;
                if x.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for e in list {
                    let y = e.eval(row, cx)?;
                    match x.sql_cmp(&y) {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!*neg)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*neg)
                }
            }
            Expr::InSub(a, s, neg) => {
                let x = a.eval(row, cx)?;
                let r = sub(s, row, cx)?;
                if r.rows.is_empty() {
                    return Ok(Value::Bool(*neg));
                }
                if x.is_null() {
                    return Ok(Value::Null);
                }
                if r.set.contains(&x) {
                    Value::Bool(!*neg)
                } else if r.has_null {
                    Value::Null
                } else {
                    Value::Bool(*neg)
                }
            }
            Expr::Quant(op, a, s, all) => {
                let x = a.eval(row, cx)?;
                let r = sub(s, row, cx)?;
                if r.rows.is_empty() {
                    return Ok(Value::Bool(*all));
                }
                let mut saw_null = false;
                for v in &r.rows {
                    match x.sql_cmp(&v[0]).map(|o| op.test(o)) {
                        None => saw_null = true,
                        Some(b) if b != *all => return Ok(Value::Bool(b)),
                        Some(_) => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*all)
                }
            }
            Expr::Exists(s, neg) => Value::Bool(sub(s, row, cx)?.rows.is_empty() == *neg),
            Expr::ScalarSub(s) => {
                let r = sub(s, row, cx)?;
                match r.rows.len() {
                    0 => Value::Null,
                    1 => r.rows[0].first().cloned().unwrap_or(Value::Null),
                    _ => {
                        return Err(Error::new(
                            SqlState::CARDINALITY_VIOLATION,
                            "more than one row returned by a subquery used as an expression",
                        ))
                    }
                }
            }
            Expr::Outer(k) => cx
                .outer
                .get(*k)
                .cloned()
                .ok_or_else(|| Error::internal("outer reference out of range"))?,
            Expr::Like(a, p, esc, neg, ci) => {
                let x = a.eval(row, cx)?;
                let y = p.eval(row, cx)?;
                let esc =
                    match esc {
                        None => Some('\\'),
                        Some(e) => match e.eval(row, cx)? {
                            Value::Null => return Ok(Value::Null),
                            v => {
                                let s = text_arg(&v).unwrap_or_default();
                                let mut it = s.chars();
                                match (it.next(), it.next()) {
                                    (None, _) => None,
                                    (Some(c), None) => Some(c),
                                    _ => return Err(Error::new(
                                        SqlState("22019"),
                                        "invalid escape string: escape string must be empty or one character",
                                    )),
                                }
                            }
                        },
                    };
                match (text_arg(&x), text_arg(&y)) {
                    (Some(s), Some(p)) => Value::Bool(like(&s, &p, esc, *ci) != *neg),
                    _ => Value::Null,
                }
            }
            Expr::Case { operand, whens, els } => {
                let op = match operand {
                    Some(o) => Some(o.eval(row, cx)?),
                    None => None,
                };
                for (w, t) in whens {
                    let hit = match &op {
                        Some(o) => {
                            let wv = w.eval(row, cx)?;
                            o.sql_cmp(&wv) == Some(Ordering::Equal)
                        }
                        None => w.eval(row, cx)? == Value::Bool(true),
                    };
                    if hit {
                        return t.eval(row, cx);
                    }
                }
                match els {
                    Some(e) => e.eval(row, cx)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(a, ty, len) => cast(a.eval(row, cx)?, *ty, *len)?,
            Expr::Concat(a, b) => {
                let x = a.eval(row, cx)?;
                let y = b.eval(row, cx)?;
                match (text_arg(&x), text_arg(&y)) {
                    (Some(mut s), Some(t)) => {
                        s.push_str(&t);
                        Value::Text(s)
                    }
                    _ => Value::Null,
                }
            }
            Expr::Func(f, args, ty) => eval_func(*f, args, *ty, row, cx)?,
            Expr::Agg(_) => return Err(Error::internal("aggregate evaluated outside an aggregation")),
            Expr::Window(_) => {
                return Err(Error::internal("window function evaluated outside a window step"))
            }
            Expr::Srf(_) => {
                return Err(Error::internal(
                    "set-returning function evaluated outside ProjectSet",
                ))
            }
        })
    }

    /// Evaluates a predicate: true only when the value is TRUE (NULL and FALSE reject).
    pub fn test(&self, row: &[Value], cx: &Ctx) -> Result<bool> {
        Ok(matches!(self.eval(row, cx)?, Value::Bool(true)))
    }
}

/// The result of subquery `s` for the current row: its arguments are evaluated over `row` and
/// the executor runs (or reuses) the subquery's plan for those values.
fn sub(s: &SubRef, row: &[Value], cx: &Ctx) -> Result<Arc<SubResult>> {
    let args = s
        .args
        .iter()
        .map(|a| a.eval(row, cx))
        .collect::<Result<Vec<_>>>()?;
    cx.subs.run_subquery(s.id, args, s.volatile)
}
