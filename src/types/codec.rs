//! Byte encodings.
//!
//! *Key encoding* is order-preserving ("memcomparable"): comparing two encoded keys byte by byte
//! gives the same order as comparing the values. Signed integers are big-endian with the sign bit
//! flipped; strings escape 0x00 as 0x00 0xFF and end with 0x00 0x01.
//!
//! *Row encoding* is compact, not ordered: a row version is `kind, prev rowid, key, values`.

use super::{interval, jsonb, numeric, Decimal, Interval, Json, JsonbRef, Key, Uuid, Value, ValueRef};
use crate::error::{Error, Result};

const T_NULL: u8 = 0;
const T_FALSE: u8 = 1;
const T_TRUE: u8 = 2;
const T_INT: u8 = 3;
const T_FLOAT: u8 = 4;
const T_TEXT: u8 = 5;
const T_BYTES: u8 = 6;
const T_TS: u8 = 7;
// Added after the first release: tags are only ever added, so stored rows stay readable.
const T_DATE: u8 = 8;
const T_TSTZ: u8 = 9;
// numeric: the scale (0..=28), then the zigzagged mantissa as a varint; uuid: its 16 bytes.
const T_NUMERIC: u8 = 10;
const T_UUID: u8 = 11;
// interval: months, days and microseconds, each zigzagged as a varint.
const T_INTERVAL: u8 = 12;
// jsonb: the length, then the document's text as jsonb prints it (numbers keep their scale).
const T_JSONB: u8 = 13;
// time: microseconds since midnight as a varint.
const T_TIME: u8 = 14;
// json: the length, then the text as written.
const T_JSON: u8 = 15;

/// Order-preserving encoding of an i64.
#[inline]
pub fn encode_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

pub fn decode_i64(b: [u8; 8]) -> i64 {
    (u64::from_be_bytes(b) ^ (1 << 63)) as i64
}

fn encode_f64(f: f64) -> [u8; 8] {
    // -0 == 0, and every NaN is one value, greater than +inf (PostgreSQL's float order); a NaN
    // with its sign bit set (what x86 makes of inf - inf) would otherwise sort below -inf.
    let f = if f == 0.0 {
        0.0
    } else if f.is_nan() {
        f64::NAN
    } else {
        f
    };
    let bits = f.to_bits();
    let bits = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
    bits.to_be_bytes()
}

