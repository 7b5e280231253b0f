//! The window step: for each window function, the input rows are ordered by PARTITION BY then
//! ORDER BY keys (a stable sort, so ties keep their input order), split into partitions and
//! peer groups (rows equal in the ORDER BY keys), and each row gets the function's value over
//! its frame (ROWS, RANGE with or without offsets, GROUPS). Aggregates over frames that start
//! at the partition's first row are computed incrementally; other frames are aggregated row by
//! row.

use std::cmp::Ordering;

use super::{compare_rows, Acc};
use crate::error::{Error, Result};
use crate::sql::expr::Ctx;
use crate::sql::plan::window::{Frame, FrameEdge, Offset, Units, WinFunc, WinSpec};
use crate::types::{add_months, Row, Value};

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
    // An aggregate's FILTER: whether each row is aggregated.
    let filter = match &spec.func {
        WinFunc::Agg(a) => a.filter.as_ref(),
        _ => None,
    };
    let mut kept = Vec::with_capacity(if filter.is_some() { n } else { 0 });
    for r in rows {
        cx.check()?;
        part.push(eval_all(&spec.partition, r, cx)?);
        keys.push(eval_all(&order_exprs, r, cx)?);
        args.push(eval_all(&spec.args, r, cx)?);
        if let Some(f) = filter {
            kept.push(f.test(r, cx)?);
        }
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
        partition(&idx[s..e], &keys, &oflags, &args, &kept, spec, &mut out)?;
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
/// `kept` (empty without a FILTER): whether each row passes the aggregate's FILTER.
fn partition(
    p: &[usize],
    keys: &[Vec<Value>],
    oflags: &[(bool, bool)],
    args: &[Vec<Value>],
    kept: &[bool],
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
    let peers = Peers {
        start: &peer_start,
        end: &peer_end,
        group: &group,
    };
    let fr = frames(f, p, keys, oflags, &peers);
    let bounds = |i: usize| fr[i];
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
            let add = |acc: &mut Acc, j: usize| match kept.get(p[j]) {
                Some(false) => Ok(()),
                _ => acc.add(a, arg(j)),
            };
            if f.start == FrameEdge::Preceding(None) {
                let mut acc = Acc::new(a);
                let mut upto = 0;
                for i in 0..m {
                    let (_, e) = bounds(i);
                    while upto < e {
                        add(&mut acc, upto)?;
                        upto += 1;
                    }
                    out[p[i]] = acc.clone().finish(a)?;
                }
            } else {
                for i in 0..m {
                    let (s, e) = bounds(i);
                    let mut acc = Acc::new(a);
                    for j in s..e {
                        add(&mut acc, j)?;
                    }
                    out[p[i]] = acc.finish(a)?;
                }
            }
        }
    }
    Ok(())
}

/// The peer groups of a partition's rows (positions in window order): each row's group's
/// [start, end) and the group's number.
struct Peers<'a> {
    start: &'a [usize],
    end: &'a [usize],
    group: &'a [usize],
}

/// A row's value of the first ORDER BY key (NULL without ORDER BY).
fn first_key(keys: &[Vec<Value>], row: usize) -> &Value {
    static NULL: Value = Value::Null;
    keys[row].first().unwrap_or(&NULL)
}

/// PostgreSQL's in_range: whether `val` is at least (`less`: at most) `base` plus (`sub`:
/// minus) `off`; exact for integers, dates and timestamps (in microseconds), in doubles
/// otherwise.
fn in_range(val: &Value, base: &Value, off: Offset, sub: bool, less: bool) -> bool {
    fn exact(v: &Value) -> Option<i128> {
        Some(match v {
            Value::Int(i) | Value::Timestamp(i) | Value::TimestampTz(i) => *i as i128,
            Value::Date(d) => *d as i128 * 86_400_000_000,
            _ => return None,
        })
    }
    fn double(v: &Value) -> Option<f64> {
        match v {
            Value::Float(f) => Some(*f),
            v => exact(v).map(|i| i as f64),
        }
    }
    if let Offset::Interval { months, micros } = off {
        if months != 0 {
            // Calendar months first, then the rest, as timestamp +/- interval does.
            let (Some(v), Some(b)) = (exact(val), exact(base)) else {
                return false;
            };
            let Some(shifted) = add_months(b as i64, if sub { -months } else { months }) else {
                // Past the calendar's end (or before its start): every value lies before it
                // (after it).
                let forward = (months > 0) != sub;
                return less == forward;
            };
            let t = shifted as i128 + if sub { -(micros as i128) } else { micros as i128 };
            return if less { v <= t } else { v >= t };
        }
    }
    let exact_off = match off {
        Offset::Count(c) => Some(c as i128),
        Offset::Int(i) | Offset::Interval { micros: i, .. } => Some(i as i128),
        Offset::Float(_) => None,
    };
    if let (Some(v), Some(b), Some(o)) = (exact(val), exact(base), exact_off) {
        let t = if sub { b - o } else { b + o };
        return if less { v <= t } else { v >= t };
    }
    let o = match off {
        Offset::Float(f) => f,
        Offset::Count(c) => c as f64,
        Offset::Int(i) | Offset::Interval { micros: i, .. } => i as f64,
    };
    match (double(val), double(base)) {
        (Some(v), Some(b)) => {
            let t = if sub { b - o } else { b + o };
            if less {
                v <= t
            } else {
                v >= t
            }
        }
        _ => false,
    }
}

