//! Scalar functions at run time: text, numeric, `coalesce` / `greatest` / `least`, `nullif`,
//! `now()`, `random()`, subscripts of text-form arrays.

use std::cmp::Ordering;

use super::cast::text_arg;
use super::ops::{arith, as_f64, int_range};
use super::{ArOp, Ctx, Expr, Func, Ty};
use crate::error::{Error, Result, SqlState};
use crate::seam::EngineTxn;
use crate::types::{json, numeric, DataType, Json, Value};

fn int_arg(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) => Some(f.round_ties_even() as i64),
        _ => None,
    }
}

/// A sequence named in text, as PostgreSQL reads a `regclass`: an optional `public.`, an
/// unquoted name folded to lower case, or a double-quoted one kept as written.
pub fn sequence_name(s: &str) -> String {
    let s = s.trim();
    let s = s.strip_prefix("public.").unwrap_or(s);
    match s.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(q) => q.replace("\"\"", "\""),
        None => s.to_lowercase(),
    }
}

pub(super) fn eval_func(f: Func, args: &[Expr], ty: Ty, row: &[Value], cx: &Ctx) -> Result<Value> {
    // Lazily evaluated functions first.
    match f {
        Func::Coalesce => {
            for a in args {
                let v = a.eval(row, cx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            return Ok(Value::Null);
        }
        // The statement's start as the bound type: now() is timestamptz, localtimestamp a
        // timestamp, current_date a date (those two in the session zone).
        Func::Now => {
            let local = || crate::types::session_zone::to_local(cx.now);
            return Ok(match ty {
                Ty::TimestampTz => Value::TimestampTz(cx.now),
                Ty::Date => Value::Date(local().div_euclid(crate::types::MICROS_PER_DAY) as i32),
                Ty::Time => Value::Time(local().rem_euclid(crate::types::MICROS_PER_DAY)),
                _ => Value::Timestamp(local()),
            });
        }
        // The time of the call itself, which moves within a statement.
        Func::StatementTimestamp => return Ok(Value::TimestampTz(cx.stmt_now)),
        Func::ClockTimestamp => return Ok(Value::TimestampTz(crate::types::now_micros())),
        Func::Random => return Ok(Value::Float(rand::random::<f64>())),
        Func::GenRandomUuid => {
            return Ok(Value::Uuid(
                uuid::Builder::from_random_bytes(rand::random::<[u8; 16]>()).into_uuid(),
            ))
        }
        Func::NextVal | Func::CurrVal | Func::SetVal => {
            let vals: Vec<Value> = args.iter().map(|a| a.eval(row, cx)).collect::<Result<_>>()?;
            let Some(Value::Text(name)) = vals.first() else {
                return Ok(Value::Null);
            };
            let name = sequence_name(name);
            return Ok(Value::Int(match (f, &vals[1..]) {
                (Func::NextVal, _) => cx.tx.nextval(&name)?,
                (Func::CurrVal, _) => cx.tx.currval(&name)?,
                (_, [Value::Null, ..]) | (_, [_, Value::Null]) => return Ok(Value::Null),
                (_, [Value::Int(v)]) => cx.tx.setval(&name, *v, true)?,
                (_, [Value::Int(v), Value::Bool(called)]) => cx.tx.setval(&name, *v, *called)?,
                _ => return Err(crate::error::Error::internal("setval arguments")),
            }));
        }
        _ => {}
    }
    let vals: Vec<Value> = args.iter().map(|a| a.eval(row, cx)).collect::<Result<_>>()?;
    let null = Ok(Value::Null);
    match f {
        Func::Str(s) => super::string_fn::eval(s, &vals),
        Func::Concat => {
            let mut s = String::new();
            for v in &vals {
                if let Some(t) = text_arg(v) {
                    s.push_str(&t);
                }
            }
            Ok(Value::Text(s))
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for v in vals {
                if v.is_null() {
                    continue;
                }
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = v.total_cmp(&b);
                        if (f == Func::Greatest && o == Ordering::Greater)
                            || (f == Func::Least && o == Ordering::Less)
                        {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            Ok(best.unwrap_or(Value::Null))
        }
        Func::Nullif => {
            if vals[0].sql_cmp(&vals[1]) == Some(Ordering::Equal) {
                null
            } else {
                Ok(vals[0].clone())
            }
        }
        // Elements joined by the separator; NULL elements skipped, or written as the third
        // argument when it is given and not NULL.
        Func::ArrayToString => {
            let (Some(a), Some(sep)) = (text_arg(&vals[0]), text_arg(&vals[1])) else {
                return null;
            };
            let null_text = vals.get(2).and_then(text_arg);
            let (_, items) = array_items(&a)?;
            let parts: Vec<String> = items
                .into_iter()
                .filter_map(|x| x.or_else(|| null_text.clone()))
                .collect();
            Ok(Value::Text(parts.join(&sep)))
        }
        Func::ArrayCat => {
            if vals.iter().all(Value::is_null) {
                return null;
            }
            let mut items = Vec::new();
            for a in vals.iter().filter_map(text_arg) {
                items.extend(array_items(&a)?.1);
            }
            Ok(Value::Text(crate::types::array::format(
                items.iter().map(Option::as_deref),
            )))
        }
        // NULL arguments are JSON nulls in a built array or object (a NULL key is 22004).
        Func::JsonBuildArray => Ok(Value::Jsonb(Box::new(Json::Array(
            vals.iter().map(json_of).collect(),
        )))),
        Func::JsonBuildObject => {
            let mut pairs = Vec::with_capacity(vals.len() / 2);
            for (i, kv) in vals.chunks(2).enumerate() {
                let Some(k) = text_arg(&kv[0]) else {
                    return Err(Error::new(
                        SqlState("22004"),
                        format!("argument {}: key must not be null", 2 * i + 1),
                    ));
                };
                pairs.push((k, json_of(&kv[1])));
            }
            Ok(Value::Jsonb(Box::new(Json::object(pairs))))
        }
        // NULL elements are kept (array_out writes them as NULL).
        Func::ArrayConstruct => {
            let texts: Vec<Option<String>> = vals.iter().map(Value::to_text).collect();
            Ok(Value::Text(crate::types::array::format(
                texts.iter().map(Option::as_deref),
            )))
        }
        // NULL finds the NULL elements (IS NOT DISTINCT FROM); other values the elements
        // equal to them as their type compares.
        Func::ArrayPosition | Func::ArrayPositions => {
            let Ty::Array(elem) = ty else {
                return Err(Error::internal(format!("{f:?} bound as {}", ty.name())));
            };
            if vals[0].is_null() {
                return null;
            }
            let (lower, items) = array_values(&vals[0], *elem)?;
            let want = &vals[1];
            let mut found = items
                .iter()
                .enumerate()
                .filter(|(_, x)| match (x.is_null(), want.is_null()) {
                    (false, false) => x.sql_cmp(want) == Some(Ordering::Equal),
                    (a, b) => a && b,
                });
            let at = |i: usize| (lower + i as i64).to_string();
            Ok(if f == Func::ArrayPosition {
                found
                    .next()
                    .map_or(Value::Null, |(i, _)| Value::Int(lower + i as i64))
            } else {
                let subs: Vec<String> = found.map(|(i, _)| at(i)).collect();
                Value::Text(crate::types::array::format(subs.iter().map(|s| Some(s.as_str()))))
            })
        }
        // Not strict: a NULL field is written as nothing.
        Func::RecordOf => {
            if vals.iter().all(Value::is_null) {
                return null;
            }
            let mut out = String::from("(");
            for (i, v) in vals.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(t) = v.to_text() {
                    record_field(&t, &mut out);
                }
            }
            out.push(')');
            Ok(Value::Text(out))
        }
        // Element by element: each read as the source element type and cast to the target's
        // (22P02 for an element that does not read as the new type, as in PostgreSQL).
        Func::ArrayCast => {
            let (Value::Text(a), Value::Text(from), Ty::Array(to)) = (&vals[0], &vals[1], ty) else {
                return null;
            };
            let len = int_arg(&vals[2]).map(|l| l as u32);
            let from = Ty::from_dt(DataType::from_sql_name(from, None)?);
            crate::types::array::map(a, |x| {
                let v = super::cast(Value::Text(x.to_string()), from, None)?;
                // character(n) elements lose their trailing blanks as any other type.
                let v = match v {
                    Value::Text(s) if from == Ty::Bpchar && *to != Ty::Bpchar => {
                        Value::Text(s.trim_end_matches(' ').to_string())
                    }
                    v => v,
                };
                Ok(super::cast(v, *to, len)?.to_text())
            })
            .map(Value::Text)
        }
        Func::ToJson => {
            let elem = match vals.get(1) {
                Some(Value::Text(t)) => Some(DataType::from_sql_name(t, None)?),
                _ => None,
            };
            if vals[0].is_null() {
                return null;
            }
            Ok(Value::Json(super::json_out::json_text(&vals[0], elem)?))
        }
        // Not strict: a NULL key is 22023, a NULL value JSON null.
        Func::JsonObjectField => {
            let key = match &vals[0] {
                Value::Null => {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "field name must not be null",
                    ))
                }
                _ if vals.get(2) == Some(&Value::Bool(true)) => {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "key value must be scalar, not array, composite, or json",
                    ))
                }
                // A string is quoted already; a number or boolean is quoted as a key.
                Value::Json(k) if k.starts_with('"') => k.clone(),
                k => format!("\"{}\"", text_arg(k).unwrap_or_default()),
            };
            let value = text_arg(&vals[1]).unwrap_or_else(|| "null".into());
            Ok(Value::Text(format!("{key} : {value}")))
        }
        _ if vals.iter().any(Value::is_null) => null,
        Func::Datetime(d) => super::datetime_fn::eval(d, &vals),
        Func::ArrayKey => Ok(Value::Bytes(crate::types::array::sort_key(
            &text_arg(&vals[0]).unwrap_or_default(),
            ty.array_elem().to_dt(),
        )?)),
        // Element by element as each element's type compares (numeric `1.5 = 1.50`, interval
        // `'1 day' = '24 hours'`), not as the texts would; then the shorter array first, then
        // the lower first subscript. A NULL element is greater than any value.
        Func::ArrayCmp => {
            let Ty::Array(elem) = ty else {
                return Err(Error::internal(format!(
                    "array comparison bound as {}",
                    ty.name()
                )));
            };
            let (a, b) = (array_values(&vals[0], *elem)?, array_values(&vals[1], *elem)?);
            for (x, y) in a.1.iter().zip(&b.1) {
                let o = match (x.is_null(), y.is_null()) {
                    (true, true) => Ordering::Equal,
                    (true, false) => Ordering::Greater,
                    (false, true) => Ordering::Less,
                    _ => x.sql_cmp(y).unwrap_or(Ordering::Equal),
                };
                if o != Ordering::Equal {
                    return Ok(Value::Int(o as i64));
                }
            }
            let o = a.1.len().cmp(&b.1.len()).then(a.0.cmp(&b.0));
            Ok(Value::Int(o as i64))
        }
        Func::ArrayLower | Func::ArrayUpper | Func::ArrayLength | Func::Cardinality => {
            let (lower, items) = array_items(&text_arg(&vals[0]).unwrap_or_default())?;
            let n = items.len() as i64;
            if f == Func::Cardinality {
                return Ok(Value::Int(n));
            }
            // Augur's arrays have one dimension; an empty array has none.
            if vals.get(1).and_then(int_arg) != Some(1) || n == 0 {
                return null;
            }
            Ok(Value::Int(match f {
                Func::ArrayLower => lower,
                Func::ArrayUpper => lower + n - 1,
                _ => n,
            }))
        }
        Func::Abs => match &vals[0] {
            Value::Int(i) => int_range(
                ty,
                i.checked_abs()
                    .ok_or_else(|| Error::out_of_range(format!("{} out of range", ty.name())))?,
            ),
            Value::Float(x) => Ok(Value::Float(x.abs())),
            Value::Numeric(d) => Ok(Value::Numeric(d.abs())),
            _ => null,
        },
        Func::QuoteIdent => Ok(Value::Text(crate::sql::catalog::deparse::quote_ident(
            &text_arg(&vals[0]).unwrap_or_default(),
        ))),
        // ASCII letters only, as PostgreSQL's in the C locale (lc_ctype C, the database's).
        Func::Lower => Ok(Value::Text(
            text_arg(&vals[0]).unwrap_or_default().to_ascii_lowercase(),
        )),
        Func::Upper => Ok(Value::Text(
            text_arg(&vals[0]).unwrap_or_default().to_ascii_uppercase(),
        )),
        Func::Length => Ok(Value::Int(match &vals[0] {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(v).unwrap_or_default().chars().count() as i64,
        })),
        Func::OctetLength => Ok(Value::Int(match &vals[0] {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(v).unwrap_or_default().len() as i64,
        })),
        Func::Substr => {
            let s: Vec<char> = text_arg(&vals[0]).unwrap_or_default().chars().collect();
            let start = int_arg(&vals[1]).unwrap_or(1);
            let (from, to) = match vals.get(2) {
                Some(l) => {
                    let l = int_arg(l).unwrap_or(0);
                    if l < 0 {
                        return Err(Error::new(
                            SqlState("22011"),
                            "negative substring length not allowed",
                        ));
                    }
                    (start, start.saturating_add(l))
                }
                None => (start, i64::MAX),
            };
            let from = from.max(1);
            let to = to.min(s.len() as i64 + 1);
            if to <= from {
                return Ok(Value::Text(String::new()));
            }
            Ok(Value::Text(
                s[(from - 1) as usize..(to - 1) as usize].iter().collect(),
            ))
        }
        Func::Round => {
            if let Value::Numeric(d) = &vals[0] {
                let n = vals.get(1).and_then(int_arg).unwrap_or(0);
                return Ok(Value::Numeric(numeric::round(*d, n)?));
            }
            let x = as_f64(&vals[0]);
            match vals.get(1) {
                None => Ok(Value::Float(x.round_ties_even())),
                Some(d) => {
                    let d = int_arg(d).unwrap_or(0).clamp(-300, 300) as i32;
                    let m = 10f64.powi(d);
                    Ok(Value::Float((x * m).round() / m))
                }
            }
        }
        Func::Floor => Ok(match &vals[0] {
            Value::Int(i) => Value::Int(*i),
            Value::Numeric(d) => Value::Numeric(numeric::floor(*d)),
            v => Value::Float(as_f64(v).floor()),
        }),
        Func::Ceil => Ok(match &vals[0] {
            Value::Int(i) => Value::Int(*i),
            Value::Numeric(d) => Value::Numeric(numeric::ceil(*d)),
            v => Value::Float(as_f64(v).ceil()),
        }),
        // numeric arguments: numeric at PostgreSQL's scales; otherwise float8.
        Func::Sqrt | Func::Exp | Func::Ln | Func::Log | Func::Power
            if vals.iter().all(|v| matches!(v, Value::Numeric(_))) =>
        {
            let ds: Vec<rust_decimal::Decimal> = vals
                .iter()
                .filter_map(|v| match v {
                    Value::Numeric(d) => Some(*d),
                    _ => None,
                })
                .collect();
            let d = |i: usize| ds[i];
            let r = match (f, vals.len()) {
                (Func::Sqrt, _) => numeric::sqrt(d(0)),
                (Func::Exp, _) => numeric::exp(d(0)),
                (Func::Ln, _) => numeric::ln(d(0)),
                (Func::Log, 1) => numeric::log(rust_decimal::Decimal::TEN, d(0)),
                (Func::Log, _) => numeric::log(d(0), d(1)),
                _ => numeric::power(d(0), d(1)),
            };
            Ok(Value::Numeric(r?))
        }
        Func::Sqrt => {
            let x = as_f64(&vals[0]);
            if x < 0.0 {
                return Err(Error::new(
                    SqlState("2201F"),
                    "cannot take square root of a negative number",
                ));
            }
            Ok(Value::Float(x.sqrt()))
        }
        Func::Exp => {
            let x = as_f64(&vals[0]);
            let r = x.exp();
            if r.is_infinite() && x.is_finite() {
                return Err(Error::out_of_range("value out of range: overflow"));
            }
            if r == 0.0 && x.is_finite() {
                return Err(Error::out_of_range("value out of range: underflow"));
            }
            Ok(Value::Float(r))
        }
        Func::Ln | Func::Log => {
            let x = as_f64(&vals[0]);
            if x == 0.0 {
                return Err(Error::new(SqlState("2201E"), "cannot take logarithm of zero"));
            }
            if x < 0.0 {
                return Err(Error::new(
                    SqlState("2201E"),
                    "cannot take logarithm of a negative number",
                ));
            }
            Ok(Value::Float(if f == Func::Ln { x.ln() } else { x.log10() }))
        }
        Func::Power => {
            let (a, b) = (as_f64(&vals[0]), as_f64(&vals[1]));
            if a == 0.0 && b < 0.0 {
                return Err(Error::new(
                    SqlState("2201F"),
                    "zero raised to a negative power is undefined",
                ));
            }
            if a < 0.0 && b.floor() != b {
                return Err(Error::new(
                    SqlState("2201F"),
                    "a negative number raised to a non-integer power yields a complex result",
                ));
            }
            let r = a.powf(b);
            if r.is_infinite() && a.is_finite() && b.is_finite() {
                return Err(Error::out_of_range("value out of range: overflow"));
            }
            if r == 0.0 && a != 0.0 && a.is_finite() && b.is_finite() {
                return Err(Error::out_of_range("value out of range: underflow"));
            }
            Ok(Value::Float(r))
        }
        Func::Mod => arith(ArOp::Mod, &vals[0], &vals[1], ty),
        Func::Trim | Func::Ltrim | Func::Rtrim => {
            let s = text_arg(&vals[0]).unwrap_or_default();
            let chars: Vec<char> = match vals.get(1) {
                Some(c) => text_arg(c).unwrap_or_default().chars().collect(),
                None => vec![' '],
            };
            let pat = |c: char| chars.contains(&c);
            Ok(Value::Text(
                match f {
                    Func::Trim => s.trim_matches(pat),
                    Func::Ltrim => s.trim_start_matches(pat),
                    _ => s.trim_end_matches(pat),
                }
                .to_string(),
            ))
        }
        Func::Replace => {
            let s = text_arg(&vals[0]).unwrap_or_default();
            let from = text_arg(&vals[1]).unwrap_or_default();
            let to = text_arg(&vals[2]).unwrap_or_default();
            Ok(Value::Text(if from.is_empty() {
                s
            } else {
                s.replace(&from, &to)
            }))
        }
        Func::Position => {
            let sub = text_arg(&vals[0]).unwrap_or_default();
            let s = text_arg(&vals[1]).unwrap_or_default();
            Ok(Value::Int(match s.find(&sub) {
                Some(b) => s[..b].chars().count() as i64 + 1,
                None => 0,
            }))
        }
        Func::Left | Func::Right => {
            let s: Vec<char> = text_arg(&vals[0]).unwrap_or_default().chars().collect();
            let n = int_arg(&vals[1]).unwrap_or(0);
            let len = s.len() as i64;
            let k = if n >= 0 { n.min(len) } else { (len + n).max(0) } as usize;
            Ok(Value::Text(if f == Func::Left {
                s[..k].iter().collect()
            } else {
                s[s.len() - k..].iter().collect()
            }))
        }
        Func::JsonGet | Func::JsonGetText if matches!(vals[0], Value::Json(_)) => {
            let Value::Json(doc) = &vals[0] else { return null };
            let found = match &vals[1] {
                Value::Text(k) => json::get_key(doc, k),
                Value::Int(i) => json::get_index(doc, *i),
                _ => None,
            };
            Ok(match (f, found) {
                (_, None) => Value::Null,
                (Func::JsonGet, Some(j)) => Value::Json(j.to_string()),
                (_, Some(j)) => json::as_text(j).map_or(Value::Null, Value::Text),
            })
        }
        Func::JsonPath | Func::JsonPathText if matches!(vals[0], Value::Json(_)) => {
            let (Value::Json(doc), Some(p)) = (&vals[0], text_arg(&vals[1])) else {
                return null;
            };
            let (_, path) = array_items(&p)?;
            Ok(match (f, json::get_path(doc, &path)) {
                (_, None) => Value::Null,
                (Func::JsonPath, Some(j)) => Value::Json(j.to_string()),
                (_, Some(j)) => json::as_text(j).map_or(Value::Null, Value::Text),
            })
        }
        Func::JsonGet | Func::JsonGetText => {
            let Value::Jsonb(doc) = &vals[0] else {
                return null;
            };
            let found = match &vals[1] {
                Value::Text(k) => doc.get_key(k),
                Value::Int(i) => doc.get_index(*i),
                _ => None,
            };
            Ok(match (f, found) {
                (_, None) => Value::Null,
                (Func::JsonGet, Some(j)) => Value::Jsonb(Box::new(j.clone())),
                (_, Some(j)) => j.as_text().map_or(Value::Null, Value::Text),
            })
        }
        Func::JsonPath | Func::JsonPathText => {
            let (Value::Jsonb(doc), Some(p)) = (&vals[0], text_arg(&vals[1])) else {
                return null;
            };
            let (_, path) = array_items(&p)?;
            Ok(match (f, doc.get_path(&path)) {
                (_, None) => Value::Null,
                (Func::JsonPath, Some(j)) => Value::Jsonb(Box::new(j.clone())),
                (_, Some(j)) => j.as_text().map_or(Value::Null, Value::Text),
            })
        }
        Func::JsonHasKey | Func::JsonHasAnyKey | Func::JsonHasAllKeys => {
            let (Value::Jsonb(doc), Some(k)) = (&vals[0], text_arg(&vals[1])) else {
                return null;
            };
            if f == Func::JsonHasKey {
                return Ok(Value::Bool(doc.has_key(&k)));
            }
            // NULL elements of the key array are ignored, as in PostgreSQL.
            let (_, keys) = array_items(&k)?;
            let mut keys = keys.iter().flatten();
            Ok(Value::Bool(if f == Func::JsonHasAnyKey {
                keys.any(|k| doc.has_key(k))
            } else {
                keys.all(|k| doc.has_key(k))
            }))
        }
        Func::JsonConcat => match (&vals[0], &vals[1]) {
            (Value::Jsonb(a), Value::Jsonb(b)) => {
                Ok(Value::Jsonb(Box::new((**a).clone().concat((**b).clone()))))
            }
            _ => null,
        },
        Func::JsonDeleteKey | Func::JsonDeleteKeys | Func::JsonDeleteIndex => {
            let Value::Jsonb(doc) = &vals[0] else {
                return null;
            };
            let doc = (**doc).clone();
            let out = match (f, &vals[1]) {
                (Func::JsonDeleteIndex, v) => doc.delete_index(int_arg(v).unwrap_or(0))?,
                (Func::JsonDeleteKey, v) => doc.delete_keys(&[text_arg(v).unwrap_or_default().as_str()])?,
                (_, v) => {
                    let (_, keys) = array_items(&text_arg(v).unwrap_or_default())?;
                    let keys: Vec<&str> = keys.iter().flatten().map(String::as_str).collect();
                    doc.delete_keys(&keys)?
                }
            };
            Ok(Value::Jsonb(Box::new(out)))
        }
        Func::JsonTypeof => match &vals[0] {
            Value::Jsonb(j) => Ok(Value::Text(j.type_name().into())),
            Value::Json(s) => Ok(Value::Text(json::typeof_(s).into())),
            _ => null,
        },
        Func::JsonArrayLength => match &vals[0] {
            Value::Jsonb(j) => Ok(Value::Int(j.array_length()?)),
            Value::Json(s) => Ok(Value::Int(json::array_length(s)?)),
            _ => null,
        },
        // `to_jsonb(x)`; an array's element type is the second argument.
        Func::ToJsonb => {
            let elem = match vals.get(1) {
                Some(Value::Text(t)) => Some(DataType::from_sql_name(t, None)?),
                _ => None,
            };
            Ok(Value::Jsonb(Box::new(to_json(&vals[0], elem)?)))
        }
        Func::JsonContains => match (&vals[0], &vals[1]) {
            (Value::Jsonb(a), Value::Jsonb(b)) => Ok(Value::Bool(a.contains(b))),
            _ => null,
        },
        Func::RegexMatch | Func::RegexIMatch => {
            let (Some(s), Some(p)) = (text_arg(&vals[0]), text_arg(&vals[1])) else {
                return null;
            };
            Ok(Value::Bool(regex_match(&s, &p, f == Func::RegexIMatch)?))
        }
        Func::ArrayElem => {
            let (Some(a), Some(i)) = (text_arg(&vals[0]), int_arg(&vals[1])) else {
                return null;
            };
            Ok(array_elem(&a, i)?.map_or(Value::Null, Value::Text))
        }
        Func::RecordField => {
            let (Some(r), Some(i)) = (text_arg(&vals[0]), int_arg(&vals[1])) else {
                return null;
            };
            // A record's text form is its fields' text forms in parentheses; the records Augur
            // makes hold no quoted fields.
            let inner = r
                .strip_prefix('(')
                .and_then(|x| x.strip_suffix(')'))
                .unwrap_or(&r);
            let field = usize::try_from(i).ok().and_then(|i| inner.split(',').nth(i));
            Ok(match field {
                Some("") | None => Value::Null,
                Some(f) => Value::Text(f.to_string()),
            })
        }
        Func::Coalesce
        | Func::Now
        | Func::ClockTimestamp
        | Func::StatementTimestamp
        | Func::Random
        | Func::GenRandomUuid
        | Func::NextVal
        | Func::CurrVal
        | Func::SetVal => {
            unreachable!("handled above")
        }
    }
}

