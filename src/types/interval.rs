//! `interval`: months, days and microseconds, kept apart as PostgreSQL keeps them (a month is
//! not a fixed number of days); text input in PostgreSQL's forms, output in its default
//! IntervalStyle (`postgres`), its order (a month counted as 30 days, a day as 24 hours) and the
//! arithmetic with timestamps and dates.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::datetime::{add_months, TIMESTAMP_RANGE};
use crate::error::{Error, Result, SqlState};

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
const DAYS_PER_MONTH: i64 = 30;

/// An interval as PostgreSQL stores it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// 22008, PostgreSQL's error for an interval or timestamp past its range.
fn out_of_range(what: &str) -> Error {
    Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("{what} out of range"))
}

impl Interval {
    pub const fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval { months, days, micros }
    }

    /// The length PostgreSQL orders and compares intervals by: a month as 30 days, a day as
    /// 24 hours (`'1 month' = '30 days'`).
    pub fn span(&self) -> i128 {
        let days = i128::from(self.months) * i128::from(DAYS_PER_MONTH) + i128::from(self.days);
        days * i128::from(USECS_PER_DAY) + i128::from(self.micros)
    }

    /// Some interval with this span (months, then days, then microseconds, each as large as it
    /// fits): what a key's bytes decode to.
    pub fn from_span(span: i128) -> Option<Interval> {
        let month = i128::from(DAYS_PER_MONTH * USECS_PER_DAY);
        let months = span
            .div_euclid(month)
            .clamp(i128::from(i32::MIN), i128::from(i32::MAX));
        let rest = span - months * month;
        let days = rest
            .div_euclid(i128::from(USECS_PER_DAY))
            .clamp(i128::from(i32::MIN), i128::from(i32::MAX));
        let micros = i64::try_from(rest - days * i128::from(USECS_PER_DAY)).ok()?;
        Some(Interval::new(months as i32, days as i32, micros))
    }

    pub fn cmp_span(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    /// `-interval`.
    pub fn neg(&self) -> Result<Interval> {
        Ok(Interval::new(
            self.months
                .checked_neg()
                .ok_or_else(|| out_of_range("interval"))?,
            self.days.checked_neg().ok_or_else(|| out_of_range("interval"))?,
            self.micros
                .checked_neg()
                .ok_or_else(|| out_of_range("interval"))?,
        ))
    }

    /// `interval + interval`, field by field.
    pub fn add(&self, o: &Interval) -> Result<Interval> {
        Ok(Interval::new(
            self.months
                .checked_add(o.months)
                .ok_or_else(|| out_of_range("interval"))?,
            self.days
                .checked_add(o.days)
                .ok_or_else(|| out_of_range("interval"))?,
            self.micros
                .checked_add(o.micros)
                .ok_or_else(|| out_of_range("interval"))?,
        ))
    }

    pub fn sub(&self, o: &Interval) -> Result<Interval> {
        self.add(&o.neg()?)
    }

    /// `interval * factor` (PostgreSQL's interval_mul): whole months and days scaled, their
    /// fractions carried down into days and seconds, never up.
    pub fn mul(&self, factor: f64) -> Result<Interval> {
        self.scale(|x| x * factor)
    }

    /// `interval / factor` (PostgreSQL's interval_div); 22012 for a zero factor.
    pub fn div(&self, factor: f64) -> Result<Interval> {
        if factor == 0.0 {
            return Err(Error::new(SqlState::DIVISION_BY_ZERO, "division by zero"));
        }
        self.scale(|x| x / factor)
    }

    fn scale(&self, by: impl Fn(f64) -> f64) -> Result<Interval> {
        let oor = || out_of_range("interval");
        let fits_i32 = |x: f64| !x.is_nan() && x <= f64::from(i32::MAX) && x >= f64::from(i32::MIN);
        let month_f = by(f64::from(self.months));
        let day_f = by(f64::from(self.days));
        if !fits_i32(month_f) || !fits_i32(day_f) {
            return Err(oor());
        }
        let (months, mut days) = (month_f as i32, day_f as i32);
        // TSROUND: microsecond precision, so whole numbers come out whole.
        let tsround = |x: f64| (x * 1e6).round_ties_even() / 1e6;
        let month_remainder_days = tsround((month_f - f64::from(months)) * DAYS_PER_MONTH as f64);
        let mut sec_remainder = tsround(
            (day_f - f64::from(days) + month_remainder_days - month_remainder_days.trunc()) * 86_400.0,
        );
        if sec_remainder.abs() >= 86_400.0 {
            let whole = (sec_remainder / 86_400.0).trunc();
            days = days.checked_add(whole as i32).ok_or_else(oor)?;
            sec_remainder -= whole * 86_400.0;
        }
        days = days
            .checked_add(month_remainder_days.trunc() as i32)
            .ok_or_else(oor)?;
        let micros = (by(self.micros as f64) + sec_remainder * 1e6).round_ties_even();
        if micros.is_nan() || micros < i64::MIN as f64 || micros >= i64::MAX as f64 {
            return Err(oor());
        }
        Ok(Interval::new(months, days, micros as i64))
    }

    /// `timestamp + interval` (microseconds since the epoch; a timestamptz adds months and
    /// days in the session zone, `session_zone::add_interval`): calendar months first with the day clamped to
    /// the month's end, then days, then time; 22008 past the timestamp range.
    pub fn add_to(&self, us: i64) -> Result<i64> {
        // `infinity` / `-infinity` plus an interval stays that infinity, as in PostgreSQL.
        if !super::datetime::ts_is_finite(us) {
            return Ok(us);
        }
        let oor = || out_of_range("timestamp");
        let t = if self.months != 0 {
            add_months(us, i64::from(self.months)).ok_or_else(oor)?
        } else {
            us
        };
        let t = i64::from(self.days)
            .checked_mul(USECS_PER_DAY)
            .and_then(|d| t.checked_add(d))
            .and_then(|t| t.checked_add(self.micros))
            .ok_or_else(oor)?;
        if !TIMESTAMP_RANGE.contains(&t) {
            return Err(oor());
        }
        Ok(t)
    }

    /// `timestamp - timestamp`: the difference in days and time (PostgreSQL's timestamp_mi
    /// justifies whole days out of the hours, never months).
    pub fn between(a: i64, b: i64) -> Result<Interval> {
        let diff = a.checked_sub(b).ok_or_else(|| out_of_range("interval"))?;
        let days = diff / USECS_PER_DAY;
        Ok(Interval::new(0, days as i32, diff - days * USECS_PER_DAY))
    }
}

