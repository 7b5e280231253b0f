//! Operators on values with PostgreSQL semantics: arithmetic (integer overflow per type width,
//! integer division truncation, division by zero) and `LIKE`.

use super::{ArOp, Ty};
use crate::error::{Error, Result, SqlState};
use crate::types::{
    date_is_finite, date_to_micros, numeric, session_zone, ts_is_finite, Decimal, Interval, Value,
};

pub fn div_zero() -> Error {
    Error::new(SqlState::DIVISION_BY_ZERO, "division by zero")
}

pub(super) fn int_range(ty: Ty, i: i64) -> Result<Value> {
    let ok = match ty {
        Ty::Int2 => i16::try_from(i).is_ok(),
        Ty::Int4 => i32::try_from(i).is_ok(),
        _ => true,
    };
    if ok {
        Ok(Value::Int(i))
    } else {
        Err(Error::out_of_range(format!("{} out of range", ty.name())))
    }
}

pub(super) fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Numeric(d) => numeric::to_f64(*d),
        _ => f64::NAN,
    }
}

/// An integer or numeric operand of a numeric operation (integers convert exactly).
pub(super) fn as_decimal(v: &Value) -> Option<Decimal> {
    match v {
        Value::Int(i) => Some(Decimal::from(*i)),
        Value::Numeric(d) => Some(*d),
        _ => None,
    }
}

/// Date/time arithmetic (PostgreSQL's operators on timestamp, timestamptz, date, interval);
/// None when neither operand is a date/time value.
fn datetime_arith(op: ArOp, a: &Value, b: &Value) -> Result<Option<Value>> {
    use Value as V;
    let dated = |v: &Value| {
        matches!(
            v,
            V::Date(_) | V::Timestamp(_) | V::TimestampTz(_) | V::Interval(_) | V::Time(_)
        )
    };
    if !dated(a) && !dated(b) {
        return Ok(None);
    }
    let midnight = |d: i32| {
        date_to_micros(d)
            .ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))
    };
    let num = |v: &Value| matches!(v, V::Int(_) | V::Float(_) | V::Numeric(_));
    Ok(Some(match (op, a, b) {
        (ArOp::Add, V::Timestamp(t), V::Interval(i)) | (ArOp::Add, V::Interval(i), V::Timestamp(t)) => {
            V::Timestamp(i.add_to(*t)?)
        }
        (ArOp::Sub, V::Timestamp(t), V::Interval(i)) => V::Timestamp(i.neg()?.add_to(*t)?),
        // Months and days are added in the session time zone.
        (ArOp::Add, V::TimestampTz(t), V::Interval(i)) | (ArOp::Add, V::Interval(i), V::TimestampTz(t)) => {
            V::TimestampTz(session_zone::add_interval(*t, i)?)
        }
        (ArOp::Sub, V::TimestampTz(t), V::Interval(i)) => {
            V::TimestampTz(session_zone::add_interval(*t, &i.neg()?)?)
        }
        // date +/- interval is a timestamp from the date's midnight.
        (ArOp::Add, V::Date(d), V::Interval(i)) | (ArOp::Add, V::Interval(i), V::Date(d)) => {
            V::Timestamp(i.add_to(midnight(*d)?)?)
        }
        (ArOp::Sub, V::Date(d), V::Interval(i)) => V::Timestamp(i.neg()?.add_to(midnight(*d)?)?),
        // time +/- interval reads the interval's time part and wraps around midnight;
        // time - time is an interval; date + time a timestamp.
        (ArOp::Add, V::Time(t), V::Interval(i)) | (ArOp::Add, V::Interval(i), V::Time(t)) => {
            V::Time(crate::types::time::add_micros(*t, i.micros))
        }
        (ArOp::Sub, V::Time(t), V::Interval(i)) => {
            V::Time(crate::types::time::add_micros(*t, i.micros.wrapping_neg()))
        }
        (ArOp::Sub, V::Time(x), V::Time(y)) => V::Interval(Interval::new(0, 0, x - y)),
        // An infinite date plus a time stays infinite.
        (ArOp::Add, V::Date(d), V::Time(_)) | (ArOp::Add, V::Time(_), V::Date(d)) if !date_is_finite(*d) => {
            V::Timestamp(midnight(*d)?)
        }
        (ArOp::Add, V::Date(d), V::Time(t)) | (ArOp::Add, V::Time(t), V::Date(d)) => V::Timestamp(
            midnight(*d)?
                .checked_add(*t)
                .filter(|us| crate::types::TIMESTAMP_RANGE.contains(us))
                .ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))?,
        ),
        (ArOp::Add, V::Interval(x), V::Interval(y)) => V::Interval(x.add(y)?),
        (ArOp::Sub, V::Interval(x), V::Interval(y)) => V::Interval(x.sub(y)?),
        (ArOp::Mul, V::Interval(i), n) | (ArOp::Mul, n, V::Interval(i)) if num(n) => {
            V::Interval(i.mul(as_f64(n))?)
        }
        (ArOp::Div, V::Interval(i), n) if num(n) => V::Interval(i.div(as_f64(n))?),
        (ArOp::Sub, V::Timestamp(x), V::Timestamp(y)) | (ArOp::Sub, V::TimestampTz(x), V::TimestampTz(y)) => {
            if !ts_is_finite(*x) || !ts_is_finite(*y) {
                return Err(Error::new(
                    SqlState::DATETIME_FIELD_OVERFLOW,
                    "cannot subtract infinite timestamps",
                ));
            }
            V::Interval(Interval::between(*x, *y)?)
        }
        // date - date is the days between them; date +/- integer moves by days (an infinite
        // date stays where it is).
        (ArOp::Sub, V::Date(x), V::Date(y)) => {
            if !date_is_finite(*x) || !date_is_finite(*y) {
                return Err(Error::new(
                    SqlState::DATETIME_FIELD_OVERFLOW,
                    "cannot subtract infinite dates",
                ));
            }
            int_range(Ty::Int4, i64::from(*x) - i64::from(*y))?
        }
        (ArOp::Add, V::Date(d), V::Int(n)) | (ArOp::Add, V::Int(n), V::Date(d)) => V::Date(add_days(*d, *n)?),
        (ArOp::Sub, V::Date(d), V::Int(n)) => V::Date(add_days(*d, n.checked_neg().unwrap_or(i64::MAX))?),
        _ => {
            return Err(Error::internal(format!(
                "no date/time operator {a:?} {} {b:?}",
                op.sym()
            )))
        }
    }))
}

