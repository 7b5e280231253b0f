//! Date/time functions at run time, as PostgreSQL 15 computes them: `EXTRACT` / `date_part`,
//! `date_trunc`, `AT TIME ZONE`, `make_date` / `make_timestamp` / `make_interval`, `age`,
//! `justify_*`, `to_timestamp(float8)` and `isfinite`. Formatting (`to_char`, `to_date`,
//! `to_timestamp(text, text)`) is in `datetime_fmt`, time zones in `types::zone`. A
//! timestamptz's fields are those of its local time in the session time zone
//! (`types::session_zone`).

use super::datetime_fmt;
use crate::error::{Error, Result, SqlState};
use crate::types::datetime::{civil_from_days, days_from_civil, days_in_month};
use crate::types::zone::Zone;
use crate::types::{
    date_is_finite, numeric, session_zone, ts_is_finite, Decimal, Interval, Value, DATE_INFINITY,
    MICROS_PER_DAY, TIMESTAMP_RANGE, TS_INFINITY,
};

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_HOUR: i64 = 3_600 * USECS_PER_SEC;
/// The Julian day of 1970-01-01.
const UNIX_EPOCH_JDATE: i64 = 2_440_588;

/// A date/time function; its arguments are bound to the types it takes (see the binder's
/// `datetime_fn`), and the call's type says which result an overload gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtFn {
    /// `EXTRACT(field FROM x)` (unit text, value): numeric.
    Extract,
    /// `date_part(unit, x)`: float8.
    DatePart,
    /// `date_trunc(unit, x)`: x's type.
    DateTrunc,
    /// `ts AT TIME ZONE zone` (zone text or interval, timestamp): the timestamptz whose local
    /// time in the zone is `ts`.
    LocalToZone,
    /// `tstz AT TIME ZONE zone` (zone, timestamptz): the local time in the zone.
    ZoneToLocal,
    MakeDate,
    MakeTimestamp,
    /// `make_time(hour, min, sec)`.
    MakeTime,
    /// `make_interval(years, months, weeks, days, hours, mins, secs)`.
    MakeInterval,
    /// `age(a, b)`: the difference in years, months, days and time.
    Age,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    /// `to_timestamp(float8)`: seconds since the Unix epoch.
    ToTimestampEpoch,
    IsFinite,
    /// `to_char(x, format)`.
    ToChar,
    /// `to_date(text, format)`, `to_timestamp(text, format)`.
    ToDate,
    ToTimestampFmt,
}

/// A timestamp broken down as PostgreSQL's `struct pg_tm` (astronomical year: 0 is 1 BC).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Tm {
    pub year: i64,
    pub mon: i64,
    pub mday: i64,
    pub hour: i64,
    pub min: i64,
    pub sec: i64,
    pub fsec: i64,
}

impl Tm {
    pub fn of(us: i64) -> Tm {
        let days = us.div_euclid(MICROS_PER_DAY);
        let tod = us.rem_euclid(MICROS_PER_DAY);
        let (y, m, d) = civil_from_days(days);
        let secs = tod / USECS_PER_SEC;
        Tm {
            year: y,
            mon: i64::from(m),
            mday: i64::from(d),
            hour: secs / 3600,
            min: secs / 60 % 60,
            sec: secs % 60,
            fsec: tod % USECS_PER_SEC,
        }
    }

    /// The timestamp of these fields; 22008 outside PostgreSQL's range.
    pub fn to_us(self) -> Result<i64> {
        let days = days_from_civil(self.year, self.mon as u32, self.mday as u32);
        let us = days
            .checked_mul(MICROS_PER_DAY)
            .and_then(|d| {
                d.checked_add(((self.hour * 60 + self.min) * 60 + self.sec) * USECS_PER_SEC + self.fsec)
            })
            .filter(|t| TIMESTAMP_RANGE.contains(t));
        us.ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))
    }

    pub fn days(&self) -> i64 {
        days_from_civil(self.year, self.mon as u32, self.mday as u32)
    }

    /// An interval's fields (PostgreSQL's interval2itm): every field carries the sign.
    pub fn of_interval(iv: &Interval) -> Tm {
        let t = iv.micros;
        Tm {
            year: i64::from(iv.months) / 12,
            mon: i64::from(iv.months) % 12,
            mday: i64::from(iv.days),
            hour: t / USECS_PER_HOUR,
            min: t / (60 * USECS_PER_SEC) % 60,
            sec: t / USECS_PER_SEC % 60,
            fsec: t % USECS_PER_SEC,
        }
    }
}

/// The Julian day number of a date.
pub(super) fn date2j(days: i64) -> i64 {
    days + UNIX_EPOCH_JDATE
}

