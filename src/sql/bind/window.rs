//! Binding window functions (`f(...) OVER (PARTITION BY ... ORDER BY ... frame)`), allowed in
//! the select list and ORDER BY: each becomes an [`Expr::Window`] placeholder and a
//! [`WinSpec`] for the window step, which runs after grouping and HAVING.

use sqlparser::ast as A;

use super::select::sort_key;
use super::{unsupported, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Ty};
use crate::sql::plan::window::{Frame, FrameEdge, WinFunc, WinSpec};
use crate::sql::plan::{AggFunc, AggSpec};
use crate::types::Value;

impl Binder<'_> {
    pub(super) fn bind_window(
        &mut self,
        name: &str,
        f: &A::Function,
        args: &[&A::Expr],
        star: bool,
        distinct: bool,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let Some(A::WindowType::WindowSpec(w)) = &f.over else {
            return Err(unsupported("named windows"));
        };
        if w.window_name.is_some() {
            return Err(unsupported("named windows"));
        }
        if self.win_sink.is_none() {
            return Err(Error::new(
                SqlState("42P20"),
                format!("window functions are not allowed in {}", self.agg_ctx),
            ));
        }
        if distinct {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "DISTINCT is not implemented for window functions",
            ));
        }
        // Arguments, PARTITION BY and ORDER BY may hold aggregates but no window function.
        let sink = self.win_sink.take();
        let r = self.bind_window_parts(name, w, args, star, scope);
        self.win_sink = sink;
        let (spec, ty) = r?;
        let ws = self.win_sink.as_mut().expect("checked");
        let k = match ws.iter().position(|s| *s == spec) {
            Some(k) => k,
            None => {
                ws.push(spec);
                ws.len() - 1
            }
        };
        Ok((Expr::Window(k), ty))
    }

    fn bind_window_parts(
        &mut self,
        name: &str,
        w: &A::WindowSpec,
        args: &[&A::Expr],
        star: bool,
        scope: &Scope,
    ) -> Result<(WinSpec, Ty)> {
        let mut bound = Vec::new();
        for a in args {
            bound.push(self.bind_expr(a, scope)?);
        }
        let nargs = |lo: usize, hi: usize| -> Result<()> {
            if bound.len() < lo || bound.len() > hi || star {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("function {name} with {} arguments does not exist", bound.len()),
                ));
            }
            Ok(())
        };
        let agg = |func: AggFunc| AggSpec {
            func,
            arg: None,
            distinct: false,
            arg_ty: Ty::Int8,
        };
        let (func, ty) = match name {
            "row_number" | "rank" | "dense_rank" => {
                nargs(0, 0)?;
                let f = match name {
                    "row_number" => WinFunc::RowNumber,
                    "rank" => WinFunc::Rank,
                    _ => WinFunc::DenseRank,
                };
                (f, Ty::Int8)
            }
            "lag" | "lead" => {
                nargs(1, 3)?;
                let t = if bound[0].1 == Ty::Unknown {
                    Ty::Text
                } else {
                    bound[0].1
                };
                if bound.len() > 1 {
                    let (e, et) = bound[1].clone();
                    bound[1] = (self.coerce(e, et, Ty::Int8)?, Ty::Int8);
                }
                if bound.len() > 2 {
                    let (e, et) = bound[2].clone();
                    let (e, _) = self.cast_expr(e, et, t, None)?;
                    bound[2] = (e, t);
                }
                (WinFunc::Shift(name == "lag"), t)
            }
            "first_value" | "last_value" => {
                nargs(1, 1)?;
                let t = if bound[0].1 == Ty::Unknown {
                    Ty::Text
                } else {
                    bound[0].1
                };
                let f = if name == "first_value" {
                    WinFunc::FirstValue
                } else {
                    WinFunc::LastValue
                };
                (f, t)
            }
            "count" if star => (WinFunc::Agg(agg(AggFunc::CountStar)), Ty::Int8),
            "count" | "sum" | "avg" | "min" | "max" | "bool_and" | "bool_or" | "every" => {
                nargs(1, 1)?;
                let at = bound[0].1;
                let bad = || {
                    Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("function {name}({}) does not exist", at.name()),
                    )
                };
                let (func, ty) = match name {
                    "count" => (AggFunc::Count, Ty::Int8),
                    "sum" if at.is_int() => (AggFunc::Sum, Ty::Int8),
                    "sum" if at.is_num() => (AggFunc::Sum, Ty::Float8),
                    "avg" if at.is_num() => (AggFunc::Avg, Ty::Float8),
                    "min" | "max" => {
                        let f = if name == "min" { AggFunc::Min } else { AggFunc::Max };
                        (f, if at == Ty::Unknown { Ty::Text } else { at })
                    }
                    "bool_and" | "every" if at == Ty::Bool => (AggFunc::BoolAnd, Ty::Bool),
                    "bool_or" if at == Ty::Bool => (AggFunc::BoolOr, Ty::Bool),
                    _ => return Err(bad()),
                };
                let mut a = agg(func);
                a.arg = Some(bound[0].0.clone());
                a.arg_ty = at;
                (WinFunc::Agg(a), ty)
            }
            other => return Err(unsupported(format!("window function {other}"))),
        };
        let mut partition = Vec::new();
        for e in &w.partition_by {
            partition.push(self.bind_expr(e, scope)?.0);
        }
        let mut order = Vec::new();
        for o in &w.order_by {
            let e = self.bind_expr(&o.expr, scope)?.0;
            order.push(sort_key(e, &o.options));
        }
        let frame = match &w.window_frame {
            None => Frame::default(),
            Some(fr) => {
                let rows = match fr.units {
                    A::WindowFrameUnits::Rows => true,
                    A::WindowFrameUnits::Range => false,
                    A::WindowFrameUnits::Groups => return Err(unsupported("GROUPS frames")),
                };
                let start = self.frame_edge(&fr.start_bound, rows)?;
                let end = match &fr.end_bound {
                    Some(b) => self.frame_edge(b, rows)?,
                    None => FrameEdge::CurrentRow,
                };
                if matches!(start, FrameEdge::Following(None)) {
                    return Err(Error::new(
                        SqlState("42P20"),
                        "frame start cannot be UNBOUNDED FOLLOWING",
                    ));
                }
                if matches!(end, FrameEdge::Preceding(None)) {
                    return Err(Error::new(
                        SqlState("42P20"),
                        "frame end cannot be UNBOUNDED PRECEDING",
                    ));
                }
                Frame { rows, start, end }
            }
        };
        Ok((
            WinSpec {
                func,
                args: bound.into_iter().map(|b| b.0).collect(),
                partition,
                order,
                frame,
            },
            ty,
        ))
    }

    fn frame_edge(&mut self, b: &A::WindowFrameBound, rows: bool) -> Result<FrameEdge> {
        let off = |this: &mut Self, e: &Option<Box<A::Expr>>| -> Result<Option<u64>> {
            let Some(e) = e else { return Ok(None) };
            if !rows {
                return Err(unsupported("RANGE frames with an offset"));
            }
            let (x, _) = this.bind_noagg(e, &Scope::default(), "window frame")?;
            match x {
                Expr::Lit(Value::Int(i)) if i >= 0 => Ok(Some(i as u64)),
                Expr::Lit(Value::Int(_)) => Err(Error::new(
                    SqlState("22013"),
                    "frame starting offset must not be negative",
                )),
                _ => Err(unsupported("a frame offset that is not an integer constant")),
            }
        };
        Ok(match b {
            A::WindowFrameBound::CurrentRow => FrameEdge::CurrentRow,
            A::WindowFrameBound::Preceding(e) => FrameEdge::Preceding(off(self, e)?),
            A::WindowFrameBound::Following(e) => FrameEdge::Following(off(self, e)?),
        })
    }
}