/// A record field's text as record_out writes it: double-quoted (with `"` and `\\` doubled)
/// when empty or holding a quote, backslash, parenthesis, comma or white space.
fn record_field(t: &str, out: &mut String) {
    let quote = t.is_empty()
        || t.chars()
            .any(|c| matches!(c, '"' | '\\' | '(' | ')' | ',') || c.is_ascii_whitespace());
    if !quote {
        out.push_str(t);
        return;
    }
    out.push('"');
    for c in t.chars() {
        if matches!(c, '"' | '\\') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('"');
}

/// Element `i` of an array in PostgreSQL's text form (see [`Func::ArrayElem`]); None for a NULL
/// element or a subscript outside the array.
pub fn array_elem(a: &str, i: i64) -> Result<Option<String>> {
    let (first, items) = array_items(a)?;
    let Some(k) = i.checked_sub(first).and_then(|k| usize::try_from(k).ok()) else {
        return Ok(None);
    };
    Ok(items.into_iter().nth(k).flatten())
}

/// The first subscript and the elements (NULL for NULL) of an array value whose elements are
/// of type `elem`.
fn array_values(a: &Value, elem: Ty) -> Result<(i64, Vec<Value>)> {
    let (first, items) = array_items(&text_arg(a).unwrap_or_default())?;
    let vals = items
        .into_iter()
        .map(|x| {
            x.map_or(Ok(Value::Null), |x| match elem {
                // character(n) elements compare without their trailing blanks.
                Ty::Bpchar => Ok(Value::Text(x.trim_end_matches(' ').to_string())),
                _ => Value::parse_text(&x, elem.to_dt()),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((first, vals))
}

/// The first subscript and the elements (None for NULL) of an array in PostgreSQL's text form:
/// `{x,y}` (subscripts from 1, [`crate::types::array::parse`]) or an `int2vector` /
/// `oidvector` such as pg_index.indkey, `1 2` (subscripts from 0).
pub fn array_items(a: &str) -> Result<(i64, Vec<Option<String>>)> {
    if a.trim_start().starts_with(['{', '[']) {
        return crate::types::array::parse(a);
    }
    Ok((0, a.split_whitespace().map(|x| Some(x.to_string())).collect()))
}

/// `s ~ p` (`~*` when `ci`): PostgreSQL's regular expressions as the regex crate reads them
/// (the same for the syntax catalog queries and most applications use; no back-references;
/// `.` matches a newline and `^` / `$` only the ends of `s`, as PostgreSQL's do).
/// The last pattern a thread used stays compiled (a query compares every row with one).
fn regex_match(s: &str, p: &str, ci: bool) -> Result<bool> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, bool, regex::Regex)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if !matches!(&*last, Some((lp, lci, _)) if lp == p && *lci == ci) {
            // PostgreSQL's `.` matches a newline (as the regexp functions' without flag n);
            // `~*` folds the case of ASCII letters only (the C locale's).
            let folded = super::regex_fold::pg_pattern(p, ci, false);
            let re = regex::RegexBuilder::new(folded.as_deref().unwrap_or(p))
                .dot_matches_new_line(true)
                .build()
                .map_err(regex_error)?;
            *last = Some((p.to_string(), ci, re));
        }
        Ok(last.as_ref().is_some_and(|(_, _, re)| re.is_match(s)))
    })
}

/// A value as an element of a built jsonb array or object: NULL is JSON null (the argument
/// was converted by `to_jsonb` when it was bound).
fn json_of(v: &Value) -> Json {
    match v {
        Value::Jsonb(j) => (**j).clone(),
        _ => Json::Null,
    }
}

/// `to_jsonb(v)` as PostgreSQL converts it: numbers as numbers (a float8 by its text, infinities
/// and NaN as strings), booleans, jsonb as itself, json parsed, an array (in text form, with element type
/// `elem`) as a JSON array of its elements converted, timestamps in ISO 8601 with a `T`
/// (`+00:00` for timestamptz), anything else as the string of its text output.
fn to_json(v: &Value, elem: Option<DataType>) -> Result<Json> {
    Ok(match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::Number(crate::types::Decimal::from(*i)),
        Value::Numeric(d) => Json::Number(*d),
        Value::Float(f) if f.is_finite() => match numeric::parse(&crate::types::format_float(*f))? {
            Some(d) => Json::Number(d),
            None => Json::String(crate::types::format_float(*f)),
        },
        Value::Jsonb(j) => (**j).clone(),
        // A json value is parsed (an object stays an object), as PostgreSQL's to_jsonb does.
        Value::Json(s) => crate::types::jsonb::parse(s)?,
        Value::Text(s) => match elem {
            Some(e) => {
                let (_, items) = array_items(s)?;
                let mut out = Vec::with_capacity(items.len());
                for x in items {
                    out.push(match x {
                        None => Json::Null,
                        Some(x) => to_json(&Value::parse_text(&x, e)?, None)?,
                    });
                }
                Json::Array(out)
            }
            None => Json::String(s.clone()),
        },
        Value::Timestamp(_) => Json::String(v.to_text().unwrap_or_default().replacen(' ', "T", 1)),
        // In the session time zone, the offset with minutes (`+01:00`).
        Value::TimestampTz(t) => Json::String(crate::types::session_zone::format_tstz_json(*t)),
        v => Json::String(v.to_text().unwrap_or_default()),
    })
}