/// Day of the week, 0 = Sunday.
pub(super) fn dow(days: i64) -> i64 {
    (days + 4).rem_euclid(7)
}

/// PostgreSQL's date2isoweek / date2isoyear: the ISO week and its year.
pub(super) fn iso_week(y: i64, m: i64, d: i64) -> (i64, i64) {
    let dayn = days_from_civil(y, m as u32, d as u32);
    let start = |y: i64| {
        let day4 = days_from_civil(y, 1, 4);
        day4 - dow(day4 - 1)
    };
    let mut year = y;
    let mut first = start(y);
    if dayn < first {
        year = y - 1;
        first = start(year);
    }
    let mut week = (dayn - first) / 7 + 1;
    if week >= 52 {
        let next = start(y + 1);
        if dayn >= next {
            week = (dayn - next) / 7 + 1;
            year = y + 1;
        }
    }
    (week, year)
}

/// A year as PostgreSQL reports it: BC years negative, no year 0.
fn bc_year(y: i64) -> i64 {
    if y > 0 {
        y
    } else {
        y - 1
    }
}

fn decade(y: i64) -> i64 {
    if y >= 0 {
        y / 10
    } else {
        -((8 - (y - 1)) / 10)
    }
}

fn century(y: i64) -> i64 {
    if y > 0 {
        (y + 99) / 100
    } else {
        -((99 - (y - 1)) / 100)
    }
}

fn millennium(y: i64) -> i64 {
    if y > 0 {
        (y + 999) / 1000
    } else {
        -((999 - (y - 1)) / 1000)
    }
}

/// A unit of EXTRACT / date_part / date_trunc, as PostgreSQL's DecodeUnits and DecodeSpecial
/// read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unit {
    Microsec,
    Millisec,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Julian,
    Dow,
    Isodow,
    Doy,
    Isoyear,
    Tz,
    TzHour,
    TzMinute,
    Epoch,
    /// A reserved word other than `epoch` (`now`, `today`, ...).
    Reserved,
}

/// The unit named by `s` (lower-cased, compared in its first 10 characters as PostgreSQL's
/// token tables are); None for an unknown one.
pub(super) fn decode_unit(s: &str) -> Option<Unit> {
    use Unit::*;
    let lower = s.to_lowercase();
    let key: String = lower.chars().take(10).collect();
    Some(match key.as_str() {
        "c" | "cent" | "centuries" | "century" => Century,
        "d" | "day" | "days" => Day,
        "dec" | "decade" | "decades" | "decs" => Decade,
        "h" | "hour" | "hours" | "hr" | "hrs" => Hour,
        "m" | "min" | "mins" | "minute" | "minutes" => Minute,
        "microsecon" | "us" | "usec" | "usecs" | "useconds" => Microsec,
        "mil" | "millennia" | "millennium" | "mils" => Millennium,
        "millisecon" | "ms" | "msec" | "msecs" | "mseconds" => Millisec,
        "mon" | "mons" | "month" | "months" => Month,
        "qtr" | "quarter" => Quarter,
        "s" | "sec" | "second" | "seconds" | "secs" => Second,
        "timezone" => Tz,
        "timezone_h" => TzHour,
        "timezone_m" => TzMinute,
        "w" | "week" | "weeks" => Week,
        "y" | "year" | "years" | "yr" | "yrs" => Year,
        "dow" => Dow,
        "doy" => Doy,
        "isodow" => Isodow,
        "isoyear" => Isoyear,
        "j" | "jd" | "julian" => Julian,
        "epoch" => Epoch,
        "now" | "today" | "tomorrow" | "yesterday" | "infinity" | "-infinity" | "allballs" => Reserved,
        _ => return None,
    })
}

pub(super) fn not_recognized(unit: &str, ty: &str) -> Error {
    Error::new(
        SqlState::INVALID_PARAMETER_VALUE,
        format!("unit \"{}\" not recognized for type {ty}", unit.to_lowercase()),
    )
}

pub(super) fn not_supported(unit: &str, ty: &str) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("unit \"{}\" not supported for type {ty}", unit.to_lowercase()),
    )
}

fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(i) => *i,
        _ => 0,
    }
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        Value::Int(i) => *i as f64,
        Value::Numeric(d) => numeric::to_f64(*d),
        _ => 0.0,
    }
}

/// An integer result of EXTRACT (numeric) or date_part (float8).
pub(super) fn part_int(i: i64, as_numeric: bool) -> Value {
    if as_numeric {
        Value::Numeric(Decimal::from(i))
    } else {
        Value::Float(i as f64)
    }
}

/// `n / 10^scale` as numeric with that scale, or as float8.
pub(super) fn part_scaled(n: i64, scale: u32, as_numeric: bool) -> Value {
    if as_numeric {
        Value::Numeric(Decimal::new(n, scale))
    } else {
        Value::Float(n as f64 / 10f64.powi(scale as i32))
    }
}

