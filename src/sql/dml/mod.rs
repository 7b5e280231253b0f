//! INSERT / UPDATE / DELETE: binding and execution. A statement first computes all its
//! changes against the transaction's snapshot (reads, expressions, conflict decisions), then
//! applies them, so its own writes never feed back into its reads. Binding and the plans are
//! here; executing them is `exec.rs`.

use std::collections::HashSet;
use std::sync::Arc;

use sqlparser::ast as A;

use super::bind::{ident, object_name, Binder, Scope, ScopeCol};
use super::exec::{run, scan_rows, Exec};
use super::expr::{assign, has_subquery, Ctx, Expr, Ty};
use super::plan::access::apply_filter;
use super::plan::{Access, Column, Plan, Scan};
use crate::engine::catalog::{failing_row, Identity};
use crate::engine::fk;
use crate::error::{Error, Result, SqlState};
use crate::seam::{prelude::*, Interrupt, Locked, StatementWrites, TableDef};
use crate::types::{DataType, Key, Row, Value};

mod exec;

pub use exec::{exec_delete, exec_insert, exec_update};

#[derive(Debug)]
pub enum Conflict {
    Nothing,
    Update {
        sets: Vec<(usize, Expr)>,
        filter: Option<Expr>,
    },
}

pub struct InsertPlan {
    pub table: AnyTable,
    pub def: Arc<TableDef>,
    /// Table column of each source column.
    pub targets: Vec<usize>,
    pub source: Plan,
    /// Default expression of each table column (None: NULL).
    pub defaults: Vec<Option<Expr>>,
    pub conflict: Option<Conflict>,
    pub returning: Option<(Vec<Expr>, Vec<Column>)>,
    /// The table's CHECK constraints (name, condition over a table row).
    pub checks: Vec<(String, Expr)>,
    /// Foreign keys reference the table or are held by it (`engine/fk.rs` runs after the writes).
    pub fk: bool,
}

pub struct UpdatePlan {
    pub scan: Scan,
    /// The whole WHERE clause, re-checked on a row's newest version when a concurrent
    /// transaction changed it (read committed).
    pub recheck: Option<Expr>,
    pub sets: Vec<(usize, Expr)>,
    pub returning: Option<(Vec<Expr>, Vec<Column>)>,
    pub checks: Vec<(String, Expr)>,
    pub fk: bool,
}

pub struct DeletePlan {
    pub scan: Scan,
    pub recheck: Option<Expr>,
    pub returning: Option<(Vec<Expr>, Vec<Column>)>,
    pub fk: bool,
}

fn assignable(from: Ty, to: DataType) -> bool {
    from == Ty::Unknown
        || Ty::from_dt(to) == from
        || (from.is_num() && to.is_numeric())
        || matches!(to, DataType::Text(_) | DataType::Varchar(_) | DataType::Bpchar(_))
        // text[], varchar[] and character(n)[] assign to each other (their elements are strings).
        || (matches!(from, Ty::Array(Ty::Text | Ty::Varchar | Ty::Bpchar))
            && matches!(
                to,
                DataType::Array(DataType::Text(_) | DataType::Varchar(_) | DataType::Bpchar(_))
            ))
        // PostgreSQL's assignment casts among date, timestamp and timestamptz (pgbench's
        // TPC-B stores CURRENT_TIMESTAMP, a timestamptz, into a timestamp column).
        || (matches!(from, Ty::Date | Ty::Timestamp | Ty::TimestampTz)
            && matches!(to, DataType::Date | DataType::Timestamp | DataType::TimestampTz))
        // An array of numbers to an array of other numbers (`ARRAY[1, 2]` into bigint[]), and
        // any array to an array of strings, element by element as the elements assign.
        || matches!((from, to), (Ty::Array(e), DataType::Array(t)) if e.is_num() && t.is_numeric())
        || matches!(
            (from, to),
            (Ty::Array(_), DataType::Array(DataType::Text(_) | DataType::Varchar(_) | DataType::Bpchar(_)))
        )
}