fn encode_escaped(out: &mut Vec<u8>, b: &[u8]) {
    for &c in b {
        out.push(c);
        if c == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Order-preserving encoding of key column values (used for text and composite keys).
/// NULLs are rejected by the caller (primary key columns are NOT NULL).
pub fn encode_key_values(vals: &[Value]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 * vals.len());
    for v in vals {
        match v {
            Value::Null => out.push(0x00),
            Value::Bool(b) => out.extend_from_slice(&[0x10, *b as u8]),
            Value::Int(i) => {
                out.push(0x20);
                out.extend_from_slice(&encode_i64(*i));
            }
            Value::Float(f) => {
                out.push(0x30);
                out.extend_from_slice(&encode_f64(*f));
            }
            Value::Text(s) => {
                out.push(0x40);
                encode_escaped(&mut out, s.as_bytes());
            }
            Value::Bytes(b) => {
                out.push(0x50);
                encode_escaped(&mut out, b);
            }
            Value::Timestamp(t) => {
                out.push(0x60);
                out.extend_from_slice(&encode_i64(*t));
            }
            Value::Date(d) => {
                out.push(0x61);
                out.extend_from_slice(&encode_i64(*d as i64));
            }
            Value::TimestampTz(t) => {
                out.push(0x62);
                out.extend_from_slice(&encode_i64(*t));
            }
            Value::Numeric(d) => {
                out.push(0x38);
                numeric::encode_key(*d, &mut out);
            }
            // PostgreSQL orders uuids as their bytes.
            Value::Uuid(u) => {
                out.push(0x70);
                out.extend_from_slice(u.as_bytes());
            }
            // Intervals that compare equal (`1 mon` and `30 days`) are one key.
            Value::Interval(i) => {
                out.push(0x63);
                interval::encode_key(i, &mut out);
            }
            Value::Jsonb(j) => {
                out.push(0x80);
                j.encode_key(&mut out);
            }
            Value::Time(t) => {
                out.push(0x64);
                out.extend_from_slice(&encode_i64(*t));
            }
            Value::Json(s) => {
                out.push(0x81);
                encode_escaped(&mut out, s.as_bytes());
            }
        }
    }
    out
}

/// The inverse of [`encode_key_values`]: decodes `n` values from the start of `b` and returns
/// them with the number of bytes they took. Only canonical encodings are accepted (what
/// `encode_key_values` produces), so that decoding then re-encoding gives back the same bytes:
/// a bool byte other than 0 or 1, the bytes of -0.0 (encoded as 0.0), a 0x00 in a string not
/// followed by 0xFF or 0x01, text that is not UTF-8, or input that ends early is an error.
pub fn decode_key_values(b: &[u8], n: usize) -> Result<(Vec<Value>, usize)> {
    let bad = |what: &str| Error::Corrupt(format!("key value: {what}"));
    let mut r = Reader { b, pos: 0 };
    let mut vals = Vec::with_capacity(n.min(b.len()));
    for _ in 0..n {
        let eight = |r: &mut Reader<'_>| -> Result<[u8; 8]> {
            Ok(r.take(8)
                .map_err(|_| bad("truncated"))?
                .try_into()
                .expect("8 bytes"))
        };
        let v = match r.byte().map_err(|_| bad("truncated"))? {
            0x00 => Value::Null,
            0x10 => match r.byte().map_err(|_| bad("truncated"))? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                _ => return Err(bad("bool byte is neither 0 nor 1")),
            },
            0x20 => Value::Int(decode_i64(eight(&mut r)?)),
            0x30 => {
                let e = eight(&mut r)?;
                let f = decode_f64(e);
                if encode_f64(f) != e {
                    return Err(bad("non-canonical float (-0, or a NaN other than the one)"));
                }
                Value::Float(f)
            }
            0x40 => Value::Text(
                String::from_utf8(read_escaped(&mut r).ok_or_else(|| bad("bad string escape"))?)
                    .map_err(|_| bad("text is not UTF-8"))?,
            ),
            0x50 => Value::Bytes(read_escaped(&mut r).ok_or_else(|| bad("bad string escape"))?),
            0x60 => Value::Timestamp(decode_i64(eight(&mut r)?)),
            0x61 => {
                Value::Date(i32::try_from(decode_i64(eight(&mut r)?)).map_err(|_| bad("date out of range"))?)
            }
            0x62 => Value::TimestampTz(decode_i64(eight(&mut r)?)),
            0x64 => Value::Time(decode_i64(eight(&mut r)?)),
            0x81 => Value::Json(
                String::from_utf8(read_escaped(&mut r).ok_or_else(|| bad("bad string escape"))?)
                    .map_err(|_| bad("json is not UTF-8"))?,
            ),
            0x38 => {
                let (d, used) =
                    numeric::decode_key(&r.b[r.pos..]).ok_or_else(|| bad("non-canonical numeric"))?;
                r.pos += used;
                Value::Numeric(d)
            }
            0x70 => {
                let b: [u8; 16] = r
                    .take(16)
                    .map_err(|_| bad("truncated"))?
                    .try_into()
                    .expect("16 bytes");
                Value::Uuid(Uuid::from_bytes(b))
            }
            0x63 => {
                let b: [u8; 16] = r
                    .take(16)
                    .map_err(|_| bad("truncated"))?
                    .try_into()
                    .expect("16 bytes");
                Value::Interval(interval::decode_key(b).ok_or_else(|| bad("interval out of range"))?)
            }
            0x80 => {
                let (j, used) = Json::decode_key(&r.b[r.pos..]).ok_or_else(|| bad("non-canonical jsonb"))?;
                r.pos += used;
                Value::Jsonb(Box::new(j))
            }
            t => return Err(bad(&format!("unknown tag {t:#04x}"))),
        };
        vals.push(v);
    }
    Ok((vals, r.pos))
}

fn decode_f64(b: [u8; 8]) -> f64 {
    let bits = u64::from_be_bytes(b);
    f64::from_bits(if bits >> 63 == 1 { bits ^ (1 << 63) } else { !bits })
}