pub(super) fn eval(f: DtFn, vals: &[Value]) -> Result<Value> {
    match f {
        DtFn::Extract | DtFn::DatePart => part(text(&vals[0]), &vals[1], f == DtFn::Extract),
        DtFn::DateTrunc => trunc(text(&vals[0]), &vals[1]),
        DtFn::LocalToZone | DtFn::ZoneToLocal => at_zone(f, &vals[0], &vals[1]),
        DtFn::MakeDate => {
            let tm = make_tm(int(&vals[0]), int(&vals[1]), int(&vals[2]))?;
            Ok(Value::Date(tm.days() as i32))
        }
        DtFn::MakeTimestamp => make_timestamp(vals),
        DtFn::MakeTime => super::time_fn::make_time(int(&vals[0]), int(&vals[1]), float(&vals[2])),
        DtFn::MakeInterval => make_interval(vals),
        DtFn::Age => age(&vals[0], &vals[1]),
        DtFn::JustifyDays | DtFn::JustifyHours | DtFn::JustifyInterval => {
            let Value::Interval(iv) = vals[0] else {
                return Ok(Value::Null);
            };
            Ok(Value::Interval(match f {
                DtFn::JustifyDays => justify_days(iv)?,
                DtFn::JustifyHours => justify_hours(iv)?,
                _ => justify_interval(iv)?,
            }))
        }
        DtFn::ToTimestampEpoch => to_timestamp_epoch(float(&vals[0])),
        DtFn::IsFinite => Ok(match vals[0] {
            Value::Null => Value::Null,
            Value::Timestamp(t) | Value::TimestampTz(t) => Value::Bool(ts_is_finite(t)),
            Value::Date(d) => Value::Bool(date_is_finite(d)),
            _ => Value::Bool(true),
        }),
        DtFn::ToChar => datetime_fmt::to_char(&vals[0], text(&vals[1])),
        DtFn::ToDate => datetime_fmt::to_date(text(&vals[0]), text(&vals[1])),
        DtFn::ToTimestampFmt => datetime_fmt::to_timestamp(text(&vals[0]), text(&vals[1])),
    }
}

/// EXTRACT (numeric) and date_part (float8) of a date, timestamp, timestamptz or interval.
fn part(unit: &str, v: &Value, as_numeric: bool) -> Result<Value> {
    let Some(u) = decode_unit(unit) else {
        return Err(not_recognized(unit, v.type_name()));
    };
    match v {
        Value::Date(d) if !date_is_finite(*d) && as_numeric => {
            infinite_part(unit, u, *d == DATE_INFINITY, "date", true)
        }
        Value::Timestamp(t) | Value::TimestampTz(t) if !ts_is_finite(*t) => {
            infinite_part(unit, u, *t == TS_INFINITY, v.type_name(), as_numeric)
        }
        // date_part of a date is that of its midnight (PostgreSQL's SQL function).
        Value::Date(d) if !date_is_finite(*d) => {
            infinite_part(unit, u, *d == DATE_INFINITY, "timestamp without time zone", false)
        }
        Value::Date(d) if as_numeric => date_part_of_date(unit, u, i64::from(*d)),
        Value::Date(d) => timestamp_part(unit, u, i64::from(*d) * MICROS_PER_DAY, false, false),
        Value::Timestamp(t) => timestamp_part(unit, u, *t, false, as_numeric),
        Value::TimestampTz(t) => timestamp_part(unit, u, *t, true, as_numeric),
        Value::Interval(iv) => interval_part(unit, u, iv, as_numeric),
        Value::Time(t) => super::time_fn::time_part(unit, u, *t, as_numeric),
        _ => Ok(Value::Null),
    }
}

/// EXTRACT / date_part of `infinity` (`positive`) or `-infinity`, as PostgreSQL 15 answers
/// it: NULL for the units that repeat (day, hour, ...; for a date only its own units), the
/// infinity itself for those that only grow (year, epoch, julian, ...), 0A000 for the others.
/// EXTRACT's numeric has no infinity in Augur: 0A000 there.
fn infinite_part(unit: &str, u: Unit, positive: bool, ty: &str, as_numeric: bool) -> Result<Value> {
    use Unit::*;
    let date = ty == "date";
    match u {
        Day | Month | Quarter | Week | Dow | Isodow | Doy => Ok(Value::Null),
        Microsec | Millisec | Second | Minute | Hour | Tz | TzHour | TzMinute if !date => Ok(Value::Null),
        Year | Decade | Century | Millennium | Julian | Isoyear | Epoch if as_numeric => Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            format!(
                "EXTRACT({} FROM {}) is not supported: numeric has no infinity",
                unit.to_lowercase(),
                if positive { "infinity" } else { "-infinity" }
            ),
        )),
        Year | Decade | Century | Millennium | Julian | Isoyear | Epoch => Ok(Value::Float(if positive {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        })),
        _ => Err(not_supported(unit, ty)),
    }
}

