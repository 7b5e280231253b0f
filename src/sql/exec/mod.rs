//! Plan execution over a transaction. Rows are materialized between operators; scans that
//! read the primary key in the query's order stop as soon as LIMIT is satisfied.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

use super::expr::{cast, Ctx, Expr, SubResult, Ty};
use super::plan::join::hash_keys;
use super::plan::{Access, AggFunc, AggSpec, ArrayCols, Plan, Scan, SortKey};
use crate::error::{Error, Result, SqlState};
use crate::index::keyed::IndexKind;
use crate::seam::{prelude::*, Interrupt, KeyRange, TableDef};
use crate::types::codec::encode_key_values;
use crate::types::{numeric, DataType, Decimal, Interval, Json, Key, Row, RowRef, Value};

mod aggregate;
mod hash_join;
mod lend;
mod recursive;
mod set_op;
mod subquery;
mod window;

use aggregate::Acc;
pub use lend::{lend, lend_rows, lends_in_place, PointLend};

/// A subquery's number and argument values.
type SubKey = (usize, Vec<Value>);

/// Runs plans (and their subqueries) for one statement.
pub struct Exec<'a> {
    pub tx: &'a AnyTxn,
    pub params: &'a [Value],
    pub subplans: &'a [Plan],
    pub now: Clock,
    /// When the statement must stop (57014): statement_timeout, a cancel request.
    pub stop: &'a Interrupt,
    /// Subquery results by (subquery, argument values): see `subquery.rs`.
    cache: RefCell<HashMap<SubKey, Arc<SubResult>>>,
    /// The current round's rows of each recursive CTE being run.
    work: RefCell<HashMap<usize, Arc<Vec<Row>>>>,
}

/// The times a statement's date/time functions read, fixed for the statement: `now()`,
/// `current_timestamp` and `transaction_timestamp()` give the transaction's start (the
/// statement's outside a transaction block), `statement_timestamp()` the statement's.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    pub txn: i64,
    pub stmt: i64,
}

