//! Binding the string functions of `expr/string_fn.rs` with PostgreSQL's argument types: text
//! parameters take text, varchar, character (without its trailing blanks) and untyped
//! literals; integer parameters take integer, smallint and untyped literals (a bigint is
//! 42883, as PostgreSQL has no implicit cast from it to integer); `concat_ws` and `format`
//! take values of any type, by their text output. Also `OVERLAY(s PLACING t FROM n [FOR k])`.

use sqlparser::ast as A;

use super::{Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Func, StrFn, Ty};

/// What a parameter of a string function takes.
#[derive(Clone, Copy, PartialEq)]
enum P {
    Text,
    Int,
    /// `bytea` as it is, anything else as text.
    TextOrBytea,
    /// Any type (an untyped literal as text).
    Any,
}

/// The suffix of the name of the function that gives `regexp_matches`' rows as an array (a
/// name SQL text does not spell by accident).
const HIDDEN: &str = "\u{1}";
const MATCHES: &str = "regexp_matches\u{1}";

fn parse_expr(name: &str, sql: &str) -> Result<A::Expr> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Error::syntax(format!("{name}: {e}")))
}

/// `regexp_matches(args)` / `regexp_split_to_table(args)` in FROM: the array of its rows to
/// unnest, and the type its elements are read as (`text[]` for regexp_matches' rows, held
/// as their text forms; None, the array's own element type, for regexp_split_to_table's).
pub(super) fn regexp_rows_array(name: &str, args: &[&A::Expr]) -> Result<(A::Expr, Option<Ty>)> {
    let args: Vec<String> = args.iter().map(ToString::to_string).collect();
    let args = args.join(", ");
    if name == "regexp_matches" {
        let e = parse_expr(name, &format!("\"{MATCHES}\"({args})"))?;
        Ok((e, Some(Ty::Text.array().unwrap_or(Ty::Text))))
    } else {
        Ok((parse_expr(name, &format!("regexp_split_to_array({args})"))?, None))
    }
}

/// `similar_to_escape(pattern [, escape])`: what `x SIMILAR TO pattern` matches `x` with (by
/// `~`, as PostgreSQL rewrites it).
pub(super) fn similar_call(pattern: &A::Expr, escape: Option<&A::Expr>) -> Result<A::Expr> {
    let sql = match escape {
        Some(e) => format!("similar_to_escape({pattern}, {e})"),
        None => format!("similar_to_escape({pattern})"),
    };
    parse_expr("SIMILAR TO", &sql)
}