fn date_part_of_date(unit: &str, u: Unit, days: i64) -> Result<Value> {
    use Unit::*;
    let (y, m, d) = civil_from_days(days);
    let (y, m, d) = (y, i64::from(m), i64::from(d));
    let i = match u {
        Day => d,
        Month => m,
        Quarter => (m - 1) / 3 + 1,
        Week => iso_week(y, m, d).0,
        Dow => dow(days),
        Isodow => match dow(days) {
            0 => 7,
            x => x,
        },
        Doy => days - days_from_civil(y, 1, 1) + 1,
        Year => bc_year(y),
        Decade => decade(y),
        Century => century(y),
        Millennium => millennium(y),
        Isoyear => bc_year(iso_week(y, m, d).1),
        Julian => date2j(days),
        Epoch => days * 86_400,
        Microsec | Millisec | Second | Minute | Hour | Tz | TzHour | TzMinute | Reserved => {
            return Err(not_supported(unit, "date"))
        }
    };
    Ok(Value::Numeric(Decimal::from(i)))
}

fn timestamp_part(unit: &str, u: Unit, us: i64, tz: bool, as_numeric: bool) -> Result<Value> {
    use Unit::*;
    let ty = if tz {
        "timestamp with time zone"
    } else {
        "timestamp without time zone"
    };
    // A timestamptz's fields are those of its local time in the session zone.
    let (off, epoch) = (if tz { session_zone::offset_at(us) } else { 0 }, us);
    let us = us.saturating_add(off * USECS_PER_SEC);
    let tm = Tm::of(us);
    let days = us.div_euclid(MICROS_PER_DAY);
    let i = match u {
        Microsec => tm.sec * USECS_PER_SEC + tm.fsec,
        Millisec => return Ok(part_scaled(tm.sec * USECS_PER_SEC + tm.fsec, 3, as_numeric)),
        Second => return Ok(part_scaled(tm.sec * USECS_PER_SEC + tm.fsec, 6, as_numeric)),
        Epoch => return Ok(part_scaled(epoch, 6, as_numeric)),
        Minute => tm.min,
        Hour => tm.hour,
        Day => tm.mday,
        Month => tm.mon,
        Quarter => (tm.mon - 1) / 3 + 1,
        Week => iso_week(tm.year, tm.mon, tm.mday).0,
        Year => bc_year(tm.year),
        Decade => decade(tm.year),
        Century => century(tm.year),
        Millennium => millennium(tm.year),
        Julian => {
            let tod = us.rem_euclid(MICROS_PER_DAY);
            if as_numeric {
                let frac = numeric::div(Decimal::from(tod), Decimal::from(MICROS_PER_DAY))?;
                let day = Decimal::from(date2j(days));
                return Ok(Value::Numeric(match numeric::add(day, frac) {
                    Ok(d) => d,
                    // At midnight PostgreSQL's zero fraction has 28 digits after the point,
                    // more than fit beside the day: the same value with as many as fit.
                    Err(_) if tod == 0 => widest_scale(date2j(days)),
                    Err(e) => return Err(e),
                }));
            }
            let secs = (tm.hour * 60 + tm.min) * 60 + tm.sec;
            let f = date2j(days) as f64 + (secs as f64 + tm.fsec as f64 / 1e6) / 86_400.0;
            return Ok(Value::Float(f));
        }
        Isoyear => bc_year(iso_week(tm.year, tm.mon, tm.mday).1),
        Dow => dow(days),
        Isodow => match dow(days) {
            0 => 7,
            x => x,
        },
        Doy => days - days_from_civil(tm.year, 1, 1) + 1,
        Tz if tz => off,
        TzHour if tz => off / 3600,
        TzMinute if tz => (off / 60) % 60,
        Tz | TzHour | TzMinute | Reserved => return Err(not_supported(unit, ty)),
    };
    Ok(part_int(i, as_numeric))
}

/// The integer `n` as numeric with the most digits after the point (zeros) that numeric holds.
fn widest_scale(n: i64) -> Decimal {
    (0..=28u32)
        .rev()
        .find_map(|s| {
            let m = i128::from(n).checked_mul(10i128.checked_pow(s)?)?;
            Decimal::try_from_i128_with_scale(m, s).ok()
        })
        .unwrap_or_else(|| Decimal::from(n))
}

