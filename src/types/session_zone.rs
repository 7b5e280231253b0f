//! The session time zone (`TimeZone`) as value conversions see it: timestamptz text output and
//! input without an offset, timestamp <-> timestamptz casts, and the calendar functions.
//!
//! A [`crate::Session`] installs its zone for the duration of each call that runs SQL or
//! renders values (see [`ZoneScope`]); outside one (a library caller formatting a value itself)
//! the zone is UTC. Values themselves never change: a timestamptz is always an instant in UTC
//! microseconds, and only its text (and local-time arithmetic) depends on the zone.

use std::cell::Cell;

use super::interval::Interval;
use super::zone::Zone;
use crate::error::{Error, Result, SqlState};

thread_local! {
    static CURRENT: Cell<Zone> = const { Cell::new(Zone::Fixed(0)) };
}

/// The zone in force on this thread (UTC outside a session's call).
pub fn current() -> Zone {
    CURRENT.with(Cell::get)
}

/// Replaces the zone in force on this thread (a `SET TIME ZONE` inside a session's call); the
/// enclosing [`ZoneScope`] restores the previous one when it ends.
pub fn set_current(z: Zone) {
    CURRENT.with(|c| c.set(z));
}

/// Runs `f` with `z` in force on this thread.
pub fn with<T>(z: Zone, f: impl FnOnce() -> T) -> T {
    let _scope = ZoneScope::enter(z);
    f()
}

/// Installs a zone on this thread until dropped, then restores the one before.
#[must_use]
pub struct ZoneScope(Zone);

impl ZoneScope {
    pub fn enter(z: Zone) -> ZoneScope {
        let before = current();
        set_current(z);
        ZoneScope(before)
    }
}

impl Drop for ZoneScope {
    fn drop(&mut self) {
        set_current(self.0);
    }
}

/// The offset (seconds east of UTC) of the instant `us` in the session zone.
pub fn offset_at(us: i64) -> i64 {
    current().offset_at(us)
}

/// The local time in the session zone of the instant `us` (saturating at the extremes; the
/// infinities are their own local times).
pub fn to_local(us: i64) -> i64 {
    if !super::ts_is_finite(us) {
        return us;
    }
    us.saturating_add(offset_at(us) * 1_000_000)
}

/// The instant of the local time `local` in the session zone (gaps and overlaps resolved as
/// PostgreSQL does, [`Zone::offset_of_local`]); None when it overflows. The infinities stay.
pub fn from_local(local: i64) -> Option<i64> {
    if !super::ts_is_finite(local) {
        return Some(local);
    }
    local.checked_sub(current().offset_of_local(local) * 1_000_000)
}

/// `timestamptz + interval` as PostgreSQL adds it: months and days to the local time in the
/// session zone (so `+ interval '1 day'` keeps the wall-clock time across a DST change), then
/// the time part to the instant.
pub fn add_interval(us: i64, iv: &Interval) -> Result<i64> {
    // An infinity plus anything stays that infinity.
    if !super::ts_is_finite(us) {
        return Ok(us);
    }
    let oor = || Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range");
    let mut t = us;
    if iv.months != 0 {
        let local = super::add_months(to_local(t), i64::from(iv.months)).ok_or_else(oor)?;
        t = from_local(local).ok_or_else(oor)?;
    }
    if iv.days != 0 {
        let local = i64::from(iv.days)
            .checked_mul(super::MICROS_PER_DAY)
            .and_then(|d| to_local(t).checked_add(d))
            .ok_or_else(oor)?;
        t = from_local(local).ok_or_else(oor)?;
    }
    let t = t.checked_add(iv.micros).ok_or_else(oor)?;
    if !super::TIMESTAMP_RANGE.contains(&t) {
        return Err(oor());
    }
    Ok(t)
}

/// PostgreSQL's offset suffix in timestamptz output: `+01`, `+05:30`, `-00:25:21`.
pub fn format_offset(off: i64) -> String {
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.abs();
    let (h, m, s) = (a / 3600, (a / 60) % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

/// An offset as XSD / JSON write it: always with minutes (`+01:00`, `+05:53:28`).
pub fn format_offset_xsd(off: i64) -> String {
    let s = format_offset(off);
    if off % 3600 == 0 {
        s + ":00"
    } else {
        s
    }
}

/// A timestamptz as JSON text (to_json / to_jsonb): `2026-01-02T13:00:00+01:00`.
pub fn format_tstz_json(us: i64) -> String {
    if !super::ts_is_finite(us) {
        return super::format_timestamp(us);
    }
    let off = offset_at(us);
    let (s, bc) = super::datetime::format_timestamp_era(us.saturating_add(off * 1_000_000));
    s.replacen(' ', "T", 1) + &format_offset_xsd(off) + if bc { " BC" } else { "" }
}

/// A timestamptz's text in the session zone: `2026-01-02 13:00:00+01`.
pub fn format_tstz(us: i64) -> String {
    if !super::ts_is_finite(us) {
        return super::format_timestamp(us);
    }
    let off = offset_at(us);
    let (s, bc) = super::datetime::format_timestamp_era(us.saturating_add(off * 1_000_000));
    s + &format_offset(off) + if bc { " BC" } else { "" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_print_as_postgresql() {
        assert_eq!(format_offset(0), "+00");
        assert_eq!(format_offset(3600), "+01");
        assert_eq!(format_offset(19800), "+05:30");
        assert_eq!(format_offset(-12600), "-03:30");
        assert_eq!(format_offset(-(25 * 60 + 21)), "-00:25:21");
    }

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(current(), Zone::Fixed(0));
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        with(berlin, || {
            // 2026-07-01 12:00 UTC is 14:00 in Berlin.
            assert_eq!(format_tstz(1_782_907_200_000_000), "2026-07-01 14:00:00+02");
            set_current(Zone::Fixed(-3600));
            assert_eq!(format_tstz(0), "1969-12-31 23:00:00-01");
        });
        assert_eq!(current(), Zone::Fixed(0));
        assert_eq!(format_tstz(0), "1970-01-01 00:00:00+00");
    }
}
