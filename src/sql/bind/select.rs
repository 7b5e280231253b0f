//! Binding queries: SELECT (select list, WHERE, GROUP BY, HAVING, DISTINCT, ORDER BY, LIMIT),
//! VALUES and nested queries.

use sqlparser::ast as A;

use super::decorrelate::not_null_cols;
use super::{ident, object_name, parse_type, unsupported, Binder, OrderRef, Scope, ScopeCol};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{Expr, Func, Ty};
use crate::sql::plan::access::{self, apply_filter, conjoin};
use crate::sql::plan::join_order::plan_joins;
use crate::sql::plan::{array_cols, Column, Plan, SortKey};
use crate::types::{DataType, Value};

impl Binder<'_> {
    pub fn bind_query(&mut self, q: &A::Query) -> Result<(Plan, Vec<Column>)> {
        let depth = self.ctes.len();
        let r = match &q.with {
            Some(w) => self.bind_with(w).and_then(|()| self.bind_query_body(q)),
            None => self.bind_query_body(q),
        };
        self.ctes.truncate(depth);
        r
    }

    fn bind_query_body(&mut self, q: &A::Query) -> Result<(Plan, Vec<Column>)> {
        if q.fetch.is_some() || !q.locks.is_empty() || q.for_clause.is_some() || !q.pipe_operators.is_empty()
        {
            return Err(unsupported("FETCH / FOR UPDATE / pipe operators"));
        }
        let order: Vec<A::OrderByExpr> = match &q.order_by {
            None => vec![],
            Some(A::OrderBy {
                kind: A::OrderByKind::Expressions(v),
                ..
            }) => v.clone(),
            Some(_) => return Err(unsupported("ORDER BY ALL")),
        };
        let (limit, offset) = match &q.limit_clause {
            None => (None, None),
            Some(A::LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(unsupported("LIMIT BY"));
                }
                let l = match limit {
                    Some(e) => self.bind_limit(e, "LIMIT")?,
                    None => None,
                };
                let o = match offset {
                    Some(o) => self.bind_limit(&o.value, "OFFSET")?,
                    None => None,
                };
                (l, o)
            }
            Some(A::LimitClause::OffsetCommaLimit { .. }) => return Err(unsupported("LIMIT offset, count")),
        };
        match q.body.as_ref() {
            A::SetExpr::Select(s) => self.bind_select(s, &order, limit, offset),
            A::SetExpr::Values(v) => {
                let (plan, cols) = self.bind_values(v)?;
                self.finish_simple(plan, cols, &order, limit, offset)
            }
            A::SetExpr::Query(inner) => {
                let (plan, cols) = self.bind_query(inner)?;
                self.finish_simple(plan, cols, &order, limit, offset)
            }
            A::SetExpr::SetOperation { .. } => {
                let (plan, cols) = self.bind_set_expr(q.body.as_ref())?;
                self.finish_simple(plan, cols, &order, limit, offset)
            }
            other => Err(unsupported(format!("query {other}"))),
        }
    }

    pub(super) fn bind_limit(&mut self, e: &A::Expr, what: &'static str) -> Result<Option<Expr>> {
        let (x, t) = self.bind_noagg(e, &Scope::default(), what)?;
        if !x.is_const() {
            return Err(Error::syntax(format!(
                "argument of {what} must not contain variables"
            )));
        }
        if matches!(x, Expr::Lit(Value::Null)) {
            return Ok(None);
        }
        if !(t.is_num() || t == Ty::Unknown) {
            return Err(Error::mismatch(format!(
                "argument of {what} must be type bigint, not type {}",
                t.name()
            )));
        }
        Ok(Some(self.coerce(x, t, Ty::Int8)?))
    }

    pub fn bind_values(&mut self, v: &A::Values) -> Result<(Plan, Vec<Column>)> {
        let mut rows: Vec<Vec<(Expr, Ty)>> = Vec::new();
        for r in &v.rows {
            let mut row = Vec::new();
            for e in r.iter() {
                row.push(self.bind_noagg(e, &Scope::default(), "VALUES")?);
            }
            if let Some(first) = rows.first() {
                if first.len() != row.len() {
                    return Err(Error::syntax("VALUES lists must all be the same length"));
                }
            }
            rows.push(row);
        }
        let width = rows.first().map_or(0, |r| r.len());
        let mut cols = Vec::new();
        for c in 0..width {
            let items: Vec<(Expr, Ty)> = rows.iter().map(|r| r[c].clone()).collect();
            let (es, ty) = self.unify_all(items, "VALUES")?;
            let ty = if ty == Ty::Unknown { Ty::Text } else { ty };
            for (r, e) in rows.iter_mut().zip(es) {
                r[c] = (e, ty);
            }
            cols.push(Column::new(format!("column{}", c + 1), ty));
        }
        Ok((
            Plan::Values(
                rows.into_iter()
                    .map(|r| r.into_iter().map(|x| x.0).collect())
                    .collect(),
            ),
            cols,
        ))
    }

    /// ORDER BY / LIMIT over a plan whose output columns are all there is.
    pub(super) fn finish_simple(
        &mut self,
        mut plan: Plan,
        cols: Vec<Column>,
        order: &[A::OrderByExpr],
        limit: Option<Expr>,
        offset: Option<Expr>,
    ) -> Result<(Plan, Vec<Column>)> {
        if !order.is_empty() {
            let scope = Scope {
                cols: cols
                    .iter()
                    .map(|c| ScopeCol {
                        table: None,
                        name: c.name.clone(),
                        ty: c.ty,
                        len: c.len,
                        not_null: false,
                    })
                    .collect(),
                tables: vec![],
            };
            let mut keys = Vec::new();
            for o in order {
                let e = match &o.expr {
                    A::Expr::Value(A::ValueWithSpan {
                        value: A::Value::Number(n, _),
                        ..
                    }) => {
                        let p: usize = n.parse().unwrap_or(0);
                        if p == 0 || p > cols.len() {
                            return Err(Error::new(
                                SqlState("42P10"),
                                format!("ORDER BY position {n} is not in select list"),
                            ));
                        }
                        Expr::Col(p - 1)
                    }
                    e => {
                        let (x, t) = self.bind_noagg(e, &scope, "ORDER BY")?;
                        order_value(x, t)
                    }
                };
                let e = match e {
                    Expr::Col(i) => order_value(e, cols[i].ty),
                    e => e,
                };
                keys.push(sort_key(e, &o.options));
            }
            plan = Plan::Sort(Box::new(plan), keys);
        }
        if limit.is_some() || offset.is_some() {
            plan = Plan::Limit {
                input: Box::new(plan),
                limit,
                offset,
            };
        }
        Ok((plan, cols))
    }

    pub(super) fn bind_select(
        &mut self,
        s: &A::Select,
        order: &[A::OrderByExpr],
        limit: Option<Expr>,
        offset: Option<Expr>,
    ) -> Result<(Plan, Vec<Column>)> {
        // Taken before anything else binds, so that no nested query sees it. DISTINCT needs
        // its columns' types: there PostgreSQL makes unknown outputs text.
        let set_op_leaf = std::mem::take(&mut self.set_op_leaf) && s.distinct.is_none();
        if matches!(s.distinct, Some(A::Distinct::On(_))) {
            return Err(unsupported("DISTINCT ON"));
        }
        if s.top.is_some() || s.into.is_some() || !s.lateral_views.is_empty() || s.prewhere.is_some() {
            return Err(unsupported("TOP / SELECT INTO / LATERAL VIEW"));
        }
        if s.qualify.is_some() || !s.sort_by.is_empty() || !s.cluster_by.is_empty() {
            return Err(unsupported("QUALIFY / SORT BY"));
        }
        let distinct = matches!(s.distinct, Some(A::Distinct::Distinct));
        // Several FROM items, or an inner join chain, are joined by the join planner once
        // WHERE is bound; the chains' ON conditions join WHERE's conjuncts.
        let (mut plan, scope, rels, on) = match self.bind_join_rels(&s.from)? {
            Some((rels, scope, on)) => (Plan::Values(vec![]), scope, Some(rels), on),
            None => {
                let (p, scope) = self.bind_from(&s.from)?;
                (p, scope, None, Vec::new())
            }
        };
        let where_e = match &s.selection {
            Some(w) => {
                let (e, t) = self.bind_noagg(w, &scope, "WHERE")?;
                Some(self.require_bool(e, t, "WHERE")?)
            }
            None => None,
        };
        // Correlated EXISTS / IN conjuncts that become semi- and anti-joins (`decorrelate.rs`).
        let (where_e, semi_joins) = match where_e {
            Some(w) => {
                let not_null: Vec<bool> = match &rels {
                    Some(r) => r.iter().flat_map(not_null_cols).collect(),
                    None => not_null_cols(&plan),
                };
                self.decorrelate(w, scope.cols.len(), &not_null)
            }
            None => (None, Vec::new()),
        };

        // Select list, HAVING and ORDER BY may hold aggregates.
        let saved_sink = self.agg_sink.replace(Vec::new());
        let saved_win = self.win_sink.replace(Vec::new());
        let saved_srf = self.srf_sink.replace(Vec::new());
        let r = self.named_windows(&s.named_window).and_then(|w| {
            let saved_windows = std::mem::replace(&mut self.windows, w);
            let r = self.bind_select_items(s, &scope, order, set_op_leaf);
            self.windows = saved_windows;
            r
        });
        let aggs = std::mem::replace(&mut self.agg_sink, saved_sink).unwrap_or_default();
        let wins = std::mem::replace(&mut self.win_sink, saved_win).unwrap_or_default();
        let srfs = std::mem::replace(&mut self.srf_sink, saved_srf).unwrap_or_default();
        let (proj, names, types, having, orefs) = r?;
        let lens: Vec<Option<u32>> = proj.iter().map(|e| self.expr_len(e, &scope)).collect();
        let (groups, group_types) = self.bind_group_by(s, &scope, &proj, &names, &types)?;
        let grouped = !groups.is_empty() || !aggs.is_empty() || having.is_some();

        let (proj, having, orefs) = if grouped {
            let ng = groups.len();
            let fix = |e: Expr| post_agg(e, &groups, ng, &scope);
            let having = having.map(fix).transpose()?;
            let (proj, orefs) = rewrite_outputs(proj, orefs, fix)?;
            (proj, having, orefs)
        } else {
            (proj, having, orefs)
        };
        let wins = if grouped {
            let ng = groups.len();
            wins.into_iter()
                .map(|w| w.map_exprs(&mut |e| post_agg(e, &groups, ng, &scope)))
                .collect::<Result<Vec<_>>>()?
        } else {
            wins
        };
        let srfs = if grouped {
            let ng = groups.len();
            srfs.into_iter()
                .map(|mut s| {
                    s.args = s
                        .args
                        .into_iter()
                        .map(|e| post_agg(e, &groups, ng, &scope))
                        .collect::<Result<Vec<_>>>()?;
                    Ok(s)
                })
                .collect::<Result<Vec<_>>>()?
        } else {
            srfs
        };

        if let Some(rels) = rels {
            let (p, rest) = plan_joins(rels, conjoin(on.into_iter().chain(where_e).collect()));
            plan = match conjoin(rest) {
                Some(r) => Plan::Filter(Box::new(p), r),
                None => p,
            };
        } else if let Some(w) = where_e {
            plan = apply_filter(plan, w);
        }
        for j in semi_joins {
            plan = j.apply(plan);
        }
        if grouped {
            plan = access::aggregate(plan, groups, aggs, array_cols(group_types), having.is_some());
            if let Some(h) = having {
                plan = Plan::Filter(Box::new(plan), h);
            }
        }
        // Window functions run over the (grouped) rows; their placeholders become the columns
        // the window step appends.
        let (proj, orefs) = if wins.is_empty() {
            (proj, orefs)
        } else {
            let base = plan.width();
            plan = Plan::Window {
                input: Box::new(plan),
                specs: wins,
            };
            let fix = |e: Expr| {
                e.rewrite(&mut |x| {
                    Ok(match x {
                        Expr::Window(k) => Expr::Col(base + k),
                        x => x,
                    })
                })
            };
            rewrite_outputs(proj, orefs, fix)?
        };
        // Set-returning functions run last (after grouping and windows), as PostgreSQL's
        // ProjectSet does; their placeholders become the columns that step appends.
        let (proj, orefs) = if srfs.is_empty() {
            (proj, orefs)
        } else {
            let base = plan.width();
            plan = Plan::ProjectSet {
                input: Box::new(plan),
                srfs,
            };
            let fix = |e: Expr| {
                e.rewrite(&mut |x| {
                    Ok(match x {
                        Expr::Srf(k) => Expr::Col(base + k),
                        x => x,
                    })
                })
            };
            rewrite_outputs(proj, orefs, fix)?
        };

        let nvis = proj.len();
        let mut exprs = proj;
        let mut keys = Vec::new();
        // The types of the columns sorted by (arrays sort by their elements' values).
        let mut key_types = types.clone();
        for (r, o) in orefs {
            let idx = match r {
                OrderRef::Out(j) => j,
                OrderRef::Pre(e, t) => match exprs.iter().position(|x| *x == e) {
                    Some(j) => j,
                    None => {
                        if distinct {
                            return Err(Error::new(
                                SqlState("42P10"),
                                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                            ));
                        }
                        exprs.push(e);
                        key_types.push(t);
                        exprs.len() - 1
                    }
                },
            };
            keys.push((idx, o));
        }

        // ORDER BY the primary key: read the index in order and stop early.
        let sorted_by_scan = !grouped
            && !distinct
            && keys.len() == 1
            && access::order_by_key(
                &mut plan,
                &exprs[keys[0].0],
                matches!(keys[0].1.sort, Some(A::OrderBySort::Desc)),
                &limit,
                &offset,
            );

        plan = Plan::Project(Box::new(plan), exprs);
        if distinct && types.contains(&Ty::Json) {
            return Err(no_json_operator("an equality"));
        }
        if keys.iter().any(|(i, _)| key_types[*i] == Ty::Json) {
            return Err(no_json_operator("an ordering"));
        }
        if distinct {
            plan = Plan::Distinct(Box::new(plan), array_cols(types.iter().copied()));
        }
        if !keys.is_empty() && !sorted_by_scan {
            let keys = keys
                .into_iter()
                .map(|(i, o)| sort_key(order_value(Expr::Col(i), key_types[i]), &o))
                .collect();
            plan = Plan::Sort(Box::new(plan), keys);
        }
        if limit.is_some() || offset.is_some() {
            plan = Plan::Limit {
                input: Box::new(plan),
                limit,
                offset,
            };
        }
        if plan.width() != nvis {
            plan = Plan::Project(Box::new(plan), (0..nvis).map(Expr::Col).collect());
        }
        let cols = names
            .into_iter()
            .zip(types)
            .zip(lens)
            .map(|((name, ty), len)| Column { name, ty, len })
            .collect();
        Ok((plan, cols))
    }

    #[allow(clippy::type_complexity)]
    pub(super) fn bind_select_items(
        &mut self,
        s: &A::Select,
        scope: &Scope,
        order: &[A::OrderByExpr],
        set_op_leaf: bool,
    ) -> Result<(
        Vec<Expr>,
        Vec<String>,
        Vec<Ty>,
        Option<Expr>,
        Vec<(OrderRef, A::OrderByOptions)>,
    )> {
        let mut proj = Vec::new();
        let mut names = Vec::new();
        let mut types = Vec::new();
        for item in &s.projection {
            match item {
                A::SelectItem::UnnamedExpr(e) => {
                    let (x, t) = self.bind_typed(e, scope)?;
                    let t = self.resolve_unknown_output(&mut proj, x, t, set_op_leaf)?;
                    names.push(derive_name(e));
                    types.push(t);
                }
                A::SelectItem::ExprWithAlias { expr, alias } => {
                    let (x, t) = self.bind_typed(expr, scope)?;
                    let t = self.resolve_unknown_output(&mut proj, x, t, set_op_leaf)?;
                    names.push(ident(alias));
                    types.push(t);
                }
                A::SelectItem::Wildcard(_) => {
                    if scope.cols.is_empty() {
                        return Err(Error::syntax("SELECT * with no tables specified is not valid"));
                    }
                    for (i, c) in scope.cols.iter().enumerate() {
                        proj.push(Expr::Col(i));
                        names.push(c.name.clone());
                        types.push(c.ty);
                    }
                }
                A::SelectItem::QualifiedWildcard(A::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                    let q = object_name(n)?;
                    if !scope.tables.contains(&q) {
                        return Err(Error::new(
                            SqlState::UNDEFINED_TABLE,
                            format!("missing FROM-clause entry for table \"{q}\""),
                        ));
                    }
                    for (i, c) in scope.cols.iter().enumerate() {
                        if c.table.as_deref() == Some(q.as_str()) {
                            proj.push(Expr::Col(i));
                            names.push(c.name.clone());
                            types.push(c.ty);
                        }
                    }
                }
                other => return Err(unsupported(format!("select item {other}"))),
            }
        }
        let having = match &s.having {
            Some(h) => {
                let saved = std::mem::replace(&mut self.agg_ctx, "HAVING");
                let saved_win = self.win_sink.take();
                let saved_srf = self.srf_sink.take();
                let r = self.bind_expr(h, scope);
                self.agg_ctx = saved;
                self.win_sink = saved_win;
                self.srf_sink = saved_srf;
                let (e, t) = r?;
                Some(self.require_bool(e, t, "HAVING")?)
            }
            None => None,
        };
        let mut orefs = Vec::new();
        for o in order {
            let r = match &o.expr {
                A::Expr::Value(A::ValueWithSpan {
                    value: A::Value::Number(n, _),
                    ..
                }) => {
                    let p: usize = n.parse().unwrap_or(0);
                    if p == 0 || p > names.len() {
                        return Err(Error::new(
                            SqlState("42P10"),
                            format!("ORDER BY position {n} is not in select list"),
                        ));
                    }
                    OrderRef::Out(p - 1)
                }
                A::Expr::Identifier(i) if names.iter().filter(|n| **n == ident(i)).count() == 1 => {
                    OrderRef::Out(names.iter().position(|n| *n == ident(i)).expect("counted"))
                }
                e => {
                    let (x, t) = self.bind_expr(e, scope)?;
                    OrderRef::Pre(x, t)
                }
            };
            orefs.push((r, o.options.clone()));
        }
        Ok((proj, names, types, having, orefs))
    }

    /// Adds an output expression; one of unknown type (a bare NULL, a quoted literal, an untyped
    /// parameter) becomes text, except that a set operation's branch (`set_op_leaf`) keeps
    /// such a constant or parameter as it is, for the operation to coerce to the other
    /// branches' type as PostgreSQL's select_common_type does (`SELECT NULL UNION SELECT 1`).
    pub(super) fn resolve_unknown_output(
        &mut self,
        proj: &mut Vec<Expr>,
        x: Expr,
        t: Ty,
        set_op_leaf: bool,
    ) -> Result<Ty> {
        // A set-returning function's untyped elements (unnest of a catalog array) stay untyped,
        // so that an enclosing query compares them with what they number (pg_attribute.attnum).
        let keep = (set_op_leaf && matches!(x, Expr::Lit(_) | Expr::Param(_, Ty::Unknown)))
            || matches!(x, Expr::Srf(_));
        if t == Ty::Unknown && !keep {
            proj.push(self.coerce(x, t, Ty::Text)?);
            Ok(Ty::Text)
        } else {
            proj.push(x);
            Ok(t)
        }
    }

    pub(super) fn bind_group_by(
        &mut self,
        s: &A::Select,
        scope: &Scope,
        proj: &[Expr],
        names: &[String],
        types: &[Ty],
    ) -> Result<(Vec<Expr>, Vec<Ty>)> {
        let list = match &s.group_by {
            A::GroupByExpr::Expressions(list, mods) => {
                if !mods.is_empty() {
                    return Err(unsupported("GROUP BY modifiers"));
                }
                list
            }
            A::GroupByExpr::All(_) => return Err(unsupported("GROUP BY ALL")),
        };
        let mut groups = Vec::new();
        let mut group_types = Vec::new();
        for g in list {
            let (e, t) = match g {
                A::Expr::Value(A::ValueWithSpan {
                    value: A::Value::Number(n, _),
                    ..
                }) => {
                    let p: usize = n.parse().unwrap_or(0);
                    if p == 0 || p > proj.len() {
                        return Err(Error::new(
                            SqlState("42P10"),
                            format!("GROUP BY position {n} is not in select list"),
                        ));
                    }
                    let (e, t) = (proj[p - 1].clone(), types[p - 1]);
                    let mut has_agg = false;
                    e.walk(&mut |x| has_agg |= matches!(x, Expr::Agg(_)));
                    if has_agg {
                        return Err(Error::new(
                            SqlState::GROUPING_ERROR,
                            "aggregate functions are not allowed in GROUP BY",
                        ));
                    }
                    (e, t)
                }
                A::Expr::Identifier(i)
                    if !scope.cols.iter().any(|c| c.name == ident(i)) && names.contains(&ident(i)) =>
                {
                    let k = names.iter().position(|n| *n == ident(i)).expect("contains");
                    let (e, t) = (proj[k].clone(), types[k]);
                    let mut has_agg = false;
                    e.walk(&mut |x| has_agg |= matches!(x, Expr::Agg(_)));
                    if has_agg {
                        return Err(Error::new(
                            SqlState::GROUPING_ERROR,
                            "aggregate functions are not allowed in GROUP BY",
                        ));
                    }
                    (e, t)
                }
                e => self.bind_noagg(e, scope, "GROUP BY")?,
            };
            if t == Ty::Json {
                return Err(no_json_operator("an equality"));
            }
            groups.push(e);
            group_types.push(t);
        }
        Ok((groups, group_types))
    }
}