/// Order-preserving bytes of an interval key: its span as a 128-bit big-endian integer with
/// the sign bit flipped (intervals with one span are one key, as they compare equal).
pub fn encode_key(iv: &Interval, out: &mut Vec<u8>) {
    out.extend_from_slice(&((iv.span() as u128) ^ (1 << 127)).to_be_bytes());
}

/// The inverse of [`encode_key`] (an interval with that span).
pub fn decode_key(b: [u8; 16]) -> Option<Interval> {
    Interval::from_span((u128::from_be_bytes(b) ^ (1 << 127)) as i128)
}

/// PostgreSQL's interval output in the default IntervalStyle (`postgres`): `1 year 2 mons
/// 3 days 04:05:06.5`, `-1 days +02:00:00`, `00:00:00`.
pub fn format(iv: &Interval) -> String {
    let mut out = String::new();
    let (mut is_zero, mut is_before) = (true, false);
    let mut part = |out: &mut String, value: i64, unit: &str| {
        if value == 0 {
            return;
        }
        if !is_zero {
            out.push(' ');
        }
        if is_before && value > 0 {
            out.push('+');
        }
        out.push_str(&format!("{value} {unit}{}", if value != 1 { "s" } else { "" }));
        is_before = value < 0;
        is_zero = false;
    };
    let months = i64::from(iv.months);
    part(&mut out, months / 12, "year");
    part(&mut out, months % 12, "mon");
    part(&mut out, i64::from(iv.days), "day");
    let t = iv.micros;
    let (hour, min, sec, frac) = (
        t / USECS_PER_HOUR,
        (t % USECS_PER_HOUR) / USECS_PER_MINUTE,
        (t % USECS_PER_MINUTE) / USECS_PER_SEC,
        t % USECS_PER_SEC,
    );
    if is_zero || t != 0 {
        let minus = t < 0;
        if !is_zero {
            out.push(' ');
        }
        out.push_str(if minus {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        });
        out.push_str(&format!(
            "{:02}:{:02}:{:02}",
            hour.unsigned_abs(),
            min.unsigned_abs(),
            sec.unsigned_abs()
        ));
        if frac != 0 {
            let f = format!(".{:06}", frac.unsigned_abs());
            out.push_str(f.trim_end_matches('0'));
        }
    }
    out
}

