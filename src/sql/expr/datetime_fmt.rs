//! Date/time formatting with PostgreSQL's template patterns: `to_char(timestamp | timestamptz
//! | date | interval, text)`, `to_date(text, text)` and `to_timestamp(text, text)` (of numbers: `number_fmt`). The
//! patterns are the common ones: `YYYY YYY YY Y Y,YYY IYYY MM DD DDD D ID HH24 HH12 HH MI SS MS
//! US FF1-FF6 SSSS AM PM A.M. P.M. Month Mon Day Dy Q WW W IW J CC TZ OF AD BC`, each in the
//! letter cases PostgreSQL accepts, with the `FM` prefix, the `TH` suffix, and `"quoted"` text.

use super::datetime_fn::{date2j, dow, iso_week, Tm};
use crate::error::{Error, Result, SqlState};
use crate::types::datetime::{days_from_civil, days_in_month};
use crate::types::{session_zone, Value, MICROS_PER_DAY};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Template patterns, longest first where one is a prefix of another.
const KEYWORDS: [&str; 48] = [
    "A.D.", "A.M.", "AD", "AM", "B.C.", "BC", "CC", "DAY", "DDD", "DD", "DY", "D", "FF1", "FF2", "FF3",
    "FF4", "FF5", "FF6", "HH24", "HH12", "HH", "IYYY", "IW", "ID", "J", "MI", "MM", "MS", "MONTH", "MON",
    "OF", "P.M.", "PM", "Q", "SSSSS", "SSSS", "SS", "TZ", "US", "WW", "W", "Y,YYY", "YYYY", "YYY", "YY", "Y",
    "TZH", "TZM",
];

/// How a name pattern was written: `MONTH`, `Month` or `month`.
#[derive(Clone, Copy, PartialEq)]
enum Case {
    Upper,
    Title,
    Lower,
}

enum Node {
    /// A pattern (upper-cased), its case as written, FM, TH (upper-case) / th.
    Key {
        key: &'static str,
        case: Case,
        fm: bool,
        th: Option<bool>,
    },
    Lit(String),
}

fn parse_format(fmt: &str) -> Vec<Node> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut fm = false;
    let upper_at = |i: usize, n: usize| -> String {
        chars[i..(i + n).min(chars.len())]
            .iter()
            .collect::<String>()
            .to_uppercase()
    };
    while i < chars.len() {
        let c = chars[i];
        let two = upper_at(i, 2);
        if two == "FM" {
            fm = true;
            i += 2;
            continue;
        }
        if two == "FX" || two == "TM" {
            i += 2;
            continue;
        }
        let key = KEYWORDS
            .iter()
            .filter(|k| upper_at(i, k.len()) == **k)
            .max_by_key(|k| k.len());
        if let Some(key) = key {
            let written: String = chars[i..i + key.len()].iter().collect();
            let case =
                if written.chars().nth(1).is_some_and(|c| c.is_ascii_lowercase()) && c.is_ascii_uppercase() {
                    Case::Title
                } else if c.is_ascii_lowercase() {
                    Case::Lower
                } else {
                    Case::Upper
                };
            i += key.len();
            let th = match upper_at(i, 2).as_str() {
                "TH" => {
                    let upper = chars[i].is_ascii_uppercase();
                    i += 2;
                    Some(upper)
                }
                _ => None,
            };
            out.push(Node::Key { key, case, fm, th });
            fm = false;
            continue;
        }
        fm = false;
        if c == '"' {
            let mut s = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                s.push(chars[i]);
                i += 1;
            }
            i += 1;
            out.push(Node::Lit(s));
            continue;
        }
        if c == '\\' && chars.get(i + 1) == Some(&'"') {
            out.push(Node::Lit("\"".into()));
            i += 2;
            continue;
        }
        out.push(Node::Lit(c.to_string()));
        i += 1;
    }
    out
}

fn cased(s: &str, case: Case) -> String {
    match case {
        Case::Upper => s.to_uppercase(),
        Case::Lower => s.to_lowercase(),
        Case::Title => s.to_string(),
    }
}

