//! `jsonb`: JSON documents as PostgreSQL's jsonb keeps them (object keys unique, the last of
//! duplicates winning, ordered shorter first and then bytewise; numbers as exact decimals with
//! their written scale), its text output, the operators `->`, `->>` and `@>`, and its order
//! (Object > Array > Boolean > Number > String > Null) with an order-preserving key encoding.
//!
//! The parser is written here rather than taken from serde_json: jsonb numbers are numeric
//! (`1.50` stays `1.50`), which serde_json reads as doubles without its arbitrary-precision
//! feature, a feature that would change every other user of the crate in this build.

use std::cmp::Ordering;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::numeric;
use crate::error::{Error, Result, SqlState};

/// A jsonb value. Objects hold their keys unique and in PostgreSQL's storage order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Decimal),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// PostgreSQL's jsonb key order: shorter keys first, then bytewise.
fn key_cmp(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Nesting deeper than this is refused (the parser recurses).
const MAX_DEPTH: usize = 512;

fn bad(s: &str) -> Error {
    Error::invalid_text(format!("invalid input syntax for type json: \"{s}\""))
}

/// Parses JSON text as jsonb (22P02 for anything that is not JSON; 22P05 for `\u0000`, which
/// jsonb cannot hold; 22003 for a number beyond Augur's numeric).
pub fn parse(s: &str) -> Result<Json> {
    let mut p = Parser {
        b: s.as_bytes(),
        i: 0,
        src: s,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.b.len() {
        return Err(bad(s));
    }
    Ok(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    src: &'a str,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, word: &str) -> Result<()> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(())
        } else {
            Err(bad(self.src))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json> {
        if depth > MAX_DEPTH {
            return Err(Error::new(
                SqlState("54001"),
                format!("jsonb nesting is deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.ws();
        let Some(&c) = self.b.get(self.i) else {
            return Err(bad(self.src));
        };
        Ok(match c {
            b'n' => {
                self.eat("null")?;
                Json::Null
            }
            b't' => {
                self.eat("true")?;
                Json::Bool(true)
            }
            b'f' => {
                self.eat("false")?;
                Json::Bool(false)
            }
            b'"' => Json::String(self.string()?),
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        items.push(self.value(depth + 1)?);
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(bad(self.src)),
                        }
                    }
                }
                Json::Array(items)
            }
            b'{' => {
                self.i += 1;
                let mut pairs: Vec<(String, Json)> = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        if self.b.get(self.i) != Some(&b'"') {
                            return Err(bad(self.src));
                        }
                        let k = self.string()?;
                        self.ws();
                        if self.b.get(self.i) != Some(&b':') {
                            return Err(bad(self.src));
                        }
                        self.i += 1;
                        let v = self.value(depth + 1)?;
                        pairs.push((k, v));
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(bad(self.src)),
                        }
                    }
                }
                Json::Object(canonical_object(pairs))
            }
            b'-' | b'0'..=b'9' => Json::Number(self.number()?),
            _ => return Err(bad(self.src)),
        })
    }

    /// A JSON number (RFC 8259's grammar) as an exact decimal.
    fn number(&mut self) -> Result<Decimal> {
        let start = self.i;
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.i < p.b.len() && p.b[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i > s
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let int_start = self.i;
        if !digits(self) || (self.b[int_start] == b'0' && self.i - int_start > 1) {
            return Err(bad(self.src));
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !digits(self) {
                return Err(bad(self.src));
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !digits(self) {
                return Err(bad(self.src));
            }
        }
        numeric::parse(&self.src[start..self.i])?.ok_or_else(|| bad(self.src))
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self
            .src
            .get(self.i..self.i + 4)
            .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| bad(self.src))?;
        self.i += 4;
        u32::from_str_radix(h, 16).map_err(|_| bad(self.src))
    }

    fn string(&mut self) -> Result<String> {
        self.i += 1; // the opening quote
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.b.len() && !matches!(self.b[self.i], b'"' | b'\\') && self.b[self.i] >= 0x20 {
                self.i += 1;
            }
            out.push_str(&self.src[start..self.i]);
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = *self.b.get(self.i).ok_or_else(|| bad(self.src))?;
                    self.i += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) {
                                // A high surrogate must be followed by a low one.
                                if !self.b[self.i..].starts_with(b"\\u") {
                                    return Err(bad(self.src));
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(bad(self.src));
                                }
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            }
                            if cp == 0 {
                                return Err(Error::new(
                                    SqlState("22P05"),
                                    "unsupported Unicode escape sequence: \\u0000 cannot be converted to text",
                                ));
                            }
                            out.push(char::from_u32(cp).ok_or_else(|| bad(self.src))?);
                        }
                        _ => return Err(bad(self.src)),
                    }
                }
                // The end of input, or a control character, inside a string.
                _ => return Err(bad(self.src)),
            }
        }
    }
}

