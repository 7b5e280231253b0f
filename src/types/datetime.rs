//! Dates and timestamps as text: PostgreSQL's ISO formats, parsing with time zone offsets, and
//! the civil calendar (days since 1970-01-01) under them.

/// Now, in microseconds since 1970-01-01 00:00:00 UTC (0 if the clock is before it).
pub(crate) fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// `timestamp 'infinity'` (and timestamptz's): PostgreSQL's `DT_NOEND`, the largest `i64`, so
/// it orders after every finite value (and is sent as itself in the binary wire format).
pub const TS_INFINITY: i64 = i64::MAX;
/// `timestamp '-infinity'`: PostgreSQL's `DT_NOBEGIN`, the smallest `i64`.
pub const TS_NEG_INFINITY: i64 = i64::MIN;
/// `date 'infinity'`: PostgreSQL's `DATEVAL_NOEND`, the largest `i32`.
pub const DATE_INFINITY: i32 = i32::MAX;
/// `date '-infinity'`: PostgreSQL's `DATEVAL_NOBEGIN`, the smallest `i32`.
pub const DATE_NEG_INFINITY: i32 = i32::MIN;

/// Whether a timestamp (or timestamptz) is neither `infinity` nor `-infinity`.
pub fn ts_is_finite(us: i64) -> bool {
    us != TS_INFINITY && us != TS_NEG_INFINITY
}

/// Whether a date is neither `infinity` nor `-infinity`.
pub fn date_is_finite(days: i32) -> bool {
    days != DATE_INFINITY && days != DATE_NEG_INFINITY
}

/// `infinity` / `-infinity` as date/time input (any letter case, blanks around): Some(true)
/// for `infinity`, Some(false) for `-infinity`.
pub fn parse_infinity(s: &str) -> Option<bool> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("infinity") {
        Some(true)
    } else if s.eq_ignore_ascii_case("-infinity") {
        Some(false)
    } else {
        None
    }
}

/// The text of an infinite timestamp or date: `infinity`, or `-infinity` when not positive.
fn infinity_text(positive: bool) -> String {
    if positive { "infinity" } else { "-infinity" }.to_string()
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (PostgreSQL's ISO output; a year before 1 as PostgreSQL
/// writes it, `0044-03-15 10:00:00 BC` for the astronomical year -43); `infinity` /
/// `-infinity` for the infinite values.
pub fn format_timestamp(micros: i64) -> String {
    if !ts_is_finite(micros) {
        return infinity_text(micros == TS_INFINITY);
    }
    let (s, bc) = format_timestamp_era(micros);
    if bc {
        s + " BC"
    } else {
        s
    }
}

/// [`format_timestamp`] without its ` BC` suffix, and whether it has one (a timestamptz's
/// offset goes before it).
pub fn format_timestamp_era(micros: i64) -> (String, bool) {
    let secs = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut s = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        era_year(y),
        m,
        d,
        tod / 3600,
        (tod / 60) % 60,
        tod % 60
    );
    if frac != 0 {
        let f = format!(".{frac:06}");
        s.push_str(f.trim_end_matches('0'));
    }
    (s, y <= 0)
}

/// The year PostgreSQL prints for the astronomical year `y` (1 BC is year 0): `y` itself, or
/// `1 - y` before year 1 (with ` BC` after it).
fn era_year(y: i64) -> i64 {
    if y <= 0 {
        1 - y
    } else {
        y
    }
}

/// Microseconds in a day.
pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// PostgreSQL's timestamp range in microseconds since the Unix epoch: from 4714-11-24 BC
/// (included) to 294277-01-01 AD (excluded).
pub const TIMESTAMP_RANGE: std::ops::Range<i64> = -212_760_172_800_000_000..9_222_424_646_400_000_000;

/// A date's midnight as a timestamp (microseconds since the Unix epoch), if PostgreSQL's
/// timestamp range holds it (dates reach further); an infinite date is the infinite timestamp
/// of its sign.
pub fn date_to_micros(days: i32) -> Option<i64> {
    match days {
        DATE_INFINITY => return Some(TS_INFINITY),
        DATE_NEG_INFINITY => return Some(TS_NEG_INFINITY),
        _ => {}
    }
    (days as i64)
        .checked_mul(MICROS_PER_DAY)
        .filter(|us| TIMESTAMP_RANGE.contains(us))
}

/// The date of a timestamp's local time (days since 1970-01-01); an infinite timestamp is the
/// infinite date of its sign.
pub fn micros_to_date(us: i64) -> Option<i32> {
    match us {
        TS_INFINITY => Some(DATE_INFINITY),
        TS_NEG_INFINITY => Some(DATE_NEG_INFINITY),
        _ => i32::try_from(us.div_euclid(MICROS_PER_DAY)).ok(),
    }
}

/// `YYYY-MM-DD` (PostgreSQL's ISO output); `infinity` / `-infinity` for the infinite dates.
pub fn format_date(days: i32) -> String {
    if !date_is_finite(days) {
        return infinity_text(days == DATE_INFINITY);
    }
    let (y, m, d) = civil_from_days(days as i64);
    let bc = if y <= 0 { " BC" } else { "" };
    format!("{:04}-{m:02}-{d:02}{bc}", era_year(y))
}

/// A trailing era (` BC` / ` AD`, any case) split off date/time input: the rest and whether
/// it is BC.
fn split_era(s: &str) -> (&str, bool) {
    let s = s.trim_end();
    let lower = s.to_ascii_lowercase();
    for (era, bc) in [(" bc", true), (" ad", false)] {
        if lower.ends_with(era) {
            // The suffix is ASCII, so the byte offset is a character boundary.
            return (s[..s.len() - 3].trim_end(), bc);
        }
    }
    (s, false)
}

/// Parses `YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]` (also with `T`) followed by an optional zone
/// (`Z`, `UTC`, `GMT`, `+HH`, `+HHMM`, `+HH:MM`, `-...`, with or without a space before it, or
/// an IANA name such as `Europe/Berlin` after a space):
/// the local date-time in microseconds since the epoch and the zone's offset east of UTC in
/// seconds.
pub fn parse_datetime(s: &str) -> Option<(i64, Option<i32>)> {
    let (s, bc) = split_era(s.trim());
    if bc {
        // `0044-03-15 10:00+00 BC`: the date's year counted back from 1 BC.
        let (body, off) = split_zone(s)?;
        return Some((parse_ts(body, true)?, off));
    }
    // A trailing IANA zone name (`2026-07-01 12:00 Europe/Berlin`): its offset at that local
    // time.
    if let Some((body, name)) = s.rsplit_once(' ') {
        if name.contains('/') || (name.len() > 3 && name.bytes().all(|c| c.is_ascii_alphabetic())) {
            if let Some(zone) = super::zone::Zone::iana(name) {
                let local = parse_timestamp(body)?;
                return Some((local, Some(zone.offset_of_local(local) as i32)));
            }
        }
    }
    let (body, off) = split_zone(s)?;
    Some((parse_timestamp(body)?, off))
}

/// Splits a trailing time zone off a date-time (only after a time of day: the `-` of a date
/// is not an offset).
fn split_zone(s: &str) -> Option<(&str, Option<i32>)> {
    let lower = s.to_ascii_lowercase();
    for name in [" utc", " gmt", "utc", "gmt", "z"] {
        if lower.ends_with(name) && s.len() > name.len() && s.contains(':') {
            return Some((s[..s.len() - name.len()].trim_end(), Some(0)));
        }
    }
    // The time part starts after the date's separator.
    let Some(tpos) = s.find([' ', 'T']) else {
        return Some((s, None));
    };
    let time = &s[tpos + 1..];
    let Some(i) = time.rfind(['+', '-']) else {
        return Some((s, None));
    };
    let (body, zone) = (s[..tpos + 1 + i].trim_end(), &time[i..]);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let (h, m, sec) = match digits.len() {
        1 | 2 => (digits.parse::<i32>().ok()?, 0, 0),
        4 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..].parse::<i32>().ok()?,
            0,
        ),
        6 => (
            digits[..2].parse::<i32>().ok()?,
            digits[2..4].parse::<i32>().ok()?,
            digits[4..].parse::<i32>().ok()?,
        ),
        _ => return None,
    };
    if h > 15 || m > 59 || sec > 59 {
        return None;
    }
    Some((body, Some(sign * (h * 3600 + m * 60 + sec))))
}

