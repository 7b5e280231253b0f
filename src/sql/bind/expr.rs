//! Binding scalar expressions: column references, operators and their operand types, literals,
//! casts, parameters (`$n`) and subqueries.

use sqlparser::ast as A;

use super::array_ops::array_operands;
use super::{ident, parse_type, unsupported, Binder, Scope};
use crate::error::{Error, Result, SqlState};
use crate::sql::expr::{cast, cast_allowed, ArOp, CmpOp, Expr, Func, Ty};
use crate::types::{numeric, Value};

/// A numeric literal as PostgreSQL types it: int4, int8, else numeric (`1.50`, `1e3`, an
/// integer beyond int8). A literal Augur's numeric cannot hold (more than about 28
/// significant digits, or more than 28 after the point: `1e308`) is read as float8, and is
/// 22003 beyond float8's range.
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
    match numeric::parse(s) {
        Ok(Some(d)) => return Ok((Value::Numeric(d), Ty::Numeric)),
        Ok(None) => return Err(Error::syntax(format!("invalid numeric literal {s}"))),
        Err(_) => {}
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

/// The width order of the integer types: int2 < int4 < int8.
fn int_rank(t: Ty) -> u8 {
    match t {
        Ty::Int2 => 0,
        Ty::Int4 => 1,
        _ => 2,
    }
}

impl Binder<'_> {
    /// Converts an expression of type `from` to type `to` (literals and parameters are
    /// converted now; other expressions get a cast).
    pub fn coerce(&mut self, e: Expr, from: Ty, to: Ty) -> Result<Expr> {
        // varchar and text are the same values, and so are their arrays.
        if from == to || to == Ty::Unknown || from.operand() == to {
            return Ok(e);
        }
        if let (Ty::Array(f), Ty::Array(t)) = (from, to) {
            // One array type to another (`int[]` as `bigint[]`, character(n)[] as text[]
            // without the trailing blanks): element by element (`ArrayCast`).
            if f.operand() != t.operand() {
                return Ok(self.cast_expr(e, from, to, None)?.0);
            }
        }
        if from == Ty::Bpchar {
            // character(n) to any other type goes through text, without its trailing blanks.
            let e = match e {
                Expr::Lit(Value::Text(s)) => Expr::Lit(Value::Text(s.trim_end_matches(' ').to_string())),
                e => Expr::Func(Func::Rtrim, vec![e], Ty::Text),
            };
            return self.coerce(e, Ty::Text, to);
        }
        // regtype (pg_typeof's) compares with OIDs through the type's OID; an untyped literal
        // or an OID unified with one (CASE, COALESCE) is read as a type.
        if from == Ty::RegType && to.is_int() {
            return Ok(super::regtype::regtype_oid(e));
        }
        if to == Ty::RegType {
            if let Expr::Param(i, Ty::Unknown) = e {
                self.params[i] = Ty::RegType;
                return super::regtype::to_regtype(Expr::Param(i, Ty::RegType), Ty::RegType);
            }
            return super::regtype::to_regtype(e, from);
        }
        Ok(match e {
            Expr::Lit(v) => Expr::Lit(cast(v, to, None)?),
            Expr::Param(i, Ty::Unknown) => {
                self.params[i] = to;
                Expr::Param(i, to)
            }
            // A parameter of a wider integer type is range-checked as it is converted, as a
            // literal is (`smallint out of range`), not only when a row is stored.
            e @ Expr::Param(..) if from.is_int() && to.is_int() && int_rank(from) > int_rank(to) => {
                Expr::Cast(Box::new(e), to, None)
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

    pub(super) fn resolve(&self, scope: &Scope, qual: Option<&str>, name: &str) -> Result<(usize, Ty)> {
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
        let (x, t) = self.bind_noagg_typed(e, scope, ctx)?;
        Ok((x, t.operand()))
    }

    /// [`Binder::bind_noagg`] keeping a `varchar` type, as [`Binder::bind_typed`] does (a
    /// RETURNING item).
    pub fn bind_noagg_typed(&mut self, e: &A::Expr, scope: &Scope, ctx: &'static str) -> Result<(Expr, Ty)> {
        let saved = self.agg_sink.take();
        let saved_win = self.win_sink.take();
        let saved_srf = self.srf_sink.take();
        let saved_ctx = std::mem::replace(&mut self.agg_ctx, ctx);
        let r = self.bind_typed(e, scope);
        self.agg_sink = saved;
        self.win_sink = saved_win;
        self.srf_sink = saved_srf;
        self.agg_ctx = saved_ctx;
        r
    }

    pub(super) fn compare(&mut self, op: CmpOp, l: (Expr, Ty), r: (Expr, Ty)) -> Result<(Expr, Ty)> {
        let arrays = match (l.1, r.1) {
            (t @ Ty::Array(_), _) | (_, t @ Ty::Array(_)) => Some(t),
            _ => None,
        };
        let (l, r) = self.comparable(l, r, op.sym())?;
        if let Some(t) = arrays {
            // Arrays compare element by element as their elements' type does, which their
            // texts do not (`{10} > {9}`, `{1.5} = {1.50}`).
            let c = Expr::Func(Func::ArrayCmp, vec![l, r], t);
            return Ok((
                Expr::Cmp(op, Box::new(c), Box::new(Expr::Lit(Value::Int(0)))),
                Ty::Bool,
            ));
        }
        Ok((Expr::Cmp(op, Box::new(l), Box::new(r)), Ty::Bool))
    }

    /// Makes two operands comparable (resolving untyped literals), or fails with 42883.
    pub(super) fn comparable(
        &mut self,
        (l, lt): (Expr, Ty),
        (r, rt): (Expr, Ty),
        op: &str,
    ) -> Result<(Expr, Expr)> {
        let (lt, rt) = (lt.operand(), rt.operand());
        if lt == Ty::Bpchar || rt == Ty::Bpchar {
            // character(n) compares without trailing blanks: an untyped literal beside it is
            // read as character too (`c = 'a  '` is true for 'a'), and both sides as text.
            let mut as_text = |e: Expr, t: Ty| -> Result<(Expr, Ty)> {
                match t {
                    Ty::Unknown | Ty::Bpchar => {
                        let e = self.coerce(e, t, Ty::Bpchar)?;
                        Ok((self.coerce(e, Ty::Bpchar, Ty::Text)?, Ty::Text))
                    }
                    t => Ok((e, t)),
                }
            };
            let (l, r) = (as_text(l, lt)?, as_text(r, rt)?);
            return self.comparable(l, r, op);
        }
        let undefined = |a: Ty, b: Ty| {
            let msg = format!("operator does not exist: {} {op} {}", a.name(), b.name());
            Err(Error::new(SqlState::UNDEFINED_FUNCTION, msg))
        };
        let target = match (lt, rt) {
            // json has no comparison operators (nor equality), as in PostgreSQL.
            (a, b) if a == Ty::Json || b == Ty::Json => return undefined(a, b),
            // regtype has no comparison of its own: PostgreSQL compares it as an OID, an
            // untyped literal beside it included (`pg_typeof(x) = 'int4'` is 22P02).
            (Ty::RegType, Ty::Unknown) | (Ty::Unknown, Ty::RegType) => Ty::Int8,
            (Ty::Unknown, Ty::Unknown) => Ty::Text,
            (Ty::Unknown, t) | (t, Ty::Unknown) => t,
            (a, b) if a == b => a,
            (a, b) if a.is_num() && b.is_num() => return Ok((l, r)),
            // date < timestamp < timestamptz, as PostgreSQL's implicit casts.
            (a, b) if a.is_datetime() && b.is_datetime() => Ty::unify(a, b).unwrap_or(a),
            // A time beside an interval is one (PostgreSQL's implicit cast).
            (Ty::Time, Ty::Interval) | (Ty::Interval, Ty::Time) => Ty::Interval,
            // A regtype and an OID: as OIDs (`pg_typeof(x) = 'int4'::regtype`, `= atttypid`).
            (Ty::RegType, b) if b.is_int() => Ty::Int8,
            (a, Ty::RegType) if a.is_int() => Ty::Int8,
            (a, b) => return undefined(a, b),
        };
        Ok((self.coerce(l, lt, target)?, self.coerce(r, rt, target)?))
    }

    pub(super) fn arith(&mut self, op: ArOp, (l, lt): (Expr, Ty), (r, rt): (Expr, Ty)) -> Result<(Expr, Ty)> {
        if let Some((lto, rto, ty)) = super::datetime_fn::datetime_operands(op, lt, rt) {
            // Numbers keep their type (the operator reads any of them as a double).
            let lto = if lt.is_num() { lt } else { lto };
            let rto = if rt.is_num() { rt } else { rto };
            let l = self.coerce(l, lt, lto)?;
            let r = self.coerce(r, rt, rto)?;
            if let (Expr::Lit(a), Expr::Lit(b)) = (&l, &r) {
                if let Ok(v) = crate::sql::expr::arith(op, a, b, ty) {
                    return Ok((Expr::Lit(v), ty));
                }
            }
            return Ok((Expr::Arith(op, Box::new(l), Box::new(r), ty), ty));
        }
        if (op, lt, rt) == (ArOp::Add, Ty::Time, Ty::Time) {
            // time + interval and interval + time both match (a time casts to an interval).
            return Err(Error::new(
                SqlState("42725"),
                "operator is not unique: time without time zone + time without time zone",
            ));
        }
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
            if let Ok(v) = crate::sql::expr::arith(op, a, b, ty) {
                return Ok((Expr::Lit(v), ty));
            }
        }
        Ok((Expr::Arith(op, Box::new(l), Box::new(r), ty), ty))
    }

    pub(super) fn unify_all(&mut self, items: Vec<(Expr, Ty)>, what: &str) -> Result<(Vec<Expr>, Ty)> {
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

    /// [`Binder::unify_all`], with values of unknown type only (quoted literals, NULLs) taken
    /// as text, as PostgreSQL resolves them in CASE, COALESCE and ARRAY.
    pub(super) fn unify_all_or_text(
        &mut self,
        items: Vec<(Expr, Ty)>,
        what: &str,
    ) -> Result<(Vec<Expr>, Ty)> {
        let (items, ty) = self.unify_all(items, what)?;
        if ty != Ty::Unknown {
            return Ok((items, ty));
        }
        let items = items
            .into_iter()
            .map(|e| self.coerce(e, Ty::Unknown, Ty::Text))
            .collect::<Result<_>>()?;
        Ok((items, Ty::Text))
    }

    /// Binds an expression as an operand: a `varchar` one is text (see [`Ty::Varchar`]).
    pub fn bind_expr(&mut self, e: &A::Expr, scope: &Scope) -> Result<(Expr, Ty)> {
        let (x, t) = self.bind_typed(e, scope)?;
        Ok((x, t.operand()))
    }

    /// Binds an expression as an operand that keeps a `varchar[]` type (an array subscripted
    /// or unnested, whose elements are then `varchar`); a `varchar` one is text.
    pub fn bind_elements(&mut self, e: &A::Expr, scope: &Scope) -> Result<(Expr, Ty)> {
        let (x, t) = self.bind_typed(e, scope)?;
        Ok((x, if matches!(t, Ty::Array(_)) { t } else { t.operand() }))
    }

    /// Binds an expression keeping a `varchar` type (a result column, `pg_typeof`'s
    /// argument, a CASE / COALESCE branch).
    pub fn bind_typed(&mut self, e: &A::Expr, scope: &Scope) -> Result<(Expr, Ty)> {
        use A::Expr as E;
        Ok(match e {
            E::Identifier(i) => self.resolve_column(scope, None, &ident(i))?,
            E::CompoundIdentifier(parts) => {
                let names: Vec<String> = parts.iter().map(ident).collect();
                let (q, n) = match names.as_slice() {
                    [q, n] => (q.as_str(), n.as_str()),
                    // schema.table.column: the table's own schema (its name in scope is
                    // unqualified).
                    [s, q, n] if matches!(s.as_str(), "public" | "pg_catalog" | "information_schema") => {
                        (q.as_str(), n.as_str())
                    }
                    _ => return Err(unsupported(format!("column reference {e}"))),
                };
                self.resolve_column(scope, Some(q), n)?
            }
            E::Value(v) => self.bind_value(&v.value)?,
            E::Nested(inner) => self.bind_typed(inner, scope)?,
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
                    if matches!(t, Ty::Interval | Ty::Time) {
                        // A time negates as an interval (PostgreSQL's implicit cast).
                        let x = self.coerce(x, t, Ty::Interval)?;
                        let t = Ty::Interval;
                        return Ok(match x {
                            Expr::Lit(Value::Interval(i)) => (Expr::Lit(Value::Interval(i.neg()?)), t),
                            x => (Expr::Neg(Box::new(x), t), t),
                        });
                    }
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
                            v => crate::sql::expr::arith(ArOp::Sub, &Value::Int(0), v, t2)?,
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
                let (l, lt) = self.bind_elements(left, scope)?;
                let (r, rt) = self.bind_elements(right, scope)?;
                if matches!(op, B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq) {
                    array_operands(lt, rt, &op.to_string())?;
                }
                let (l, r) = ((l, lt.operand()), (r, rt.operand()));
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
                    B::Minus if l.1 == Ty::Jsonb => self.json_op(op, l, r)?,
                    B::Minus => self.arith(ArOp::Sub, l, r)?,
                    B::Multiply => self.arith(ArOp::Mul, l, r)?,
                    B::Divide => self.arith(ArOp::Div, l, r)?,
                    B::Modulo => self.arith(ArOp::Mod, l, r)?,
                    B::StringConcat if l.1 == Ty::Jsonb || (r.1 == Ty::Jsonb && l.1 == Ty::Unknown) => {
                        self.json_op(op, l, r)?
                    }
                    B::StringConcat if matches!(l.1, Ty::Array(_)) || matches!(r.1, Ty::Array(_)) => {
                        self.array_concat((l.0, lt), (r.0, rt))?
                    }
                    B::StringConcat => {
                        let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown | Ty::Bpchar);
                        if !texty(l.1) && !texty(r.1) {
                            return Err(Error::new(
                                SqlState::UNDEFINED_FUNCTION,
                                format!("operator does not exist: {} || {}", l.1.name(), r.1.name()),
                            ));
                        }
                        // character(n) operands are text without their trailing blanks.
                        let l = if l.1 == Ty::Bpchar {
                            self.coerce(l.0, Ty::Bpchar, Ty::Text)?
                        } else {
                            l.0
                        };
                        let r = if r.1 == Ty::Bpchar {
                            self.coerce(r.0, Ty::Bpchar, Ty::Text)?
                        } else {
                            r.0
                        };
                        (Expr::Concat(Box::new(l), Box::new(r)), Ty::Text)
                    }
                    B::PGRegexMatch | B::PGRegexIMatch | B::PGRegexNotMatch | B::PGRegexNotIMatch => {
                        let ci = matches!(op, B::PGRegexIMatch | B::PGRegexNotIMatch);
                        let not = matches!(op, B::PGRegexNotMatch | B::PGRegexNotIMatch);
                        self.regex_op(l, r, ci, not, &op.to_string())?
                    }
                    B::Arrow
                    | B::LongArrow
                    | B::AtArrow
                    | B::ArrowAt
                    | B::HashArrow
                    | B::HashLongArrow
                    | B::Question
                    | B::QuestionPipe
                    | B::QuestionAnd => self.json_op(op, l, r)?,
                    B::PGStartsWith => self.scalar_func("starts_with", vec![l, r])?,
                    // psql's spelling of `~`.
                    B::PGCustomBinaryOperator(p) if p.len() == 2 && p[0] == "pg_catalog" && p[1] == "~" => {
                        self.regex_op(l, r, false, false, "~")?
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
                let (l, lt) = self.bind_elements(a, scope)?;
                let (r, rt) = self.bind_elements(b, scope)?;
                array_operands(lt, rt, "=")?;
                let (l, r) = self.comparable((l, lt.operand()), (r, rt.operand()), "=")?;
                (
                    Expr::IsDistinct(Box::new(l), Box::new(r), matches!(e, E::IsNotDistinctFrom(..))),
                    Ty::Bool,
                )
            }
            E::InList { expr, list, negated } => {
                let mut items = vec![self.bind_elements(expr, scope)?];
                for x in list {
                    items.push(self.bind_elements(x, scope)?);
                    array_operands(
                        items[0].1,
                        items[items.len() - 1].1,
                        if *negated { "<>" } else { "=" },
                    )?;
                }
                let items: Vec<(Expr, Ty)> = items.into_iter().map(|(x, t)| (x, t.operand())).collect();
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
                    let x = self.coerce(x, t, target)?;
                    // character(n) compares without trailing blanks (see `comparable`).
                    out.push(if target == Ty::Bpchar {
                        self.coerce(x, Ty::Bpchar, Ty::Text)?
                    } else {
                        x
                    });
                }
                let x = out.remove(0);
                if let Ty::Array(_) = ty {
                    // Arrays by their elements' values: `x = a OR x = b ...` (`NOT IN`: `x <>
                    // a AND ...`), which is what IN means, NULLs included.
                    let op = if *negated { CmpOp::Ne } else { CmpOp::Eq };
                    let mut acc: Option<Expr> = None;
                    for y in out {
                        let (c, _) = self.compare(op, (x.clone(), ty), (y, ty))?;
                        acc = Some(match acc {
                            None => c,
                            Some(a) if *negated => Expr::And(Box::new(a), Box::new(c)),
                            Some(a) => Expr::Or(Box::new(a), Box::new(c)),
                        });
                    }
                    return Ok((acc.unwrap_or(Expr::Lit(Value::Bool(!*negated))), Ty::Bool));
                }
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
                let x = self.bind_elements(expr, scope)?;
                self.bind_in_subquery(x, subquery, *negated, scope)?
            }
            E::Exists { subquery, negated } => {
                let (s, _) = self.subquery(subquery, scope)?;
                (Expr::Exists(s, *negated), Ty::Bool)
            }
            E::Subquery(q) => {
                let (s, cols) = self.subquery(q, scope)?;
                if cols.len() != 1 {
                    return Err(Error::syntax("subquery must return only one column"));
                }
                if let Some(n) = cols[0].len {
                    self.sub_lens.insert(s.id, n);
                }
                (Expr::ScalarSub(s), cols[0].ty)
            }
            E::AnyOp {
                left,
                compare_op,
                right,
                ..
            } => self.bind_quantified(left, compare_op, right, false, scope)?,
            E::AllOp {
                left,
                compare_op,
                right,
            } => self.bind_quantified(left, compare_op, right, true, scope)?,
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
                let texty = |t: Ty| matches!(t, Ty::Text | Ty::Unknown | Ty::Bpchar);
                if !texty(xt) || !texty(pt) {
                    return Err(Error::new(
                        SqlState::UNDEFINED_FUNCTION,
                        format!("operator does not exist: {} ~~ {}", xt.name(), pt.name()),
                    ));
                }
                // A character(n) operand keeps its blanks here (PostgreSQL's bpcharlike).
                let x = self.text_keeping_blanks(x, xt)?;
                let p = self.text_keeping_blanks(p, pt)?;
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
            // As PostgreSQL: `x ~ similar_to_escape(pattern [, escape])`.
            E::SimilarTo {
                negated,
                expr,
                pattern,
                escape_char,
            } => {
                let re = super::string_fn::similar_call(pattern, escape_char.as_deref())?;
                let (l, r) = (self.bind_expr(expr, scope)?, self.bind_expr(&re, scope)?);
                self.regex_op(l, r, false, *negated, if *negated { "!~" } else { "~" })?
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
                    results.push(self.bind_typed(&w.result, scope)?);
                }
                // The ELSE result first, as PostgreSQL resolves a CASE's type (which decides
                // between varchar and text).
                if let Some(el) = else_result {
                    results.insert(0, self.bind_typed(el, scope)?);
                }
                let (mut results, ty) = self.unify_all_or_text(results, "CASE")?;
                if else_result.is_some() {
                    results.rotate_left(1);
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
                if let Some(r) = self.catalog_cast(expr, data_type, scope)? {
                    return Ok(r);
                }
                let (dt, len) = parse_type(data_type)?;
                // `ARRAY[]::int[]`: the cast gives the empty array its type.
                if let (E::Array(a), crate::types::DataType::Array(_)) = (expr.as_ref(), dt) {
                    if a.elem.is_empty() {
                        return Ok((Expr::Lit(Value::Text("{}".into())), Ty::from_dt(dt)));
                    }
                }
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
            E::Overlay {
                expr,
                overlay_what,
                overlay_from,
                overlay_for,
            } => self.bind_overlay(expr, overlay_what, overlay_from, overlay_for.as_deref(), scope)?,
            E::Position { expr, r#in } => {
                let a = self.bind_expr(expr, scope)?;
                let b = self.bind_expr(r#in, scope)?;
                self.scalar_func("strpos_rev", vec![a, b])?
            }
            E::Extract { field, expr, .. } => self.bind_extract(field, expr, scope)?,
            E::AtTimeZone { timestamp, time_zone } => self.bind_at_time_zone(timestamp, time_zone, scope)?,
            E::Ceil { expr, .. } => {
                let a = self.bind_expr(expr, scope)?;
                self.scalar_func("ceil", vec![a])?
            }
            E::Floor { expr, .. } => {
                let a = self.bind_expr(expr, scope)?;
                self.scalar_func("floor", vec![a])?
            }
            E::Collate { expr, collation } => {
                // Text compares byte-wise, in the C collation; psql names the database default.
                let c = collation.to_string().to_lowercase().replace('"', "");
                let c = c.strip_prefix("pg_catalog.").unwrap_or(&c);
                if !matches!(c, "default" | "c" | "posix") {
                    return Err(Error::new(
                        SqlState::UNDEFINED_OBJECT,
                        format!("collation \"{collation}\" for encoding \"UTF8\" does not exist"),
                    ));
                }
                self.bind_typed(expr, scope)?
            }
            E::CompoundFieldAccess { root, access_chain } => match super::srf::single_field(access_chain) {
                Some(f) if !matches!(**root, E::Identifier(_)) => self.bind_field_select(root, f, scope)?,
                _ => self.bind_subscript(root, access_chain, scope)?,
            },
            // `interval '1 day'`, and `interval '2' hour` (a number in the one field named).
            E::Interval(iv) => {
                let text = match iv.value.as_ref() {
                    E::Value(A::ValueWithSpan {
                        value: A::Value::SingleQuotedString(s),
                        ..
                    }) => s.trim().to_string(),
                    _ => return Err(unsupported(format!("interval form {iv}"))),
                };
                let text = match (&iv.leading_field, &iv.last_field) {
                    (None, None) => text,
                    (Some(f), None) if text.parse::<f64>().is_ok() => {
                        format!("{text} {}", f.to_string().to_lowercase())
                    }
                    _ => return Err(unsupported(format!("interval form {iv}"))),
                };
                let v = Value::parse_text(&text, crate::types::DataType::Interval)?;
                (Expr::Lit(v), Ty::Interval)
            }
            E::Array(a) => {
                // `ARRAY[a, b]`: the elements' common type (text for untyped literals).
                if a.elem.is_empty() {
                    return Err(Error::new(
                        SqlState("42P18"),
                        "cannot determine type of empty array",
                    ));
                }
                // Typed: `ARRAY[v]` of a varchar `v` is `character varying[]`.
                let mut items = Vec::with_capacity(a.elem.len());
                for el in &a.elem {
                    items.push(self.bind_typed(el, scope)?);
                }
                let (mut items, mut ty) = self.unify_all_or_text(items, "ARRAY")?;
                // Augur has no regtype[]: an array of regtypes holds their OIDs (so that
                // `atttypid = ANY (ARRAY['int4'::regtype, ...])` compares OIDs).
                if ty == Ty::RegType {
                    ty = Ty::Int8;
                    items = items
                        .into_iter()
                        .map(|e| self.coerce(e, Ty::RegType, Ty::Int8))
                        .collect::<Result<_>>()?;
                }
                let at = ty.array().ok_or_else(|| {
                    unsupported(format!(
                        "ARRAY of {} values (an array of more than one dimension)",
                        ty.name()
                    ))
                })?;
                (Expr::Func(Func::ArrayConstruct, items, at), at)
            }
            other => return Err(unsupported(format!("expression {other}"))),
        })
    }

    pub(super) fn cast_expr(&mut self, x: Expr, xt: Ty, to: Ty, len: Option<u32>) -> Result<(Expr, Ty)> {
        // character(n) to another type: through text, without its trailing blanks.
        let (x, xt) = if xt == Ty::Bpchar && to != Ty::Bpchar {
            (self.coerce(x, Ty::Bpchar, Ty::Text)?, Ty::Text)
        } else {
            (x, xt)
        };
        if xt == Ty::RegType && to.is_int() {
            // `pg_typeof(x)::oid`: the type's OID.
            return Ok((super::regtype::regtype_oid(x), to));
        }
        if !cast_allowed(xt, to) {
            return Err(Error::new(
                SqlState("42846"),
                format!("cannot cast type {} to {}", xt.name(), to.name()),
            ));
        }
        // One array type to another: element by element, as the source elements' type casts
        // to the target's (`'{1.5}'::numeric[]::int[]` rounds).
        if let (Ty::Array(from), Ty::Array(_)) = (xt, to) {
            if xt != to || len.is_some() {
                let from = Expr::Lit(Value::Text(from.to_dt().sql_name()));
                let len = Expr::Lit(len.map_or(Value::Null, |l| Value::Int(i64::from(l))));
                return Ok((Expr::Func(Func::ArrayCast, vec![x, from, len], to), to));
            }
        }
        Ok(match x {
            // A constant cast with a length is folded now (its errors are the statement's) and
            // keeps its cast, which the length a result column is described with is read from
            // (`typmod.rs`); casting the folded value again changes nothing.
            Expr::Lit(v) if len.is_some() => {
                (Expr::Cast(Box::new(Expr::Lit(cast(v, to, len)?)), to, len), to)
            }
            Expr::Lit(v) => (Expr::Lit(cast(v, to, len)?), to),
            Expr::Param(i, Ty::Unknown) if len.is_none() => {
                self.params[i] = to;
                (Expr::Param(i, to), to)
            }
            // A cast to the type without a length drops the declared one (`v::varchar` of a
            // varchar(10) is described as varchar, as in PostgreSQL).
            x if xt == to && len.is_none() && !matches!(to, Ty::Varchar | Ty::Bpchar | Ty::Numeric) => {
                (x, to)
            }
            x => (Expr::Cast(Box::new(x), to, len), to),
        })
    }

    pub(super) fn bind_value(&mut self, v: &A::Value) -> Result<(Expr, Ty)> {
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
}
