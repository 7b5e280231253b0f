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

/// The right input of a join hashed on its keys, probed with each left row's keys. Without
/// keys every right row is a candidate (a nested loop).
struct Hashed<'a> {
    lk: Vec<&'a Expr>,
    table: HashMap<Vec<Value>, Vec<usize>>,
    every: Option<Vec<usize>>,
}

impl<'a> Hashed<'a> {
    fn build(keys: &'a [(Expr, Expr)], rrows: &[Row], cx: &Ctx) -> Result<Self> {
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
        Ok(Hashed {
            lk: keys.iter().map(|k| &k.0).collect(),
            table,
            every: keys.is_empty().then(|| (0..rrows.len()).collect()),
        })
    }

    /// The right rows whose keys equal the left row's (none when one of its keys is NULL).
    fn probe(&self, lr: &[Value], cx: &Ctx) -> Result<&[usize]> {
        if let Some(every) = &self.every {
            return Ok(every);
        }
        Ok(match key(&self.lk, lr, cx)? {
            Some(k) => self.table.get(&k).map(Vec::as_slice).unwrap_or(&[]),
            None => &[],
        })
    }
}

/// Which rows without a match a join keeps, padded with NULLs for the other side.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Unmatched {
    /// Inner join: none.
    Drop,
    /// LEFT JOIN: the left rows.
    Left,
    /// FULL JOIN: the left rows, then the right rows.
    Both,
}

/// Joins `lrows` with `rrows` (`widths` = their column counts): the pairs meeting `on`
/// (candidates from a hash table on `keys` when there are any, else every pair), each
/// unmatched left row after its would-be pairs and the unmatched right rows at the end, as
/// `keep` says.
pub(super) fn hash_join(
    lrows: Vec<Row>,
    rrows: Vec<Row>,
    (lw, rw): (usize, usize),
    keys: &[(Expr, Expr)],
    on: Option<&Expr>,
    keep: Unmatched,
    cx: &Ctx,
) -> Result<Vec<Row>> {
    let hashed = Hashed::build(keys, &rrows, cx)?;
    let mut rmatched = vec![false; if keep == Unmatched::Both { rrows.len() } else { 0 }];
    let mut out = Vec::new();
    for lr in lrows {
        cx.check()?;
        let mut matched = false;
        for &i in hashed.probe(&lr, cx)? {
            cx.check()?;
            let mut row = Vec::with_capacity(lw + rw);
            row.extend(lr.iter().cloned());
            row.extend(rrows[i].iter().cloned());
            if on.map_or(Ok(true), |e| e.test(&row, cx))? {
                out.push(row);
                matched = true;
                if let Some(m) = rmatched.get_mut(i) {
                    *m = true;
                }
            }
        }
        if !matched && keep != Unmatched::Drop {
            let mut row = lr;
            row.extend(std::iter::repeat_n(Value::Null, rw));
            out.push(row);
        }
    }
    if keep == Unmatched::Both {
        for (r, m) in rrows.into_iter().zip(rmatched) {
            if !m {
                let mut row = Vec::with_capacity(lw + rw);
                row.extend(std::iter::repeat_n(Value::Null, lw));
                row.extend(r);
                out.push(row);
            }
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
    let hashed = Hashed::build(keys, &rrows, cx)?;
    let mut out = Vec::new();
    for lr in lrows {
        cx.check()?;
        let cands = hashed.probe(&lr, cx)?;
        let found = match residual {
            None => !cands.is_empty(),
            Some(e) => {
                let mut found = false;
                for &i in cands {
                    let mut row = Vec::with_capacity(lr.len() + rrows[i].len());
                    row.extend(lr.iter().cloned());
                    row.extend(rrows[i].iter().cloned());
                    if e.test(&row, cx)? {
                        found = true;
                        break;
                    }
                }
                found
            }
        };
        if found != anti {
            out.push(lr);
        }
    }
    Ok(out)
}
