//! The binder: resolves names and types in the sqlparser AST and builds plans, choosing access
//! paths (ALEX point lookups and range scans, secondary indexes, index-lookup joins).

use std::collections::BTreeMap;
use std::sync::Arc;

use sqlparser::ast as A;

use super::expr::{cast, cast_allowed, ArOp, CmpOp, Expr, Func, Ty};
use super::plan::{Access, AggFunc, AggSpec, Column, Lookup, Plan, Scan, SortKey};
use crate::engine::{Database, Table, TableDef};
use crate::error::{Error, Result, SqlState};
use crate::types::{DataType, Value};

#[derive(Clone, Debug)]
pub struct ScopeCol {
    pub table: Option<String>,
    pub name: String,
    pub ty: Ty,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub cols: Vec<ScopeCol>,
    pub tables: Vec<String>,
}

impl Scope {
    pub fn of_table(def: &TableDef, alias: &str) -> Scope {
        Scope {
            cols: def
                .columns
                .iter()
                .map(|c| ScopeCol {
                    table: Some(alias.to_string()),
                    name: c.name.clone(),
                    ty: Ty::from_dt(c.ty),
                })
                .collect(),
            tables: vec![alias.to_string()],
        }
    }

    fn concat(mut self, other: Scope) -> Scope {
        self.cols.extend(other.cols);
        self.tables.extend(other.tables);
        self
    }
}

pub fn ident(i: &A::Ident) -> String {
    if i.quote_style.is_some() {
        i.value.clone()
    } else {
        i.value.to_lowercase()
    }
}

/// The unqualified object name (`public.t` and `t` are the same table).
pub fn object_name(n: &A::ObjectName) -> Result<String> {
    let parts: Vec<String> =
        n.0.iter()
            .map(|p| match p {
                A::ObjectNamePart::Identifier(i) => Ok(ident(i)),
                _ => Err(Error::unsupported(format!("object name {n} is not supported"))),
            })
            .collect::<Result<_>>()?;
    match parts.as_slice() {
        [t] => Ok(t.clone()),
        [s, t] if s == "public" || s == "pg_temp" => Ok(t.clone()),
        // Augur has one schema: a name in any other does not exist (PostgreSQL's answer for an
        // unknown schema when reading).
        [_, _] => Err(Error::undefined_table(&parts.join("."))),
        _ => Err(Error::unsupported(format!("qualified name {n} is not supported"))),
    }
}

const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "as",
    "asc",
    "both",
    "case",
    "cast",
    "check",
    "column",
    "constraint",
    "create",
    "default",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "intersect",
    "into",
    "leading",
    "limit",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "primary",
    "references",
    "select",
    "table",
    "then",
    "to",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "when",
    "where",
    "with",
];

/// A name for a new table or column: an unquoted reserved word is a syntax error, as in
/// PostgreSQL (sqlparser accepts most of them).
pub(crate) fn check_name(i: &A::Ident) -> Result<String> {
    let n = ident(i);
    if i.quote_style.is_none() && RESERVED.contains(&n.as_str()) {
        return Err(Error::syntax(format!("syntax error at or near \"{}\"", i.value)));
    }
    Ok(n)
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("{what} is not supported by Augur"))
}

/// A SQL type name to a column type (and varchar length).
pub fn parse_type(dt: &A::DataType) -> Result<(DataType, Option<u32>)> {
    let s = dt.to_string().to_lowercase();
    let (base, args) = match s.find('(') {
        Some(i) => (
            s[..i].trim().to_string(),
            Some(s[i + 1..].trim_end_matches(')').to_string()),
        ),
        None => (s.trim().to_string(), None),
    };
    let len = args
        .as_deref()
        .and_then(|a| a.split(',').next())
        .and_then(|a| a.trim().parse::<u32>().ok());
    let base = base.trim_end_matches("[]").to_string();
    let t = match base.as_str() {
        "real" | "float4" | "numeric" | "decimal" | "float" => DataType::Float8,
        "timestamp without time zone" | "timestamp" => DataType::Timestamp,
        "serial" | "serial4" => DataType::Int4,
        "bigserial" | "serial8" => DataType::Int8,
        "character" | "char" | "bpchar" => DataType::Text(len.or(Some(1))),
        _ => DataType::from_sql_name(&base, len)?,
    };
    Ok((t, if matches!(t, DataType::Text(_)) { len } else { None }))
}

/// A numeric literal: int4, int8, or float8 (Augur has no numeric type: a literal beyond
/// float8's range is 22003 rather than infinity).
fn number(s: &str) -> Result<(Value, Ty)> {
    if !s.contains(['.', 'e', 'E']) {
        if let Ok(i) = s.parse::<i64>() {
            return Ok(if i32::try_from(i).is_ok() {
                (Value::Int(i), Ty::Int4)
            } else {
                (Value::Int(i), Ty::Int8)
            });
        }
    }
    let mut f = s.parse::<f64>().unwrap_or(f64::NAN);
    if !s.contains(['.', 'e', 'E']) && f == i64::MIN as f64 {
        // An integer literal just below the int8 range must not round into it.
        f = f.next_down();
    }
    if f.is_infinite() {
        return Err(Error::out_of_range(format!(
            "\"{s}\" is out of range for type double precision"
        )));
    }
    Ok((Value::Float(f), Ty::Float8))
}

fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(a, b) => {
            split_and(*a, out);
            split_and(*b, out);
        }
        e => out.push(e),
    }
}

pub fn conjoin(v: Vec<Expr>) -> Option<Expr> {
    v.into_iter().reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

pub struct Binder<'a> {
    pub db: &'a Database,
    pub settings: Option<&'a BTreeMap<String, String>>,
    /// What `pg_backend_pid()` returns: the connection's BackendKeyData process id (the one a
    /// CancelRequest names); None outside the server (the OS process id then).
    pub backend_pid: Option<i32>,
    pub params: Vec<Ty>,
    pub subplans: Vec<Plan>,
    pub tables: Vec<Arc<Table>>,
    agg_sink: Option<Vec<AggSpec>>,
    agg_ctx: &'static str,
    in_agg: bool,
}

enum OrderRef {
    Out(usize),
    Pre(Expr),
}

