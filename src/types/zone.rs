//! Time zones as PostgreSQL reads their names: its default abbreviations (`UTC`, `EST`, `CET`,
//! ...: fixed offsets), the IANA database (`Europe/Berlin`, any letter case; chrono-tz), and
//! POSIX offsets (`+05`, `UTC+3`: positive west of Greenwich). Offsets are in seconds east of
//! UTC; instants and local times in microseconds since 1970-01-01.

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeZone};
use chrono_tz::Tz;

/// A time zone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Zone {
    /// A fixed offset, seconds east of UTC.
    Fixed(i64),
    Named(Tz),
}

/// chrono's range is narrower than PostgreSQL's: instants beyond it take the offset at its
/// edge (zones have no rules out there).
const CHRONO_MICROS: std::ops::RangeInclusive<i64> = -8_210_266_876_800_000_000..=8_210_266_876_799_999_999;

fn naive(us: i64) -> NaiveDateTime {
    let us = us.clamp(*CHRONO_MICROS.start(), *CHRONO_MICROS.end());
    DateTime::from_timestamp_micros(us)
        .map(|d| d.naive_utc())
        .unwrap_or_default()
}

impl Zone {
    /// The zone `s` names: an abbreviation, an IANA name, or a POSIX offset; None for none.
    pub fn parse(s: &str) -> Option<Zone> {
        let lower = s.trim().to_lowercase();
        if let Some(off) = abbreviation(&lower) {
            return Some(Zone::Fixed(off));
        }
        if let Some(tz) = named(&lower) {
            return Some(Zone::Named(tz));
        }
        posix(&lower).map(Zone::Fixed)
    }

    /// An IANA zone name (not an abbreviation or offset), as timestamptz input takes it after
    /// the time.
    pub fn iana(s: &str) -> Option<Zone> {
        named(&s.trim().to_lowercase()).map(Zone::Named)
    }

    /// The offset in force at the instant `us` (UTC).
    pub fn offset_at(&self, us: i64) -> i64 {
        match self {
            Zone::Fixed(o) => *o,
            Zone::Named(tz) => i64::from(tz.offset_from_utc_datetime(&naive(us)).fix().local_minus_utc()),
        }
    }

    /// The zone's abbreviation at the instant `us` (to_char's `TZ`): the time zone database's
    /// (`CEST`, `+11`), `UTC` for UTC, and a fixed offset's in its PostgreSQL form (`-05`).
    pub fn abbreviation_at(&self, us: i64) -> String {
        match self {
            Zone::Fixed(0) => "UTC".into(),
            Zone::Fixed(o) => super::session_zone::format_offset(*o),
            Zone::Named(tz) => {
                use chrono_tz::OffsetName;
                let o = tz.offset_from_utc_datetime(&naive(us));
                o.abbreviation().map(str::to_string).unwrap_or_else(|| {
                    super::session_zone::format_offset(i64::from(o.fix().local_minus_utc()))
                })
            }
        }
    }

    /// The offset of the local time `local` in this zone, as PostgreSQL resolves it: a time
    /// in a spring-forward gap takes the offset from before the transition, an ambiguous one
    /// of a fall-back the offset from after it (standard time).
    pub fn offset_of_local(&self, local: i64) -> i64 {
        match self {
            Zone::Fixed(o) => *o,
            Zone::Named(tz) => {
                let off = |o: &<Tz as TimeZone>::Offset| i64::from(o.fix().local_minus_utc());
                match tz.offset_from_local_datetime(&naive(local)) {
                    LocalResult::Single(o) => off(&o),
                    LocalResult::Ambiguous(_, later) => off(&later),
                    // In a gap: the offset a day earlier, before the transition.
                    LocalResult::None => self.offset_at(local.saturating_sub(86_400_000_000)),
                }
            }
        }
    }
}

/// PostgreSQL's default abbreviations with a fixed offset (of those Augur knows).
fn abbreviation(lower: &str) -> Option<i64> {
    let h = 3600;
    Some(match lower {
        "utc" | "gmt" | "ut" | "z" | "zulu" | "uct" => 0,
        "est" => -5 * h,
        "edt" | "ast" => -4 * h,
        "cst" => -6 * h,
        "cdt" => -5 * h,
        "mst" => -7 * h,
        "mdt" => -6 * h,
        "pst" => -8 * h,
        "pdt" => -7 * h,
        "cet" | "bst" => h,
        "cest" | "eet" => 2 * h,
        "eest" => 3 * h,
        "jst" => 9 * h,
        _ => return None,
    })
}

/// An IANA zone, its name in any letter case.
fn named(lower: &str) -> Option<Tz> {
    if !lower.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    chrono_tz::TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(lower))
        .copied()
}

/// A POSIX offset: an optional name, then `[+-]h[:mm[:ss]]` (hours to 167), positive west.
fn posix(lower: &str) -> Option<i64> {
    let name_len = lower.bytes().take_while(u8::is_ascii_alphabetic).count();
    let rest = &lower[name_len..];
    west_offset(rest)
}

/// `[+-]h[:mm[:ss]]` (hours to 167) as seconds east of Greenwich, read as POSIX does: positive
/// west, so `+3` is -10800.
pub(crate) fn west_offset(rest: &str) -> Option<i64> {
    let (sign, digits) = match rest.as_bytes().first()? {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => (1, rest),
    };
    let mut parts = digits.split(':');
    let mut nums = [0i64; 3];
    for (i, slot) in nums.iter_mut().enumerate() {
        match parts.next() {
            Some(p) if !p.is_empty() && p.len() <= 3 && p.bytes().all(|c| c.is_ascii_digit()) => {
                *slot = p.parse().ok()?
            }
            None if i > 0 => break,
            _ => return None,
        }
    }
    if parts.next().is_some() || nums[0] > 167 || nums[1] > 59 || nums[2] > 59 {
        return None;
    }
    Some(-sign * (nums[0] * 3600 + nums[1] * 60 + nums[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_abbreviations_and_offsets() {
        assert_eq!(Zone::parse("UTC"), Some(Zone::Fixed(0)));
        assert_eq!(Zone::parse("+05"), Some(Zone::Fixed(-5 * 3600)));
        assert_eq!(Zone::parse("UTC-5:30"), Some(Zone::Fixed(5 * 3600 + 1800)));
        assert_eq!(
            Zone::parse("europe/berlin"),
            Some(Zone::Named(Tz::Europe__Berlin))
        );
        assert_eq!(Zone::parse("Nowhere/Special"), None);
        assert_eq!(Zone::parse("+"), None);
        // 2026-07-01 12:00 UTC: Berlin is on summer time (+2), in January on +1.
        let berlin = Zone::parse("Europe/Berlin").unwrap();
        assert_eq!(berlin.offset_at(1_782_907_200_000_000), 7200);
        assert_eq!(berlin.offset_at(1_767_268_800_000_000), 3600);
    }

    #[test]
    fn gaps_and_overlaps_resolve_as_postgresql() {
        let ny = Zone::parse("America/New_York").unwrap();
        // 2026-03-08 02:30 does not exist: read with the offset before (EST).
        let gap = 1_772_937_000_000_000;
        assert_eq!(ny.offset_of_local(gap), -5 * 3600);
        // 2026-11-01 01:30 happens twice: the later (EST).
        let overlap = 1_793_496_600_000_000;
        assert_eq!(ny.offset_of_local(overlap), -5 * 3600);
    }
}
