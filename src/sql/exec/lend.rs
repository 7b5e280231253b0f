//! Lent results: a query that reads one table through its access path and selects plain
//! columns (a point read, a key range with LIMIT) hands each row's values to the caller
//! borrowed from the stored row, without building owned rows; any other plan runs as usual and
//! its rows are lent from the materialized result. A point read by a bigint parameter
//! ([`PointLend`]) goes straight to the engine's read, without the executor's set-up.

use super::{int_key, limit_of, read_access, run, stop_count, Lent};
use crate::error::{Error, Result};
use crate::seam::prelude::*;
use crate::sql::expr::{Ctx, Expr, Ty};
use crate::sql::plan::{Access, Plan, Scan};
use crate::types::{DataType, Key, Row, RowRef, Value, ValueRef};

/// Columns a lent row carries on the stack; wider select lists use a vector per row.
const STACK_COLS: usize = 8;

/// Runs `plan`, lending each result row to `f` (in the plan's order); returns how many rows.
pub fn lend(plan: &Plan, cx: &Ctx, f: &mut dyn FnMut(&[ValueRef<'_>]) -> Result<()>) -> Result<u64> {
    if let Some(shape) = Shape::of(plan) {
        return shape.lend(cx, f);
    }
    lend_rows(&run(plan, cx)?, f)
}

/// Whether `lend` reads `plan`'s rows in place from its one table's access path (a plan that
/// takes no row locks and writes nothing).
pub fn lends_in_place(plan: &Plan) -> bool {
    Shape::of(plan).is_some()
}

/// A prepared `SELECT columns FROM t WHERE pk = $n` on a one-column integer primary key,
/// found once when the statement is planned. Run with a bigint parameter, it reads the row
/// with one engine call and lends its columns, as the general path would (the same key
/// conversion, the same row, the same columns), without building an executor, evaluating
/// expressions or walking the plan per run.
pub struct PointLend {
    table: AnyTable,
    key_ty: DataType,
    param: usize,
    /// The select list, each an `Expr::Col`.
    cols: Vec<Expr>,
}

impl PointLend {
    /// The point read `plan` is, if it has that shape (no filter, LIMIT or subquery).
    pub fn of(plan: &Plan, subplans: &[Plan]) -> Option<PointLend> {
        let shape = Shape::of(plan)?;
        let s = shape.scan;
        if shape.limit.is_some() || s.stop_after.is_some() || !subplans.is_empty() {
            return None;
        }
        let Access::Point(vals) = &s.access else {
            return None;
        };
        let [Expr::Param(param, Ty::Int8)] = vals.as_slice() else {
            return None;
        };
        let [c] = s.def.primary_key.as_slice() else {
            return None;
        };
        let key_ty = s.def.columns[*c].ty;
        if !key_ty.is_integer() {
            return None;
        }
        let cols = match shape.cols {
            Some(c) => c.to_vec(),
            None => (0..s.def.columns.len()).map(Expr::Col).collect(),
        };
        Some(PointLend {
            table: s.table.clone(),
            key_ty,
            param: *param,
            cols,
        })
    }

    /// This run's key parameter, if it is a bigint (otherwise the general path converts it).
    pub fn key_param(&self, params: &[Value]) -> Option<i64> {
        match params.get(self.param) {
            Some(Value::Int(x)) => Some(*x),
            _ => None,
        }
    }

    /// Reads the row of key `x` (from [`PointLend::key_param`]) in `tx` and lends its columns
    /// to `f`; returns how many rows (0 or 1).
    pub fn lend(&self, tx: &AnyTxn, x: i64, f: &mut dyn FnMut(&[ValueRef<'_>]) -> Result<()>) -> Result<u64> {
        self.lend_by(x, |key| {
            tx.get_with(&self.table, key, |row| lend_row(row, &self.cols, f))
        })
    }

    /// [`PointLend::lend`] outside a transaction: an autocommit read of the newest committed
    /// row, without a transaction's set-up ([`Engine::get_with`]).
    pub fn lend_now(
        &self,
        db: &AnyEngine,
        x: i64,
        f: &mut dyn FnMut(&[ValueRef<'_>]) -> Result<()>,
    ) -> Result<u64> {
        self.lend_by(x, |key| {
            db.get_with(&self.table, key, |row| lend_row(row, &self.cols, f))
        })
    }

    /// Key `x` converted to the key column's type, read by `read` (which lends the row);
    /// returns how many rows (0 or 1).
    fn lend_by(&self, x: i64, read: impl FnOnce(&Key) -> Result<Option<Result<()>>>) -> Result<u64> {
        // A value outside the key column's type (an int4 key read by 2^40) matches no row.
        let Some(k) = int_key(x, self.key_ty) else {
            return Ok(0);
        };
        read(&Key::Int(k))?.transpose().map(|r| r.map_or(0, |()| 1))
    }
}

/// Lends materialized rows to `f`, each as its values borrowed; returns how many rows.
pub fn lend_rows(rows: &[Row], f: &mut dyn FnMut(&[ValueRef<'_>]) -> Result<()>) -> Result<u64> {
    let mut refs = Vec::new();
    for r in rows {
        refs.clear();
        refs.extend(r.iter().map(Value::as_value_ref));
        f(&refs)?;
    }
    Ok(rows.len() as u64)
}

/// A plan that can lend stored rows: `[Limit] [Project(columns)] Scan`, the scan without a
/// residual filter.
struct Shape<'p> {
    scan: &'p Scan,
    /// The select list, every expression a column (`Expr::Col`); None: every column.
    cols: Option<&'p [Expr]>,
    limit: Option<(&'p Option<Expr>, &'p Option<Expr>)>,
}

impl<'p> Shape<'p> {
    fn of(plan: &'p Plan) -> Option<Shape<'p>> {
        let (plan, limit) = match plan {
            Plan::Limit { input, limit, offset } => (input.as_ref(), Some((limit, offset))),
            p => (p, None),
        };
        let (plan, cols) = match plan {
            Plan::Project(input, exprs) if exprs.iter().all(|e| matches!(e, Expr::Col(_))) => {
                (input.as_ref(), Some(exprs.as_slice()))
            }
            Plan::Project(..) => return None,
            p => (p, None),
        };
        match plan {
            Plan::Scan(scan) if scan.filter.is_none() => Some(Shape { scan, cols, limit }),
            _ => None,
        }
    }

    fn lend(&self, cx: &Ctx, f: &mut dyn FnMut(&[ValueRef<'_>]) -> Result<()>) -> Result<u64> {
        let (limit, offset) = match self.limit {
            Some((l, o)) => (limit_of(l, cx, "LIMIT")?, limit_of(o, cx, "OFFSET")?.unwrap_or(0)),
            None => (None, 0),
        };
        let stop = stop_count(self.scan, cx)?;
        if stop == Some(0) || limit == Some(0) {
            return Ok(0);
        }
        let all: Vec<Expr>;
        let cols = match self.cols {
            Some(c) => c,
            None => {
                all = (0..self.scan.def.columns.len()).map(Expr::Col).collect();
                &all
            }
        };
        let (mut seen, mut sent) = (0u64, 0u64);
        read_access(self.scan, cx, stop, &mut |_, lent| {
            cx.check()?;
            seen += 1;
            if seen > offset {
                let row = match lent {
                    Lent::Ref(r) => r,
                    Lent::Shared(r) => RowRef::values(r),
                };
                lend_row(row, cols, f)?;
                sent += 1;
            }
            Ok(stop.is_none_or(|m| seen < m) && limit.is_none_or(|l| sent < l))
        })?;
        Ok(sent)
    }
}

/// Lends columns `cols` (each an `Expr::Col`) of `row` (a stored row shorter than its table
/// reads NULL past its end).
fn lend_row(row: RowRef<'_>, cols: &[Expr], f: &mut dyn FnMut(&[ValueRef<'_>]) -> Result<()>) -> Result<()> {
    let value = |e: &Expr| match e {
        Expr::Col(c) => Ok(row.get(*c)?.unwrap_or(ValueRef::Null)),
        _ => Err(Error::internal("a lent row selects columns only")),
    };
    if cols.len() <= STACK_COLS {
        let mut vals = [ValueRef::Null; STACK_COLS];
        for (slot, e) in vals.iter_mut().zip(cols) {
            *slot = value(e)?;
        }
        f(&vals[..cols.len()])
    } else {
        let vals = cols.iter().map(value).collect::<Result<Vec<_>>>()?;
        f(&vals)
    }
}
