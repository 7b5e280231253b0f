//! Arrays in PostgreSQL's text form (`{1,2,NULL}`, `{"a b",c}`), the form in which the SQL
//! layer holds an array value (array_agg's result, the catalog's array columns): read and
//! written as PostgreSQL's array_in and array_out do, for arrays of one dimension; and the
//! array types ([`DataType::Array`]): their element types, OIDs and typed input.

use super::data_type::DataType;
use super::value::Value;
use crate::error::{Error, Result};

/// PostgreSQL's `array_isspace`: the white space around (not inside) an unquoted element.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0B' | '\x0C')
}

/// Whether array_out quotes an element: empty, `NULL` in any case, or holding a quote, a
/// backslash, a brace, the delimiter or white space.
fn needs_quotes(s: &str) -> bool {
    s.is_empty()
        || s.eq_ignore_ascii_case("NULL")
        || s.chars()
            .any(|c| matches!(c, '"' | '\\' | '{' | '}' | ',') || is_space(c))
}

/// Appends one element (None: NULL) as array_out writes it.
pub fn push_element(out: &mut String, e: Option<&str>) {
    match e {
        None => out.push_str("NULL"),
        Some(s) if needs_quotes(s) => {
            out.push('"');
            for c in s.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        }
        Some(s) => out.push_str(s),
    }
}

/// The text form of the array of `items` (each element's own text form; None: NULL).
pub fn format<'a>(items: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, e) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_element(&mut out, e);
    }
    out.push('}');
    out
}

fn malformed(s: &str, detail: &str) -> Error {
    Error::invalid_text(format!("malformed array literal: \"{s}\" ({detail})"))
}

/// Reads an array's text form: its lower bound (1, unless the text gives its dimensions as in
/// `[0:1]={a,b}`) and its elements' text (None: NULL). Elements may be quoted (`"a b"`, with
/// `\"` and `\\` inside) or not (surrounding white space dropped; unquoted `NULL` is NULL).
/// Arrays of more than one dimension are 0A000.
pub fn parse(s: &str) -> Result<(i64, Vec<Option<String>>)> {
    let mut t = s.trim_start_matches(is_space);
    let mut dims: Option<(i64, i64)> = None;
    if let Some(rest) = t.strip_prefix('[') {
        let bad = || malformed(s, "bad array dimensions");
        let (d, rest) = rest.split_once(']').ok_or_else(bad)?;
        let (lo, hi) = d.split_once(':').ok_or_else(bad)?;
        let lo: i64 = lo.trim().parse().map_err(|_| bad())?;
        let hi: i64 = hi.trim().parse().map_err(|_| bad())?;
        if rest.trim_start_matches(is_space).starts_with('[') {
            return Err(Error::unsupported(
                "arrays of more than one dimension are not supported by Augur",
            ));
        }
        dims = Some((lo, hi));
        t = rest
            .trim_start_matches(is_space)
            .strip_prefix('=')
            .ok_or_else(|| malformed(s, "missing \"=\" after array dimensions"))?
            .trim_start_matches(is_space);
    }
    let body = t
        .strip_prefix('{')
        .ok_or_else(|| malformed(s, "array value must start with \"{\" or dimension information"))?;
    let mut items = Vec::new();
    let mut it = body.chars();
    let rest: &str;
    if let Some(after) = body.trim_start_matches(is_space).strip_prefix('}') {
        rest = after;
    } else {
        loop {
            let mut cur = String::new();
            let mut quoted = false;
            let mut started = false;
            // Unquoted white space after the element's text so far: kept only if more follows.
            let mut pending = String::new();
            let end = loop {
                let c = it.next().ok_or_else(|| malformed(s, "unexpected end of input"))?;
                match c {
                    '"' | '\\' => {
                        cur.push_str(&pending);
                        pending.clear();
                        started = true;
                        if c == '\\' {
                            cur.push(it.next().ok_or_else(|| malformed(s, "unexpected end of input"))?);
                            continue;
                        }
                        quoted = true;
                        loop {
                            match it.next().ok_or_else(|| malformed(s, "unexpected end of input"))? {
                                '"' => break,
                                '\\' => cur
                                    .push(it.next().ok_or_else(|| malformed(s, "unexpected end of input"))?),
                                c => cur.push(c),
                            }
                        }
                    }
                    '{' if !started => {
                        return Err(Error::unsupported(
                            "arrays of more than one dimension are not supported by Augur",
                        ))
                    }
                    '{' => return Err(malformed(s, "unexpected \"{\" character")),
                    ',' | '}' => break c,
                    c if is_space(c) => {
                        if started {
                            pending.push(c);
                        }
                    }
                    c => {
                        cur.push_str(&pending);
                        pending.clear();
                        cur.push(c);
                        started = true;
                    }
                }
            };
            if !started {
                return Err(malformed(s, "unexpected \",\" or \"}\" character"));
            }
            items.push(if !quoted && cur.eq_ignore_ascii_case("NULL") {
                None
            } else {
                Some(cur)
            });
            if end == '}' {
                break;
            }
        }
        rest = it.as_str();
    }
    if !rest.chars().all(is_space) {
        return Err(malformed(s, "junk after closing right brace"));
    }
    match dims {
        None => Ok((1, items)),
        Some((lo, hi)) if hi.checked_sub(lo).and_then(|n| n.checked_add(1)) == Some(items.len() as i64) => {
            Ok((lo, items))
        }
        Some(_) => Err(malformed(
            s,
            "specified array dimensions do not match array contents",
        )),
    }
}

