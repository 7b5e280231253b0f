//! Bound (type-checked) scalar expressions and their evaluation with PostgreSQL semantics:
//! three-valued logic, integer overflow per type width, integer division truncation, division
//! by zero, `LIKE`, casts.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

use crate::engine::{Interrupt, Transaction};
use crate::error::{Error, Result, SqlState};
use crate::types::{DataType, Row, Value};

/// The static type of an expression. `Unknown` is an untyped literal (a quoted string or NULL)
/// whose type is decided by its context, as in PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Int2,
    Int4,
    Int8,
    Float8,
    Bool,
    Text,
    Bytea,
    Timestamp,
    Unknown,
}

impl Ty {
    pub fn from_dt(dt: DataType) -> Ty {
        match dt {
            DataType::Int2 => Ty::Int2,
            DataType::Int4 => Ty::Int4,
            DataType::Int8 => Ty::Int8,
            DataType::Float8 => Ty::Float8,
            DataType::Bool => Ty::Bool,
            DataType::Text(_) => Ty::Text,
            DataType::Bytea => Ty::Bytea,
            DataType::Timestamp => Ty::Timestamp,
        }
    }

    pub fn to_dt(self) -> DataType {
        match self {
            Ty::Int2 => DataType::Int2,
            Ty::Int4 => DataType::Int4,
            Ty::Int8 => DataType::Int8,
            Ty::Float8 => DataType::Float8,
            Ty::Bool => DataType::Bool,
            Ty::Text | Ty::Unknown => DataType::Text(None),
            Ty::Bytea => DataType::Bytea,
            Ty::Timestamp => DataType::Timestamp,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Ty::Int2 => "smallint",
            Ty::Int4 => "integer",
            Ty::Int8 => "bigint",
            Ty::Float8 => "double precision",
            Ty::Bool => "boolean",
            Ty::Text => "text",
            Ty::Bytea => "bytea",
            Ty::Timestamp => "timestamp without time zone",
            Ty::Unknown => "unknown",
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self, Ty::Int2 | Ty::Int4 | Ty::Int8)
    }

    pub fn is_num(self) -> bool {
        self.is_int() || self == Ty::Float8
    }

    fn num_rank(self) -> u8 {
        match self {
            Ty::Int2 => 1,
            Ty::Int4 => 2,
            Ty::Int8 => 3,
            _ => 4,
        }
    }

