//! json text as PostgreSQL's `to_json` (datum_to_json) writes a value: numbers by their
//! text output when that is a JSON number (else quoted, `"NaN"`), date/time values in ISO
//! form, strings with JSON's escapes, an array compactly (`[1,2]`), json as it is and jsonb
//! as its text.

use super::func::array_items;
use crate::error::Result;
use crate::types::{json, jsonb, session_zone, DataType, Value};

/// The json text of `v`; `elem` is the element type when `v` is an array's text form. A NULL
/// is `null` (the callers that are strict check it first).
pub(super) fn json_text(v: &Value, elem: Option<DataType>) -> Result<String> {
    let mut out = String::new();
    write(v, elem, &mut out)?;
    Ok(out)
}

fn write(v: &Value, elem: Option<DataType>, out: &mut String) -> Result<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(_) | Value::Numeric(_) | Value::Float(_) => {
            let s = v.to_text().unwrap_or_default();
            if json::is_number(&s) {
                out.push_str(&s);
            } else {
                jsonb::write_string(&s, out);
            }
        }
        Value::Json(s) => out.push_str(s),
        Value::Jsonb(j) => out.push_str(&j.to_text()),
        Value::Text(s) => match elem {
            Some(e) => {
                let (_, items) = array_items(s)?;
                out.push('[');
                for (i, x) in items.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    match x {
                        None => out.push_str("null"),
                        Some(x) => write(&Value::parse_text(&x, e)?, None, out)?,
                    }
                }
                out.push(']');
            }
            None => jsonb::write_string(s, out),
        },
        Value::Timestamp(_) => {
            let s = v.to_text().unwrap_or_default().replacen(' ', "T", 1);
            jsonb::write_string(&s, out);
        }
        // In the session time zone, the offset with minutes (`+01:00`).
        Value::TimestampTz(t) => jsonb::write_string(&session_zone::format_tstz_json(*t), out),
        v => jsonb::write_string(&v.to_text().unwrap_or_default(), out),
    }
    Ok(())
}