/// A date moved by `n` days; 22008 past PostgreSQL's date range.
fn add_days(d: i32, n: i64) -> Result<i32> {
    if !date_is_finite(d) {
        return Ok(d);
    }
    i64::from(d)
        .checked_add(n)
        .and_then(|x| i32::try_from(x).ok())
        .filter(|x| date_is_finite(*x) && date_to_micros(*x).is_some())
        .ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "date out of range"))
}

pub fn arith(op: ArOp, a: &Value, b: &Value, ty: Ty) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    if let Some(v) = datetime_arith(op, a, b)? {
        return Ok(v);
    }
    if ty.is_int() {
        let (Value::Int(x), Value::Int(y)) = (a, b) else {
            return Err(Error::internal(format!(
                "integer operands expected, got {a:?} and {b:?}"
            )));
        };
        let over = || Error::out_of_range(format!("{} out of range", ty.name()));
        let r = match op {
            ArOp::Add => x.checked_add(*y).ok_or_else(over)?,
            ArOp::Sub => x.checked_sub(*y).ok_or_else(over)?,
            ArOp::Mul => x.checked_mul(*y).ok_or_else(over)?,
            ArOp::Div => {
                if *y == 0 {
                    return Err(div_zero());
                }
                x.checked_div(*y).ok_or_else(over)?
            }
            ArOp::Mod => {
                if *y == 0 {
                    return Err(div_zero());
                }
                x.checked_rem(*y).unwrap_or(0)
            }
        };
        return int_range(ty, r);
    }
    if ty == Ty::Numeric {
        let (Some(x), Some(y)) = (as_decimal(a), as_decimal(b)) else {
            return Err(Error::internal(format!(
                "numeric operands expected, got {a:?} and {b:?}"
            )));
        };
        return Ok(Value::Numeric(match op {
            ArOp::Add => numeric::add(x, y)?,
            ArOp::Sub => numeric::sub(x, y)?,
            ArOp::Mul => numeric::mul(x, y)?,
            ArOp::Div => numeric::div(x, y)?,
            ArOp::Mod => numeric::rem(x, y)?,
        }));
    }
    let (x, y) = (as_f64(a), as_f64(b));
    let r = match op {
        ArOp::Add => x + y,
        ArOp::Sub => x - y,
        ArOp::Mul => x * y,
        ArOp::Div => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x / y
        }
        ArOp::Mod => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x % y
        }
    };
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(Error::out_of_range("value out of range: overflow"));
    }
    Ok(Value::Float(r))
}

