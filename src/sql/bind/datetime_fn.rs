//! Binding the date/time functions (`EXTRACT`, `date_part`, `date_trunc`, `AT TIME ZONE` /
//! `timezone`, `make_*`, `age`, `justify_*`, `to_timestamp`, `to_date`, `to_char`,
//! `isfinite`) with PostgreSQL 15's argument types and result types; they run in
//! `expr::datetime_fn`.

use sqlparser::ast as A;

use super::{Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{ArOp, DtFn, Expr, Func, Ty};
use crate::types::Value;

fn call(f: DtFn, args: Vec<Expr>, ty: Ty) -> (Expr, Ty) {
    (Expr::Func(Func::Datetime(f), args, ty), ty)
}

fn ambiguous(name: &str, types: &[Ty]) -> Error {
    let t: Vec<&str> = types.iter().map(|t| t.name()).collect();
    Error::new(
        SqlState("42725"),
        format!("function {name}({}) is not unique", t.join(", ")),
    )
}

impl Binder<'_> {
    /// `EXTRACT(field FROM x)`: numeric.
    pub(super) fn bind_extract(
        &mut self,
        field: &A::DateTimeField,
        x: &A::Expr,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let unit = match field {
            A::DateTimeField::Custom(i) => i.value.clone(),
            f => f.to_string(),
        };
        let x = self.bind_expr(x, scope)?;
        let unit = (Expr::Lit(Value::Text(unit)), Ty::Text);
        self.datetime_func("extract", &mut vec![unit, x])?
            .ok_or_else(|| Error::internal("extract"))
    }

    /// `x AT TIME ZONE zone`.
    pub(super) fn bind_at_time_zone(
        &mut self,
        x: &A::Expr,
        zone: &A::Expr,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let x = self.bind_expr(x, scope)?;
        let zone = self.bind_expr(zone, scope)?;
        self.datetime_func("timezone", &mut vec![zone, x])?
            .ok_or_else(|| Error::internal("timezone"))
    }

    /// `make_interval(years, months, weeks, days, hours, mins, secs)`, by position or by name
    /// (`make_interval(days => 10)`), the omitted ones 0.
    pub(super) fn bind_make_interval(
        &mut self,
        args: &A::FunctionArguments,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        const NAMES: [&str; 7] = ["years", "months", "weeks", "days", "hours", "mins", "secs"];
        let mut slots: [Option<(Expr, Ty)>; 7] = Default::default();
        let list: &[A::FunctionArg] = match args {
            A::FunctionArguments::List(l) if l.clauses.is_empty() && l.duplicate_treatment.is_none() => {
                &l.args
            }
            A::FunctionArguments::None => &[],
            _ => return Err(super::unsupported("this form of make_interval")),
        };
        let undefined = || {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                "function make_interval with these arguments does not exist",
            )
        };
        let mut named = false;
        for (pos, a) in list.iter().enumerate() {
            let (slot, e) = match a {
                A::FunctionArg::Unnamed(A::FunctionArgExpr::Expr(e)) if !named => (pos, e),
                A::FunctionArg::Named {
                    name,
                    arg: A::FunctionArgExpr::Expr(e),
                    ..
                }
                | A::FunctionArg::ExprNamed {
                    name: A::Expr::Identifier(name),
                    arg: A::FunctionArgExpr::Expr(e),
                    ..
                } => {
                    named = true;
                    let n = super::ident(name);
                    (NAMES.iter().position(|x| *x == n).ok_or_else(undefined)?, e)
                }
                _ => return Err(undefined()),
            };
            if slot >= 7 || slots[slot].is_some() {
                return Err(undefined());
            }
            slots[slot] = Some(self.bind_expr(e, scope)?);
        }
        let mut out = Vec::with_capacity(7);
        for (i, s) in slots.into_iter().enumerate() {
            let (e, t) = s.unwrap_or((Expr::Lit(Value::Int(0)), Ty::Int4));
            let to = if i == 6 { Ty::Float8 } else { Ty::Int4 };
            let ok = t == Ty::Unknown || t.is_int() || (i == 6 && t.is_num());
            if !ok {
                return Err(undefined());
            }
            out.push(self.coerce(e, t, to)?);
        }
        Ok(call(DtFn::MakeInterval, out, Ty::Interval))
    }

    /// The date/time function `name` of `args`, or None when `name` is no such function.
    pub(super) fn datetime_func(
        &mut self,
        name: &str,
        args: &mut Vec<(Expr, Ty)>,
    ) -> Result<Option<(Expr, Ty)>> {
        let types: Vec<Ty> = args.iter().map(|a| a.1).collect();
        let undefined = || {
            let t: Vec<&str> = types.iter().map(|t| t.name()).collect();
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", t.join(", ")),
            )
        };
        let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown | Ty::Bpchar | Ty::Varchar);
        let n = args.len();
        macro_rules! to {
            ($i:expr, $ty:expr) => {{
                let (e, t) = args[$i].clone();
                args[$i] = (self.coerce(e, t, $ty)?, $ty);
            }};
        }
        macro_rules! text {
            ($i:expr) => {{
                if !texty(args[$i].1) {
                    return Err(undefined());
                }
                to!($i, Ty::Text);
            }};
        }
        macro_rules! ints {
            ($($i:expr),*) => {{
                $( if !(args[$i].1.is_int() || args[$i].1 == Ty::Unknown) { return Err(undefined()); } to!($i, Ty::Int4); )*
            }};
        }
        let exprs = |args: &mut Vec<(Expr, Ty)>| args.drain(..).map(|a| a.0).collect::<Vec<_>>();
        let r = match (name, n) {
            ("extract" | "date_part", 2) => {
                text!(0);
                match types[1] {
                    Ty::Date | Ty::Timestamp | Ty::TimestampTz | Ty::Interval | Ty::Time => {}
                    Ty::Unknown => return Err(ambiguous(name, &types)),
                    _ => return Err(undefined()),
                }
                let (f, ty) = if name == "extract" {
                    (DtFn::Extract, Ty::Numeric)
                } else {
                    (DtFn::DatePart, Ty::Float8)
                };
                call(f, exprs(args), ty)
            }
            ("date_trunc", 2 | 3) => {
                text!(0);
                let ty = match types[1] {
                    Ty::Timestamp | Ty::Interval if n == 2 => types[1],
                    // A time truncates as an interval (PostgreSQL's implicit cast).
                    Ty::Time if n == 2 => Ty::Interval,
                    Ty::Date | Ty::TimestampTz => Ty::TimestampTz,
                    Ty::Unknown if n == 3 => Ty::TimestampTz,
                    Ty::Unknown => return Err(ambiguous(name, &types)),
                    _ => return Err(undefined()),
                };
                to!(1, ty);
                if n == 3 {
                    // In a zone: truncated as the zone's local time.
                    let zone = self.zone_arg(args[2].clone(), &undefined)?;
                    let (x, unit) = (args[1].0.clone(), args[0].0.clone());
                    let local = call(DtFn::ZoneToLocal, vec![zone.clone(), x], Ty::Timestamp).0;
                    let t = call(DtFn::DateTrunc, vec![unit, local], Ty::Timestamp).0;
                    return Ok(Some(call(DtFn::LocalToZone, vec![zone, t], Ty::TimestampTz)));
                }
                call(DtFn::DateTrunc, exprs(args), ty)
            }
            ("timezone", 2) => {
                let zone = self.zone_arg(args[0].clone(), &undefined)?;
                let (f, from, ty) = match types[1] {
                    Ty::Timestamp => (DtFn::LocalToZone, Ty::Timestamp, Ty::TimestampTz),
                    Ty::TimestampTz | Ty::Date | Ty::Unknown => {
                        (DtFn::ZoneToLocal, Ty::TimestampTz, Ty::Timestamp)
                    }
                    _ => return Err(undefined()),
                };
                to!(1, from);
                call(f, vec![zone, args[1].0.clone()], ty)
            }
            ("make_date", 3) => {
                ints!(0, 1, 2);
                call(DtFn::MakeDate, exprs(args), Ty::Date)
            }
            ("make_time", 3) => {
                ints!(0, 1);
                if !(types[2].is_num() || types[2] == Ty::Unknown) {
                    return Err(undefined());
                }
                to!(2, Ty::Float8);
                call(DtFn::MakeTime, exprs(args), Ty::Time)
            }
            ("make_timestamp", 6) => {
                ints!(0, 1, 2, 3, 4);
                if !(types[5].is_num() || types[5] == Ty::Unknown) {
                    return Err(undefined());
                }
                to!(5, Ty::Float8);
                call(DtFn::MakeTimestamp, exprs(args), Ty::Timestamp)
            }
            ("age", 1) => {
                let ty = match types[0] {
                    Ty::Timestamp => Ty::Timestamp,
                    Ty::TimestampTz | Ty::Date => Ty::TimestampTz,
                    Ty::Unknown => return Err(ambiguous(name, &types)),
                    _ => return Err(undefined()),
                };
                to!(0, ty);
                // From midnight of today (current_date).
                let today = Expr::Func(Func::Now, vec![], Ty::Date);
                let today = self.coerce(today, Ty::Date, ty)?;
                call(DtFn::Age, vec![today, args[0].0.clone()], Ty::Interval)
            }
            ("age", 2) => {
                let ty = match (types[0], types[1]) {
                    (Ty::Timestamp, Ty::Timestamp | Ty::Unknown) | (Ty::Unknown, Ty::Timestamp) => {
                        Ty::Timestamp
                    }
                    (Ty::Unknown, Ty::Unknown) => return Err(ambiguous(name, &types)),
                    (a, b)
                        if [a, b].iter().all(|t| {
                            matches!(t, Ty::Timestamp | Ty::TimestampTz | Ty::Date | Ty::Unknown)
                        }) =>
                    {
                        Ty::TimestampTz
                    }
                    _ => return Err(undefined()),
                };
                to!(0, ty);
                to!(1, ty);
                call(DtFn::Age, exprs(args), Ty::Interval)
            }
            ("justify_days" | "justify_hours" | "justify_interval", 1) => {
                if !matches!(types[0], Ty::Interval | Ty::Time | Ty::Unknown) {
                    return Err(undefined());
                }
                to!(0, Ty::Interval);
                let f = match name {
                    "justify_days" => DtFn::JustifyDays,
                    "justify_hours" => DtFn::JustifyHours,
                    _ => DtFn::JustifyInterval,
                };
                call(f, exprs(args), Ty::Interval)
            }
            ("to_timestamp", 1) => {
                if !(types[0].is_num() || types[0] == Ty::Unknown) {
                    return Err(undefined());
                }
                to!(0, Ty::Float8);
                call(DtFn::ToTimestampEpoch, exprs(args), Ty::TimestampTz)
            }
            ("to_timestamp" | "to_date", 2) => {
                text!(0);
                text!(1);
                if name == "to_date" {
                    call(DtFn::ToDate, exprs(args), Ty::Date)
                } else {
                    call(DtFn::ToTimestampFmt, exprs(args), Ty::TimestampTz)
                }
            }
            ("to_char", 2) => {
                match types[0] {
                    Ty::Timestamp | Ty::TimestampTz | Ty::Interval => {}
                    Ty::Date => to!(0, Ty::TimestampTz),
                    // A time formats as an interval (PostgreSQL's implicit cast).
                    Ty::Time => to!(0, Ty::Interval),
                    Ty::Unknown => return Err(ambiguous(name, &types)),
                    // A bigint formats as a numeric (only EEEE tells them apart: an integer's
                    // goes through float8), as PostgreSQL's int8_to_char.
                    Ty::Int8 => to!(0, Ty::Numeric),
                    t if t.is_num() => {}
                    _ => return Err(undefined()),
                }
                text!(1);
                call(DtFn::ToChar, exprs(args), Ty::Text)
            }
            ("isfinite", 1) => {
                match types[0] {
                    Ty::Date | Ty::Timestamp | Ty::TimestampTz | Ty::Interval => {}
                    Ty::Time => to!(0, Ty::Interval),
                    Ty::Unknown => return Err(ambiguous(name, &types)),
                    _ => return Err(undefined()),
                }
                call(DtFn::IsFinite, exprs(args), Ty::Bool)
            }
            _ => return Ok(None),
        };
        Ok(Some(r))
    }

    /// A time zone argument: text (a name or offset) or an interval.
    fn zone_arg(&mut self, (e, t): (Expr, Ty), undefined: &dyn Fn() -> Error) -> Result<Expr> {
        match t {
            Ty::Interval => Ok(e),
            Ty::Text | Ty::Unknown | Ty::Bpchar | Ty::Varchar => self.coerce(e, t, Ty::Text),
            _ => Err(undefined()),
        }
    }
}

