//! Binding `row_to_json(record[, pretty])`: a table's row (`row_to_json(t)`) or a
//! `ROW(...)` as a json object written as PostgreSQL writes it (`{"a":1,"b":"x"}`).

use sqlparser::ast as A;

use super::catalog::{case_of, lit_text};
use super::{ident, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Func, Ty};
use crate::types::{jsonb, Value};

impl Binder<'_> {
    /// `row_to_json(r)` / `row_to_json(r, pretty)`: `r` is a table (or subquery) name of the
    /// scope, its columns the fields, or `ROW(a, b, ...)`, fields `f1`, `f2`, ...; with
    /// `pretty` true the fields are on lines of their own.
    pub(super) fn bind_row_to_json(&mut self, args: &[&A::Expr], scope: &Scope) -> Result<(Expr, Ty)> {
        let mut fields: Vec<(String, (Expr, Ty))> = Vec::new();
        // A NOT NULL column of a stored table: NULL there marks the row an outer join added
        // for the table's missing side, whose row PostgreSQL passes as NULL.
        let mut marker: Option<Expr> = None;
        let row_items = match args.first() {
            Some(A::Expr::Function(f)) if f.name.to_string().eq_ignore_ascii_case("row") => match &f.args {
                A::FunctionArguments::List(l) => Some(
                    l.args
                        .iter()
                        .map(|a| match a {
                            A::FunctionArg::Unnamed(A::FunctionArgExpr::Expr(e)) => Ok(e),
                            _ => Err(super::unsupported(format!("argument {a} of ROW()"))),
                        })
                        .collect::<Result<Vec<_>>>()?,
                ),
                _ => Some(vec![]),
            },
            Some(A::Expr::Tuple(items)) => Some(items.iter().collect()),
            _ => None,
        };
        match (row_items, args.first()) {
            (Some(items), _) => {
                for (i, e) in items.into_iter().enumerate() {
                    fields.push((format!("f{}", i + 1), self.bind_expr(e, scope)?));
                }
            }
            (None, Some(A::Expr::Identifier(t)))
                if scope.tables.contains(&ident(t)) && !scope.cols.iter().any(|c| c.name == ident(t)) =>
            {
                let table = ident(t);
                let names: Vec<(String, bool)> = scope
                    .cols
                    .iter()
                    .filter(|c| c.table.as_deref() == Some(table.as_str()))
                    .map(|c| (c.name.clone(), c.not_null))
                    .collect();
                for (name, not_null) in names {
                    let col =
                        A::Expr::CompoundIdentifier(vec![t.clone(), A::Ident::with_quote('"', name.clone())]);
                    let bound = self.bind_expr(&col, scope)?;
                    if not_null && marker.is_none() {
                        marker = Some(bound.0.clone());
                    }
                    fields.push((name, bound));
                }
            }
            (None, Some(e)) => {
                let (_, t) = self.bind_expr(e, scope)?;
                return Err(no_such(&[t.name()], args.len()));
            }
            (None, None) => return Err(no_such(&[], 0)),
        }
        let object = |binder: &mut Self, sep: &str| -> Result<Expr> {
            let mut parts = vec![lit_text("{")];
            for (i, (name, v)) in fields.iter().enumerate() {
                let mut key = String::new();
                if i > 0 {
                    key.push_str(sep);
                }
                jsonb::write_string(name, &mut key);
                key.push(':');
                parts.push(lit_text(key));
                parts.push(binder.json_value(v.clone())?);
            }
            parts.push(lit_text("}"));
            let text = Expr::Func(Func::Concat, parts, Ty::Text);
            Ok(Expr::Cast(Box::new(text), Ty::Json, None))
        };
        let e = match args {
            [_] => object(self, ",")?,
            [_, p] => {
                let (p, pt) = self.bind_expr(p, scope)?;
                if !matches!(pt, Ty::Bool | Ty::Unknown) {
                    return Err(no_such(&["record", pt.name()], 2));
                }
                let p = self.coerce(p, pt, Ty::Bool)?;
                let whens = vec![
                    (Expr::Lit(Value::Bool(true)), object(self, ",\n ")?),
                    (Expr::Lit(Value::Bool(false)), object(self, ",")?),
                ];
                case_of(p, whens, Expr::Lit(Value::Null))
            }
            _ => return Err(no_such(&[], args.len())),
        };
        let e = match marker {
            Some(m) => case_of(
                Expr::IsNull(Box::new(m), false),
                vec![(Expr::Lit(Value::Bool(true)), Expr::Lit(Value::Null))],
                e,
            ),
            None => e,
        };
        Ok((e, Ty::Json))
    }

    /// Whether the one argument of `to_json(x)` / `to_jsonb(x)` is a row: `ROW(...)`, a
    /// parenthesized list, or a table (or subquery) name of the scope that names no column.
    pub(super) fn is_row_arg(args: &[&A::Expr], scope: &Scope) -> bool {
        match args {
            [A::Expr::Function(f)] => f.name.to_string().eq_ignore_ascii_case("row"),
            [A::Expr::Tuple(_)] => true,
            [A::Expr::Identifier(t)] => {
                scope.tables.contains(&ident(t)) && !scope.cols.iter().any(|c| c.name == ident(t))
            }
            _ => false,
        }
    }
}

/// 42883 for a call of row_to_json no function matches.
fn no_such(tys: &[&str], n: usize) -> Error {
    let shown = if tys.len() == n {
        tys.join(", ")
    } else {
        format!("{n} arguments")
    };
    Error::new(
        SqlState::UNDEFINED_FUNCTION,
        format!("function row_to_json({shown}) does not exist"),
    )
}
