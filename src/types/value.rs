use std::cmp::Ordering;
use std::fmt;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::data_type::{numeric_typmod, DataType};
use super::datetime::{
    date_is_finite, format_date, format_timestamp, parse_datetime, parse_infinity, ts_is_finite,
    DATE_INFINITY, DATE_NEG_INFINITY, MICROS_PER_DAY, TS_INFINITY, TS_NEG_INFINITY,
};
use super::interval::{self, Interval};
use super::jsonb::{self, Json};
use super::numeric;
use crate::error::{Error, Result, SqlState};

/// One value. Integers of every width are held as `i64`; the column type bounds them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Bytes(Vec<u8>),
    /// Microseconds since 1970-01-01 00:00:00 (no time zone); `i64::MAX` is `infinity` and
    /// `i64::MIN` `-infinity` (PostgreSQL's values for them).
    Timestamp(i64),
    /// Days since 1970-01-01; `i32::MAX` is `infinity` and `i32::MIN` `-infinity`.
    Date(i32),
    /// An instant: microseconds since 1970-01-01 00:00:00 UTC; `i64::MAX` / `i64::MIN` are
    /// `infinity` / `-infinity`.
    TimestampTz(i64),
    /// An exact decimal with its display scale (`1.50` keeps two digits after the point).
    Numeric(Decimal),
    Uuid(Uuid),
    Interval(Interval),
    Jsonb(Box<Json>),
    /// A time of day: microseconds since midnight, 0 to 24:00:00 included.
    Time(i64),
    /// `json`: the document's text as written.
    Json(String),
}