/// SQL `LIKE` (byte-wise; `%` any run, `_` one character, `esc` escapes the next character).
pub fn like(s: &str, p: &str, esc: Option<char>, ci: bool) -> bool {
    let (s, p): (Vec<char>, Vec<char>) = if ci {
        (
            // ASCII letters only, as PostgreSQL's ILIKE in the C locale.
            s.to_ascii_lowercase().chars().collect(),
            p.to_ascii_lowercase().chars().collect(),
        )
    } else {
        (s.chars().collect(), p.chars().collect())
    };
    // Tokenize the pattern.
    enum T {
        Any,
        One,
        Ch(char),
    }
    let mut toks = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        if Some(c) == esc && i + 1 < p.len() {
            toks.push(T::Ch(p[i + 1]));
            i += 2;
            continue;
        }
        toks.push(match c {
            '%' => T::Any,
            '_' => T::One,
            c => T::Ch(c),
        });
        i += 1;
    }
    // Iterative matching with backtracking on the last %.
    let (mut si, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if ti < toks.len() {
            match toks[ti] {
                T::Any => {
                    star = Some((ti, si));
                    ti += 1;
                    continue;
                }
                T::One => {
                    si += 1;
                    ti += 1;
                    continue;
                }
                T::Ch(c) if c == s[si] => {
                    si += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((st, ss)) => {
                ti = st + 1;
                si = ss + 1;
                star = Some((st, ss + 1));
            }
            None => return false,
        }
    }
    while ti < toks.len() && matches!(toks[ti], T::Any) {
        ti += 1;
    }
    ti == toks.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_overflows_per_width() {
        let v = |i| Value::Int(i);
        assert!(arith(ArOp::Add, &v(i32::MAX as i64), &v(1), Ty::Int4).is_err());
        assert_eq!(
            arith(ArOp::Add, &v(i32::MAX as i64), &v(1), Ty::Int8).unwrap(),
            v(2147483648)
        );
        assert!(arith(ArOp::Mul, &v(32767), &v(2), Ty::Int2).is_err());
        assert_eq!(arith(ArOp::Div, &v(-7), &v(2), Ty::Int4).unwrap(), v(-3));
        assert_eq!(arith(ArOp::Mod, &v(-7), &v(3), Ty::Int4).unwrap(), v(-1));
        let e = arith(ArOp::Div, &v(1), &v(0), Ty::Int4).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::DIVISION_BY_ZERO);
        let e = arith(ArOp::Div, &v(i64::MIN), &v(-1), Ty::Int8).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        assert_eq!(
            arith(ArOp::Add, &Value::Null, &v(1), Ty::Int4).unwrap(),
            Value::Null
        );
        let e = arith(ArOp::Div, &Value::Float(1.5), &v(0), Ty::Float8).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::DIVISION_BY_ZERO);
        let e = arith(ArOp::Mul, &Value::Float(1e308), &v(10), Ty::Float8).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
    }

    #[test]
    fn numeric_arithmetic_is_exact_and_mixes_with_integers_and_floats() {
        let n = |s: &str| Value::Numeric(s.parse().unwrap());
        let text = |v: Value| v.to_text().unwrap();
        assert_eq!(
            text(arith(ArOp::Add, &n("0.1"), &n("0.2"), Ty::Numeric).unwrap()),
            "0.3"
        );
        assert_eq!(
            text(arith(ArOp::Add, &Value::Int(1), &n("1.50"), Ty::Numeric).unwrap()),
            "2.50"
        );
        assert_eq!(
            text(arith(ArOp::Div, &Value::Int(1), &n("3"), Ty::Numeric).unwrap()),
            "0.33333333333333333333"
        );
        assert_eq!(
            arith(ArOp::Mul, &n("1.5"), &Value::Float(2.0), Ty::Float8).unwrap(),
            Value::Float(3.0)
        );
        let e = arith(ArOp::Div, &n("1.5"), &Value::Int(0), Ty::Numeric).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::DIVISION_BY_ZERO);
        assert_eq!(
            arith(ArOp::Sub, &Value::Null, &n("1"), Ty::Numeric).unwrap(),
            Value::Null
        );
    }

    #[test]
    fn like_patterns() {
        assert!(like("abc", "abc", Some('\\'), false));
        assert!(like("abc", "a%", Some('\\'), false));
        assert!(like("abc", "_b_", Some('\\'), false));
        assert!(!like("abc", "b%", Some('\\'), false));
        assert!(like("abc", "%c%", Some('\\'), false));
        assert!(like("", "%", Some('\\'), false));
        assert!(!like("", "_", Some('\\'), false));
        assert!(like("a%b", "a\\%b", Some('\\'), false));
        assert!(!like("axb", "a\\%b", Some('\\'), false));
        assert!(like("aXbXc", "%X%c", Some('\\'), false));
        assert!(like("mississippi", "%iss%pi", None, false));
        assert!(!like("Bob", "bob", None, false));
        assert!(like("Bob", "bob", None, true));
    }
}