    /// The common type of two branches (CASE, COALESCE, IN lists, ...), if any.
    pub fn unify(a: Ty, b: Ty) -> Option<Ty> {
        if a == Ty::Unknown {
            return Some(b);
        }
        if b == Ty::Unknown || a == b {
            return Some(a);
        }
        if a.is_num() && b.is_num() {
            return Some(if a.num_rank() >= b.num_rank() { a } else { b });
        }
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl ArOp {
    pub fn sym(self) -> &'static str {
        match self {
            ArOp::Add => "+",
            ArOp::Sub => "-",
            ArOp::Mul => "*",
            ArOp::Div => "/",
            ArOp::Mod => "%",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn sym(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            o => o,
        }
    }
    fn test(self, o: Ordering) -> bool {
        match self {
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::Ne => o != Ordering::Equal,
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ge => o != Ordering::Less,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Abs,
    Coalesce,
    Nullif,
    Lower,
    Upper,
    Length,
    OctetLength,
    Substr,
    Concat,
    Round,
    Floor,
    Ceil,
    Greatest,
    Least,
    Now,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    Position,
    Left,
    Right,
    Mod,
    Sqrt,
    Power,
    Random,
}

/// A bound expression. Column references are positions in the input row.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Lit(Value),
    Col(usize),
    /// `$n` (0-based), converted to the type inferred for it.
    Param(usize, Ty),
    Neg(Box<Expr>, Ty),
    Arith(ArOp, Box<Expr>, Box<Expr>, Ty),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull(Box<Expr>, bool),
    /// `x IS [NOT] TRUE/FALSE`: (expr, value, negated)
    IsBool(Box<Expr>, bool, bool),
    IsDistinct(Box<Expr>, Box<Expr>, bool),
    InList(Box<Expr>, Vec<Expr>, bool),
    /// `x [NOT] IN (subquery)`: subquery number.
    InSub(Box<Expr>, usize, bool),
    Exists(usize, bool),
    ScalarSub(usize),
    Like(Box<Expr>, Box<Expr>, Option<Box<Expr>>, bool, bool),
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        els: Option<Box<Expr>>,
    },
    Cast(Box<Expr>, Ty, Option<u32>),
    Concat(Box<Expr>, Box<Expr>),
    Func(Func, Vec<Expr>, Ty),
    /// An aggregate's result (only while binding; replaced by a column of the aggregate output).
    Agg(usize),
}

impl Expr {
    pub fn lit(v: Value) -> Expr {
        Expr::Lit(v)
    }

    /// Visits every node.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Lit(_)
            | Expr::Col(_)
            | Expr::Param(..)
            | Expr::Exists(..)
            | Expr::ScalarSub(_)
            | Expr::Agg(_) => {}
            Expr::Neg(a, _)
            | Expr::Not(a)
            | Expr::IsNull(a, _)
            | Expr::IsBool(a, _, _)
            | Expr::Cast(a, _, _) => a.walk(f),
            Expr::InSub(a, _, _) => a.walk(f),
            Expr::Arith(_, a, b, _)
            | Expr::Cmp(_, a, b)
            | Expr::And(a, b)
            | Expr::Or(a, b)
            | Expr::IsDistinct(a, b, _)
            | Expr::Concat(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Expr::InList(a, l, _) => {
                a.walk(f);
                l.iter().for_each(|e| e.walk(f));
            }
            Expr::Like(a, b, c, _, _) => {
                a.walk(f);
                b.walk(f);
                if let Some(c) = c {
                    c.walk(f);
                }
            }
            Expr::Case { operand, whens, els } => {
                if let Some(o) = operand {
                    o.walk(f);
                }
                for (w, t) in whens {
                    w.walk(f);
                    t.walk(f);
                }
                if let Some(e) = els {
                    e.walk(f);
                }
            }
            Expr::Func(_, args, _) => args.iter().for_each(|e| e.walk(f)),
        }
    }

    /// Rewrites every node bottom-up with `f` (which may fail).
    pub fn rewrite(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
        let e = self.map_children(&mut |c| c.rewrite(f))?;
        f(e)
    }

    /// Replaces each direct child `c` by `f(c)`.
    pub fn map_children(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<Expr> {
        let b = |e: Box<Expr>, f: &mut dyn FnMut(Expr) -> Result<Expr>| -> Result<Box<Expr>> {
            Ok(Box::new(f(*e)?))
        };
        let e = match self {
            Expr::Neg(a, t) => Expr::Neg(b(a, f)?, t),
            Expr::Not(a) => Expr::Not(b(a, f)?),
            Expr::IsNull(a, n) => Expr::IsNull(b(a, f)?, n),
            Expr::IsBool(a, v, n) => Expr::IsBool(b(a, f)?, v, n),
            Expr::Cast(a, t, l) => Expr::Cast(b(a, f)?, t, l),
            Expr::InSub(a, s, n) => Expr::InSub(b(a, f)?, s, n),
            Expr::Arith(o, x, y, t) => Expr::Arith(o, b(x, f)?, b(y, f)?, t),
            Expr::Cmp(o, x, y) => Expr::Cmp(o, b(x, f)?, b(y, f)?),
            Expr::And(x, y) => Expr::And(b(x, f)?, b(y, f)?),
            Expr::Or(x, y) => Expr::Or(b(x, f)?, b(y, f)?),
            Expr::IsDistinct(x, y, n) => Expr::IsDistinct(b(x, f)?, b(y, f)?, n),
            Expr::Concat(x, y) => Expr::Concat(b(x, f)?, b(y, f)?),
            Expr::InList(a, l, n) => {
                let l = l.into_iter().map(&mut *f).collect::<Result<Vec<_>>>()?;
                Expr::InList(b(a, f)?, l, n)
            }
            Expr::Like(x, y, z, n, ci) => {
                let z = match z {
                    Some(z) => Some(b(z, f)?),
                    None => None,
                };
                Expr::Like(b(x, f)?, b(y, f)?, z, n, ci)
            }
            Expr::Case { operand, whens, els } => {
                let operand = match operand {
                    Some(o) => Some(b(o, f)?),
                    None => None,
                };
                let whens = whens
                    .into_iter()
                    .map(|(w, t)| Ok((f(w)?, f(t)?)))
                    .collect::<Result<Vec<_>>>()?;
                let els = match els {
                    Some(e) => Some(b(e, f)?),
                    None => None,
                };
                Expr::Case { operand, whens, els }
            }
            Expr::Func(func, args, t) => Expr::Func(
                func,
                args.into_iter().map(&mut *f).collect::<Result<Vec<_>>>()?,
                t,
            ),
            e => e,
        };
        Ok(e)
    }

    /// Whether the expression reads no column of its input row (and no aggregate).
    pub fn is_const(&self) -> bool {
        let mut c = true;
        self.walk(&mut |e| {
            if matches!(e, Expr::Col(_) | Expr::Agg(_)) {
                c = false
            }
        });
        c
    }

    /// Column positions read by this expression.
    pub fn columns(&self) -> Vec<usize> {
        let mut v = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Col(i) = e {
                v.push(*i)
            }
        });
        v
    }

