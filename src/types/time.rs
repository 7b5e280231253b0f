//! `time` (time of day without time zone): microseconds since midnight, 0 to 24:00:00
//! included, PostgreSQL's text input (time_in) and output, and `time(p)` rounding.

use super::datetime::MICROS_PER_DAY;
use crate::error::{Error, Result, SqlState};

/// `HH:MM:SS[.ffffff]`, trailing zeros of the fraction dropped (PostgreSQL's output).
pub fn format_time(us: i64) -> String {
    let secs = us / 1_000_000;
    let frac = us % 1_000_000;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, (secs / 60) % 60, secs % 60);
    if frac != 0 {
        let f = format!(".{frac:06}");
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

fn syntax(s: &str) -> Error {
    Error::new(
        SqlState("22007"),
        format!("invalid input syntax for type time: \"{s}\""),
    )
}

fn overflow(s: &str) -> Error {
    Error::new(
        SqlState::DATETIME_FIELD_OVERFLOW,
        format!("date/time field value out of range: \"{s}\""),
    )
}

/// Parses PostgreSQL's text forms of a time of day: `04:05:06.789`, `04:05`, `04:05 PM`,
/// `040506`, `allballs`, `24:00:00`, a date-time (its time part is taken; a date alone is
/// midnight), a trailing zone (read and ignored, as `time without time zone` does). A malformed
/// string is 22007, fields out of range 22008.
pub fn parse_time(s: &str) -> Result<i64> {
    let lower = s.trim().to_ascii_lowercase();
    let mut t = lower.as_str();
    match t {
        "allballs" => return Ok(0),
        "now" => return Ok(super::now_micros().rem_euclid(MICROS_PER_DAY)),
        _ => {}
    }
    // A leading date (`2003-04-12 04:05:06`, `2003-04-12T04:05:06`, `2003-04-12`).
    let date_end = t.find([' ', 't']).unwrap_or(t.len());
    let head = &t[..date_end];
    if head.len() >= 8 && head.contains('-') && !head.contains(':') {
        if super::parse_timestamp(head).is_none() {
            return Err(if head.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
                overflow(s)
            } else {
                syntax(s)
            });
        }
        t = t[date_end..].trim_start_matches([' ', 't']).trim();
        if t.is_empty() {
            return Ok(0);
        }
    } else if let Some(rest) = t.strip_prefix('t') {
        t = rest;
    }
    // AM / PM.
    let mut meridian = None;
    for (suffix, pm) in [("am", false), ("pm", true), ("a.m.", false), ("p.m.", true)] {
        if let Some(rest) = t.strip_suffix(suffix) {
            meridian = Some(pm);
            t = rest.trim_end();
            break;
        }
    }
    // A trailing zone, read and dropped.
    if let Some((body, name)) = t.rsplit_once(' ') {
        if matches!(name, "utc" | "gmt" | "z") || super::zone::Zone::iana(name).is_some() {
            t = body.trim_end();
        }
    }
    if let Some(rest) = t.strip_suffix('z') {
        t = rest;
    }
    if let Some(i) = t.rfind(['+', '-']) {
        let zone = &t[i + 1..];
        let digits = zone.bytes().filter(|c| *c != b':').count();
        if i == 0 || zone.is_empty() || !zone.bytes().all(|c| c.is_ascii_digit() || c == b':') {
            return Err(syntax(s));
        }
        if ![1, 2, 4, 6].contains(&digits) {
            return Err(syntax(s));
        }
        t = t[..i].trim_end();
    }
    let (h, m, sec, frac) = fields(t).ok_or_else(|| syntax(s))?;
    let h = match meridian {
        None => h,
        Some(_) if h > 12 => return Err(overflow(s)),
        Some(pm) => match (pm, h) {
            (false, 12) => 0,
            (true, h) if h < 12 => h + 12,
            (_, h) => h,
        },
    };
    if h > 24 || m > 59 || sec > 60 || (h == 24 && (m > 0 || sec > 0 || frac > 0)) {
        return Err(overflow(s));
    }
    let us = ((h * 60 + m) * 60 + sec) * 1_000_000 + frac;
    if us > MICROS_PER_DAY {
        return Err(overflow(s));
    }
    Ok(us)
}

