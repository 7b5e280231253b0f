//! Column types ([`DataType`]): their names, OIDs and parsing, and the coercion of a value
//! into a column of a type (range, length and typmod checks).

use std::fmt;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::numeric;
use super::value::Value;
use crate::error::{Error, Result, SqlState};

/// A column type. Integer widths are kept so that range checks match PostgreSQL's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DataType {
    Int2,
    Int4,
    Int8,
    Float8,
    Bool,
    /// `text`. `Text(Some(n))` is how `varchar(n)` was stored before `varchar` was a type of
    /// its own: [`DataType::stored`] reads it as `Varchar(Some(n))` (a stored definition,
    /// `ColumnDef::new`); Augur makes `Text(None)` only.
    Text(Option<u32>),
    /// `character varying(n)` (`varchar(n)`), or `character varying` without a length when
    /// `None`: text with an optional length limit (22001 past it when stored, cut by an
    /// explicit cast). Operators and functions take it as text.
    Varchar(Option<u32>),
    Bytea,
    /// `timestamp without time zone`, microseconds since 1970-01-01 00:00:00.
    Timestamp,
    /// `date`, days since 1970-01-01.
    Date,
    /// `timestamp with time zone`: an instant, microseconds since 1970-01-01 00:00:00 UTC.
    TimestampTz,
    /// `numeric` (also `decimal`): an exact decimal; `numeric(precision, scale)` when `Some`.
    Numeric(Option<(u16, u16)>),
    /// `uuid`: 16 bytes, ordered as bytes.
    Uuid,
    /// `interval`: months, days and microseconds.
    Interval,
    /// `jsonb`: a JSON document.
    Jsonb,
    /// `time` (`time without time zone`): microseconds since midnight; `time(p)` keeps p
    /// fractional digits when `Some`.
    Time(Option<u32>),
    /// `json`: JSON text kept as written ([`super::json`]).
    Json,
    /// An array of `elem` values, of one dimension (a column's type, a cast's, array_agg's
    /// result, the catalog's array columns). Its values are [`Value::Text`] in PostgreSQL's
    /// text form ([`super::array`]); its elements are one of [`DataType::array_of`]'s types.
    Array(#[serde(with = "super::array::array_element")] &'static DataType),
    /// `character(n)` (`char(n)`, `bpchar`): text blank-padded to n characters when stored;
    /// trailing blanks are insignificant in comparisons and dropped by a cast to text. `None`
    /// is `bpchar` without a length.
    Bpchar(Option<u32>),
    /// `regtype` (OID 2206): a type, as its name (`integer`); a result column's type only
    /// (`pg_typeof`), never a stored column's.
    RegType,
}

impl DataType {
    /// Parses a PostgreSQL type name (as written in DDL or a cast), case-insensitively.
    pub fn from_sql_name(name: &str, len: Option<u32>) -> Result<DataType> {
        let n = name.trim().to_ascii_lowercase();
        Ok(match n.as_str() {
            "smallint" | "int2" => DataType::Int2,
            "int" | "integer" | "int4" => DataType::Int4,
            "bigint" | "int8" => DataType::Int8,
            "double precision" | "float8" | "float" | "double" => DataType::Float8,
            "boolean" | "bool" => DataType::Bool,
            "text" | "string" => DataType::Text(None),
            "varchar" | "character varying" => DataType::Varchar(len),
            "char" | "character" => DataType::Bpchar(Some(len.unwrap_or(1))),
            "bpchar" => DataType::Bpchar(len),
            "bytea" => DataType::Bytea,
            "timestamp" | "timestamp without time zone" => DataType::Timestamp,
            "date" => DataType::Date,
            "timestamptz" | "timestamp with time zone" => DataType::TimestampTz,
            "numeric" | "decimal" => DataType::Numeric(None),
            "uuid" => DataType::Uuid,
            "interval" => DataType::Interval,
            "jsonb" => DataType::Jsonb,
            "json" => DataType::Json,
            "time" | "time without time zone" => DataType::Time(len.map(|p| p.min(6))),
            "timetz" | "time with time zone" => {
                return Err(Error::new(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    "type time with time zone is not supported by Augur",
                ))
            }
            _ => {
                return Err(Error::new(
                    SqlState::UNDEFINED_OBJECT,
                    format!("type \"{name}\" does not exist or is not supported by Augur"),
                ))
            }
        })
    }

