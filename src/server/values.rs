//! Values on the wire: result columns in text or binary format, parameters decoded from text or
//! binary format, type OIDs and sizes for RowDescription / ParameterDescription.

use bytes::{BufMut, BytesMut};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};

use crate::error::{Error, Result, SqlState};
use crate::types::{DataType, Decimal, Interval, Row, Uuid, Value};

/// Microseconds between 1970-01-01 (Augur's timestamp epoch) and 2000-01-01 (PostgreSQL's).
const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;
/// Days between 1970-01-01 and 2000-01-01 (the epoch of PostgreSQL's binary date).
const PG_EPOCH_OFFSET_DAYS: i32 = 10_957;

/// OIDs of the types a client may name for a parameter.
pub mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const CHAR: u32 = 18;
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const UNKNOWN: u32 = 705;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIME: u32 = 1083;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const NUMERIC: u32 = 1700;
    pub const INTERVAL: u32 = 1186;
    pub const JSONB: u32 = 3802;
    pub const JSON: u32 = 114;
    pub const UUID: u32 = 2950;
    pub const REGTYPE: u32 = 2206;
}

/// `pg_type.typlen` of a type.
pub fn type_size(t: DataType) -> i16 {
    match t {
        DataType::Int2 => 2,
        DataType::Int4 => 4,
        DataType::Int8
        | DataType::Float8
        | DataType::Timestamp
        | DataType::TimestampTz
        | DataType::Time(_) => 8,
        DataType::Date | DataType::RegType => 4,
        DataType::Bool => 1,
        DataType::Text(_)
        | DataType::Varchar(_)
        | DataType::Bpchar(_)
        | DataType::Bytea
        | DataType::Numeric(_)
        | DataType::Jsonb
        | DataType::Json
        | DataType::Array(_) => -1,
        DataType::Uuid | DataType::Interval => 16,
    }
}

/// `atttypmod` of a type: `varchar(n)` is n + 4, `numeric(p, s)` is ((p << 16) | s) + 4, an
/// array's is its element's, everything else -1 ([`DataType::typmod`]).
pub fn type_modifier(t: DataType) -> i32 {
    t.typmod()
}

/// The pgwire `Type` of an engine type.
pub fn pg_type(t: DataType) -> Type {
    Type::from_oid(t.pg_oid()).unwrap_or(Type::TEXT)
}

/// Field descriptions of a result, in the given formats (`binary[i]` true for binary columns).
pub fn fields(columns: &[(String, DataType)], binary: impl Fn(usize) -> bool) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, (name, t))| {
            let fmt = if binary(i) {
                FieldFormat::Binary
            } else {
                FieldFormat::Text
            };
            FieldInfo::new(name.clone(), None, None, pg_type(*t), fmt)
                .with_type_size(type_size(*t))
                .with_type_modifier(type_modifier(*t))
        })
        .collect()
}

/// Appends one field of a DataRow (length-prefixed, -1 for NULL) in text format.
pub fn put_text(buf: &mut BytesMut, v: &Value) {
    match v {
        Value::Null => buf.put_i32(-1),
        Value::Text(s) => {
            buf.put_i32(s.len() as i32);
            buf.put_slice(s.as_bytes());
        }
        Value::Int(i) => {
            let s = i.to_string();
            buf.put_i32(s.len() as i32);
            buf.put_slice(s.as_bytes());
        }
        Value::Bool(b) => {
            buf.put_i32(1);
            buf.put_u8(if *b { b't' } else { b'f' });
        }
        other => {
            let s = other.to_text().unwrap_or_default();
            buf.put_i32(s.len() as i32);
            buf.put_slice(s.as_bytes());
        }
    }
}