/// Each row's frame [start, end) in window order, by PostgreSQL's rules (nodeWindowAgg.c's
/// update_frameheadpos / update_frametailpos): ROWS offsets count rows, GROUPS offsets count
/// peer groups, RANGE offsets compare the only ORDER BY key with the current row's plus or
/// minus the offset (a NULL key is in range only of NULL keys); RANGE ends only move forward
/// as the current row does.
fn frames(
    f: &Frame,
    p: &[usize],
    keys: &[Vec<Value>],
    oflags: &[(bool, bool)],
    peers: &Peers<'_>,
) -> Vec<(usize, usize)> {
    let m = p.len();
    let ngroups = peers.group.last().map_or(0, |g| g + 1);
    let mut gfirst = vec![0usize; ngroups];
    let mut gend = vec![0usize; ngroups];
    for ((&g, &s), &e) in peers.group.iter().zip(peers.start).zip(peers.end) {
        gfirst[g] = s;
        gend[g] = e;
    }
    let (desc, nulls_first) = oflags.first().copied().unwrap_or((false, false));
    let (mut head, mut tail) = (0usize, 0usize);
    let mut out = Vec::with_capacity(m);
    for i in 0..m {
        let cur = first_key(keys, p[i]);
        let start = match f.start {
            FrameEdge::Preceding(None) => 0,
            FrameEdge::Following(None) => m,
            FrameEdge::CurrentRow if f.units == Units::Rows => i,
            FrameEdge::CurrentRow => peers.start[i],
            FrameEdge::Preceding(Some(o)) | FrameEdge::Following(Some(o)) => {
                let preceding = matches!(f.start, FrameEdge::Preceding(_));
                match (f.units, o) {
                    (Units::Rows, Offset::Count(k)) if preceding => i.saturating_sub(k as usize),
                    (Units::Rows, Offset::Count(k)) => i.saturating_add(k as usize).min(m),
                    (Units::Groups, Offset::Count(k)) if preceding => {
                        gfirst[peers.group[i].saturating_sub(k as usize)]
                    }
                    (Units::Groups, Offset::Count(k)) => {
                        let g = peers.group[i].saturating_add(k as usize);
                        if g < ngroups {
                            gfirst[g]
                        } else {
                            m
                        }
                    }
                    (_, o) => {
                        // The first row at or past the current key minus (plus) the offset.
                        let (sub, less) = if desc {
                            (!preceding, true)
                        } else {
                            (preceding, false)
                        };
                        while head < m {
                            let h = first_key(keys, p[head]);
                            let stop = if h.is_null() || cur.is_null() {
                                if nulls_first {
                                    !h.is_null() || cur.is_null()
                                } else {
                                    h.is_null() || !cur.is_null()
                                }
                            } else {
                                in_range(h, cur, o, sub, less)
                            };
                            if stop {
                                break;
                            }
                            head += 1;
                        }
                        head
                    }
                }
            }
        };
        let end = match f.end {
            FrameEdge::Following(None) => m,
            FrameEdge::Preceding(None) => 0,
            FrameEdge::CurrentRow if f.units == Units::Rows => i + 1,
            FrameEdge::CurrentRow => peers.end[i],
            FrameEdge::Preceding(Some(o)) | FrameEdge::Following(Some(o)) => {
                let preceding = matches!(f.end, FrameEdge::Preceding(_));
                match (f.units, o) {
                    (Units::Rows, Offset::Count(k)) if preceding => (i + 1).saturating_sub(k as usize),
                    (Units::Rows, Offset::Count(k)) => i.saturating_add(k as usize).saturating_add(1).min(m),
                    (Units::Groups, Offset::Count(k)) if preceding => {
                        match peers.group[i].checked_sub(k as usize) {
                            Some(g) => gend[g],
                            None => 0,
                        }
                    }
                    (Units::Groups, Offset::Count(k)) => {
                        let g = peers.group[i].saturating_add(k as usize);
                        if g < ngroups {
                            gend[g]
                        } else {
                            m
                        }
                    }
                    (_, o) => {
                        // The row after the last one at or before the current key plus (minus)
                        // the offset.
                        let (sub, less) = if desc {
                            (!preceding, false)
                        } else {
                            (preceding, true)
                        };
                        while tail < m {
                            let t = first_key(keys, p[tail]);
                            let stop = if t.is_null() || cur.is_null() {
                                if nulls_first {
                                    !t.is_null()
                                } else {
                                    !cur.is_null()
                                }
                            } else {
                                !in_range(t, cur, o, sub, less)
                            };
                            if stop {
                                break;
                            }
                            tail += 1;
                        }
                        tail
                    }
                }
            }
        };
        out.push((start, end.max(start)));
    }
    out
}
