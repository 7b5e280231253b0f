//! Casts and assignment conversions with PostgreSQL's rules (rounding, range checks,
//! `varchar(n)`), and a value's text output.

use super::ops::int_range;
use super::Ty;
use crate::error::{Error, Result, SqlState};
use crate::types::{numeric, numeric_typmod, session_zone, DataType, Decimal, Value};

pub use crate::types::numeric_len;

fn numeric_mod(len: Option<u32>) -> Option<(u16, u16)> {
    len.map(crate::types::numeric_mod)
}

fn timestamp_error(s: &str, ty: Ty) -> Error {
    // A string shaped like a date whose fields are out of range is 22008; anything else 22007.
    let t = s.trim();
    let shaped = t.len() >= 8
        && t.chars().next().is_some_and(|c| c.is_ascii_digit())
        && t.chars().all(|c| c.is_ascii_digit() || " -:.T+".contains(c))
        // A digit string longer than YYYYMMDDHHMMSS is not a date at all (PostgreSQL: 22007).
        && (t.len() <= 14 || !t.chars().all(|c| c.is_ascii_digit()));
    if shaped {
        Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{s}\""),
        )
    } else {
        Error::new(
            SqlState("22007"),
            format!("invalid input syntax for type {}: \"{s}\"", ty.name()),
        )
    }
}

/// Whether a cast from `from` to `to` exists (checked when binding).
pub fn cast_allowed(from: Ty, to: Ty) -> bool {
    let texty = |t: Ty| matches!(t, Ty::Text | Ty::Varchar | Ty::Bpchar);
    if from == to || from == Ty::Unknown || texty(to) || texty(from) {
        return true;
    }
    match (from, to) {
        (f, t) if f.is_num() && t.is_num() => true,
        (f, t) if f.is_datetime() && t.is_datetime() => true,
        (Ty::Bool, Ty::Int4) | (Ty::Int4, Ty::Bool) => true,
        (Ty::Json, Ty::Jsonb) | (Ty::Jsonb, Ty::Json) => true,
        // time from a timestamp (its time of day) and from and to an interval.
        (Ty::Timestamp | Ty::TimestampTz | Ty::Interval, Ty::Time) | (Ty::Time, Ty::Interval) => true,
        // Element by element (a text array's elements read as the new element type).
        (Ty::Array(_), Ty::Array(_)) => true,
        _ => false,
    }
}