/// Appends one field of a DataRow in PostgreSQL's binary format for column type `t`.
pub fn put_binary(buf: &mut BytesMut, v: &Value, t: DataType) -> Result<()> {
    let as_int = |v: &Value| -> Result<i64> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Float(f) => Ok(f.round() as i64),
            Value::Bool(b) => Ok(*b as i64),
            Value::Text(s) => s
                .trim()
                .parse()
                .map_err(|_| Error::internal(format!("cannot send {s:?} as an integer"))),
            other => Err(Error::internal(format!("cannot send {other:?} as an integer"))),
        }
    };
    if v.is_null() {
        buf.put_i32(-1);
        return Ok(());
    }
    match t {
        DataType::Int2 => {
            buf.put_i32(2);
            buf.put_i16(as_int(v)? as i16);
        }
        DataType::Int4 => {
            buf.put_i32(4);
            buf.put_i32(as_int(v)? as i32);
        }
        DataType::Int8 => {
            buf.put_i32(8);
            buf.put_i64(as_int(v)?);
        }
        DataType::Float8 => {
            let f = match v {
                Value::Float(f) => *f,
                Value::Int(i) => *i as f64,
                other => {
                    return Err(Error::internal(format!(
                        "cannot send {other:?} as double precision"
                    )))
                }
            };
            buf.put_i32(8);
            buf.put_f64(f);
        }
        DataType::Bool => {
            let b = match v {
                Value::Bool(b) => *b,
                Value::Int(i) => *i != 0,
                other => return Err(Error::internal(format!("cannot send {other:?} as boolean"))),
            };
            buf.put_i32(1);
            buf.put_u8(b as u8);
        }
        DataType::Date => {
            let d = match v {
                Value::Date(d) => *d,
                other => return Err(Error::internal(format!("cannot send {other:?} as date"))),
            };
            // The infinities are sent as themselves (PostgreSQL's DATEVAL_NOEND / NOBEGIN).
            let d = if crate::types::date_is_finite(d) {
                d.checked_sub(PG_EPOCH_OFFSET_DAYS)
                    .filter(|d| crate::types::date_is_finite(*d))
                    .ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "date out of range"))?
            } else {
                d
            };
            buf.put_i32(4);
            buf.put_i32(d);
        }
        DataType::Timestamp | DataType::TimestampTz => {
            let t = match v {
                Value::Timestamp(t) | Value::TimestampTz(t) | Value::Int(t) => *t,
                other => return Err(Error::internal(format!("cannot send {other:?} as timestamp"))),
            };
            // The infinities are sent as themselves (PostgreSQL's DT_NOEND / DT_NOBEGIN).
            let t = if crate::types::ts_is_finite(t) {
                t.checked_sub(PG_EPOCH_OFFSET_MICROS)
                    .filter(|t| crate::types::ts_is_finite(*t))
                    .ok_or_else(|| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))?
            } else {
                t
            };
            buf.put_i32(8);
            buf.put_i64(t);
        }
        // time: microseconds since midnight (int8).
        DataType::Time(_) => {
            let t = match v {
                Value::Time(t) => *t,
                other => return Err(Error::internal(format!("cannot send {other:?} as time"))),
            };
            buf.put_i32(8);
            buf.put_i64(t);
        }
        DataType::Bytea => match v {
            Value::Bytes(b) => {
                buf.put_i32(b.len() as i32);
                buf.put_slice(b);
            }
            other => {
                let s = other.to_text().unwrap_or_default();
                buf.put_i32(s.len() as i32);
                buf.put_slice(s.as_bytes());
            }
        },
        DataType::Text(_) | DataType::Varchar(_) | DataType::Bpchar(_) => put_text(buf, v),
        DataType::Numeric(_) => {
            let d = match v {
                Value::Numeric(d) => *d,
                Value::Int(i) => Decimal::from(*i),
                other => return Err(Error::internal(format!("cannot send {other:?} as numeric"))),
            };
            put_numeric(buf, d);
        }
        DataType::Uuid => match v {
            Value::Uuid(u) => {
                buf.put_i32(16);
                buf.put_slice(u.as_bytes());
            }
            other => return Err(Error::internal(format!("cannot send {other:?} as uuid"))),
        },
        DataType::Interval => match v {
            Value::Interval(i) => {
                buf.put_i32(16);
                buf.put_i64(i.micros);
                buf.put_i32(i.days);
                buf.put_i32(i.months);
            }
            other => return Err(Error::internal(format!("cannot send {other:?} as interval"))),
        },
        // json: the text itself (no version byte, unlike jsonb).
        DataType::Json => put_text(buf, v),
        // jsonb: a version byte (1), then the text.
        DataType::Jsonb => {
            let t = v.to_text().unwrap_or_default();
            buf.put_i32(t.len() as i32 + 1);
            buf.put_u8(1);
            buf.put_slice(t.as_bytes());
        }
        DataType::Array(elem) => match v {
            Value::Text(s) => put_array(buf, s, *elem)?,
            other => return Err(Error::internal(format!("cannot send {other:?} as an array"))),
        },
        // regtype: the type's OID (a uint32), as PostgreSQL's regtypesend.
        DataType::RegType => {
            let name = v.to_text().unwrap_or_default();
            let oid = crate::sql::catalog::types::by_name(&name)
                .map(|t| t.oid)
                .ok_or_else(|| Error::internal(format!("cannot send {name:?} as a regtype")))?;
            buf.put_i32(4);
            buf.put_u32(oid as u32);
        }
    }
    Ok(())
}

