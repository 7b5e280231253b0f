//! Set-returning functions, evaluated as PostgreSQL 10+'s ProjectSet does: each input row is
//! repeated once per row of its longest function result, the functions advancing in lockstep
//! (a shorter result gives NULLs once it runs out). A function in FROM runs as the same step,
//! over one empty row, or over the rows to its left when its arguments read them (LATERAL).

use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{array_items, Ctx, Expr};
use crate::types::jsonb::Json;
use crate::types::{session_zone, Interval, Row, Value};

/// The set-returning functions a select list may call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrfKind {
    /// `unnest(array)`: the elements.
    Unnest,
    /// `generate_subscripts(array, dim)`: the subscripts of dimension `dim`.
    GenerateSubscripts,
    /// `information_schema._pg_expandarray(array)`: records `(x, n)`, the element and its
    /// position counted from 1 (two columns here).
    ExpandArray,
    /// `generate_series(start, stop [, step])` of integers.
    GenerateSeries,
    /// `generate_series(start, stop, step interval)` of timestamps or timestamptz (the
    /// arguments already of the result's type; a timestamptz adds months and days in the
    /// session time zone).
    GenerateSeriesTime,
    /// `jsonb_each(object)` / `jsonb_each_text(object)`: a row `(key, value)` per field, the
    /// value as jsonb / as text (JSON null as NULL).
    JsonbEach,
    JsonbEachText,
    /// `jsonb_array_elements(array)` / `jsonb_array_elements_text(array)`: the elements.
    JsonbArrayElements,
    JsonbArrayElementsText,
    /// `jsonb_object_keys(object)`: the keys.
    JsonbObjectKeys,
    /// json's forms of the five above: values are the original text of each part (json), and
    /// an object's duplicate keys each give a row.
    JsonEach,
    JsonEachText,
    JsonArrayElements,
    JsonArrayElementsText,
    JsonObjectKeys,
}

/// One call of a set-returning function.
#[derive(Clone, Debug, PartialEq)]
pub struct SrfSpec {
    pub kind: SrfKind,
    pub args: Vec<Expr>,
    /// `WITH ORDINALITY`: each row also gets its position, counted from 1 (a bigint column).
    pub ordinality: bool,
    /// An input row this call gives no rows for is kept once, the call's columns NULL
    /// (`LEFT JOIN LATERAL f(...) ON true`).
    pub outer: bool,
}

/// More rows than this from one call is refused (a runaway generate_series).
const MAX_ROWS: i64 = 10_000_000;

impl SrfSpec {
    pub fn new(kind: SrfKind, args: Vec<Expr>) -> SrfSpec {
        SrfSpec {
            kind,
            args,
            ordinality: false,
            outer: false,
        }
    }

    /// Columns this call adds to each row.
    pub fn width(&self) -> usize {
        let w = match self.kind {
            SrfKind::ExpandArray
            | SrfKind::JsonbEach
            | SrfKind::JsonbEachText
            | SrfKind::JsonEach
            | SrfKind::JsonEachText => 2,
            _ => 1,
        };
        w + usize::from(self.ordinality)
    }