/// Converts `v` to type `to` (explicit-cast semantics: `varchar(n)` truncates).
pub fn cast(v: Value, to: Ty, len: Option<u32>) -> Result<Value> {
    use Value as V;
    Ok(match (v, to) {
        (V::Null, _) => V::Null,
        (V::Text(s), Ty::Text | Ty::Varchar | Ty::Unknown) => match len {
            Some(n) if s.chars().count() > n as usize => V::Text(s.chars().take(n as usize).collect()),
            _ => V::Text(s),
        },
        (V::Text(s), Ty::Bpchar) => V::Text(match len {
            Some(n) => crate::types::bpchar_pad(s, n),
            None => s,
        }),
        (V::Bool(b), t @ (Ty::Text | Ty::Varchar | Ty::Bpchar)) => {
            cast(V::Text(if b { "true" } else { "false" }.into()), t, len)?
        }
        (v, Ty::Bpchar) => {
            let s = text_of(&v).unwrap_or_default();
            return cast(V::Text(s), Ty::Bpchar, len);
        }
        (v, t @ (Ty::Text | Ty::Varchar)) => {
            let s = text_of(&v).unwrap_or_default();
            return cast(V::Text(s), t, len);
        }
        (V::Text(s), t @ (Ty::Timestamp | Ty::Date | Ty::TimestampTz)) => Value::parse_text(&s, t.to_dt())
            .map_err(|e| {
                if e.sqlstate() == SqlState::NUMERIC_OUT_OF_RANGE {
                    e
                } else {
                    timestamp_error(&s, t)
                }
            })?,
        (V::Text(s), Ty::Bool) => Value::parse_text(&s, DataType::Bool)?,
        (V::Text(s), Ty::Time) => Value::parse_text(&s, DataType::Time(len))?,
        (V::Text(s), Ty::Numeric) => Value::parse_text(&s, DataType::Numeric(numeric_mod(len)))?,
        // `numeric(p, s)[]`: each element rounded to the typmod.
        (V::Text(s), Ty::Array(e)) if *e == Ty::Numeric && len.is_some() => {
            let dt = DataType::array_keeping_typmod(DataType::Numeric(numeric_mod(len)));
            Value::parse_text(&s, dt.unwrap_or(DataType::Text(None)))?
        }
        // `time(p)[]`: each element rounded to p digits.
        (V::Text(s), Ty::Array(Ty::Time)) if len.is_some() => {
            let dt = DataType::array_keeping_typmod(DataType::Time(len));
            Value::parse_text(&s, dt.unwrap_or(DataType::Text(None)))?
        }
        // `varchar(n)[]`: each element truncated to n characters.
        // `character(n)[]`: each element cut or blank-padded to n characters.
        (V::Text(s), Ty::Array(e)) if matches!(e, Ty::Text | Ty::Varchar | Ty::Bpchar) && len.is_some() => {
            V::Text(crate::types::array::map(&s, |x| {
                Ok(cast(V::Text(x.to_string()), *e, len)?.to_text())
            })?)
        }
        (V::Text(s), t) => {
            let v = Value::parse_text(&s, t.to_dt())?;
            if t == Ty::Float8 {
                if let V::Float(f) = v {
                    if f.is_infinite() && !s.to_ascii_lowercase().contains("inf") {
                        return Err(Error::out_of_range(format!(
                            "\"{s}\" is out of range for type double precision"
                        )));
                    }
                }
            }
            v
        }
        (V::Int(i), t) if t.is_int() => int_range(t, i)?,
        (V::Int(i), Ty::Float8) => V::Float(i as f64),
        (V::Float(f), t) if t.is_int() => {
            let r = f.round_ties_even();
            if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                return Err(Error::out_of_range(format!("{} out of range", t.name())));
            }
            int_range(t, r as i64)?
        }
        (V::Float(f), Ty::Float8) => V::Float(f),
        // numeric: exact from integers, from float8 at 15 significant digits, to integers
        // rounded half away from zero, with a cast's `numeric(p, s)` rounding and range check.
        (V::Int(i), Ty::Numeric) => V::Numeric(numeric_typmod(Decimal::from(i), numeric_mod(len))?),
        (V::Float(f), Ty::Numeric) => V::Numeric(numeric_typmod(numeric::from_f64(f)?, numeric_mod(len))?),
        (V::Numeric(d), Ty::Numeric) => V::Numeric(numeric_typmod(d, numeric_mod(len))?),
        (V::Numeric(d), t) if t.is_int() => {
            let i = numeric::to_i64(d)
                .ok_or_else(|| Error::out_of_range(format!("{} out of range", t.name())))?;
            int_range(t, i)?
        }
        (V::Numeric(d), Ty::Float8) => V::Float(numeric::to_f64(d)),
        (V::Uuid(u), Ty::Uuid) => V::Uuid(u),
        (V::Interval(i), Ty::Interval) => V::Interval(i),
        // An infinite timestamp has no time of day: NULL, as PostgreSQL's timestamp_time.
        (V::Timestamp(t) | V::TimestampTz(t), Ty::Time) if !crate::types::ts_is_finite(t) => V::Null,
        (v @ (V::Time(_) | V::Timestamp(_) | V::TimestampTz(_) | V::Interval(_)), Ty::Time) => {
            V::Time(crate::types::time::round_time(time_of(&v), len))
        }
        (V::Time(t), Ty::Interval) => V::Interval(crate::types::Interval::new(0, 0, t)),
        (V::Jsonb(j), Ty::Jsonb) => V::Jsonb(j),
        (V::Json(s), Ty::Json) => V::Json(s),
        (V::Json(s), Ty::Jsonb) => Value::parse_text(&s, DataType::Jsonb)?,
        (V::Jsonb(j), Ty::Json) => V::Json(j.to_text()),
        (V::Bool(b), Ty::Bool) => V::Bool(b),
        (V::Bool(b), t) if t.is_int() => V::Int(b as i64),
        (V::Int(i), Ty::Bool) => V::Bool(i != 0),
        (V::Bytes(b), Ty::Bytea) => V::Bytes(b),
        (V::Timestamp(t), Ty::Timestamp) => V::Timestamp(t),
        // Between date/time types: a date is its midnight; timestamp and timestamptz convert
        // in the session time zone (a timestamptz's local time there).
        (
            v @ (V::Date(_) | V::Timestamp(_) | V::TimestampTz(_)),
            t @ (Ty::Date | Ty::Timestamp | Ty::TimestampTz),
        ) => {
            let overflow = || Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range");
            let (us, tz) = match v {
                // A date's midnight, which must fit a timestamp (dates reach further).
                V::Date(d) => (crate::types::date_to_micros(d).ok_or_else(overflow)?, false),
                V::TimestampTz(us) => (us, true),
                v => (v.datetime_micros().expect("a date/time value"), false),
            };
            let local = if tz { session_zone::to_local(us) } else { us };
            match t {
                // An infinite timestamp is the infinite date of its sign.
                Ty::Date => V::Date(
                    crate::types::micros_to_date(local)
                        .ok_or_else(|| Error::out_of_range("date out of range"))?,
                ),
                Ty::Timestamp => V::Timestamp(local),
                _ if tz => V::TimestampTz(us),
                _ => V::TimestampTz(session_zone::from_local(us).ok_or_else(overflow)?),
            }
        }
        (v, Ty::Unknown) => v,
        (v, t) => {
            return Err(Error::new(
                SqlState("42846"),
                format!("cannot cast type {} to {}", v.type_name(), t.name()),
            ))
        }
    })
}