/// PostgreSQL's binary numeric (numeric.c's numeric_send), length-prefixed: the number of
/// base-10000 digits, the weight of the first (its power of 10000), the sign (0x4000
/// negative), the display scale, then the digits, without leading or trailing zero digits.
fn put_numeric(buf: &mut BytesMut, d: Decimal) {
    let scale = d.scale() as usize;
    let digits = d.mantissa().unsigned_abs().to_string();
    // Split at the point, then pad both sides to whole base-10000 digits.
    let (int, frac) = if digits.len() > scale {
        (
            digits[..digits.len() - scale].to_string(),
            digits[digits.len() - scale..].to_string(),
        )
    } else {
        (
            String::new(),
            format!("{}{digits}", "0".repeat(scale - digits.len())),
        )
    };
    let int = format!("{}{int}", "0".repeat((4 - int.len() % 4) % 4));
    let frac = format!("{frac}{}", "0".repeat((4 - frac.len() % 4) % 4));
    let group = |s: &str| s.parse::<i16>().unwrap_or(0);
    let mut groups: Vec<i16> = int
        .as_bytes()
        .chunks(4)
        .chain(frac.as_bytes().chunks(4))
        .map(|c| group(std::str::from_utf8(c).unwrap_or("0")))
        .collect();
    let mut weight = (int.len() / 4) as i16 - 1;
    let lead = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..lead);
    weight -= lead as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    buf.put_i32(8 + 2 * groups.len() as i32);
    buf.put_u16(groups.len() as u16);
    buf.put_i16(weight);
    buf.put_u16(if d.is_sign_negative() && !d.is_zero() {
        0x4000
    } else {
        0
    });
    buf.put_u16(scale as u16);
    for g in groups {
        buf.put_i16(g);
    }
}

/// An array (held in its text form) in PostgreSQL's binary format: the number of dimensions
/// (0 for an empty array), a has-NULLs flag, the element type's OID, each dimension's length
/// and lower bound, then each element length-prefixed (-1: NULL) in its type's binary format.
fn put_array(buf: &mut BytesMut, text: &str, elem: DataType) -> Result<()> {
    let (lower, items) = crate::types::array::parse(text)?;
    let mut body = BytesMut::with_capacity(20 + 8 * items.len());
    body.put_i32(i32::from(!items.is_empty()));
    body.put_i32(i32::from(items.iter().any(Option::is_none)));
    body.put_u32(elem.pg_oid());
    if !items.is_empty() {
        body.put_i32(items.len() as i32);
        body.put_i32(
            i32::try_from(lower).map_err(|_| Error::out_of_range("array lower bound out of range"))?,
        );
    }
    for x in &items {
        match x {
            None => body.put_i32(-1),
            Some(s) => put_binary(&mut body, &Value::parse_text(s, elem)?, elem)?,
        }
    }
    buf.put_i32(body.len() as i32);
    buf.put_slice(&body);
    Ok(())
}

/// The engine type a client-declared parameter OID stands for (None: let the server decide).
pub fn type_of_oid(oid: u32) -> Option<DataType> {
    Some(match oid {
        oid::BOOL => DataType::Bool,
        oid::BYTEA => DataType::Bytea,
        oid::INT2 => DataType::Int2,
        oid::INT4 | oid::OID => DataType::Int4,
        oid::INT8 => DataType::Int8,
        oid::FLOAT4 | oid::FLOAT8 => DataType::Float8,
        oid::VARCHAR => DataType::Varchar(None),
        oid::TEXT | oid::BPCHAR | oid::NAME | oid::CHAR => DataType::Text(None),
        oid::TIMESTAMP => DataType::Timestamp,
        oid::TIMESTAMPTZ => DataType::TimestampTz,
        oid::DATE => DataType::Date,
        oid::TIME => DataType::Time(None),
        oid::NUMERIC => DataType::Numeric(None),
        oid::UUID => DataType::Uuid,
        oid::INTERVAL => DataType::Interval,
        oid::JSONB => DataType::Jsonb,
        oid::JSON => DataType::Json,
        // Arrays of the element types Augur has (`_int4`, `_text`, ...).
        o => return DataType::array_types().find(|a| a.pg_oid() == o),
    })
}