/// The types an array's elements may have (`varchar(n)` elements are text, `numeric(p, s)`
/// elements numeric).
static ARRAY_ELEMENTS: [DataType; 18] = [
    DataType::Int2,
    DataType::Int4,
    DataType::Int8,
    DataType::Float8,
    DataType::Bool,
    DataType::Text(None),
    DataType::Bytea,
    DataType::Timestamp,
    DataType::Date,
    DataType::TimestampTz,
    DataType::Numeric(None),
    DataType::Uuid,
    DataType::Interval,
    DataType::Jsonb,
    DataType::Bpchar(None),
    DataType::Varchar(None),
    DataType::Time(None),
    DataType::Json,
];

/// An array type's element in a stored definition (a table's or view's columns): the element
/// type itself (with a `numeric(p, s)` element's typmod).
pub(super) mod array_element {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::DataType;

    pub fn serialize<S: Serializer>(e: &&'static DataType, s: S) -> Result<S::Ok, S::Error> {
        (**e).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'static DataType, D::Error> {
        match DataType::array_keeping_typmod(DataType::deserialize(d)?.stored()) {
            Some(DataType::Array(e)) => Ok(e),
            _ => Err(D::Error::custom("not an array element type")),
        }
    }
}

impl DataType {
    /// Every array type Augur has, one per element type.
    pub fn array_types() -> impl Iterator<Item = DataType> {
        ARRAY_ELEMENTS.iter().map(DataType::Array)
    }

    /// The array type whose elements are `elem` without its typmod (`varchar(n)` elements are
    /// `varchar`, `numeric(p, s)` elements numeric); None for an element type arrays do not
    /// have (arrays of arrays).
    pub fn array_of(elem: DataType) -> Option<DataType> {
        let elem = match elem {
            DataType::Text(_) => DataType::Text(None),
            DataType::Varchar(_) => DataType::Varchar(None),
            DataType::Numeric(_) => DataType::Numeric(None),
            DataType::Bpchar(_) => DataType::Bpchar(None),
            DataType::Time(_) => DataType::Time(None),
            e => e,
        };
        ARRAY_ELEMENTS.iter().find(|e| **e == elem).map(DataType::Array)
    }

    /// The array type whose elements are `elem`, keeping a `numeric(p, s)` element's typmod
    /// (which every element of a `numeric(p, s)[]` column or cast is rounded to, as in
    /// PostgreSQL) and a `varchar(n)` element's length (which every element of a
    /// `varchar(n)[]` column must fit, and a cast truncates each element to); otherwise as
    /// [`DataType::array_of`].
    pub fn array_keeping_typmod(elem: DataType) -> Option<DataType> {
        match elem {
            DataType::Numeric(Some(_))
            | DataType::Varchar(Some(_))
            | DataType::Bpchar(Some(_))
            | DataType::Time(Some(_)) => Some(DataType::Array(intern(elem))),
            e => DataType::array_of(e),
        }
    }
}

/// A `numeric(p, s)` or `varchar(n)` element type with a `'static` life, for [`DataType::Array`]: one per
/// typmod ever used, kept for the life of the process (there are at most a few hundred
/// thousand typmods, and a program uses a handful).
fn intern(elem: DataType) -> &'static DataType {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static TYPES: OnceLock<Mutex<HashSet<&'static DataType>>> = OnceLock::new();
    let mut types = TYPES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(t) = types.get(&elem) {
        return t;
    }
    let t: &'static DataType = Box::leak(Box::new(elem));
    types.insert(t);
    t
}

