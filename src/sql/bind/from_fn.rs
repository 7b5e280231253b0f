//! Functions in FROM run as a set-returning step: jsonb's (`jsonb_each`, `jsonb_array_elements`,
//! ...), and any such function whose arguments read the FROM items to its left (PostgreSQL
//! makes a function in FROM implicitly LATERAL): a nested loop evaluating it once per left row.

use sqlparser::ast as A;

use super::catalog::lit_int;
use super::from::derived_scope;
use super::srf::{jsonb_column, record_fields};
use super::{ident, unsupported, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Ty};
use crate::sql::plan::srf::{SrfKind, SrfSpec};
use crate::sql::plan::{Column, Plan};
use crate::types::Value;

/// A FROM item that is a function call (`f(...)`, `LATERAL f(...)`, `unnest(...)`), the only
/// kind whose arguments may read the items to its left.
pub(super) fn is_function(f: &A::TableFactor) -> bool {
    matches!(
        f,
        A::TableFactor::Table { args: Some(_), .. }
            | A::TableFactor::Function { .. }
            | A::TableFactor::UNNEST { .. }
    )
}

/// The set-returning step of a function bound in FROM: its plan is that step over one empty
/// row, perhaps under a projection of the step's columns.
fn unit_step(plan: &Plan) -> Option<&[SrfSpec]> {
    let p = match plan {
        Plan::Project(p, _) => p,
        p => p,
    };
    match p {
        Plan::ProjectSet { input, srfs } if matches!(input.as_ref(), Plan::Values(v) if v.len() == 1 && v[0].is_empty()) => {
            Some(srfs)
        }
        _ => None,
    }
}

/// Whether a function bound in FROM reads columns of the rows to its left.
pub(super) fn reads_left(plan: &Plan) -> bool {
    unit_step(plan).is_some_and(|s| s.iter().any(|s| s.args.iter().any(|a| !a.columns().is_empty())))
}

/// The function's step run over `left` (of `lw` columns) instead of one empty row: each left
/// row followed by the function's columns, once per row the function returns for it; with
/// `outer`, a left row it returns none for is kept once, with NULLs.
pub(super) fn graft(plan: Plan, left: Plan, lw: usize, outer: bool) -> Result<Plan> {
    let (set, post) = match plan {
        Plan::Project(p, post) => (*p, Some(post)),
        p => (p, None),
    };
    let Plan::ProjectSet { mut srfs, .. } = set else {
        return Err(Error::internal(
            "a lateral function without its set-returning step",
        ));
    };
    for s in &mut srfs {
        s.outer = outer;
    }
    let set = Plan::ProjectSet {
        input: Box::new(left),
        srfs,
    };
    Ok(match post {
        None => set,
        Some(post) => {
            let mut out: Vec<Expr> = (0..lw).map(Expr::Col).collect();
            for e in post {
                out.push(e.rewrite(&mut |x| {
                    Ok(match x {
                        Expr::Col(i) => Expr::Col(i + lw),
                        x => x,
                    })
                })?);
            }
            Plan::Project(Box::new(set), out)
        }
    })
}

impl Binder<'_> {
    /// A FROM item bound after others, whose columns (`left`) a function's arguments may read:
    /// its plan and scope, and whether it reads them.
    pub(super) fn bind_lateral_factor(
        &mut self,
        f: &A::TableFactor,
        left: &Scope,
    ) -> Result<(Plan, Scope, bool)> {
        self.lateral = Some(left.clone());
        let r = self.bind_factor(f);
        self.lateral = None;
        let (plan, scope) = r?;
        let reads = reads_left(&plan);
        Ok((plan, scope, reads))
    }

    /// The scope a function in FROM binds its arguments in: the items to its left when it is
    /// bound by [`Binder::bind_lateral_factor`], else none.
    pub(super) fn take_lateral(&mut self) -> Scope {
        self.lateral.take().unwrap_or_default()
    }

    /// A jsonb set-returning function in FROM: its columns named as PostgreSQL names them
    /// (`key`, `value` of jsonb_each, `value` of jsonb_array_elements, the alias or the
    /// function's name for jsonb_object_keys), `WITH ORDINALITY` adding `ordinality`.
    pub(super) fn jsonb_in_from(
        &mut self,
        kind: SrfKind,
        args: &[&A::Expr],
        scope: &Scope,
        alias: Option<&A::TableAlias>,
        ordinality: bool,
    ) -> Result<(Plan, Scope)> {
        let name = SrfSpec::new(kind, Vec::new()).name();
        let mut exprs = Vec::new();
        let mut tys = Vec::new();
        for a in args {
            let (e, t) = self.bind_expr(a, scope)?;
            exprs.push(e);
            tys.push(t);
        }
        let x = self.jsonb_srf_arg(exprs, &tys, name)?;
        let mut spec = SrfSpec::new(kind, vec![x]);
        spec.ordinality = ordinality;
        let a = alias.map_or(name.to_string(), |a| ident(&a.name));
        let mut cols: Vec<Column> = match (record_fields(kind), jsonb_column(kind)) {
            (Some(fields), _) => fields
                .iter()
                .map(|(n, ty)| Column::new(n.to_string(), *ty))
                .collect(),
            (None, Some((ty, out))) => vec![Column::new(out.map_or_else(|| a.clone(), str::to_string), ty)],
            (None, None) => return Err(Error::internal(format!("{name} is not a jsonb function"))),
        };
        if ordinality {
            cols.push(Column::new("ordinality".into(), Ty::Int8));
        }
        if let Some(al) = alias {
            if al.columns.len() > cols.len() {
                return Err(Error::new(
                    SqlState("42P10"),
                    format!(
                        "table \"{a}\" has {} columns available but {} columns specified",
                        cols.len(),
                        al.columns.len()
                    ),
                ));
            }
        }
        let plan = over_one_row(spec);
        Ok((plan, derived_scope(&a, &cols, alias)))
    }
}

