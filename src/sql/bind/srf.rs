//! Binding set-returning functions in a select list (`unnest`, `generate_subscripts`,
//! `generate_series`, `information_schema._pg_expandarray`, jsonb's `jsonb_each[_text]`,
//! `jsonb_array_elements[_text]`, `jsonb_object_keys`): each call becomes an [`Expr::Srf`]
//! placeholder and an [`SrfSpec`] for the ProjectSet step. Also field selection
//! `(record).field` of the records these calls return (`_pg_expandarray`'s `(x, n)`,
//! `jsonb_each`'s `(key, value)`).

use sqlparser::ast as A;

use super::{ident, unsupported, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Func, Ty};
use crate::sql::plan::srf::{SrfKind, SrfSpec};
use crate::types::Value;

/// The fields of `_pg_expandarray`'s record: the element (untyped, as array subscripts are)
/// and its position.
const EXPAND_FIELDS: [(&str, Ty); 2] = [("x", Ty::Unknown), ("n", Ty::Int4)];

/// The columns of a call of `kind` returning more than one (its record's fields).
pub(super) fn record_fields(kind: SrfKind) -> Option<&'static [(&'static str, Ty)]> {
    match kind {
        SrfKind::ExpandArray => Some(&EXPAND_FIELDS),
        SrfKind::JsonbEach => Some(&[("key", Ty::Text), ("value", Ty::Jsonb)]),
        SrfKind::JsonbEachText | SrfKind::JsonEachText => Some(&[("key", Ty::Text), ("value", Ty::Text)]),
        SrfKind::JsonEach => Some(&[("key", Ty::Text), ("value", Ty::Json)]),
        _ => None,
    }
}

/// The type of a jsonb function's single column, and its name in FROM when it has one (an OUT
/// parameter's, which PostgreSQL prefers to the alias).
pub(super) fn jsonb_column(kind: SrfKind) -> Option<(Ty, Option<&'static str>)> {
    match kind {
        SrfKind::JsonbArrayElements => Some((Ty::Jsonb, Some("value"))),
        SrfKind::JsonbArrayElementsText | SrfKind::JsonArrayElementsText => Some((Ty::Text, Some("value"))),
        SrfKind::JsonArrayElements => Some((Ty::Json, Some("value"))),
        SrfKind::JsonbObjectKeys | SrfKind::JsonObjectKeys => Some((Ty::Text, None)),
        _ => None,
    }
}

/// Whether `kind` is one of jsonb's set-returning functions (one jsonb argument).
pub(super) fn is_jsonb(kind: SrfKind) -> bool {
    matches!(
        kind,
        SrfKind::JsonbEach
            | SrfKind::JsonbEachText
            | SrfKind::JsonbArrayElements
            | SrfKind::JsonbArrayElementsText
            | SrfKind::JsonbObjectKeys
            | SrfKind::JsonEach
            | SrfKind::JsonEachText
            | SrfKind::JsonArrayElements
            | SrfKind::JsonArrayElementsText
            | SrfKind::JsonObjectKeys
    )
}

/// The set-returning function a call names, if any.
pub(super) fn srf_kind(name: &A::ObjectName) -> Option<SrfKind> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            A::ObjectNamePart::Identifier(i) => ident(i),
            _ => String::new(),
        })
        .collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    match parts.as_slice() {
        ["unnest"] | ["pg_catalog", "unnest"] => Some(SrfKind::Unnest),
        ["generate_subscripts"] | ["pg_catalog", "generate_subscripts"] => Some(SrfKind::GenerateSubscripts),
        ["generate_series"] | ["pg_catalog", "generate_series"] => Some(SrfKind::GenerateSeries),
        ["_pg_expandarray"] | ["information_schema", "_pg_expandarray"] => Some(SrfKind::ExpandArray),
        ["jsonb_each"] | ["pg_catalog", "jsonb_each"] => Some(SrfKind::JsonbEach),
        ["jsonb_each_text"] | ["pg_catalog", "jsonb_each_text"] => Some(SrfKind::JsonbEachText),
        ["jsonb_array_elements"] | ["pg_catalog", "jsonb_array_elements"] => {
            Some(SrfKind::JsonbArrayElements)
        }
        ["jsonb_array_elements_text"] | ["pg_catalog", "jsonb_array_elements_text"] => {
            Some(SrfKind::JsonbArrayElementsText)
        }
        ["jsonb_object_keys"] | ["pg_catalog", "jsonb_object_keys"] => Some(SrfKind::JsonbObjectKeys),
        ["json_each"] | ["pg_catalog", "json_each"] => Some(SrfKind::JsonEach),
        ["json_each_text"] | ["pg_catalog", "json_each_text"] => Some(SrfKind::JsonEachText),
        ["json_array_elements"] | ["pg_catalog", "json_array_elements"] => Some(SrfKind::JsonArrayElements),
        ["json_array_elements_text"] | ["pg_catalog", "json_array_elements_text"] => {
            Some(SrfKind::JsonArrayElementsText)
        }
        ["json_object_keys"] | ["pg_catalog", "json_object_keys"] => Some(SrfKind::JsonObjectKeys),
        _ => None,
    }
}