impl<'a> Exec<'a> {
    pub fn new(
        tx: &'a AnyTxn,
        params: &'a [Value],
        subplans: &'a [Plan],
        now: Clock,
        stop: &'a Interrupt,
    ) -> Exec<'a> {
        Exec {
            tx,
            params,
            subplans,
            now,
            stop,
            cache: RefCell::new(HashMap::new()),
            work: RefCell::new(HashMap::new()),
        }
    }

    pub fn ctx(&'a self) -> Ctx<'a> {
        self.ctx_with(Vec::new())
    }

    /// A context whose [`crate::sql::expr::Expr::Outer`] references read `outer`.
    fn ctx_with(&'a self, outer: Vec<Value>) -> Ctx<'a> {
        Ctx {
            tx: self.tx,
            params: self.params,
            subs: self,
            now: self.now.txn,
            stmt_now: self.now.stmt,
            outer,
            stop: self.stop,
            ticks: std::cell::Cell::new(0),
        }
    }
}

/// The value to look up for a key column of type `dt`, or None when no stored key can equal it.
pub fn key_value(v: Value, dt: DataType) -> Result<Option<Value>> {
    Ok(match (v, dt) {
        (Value::Null, _) => None,
        (Value::Int(i), t) if t.is_integer() => int_key(i, t).map(Value::Int),
        (Value::Float(f), t) if t.is_integer() => {
            if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 {
                return key_value(Value::Int(f as i64), t);
            }
            None
        }
        (Value::Numeric(d), t) if t.is_integer() => match numeric::to_i64(d) {
            Some(i) if d.is_integer() => return key_value(Value::Int(i), t),
            _ => None,
        },
        // A `numeric(p, s)` column stores values rounded to its scale: a value that rounds
        // differently (or overflows the precision) equals none of them.
        (v, DataType::Numeric(Some((p, s)))) => match cast(v, Ty::Numeric, None)? {
            Value::Numeric(d) => match numeric::apply_typmod(d, u32::from(p), u32::from(s)) {
                Ok(r) if r == d => Some(Value::Numeric(r)),
                _ => None,
            },
            _ => None,
        },
        // A `character(n)` key is stored blank-padded to n: a probe is compared without its
        // trailing blanks, so it matches the stored key padded the same way; one longer than
        // n (blanks aside) matches none.
        (Value::Text(s), DataType::Bpchar(Some(n))) => {
            let s = s.trim_end_matches(' ');
            (s.chars().count() <= n as usize).then(|| Value::Text(crate::types::bpchar_pad(s.to_string(), n)))
        }
        (v, t) => match cast(v, Ty::from_dt(t), None) {
            Ok(v) => Some(v),
            Err(e) if e.sqlstate() == SqlState::NUMERIC_OUT_OF_RANGE => None,
            Err(e) => return Err(e),
        },
    })
}

/// Integer `i` as a key of integer column type `t`, or None when it lies outside the type
/// (then no row has it).
#[inline]
pub fn int_key(i: i64, t: DataType) -> Option<i64> {
    let ok = match t {
        DataType::Int2 => i16::try_from(i).is_ok(),
        DataType::Int4 => i32::try_from(i).is_ok(),
        _ => true,
    };
    ok.then_some(i)
}

/// The primary key for key column values, or None when no row can have it.
pub fn make_key(def: &TableDef, vals: Vec<Value>) -> Result<Option<Key>> {
    match <[Value; 1]>::try_from(vals) {
        Ok([v]) => make_key_of_one(def, v),
        Err(vals) => key_of_values(def, vals),
    }
}

/// [`make_key`] by the general path: each value converted to its key column's type.
fn key_of_values(def: &TableDef, vals: Vec<Value>) -> Result<Option<Key>> {
    let mut out = Vec::with_capacity(vals.len());
    for (v, &c) in vals.into_iter().zip(&def.primary_key) {
        match key_value(v, def.columns[c].ty)? {
            Some(v) => out.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some(def.key_from_values(&out)?))
}

/// [`make_key`] for a one-column key, without a vector when it is an integer (ALEX's keys).
fn make_key_of_one(def: &TableDef, v: Value) -> Result<Option<Key>> {
    if let ([c], Value::Int(_)) = (def.primary_key.as_slice(), &v) {
        let ty = def.columns[*c].ty;
        if ty.is_integer() {
            let Some(Value::Int(i)) = key_value(v, ty)? else {
                return Ok(None);
            };
            return Ok(Some(Key::Int(i)));
        }
    }
    key_of_values(def, vec![v])
}

/// A conservative bound value for a range over a column of type `dt` (the predicate is
/// re-checked): None means the range is empty (a NULL bound).
fn bound_value(v: Value, dt: DataType, lo: bool, inclusive: bool) -> Result<Option<(Value, bool)>> {
    Ok(match (v, dt) {
        (Value::Null, _) => None,
        (Value::Float(f), t) if t.is_integer() => {
            if f.is_nan() {
                return Ok(None);
            }
            let r = if lo { f.floor() } else { f.ceil() };
            let r = r.clamp(i64::MIN as f64, i64::MAX as f64);
            Some((Value::Int(r as i64), true))
        }
        (Value::Int(i), t) if t.is_integer() => Some((Value::Int(i), inclusive)),
        (Value::Numeric(d), t) if t.is_integer() => {
            let r = if lo { numeric::floor(d) } else { numeric::ceil(d) };
            let i = numeric::to_i64(r).unwrap_or(if r.is_sign_negative() { i64::MIN } else { i64::MAX });
            Some((Value::Int(i), true))
        }
        (v, t) => match cast(v, Ty::from_dt(t), None) {
            Ok(v) => Some((v, inclusive)),
            Err(e) if e.sqlstate() == SqlState::NUMERIC_OUT_OF_RANGE => None,
            Err(e) => return Err(e),
        },
    })
}

/// Evaluates an optional range bound over a column of type `dt` into a `Bound` of `mk(value)`;
/// `None` when the bound makes the range empty.
fn eval_bound<T>(
    b: &Option<(Expr, bool)>,
    dt: DataType,
    lower: bool,
    cx: &Ctx,
    mk: impl Fn(Value) -> T,
) -> Result<Option<Bound<T>>> {
    let Some((e, inc)) = b else {
        return Ok(Some(Bound::Unbounded));
    };
    Ok(bound_value(eval_const(e, cx)?, dt, lower, *inc)?.map(|(v, inc)| {
        if inc {
            Bound::Included(mk(v))
        } else {
            Bound::Excluded(mk(v))
        }
    }))
}

fn eval_const(e: &Expr, cx: &Ctx) -> Result<Value> {
    e.eval(&[], cx)
}

fn limit_of(e: &Option<Expr>, cx: &Ctx, what: &str) -> Result<Option<u64>> {
    let Some(e) = e else { return Ok(None) };
    match eval_const(e, cx)? {
        Value::Null => Ok(None),
        Value::Int(i) if i < 0 => Err(Error::new(
            SqlState(if what == "LIMIT" { "2201W" } else { "2201X" }),
            format!("{what} must not be negative"),
        )),
        Value::Int(i) => Ok(Some(i as u64)),
        v => Err(Error::mismatch(format!(
            "argument of {what} must be an integer, got {}",
            v.type_name()
        ))),
    }
}

/// The primary-key range of an `Access::Range` scan; None when it is empty (a NULL bound, or
/// a lower bound above the upper one).
fn key_range(
    s: &Scan,
    lo: &Option<(Expr, bool)>,
    hi: &Option<(Expr, bool)>,
    cx: &Ctx,
) -> Result<Option<KeyRange>> {
    let def = &s.def;
    let col = def.primary_key[0];
    let dt = def.columns[col].ty;
    let alex = def.key_kind() == IndexKind::Alex;
    let mk = |v: Value| -> Key {
        match (alex, v) {
            (true, v) if v.int_key().is_some() => Key::Int(v.int_key().unwrap_or_default()),
            (_, v) => Key::Bytes(encode_key_values(&[v])),
        }
    };
    // An empty lower bound ends the scan before the upper one is evaluated.
    let Some(l) = eval_bound(lo, dt, true, cx, mk)? else {
        return Ok(None);
    };
    let Some(h) = eval_bound(hi, dt, false, cx, mk)? else {
        return Ok(None);
    };
    let range = KeyRange { lo: l, hi: h };
    if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
        (&range.lo, &range.hi)
    {
        if a > b {
            return Ok(None);
        }
    }
    Ok(Some(range))
}

/// A row as an access path hands it over: lent in place by the engine (`scan_with`,
/// `get_with`), or shared (the decoded rows of a secondary-index scan).
enum Lent<'r> {
    Ref(RowRef<'r>),
    Shared(&'r Arc<Row>),
}

/// At most how many rows passing its filter a scan delivers: LIMIT + OFFSET when the scan's
/// order is the query's, else no bound.
fn stop_count(s: &Scan, cx: &Ctx) -> Result<Option<u64>> {
    Ok(match &s.stop_after {
        Some((l, o)) => match limit_of(l, cx, "LIMIT")? {
            Some(l) => Some(l.saturating_add(limit_of(o, cx, "OFFSET")?.unwrap_or(0))),
            None => None,
        },
        None => None,
    })
}

/// Visits the rows of a scan that pass its filter (in key order for key accesses), until `f`
/// returns false or the scan's stop count is reached.
pub fn scan_rows(s: &Scan, cx: &Ctx, f: &mut dyn FnMut(&Key, &Arc<Row>) -> Result<bool>) -> Result<()> {
    let stop = stop_count(s, cx)?;
    if stop == Some(0) {
        return Ok(());
    }
    let mut n = 0u64;
    read_access(s, cx, stop, &mut |k, lent| {
        cx.check()?;
        let owned;
        let r: &Arc<Row> = match lent {
            Lent::Shared(r) => r,
            Lent::Ref(r) => {
                owned = Arc::new(r.to_row()?);
                &owned
            }
        };
        if let Some(flt) = &s.filter {
            if !flt.test(r, cx)? {
                return Ok(true);
            }
        }
        n += 1;
        if !f(k, r)? {
            return Ok(false);
        }
        Ok(stop.is_none_or(|m| n < m))
    })
}

/// A select list over a single-table scan (and a plain scan, as the list of all its columns).
/// Each row is read in place and only the columns the filter and the list use are copied out,
/// into one scratch row reused from row to row; a column the list names once, as itself, moves
/// from there into the output row. Per row this allocates the output row and its text and
/// bytes values only (decoding each row into a shared row, then projecting a copy of it, made
/// three more allocations and the copies per row).
fn project_scan(s: &Scan, exprs: &[Expr], cx: &Ctx) -> Result<Vec<Row>> {
    let stop = stop_count(s, cx)?;
    let mut out = Vec::new();
    if stop == Some(0) {
        return Ok(out);
    }
    let width = s.def.columns.len();
    // Per column: how often the select list reads it, and FILTER when the filter does.
    const FILTER: u32 = 1 << 31;
    let mut uses = vec![0u32; width];
    for e in exprs {
        e.walk(&mut |x| {
            if let Expr::Col(c) = x {
                if let Some(u) = uses.get_mut(*c) {
                    *u += 1;
                }
            }
        });
    }
    if let Some(flt) = &s.filter {
        flt.walk(&mut |x| {
            if let Expr::Col(c) = x {
                if let Some(u) = uses.get_mut(*c) {
                    *u |= FILTER;
                }
            }
        });
    }
    let read = uses.iter().rposition(|&u| u != 0).map_or(0, |i| i + 1);
    let mut scratch: Row = vec![Value::Null; width];
    let mut n = 0u64;
    read_access(s, cx, stop, &mut |_, lent| {
        cx.check()?;
        let row = match lent {
            Lent::Ref(r) => r,
            Lent::Shared(r) => RowRef::values(r),
        };
        // A stored row shorter than the table reads as NULL past its end.
        let mut vals = row.iter();
        for (slot, &u) in scratch.iter_mut().zip(&uses).take(read) {
            let v = vals.next().transpose()?;
            if u != 0 {
                *slot = v.map_or(Value::Null, |v| v.to_value());
            }
        }
        if let Some(flt) = &s.filter {
            if !flt.test(&scratch, cx)? {
                return Ok(true);
            }
        }
        n += 1;
        let mut o = Vec::with_capacity(exprs.len());
        for e in exprs {
            o.push(match e {
                // Read by nothing else of the select list (the filter has run): moved.
                Expr::Col(c) if uses.get(*c).is_some_and(|&u| (u & !FILTER) == 1) => {
                    std::mem::replace(&mut scratch[*c], Value::Null)
                }
                e => e.eval(&scratch, cx)?,
            });
        }
        out.push(o);
        Ok(stop.is_none_or(|m| n < m))
    })?;
    Ok(out)
}

/// Reads the rows a scan's access path selects, before its filter (in key order for key
/// accesses), lending each to `f` until it returns false.
fn read_access(
    s: &Scan,
    cx: &Ctx,
    stop: Option<u64>,
    f: &mut dyn FnMut(&Key, Lent<'_>) -> Result<bool>,
) -> Result<()> {
    let tx = cx.tx;
    let def = &s.def;
    // Without a filter, the scan's stop count (`stop_count`, which the caller passes) is the
    // rows it reads: the engine reads ahead no further (`scan_first`).
    let scan = |range: &KeyRange, f: &mut dyn FnMut(&Key, Lent<'_>) -> Result<bool>| -> Result<()> {
        match stop.filter(|_| s.filter.is_none()) {
            Some(n) => tx.scan_first(&s.table, range, s.reverse, n as usize, |k, r| f(k, Lent::Ref(r))),
            None => tx.scan_with(&s.table, range, s.reverse, |k, r| f(k, Lent::Ref(r))),
        }
    };
    match &s.access {
        Access::Full => scan(&KeyRange::all(), f),
        Access::Point(vals) => {
            let key = match vals.as_slice() {
                [e] => make_key_of_one(def, eval_const(e, cx)?)?,
                _ => make_key(
                    def,
                    vals.iter().map(|e| eval_const(e, cx)).collect::<Result<_>>()?,
                )?,
            };
            if let Some(k) = key {
                tx.get_with(&s.table, &k, |r| f(&k, Lent::Ref(r)))?.transpose()?;
            }
            Ok(())
        }
        Access::In(list) => {
            let mut keys = Vec::new();
            for e in list {
                if let Some(k) = make_key(def, vec![eval_const(e, cx)?])? {
                    keys.push(k);
                }
            }
            keys.sort();
            keys.dedup();
            if s.reverse {
                keys.reverse();
            }
            for k in keys {
                let go = tx.get_with(&s.table, &k, |r| f(&k, Lent::Ref(r)))?.transpose()?;
                if go == Some(false) {
                    break;
                }
            }
            Ok(())
        }
        Access::Range { lo, hi } => match key_range(s, lo, hi, cx)? {
            Some(range) => scan(&range, f),
            None => Ok(()),
        },
        Access::Prefix(vals) => {
            let mut vs = Vec::new();
            for (e, &c) in vals.iter().zip(&def.primary_key) {
                match key_value(eval_const(e, cx)?, def.columns[c].ty)? {
                    Some(v) => vs.push(v),
                    None => return Ok(()),
                }
            }
            let p = encode_key_values(&vs);
            let mut end = p.clone();
            end.push(0xFF);
            let range = KeyRange {
                lo: Bound::Included(Key::Bytes(p)),
                hi: Bound::Excluded(Key::Bytes(end)),
            };
            scan(&range, f)
        }
        Access::Index { index, eq, lo, hi } => {
            let idx = &def.indexes[*index];
            let (lo_b, hi_b): (Bound<Vec<u8>>, Bound<Vec<u8>>) = if !eq.is_empty() {
                let mut vs = Vec::new();
                for (e, &c) in eq.iter().zip(&idx.columns) {
                    match key_value(eval_const(e, cx)?, def.columns[c].ty)? {
                        Some(v) => vs.push(v),
                        None => return Ok(()),
                    }
                }
                let b = encode_key_values(&vs);
                (Bound::Included(b.clone()), Bound::Included(b))
            } else {
                let dt = def.columns[idx.columns[0]].ty;
                let enc = |v: Value| encode_key_values(&[v]);
                let Some(l) = eval_bound(lo, dt, true, cx, enc)? else {
                    return Ok(());
                };
                let Some(h) = eval_bound(hi, dt, false, cx, enc)? else {
                    return Ok(());
                };
                (l, h)
            };
            let rows = tx.index_scan_in(&s.table, *index, bytes_bound(&lo_b), bytes_bound(&hi_b))?;
            for (k, r) in rows {
                if !f(&k, Lent::Shared(&r))? {
                    break;
                }
            }
            Ok(())
        }
    }
}

fn bytes_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

pub fn compare_rows(a: &[Value], b: &[Value], keys: &[(bool, bool)]) -> Ordering {
    for (i, &(desc, nulls_first)) in keys.iter().enumerate() {
        let (x, y) = (&a[i], &b[i]);
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => {
                if nulls_first {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (false, true) => {
                if nulls_first {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            _ => {
                let o = x.total_cmp(y);
                if desc {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// An array value (of type `ty`) as the bytes it is compared by
/// ([`crate::types::array::sort_key`]); any other value as it is.
pub(super) fn array_key(v: &Value, ty: Ty) -> Result<Value> {
    match (v, ty) {
        (Value::Text(s), Ty::Array(e)) => Ok(Value::Bytes(crate::types::array::sort_key(s, e.to_dt())?)),
        (v, _) => Ok(v.clone()),
    }
}

/// The values a row is told apart by for DISTINCT and GROUP BY: its array columns as their
/// sort keys.
pub(super) fn distinct_key(row: &[Value], arrays: &ArrayCols) -> Result<Row> {
    let mut key = row.to_vec();
    for &(i, ty) in arrays {
        key[i] = array_key(&row[i], ty)?;
    }
    Ok(key)
}

fn sort(rows: Vec<Row>, keys: &[SortKey], cx: &Ctx) -> Result<Vec<Row>> {
    let mut dec: Vec<(Vec<Value>, Row)> = Vec::with_capacity(rows.len());
    for r in rows {
        cx.check()?;
        let k = keys
            .iter()
            .map(|k| k.expr.eval(&r, cx))
            .collect::<Result<Vec<_>>>()?;
        dec.push((k, r));
    }
    let flags: Vec<(bool, bool)> = keys.iter().map(|k| (k.desc, k.nulls_first)).collect();
    dec.sort_by(|a, b| compare_rows(&a.0, &b.0, &flags));
    cx.check_now()?;
    Ok(dec.into_iter().map(|(_, r)| r).collect())
}

/// Runs a plan to completion.
pub fn run(plan: &Plan, cx: &Ctx) -> Result<Vec<Row>> {
    Ok(match plan {
        Plan::Values(rows) => rows
            .iter()
            .map(|r| {
                cx.check()?;
                r.iter().map(|e| e.eval(&[], cx)).collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?,
        Plan::Scan(s) => {
            let all: Vec<Expr> = (0..s.def.columns.len()).map(Expr::Col).collect();
            project_scan(s, &all, cx)?
        }
        Plan::Join {
            left,
            right,
            left_join,
            on,
            lookup,
        } => {
            let lrows = run(left, cx)?;
            let mut out = Vec::new();
            match lookup {
                Some(l) => {
                    let rw = l.def.columns.len();
                    for lr in lrows {
                        cx.check()?;
                        let kv = l.key.eval(&lr, cx)?;
                        let mut matched = false;
                        let found: Vec<Arc<Row>> = match l.index {
                            None => match make_key(&l.def, vec![kv])? {
                                Some(k) => cx.tx.get_in(&l.table, &k)?.into_iter().collect(),
                                None => Vec::new(),
                            },
                            Some(ix) => {
                                let col = l.def.indexes[ix].columns[0];
                                match key_value(kv, l.def.columns[col].ty)? {
                                    Some(v) => {
                                        let b = encode_key_values(&[v]);
                                        let (lo, hi) = (Bound::Included(&b[..]), Bound::Included(&b[..]));
                                        let rows = cx.tx.index_scan_in(&l.table, ix, lo, hi)?;
                                        rows.into_iter().map(|(_, r)| r).collect()
                                    }
                                    None => Vec::new(),
                                }
                            }
                        };
                        for r in found {
                            let mut row = lr.clone();
                            row.extend(r.iter().cloned());
                            if on.as_ref().map_or(Ok(true), |e| e.test(&row, cx))? {
                                out.push(row);
                                matched = true;
                            }
                        }
                        if !matched && *left_join {
                            let mut row = lr;
                            row.extend(std::iter::repeat_n(Value::Null, rw));
                            out.push(row);
                        }
                    }
                }
                None => {
                    let rrows = run(right, cx)?;
                    let rw = right.width();
                    if let Some(on) = on {
                        let keys = hash_keys(on, left.width());
                        if !keys.is_empty() {
                            let keep = if *left_join {
                                hash_join::Unmatched::Left
                            } else {
                                hash_join::Unmatched::Drop
                            };
                            let widths = (left.width(), rw);
                            return hash_join::hash_join(lrows, rrows, widths, &keys, Some(on), keep, cx);
                        }
                    }
                    for lr in lrows {
                        let mut matched = false;
                        for rr in &rrows {
                            cx.check()?;
                            let mut row = Vec::with_capacity(lr.len() + rr.len());
                            row.extend(lr.iter().cloned());
                            row.extend(rr.iter().cloned());
                            if on.as_ref().map_or(Ok(true), |e| e.test(&row, cx))? {
                                out.push(row);
                                matched = true;
                            }
                        }
                        if !matched && *left_join {
                            let mut row = lr;
                            row.extend(std::iter::repeat_n(Value::Null, rw));
                            out.push(row);
                        }
                    }
                }
            }
            out
        }
        Plan::FullJoin { left, right, on } => {
            let lrows = run(left, cx)?;
            let rrows = run(right, cx)?;
            let (lw, rw) = (left.width(), right.width());
            let keys = on.as_ref().map(|e| hash_keys(e, lw)).unwrap_or_default();
            hash_join::hash_join(
                lrows,
                rrows,
                (lw, rw),
                &keys,
                on.as_ref(),
                hash_join::Unmatched::Both,
                cx,
            )?
        }
        Plan::SemiJoin {
            left,
            right,
            keys,
            residual,
            anti,
        } => {
            let lrows = run(left, cx)?;
            let rrows = run(right, cx)?;
            hash_join::semi_join(lrows, rrows, keys, residual.as_ref(), *anti, cx)?
        }
        Plan::Filter(p, e) => {
            let rows = run(p, cx)?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                cx.check()?;
                if e.test(&r, cx)? {
                    out.push(r);
                }
            }
            out
        }
        Plan::Aggregate {
            input,
            groups,
            aggs,
            array_groups,
        } => {
            let rows = run(input, cx)?;
            let mut index: HashMap<Vec<Value>, usize> = HashMap::new();
            let mut states: Vec<(Vec<Value>, Vec<Acc>)> = Vec::new();
            if groups.is_empty() {
                states.push((vec![], aggs.iter().map(Acc::new).collect()));
            }
            for r in &rows {
                cx.check()?;
                let g = groups.iter().map(|e| e.eval(r, cx)).collect::<Result<Vec<_>>>()?;
                let i = if groups.is_empty() {
                    0
                } else {
                    let key = if array_groups.is_empty() {
                        None
                    } else {
                        Some(distinct_key(&g, array_groups)?)
                    };
                    match index.get(key.as_ref().unwrap_or(&g)).copied() {
                        Some(i) => i,
                        None => {
                            states.push((g.clone(), aggs.iter().map(Acc::new).collect()));
                            index.insert(key.unwrap_or(g), states.len() - 1);
                            states.len() - 1
                        }
                    }
                };
                let st = &mut states[i].1;
                for (a, spec) in st.iter_mut().zip(aggs) {
                    if let Some(f) = &spec.filter {
                        if !f.test(r, cx)? {
                            continue;
                        }
                    }
                    let v = match &spec.arg {
                        Some(e) => e.eval(r, cx)?,
                        None => Value::Null,
                    };
                    if spec.func.keeps_order() && !spec.order.is_empty() {
                        let keys = spec
                            .order
                            .iter()
                            .map(|k| k.expr.eval(r, cx))
                            .collect::<Result<Vec<_>>>()?;
                        a.add_keyed(v, keys);
                    } else {
                        a.add(spec, v)?;
                    }
                }
            }
            let mut out = Vec::with_capacity(states.len());
            for (g, accs) in states {
                let mut row = g;
                for (a, spec) in accs.into_iter().zip(aggs) {
                    row.push(a.finish(spec)?);
                }
                out.push(row);
            }
            out
        }
        Plan::IndexMinMax { scan, max } => {
            let pk = scan.def.primary_key[0];
            let mut s = scan.clone();
            s.reverse = *max;
            let mut best = Value::Null;
            scan_rows(&s, cx, &mut |_, r| {
                best = r[pk].clone();
                Ok(false)
            })?;
            vec![vec![best]]
        }
        Plan::IndexCount { scan } => {
            // Without a residual filter the rows need not be read: the primary index and the
            // payloads' visibility give the count (`Transaction::count_in`).
            let unfiltered = scan.filter.is_none() && scan.stop_after.is_none();
            let n = match &scan.access {
                Access::Full if unfiltered => cx.tx.count_in(&scan.table, &KeyRange::all(), || cx.check())?,
                Access::Range { lo, hi } if unfiltered => match key_range(scan, lo, hi, cx)? {
                    Some(r) => cx.tx.count_in(&scan.table, &r, || cx.check())?,
                    None => 0,
                },
                _ => {
                    let mut n = 0u64;
                    scan_rows(scan, cx, &mut |_, _| {
                        n += 1;
                        Ok(true)
                    })?;
                    n
                }
            };
            vec![vec![Value::Int(n as i64)]]
        }
        Plan::Project(p, exprs) => {
            // Over a scan, straight from the rows as the engine lends them.
            if let Plan::Scan(s) = p.as_ref() {
                return project_scan(s, exprs, cx);
            }
            let rows = run(p, cx)?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                cx.check()?;
                out.push(exprs.iter().map(|e| e.eval(&r, cx)).collect::<Result<Vec<_>>>()?);
            }
            out
        }
        Plan::Distinct(p, arrays) => {
            let rows = run(p, cx)?;
            cx.check_now()?;
            let mut seen = HashSet::new();
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let key = if arrays.is_empty() {
                    r.clone()
                } else {
                    distinct_key(&r, arrays)?
                };
                if seen.insert(key) {
                    out.push(r);
                }
            }
            out
        }
        Plan::Sort(p, keys) => sort(run(p, cx)?, keys, cx)?,
        Plan::Limit { input, limit, offset } => {
            let l = limit_of(limit, cx, "LIMIT")?;
            let o = limit_of(offset, cx, "OFFSET")?.unwrap_or(0);
            let rows = run(input, cx)?;
            rows.into_iter()
                .skip(o as usize)
                .take(l.map_or(usize::MAX, |l| l as usize))
                .collect()
        }
        Plan::SetOp {
            kind,
            all,
            left,
            right,
            arrays,
        } => {
            let l = run(left, cx)?;
            let r = run(right, cx)?;
            cx.check_now()?;
            set_op::set_op(*kind, *all, l, r, arrays)?
        }
        Plan::Recursive {
            id,
            base,
            step,
            distinct,
        } => recursive::recursive(*id, base, step, *distinct, cx)?,
        Plan::WorkTable { id, .. } => cx.subs.work_table(*id).as_ref().clone(),
        Plan::Window { input, specs } => window::window(run(input, cx)?, specs, cx)?,
        Plan::ProjectSet { input, srfs } => crate::sql::plan::srf::project_set(run(input, cx)?, srfs, cx)?,
        Plan::Lateral {
            left,
            sub,
            names,
            on,
            outer,
        } => subquery::lateral(left, sub, names.len(), on.as_ref(), *outer, cx)?,
    })
}