/// One unit of interval input, in microseconds, days or months.
enum Unit {
    Micros(i64),
    Days(i64),
    Months(i64),
}

fn unit(word: &str) -> Option<Unit> {
    Some(match word {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => Unit::Micros(1),
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => Unit::Micros(1_000),
        "second" | "seconds" | "s" | "sec" | "secs" => Unit::Micros(USECS_PER_SEC),
        "minute" | "minutes" | "m" | "min" | "mins" => Unit::Micros(USECS_PER_MINUTE),
        "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Micros(USECS_PER_HOUR),
        "day" | "days" | "d" => Unit::Days(1),
        "week" | "weeks" | "w" => Unit::Days(7),
        "month" | "months" | "mon" | "mons" => Unit::Months(1),
        "year" | "years" | "y" | "yr" | "yrs" => Unit::Months(12),
        "decade" | "decades" | "dec" | "decs" => Unit::Months(120),
        "century" | "centuries" | "c" | "cent" => Unit::Months(1200),
        "millennium" | "millennia" | "mil" | "mils" => Unit::Months(12000),
        _ => return None,
    })
}

/// The pieces of interval input: numbers (with their sign and fraction), `h:m[:s]` times, and
/// words.
#[derive(Debug, PartialEq)]
enum Tok {
    Num(f64),
    Time(i64),
    Word(String),
}

fn tokens(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || c == b',' {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'@' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'@') {
                i += 1;
            }
            out.push(Tok::Word(s[start..i].to_ascii_lowercase()));
        } else if c.is_ascii_digit() || c == b'-' || c == b'+' || c == b'.' {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b':') {
                i += 1;
            }
            let t = &s[start..i];
            out.push(if t.contains(':') {
                Tok::Time(time_micros(t)?)
            } else {
                let n: f64 = t.parse().ok()?;
                if !n.is_finite() {
                    return None;
                }
                Tok::Num(n)
            });
        } else {
            return None;
        }
    }
    Some(out)
}

/// `[-+]h:m[:s[.frac]]` in microseconds.
fn time_micros(t: &str) -> Option<i64> {
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut parts = body.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let s: f64 = match parts.next() {
        Some(x) if !x.is_empty() && !x.starts_with(['+', '-']) => x.parse().ok()?,
        Some(_) => return None,
        None => 0.0,
    };
    if parts.next().is_some() || !(0..60).contains(&m) || !(0.0..60.0).contains(&s) {
        return None;
    }
    let us = h
        .checked_mul(USECS_PER_HOUR)?
        .checked_add(m * USECS_PER_MINUTE)?
        .checked_add((s * 1e6).round() as i64)?;
    Some(if neg { -us } else { us })
}

/// PostgreSQL's interval input (the `postgres` style and ISO 8601's `P1Y2M3DT4H5M6S`): numbers
/// with units (`1 year 2 months`, `1.5 days`, `3h`), `h:m:s` times, a leading number before a
/// time as days (`3 04:05:06`), a bare number as seconds, `@` and a trailing `ago`. 22007 for
/// anything else, 22008 past the range.
pub fn parse(s: &str) -> Result<Interval> {
    let bad = || {
        Error::new(
            SqlState("22007"),
            format!("invalid input syntax for type interval: \"{s}\""),
        )
    };
    let t = s.trim();
    if let Some(iso) = t.strip_prefix(['P', 'p']) {
        return parse_iso(iso).ok_or_else(bad)?;
    }
    let mut toks = tokens(t).ok_or_else(bad)?;
    if toks.first() == Some(&Tok::Word("@".into())) {
        toks.remove(0);
    }
    let ago = toks.last() == Some(&Tok::Word("ago".into()));
    if ago {
        toks.pop();
    }
    if toks.is_empty() {
        return Err(bad());
    }
    // Months, days and microseconds as doubles while reading (fractions cascade down).
    let (mut months, mut days, mut micros) = (0f64, 0f64, 0f64);
    let mut i = 0;
    while i < toks.len() {
        match (&toks[i], toks.get(i + 1)) {
            (Tok::Num(n), Some(Tok::Word(w))) => {
                let n = *n;
                match unit(w).ok_or_else(bad)? {
                    Unit::Micros(per) => micros += n * per as f64,
                    Unit::Days(per) => {
                        let d = n * per as f64;
                        days += d.trunc();
                        micros += d.fract() * USECS_PER_DAY as f64;
                    }
                    Unit::Months(1) => {
                        months += n.trunc();
                        let d = n.fract() * DAYS_PER_MONTH as f64;
                        days += d.trunc();
                        micros += d.fract() * USECS_PER_DAY as f64;
                    }
                    // Years and longer: fractions in whole months (PostgreSQL rounds them).
                    Unit::Months(per) => months += n.trunc() * per as f64 + (n.fract() * per as f64).round(),
                }
                i += 2;
            }
            // `3 04:05:06`: days before a time.
            (Tok::Num(n), Some(Tok::Time(us))) if n.fract() == 0.0 => {
                days += n;
                micros += *us as f64;
                i += 2;
            }
            (Tok::Time(us), _) => {
                micros += *us as f64;
                i += 1;
            }
            // A number alone at the end counts seconds.
            (Tok::Num(n), None) => {
                micros += n * USECS_PER_SEC as f64;
                i += 1;
            }
            _ => return Err(bad()),
        }
    }
    let iv = from_parts(months, days, micros).ok_or_else(|| {
        Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!("interval field value out of range: \"{s}\""),
        )
    })?;
    if ago {
        iv.neg()
    } else {
        Ok(iv)
    }
}