/// The OID of the array type of `elem` (`_int4` 1007, `_text` 1009, ...).
pub(super) fn array_oid(elem: &DataType) -> u32 {
    match elem {
        DataType::Bool => 1000,
        DataType::Bytea => 1001,
        DataType::Int2 => 1005,
        DataType::Int4 => 1007,
        DataType::Int8 => 1016,
        DataType::Float8 => 1022,
        DataType::Timestamp => 1115,
        DataType::Date => 1182,
        DataType::TimestampTz => 1185,
        DataType::Interval => 1187,
        DataType::Numeric(_) => 1231,
        // `varchar(n)[]`: `_varchar`, as PostgreSQL names a column or cast of that type.
        DataType::Varchar(_) => 1015,
        DataType::Bpchar(_) => 1014,
        DataType::Uuid => 2951,
        DataType::Jsonb => 3807,
        DataType::Time(_) => 1183,
        DataType::Json => 199,
        // Text, and nothing else: arrays hold only `ARRAY_ELEMENTS`.
        _ => 1009,
    }
}

/// Reads the text of an array of `elem` values into its canonical text form: each element
/// read as its type and printed back.
pub(super) fn parse_typed(s: &str, elem: DataType) -> Result<Value> {
    map(s, |x| Ok(Value::parse_text(x, elem)?.to_text())).map(Value::Text)
}

/// The array whose elements are `f` of the elements of the array `s` (both in text form; NULL
/// elements stay NULL), with the same lower bound.
pub fn map(s: &str, mut f: impl FnMut(&str) -> Result<Option<String>>) -> Result<String> {
    let (lower, items) = parse(s)?;
    let mut out = Vec::with_capacity(items.len());
    for x in &items {
        out.push(match x {
            None => None,
            Some(x) => f(x)?,
        });
    }
    let body = format(out.iter().map(Option::as_deref));
    Ok(if lower == 1 || out.is_empty() {
        body
    } else {
        format!("[{lower}:{}]={body}", lower + out.len() as i64 - 1)
    })
}