    /// The PostgreSQL name used in catalogs and error messages.
    pub fn sql_name(&self) -> String {
        match self {
            DataType::Int2 => "smallint".into(),
            DataType::Int4 => "integer".into(),
            DataType::Int8 => "bigint".into(),
            DataType::Float8 => "double precision".into(),
            DataType::Bool => "boolean".into(),
            DataType::Text(_) => "text".into(),
            DataType::Varchar(None) => "character varying".into(),
            DataType::Varchar(Some(n)) => format!("character varying({n})"),
            DataType::Bytea => "bytea".into(),
            DataType::Timestamp => "timestamp without time zone".into(),
            DataType::Date => "date".into(),
            DataType::TimestampTz => "timestamp with time zone".into(),
            DataType::Numeric(None) => "numeric".into(),
            DataType::Numeric(Some((p, s))) => format!("numeric({p},{s})"),
            DataType::Uuid => "uuid".into(),
            DataType::Interval => "interval".into(),
            DataType::Jsonb => "jsonb".into(),
            DataType::Json => "json".into(),
            DataType::Time(None) => "time without time zone".into(),
            DataType::Time(Some(p)) => format!("time({p}) without time zone"),
            DataType::Array(e) => format!("{}[]", e.sql_name()),
            DataType::Bpchar(None) => "bpchar".into(),
            DataType::Bpchar(Some(n)) => format!("character({n})"),
            DataType::RegType => "regtype".into(),
        }
    }

    /// PostgreSQL type OID (for the wire protocol and pg_catalog).
    pub fn pg_oid(&self) -> u32 {
        match self {
            DataType::Int2 => 21,
            DataType::Int4 => 23,
            DataType::Int8 => 20,
            DataType::Float8 => 701,
            DataType::Bool => 16,
            DataType::Text(_) => 25,
            DataType::Varchar(_) => 1043,
            DataType::Bytea => 17,
            DataType::Timestamp => 1114,
            DataType::Date => 1082,
            DataType::TimestampTz => 1184,
            DataType::Numeric(_) => 1700,
            DataType::Uuid => 2950,
            DataType::Interval => 1186,
            DataType::Jsonb => 3802,
            DataType::Time(_) => 1083,
            DataType::Json => 114,
            DataType::Array(e) => super::array::array_oid(e),
            DataType::Bpchar(_) => 1042,
            DataType::RegType => 2206,
        }
    }

