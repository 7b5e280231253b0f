//! Borrowed rows: [`ValueRef`] and [`RowRef`], what the engine's `get_with` and `scan_with`
//! hand to their callbacks. A stored row is read in place from its encoded bytes (in the row
//! cache or a RocksDB buffer), so a read that only looks at a column or copies it out makes no
//! allocation, like rusqlite's `Row::get_ref`.

use super::codec::{EncodedRow, EncodedValues};
use super::{Decimal, Interval, Json, Row, Uuid, Value};
use crate::error::Result;

/// One value, borrowed from a row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(&'a str),
    Bytes(&'a [u8]),
    /// Microseconds since 1970-01-01 00:00:00 (no time zone).
    Timestamp(i64),
    /// Days since 1970-01-01.
    Date(i32),
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    TimestampTz(i64),
    Numeric(Decimal),
    Uuid(Uuid),
    Interval(Interval),
    Jsonb(JsonbRef<'a>),
    /// Microseconds since midnight.
    Time(i64),
    /// A json document's text.
    Json(&'a str),
}

/// A jsonb value, borrowed: a stored row's text of it (parsed once when it was read, so it is
/// known to be jsonb) or a document in memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JsonbRef<'a> {
    Text(&'a str),
    Tree(&'a Json),
}

impl JsonbRef<'_> {
    /// The owned document.
    pub fn to_json(&self) -> Json {
        match *self {
            JsonbRef::Tree(j) => j.clone(),
            // codec::read_value checked the text.
            JsonbRef::Text(t) => super::jsonb::parse(t).unwrap_or(Json::Null),
        }
    }
}

impl ValueRef<'_> {
    /// The owned [`Value`] (copies text and bytes).
    pub fn to_value(&self) -> Value {
        match *self {
            ValueRef::Null => Value::Null,
            ValueRef::Bool(b) => Value::Bool(b),
            ValueRef::Int(i) => Value::Int(i),
            ValueRef::Float(f) => Value::Float(f),
            ValueRef::Text(s) => Value::Text(s.to_owned()),
            ValueRef::Bytes(b) => Value::Bytes(b.to_vec()),
            ValueRef::Timestamp(t) => Value::Timestamp(t),
            ValueRef::Date(d) => Value::Date(d),
            ValueRef::TimestampTz(t) => Value::TimestampTz(t),
            ValueRef::Numeric(d) => Value::Numeric(d),
            ValueRef::Uuid(u) => Value::Uuid(u),
            ValueRef::Interval(i) => Value::Interval(i),
            ValueRef::Jsonb(j) => Value::Jsonb(Box::new(j.to_json())),
            ValueRef::Time(t) => Value::Time(t),
            ValueRef::Json(s) => Value::Json(s.to_owned()),
        }
    }
}

impl Value {
    /// This value, borrowed.
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Bool(b) => ValueRef::Bool(*b),
            Value::Int(i) => ValueRef::Int(*i),
            Value::Float(f) => ValueRef::Float(*f),
            Value::Text(s) => ValueRef::Text(s),
            Value::Bytes(b) => ValueRef::Bytes(b),
            Value::Timestamp(t) => ValueRef::Timestamp(*t),
            Value::Date(d) => ValueRef::Date(*d),
            Value::TimestampTz(t) => ValueRef::TimestampTz(*t),
            Value::Numeric(d) => ValueRef::Numeric(*d),
            Value::Uuid(u) => ValueRef::Uuid(*u),
            Value::Interval(i) => ValueRef::Interval(*i),
            Value::Jsonb(j) => ValueRef::Jsonb(JsonbRef::Tree(j)),
            Value::Time(t) => ValueRef::Time(*t),
            Value::Json(s) => ValueRef::Json(s),
        }
    }
}

/// A row, borrowed: either a stored version read in place, or a row this transaction wrote and
/// has not committed (already decoded).
#[derive(Clone, Copy, Debug)]
pub struct RowRef<'a>(Inner<'a>);

#[derive(Clone, Copy, Debug)]
enum Inner<'a> {
    /// A stored row and the values of the columns added to its table after it was written
    /// (`ALTER TABLE ... ADD COLUMN`: the row is not rewritten, those columns read these).
    Stored(EncodedRow<'a>, &'a [Value]),
    Values(&'a [Value]),
}

impl<'a> RowRef<'a> {
    pub(crate) fn stored(r: EncodedRow<'a>) -> Self {
        RowRef(Inner::Stored(r, &[]))
    }

    /// A stored row of a table whose columns are read as `missing[i]` where the stored row
    /// has no value `i` (columns added after it was written; see `ColumnDef::missing`).
    #[inline]
    pub(crate) fn stored_padded(r: EncodedRow<'a>, missing: &'a [Value]) -> Self {
        let tail = missing.get(r.len()..).unwrap_or(&[]);
        RowRef(Inner::Stored(r, tail))
    }

    pub(crate) fn values(v: &'a [Value]) -> Self {
        RowRef(Inner::Values(v))
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        match &self.0 {
            Inner::Stored(r, tail) => r.len() + tail.len(),
            Inner::Values(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values in column order. A stored row is decoded as it is walked: an error means the
    /// stored bytes are corrupt ([`crate::Error::Corrupt`]).
    pub fn iter(&self) -> RowRefIter<'a> {
        RowRefIter(match &self.0 {
            Inner::Stored(r, tail) => IterInner::Stored(r.iter(), tail.iter()),
            Inner::Values(v) => IterInner::Values(v.iter()),
        })
    }

    /// Column `i` (0-based), `None` past the last column. Walks the columns before it (rows are
    /// encoded compactly, without offsets).
    #[inline]
    pub fn get(&self, i: usize) -> Result<Option<ValueRef<'a>>> {
        match &self.0 {
            // A stored column read straight from the encoding (the common case: one call per
            // column a scan hands out), without an iterator's layers of `Option`s and `Result`s.
            Inner::Stored(r, _) if i < r.len() => r.get(i).map(Some),
            _ => self.iter().nth(i).transpose(),
        }
    }

    /// The owned row.
    pub fn to_row(&self) -> Result<Row> {
        self.iter().map(|v| v.map(|v| v.to_value())).collect()
    }
}

/// Iterator over a [`RowRef`]'s values.
pub struct RowRefIter<'a>(IterInner<'a>);

