//! The typing of functions, SQL-syntax calls (`TRIM`, `SUBSTRING ... FROM`, `POSITION`,
//! `OVERLAY`), intervals and date/time arithmetic for deparse.rs, as PostgreSQL 15's parser
//! types them and ruleutils.c prints them: text parameters take their arguments labelled
//! (`lpad('a'::text, 3)`), parameters of any type (`concat`, `concat_ws`, `format`) take an
//! untyped literal as it is (`concat('a', NULL::unknown)`).

use sqlparser::ast as A;

use super::{coerce, int_arg, typed, N, T};
use crate::engine::TableDef;

/// What a function's parameter takes.
#[derive(Clone, Copy)]
enum P {
    Text,
    Int,
    Any,
}

/// `name(args)` for the functions deparse.rs itself does not type; None for others.
pub(super) fn typed_call(name: &str, args: Vec<N>) -> Option<N> {
    use P::*;
    let (params, ty): (&[P], T) = match (name, args.len()) {
        ("lpad" | "rpad", 2) | ("repeat", 2) => (&[Text, Int], T::Text),
        ("lpad" | "rpad", 3) => (&[Text, Int, Text], T::Text),
        ("reverse" | "initcap" | "md5" | "quote_literal" | "quote_nullable" | "quote_ident", 1) => {
            (&[Text], T::Text)
        }
        ("split_part", 3) => (&[Text, Text, Int], T::Text),
        ("translate", 3) | ("regexp_replace", 3) => (&[Text, Text, Text], T::Text),
        ("regexp_replace", 4) => (&[Text, Text, Text, Text], T::Text),
        ("ascii" | "bit_length" | "octet_length" | "character_length", 1) => (&[Text], T::Int4),
        ("chr", 1) => (&[Int], T::Text),
        ("starts_with", 2) => (&[Text, Text], T::Bool),
        ("strpos", 2) => (&[Text, Text], T::Int4),
        ("string_to_array", 2) => (&[Text, Text], T::Array),
        ("string_to_array", 3) => (&[Text, Text, Text], T::Array),
        ("to_hex", 1) if matches!(args[0].ty(), T::Int4 | T::Int8) => (&[Any], T::Text),
        ("concat", _) => (&[], T::Text),
        ("concat_ws" | "format", 2..) => (&[Text], T::Text),
        ("format", 1) => (&[Text], T::Text),
        ("random", 0) => (&[], T::Float8),
        ("clock_timestamp" | "statement_timestamp" | "transaction_timestamp", 0) => (&[], T::TimestampTz),
        _ => return None,
    };
    let mut out = Vec::with_capacity(args.len());
    for (i, a) in args.into_iter().enumerate() {
        out.push(match params.get(i).copied().unwrap_or(Any) {
            Text if a.ty().is_texty() => coerce(a, T::Text)?,
            Int => int_arg(a)?,
            Any => match a {
                N::Const(s, T::Unknown) => N::Untyped(Some(s)),
                N::Null(T::Unknown) => N::Untyped(None),
                a => a,
            },
            _ => return None,
        });
    }
    Some(N::Func(name.to_string(), out, ty))
}

/// `TRIM(...)`, `SUBSTRING(x FROM a [FOR b])`, `POSITION(a IN b)`, `OVERLAY(...)` and
/// `interval '...'`.
pub(super) fn typed_syntax(def: &TableDef, e: &A::Expr) -> Option<N> {
    let text = |x: &A::Expr| {
        typed(def, x)
            .filter(|n| n.ty().is_texty())
            .and_then(|n| coerce(n, T::Text))
    };
    let int = |x: &A::Expr| typed(def, x).and_then(int_arg);
    Some(match e {
        A::Expr::Trim {
            expr,
            trim_where,
            trim_what,
            trim_characters: None,
        } => {
            // `TRIM(BOTH FROM x)` without characters, `TRIM(BOTH c FROM x)` with.
            let (side_from, side) = match trim_where {
                Some(A::TrimWhereField::Leading) => ("LEADING FROM ", "LEADING "),
                Some(A::TrimWhereField::Trailing) => ("TRAILING FROM ", "TRAILING "),
                _ => ("BOTH FROM ", "BOTH "),
            };
            let x = text(expr)?;
            let args = match trim_what {
                Some(w) => vec![(side, text(w)?), (" FROM ", x)],
                None => vec![(side_from, x)],
            };
            N::Syntax("TRIM", args, "", T::Text)
        }
        A::Expr::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            let mut args = vec![("", text(expr)?)];
            let from = match substring_from {
                Some(f) => int(f)?,
                None => N::Const("1".into(), T::Int4),
            };
            args.push((" FROM ", from));
            if let Some(f) = substring_for {
                args.push((" FOR ", int(f)?));
            }
            N::Syntax("SUBSTRING", args, "", T::Text)
        }
        A::Expr::Position { expr, r#in } => N::Syntax(
            "POSITION",
            vec![("(", text(expr)?), (") IN (", text(r#in)?)],
            ")",
            T::Int4,
        ),
        A::Expr::Overlay {
            expr,
            overlay_what,
            overlay_from,
            overlay_for,
        } => {
            let mut args = vec![
                ("", text(expr)?),
                (" PLACING ", text(overlay_what)?),
                (" FROM ", int(overlay_from)?),
            ];
            if let Some(f) = overlay_for {
                args.push((" FOR ", int(f)?));
            }
            N::Syntax("OVERLAY", args, "", T::Text)
        }
        A::Expr::Interval(iv) if iv.leading_field.is_none() && iv.last_field.is_none() => {
            match iv.value.as_ref() {
                A::Expr::Value(v) => match &v.value {
                    A::Value::SingleQuotedString(s) => coerce(N::Const(s.clone(), T::Unknown), T::Interval)?,
                    _ => return None,
                },
                _ => return None,
            }
        }
        _ => return None,
    })
}

/// The result type of `l op r` for date/time `+` and `-` with an interval or (for a date) an
/// integer, and the type `r` is read as (an untyped literal as an interval); None for other
/// operands.
pub(super) fn datetime_arith(l: &N, r: &N, op: &A::BinaryOperator) -> Option<(T, T)> {
    if !matches!(op, A::BinaryOperator::Plus | A::BinaryOperator::Minus) {
        return None;
    }
    let plus = matches!(op, A::BinaryOperator::Plus);
    Some(match (l.ty(), r.ty()) {
        (T::TimestampTz, T::Interval) => (T::TimestampTz, T::Interval),
        (T::Timestamp | T::Date, T::Interval) => (T::Timestamp, T::Interval),
        // timestamp + 'literal' can only be an interval (minus could be a timestamp).
        (t @ (T::TimestampTz | T::Timestamp), T::Unknown) if plus => (t, T::Interval),
        (T::Date, T::Int4) => (T::Date, T::Int4),
        (T::Interval, t @ (T::TimestampTz | T::Timestamp)) if plus => (t, t),
        (T::Interval, T::Interval) => (T::Interval, T::Interval),
        _ => return None,
    })
}