    /// The short name PostgreSQL uses in `pg_type.typname` (and for unnamed result columns).
    pub fn short_name(&self) -> &'static str {
        match self {
            DataType::Int2 => "int2",
            DataType::Int4 => "int4",
            DataType::Int8 => "int8",
            DataType::Float8 => "float8",
            DataType::Bool => "bool",
            DataType::Text(_) => "text",
            DataType::Varchar(_) => "varchar",
            DataType::Bpchar(_) => "bpchar",
            DataType::RegType => "regtype",
            DataType::Bytea => "bytea",
            DataType::Timestamp => "timestamp",
            DataType::Date => "date",
            DataType::TimestampTz => "timestamptz",
            DataType::Numeric(_) => "numeric",
            DataType::Uuid => "uuid",
            DataType::Interval => "interval",
            DataType::Jsonb => "jsonb",
            DataType::Time(_) => "time",
            DataType::Json => "json",
            DataType::Array(e) => match e {
                DataType::Int2 => "_int2",
                DataType::Int4 => "_int4",
                DataType::Int8 => "_int8",
                DataType::Float8 => "_float8",
                DataType::Bool => "_bool",
                DataType::Bytea => "_bytea",
                DataType::Timestamp => "_timestamp",
                DataType::Date => "_date",
                DataType::TimestampTz => "_timestamptz",
                DataType::Numeric(_) => "_numeric",
                DataType::Uuid => "_uuid",
                DataType::Interval => "_interval",
                DataType::Jsonb => "_jsonb",
                DataType::Time(_) => "_time",
                DataType::Json => "_json",
                DataType::Bpchar(_) => "_bpchar",
                DataType::Varchar(_) => "_varchar",
                _ => "_text",
            },
        }
    }

    /// The type a stored definition means: `Text(Some(n))` (varchar(n) as stored before
    /// `varchar` was a type of its own) is `Varchar(Some(n))`, also as an array's element.
    pub fn stored(self) -> DataType {
        match self {
            DataType::Text(Some(n)) => DataType::Varchar(Some(n)),
            DataType::Array(DataType::Text(Some(n))) => {
                DataType::array_keeping_typmod(DataType::Varchar(Some(*n))).unwrap_or(self)
            }
            t => t,
        }
    }

    /// The type modifier less PostgreSQL's offset of 4 (the `len` a cast carries):
    /// `varchar(n)` and `character(n)`'s n, `numeric(p, s)`'s `(p << 16) | s`
    /// ([`numeric_len`]), an array's element's; None for a type without one.
    pub fn typmod_len(&self) -> Option<u32> {
        match self {
            DataType::Varchar(Some(n)) | DataType::Bpchar(Some(n)) => Some(*n),
            DataType::Numeric(Some(m)) => Some(numeric_len(*m)),
            DataType::Time(p) => *p,
            DataType::Array(e) => e.typmod_len(),
            _ => None,
        }
    }

    /// PostgreSQL's `atttypmod` of the type (what RowDescription and pg_attribute carry):
    /// [`DataType::typmod_len`] plus 4, or -1 for a type without one.
    pub fn typmod(&self) -> i32 {
        // time(p)'s modifier is p itself (PostgreSQL adds no offset to it).
        if let DataType::Time(p) | DataType::Array(DataType::Time(p)) = self {
            return p.map_or(-1, |p| p as i32);
        }
        self.typmod_len().map_or(-1, |n| n as i32 + 4)
    }

    /// The type with the modifier `len` ([`DataType::typmod_len`]) when it is one that takes one
    /// (varchar, character, numeric and their arrays); otherwise the type as it is.
    pub fn with_len(self, len: Option<u32>) -> DataType {
        let Some(n) = len else { return self };
        match self {
            DataType::Varchar(_) => DataType::Varchar(Some(n)),
            DataType::Bpchar(_) => DataType::Bpchar(Some(n)),
            DataType::Numeric(_) => DataType::Numeric(Some(numeric_mod(n))),
            DataType::Time(_) => DataType::Time(Some(n.min(6))),
            DataType::Array(
                e @ (DataType::Varchar(_) | DataType::Bpchar(_) | DataType::Numeric(_) | DataType::Time(_)),
            ) => DataType::array_keeping_typmod(e.with_len(len)).unwrap_or(self),
            t => t,
        }
    }

    /// Integer-like types whose keys ALEX indexes directly.
    pub fn is_int_key(&self) -> bool {
        matches!(
            self,
            DataType::Int2
                | DataType::Int4
                | DataType::Int8
                | DataType::Timestamp
                | DataType::Date
                | DataType::TimestampTz
                | DataType::Time(_)
        )
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, DataType::Int2 | DataType::Int4 | DataType::Int8)
    }

    pub fn is_numeric(&self) -> bool {
        self.is_integer() || matches!(self, DataType::Float8 | DataType::Numeric(_))
    }

    /// Converts `v` to a value this column can store: range checks, text parsing, length checks.
    pub fn coerce(&self, v: Value) -> Result<Value> {
        use DataType as T;
        use Value as V;
        Ok(match (self, v) {
            (_, V::Null) => V::Null,
            (T::Int2, V::Int(i)) => V::Int(check_range(i, i16::MIN as i64, i16::MAX as i64, "smallint")?),
            (T::Int4, V::Int(i)) => V::Int(check_range(i, i32::MIN as i64, i32::MAX as i64, "integer")?),
            (T::Int8, V::Int(i)) => V::Int(i),
            (T::Int2 | T::Int4 | T::Int8, V::Float(f)) => {
                let r = f.round_ties_even();
                if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                    return Err(Error::out_of_range(format!("{} out of range", self.sql_name())));
                }
                self.coerce(V::Int(r as i64))?
            }
            (T::Float8, V::Float(f)) => V::Float(f),
            (T::Float8, V::Int(i)) => V::Float(i as f64),
            (T::Bool, V::Bool(b)) => V::Bool(b),
            (T::Text(None) | T::Varchar(None), V::Text(s)) => V::Text(s),
            (T::Varchar(Some(n)) | T::Text(Some(n)), V::Text(s)) => {
                if s.chars().count() > *n as usize {
                    return Err(Error::new(
                        SqlState::STRING_DATA_RIGHT_TRUNCATION,
                        format!("value too long for type character varying({n})"),
                    ));
                }
                V::Text(s)
            }
            (T::Bpchar(n), V::Text(s)) => V::Text(bpchar_assign(s, *n)?),
            (T::RegType, V::Text(s)) => V::Text(s),
            (T::Bytea, V::Bytes(b)) => V::Bytes(b),
            (T::Timestamp, V::Timestamp(t)) => V::Timestamp(t),
            (T::Date, V::Date(d)) => V::Date(d),
            (T::TimestampTz, V::TimestampTz(t)) => V::TimestampTz(t),
            (T::Numeric(m), V::Numeric(d)) => V::Numeric(numeric_typmod(d, *m)?),
            (T::Numeric(m), V::Int(i)) => V::Numeric(numeric_typmod(Decimal::from(i), *m)?),
            (T::Numeric(m), V::Float(f)) => V::Numeric(numeric_typmod(numeric::from_f64(f)?, *m)?),
            (T::Int2 | T::Int4 | T::Int8, V::Numeric(d)) => {
                let i = numeric::to_i64(d)
                    .ok_or_else(|| Error::out_of_range(format!("{} out of range", self.sql_name())))?;
                self.coerce(V::Int(i))?
            }
            (T::Float8, V::Numeric(d)) => V::Float(numeric::to_f64(d)),
            (T::Uuid, V::Uuid(u)) => V::Uuid(u),
            (T::Interval, V::Interval(i)) => V::Interval(i),
            (T::Jsonb, V::Jsonb(j)) => V::Jsonb(j),
            (T::Json, V::Json(j)) => V::Json(j),
            (T::Time(p), V::Time(t)) => V::Time(super::time::round_time(t, *p)),
            (t, V::Text(s)) => Value::parse_text(&s, *t)?,
            (t, v) => {
                return Err(Error::mismatch(format!(
                    "cannot convert {} to {}",
                    v.type_name(),
                    t.sql_name()
                )))
            }
        })
    }
}

