//! Binding window functions (`f(...) OVER (PARTITION BY ... ORDER BY ... frame)`, `OVER w` and
//! `OVER (w ...)` naming a window of the query's WINDOW clause), allowed in the select list and
//! ORDER BY: each becomes an [`Expr::Window`] placeholder and a [`WinSpec`] for the window
//! step, which runs after grouping and HAVING.

use sqlparser::ast as A;

use super::select::{order_value, sort_key};
use super::{ident, unsupported, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Ty};
use crate::sql::plan::window::{Frame, FrameEdge, Offset, Units, WinFunc, WinSpec};
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
        let w = match &f.over {
            Some(A::WindowType::WindowSpec(w)) => resolve_window(&self.windows, w)?,
            Some(A::WindowType::NamedWindow(n)) => named_window(&self.windows, &ident(n))?.clone(),
            None => return Err(Error::internal("window function without OVER")),
        };
        let w = &w;
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
        let saved_in = std::mem::replace(&mut self.in_window, true);
        let r = self.bind_window_parts(name, w, args, star, f.filter.as_deref(), scope);
        self.win_sink = sink;
        self.in_window = saved_in;
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
        filter: Option<&A::Expr>,
        scope: &Scope,
    ) -> Result<(WinSpec, Ty)> {
        let mut bound = Vec::new();
        // The functions that return their argument keep a varchar one's type (PostgreSQL's
        // anyelement); the others take it as text.
        let returns_arg = matches!(name, "lag" | "lead" | "first_value" | "last_value");
        for (i, a) in args.iter().enumerate() {
            bound.push(if i == 0 && returns_arg {
                self.bind_typed(a, scope)?
            } else {
                self.bind_expr(a, scope)?
            });
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
            order: vec![],
            filter: None,
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
                    // PostgreSQL: sum of int2/int4 is bigint, of bigint numeric.
                    "sum" if at == Ty::Int8 || at == Ty::Numeric => (AggFunc::Sum, Ty::Numeric),
                    "sum" if at.is_int() => (AggFunc::Sum, Ty::Int8),
                    "sum" | "avg" if at == Ty::Interval => {
                        let f = if name == "sum" { AggFunc::Sum } else { AggFunc::Avg };
                        (f, Ty::Interval)
                    }
                    "sum" if at.is_num() => (AggFunc::Sum, Ty::Float8),
                    "avg" if at.is_int() || at == Ty::Numeric => (AggFunc::Avg, Ty::Numeric),
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
        // `FILTER (WHERE ...)`: only the rows it is true for are aggregated; PostgreSQL has
        // it for aggregates used as window functions only.
        let func = match (func, filter) {
            (WinFunc::Agg(mut a), Some(w)) => {
                let (e, t) = self.bind_noagg(w, scope, "FILTER")?;
                a.filter = Some(self.require_bool(e, t, "FILTER")?);
                WinFunc::Agg(a)
            }
            (_, Some(_)) => {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    "FILTER is not implemented for non-aggregate window functions",
                ))
            }
            (f, None) => f,
        };
        // Arrays partition and order by their elements' values, not their text.
        let mut partition = Vec::new();
        for e in &w.partition_by {
            let (e, t) = self.bind_expr(e, scope)?;
            partition.push(order_value(e, t));
        }
        let mut order = Vec::new();
        let mut order_ty = Vec::new();
        for o in &w.order_by {
            let (e, t) = self.bind_expr(&o.expr, scope)?;
            order.push(sort_key(order_value(e, t), &o.options));
            order_ty.push(t);
        }
        let frame = match &w.window_frame {
            None => Frame::default(),
            Some(fr) => {
                let units = match fr.units {
                    A::WindowFrameUnits::Rows => Units::Rows,
                    A::WindowFrameUnits::Range => Units::Range,
                    A::WindowFrameUnits::Groups => Units::Groups,
                };
                let start = self.frame_edge(&fr.start_bound, units, &order_ty, "starting")?;
                let end = match &fr.end_bound {
                    Some(b) => self.frame_edge(b, units, &order_ty, "ending")?,
                    None => FrameEdge::CurrentRow,
                };
                let bad = |m: &str| Err(Error::new(SqlState("42P20"), m.to_string()));
                match (start, end) {
                    (FrameEdge::Following(None), _) => {
                        return bad("frame start cannot be UNBOUNDED FOLLOWING")
                    }
                    (_, FrameEdge::Preceding(None)) => return bad("frame end cannot be UNBOUNDED PRECEDING"),
                    (FrameEdge::CurrentRow, FrameEdge::Preceding(_)) => {
                        return bad("frame starting from current row cannot have preceding rows")
                    }
                    (FrameEdge::Following(_), FrameEdge::Preceding(_) | FrameEdge::CurrentRow) => {
                        return bad("frame starting from following row cannot have preceding rows")
                    }
                    _ => {}
                }
                if units == Units::Groups && order.is_empty() {
                    return bad("GROUPS mode requires an ORDER BY clause");
                }
                Frame { units, start, end }
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

    /// One end of a frame; `which` is "starting" or "ending" (for messages).
    fn frame_edge(
        &mut self,
        b: &A::WindowFrameBound,
        units: Units,
        order_ty: &[Ty],
        which: &str,
    ) -> Result<FrameEdge> {
        let (e, preceding) = match b {
            A::WindowFrameBound::CurrentRow => return Ok(FrameEdge::CurrentRow),
            A::WindowFrameBound::Preceding(e) => (e, true),
            A::WindowFrameBound::Following(e) => (e, false),
        };
        let off = match e {
            None => None,
            Some(e) if units == Units::Range => Some(self.range_offset(e, order_ty)?),
            Some(e) => {
                let (x, _) = self.bind_noagg(e, &Scope::default(), "window frame")?;
                Some(match x {
                    Expr::Lit(Value::Int(i)) if i >= 0 => Offset::Count(i as u64),
                    Expr::Lit(Value::Int(_)) => {
                        return Err(Error::new(
                            SqlState("22013"),
                            format!("frame {which} offset must not be negative"),
                        ))
                    }
                    _ => return Err(unsupported("a frame offset that is not an integer constant")),
                })
            }
        };
        Ok(if preceding {
            FrameEdge::Preceding(off)
        } else {
            FrameEdge::Following(off)
        })
    }

    /// A RANGE offset: a distance in the type of the only ORDER BY key, a number for a numeric
    /// key, an interval of days or smaller units (`'1 day'`, `interval '2 hours'`) for a date
    /// or timestamp key.
    fn range_offset(&mut self, e: &A::Expr, order_ty: &[Ty]) -> Result<Offset> {
        let &[kt] = order_ty else {
            return Err(Error::new(
                SqlState("42P20"),
                "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column",
            ));
        };
        let bad_size = || {
            Error::new(
                SqlState("22013"),
                "invalid preceding or following size in window function",
            )
        };
        let not_for = |offset_ty: &str| {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {offset_ty}",
                    kt.name()
                ),
            )
        };
        if kt.is_datetime() {
            return match e {
                A::Expr::Interval(iv) if iv.leading_field.is_none() && iv.last_field.is_none() => {
                    match iv.value.as_ref() {
                        A::Expr::Value(A::ValueWithSpan {
                            value: A::Value::SingleQuotedString(s),
                            ..
                        }) => {
                            let (months, micros) = interval_parts(s)?;
                            // PostgreSQL's sign test: a month counts as 30 days.
                            if (months as i128) * 30 * 86_400_000_000 + (micros as i128) < 0 {
                                return Err(bad_size());
                            }
                            Ok(Offset::Interval { months, micros })
                        }
                        _ => Err(unsupported("this interval form as a RANGE offset")),
                    }
                }
                A::Expr::Interval(_) => Err(unsupported("this interval form as a RANGE offset")),
                e => {
                    let t = self.bind_noagg(e, &Scope::default(), "window frame")?.1;
                    Err(not_for(t.name()))
                }
            };
        }
        if !kt.is_num() {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!(
                    "RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}",
                    kt.name()
                ),
            ));
        }
        if matches!(e, A::Expr::Interval(_)) {
            return Err(not_for("interval"));
        }
        if kt == Ty::Numeric {
            return Err(unsupported(
                "RANGE with offset PRECEDING/FOLLOWING over a numeric column",
            ));
        }
        let (x, t) = self.bind_noagg(e, &Scope::default(), "window frame")?;
        // A decimal literal (numeric) is a float8 offset for a float8 key, as PostgreSQL's
        // implicit cast makes it.
        let x = match x {
            Expr::Lit(Value::Numeric(d)) if kt == Ty::Float8 => {
                Expr::Lit(Value::Float(crate::types::numeric::to_f64(d)))
            }
            x => x,
        };
        match x {
            Expr::Lit(Value::Int(i)) if i < 0 => Err(bad_size()),
            Expr::Lit(Value::Int(i)) if kt == Ty::Float8 => Ok(Offset::Float(i as f64)),
            Expr::Lit(Value::Int(i)) => Ok(Offset::Int(i)),
            Expr::Lit(Value::Float(f)) if kt == Ty::Float8 => {
                if f < 0.0 || f.is_nan() {
                    return Err(bad_size());
                }
                Ok(Offset::Float(f))
            }
            Expr::Lit(Value::Float(_)) => Err(not_for("numeric")),
            Expr::Lit(_) => Err(not_for(t.name())),
            _ => Err(unsupported("a RANGE offset that is not a constant")),
        }
    }

    /// The named windows of a WINDOW clause, each resolved against those before it.
    pub(super) fn named_windows(
        &self,
        defs: &[A::NamedWindowDefinition],
    ) -> Result<Vec<(String, A::WindowSpec)>> {
        let mut out: Vec<(String, A::WindowSpec)> = Vec::new();
        for A::NamedWindowDefinition(name, def) in defs {
            let n = ident(name);
            if out.iter().any(|(m, _)| *m == n) {
                return Err(Error::new(
                    SqlState("42P20"),
                    format!("window \"{n}\" is already defined"),
                ));
            }
            let spec = match def {
                A::NamedWindowExpr::WindowSpec(w) => resolve_window(&out, w)?,
                A::NamedWindowExpr::NamedWindow(_) => return Err(unsupported("WINDOW name AS name")),
            };
            out.push((n, spec));
        }
        Ok(out)
    }
}