/// Converts a value for storage in a column (assignment semantics: varchar(n) overflow fails).
pub fn assign(v: Value, dt: DataType, col: &str) -> Result<Value> {
    let ty = Ty::from_dt(dt);
    let v = match dt {
        DataType::Numeric(Some(m)) => cast(v, ty, Some(numeric_len(m)))?,
        DataType::Array(DataType::Numeric(Some(m))) => cast(v, ty, Some(numeric_len(*m)))?,
        DataType::Time(p @ Some(_)) => cast(v, ty, p)?,
        DataType::Array(DataType::Time(p @ Some(_))) => cast(v, ty, *p)?,
        _ => cast(v, ty, None)?,
    };
    match (dt, &v) {
        (DataType::Bpchar(n @ Some(_)), Value::Text(s)) => {
            return Ok(Value::Text(crate::types::bpchar_assign(s.clone(), n)?))
        }
        (DataType::Array(DataType::Bpchar(n @ Some(_))), Value::Text(s)) => {
            let padded =
                crate::types::array::map(s, |x| Ok(Some(crate::types::bpchar_assign(x.to_string(), *n)?)))?;
            return Ok(Value::Text(padded));
        }
        _ => {}
    }
    let too_long = |n: u32| {
        Error::new(
            SqlState::STRING_DATA_RIGHT_TRUNCATION,
            format!("value too long for type character varying({n}) (column \"{col}\")"),
        )
    };
    match (dt, &v) {
        (DataType::Varchar(Some(n)) | DataType::Text(Some(n)), Value::Text(s))
            if s.chars().count() > n as usize =>
        {
            return Err(too_long(n))
        }
        // `varchar(n)[]`: every element must fit, as PostgreSQL checks on assignment.
        (DataType::Array(DataType::Varchar(Some(n)) | DataType::Text(Some(n))), Value::Text(s)) => {
            let (_, items) = crate::types::array::parse(s)?;
            if items.iter().flatten().any(|x| x.chars().count() > *n as usize) {
                return Err(too_long(*n));
            }
        }
        _ => {}
    }
    Ok(v)
}

/// PostgreSQL's text output of a value (`None` for NULL); floats as PostgreSQL 12+ prints
/// float8 ([`crate::types::format_float`]).
pub fn text_of(v: &Value) -> Option<String> {
    v.to_text()
}