fn interval_part(unit: &str, u: Unit, iv: &Interval, as_numeric: bool) -> Result<Value> {
    use Unit::*;
    let tm = Tm::of_interval(iv);
    let i = match u {
        Microsec => tm.sec * USECS_PER_SEC + tm.fsec,
        Millisec => return Ok(part_scaled(tm.sec * USECS_PER_SEC + tm.fsec, 3, as_numeric)),
        Second => return Ok(part_scaled(tm.sec * USECS_PER_SEC + tm.fsec, 6, as_numeric)),
        Minute => tm.min,
        Hour => tm.hour,
        Day => tm.mday,
        Month => tm.mon,
        Quarter => tm.mon / 3 + 1,
        Year => tm.year,
        Decade => tm.year / 10,
        Century => tm.year / 100,
        Millennium => tm.year / 1000,
        Epoch => {
            let (months, days) = (i64::from(iv.months), i64::from(iv.days));
            if as_numeric {
                // A year is 365.25 days, a month 30.
                let secs = 31_557_600 * (months / 12) + 2_592_000 * (months % 12) + 86_400 * days;
                let us = i128::from(secs) * 1_000_000 + i128::from(iv.micros);
                let n = i64::try_from(us).map_err(|_| numeric::overflow())?;
                return Ok(Value::Numeric(Decimal::new(n, 6)));
            }
            let f = iv.micros as f64 / 1e6
                + 31_557_600.0 * (months / 12) as f64
                + 2_592_000.0 * (months % 12) as f64
                + 86_400.0 * days as f64;
            return Ok(Value::Float(f));
        }
        Reserved => return Err(not_recognized(unit, "interval")),
        _ => return Err(not_supported(unit, "interval")),
    };
    Ok(part_int(i, as_numeric))
}

/// `date_trunc(unit, x)` of a timestamp, timestamptz or interval.
fn trunc(unit: &str, v: &Value) -> Result<Value> {
    use Unit::*;
    // An infinity truncates to itself, whatever the unit (PostgreSQL returns it before reading
    // the unit).
    if let Value::Timestamp(t) | Value::TimestampTz(t) = v {
        if !ts_is_finite(*t) {
            return Ok(v.clone());
        }
    }
    let Some(u) = decode_unit(unit) else {
        return Err(not_recognized(unit, v.type_name()));
    };
    if let Value::Interval(iv) = v {
        let mut tm = Tm::of_interval(iv);
        match u {
            Millennium => tm.year = tm.year / 1000 * 1000,
            Century => tm.year = tm.year / 100 * 100,
            Decade => tm.year = tm.year / 10 * 10,
            Week => {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    format!("unit \"{}\" not supported for type interval", unit.to_lowercase()),
                ))
            }
            Year | Quarter | Month | Day | Hour | Minute | Second | Millisec | Microsec => {}
            Tz | TzHour | TzMinute => return Err(not_supported(unit, "interval")),
            // date_trunc knows only the units of intervals (not dow, epoch, ...).
            _ => return Err(not_recognized(unit, "interval")),
        }
        let rank = trunc_rank(u);
        if rank >= 9 {
            tm.mon = 0;
        } else if rank == 8 {
            tm.mon = 3 * (tm.mon / 3);
        }
        if rank >= 7 {
            tm.mday = 0;
        }
        clear_time(&mut tm, rank);
        let months = tm.year * 12 + tm.mon;
        let micros = ((tm.hour * 60 + tm.min) * 60 + tm.sec) * USECS_PER_SEC + tm.fsec;
        return Ok(Value::Interval(Interval::new(
            months as i32,
            tm.mday as i32,
            micros,
        )));
    }
    let (us, tz) = match v {
        Value::Timestamp(t) => (*t, false),
        Value::TimestampTz(t) => (*t, true),
        _ => return Ok(Value::Null),
    };
    if !ts_is_finite(us) {
        return Ok(v.clone());
    }
    let ty = v.type_name();
    // A timestamptz truncates its local time in the session zone.
    let off = if tz { session_zone::offset_at(us) } else { 0 };
    let us = us.saturating_add(off * USECS_PER_SEC);
    let mut tm = Tm::of(us);
    match u {
        Week => {
            let days = us.div_euclid(MICROS_PER_DAY);
            let monday = days - (dow(days) + 6) % 7;
            let (y, m, d) = civil_from_days(monday);
            tm = Tm {
                year: y,
                mon: i64::from(m),
                mday: i64::from(d),
                ..Tm::default()
            };
        }
        Millennium | Century | Decade | Year | Quarter | Month | Day | Hour | Minute | Second | Millisec
        | Microsec => {
            let y = tm.year;
            match u {
                Millennium if y > 0 => tm.year = (y + 999) / 1000 * 1000 - 999,
                Millennium => tm.year = -((999 - (y - 1)) / 1000) * 1000 + 1,
                Century if y > 0 => tm.year = (y + 99) / 100 * 100 - 99,
                Century => tm.year = -((99 - (y - 1)) / 100) * 100 + 1,
                Decade if y > 0 => tm.year = y / 10 * 10,
                Decade => tm.year = -((8 - (y - 1)) / 10) * 10,
                _ => {}
            }
            let rank = trunc_rank(u);
            if rank >= 9 {
                tm.mon = 1;
            } else if rank == 8 {
                tm.mon = 3 * ((tm.mon - 1) / 3) + 1;
            }
            if rank >= 7 {
                tm.mday = 1;
            }
            clear_time(&mut tm, rank);
        }
        Tz | TzHour | TzMinute => return Err(not_supported(unit, ty)),
        Julian | Dow | Isodow | Doy | Isoyear | Epoch | Reserved => return Err(not_recognized(unit, ty)),
    }
    let t = tm.to_us()?;
    Ok(if tz {
        // Units of a day or more take the offset in force at the result (PostgreSQL's
        // redotz); shorter ones keep the value's.
        let t = if matches!(u, Week) || trunc_rank(u) >= 6 {
            session_zone::from_local(t)
        } else {
            t.checked_sub(off * USECS_PER_SEC)
        };
        Value::TimestampTz(
            t.ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))?,
        )
    } else {
        Value::Timestamp(t)
    })
}