/// The modifier of `numeric(precision, scale)` as PostgreSQL packs it, without its offset of 4.
pub fn numeric_len((precision, scale): (u16, u16)) -> u32 {
    (u32::from(precision) << 16) | u32::from(scale)
}

/// The `(precision, scale)` of a packed numeric modifier ([`numeric_len`]).
pub fn numeric_mod(len: u32) -> (u16, u16) {
    ((len >> 16) as u16, (len & 0xffff) as u16)
}

/// A text as a `character(n)` column stores it: blank-padded to n characters; 22001 when it
/// is longer than n but for trailing blanks, which are cut (PostgreSQL's rule).
pub fn bpchar_assign(s: String, n: Option<u32>) -> Result<String> {
    let Some(n) = n else { return Ok(s) };
    let count = s.chars().count();
    if count > n as usize {
        let (keep, rest): (String, String) = {
            let i = s.char_indices().nth(n as usize).map_or(s.len(), |(i, _)| i);
            (s[..i].to_string(), s[i..].to_string())
        };
        if rest.chars().any(|c| c != ' ') {
            return Err(Error::new(
                SqlState::STRING_DATA_RIGHT_TRUNCATION,
                format!("value too long for type character({n})"),
            ));
        }
        return Ok(keep);
    }
    Ok(bpchar_pad(s, n))
}