/// Bytes that order arrays of `elem` (in text form) as PostgreSQL's array_cmp orders them,
/// and are equal exactly when the arrays are: element by element as the element type compares
/// (`{9} < {10}` for integers, `{1.5} = {1.50}` for numeric), a NULL element after every
/// value, then the shorter array first, then the lower first subscript. Sorting, grouping
/// and DISTINCT compare an array by this key rather than by its text.
pub fn sort_key(text: &str, elem: DataType) -> Result<Vec<u8>> {
    let (lower, items) = parse(text)?;
    let mut out = Vec::with_capacity(2 + 10 * items.len());
    for x in &items {
        match x {
            // Each element's key encoding is self-delimiting (that of composite keys).
            Some(x) => {
                out.push(2);
                // character(n) elements compare without their trailing blanks.
                let v = match elem {
                    DataType::Bpchar(_) => Value::Text(x.trim_end_matches(' ').to_string()),
                    _ => Value::parse_text(x, elem)?,
                };
                out.extend(super::codec::encode_key_values(&[v]));
            }
            None => out.push(3),
        }
    }
    out.push(1);
    out.extend(super::codec::encode_i64(lower));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SqlState;

    #[test]
    fn array_types() {
        let a = DataType::array_of(DataType::Int4).unwrap();
        assert_eq!(
            (a.pg_oid(), a.short_name(), a.sql_name().as_str()),
            (1007, "_int4", "integer[]")
        );
        assert_eq!(
            DataType::array_of(DataType::Varchar(Some(3))).unwrap().pg_oid(),
            1015
        );
        let v = DataType::array_of(DataType::Varchar(None)).unwrap();
        assert_eq!(
            (v.short_name(), v.sql_name().as_str()),
            ("_varchar", "character varying[]")
        );
        assert_eq!(DataType::array_of(DataType::Text(None)).unwrap().pg_oid(), 1009);
        assert_eq!(DataType::array_of(a), None);
        // A view's columns keep an array type through the catalog's JSON.
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<DataType>(&json).unwrap(), a);
        // Canonical text: elements read as their type and printed back.
        let v = Value::parse_text("{ 1, NULL ,\"3\"}", a).unwrap();
        assert_eq!(v, Value::Text("{1,NULL,3}".into()));
        let e = Value::parse_text("{1,x}", a).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
        // A numeric(p, s) element keeps its typmod, one interned type per typmod.
        let n = DataType::array_keeping_typmod(DataType::Numeric(Some((5, 2)))).unwrap();
        assert_eq!(
            n,
            DataType::array_keeping_typmod(DataType::Numeric(Some((5, 2)))).unwrap()
        );
        assert_eq!((n.pg_oid(), n.sql_name().as_str()), (1231, "numeric(5,2)[]"));
        let json = serde_json::to_string(&n).unwrap();
        assert_eq!(serde_json::from_str::<DataType>(&json).unwrap(), n);
        let v = Value::parse_text("{1.234,NULL,-2}", n).unwrap();
        assert_eq!(v, Value::Text("{1.23,NULL,-2.00}".into()));
    }

    #[test]
    fn sort_keys_order_as_array_cmp() {
        let k = |t: &str, e: DataType| sort_key(t, e).unwrap();
        let int = DataType::Int4;
        // By element value, not text; NULL after values; shorter first; then lower bound.
        let ordered = [
            "{}",
            "{1}",
            "{1,2}",
            "{1,NULL}",
            "{9}",
            "[0:0]={10}",
            "{10}",
            "{NULL}",
        ];
        for w in ordered.windows(2) {
            assert!(k(w[0], int) < k(w[1], int), "{} < {}", w[0], w[1]);
        }
        let num = DataType::Numeric(None);
        assert_eq!(k("{1.5,2}", num), k("{1.50,2.000}", num));
        assert!(k("{2.5}", num) < k("{10.1}", num));
        let iv = DataType::Interval;
        assert_eq!(k("{\"1 day\"}", iv), k("{\"24 hours\"}", iv));
        let txt = DataType::Text(None);
        assert!(k("{10}", txt) < k("{9}", txt));
        assert!(k("{a}", txt) < k("{a,b}", txt) && k("{a,b}", txt) < k("{ab}", txt));
        // character(n) elements without their trailing blanks.
        let bp = DataType::Bpchar(None);
        assert_eq!(k("{\"a  \",b}", bp), k("{a,\"b \"}", bp));
        assert!(k("{\"a  \"}", bp) < k("{ab}", bp));
        assert!(k("{\"a  \"}", txt) > k("{a}", txt));
        let e = sort_key("{x}", int).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
    }

    fn items(text: &str) -> Vec<Option<String>> {
        parse(text).unwrap().1
    }

    fn s(x: &str) -> Option<String> {
        Some(x.to_string())
    }

    #[test]
    fn prints_as_array_out() {
        assert_eq!(format([Some("1"), None, Some("3")]), "{1,NULL,3}");
        assert_eq!(format(std::iter::empty()), "{}");
        assert_eq!(
            format([
                Some("a b"),
                Some(""),
                Some("null"),
                Some("x\"y\\z"),
                Some("{}"),
                Some("a,b")
            ]),
            r#"{"a b","","null","x\"y\\z","{}","a,b"}"#
        );
        assert_eq!(format([Some("\\x01")]), r#"{"\\x01"}"#);
    }

    #[test]
    fn reads_as_array_in() {
        assert_eq!(items("{}"), Vec::<Option<String>>::new());
        assert_eq!(items(" { } "), Vec::<Option<String>>::new());
        assert_eq!(items("{1,NULL,3}"), [s("1"), None, s("3")]);
        assert_eq!(items("{ a b , \"NULL\" ,null}"), [s("a b"), s("NULL"), None]);
        assert_eq!(items(r#"{"x\"y\\z",\,}"#), [s("x\"y\\z"), s(",")]);
        assert_eq!(items(r#"{"",a"b c"d}"#), [s(""), s("ab cd")]);
        assert_eq!(parse("[0:1]={7,8}").unwrap(), (0, vec![s("7"), s("8")]));
        for text in [
            "{a,b}",
            r#"{"a b","","null","x\"y\\z"}"#,
            "{NULL}",
            "{\"\\\\x01\"}",
        ] {
            let (_, v) = parse(text).unwrap();
            assert_eq!(format(v.iter().map(|x| x.as_deref())), text, "{text}");
        }
    }

    #[test]
    fn refuses_what_array_in_refuses() {
        for s in [
            "",
            "1,2",
            "{1,2",
            "{1,,2}",
            "{,}",
            "{1}x",
            "[1:3]={1,2}",
            "{a{b}",
            "[1:2]{1,2}",
        ] {
            let e = parse(s).unwrap_err();
            assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION, "{s:?}");
        }
        let e = parse("{{1,2},{3,4}}").unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::FEATURE_NOT_SUPPORTED);
    }
}