/// The window named `name` (42704 if the query's WINDOW clause has none).
fn named_window<'w>(windows: &'w [(String, A::WindowSpec)], name: &str) -> Result<&'w A::WindowSpec> {
    windows
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, w)| w)
        .ok_or_else(|| Error::new(SqlState("42704"), format!("window \"{name}\" does not exist")))
}

/// A window specification with the named window it starts from (`OVER (w ORDER BY x)`) copied
/// in, by PostgreSQL's rules: the copy keeps the named window's PARTITION BY and ORDER BY and
/// may add an ORDER BY and a frame, but not override either clause, and a window with a frame
/// cannot be copied.
fn resolve_window(windows: &[(String, A::WindowSpec)], w: &A::WindowSpec) -> Result<A::WindowSpec> {
    let Some(base) = &w.window_name else {
        return Ok(w.clone());
    };
    let b = ident(base);
    let named = named_window(windows, &b)?;
    let refuse = |m: String| Err(Error::new(SqlState("42P20"), m));
    if !w.partition_by.is_empty() {
        return refuse(format!("cannot override PARTITION BY clause of window \"{b}\""));
    }
    if !w.order_by.is_empty() && !named.order_by.is_empty() {
        return refuse(format!("cannot override ORDER BY clause of window \"{b}\""));
    }
    if named.window_frame.is_some() {
        return refuse(format!(
            "cannot copy window \"{b}\" because it has a frame clause"
        ));
    }
    Ok(A::WindowSpec {
        window_name: None,
        partition_by: named.partition_by.clone(),
        order_by: if w.order_by.is_empty() {
            named.order_by.clone()
        } else {
            w.order_by.clone()
        },
        window_frame: w.window_frame.clone(),
    })
}