/// A binary array parameter (array_recv's format: dimensions, a has-NULL flag, the element
/// type's OID, each dimension's length and lower bound, then each element as a length and its
/// binary value, -1 for NULL) as Augur holds arrays: PostgreSQL's text form.
fn decode_array(b: &[u8], elem: Option<DataType>) -> Result<Value> {
    let bad = || bad_binary("array", b.len());
    let mut r = b;
    let int = |r: &mut &[u8]| -> Result<i32> {
        let (head, rest) = r.split_first_chunk::<4>().ok_or_else(bad)?;
        *r = rest;
        Ok(i32::from_be_bytes(*head))
    };
    let ndim = int(&mut r)?;
    let _has_null = int(&mut r)?;
    let elem_oid = int(&mut r)? as u32;
    if ndim > 1 {
        return Err(Error::unsupported(
            "arrays of more than one dimension are not supported by Augur",
        ));
    }
    let (len, lower) = if ndim == 1 {
        (int(&mut r)?, int(&mut r)?)
    } else {
        (0, 1)
    };
    if len < 0 {
        return Err(bad());
    }
    let mut texts: Vec<Option<String>> = Vec::with_capacity(len.min(1024) as usize);
    for _ in 0..len {
        let n = int(&mut r)?;
        if n < 0 {
            texts.push(None);
            continue;
        }
        let n = n as usize;
        if r.len() < n {
            return Err(bad());
        }
        let (item, rest) = r.split_at(n);
        r = rest;
        texts.push(decode_param(Some(item), true, elem_oid, elem)?.to_text());
    }
    if !r.is_empty() {
        return Err(bad());
    }
    let body = crate::types::array::format(texts.iter().map(Option::as_deref));
    Ok(Value::Text(if lower == 1 || texts.is_empty() {
        body
    } else {
        format!("[{lower}:{}]={body}", i64::from(lower) + i64::from(len) - 1)
    }))
}

fn bad_binary(what: &str, len: usize) -> Error {
    Error::new(
        SqlState("22P03"),
        format!("incorrect binary data format in bind parameter ({what}, {len} bytes)"),
    )
}

/// A fixed-size binary value. As in PostgreSQL, fewer bytes than the type needs are 08P01
/// (its receive function runs out of message), more are 22P03.
fn fixed<const N: usize>(b: &[u8], what: &str) -> Result<[u8; N]> {
    if b.len() < N {
        return Err(Error::new(
            SqlState::PROTOCOL_VIOLATION,
            format!(
                "insufficient data left in message ({what} parameter of {} bytes)",
                b.len()
            ),
        ));
    }
    b.try_into().map_err(|_| bad_binary(what, b.len()))
}

/// A regtype parameter given as `s` (a type's name or OID) as the type's name as PostgreSQL
/// prints it; 42704 for a type Augur does not have.
fn regtype_param(s: &str) -> Result<Value> {
    use crate::sql::catalog::types;
    let t = match s.parse::<i64>() {
        Ok(o) => types::by_oid(o).ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_OBJECT,
                format!("type with OID {o} does not exist"),
            )
        })?,
        Err(_) => types::by_name(s)
            .ok_or_else(|| Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{s}\" does not exist")))?,
    };
    Ok(Value::Text(t.display.to_string()))
}