/// How far date_trunc's cascade of fields reaches: 1 microseconds ... 9 year and above.
fn trunc_rank(u: Unit) -> u8 {
    match u {
        Unit::Microsec => 1,
        Unit::Millisec => 2,
        Unit::Second => 3,
        Unit::Minute => 4,
        Unit::Hour => 5,
        Unit::Day => 6,
        Unit::Month => 7,
        Unit::Quarter => 8,
        _ => 9,
    }
}

fn clear_time(tm: &mut Tm, rank: u8) {
    if rank >= 6 {
        tm.hour = 0;
    }
    if rank >= 5 {
        tm.min = 0;
    }
    if rank >= 4 {
        tm.sec = 0;
    }
    if rank >= 3 {
        tm.fsec = 0;
    }
    if rank == 2 {
        tm.fsec = tm.fsec / 1000 * 1000;
    }
}

/// A time zone argument: text (an abbreviation such as `UTC` or `EST`, an IANA name such as
/// `Europe/Berlin`, a POSIX offset such as `+05`, positive west) or an interval (east).
fn zone_arg(zone: &Value) -> Result<Zone> {
    match zone {
        Value::Interval(iv) => {
            if iv.months != 0 || iv.days != 0 {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!(
                        "interval time zone \"{}\" must not include months or days",
                        crate::types::interval::format(iv)
                    ),
                ));
            }
            Ok(Zone::Fixed(iv.micros / USECS_PER_SEC))
        }
        Value::Text(s) => Zone::parse(s).ok_or_else(|| {
            Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("time zone \"{s}\" not recognized"),
            )
        }),
        _ => Ok(Zone::Fixed(0)),
    }
}

fn at_zone(f: DtFn, zone: &Value, ts: &Value) -> Result<Value> {
    let zone = zone_arg(zone)?;
    let oor = || Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range");
    let us = match ts {
        Value::Timestamp(t) | Value::TimestampTz(t) => *t,
        _ => return Ok(Value::Null),
    };
    // An infinity is the same infinity in every zone.
    let t = if !ts_is_finite(us) {
        Some(us)
    } else if f == DtFn::LocalToZone {
        us.checked_sub(zone.offset_of_local(us) * USECS_PER_SEC)
    } else {
        us.checked_add(zone.offset_at(us) * USECS_PER_SEC)
    };
    let t = t
        .filter(|t| !ts_is_finite(us) || TIMESTAMP_RANGE.contains(t))
        .ok_or_else(oor)?;
    Ok(if f == DtFn::LocalToZone {
        Value::TimestampTz(t)
    } else {
        Value::Timestamp(t)
    })
}

/// The fields of a date from make_date / make_timestamp (a negative year is BC); 22008 as
/// PostgreSQL for a date that does not exist.
fn make_tm(y: i64, m: i64, d: i64) -> Result<Tm> {
    let year = if y < 0 { y + 1 } else { y };
    let ok = y != 0 && (1..=12).contains(&m) && d >= 1 && d <= i64::from(days_in_month(year, m as u32));
    if !ok || year.abs() > 5_800_000 {
        return Err(Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!("date field value out of range: {y}-{m:02}-{d:02}"),
        ));
    }
    Ok(Tm {
        year,
        mon: m,
        mday: d,
        ..Tm::default()
    })
}