/// Parses `YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]` (also with `T`), perhaps followed by ` BC` or
/// ` AD`; year 0 does not exist (1 BC comes before 1 AD).
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let (s, bc) = split_era(s.trim());
    parse_ts(s, bc)
}

fn parse_ts(s: &str, bc: bool) -> Option<i64> {
    let s = s.trim();
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], s[i + 1..].trim()),
        None => (s, ""),
    };
    let mut dp = date.splitn(3, '-');
    let y: i64 = dp.next()?.parse().ok()?;
    if y < 1 {
        return None;
    }
    let y = if bc { 1 - y } else { y };
    let m: u32 = dp.next()?.parse().ok()?;
    let d: u32 = dp.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    let mut micros_of_day: i64 = 0;
    if !time.is_empty() {
        let mut tp = time.splitn(3, ':');
        let h: i64 = tp.next()?.parse().ok()?;
        let mi: i64 = tp.next()?.parse().ok()?;
        let (sec, frac) = match tp.next() {
            None => (0, 0),
            Some(sf) => match sf.split_once('.') {
                None => (sf.parse::<i64>().ok()?, 0),
                Some((a, b)) => {
                    if b.is_empty() || b.len() > 9 || !b.bytes().all(|c| c.is_ascii_digit()) {
                        return None;
                    }
                    let mut digits = b.to_string();
                    digits.truncate(6);
                    while digits.len() < 6 {
                        digits.push('0');
                    }
                    (a.parse::<i64>().ok()?, digits.parse::<i64>().ok()?)
                }
            },
        };
        if h > 24 || mi > 59 || sec > 60 || (h == 24 && (mi > 0 || sec > 0 || frac > 0)) {
            return None;
        }
        micros_of_day = ((h * 60 + mi) * 60 + sec) * 1_000_000 + frac;
    }
    let days = days_from_civil(y, m, d);
    days.checked_mul(86_400_000_000)?.checked_add(micros_of_day)
}

pub(crate) fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub(crate) fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        _ => 28,
    }
}

/// `us` (microseconds since 1970-01-01 00:00:00) plus `months` calendar months, the day of the
/// month clamped to the new month's length and the time of day kept, as PostgreSQL's
/// `timestamp + interval` adds an interval's months; None past the representable range.
pub fn add_months(us: i64, months: i64) -> Option<i64> {
    let (days, tod) = (us.div_euclid(86_400_000_000), us.rem_euclid(86_400_000_000));
    let (y, m, d) = civil_from_days(days);
    let m0 = (m as i64 - 1).checked_add(months)?;
    let (y, m) = (y.checked_add(m0.div_euclid(12))?, (m0.rem_euclid(12) + 1) as u32);
    if y.abs() > 300_000 {
        return None;
    }
    let d = d.min(days_in_month(y, m));
    days_from_civil(y, m, d)
        .checked_mul(86_400_000_000)?
        .checked_add(tod)
}

// Howard Hinnant's civil-date algorithms: days since 1970-01-01 of a proleptic Gregorian
// date (astronomical years: 0 is 1 BC) and back.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}