impl<'a> Binder<'a> {
    pub fn new(db: &'a Database, settings: Option<&'a BTreeMap<String, String>>) -> Binder<'a> {
        Binder {
            db,
            settings,
            backend_pid: None,
            params: Vec::new(),
            subplans: Vec::new(),
            tables: Vec::new(),
            agg_sink: None,
            agg_ctx: "WHERE",
            in_agg: false,
        }
    }

    pub fn table(&mut self, name: &A::ObjectName) -> Result<Arc<Table>> {
        let n = object_name(name)?;
        let t = self.db.table(&n)?;
        self.tables.push(t.clone());
        Ok(t)
    }

    // ---------------------------------------------------------------- expressions

    /// Converts an expression of type `from` to type `to` (literals and parameters are
    /// converted now; other expressions get a cast).
    pub fn coerce(&mut self, e: Expr, from: Ty, to: Ty) -> Result<Expr> {
        if from == to || to == Ty::Unknown {
            return Ok(e);
        }
        Ok(match e {
            Expr::Lit(v) => Expr::Lit(cast(v, to, None)?),
            Expr::Param(i, Ty::Unknown) => {
                self.params[i] = to;
                Expr::Param(i, to)
            }
            e if from.is_int() && to.is_int() => e,
            e => Expr::Cast(Box::new(e), to, None),
        })
    }

    pub fn require_bool(&mut self, e: Expr, ty: Ty, ctx: &str) -> Result<Expr> {
        match ty {
            Ty::Bool => Ok(e),
            Ty::Unknown => self.coerce(e, ty, Ty::Bool),
            t => Err(Error::mismatch(format!(
                "argument of {ctx} must be type boolean, not type {}",
                t.name()
            ))),
        }
    }

    fn resolve(&self, scope: &Scope, qual: Option<&str>, name: &str) -> Result<(usize, Ty)> {
        let mut found: Option<(usize, Ty)> = None;
        for (i, c) in scope.cols.iter().enumerate() {
            if c.name == name && qual.is_none_or(|q| c.table.as_deref() == Some(q)) {
                if found.is_some() {
                    return Err(Error::new(
                        SqlState::AMBIGUOUS_COLUMN,
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some((i, c.ty));
            }
        }
        match (found, qual) {
            (Some(f), _) => Ok(f),
            (None, Some(q)) if !scope.tables.iter().any(|t| t == q) => Err(Error::new(
                SqlState::UNDEFINED_TABLE,
                format!("missing FROM-clause entry for table \"{q}\""),
            )),
            (None, Some(q)) => Err(Error::undefined_column(&format!("{q}.{name}"))),
            (None, None) => Err(Error::undefined_column(name)),
        }
    }

    /// Binds with aggregates forbidden (`ctx` names the clause in the error).
    pub fn bind_noagg(&mut self, e: &A::Expr, scope: &Scope, ctx: &'static str) -> Result<(Expr, Ty)> {
        let saved = self.agg_sink.take();
        let saved_ctx = std::mem::replace(&mut self.agg_ctx, ctx);
        let r = self.bind_expr(e, scope);
        self.agg_sink = saved;
        self.agg_ctx = saved_ctx;
        r
    }

    fn compare(&mut self, op: CmpOp, l: (Expr, Ty), r: (Expr, Ty)) -> Result<(Expr, Ty)> {
        let (l, r) = self.comparable(l, r, op.sym())?;
        Ok((Expr::Cmp(op, Box::new(l), Box::new(r)), Ty::Bool))
    }

    /// Makes two operands comparable (resolving untyped literals), or fails with 42883.
    fn comparable(&mut self, (l, lt): (Expr, Ty), (r, rt): (Expr, Ty), op: &str) -> Result<(Expr, Expr)> {
        let target = match (lt, rt) {
            (Ty::Unknown, Ty::Unknown) => Ty::Text,
            (Ty::Unknown, t) | (t, Ty::Unknown) => t,
            (a, b) if a == b => a,
            (a, b) if a.is_num() && b.is_num() => return Ok((l, r)),
            (a, b) => {
                return Err(Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("operator does not exist: {} {op} {}", a.name(), b.name()),
                ))
            }
        };
        Ok((self.coerce(l, lt, target)?, self.coerce(r, rt, target)?))
    }

    fn arith(&mut self, op: ArOp, (l, lt): (Expr, Ty), (r, rt): (Expr, Ty)) -> Result<(Expr, Ty)> {
        let (lt2, rt2) = match (lt, rt) {
            (Ty::Unknown, t) if t.is_num() => (t, t),
            (t, Ty::Unknown) if t.is_num() => (t, t),
            p => p,
        };
        if !(lt2.is_num() && rt2.is_num()) {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!(
                    "operator does not exist: {} {} {}",
                    lt.name(),
                    op.sym(),
                    rt.name()
                ),
            ));
        }
        let ty = Ty::unify(lt2, rt2).unwrap_or(Ty::Float8);
        let l = self.coerce(l, lt, lt2)?;
        let r = self.coerce(r, rt, rt2)?;
        // Constant folding keeps literal arithmetic cheap (and errors surface when binding).
        // (An error is left for run time: `CASE WHEN true THEN 1 ELSE 1 / 0 END` is fine.)
        if let (Expr::Lit(a), Expr::Lit(b)) = (&l, &r) {
            if let Ok(v) = super::expr::arith(op, a, b, ty) {
                return Ok((Expr::Lit(v), ty));
            }
        }
        Ok((Expr::Arith(op, Box::new(l), Box::new(r), ty), ty))
    }

    fn unify_all(&mut self, items: Vec<(Expr, Ty)>, what: &str) -> Result<(Vec<Expr>, Ty)> {
        let mut ty = Ty::Unknown;
        for (_, t) in &items {
            ty = Ty::unify(ty, *t).ok_or_else(|| {
                Error::mismatch(format!(
                    "{what} types {} and {} cannot be matched",
                    ty.name(),
                    t.name()
                ))
            })?;
        }
        let out = items
            .into_iter()
            .map(|(e, t)| self.coerce(e, t, ty))
            .collect::<Result<Vec<_>>>()?;
        Ok((out, ty))
    }

    pub fn bind_expr(&mut self, e: &A::Expr, scope: &Scope) -> Result<(Expr, Ty)> {
        use A::Expr as E;
        Ok(match e {
            E::Identifier(i) => {
                let (c, t) = self.resolve(scope, None, &ident(i))?;
                (Expr::Col(c), t)
            }
            E::CompoundIdentifier(parts) => {
                let names: Vec<String> = parts.iter().map(ident).collect();
                let (q, n) = match names.as_slice() {
                    [q, n] => (q.as_str(), n.as_str()),
                    [s, q, n] if s == "public" => (q.as_str(), n.as_str()),
                    _ => return Err(unsupported(format!("column reference {e}"))),
                };
                let (c, t) = self.resolve(scope, Some(q), n)?;
                (Expr::Col(c), t)
            }
            E::Value(v) => self.bind_value(&v.value)?,
            E::Nested(inner) => self.bind_expr(inner, scope)?,
            E::UnaryOp { op, expr } => match op {
                A::UnaryOperator::Minus => {
                    if let E::Value(A::ValueWithSpan {
                        value: A::Value::Number(n, _),
                        ..
                    }) = expr.as_ref()
                    {
                        let (v, t) = number(&format!("-{n}"))?;
                        return Ok((Expr::Lit(v), t));
                    }
                    let (x, t) = self.bind_expr(expr, scope)?;
                    let t2 = if t == Ty::Unknown { Ty::Float8 } else { t };
                    if !t2.is_num() {
                        return Err(Error::new(
                            SqlState::UNDEFINED_FUNCTION,
                            format!("operator does not exist: - {}", t.name()),
                        ));
                    }
                    let x = self.coerce(x, t, t2)?;
                    if let Expr::Lit(v) = &x {
                        // Floats negate directly: 0 - 0.0 would lose the sign of -0.
                        let v = match v {
                            Value::Float(f) => Value::Float(-f),
                            v => super::expr::arith(ArOp::Sub, &Value::Int(0), v, t2)?,
                        };
                        return Ok((Expr::Lit(v), t2));
                    }
                    (Expr::Neg(Box::new(x), t2), t2)
                }
                A::UnaryOperator::Plus => {
                    let (x, t) = self.bind_expr(expr, scope)?;
                    if !(t.is_num() || t == Ty::Unknown) {
                        return Err(Error::new(
                            SqlState::UNDEFINED_FUNCTION,
                            format!("operator does not exist: + {}", t.name()),
                        ));
                    }
                    (x, t)
                }
                A::UnaryOperator::Not => {
                    let (x, t) = self.bind_expr(expr, scope)?;
                    let x = self.require_bool(x, t, "NOT")?;
                    (Expr::Not(Box::new(x)), Ty::Bool)
                }
                op => return Err(unsupported(format!("operator {op}"))),
            },
            E::BinaryOp { left, op, right } => {
                use A::BinaryOperator as B;
                let l = self.bind_expr(left, scope)?;
                let r = self.bind_expr(right, scope)?;
                match op {
                    B::And | B::Or => {
                        let name = if *op == B::And { "AND" } else { "OR" };
                        let a = self.require_bool(l.0, l.1, name)?;
                        let b = self.require_bool(r.0, r.1, name)?;
                        let e = if *op == B::And {
                            Expr::And(Box::new(a), Box::new(b))
                        } else {
                            Expr::Or(Box::new(a), Box::new(b))
                        };
                        (e, Ty::Bool)
                    }
                    B::Eq => self.compare(CmpOp::Eq, l, r)?,
                    B::NotEq => self.compare(CmpOp::Ne, l, r)?,
                    B::Lt => self.compare(CmpOp::Lt, l, r)?,
                    B::LtEq => self.compare(CmpOp::Le, l, r)?,
                    B::Gt => self.compare(CmpOp::Gt, l, r)?,
                    B::GtEq => self.compare(CmpOp::Ge, l, r)?,
                    B::Plus => self.arith(ArOp::Add, l, r)?,
                    B::Minus => self.arith(ArOp::Sub, l, r)?,
                    B::Multiply => self.arith(ArOp::Mul, l, r)?,
                    B::Divide => self.arith(ArOp::Div, l, r)?,
                    B::Modulo => self.arith(ArOp::Mod, l, r)?,
                    B::StringConcat => {
                        let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown);
                        if !texty(l.1) && !texty(r.1) {
                            return Err(Error::new(
                                SqlState::UNDEFINED_FUNCTION,
                                format!("operator does not exist: {} || {}", l.1.name(), r.1.name()),
                            ));
                        }
                        (Expr::Concat(Box::new(l.0), Box::new(r.0)), Ty::Text)
                    }
                    op => return Err(unsupported(format!("operator {op}"))),
                }
            }
            E::IsNull(x) | E::IsNotNull(x) => {
                let (x, _) = self.bind_expr(x, scope)?;
                (Expr::IsNull(Box::new(x), matches!(e, E::IsNotNull(_))), Ty::Bool)
            }
            E::IsTrue(x)
            | E::IsNotTrue(x)
            | E::IsFalse(x)
            | E::IsNotFalse(x)
            | E::IsUnknown(x)
            | E::IsNotUnknown(x) => {
                let (b, t) = self.bind_expr(x, scope)?;
                let b = self.require_bool(b, t, "IS")?;
                let b = Box::new(b);
                let r = match e {
                    E::IsTrue(_) => Expr::IsBool(b, true, false),
                    E::IsNotTrue(_) => Expr::IsBool(b, true, true),
                    E::IsFalse(_) => Expr::IsBool(b, false, false),
                    E::IsNotFalse(_) => Expr::IsBool(b, false, true),
                    E::IsUnknown(_) => Expr::IsNull(b, false),
                    _ => Expr::IsNull(b, true),
                };
                (r, Ty::Bool)
            }
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let l = self.bind_expr(a, scope)?;
                let r = self.bind_expr(b, scope)?;
                let (l, r) = self.comparable(l, r, "=")?;
                (
                    Expr::IsDistinct(Box::new(l), Box::new(r), matches!(e, E::IsNotDistinctFrom(..))),
                    Ty::Bool,
                )
            }
            E::InList { expr, list, negated } => {
                let mut items = vec![self.bind_expr(expr, scope)?];
                for x in list {
                    items.push(self.bind_expr(x, scope)?);
                }
                let lt = items[0].1;
                let mut ty = Ty::Unknown;
                for (_, t) in &items {
                    ty = match Ty::unify(ty, *t) {
                        Some(t) => t,
                        None => {
                            return Err(Error::new(
                                SqlState::UNDEFINED_FUNCTION,
                                format!("operator does not exist: {} = {}", lt.name(), t.name()),
                            ))
                        }
                    };
                }
                if ty == Ty::Unknown {
                    ty = Ty::Text;
                }
                let mut out = Vec::new();
                for (x, t) in items {
                    let target = if t.is_num() && ty.is_num() { t } else { ty };
                    out.push(self.coerce(x, t, target)?);
                }
                let x = out.remove(0);
                (Expr::InList(Box::new(x), out, *negated), Ty::Bool)
            }
            E::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                if let A::SetExpr::Select(sel) = subquery.body.as_ref() {
                    let wild = sel.projection.iter().any(|p| {
                        !matches!(
                            p,
                            A::SelectItem::UnnamedExpr(_) | A::SelectItem::ExprWithAlias { .. }
                        )
                    });
                    if sel.projection.len() > 1 && !wild {
                        return Err(Error::syntax("subquery has too many columns"));
                    }
                }
                let (x, xt) = self.bind_expr(expr, scope)?;
                let (n, cols) = self.subquery(subquery)?;
                if cols.len() != 1 {
                    return Err(Error::syntax("subquery has too many columns"));
                }
                let st = cols[0].ty;
                let (x, _) = self.comparable((x, xt), (Expr::Lit(Value::Null), st), "=")?;
                (Expr::InSub(Box::new(x), n, *negated), Ty::Bool)
            }
            E::Exists { subquery, negated } => {
                let (n, _) = self.subquery(subquery)?;
                (Expr::Exists(n, *negated), Ty::Bool)
            }
            E::Subquery(q) => {
                let (n, cols) = self.subquery(q)?;
                if cols.len() != 1 {
                    return Err(Error::syntax("subquery must return only one column"));
                }
                (Expr::ScalarSub(n), cols[0].ty)
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.bind_expr(expr, scope)?;
                let lo = self.bind_expr(low, scope)?;
                let hi = self.bind_expr(high, scope)?;
                let (a, b) = self.compare(CmpOp::Ge, x.clone(), lo)?;
                let (c, _) = self.compare(CmpOp::Le, x, hi)?;
                let e = Expr::And(Box::new(a), Box::new(c));
                (if *negated { Expr::Not(Box::new(e)) } else { e }, b)
            }
            E::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            }
            | E::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char,
            } => {
                let (x, xt) = self.bind_expr(expr, scope)?;
                let (p, pt) = self.bind_expr(pattern, scope)?;
                let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown);
                if !texty(xt) || !texty(pt) {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("operator does not exist: {} ~~ {}", xt.name(), pt.name()),
                    ));
                }
                let x = self.coerce(x, xt, Ty::Text)?;
                let p = self.coerce(p, pt, Ty::Text)?;
                let esc = match escape_char {
                    Some(c) => Some(Box::new(self.bind_expr(c, scope)?.0)),
                    None => None,
                };
                (
                    Expr::Like(
                        Box::new(x),
                        Box::new(p),
                        esc,
                        *negated,
                        matches!(e, E::ILike { .. }),
                    ),
                    Ty::Bool,
                )
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let op = match operand {
                    Some(o) => Some(self.bind_expr(o, scope)?),
                    None => None,
                };
                let mut conds = Vec::new();
                let mut results = Vec::new();
                for w in conditions {
                    let c = self.bind_expr(&w.condition, scope)?;
                    let c = match &op {
                        Some(o) => {
                            let (a, b) = self.comparable(o.clone(), c, "=")?;
                            let _ = a;
                            b
                        }
                        None => self.require_bool(c.0, c.1, "CASE/WHEN")?,
                    };
                    conds.push(c);
                    results.push(self.bind_expr(&w.result, scope)?);
                }
                if let Some(el) = else_result {
                    results.push(self.bind_expr(el, scope)?);
                }
                let (mut results, mut ty) = self.unify_all(results, "CASE")?;
                if ty == Ty::Unknown {
                    ty = Ty::Text;
                    results = results
                        .into_iter()
                        .map(|r| self.coerce(r, Ty::Unknown, Ty::Text))
                        .collect::<Result<_>>()?;
                }
                let els = if else_result.is_some() {
                    results.pop().map(Box::new)
                } else {
                    None
                };
                let operand = match op {
                    Some((o, ot)) => {
                        let target = if ot == Ty::Unknown { Ty::Text } else { ot };
                        Some(Box::new(self.coerce(o, ot, target)?))
                    }
                    None => None,
                };
                (
                    Expr::Case {
                        operand,
                        whens: conds.into_iter().zip(results).collect(),
                        els,
                    },
                    ty,
                )
            }
            E::Cast {
                expr,
                data_type,
                kind,
                ..
            } => {
                if matches!(kind, A::CastKind::TryCast | A::CastKind::SafeCast) {
                    return Err(unsupported("TRY_CAST"));
                }
                let (dt, len) = parse_type(data_type)?;
                let (x, xt) = self.bind_expr(expr, scope)?;
                self.cast_expr(x, xt, Ty::from_dt(dt), len)?
            }
            E::TypedString(ts) => {
                let (dt, len) = parse_type(&ts.data_type)?;
                let (x, xt) = self.bind_value(&ts.value.value)?;
                self.cast_expr(x, xt, Ty::from_dt(dt), len)?
            }
            E::Function(f) => self.bind_function(f, scope)?,
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.bind_expr(expr, scope)?];
                args.push(match substring_from {
                    Some(f) => self.bind_expr(f, scope)?,
                    None => (Expr::Lit(Value::Int(1)), Ty::Int4),
                });
                if let Some(f) = substring_for {
                    args.push(self.bind_expr(f, scope)?);
                }
                self.scalar_func("substring", args)?
            }
            E::Trim {
                expr,
                trim_where,
                trim_what,
                trim_characters,
            } => {
                if trim_characters.is_some() {
                    return Err(unsupported("TRIM with a character list"));
                }
                let mut args = vec![self.bind_expr(expr, scope)?];
                if let Some(w) = trim_what {
                    args.push(self.bind_expr(w, scope)?);
                }
                let name = match trim_where {
                    Some(A::TrimWhereField::Leading) => "ltrim",
                    Some(A::TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                self.scalar_func(name, args)?
            }
            E::Position { expr, r#in } => {
                let a = self.bind_expr(expr, scope)?;
                let b = self.bind_expr(r#in, scope)?;
                self.scalar_func("strpos_rev", vec![a, b])?
            }
            E::Ceil { expr, .. } => {
                let a = self.bind_expr(expr, scope)?;
                self.scalar_func("ceil", vec![a])?
            }
            E::Floor { expr, .. } => {
                let a = self.bind_expr(expr, scope)?;
                self.scalar_func("floor", vec![a])?
            }
            other => return Err(unsupported(format!("expression {other}"))),
        })
    }

    fn cast_expr(&mut self, x: Expr, xt: Ty, to: Ty, len: Option<u32>) -> Result<(Expr, Ty)> {
        if !cast_allowed(xt, to) {
            return Err(Error::new(
                SqlState("42846"),
                format!("cannot cast type {} to {}", xt.name(), to.name()),
            ));
        }
        Ok(match x {
            Expr::Lit(v) => (Expr::Lit(cast(v, to, len)?), to),
            Expr::Param(i, Ty::Unknown) if len.is_none() => {
                self.params[i] = to;
                (Expr::Param(i, to), to)
            }
            x if xt == to && len.is_none() => (x, to),
            x => (Expr::Cast(Box::new(x), to, len), to),
        })
    }

    fn bind_value(&mut self, v: &A::Value) -> Result<(Expr, Ty)> {
        use A::Value as V;
        Ok(match v {
            V::Number(n, _) => {
                let (v, t) = number(n)?;
                (Expr::Lit(v), t)
            }
            V::SingleQuotedString(s) | V::EscapedStringLiteral(s) | V::UnicodeStringLiteral(s) => {
                (Expr::Lit(Value::Text(s.clone())), Ty::Unknown)
            }
            V::DollarQuotedString(s) => (Expr::Lit(Value::Text(s.value.clone())), Ty::Unknown),
            V::Boolean(b) => (Expr::Lit(Value::Bool(*b)), Ty::Bool),
            V::Null => (Expr::Lit(Value::Null), Ty::Unknown),
            V::Placeholder(p) => {
                let n: usize = p
                    .strip_prefix('$')
                    .and_then(|d| d.parse().ok())
                    .filter(|n| *n >= 1 && *n <= 65535)
                    .ok_or_else(|| Error::syntax(format!("invalid parameter {p}")))?;
                if self.params.len() < n {
                    self.params.resize(n, Ty::Unknown);
                }
                let t = self.params[n - 1];
                (Expr::Param(n - 1, t), t)
            }
            V::HexStringLiteral(h) => {
                let b = (0..h.len() / 2)
                    .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16))
                    .collect::<std::result::Result<Vec<u8>, _>>()
                    .map_err(|_| Error::invalid_text(format!("invalid hexadecimal literal {h}")))?;
                (Expr::Lit(Value::Bytes(b)), Ty::Bytea)
            }
            other => return Err(unsupported(format!("literal {other}"))),
        })
    }

    fn subquery(&mut self, q: &A::Query) -> Result<(usize, Vec<Column>)> {
        let saved = self.agg_sink.take();
        let saved_in = std::mem::replace(&mut self.in_agg, false);
        let r = self.bind_query(q);
        self.agg_sink = saved;
        self.in_agg = saved_in;
        let (plan, cols) = r?;
        self.subplans.push(plan);
        Ok((self.subplans.len() - 1, cols))
    }

    fn bind_function(&mut self, f: &A::Function, scope: &Scope) -> Result<(Expr, Ty)> {
        let name = match f.name.0.last() {
            Some(A::ObjectNamePart::Identifier(i)) => ident(i),
            _ => return Err(unsupported(format!("function {}", f.name))),
        };
        if f.over.is_some() {
            return Err(unsupported("window functions"));
        }
        if f.filter.is_some() || !f.within_group.is_empty() {
            return Err(unsupported("aggregate FILTER / WITHIN GROUP"));
        }
        let (args, distinct, star) = match &f.args {
            A::FunctionArguments::None => (vec![], false, false),
            A::FunctionArguments::Subquery(_) => return Err(unsupported("subquery as a function argument")),
            A::FunctionArguments::List(l) => {
                if !l.clauses.is_empty() {
                    return Err(unsupported(format!("clauses in {name}()")));
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
                (args, distinct, star)
            }
        };
        let agg = match name.as_str() {
            "count" if star => Some(AggFunc::CountStar),
            "count" => Some(AggFunc::Count),
            "sum" => Some(AggFunc::Sum),
            "avg" => Some(AggFunc::Avg),
            "min" => Some(AggFunc::Min),
            "max" => Some(AggFunc::Max),
            "bool_and" | "every" => Some(AggFunc::BoolAnd),
            "bool_or" => Some(AggFunc::BoolOr),
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
            } else {
                if args.len() != 1 {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("function {name} with {} arguments does not exist", args.len()),
                    ));
                }
                self.in_agg = true;
                let r = self.bind_expr(args[0], scope);
                self.in_agg = false;
                let (a, t) = r?;
                (Some(a), t)
            };
            let bad = || {
                Error::new(
                    SqlState::UNDEFINED_FUNCTION,
                    format!("function {name}({}) does not exist", arg_ty.name()),
                )
            };
            let ty = match func {
                AggFunc::CountStar | AggFunc::Count => Ty::Int8,
                AggFunc::Sum if arg_ty.is_int() => Ty::Int8,
                AggFunc::Sum | AggFunc::Avg if arg_ty.is_num() => Ty::Float8,
                AggFunc::Sum | AggFunc::Avg => return Err(bad()),
                AggFunc::Min | AggFunc::Max if arg_ty == Ty::Unknown => Ty::Text,
                AggFunc::Min | AggFunc::Max => arg_ty,
                AggFunc::BoolAnd | AggFunc::BoolOr if arg_ty == Ty::Bool => Ty::Bool,
                AggFunc::BoolAnd | AggFunc::BoolOr => return Err(bad()),
            };
            let sink = self.agg_sink.as_mut().expect("checked");
            let spec = AggSpec {
                func,
                arg,
                distinct,
                arg_ty,
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
        if star || distinct {
            return Err(Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}(*) does not exist"),
            ));
        }
        let mut bound = Vec::new();
        for a in args {
            bound.push(self.bind_expr(a, scope)?);
        }
        self.scalar_func(&name, bound)
    }

    fn scalar_func(&mut self, name: &str, mut args: Vec<(Expr, Ty)>) -> Result<(Expr, Ty)> {
        let types: Vec<&str> = args.iter().map(|a| a.1.name()).collect();
        let undefined = || {
            Error::new(
                SqlState::UNDEFINED_FUNCTION,
                format!("function {name}({}) does not exist", types.join(", ")),
            )
        };
        let n = args.len();
        let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown);
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
                if args[0].1 != Ty::Bytea {
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
                let (es, mut ty) = self.unify_all(args, &what)?;
                let mut es = es;
                if ty == Ty::Unknown {
                    ty = Ty::Text;
                    es = es
                        .into_iter()
                        .map(|e| self.coerce(e, Ty::Unknown, Ty::Text))
                        .collect::<Result<_>>()?;
                }
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
            ("round", 1 | 2)
            | ("floor", 1)
            | ("ceil" | "ceiling", 1)
            | ("sqrt", 1)
            | ("power" | "pow", 2)
            | ("mod", 2) => {
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
                    "sqrt" => (Func::Sqrt, Ty::Float8),
                    "mod" => {
                        let ty = Ty::unify(args[0].1, args[1].1).unwrap_or(Ty::Float8);
                        (Func::Mod, ty)
                    }
                    _ => (Func::Power, Ty::Float8),
                }
            }
            ("random", 0) => (Func::Random, Ty::Float8),
            (
                "now"
                | "current_timestamp"
                | "localtimestamp"
                | "statement_timestamp"
                | "transaction_timestamp"
                | "clock_timestamp",
                0,
            ) => (Func::Now, Ty::Timestamp),
            ("version", 0) => return lit(Value::Text(super::VERSION_STRING.into()), Ty::Text),
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
            _ => return Err(undefined()),
        };
        Ok((Expr::Func(func, exprs(args), ty), ty))
    }

    // ---------------------------------------------------------------- queries

    pub fn bind_query(&mut self, q: &A::Query) -> Result<(Plan, Vec<Column>)> {
        if q.with.is_some() {
            return Err(unsupported("WITH"));
        }
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
            A::SetExpr::SetOperation { op, .. } => Err(unsupported(format!("{op}"))),
            other => Err(unsupported(format!("query {other}"))),
        }
    }

    fn bind_limit(&mut self, e: &A::Expr, what: &'static str) -> Result<Option<Expr>> {
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
            cols.push(Column {
                name: format!("column{}", c + 1),
                ty,
            });
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
    fn finish_simple(
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
                    e => self.bind_noagg(e, &scope, "ORDER BY")?.0,
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

    fn bind_select(
        &mut self,
        s: &A::Select,
        order: &[A::OrderByExpr],
        limit: Option<Expr>,
        offset: Option<Expr>,
    ) -> Result<(Plan, Vec<Column>)> {
        if matches!(s.distinct, Some(A::Distinct::On(_))) {
            return Err(unsupported("DISTINCT ON"));
        }
        if s.top.is_some() || s.into.is_some() || !s.lateral_views.is_empty() || s.prewhere.is_some() {
            return Err(unsupported("TOP / SELECT INTO / LATERAL VIEW"));
        }
        if !s.named_window.is_empty()
            || s.qualify.is_some()
            || !s.sort_by.is_empty()
            || !s.cluster_by.is_empty()
        {
            return Err(unsupported("WINDOW / QUALIFY / SORT BY"));
        }
        let distinct = matches!(s.distinct, Some(A::Distinct::Distinct));
        let (mut plan, scope) = self.bind_from(&s.from)?;
        let where_e = match &s.selection {
            Some(w) => {
                let (e, t) = self.bind_noagg(w, &scope, "WHERE")?;
                Some(self.require_bool(e, t, "WHERE")?)
            }
            None => None,
        };

        // Select list, HAVING and ORDER BY may hold aggregates.
        let saved_sink = self.agg_sink.replace(Vec::new());
        let r = self.bind_select_items(s, &scope, order);
        let aggs = std::mem::replace(&mut self.agg_sink, saved_sink).unwrap_or_default();
        let (proj, names, types, having, orefs) = r?;
        let groups = self.bind_group_by(s, &scope, &proj, &names)?;
        let grouped = !groups.is_empty() || !aggs.is_empty() || having.is_some();

        let (proj, having, orefs) = if grouped {
            let ng = groups.len();
            let fix = |e: Expr| post_agg(e, &groups, ng, &scope);
            let proj = proj.into_iter().map(fix).collect::<Result<Vec<_>>>()?;
            let having = having.map(fix).transpose()?;
            let orefs = orefs
                .into_iter()
                .map(|(r, o)| {
                    Ok((
                        match r {
                            OrderRef::Pre(e) => OrderRef::Pre(fix(e)?),
                            r => r,
                        },
                        o,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            (proj, having, orefs)
        } else {
            (proj, having, orefs)
        };

        if let Some(w) = where_e {
            plan = apply_filter(plan, w);
        }
        if grouped {
            let minmax = groups.is_empty()
                && having.is_none()
                && aggs.len() == 1
                && matches!(aggs[0].func, AggFunc::Min | AggFunc::Max)
                && !aggs[0].distinct;
            let mut done = false;
            if minmax {
                if let Plan::Scan(sc) = &plan {
                    if let (Some(pk), Some(Expr::Col(c))) = (sc.pk_col(), &aggs[0].arg) {
                        if pk == *c && matches!(sc.access, Access::Full | Access::Range { .. }) {
                            let mut sc = sc.clone();
                            sc.reverse = aggs[0].func == AggFunc::Max;
                            plan = Plan::IndexMinMax {
                                scan: sc,
                                max: aggs[0].func == AggFunc::Max,
                            };
                            done = true;
                        }
                    }
                }
            }
            let count_only = groups.is_empty()
                && having.is_none()
                && aggs.len() == 1
                && aggs[0].func == AggFunc::CountStar;
            if !done && count_only {
                if let Plan::Scan(sc) = &plan {
                    if sc.def.has_primary_key() && !matches!(sc.access, Access::Index { .. }) {
                        plan = Plan::IndexCount { scan: sc.clone() };
                        done = true;
                    }
                }
            }
            if !done {
                plan = Plan::Aggregate {
                    input: Box::new(plan),
                    groups,
                    aggs,
                };
            }
            if let Some(h) = having {
                plan = Plan::Filter(Box::new(plan), h);
            }
        }

        let nvis = proj.len();
        let mut exprs = proj;
        let mut keys = Vec::new();
        for (r, o) in orefs {
            let idx = match r {
                OrderRef::Out(j) => j,
                OrderRef::Pre(e) => match exprs.iter().position(|x| *x == e) {
                    Some(j) => j,
                    None => {
                        if distinct {
                            return Err(Error::new(
                                SqlState("42P10"),
                                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                            ));
                        }
                        exprs.push(e);
                        exprs.len() - 1
                    }
                },
            };
            keys.push((idx, o));
        }

        // ORDER BY the primary key: read the index in order and stop early.
        let mut sorted_by_scan = false;
        if !grouped && !distinct && keys.len() == 1 {
            if let Plan::Scan(sc) = &mut plan {
                let (idx, o) = &keys[0];
                let desc = matches!(o.sort, Some(A::OrderBySort::Desc));
                if sc.pk_col().is_some_and(|pk| exprs[*idx] == Expr::Col(pk))
                    && matches!(
                        sc.access,
                        Access::Full | Access::Range { .. } | Access::Point(_) | Access::In(_)
                    )
                {
                    sc.reverse = desc;
                    if limit.is_some() {
                        sc.stop_after = Some((limit.clone(), offset.clone()));
                    }
                    sorted_by_scan = true;
                }
            }
        }

        plan = Plan::Project(Box::new(plan), exprs);
        if distinct {
            plan = Plan::Distinct(Box::new(plan));
        }
        if !keys.is_empty() && !sorted_by_scan {
            let keys = keys
                .into_iter()
                .map(|(i, o)| sort_key(Expr::Col(i), &o))
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
            .map(|(name, ty)| Column { name, ty })
            .collect();
        Ok((plan, cols))
    }

    #[allow(clippy::type_complexity)]
    fn bind_select_items(
        &mut self,
        s: &A::Select,
        scope: &Scope,
        order: &[A::OrderByExpr],
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
                    let (x, t) = self.bind_expr(e, scope)?;
                    let t = self.resolve_unknown_output(&mut proj, x, t)?;
                    names.push(derive_name(e));
                    types.push(t);
                }
                A::SelectItem::ExprWithAlias { expr, alias } => {
                    let (x, t) = self.bind_expr(expr, scope)?;
                    let t = self.resolve_unknown_output(&mut proj, x, t)?;
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
                let r = self.bind_expr(h, scope);
                self.agg_ctx = saved;
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
                e => OrderRef::Pre(self.bind_expr(e, scope)?.0),
            };
            orefs.push((r, o.options.clone()));
        }
        Ok((proj, names, types, having, orefs))
    }

    fn resolve_unknown_output(&mut self, proj: &mut Vec<Expr>, x: Expr, t: Ty) -> Result<Ty> {
        if t == Ty::Unknown {
            proj.push(self.coerce(x, t, Ty::Text)?);
            Ok(Ty::Text)
        } else {
            proj.push(x);
            Ok(t)
        }
    }

    fn bind_group_by(
        &mut self,
        s: &A::Select,
        scope: &Scope,
        proj: &[Expr],
        names: &[String],
    ) -> Result<Vec<Expr>> {
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
        for g in list {
            let e = match g {
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
                    let e = proj[p - 1].clone();
                    let mut has_agg = false;
                    e.walk(&mut |x| has_agg |= matches!(x, Expr::Agg(_)));
                    if has_agg {
                        return Err(Error::new(
                            SqlState::GROUPING_ERROR,
                            "aggregate functions are not allowed in GROUP BY",
                        ));
                    }
                    e
                }
                A::Expr::Identifier(i)
                    if !scope.cols.iter().any(|c| c.name == ident(i)) && names.contains(&ident(i)) =>
                {
                    let e = proj[names.iter().position(|n| *n == ident(i)).expect("contains")].clone();
                    let mut has_agg = false;
                    e.walk(&mut |x| has_agg |= matches!(x, Expr::Agg(_)));
                    if has_agg {
                        return Err(Error::new(
                            SqlState::GROUPING_ERROR,
                            "aggregate functions are not allowed in GROUP BY",
                        ));
                    }
                    e
                }
                e => self.bind_noagg(e, scope, "GROUP BY")?.0,
            };
            groups.push(e);
        }
        Ok(groups)
    }

    // ---------------------------------------------------------------- FROM

    fn bind_from(&mut self, from: &[A::TableWithJoins]) -> Result<(Plan, Scope)> {
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

    fn bind_twj(&mut self, twj: &A::TableWithJoins) -> Result<(Plan, Scope)> {
        let (mut plan, mut scope) = self.bind_factor(&twj.relation)?;
        for j in &twj.joins {
            let (rp, rs) = self.bind_factor(&j.relation)?;
            let (left_join, c) = match &j.join_operator {
                A::JoinOperator::Join(c) | A::JoinOperator::Inner(c) => (false, Some(c)),
                A::JoinOperator::Left(c) | A::JoinOperator::LeftOuter(c) => (true, Some(c)),
                A::JoinOperator::CrossJoin(_) => (false, None),
                other => {
                    return Err(unsupported(
                        format!("join {other:?}").chars().take(60).collect::<String>(),
                    ))
                }
            };
            let lw = scope.cols.len();
            scope = scope.concat(rs);
            let on = match c {
                None | Some(A::JoinConstraint::None) => None,
                Some(A::JoinConstraint::On(e)) => {
                    let (e, t) = self.bind_noagg(e, &scope, "JOIN conditions")?;
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
            };
            plan = make_join(plan, rp, left_join, on);
        }
        Ok((plan, scope))
    }

    fn bind_factor(&mut self, f: &A::TableFactor) -> Result<(Plan, Scope)> {
        match f {
            A::TableFactor::Table {
                name, alias, args, ..
            } => {
                if args.is_some() {
                    return Err(unsupported(format!("table function {name}")));
                }
                if let Some(A::ObjectNamePart::Identifier(i)) = name.0.last() {
                    check_name(i)?;
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
            A::TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                if *lateral {
                    return Err(unsupported("LATERAL"));
                }
                let Some(alias) = alias else {
                    return Err(Error::syntax("subquery in FROM must have an alias"));
                };
                let saved = self.agg_sink.take();
                let r = self.bind_query(subquery);
                self.agg_sink = saved;
                let (plan, cols) = r?;
                let a = ident(&alias.name);
                let mut scope = Scope {
                    cols: cols
                        .iter()
                        .map(|c| ScopeCol {
                            table: Some(a.clone()),
                            name: c.name.clone(),
                            ty: c.ty,
                        })
                        .collect(),
                    tables: vec![a],
                };
                for (c, n) in scope.cols.iter_mut().zip(&alias.columns) {
                    c.name = ident(&n.name);
                }
                Ok((plan, scope))
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

fn sort_key(e: Expr, o: &A::OrderByOptions) -> SortKey {
    let desc = matches!(o.sort, Some(A::OrderBySort::Desc));
    SortKey {
        expr: e,
        desc,
        nulls_first: o.nulls_first.unwrap_or(desc),
    }
}

fn derive_name(e: &A::Expr) -> String {
    match e {
        A::Expr::Identifier(i) => ident(i),
        A::Expr::CompoundIdentifier(p) => p.last().map(ident).unwrap_or_default(),
        A::Expr::Function(f) => match f.name.0.last() {
            Some(A::ObjectNamePart::Identifier(i)) => ident(i),
            _ => "?column?".into(),
        },
        A::Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            A::Expr::Identifier(_) | A::Expr::CompoundIdentifier(_) => derive_name(expr),
            _ => parse_type(data_type)
                .map(|(t, _)| pg_type_short(t))
                .unwrap_or_else(|_| "?column?".into()),
        },
        A::Expr::Nested(x) => derive_name(x),
        A::Expr::Case { .. } => "case".into(),
        A::Expr::Exists { .. } => "exists".into(),
        A::Expr::Substring { .. } => "substring".into(),
        _ => "?column?".into(),
    }
}

fn pg_type_short(t: DataType) -> String {
    match t {
        DataType::Int2 => "int2",
        DataType::Int4 => "int4",
        DataType::Int8 => "int8",
        DataType::Float8 => "float8",
        DataType::Bool => "bool",
        DataType::Text(None) => "text",
        DataType::Text(Some(_)) => "varchar",
        DataType::Bytea => "bytea",
        DataType::Timestamp => "timestamp",
    }
    .into()
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

/// Builds a join, using an index-lookup join when the ON condition fixes the right table's
/// primary key from the left row.
pub fn make_join(left: Plan, right: Plan, left_join: bool, on: Option<Expr>) -> Plan {
    let lw = left.width();
    let mut lookup = None;
    let mut on = on;
    let mut right = right;
    if let (Plan::Scan(sc), Some(cond)) = (&mut right, &on) {
        // A filter pushed into the inner scan (inner joins only) may move into the condition.
        let movable = sc.filter.is_none() || !left_join;
        if let (Some(pk), Access::Full, true) = (sc.pk_col(), &sc.access, movable) {
            let mut conj = Vec::new();
            split_and(cond.clone(), &mut conj);
            for c in &conj {
                if let Expr::Cmp(CmpOp::Eq, a, b) = c {
                    let key = match (a.as_ref(), b.as_ref()) {
                        (Expr::Col(x), other) | (other, Expr::Col(x)) if *x == lw + pk => other,
                        _ => continue,
                    };
                    if key.columns().iter().all(|&i| i < lw) && !key.columns().is_empty() {
                        lookup = Some(Lookup {
                            table: sc.table.clone(),
                            def: sc.def.clone(),
                            alias: sc.alias.clone(),
                            key: key.clone(),
                        });
                        break;
                    }
                }
            }
            if lookup.is_some() {
                if let Some(f) = sc.filter.take() {
                    let f = f
                        .rewrite(&mut |e| {
                            Ok(match e {
                                Expr::Col(i) => Expr::Col(i + lw),
                                e => e,
                            })
                        })
                        .expect("infallible");
                    on = conjoin(on.into_iter().chain(std::iter::once(f)).collect());
                }
            }
        }
    }
    if on
        .as_ref()
        .is_some_and(|e| matches!(e, Expr::Lit(Value::Bool(true))))
    {
        on = None;
    }
    Plan::Join {
        left: Box::new(left),
        right: Box::new(right),
        left_join,
        on,
        lookup,
    }
}

/// Adds a predicate to a plan, pushing conjuncts into scans (where they choose the access path)
/// and into the sides of joins.
pub fn apply_filter(plan: Plan, pred: Expr) -> Plan {
    let mut conj = Vec::new();
    split_and(pred, &mut conj);
    let (plan, rest) = push_down(plan, conj);
    match conjoin(rest) {
        Some(r) => Plan::Filter(Box::new(plan), r),
        None => plan,
    }
}

fn push_down(plan: Plan, conj: Vec<Expr>) -> (Plan, Vec<Expr>) {
    if conj.is_empty() {
        return (plan, conj);
    }
    match plan {
        Plan::Scan(s) => (Plan::Scan(choose_access(s, conj)), vec![]),
        Plan::Join {
            left,
            right,
            left_join,
            on,
            lookup,
        } => {
            let lw = left.width();
            let mut to_left = Vec::new();
            let mut to_right = Vec::new();
            let mut to_on = Vec::new();
            let mut rest = Vec::new();
            for c in conj {
                let cols = c.columns();
                let has_sub = {
                    let mut s = false;
                    c.walk(&mut |x| {
                        s |= matches!(x, Expr::InSub(..) | Expr::Exists(..) | Expr::ScalarSub(_))
                    });
                    s
                };
                if cols.iter().all(|&i| i < lw) && !(cols.is_empty() && has_sub) {
                    to_left.push(c);
                } else if left_join {
                    rest.push(c);
                } else if cols.iter().all(|&i| i >= lw) && lookup.is_none() {
                    to_right.push(c.shift_cols(lw));
                } else {
                    to_on.push(c);
                }
            }
            let (l, lrest) = push_down(*left, to_left);
            let l = match conjoin(lrest) {
                Some(f) => Plan::Filter(Box::new(l), f),
                None => l,
            };
            let (r, rrest) = push_down(*right, to_right);
            let r = match conjoin(rrest) {
                Some(f) => Plan::Filter(Box::new(r), f),
                None => r,
            };
            if lookup.is_some() || to_on.is_empty() {
                let mut on = on;
                if !to_on.is_empty() {
                    let mut all = on.into_iter().collect::<Vec<_>>();
                    all.extend(to_on);
                    on = conjoin(all);
                }
                return (
                    Plan::Join {
                        left: Box::new(l),
                        right: Box::new(r),
                        left_join,
                        on,
                        lookup,
                    },
                    rest,
                );
            }
            let mut all = on.into_iter().collect::<Vec<_>>();
            all.extend(to_on);
            (make_join(l, r, left_join, conjoin(all)), rest)
        }
        Plan::Filter(p, f) => {
            let mut c = conj;
            c.push(f);
            push_down(*p, c)
        }
        p => (p, conj),
    }
}

/// The first lower and first upper bound the conjuncts put on column `col`, each as
/// (value, inclusive); used for primary-key and secondary-index range scans alike.
type RangeBound = Option<(Expr, bool)>;
fn range_bounds(conj: &[Expr], col: usize) -> (RangeBound, RangeBound) {
    let (mut lo, mut hi) = (None, None);
    for c in conj {
        let bs: Vec<(CmpOp, Expr)> = match c {
            Expr::And(a, b) => [bound_of(a, col), bound_of(b, col)]
                .into_iter()
                .flatten()
                .collect(),
            c => bound_of(c, col).into_iter().collect(),
        };
        for (op, v) in bs {
            match op {
                CmpOp::Gt | CmpOp::Ge if lo.is_none() => lo = Some((v, op == CmpOp::Ge)),
                CmpOp::Lt | CmpOp::Le if hi.is_none() => hi = Some((v, op == CmpOp::Le)),
                _ => {}
            }
        }
    }
    (lo, hi)
}

fn bound_of(e: &Expr, col: usize) -> Option<(CmpOp, Expr)> {
    if let Expr::Cmp(op, a, b) = e {
        match (a.as_ref(), b.as_ref()) {
            (Expr::Col(c), k) if *c == col && k.is_const() => return Some((*op, k.clone())),
            (k, Expr::Col(c)) if *c == col && k.is_const() => return Some((op.flip(), k.clone())),
            _ => {}
        }
    }
    None
}

/// Picks the access path of a single-table scan from its predicate's conjuncts.
pub fn choose_access(mut s: Scan, mut conj: Vec<Expr>) -> Scan {
    if let Some(f) = s.filter.take() {
        split_and(f, &mut conj);
    }
    let has_subquery = |e: &Expr| {
        let mut h = false;
        e.walk(&mut |x| h |= matches!(x, Expr::InSub(..) | Expr::Exists(..) | Expr::ScalarSub(_)));
        h
    };
    let pk = s.def.primary_key.clone();
    let access_free = matches!(s.access, Access::Full);
    if access_free && !pk.is_empty() {
        // Equality on every key column: a point lookup.
        let mut eqs: Vec<Option<(usize, Expr)>> = vec![None; pk.len()];
        for (ci, c) in conj.iter().enumerate() {
            for (k, &col) in pk.iter().enumerate() {
                if eqs[k].is_none() {
                    if let Some((CmpOp::Eq, v)) = bound_of(c, col) {
                        eqs[k] = Some((ci, v));
                    }
                }
            }
        }
        if eqs.iter().all(Option::is_some) {
            let mut used: Vec<usize> = eqs.iter().map(|e| e.as_ref().expect("all").0).collect();
            let vals = eqs.into_iter().map(|e| e.expect("all").1).collect();
            s.access = Access::Point(vals);
            used.sort_unstable();
            used.dedup();
            for i in used.into_iter().rev() {
                // The lookup applies the equality exactly (see exec::key_value); a subquery
                // operand is still re-checked.
                if !has_subquery(&conj[i]) {
                    conj.remove(i);
                }
            }
        } else if pk.len() == 1 {
            let col = pk[0];
            // IN list of constants.
            let pos = conj.iter().position(|c| match c {
                Expr::InList(x, l, false) => **x == Expr::Col(col) && l.iter().all(Expr::is_const),
                _ => false,
            });
            if let Some(i) = pos {
                if let Expr::InList(_, l, _) = conj.remove(i) {
                    s.access = Access::In(l);
                }
            } else {
                let (lo, hi) = range_bounds(&conj, col);
                if lo.is_some() || hi.is_some() {
                    s.access = Access::Range { lo, hi };
                }
            }
        } else {
            // Equality on a prefix of a composite key.
            let mut prefix = Vec::new();
            for &col in &pk {
                match conj
                    .iter()
                    .find_map(|c| bound_of(c, col).filter(|(op, _)| *op == CmpOp::Eq))
                {
                    Some((_, v)) => prefix.push(v),
                    None => break,
                }
            }
            if !prefix.is_empty() {
                s.access = Access::Prefix(prefix);
            }
        }
    }
    if matches!(s.access, Access::Full) {
        // A secondary index: equality on all its columns, or a range on its single column.
        for (ix, idx) in s.def.indexes.iter().enumerate() {
            let eq: Vec<Option<Expr>> = idx
                .columns
                .iter()
                .map(|&col| {
                    conj.iter()
                        .find_map(|c| bound_of(c, col).filter(|(op, _)| *op == CmpOp::Eq))
                        .map(|b| b.1)
                })
                .collect();
            if eq.iter().all(Option::is_some) {
                s.access = Access::Index {
                    index: ix,
                    eq: eq.into_iter().flatten().collect(),
                    lo: None,
                    hi: None,
                };
                break;
            }
            if idx.columns.len() == 1 {
                let col = idx.columns[0];
                let (lo, hi) = range_bounds(&conj, col);
                if lo.is_some() || hi.is_some() {
                    s.access = Access::Index {
                        index: ix,
                        eq: vec![],
                        lo,
                        hi,
                    };
                    break;
                }
            }
        }
    }
    s.filter = conjoin(conj);
    s
}
