//! Functions of `time` values: `EXTRACT` / `date_part` of a time and `make_time`, as
//! PostgreSQL 15 computes them (time_part_common, make_time).

use super::datetime_fn::{not_recognized, not_supported, part_int, part_scaled, Unit};
use crate::error::{Error, Result, SqlState};
use crate::types::{format_float, Decimal, Value, MICROS_PER_DAY};

const TIME: &str = "time without time zone";

/// EXTRACT (numeric) and date_part (float8) of a time: the fields of a time of day and its
/// seconds since midnight (`epoch`); other units are 0A000, unknown ones 22023.
pub(super) fn time_part(unit: &str, u: Unit, us: i64, as_numeric: bool) -> Result<Value> {
    use Unit::*;
    let secs = us / 1_000_000;
    let sec_us = us % 60_000_000;
    Ok(match u {
        Microsec => part_int(sec_us, as_numeric),
        Millisec => part_scaled(sec_us, 3, as_numeric),
        Second => part_scaled(sec_us, 6, as_numeric),
        Minute => part_int(secs / 60 % 60, as_numeric),
        Hour => part_int(secs / 3600, as_numeric),
        Epoch if as_numeric => Value::Numeric(Decimal::new(us, 6)),
        Epoch => Value::Float(us as f64 / 1e6),
        Reserved => return Err(not_recognized(unit, TIME)),
        _ => return Err(not_supported(unit, TIME)),
    })
}

/// `make_time(hour, min, sec)`: 22008 for a field out of range or a time past 24:00:00.
pub(super) fn make_time(hour: i64, min: i64, sec: f64) -> Result<Value> {
    let us = (sec * 1e6).round_ties_even();
    let total = ((hour * 60 + min) * 60) as f64 * 1e6 + us;
    let bad = !(0..=24).contains(&hour)
        || !(0..=59).contains(&min)
        || !(0.0..=60.0).contains(&sec)
        || total > MICROS_PER_DAY as f64;
    if bad {
        // C's %02g of the seconds.
        let s = if sec.fract() == 0.0 && sec.abs() < 1e6 {
            format!("{:02}", sec as i64)
        } else {
            format_float(sec)
        };
        return Err(Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!("time field value out of range: {hour}:{min:02}:{s}"),
        ));
    }
    Ok(Value::Time(total as i64))
}
