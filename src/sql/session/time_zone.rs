//! The `TimeZone` setting as PostgreSQL's check hook reads it: a number of hours (east of
//! Greenwich), `INTERVAL '...'`, a time zone database name (any letter case, shown in its
//! canonical spelling), or a POSIX zone (`UTC+3`, `+05:30`, `<+05>-05`: positive west, shown
//! upper-cased). Anything else is 22023.

use super::Session;
use crate::error::{Error, Result, SqlState};
use crate::types::session_zone::{self, ZoneScope};
use crate::types::zone::Zone;
use crate::types::{interval, Value};

impl Session {
    /// The session's time zone (the `TimeZone` setting).
    pub fn time_zone(&self) -> Zone {
        self.zone
    }

    /// Sets `TimeZone` as `SET TIME ZONE 'v'` does (a startup packet's value); 22023 for a
    /// zone PostgreSQL does not know.
    pub fn set_time_zone(&mut self, v: &str) -> Result<()> {
        let _zone = self.zone_scope();
        self.set_one("timezone".into(), v.to_string())
    }

    /// Puts the session's zone in force on this thread until the scope ends: every call that
    /// runs SQL holds one, so text output and input of timestamptz, and local-time arithmetic,
    /// happen in the session zone ([`crate::types::session_zone`]).
    pub fn zone_scope(&self) -> ZoneScope {
        ZoneScope::enter(self.zone)
    }

    /// PostgreSQL's text of `v` as this session prints it: a timestamptz in the session time
    /// zone (`None` for NULL). Values in results are instants; only their text depends on
    /// the zone.
    pub fn text_of(&self, v: &Value) -> Option<String> {
        session_zone::with(self.zone, || v.to_text())
    }
}

/// PostgreSQL refuses offsets of a week or more.
const MAX_OFFSET: i64 = 168 * 3600;

fn invalid(v: &str, detail: Option<&str>) -> Error {
    let e = Error::new(
        SqlState::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"TimeZone\": \"{v}\""),
    );
    match detail {
        Some(d) => e.with_detail(d),
        None => e,
    }
}

/// The name PostgreSQL gives a fixed offset (seconds east): `<+05:30>-05:30`.
fn offset_name(east: i64) -> String {
    let a = east.abs();
    let mut hm = format!("{:02}", a / 3600);
    if a % 3600 != 0 {
        hm.push_str(&format!(":{:02}", (a / 60) % 60));
    }
    if a % 60 != 0 {
        hm.push_str(&format!(":{:02}", a % 60));
    }
    if east < 0 {
        format!("<-{hm}>+{hm}")
    } else {
        format!("<+{hm}>-{hm}")
    }
}

fn fixed(v: &str, east: i64) -> Result<(Zone, String)> {
    if east.abs() >= MAX_OFFSET {
        return Err(invalid(v, Some("UTC timezone offset is out of range.")));
    }
    Ok((Zone::Fixed(east), offset_name(east)))
}

/// The zone a `TimeZone` value names and how `SHOW TimeZone` prints it.
pub fn parse_time_zone(v: &str) -> Result<(Zone, String)> {
    let t = v.trim();
    // `INTERVAL '+02:00' HOUR TO MINUTE`: hours and minutes east.
    if t.len() >= 8 && t[..8].eq_ignore_ascii_case("interval") {
        let body = t[8..].trim_start();
        let Some(inner) = body.strip_prefix('\'').and_then(|b| b.split('\'').next()) else {
            return Err(invalid(v, None));
        };
        let iv = interval::parse(inner)?;
        let shown = format!("INTERVAL '{}'", interval::format(&iv));
        if iv.months != 0 {
            return Err(invalid(
                &shown,
                Some("Cannot specify months in time zone interval."),
            ));
        }
        if iv.days != 0 {
            return Err(invalid(
                &shown,
                Some("Cannot specify days in time zone interval."),
            ));
        }
        return fixed(&shown, iv.micros / 1_000_000);
    }
    // A number of hours, possibly fractional, east of Greenwich.
    if !t.is_empty()
        && t.bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'+' | b'-' | b'.'))
    {
        if let Ok(h) = t.parse::<f64>() {
            return fixed(v, (h * 3600.0) as i64);
        }
    }
    if t.is_empty() {
        return Err(invalid(v, None));
    }
    if let Some(tz) = chrono_tz::TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(t))
    {
        return Ok((Zone::Named(*tz), tz.name().to_string()));
    }
    posix(t)
        .map(|z| (z, t.to_uppercase()))
        .ok_or_else(|| invalid(v, None))
}

/// A POSIX zone without daylight-saving rules: an optional name (letters, or anything in
/// `<...>`), then `[+-]h[:mm[:ss]]` (hours below 168) west of Greenwich.
fn posix(t: &str) -> Option<Zone> {
    let rest = match t.strip_prefix('<') {
        Some(r) => &r[r.find('>')? + 1..],
        None => t.trim_start_matches(|c: char| c.is_ascii_alphabetic()),
    };
    crate::types::zone::west_offset(rest).map(Zone::Fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(v: &str) -> String {
        parse_time_zone(v)
            .map(|(_, s)| s)
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn names_as_postgresql_shows_them() {
        assert_eq!(shown("europe/berlin"), "Europe/Berlin");
        assert_eq!(shown("utc"), "UTC");
        assert_eq!(shown("-5"), "<-05>+05");
        assert_eq!(shown("5.5"), "<+05:30>-05:30");
        assert_eq!(shown("+05:30"), "+05:30");
        assert_eq!(shown("utc+3"), "UTC+3");
        assert_eq!(shown("<+05>-05"), "<+05>-05");
        assert_eq!(shown("INTERVAL '+02:00' HOUR TO MINUTE"), "<+02>-02");
        assert_eq!(parse_time_zone("+05:30").unwrap().0, Zone::Fixed(-19800));
        assert_eq!(parse_time_zone("-5").unwrap().0, Zone::Fixed(-18000));
        for bad in ["Foo/Bar", "PST", "Z", "168", ""] {
            assert!(parse_time_zone(bad).is_err(), "{bad}");
        }
    }
}