    /// Shifts column references by `-by` (for expressions over the right side of a join).
    pub fn shift_cols(self, by: usize) -> Expr {
        self.rewrite(&mut |e| {
            Ok(match e {
                Expr::Col(i) => Expr::Col(i - by),
                e => e,
            })
        })
        .expect("infallible")
    }
}

/// The result of an uncorrelated subquery, computed once per statement.
pub struct SubResult {
    pub rows: Vec<Row>,
    pub set: HashSet<Value>,
    pub has_null: bool,
}

/// Evaluates subqueries (by number) on demand; implemented by the executor.
pub trait SubqueryRunner {
    fn run_subquery(&self, n: usize) -> Result<Arc<SubResult>>;
}

/// What expressions need at run time besides the row.
pub struct Ctx<'a> {
    pub tx: &'a Transaction,
    pub params: &'a [Value],
    pub subs: &'a dyn SubqueryRunner,
    pub now: i64,
    pub cache: RefCell<Vec<Option<Arc<SubResult>>>>,
    /// When the statement must stop (`statement_timeout`, a cancel request); checked by
    /// [`Ctx::check`].
    pub stop: &'a Interrupt,
    /// Rows visited since the interrupt was last checked.
    pub ticks: std::cell::Cell<u32>,
}

impl Ctx<'_> {
    /// Called by the executor once per row it visits: past the statement's deadline or after
    /// a cancel request, the statement stops with 57014 (checked every 256 rows).
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.stop.is_armed() {
            let n = self.ticks.get().wrapping_add(1);
            self.ticks.set(n);
            if n.is_multiple_of(256) {
                return self.stop.check();
            }
        }
        Ok(())
    }

    /// Checks the interrupt now (before and after steps that are not row loops).
    pub fn check_now(&self) -> Result<()> {
        self.stop.check()
    }
}

fn bool_of(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

pub fn div_zero() -> Error {
    Error::new(SqlState::DIVISION_BY_ZERO, "division by zero")
}

fn int_range(ty: Ty, i: i64) -> Result<Value> {
    let ok = match ty {
        Ty::Int2 => i16::try_from(i).is_ok(),
        Ty::Int4 => i32::try_from(i).is_ok(),
        _ => true,
    };
    if ok {
        Ok(Value::Int(i))
    } else {
        Err(Error::out_of_range(format!("{} out of range", ty.name())))
    }
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    }
}

pub fn arith(op: ArOp, a: &Value, b: &Value, ty: Ty) -> Result<Value> {
    if a.is_null() || b.is_null() {
        return Ok(Value::Null);
    }
    if ty.is_int() {
        let (Value::Int(x), Value::Int(y)) = (a, b) else {
            return Err(Error::internal(format!(
                "integer operands expected, got {a:?} and {b:?}"
            )));
        };
        let over = || Error::out_of_range(format!("{} out of range", ty.name()));
        let r = match op {
            ArOp::Add => x.checked_add(*y).ok_or_else(over)?,
            ArOp::Sub => x.checked_sub(*y).ok_or_else(over)?,
            ArOp::Mul => x.checked_mul(*y).ok_or_else(over)?,
            ArOp::Div => {
                if *y == 0 {
                    return Err(div_zero());
                }
                x.checked_div(*y).ok_or_else(over)?
            }
            ArOp::Mod => {
                if *y == 0 {
                    return Err(div_zero());
                }
                x.checked_rem(*y).unwrap_or(0)
            }
        };
        return int_range(ty, r);
    }
    let (x, y) = (as_f64(a), as_f64(b));
    let r = match op {
        ArOp::Add => x + y,
        ArOp::Sub => x - y,
        ArOp::Mul => x * y,
        ArOp::Div => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x / y
        }
        ArOp::Mod => {
            if y == 0.0 {
                return Err(div_zero());
            }
            x % y
        }
    };
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(Error::out_of_range("value out of range: overflow"));
    }
    Ok(Value::Float(r))
}