impl Binder<'_> {
    /// A function in FROM: `generate_series(start, stop [, step])` of integers (of constants
    /// as pgjdbc's key queries use it: `generate_series(1, 32) pos(n)`), `unnest`, jsonb's
    /// set-returning functions (`from_fn.rs`); the arguments may read the items to its left.
    pub(super) fn table_function(
        &mut self,
        name: &A::ObjectName,
        args: &[A::FunctionArg],
        alias: Option<&A::TableAlias>,
        ordinality: bool,
    ) -> Result<(Plan, Scope)> {
        let left = self.take_lateral();
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|p| match p {
                A::ObjectNamePart::Identifier(i) => Some(ident(i)),
                _ => None,
            })
            .collect();
        let path: Vec<&str> = parts.iter().map(String::as_str).collect();
        let fname = match path.as_slice() {
            [f] | ["pg_catalog", f] => *f,
            _ => return Err(unsupported(format!("table function {name}"))),
        };
        let mut exprs = Vec::new();
        for a in args {
            match a {
                A::FunctionArg::Unnamed(A::FunctionArgExpr::Expr(e)) => exprs.push(e),
                _ => return Err(unsupported(format!("argument {a} of {fname}"))),
            }
        }
        if let Some(kind) = super::srf::srf_kind(name).filter(|&k| super::srf::is_jsonb(k)) {
            return self.jsonb_in_from(kind, &exprs, &left, alias, ordinality);
        }
        match (fname, exprs.as_slice()) {
            ("unnest", [e]) => {
                self.lateral = Some(left);
                return self.unnest_in_from(e, alias, ordinality);
            }
            ("unnest", _) => return Err(unsupported("unnest in FROM of other than one array")),
            ("regexp_matches" | "regexp_split_to_table", _) => {
                self.lateral = Some(left);
                let (e, elem) = super::string_fn::regexp_rows_array(fname, &exprs)?;
                return self.unnest_as(&e, fname, elem, alias, ordinality);
            }
            ("pg_partition_ancestors", [e]) => {
                // Augur has no partitions: a relation's only "ancestor" is itself, at depth 1.
                let x = self.bind_expr(e, &Scope::default())?;
                let x = self.oid_arg(x, fname)?;
                let set = over_one_row(SrfSpec::new(SrfKind::GenerateSeries, vec![x.clone(), x]));
                let mut out = vec![Expr::Col(0)];
                if ordinality {
                    out.push(lit_int(1));
                }
                let plan = Plan::Project(Box::new(set), out);
                return Ok(self.function_scope(plan, fname, Ty::Int8, alias, ordinality));
            }
            ("generate_series", _) => {}
            _ => return Err(unsupported(format!("table function {name}"))),
        }
        let mut bound = Vec::new();
        let mut ty = Ty::Int4;
        let typed = exprs
            .iter()
            .map(|e| self.bind_expr(e, &left))
            .collect::<Result<Vec<_>>>()?;
        let tys: Vec<Ty> = typed.iter().map(|x| x.1).collect();
        if let Some(ty) = super::srf::time_series_type(&tys) {
            // Over timestamps: the select-list function's step over one empty row.
            let mut args: Vec<Expr> = typed.into_iter().map(|x| x.0).collect();
            self.time_series_args(&mut args, &tys, ty)?;
            let mut spec = SrfSpec::new(SrfKind::GenerateSeriesTime, args);
            spec.ordinality = ordinality;
            let plan = over_one_row(spec);
            return Ok(self.function_scope(plan, fname, ty, alias, ordinality));
        }
        for (e, t) in typed {
            if !(t.is_int() || t == Ty::Unknown) {
                return Err(unsupported(format!("generate_series of type {}", t.name())));
            }
            if t == Ty::Int8 {
                ty = Ty::Int8;
            }
            bound.push(self.coerce(e, t, Ty::Int8)?);
        }
        if !(2..=3).contains(&bound.len()) {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "function generate_series with {} arguments does not exist",
                    bound.len()
                ),
            ));
        }
        let vals: Option<Vec<Value>> = bound
            .iter()
            .map(|e| match e {
                Expr::Lit(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        let Some(vals) = vals else {
            // Arguments known only when the statement runs (a column of an enclosing query's
            // row, as psql's `generate_series(0, array_upper(pr.prattrs, 1))`, or of the items
            // to its left): the select-list function's step over one empty row.
            let mut spec = SrfSpec::new(SrfKind::GenerateSeries, bound);
            spec.ordinality = ordinality;
            let plan = over_one_row(spec);
            return Ok(self.function_scope(plan, fname, ty, alias, ordinality));
        };
        let ints: Option<Vec<i64>> = vals
            .iter()
            .map(|v| match v {
                Value::Int(i) => Some(*i),
                _ => None,
            })
            .collect();
        // A NULL argument: no rows.
        let rows: Vec<Vec<Expr>> = match ints.as_deref() {
            Some(&[start, stop, ref step @ ..]) => {
                let step = step.first().copied().unwrap_or(1);
                if step == 0 {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        "step size cannot equal zero",
                    ));
                }
                let count = if (step > 0 && start > stop) || (step < 0 && start < stop) {
                    0
                } else {
                    (i128::from(stop) - i128::from(start)) / i128::from(step) + 1
                };
                // The rows are built when the statement is planned.
                if count > 10_000_000 {
                    return Err(unsupported("generate_series of more than 10000000 rows"));
                }
                (0..count as i64)
                    .map(|k| {
                        let mut r = vec![lit_int(start + k * step)];
                        if ordinality {
                            r.push(lit_int(k + 1));
                        }
                        r
                    })
                    .collect()
            }
            _ => vec![],
        };
        let width = 1 + usize::from(ordinality);
        let plan = if rows.is_empty() {
            Plan::Filter(
                Box::new(Plan::Values(vec![vec![Expr::Lit(Value::Null); width]])),
                Expr::Lit(Value::Bool(false)),
            )
        } else {
            Plan::Values(rows)
        };
        Ok(self.function_scope(plan, fname, ty, alias, ordinality))
    }

    /// The scope of a function in FROM returning one column of type `ty` (and, `WITH
    /// ORDINALITY`, a bigint `ordinality` after it): the column is named after the alias, as
    /// PostgreSQL names it, or after the function.
    fn function_scope(
        &self,
        plan: Plan,
        fname: &str,
        ty: Ty,
        alias: Option<&A::TableAlias>,
        ordinality: bool,
    ) -> (Plan, Scope) {
        let a = alias.map_or(fname.to_string(), |a| ident(&a.name));
        let mut cols = vec![Column::new(a.clone(), ty)];
        if ordinality {
            cols.push(Column::new("ordinality".into(), Ty::Int8));
        }
        (plan, derived_scope(&a, &cols, alias))
    }

    /// `unnest(array)` in FROM: a row per element (of the array's element type; untyped for an
    /// array in text form), computed when the statement runs, so the array may be a column of
    /// an enclosing query's row (psql's `unnest(tc.reloptions)` inside `ARRAY(...)`). `WITH
    /// ORDINALITY` adds each element's position, counted from 1.
    pub(super) fn unnest_in_from(
        &mut self,
        e: &A::Expr,
        alias: Option<&A::TableAlias>,
        ordinality: bool,
    ) -> Result<(Plan, Scope)> {
        self.unnest_as(e, "unnest", None, alias, ordinality)
    }

    /// `unnest(e)` in FROM as the function `fname` (the column's name without an alias), its
    /// elements read as `elem` when given (`regexp_matches`' rows, text forms of arrays).
    pub(super) fn unnest_as(
        &mut self,
        e: &A::Expr,
        fname: &str,
        elem: Option<Ty>,
        alias: Option<&A::TableAlias>,
        ordinality: bool,
    ) -> Result<(Plan, Scope)> {
        let left = self.take_lateral();
        let (x, t) = self.bind_elements(e, &left)?;
        let elem = match (elem, t) {
            (Some(e), _) => e,
            (None, Ty::Array(e)) => *e,
            (None, Ty::Text | Ty::Unknown) => Ty::Unknown,
            _ => {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("function unnest({}) does not exist", t.name()),
                ))
            }
        };
        let x = self.coerce(x, t, Ty::Text)?;
        let set = over_one_row(SrfSpec::new(
            if ordinality {
                SrfKind::ExpandArray
            } else {
                SrfKind::Unnest
            },
            vec![x],
        ));
        let plan = if elem == Ty::Unknown {
            set
        } else {
            let mut out = vec![Expr::Cast(Box::new(Expr::Col(0)), elem, None)];
            if ordinality {
                out.push(Expr::Col(1));
            }
            Plan::Project(Box::new(set), out)
        };
        Ok(self.function_scope(plan, fname, elem, alias, ordinality))
    }
}

/// The select-list function step `spec` over one empty row: a function in FROM whose rows the
/// statement's run produces.
fn over_one_row(spec: SrfSpec) -> Plan {
    Plan::ProjectSet {
        input: Box::new(Plan::Values(vec![vec![]])),
        srfs: vec![spec],
    }
}
