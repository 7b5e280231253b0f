//! Functions in FROM run as a set-returning step: jsonb's (`jsonb_each`, `jsonb_array_elements`,
//! ...), and any such function whose arguments read the FROM items to its left (PostgreSQL
//! makes a function in FROM implicitly LATERAL): a nested loop evaluating it once per left row.

use sqlparser::ast as A;

use super::from::derived_scope;
use super::srf::{jsonb_column, record_fields};
use super::{ident, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Ty};
use crate::sql::plan::srf::{SrfKind, SrfSpec};
use crate::sql::plan::{Column, Plan};

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
        let plan = Plan::ProjectSet {
            input: Box::new(Plan::Values(vec![vec![]])),
            srfs: vec![spec],
        };
        Ok((plan, derived_scope(&a, &cols, alias)))
    }
}