/// SQL `LIKE` (byte-wise; `%` any run, `_` one character, `esc` escapes the next character).
pub fn like(s: &str, p: &str, esc: Option<char>, ci: bool) -> bool {
    let (s, p): (Vec<char>, Vec<char>) = if ci {
        (
            s.to_lowercase().chars().collect(),
            p.to_lowercase().chars().collect(),
        )
    } else {
        (s.chars().collect(), p.chars().collect())
    };
    // Tokenize the pattern.
    enum T {
        Any,
        One,
        Ch(char),
    }
    let mut toks = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        if Some(c) == esc && i + 1 < p.len() {
            toks.push(T::Ch(p[i + 1]));
            i += 2;
            continue;
        }
        toks.push(match c {
            '%' => T::Any,
            '_' => T::One,
            c => T::Ch(c),
        });
        i += 1;
    }
    // Iterative matching with backtracking on the last %.
    let (mut si, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if ti < toks.len() {
            match toks[ti] {
                T::Any => {
                    star = Some((ti, si));
                    ti += 1;
                    continue;
                }
                T::One => {
                    si += 1;
                    ti += 1;
                    continue;
                }
                T::Ch(c) if c == s[si] => {
                    si += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((st, ss)) => {
                ti = st + 1;
                si = ss + 1;
                star = Some((st, ss + 1));
            }
            None => return false,
        }
    }
    while ti < toks.len() && matches!(toks[ti], T::Any) {
        ti += 1;
    }
    ti == toks.len()
}

fn timestamp_error(s: &str) -> Error {
    // A string shaped like a date whose fields are out of range is 22008; anything else 22007.
    let t = s.trim();
    let shaped = t.len() >= 8
        && t.chars().next().is_some_and(|c| c.is_ascii_digit())
        && t.chars().all(|c| c.is_ascii_digit() || " -:.T".contains(c))
        // A digit string longer than YYYYMMDDHHMMSS is not a date at all (PostgreSQL: 22007).
        && (t.len() <= 14 || !t.chars().all(|c| c.is_ascii_digit()));
    if shaped {
        Error::new(
            SqlState::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{s}\""),
        )
    } else {
        Error::new(
            SqlState("22007"),
            format!("invalid input syntax for type timestamp: \"{s}\""),
        )
    }
}

/// Whether a cast from `from` to `to` exists (checked when binding).
pub fn cast_allowed(from: Ty, to: Ty) -> bool {
    if from == to || from == Ty::Unknown || to == Ty::Text || from == Ty::Text {
        return true;
    }
    match (from, to) {
        (f, t) if f.is_num() && t.is_num() => true,
        (Ty::Bool, Ty::Int4) | (Ty::Int4, Ty::Bool) => true,
        _ => false,
    }
}

/// Converts `v` to type `to` (explicit-cast semantics: `varchar(n)` truncates).
pub fn cast(v: Value, to: Ty, len: Option<u32>) -> Result<Value> {
    use Value as V;
    Ok(match (v, to) {
        (V::Null, _) => V::Null,
        (V::Text(s), Ty::Text) | (V::Text(s), Ty::Unknown) => match len {
            Some(n) if s.chars().count() > n as usize => V::Text(s.chars().take(n as usize).collect()),
            _ => V::Text(s),
        },
        (V::Bool(b), Ty::Text) => cast(V::Text(if b { "true" } else { "false" }.into()), Ty::Text, len)?,
        (v, Ty::Text) => {
            let s = text_of(&v).unwrap_or_default();
            return cast(V::Text(s), Ty::Text, len);
        }
        (V::Text(s), Ty::Timestamp) => {
            Value::parse_text(&s, DataType::Timestamp).map_err(|_| timestamp_error(&s))?
        }
        (V::Text(s), Ty::Bool) => Value::parse_text(&s, DataType::Bool)?,
        (V::Text(s), t) => {
            let v = Value::parse_text(&s, t.to_dt())?;
            if t == Ty::Float8 {
                if let V::Float(f) = v {
                    if f.is_infinite() && !s.to_ascii_lowercase().contains("inf") {
                        return Err(Error::out_of_range(format!(
                            "\"{s}\" is out of range for type double precision"
                        )));
                    }
                }
            }
            v
        }
        (V::Int(i), t) if t.is_int() => int_range(t, i)?,
        (V::Int(i), Ty::Float8) => V::Float(i as f64),
        (V::Float(f), t) if t.is_int() => {
            let r = f.round_ties_even();
            if !r.is_finite() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                return Err(Error::out_of_range(format!("{} out of range", t.name())));
            }
            int_range(t, r as i64)?
        }
        (V::Float(f), Ty::Float8) => V::Float(f),
        (V::Bool(b), Ty::Bool) => V::Bool(b),
        (V::Bool(b), t) if t.is_int() => V::Int(b as i64),
        (V::Int(i), Ty::Bool) => V::Bool(i != 0),
        (V::Bytes(b), Ty::Bytea) => V::Bytes(b),
        (V::Timestamp(t), Ty::Timestamp) => V::Timestamp(t),
        (v, Ty::Unknown) => v,
        (v, t) => {
            return Err(Error::new(
                SqlState("42846"),
                format!("cannot cast type {} to {}", v.type_name(), t.name()),
            ))
        }
    })
}