/// An object's pairs as jsonb keeps them: one per key (the last written), in key order.
fn canonical_object(pairs: Vec<(String, Json)>) -> Vec<(String, Json)> {
    let mut out: Vec<(String, Json)> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        match out.binary_search_by(|(x, _)| key_cmp(x, &k)) {
            Ok(i) => out[i].1 = v,
            Err(i) => out.insert(i, (k, v)),
        }
    }
    out
}

fn not_allowed(msg: &str) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, msg)
}

impl Json {
    /// An object of `pairs` as jsonb keeps it (one pair per key, the last given; key order).
    pub fn object(pairs: Vec<(String, Json)>) -> Json {
        Json::Object(canonical_object(pairs))
    }

    /// `#>` / `#>>`: the value at a path of keys (an array's step is an integer, negative
    /// counting from the end); None where there is none or a step is NULL or, in an array, not
    /// an integer.
    pub fn get_path(&self, path: &[Option<String>]) -> Option<&Json> {
        let mut cur = self;
        for step in path {
            let step = step.as_deref()?;
            cur = match cur {
                Json::Object(_) => cur.get_key(step)?,
                Json::Array(_) => cur.get_index(step.trim().parse().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// `?`: an object's key, or a string element of an array, or the string itself.
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Json::Object(_) => self.get_key(key).is_some(),
            Json::Array(items) => items.iter().any(|e| matches!(e, Json::String(s) if s == key)),
            Json::String(s) => s == key,
            _ => false,
        }
    }

    /// `a || b`: two objects merged (the right's value for a key both have), two arrays
    /// joined; anything else is taken as a one-element array and joined.
    pub fn concat(self, other: Json) -> Json {
        match (self, other) {
            (Json::Object(mut a), Json::Object(b)) => {
                a.extend(b);
                Json::object(a)
            }
            (a, b) => {
                let items = |j: Json| match j {
                    Json::Array(v) => v,
                    j => vec![j],
                };
                let mut v = items(a);
                v.extend(items(b));
                Json::Array(v)
            }
        }
    }

    /// `- key` / `- keys`: an object without those keys, an array without the string elements
    /// equal to one of them; 22023 for a scalar.
    pub fn delete_keys(self, keys: &[&str]) -> Result<Json> {
        match self {
            Json::Object(pairs) => Ok(Json::Object(
                pairs
                    .into_iter()
                    .filter(|(k, _)| !keys.contains(&k.as_str()))
                    .collect(),
            )),
            Json::Array(items) => Ok(Json::Array(
                items
                    .into_iter()
                    .filter(|e| !matches!(e, Json::String(s) if keys.contains(&s.as_str())))
                    .collect(),
            )),
            _ => Err(not_allowed("cannot delete from scalar")),
        }
    }

    /// `- index`: an array without the element at `index` (negative: from the end); 22023
    /// for an object or a scalar.
    pub fn delete_index(self, index: i64) -> Result<Json> {
        match self {
            Json::Array(mut items) => {
                let n = items.len() as i64;
                let i = if index < 0 { n + index } else { index };
                if (0..n).contains(&i) {
                    items.remove(i as usize);
                }
                Ok(Json::Array(items))
            }
            Json::Object(_) => Err(not_allowed("cannot delete from object using integer index")),
            _ => Err(not_allowed("cannot delete from scalar")),
        }
    }

    /// `jsonb_typeof`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// `jsonb_array_length`; 22023 for what is not an array.
    pub fn array_length(&self) -> Result<i64> {
        match self {
            Json::Array(items) => Ok(items.len() as i64),
            Json::Object(_) => Err(not_allowed("cannot get array length of a non-array")),
            _ => Err(not_allowed("cannot get array length of a scalar")),
        }
    }

    /// The text PostgreSQL prints for a jsonb value: `{"a": 1, "b": [true, null]}`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(d) => out.push_str(&numeric::canon(*d).to_string()),
            Json::String(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_string(k, out);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// `json -> key` (an object's field) or `json -> index` (an array's element, from 0;
    /// negative counts from the end); None where there is none.
    pub fn get_key(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => pairs
                .binary_search_by(|(k, _)| key_cmp(k, key))
                .ok()
                .map(|i| &pairs[i].1),
            _ => None,
        }
    }

    pub fn get_index(&self, i: i64) -> Option<&Json> {
        match self {
            Json::Array(items) => {
                let n = items.len() as i64;
                let i = if i < 0 { n + i } else { i };
                usize::try_from(i).ok().and_then(|i| items.get(i))
            }
            _ => None,
        }
    }

    /// `->>`: a string's contents, any other value's JSON text; None for JSON null.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Json::Null => None,
            Json::String(s) => Some(s.clone()),
            v => Some(v.to_text()),
        }
    }