    pub fn name(&self) -> &'static str {
        match self.kind {
            SrfKind::Unnest => "unnest",
            SrfKind::GenerateSubscripts => "generate_subscripts",
            SrfKind::ExpandArray => "_pg_expandarray",
            SrfKind::GenerateSeries | SrfKind::GenerateSeriesTime => "generate_series",
            SrfKind::JsonbEach => "jsonb_each",
            SrfKind::JsonbEachText => "jsonb_each_text",
            SrfKind::JsonbArrayElements => "jsonb_array_elements",
            SrfKind::JsonbArrayElementsText => "jsonb_array_elements_text",
            SrfKind::JsonbObjectKeys => "jsonb_object_keys",
            SrfKind::JsonEach => "json_each",
            SrfKind::JsonEachText => "json_each_text",
            SrfKind::JsonArrayElements => "json_array_elements",
            SrfKind::JsonArrayElementsText => "json_array_elements_text",
            SrfKind::JsonObjectKeys => "json_object_keys",
        }
    }

    /// For EXPLAIN, over the input's column names.
    pub fn show(&self, names: &[String]) -> String {
        let a: Vec<String> = self
            .args
            .iter()
            .map(|e| super::explain::show_n(e, names))
            .collect();
        let ord = if self.ordinality { " WITH ORDINALITY" } else { "" };
        format!("{}({}){ord}", self.name(), a.join(", "))
    }

    /// The rows (each `width()` values) this call returns for input row `row`.
    fn rows(&self, row: &[Value], cx: &Ctx) -> Result<Vec<Vec<Value>>> {
        let mut rows = self.rows_of(row, cx)?;
        if self.ordinality {
            for (r, n) in rows.iter_mut().zip(1..) {
                r.push(Value::Int(n));
            }
        }
        Ok(rows)
    }

    fn rows_of(&self, row: &[Value], cx: &Ctx) -> Result<Vec<Vec<Value>>> {
        let vals = self
            .args
            .iter()
            .map(|e| e.eval(row, cx))
            .collect::<Result<Vec<_>>>()?;
        if vals.iter().any(Value::is_null) {
            return Ok(Vec::new());
        }
        let text = |v: &Value| match v {
            Value::Text(s) => s.clone(),
            v => v.to_string(),
        };
        let int = |v: &Value| match v {
            Value::Int(i) => Ok(*i),
            v => Err(Error::internal(format!("{} of {}", self.name(), v.type_name()))),
        };
        Ok(match self.kind {
            SrfKind::Unnest => {
                let (_, items) = array_items(&text(&vals[0]))?;
                items
                    .into_iter()
                    .map(|x| vec![x.map_or(Value::Null, Value::Text)])
                    .collect()
            }
            SrfKind::ExpandArray => {
                let (_, items) = array_items(&text(&vals[0]))?;
                items
                    .into_iter()
                    .zip(1..)
                    .map(|(x, n)| vec![x.map_or(Value::Null, Value::Text), Value::Int(n)])
                    .collect()
            }
            SrfKind::GenerateSubscripts => {
                let (first, items) = array_items(&text(&vals[0]))?;
                let dim = int(&vals[1])?;
                let reverse = matches!(vals.get(2), Some(Value::Bool(true)));
                // Augur's arrays have one dimension; an empty array has none.
                if dim != 1 || items.is_empty() {
                    return Ok(Vec::new());
                }
                let last = first + items.len() as i64 - 1;
                let mut s: Vec<Vec<Value>> = (first..=last).map(|i| vec![Value::Int(i)]).collect();
                if reverse {
                    s.reverse();
                }
                s
            }
            SrfKind::GenerateSeries => {
                let (start, stop) = (int(&vals[0])?, int(&vals[1])?);
                let step = match vals.get(2) {
                    Some(v) => int(v)?,
                    None => 1,
                };
                if step == 0 {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "step size cannot equal zero",
                    ));
                }
                let n = (i128::from(stop) - i128::from(start)) / i128::from(step) + 1;
                if n > i128::from(MAX_ROWS) {
                    return Err(Error::new(
                        SqlState::FEATURE_NOT_SUPPORTED,
                        format!("generate_series of more than {MAX_ROWS} rows is not supported"),
                    ));
                }
                let mut out = Vec::new();
                let mut i = i128::from(start);
                for _ in 0..n.max(0) {
                    out.push(vec![Value::Int(i as i64)]);
                    i += i128::from(step);
                }
                out
            }
            SrfKind::GenerateSeriesTime => time_series(&vals)?,
            SrfKind::JsonbEach
            | SrfKind::JsonbEachText
            | SrfKind::JsonbArrayElements
            | SrfKind::JsonbArrayElementsText
            | SrfKind::JsonbObjectKeys => {
                let Value::Jsonb(doc) = &vals[0] else {
                    return Err(Error::internal(format!(
                        "{} of {}",
                        self.name(),
                        vals[0].type_name()
                    )));
                };
                self.jsonb_rows(doc)?
            }
            SrfKind::JsonEach
            | SrfKind::JsonEachText
            | SrfKind::JsonArrayElements
            | SrfKind::JsonArrayElementsText
            | SrfKind::JsonObjectKeys => {
                let Value::Json(doc) = &vals[0] else {
                    return Err(Error::internal(format!(
                        "{} of {}",
                        self.name(),
                        vals[0].type_name()
                    )));
                };
                self.json_rows(doc)?
            }
        })
    }

    /// The rows of a json function, read from the document's text; 22023 for a document of the
    /// wrong shape, as PostgreSQL.
    fn json_rows(&self, doc: &str) -> Result<Vec<Vec<Value>>> {
        use crate::types::json;
        let bad = |what: &str| {
            Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!("cannot call {} on {what}", self.name()),
            )
        };
        let shape = match json::typeof_(doc) {
            "object" => "a non-array",
            "array" => "an array",
            _ => "a scalar",
        };
        let raw = |s: &str| Value::Json(s.to_string());
        let text = |s: &str| json::as_text(s).map_or(Value::Null, Value::Text);
        Ok(match self.kind {
            SrfKind::JsonEach | SrfKind::JsonEachText | SrfKind::JsonObjectKeys => {
                let pairs = json::fields(doc).ok_or_else(|| {
                    bad(if self.kind == SrfKind::JsonObjectKeys {
                        shape
                    } else {
                        "a non-object"
                    })
                })?;
                pairs
                    .into_iter()
                    .map(|(k, v)| match self.kind {
                        SrfKind::JsonEach => vec![Value::Text(k), raw(v)],
                        SrfKind::JsonEachText => vec![Value::Text(k), text(v)],
                        _ => vec![Value::Text(k)],
                    })
                    .collect()
            }
            _ => json::elements(doc)
                .ok_or_else(|| bad(shape))?
                .into_iter()
                .map(|v| {
                    vec![if self.kind == SrfKind::JsonArrayElements {
                        raw(v)
                    } else {
                        text(v)
                    }]
                })
                .collect(),
        })
    }

    /// The rows of a jsonb function, with PostgreSQL's errors (22023) for a document of the
    /// wrong shape.
    fn jsonb_rows(&self, doc: &Json) -> Result<Vec<Vec<Value>>> {
        let bad = |msg: String| Error::new(SqlState::INVALID_PARAMETER_VALUE, msg);
        let jsonb = |j: &Json| Value::Jsonb(Box::new(j.clone()));
        let text = |j: &Json| j.as_text().map_or(Value::Null, Value::Text);
        Ok(match (self.kind, doc) {
            (SrfKind::JsonbEach, Json::Object(pairs)) => pairs
                .iter()
                .map(|(k, v)| vec![Value::Text(k.clone()), jsonb(v)])
                .collect(),
            (SrfKind::JsonbEachText, Json::Object(pairs)) => pairs
                .iter()
                .map(|(k, v)| vec![Value::Text(k.clone()), text(v)])
                .collect(),
            (SrfKind::JsonbEach | SrfKind::JsonbEachText, _) => {
                return Err(bad(format!("cannot call {} on a non-object", self.name())))
            }
            (SrfKind::JsonbArrayElements, Json::Array(items)) => {
                items.iter().map(|v| vec![jsonb(v)]).collect()
            }
            (SrfKind::JsonbArrayElementsText, Json::Array(items)) => {
                items.iter().map(|v| vec![text(v)]).collect()
            }
            (_, Json::Object(_)) if self.kind != SrfKind::JsonbObjectKeys => {
                return Err(bad("cannot extract elements from an object".into()))
            }
            (SrfKind::JsonbObjectKeys, Json::Object(pairs)) => {
                pairs.iter().map(|(k, _)| vec![Value::Text(k.clone())]).collect()
            }
            (SrfKind::JsonbObjectKeys, Json::Array(_)) => {
                return Err(bad("cannot call jsonb_object_keys on an array".into()))
            }
            (SrfKind::JsonbObjectKeys, _) => {
                return Err(bad("cannot call jsonb_object_keys on a scalar".into()))
            }
            _ => return Err(bad("cannot extract elements from a scalar".into())),
        })
    }
}

