//! The window step: for each window function, the input rows are ordered by PARTITION BY then
//! ORDER BY keys (a stable sort, so ties keep their input order), split into partitions and
//! peer groups (rows equal in the ORDER BY keys), and each row gets the function's value over
//! its frame. Aggregates over frames that start at the partition's first row are computed
//! incrementally; other frames are aggregated row by row.

use std::cmp::Ordering;

use super::{compare_rows, Acc};
use crate::error::{Error, Result};
use crate::sql::expr::Ctx;
use crate::sql::plan::window::{FrameEdge, WinFunc, WinSpec};
use crate::types::{Row, Value};

pub(super) fn window(rows: Vec<Row>, specs: &[WinSpec], cx: &Ctx) -> Result<Vec<Row>> {
    let mut extra: Vec<Vec<Value>> = vec![Vec::with_capacity(specs.len()); rows.len()];
    for spec in specs {
        let vals = one(&rows, spec, cx)?;
        for (e, v) in extra.iter_mut().zip(vals) {
            e.push(v);
        }
    }
    Ok(rows
        .into_iter()
        .zip(extra)
        .map(|(mut r, e)| {
            r.extend(e);
            r
        })
        .collect())
}

fn eval_all(exprs: &[crate::sql::expr::Expr], row: &[Value], cx: &Ctx) -> Result<Vec<Value>> {
    exprs.iter().map(|e| e.eval(row, cx)).collect()
}

/// The values of one window function, in input row order.
fn one(rows: &[Row], spec: &WinSpec, cx: &Ctx) -> Result<Vec<Value>> {
    let n = rows.len();
    let order_exprs: Vec<_> = spec.order.iter().map(|k| k.expr.clone()).collect();
    let mut part = Vec::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    let mut args = Vec::with_capacity(n);
    for r in rows {
        cx.check()?;
        part.push(eval_all(&spec.partition, r, cx)?);
        keys.push(eval_all(&order_exprs, r, cx)?);
        args.push(eval_all(&spec.args, r, cx)?);
    }
    let pflags = vec![(false, false); spec.partition.len()];
    let oflags: Vec<(bool, bool)> = spec.order.iter().map(|k| (k.desc, k.nulls_first)).collect();
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| {
        compare_rows(&part[a], &part[b], &pflags).then_with(|| compare_rows(&keys[a], &keys[b], &oflags))
    });
    cx.check_now()?;
    let mut out = vec![Value::Null; n];
    let mut s = 0;
    while s < n {
        let mut e = s + 1;
        while e < n && compare_rows(&part[idx[s]], &part[idx[e]], &pflags) == Ordering::Equal {
            e += 1;
        }
        partition(&idx[s..e], &keys, &oflags, &args, spec, &mut out)?;
        s = e;
    }
    Ok(out)
}

fn offset(v: &Value, what: &str) -> Result<Option<i64>> {
    match v {
        Value::Null => Ok(None),
        Value::Int(i) => Ok(Some(*i)),
        other => Err(Error::mismatch(format!(
            "{what} offset must be an integer, got {}",
            other.type_name()
        ))),
    }
}

/// Fills `out` for the rows `p` (positions in input order) of one partition, in window order.
fn partition(
    p: &[usize],
    keys: &[Vec<Value>],
    oflags: &[(bool, bool)],
    args: &[Vec<Value>],
    spec: &WinSpec,
    out: &mut [Value],
) -> Result<()> {
    let m = p.len();
    // Peer groups: [peer_start[i], peer_end[i]) and the group number of each position.
    let mut peer_start = vec![0; m];
    let mut peer_end = vec![0; m];
    let mut group = vec![0usize; m];
    let mut i = 0;
    let mut g = 0;
    while i < m {
        let mut j = i + 1;
        while j < m && compare_rows(&keys[p[i]], &keys[p[j]], oflags) == Ordering::Equal {
            j += 1;
        }
        for k in i..j {
            peer_start[k] = i;
            peer_end[k] = j;
            group[k] = g;
        }
        g += 1;
        i = j;
    }
    let f = &spec.frame;
    let bounds = |i: usize| -> (usize, usize) {
        let start = match f.start {
            FrameEdge::Preceding(None) => 0,
            FrameEdge::Preceding(Some(k)) => i.saturating_sub(k as usize),
            FrameEdge::CurrentRow if f.rows => i,
            FrameEdge::CurrentRow => peer_start[i],
            FrameEdge::Following(Some(k)) => (i + k as usize).min(m),
            FrameEdge::Following(None) => m,
        };
        let end = match f.end {
            FrameEdge::Following(None) => m,
            FrameEdge::Following(Some(k)) => (i + k as usize + 1).min(m),
            FrameEdge::CurrentRow if f.rows => i + 1,
            FrameEdge::CurrentRow => peer_end[i],
            FrameEdge::Preceding(Some(k)) => (i + 1).saturating_sub(k as usize),
            FrameEdge::Preceding(None) => 0,
        };
        (start, end.max(start))
    };
    match &spec.func {
        WinFunc::RowNumber => (0..m).for_each(|i| out[p[i]] = Value::Int(i as i64 + 1)),
        WinFunc::Rank => (0..m).for_each(|i| out[p[i]] = Value::Int(peer_start[i] as i64 + 1)),
        WinFunc::DenseRank => (0..m).for_each(|i| out[p[i]] = Value::Int(group[i] as i64 + 1)),
        WinFunc::Shift(lag) => {
            for i in 0..m {
                let a = &args[p[i]];
                let Some(k) = (match a.get(1) {
                    Some(v) => offset(v, if *lag { "lag" } else { "lead" })?,
                    None => Some(1),
                }) else {
                    out[p[i]] = Value::Null;
                    continue;
                };
                let j = if *lag { i as i64 - k } else { i as i64 + k };
                out[p[i]] = if j >= 0 && (j as usize) < m {
                    args[p[j as usize]][0].clone()
                } else {
                    a.get(2).cloned().unwrap_or(Value::Null)
                };
            }
        }
        WinFunc::FirstValue | WinFunc::LastValue => {
            let first = spec.func == WinFunc::FirstValue;
            for i in 0..m {
                let (s, e) = bounds(i);
                out[p[i]] = if s >= e {
                    Value::Null
                } else if first {
                    args[p[s]][0].clone()
                } else {
                    args[p[e - 1]][0].clone()
                };
            }
        }
        WinFunc::Agg(a) => {
            let arg = |j: usize| args[p[j]].first().cloned().unwrap_or(Value::Null);
            if f.start == FrameEdge::Preceding(None) {
                let mut acc = Acc::new(a);
                let mut upto = 0;
                for i in 0..m {
                    let (_, e) = bounds(i);
                    while upto < e {
                        acc.add(a, arg(upto));
                        upto += 1;
                    }
                    out[p[i]] = acc.clone().finish(a)?;
                }
            } else {
                for i in 0..m {
                    let (s, e) = bounds(i);
                    let mut acc = Acc::new(a);
                    for j in s..e {
                        acc.add(a, arg(j));
                    }
                    out[p[i]] = acc.finish(a)?;
                }
            }
        }
    }
    Ok(())
}