/// Decodes one Bind parameter. `client_oid` is the type the client declared in Parse (0 or
/// absent: unspecified); `server` is the type the SQL layer inferred for the parameter.
pub fn decode_param(
    bytes: Option<&[u8]>,
    binary: bool,
    client_oid: u32,
    server: Option<DataType>,
) -> Result<Value> {
    let Some(b) = bytes else {
        return Ok(Value::Null);
    };
    if !binary {
        let s = std::str::from_utf8(b)
            .map_err(|_| Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\""))?;
        return match server {
            Some(DataType::Text(_) | DataType::Varchar(None)) | None => Ok(Value::Text(s.to_string())),
            // regtype: a type's name (as regtypein reads it) or its OID, held as its name.
            Some(DataType::RegType) => regtype_param(s.trim()),
            Some(t) => Value::parse_text(s, t),
        };
    }
    // Binary: the bytes are in the format of the type the client declared, or, if it declared
    // none, of the type we described.
    let oid = if client_oid != 0 {
        client_oid
    } else {
        server.map(|t| t.pg_oid()).unwrap_or(oid::TEXT)
    };
    Ok(match oid {
        oid::BOOL => Value::Bool(fixed::<1>(b, "boolean")?[0] != 0),
        oid::INT2 => Value::Int(i16::from_be_bytes(fixed(b, "smallint")?) as i64),
        oid::INT4 => Value::Int(i32::from_be_bytes(fixed(b, "integer")?) as i64),
        oid::OID => Value::Int(u32::from_be_bytes(fixed(b, "oid")?) as i64),
        oid::INT8 => Value::Int(i64::from_be_bytes(fixed(b, "bigint")?)),
        oid::FLOAT4 => Value::Float(f32::from_be_bytes(fixed(b, "real")?) as f64),
        oid::FLOAT8 => Value::Float(f64::from_be_bytes(fixed(b, "double precision")?)),
        oid::BYTEA => Value::Bytes(b.to_vec()),
        // regtype: the type's OID (a uint32, as regtyperecv reads it).
        oid::REGTYPE => regtype_param(&u32::from_be_bytes(fixed(b, "regtype")?).to_string())?,
        oid::TIMESTAMP | oid::TIMESTAMPTZ => {
            let t = i64::from_be_bytes(fixed(b, "timestamp")?);
            match t {
                // `infinity` / `-infinity` arrive as themselves.
                i64::MAX | i64::MIN => {
                    if oid == oid::TIMESTAMPTZ {
                        Value::TimestampTz(t)
                    } else {
                        Value::Timestamp(t)
                    }
                }
                t => {
                    let t = t.checked_add(PG_EPOCH_OFFSET_MICROS).ok_or_else(|| {
                        Error::new(SqlState::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
                    })?;
                    if oid == oid::TIMESTAMPTZ {
                        Value::TimestampTz(t)
                    } else {
                        Value::Timestamp(t)
                    }
                }
            }
        }
        oid::DATE => {
            // A date far outside the timestamp range (PostgreSQL's dates reach 5874897 AD) is an
            // error, not a wrapped-around timestamp.
            let d = i32::from_be_bytes(fixed(b, "date")?);
            let overflow =
                |what: &str| Error::new(SqlState::DATETIME_FIELD_OVERFLOW, format!("{what} out of range"));
            // `infinity` / `-infinity` arrive as themselves.
            let days = if crate::types::date_is_finite(d) {
                d.checked_add(PG_EPOCH_OFFSET_DAYS)
                    .filter(|d| crate::types::date_is_finite(*d))
                    .ok_or_else(|| overflow("date"))?
            } else {
                d
            };
            match server {
                // For a timestamp column the date is its midnight, which must fit a timestamp.
                Some(t @ (DataType::Timestamp | DataType::TimestampTz)) => {
                    let us = crate::types::date_to_micros(days).ok_or_else(|| overflow("timestamp"))?;
                    if t == DataType::Timestamp {
                        Value::Timestamp(us)
                    } else {
                        Value::TimestampTz(us)
                    }
                }
                _ => Value::Date(days),
            }
        }
        oid::NUMERIC => {
            let s = numeric_to_string(b)?;
            match server {
                Some(t @ (DataType::Int2 | DataType::Int4 | DataType::Int8)) if !s.contains('.') => {
                    Value::parse_text(&s, t)?
                }
                Some(DataType::Float8) => {
                    Value::Float(s.parse().map_err(|_| bad_binary("numeric", b.len()))?)
                }
                _ => Value::parse_text(&s, DataType::Numeric(None))?,
            }
        }
        oid::UUID => Value::Uuid(Uuid::from_bytes(fixed(b, "uuid")?)),
        // time: microseconds since midnight (int8), 0 to 24:00:00 (time_recv's check).
        oid::TIME => {
            let t = i64::from_be_bytes(fixed(b, "time")?);
            if !(0..=crate::types::MICROS_PER_DAY).contains(&t) {
                return Err(Error::new(SqlState("22008"), "time out of range"));
            }
            Value::Time(t)
        }
        // interval: microseconds (int8), days (int4), months (int4).
        oid::INTERVAL => {
            let b: [u8; 16] = fixed(b, "interval")?;
            let micros = i64::from_be_bytes(b[..8].try_into().expect("8 bytes"));
            let days = i32::from_be_bytes(b[8..12].try_into().expect("4 bytes"));
            let months = i32::from_be_bytes(b[12..].try_into().expect("4 bytes"));
            Value::Interval(Interval::new(months, days, micros))
        }
        oid::JSONB => match b.split_first() {
            Some((&1, text)) => {
                let s = std::str::from_utf8(text).map_err(|_| {
                    Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\"")
                })?;
                Value::parse_text(s, DataType::Jsonb)?
            }
            _ => return Err(bad_binary("jsonb (unsupported jsonb version number)", b.len())),
        },
        oid::JSON => {
            let s = std::str::from_utf8(b)
                .map_err(|_| Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\""))?;
            Value::parse_text(s, DataType::Json)?
        }
        oid::TEXT | oid::VARCHAR | oid::BPCHAR | oid::NAME | oid::CHAR | oid::UNKNOWN => {
            let s = std::str::from_utf8(b)
                .map_err(|_| Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\""))?;
            Value::Text(s.to_string())
        }
        o if matches!(type_of_oid(o), Some(DataType::Array(_))) => {
            let elem = match server {
                Some(DataType::Array(e)) => Some(*e),
                _ => match type_of_oid(o) {
                    Some(DataType::Array(e)) => Some(*e),
                    _ => None,
                },
            };
            decode_array(b, elem)?
        }
        other => {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("binary parameters of type oid {other} are not supported by Augur"),
            ))
        }
    })
}