fn from_parts(months: f64, days: f64, micros: f64) -> Option<Interval> {
    let i32_of = |x: f64| (x >= f64::from(i32::MIN) && x <= f64::from(i32::MAX)).then_some(x as i32);
    let micros = micros.round();
    if micros.is_nan() || micros < i64::MIN as f64 || micros >= i64::MAX as f64 {
        return None;
    }
    Some(Interval::new(i32_of(months)?, i32_of(days)?, micros as i64))
}

/// ISO 8601 designators after the `P`: `nY nM nW nD` then `T nH nM nS`.
fn parse_iso(s: &str) -> Option<Result<Interval>> {
    let (date, time) = match s.split_once(['T', 't']) {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let (mut months, mut days, mut micros) = (0f64, 0f64, 0f64);
    let mut any = false;
    for (part, is_time) in [(date, false), (time.unwrap_or(""), true)] {
        let mut num = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' || c == '-' || c == '+' {
                num.push(c);
                continue;
            }
            let n: f64 = num.parse().ok()?;
            num.clear();
            any = true;
            match (c.to_ascii_uppercase(), is_time) {
                ('Y', false) => months += (n * 12.0).round(),
                ('M', false) => {
                    months += n.trunc();
                    days += n.fract() * 30.0;
                }
                ('W', false) => days += n * 7.0,
                ('D', false) => days += n,
                ('H', true) => micros += n * USECS_PER_HOUR as f64,
                ('M', true) => micros += n * USECS_PER_MINUTE as f64,
                ('S', true) => micros += n * USECS_PER_SEC as f64,
                _ => return None,
            }
        }
        if !num.is_empty() {
            return None;
        }
    }
    if !any || time == Some("") {
        return None;
    }
    micros += days.fract() * USECS_PER_DAY as f64;
    Some(from_parts(months, days.trunc(), micros).ok_or_else(|| out_of_range("interval")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(s: &str) -> String {
        format(&parse(s).unwrap())
    }

    #[test]
    fn input_and_output_as_postgres() {
        for (input, shown) in [
            ("1 day", "1 day"),
            ("2 days", "2 days"),
            ("25 hours", "25:00:00"),
            (
                "1 year 2 months 3 days 4 hours 5 minutes 6 seconds",
                "1 year 2 mons 3 days 04:05:06",
            ),
            ("1 year 2 mons 3 days 04:05:06", "1 year 2 mons 3 days 04:05:06"),
            ("-1 day 2 hours", "-1 days +02:00:00"),
            ("-1 days -02:00:00", "-1 days -02:00:00"),
            ("1 day -1 hour", "1 day -01:00:00"),
            ("0", "00:00:00"),
            ("1.5 days", "1 day 12:00:00"),
            ("1.5 months", "1 mon 15 days"),
            ("1.5 years", "1 year 6 mons"),
            ("90 minutes", "01:30:00"),
            ("3 04:05:06.789", "3 days 04:05:06.789"),
            ("@ 2 hours ago", "-02:00:00"),
            ("1 week", "7 days"),
            ("14 months", "1 year 2 mons"),
            ("-14 months", "-1 years -2 mons"),
            ("10", "00:00:10"),
            ("1 mon -1 days", "1 mon -1 days"),
            ("P1Y2M3DT4H5M6S", "1 year 2 mons 3 days 04:05:06"),
            ("PT1.5S", "00:00:01.5"),
            ("1h30m", "01:30:00"),
            ("0.000001 seconds", "00:00:00.000001"),
        ] {
            assert_eq!(iv(input), shown, "{input}");
        }
        for bad in ["", "day", "1 fortnight", "1:60", "P", "PT", "ago", "1 2 3", "1-2"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse("2147483648 days").unwrap_err().sqlstate(),
            SqlState::DATETIME_FIELD_OVERFLOW
        );
    }

    #[test]
    fn order_counts_a_month_as_thirty_days() {
        let p = |s| parse(s).unwrap();
        assert_eq!(p("1 month").cmp_span(&p("30 days")), Ordering::Equal);
        assert_eq!(p("1 day").cmp_span(&p("24 hours")), Ordering::Equal);
        assert_eq!(p("1 year").cmp_span(&p("360 days")), Ordering::Equal);
        assert_eq!(p("1 year").cmp_span(&p("361 days")), Ordering::Less);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encode_key(&p("-1 day"), &mut a);
        encode_key(&p("1 second"), &mut b);
        assert!(a < b);
        for s in ["1 year 2 mons 3 days 04:05:06", "-1 days +02:00:00", "0"] {
            let mut k = Vec::new();
            encode_key(&p(s), &mut k);
            let back = decode_key(k[..].try_into().unwrap()).unwrap();
            assert_eq!(back.span(), p(s).span());
        }
        let extreme = Interval::new(i32::MAX, i32::MAX, i64::MAX);
        assert_eq!(
            Interval::from_span(extreme.span()).map(|i| i.span()),
            Some(extreme.span())
        );
        let extreme = Interval::new(i32::MIN, i32::MIN, i64::MIN);
        assert_eq!(
            Interval::from_span(extreme.span()).map(|i| i.span()),
            Some(extreme.span())
        );
    }

    #[test]
    fn arithmetic_as_postgres() {
        let p = |s| parse(s).unwrap();
        let ts = |s| super::super::parse_timestamp(s).unwrap();
        assert_eq!(
            p("1 month").add_to(ts("2024-01-31 10:00:00")).unwrap(),
            ts("2024-02-29 10:00:00")
        );
        assert_eq!(
            p("1 mon 1 day 01:00:00")
                .add_to(ts("2024-01-31 10:00:00"))
                .unwrap(),
            ts("2024-03-01 11:00:00")
        );
        assert_eq!(
            p("1 month")
                .neg()
                .unwrap()
                .add_to(ts("2024-03-31 00:00:00"))
                .unwrap(),
            ts("2024-02-29 00:00:00")
        );
        let d = Interval::between(ts("2024-01-02 03:00:00"), ts("2024-01-01 00:00:00")).unwrap();
        assert_eq!(format(&d), "1 day 03:00:00");
        let d = Interval::between(ts("2024-01-01 00:00:00"), ts("2024-01-02 03:00:00")).unwrap();
        assert_eq!(format(&d), "-1 days -03:00:00");
        assert_eq!(format(&p("1 day").mul(2.5).unwrap()), "2 days 12:00:00");
        assert_eq!(format(&p("1 mon").mul(1.5).unwrap()), "1 mon 15 days");
        assert_eq!(format(&p("1 mon").div(2.0).unwrap()), "15 days");
        assert_eq!(format(&p("3 days").div(2.0).unwrap()), "1 day 12:00:00");
        assert_eq!(
            p("1 day").div(0.0).unwrap_err().sqlstate(),
            SqlState::DIVISION_BY_ZERO
        );
        assert_eq!(
            format(&p("1 day").add(&p("-02:00:00")).unwrap()),
            "1 day -02:00:00"
        );
        let far = p("1000000 years");
        assert_eq!(
            far.add_to(ts("2024-01-01 00:00:00")).unwrap_err().sqlstate(),
            SqlState::DATETIME_FIELD_OVERFLOW
        );
    }
}