/// The type of `generate_series(start, stop, step)` over timestamps, as PostgreSQL resolves
/// the call between its timestamp and timestamptz forms: timestamp when an argument is a
/// timestamp and the other a timestamp, a date or untyped; otherwise (dates, timestamptz,
/// untyped literals) timestamptz, the preferred type. None when the arguments are not those
/// of either form.
pub(super) fn time_series_type(tys: &[Ty]) -> Option<Ty> {
    let [a, b, step] = tys else { return None };
    let timeish = |t: &Ty| matches!(t, Ty::Timestamp | Ty::TimestampTz | Ty::Date | Ty::Unknown);
    if !(timeish(a) && timeish(b) && matches!(step, Ty::Interval | Ty::Unknown)) {
        return None;
    }
    // All untyped is the integer form's (or ambiguous); one typed value decides.
    if [a, b, step].iter().all(|t| **t == Ty::Unknown) {
        return None;
    }
    let ts = |x: &Ty, y: &Ty| *x == Ty::Timestamp && matches!(y, Ty::Timestamp | Ty::Date | Ty::Unknown);
    Some(if ts(a, b) || ts(b, a) {
        Ty::Timestamp
    } else {
        Ty::TimestampTz
    })
}

fn no_such(name: &str, tys: &[Ty]) -> Error {
    let t: Vec<&str> = tys.iter().map(|t| t.name()).collect();
    Error::new(
        SqlState::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", t.join(", ")),
    )
}