/// PostgreSQL's binary numeric (base-10000 digits) as decimal text.
fn numeric_to_string(b: &[u8]) -> Result<String> {
    let bad = || bad_binary("numeric", b.len());
    if b.len() < 8 {
        return Err(bad());
    }
    let ndigits = u16::from_be_bytes([b[0], b[1]]) as usize;
    let weight = i16::from_be_bytes([b[2], b[3]]) as i32;
    let sign = u16::from_be_bytes([b[4], b[5]]);
    let dscale = u16::from_be_bytes([b[6], b[7]]) as usize;
    if b.len() != 8 + 2 * ndigits {
        return Err(bad());
    }
    if sign == 0xC000 {
        return Ok("NaN".into());
    }
    let digit = |i: i32| -> u32 {
        if i >= 0 && (i as usize) < ndigits {
            u16::from_be_bytes([b[8 + 2 * i as usize], b[9 + 2 * i as usize]]) as u32
        } else {
            0
        }
    };
    // Group at position p (10000^p) is digit index weight - p.
    let mut int_part = String::new();
    for p in (0..=weight.max(-1)).rev() {
        let d = digit(weight - p);
        if int_part.is_empty() {
            if d != 0 {
                int_part.push_str(&d.to_string());
            }
        } else {
            int_part.push_str(&format!("{d:04}"));
        }
    }
    if int_part.is_empty() {
        int_part.push('0');
    }
    let mut frac_part = String::new();
    let groups = dscale.div_ceil(4) as i32;
    for p in 1..=groups {
        frac_part.push_str(&format!("{:04}", digit(weight + p)));
    }
    frac_part.truncate(dscale);
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    s.push_str(&int_part);
    if !frac_part.is_empty() {
        s.push('.');
        s.push_str(&frac_part);
    }
    Ok(s)
}

/// Whether column or parameter `i` is in binary format under `f`.
pub fn is_binary(f: &Format, i: usize) -> bool {
    match f {
        Format::UnifiedText => false,
        Format::UnifiedBinary => true,
        Format::Individual(v) => v.get(i) == Some(&1),
    }
}

/// RowDescription of a result (simple protocol: every column in text).
pub fn row_description(columns: &[(String, DataType)], binary: impl Fn(usize) -> bool) -> RowDescription {
    RowDescription::new(
        columns
            .iter()
            .enumerate()
            .map(|(i, (name, t))| {
                FieldDescription::new(
                    name.clone(),
                    0,
                    0,
                    t.pg_oid(),
                    type_size(*t),
                    type_modifier(*t),
                    i16::from(binary(i)),
                )
            })
            .collect(),
    )
}