/// PostgreSQL's 2201B for a pattern the regex crate refuses, with the crate's last line of
/// explanation.
pub(crate) fn regex_error(e: regex::Error) -> Error {
    let why = e
        .to_string()
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string();
    Error::new(SqlState("2201B"), format!("invalid regular expression: {why}"))
}

#[cfg(test)]
mod tests {
    use super::array_elem;

    #[test]
    fn array_subscripts() {
        assert_eq!(array_elem("{3,1,2}", 1).unwrap().as_deref(), Some("3"));
        assert_eq!(array_elem("{3,1,2}", 3).unwrap().as_deref(), Some("2"));
        assert_eq!(array_elem("{3,1,2}", 0).unwrap(), None);
        assert_eq!(array_elem("{3,1,2}", 4).unwrap(), None);
        assert_eq!(array_elem("{}", 1).unwrap(), None);
        assert_eq!(array_elem("{1,NULL}", 2).unwrap(), None);
        assert_eq!(array_elem("{\"a b\",c}", 1).unwrap().as_deref(), Some("a b"));
        // int2vector: from 0.
        assert_eq!(array_elem("2 1", 0).unwrap().as_deref(), Some("2"));
        assert_eq!(array_elem("2 1", 1).unwrap().as_deref(), Some("1"));
        assert_eq!(array_elem("2 1", 2).unwrap(), None);
        assert_eq!(array_elem("2 1", i64::MIN).unwrap(), None);
    }
}