/// The English ordinal suffix of `n` (`TH` / `th` in to_char patterns).
pub(super) fn ordinal(n: i64, upper: bool) -> &'static str {
    let n = n.abs();
    let s = if (11..=13).contains(&(n % 100)) {
        "th"
    } else {
        match n % 10 {
            1 => "st",
            2 => "nd",
            3 => "rd",
            _ => "th",
        }
    };
    match (upper, s) {
        (false, s) => s,
        (true, "st") => "ST",
        (true, "nd") => "ND",
        (true, "rd") => "RD",
        _ => "TH",
    }
}

fn interval_error() -> Error {
    Error::new(
        SqlState("22007"),
        "invalid format specification for an interval value",
    )
}

/// `to_char(x, format)` of a timestamp, timestamptz, date (as a timestamptz) or interval.
pub(super) fn to_char(v: &Value, fmt: &str) -> Result<Value> {
    // A timestamptz prints its local time in the session zone, and that zone's offset.
    let mut instant = None;
    // An infinite value has no fields to print: NULL, as PostgreSQL's to_char.
    match v {
        Value::Timestamp(t) | Value::TimestampTz(t) if !crate::types::ts_is_finite(*t) => {
            return Ok(Value::Null)
        }
        Value::Date(d) if !crate::types::date_is_finite(*d) => return Ok(Value::Null),
        _ => {}
    }
    let (tm, days, tz, is_interval) = match v {
        Value::Timestamp(t) => (Tm::of(*t), t.div_euclid(MICROS_PER_DAY), false, false),
        Value::TimestampTz(t) => {
            instant = Some(*t);
            let local = session_zone::to_local(*t);
            (Tm::of(local), local.div_euclid(MICROS_PER_DAY), true, false)
        }
        Value::Date(d) => (Tm::of(i64::from(*d) * MICROS_PER_DAY), i64::from(*d), true, false),
        Value::Interval(iv) => (Tm::of_interval(iv), 0, false, true),
        Value::Int(_) | Value::Float(_) | Value::Numeric(_) => return super::number_fmt::to_char(v, fmt),
        _ => return Ok(Value::Null),
    };
    let mut out = String::new();
    for node in parse_format(fmt) {
        let (key, case, fm, th) = match node {
            Node::Lit(s) => {
                out.push_str(&s);
                continue;
            }
            Node::Key { key, case, fm, th } => (key, case, fm, th),
        };
        // The year as printed: BC years count from 1 (an interval's as they are).
        let year = if is_interval || tm.year > 0 {
            tm.year
        } else {
            -(tm.year - 1)
        };
        let num = |n: i64, width: usize| -> (i64, String) {
            let w = if fm { 0 } else { width };
            (n, format!("{n:0w$}"))
        };
        let calendar_only = matches!(
            key,
            "DAY"
                | "DY"
                | "D"
                | "DDD"
                | "MONTH"
                | "MON"
                | "Q"
                | "WW"
                | "W"
                | "IW"
                | "ID"
                | "IYYY"
                | "J"
                | "A.D."
                | "AD"
                | "B.C."
                | "BC"
                | "TZ"
                | "OF"
                | "TZH"
                | "TZM"
        );
        if is_interval && calendar_only {
            return Err(interval_error());
        }
        let (n, text): (i64, String) = match key {
            "YYYY" => num(year, if year >= 0 { 4 } else { 5 }),
            "YYY" => num(year % 1000, 3),
            "YY" => num(year % 100, 2),
            "Y" => num(year % 10, 1),
            "Y,YYY" => (year, format!("{},{:03}", year / 1000, year % 1000)),
            "IYYY" => {
                let y = iso_week(tm.year, tm.mon, tm.mday).1;
                let y = if y > 0 { y } else { -(y - 1) };
                num(y, 4)
            }
            "MM" => num(tm.mon, 2),
            "DD" => num(tm.mday, 2),
            "DDD" => num(days - days_from_civil(tm.year, 1, 1) + 1, 3),
            "D" => num(dow(days) + 1, 1),
            "ID" => num(if dow(days) == 0 { 7 } else { dow(days) }, 1),
            "HH24" => num(tm.hour, 2),
            "HH12" | "HH" => num(if tm.hour % 12 == 0 { 12 } else { tm.hour % 12 }, 2),
            "MI" => num(tm.min, 2),
            "SS" => num(tm.sec, 2),
            "MS" => num(tm.fsec / 1000, 3),
            "US" => num(tm.fsec, 6),
            "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
                let d = key.as_bytes()[2] - b'0';
                num(tm.fsec / 10i64.pow(6 - u32::from(d)), usize::from(d))
            }
            "SSSS" | "SSSSS" => {
                let s = (tm.hour * 60 + tm.min) * 60 + tm.sec;
                (s, s.to_string())
            }
            "AM" | "PM" | "A.M." | "P.M." => {
                let pm = tm.hour % 24 >= 12;
                let s = match (key.len(), pm) {
                    (2, false) => "AM",
                    (2, true) => "PM",
                    (_, false) => "A.M.",
                    (_, true) => "P.M.",
                };
                out.push_str(&cased(s, case));
                continue;
            }
            "AD" | "BC" | "A.D." | "B.C." => {
                let bc = tm.year <= 0;
                let s = match (key.len(), bc) {
                    (2, false) => "AD",
                    (2, true) => "BC",
                    (_, false) => "A.D.",
                    (_, true) => "B.C.",
                };
                out.push_str(&cased(s, case));
                continue;
            }
            "MONTH" | "MON" | "DAY" | "DY" => {
                let name = if key.starts_with('M') {
                    MONTHS[(tm.mon - 1) as usize]
                } else {
                    DAYS[dow(days) as usize]
                };
                let s = if key.len() == 2 || key == "MON" {
                    cased(&name[..3], case)
                } else if fm {
                    cased(name, case)
                } else {
                    format!("{:<9}", cased(name, case))
                };
                out.push_str(&s);
                continue;
            }
            "Q" => num((tm.mon - 1) / 3 + 1, 1),
            "WW" => num((days - days_from_civil(tm.year, 1, 1)) / 7 + 1, 2),
            "W" => num((tm.mday - 1) / 7 + 1, 1),
            "IW" => num(iso_week(tm.year, tm.mon, tm.mday).0, 2),
            "J" => {
                let j = date2j(days);
                (j, j.to_string())
            }
            "CC" => {
                let c = if is_interval {
                    tm.year / 100
                } else if tm.year > 0 {
                    (tm.year - 1) / 100 + 1
                } else {
                    tm.year / 100 - 1
                };
                if (-99..=99).contains(&c) {
                    num(c, if c >= 0 { 2 } else { 3 })
                } else {
                    (c, c.to_string())
                }
            }
            "TZ" => {
                if tz {
                    let abbrev = match instant {
                        Some(t) => session_zone::current().abbreviation_at(t),
                        None => "UTC".into(),
                    };
                    out.push_str(&cased(&abbrev, case));
                }
                continue;
            }
            "OF" | "TZH" | "TZM" => {
                let off = instant.map_or(0, session_zone::offset_at);
                let a = off.abs();
                let sign = if off < 0 { '-' } else { '+' };
                match key {
                    "OF" if a % 3600 / 60 != 0 => {
                        out.push_str(&format!("{sign}{:02}:{:02}", a / 3600, a % 3600 / 60))
                    }
                    "OF" | "TZH" => out.push_str(&format!("{sign}{:02}", a / 3600)),
                    _ => out.push_str(&format!("{:02}", a % 3600 / 60)),
                }
                continue;
            }
            _ => return Err(Error::internal(format!("to_char pattern {key}"))),
        };
        out.push_str(&text);
        if let Some(upper) = th {
            out.push_str(ordinal(n, upper));
        }
    }
    Ok(Value::Text(out))
}

