//! A column's DEFAULT as PostgreSQL's pg_get_expr prints it (pg_attrdef's adbin,
//! information_schema.columns.column_default): the expression is kept as the SQL text written,
//! and printed here as PostgreSQL prints the expression its parser made of it. A quoted literal
//! is a constant of the column's type, labelled with the type (`'abc'::character varying`,
//! `'{}'::jsonb`), a number is printed as its constant (`7`, `1.5`, `'-1'::integer`,
//! `'9999999999'::bigint`) with the cast to the column's type not shown, a timestamptz as the
//! instant it is (`'2024-01-02 01:04:05+00'::timestamp with time zone`, in the session's time
//! zone, which is UTC in Augur), `nextval('s')` names a `regclass`, operators are
//! parenthesized, the arguments of the functions deparse.rs types and the elements of an
//! `ARRAY[...]` are labelled (`lower('A'::text)`, `ARRAY['a'::text]`); a NULL default is no
//! default. An expression outside what this covers is printed as it was written.

use sqlparser::ast as A;

use super::{args_of, parse, print, quote_ident, typed, typed_literal, T};
use crate::engine::TableDef;
use crate::sql::bind::parse_type;
use crate::types::{DataType, Value};

/// The default of a column of type `ty` in `def`, kept as the SQL text `text`, as
/// PostgreSQL prints it; None for a NULL default, which PostgreSQL does not store.
pub fn default_def(def: &TableDef, text: &str, ty: DataType) -> Option<String> {
    let Some(e) = parse(text) else {
        return Some(text.to_string());
    };
    let e = unnest(&e);
    if is_null(e) {
        return None;
    }
    if let Some(s) = nextval(e).or_else(|| literal(e, ty)) {
        return Some(s);
    }
    if let A::Expr::Cast {
        kind: A::CastKind::DoubleColon | A::CastKind::Cast,
        expr,
        data_type,
        format: None,
    } = e
    {
        if matches!(unnest(expr), A::Expr::Array(a) if a.elem.is_empty()) {
            return Some(format!("ARRAY[]::{}", label(parse_type(data_type).ok()?.0)));
        }
    }
    Some(
        typed(def, e)
            .map(|n| {
                let mut s = String::new();
                print(&n, false, &mut s);
                s
            })
            .unwrap_or_else(|| text.to_string()),
    )
}

fn unnest(mut e: &A::Expr) -> &A::Expr {
    while let A::Expr::Nested(x) = e {
        e = x;
    }
    e
}

/// `NULL`, or a cast of it (PostgreSQL folds that to a NULL constant).
fn is_null(e: &A::Expr) -> bool {
    match unnest(e) {
        A::Expr::Value(v) => matches!(v.value, A::Value::Null),
        A::Expr::Cast { expr, .. } => is_null(expr),
        _ => false,
    }
}

/// `nextval('s')` (a serial column's default) or `nextval('s'::regclass)` as
/// `nextval('s'::regclass)`.
fn nextval(e: &A::Expr) -> Option<String> {
    let A::Expr::Function(f) = e else { return None };
    if f.name.to_string().to_lowercase() != "nextval" {
        return None;
    }
    let [arg] = args_of(f)?[..] else {
        return None;
    };
    // The name, or the name cast to regclass as PostgreSQL prints it back.
    let arg = match unnest(arg) {
        A::Expr::Cast { expr, data_type, .. } if data_type.to_string().eq_ignore_ascii_case("regclass") => {
            expr
        }
        a => a,
    };
    let name = match unnest(arg) {
        A::Expr::Value(v) => match &v.value {
            A::Value::SingleQuotedString(s) => s.clone(),
            _ => return None,
        },
        _ => return None,
    };
    let name = if name.starts_with('"') || name.contains('.') {
        name
    } else {
        quote_ident(&name)
    };
    Some(format!("nextval('{}'::regclass)", name.replace('\'', "''")))
}