/// Whether output column `i` of `plan` is only ever an untyped NULL (`SELECT NULL`, a
/// VALUES column of NULLs), which PostgreSQL stores in a column of any type, although the
/// query's column reads as text.
fn null_output(plan: &Plan, i: usize) -> bool {
    let null = |e: Option<&Expr>| matches!(e, Some(Expr::Lit(Value::Null)));
    match plan {
        Plan::Values(rows) => rows.iter().all(|r| null(r.get(i))),
        Plan::Project(_, es) => null(es.get(i)),
        Plan::Sort(p, _) | Plan::Distinct(p, _) | Plan::Filter(p, _) | Plan::Limit { input: p, .. } => {
            null_output(p, i)
        }
        _ => false,
    }
}

/// Whether output column `i` of an INSERT's query is a bare quoted literal in the select list
/// of a plain SELECT (`INSERT INTO t (id, a) SELECT 9, 'x'`): PostgreSQL keeps such a literal
/// `unknown` and reads it with the target column's input function (22P02 `malformed array
/// literal` for an array column, `'12'` stored into an integer), where a text value would be
/// 42804. The query's column reads as text; the value is converted when the row is stored.
/// With DISTINCT or GROUP BY the literal is resolved to text first, as in PostgreSQL.
fn untyped_literal_output(q: &A::Query, i: usize) -> bool {
    let A::SetExpr::Select(sel) = q.body.as_ref() else {
        return false;
    };
    let grouped = !matches!(&sel.group_by, A::GroupByExpr::Expressions(g, _) if g.is_empty());
    if sel.distinct.is_some() || grouped {
        return false;
    }
    let mut exprs = Vec::with_capacity(sel.projection.len());
    for p in &sel.projection {
        match p {
            A::SelectItem::UnnamedExpr(e) | A::SelectItem::ExprWithAlias { expr: e, .. } => exprs.push(e),
            // A wildcard shifts the positions; its columns are typed anyway.
            _ => return false,
        }
    }
    matches!(
        exprs.get(i),
        Some(A::Expr::Value(A::ValueWithSpan {
            value: A::Value::SingleQuotedString(_)
                | A::Value::EscapedStringLiteral(_)
                | A::Value::UnicodeStringLiteral(_),
            ..
        }))
    )
}

fn type_error(col: &str, to: DataType, from: Ty) -> Error {
    Error::mismatch(format!(
        "column \"{col}\" is of type {} but expression is of type {}",
        to.sql_name(),
        from.name()
    ))
}

/// Parses an expression kept as SQL text in the catalog (a DEFAULT, a CHECK condition).
fn parse_expr_text(text: &str, what: &str) -> Result<A::Expr> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Error::syntax(format!("invalid {what} expression {text}: {e}")))
}

/// Parses and binds a column's DEFAULT expression.
pub fn bind_default(b: &mut Binder, text: &str, dt: DataType, col: &str) -> Result<Expr> {
    let ast = parse_expr_text(text, "DEFAULT")?;
    let (e, t) = b.bind_noagg(&ast, &Scope::default(), "DEFAULT expressions")?;
    if !e.is_const() {
        return Err(Error::syntax("cannot use column reference in DEFAULT expression"));
    }
    if !assignable(t, dt) {
        return Err(type_error(col, dt, t));
    }
    b.coerce(e, t, Ty::from_dt(dt))
}

/// Parses and binds a CHECK condition over the rows of `def` (as PostgreSQL: boolean, no
/// subqueries, no aggregates).
pub fn bind_check(b: &mut Binder, def: &TableDef, text: &str) -> Result<Expr> {
    let ast = parse_expr_text(text, "CHECK")?;
    let scope = Scope::of_table(def, &def.name);
    let (e, t) = b.bind_noagg(&ast, &scope, "check constraints")?;
    if has_subquery(&e) {
        return Err(Error::unsupported("cannot use subquery in check constraint"));
    }
    b.require_bool(e, t, "CHECK")
}

/// A table's CHECK constraints, bound for a statement that writes its rows.
pub fn bind_checks(b: &mut Binder, def: &TableDef) -> Result<Vec<(String, Expr)>> {
    def.checks
        .iter()
        .map(|c| Ok((c.name.clone(), bind_check(b, def, &c.expr)?)))
        .collect()
}