/// An interval literal (`'1 day'`, `'2 hours 30 minutes'`, `'1 year 2 months'`) as calendar
/// months and microseconds. As in PostgreSQL, a fraction of a year is whole months and a
/// fraction of a month is 30-day days.
fn interval_parts(s: &str) -> Result<(i64, i64)> {
    let bad = || {
        Error::new(
            SqlState("22007"),
            format!("invalid input syntax for type interval: \"{s}\""),
        )
    };
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.is_empty() || !words.len().is_multiple_of(2) {
        return Err(bad());
    }
    let mut total = 0f64;
    let mut months = 0f64;
    for pair in words.chunks(2) {
        let n: f64 = pair[0].parse().map_err(|_| bad())?;
        if !n.is_finite() {
            return Err(bad());
        }
        let unit = pair[1].to_ascii_lowercase();
        let month_count = match unit.trim_end_matches('s') {
            "month" | "mon" => Some(n),
            "year" | "yr" => Some((n * 12.0).round_ties_even()),
            _ => None,
        };
        if let Some(k) = month_count {
            months += k.trunc();
            total += k.fract() * 30.0 * 86_400e6;
            continue;
        }
        let per = match unit.trim_end_matches('s') {
            "microsecond" | "usec" => 1.0,
            "millisecond" | "msec" => 1e3,
            "second" | "sec" => 1e6,
            "minute" | "min" => 60e6,
            "hour" | "hr" => 3600e6,
            "day" => 86_400e6,
            "week" => 604_800e6,
            _ => return Err(bad()),
        };
        total += n * per;
    }
    if !total.is_finite() || total.abs() >= 9.2e18 || months.abs() >= 2.0e9 {
        return Err(bad());
    }
    Ok((months as i64, total.round() as i64))
}