/// A quoted literal (or a cast of one), as the constant of the column's type (or the cast's)
/// PostgreSQL's parser makes of it.
fn literal(e: &A::Expr, ty: DataType) -> Option<String> {
    let (s, ty) = match e {
        A::Expr::Value(v) => match &v.value {
            A::Value::SingleQuotedString(s) => (s, ty),
            _ => return None,
        },
        A::Expr::Cast {
            kind: A::CastKind::DoubleColon | A::CastKind::Cast,
            expr,
            data_type,
            format: None,
        } => match unnest(expr) {
            A::Expr::Value(v) => match &v.value {
                A::Value::SingleQuotedString(s) => (s, parse_type(data_type).ok()?.0),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    let ty = unmodified(ty);
    let quoted = |v: &str| format!("'{}'::{}", v.replace('\'', "''"), label(ty));
    Some(match ty {
        // Printed as PostgreSQL prints constants of these types (unlabelled where it may).
        DataType::Int2 | DataType::Int4 | DataType::Int8 | DataType::Bool | DataType::Text(_) => {
            let n = typed_literal(s, T::of(ty)?)?;
            let mut out = String::new();
            print(&n, false, &mut out);
            out
        }
        DataType::Numeric(_) => {
            let v = Value::parse_text(s, ty).ok()?.to_text()?;
            if v.starts_with(|c: char| c.is_ascii_digit()) && v.contains(['.', 'e', 'E']) {
                v
            } else {
                quoted(&v)
            }
        }
        _ => quoted(&Value::parse_text(s, ty).ok()?.to_text()?),
    })
}

/// The type without its modifier (a constant's type carries none).
fn unmodified(ty: DataType) -> DataType {
    match ty {
        DataType::Varchar(_) => DataType::Varchar(None),
        DataType::Bpchar(_) => DataType::Bpchar(None),
        DataType::Numeric(_) => DataType::Numeric(None),
        DataType::Text(_) => DataType::Text(None),
        DataType::Time(_) => DataType::Time(None),
        DataType::Array(e) => DataType::array_keeping_typmod(unmodified(*e)).unwrap_or(ty),
        t => t,
    }
}

/// The name PostgreSQL's format_type gives the type without a modifier.
fn label(ty: DataType) -> String {
    match unmodified(ty) {
        DataType::Array(e) => format!("{}[]", label(*e)),
        t => t.sql_name(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ColumnDef;

    // Expected texts are PostgreSQL 15's information_schema.columns.column_default for a column
    // of that type with that DEFAULT.
    #[test]
    fn defaults_print_as_postgresql_prints_them() {
        let def = TableDef::new("d", vec![ColumnDef::new("id", DataType::Int4)], &[]).unwrap();
        let cases = [
            (
                "nextval('t_c_seq')",
                DataType::Int4,
                Some("nextval('t_c_seq'::regclass)"),
            ),
            ("'abc'", DataType::Text(None), Some("'abc'::text")),
            (
                "'abc'",
                DataType::Varchar(Some(10)),
                Some("'abc'::character varying"),
            ),
            ("'ab'", DataType::Bpchar(Some(3)), Some("'ab'::bpchar")),
            ("'{}'", DataType::Jsonb, Some("'{}'::jsonb")),
            ("'{}'::JSONB", DataType::Jsonb, Some("'{}'::jsonb")),
            ("ARRAY[]::TEXT[]", DataType::Text(None), Some("ARRAY[]::text[]")),
            ("-1", DataType::Int4, Some("'-1'::integer")),
            ("-1.5", DataType::Float8, Some("'-1.5'::numeric")),
            ("9999999999", DataType::Int8, Some("'9999999999'::bigint")),
            ("'12'", DataType::Int8, Some("'12'::bigint")),
            ("'5'", DataType::Numeric(None), Some("'5'::numeric")),
            ("'1.5'", DataType::Numeric(None), Some("1.5")),
            ("1 + 2", DataType::Int4, Some("(1 + 2)")),
            ("now()", DataType::TimestampTz, Some("now()")),
            (
                "CURRENT_TIMESTAMP",
                DataType::TimestampTz,
                Some("CURRENT_TIMESTAMP"),
            ),
            ("NULL", DataType::Text(None), None),
            ("lower('A')", DataType::Text(None), Some("lower('A'::text)")),
            (
                "substr('abc', 1, 2)",
                DataType::Text(None),
                Some("substr('abc'::text, 1, 2)"),
            ),
            (
                "left('abc', -1)",
                DataType::Text(None),
                Some("\"left\"('abc'::text, '-1'::integer)"),
            ),
            (
                "coalesce(NULL, 'x')",
                DataType::Text(None),
                Some("COALESCE(NULL::text, 'x'::text)"),
            ),
            (
                "'2024-01-02 03:04:05+02'",
                DataType::TimestampTz,
                Some("'2024-01-02 01:04:05+00'::timestamp with time zone"),
            ),
            (
                "ARRAY['a', NULL]",
                DataType::Text(None),
                Some("ARRAY['a'::text, NULL::text]"),
            ),
            (
                "ARRAY[1.5, 2]",
                DataType::Numeric(None),
                Some("ARRAY[1.5, (2)::numeric]"),
            ),
            ("NULL::text", DataType::Text(None), None),
        ];
        for (text, ty, want) in cases {
            let want = want.map(str::to_string);
            assert_eq!(default_def(&def, text, ty), want, "{text}");
        }
    }
}