/// The operand and result types of a date/time operator (PostgreSQL's: timestamp +/-
/// interval, date +/- interval is a timestamp, timestamp - timestamp an interval, date -
/// date an integer, date +/- integer a date, interval * / number); an untyped literal
/// beside a timestamp or an interval is an interval. A time is read as an interval where
/// PostgreSQL's implicit cast makes it one (`time * 2`, `time / 2`: intervals); an untyped
/// literal beside `time +` is an interval, beside `time -` a time.
pub(super) fn datetime_operands(op: ArOp, lt: Ty, rt: Ty) -> Option<(Ty, Ty, Ty)> {
    use ArOp::*;
    use Ty::*;
    let ts = |t: Ty| matches!(t, Timestamp | TimestampTz);
    let iv = |t: Ty| matches!(t, Interval | Unknown);
    Some(match (op, lt, rt) {
        (Add | Sub, a, b) if ts(a) && iv(b) => (a, Interval, a),
        (Add, a, b) if iv(a) && ts(b) => (Interval, b, b),
        (Sub, a, b) if ts(a) && ts(b) => {
            let t = Ty::unify(a, b)?;
            (t, t, Interval)
        }
        (Add | Sub, Time, Interval) => (Time, Interval, Time),
        (Add, Interval, Time) => (Interval, Time, Time),
        (Sub, Time, Time) => (Time, Time, Interval),
        (Add, Date, Time) => (Date, Time, Timestamp),
        (Add, Time, Date) => (Time, Date, Timestamp),
        (Add | Sub, Date, Interval) => (Date, Interval, Timestamp),
        (Add, Interval, Date) => (Interval, Date, Timestamp),
        (Add | Sub, Interval, b) if iv(b) => (Interval, Interval, Interval),
        (Add, Unknown, Interval) => (Interval, Interval, Interval),
        (Sub, Date, Date) => (Date, Date, Int4),
        (Add | Sub, Date, b) if b == Int2 || b == Int4 => (Date, b, Date),
        (Add, a, Date) if a == Int2 || a == Int4 => (a, Date, Date),
        (Mul | Div, Interval | Time, b) if b.is_num() || b == Unknown => (Interval, Float8, Interval),
        (Mul, a, Interval | Time) if a.is_num() || a == Unknown => (Float8, Interval, Interval),
        (Add, Time, Unknown) => (Time, Interval, Time),
        (Add, Unknown, Time) => (Interval, Time, Time),
        (Sub, Time, Unknown) => (Time, Time, Interval),
        _ => return None,
    })
}
