//! Hash join: the right input is hashed on its join keys, each left row probes with its own;
//! the full join condition is then checked on each candidate pair. NULL keys never match.

use std::collections::HashMap;

use crate::error::Result;
use crate::sql::expr::{Ctx, Expr};
use crate::types::{Row, Value};

/// A key value in the form equal values share: numbers of different types (an integer and a
/// float with the same value are equal in SQL) hash alike.
fn norm(v: Value) -> Value {
    match v {
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => Value::Int(f as i64),
        v => v,
    }
}

fn key(exprs: &[&Expr], row: &[Value], cx: &Ctx) -> Result<Option<Vec<Value>>> {
    let mut k = Vec::with_capacity(exprs.len());
    for e in exprs {
        match e.eval(row, cx)? {
            Value::Null => return Ok(None),
            v => k.push(norm(v)),
        }
    }
    Ok(Some(k))
}

/// Joins `lrows` with `rrows` (`rw` columns wide) on `keys` (left expr, right expr), then `on`.
pub(super) fn hash_join(
    lrows: Vec<Row>,
    rrows: Vec<Row>,
    rw: usize,
    keys: &[(Expr, Expr)],
    on: &Expr,
    left_join: bool,
    cx: &Ctx,
) -> Result<Vec<Row>> {
    let lk: Vec<&Expr> = keys.iter().map(|k| &k.0).collect();
    let rk: Vec<&Expr> = keys.iter().map(|k| &k.1).collect();
    let mut table: HashMap<Vec<Value>, Vec<usize>> = HashMap::new();
    for (i, r) in rrows.iter().enumerate() {
        cx.check()?;
        if let Some(k) = key(&rk, r, cx)? {
            table.entry(k).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for lr in lrows {
        cx.check()?;
        let mut matched = false;
        if let Some(k) = key(&lk, &lr, cx)? {
            for &i in table.get(&k).map(Vec::as_slice).unwrap_or(&[]) {
                let mut row = Vec::with_capacity(lr.len() + rw);
                row.extend(lr.iter().cloned());
                row.extend(rrows[i].iter().cloned());
                if on.test(&row, cx)? {
                    out.push(row);
                    matched = true;
                }
            }
        }
        if !matched && left_join {
            let mut row = lr;
            row.extend(std::iter::repeat_n(Value::Null, rw));
            out.push(row);
        }
    }
    Ok(out)
}