/// `h:m[:s[.f]]` or `hhmm[ss[.f]]`: hours, minutes, seconds and microseconds (the fraction
/// rounded to the microsecond).
fn fields(t: &str) -> Option<(i64, i64, i64, i64)> {
    let (whole, frac_digits) = match t.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (t, None),
    };
    let num = |x: &str| -> Option<i64> {
        if x.is_empty() || x.len() > 9 || !x.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        x.parse().ok()
    };
    let (h, m, sec) = if whole.contains(':') {
        let mut p = whole.split(':');
        let h = num(p.next()?)?;
        let m = num(p.next()?)?;
        let sec = match p.next() {
            Some(x) => num(x)?,
            None if frac_digits.is_some() => return None,
            None => 0,
        };
        if p.next().is_some() {
            return None;
        }
        (h, m, sec)
    } else {
        match whole.len() {
            4 if frac_digits.is_none() => (num(&whole[..2])?, num(&whole[2..])?, 0),
            6 => (num(&whole[..2])?, num(&whole[2..4])?, num(&whole[4..])?),
            _ => return None,
        }
    };
    let frac = match frac_digits {
        None => 0,
        Some("") => 0,
        Some(d) if d.bytes().all(|c| c.is_ascii_digit()) => {
            let f: f64 = format!("0.{d}").parse().ok()?;
            (f * 1_000_000.0).round() as i64
        }
        Some(_) => return None,
    };
    Some((h, m, sec, frac))
}

/// `time(p)`: the value rounded to p fractional digits (half up, as PostgreSQL's
/// AdjustTimeForTypmod; 23:59:59.9 as `time(0)` is 24:00:00).
pub fn round_time(us: i64, precision: Option<u32>) -> i64 {
    match precision {
        Some(p) if p < 6 => {
            let scale = 10i64.pow(6 - p);
            (us + scale / 2) / scale * scale
        }
        _ => us,
    }
}

/// A time plus microseconds, wrapped around midnight (PostgreSQL's time +/- interval, which
/// reads only the interval's time part).
pub fn add_micros(us: i64, delta: i64) -> i64 {
    (us as i128 + delta as i128).rem_euclid(MICROS_PER_DAY as i128) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_postgres_spellings() {
        let t = |s: &str| format_time(parse_time(s).unwrap());
        assert_eq!(t("04:05:06.789"), "04:05:06.789");
        assert_eq!(t("04:05"), "04:05:00");
        assert_eq!(t("04:05 PM"), "16:05:00");
        assert_eq!(t("12:30 am"), "00:30:00");
        assert_eq!(t("040506"), "04:05:06");
        assert_eq!(t("allballs"), "00:00:00");
        assert_eq!(t("24:00:00"), "24:00:00");
        assert_eq!(t("2003-04-12 04:05:06"), "04:05:06");
        assert_eq!(t("04:05:06+02"), "04:05:06");
        assert_eq!(t("04:05:06.1234567"), "04:05:06.123457");
        for bad in ["abc", "", "4", "04:05:06:07", "1:2.5"] {
            assert_eq!(parse_time(bad).unwrap_err().sqlstate().code(), "22007", "{bad}");
        }
        for bad in ["25:00", "24:00:01", "04:60", "13:00 PM"] {
            assert_eq!(parse_time(bad).unwrap_err().sqlstate().code(), "22008", "{bad}");
        }
        assert_eq!(
            round_time(parse_time("23:59:59.9").unwrap(), Some(0)),
            MICROS_PER_DAY
        );
        assert_eq!(add_micros(0, -1), MICROS_PER_DAY - 1);
    }
}
