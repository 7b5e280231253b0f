//! The key layout of rows and secondary-index entries in a distributed ordered key-value store
//! (TiKV; `docs/DISTRIBUTED.md`, "Key layout"): encoding, decoding and range-scan bounds. Pure:
//! no I/O and no client types, so the layout is tested here without a cluster.
//!
//! ```text
//! row            table ‖ 'r' ‖ pk
//! index entry    table ‖ 'i' ‖ index ‖ value ‖ pk     (non-unique index, or a NULL in value)
//! unique entry   table ‖ 'i' ‖ index ‖ value          (pk in the entry's KV value)
//! ```
//!
//! `table` and `index` are u32 big-endian. `pk` is a [`Key`]: `Key::Int` as
//! [`codec::encode_i64`] (8 bytes), `Key::Bytes` as it is (it already is
//! [`codec::encode_key_values`] of the key columns). `value` is `encode_key_values` of the index
//! columns. Byte order of the keys is the logical order of (table, kind, index, value, pk), with
//! 'i' < 'r' and NULL before every other value (the codec's order); and no key of one logical
//! key is a proper prefix of another's, so `prefix ‖ anything` ranges select exactly the keys
//! that share a logical prefix.
//!
//! A unique index keeps `value` alone as the key so that two transactions inserting the same
//! value write the same key, and Percolator's write-write conflict (or `insert`'s "key exists")
//! enforces uniqueness; an entry whose value has a NULL keeps the pk, since NULLs never conflict.

use std::cmp::Ordering;
use std::ops::Bound;

use super::codec::{decode_i64, decode_key_values, encode_i64, encode_key_values};
use super::{Key, Value};
use crate::error::{Error, Result};

/// Kind byte of a row key.
pub const ROW: u8 = b'r';
/// Kind byte of an index entry key.
pub const INDEX: u8 = b'i';

/// How a table's primary key is laid out, which decoding needs: [`PkShape::Int`] for tables
/// whose keys are `Key::Int` (a single integer or timestamp key column, and tables without a
/// primary key: `TableDef::key_kind()` is ALEX), [`PkShape::Values`] with the number of key
/// columns for the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PkShape {
    Int,
    Values(usize),
}

/// How an index's entries are laid out: its number of columns and whether it is unique.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexShape {
    pub columns: usize,
    pub unique: bool,
}

/// What a key's header says: its table and whether it is a row or an entry of which index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Row,
    Index(u32),
}

/// A decoded index entry key. `pk` is `None` for a unique index entry without a NULL: its
/// primary key is the entry's KV value ([`decode_pk`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IndexEntry {
    pub table: u32,
    pub index: u32,
    pub value: Vec<Value>,
    pub pk: Option<Key>,
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("key: {what}"))
}

/// Appends the encoding of a primary key (also the KV value of a unique index entry).
/// A `Key::Bytes` must be an `encode_key_values` output, as every one Augur builds is.
pub fn encode_pk(pk: &Key, out: &mut Vec<u8>) {
    match pk {
        Key::Int(i) => out.extend_from_slice(&encode_i64(*i)),
        Key::Bytes(b) => out.extend_from_slice(b),
    }
}

/// Decodes a whole byte string as a primary key of the given shape.
pub fn decode_pk(b: &[u8], shape: PkShape) -> Result<Key> {
    match shape {
        PkShape::Int => {
            let a: [u8; 8] = b
                .try_into()
                .map_err(|_| corrupt(format!("integer key of {} bytes, not 8", b.len())))?;
            Ok(Key::Int(decode_i64(a)))
        }
        PkShape::Values(n) => {
            if n == 0 {
                return Err(corrupt("a key of no columns"));
            }
            let (_, used) = decode_key_values(b, n)?;
            if used != b.len() {
                return Err(corrupt(format!("{} bytes after the key", b.len() - used)));
            }
            Ok(Key::Bytes(b.to_vec()))
        }
    }
}

/// Every key of a table, rows and index entries.
pub fn table_prefix(table: u32) -> [u8; 4] {
    table.to_be_bytes()
}

/// Every row of a table.
pub fn rows_prefix(table: u32) -> [u8; 5] {
    let t = table.to_be_bytes();
    [t[0], t[1], t[2], t[3], ROW]
}

/// Every entry of one index.
pub fn index_prefix(table: u32, index: u32) -> [u8; 9] {
    let mut p = [0u8; 9];
    p[..4].copy_from_slice(&table.to_be_bytes());
    p[4] = INDEX;
    p[5..].copy_from_slice(&index.to_be_bytes());
    p
}

/// The entries of an index whose leading columns equal `leading` (all of its columns for an
/// equality lookup, fewer for a prefix scan).
pub fn index_value_prefix(table: u32, index: u32, leading: &[Value]) -> Vec<u8> {
    let mut k = index_prefix(table, index).to_vec();
    k.extend_from_slice(&encode_key_values(leading));
    k
}

/// The key of a row.
pub fn row_key(table: u32, pk: &Key) -> Vec<u8> {
    let mut k = rows_prefix(table).to_vec();
    encode_pk(pk, &mut k);
    k
}

/// Whether an entry of an index of this uniqueness with this value carries its primary key in
/// the key (non-unique indexes always; unique ones when a value is NULL).
pub fn entry_has_pk(unique: bool, value: &[Value]) -> bool {
    !unique || value.iter().any(Value::is_null)
}