/// Reads at `*i` of `s` one of a pair of markers of pattern `key` (`short` for a two-letter
/// pattern, `dotted` for one with periods), in any case, and moves past it: whether it is the
/// pair's second (PM, BC).
fn second_marker(s: &[char], i: &mut usize, key: &str, short: [&str; 2], dotted: [&str; 2]) -> Result<bool> {
    let rest: String = s[*i..].iter().take(key.len()).collect::<String>().to_uppercase();
    let [first, second] = if key.len() == 2 { short } else { dotted };
    if rest != first && rest != second {
        return Err(bad_value(&rest, key));
    }
    *i += key.len();
    Ok(rest == second)
}

fn bad_value(v: &str, key: &str) -> Error {
    Error::new(SqlState("22007"), format!("invalid value \"{v}\" for \"{key}\""))
}

fn field_oor(tm: &Tm) -> Error {
    Error::new(
        SqlState::DATETIME_FIELD_OVERFLOW,
        format!(
            "date/time field value out of range: \"{}-{:02}-{:02}\"",
            tm.year, tm.mon, tm.mday
        ),
    )
}

/// Reads `input` by `fmt` (PostgreSQL's to_timestamp rules, without FX) into the fields of a
/// timestamp (a day of the year from DDD or a Julian day from J giving the date); fields not
/// read are January 1 of year 1 BC at midnight, as PostgreSQL's defaults.
fn from_char(input: &str, fmt: &str) -> Result<Tm> {
    from_char_zone(input, fmt).map(|x| x.0)
}