/// `s` blank-padded to n characters (an explicit cast to `character(n)` first cuts it to n).
pub fn bpchar_pad(mut s: String, n: u32) -> String {
    let count = s.chars().count();
    if count > n as usize {
        let i = s.char_indices().nth(n as usize).map_or(s.len(), |(i, _)| i);
        s.truncate(i);
    } else {
        s.extend(std::iter::repeat_n(' ', n as usize - count));
    }
    s
}

/// A numeric value as a column of `numeric(precision, scale)` (`Some`) or `numeric` stores it.
pub fn numeric_typmod(d: Decimal, typmod: Option<(u16, u16)>) -> Result<Decimal> {
    match typmod {
        Some((p, s)) => numeric::apply_typmod(d, u32::from(p), u32::from(s)),
        None => Ok(numeric::canon(d)),
    }
}

fn check_range(i: i64, lo: i64, hi: i64, name: &str) -> Result<i64> {
    if i < lo || i > hi {
        Err(Error::out_of_range(format!("{name} out of range")))
    } else {
        Ok(i)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coercion_checks_ranges() {
        assert!(DataType::Int2.coerce(Value::Int(40000)).is_err());
        assert_eq!(
            DataType::Int4.coerce(Value::Text("42".into())).unwrap(),
            Value::Int(42)
        );
        let e = DataType::Int4.coerce(Value::Text("abc".into())).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
        let e = DataType::Varchar(Some(3))
            .coerce(Value::Text("abcd".into()))
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::STRING_DATA_RIGHT_TRUNCATION);
    }

    #[test]
    fn varchar_stored_as_text_reads_as_varchar() {
        use crate::engine::ColumnDef;
        // A definition stored before varchar was a type of its own: varchar(n) was Text(n),
        // an unbounded varchar Text(None) (which stays text: nothing tells it apart).
        let old = |ty: &str| {
            let json = format!(r#"{{"name":"v","ty":{ty},"nullable":true}}"#);
            serde_json::from_str::<ColumnDef>(&json).unwrap().ty
        };
        assert_eq!(old(r#"{"Text":5}"#), DataType::Varchar(Some(5)));
        assert_eq!(old(r#"{"Text":null}"#), DataType::Text(None));
        let arr = old(r#"{"Array":{"Text":2}}"#);
        assert_eq!(
            (arr.pg_oid(), arr.sql_name()),
            (1015, "character varying(2)[]".to_string())
        );
        // What is stored now reads back as it was.
        for t in [
            DataType::Varchar(None),
            DataType::Varchar(Some(7)),
            DataType::Text(None),
        ] {
            let c = ColumnDef::new("v", t);
            let back: ColumnDef = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
            assert_eq!(back.ty, t);
        }
        assert_eq!(
            ColumnDef::new("v", DataType::Text(Some(3))).ty,
            DataType::Varchar(Some(3))
        );
        assert_eq!(
            (
                DataType::Varchar(None).sql_name(),
                DataType::Varchar(None).pg_oid()
            ),
            ("character varying".to_string(), 1043)
        );
    }
}