fn make_timestamp(vals: &[Value]) -> Result<Value> {
    let mut tm = make_tm(int(&vals[0]), int(&vals[1]), int(&vals[2]))?;
    let (h, mi, sec) = (int(&vals[3]), int(&vals[4]), float(&vals[5]));
    let us = (sec * 1e6).round_ties_even();
    let ok = (0..=24).contains(&h)
        && (0..=59).contains(&mi)
        && (0.0..=60.0).contains(&sec)
        && (h < 24 || (mi == 0 && us == 0.0));
    if !ok || sec.is_nan() {
        return Err(Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!(
                "time field value out of range: {h}:{mi:02}:{:02}",
                crate::types::format_float(sec)
            ),
        ));
    }
    let us = us as i64;
    tm.hour = h;
    tm.min = mi;
    tm.sec = us / USECS_PER_SEC;
    tm.fsec = us % USECS_PER_SEC;
    let days = tm.days();
    let t = days
        .checked_mul(MICROS_PER_DAY)
        .and_then(|d| d.checked_add(((h * 60 + mi) * 60) * USECS_PER_SEC + us))
        .filter(|t| TIMESTAMP_RANGE.contains(t))
        .ok_or_else(|| {
            Error::new(
                SqlState::DATETIME_FIELD_OVERFLOW,
                format!(
                    "timestamp out of range: {}-{:02}-{:02} {h}:{mi:02}:{}",
                    int(&vals[0]),
                    tm.mon,
                    tm.mday,
                    crate::types::format_float(sec)
                ),
            )
        })?;
    Ok(Value::Timestamp(t))
}

fn interval_oor() -> Error {
    Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "interval out of range")
}

fn make_interval(vals: &[Value]) -> Result<Value> {
    let i = |k: usize| int(&vals[k]);
    let secs = float(&vals[6]);
    if secs.is_nan() || secs.is_infinite() {
        return Err(interval_oor());
    }
    let months = i(0)
        .checked_mul(12)
        .and_then(|m| m.checked_add(i(1)))
        .and_then(|m| i32::try_from(m).ok())
        .ok_or_else(interval_oor)?;
    let days = i(2)
        .checked_mul(7)
        .and_then(|d| d.checked_add(i(3)))
        .and_then(|d| i32::try_from(d).ok())
        .ok_or_else(interval_oor)?;
    let us = (secs * 1e6).round_ties_even();
    if us >= i64::MAX as f64 || us < i64::MIN as f64 {
        return Err(interval_oor());
    }
    let micros = i(4)
        .checked_mul(USECS_PER_HOUR)
        .and_then(|h| {
            i(5).checked_mul(60 * USECS_PER_SEC)
                .and_then(|m| h.checked_add(m))
        })
        .and_then(|t| t.checked_add(us as i64))
        .ok_or_else(interval_oor)?;
    Ok(Value::Interval(Interval::new(months, days, micros)))
}

/// `age(a, b)`: PostgreSQL's timestamp_age, field by field with borrows.
fn age(a: &Value, b: &Value) -> Result<Value> {
    // PostgreSQL 15 reads an infinity's bits as a far-future date here (a meaningless
    // interval); Augur refuses it.
    let infinite = |v: &Value| match v {
        Value::Timestamp(t) | Value::TimestampTz(t) => !ts_is_finite(*t),
        Value::Date(d) => !date_is_finite(*d),
        _ => false,
    };
    if infinite(a) || infinite(b) {
        return Err(Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            "timestamp out of range: age of an infinite value",
        ));
    }
    let us = |v: &Value| match v {
        Value::Timestamp(t) => *t,
        Value::TimestampTz(t) => session_zone::to_local(*t),
        Value::Date(d) => i64::from(*d) * MICROS_PER_DAY,
        _ => 0,
    };
    let (dt1, dt2) = (us(a), us(b));
    let (t1, t2) = (Tm::of(dt1), Tm::of(dt2));
    let mut tm = Tm {
        year: t1.year - t2.year,
        mon: t1.mon - t2.mon,
        mday: t1.mday - t2.mday,
        hour: t1.hour - t2.hour,
        min: t1.min - t2.min,
        sec: t1.sec - t2.sec,
        fsec: t1.fsec - t2.fsec,
    };
    let neg = |tm: &mut Tm| {
        for f in [
            &mut tm.year,
            &mut tm.mon,
            &mut tm.mday,
            &mut tm.hour,
            &mut tm.min,
            &mut tm.sec,
            &mut tm.fsec,
        ] {
            *f = -*f;
        }
    };
    if dt1 < dt2 {
        neg(&mut tm);
    }
    while tm.fsec < 0 {
        tm.fsec += USECS_PER_SEC;
        tm.sec -= 1;
    }
    while tm.sec < 0 {
        tm.sec += 60;
        tm.min -= 1;
    }
    while tm.min < 0 {
        tm.min += 60;
        tm.hour -= 1;
    }
    while tm.hour < 0 {
        tm.hour += 24;
        tm.mday -= 1;
    }
    while tm.mday < 0 {
        let t = if dt1 < dt2 { t1 } else { t2 };
        tm.mday += i64::from(days_in_month(t.year, t.mon as u32));
        tm.mon -= 1;
    }
    while tm.mon < 0 {
        tm.mon += 12;
        tm.year -= 1;
    }
    if dt1 < dt2 {
        neg(&mut tm);
    }
    let months = i32::try_from(tm.year * 12 + tm.mon).map_err(|_| interval_oor())?;
    let micros = ((tm.hour * 60 + tm.min) * 60 + tm.sec) * USECS_PER_SEC + tm.fsec;
    Ok(Value::Interval(Interval::new(months, tm.mday as i32, micros)))
}