/// One DataRow: each value in its column's text or binary format.
pub fn encode_row(
    row: &Row,
    columns: &[(String, DataType)],
    binary: impl Fn(usize) -> bool,
) -> Result<DataRow, Error> {
    let mut buf = BytesMut::with_capacity(16 * row.len().max(1));
    for (i, v) in row.iter().enumerate() {
        let t = columns.get(i).map(|c| c.1).unwrap_or(DataType::Text(None));
        if binary(i) {
            put_binary(&mut buf, v, t)?;
        } else {
            put_text(&mut buf, v);
        }
    }
    Ok(DataRow::new(buf, row.len() as i16))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regtype_params_in_both_formats() {
        let rt = Some(DataType::RegType);
        let text = |s: &str| decode_param(Some(s.as_bytes()), false, 0, rt);
        // Text: a name (as regtypein reads it, any spelling) or an OID, held as the name.
        assert_eq!(text("int4").unwrap(), Value::from("integer"));
        assert_eq!(
            text("character varying").unwrap(),
            Value::from("character varying")
        );
        assert_eq!(text("23").unwrap(), Value::from("integer"));
        assert_eq!(
            text("no_such_type").unwrap_err().sqlstate(),
            SqlState::UNDEFINED_OBJECT
        );
        // Binary: the OID, whether the client declared regtype or left it to the server.
        let oid = 1043u32.to_be_bytes();
        assert_eq!(
            decode_param(Some(&oid), true, 0, rt).unwrap(),
            Value::from("character varying")
        );
        assert_eq!(
            decode_param(Some(&oid), true, oid::REGTYPE, None).unwrap(),
            Value::from("character varying")
        );
        let none = 999_999u32.to_be_bytes();
        assert_eq!(
            decode_param(Some(&none), true, 0, rt).unwrap_err().sqlstate(),
            SqlState::UNDEFINED_OBJECT
        );
        assert_eq!(
            decode_param(Some(&[0, 0, 0, 23, 0]), true, 0, rt)
                .unwrap_err()
                .sqlstate(),
            SqlState("22P03")
        );
    }

    #[test]
    fn numeric_binary() {
        // 12345.678: ndigits 3, weight 1, digits [1, 2345, 6780], dscale 3
        let mut b = vec![0, 3, 0, 1, 0, 0, 0, 3];
        for d in [1u16, 2345, 6780] {
            b.extend_from_slice(&d.to_be_bytes());
        }
        assert_eq!(numeric_to_string(&b).unwrap(), "12345.678");
        // 0.05: ndigits 1, weight -1, digits [500], dscale 2
        let mut b = vec![0, 1, 0xff, 0xff, 0, 0, 0, 2];
        b.extend_from_slice(&500u16.to_be_bytes());
        assert_eq!(numeric_to_string(&b).unwrap(), "0.05");
        // 20000: ndigits 1, weight 1, digits [2]
        let mut b = vec![0, 1, 0, 1, 0, 0, 0, 0];
        b.extend_from_slice(&2u16.to_be_bytes());
        assert_eq!(numeric_to_string(&b).unwrap(), "20000");
    }

    #[test]
    fn numeric_and_uuid_binary_round_trip() {
        // PostgreSQL's bytes for 12345.678 (see numeric_binary) and for zero with scale 2.
        let mut buf = BytesMut::new();
        put_binary(
            &mut buf,
            &Value::Numeric("12345.678".parse().unwrap()),
            DataType::Numeric(None),
        )
        .unwrap();
        assert_eq!(
            &buf[..],
            &[0, 0, 0, 14, 0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]
        );
        let mut buf = BytesMut::new();
        put_binary(
            &mut buf,
            &Value::Numeric("0.00".parse().unwrap()),
            DataType::Numeric(None),
        )
        .unwrap();
        assert_eq!(&buf[..], &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 2]);
        for s in [
            "0",
            "1.50",
            "-0.05",
            "20000",
            "-1234567890.0123456789",
            "0.0000000000000000000000000001",
            "79228162514264337593543950335",
            "100000000",
            "0.1000",
        ] {
            let mut buf = BytesMut::new();
            put_binary(
                &mut buf,
                &Value::Numeric(s.parse().unwrap()),
                DataType::Numeric(Some((30, 4))),
            )
            .unwrap();
            assert_eq!(numeric_to_string(&buf[4..]).unwrap(), s);
            let v = decode_param(Some(&buf[4..]), true, oid::NUMERIC, None).unwrap();
            assert_eq!(v.to_text().unwrap(), s);
        }
        let u: Uuid = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".parse().unwrap();
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Uuid(u), DataType::Uuid).unwrap();
        assert_eq!(&buf[..4], &[0, 0, 0, 16]);
        assert_eq!(&buf[4..], u.as_bytes());
        let v = decode_param(Some(&buf[4..]), true, oid::UUID, None).unwrap();
        assert_eq!(v, Value::Uuid(u));
        let v = decode_param(
            Some(b"{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}"),
            false,
            0,
            Some(DataType::Uuid),
        )
        .unwrap();
        assert_eq!(v, Value::Uuid(u));
        let e = decode_param(Some(&buf[4..12]), true, oid::UUID, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::PROTOCOL_VIOLATION);
    }

    #[test]
    fn interval_binary_round_trip() {
        let iv = Value::Interval(Interval::new(1, 2, -3));
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &iv, DataType::Interval).unwrap();
        let mut want = vec![0, 0, 0, 16];
        want.extend_from_slice(&(-3i64).to_be_bytes());
        want.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 1]);
        assert_eq!(&buf[..], &want[..]);
        let v = decode_param(Some(&buf[4..]), true, oid::INTERVAL, None).unwrap();
        assert!(matches!(v, Value::Interval(i) if i == Interval::new(1, 2, -3)));
        let v = decode_param(Some(b"1 mon 2 days"), false, 0, Some(DataType::Interval)).unwrap();
        assert_eq!(v.to_text().unwrap(), "1 mon 2 days");
    }

    #[test]
    fn arrays_in_binary() {
        let int4s = DataType::array_of(DataType::Int4).unwrap();
        assert_eq!(int4s.pg_oid(), 1007);
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Text("{1,NULL,3}".into()), int4s).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            0, 0, 0, 40, // length
            0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23, // one dimension, has NULLs, int4
            0, 0, 0, 3, 0, 0, 0, 1, // 3 elements from subscript 1
            0, 0, 0, 4, 0, 0, 0, 1,
            0xff, 0xff, 0xff, 0xff,
            0, 0, 0, 4, 0, 0, 0, 3,
        ];
        assert_eq!(&buf[..], want);
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Text("{}".into()), int4s).unwrap();
        assert_eq!(&buf[..], &[0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23]);
        let texts = DataType::array_of(DataType::Text(None)).unwrap();
        assert_eq!(texts.pg_oid(), 1009);
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Text(r#"{"a b",c}"#.into()), texts).unwrap();
        assert_eq!(&buf[4..16], &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 25]);
        assert_eq!(&buf[24..], b"\0\0\0\x03a b\0\0\0\x01c");
        // varchar[] (`_varchar`, 1015) names its elements varchar (1043), as array_send does.
        let varchars = DataType::array_of(DataType::Varchar(Some(5))).unwrap();
        assert_eq!(varchars.pg_oid(), 1015);
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Text("{x}".into()), varchars).unwrap();
        assert_eq!(&buf[4..16], &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, 19]);
        assert_eq!(type_of_oid(1015), Some(varchars));
    }

    #[test]
    fn binary_roundtrip_ints_and_timestamps() {
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Int(-7), DataType::Int4).unwrap();
        assert_eq!(&buf[..], &[0, 0, 0, 4, 0xff, 0xff, 0xff, 0xf9]);
        let v = decode_param(Some(&buf[4..]), true, 0, Some(DataType::Int4)).unwrap();
        assert_eq!(v, Value::Int(-7));
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Timestamp(0), DataType::Timestamp).unwrap();
        let v = decode_param(Some(&buf[4..]), true, oid::TIMESTAMP, None).unwrap();
        assert_eq!(v, Value::Timestamp(0));
        // date: days since 2000-01-01 as an int4 (1970-01-01 is -10957).
        let mut buf = BytesMut::new();
        put_binary(&mut buf, &Value::Date(0), DataType::Date).unwrap();
        assert_eq!(&buf[..], &[0, 0, 0, 4, 0xff, 0xff, 0xd5, 0x33]);
        let v = decode_param(Some(&buf[4..]), true, oid::DATE, None).unwrap();
        assert!(matches!(v, Value::Date(0)));
        // timestamptz: microseconds since 2000-01-01 UTC, decoded as an instant.
        let mut buf = BytesMut::new();
        put_binary(
            &mut buf,
            &Value::TimestampTz(946_684_800_000_001),
            DataType::TimestampTz,
        )
        .unwrap();
        assert_eq!(&buf[..], &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1]);
        let v = decode_param(Some(&buf[4..]), true, oid::TIMESTAMPTZ, None).unwrap();
        assert!(matches!(v, Value::TimestampTz(946_684_800_000_001)));
        // infinity / -infinity: the extreme integers themselves, both ways (no epoch shift).
        for (v, t, o, bytes) in [
            (
                Value::Timestamp(i64::MAX),
                DataType::Timestamp,
                oid::TIMESTAMP,
                i64::MAX.to_be_bytes().to_vec(),
            ),
            (
                Value::TimestampTz(i64::MIN),
                DataType::TimestampTz,
                oid::TIMESTAMPTZ,
                i64::MIN.to_be_bytes().to_vec(),
            ),
            (
                Value::Date(i32::MAX),
                DataType::Date,
                oid::DATE,
                i32::MAX.to_be_bytes().to_vec(),
            ),
            (
                Value::Date(i32::MIN),
                DataType::Date,
                oid::DATE,
                i32::MIN.to_be_bytes().to_vec(),
            ),
        ] {
            let mut buf = BytesMut::new();
            put_binary(&mut buf, &v, t).unwrap();
            assert_eq!(&buf[4..], &bytes[..], "{v:?}");
            let back = decode_param(Some(&buf[4..]), true, o, None).unwrap();
            assert_eq!(back.to_text(), v.to_text());
            assert!(v.to_text().unwrap().ends_with("infinity"));
        }
        // A binary date infinity into a timestamp column is the timestamp infinity.
        let v = decode_param(
            Some(&i32::MAX.to_be_bytes()),
            true,
            oid::DATE,
            Some(DataType::Timestamp),
        )
        .unwrap();
        assert!(matches!(v, Value::Timestamp(i64::MAX)));
        // Text parameters with an offset, as pgjdbc's setTimestamp sends them.
        let v = decode_param(
            Some(b"2026-01-02 03:04:05+00"),
            false,
            0,
            Some(DataType::Timestamp),
        )
        .unwrap();
        assert_eq!(v.to_text().unwrap(), "2026-01-02 03:04:05");
        let f4 = 1.5f32.to_be_bytes();
        let v = decode_param(Some(&f4), true, oid::FLOAT4, Some(DataType::Float8)).unwrap();
        assert_eq!(v, Value::Float(1.5));
    }
}