    fn is_scalar(&self) -> bool {
        !matches!(self, Json::Array(_) | Json::Object(_))
    }

    /// `self @> other` (PostgreSQL's jsonb containment): objects contain the pairs of the
    /// other, arrays every element of the other in some element of theirs, scalars are equal,
    /// and, at the top level, an array contains a scalar it has as an element.
    pub fn contains(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Array(items), o) if o.is_scalar() => items
                .iter()
                .any(|e| e.is_scalar() && e.cmp_pg(o) == Ordering::Equal),
            _ => self.contains_inner(other),
        }
    }

    fn contains_inner(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Object(_), Json::Object(want)) => want.iter().all(|(k, wv)| match self.get_key(k) {
                Some(v) if wv.is_scalar() => v.is_scalar() && v.cmp_pg(wv) == Ordering::Equal,
                Some(v) => std::mem::discriminant(v) == std::mem::discriminant(wv) && v.contains_inner(wv),
                None => false,
            }),
            (Json::Array(items), Json::Array(want)) => want.iter().all(|w| {
                items.iter().any(|e| {
                    if w.is_scalar() {
                        e.is_scalar() && e.cmp_pg(w) == Ordering::Equal
                    } else {
                        std::mem::discriminant(e) == std::mem::discriminant(w) && e.contains_inner(w)
                    }
                })
            }),
            (a, b) if a.is_scalar() && b.is_scalar() => a.cmp_pg(b) == Ordering::Equal,
            _ => false,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Json::Null => 0,
            Json::String(_) => 1,
            Json::Number(_) => 2,
            Json::Bool(_) => 3,
            Json::Array(_) => 4,
            Json::Object(_) => 5,
        }
    }

    fn is_empty_array(&self) -> bool {
        matches!(self, Json::Array(a) if a.is_empty())
    }

    /// PostgreSQL's jsonb order: Object > Array > Boolean > Number > String > Null; longer
    /// objects and arrays after shorter ones, then pair by pair (key, value) or element by
    /// element; strings bytewise (the C collation), numbers by value. As in PostgreSQL, an empty
    /// array sorts below every scalar at the top level (a top-level scalar is stored as a
    /// one-element array, and arrays compare by length first).
    pub fn cmp_pg(&self, other: &Json) -> Ordering {
        match (self.is_empty_array(), other.is_empty_array()) {
            (true, false) if other.is_scalar() => Ordering::Less,
            (false, true) if self.is_scalar() => Ordering::Greater,
            _ => self.cmp_inner(other),
        }
    }

    fn cmp_inner(&self, other: &Json) -> Ordering {
        match (self, other) {
            (Json::Null, Json::Null) => Ordering::Equal,
            (Json::Bool(a), Json::Bool(b)) => a.cmp(b),
            (Json::Number(a), Json::Number(b)) => a.cmp(b),
            (Json::String(a), Json::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Json::Array(a), Json::Array(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| x.cmp_inner(y))
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            }),
            (Json::Object(a), Json::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                a.iter()
                    .zip(b)
                    .map(|((ka, va), (kb, vb))| {
                        ka.as_bytes().cmp(kb.as_bytes()).then_with(|| va.cmp_inner(vb))
                    })
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            }),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }

    /// Appends the order-preserving encoding of this value (its bytes compare as
    /// [`Json::cmp_pg`] orders the values; equal values encode alike). A top-level empty array
    /// is the one byte 0, below every scalar.
    pub fn encode_key(&self, out: &mut Vec<u8>) {
        if self.is_empty_array() {
            out.push(0);
        } else {
            self.encode_inner(out);
        }
    }

    fn encode_inner(&self, out: &mut Vec<u8>) {
        out.push(self.rank() + 1);
        match self {
            Json::Null => {}
            Json::Bool(b) => out.push(u8::from(*b)),
            Json::Number(d) => numeric::encode_key(*d, out),
            Json::String(s) => escaped(s, out),
            Json::Array(items) => {
                out.extend_from_slice(&(items.len() as u64).to_be_bytes());
                for v in items {
                    v.encode_inner(out);
                }
            }
            Json::Object(pairs) => {
                out.extend_from_slice(&(pairs.len() as u64).to_be_bytes());
                for (k, v) in pairs {
                    escaped(k, out);
                    v.encode_inner(out);
                }
            }
        }
    }

    /// The inverse of [`Json::encode_key`]: the value at the start of `b` and the bytes it
    /// took, or None unless the bytes are an encoding `encode_key` writes.
    pub fn decode_key(b: &[u8]) -> Option<(Json, usize)> {
        if b.first() == Some(&0) {
            return Some((Json::Array(Vec::new()), 1));
        }
        let mut pos = 0;
        let v = decode_at(b, &mut pos, 0)?;
        // At the top level an empty array has only its one-byte form.
        if v.is_empty_array() {
            return None;
        }
        Some((v, pos))
    }
}