fn justify_days(mut iv: Interval) -> Result<Interval> {
    let whole = iv.days / 30;
    iv.days -= whole * 30;
    iv.months = iv.months.checked_add(whole).ok_or_else(interval_oor)?;
    if iv.months > 0 && iv.days < 0 {
        iv.days += 30;
        iv.months -= 1;
    } else if iv.months < 0 && iv.days > 0 {
        iv.days -= 30;
        iv.months += 1;
    }
    Ok(iv)
}

/// Moves a day between the days and the time of day when their signs differ, as PostgreSQL's
/// justify functions end.
fn day_and_time_one_sign(iv: &mut Interval) {
    if iv.days > 0 && iv.micros < 0 {
        iv.micros += MICROS_PER_DAY;
        iv.days -= 1;
    } else if iv.days < 0 && iv.micros > 0 {
        iv.micros -= MICROS_PER_DAY;
        iv.days += 1;
    }
}

fn justify_hours(mut iv: Interval) -> Result<Interval> {
    let whole = iv.micros / MICROS_PER_DAY;
    iv.micros -= whole * MICROS_PER_DAY;
    iv.days = i32::try_from(i64::from(iv.days) + whole).map_err(|_| interval_oor())?;
    day_and_time_one_sign(&mut iv);
    Ok(iv)
}

fn justify_interval(mut iv: Interval) -> Result<Interval> {
    if (iv.days > 0 && iv.micros > 0) || (iv.days < 0 && iv.micros < 0) {
        let whole = iv.days / 30;
        iv.days -= whole * 30;
        iv.months = iv.months.checked_add(whole).ok_or_else(interval_oor)?;
    }
    let whole = iv.micros / MICROS_PER_DAY;
    iv.micros -= whole * MICROS_PER_DAY;
    iv.days = i32::try_from(i64::from(iv.days) + whole).map_err(|_| interval_oor())?;
    let whole = iv.days / 30;
    iv.days -= whole * 30;
    iv.months = iv.months.checked_add(whole).ok_or_else(interval_oor)?;
    if iv.months > 0 && (iv.days < 0 || (iv.days == 0 && iv.micros < 0)) {
        iv.days += 30;
        iv.months -= 1;
    } else if iv.months < 0 && (iv.days > 0 || (iv.days == 0 && iv.micros > 0)) {
        iv.days -= 30;
        iv.months += 1;
    }
    day_and_time_one_sign(&mut iv);
    Ok(iv)
}

/// `to_timestamp(seconds)`, rounded to microseconds as PostgreSQL rounds it (from its own
/// epoch, 2000-01-01).
fn to_timestamp_epoch(secs: f64) -> Result<Value> {
    if secs.is_nan() {
        return Err(Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            "timestamp cannot be NaN",
        ));
    }
    let oor = || {
        Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!("timestamp out of range: \"{}\"", crate::types::format_float(secs)),
        )
    };
    // An infinite float is the infinite timestamptz of its sign, as PostgreSQL's.
    if secs.is_infinite() {
        return Ok(Value::TimestampTz(if secs > 0.0 {
            TS_INFINITY
        } else {
            crate::types::TS_NEG_INFINITY
        }));
    }
    const PG_EPOCH_SECS: i64 = 946_684_800;
    let lo = TIMESTAMP_RANGE.start as f64 / 1e6;
    let hi = TIMESTAMP_RANGE.end as f64 / 1e6;
    if secs.is_infinite() || secs < lo || secs >= hi {
        return Err(oor());
    }
    let us = ((secs - PG_EPOCH_SECS as f64) * 1e6).round_ties_even() as i64;
    let t = us
        .checked_add(PG_EPOCH_SECS * USECS_PER_SEC)
        .filter(|t| TIMESTAMP_RANGE.contains(t))
        .ok_or_else(oor)?;
    Ok(Value::TimestampTz(t))
}