/// Converts a value for storage in a column (assignment semantics: varchar(n) overflow fails).
pub fn assign(v: Value, dt: DataType, col: &str) -> Result<Value> {
    let ty = Ty::from_dt(dt);
    let v = cast(v, ty, None)?;
    if let (DataType::Text(Some(n)), Value::Text(s)) = (dt, &v) {
        if s.chars().count() > n as usize {
            return Err(Error::new(
                SqlState::STRING_DATA_RIGHT_TRUNCATION,
                format!("value too long for type character varying({n}) (column \"{col}\")"),
            ));
        }
    }
    Ok(v)
}

fn text_arg(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(s) => Some(s.clone()),
        v => text_of(v),
    }
}

/// PostgreSQL's text output of a value (`None` for NULL); floats as PostgreSQL 12+ prints
/// float8 ([`format_float`]).
pub fn text_of(v: &Value) -> Option<String> {
    v.to_text()
}

pub use crate::types::format_float;

fn int_arg(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) => Some(f.round_ties_even() as i64),
        _ => None,
    }
}

impl Expr {
    /// Evaluates the expression over `row`.
    pub fn eval(&self, row: &[Value], cx: &Ctx) -> Result<Value> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Col(i) => row
                .get(*i)
                .cloned()
                .ok_or_else(|| Error::internal("column out of range"))?,
            Expr::Param(i, ty) => {
                let v = cx.params.get(*i).cloned().ok_or_else(|| {
                    Error::new(
                        SqlState::PROTOCOL_VIOLATION,
                        format!("no value for parameter ${}", i + 1),
                    )
                })?;
                cast(v, *ty, None)?
            }
            Expr::Neg(a, ty) => match a.eval(row, cx)? {
                Value::Null => Value::Null,
                Value::Int(i) => int_range(
                    *ty,
                    i.checked_neg()
                        .ok_or_else(|| Error::out_of_range(format!("{} out of range", ty.name())))?,
                )?,
                Value::Float(f) => Value::Float(-f),
                v => return Err(Error::internal(format!("cannot negate {v:?}"))),
            },
            Expr::Arith(op, a, b, ty) => {
                let x = a.eval(row, cx)?;
                let y = b.eval(row, cx)?;
                arith(*op, &x, &y, *ty)?
            }
            Expr::Cmp(op, a, b) => {
                let x = a.eval(row, cx)?;
                if x.is_null() {
                    // Still evaluate the other side for errors? PostgreSQL is strict: skip.
                    return Ok(Value::Null);
                }
                let y = b.eval(row, cx)?;
                match x.sql_cmp(&y) {
                    None => Value::Null,
                    Some(o) => Value::Bool(op.test(o)),
                }
            }
            Expr::And(a, b) => {
                let x = bool_of(&a.eval(row, cx)?);
                if x == Some(false) {
                    return Ok(Value::Bool(false));
                }
                let y = bool_of(&b.eval(row, cx)?);
                match (x, y) {
                    (_, Some(false)) => Value::Bool(false),
                    (Some(true), Some(true)) => Value::Bool(true),
                    _ => Value::Null,
                }
            }
            Expr::Or(a, b) => {
                let x = bool_of(&a.eval(row, cx)?);
                if x == Some(true) {
                    return Ok(Value::Bool(true));
                }
                let y = bool_of(&b.eval(row, cx)?);
                match (x, y) {
                    (_, Some(true)) => Value::Bool(true),
                    (Some(false), Some(false)) => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            Expr::Not(a) => match bool_of(&a.eval(row, cx)?) {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Expr::IsNull(a, neg) => Value::Bool(a.eval(row, cx)?.is_null() != *neg),
            Expr::IsBool(a, val, neg) => {
                let r = bool_of(&a.eval(row, cx)?) == Some(*val);
                Value::Bool(r != *neg)
            }
            Expr::IsDistinct(a, b, neg) => {
                let x = a.eval(row, cx)?;
                let y = b.eval(row, cx)?;
                let distinct = match (x.is_null(), y.is_null()) {
                    (true, true) => false,
                    (true, false) | (false, true) => true,
                    _ => x.sql_cmp(&y) != Some(Ordering::Equal),
                };
                Value::Bool(distinct != *neg)
            }
            Expr::InList(a, list, neg) => {
                let x = a.eval(row, cx)?;
                if x.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for e in list {
                    let y = e.eval(row, cx)?;
                    match x.sql_cmp(&y) {
                        Some(Ordering::Equal) => return Ok(Value::Bool(!*neg)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::Bool(*neg)
                }
            }
            Expr::InSub(a, n, neg) => {
                let x = a.eval(row, cx)?;
                let r = sub(cx, *n)?;
                if r.rows.is_empty() {
                    return Ok(Value::Bool(*neg));
                }
                if x.is_null() {
                    return Ok(Value::Null);
                }
                if r.set.contains(&x) {
                    Value::Bool(!*neg)
                } else if r.has_null {
                    Value::Null
                } else {
                    Value::Bool(*neg)
                }
            }
            Expr::Exists(n, neg) => Value::Bool(sub(cx, *n)?.rows.is_empty() == *neg),
            Expr::ScalarSub(n) => {
                let r = sub(cx, *n)?;
                match r.rows.len() {
                    0 => Value::Null,
                    1 => r.rows[0].first().cloned().unwrap_or(Value::Null),
                    _ => {
                        return Err(Error::new(
                            SqlState::CARDINALITY_VIOLATION,
                            "more than one row returned by a subquery used as an expression",
                        ))
                    }
                }
            }
            Expr::Like(a, p, esc, neg, ci) => {
                let x = a.eval(row, cx)?;
                let y = p.eval(row, cx)?;
                let esc =
                    match esc {
                        None => Some('\\'),
                        Some(e) => match e.eval(row, cx)? {
                            Value::Null => return Ok(Value::Null),
                            v => {
                                let s = text_arg(&v).unwrap_or_default();
                                let mut it = s.chars();
                                match (it.next(), it.next()) {
                                    (None, _) => None,
                                    (Some(c), None) => Some(c),
                                    _ => return Err(Error::new(
                                        SqlState("22019"),
                                        "invalid escape string: escape string must be empty or one character",
                                    )),
                                }
                            }
                        },
                    };
                match (text_arg(&x), text_arg(&y)) {
                    (Some(s), Some(p)) => Value::Bool(like(&s, &p, esc, *ci) != *neg),
                    _ => Value::Null,
                }
            }
            Expr::Case { operand, whens, els } => {
                let op = match operand {
                    Some(o) => Some(o.eval(row, cx)?),
                    None => None,
                };
                for (w, t) in whens {
                    let hit = match &op {
                        Some(o) => {
                            let wv = w.eval(row, cx)?;
                            o.sql_cmp(&wv) == Some(Ordering::Equal)
                        }
                        None => w.eval(row, cx)? == Value::Bool(true),
                    };
                    if hit {
                        return t.eval(row, cx);
                    }
                }
                match els {
                    Some(e) => e.eval(row, cx)?,
                    None => Value::Null,
                }
            }
            Expr::Cast(a, ty, len) => cast(a.eval(row, cx)?, *ty, *len)?,
            Expr::Concat(a, b) => {
                let x = a.eval(row, cx)?;
                let y = b.eval(row, cx)?;
                match (text_arg(&x), text_arg(&y)) {
                    (Some(mut s), Some(t)) => {
                        s.push_str(&t);
                        Value::Text(s)
                    }
                    _ => Value::Null,
                }
            }
            Expr::Func(f, args, ty) => eval_func(*f, args, *ty, row, cx)?,
            Expr::Agg(_) => return Err(Error::internal("aggregate evaluated outside an aggregation")),
        })
    }

    /// Evaluates a predicate: true only when the value is TRUE (NULL and FALSE reject).
    pub fn test(&self, row: &[Value], cx: &Ctx) -> Result<bool> {
        Ok(matches!(self.eval(row, cx)?, Value::Bool(true)))
    }
}

fn sub(cx: &Ctx, n: usize) -> Result<Arc<SubResult>> {
    if let Some(Some(r)) = cx.cache.borrow().get(n) {
        return Ok(r.clone());
    }
    let r = cx.subs.run_subquery(n)?;
    let mut c = cx.cache.borrow_mut();
    if c.len() <= n {
        c.resize(n + 1, None);
    }
    c[n] = Some(r.clone());
    Ok(r)
}

fn eval_func(f: Func, args: &[Expr], ty: Ty, row: &[Value], cx: &Ctx) -> Result<Value> {
    // Lazily evaluated functions first.
    match f {
        Func::Coalesce => {
            for a in args {
                let v = a.eval(row, cx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            return Ok(Value::Null);
        }
        Func::Now => return Ok(Value::Timestamp(cx.now)),
        Func::Random => return Ok(Value::Float(rand::random::<f64>())),
        _ => {}
    }
    let vals: Vec<Value> = args.iter().map(|a| a.eval(row, cx)).collect::<Result<_>>()?;
    let null = Ok(Value::Null);
    match f {
        Func::Concat => {
            let mut s = String::new();
            for v in &vals {
                if let Some(t) = text_arg(v) {
                    s.push_str(&t);
                }
            }
            Ok(Value::Text(s))
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<Value> = None;
            for v in vals {
                if v.is_null() {
                    continue;
                }
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = v.total_cmp(&b);
                        if (f == Func::Greatest && o == Ordering::Greater)
                            || (f == Func::Least && o == Ordering::Less)
                        {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            Ok(best.unwrap_or(Value::Null))
        }
        Func::Nullif => {
            if vals[0].sql_cmp(&vals[1]) == Some(Ordering::Equal) {
                null
            } else {
                Ok(vals[0].clone())
            }
        }
        _ if vals.iter().any(Value::is_null) => null,
        Func::Abs => match &vals[0] {
            Value::Int(i) => int_range(
                ty,
                i.checked_abs()
                    .ok_or_else(|| Error::out_of_range(format!("{} out of range", ty.name())))?,
            ),
            Value::Float(x) => Ok(Value::Float(x.abs())),
            _ => null,
        },
        Func::Lower => Ok(Value::Text(text_arg(&vals[0]).unwrap_or_default().to_lowercase())),
        Func::Upper => Ok(Value::Text(text_arg(&vals[0]).unwrap_or_default().to_uppercase())),
        Func::Length => Ok(Value::Int(match &vals[0] {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(v).unwrap_or_default().chars().count() as i64,
        })),
        Func::OctetLength => Ok(Value::Int(match &vals[0] {
            Value::Bytes(b) => b.len() as i64,
            v => text_arg(v).unwrap_or_default().len() as i64,
        })),
        Func::Substr => {
            let s: Vec<char> = text_arg(&vals[0]).unwrap_or_default().chars().collect();
            let start = int_arg(&vals[1]).unwrap_or(1);
            let (from, to) = match vals.get(2) {
                Some(l) => {
                    let l = int_arg(l).unwrap_or(0);
                    if l < 0 {
                        return Err(Error::new(
                            SqlState("22011"),
                            "negative substring length not allowed",
                        ));
                    }
                    (start, start.saturating_add(l))
                }
                None => (start, i64::MAX),
            };
            let from = from.max(1);
            let to = to.min(s.len() as i64 + 1);
            if to <= from {
                return Ok(Value::Text(String::new()));
            }
            Ok(Value::Text(
                s[(from - 1) as usize..(to - 1) as usize].iter().collect(),
            ))
        }
        Func::Round => {
            let x = as_f64(&vals[0]);
            match vals.get(1) {
                None => Ok(Value::Float(x.round_ties_even())),
                Some(d) => {
                    let d = int_arg(d).unwrap_or(0).clamp(-300, 300) as i32;
                    let m = 10f64.powi(d);
                    Ok(Value::Float((x * m).round() / m))
                }
            }
        }
        Func::Floor => Ok(match &vals[0] {
            Value::Int(i) => Value::Int(*i),
            v => Value::Float(as_f64(v).floor()),
        }),
        Func::Ceil => Ok(match &vals[0] {
            Value::Int(i) => Value::Int(*i),
            v => Value::Float(as_f64(v).ceil()),
        }),
        Func::Sqrt => {
            let x = as_f64(&vals[0]);
            if x < 0.0 {
                return Err(Error::new(
                    SqlState("2201F"),
                    "cannot take square root of a negative number",
                ));
            }
            Ok(Value::Float(x.sqrt()))
        }
        Func::Power => {
            let (a, b) = (as_f64(&vals[0]), as_f64(&vals[1]));
            let r = a.powf(b);
            if r.is_infinite() && a.is_finite() && b.is_finite() {
                return Err(Error::out_of_range("value out of range: overflow"));
            }
            Ok(Value::Float(r))
        }
        Func::Mod => arith(ArOp::Mod, &vals[0], &vals[1], ty),
        Func::Trim | Func::Ltrim | Func::Rtrim => {
            let s = text_arg(&vals[0]).unwrap_or_default();
            let chars: Vec<char> = match vals.get(1) {
                Some(c) => text_arg(c).unwrap_or_default().chars().collect(),
                None => vec![' '],
            };
            let pat = |c: char| chars.contains(&c);
            Ok(Value::Text(
                match f {
                    Func::Trim => s.trim_matches(pat),
                    Func::Ltrim => s.trim_start_matches(pat),
                    _ => s.trim_end_matches(pat),
                }
                .to_string(),
            ))
        }
        Func::Replace => {
            let s = text_arg(&vals[0]).unwrap_or_default();
            let from = text_arg(&vals[1]).unwrap_or_default();
            let to = text_arg(&vals[2]).unwrap_or_default();
            Ok(Value::Text(if from.is_empty() {
                s
            } else {
                s.replace(&from, &to)
            }))
        }
        Func::Position => {
            let sub = text_arg(&vals[0]).unwrap_or_default();
            let s = text_arg(&vals[1]).unwrap_or_default();
            Ok(Value::Int(match s.find(&sub) {
                Some(b) => s[..b].chars().count() as i64 + 1,
                None => 0,
            }))
        }
        Func::Left | Func::Right => {
            let s: Vec<char> = text_arg(&vals[0]).unwrap_or_default().chars().collect();
            let n = int_arg(&vals[1]).unwrap_or(0);
            let len = s.len() as i64;
            let k = if n >= 0 { n.min(len) } else { (len + n).max(0) } as usize;
            Ok(Value::Text(if f == Func::Left {
                s[..k].iter().collect()
            } else {
                s[s.len() - k..].iter().collect()
            }))
        }
        Func::Coalesce | Func::Now | Func::Random => unreachable!("handled above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        assert!(like("abc", "abc", Some('\\'), false));
        assert!(like("abc", "a%", Some('\\'), false));
        assert!(like("abc", "_b_", Some('\\'), false));
        assert!(!like("abc", "b%", Some('\\'), false));
        assert!(like("abc", "%c%", Some('\\'), false));
        assert!(like("", "%", Some('\\'), false));
        assert!(!like("", "_", Some('\\'), false));
        assert!(like("a%b", "a\\%b", Some('\\'), false));
        assert!(!like("axb", "a\\%b", Some('\\'), false));
        assert!(like("aXbXc", "%X%c", Some('\\'), false));
        assert!(like("mississippi", "%iss%pi", None, false));
        assert!(!like("Bob", "bob", None, false));
        assert!(like("Bob", "bob", None, true));
    }

    #[test]
    fn integer_arithmetic_overflows_per_width() {
        let v = |i| Value::Int(i);
        assert!(arith(ArOp::Add, &v(i32::MAX as i64), &v(1), Ty::Int4).is_err());
        assert_eq!(
            arith(ArOp::Add, &v(i32::MAX as i64), &v(1), Ty::Int8).unwrap(),
            v(2147483648)
        );
        assert!(arith(ArOp::Mul, &v(32767), &v(2), Ty::Int2).is_err());
        assert_eq!(arith(ArOp::Div, &v(-7), &v(2), Ty::Int4).unwrap(), v(-3));
        assert_eq!(arith(ArOp::Mod, &v(-7), &v(3), Ty::Int4).unwrap(), v(-1));
        let e = arith(ArOp::Div, &v(1), &v(0), Ty::Int4).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::DIVISION_BY_ZERO);
        let e = arith(ArOp::Div, &v(i64::MIN), &v(-1), Ty::Int8).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        assert_eq!(
            arith(ArOp::Add, &Value::Null, &v(1), Ty::Int4).unwrap(),
            Value::Null
        );
        let e = arith(ArOp::Div, &Value::Float(1.5), &v(0), Ty::Float8).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::DIVISION_BY_ZERO);
        let e = arith(ArOp::Mul, &Value::Float(1e308), &v(10), Ty::Float8).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
    }

    #[test]
    fn floats_print_like_postgres() {
        assert_eq!(format_float(1e-5), "1e-05");
        assert_eq!(format_float(0.00025), "0.00025");
        assert_eq!(format_float(1e15), "1e+15");
        assert_eq!(format_float(123456789012.0), "123456789012");
        assert_eq!(format_float(9007199254740992.0), "9.007199254740992e+15");
        assert_eq!(format_float(1.0000000000000013e17), "1.0000000000000013e+17");
        assert_eq!(format_float(-0.0625), "-0.0625");
    }

    #[test]
    fn casts_follow_postgres() {
        assert_eq!(cast(Value::Float(2.5), Ty::Int4, None).unwrap(), Value::Int(2));
        assert_eq!(cast(Value::Float(3.5), Ty::Int4, None).unwrap(), Value::Int(4));
        assert_eq!(
            cast(Value::Text(" 12 ".into()), Ty::Int4, None).unwrap(),
            Value::Int(12)
        );
        assert_eq!(cast("abc".into(), Ty::Text, Some(2)).unwrap(), Value::from("ab"));
        let e = cast("1.5".into(), Ty::Int4, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::INVALID_TEXT_REPRESENTATION);
        let e = cast(Value::Int(40000), Ty::Int2, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        let e = cast("2023-02-29 00:00:00".into(), Ty::Timestamp, None).unwrap_err();
        assert_eq!(e.sqlstate().code(), "22008");
        let e = cast("not a time".into(), Ty::Timestamp, None).unwrap_err();
        assert_eq!(e.sqlstate().code(), "22007");
        let e = cast("1e400".into(), Ty::Float8, None).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_OUT_OF_RANGE);
        assert!(!cast_allowed(Ty::Bool, Ty::Timestamp));
    }
}
