//! Binding function calls: aggregates (collected for the grouping step) and scalar functions,
//! with PostgreSQL's argument types.

use sqlparser::ast as A;

use super::{ident, unsupported, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Func, Ty};
use crate::sql::plan::{AggFunc, AggSpec};
use crate::types::Value;

impl Binder<'_> {
    pub(super) fn bind_function(&mut self, f: &A::Function, scope: &Scope) -> Result<(Expr, Ty)> {
        let name = match f.name.0.last() {
            Some(A::ObjectNamePart::Identifier(i)) => ident(i),
            _ => return Err(unsupported(format!("function {}", f.name))),
        };
        if !f.within_group.is_empty() {
            return Err(unsupported("WITHIN GROUP"));
        }
        let not_aggregate = || {
            Error::new(
                SqlState("42809"),
                format!("FILTER specified, but {name} is not an aggregate function"),
            )
        };
        if let (A::FunctionArguments::Subquery(q), "array", None) = (&f.args, name.as_str(), &f.over) {
            return self.bind_array_subquery(q, scope);
        }
        if let ("make_interval", None, None) = (name.as_str(), &f.over, &f.filter) {
            return self.bind_make_interval(&f.args, scope);
        }
        let (args, distinct, star, order_by) = match &f.args {
            A::FunctionArguments::None => (vec![], false, false, &[] as &[A::OrderByExpr]),
            A::FunctionArguments::Subquery(_) => return Err(unsupported("subquery as a function argument")),
            A::FunctionArguments::List(l) => {
                // An aggregate's own ORDER BY (`array_agg(x ORDER BY y)`) is the only clause.
                let mut order_by: &[A::OrderByExpr] = &[];
                for c in &l.clauses {
                    match c {
                        A::FunctionArgumentClause::OrderBy(o) if order_by.is_empty() => {
                            order_by = o.as_slice()
                        }
                        _ => return Err(unsupported(format!("clauses in {name}()"))),
                    }
                }
                let distinct = matches!(l.duplicate_treatment, Some(A::DuplicateTreatment::Distinct));
                let mut args = Vec::new();
                let mut star = false;
                for a in &l.args {
                    match a {
                        A::FunctionArg::Unnamed(A::FunctionArgExpr::Expr(e)) => args.push(e),
                        A::FunctionArg::Unnamed(A::FunctionArgExpr::Wildcard) => star = true,
                        _ => return Err(unsupported(format!("argument {a} of {name}()"))),
                    }
                }
                (args, distinct, star, order_by)
            }
        };
        if !order_by.is_empty() {
            if f.over.is_some() {
                return Err(unsupported("aggregate ORDER BY in a window function"));
            }
            let aggregate = matches!(
                name.as_str(),
                "count"
                    | "sum"
                    | "avg"
                    | "min"
                    | "max"
                    | "bool_and"
                    | "every"
                    | "bool_or"
                    | "array_agg"
                    | "jsonb_agg"
                    | "json_agg"
                    | "jsonb_object_agg"
                    | "json_object_agg"
                    | "string_agg"
            );
            if !aggregate {
                return Err(Error::new(
                    SqlState("42809"),
                    format!("ORDER BY specified, but {name} is not an aggregate function"),
                ));
            }
        }
        if let ("row_to_json", None, None) = (name.as_str(), &f.over, &f.filter) {
            return self.bind_row_to_json(&args, scope);
        }
        // to_json / to_jsonb of a row: its row_to_json object (as jsonb for to_jsonb).
        if let ("to_json" | "to_jsonb", None, None) = (name.as_str(), &f.over, &f.filter) {
            if Self::is_row_arg(&args, scope) {
                let (e, _) = self.bind_row_to_json(&args, scope)?;
                return Ok(if name == "to_jsonb" {
                    (Expr::Cast(Box::new(e), Ty::Jsonb, None), Ty::Jsonb)
                } else {
                    (e, Ty::Json)
                });
            }
        }
        if let Some(r) = self.string_srf(f, &name, &args, scope)? {
            return Ok(r);
        }
        if let ("string_agg", None) = (name.as_str(), &f.over) {
            return self.bind_string_agg(&args, distinct, order_by, f.filter.as_deref(), scope);
        }
        if let (Some(kind), None) = (super::srf::srf_kind(&f.name), &f.over) {
            if f.filter.is_some() {
                return Err(not_aggregate());
            }
            if distinct || star {
                return Err(unsupported(format!("DISTINCT or * in {name}()")));
            }
            return self.bind_srf(kind, &args, scope);
        }
        if f.over.is_some() {
            return self.bind_window(&name, f, &args, star, distinct, scope);
        }
        let agg = match name.as_str() {
            "count" if star => Some(AggFunc::CountStar),
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "avg" => Some(AggFunc::Avg),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "bool_and" | "every" => Some(AggFunc::BoolAnd),
            "bool_or" => Some(AggFunc::BoolOr),
            "array_agg" => Some(AggFunc::ArrayAgg),
            "jsonb_agg" => Some(AggFunc::JsonbAgg),
            "json_agg" => Some(AggFunc::JsonAgg),
            "jsonb_object_agg" => Some(AggFunc::JsonbObjectAgg),
            "json_object_agg" => Some(AggFunc::JsonObjectAgg),
            _ => None,
        };
        if let Some(func) = agg {
            if self.agg_sink.is_none() {
                return Err(Error::new(
                    SqlState::GROUPING_ERROR,
                    format!("aggregate functions are not allowed in {}", self.agg_ctx),
                ));
            }
            if self.in_agg {
                return Err(Error::new(
                    SqlState::GROUPING_ERROR,
                    "aggregate function calls cannot be nested",
                ));
            }
            let (arg, arg_ty) = if func == AggFunc::CountStar {
                (None, Ty::Int8)
            } else if func == AggFunc::JsonbObjectAgg {
                (Some(self.object_agg_pair(&args, scope)?), Ty::Jsonb)
            } else if func == AggFunc::JsonObjectAgg {
                (Some(self.json_object_field(&args, scope)?), Ty::Text)
            } else {
                if args.len() != 1 {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("function {name} with {} arguments does not exist", args.len()),
                    ));
                }
                self.in_agg = true;
                // array_agg keeps a varchar argument's type (`character varying[]`).
                let r = if func == AggFunc::ArrayAgg {
                    self.bind_typed(args[0], scope)
                } else {
                    self.bind_expr(args[0], scope)
                };
                self.in_agg = false;
                let (a, t) = r?;
                (Some(a), t)
            };
            // The aggregate's ORDER BY, over the input rows like its argument.
            let mut order = Vec::with_capacity(order_by.len());
            for o in order_by {
                self.in_agg = true;
                let r = self.bind_expr(&o.expr, scope);
                self.in_agg = false;
                let (e, t) = r?;
                if distinct && arg.as_ref() != Some(&e) {
                    return Err(Error::new(
                        SqlState("42P10"),
                        "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                    ));
                }
                // An array orders by its elements' values, not its text.
                let e = super::select::order_value(e, t);
                order.push(super::select::sort_key(e, &o.options));
            }
            // FILTER (WHERE ...), over the input rows like the argument.
            let filter = match f.filter.as_deref() {
                Some(w) => {
                    self.in_agg = true;
                    let r = self.bind_expr(w, scope);
                    self.in_agg = false;
                    let (e, t) = r?;
                    Some(self.require_bool(e, t, "FILTER")?)
                }
                None => None,
            };
            // array_agg of an untyped literal is text[], as in PostgreSQL.
            let (arg, arg_ty) = match (func, arg) {
                (AggFunc::ArrayAgg, Some(a)) if arg_ty == Ty::Unknown => {
                    (Some(self.coerce(a, Ty::Unknown, Ty::Text)?), Ty::Text)
                }
                // jsonb_agg aggregates each value as to_jsonb converts it.
                (AggFunc::JsonbAgg, Some(a)) => (Some(self.jsonb_of((a, arg_ty))?), Ty::Jsonb),
                // sum / avg of times are of intervals (PostgreSQL's implicit cast).
                (AggFunc::Sum | AggFunc::Avg, Some(a)) if arg_ty == Ty::Time => {
                    (Some(self.coerce(a, Ty::Time, Ty::Interval)?), Ty::Interval)
                }
                // An array argument keeps its type: json_agg puts its elements on lines of
                // their own.
                (AggFunc::JsonAgg, Some(a)) => {
                    let t = if matches!(arg_ty, Ty::Array(_)) {
                        arg_ty
                    } else {
                        Ty::Json
                    };
                    (Some(self.json_of((a, arg_ty))?), t)
                }
                (_, a) => (a, arg_ty),
            };
            let bad = || {
                Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", arg_ty.name()),
                )
            };
            let ty = match func {
                AggFunc::CountStar | AggFunc::Count => Ty::Int8,
                // PostgreSQL: sum of int2/int4 is bigint; sum(bigint), sum(numeric),
                // avg(numeric) and avg of integers are numeric.
                AggFunc::Sum if arg_ty == Ty::Int8 || arg_ty == Ty::Numeric => Ty::Numeric,
                AggFunc::Sum if arg_ty.is_int() => Ty::Int8,
                AggFunc::Sum | AggFunc::Avg if arg_ty == Ty::Interval => Ty::Interval,
                AggFunc::Avg if arg_ty.is_int() || arg_ty == Ty::Numeric => Ty::Numeric,
                AggFunc::Sum | AggFunc::Avg if arg_ty.is_num() => Ty::Float8,
                AggFunc::Sum | AggFunc::Avg => return Err(bad()),
                AggFunc::Min | AggFunc::Max if arg_ty == Ty::Unknown => Ty::Text,
                AggFunc::Min | AggFunc::Max => arg_ty,
                AggFunc::BoolAnd | AggFunc::BoolOr if arg_ty == Ty::Bool => Ty::Bool,
                AggFunc::BoolAnd | AggFunc::BoolOr => return Err(bad()),
                AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => Ty::Jsonb,
                AggFunc::JsonAgg | AggFunc::JsonObjectAgg => Ty::Json,
                AggFunc::ArrayAgg => arg_ty.array().ok_or_else(|| {
                    Error::unsupported(format!(
                        "array_agg of {} values (an array of more than one dimension) is not supported by Augur",
                        arg_ty.name()
                    ))
                })?,
            };
            let sink = self.agg_sink.as_mut().expect("checked");
            let spec = AggSpec {
                func,
                arg,
                distinct,
                arg_ty,
                order,
                filter,
            };
            let k = match sink.iter().position(|s| *s == spec) {
                Some(k) => k,
                None => {
                    sink.push(spec);
                    sink.len() - 1
                }
            };
            return Ok((Expr::Agg(k), ty));
        }
        if f.filter.is_some() {
            return Err(not_aggregate());
        }
        if star || distinct {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}(*) does not exist"),
            ));
        }
        // These give back their arguments' type, varchar included; other functions take a
        // varchar argument as text.
        let typed = matches!(
            name.as_str(),
            "pg_typeof" | "coalesce" | "greatest" | "least" | "array_cat" | "array_append" | "array_prepend"
        );
        let mut bound = Vec::new();
        for a in args {
            bound.push(if typed {
                self.bind_typed(a, scope)?
            } else {
                self.bind_expr(a, scope)?
            });
        }
        self.scalar_func(&name, bound)
    }

    /// `string_agg(x, sep [ORDER BY ...]) [FILTER (WHERE ...)]`: bound as
    /// `array_to_string(array_agg(x [ORDER BY ...]) [FILTER (WHERE ...)], sep)`, which skips
    /// NULL values and is NULL over no rows, as string_agg is.
    fn bind_string_agg(
        &mut self,
        args: &[&A::Expr],
        distinct: bool,
        order_by: &[A::OrderByExpr],
        filter: Option<&A::Expr>,
        scope: &Scope,
    ) -> Result<(Expr, Ty)> {
        let [x, sep] = args else {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function string_agg with {} arguments does not exist", args.len()),
            ));
        };
        let order = if order_by.is_empty() {
            String::new()
        } else {
            let keys: Vec<String> = order_by.iter().map(ToString::to_string).collect();
            format!(" ORDER BY {}", keys.join(", "))
        };
        let d = if distinct { "DISTINCT " } else { "" };
        let filter = filter.map_or(String::new(), |w| format!(" FILTER (WHERE {w})"));
        // A character(n) value is aggregated as text, without its trailing blanks, as
        // PostgreSQL's string_agg(text, text) receives it.
        self.in_agg = true;
        let probe = self.bind_expr(x, scope);
        self.in_agg = false;
        let x = match probe?.1 {
            Ty::Bpchar => format!("CAST(({x}) AS text)"),
            _ => x.to_string(),
        };
        let sql = format!("array_to_string(array_agg({d}{x}{order}){filter}, {sep})");
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let e = sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(&sql)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| Error::syntax(format!("string_agg: {e}")))?;
        self.bind_expr(&e, scope)
    }

    /// `ARRAY(subquery)`: the subquery's one column as an array, in the subquery's row order,
    /// empty (not NULL) without rows; bound as the scalar subquery
    /// `(SELECT coalesce(array_agg(x), '{}') FROM (subquery) AS a(x))`, which may read the
    /// enclosing query's row as any subquery may.
    fn bind_array_subquery(&mut self, q: &A::Query, scope: &Scope) -> Result<(Expr, Ty)> {
        if let A::SetExpr::Select(sel) = q.body.as_ref() {
            let plain = sel.projection.iter().all(|p| {
                matches!(
                    p,
                    A::SelectItem::UnnamedExpr(_) | A::SelectItem::ExprWithAlias { .. }
                )
            });
            if plain && sel.projection.len() != 1 {
                return Err(Error::syntax("subquery must return only one column"));
            }
        }
        let sql = format!("(SELECT coalesce(array_agg(augur_array.x), '{{}}') FROM ({q}) AS augur_array(x))");
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let e = sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(&sql)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| Error::syntax(format!("ARRAY({q}): {e}")))?;
        self.bind_expr(&e, scope)
    }

    /// `to_jsonb(e)` of a bound argument: jsonb as it is, an untyped literal as text, an array
    /// with its element type for the conversion of its elements.
    /// The argument of `jsonb_object_agg(key, value)`: the pair as a jsonb array of both
    /// converted by `to_jsonb` (a NULL key stays JSON null, 22023 when aggregated). A key of a
    /// type jsonb cannot hold as an object key (jsonb, an array) is 22023, as PostgreSQL's
    /// "key value must be scalar".
    fn object_agg_pair(&mut self, args: &[&A::Expr], scope: &Scope) -> Result<Expr> {
        let (key, value) = self.agg_key_value("jsonb_object_agg", args, scope)?;
        if matches!(key.1, Ty::Jsonb | Ty::Array(_)) {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                "key value must be scalar, not array, composite, or json",
            ));
        }
        let pair = vec![self.jsonb_of(key)?, self.jsonb_of(value)?];
        Ok(Expr::Func(Func::JsonBuildArray, pair, Ty::Jsonb))
    }

    /// The argument of `json_object_agg(key, value)`: one field, `"key" : value`, of the key's
    /// and the value's `to_json` text (see [`Func::JsonObjectField`]).
    fn json_object_field(&mut self, args: &[&A::Expr], scope: &Scope) -> Result<Expr> {
        let (key, value) = self.agg_key_value("json_object_agg", args, scope)?;
        let bad_key = matches!(key.1, Ty::Json | Ty::Jsonb | Ty::Array(_));
        let field = vec![
            self.json_of(key)?,
            self.json_of(value)?,
            Expr::Lit(Value::Bool(bad_key)),
        ];
        Ok(Expr::Func(Func::JsonObjectField, field, Ty::Text))
    }

    /// The two arguments of aggregate `name(key, value)`, bound inside the aggregate.
    fn agg_key_value(
        &mut self,
        name: &str,
        args: &[&A::Expr],
        scope: &Scope,
    ) -> Result<((Expr, Ty), (Expr, Ty))> {
        if args.len() != 2 {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name} with {} arguments does not exist", args.len()),
            ));
        }
        self.in_agg = true;
        let key = self.bind_expr(args[0], scope);
        let value = self.bind_expr(args[1], scope);
        self.in_agg = false;
        Ok((key?, value?))
    }

    /// `to_json(e)` of a bound argument: json as it is, anything else written as PostgreSQL's
    /// `to_json` writes it (an untyped literal as text).
    pub(super) fn json_of(&mut self, arg: (Expr, Ty)) -> Result<Expr> {
        self.converted(arg, Func::ToJson, Ty::Json)
    }

    /// `to_jsonb(e)` of a bound argument, as [`Binder::json_of`] for jsonb.
    fn jsonb_of(&mut self, arg: (Expr, Ty)) -> Result<Expr> {
        self.converted(arg, Func::ToJsonb, Ty::Jsonb)
    }

    /// `e` converted to `ty` (json or jsonb) by `to` (`to_json` / `to_jsonb`): as it is when
    /// it has that type, an untyped literal as text, an array with its element type's name.
    fn converted(&mut self, (e, t): (Expr, Ty), to: Func, ty: Ty) -> Result<Expr> {
        Ok(match t {
            t if t == ty => e,
            Ty::Unknown => {
                let e = self.coerce(e, t, Ty::Text)?;
                Expr::Func(to, vec![e], ty)
            }
            Ty::Array(el) => Expr::Func(to, vec![e, Expr::Lit(Value::Text(el.to_dt().sql_name()))], ty),
            _ => Expr::Func(to, vec![e], ty),
        })
    }

    /// The element type of an array argument of function `name` (42804 for an untyped literal,
    /// as PostgreSQL cannot tell its type either; 42883 for a value that is no array).
    fn array_arg(&self, (_, t): &(Expr, Ty), name: &str) -> Result<Ty> {
        match t {
            Ty::Array(e) => Ok(**e),
            Ty::Unknown => Err(Error::mismatch(format!(
                "could not determine polymorphic type because input has type unknown (in {name})"
            ))),
            t => Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}({}, ...) does not exist", t.name()),
            )),
        }
    }

    pub(super) fn scalar_func(&mut self, name: &str, mut args: Vec<(Expr, Ty)>) -> Result<(Expr, Ty)> {
        if let Some(r) = self.catalog_func(name, &args)? {
            return Ok(r);
        }
        if let Some(r) = self.datetime_func(name, &mut args)? {
            return Ok(r);
        }
        if let Some(r) = self.string_func(name, &args)? {
            return Ok(r);
        }
        let types: Vec<&str> = args.iter().map(|a| a.1.name()).collect();
        let undefined = || {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", types.join(", ")),
            )
        };
        let n = args.len();
        let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown | Ty::Bpchar);
        let intish = |t: Ty| t.is_int() || t == Ty::Unknown;
        let lit = |v: Value, t: Ty| Ok((Expr::Lit(v), t));
        macro_rules! text_args {
            ($($i:expr),*) => {{
                $( if !texty(args[$i].1) { return Err(undefined()); } )*
                $( let (e, t) = args[$i].clone(); args[$i] = (self.coerce(e, t, Ty::Text)?, Ty::Text); )*
            }};
        }
        macro_rules! int_args {
            ($($i:expr),*) => {{
                $( if !intish(args[$i].1) { return Err(undefined()); } )*
                $( let (e, t) = args[$i].clone(); let to = if t == Ty::Unknown { Ty::Int4 } else { t }; args[$i] = (self.coerce(e, t, to)?, to); )*
            }};
        }
        let exprs = |args: Vec<(Expr, Ty)>| args.into_iter().map(|a| a.0).collect::<Vec<_>>();
        let (func, ty) = match (name, n) {
            ("abs", 1) => {
                if !args[0].1.is_num() {
                    return Err(undefined());
                }
                (Func::Abs, args[0].1)
            }
            ("lower", 1) | ("upper", 1) => {
                text_args!(0);
                (if name == "lower" { Func::Lower } else { Func::Upper }, Ty::Text)
            }
            ("length" | "char_length" | "character_length", 1) => {
                if args[0].1 != Ty::Bytea {
                    text_args!(0);
                }
                (Func::Length, Ty::Int4)
            }
            ("octet_length", 1) => {
                // character(n) counts its blanks (PostgreSQL's bpcharoctetlen).
                if !matches!(args[0].1, Ty::Bytea | Ty::Bpchar) {
                    text_args!(0);
                }
                (Func::OctetLength, Ty::Int4)
            }
            ("substr" | "substring", 2 | 3) => {
                text_args!(0);
                int_args!(1);
                if n == 3 {
                    int_args!(2);
                }
                (Func::Substr, Ty::Text)
            }
            ("left" | "right", 2) => {
                text_args!(0);
                int_args!(1);
                (if name == "left" { Func::Left } else { Func::Right }, Ty::Text)
            }
            ("btrim" | "trim" | "ltrim" | "rtrim", 1 | 2) => {
                text_args!(0);
                if n == 2 {
                    text_args!(1);
                }
                (
                    match name {
                        "ltrim" => Func::Ltrim,
                        "rtrim" => Func::Rtrim,
                        _ => Func::Trim,
                    },
                    Ty::Text,
                )
            }
            ("replace", 3) => {
                text_args!(0, 1, 2);
                (Func::Replace, Ty::Text)
            }
            ("strpos_rev", 2) => {
                text_args!(0, 1);
                (Func::Position, Ty::Int4)
            }
            ("strpos", 2) => {
                text_args!(0, 1);
                args.swap(0, 1);
                (Func::Position, Ty::Int4)
            }
            ("concat", _) => {
                for a in args.iter_mut() {
                    if a.1 == Ty::Unknown {
                        a.0 = self.coerce(a.0.clone(), Ty::Unknown, Ty::Text)?;
                    }
                }
                (Func::Concat, Ty::Text)
            }
            ("coalesce" | "greatest" | "least", 1..) => {
                let what = name.to_uppercase();
                let (es, ty) = self.unify_all_or_text(args, &what)?;
                let f = match name {
                    "coalesce" => Func::Coalesce,
                    "greatest" => Func::Greatest,
                    _ => Func::Least,
                };
                return Ok((Expr::Func(f, es, ty), ty));
            }
            ("nullif", 2) => {
                let a = args.remove(0);
                let b = args.remove(0);
                let ty = if a.1 == Ty::Unknown {
                    if b.1 == Ty::Unknown {
                        Ty::Text
                    } else {
                        b.1
                    }
                } else {
                    a.1
                };
                let (x, y) = self.comparable(a, b, "=")?;
                return Ok((Expr::Func(Func::Nullif, vec![x, y], ty), ty));
            }
            // round(numeric[, int]), floor / ceil (numeric): numeric, as PostgreSQL.
            ("round", 1 | 2) if args[0].1 == Ty::Numeric => {
                if n == 2 {
                    int_args!(1);
                }
                (Func::Round, Ty::Numeric)
            }
            ("floor" | "ceil" | "ceiling", 1) if args[0].1 == Ty::Numeric => (
                if name == "floor" { Func::Floor } else { Func::Ceil },
                Ty::Numeric,
            ),
            // sqrt, exp, ln, log, power: numeric when an argument is numeric and none is
            // float8 (PostgreSQL's overload resolution), else float8; log(b, x) exists for
            // numeric only.
            ("sqrt" | "exp" | "ln" | "log", 1) | ("power" | "pow" | "log", 2) => {
                let tys: Vec<Ty> = args.iter().map(|a| a.1).collect();
                if tys.iter().any(|t| !(t.is_num() || *t == Ty::Unknown)) {
                    return Err(undefined());
                }
                let float = tys.contains(&Ty::Float8);
                let to = if n == 2 && name == "log" {
                    if float {
                        return Err(undefined());
                    }
                    Ty::Numeric
                } else if !float && tys.contains(&Ty::Numeric) {
                    Ty::Numeric
                } else {
                    Ty::Float8
                };
                for a in args.iter_mut() {
                    let (e, t) = a.clone();
                    *a = (self.coerce(e, t, to)?, to);
                }
                let f = match name {
                    "sqrt" => Func::Sqrt,
                    "exp" => Func::Exp,
                    "ln" => Func::Ln,
                    "log" => Func::Log,
                    _ => Func::Power,
                };
                (f, to)
            }
            ("round", 1 | 2) | ("floor", 1) | ("ceil" | "ceiling", 1) | ("mod", 2) => {
                for a in args.iter_mut() {
                    let (e, t) = a.clone();
                    if !(t.is_num() || t == Ty::Unknown) {
                        return Err(undefined());
                    }
                    let to = if t == Ty::Unknown { Ty::Float8 } else { t };
                    *a = (self.coerce(e, t, to)?, to);
                }
                match name {
                    "round" => (Func::Round, Ty::Float8),
                    "floor" => (
                        Func::Floor,
                        if args[0].1.is_int() { args[0].1 } else { Ty::Float8 },
                    ),
                    "ceil" | "ceiling" => (
                        Func::Ceil,
                        if args[0].1.is_int() { args[0].1 } else { Ty::Float8 },
                    ),
                    _ => {
                        let ty = Ty::unify(args[0].1, args[1].1).unwrap_or(Ty::Float8);
                        (Func::Mod, ty)
                    }
                }
            }
            ("random", 0) => {
                self.volatile_calls += 1;
                (Func::Random, Ty::Float8)
            }
            ("gen_random_uuid", 0) => {
                self.volatile_calls += 1;
                (Func::GenRandomUuid, Ty::Uuid)
            }
            ("clock_timestamp", 0) => {
                self.volatile_calls += 1;
                (Func::ClockTimestamp, Ty::TimestampTz)
            }
            ("nextval" | "currval", 1) | ("setval", 2 | 3) => {
                self.volatile_calls += 1;
                // PostgreSQL declares the sequence a regclass: an OID (`'s'::regclass`, as the
                // catalogs print a serial column's default) names the sequence it is the OID of.
                if args[0].1.is_int() {
                    let (e, t) = args[0].clone();
                    let oid = self.coerce(e, t, Ty::Int8)?;
                    args[0] = (self.oid_name("regclass", oid)?, Ty::Text);
                }
                let want = [Ty::Text, Ty::Int8, Ty::Bool];
                for (a, to) in args.iter_mut().zip(want) {
                    let (e, t) = a.clone();
                    let ok = t == to || t == Ty::Unknown || (to == Ty::Int8 && t.is_int());
                    if !ok {
                        return Err(undefined());
                    }
                    *a = (self.coerce(e, t, to)?, to);
                }
                (
                    match name {
                        "nextval" => Func::NextVal,
                        "currval" => Func::CurrVal,
                        _ => Func::SetVal,
                    },
                    Ty::Int8,
                )
            }
            ("now" | "current_timestamp" | "transaction_timestamp", 0) => (Func::Now, Ty::TimestampTz),
            ("statement_timestamp", 0) => (Func::StatementTimestamp, Ty::TimestampTz),
            ("localtimestamp", 0) => (Func::Now, Ty::Timestamp),
            ("localtime", 0) => (Func::Now, Ty::Time),
            ("current_date", 0) => (Func::Now, Ty::Date),
            ("version", 0) => return lit(Value::Text(crate::sql::VERSION_STRING.into()), Ty::Text),
            ("current_database", 0) | ("current_catalog", 0) => {
                return lit(Value::Text("augur".into()), Ty::Text)
            }
            ("current_schema", 0) => return lit(Value::Text("public".into()), Ty::Text),
            ("current_user" | "session_user" | "user" | "current_role", 0) => {
                return lit(Value::Text("augur".into()), Ty::Text)
            }
            ("pg_backend_pid", 0) => {
                let pid = self.backend_pid.map_or(std::process::id() as i64, i64::from);
                return lit(Value::Int(pid), Ty::Int4);
            }
            ("current_setting", 1) => {
                let Expr::Lit(Value::Text(s)) = &args[0].0 else {
                    return Err(undefined());
                };
                let v = self
                    .settings
                    .and_then(|m| m.get(&s.to_lowercase()).cloned())
                    .ok_or_else(|| {
                        Error::new(
                            SqlState::UNDEFINED_OBJECT,
                            format!("unrecognized configuration parameter \"{s}\""),
                        )
                    })?;
                return lit(Value::Text(v), Ty::Text);
            }
            ("array_lower" | "array_upper" | "array_length", 2) | ("cardinality", 1) => {
                self.array_arg(&args[0], name)?;
                if n == 2 {
                    int_args!(1);
                }
                let f = match name {
                    "array_lower" => Func::ArrayLower,
                    "array_upper" => Func::ArrayUpper,
                    "array_length" => Func::ArrayLength,
                    _ => Func::Cardinality,
                };
                (f, Ty::Int4)
            }
            ("to_jsonb", 1) => {
                if args[0].1 == Ty::Unknown {
                    return Err(Error::mismatch(
                        "could not determine polymorphic type because input has type unknown",
                    ));
                }
                let e = self.jsonb_of(args[0].clone())?;
                return Ok((e, Ty::Jsonb));
            }
            ("to_json", 1) => {
                let e = self.json_of(args[0].clone())?;
                return Ok((e, Ty::Json));
            }
            ("json_build_array", _) => {
                // PostgreSQL's json output form: `[1, "a", null]`.
                let lit_text = |s: &str| Expr::Lit(Value::Text(s.into()));
                let mut parts = vec![lit_text("[")];
                for (i, a) in args.into_iter().enumerate() {
                    if i > 0 {
                        parts.push(lit_text(", "));
                    }
                    parts.push(self.json_value(a)?);
                }
                parts.push(lit_text("]"));
                let text = Expr::Func(Func::Concat, parts, Ty::Text);
                return Ok((Expr::Cast(Box::new(text), Ty::Json, None), Ty::Json));
            }
            ("jsonb_build_array", _) => {
                let mut items = Vec::with_capacity(n);
                for a in args {
                    items.push(self.jsonb_of(a)?);
                }
                return Ok((Expr::Func(Func::JsonBuildArray, items, Ty::Jsonb), Ty::Jsonb));
            }
            ("jsonb_build_object", _) => {
                if !n.is_multiple_of(2) {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "argument list must have even number of elements",
                    ));
                }
                let mut items = Vec::with_capacity(n);
                for (i, (e, t)) in args.into_iter().enumerate() {
                    items.push(if i % 2 == 0 {
                        // Keys are text (any scalar by its text output).
                        if matches!(t, Ty::Jsonb | Ty::Array(_)) {
                            return Err(Error::new(
                                SqlState::INVALID_PARAMETER_VALUE,
                                "key value must be scalar, not array, composite, or json",
                            ));
                        }
                        self.cast_expr(e, t, Ty::Text, None)?.0
                    } else {
                        self.jsonb_of((e, t))?
                    });
                }
                return Ok((Expr::Func(Func::JsonBuildObject, items, Ty::Jsonb), Ty::Jsonb));
            }
            ("json_typeof" | "json_array_length" | "jsonb_typeof" | "jsonb_array_length", 1) => {
                // Of json or jsonb (by the name), an untyped literal read as it.
                let want = if name.starts_with("jsonb") {
                    Ty::Jsonb
                } else {
                    Ty::Json
                };
                let (e, t) = args[0].clone();
                if t != want && t != Ty::Unknown {
                    return Err(undefined());
                }
                args[0] = (self.coerce(e, t, want)?, want);
                if name.ends_with("typeof") {
                    (Func::JsonTypeof, Ty::Text)
                } else {
                    (Func::JsonArrayLength, Ty::Int4)
                }
            }
            ("quote_ident", 1) => {
                text_args!(0);
                (Func::QuoteIdent, Ty::Text)
            }
            ("array_cat" | "array_append" | "array_prepend", 2) => {
                let (a, b) = (args[0].clone(), args[1].clone());
                let missing = format!("function {name}({{l}}, {{r}}) does not exist");
                let array = |t: Ty| matches!(t, Ty::Array(_));
                return match name {
                    "array_append" if array(a.1) => self.array_append(a, b, &missing),
                    "array_prepend" if array(b.1) => self.array_prepend(a, b, &missing),
                    "array_cat"
                        if (array(a.1) || array(b.1))
                            && [a.1, b.1].iter().all(|t| array(*t) || *t == Ty::Unknown) =>
                    {
                        self.array_cat(a, b).map_err(|_| undefined())
                    }
                    _ => Err(undefined()),
                };
            }
            ("array_position" | "array_positions", 2) => {
                let elem = self.array_arg(&args[0], name)?;
                let (e, t) = args[1].clone();
                let (e, _) = self.comparable((e, t), (Expr::Lit(Value::Null), elem), "=")?;
                args[1] = (self.coerce(e, t, elem)?, elem);
                // Bound with the array's type, by which the elements are read and compared.
                let arr = args[0].1;
                return Ok(if name == "array_position" {
                    (Expr::Func(Func::ArrayPosition, exprs(args), arr), Ty::Int4)
                } else {
                    let ints = Ty::Int4.array().unwrap_or(Ty::Text);
                    (Expr::Func(Func::ArrayPositions, exprs(args), arr), ints)
                });
            }
            _ => return Err(undefined()),
        };
        Ok((Expr::Func(func, exprs(args), ty), ty))
    }
}
