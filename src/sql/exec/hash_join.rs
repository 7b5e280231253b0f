//! Hash join: the right input is hashed on its join keys, each left row probes with its own;
//! the full join condition is then checked on each candidate pair. NULL keys never match.
//! FULL JOIN as well, by hash or, without equalities to hash on, by nested loop; and the
//! semi- and anti-joins of decorrelated EXISTS / IN subqueries.

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

/// FULL JOIN of `lrows` and `rrows` (`widths` = their column counts): the pairs meeting `on`
/// (candidates from a hash table on `keys` when there are any, else every pair), each left row
/// that met none padded with NULLs after it, then each right row that met none with NULLs
/// before it.
pub(super) fn full_join(
    lrows: Vec<Row>,
    rrows: Vec<Row>,
    (lw, rw): (usize, usize),
    keys: &[(Expr, Expr)],
    on: Option<&Expr>,
    cx: &Ctx,
) -> Result<Vec<Row>> {
    let lk: Vec<&Expr> = keys.iter().map(|k| &k.0).collect();
    let rk: Vec<&Expr> = keys.iter().map(|k| &k.1).collect();
    let mut table: HashMap<Vec<Value>, Vec<usize>> = HashMap::new();
    if !keys.is_empty() {
        for (i, r) in rrows.iter().enumerate() {
            cx.check()?;
            if let Some(k) = key(&rk, r, cx)? {
                table.entry(k).or_default().push(i);
            }
        }
    }
    let every: Vec<usize> = if keys.is_empty() {
        (0..rrows.len()).collect()
    } else {
        Vec::new()
    };
    let mut rmatched = vec![false; rrows.len()];
    let mut out = Vec::new();
    for lr in lrows {
        cx.check()?;
        let cands: &[usize] = if keys.is_empty() {
            &every
        } else {
            match key(&lk, &lr, cx)? {
                Some(k) => table.get(&k).map(Vec::as_slice).unwrap_or(&[]),
                None => &[],
            }
        };
        let mut matched = false;
        for &i in cands {
            cx.check()?;
            let mut row = Vec::with_capacity(lw + rw);
            row.extend(lr.iter().cloned());
            row.extend(rrows[i].iter().cloned());
            if on.map_or(Ok(true), |e| e.test(&row, cx))? {
                out.push(row);
                matched = true;
                rmatched[i] = true;
            }
        }
        if !matched {
            let mut row = lr;
            row.extend(std::iter::repeat_n(Value::Null, rw));
            out.push(row);
        }
    }
    for (r, m) in rrows.into_iter().zip(rmatched) {
        if !m {
            let mut row = Vec::with_capacity(lw + rw);
            row.extend(std::iter::repeat_n(Value::Null, lw));
            row.extend(r);
            out.push(row);
        }
    }
    Ok(out)
}

/// Semi-join (`anti`: anti-join): the rows of `lrows` that have (have no) row of `rrows` with
/// equal `keys` meeting `residual` (over the left row followed by the right one).
pub(super) fn semi_join(
    lrows: Vec<Row>,
    rrows: Vec<Row>,
    keys: &[(Expr, Expr)],
    residual: Option<&Expr>,
    anti: bool,
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
        let mut found = false;
        if let Some(k) = key(&lk, &lr, cx)? {
            if let Some(cands) = table.get(&k) {
                match residual {
                    None => found = true,
                    Some(e) => {
                        for &i in cands {
                            let mut row = Vec::with_capacity(lr.len() + rrows[i].len());
                            row.extend(lr.iter().cloned());
                            row.extend(rrows[i].iter().cloned());
                            if e.test(&row, cx)? {
                                found = true;
                                break;
                            }
                        }
                    }
                }
            }
        }
        if found != anti {
            out.push(lr);
        }
    }
    Ok(out)
}