pub type Row = Vec<Value>;

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "double precision",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytea",
            Value::Timestamp(_) => "timestamp without time zone",
            Value::Date(_) => "date",
            Value::TimestampTz(_) => "timestamp with time zone",
            Value::Numeric(_) => "numeric",
            Value::Uuid(_) => "uuid",
            Value::Interval(_) => "interval",
            Value::Jsonb(_) => "jsonb",
            Value::Time(_) => "time without time zone",
            Value::Json(_) => "json",
        }
    }

    /// The integer an ALEX primary key holds for this value (integers, timestamps, dates).
    pub fn int_key(&self) -> Option<i64> {
        match *self {
            Value::Int(i) | Value::Timestamp(i) | Value::TimestampTz(i) | Value::Time(i) => Some(i),
            Value::Date(d) => Some(d as i64),
            _ => None,
        }
    }

    /// Parses PostgreSQL's text representation of a value of type `t`.
    pub fn parse_text(s: &str, t: DataType) -> Result<Value> {
        let bad = |tn: &str| Error::invalid_text(format!("invalid input syntax for type {tn}: \"{s}\""));
        let trimmed = s.trim();
        Ok(match t {
            DataType::Int2 | DataType::Int4 | DataType::Int8 => {
                let i: i64 = match trimmed.parse::<i64>() {
                    Ok(i) => i,
                    Err(e) => {
                        use std::num::IntErrorKind::*;
                        return Err(match e.kind() {
                            PosOverflow | NegOverflow => Error::out_of_range(format!(
                                "value \"{s}\" is out of range for type {}",
                                t.sql_name()
                            )),
                            _ => bad(&t.sql_name()),
                        });
                    }
                };
                t.coerce(Value::Int(i)).map_err(|_| {
                    Error::out_of_range(format!("value \"{s}\" is out of range for type {}", t.sql_name()))
                })?
            }
            DataType::Float8 => {
                let l = trimmed.to_ascii_lowercase();
                let f = match l.as_str() {
                    "nan" => f64::NAN,
                    "infinity" | "inf" | "+infinity" => f64::INFINITY,
                    "-infinity" | "-inf" => f64::NEG_INFINITY,
                    _ => trimmed.parse::<f64>().map_err(|_| bad("double precision"))?,
                };
                if f.is_infinite() && !l.contains("inf") {
                    return Err(Error::out_of_range(format!(
                        "\"{s}\" is out of range for type double precision"
                    )));
                }
                Value::Float(f)
            }
            DataType::Bool => match trimmed.to_ascii_lowercase().as_str() {
                "t" | "true" | "yes" | "y" | "on" | "1" => Value::Bool(true),
                "f" | "false" | "no" | "n" | "off" | "0" => Value::Bool(false),
                _ => return Err(bad("boolean")),
            },
            DataType::Text(_) | DataType::Varchar(_) | DataType::Bpchar(_) | DataType::RegType => {
                t.coerce(Value::Text(s.to_string()))?
            }
            // PostgreSQL: bad hex-format data is 22023, bad escape-format data 22P02.
            DataType::Bytea => Value::Bytes(parse_bytea(s).ok_or_else(|| {
                if s.starts_with("\\x") {
                    Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "invalid hexadecimal data for type bytea",
                    )
                } else {
                    bad("bytea")
                }
            })?),
            // PostgreSQL reads a zone offset in timestamp input and ignores it (pgjdbc sends
            // one with every setTimestamp).
            // `infinity` / `-infinity`: the largest and smallest values, as PostgreSQL's.
            DataType::Timestamp | DataType::TimestampTz if parse_infinity(trimmed).is_some() => {
                let us = if parse_infinity(trimmed) == Some(true) {
                    TS_INFINITY
                } else {
                    TS_NEG_INFINITY
                };
                if t == DataType::Timestamp {
                    Value::Timestamp(us)
                } else {
                    Value::TimestampTz(us)
                }
            }
            DataType::Date if parse_infinity(trimmed).is_some() => {
                Value::Date(if parse_infinity(trimmed) == Some(true) {
                    DATE_INFINITY
                } else {
                    DATE_NEG_INFINITY
                })
            }
            DataType::Timestamp => {
                let us = parse_datetime(trimmed).ok_or_else(|| bad("timestamp"))?.0;
                Value::Timestamp(finite_ts(us)?)
            }
            DataType::Date => {
                let (t, _) = parse_datetime(trimmed).ok_or_else(|| bad("date"))?;
                let days = t.div_euclid(MICROS_PER_DAY);
                let days = i32::try_from(days)
                    .ok()
                    .filter(|d| date_is_finite(*d))
                    .ok_or_else(|| Error::out_of_range("date out of range"))?;
                Value::Date(days)
            }
            // No offset: a local time in the session time zone.
            DataType::TimestampTz => {
                let (t, off) = parse_datetime(trimmed).ok_or_else(|| bad("timestamp with time zone"))?;
                let us = match off {
                    Some(off) => t.checked_sub(off as i64 * 1_000_000),
                    None => super::session_zone::from_local(t),
                };
                Value::TimestampTz(finite_ts(
                    us.ok_or_else(|| Error::out_of_range("timestamp out of range"))?,
                )?)
            }
            DataType::Numeric(m) => {
                let d = numeric::parse(s)?.ok_or_else(|| bad("numeric"))?;
                Value::Numeric(numeric_typmod(d, m)?)
            }
            // PostgreSQL's uuid input reads no blanks around the value.
            DataType::Uuid => Value::Uuid(parse_uuid(s).ok_or_else(|| bad("uuid"))?),
            DataType::Interval => Value::Interval(interval::parse(s)?),
            DataType::Jsonb => Value::Jsonb(Box::new(jsonb::parse(s)?)),
            DataType::Json => Value::Json(super::json::parse(s)?),
            DataType::Time(p) => Value::Time(super::time::round_time(super::time::parse_time(s)?, p)),
            DataType::Array(elem) => super::array::parse_typed(s, *elem)?,
        })
    }

    /// PostgreSQL's text output format.
    pub fn to_text(&self) -> Option<String> {
        Some(match self {
            Value::Null => return None,
            Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format_float(*f),
            Value::Text(s) => s.clone(),
            Value::Bytes(b) => {
                let mut s = String::with_capacity(2 + b.len() * 2);
                s.push_str("\\x");
                for byte in b {
                    s.push_str(&format!("{byte:02x}"));
                }
                s
            }
            Value::Timestamp(t) => format_timestamp(*t),
            Value::Date(d) => format_date(*d),
            Value::TimestampTz(t) => super::session_zone::format_tstz(*t),
            Value::Numeric(d) => numeric::canon(*d).to_string(),
            Value::Uuid(u) => u.hyphenated().to_string(),
            Value::Interval(i) => interval::format(i),
            Value::Jsonb(j) => j.to_text(),
            Value::Time(t) => super::time::format_time(*t),
            Value::Json(s) => s.clone(),
        })
    }

    /// SQL comparison: `None` when either side is NULL or the types cannot be compared.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        use Value::*;
        match (self, other) {
            (Null, _) | (_, Null) => None,
            (Int(a), Int(b)) => Some(a.cmp(b)),
            (Float(a), Float(b)) => Some(float_total_cmp(*a, *b)),
            (Int(a), Float(b)) => Some(float_total_cmp(*a as f64, *b)),
            (Float(a), Int(b)) => Some(float_total_cmp(*a, *b as f64)),
            (Bool(a), Bool(b)) => Some(a.cmp(b)),
            (Text(a), Text(b)) => Some(a.cmp(b)),
            (Bytes(a), Bytes(b)) => Some(a.cmp(b)),
            (Timestamp(a), Timestamp(b)) => Some(a.cmp(b)),
            (Date(a), Date(b)) => Some(a.cmp(b)),
            (TimestampTz(a), TimestampTz(b)) => Some(a.cmp(b)),
            // numeric against numeric and integers exactly (1.50 = 1.5 = 1.5000); against
            // float8 as doubles, as PostgreSQL casts numeric to float8 for that comparison.
            (Numeric(a), Numeric(b)) => Some(a.cmp(b)),
            (Int(a), Numeric(b)) => Some(Decimal::from(*a).cmp(b)),
            (Numeric(a), Int(b)) => Some(a.cmp(&Decimal::from(*b))),
            (Float(a), Numeric(b)) => Some(float_total_cmp(*a, numeric::to_f64(*b))),
            (Numeric(a), Float(b)) => Some(float_total_cmp(numeric::to_f64(*a), *b)),
            (Value::Uuid(a), Value::Uuid(b)) => Some(a.cmp(b)),
            // A month counts as 30 days and a day as 24 hours, as PostgreSQL compares them.
            (Value::Interval(a), Value::Interval(b)) => Some(a.cmp_span(b)),
            (Value::Jsonb(a), Value::Jsonb(b)) => Some(a.cmp_pg(b)),
            (Time(a), Time(b)) => Some(a.cmp(b)),
            // json has no order of its own (SQL refuses to compare it); by text here.
            (Json(a), Json(b)) => Some(a.cmp(b)),
            // Against a timestamptz, a date or timestamp is its local time in the session
            // zone, as PostgreSQL's implicit cast reads it.
            (Date(_) | Timestamp(_), TimestampTz(b)) => {
                Some(super::session_zone::from_local(self.datetime_micros()?)?.cmp(b))
            }
            (TimestampTz(a), Date(_) | Timestamp(_)) => {
                Some(a.cmp(&super::session_zone::from_local(other.datetime_micros()?)?))
            }
            // Other mixed date/time comparisons: a date is its midnight.
            (Date(_) | Timestamp(_), Date(_) | Timestamp(_)) => {
                Some(self.datetime_micros()?.cmp(&other.datetime_micros()?))
            }
            _ => None,
        }
    }

    /// A total order for sorting and grouping: NULL sorts after every value (PostgreSQL's
    /// default for ascending order), values of different kinds by kind.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        if let Some(o) = self.sql_cmp(other) {
            return o;
        }
        self.rank().cmp(&other.rank())
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Bool(_) => 0,
            Value::Int(_) | Value::Float(_) | Value::Numeric(_) => 1,
            Value::Text(_) => 2,
            Value::Bytes(_) => 3,
            Value::Timestamp(_) | Value::Date(_) | Value::TimestampTz(_) => 4,
            Value::Uuid(_) => 5,
            Value::Interval(_) => 6,
            Value::Jsonb(_) => 7,
            Value::Time(_) => 8,
            Value::Json(_) => 9,
            Value::Null => 10,
        }
    }

    /// A date, timestamp or timestamptz as microseconds since the epoch (UTC). A date beyond
    /// the range of `i64` microseconds saturates: it still orders after (or before) every
    /// finite timestamp and before (after) `infinity` (`-infinity`), as PostgreSQL orders such
    /// a date against a timestamp, and never overflows; an infinite date is that infinity.
    pub fn datetime_micros(&self) -> Option<i64> {
        match *self {
            Value::Timestamp(t) | Value::TimestampTz(t) => Some(t),
            Value::Date(d) if !date_is_finite(d) => Some(super::datetime::date_to_micros(d)?),
            // A finite date stays between the infinities.
            Value::Date(d) => Some(
                (d as i64)
                    .saturating_mul(MICROS_PER_DAY)
                    .clamp(TS_NEG_INFINITY + 1, TS_INFINITY - 1),
            ),
            _ => None,
        }
    }
}

