//! Binding the FROM clause: tables, aliases, derived tables, functions and joins (ON / USING,
//! LATERAL).

use sqlparser::ast as A;

use super::{check_name, from_fn, ident, object_name, unsupported, Binder, Scope, ScopeCol};
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::expr::{CmpOp, Expr, Ty};
use crate::sql::plan::access::{conjoin, make_join};
use crate::sql::plan::{Access, Column, Plan, Scan};
use crate::types::Value;

impl Binder<'_> {
    pub(super) fn bind_from(&mut self, from: &[A::TableWithJoins]) -> Result<(Plan, Scope)> {
        let mut acc: Option<(Plan, Scope)> = None;
        for twj in from {
            let (p, s) = self.bind_twj(twj)?;
            acc = Some(match acc {
                None => (p, s),
                Some((lp, ls)) => (
                    Plan::Join {
                        left: Box::new(lp),
                        right: Box::new(p),
                        left_join: false,
                        on: None,
                        lookup: None,
                    },
                    ls.concat(s),
                ),
            });
        }
        Ok(acc.unwrap_or_else(|| (Plan::Values(vec![vec![]]), Scope::default())))
    }

    pub(super) fn bind_twj(&mut self, twj: &A::TableWithJoins) -> Result<(Plan, Scope)> {
        let (plan, scope) = self.bind_factor(&twj.relation)?;
        self.bind_joins(plan, scope, &twj.joins)
    }

    /// The joins of a chain, in order, onto `plan` (whose columns `scope` names).
    pub(super) fn bind_joins(
        &mut self,
        mut plan: Plan,
        mut scope: Scope,
        joins: &[A::Join],
    ) -> Result<(Plan, Scope)> {
        for j in joins {
            let right_or_full = matches!(
                j.join_operator,
                A::JoinOperator::Right(_) | A::JoinOperator::RightOuter(_) | A::JoinOperator::FullOuter(_)
            );
            let inner = matches!(
                j.join_operator,
                A::JoinOperator::CrossJoin(_) | A::JoinOperator::Join(_) | A::JoinOperator::Inner(_)
            );
            if let Some(items) = lateral_values(&j.relation).filter(|_| inner) {
                (plan, scope) = self.lateral_join(plan, scope, j, items)?;
                continue;
            }
            if is_lateral_subquery(&j.relation) && !right_or_full {
                let (outer, c) = lateral_join_kind(&j.join_operator)?;
                (plan, scope) = self.lateral_subquery(plan, scope, &j.relation, c, outer)?;
                continue;
            }
            let (rp, rs) = if is_lateral_subquery(&j.relation) {
                self.unreferencing_lateral(&j.relation, &scope)?
            } else if from_fn::is_function(&j.relation) {
                let (fp, fs, reads) = self.bind_lateral_factor(&j.relation, &scope)?;
                if reads {
                    (plan, scope) = self.lateral_function_join(plan, scope, j, fp, fs)?;
                    continue;
                }
                (fp, fs)
            } else {
                self.bind_factor(&j.relation)?
            };
            let (mut right_join, mut full_join) = (false, false);
            let (left_join, c) = match &j.join_operator {
                A::JoinOperator::Join(c) | A::JoinOperator::Inner(c) => (false, Some(c)),
                A::JoinOperator::Left(c) | A::JoinOperator::LeftOuter(c) => (true, Some(c)),
                A::JoinOperator::Right(c) | A::JoinOperator::RightOuter(c) => {
                    right_join = true;
                    (true, Some(c))
                }
                A::JoinOperator::FullOuter(c) => {
                    full_join = true;
                    (false, Some(c))
                }
                A::JoinOperator::CrossJoin(_) => (false, None),
                other => {
                    return Err(unsupported(
                        format!("join {other:?}").chars().take(60).collect::<String>(),
                    ))
                }
            };
            let lw = scope.cols.len();
            scope = scope.concat(rs);
            let on = self.join_condition(c, &scope, lw)?;
            plan = if full_join {
                Plan::FullJoin {
                    left: Box::new(plan),
                    right: Box::new(rp),
                    on,
                }
            } else if right_join {
                // A RIGHT JOIN B is B LEFT JOIN A, with the columns put back in A, B order.
                let rw = scope.cols.len() - lw;
                let swap = |i: usize| if i < lw { i + rw } else { i - lw };
                let on = on.map(|e| {
                    e.rewrite(&mut |x| {
                        Ok(match x {
                            Expr::Col(i) => Expr::Col(swap(i)),
                            x => x,
                        })
                    })
                    .expect("infallible")
                });
                let joined = make_join(rp, plan, true, on);
                Plan::Project(
                    Box::new(joined),
                    (0..lw + rw).map(|i| Expr::Col(swap(i))).collect(),
                )
            } else {
                make_join(plan, rp, left_join, on)
            };
        }
        Ok((plan, scope))
    }

    /// `left [CROSS | INNER] JOIN LATERAL (SELECT e1, e2, ...) AS a(...)`, a lateral subquery
    /// without FROM (as pgbench's partition probe writes it): one row of the expressions over
    /// each left row, so the left rows with those expressions appended, then the ON condition.
    /// Other LATERAL forms are 0A000.
    fn lateral_join(
        &mut self,
        plan: Plan,
        scope: Scope,
        j: &A::Join,
        items: &[A::SelectItem],
    ) -> Result<(Plan, Scope)> {
        let c = match &j.join_operator {
            A::JoinOperator::CrossJoin(_) => None,
            A::JoinOperator::Join(c) | A::JoinOperator::Inner(c) => Some(c),
            _ => return Err(unsupported("LATERAL other than in a CROSS or INNER JOIN")),
        };
        let A::TableFactor::Derived {
            alias: Some(alias), ..
        } = &j.relation
        else {
            return Err(Error::syntax("subquery in FROM must have an alias"));
        };
        let lw = scope.cols.len();
        let mut exprs: Vec<Expr> = (0..lw).map(Expr::Col).collect();
        let mut cols = Vec::new();
        for it in items {
            let (e, name) = match it {
                A::SelectItem::UnnamedExpr(e) => (e, super::select::derive_name(e)),
                A::SelectItem::ExprWithAlias { expr, alias } => (expr, ident(alias)),
                _ => return Err(unsupported("LATERAL subquery with *")),
            };
            let (x, t) = self.bind_noagg(e, &scope, "FROM clause")?;
            let (x, t) = if t == Ty::Unknown {
                (self.coerce(x, t, Ty::Text)?, Ty::Text)
            } else {
                (x, t)
            };
            let len = self.expr_len(&x, &scope);
            exprs.push(x);
            cols.push(Column { name, ty: t, len });
        }
        let scope = scope.concat(derived_scope(&ident(&alias.name), &cols, Some(alias)));
        let on = self.join_condition(c, &scope, lw)?;
        let plan = Plan::Project(Box::new(plan), exprs);
        Ok(match on {
            Some(on) => (Plan::Filter(Box::new(plan), on), scope),
            None => (plan, scope),
        })
    }

    /// `left, LATERAL (query) AS a`, `left [CROSS | INNER | LEFT] JOIN LATERAL (query) AS a
    /// [ON ...]`: the query bound as a subquery of the left side's row (a name it does not
    /// define resolves in the left items, as a correlated subquery's does) and run once per
    /// left row (`Plan::Lateral`, `exec/subquery.rs`), its rows appended to that row where
    /// they meet the ON condition `c`; with `outer`, a left row none meets is kept once with
    /// NULLs.
    pub(super) fn lateral_subquery(
        &mut self,
        plan: Plan,
        scope: Scope,
        f: &A::TableFactor,
        c: Option<&A::JoinConstraint>,
        outer: bool,
    ) -> Result<(Plan, Scope)> {
        let A::TableFactor::Derived { subquery, alias, .. } = f else {
            return Err(Error::internal("a LATERAL item that is not a subquery"));
        };
        let Some(alias) = alias else {
            return Err(Error::syntax("subquery in FROM must have an alias"));
        };
        let (sub, cols) = self.subquery(subquery, &scope)?;
        let lw = scope.cols.len();
        let names = cols
            .iter()
            .map(|c| format!("{}.{}", ident(&alias.name), c.name))
            .collect();
        let scope = scope.concat(derived_scope(&ident(&alias.name), &cols, Some(alias)));
        let on = match self.join_condition(c, &scope, lw)? {
            Some(Expr::Lit(Value::Bool(true))) => None,
            on => on,
        };
        let plan = Plan::Lateral {
            left: Box::new(plan),
            sub,
            names,
            on,
            outer,
        };
        Ok((plan, scope))
    }

    /// The LATERAL subquery `f` on the right of a RIGHT or FULL join, as PostgreSQL allows it:
    /// only when it reads nothing of the left side (`scope`; it may read an enclosing query),
    /// and then as a plain derived table; reading a left column is 42P10, as in PostgreSQL.
    fn unreferencing_lateral(&mut self, f: &A::TableFactor, scope: &Scope) -> Result<(Plan, Scope)> {
        let A::TableFactor::Derived {
            subquery,
            alias: Some(alias),
            ..
        } = f
        else {
            return Err(Error::syntax("subquery in FROM must have an alias"));
        };
        let (sub, cols) = self.subquery(subquery, scope)?;
        if let Some(i) = sub.args.iter().find_map(|a| match a {
            Expr::Col(i) => Some(*i),
            _ => None,
        }) {
            let table = scope
                .cols
                .get(i)
                .and_then(|c| c.table.clone())
                .unwrap_or_default();
            return Err(Error::new(
                SqlState("42P10"),
                format!(
                    "invalid reference to FROM-clause entry for table \"{table}\" (the combining JOIN type must be INNER or LEFT for a LATERAL reference)"
                ),
            ));
        }
        let plan = std::mem::replace(&mut self.subplans[sub.id], Plan::Values(vec![]));
        if sub.args.is_empty() {
            // Reads nothing outside itself: its plan runs as the join's right side.
            return Ok((plan, derived_scope(&ident(&alias.name), &cols, Some(alias))));
        }
        // Reads an enclosing query only (PostgreSQL allows that): bound again as a plain
        // derived table of this query, whose names it does not see, so those names resolve
        // in the enclosing query as any derived table's do.
        let saved = self.agg_sink.take();
        let r = self.bind_query(subquery);
        self.agg_sink = saved;
        let (plan, cols) = r?;
        Ok((plan, derived_scope(&ident(&alias.name), &cols, Some(alias))))
    }

    /// `left [CROSS | INNER | LEFT] JOIN f(...)` of a function `f` whose arguments read the
    /// left side's columns: the function evaluated per left row (`from_fn::graft`), then the
    /// ON condition; a LEFT join keeps a left row the function returns no rows for (only `ON
    /// true`: a condition would have to be met by some function row of each left row).
    fn lateral_function_join(
        &mut self,
        plan: Plan,
        scope: Scope,
        j: &A::Join,
        fp: Plan,
        fs: Scope,
    ) -> Result<(Plan, Scope)> {
        let (outer, c) = lateral_join_kind(&j.join_operator)?;
        let lw = scope.cols.len();
        let scope = scope.concat(fs);
        let on = self.join_condition(c, &scope, lw)?;
        let on = match on {
            Some(Expr::Lit(Value::Bool(true))) => None,
            on => on,
        };
        if outer && on.is_some() {
            return Err(unsupported(
                "LEFT JOIN LATERAL of a function with a condition other than ON true",
            ));
        }
        let plan = from_fn::graft(fp, plan, lw, outer)?;
        Ok(match on {
            Some(on) => (Plan::Filter(Box::new(plan), on), scope),
            None => (plan, scope),
        })
    }

    /// A join's ON / USING condition over `scope` (the left side's `lw` columns, then the
    /// right side's); None for CROSS JOIN.
    pub(super) fn join_condition(
        &mut self,
        c: Option<&A::JoinConstraint>,
        scope: &Scope,
        lw: usize,
    ) -> Result<Option<Expr>> {
        Ok(match c {
            None | Some(A::JoinConstraint::None) => None,
            Some(A::JoinConstraint::On(e)) => {
                let (e, t) = self.bind_noagg(e, scope, "JOIN conditions")?;
                Some(self.require_bool(e, t, "JOIN/ON")?)
            }
            Some(A::JoinConstraint::Using(cols)) => {
                let mut conds = Vec::new();
                for c in cols {
                    let n = object_name(c)?;
                    let l = scope.cols[..lw]
                        .iter()
                        .position(|x| x.name == n)
                        .ok_or_else(|| Error::undefined_column(&n))?;
                    let r = scope.cols[lw..]
                        .iter()
                        .position(|x| x.name == n)
                        .ok_or_else(|| Error::undefined_column(&n))?;
                    let (e, _) = self.compare(
                        CmpOp::Eq,
                        (Expr::Col(l), scope.cols[l].ty),
                        (Expr::Col(lw + r), scope.cols[lw + r].ty),
                    )?;
                    conds.push(e);
                }
                conjoin(conds)
            }
            Some(A::JoinConstraint::Natural) => return Err(unsupported("NATURAL JOIN")),
        })
    }

    pub(super) fn bind_factor(&mut self, f: &A::TableFactor) -> Result<(Plan, Scope)> {
        match f {
            A::TableFactor::Table {
                name,
                alias,
                args,
                with_ordinality,
                ..
            } => {
                if let Some(args) = args {
                    if args.settings.is_some() {
                        return Err(unsupported(format!("table function {name} with SETTINGS")));
                    }
                    return self.table_function(name, &args.args, alias.as_ref(), *with_ordinality);
                }
                if let Some(A::ObjectNamePart::Identifier(i)) = name.0.last() {
                    check_name(i)?;
                }
                if let Some((plan, cols)) = self.cte(name) {
                    let a = match alias {
                        Some(a) => ident(&a.name),
                        None => object_name(name)?,
                    };
                    return Ok((plan, derived_scope(&a, &cols, alias.as_ref())));
                }
                // pg_catalog is first on PostgreSQL's search path: its relations before views.
                if let Some((plan, cols, rel)) = self.catalog_relation(name)? {
                    let a = alias.as_ref().map_or(rel, |a| ident(&a.name));
                    return Ok((plan, derived_scope(&a, &cols, alias.as_ref())));
                }
                if let Some(v) = self.view_named(name)? {
                    return self.bind_view(&v, alias.as_ref());
                }
                let t = self.table(name)?;
                let def = t.def();
                let alias_name = match alias {
                    Some(a) => ident(&a.name),
                    None => def.name.clone(),
                };
                let mut scope = Scope::of_table(&def, &alias_name);
                if let Some(a) = alias {
                    for (c, n) in scope.cols.iter_mut().zip(&a.columns) {
                        c.name = ident(&n.name);
                    }
                }
                let scan = Scan {
                    table: t,
                    def,
                    alias: alias_name,
                    access: Access::Full,
                    filter: None,
                    reverse: false,
                    stop_after: None,
                };
                Ok((Plan::Scan(scan), scope))
            }
            A::TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_ordinality,
                ..
            } if array_exprs.len() == 1 => {
                self.unnest_in_from(&array_exprs[0], alias.as_ref(), *with_ordinality)
            }
            // `LATERAL f(...)`: every function in FROM may read the items to its left.
            A::TableFactor::Function {
                name,
                args,
                with_ordinality,
                alias,
                ..
            } => self.table_function(name, args, alias.as_ref(), *with_ordinality),
            // A LATERAL subquery with nothing to its left is a plain one.
            A::TableFactor::Derived { subquery, alias, .. } => {
                let Some(alias) = alias else {
                    return Err(Error::syntax("subquery in FROM must have an alias"));
                };
                let saved = self.agg_sink.take();
                let r = self.bind_query(subquery);
                self.agg_sink = saved;
                let (plan, cols) = r?;
                Ok((plan, derived_scope(&ident(&alias.name), &cols, Some(alias))))
            }
            A::TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                if alias.is_some() {
                    return Err(unsupported("alias on a parenthesized join"));
                }
                self.bind_twj(table_with_joins)
            }
            other => Err(unsupported(format!("FROM item {other}"))),
        }
    }
}