/// The error for a row that fails CHECK constraint `name`.
pub fn check_violation(table: &str, name: &str) -> Error {
    Error::new(
        SqlState("23514"),
        format!("new row for relation \"{table}\" violates check constraint \"{name}\""),
    )
}

/// Fails with 23514 when a CHECK constraint is false for a row about to be written (true and
/// NULL pass, as in PostgreSQL). NOT NULL is checked first, as PostgreSQL orders the two.
pub fn enforce_checks(def: &TableDef, checks: &[(String, Expr)], row: &[Value], cx: &Ctx) -> Result<()> {
    if checks.is_empty() {
        return Ok(());
    }
    for (v, c) in row.iter().zip(&def.columns) {
        if v.is_null() && !c.nullable {
            return Err(Error::new(
                SqlState::NOT_NULL_VIOLATION,
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    c.name, def.name
                ),
            )
            .with_detail(failing_row(row)));
        }
    }
    for (name, e) in checks {
        if let Value::Bool(false) = e.eval(row, cx)? {
            return Err(check_violation(&def.name, name).with_detail(failing_row(row)));
        }
    }
    Ok(())
}

fn identity_insert_error(col: &str) -> Error {
    Error::new(
        SqlState("428C9"),
        format!(
            "cannot insert a non-DEFAULT value into column \"{col}\" (it is GENERATED ALWAYS AS IDENTITY)"
        ),
    )
}

fn bind_returning(
    b: &mut Binder,
    items: &Option<Vec<A::SelectItem>>,
    scope: &Scope,
) -> Result<Option<(Vec<Expr>, Vec<Column>)>> {
    let Some(items) = items else { return Ok(None) };
    let mut exprs = Vec::new();
    let mut cols = Vec::new();
    for it in items {
        match it {
            A::SelectItem::Wildcard(_) => {
                for (i, c) in scope.cols.iter().enumerate() {
                    exprs.push(Expr::Col(i));
                    cols.push(Column {
                        name: c.name.clone(),
                        ty: c.ty,
                        len: c.len,
                    });
                }
            }
            A::SelectItem::UnnamedExpr(e) | A::SelectItem::ExprWithAlias { expr: e, .. } => {
                let (x, t) = b.bind_noagg_typed(e, scope, "RETURNING")?;
                let (x, t) = if t == Ty::Unknown {
                    (b.coerce(x, t, Ty::Text)?, Ty::Text)
                } else {
                    (x, t)
                };
                let name = match it {
                    A::SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                    _ => match e {
                        A::Expr::Identifier(i) => ident(i),
                        A::Expr::CompoundIdentifier(p) => p.last().map(ident).unwrap_or_default(),
                        _ => "?column?".into(),
                    },
                };
                let len = b.expr_len(&x, scope);
                exprs.push(x);
                cols.push(Column { name, ty: t, len });
            }
            other => {
                return Err(Error::unsupported(format!(
                    "RETURNING item {other} is not supported"
                )))
            }
        }
    }
    Ok(Some((exprs, cols)))
}