/// A finite timestamp read from text: the two values that stand for the infinities are out of
/// range (no date-time spelled out reaches them in practice).
fn finite_ts(us: i64) -> Result<i64> {
    if ts_is_finite(us) {
        Ok(us)
    } else {
        Err(Error::out_of_range("timestamp out of range"))
    }
}

/// PostgreSQL orders NaN above every other float and treats NaN = NaN.
fn float_total_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            _ => self.total_cmp(other) == Ordering::Equal,
        }
    }
}
impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        self.total_cmp(other)
    }
}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => 0u8.hash(state),
            Value::Bool(b) => b.hash(state),
            // Int and Float that compare equal must hash equally.
            Value::Int(i) => (*i as f64).to_bits().hash(state),
            Value::Float(f) => {
                let f = if *f == 0.0 { 0.0 } else { *f };
                f.to_bits().hash(state)
            }
            Value::Text(s) => s.hash(state),
            Value::Bytes(b) => b.hash(state),
            // Date/time values that compare equal must hash equally.
            Value::Timestamp(_) | Value::Date(_) | Value::TimestampTz(_) => {
                self.datetime_micros().hash(state)
            }
            // Equal to an Int or a Float exactly when its nearest double is (the double of
            // 1.50 and of 1.5 is one).
            Value::Numeric(d) => {
                let f = numeric::to_f64(*d);
                let f = if f == 0.0 { 0.0 } else { f };
                f.to_bits().hash(state)
            }
            Value::Uuid(u) => u.hash(state),
            Value::Interval(i) => i.span().hash(state),
            Value::Time(t) => t.hash(state),
            Value::Json(s) => s.hash(state),
            // Values that compare equal have one key encoding.
            Value::Jsonb(j) => {
                let mut b = Vec::new();
                j.encode_key(&mut b);
                b.hash(state)
            }
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_text() {
            None => f.write_str("NULL"),
            Some(s) => f.write_str(&s),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Bytes(v)
    }
}
impl From<Decimal> for Value {
    fn from(v: Decimal) -> Self {
        Value::Numeric(v)
    }
}
impl From<Json> for Value {
    fn from(v: Json) -> Self {
        Value::Jsonb(Box::new(v))
    }
}
impl From<Interval> for Value {
    fn from(v: Interval) -> Self {
        Value::Interval(v)
    }
}
impl From<Uuid> for Value {
    fn from(v: Uuid) -> Self {
        Value::Uuid(v)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// A primary-key value as the indexes see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    /// Integer and timestamp keys (and the hidden row identity of tables without a primary key):
    /// indexed by ALEX.
    Int(i64),
    /// Any other key: the order-preserving encoding of its column values
    /// ([`codec::encode_key_values`](super::codec::encode_key_values)); indexed by the ordered fallback.
    Bytes(Vec<u8>),
}

/// Shortest round-trip float text, as PostgreSQL 12+ prints float8.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // The decimal exponent of the shortest round-trip representation (not log10, which can
    // round across a power of ten).
    let s = format!("{f:e}");
    let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = e.parse().unwrap_or(0);
    if !(-4..15).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// PostgreSQL's uuid input (uuid.c's string_to_uuid): 32 hex digits of either case, an
/// optional hyphen after any group of four (never at the end), the whole optionally in braces.
fn parse_uuid(s: &str) -> Option<Uuid> {
    let b = s.as_bytes();
    let braces = b.first() == Some(&b'{');
    let mut i = usize::from(braces);
    let mut out = [0u8; 16];
    for (k, byte) in out.iter_mut().enumerate() {
        let hi = (*b.get(i)? as char).to_digit(16)?;
        let lo = (*b.get(i + 1)? as char).to_digit(16)?;
        *byte = (hi * 16 + lo) as u8;
        i += 2;
        if b.get(i) == Some(&b'-') && k % 2 == 1 && k < 15 {
            i += 1;
        }
    }
    if braces {
        if b.get(i) != Some(&b'}') {
            return None;
        }
        i += 1;
    }
    (i == b.len()).then_some(Uuid::from_bytes(out))
}

fn parse_bytea(s: &str) -> Option<Vec<u8>> {
    if let Some(hex) = s.strip_prefix("\\x") {
        // By table, two digits a byte, bad digits noted on the side (COPY loads decode every
        // bytea field through here).
        const NIBBLE: [u8; 256] = {
            let mut t = [0x10u8; 256];
            let mut i = 0;
            while i < 10 {
                t[b'0' as usize + i] = i as u8;
                i += 1;
            }
            let mut i = 0;
            while i < 6 {
                t[b'a' as usize + i] = 10 + i as u8;
                t[b'A' as usize + i] = 10 + i as u8;
                i += 1;
            }
            t
        };
        let h = hex.as_bytes();
        if h.len() % 2 != 0 {
            return None;
        }
        let mut bad = 0u8;
        let out: Vec<u8> = h
            .chunks_exact(2)
            .map(|p| {
                let (a, b) = (NIBBLE[p[0] as usize], NIBBLE[p[1] as usize]);
                bad |= a | b;
                (a << 4) | b
            })
            .collect();
        (bad & 0x10 == 0).then_some(out)
    } else {
        // Escape format: backslash-octal and doubled backslashes.
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' {
                if b.get(i + 1) == Some(&b'\\') {
                    out.push(b'\\');
                    i += 2;
                } else {
                    let oct = s.get(i + 1..i + 4)?;
                    out.push(u8::from_str_radix(oct, 8).ok()?);
                    i += 4;
                }
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::parse_timestamp;

    #[test]
    fn far_dates_order_against_timestamps_without_overflow() {
        let ts = Value::Timestamp(parse_timestamp("2026-01-02 03:04:05").unwrap());
        for d in [i32::MAX, i32::MAX / 2, 200_000_000] {
            assert_eq!(Value::Date(d).total_cmp(&ts), Ordering::Greater, "{d}");
            assert_eq!(Value::Date(-d).total_cmp(&ts), Ordering::Less, "{d}");
            assert_ne!(Value::Date(d), ts);
        }
        assert_eq!(Value::Date(0), Value::Timestamp(0));
    }

    #[test]
    fn timestamps_round_trip() {
        for s in [
            "1970-01-01 00:00:00",
            "2024-02-29 23:59:59.5",
            "1900-03-01 12:00:00",
            "0001-01-01 00:00:00",
        ] {
            let t = parse_timestamp(s).unwrap();
            assert_eq!(format_timestamp(t), s);
        }
        assert_eq!(parse_timestamp("2023-02-29"), None);
        // Zones: offsets, names, none; the '-' of a date is not one.
        assert_eq!(
            parse_datetime("2026-01-02 03:04:05+00"),
            Some((parse_timestamp("2026-01-02 03:04:05").unwrap(), Some(0)))
        );
        assert_eq!(
            parse_datetime("2026-01-02T03:04:05.5-05:30"),
            Some((parse_timestamp("2026-01-02 03:04:05.5").unwrap(), Some(-19800)))
        );
        assert_eq!(parse_datetime("2026-01-02 03:04 UTC").map(|x| x.1), Some(Some(0)));
        assert_eq!(parse_datetime("2026-01-02").map(|x| x.1), Some(None));
        assert_eq!(parse_datetime("2026-01-02 03:04:05+99"), None);
        assert_eq!(format_date(-1), "1969-12-31");
        assert_eq!(
            Value::parse_text("2026-01-02 10:00:00+02", DataType::TimestampTz)
                .unwrap()
                .to_text()
                .unwrap(),
            "2026-01-02 08:00:00+00"
        );
        assert_eq!(parse_timestamp("2023-13-01"), None);
    }

    #[test]
    fn floats_print_like_postgres() {
        assert_eq!(format_float(0.1), "0.1");
        assert_eq!(format_float(3.5), "3.5");
        assert_eq!(format_float(1e20), "1e+20");
        assert_eq!(format_float(1.5e-7), "1.5e-07");
        assert_eq!(format_float(100.0), "100");
        assert_eq!(format_float(1e-5), "1e-05");
        assert_eq!(format_float(0.0001), "0.0001");
        assert_eq!(format_float(1e15), "1e+15");
        assert_eq!(format_float(1e14), "100000000000000");
        assert_eq!(format_float(f64::NAN), "NaN");
    }

    #[test]
    fn uuids_read_postgres_spellings() {
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for s in [
            canonical,
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            let v = Value::parse_text(s, DataType::Uuid).unwrap();
            assert_eq!(v.to_text().unwrap(), canonical, "{s}");
        }
        for s in [
            "",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "a0eebc999-c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g",
            "urn:uuid:a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            let e = Value::parse_text(s, DataType::Uuid).unwrap_err();
            assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION, "{s:?}");
        }
    }

    #[test]
    fn numerics_compare_by_value_and_hash_with_equal_numbers() {
        use std::hash::{BuildHasher, RandomState};
        let n = |s: &str| Value::parse_text(s, DataType::Numeric(None)).unwrap();
        assert_eq!(n("1.50").to_text().unwrap(), "1.50");
        assert_eq!(n("1.50"), n("1.5"));
        assert_eq!(n("2.0"), Value::Int(2));
        assert_eq!(n("0.5"), Value::Float(0.5));
        assert!(n("1.5") < Value::Int(2) && n("-1.5") < n("-1.25"));
        let h = RandomState::new();
        assert_eq!(h.hash_one(n("2.0")), h.hash_one(Value::Int(2)));
        assert_eq!(h.hash_one(n("1.50")), h.hash_one(n("1.5")));
        assert_eq!(h.hash_one(n("0.5")), h.hash_one(Value::Float(0.5)));
        let e = Value::parse_text("12.345", DataType::Numeric(Some((3, 2)))).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        assert_eq!(
            DataType::Numeric(Some((5, 1)))
                .coerce(Value::Int(7))
                .unwrap()
                .to_text()
                .unwrap(),
            "7.0"
        );
        assert_eq!(DataType::Int4.coerce(n("2.5")).unwrap(), Value::Int(3));
        let e = Value::parse_text("1.2.3", DataType::Numeric(None)).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
    }
}