/// The key of an index entry: `value` holds the index columns of the row whose key is `pk`.
/// For a unique index without a NULL in `value` the pk is left out of the key (store it as the
/// entry's value with [`encode_pk`]).
pub fn index_key(table: u32, index: u32, unique: bool, value: &[Value], pk: &Key) -> Vec<u8> {
    let mut k = index_value_prefix(table, index, value);
    if entry_has_pk(unique, value) {
        encode_pk(pk, &mut k);
    }
    k
}

/// Reads a key's table and kind (and index id), to choose the decoder and the schema.
pub fn decode_header(b: &[u8]) -> Result<(u32, KeyKind)> {
    if b.len() < 5 {
        return Err(corrupt(format!("{} bytes, shorter than a header", b.len())));
    }
    let table = u32::from_be_bytes(b[..4].try_into().expect("4 bytes"));
    match b[4] {
        ROW => Ok((table, KeyKind::Row)),
        INDEX => {
            let id: [u8; 4] = b
                .get(5..9)
                .ok_or_else(|| corrupt("index entry key shorter than its index id"))?
                .try_into()
                .expect("4 bytes");
            Ok((table, KeyKind::Index(u32::from_be_bytes(id))))
        }
        k => Err(corrupt(format!("unknown kind byte {k:#04x}"))),
    }
}

/// Decodes a row key: its table and primary key.
pub fn decode_row_key(b: &[u8], pk: PkShape) -> Result<(u32, Key)> {
    match decode_header(b)? {
        (table, KeyKind::Row) => Ok((table, decode_pk(&b[5..], pk)?)),
        (_, KeyKind::Index(_)) => Err(corrupt("an index entry key where a row key was expected")),
    }
}

/// Decodes an index entry key.
pub fn decode_index_key(b: &[u8], shape: IndexShape, pk: PkShape) -> Result<IndexEntry> {
    let (table, index) = match decode_header(b)? {
        (t, KeyKind::Index(i)) => (t, i),
        (_, KeyKind::Row) => return Err(corrupt("a row key where an index entry key was expected")),
    };
    if shape.columns == 0 {
        return Err(corrupt("an index of no columns"));
    }
    let rest = &b[9..];
    let (value, used) = decode_key_values(rest, shape.columns)?;
    let tail = &rest[used..];
    let pk = if entry_has_pk(shape.unique, &value) {
        Some(decode_pk(tail, pk)?)
    } else if tail.is_empty() {
        None
    } else {
        return Err(corrupt(format!(
            "{} bytes after a unique index value",
            tail.len()
        )));
    };
    Ok(IndexEntry {
        table,
        index,
        value,
        pk,
    })
}

/// The smallest byte string greater than every string that starts with `prefix`; `None` when
/// there is none (`prefix` is empty or all 0xFF), so the range has no upper bound.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// The key range `[prefix, prefix_end(prefix))`: exactly the keys that start with `prefix`.
pub fn prefix_bounds(prefix: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (
        Bound::Included(prefix.to_vec()),
        prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded),
    )
}

/// The row keys of `table` whose primary key is within the bounds. A bound may also be a
/// `Key::Bytes` holding the leading key columns only (a prefix bound, as the SQL layer builds).
pub fn row_bounds(table: u32, lo: Bound<&Key>, hi: Bound<&Key>) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let (all_lo, all_hi) = prefix_bounds(&rows_prefix(table));
    let lo = match lo {
        Bound::Unbounded => all_lo,
        Bound::Included(k) => Bound::Included(row_key(table, k)),
        Bound::Excluded(k) => Bound::Excluded(row_key(table, k)),
    };
    let hi = match hi {
        Bound::Unbounded => all_hi,
        Bound::Included(k) => Bound::Included(row_key(table, k)),
        Bound::Excluded(k) => Bound::Excluded(row_key(table, k)),
    };
    (lo, hi)
}

/// The entries of an index whose leading columns (as many as a bound has values) are within
/// the bounds: a bound on `v` compares the first `v.len()` index columns with `v`.
pub fn index_bounds(
    table: u32,
    index: u32,
    lo: Bound<&[Value]>,
    hi: Bound<&[Value]>,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let (all_lo, all_hi) = prefix_bounds(&index_prefix(table, index));
    // The first key past every entry whose leading columns equal v.
    let past = |v: &[Value]| {
        prefix_end(&index_value_prefix(table, index, v))
            .expect("an index key holds the byte 'i', so it is not all 0xFF")
    };
    let lo = match lo {
        Bound::Unbounded => all_lo,
        Bound::Included(v) => Bound::Included(index_value_prefix(table, index, v)),
        Bound::Excluded(v) => Bound::Included(past(v)),
    };
    let hi = match hi {
        Bound::Unbounded => all_hi,
        Bound::Included(v) => Bound::Excluded(past(v)),
        Bound::Excluded(v) => Bound::Excluded(index_value_prefix(table, index, v)),
    };
    (lo, hi)
}

/// Whether `key` is within `bounds` (byte order), as a range scan over them would return it.
pub fn in_bounds(key: &[u8], bounds: &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> bool {
    let above = match &bounds.0 {
        Bound::Unbounded => true,
        Bound::Included(l) => key.cmp(l.as_slice()) != Ordering::Less,
        Bound::Excluded(l) => key.cmp(l.as_slice()) == Ordering::Greater,
    };
    let below = match &bounds.1 {
        Bound::Unbounded => true,
        Bound::Included(h) => key.cmp(h.as_slice()) != Ordering::Greater,
        Bound::Excluded(h) => key.cmp(h.as_slice()) == Ordering::Less,
    };
    above && below
}