fn bind_sets(
    b: &mut Binder,
    def: &TableDef,
    assignments: &[A::Assignment],
    scope: &Scope,
) -> Result<Vec<(usize, Expr)>> {
    let mut sets = Vec::new();
    for a in assignments {
        let name = match &a.target {
            A::AssignmentTarget::ColumnName(n) => match n.0.last() {
                Some(A::ObjectNamePart::Identifier(i)) => ident(i),
                _ => return Err(Error::syntax(format!("invalid assignment target {n}"))),
            },
            A::AssignmentTarget::Tuple(_) => {
                return Err(Error::unsupported("multiple-column assignment is not supported"))
            }
        };
        let c = def.column_index(&name).map_err(|_| {
            Error::new(
                SqlState::UNDEFINED_COLUMN,
                format!("column \"{name}\" of relation \"{}\" does not exist", def.name),
            )
        })?;
        if sets.iter().any(|(x, _)| *x == c) {
            return Err(Error::syntax(format!(
                "multiple assignments to same column \"{name}\""
            )));
        }
        let col = &def.columns[c];
        let e = if matches!(&a.value, A::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"))
        {
            match &col.default {
                Some(t) => bind_default(b, t, col.ty, &col.name)?,
                None => Expr::Lit(Value::Null),
            }
        } else {
            if col.identity == Some(Identity::Always) {
                return Err(Error::new(
                    SqlState("428C9"),
                    format!("column \"{}\" can only be updated to DEFAULT", col.name),
                ));
            }
            let (e, t) = b.bind_noagg(&a.value, scope, "UPDATE")?;
            if !assignable(t, col.ty) {
                return Err(type_error(&col.name, col.ty, t));
            }
            b.coerce(e, t, Ty::from_dt(col.ty))?
        };
        sets.push((c, e));
    }
    Ok(sets)
}

pub fn bind_insert(b: &mut Binder, ins: &A::Insert) -> Result<InsertPlan> {
    let A::TableObject::TableName(name) = &ins.table else {
        return Err(Error::unsupported(
            "INSERT into a table function is not supported",
        ));
    };
    if ins.or.is_some()
        || ins.ignore
        || ins.overwrite
        || ins.partitioned.is_some()
        || !ins.assignments.is_empty()
    {
        return Err(Error::unsupported("this form of INSERT is not supported"));
    }
    let table = b.table(name)?;
    let def = table.def();
    let alias = match &ins.table_alias {
        Some(a) => ident(&a.alias),
        None => def.name.clone(),
    };
    let mut targets = Vec::new();
    if ins.columns.is_empty() {
        targets.extend(0..def.columns.len());
    } else {
        for c in &ins.columns {
            let n = match c.0.last() {
                Some(A::ObjectNamePart::Identifier(i)) => ident(i),
                _ => return Err(Error::syntax(format!("invalid column {c}"))),
            };
            let i = def.column_index(&n).map_err(|_| {
                Error::new(
                    SqlState::UNDEFINED_COLUMN,
                    format!("column \"{n}\" of relation \"{}\" does not exist", def.name),
                )
            })?;
            if targets.contains(&i) {
                return Err(Error::new(
                    SqlState::DUPLICATE_COLUMN,
                    format!("column \"{n}\" specified more than once"),
                ));
            }
            targets.push(i);
        }
    }
    let mut defaults = Vec::new();
    for c in &def.columns {
        defaults.push(match &c.default {
            Some(t) => Some(bind_default(b, t, c.ty, &c.name)?),
            None => None,
        });
    }
    let Some(src) = &ins.source else {
        // INSERT ... DEFAULT VALUES
        return finish_insert(
            b,
            ins,
            table,
            def,
            vec![],
            Plan::Values(vec![vec![]]),
            defaults,
            &alias,
        );
    };
    let arity = |n: usize, targets: &[usize]| -> Result<()> {
        if n > targets.len() {
            Err(Error::syntax("INSERT has more expressions than target columns"))
        } else if n < targets.len() && !ins.columns.is_empty() {
            Err(Error::syntax("INSERT has more target columns than expressions"))
        } else {
            Ok(())
        }
    };
    let source = match src.body.as_ref() {
        A::SetExpr::Values(v)
            if src.order_by.is_none() && src.limit_clause.is_none() && src.with.is_none() =>
        {
            let mut rows = Vec::new();
            let width = v.rows.first().map_or(0, |r| r.len());
            for r in &v.rows {
                if r.len() != width {
                    return Err(Error::syntax("VALUES lists must all be the same length"));
                }
                arity(r.len(), &targets)?;
                let mut row = Vec::new();
                for (i, e) in r.iter().enumerate() {
                    let c = targets[i];
                    let col = &def.columns[c];
                    if matches!(e, A::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
                    {
                        row.push(defaults[c].clone().unwrap_or(Expr::Lit(Value::Null)));
                        continue;
                    }
                    if col.identity == Some(Identity::Always) {
                        return Err(identity_insert_error(&col.name));
                    }
                    let (x, t) = b.bind_noagg(e, &Scope::default(), "VALUES")?;
                    if !assignable(t, col.ty) {
                        return Err(type_error(&col.name, col.ty, t));
                    }
                    row.push(b.coerce(x, t, Ty::from_dt(col.ty))?);
                }
                rows.push(row);
            }
            targets.truncate(width);
            Plan::Values(rows)
        }
        _ => {
            let (plan, cols) = b.bind_query(src)?;
            arity(cols.len(), &targets)?;
            targets.truncate(cols.len());
            for (i, (c, &t)) in cols.iter().zip(&targets).enumerate() {
                let col = &def.columns[t];
                if col.identity == Some(Identity::Always) {
                    return Err(identity_insert_error(&col.name));
                }
                if !assignable(c.ty, col.ty) && !null_output(&plan, i) && !untyped_literal_output(src, i) {
                    return Err(type_error(&col.name, col.ty, c.ty));
                }
            }
            // An array of another element type is cast element by element (`numeric[]` into
            // an `int[]` column rounds each element).
            let recast = |(c, t): (&Column, &usize)| match (c.ty, Ty::from_dt(def.columns[*t].ty)) {
                (Ty::Array(a), to @ Ty::Array(e)) if a.operand() != e.operand() => Some(to),
                _ => None,
            };
            if cols.iter().zip(&targets).any(|x| recast(x).is_some()) {
                let mut exprs = Vec::with_capacity(cols.len());
                for (i, x) in cols.iter().zip(&targets).enumerate() {
                    exprs.push(match recast(x) {
                        Some(to) => b.coerce(Expr::Col(i), x.0.ty, to)?,
                        None => Expr::Col(i),
                    });
                }
                Plan::Project(Box::new(plan), exprs)
            } else {
                plan
            }
        }
    };
    finish_insert(b, ins, table, def, targets, source, defaults, &alias)
}

#[allow(clippy::too_many_arguments)]
fn finish_insert(
    b: &mut Binder,
    ins: &A::Insert,
    table: AnyTable,
    def: Arc<TableDef>,
    targets: Vec<usize>,
    source: Plan,
    defaults: Vec<Option<Expr>>,
    alias: &str,
) -> Result<InsertPlan> {
    let scope = Scope::of_table(&def, alias);
    let conflict = match &ins.on {
        None => None,
        Some(A::OnInsert::OnConflict(oc)) => {
            match &oc.conflict_target {
                None => {}
                Some(A::ConflictTarget::Columns(cols)) => {
                    let mut idx: Vec<usize> = Vec::new();
                    for c in cols {
                        idx.push(def.column_index(&ident(c))?);
                    }
                    idx.sort_unstable();
                    let mut pk = def.primary_key.clone();
                    pk.sort_unstable();
                    if idx != pk || pk.is_empty() {
                        return Err(Error::new(
                            SqlState("42P10"),
                            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                        ));
                    }
                }
                Some(A::ConflictTarget::OnConstraint(n)) => {
                    let n = object_name(n)?;
                    if def.pkey_name.as_deref() != Some(n.as_str()) {
                        return Err(Error::new(
                            SqlState::UNDEFINED_OBJECT,
                            format!("constraint \"{n}\" does not exist"),
                        ));
                    }
                }
            }
            if !def.has_primary_key() {
                return Err(Error::new(
                    SqlState("42P10"),
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                ));
            }
            Some(match &oc.action {
                A::OnConflictAction::DoNothing => Conflict::Nothing,
                A::OnConflictAction::DoUpdate(du) => {
                    let mut sc = scope.clone();
                    sc.cols.extend(def.columns.iter().map(|c| ScopeCol {
                        table: Some("excluded".into()),
                        name: c.name.clone(),
                        ty: Ty::from_dt(c.ty),
                        len: c.ty.typmod_len(),
                        not_null: false,
                    }));
                    sc.tables.push("excluded".into());
                    let sets = bind_sets(b, &def, &du.assignments, &sc)?;
                    let filter = match &du.selection {
                        Some(w) => {
                            let (e, t) = b.bind_noagg(w, &sc, "WHERE")?;
                            Some(b.require_bool(e, t, "WHERE")?)
                        }
                        None => None,
                    };
                    Conflict::Update { sets, filter }
                }
            })
        }
        Some(_) => return Err(Error::unsupported("ON DUPLICATE KEY is not supported")),
    };
    let returning = bind_returning(b, &ins.returning, &scope)?;
    let checks = bind_checks(b, &def)?;
    let fk = fk::involved(&b.engine()?.tables(), &def);
    Ok(InsertPlan {
        table,
        def,
        targets,
        source,
        defaults,
        conflict,
        returning,
        checks,
        fk,
    })
}

fn table_scan(b: &mut Binder, twj: &A::TableWithJoins) -> Result<(Scan, Scope)> {
    if !twj.joins.is_empty() {
        return Err(Error::unsupported("joins in UPDATE / DELETE are not supported"));
    }
    let A::TableFactor::Table { name, alias, .. } = &twj.relation else {
        return Err(Error::unsupported("UPDATE / DELETE of a non-table"));
    };
    let table = b.table(name)?;
    let def = table.def();
    let alias = alias
        .as_ref()
        .map(|a| ident(&a.name))
        .unwrap_or_else(|| def.name.clone());
    let scope = Scope::of_table(&def, &alias);
    Ok((
        Scan {
            table,
            def,
            alias,
            access: Access::Full,
            filter: None,
            reverse: false,
            stop_after: None,
        },
        scope,
    ))
}

/// Folds WHERE into the scan; also returns it whole, for re-checks on newer row versions.
fn with_where(
    b: &mut Binder,
    scan: Scan,
    scope: &Scope,
    w: &Option<A::Expr>,
) -> Result<(Scan, Option<Expr>)> {
    let Some(w) = w else { return Ok((scan, None)) };
    let (e, t) = b.bind_noagg(w, scope, "WHERE")?;
    let e = b.require_bool(e, t, "WHERE")?;
    match apply_filter(Plan::Scan(scan), e.clone()) {
        Plan::Scan(s) => Ok((s, Some(e))),
        _ => Err(Error::internal("filter did not fold into the scan")),
    }
}

pub fn bind_update(b: &mut Binder, u: &A::Update) -> Result<UpdatePlan> {
    if u.from.is_some() || u.limit.is_some() || !u.order_by.is_empty() || u.or.is_some() {
        return Err(Error::unsupported(
            "UPDATE ... FROM / ORDER BY / LIMIT is not supported",
        ));
    }
    let (scan, scope) = table_scan(b, &u.table)?;
    let sets = bind_sets(b, &scan.def, &u.assignments, &scope)?;
    let (scan, recheck) = with_where(b, scan, &scope, &u.selection)?;
    let returning = bind_returning(b, &u.returning, &scope)?;
    let checks = bind_checks(b, &scan.def)?;
    let fk = fk::involved(&b.engine()?.tables(), &scan.def);
    Ok(UpdatePlan {
        scan,
        recheck,
        sets,
        returning,
        checks,
        fk,
    })
}

pub fn bind_delete(b: &mut Binder, d: &A::Delete) -> Result<DeletePlan> {
    if d.using.is_some() || d.limit.is_some() || !d.order_by.is_empty() || !d.tables.is_empty() {
        return Err(Error::unsupported(
            "DELETE ... USING / ORDER BY / LIMIT is not supported",
        ));
    }
    let from = match &d.from {
        A::FromTable::WithFromKeyword(v) => v,
        A::FromTable::WithoutKeyword(_) => {
            return Err(Error::syntax("syntax error at or near \"DELETE\": FROM expected"))
        }
    };
    let [twj] = from.as_slice() else {
        return Err(Error::unsupported("DELETE from several tables is not supported"));
    };
    let (scan, scope) = table_scan(b, twj)?;
    let (scan, recheck) = with_where(b, scan, &scope, &d.selection)?;
    let returning = bind_returning(b, &d.returning, &scope)?;
    let fk = fk::involved(&b.engine()?.tables(), &scan.def);
    Ok(DeletePlan {
        scan,
        recheck,
        returning,
        fk,
    })
}