/// Reads what `encode_escaped` wrote; None if the input ends first or an escape is invalid.
fn read_escaped(r: &mut Reader<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        match r.byte().ok()? {
            0 => match r.byte().ok()? {
                0xFF => out.push(0),
                0x01 => return Some(out),
                _ => return None,
            },
            c => out.push(c),
        }
    }
}

/// Sets the previous-version pointer of an encoded version (as [`encode_version`] lays it out:
/// a kind byte, then the pointer as 8 big-endian bytes).
pub fn set_version_prev(version: &mut [u8], prev: u64) {
    version[1..9].copy_from_slice(&prev.to_be_bytes());
}

/// Appends a primary key: a kind byte, then 8 little-endian bytes or a varint length and the
/// bytes ([`Reader::key`] reads it back).
pub(crate) fn put_key(out: &mut Vec<u8>, key: &Key) {
    match key {
        Key::Int(i) => {
            out.push(1);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Key::Bytes(b) => {
            out.push(2);
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
    }
}

/// Encodes a row version. `row == None` is a tombstone (the key was deleted).
pub fn encode_version(prev: u64, key: &Key, row: Option<&[Value]>, out: &mut Vec<u8>) {
    out.clear();
    out.push(if row.is_some() { 1 } else { 2 });
    out.extend_from_slice(&prev.to_be_bytes());
    put_key(out, key);
    if let Some(row) = row {
        put_varint(out, row.len() as u64);
        for v in row {
            encode_value(v, out);
        }
    }
}

fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(T_NULL),
        Value::Bool(false) => out.push(T_FALSE),
        Value::Bool(true) => out.push(T_TRUE),
        Value::Int(i) => {
            out.push(T_INT);
            put_varint(out, zigzag(*i));
        }
        Value::Float(f) => {
            out.push(T_FLOAT);
            out.extend_from_slice(&f.to_le_bytes());
        }
        Value::Text(s) => {
            out.push(T_TEXT);
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bytes(b) => {
            out.push(T_BYTES);
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        Value::Timestamp(t) => {
            out.push(T_TS);
            put_varint(out, zigzag(*t));
        }
        Value::Date(d) => {
            out.push(T_DATE);
            put_varint(out, zigzag(*d as i64));
        }
        Value::TimestampTz(t) => {
            out.push(T_TSTZ);
            put_varint(out, zigzag(*t));
        }
        Value::Numeric(d) => {
            out.push(T_NUMERIC);
            out.push(d.scale() as u8);
            put_varint128(out, zigzag128(d.mantissa()));
        }
        Value::Uuid(u) => {
            out.push(T_UUID);
            out.extend_from_slice(u.as_bytes());
        }
        Value::Interval(i) => {
            out.push(T_INTERVAL);
            put_varint(out, zigzag(i64::from(i.months)));
            put_varint(out, zigzag(i64::from(i.days)));
            put_varint(out, zigzag(i.micros));
        }
        Value::Jsonb(j) => {
            out.push(T_JSONB);
            let t = j.to_text();
            put_varint(out, t.len() as u64);
            out.extend_from_slice(t.as_bytes());
        }
        Value::Time(t) => {
            out.push(T_TIME);
            put_varint(out, *t as u64);
        }
        Value::Json(s) => {
            out.push(T_JSON);
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// A numeric value as `encode_value` wrote it (after the tag).
fn read_numeric(r: &mut Reader<'_>) -> Result<Decimal> {
    let scale = u32::from(r.byte()?);
    let m = unzigzag128(r.varint128()?);
    Decimal::try_from_i128_with_scale(m, scale)
        .map(numeric::canon)
        .map_err(|_| Error::Corrupt(format!("numeric mantissa {m} with scale {scale}")))
}

/// An interval as `encode_value` wrote it (after the tag).
fn read_interval(r: &mut Reader<'_>) -> Result<Interval> {
    let field =
        |v: u64| i32::try_from(unzigzag(v)).map_err(|_| Error::Corrupt("interval field out of range".into()));
    let months = field(r.varint()?)?;
    let days = field(r.varint()?)?;
    Ok(Interval::new(months, days, unzigzag(r.varint()?)))
}

/// A decoded row version.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    /// The rowid of the previous version of the same key (0: none).
    pub prev: u64,
    pub key: Key,
    /// `None` for a tombstone.
    pub row: Option<Vec<Value>>,
}

impl Version {
    /// Approximate heap footprint, for the row cache's byte budget.
    pub fn heap_bytes(&self) -> usize {
        let key = match &self.key {
            Key::Int(_) => 0,
            Key::Bytes(b) => b.capacity(),
        };
        let row = self.row.as_ref().map_or(0, |r| {
            r.capacity() * std::mem::size_of::<Value>()
                + r.iter()
                    .map(|v| match v {
                        Value::Text(s) => s.capacity(),
                        Value::Bytes(b) => b.capacity(),
                        _ => 0,
                    })
                    .sum::<usize>()
        });
        std::mem::size_of::<Self>() + key + row
    }
}

/// A cursor over encoded bytes: row versions here, and the checkpoint files that use the same
/// little-endian integers, varints and keys (`engine::secondary_form`).
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, pos: 0 }
    }
    #[inline]
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(truncated)?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    #[inline]
    pub(crate) fn byte(&mut self) -> Result<u8> {
        let b = *self.b.get(self.pos).ok_or_else(truncated)?;
        self.pos += 1;
        Ok(b)
    }
    fn u64_be(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    pub(crate) fn u32_le(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    pub(crate) fn u64_le(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    /// A key as [`put_key`] writes it.
    pub(crate) fn key(&mut self) -> Result<Key> {
        Ok(match self.byte()? {
            1 => Key::Int(i64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"))),
            2 => {
                let n = self.varint()? as usize;
                Key::Bytes(self.take(n)?.to_vec())
            }
            k => return Err(Error::Corrupt(format!("unknown key kind {k}"))),
        })
    }
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64> {
        // One byte (values below 128: small integers, short lengths) is the common case.
        match self.b.get(self.pos) {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b))
            }
            _ => self.varint_long(),
        }
    }

    /// Steps over a varint without decoding it (as `varint`, an error past 10 bytes).
    #[inline]
    fn skip_varint(&mut self) -> Result<()> {
        let rest = self.b.get(self.pos..).unwrap_or(&[]);
        // Eight bytes at once: the first byte without the continuation bit ends the varint
        // (a random 64-bit key is a 10-byte varint: one word test and two byte tests).
        let checked = match rest.first_chunk::<8>() {
            Some(w) => {
                let ends = !u64::from_le_bytes(*w) & 0x8080_8080_8080_8080;
                if ends != 0 {
                    self.pos += (ends.trailing_zeros() / 8) as usize + 1;
                    return Ok(());
                }
                8
            }
            None => 0,
        };
        // A slice's `position` rather than `take`/`skip` adaptors: this runs for every 64-bit
        // integer a scan steps over.
        let tail = rest.get(checked..rest.len().min(10)).unwrap_or(&[]);
        match tail.iter().position(|&b| b < 0x80) {
            Some(i) => {
                self.pos += checked + i + 1;
                Ok(())
            }
            None => Err(unended_varint(rest)),
        }
    }

    /// A varint of up to 128 bits (a numeric's mantissa: 19 bytes at most).
    fn varint128(&mut self) -> Result<u128> {
        let mut v: u128 = 0;
        for shift in (0..128).step_by(7) {
            let b = self.byte()?;
            v |= ((b & 0x7f) as u128) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Error::Corrupt("varint too long".into()))
    }

    fn varint_long(&mut self) -> Result<u64> {
        let rest = self.b.get(self.pos..).unwrap_or(&[]);
        let mut v: u64 = 0;
        for (i, &b) in rest.iter().take(10).enumerate() {
            v |= ((b & 0x7f) as u64) << (7 * i);
            if b < 0x80 {
                self.pos += i + 1;
                return Ok(v);
            }
        }
        Err(unended_varint(rest))
    }
}

/// The error for a varint that does not end within the first 10 bytes of `rest`: cut short,
/// or longer than any u64's.
fn unended_varint(rest: &[u8]) -> Error {
    if rest.len() < 10 {
        truncated()
    } else {
        Error::Corrupt("varint too long".into())
    }
}

fn truncated() -> Error {
    Error::Corrupt("row version truncated".into())
}

/// Decodes only the header of a version: (is_tombstone, prev, key).
pub fn decode_version_header(b: &[u8]) -> Result<(bool, u64, Key)> {
    let mut r = Reader { b, pos: 0 };
    let (tomb, prev, key) = read_header(&mut r)?;
    Ok((tomb, prev, key))
}

fn read_header(r: &mut Reader<'_>) -> Result<(bool, u64, Key)> {
    let kind = r.byte()?;
    let tomb = match kind {
        1 => false,
        2 => true,
        k => return Err(Error::Corrupt(format!("unknown row version kind {k}"))),
    };
    let prev = r.u64_be()?;
    let key = r.key()?;
    Ok((tomb, prev, key))
}

pub fn decode_version(b: &[u8]) -> Result<Version> {
    let mut r = Reader { b, pos: 0 };
    let (tomb, prev, key) = read_header(&mut r)?;
    let row = if tomb {
        None
    } else {
        let n = read_count(&mut r)?;
        let mut row = Vec::with_capacity(n);
        for _ in 0..n {
            row.push(read_value(&mut r)?.to_value());
        }
        Some(row)
    };
    Ok(Version { prev, key, row })
}

#[inline]
fn read_count(r: &mut Reader<'_>) -> Result<usize> {
    let n = r.varint()? as usize;
    // Every value takes at least one byte: a larger count is corrupt (and must not size an
    // allocation).
    if n > r.b.len() - r.pos {
        return Err(truncated());
    }
    Ok(n)
}

/// Steps over one value without decoding it (no UTF-8 check of a text that is not read).
#[inline]
fn skip_value(r: &mut Reader<'_>) -> Result<()> {
    match r.byte()? {
        T_NULL | T_FALSE | T_TRUE => {}
        T_INT | T_TS | T_DATE | T_TSTZ => r.skip_varint()?,
        T_FLOAT => {
            r.take(8)?;
        }
        T_TEXT | T_BYTES => {
            let n = r.varint()? as usize;
            r.take(n)?;
        }
        T_NUMERIC => {
            read_numeric(r)?;
        }
        T_UUID => {
            r.take(16)?;
        }
        T_INTERVAL => {
            read_interval(r)?;
        }
        T_JSONB => {
            let n = r.varint()? as usize;
            r.take(n)?;
        }
        T_TIME => {
            r.varint()?;
        }
        T_JSON => {
            let n = r.varint()? as usize;
            r.take(n)?;
        }
        t => return Err(Error::Corrupt(format!("unknown value tag {t}"))),
    }
    Ok(())
}

#[inline]
fn read_value<'a>(r: &mut Reader<'a>) -> Result<ValueRef<'a>> {
    Ok(match r.byte()? {
        T_NULL => ValueRef::Null,
        T_FALSE => ValueRef::Bool(false),
        T_TRUE => ValueRef::Bool(true),
        T_INT => ValueRef::Int(unzigzag(r.varint()?)),
        T_FLOAT => ValueRef::Float(f64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"))),
        T_TEXT => {
            let n = r.varint()? as usize;
            ValueRef::Text(
                std::str::from_utf8(r.take(n)?).map_err(|_| Error::Corrupt("text is not UTF-8".into()))?,
            )
        }
        T_BYTES => {
            let n = r.varint()? as usize;
            ValueRef::Bytes(r.take(n)?)
        }
        T_TS => ValueRef::Timestamp(unzigzag(r.varint()?)),
        T_DATE => ValueRef::Date(
            i32::try_from(unzigzag(r.varint()?)).map_err(|_| Error::Corrupt("date out of range".into()))?,
        ),
        T_TSTZ => ValueRef::TimestampTz(unzigzag(r.varint()?)),
        T_NUMERIC => ValueRef::Numeric(read_numeric(r)?),
        T_UUID => ValueRef::Uuid(Uuid::from_bytes(r.take(16)?.try_into().expect("16 bytes"))),
        T_INTERVAL => ValueRef::Interval(read_interval(r)?),
        T_JSONB => {
            let n = r.varint()? as usize;
            let t =
                std::str::from_utf8(r.take(n)?).map_err(|_| Error::Corrupt("jsonb is not UTF-8".into()))?;
            jsonb::parse(t).map_err(|e| Error::Corrupt(format!("jsonb value: {e}")))?;
            ValueRef::Jsonb(JsonbRef::Text(t))
        }
        T_TIME => ValueRef::Time(
            i64::try_from(r.varint()?)
                .ok()
                .filter(|t| *t <= super::MICROS_PER_DAY)
                .ok_or_else(|| Error::Corrupt("time out of range".into()))?,
        ),
        T_JSON => {
            let n = r.varint()? as usize;
            ValueRef::Json(
                std::str::from_utf8(r.take(n)?).map_err(|_| Error::Corrupt("json is not UTF-8".into()))?,
            )
        }
        t => return Err(Error::Corrupt(format!("unknown value tag {t}"))),
    })
}

/// The values of a stored row version, read in place: what [`decode_version`] returns as
/// `row`, without allocating. Produced by [`row_view`].
#[derive(Clone, Copy, Debug)]
pub struct EncodedRow<'a> {
    /// The encoded values (after the header and the count).
    b: &'a [u8],
    n: usize,
}