enum IterInner<'a> {
    Stored(EncodedValues<'a>, std::slice::Iter<'a, Value>),
    Values(std::slice::Iter<'a, Value>),
}

impl<'a> Iterator for RowRefIter<'a> {
    type Item = Result<ValueRef<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterInner::Stored(it, tail) => it.next().or_else(|| tail.next().map(|v| Ok(v.as_value_ref()))),
            IterInner::Values(it) => it.next().map(|v| Ok(v.as_value_ref())),
        }
    }

    /// Column access (`RowRef::get`) steps over the stored values before it undecoded.
    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        match &mut self.0 {
            IterInner::Stored(it, tail) => {
                let stored = it.remaining();
                if n < stored {
                    it.nth(n)
                } else {
                    if stored > 0 {
                        // Steps over (and checks) the rest of the stored values.
                        if let Some(Err(e)) = it.nth(stored - 1) {
                            return Some(Err(e));
                        }
                    }
                    tail.nth(n - stored).map(|v| Ok(v.as_value_ref()))
                }
            }
            IterInner::Values(it) => it.nth(n).map(|v| Ok(v.as_value_ref())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::codec::{encode_version, row_view};
    use crate::types::Key;

    fn sample() -> Row {
        vec![
            Value::Int(-7),
            Value::Null,
            Value::Bool(true),
            Value::Float(2.5),
            Value::Text("héllo".into()),
            Value::Bytes(vec![0, 1, 255]),
            Value::Timestamp(1_700_000_000_000_000),
        ]
    }

    #[test]
    fn a_stored_row_reads_in_place_as_it_decodes() {
        let row = sample();
        let mut enc = Vec::new();
        encode_version(42, &Key::Int(-7), Some(&row), &mut enc);
        let view = RowRef::stored(row_view(&enc).unwrap().expect("not a tombstone"));
        assert_eq!(view.len(), row.len());
        assert_eq!(view.to_row().unwrap(), row);
        for (i, v) in row.iter().enumerate() {
            assert_eq!(view.get(i).unwrap(), Some(v.as_value_ref()));
        }
        assert_eq!(view.get(row.len()).unwrap(), None);
        // The same through a decoded row.
        let vals = RowRef::values(&row);
        assert_eq!(vals.to_row().unwrap(), row);
        assert_eq!(vals.get(4).unwrap(), Some(ValueRef::Text("héllo")));
    }

    #[test]
    fn tombstones_have_no_row_and_corrupt_bytes_are_errors() {
        let mut enc = Vec::new();
        encode_version(0, &Key::Bytes(b"k".to_vec()), None, &mut enc);
        assert!(row_view(&enc).unwrap().is_none());
        encode_version(0, &Key::Int(1), Some(&sample()), &mut enc);
        // Every truncation fails cleanly, in the view or when its values are walked.
        for cut in 0..enc.len() {
            let r = row_view(&enc[..cut]).and_then(|v| match v {
                Some(v) => RowRef::stored(v).to_row().map(Some),
                None => Ok(None),
            });
            assert!(r.is_err(), "a version cut to {cut} bytes was accepted");
        }
        let mut bad = enc.clone();
        let tag_at = enc.len() - 9; // the timestamp's tag (varint of 1.7e15 is 8 bytes)
        bad[tag_at] = 99;
        assert!(RowRef::stored(row_view(&bad).unwrap().unwrap()).to_row().is_err());
        // Column access steps over the values before it, and still reports the damage.
        let view = RowRef::stored(row_view(&bad).unwrap().unwrap());
        assert!(view.get(6).is_err());
        assert_eq!(view.get(5).unwrap(), Some(ValueRef::Bytes(&[0, 1, 255])));
    }

    /// `get(i)` equals the i-th value of `iter()` for every column: stored values of every
    /// type and size (one- and multi-byte lengths and integers), then the values a row stored
    /// before `ADD COLUMN` takes from the table's defaults.
    #[test]
    fn column_access_equals_the_walk() {
        let long = "ü".repeat(300);
        let row = vec![
            Value::Int(i64::MIN),
            Value::Text(long.clone()),
            Value::Int(300),
            Value::Bytes(vec![7; 200]),
            Value::Date(-1),
            Value::TimestampTz(-5),
            Value::Null,
            Value::Float(-0.0),
            Value::Int(5),
        ];
        let missing = vec![
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Text("default".into()),
            Value::Int(9),
        ];
        let mut enc = Vec::new();
        encode_version(1, &Key::Int(1), Some(&row), &mut enc);
        let view = RowRef::stored_padded(row_view(&enc).unwrap().unwrap(), &missing);
        let walked: Vec<ValueRef<'_>> = view.iter().map(|v| v.unwrap()).collect();
        assert_eq!(walked.len(), 11);
        assert_eq!(walked[1], ValueRef::Text(&long));
        assert_eq!(walked[10], ValueRef::Int(9));
        for (i, want) in walked.iter().enumerate() {
            assert_eq!(view.get(i).unwrap().as_ref(), Some(want), "column {i}");
        }
        assert_eq!(view.get(11).unwrap(), None);
        assert_eq!(view.get(usize::MAX).unwrap(), None);
    }
}