/// 42883 for grouping, DISTINCT or ORDER BY on json, which has no equality or order.
fn no_json_operator(what: &str) -> Error {
    Error::new(
        SqlState::UNDEFINED_FUNCTION,
        format!("could not identify {what} operator for type json"),
    )
}

/// What an ORDER BY key of type `ty` sorts by: an array by its elements' values
/// ([`Func::ArrayKey`]), anything else by itself.
pub(super) fn order_value(e: Expr, ty: Ty) -> Expr {
    match ty {
        Ty::Array(_) => Expr::Func(Func::ArrayKey, vec![e], ty),
        // PostgreSQL orders regtype values by OID, not by name.
        Ty::RegType => super::regtype::regtype_oid(e),
        _ => e,
    }
}

pub(super) fn sort_key(e: Expr, o: &A::OrderByOptions) -> SortKey {
    let desc = matches!(o.sort, Some(A::OrderBySort::Desc));
    SortKey {
        expr: e,
        desc,
        nulls_first: o.nulls_first.unwrap_or(desc),
    }
}

/// A select item's column name, as PostgreSQL's FigureColname gives it.
pub(super) fn derive_name(e: &A::Expr) -> String {
    figure_name(e).map_or_else(|| "?column?".into(), |(n, _)| n)
}

/// A name and its strength, as FigureColnameInternal: 2 for a column's, a function's or a
/// field's name, 1 for a fallback (a CASE's `case`, a cast's type name) that a stronger name
/// inside a cast or a CASE's ELSE replaces.
fn figure_name(e: &A::Expr) -> Option<(String, u8)> {
    let strong = |n: String| Some((n, 2));
    match e {
        A::Expr::Identifier(i) => strong(ident(i)),
        A::Expr::CompoundIdentifier(p) => strong(p.last().map(ident).unwrap_or_default()),
        A::Expr::Function(f) => match f.name.0.last() {
            Some(A::ObjectNamePart::Identifier(i)) => strong(ident(i)),
            _ => None,
        },
        A::Expr::Cast { expr, data_type, .. } => match figure_name(expr) {
            Some((n, 2)) => strong(n),
            _ => parse_type(data_type).ok().map(|(t, _)| (pg_type_short(t), 1)),
        },
        A::Expr::Nested(x) | A::Expr::Collate { expr: x, .. } => figure_name(x),
        // `(record).field` is named for the field; `a[1]` for its array.
        A::Expr::CompoundFieldAccess { root, access_chain } => {
            match access_chain
                .iter()
                .rev()
                .find(|a| matches!(a, A::AccessExpr::Dot(_)))
            {
                Some(A::AccessExpr::Dot(A::Expr::Identifier(i))) => strong(ident(i)),
                Some(_) => None,
                None => figure_name(root),
            }
        }
        A::Expr::Case { else_result, .. } => match else_result.as_deref().and_then(figure_name) {
            Some((n, 2)) => strong(n),
            _ => Some(("case".into(), 1)),
        },
        A::Expr::Exists { .. } => strong("exists".into()),
        A::Expr::Substring { .. } => strong("substring".into()),
        // A scalar subquery is named for its column.
        A::Expr::Subquery(q) => {
            let mut body = q.body.as_ref();
            while let A::SetExpr::SetOperation { left, .. } = body {
                body = left.as_ref();
            }
            match body {
                A::SetExpr::Select(s) => match s.projection.first()? {
                    A::SelectItem::UnnamedExpr(e) => strong(derive_name(e)),
                    A::SelectItem::ExprWithAlias { alias, .. } => strong(ident(alias)),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

fn pg_type_short(t: DataType) -> String {
    t.short_name().into()
}

/// Rewrites an expression over input rows into one over aggregate output rows
/// (group values, then aggregate results).
fn post_agg(e: Expr, groups: &[Expr], ng: usize, scope: &Scope) -> Result<Expr> {
    if let Some(i) = groups.iter().position(|g| *g == e) {
        return Ok(Expr::Col(i));
    }
    match e {
        Expr::Agg(k) => Ok(Expr::Col(ng + k)),
        Expr::Col(i) => {
            let c = &scope.cols[i];
            let name = match &c.table {
                Some(t) => format!("{t}.{}", c.name),
                None => c.name.clone(),
            };
            Err(Error::new(
                SqlState::GROUPING_ERROR,
                format!("column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function"),
            ))
        }
        e => e.map_children(&mut |c| post_agg(c, groups, ng, scope)),
    }
}

/// A select list and its ORDER BY references.
type Outputs<O> = (Vec<Expr>, Vec<(OrderRef, O)>);

/// Applies `fix` to the select list and to the ORDER BY expressions evaluated before the
/// projection, after a step (grouping, windows, set-returning functions) changed the columns
/// they read.
fn rewrite_outputs<O>(
    proj: Vec<Expr>,
    orefs: Vec<(OrderRef, O)>,
    fix: impl Fn(Expr) -> Result<Expr>,
) -> Result<Outputs<O>> {
    let proj = proj.into_iter().map(&fix).collect::<Result<Vec<_>>>()?;
    let orefs = orefs
        .into_iter()
        .map(|(r, o)| {
            Ok((
                match r {
                    OrderRef::Pre(e, t) => OrderRef::Pre(fix(e)?, t),
                    r => r,
                },
                o,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((proj, orefs))
}