/// The time of day of a time, a timestamp (a timestamptz's in the session zone) or an
/// interval's time part (PostgreSQL's interval_time: modulo a day).
fn time_of(v: &Value) -> i64 {
    let day = crate::types::MICROS_PER_DAY;
    match v {
        Value::Time(t) => *t,
        Value::Timestamp(t) => t.rem_euclid(day),
        Value::TimestampTz(t) => crate::types::session_zone::to_local(*t).rem_euclid(day),
        Value::Interval(i) => i.micros.rem_euclid(day),
        _ => 0,
    }
}

pub(super) fn text_arg(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(s) => Some(s.clone()),
        v => text_of(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::expr::format_float;

    #[test]
    fn floats_print_like_postgres() {
        assert_eq!(format_float(1e-5), "1e-05");
        assert_eq!(format_float(0.00025), "0.00025");
        assert_eq!(format_float(1e15), "1e+15");
        assert_eq!(format_float(123456789012.0), "123456789012");
        assert_eq!(format_float(9007199254740992.0), "9.007199254740992e+15");
        assert_eq!(format_float(1.0000000000000013e17), "1.0000000000000013e+17");
        assert_eq!(format_float(-0.0625), "-0.0625");
    }

    #[test]
    fn casts_follow_postgres() {
        assert_eq!(cast(Value::Float(2.5), Ty::Int4, None).unwrap(), Value::Int(2));
        assert_eq!(cast(Value::Float(3.5), Ty::Int4, None).unwrap(), Value::Int(4));
        assert_eq!(
            cast(Value::Text(" 12 ".into()), Ty::Int4, None).unwrap(),
            Value::Int(12)
        );
        assert_eq!(cast("abc".into(), Ty::Text, Some(2)).unwrap(), Value::from("ab"));
        let e = cast("1.5".into(), Ty::Int4, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
        let e = cast(Value::Int(40000), Ty::Int2, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        let e = cast("2023-02-29 00:00:00".into(), Ty::Timestamp, None).unwrap_err();
        assert_eq!(e.sqlstate().code(), "22008");
        let e = cast("not a time".into(), Ty::Timestamp, None).unwrap_err();
        assert_eq!(e.sqlstate().code(), "22007");
        let e = cast("1e400".into(), Ty::Float8, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        assert!(!cast_allowed(Ty::Bool, Ty::Timestamp));
    }

    #[test]
    fn numeric_and_uuid_casts_follow_postgres() {
        let text = |v: Value| v.to_text().unwrap();
        let n52 = Some(numeric_len((5, 2)));
        assert_eq!(text(cast("1.005".into(), Ty::Numeric, n52).unwrap()), "1.01");
        assert_eq!(text(cast(Value::Int(7), Ty::Numeric, n52).unwrap()), "7.00");
        assert_eq!(text(cast(Value::Float(0.1), Ty::Numeric, None).unwrap()), "0.1");
        let e = cast(Value::Int(1000), Ty::Numeric, n52).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        let half = cast("2.5".into(), Ty::Numeric, None).unwrap();
        assert_eq!(cast(half.clone(), Ty::Int4, None).unwrap(), Value::Int(3));
        assert_eq!(cast(half.clone(), Ty::Float8, None).unwrap(), Value::Float(2.5));
        assert_eq!(cast(half, Ty::Text, None).unwrap(), Value::from("2.5"));
        let e = cast("1e400".into(), Ty::Numeric, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        let e = cast(Value::Float(f64::INFINITY), Ty::Numeric, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::FEATURE_NOT_SUPPORTED);
        let u = cast("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11".into(), Ty::Uuid, None).unwrap();
        assert_eq!(
            text(cast(u, Ty::Text, None).unwrap()),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        );
        let e = cast("nope".into(), Ty::Uuid, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
        assert!(cast_allowed(Ty::Uuid, Ty::Text) && !cast_allowed(Ty::Uuid, Ty::Int4));
        assert!(cast_allowed(Ty::Numeric, Ty::Int2) && cast_allowed(Ty::Float8, Ty::Numeric));
    }
}