/// The row of the version encoded in `b`, as a view; `None` for a tombstone.
#[inline]
pub fn row_view(b: &[u8]) -> Result<Option<EncodedRow<'_>>> {
    // The common shape first: a live version (kind 1) of an integer key (kind 1), whose header
    // is a fixed 18 bytes.
    if let [1, _, _, _, _, _, _, _, _, 1, _, _, _, _, _, _, _, _, rest @ ..] = b {
        let mut r = Reader { b: rest, pos: 0 };
        let n = read_count(&mut r)?;
        return Ok(Some(EncodedRow { b: &rest[r.pos..], n }));
    }
    let mut r = Reader { b, pos: 0 };
    let tomb = match r.byte()? {
        1 => false,
        2 => true,
        k => return Err(Error::Corrupt(format!("unknown row version kind {k}"))),
    };
    r.take(8)?;
    match r.byte()? {
        1 => r.take(8)?,
        2 => {
            let n = r.varint()? as usize;
            r.take(n)?
        }
        k => return Err(Error::Corrupt(format!("unknown key kind {k}"))),
    };
    if tomb {
        return Ok(None);
    }
    let n = read_count(&mut r)?;
    Ok(Some(EncodedRow { b: &b[r.pos..], n }))
}

impl<'a> EncodedRow<'a> {
    /// The number of values (columns).
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Value `i`, which must be below [`EncodedRow::len`]: the values before it are stepped
    /// over undecoded.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Result<ValueRef<'a>> {
        debug_assert!(i < self.n);
        let mut r = Reader { b: self.b, pos: 0 };
        for _ in 0..i {
            skip_value(&mut r)?;
        }
        read_value(&mut r)
    }

    /// The values in column order.
    pub fn iter(&self) -> EncodedValues<'a> {
        EncodedValues {
            r: Reader { b: self.b, pos: 0 },
            left: self.n,
        }
    }
}