/// [`from_char`] and the zone offset (seconds east of UTC) read by TZH / TZM, if any. BC /
/// B.C. count the year back from 1 BC (a negative year likewise); IYYY, IW and ID give the
/// date from an ISO week (its Monday without ID).
fn from_char_zone(input: &str, fmt: &str) -> Result<(Tm, Option<i64>)> {
    let nodes = parse_format(fmt);
    let s: Vec<char> = input.chars().collect();
    let mut i = 0;
    let mut tm = Tm {
        year: 0,
        mon: 1,
        mday: 1,
        ..Tm::default()
    };
    let (mut pm, mut clock12, mut doy, mut julian) = (None::<bool>, false, None::<i64>, None::<i64>);
    let mut md_set = false;
    let (mut bc, mut year_set) = (false, false);
    let (mut iso_week, mut iso_day) = (None::<i64>, None::<i64>);
    let (mut tzh, mut tzm, mut tz_neg) = (None::<i64>, None::<i64>, false);
    for (k, node) in nodes.iter().enumerate() {
        if i >= s.len() {
            break;
        }
        let (key, _fm) = match node {
            Node::Lit(l) => {
                for c in l.chars() {
                    if i >= s.len() {
                        break;
                    }
                    if c.is_alphanumeric() {
                        i += 1;
                    } else if c == ' ' {
                        while i < s.len() && s[i] == ' ' {
                            i += 1;
                        }
                    } else if !s[i].is_alphanumeric() {
                        i += 1;
                    }
                }
                continue;
            }
            Node::Key { key, fm, .. } => (*key, *fm),
        };
        while i < s.len() && s[i] == ' ' {
            i += 1;
        }
        let names = |list: &[&str], short: bool, i: &mut usize| -> Result<usize> {
            let rest: String = s[*i..].iter().collect::<String>().to_lowercase();
            for (n, name) in list.iter().enumerate() {
                let name = if short { &name[..3] } else { name };
                if rest.starts_with(&name.to_lowercase()) {
                    *i += name.chars().count();
                    return Ok(n);
                }
            }
            let shown: String = s[*i..].iter().take(if short { 3 } else { 9 }).collect();
            Err(bad_value(&shown, key))
        };
        match key {
            "MONTH" | "MON" => {
                tm.mon = names(&MONTHS, key == "MON", &mut i)? as i64 + 1;
                md_set = true;
                continue;
            }
            "DAY" | "DY" => {
                names(&DAYS, key == "DY", &mut i)?;
                continue;
            }
            "AM" | "PM" | "A.M." | "P.M." => {
                pm = Some(second_marker(&s, &mut i, key, ["AM", "PM"], ["A.M.", "P.M."])?);
                continue;
            }
            "AD" | "BC" | "A.D." | "B.C." => {
                bc = second_marker(&s, &mut i, key, ["AD", "BC"], ["A.D.", "B.C."])?;
                continue;
            }
            // As PostgreSQL 15's.
            "TZ" | "OF" => {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    format!("formatting field \"{key}\" is only supported in to_char"),
                ))
            }
            _ => {}
        }
        let width = match key {
            "YYYY" | "IYYY" | "SSSS" => 4,
            "Y,YYY" => 5,
            "YYY" | "DDD" | "MS" => 3,
            "Y" | "D" | "ID" | "Q" | "W" => 1,
            "US" => 6,
            "SSSSS" => 5,
            "J" => 7,
            k if k.starts_with("FF") => usize::from(k.as_bytes()[2] - b'0'),
            _ => 2,
        };
        // A field followed directly by another pattern reads its width; otherwise as many
        // digits as there are.
        let next_is_key = matches!(nodes.get(k + 1), Some(Node::Key { .. }));
        let start = i;
        let neg =
            matches!(key, "YYYY" | "Y,YYY" | "YYY" | "YY" | "Y" | "IYYY" | "TZH") && s.get(i) == Some(&'-');
        if neg || (key == "TZH" && s.get(i) == Some(&'+')) {
            i += 1;
        }
        let digits_start = i;
        while i < s.len() && s[i].is_ascii_digit() && (!next_is_key || i - digits_start < width) {
            i += 1;
        }
        if key == "Y,YYY" && s.get(i) == Some(&',') {
            i += 1;
            while i < s.len() && s[i].is_ascii_digit() {
                i += 1;
            }
        }
        let raw: String = s[digits_start..i].iter().filter(|c| **c != ',').collect();
        let Ok(mut n) = raw.parse::<i64>() else {
            let shown: String = s[start..].iter().take(width.max(2)).collect();
            return Err(bad_value(&shown, key));
        };
        if n > 1_000_000_000 {
            return Err(Error::new(
                SqlState::DATETIME_FIELD_OVERFLOW,
                format!("value for \"{key}\" in source string is out of range"),
            ));
        }
        if neg {
            n = -n;
        }
        let ndigits = i - digits_start;
        // Two- and three-digit years near 2020, as PostgreSQL's adjust_partial_year_to_2020.
        let partial = |y: i64| match y {
            0..=69 => y + 2000,
            70..=99 => y + 1900,
            100..=519 => y + 2000,
            520..=999 => y + 1000,
            _ => y,
        };
        match key {
            "YYYY" | "Y,YYY" | "IYYY" => {
                tm.year = n;
                year_set = true;
            }
            "YYY" | "YY" | "Y" => {
                tm.year = if ndigits < 4 { partial(n) } else { n };
                year_set = true;
            }
            "IW" => iso_week = Some(n),
            "ID" => iso_day = Some(n),
            // A `-` before the hour makes the minutes negative too (`-00` included).
            "TZH" => {
                tzh = Some(n.abs());
                tz_neg = neg;
            }
            "TZM" => tzm = Some(n),
            "MM" => {
                tm.mon = n;
                md_set = true;
            }
            "DD" => {
                tm.mday = n;
                md_set = true;
            }
            "DDD" => doy = Some(n),
            "HH24" => tm.hour = n,
            "HH" | "HH12" => {
                tm.hour = n;
                clock12 = true;
            }
            "MI" => tm.min = n,
            "SS" => tm.sec = n,
            "MS" => tm.fsec = n * 10i64.pow(3u32.saturating_sub(ndigits as u32)) * 1000,
            "US" => tm.fsec = n * 10i64.pow(6u32.saturating_sub(ndigits as u32)),
            k if k.starts_with("FF") => tm.fsec = n * 10i64.pow(6u32.saturating_sub(ndigits as u32)),
            "SSSS" | "SSSSS" => {
                tm.hour = n / 3600;
                tm.min = n / 60 % 60;
                tm.sec = n % 60;
            }
            "J" => julian = Some(n),
            // Q, D, W, WW, CC: read and not used, as PostgreSQL's to_date ignores them.
            _ => {}
        }
    }
    if clock12 {
        if !(1..=12).contains(&tm.hour) {
            return Err(Error::new(
                SqlState("22007"),
                format!("hour \"{}\" is invalid for the 12-hour clock", tm.hour),
            ));
        }
        if pm == Some(true) && tm.hour < 12 {
            tm.hour += 12;
        } else if pm != Some(true) && tm.hour == 12 {
            tm.hour = 0;
        }
    } else if pm == Some(true) && tm.hour < 12 {
        tm.hour += 12;
    }
    // BC years (and negative ones) count back from 1 BC, astronomical year 0.
    if year_set {
        if bc {
            tm.year = -tm.year;
        }
        if tm.year < 0 {
            tm.year += 1;
        }
    }
    let zone = match (tzh, tzm) {
        (None, None) => None,
        (h, m) => {
            let (h, m) = (h.unwrap_or(0), m.unwrap_or(0));
            let off = h * 3600 + m * 60;
            Some(if tz_neg { -off } else { off })
        }
    };
    // An ISO week (of the ISO year read as the year): its Monday, plus the ISO day - 1
    // (PostgreSQL's isoweekdate2date, ID 7 Sunday).
    if let Some(w) = iso_week {
        let jan4 = days_from_civil(tm.year, 1, 4);
        let monday = jan4 - dow(jan4 - 1) + (w - 1) * 7;
        let day = match iso_day {
            None => monday,
            Some(d) => {
                let g = if d + 1 > 7 { 1 } else { d + 1 };
                monday + if g > 1 { g - 2 } else { 6 }
            }
        };
        let (y, m, d) = crate::types::datetime::civil_from_days(day);
        (tm.year, tm.mon, tm.mday) = (y, i64::from(m), i64::from(d));
        md_set = true;
    }
    // A year without a month and day read as a day of the year or a Julian day.
    if let Some(j) = julian {
        let (y, m, d) = crate::types::datetime::civil_from_days(j - date2j(0));
        (tm.year, tm.mon, tm.mday) = (y, i64::from(m), i64::from(d));
    } else if let Some(doy) = doy.filter(|_| !md_set) {
        let days = days_from_civil(tm.year, 1, 1) + doy - 1;
        let (y, m, d) = crate::types::datetime::civil_from_days(days);
        if !(1..=366).contains(&doy) || y != tm.year {
            return Err(field_oor(&tm));
        }
        (tm.mon, tm.mday) = (i64::from(m), i64::from(d));
    }
    if !(1..=12).contains(&tm.mon)
        || tm.mday < 1
        || tm.mday > i64::from(days_in_month(tm.year, tm.mon as u32))
    {
        return Err(field_oor(&tm));
    }
    if tm.hour > 24 || tm.min > 59 || tm.sec > 60 || (tm.hour == 24 && (tm.min, tm.sec, tm.fsec) != (0, 0, 0))
    {
        return Err(Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!(
                "date/time field value out of range: \"{:02}:{:02}:{:02}\"",
                tm.hour, tm.min, tm.sec
            ),
        ));
    }
    Ok((tm, zone))
}

/// `to_date(text, format)`.
pub(super) fn to_date(input: &str, fmt: &str) -> Result<Value> {
    let tm = from_char(input, fmt)?;
    let days = tm.days();
    i32::try_from(days)
        .map(Value::Date)
        .map_err(|_| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "date out of range"))
}

/// `to_timestamp(text, format)`: a timestamptz, the fields read in the session zone.
pub(super) fn to_timestamp(input: &str, fmt: &str) -> Result<Value> {
    let (tm, zone) = from_char_zone(input, fmt)?;
    let local = tm.to_us()?;
    // With TZH / TZM, the fields are a local time at that offset.
    let us = match zone {
        Some(off) => local.checked_sub(off * 1_000_000),
        None => session_zone::from_local(local),
    };
    us.map(Value::TimestampTz)
        .ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))
}