/// `generate_series(start, stop, step)` of timestamps or timestamptz, as PostgreSQL's
/// generate_series_timestamp[tz]: each value from `start` while it has not passed `stop` in
/// the step's direction, the next one computed as it is returned (so a step past the end of
/// the timestamp range fails, 22008, as PostgreSQL's does).
fn time_series(vals: &[Value]) -> Result<Vec<Vec<Value>>> {
    let (tz, start, stop, step) = match vals {
        [Value::Timestamp(a), Value::Timestamp(b), Value::Interval(s)] => (false, *a, *b, s),
        [Value::TimestampTz(a), Value::TimestampTz(b), Value::Interval(s)] => (true, *a, *b, s),
        _ => return Err(Error::internal("generate_series of other than timestamps")),
    };
    let sign = step.cmp_span(&Interval::new(0, 0, 0));
    if sign == std::cmp::Ordering::Equal {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            "step size cannot equal zero",
        ));
    }
    let forward = sign == std::cmp::Ordering::Greater;
    let mut out = Vec::new();
    let mut t = start;
    while if forward { t <= stop } else { t >= stop } {
        if out.len() as i64 >= MAX_ROWS {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("generate_series of more than {MAX_ROWS} rows is not supported"),
            ));
        }
        out.push(vec![if tz {
            Value::TimestampTz(t)
        } else {
            Value::Timestamp(t)
        }]);
        t = if tz {
            session_zone::add_interval(t, step)?
        } else {
            step.add_to(t)?
        };
    }
    Ok(out)
}

/// The ProjectSet step: each input row followed by the calls' columns, one output row per row
/// of the longest call result; an input row whose calls all return nothing is dropped, unless
/// a call is `outer` (then it is kept once, with NULLs).
pub fn project_set(rows: Vec<Row>, srfs: &[SrfSpec], cx: &Ctx) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for row in rows {
        cx.check()?;
        let sets = srfs
            .iter()
            .map(|s| s.rows(&row, cx))
            .collect::<Result<Vec<_>>>()?;
        let mut n = sets.iter().map(Vec::len).max().unwrap_or(0);
        if n == 0 && srfs.iter().any(|s| s.outer) {
            n = 1;
        }
        for k in 0..n {
            let mut r = row.clone();
            for (s, set) in srfs.iter().zip(&sets) {
                match set.get(k) {
                    Some(vals) => r.extend(vals.iter().cloned()),
                    None => r.extend(std::iter::repeat_n(Value::Null, s.width())),
                }
            }
            out.push(r);
        }
    }
    Ok(out)
}