/// Iterator over an [`EncodedRow`]'s values.
pub struct EncodedValues<'a> {
    r: Reader<'a>,
    left: usize,
}

impl<'a> Iterator for EncodedValues<'a> {
    type Item = Result<ValueRef<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let v = read_value(&mut self.r);
        if v.is_err() {
            self.left = 0;
        }
        Some(v)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }

    /// Steps over the first `n` values without decoding them.
    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        for _ in 0..n {
            if self.left == 0 {
                return None;
            }
            self.left -= 1;
            if let Err(e) = skip_value(&mut self.r) {
                self.left = 0;
                return Some(Err(e));
            }
        }
        self.next()
    }
}

impl EncodedValues<'_> {
    /// Values not yet visited.
    pub(crate) fn remaining(&self) -> usize {
        self.left
    }
}

fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}
fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

fn zigzag128(i: i128) -> u128 {
    ((i << 1) ^ (i >> 127)) as u128
}
fn unzigzag128(u: u128) -> i128 {
    ((u >> 1) as i128) ^ -((u & 1) as i128)
}

fn put_varint128(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Skipping a varint lands where decoding it does, and fails where decoding fails: every
    /// length from 1 to 10 bytes, followed by more bytes or not, cut short, and 11 bytes long.
    #[test]
    fn skipping_a_varint_agrees_with_decoding_it() {
        let mut values: Vec<u64> = (0..64).map(|s| 1u64 << s).collect();
        values.extend([0, 127, 128, 16_383, 16_384, u64::MAX, u64::MAX >> 1]);
        for v in values {
            for tail in [&[][..], &[0x85, 0x01, 0x00], &[0xff; 12]] {
                let mut b = Vec::new();
                put_varint(&mut b, v);
                let len = b.len();
                b.extend_from_slice(tail);
                for cut in 0..=b.len() {
                    let mut d = Reader { b: &b[..cut], pos: 0 };
                    let mut s = Reader { b: &b[..cut], pos: 0 };
                    let decoded = d.varint();
                    let skipped = s.skip_varint();
                    assert_eq!(decoded.is_ok(), skipped.is_ok(), "{v} cut at {cut}");
                    if let Ok(got) = decoded {
                        assert_eq!((got, d.pos, s.pos), (v, len, len));
                    }
                }
            }
        }
        let eleven = [0xffu8; 10].iter().chain(&[0x01]).copied().collect::<Vec<u8>>();
        assert!(Reader { b: &eleven, pos: 0 }.skip_varint().is_err());
        assert!(Reader { b: &eleven, pos: 0 }.varint().is_err());
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            ".{0,20}".prop_map(Value::Text),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(Value::Bytes),
            any::<i64>().prop_map(Value::Timestamp),
            any::<i32>().prop_map(Value::Date),
            any::<i64>().prop_map(Value::TimestampTz),
            arb_numeric().prop_map(Value::Numeric),
            any::<[u8; 16]>().prop_map(|b| Value::Uuid(Uuid::from_bytes(b))),
            (any::<i32>(), any::<i32>(), any::<i64>())
                .prop_map(|(m, d, u)| Value::Interval(Interval::new(m, d, u))),
            ("[a-z\"\\\\]{0,5}", any::<i32>()).prop_map(|(s, n)| Value::Jsonb(Box::new(Json::Array(vec![
                Json::String(s),
                Json::Number(Decimal::from(n)),
                Json::Null
            ])))),
            (0..=super::super::MICROS_PER_DAY).prop_map(Value::Time),
            "[ {}\\[\\]:,\"a-z0-9]{0,8}".prop_map(Value::Json),
        ]
    }

    fn arb_numeric() -> impl Strategy<Value = Decimal> {
        (any::<i128>(), 0u32..=28).prop_map(|(m, s)| Decimal::from_i128_with_scale(m % (1i128 << 96), s))
    }

    #[test]
    fn every_nan_is_one_key_above_infinity() {
        let neg_nan = f64::from_bits(0xFFF8_0000_0000_0000);
        assert!(neg_nan.is_nan() && neg_nan.is_sign_negative());
        let enc = |f: f64| encode_key_values(&[Value::Float(f)]);
        assert_eq!(enc(neg_nan), enc(f64::NAN));
        assert!(enc(neg_nan) > enc(f64::INFINITY));
        assert!(enc(f64::NEG_INFINITY) < enc(-1.0));
        // Decoding accepts only the one encoding of NaN (a key decodes to what encodes to it).
        let mut other = vec![0x30];
        other.extend_from_slice(&(!neg_nan.to_bits()).to_be_bytes());
        assert!(decode_key_values(&other, 1).is_err());
    }

    proptest! {
        #[test]
        fn version_round_trips(prev in any::<u64>(), k in any::<i64>(), row in proptest::collection::vec(arb_value(), 0..8), tomb in any::<bool>()) {
            let mut buf = Vec::new();
            let key = Key::Int(k);
            encode_version(prev, &key, if tomb { None } else { Some(&row) }, &mut buf);
            let v = decode_version(&buf).unwrap();
            prop_assert_eq!(v.prev, prev);
            prop_assert_eq!(v.key, key);
            match v.row {
                None => prop_assert!(tomb),
                Some(r) => {
                    prop_assert_eq!(r.len(), row.len());
                    for (a, b) in r.iter().zip(&row) {
                        match (a, b) {
                            (Value::Float(x), Value::Float(y)) => prop_assert_eq!(x.to_bits(), y.to_bits()),
                            _ => prop_assert_eq!(a, b),
                        }
                    }
                }
            }
        }

        #[test]
        fn key_encoding_preserves_order(a in proptest::collection::vec(prop_oneof![any::<i64>().prop_map(Value::Int), ".{0,6}".prop_map(Value::Text)], 2),
                                        b in proptest::collection::vec(prop_oneof![any::<i64>().prop_map(Value::Int), ".{0,6}".prop_map(Value::Text)], 2)) {
            // Only compare keys of the same shape (same column types), as a table's keys are.
            let same_shape = a.iter().zip(&b).all(|(x, y)| std::mem::discriminant(x) == std::mem::discriminant(y));
            prop_assume!(same_shape);
            let ea = encode_key_values(&a);
            let eb = encode_key_values(&b);
            prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
        }

        #[test]
        fn floats_encode_in_postgres_order(a in any::<f64>(), b in any::<f64>()) {
            // NaN of any sign or payload is one value above +inf; -0 == 0.
            let ea = encode_key_values(&[Value::Float(a)]);
            let eb = encode_key_values(&[Value::Float(b)]);
            prop_assert_eq!(ea.cmp(&eb), Value::Float(a).total_cmp(&Value::Float(b)));
        }

        #[test]
        fn numerics_and_uuids_encode_in_value_order(a in arb_numeric(), b in arb_numeric(), x in any::<[u8; 16]>(), y in any::<[u8; 16]>()) {
            let (va, vb) = (Value::Numeric(a), Value::Numeric(b));
            let (ea, eb) = (encode_key_values(std::slice::from_ref(&va)), encode_key_values(std::slice::from_ref(&vb)));
            prop_assert_eq!(ea.cmp(&eb), va.cmp(&vb));
            let (back, used) = decode_key_values(&ea, 1).unwrap();
            prop_assert_eq!(used, ea.len());
            prop_assert_eq!(&back[0], &va);
            prop_assert_eq!(encode_key_values(&back), ea);
            let (ux, uy) = (Value::Uuid(Uuid::from_bytes(x)), Value::Uuid(Uuid::from_bytes(y)));
            prop_assert_eq!(encode_key_values(std::slice::from_ref(&ux)).cmp(&encode_key_values(std::slice::from_ref(&uy))), x.cmp(&y));
            prop_assert_eq!(ux.cmp(&uy), x.cmp(&y));
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_version(&bytes);
            let _ = decode_key_values(&bytes, 2);
            // Also behind the header of a live integer-keyed version (`row_view`'s fast path),
            // read column by column.
            let mut v = vec![1u8; 18];
            v.extend_from_slice(&bytes);
            for b in [&bytes[..], &v[..]] {
                if let Ok(Some(row)) = row_view(b) {
                    for i in 0..row.len() {
                        let _ = row.get(i);
                    }
                }
            }
        }

        /// A view (`row_view`) read column by column (`EncodedRow::get`, what `RowRef::get`
        /// uses) gives the values `decode_version` gives; cut short, every column is a value or
        /// an error, and the last one an error.
        #[test]
        fn column_access_equals_decoding(prev in any::<u64>(), k in any::<i64>(), row in proptest::collection::vec(arb_value(), 1..8), cut in any::<proptest::sample::Index>()) {
            let mut buf = Vec::new();
            encode_version(prev, &Key::Int(k), Some(&row), &mut buf);
            let view = row_view(&buf).unwrap().unwrap();
            prop_assert_eq!(view.len(), row.len());
            for (i, want) in row.iter().enumerate() {
                match (view.get(i).unwrap().to_value(), want) {
                    (Value::Float(x), Value::Float(y)) => prop_assert_eq!(x.to_bits(), y.to_bits()),
                    (got, _) => prop_assert_eq!(&got, want),
                }
            }
            let c = cut.index(buf.len());
            if let Ok(Some(short)) = row_view(&buf[..c]) {
                let last = short.len() - 1;
                prop_assert!(short.get(last).is_err(), "a version cut to {} of {} bytes read whole", c, buf.len());
            }
        }
    }
}