/// The select list of `LATERAL (SELECT ...)` when the subquery is only that: no FROM, WHERE,
/// grouping, DISTINCT, ORDER BY, LIMIT or WITH.
fn lateral_values(f: &A::TableFactor) -> Option<&[A::SelectItem]> {
    let A::TableFactor::Derived {
        lateral: true,
        subquery,
        ..
    } = f
    else {
        return None;
    };
    let q = subquery.as_ref();
    if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return None;
    }
    let A::SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    let plain = s.from.is_empty()
        && s.selection.is_none()
        && s.having.is_none()
        && s.distinct.is_none()
        && matches!(&s.group_by, A::GroupByExpr::Expressions(g, m) if g.is_empty() && m.is_empty());
    plain.then_some(s.projection.as_slice())
}

/// Whether `f` is `LATERAL (query) AS a`.
pub(super) fn is_lateral_subquery(f: &A::TableFactor) -> bool {
    matches!(f, A::TableFactor::Derived { lateral: true, .. })
}

/// The scope of a derived table or CTE reference named `a` (column aliases applied).
pub(super) fn derived_scope(a: &str, cols: &[Column], alias: Option<&A::TableAlias>) -> Scope {
    let mut scope = Scope {
        cols: cols
            .iter()
            .map(|c| ScopeCol {
                table: Some(a.to_string()),
                name: c.name.clone(),
                ty: c.ty,
                len: c.len,
                not_null: false,
            })
            .collect(),
        tables: vec![a.to_string()],
    };
    if let Some(alias) = alias {
        for (c, n) in scope.cols.iter_mut().zip(&alias.columns) {
            c.name = ident(&n.name);
        }
    }
    scope
}

/// How a LATERAL item may be joined: whether the join is LEFT (outer), and its condition (none
/// for CROSS JOIN and the comma); 42P10 for RIGHT and FULL joins, as PostgreSQL.
fn lateral_join_kind(op: &A::JoinOperator) -> Result<(bool, Option<&A::JoinConstraint>)> {
    match op {
        A::JoinOperator::CrossJoin(_) => Ok((false, None)),
        A::JoinOperator::Join(c) | A::JoinOperator::Inner(c) => Ok((false, Some(c))),
        A::JoinOperator::Left(c) | A::JoinOperator::LeftOuter(c) => Ok((true, Some(c))),
        _ => Err(Error::new(
            SqlState("42P10"),
            "the combining JOIN type must be INNER or LEFT for a LATERAL reference",
        )),
    }
}