impl Binder<'_> {
    /// A set-returning function call: the index of its first column among the ProjectSet
    /// step's columns, and its spec's column types.
    fn bind_srf_call(
        &mut self,
        mut kind: SrfKind,
        args: &[&A::Expr],
        scope: &Scope,
    ) -> Result<(usize, Vec<Ty>)> {
        if self.in_agg || self.in_window {
            let what = if self.in_agg { "aggregate" } else { "window" };
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("{what} function calls cannot contain set-returning function calls"),
            ));
        }
        if self.srf_sink.is_none() {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("set-returning functions are not allowed in {}", self.agg_ctx),
            ));
        }
        // Arguments may not call set-returning functions themselves (PostgreSQL nests
        // ProjectSet steps for that; Augur does not).
        let sink = self.srf_sink.take();
        let saved_ctx = std::mem::replace(&mut self.agg_ctx, "arguments of a set-returning function");
        let bound = args
            .iter()
            .map(|a| self.bind_elements(a, scope))
            .collect::<Result<Vec<_>>>();
        self.srf_sink = sink;
        self.agg_ctx = saved_ctx;
        let (mut exprs, tys): (Vec<Expr>, Vec<Ty>) = bound?.into_iter().unzip();
        let name = SrfSpec::new(kind, Vec::new()).name();
        // Arrays are held in their text form: typed (array_agg), or text (the catalog's arrays).
        let arrayish = |t: Ty| matches!(t, Ty::Text | Ty::Unknown | Ty::Array(_));
        let intish = |t: Ty| t.is_int() || t == Ty::Unknown;
        let out = match kind {
            // A typed array's elements have its element type; a text-form array's are untyped.
            SrfKind::Unnest if tys.len() == 1 && arrayish(tys[0]) => vec![match tys[0] {
                Ty::Array(e) => *e,
                _ => Ty::Unknown,
            }],
            SrfKind::ExpandArray if tys.len() == 1 && arrayish(tys[0]) => {
                EXPAND_FIELDS.iter().map(|f| f.1).collect()
            }
            SrfKind::GenerateSubscripts
                if (2..=3).contains(&tys.len())
                    && arrayish(tys[0])
                    && intish(tys[1])
                    && tys.get(2).is_none_or(|&t| matches!(t, Ty::Bool | Ty::Unknown)) =>
            {
                exprs[1] = self.coerce(exprs[1].clone(), tys[1], Ty::Int4)?;
                if tys.len() == 3 {
                    exprs[2] = self.coerce(exprs[2].clone(), tys[2], Ty::Bool)?;
                }
                vec![Ty::Int4]
            }
            SrfKind::GenerateSeries if (2..=3).contains(&tys.len()) && tys.iter().all(|&t| intish(t)) => {
                let ty = if tys.contains(&Ty::Int8) {
                    Ty::Int8
                } else {
                    Ty::Int4
                };
                for (e, &t) in exprs.iter_mut().zip(&tys) {
                    *e = self.coerce(e.clone(), t, ty)?;
                }
                vec![ty]
            }
            SrfKind::GenerateSeries if time_series_type(&tys).is_some() => {
                kind = SrfKind::GenerateSeriesTime;
                let ty = time_series_type(&tys).expect("checked");
                self.time_series_args(&mut exprs, &tys, ty)?;
                vec![ty]
            }
            k if is_jsonb(k) => {
                exprs = vec![self.jsonb_srf_arg(exprs, &tys, name)?];
                match record_fields(k) {
                    Some(f) => f.iter().map(|f| f.1).collect(),
                    None => vec![jsonb_column(k).map_or(Ty::Text, |c| c.0)],
                }
            }
            _ => return Err(no_such(name, &tys)),
        };
        if matches!(
            kind,
            SrfKind::Unnest | SrfKind::ExpandArray | SrfKind::GenerateSubscripts
        ) {
            exprs[0] = self.coerce(exprs[0].clone(), tys[0], Ty::Text)?;
        }
        let spec = SrfSpec::new(kind, exprs);
        let sink = self.srf_sink.as_mut().expect("checked");
        // Identical calls advance in lockstep, so they share their columns.
        let k = match sink.iter().position(|s| *s == spec) {
            Some(k) => k,
            None => {
                sink.push(spec);
                sink.len() - 1
            }
        };
        let base = sink[..k].iter().map(SrfSpec::width).sum();
        Ok((base, out))
    }

    /// The arguments of `generate_series` over timestamps coerced to the series' type `ty`
    /// (a date to its midnight, an untyped literal read as it) and the step to interval.
    pub(super) fn time_series_args(&mut self, exprs: &mut [Expr], tys: &[Ty], ty: Ty) -> Result<()> {
        for (i, (e, &t)) in exprs.iter_mut().zip(tys).enumerate() {
            let to = if i == 2 { Ty::Interval } else { ty };
            *e = self.coerce(e.clone(), t, to)?;
        }
        Ok(())
    }

    /// The one jsonb argument of a jsonb set-returning function, or the json one of a json
    /// function (`json_each`, ...; an untyped literal read as that type).
    pub(super) fn jsonb_srf_arg(&mut self, exprs: Vec<Expr>, tys: &[Ty], name: &str) -> Result<Expr> {
        let want = if name.contains("jsonb") {
            Ty::Jsonb
        } else {
            Ty::Json
        };
        match (exprs.as_slice(), tys) {
            ([e], [t]) if *t == want || *t == Ty::Unknown => self.coerce(e.clone(), *t, want),
            _ => Err(no_such(name, tys)),
        }
    }

    /// A set-returning function called in an expression; a record (`_pg_expandarray`'s,
    /// `jsonb_each`'s) is its text form `(x,n)`.
    pub(super) fn bind_srf(&mut self, kind: SrfKind, args: &[&A::Expr], scope: &Scope) -> Result<(Expr, Ty)> {
        let (base, tys) = self.bind_srf_call(kind, args, scope)?;
        if tys.len() == 1 {
            // The step's elements are their text; a typed array's are read as its type.
            return Ok(match (kind, tys[0]) {
                (SrfKind::Unnest, t) if t != Ty::Unknown => {
                    (Expr::Cast(Box::new(Expr::Srf(base)), t, None), t)
                }
                (_, t) => (Expr::Srf(base), t),
            });
        }
        if kind != SrfKind::ExpandArray {
            // Fields quoted as PostgreSQL's record_out quotes them.
            let fields = (0..tys.len()).map(|i| Expr::Srf(base + i)).collect();
            return Ok((Expr::Func(Func::RecordOf, fields, Ty::Text), Ty::Text));
        }
        let field = |i: usize| {
            Expr::Func(
                Func::Coalesce,
                vec![
                    Expr::Cast(Box::new(Expr::Srf(base + i)), Ty::Text, None),
                    Expr::Lit(Value::Text(String::new())),
                ],
                Ty::Text,
            )
        };
        let mut e = Expr::Lit(Value::Text("(".into()));
        for i in 0..tys.len() {
            if i > 0 {
                e = Expr::Concat(Box::new(e), Box::new(Expr::Lit(Value::Text(",".into()))));
            }
            e = Expr::Concat(Box::new(e), Box::new(field(i)));
        }
        e = Expr::Concat(Box::new(e), Box::new(Expr::Lit(Value::Text(")".into()))));
        Ok((e, Ty::Text))
    }

    /// `(record).field`: of a `_pg_expandarray` call, its column; of a value holding such a
    /// record's text form (a derived table's column), the field parsed from it.
    pub(super) fn bind_field_select(
        &mut self,
        root: &A::Expr,
        field: &A::Ident,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let mut inner = root;
        while let A::Expr::Nested(e) = inner {
            inner = e;
        }
        let name = ident(field);
        let not_found = || {
            Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{name}\" not found in data type record"),
            )
        };
        let pos = EXPAND_FIELDS.iter().position(|f| f.0 == name);
        if let A::Expr::Function(f) = inner {
            if let Some((kind, fields)) = srf_kind(&f.name).and_then(|k| Some((k, record_fields(k)?))) {
                let args = plain_args(f)?;
                let (base, tys) = self.bind_srf_call(kind, &args, scope)?;
                let i = fields.iter().position(|f| f.0 == name).ok_or_else(not_found)?;
                return Ok((Expr::Srf(base + i), tys[i]));
            }
        }
        let (e, t) = self.bind_expr(inner, scope)?;
        if t != Ty::Text {
            return Err(Error::new(
                SqlState("42809"),
                format!(
                    "column notation .{name} applied to type {}, which is not a composite type",
                    t.name()
                ),
            ));
        }
        let i = pos.ok_or_else(not_found)?;
        let x = Expr::Func(
            Func::RecordField,
            vec![e, Expr::Lit(Value::Int(i as i64))],
            Ty::Unknown,
        );
        match EXPAND_FIELDS[i].1 {
            Ty::Unknown => Ok((x, Ty::Unknown)),
            ty => Ok((self.coerce(x, Ty::Unknown, ty)?, ty)),
        }
    }
}

/// Rejects what a field selection's chain holds besides one `.name`.
pub(super) fn single_field(chain: &[A::AccessExpr]) -> Option<&A::Ident> {
    match chain {
        [A::AccessExpr::Dot(A::Expr::Identifier(i))] => Some(i),
        _ => None,
    }
}

/// The arguments of a call taking plain positional ones.
fn plain_args(f: &A::Function) -> Result<Vec<&A::Expr>> {
    let A::FunctionArguments::List(l) = &f.args else {
        return Err(unsupported(format!("call {f}")));
    };
    l.args
        .iter()
        .map(|a| match a {
            A::FunctionArg::Unnamed(A::FunctionArgExpr::Expr(e)) => Ok(e),
            a => Err(unsupported(format!("argument {a} of {}", f.name))),
        })
        .collect()
}