fn escaped(s: &str, out: &mut Vec<u8>) {
    for &c in s.as_bytes() {
        out.push(c);
        if c == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

fn unescaped(b: &[u8], pos: &mut usize) -> Option<String> {
    let mut out = Vec::new();
    loop {
        let c = *b.get(*pos)?;
        *pos += 1;
        if c == 0 {
            match *b.get(*pos)? {
                0xFF => out.push(0),
                0x01 => {
                    *pos += 1;
                    return String::from_utf8(out).ok();
                }
                _ => return None,
            }
            *pos += 1;
        } else {
            out.push(c);
        }
    }
}

fn decode_at(b: &[u8], pos: &mut usize, depth: usize) -> Option<Json> {
    if depth > MAX_DEPTH {
        return None;
    }
    let tag = *b.get(*pos)?;
    *pos += 1;
    let count = |pos: &mut usize| -> Option<usize> {
        let n = u64::from_be_bytes(b.get(*pos..*pos + 8)?.try_into().ok()?);
        *pos += 8;
        // Every element takes at least a byte: a larger count is not an encoding.
        usize::try_from(n).ok().filter(|n| *n <= b.len())
    };
    Some(match tag {
        1 => Json::Null,
        2 => Json::String(unescaped(b, pos)?),
        3 => {
            let (d, used) = numeric::decode_key(&b[*pos..])?;
            *pos += used;
            Json::Number(d)
        }
        4 => {
            let v = *b.get(*pos)?;
            *pos += 1;
            match v {
                0 => Json::Bool(false),
                1 => Json::Bool(true),
                _ => return None,
            }
        }
        5 => {
            let n = count(pos)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(decode_at(b, pos, depth + 1)?);
            }
            Json::Array(items)
        }
        6 => {
            let n = count(pos)?;
            let mut pairs: Vec<(String, Json)> = Vec::with_capacity(n);
            for _ in 0..n {
                let k = unescaped(b, pos)?;
                // Keys unique and in storage order, as every encoded object has them.
                if pairs
                    .last()
                    .is_some_and(|(p, _)| key_cmp(p, &k) != Ordering::Less)
                {
                    return None;
                }
                let v = decode_at(b, pos, depth + 1)?;
                pairs.push((k, v));
            }
            Json::Object(pairs)
        }
        _ => return None,
    })
}

/// A JSON string literal as PostgreSQL's escape_json writes it.
pub(crate) fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Json {
        parse(s).unwrap()
    }

    #[test]
    fn input_is_normalized_as_postgres_jsonb() {
        for (input, shown) in [
            (r#"{"b": 1, "a": 2}"#, r#"{"a": 2, "b": 1}"#),
            (r#"{"aa": 1, "b": 2}"#, r#"{"b": 2, "aa": 1}"#),
            (r#"{"a": 1, "a": 2}"#, r#"{"a": 2}"#),
            (
                r#" [1.50, -0, 1e3, 2E-2,true,null , "x"] "#,
                r#"[1.50, 0, 1000, 0.02, true, null, "x"]"#,
            ),
            (
                r#""tab\tquote\"slash\/uni\u00e9\ud83d\ude00""#,
                "\"tab\\tquote\\\"slash/unié😀\"",
            ),
            ("{}", "{}"),
            ("[]", "[]"),
            (r#"{"a": {"c": [], "b": {}}}"#, r#"{"a": {"b": {}, "c": []}}"#),
        ] {
            assert_eq!(j(input).to_text(), shown, "{input}");
        }
        for bad_input in [
            "",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "01",
            "1.",
            ".5",
            "tru",
            "\"a",
            "[1] x",
            "{1: 2}",
            "\"\t\"",
            "+1",
        ] {
            let e = parse(bad_input).unwrap_err();
            assert_eq!(
                e.sqlstate(),
                SqlState::INVALID_TEXT_REPRESENTATION,
                "{bad_input:?}"
            );
        }
        assert_eq!(parse(r#""\u0000""#).unwrap_err().sqlstate(), SqlState("22P05"));
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert_eq!(parse(&deep).unwrap_err().sqlstate(), SqlState("54001"));
    }

    #[test]
    fn operators_follow_postgres() {
        let doc = j(r#"{"a": {"b": [1, 2, {"c": "x"}]}, "n": null, "s": "text"}"#);
        assert_eq!(
            doc.get_key("a")
                .unwrap()
                .get_key("b")
                .unwrap()
                .get_index(-1)
                .unwrap()
                .to_text(),
            r#"{"c": "x"}"#
        );
        assert_eq!(doc.get_key("s").unwrap().as_text().as_deref(), Some("text"));
        assert_eq!(doc.get_key("n").unwrap().as_text(), None);
        assert!(doc.get_key("zz").is_none() && doc.get_index(0).is_none());
        assert!(doc.contains(&j(r#"{"a": {"b": [{"c": "x"}]}}"#)));
        assert!(!doc.contains(&j(r#"{"a": {"b": [3]}}"#)));
        assert!(doc.contains(&j("{}")));
        assert!(j("[1, 2, [3]]").contains(&j("[[3], 1]")));
        assert!(j("[1, 2]").contains(&j("1")));
        assert!(!j("1").contains(&j("[1]")));
        assert!(!j(r#"{"a": [1]}"#).contains(&j(r#"{"a": 1}"#)));
        assert!(j("1.0").contains(&j("1")));
        assert_eq!(j("[1, 2]").cmp_pg(&j("[1.0, 2.00]")), Ordering::Equal);
    }

    #[test]
    fn key_encoding_orders_as_postgres() {
        let vals = [
            "null",
            r#""""#,
            r#""a""#,
            r#""b""#,
            "-1",
            "0",
            "2.5",
            "false",
            "true",
            "[]",
            "[null]",
            "[2]",
            r#"["a", 1]"#,
            "{}",
            r#"{"b": 1}"#,
            r#"{"a": 1, "b": 2}"#,
            r#"{"a": 2, "b": 1}"#,
        ];
        let parsed: Vec<Json> = vals.iter().map(|s| j(s)).collect();
        let enc: Vec<Vec<u8>> = parsed
            .iter()
            .map(|v| {
                let mut b = Vec::new();
                v.encode_key(&mut b);
                b
            })
            .collect();
        for i in 0..vals.len() {
            for k in 0..vals.len() {
                assert_eq!(
                    enc[i].cmp(&enc[k]),
                    parsed[i].cmp_pg(&parsed[k]),
                    "{} vs {}",
                    vals[i],
                    vals[k]
                );
            }
            let (back, used) = Json::decode_key(&enc[i]).unwrap();
            assert_eq!(used, enc[i].len());
            let mut again = Vec::new();
            back.encode_key(&mut again);
            assert_eq!(again, enc[i]);
        }
        assert!(Json::decode_key(&[6, 0, 0, 0, 0, 0, 0, 0, 2, b'b', 0, 1, 1, b'a', 0, 1, 1]).is_none());
    }
}