impl Binder<'_> {
    /// The set-returning `regexp_matches(s, pattern [, flags])` and
    /// `regexp_split_to_table(s, pattern [, flags])` in a select list, as the `unnest` of an
    /// array of their rows (`regexp_split_to_array`'s, and for regexp_matches the text forms
    /// of its `text[]` rows, read back as `text[]`); None for other calls.
    pub(super) fn string_srf(
        &mut self,
        f: &A::Function,
        name: &str,
        args: &[&A::Expr],
        scope: &Scope,
    ) -> Result<Option<(Expr, Ty)>> {
        let inner = match name {
            "regexp_matches" => format!("\"{MATCHES}\""),
            "regexp_split_to_table" => "regexp_split_to_array".to_string(),
            _ => return Ok(None),
        };
        if f.over.is_some() || f.filter.is_some() {
            return Ok(None);
        }
        let args: Vec<String> = args.iter().map(ToString::to_string).collect();
        let call = format!("unnest({inner}({}))", args.join(", "));
        let sql = if name == "regexp_matches" {
            format!("CAST({call} AS text[])")
        } else {
            call
        };
        let e = parse_expr(name, &sql)?;
        self.bind_expr(&e, scope).map(Some)
    }

    /// `name(args)` when it is one of these functions (None otherwise, for the other
    /// functions' binding to try): its call and type.
    pub(super) fn string_func(&mut self, name: &str, args: &[(Expr, Ty)]) -> Result<Option<(Expr, Ty)>> {
        use P::*;
        let n = args.len();
        let texty = |i: usize| {
            matches!(
                args.get(i).map(|a| a.1),
                Some(Ty::Text | Ty::Unknown | Ty::Bpchar | Ty::Varchar)
            )
        };
        let text_array = Ty::Text.array().unwrap_or(Ty::Text);
        let (f, params, ty): (StrFn, &[P], Ty) = match (name, n) {
            ("lpad", 2) => (StrFn::Lpad, &[Text, Int], Ty::Text),
            ("lpad", 3) => (StrFn::Lpad, &[Text, Int, Text], Ty::Text),
            ("rpad", 2) => (StrFn::Rpad, &[Text, Int], Ty::Text),
            ("rpad", 3) => (StrFn::Rpad, &[Text, Int, Text], Ty::Text),
            ("repeat", 2) => (StrFn::Repeat, &[Text, Int], Ty::Text),
            ("reverse", 1) => (StrFn::Reverse, &[Text], Ty::Text),
            ("initcap", 1) => (StrFn::Initcap, &[Text], Ty::Text),
            ("split_part", 3) => (StrFn::SplitPart, &[Text, Text, Int], Ty::Text),
            ("md5", 1) => (StrFn::Md5, &[TextOrBytea], Ty::Text),
            ("translate", 3) => (StrFn::Translate, &[Text, Text, Text], Ty::Text),
            ("ascii", 1) => (StrFn::Ascii, &[Text], Ty::Int4),
            ("chr", 1) => (StrFn::Chr, &[Int], Ty::Text),
            ("starts_with", 2) => (StrFn::StartsWith, &[Text, Text], Ty::Bool),
            ("bit_length", 1) => (StrFn::BitLength, &[TextOrBytea], Ty::Int4),
            // to_hex(integer) and to_hex(bigint) fit a smallint or a literal equally.
            ("to_hex", 1) if matches!(args[0].1, Ty::Int2 | Ty::Unknown) => {
                return Err(Error::new(
                    SqlState("42725"),
                    format!("function to_hex({}) is not unique", args[0].1.name()),
                ))
            }
            ("to_hex", 1) if args[0].1 == Ty::Int8 => (StrFn::ToHex64, &[Any], Ty::Text),
            ("to_hex", 1) => (StrFn::ToHex32, &[Int], Ty::Text),
            ("quote_literal", 1) => (StrFn::QuoteLiteral, &[Text], Ty::Text),
            ("quote_nullable", 1) => (StrFn::QuoteNullable, &[Text], Ty::Text),
            ("concat_ws", 2..) => (StrFn::ConcatWs, &[Text], Ty::Text),
            ("format", 1..) => (StrFn::Format, &[Text], Ty::Text),
            ("regexp_replace", 3) => (StrFn::RegexpReplace, &[Text, Text, Text], Ty::Text),
            // An integer fourth argument is the start (an untyped literal is the flags, as
            // PostgreSQL prefers text for it).
            ("regexp_replace", 4) if matches!(args[3].1, Ty::Int2 | Ty::Int4 | Ty::Int8) => {
                (StrFn::RegexpReplaceN, &[Text, Text, Text, Int], Ty::Text)
            }
            ("regexp_replace", 4) => (StrFn::RegexpReplace, &[Text, Text, Text, Text], Ty::Text),
            ("regexp_replace", 5) => (StrFn::RegexpReplaceN, &[Text, Text, Text, Int, Int], Ty::Text),
            ("regexp_replace", 6) => (
                StrFn::RegexpReplaceN,
                &[Text, Text, Text, Int, Int, Text],
                Ty::Text,
            ),
            ("similar_to_escape", 1) => (StrFn::SimilarEscape, &[Text], Ty::Text),
            ("similar_to_escape", 2) => (StrFn::SimilarEscape, &[Text, Text], Ty::Text),
            ("regexp_match", 2) => (StrFn::RegexpMatch, &[Text, Text], text_array),
            ("regexp_match", 3) => (StrFn::RegexpMatch, &[Text, Text, Text], text_array),
            ("regexp_like", 2) => (StrFn::RegexpLike, &[Text, Text], Ty::Bool),
            ("regexp_like", 3) => (StrFn::RegexpLike, &[Text, Text, Text], Ty::Bool),
            ("regexp_split_to_array", 2) => (StrFn::RegexpSplit, &[Text, Text], text_array),
            ("regexp_split_to_array", 3) => (StrFn::RegexpSplit, &[Text, Text, Text], text_array),
            (MATCHES, 2) => (StrFn::RegexpMatches, &[Text, Text], text_array),
            (MATCHES, 3) => (StrFn::RegexpMatches, &[Text, Text, Text], text_array),
            ("regexp_count", 2) => (StrFn::RegexpCount, &[Text, Text], Ty::Int4),
            ("string_to_array", 2) => (StrFn::StringToArray, &[Text, Text], text_array),
            ("string_to_array", 3) => (StrFn::StringToArray, &[Text, Text, Text], text_array),
            // `substring(s FROM pattern)`: a text (or untyped) second argument is a pattern.
            ("substring", 2) if texty(0) && texty(1) => (StrFn::RegexpSubstring, &[Text, Text], Ty::Text),
            // `substring(s FROM pattern FOR escape)`, `substring(s SIMILAR pattern ESCAPE
            // escape)`: a SIMILAR TO pattern's part between its separators.
            ("substring", 3) if texty(0) && texty(1) && texty(2) => {
                (StrFn::SimilarSubstring, &[Text, Text, Text], Ty::Text)
            }
            ("overlay", 3) => (StrFn::Overlay, &[Text, Text, Int], Ty::Text),
            ("overlay", 4) => (StrFn::Overlay, &[Text, Text, Int, Int], Ty::Text),
            _ => return Ok(None),
        };
        let types: Vec<&str> = args.iter().map(|a| a.1.name()).collect();
        let name = name.strip_suffix(HIDDEN).unwrap_or(name);
        let undefined = || {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", types.join(", ")),
            )
        };
        let mut exprs = Vec::with_capacity(n);
        for (i, (e, t)) in args.iter().cloned().enumerate() {
            // concat_ws's and format's further arguments are of any type.
            let p = params.get(i).copied().unwrap_or(Any);
            let to = match (p, t) {
                (Text, Ty::Text | Ty::Unknown | Ty::Bpchar | Ty::Varchar) => Ty::Text,
                (Int, Ty::Int2 | Ty::Int4 | Ty::Unknown) => Ty::Int4,
                (TextOrBytea, Ty::Bytea) => Ty::Bytea,
                (TextOrBytea, Ty::Text | Ty::Unknown | Ty::Bpchar | Ty::Varchar) => Ty::Text,
                (Any, Ty::Unknown) => Ty::Text,
                (Any, t) => t,
                _ => return Err(undefined()),
            };
            exprs.push(self.coerce(e, t, to)?);
        }
        Ok(Some((Expr::Func(Func::Str(f), exprs, ty), ty)))
    }

    /// `OVERLAY(s PLACING t FROM start [FOR count])`, as the function `overlay`.
    pub(super) fn bind_overlay(
        &mut self,
        s: &A::Expr,
        placing: &A::Expr,
        from: &A::Expr,
        count: Option<&A::Expr>,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let mut args = vec![
            self.bind_expr(s, scope)?,
            self.bind_expr(placing, scope)?,
            self.bind_expr(from, scope)?,
        ];
        if let Some(c) = count {
            args.push(self.bind_expr(c, scope)?);
        }
        self.scalar_func("overlay", args)
    }
}
