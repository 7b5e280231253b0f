//! CHECK and FOREIGN KEY constraints as `pg_get_constraintdef` prints them. A CHECK condition
//! (kept as SQL text) is re-parsed, typed against its table's columns as PostgreSQL's parser
//! types it (implicit casts, constants folded and labelled) and printed by the rules of
//! PostgreSQL's ruleutils.c, with or without its "pretty" parentheses. A condition outside
//! what this typing covers is printed as it was written.

use sqlparser::ast as A;

mod default;
mod funcs;
mod keywords;
mod print;
pub use default::default_def;

use self::print::print;
use crate::engine::catalog::{CheckDef, FkAction, ForeignKeyDef};
use crate::engine::TableDef;
use crate::sql::bind::parse_type;
use crate::types::{DataType, Value};

/// The types PostgreSQL gives a CHECK condition's parts (`Numeric`: an untyped decimal
/// literal; `Unknown`: a quoted literal not yet resolved).
#[derive(Clone, Copy, PartialEq, Debug)]
enum T {
    Int2,
    Int4,
    Int8,
    Numeric,
    Float8,
    Text,
    Varchar(Option<u32>),
    Bool,
    Date,
    Timestamp,
    TimestampTz,
    Interval,
    Time,
    /// An array (only `ARRAY[...]` of a DEFAULT is typed as one).
    Array,
    Unknown,
}

impl T {
    fn of(dt: DataType) -> Option<T> {
        Some(match dt {
            DataType::Int2 => T::Int2,
            DataType::Int4 => T::Int4,
            DataType::Int8 => T::Int8,
            DataType::Float8 => T::Float8,
            DataType::Bool => T::Bool,
            DataType::Text(_) => T::Text,
            DataType::Varchar(n) => T::Varchar(n),
            DataType::Date => T::Date,
            DataType::Timestamp => T::Timestamp,
            DataType::TimestampTz => T::TimestampTz,
            DataType::Interval => T::Interval,
            DataType::Time(None) => T::Time,
            _ => return None,
        })
    }

    /// The name `::type` labels print.
    fn name(self) -> String {
        match self {
            T::Int2 => "smallint".into(),
            T::Int4 => "integer".into(),
            T::Int8 => "bigint".into(),
            T::Numeric => "numeric".into(),
            T::Float8 => "double precision".into(),
            T::Text | T::Unknown => "text".into(),
            T::Varchar(None) => "character varying".into(),
            T::Varchar(Some(n)) => format!("character varying({n})"),
            T::Bool => "boolean".into(),
            T::Date => "date".into(),
            T::Timestamp => "timestamp without time zone".into(),
            T::TimestampTz => "timestamp with time zone".into(),
            T::Interval => "interval".into(),
            T::Time => "time without time zone".into(),
            T::Array => "anyarray".into(),
        }
    }

    fn int_rank(self) -> Option<u8> {
        match self {
            T::Int2 => Some(0),
            T::Int4 => Some(1),
            T::Int8 => Some(2),
            _ => None,
        }
    }

    fn is_texty(self) -> bool {
        matches!(self, T::Text | T::Varchar(_) | T::Unknown)
    }
}

/// A typed condition, shaped as PostgreSQL's expression tree.
#[derive(Clone, Debug)]
enum N {
    Var(String, T),
    /// A constant: its output text and type.
    Const(String, T),
    /// A NULL constant of a type.
    Null(T),
    /// `ARRAY[...]`, its elements of one type.
    Array(Vec<N>),
    Bool(bool),
    /// A binary operator.
    Op(String, Box<N>, Box<N>, T),
    /// A prefix operator.
    Neg(Box<N>, T),
    And(Vec<N>),
    Or(Vec<N>),
    Not(Box<N>),
    NullTest(Box<N>, bool),
    /// `x op ANY|ALL (ARRAY[...])`.
    ArrayOp(String, bool, Box<N>, Vec<N>),
    Func(String, Vec<N>, T),
    /// A cast, written or implicit: `(x)::type`.
    Cast(Box<N>, T),
    /// An untyped literal passed as it is to a parameter of any type (`concat('a', NULL)`):
    /// `'a'`, `NULL::unknown`.
    Untyped(Option<String>),
    /// A call in SQL syntax (`TRIM(BOTH FROM x)`, `SUBSTRING(x FROM 2)`): its name, each
    /// argument after its text, the text after the last, its type.
    Syntax(&'static str, Vec<(&'static str, N)>, &'static str, T),
}

impl N {
    fn ty(&self) -> T {
        match self {
            N::Var(_, t)
            | N::Const(_, t)
            | N::Op(_, _, _, t)
            | N::Neg(_, t)
            | N::Func(_, _, t)
            | N::Null(t)
            | N::Cast(_, t)
            | N::Syntax(_, _, _, t) => *t,
            N::Untyped(_) => T::Unknown,
            N::Array(_) => T::Array,
            _ => T::Bool,
        }
    }
}

/// The printed form of a table's CHECK constraint (`CHECK ((a > 0))`; pretty: `CHECK (a > 0)`).
pub fn check_def(def: &TableDef, c: &CheckDef, pretty: bool) -> String {
    let body = parse(&c.expr)
        .and_then(|e| typed(def, &e))
        .filter(|n| n.ty() == T::Bool)
        .map(|n| {
            let mut s = String::new();
            print(&n, pretty, &mut s);
            s
        })
        .unwrap_or_else(|| c.expr.clone());
    format!("CHECK ({body})")
}

/// The columns a CHECK condition reads, as 0-based positions in ascending order (pg_constraint's
/// conkey of a CHECK).
pub fn check_columns(def: &TableDef, c: &CheckDef) -> Vec<usize> {
    let mut cols = Vec::new();
    if let Ok(l) = crate::sql::lexer::lex(&c.expr) {
        for t in &l.tokens {
            if let sqlparser::tokenizer::Token::Word(w) = &t.token {
                let name = if w.quote_style.is_some() {
                    w.value.clone()
                } else {
                    w.value.to_lowercase()
                };
                if let Some(i) = def.columns.iter().position(|c| c.name == name) {
                    cols.push(i);
                }
            }
        }
    }
    cols.sort_unstable();
    cols.dedup();
    cols
}

/// `FOREIGN KEY (a) REFERENCES p(id) ON DELETE CASCADE`, as pg_get_constraintdef prints it.
pub fn foreign_key_def(def: &TableDef, fk: &ForeignKeyDef) -> String {
    let cols: Vec<String> = fk
        .columns
        .iter()
        .map(|&c| quote_ident(&def.columns[c].name))
        .collect();
    let pcols: Vec<String> = fk.parent_columns.iter().map(|c| quote_ident(c)).collect();
    let mut s = format!(
        "FOREIGN KEY ({}) REFERENCES {}({})",
        cols.join(", "),
        quote_ident(&fk.parent),
        pcols.join(", ")
    );
    for (what, a) in [("UPDATE", fk.on_update), ("DELETE", fk.on_delete)] {
        let act = match a {
            FkAction::NoAction => continue,
            FkAction::Restrict => "RESTRICT",
            FkAction::Cascade => "CASCADE",
            FkAction::SetNull => "SET NULL",
            FkAction::SetDefault => "SET DEFAULT",
        };
        s.push_str(&format!(" ON {what} {act}"));
        if let (Some(set), "DELETE") = (&fk.on_delete_set, what) {
            let set: Vec<String> = set.iter().map(|&c| quote_ident(&def.columns[c].name)).collect();
            s.push_str(&format!(" ({})", set.join(", ")));
        }
    }
    s
}

/// pg_constraint's one-letter code of a referential action.
pub fn action_code(a: FkAction) -> &'static str {
    match a {
        FkAction::NoAction => "a",
        FkAction::Restrict => "r",
        FkAction::Cascade => "c",
        FkAction::SetNull => "n",
        FkAction::SetDefault => "d",
    }
}

/// information_schema's name of a referential action.
pub fn action_name(a: FkAction) -> &'static str {
    match a {
        FkAction::NoAction => "NO ACTION",
        FkAction::Restrict => "RESTRICT",
        FkAction::Cascade => "CASCADE",
        FkAction::SetNull => "SET NULL",
        FkAction::SetDefault => "SET DEFAULT",
    }
}

/// An identifier as PostgreSQL's quote_identifier writes it: double-quoted unless it is a lower-case
/// name that is no keyword (see [`keywords`]).
pub fn quote_ident(s: &str) -> String {
    let plain = s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !keywords::needs_quotes(s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn parse(text: &str) -> Option<A::Expr> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::new(&dialect)
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .ok()
}

/// A constant of type `t` from a quoted literal, with its text as the type prints it.
fn typed_literal(s: &str, t: T) -> Option<N> {
    Some(match t {
        T::Text | T::Unknown => N::Const(s.to_string(), T::Text),
        T::Varchar(_) => N::Const(s.to_string(), t),
        T::Int2 | T::Int4 | T::Int8 => {
            let v: i64 = s.trim().parse().ok()?;
            N::Const(v.to_string(), t)
        }
        T::Date => {
            let v = Value::parse_text(s, DataType::Date).ok()?;
            N::Const(v.to_text()?, t)
        }
        T::Timestamp => {
            let v = Value::parse_text(s, DataType::Timestamp).ok()?;
            N::Const(v.to_text()?, t)
        }
        // Stored as the instant, printed in the session's time zone (Augur's is UTC).
        T::TimestampTz => {
            let v = Value::parse_text(s, DataType::TimestampTz).ok()?;
            N::Const(v.to_text()?, t)
        }
        T::Interval => {
            let v = Value::parse_text(s, DataType::Interval).ok()?;
            N::Const(v.to_text()?, t)
        }
        T::Time => {
            let v = Value::parse_text(s, DataType::Time(None)).ok()?;
            N::Const(v.to_text()?, t)
        }
        T::Bool => match Value::parse_text(s, DataType::Bool).ok()? {
            Value::Bool(b) => N::Bool(b),
            _ => return None,
        },
        T::Numeric | T::Float8 | T::Array => return None,
    })
}

/// A numeric literal (possibly negated) as PostgreSQL's parser types it: int4, int8, or numeric.
fn number(n: &str, negative: bool) -> Option<N> {
    let sign = if negative { "-" } else { "" };
    if n.bytes().all(|b| b.is_ascii_digit()) {
        let v: i128 = format!("{sign}{n}").parse().ok()?;
        let t = if i32::try_from(v).is_ok() {
            T::Int4
        } else if i64::try_from(v).is_ok() {
            T::Int8
        } else {
            return None;
        };
        return Some(N::Const(v.to_string(), t));
    }
    // digits.digits: numeric, printed with the scale written.
    let (i, f) = n.split_once('.')?;
    if !i.bytes().chain(f.bytes()).all(|b| b.is_ascii_digit()) || f.is_empty() {
        return None;
    }
    let i = i.trim_start_matches('0');
    let i = if i.is_empty() { "0" } else { i };
    Some(N::Const(format!("{sign}{i}.{f}"), T::Numeric))
}

/// `n` as type `to`: unknown literals take the type, other values are cast.
fn coerce(n: N, to: T) -> Option<N> {
    let from = n.ty();
    if from == to {
        return Some(n);
    }
    match (&n, from) {
        (N::Const(s, T::Unknown), _) => typed_literal(s, to),
        (N::Null(_), _) => Some(N::Null(to)),
        (_, T::Varchar(_)) if to == T::Text => Some(N::Cast(Box::new(n), T::Text)),
        _ => Some(N::Cast(Box::new(n), to)),
    }
}

/// The common type of a binary operator's operands and the operands in it; None for pairs
/// this typing does not cover.
fn unify(l: N, r: N, arith: bool) -> Option<(N, N, T)> {
    let (lt, rt) = (l.ty(), r.ty());
    if let (Some(a), Some(b)) = (lt.int_rank(), rt.int_rank()) {
        // PostgreSQL has cross-width integer operators: no cast.
        let t = if a >= b { lt } else { rt };
        return Some((l, r, t));
    }
    let t = match (lt, rt) {
        (T::Unknown, T::Unknown) if !arith => T::Text,
        (T::Unknown, x) | (x, T::Unknown) if x != T::Numeric => {
            if let T::Varchar(_) = x {
                T::Text
            } else {
                x
            }
        }
        (a, b) if a.is_texty() && b.is_texty() && !arith => T::Text,
        (a, b)
            if (a == T::Float8 || b == T::Float8) && (a.int_rank().is_some() || b.int_rank().is_some()) =>
        {
            T::Float8
        }
        (T::Float8, T::Numeric) | (T::Numeric, T::Float8) => T::Float8,
        (a, b)
            if (a == T::Numeric || b == T::Numeric) && (a.int_rank().is_some() || b.int_rank().is_some()) =>
        {
            T::Numeric
        }
        (a, b) if a == b => a,
        _ => return None,
    };
    if arith && !matches!(t, T::Int2 | T::Int4 | T::Int8 | T::Numeric | T::Float8) {
        return None;
    }
    Some((coerce(l, t)?, coerce(r, t)?, t))
}

fn args_of(f: &A::Function) -> Option<Vec<&A::Expr>> {
    match &f.args {
        A::FunctionArguments::List(l) if l.duplicate_treatment.is_none() && l.clauses.is_empty() => l
            .args
            .iter()
            .map(|a| match a {
                A::FunctionArg::Unnamed(A::FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        A::FunctionArguments::None => Some(vec![]),
        _ => None,
    }
}

/// The typed tree of `e` over `def`'s columns; None outside what this typing covers.
fn typed(def: &TableDef, e: &A::Expr) -> Option<N> {
    use A::Expr as E;
    Some(match e {
        E::Nested(x) => typed(def, x)?,
        E::Identifier(i) => {
            let name = if i.quote_style.is_some() {
                i.value.clone()
            } else {
                i.value.to_lowercase()
            };
            let c = def.columns.iter().find(|c| c.name == name)?;
            N::Var(quote_ident(&name), T::of(c.ty)?)
        }
        E::Value(v) => match &v.value {
            A::Value::Number(n, _) => number(n, false)?,
            A::Value::SingleQuotedString(s) => N::Const(s.clone(), T::Unknown),
            A::Value::Boolean(b) => N::Bool(*b),
            A::Value::Null => N::Null(T::Unknown),
            _ => return None,
        },
        E::Array(a) if !a.elem.is_empty() => {
            let items = a.elem.iter().map(|i| typed(def, i)).collect::<Option<Vec<_>>>()?;
            let t = common(&items)?;
            N::Array(items.into_iter().map(|i| coerce(i, t)).collect::<Option<_>>()?)
        }
        E::Substring {
            special: false,
            shorthand: false,
            ..
        }
        | E::Trim { .. }
        | E::Position { .. }
        | E::Overlay { .. }
        | E::Interval(_) => funcs::typed_syntax(def, e)?,
        E::Substring {
            expr,
            substring_from,
            substring_for,
            shorthand,
            ..
        } => {
            let mut args = vec![coerce(typed(def, expr)?, T::Text)?];
            for x in [substring_from, substring_for].into_iter().flatten() {
                args.push(int_arg(typed(def, x)?)?);
            }
            let name = if *shorthand { "substr" } else { "\"substring\"" };
            if !args[0].ty().is_texty() || args.len() < 2 {
                return None;
            }
            N::Func(name.into(), args, T::Text)
        }
        E::UnaryOp { op, expr } => match (op, expr.as_ref()) {
            (A::UnaryOperator::Minus, E::Value(v)) => match &v.value {
                A::Value::Number(n, _) => number(n, true)?,
                _ => return None,
            },
            (A::UnaryOperator::Minus, x) => {
                let x = typed(def, x)?;
                let t = x.ty();
                if !matches!(t, T::Int2 | T::Int4 | T::Int8 | T::Numeric | T::Float8) {
                    return None;
                }
                N::Neg(Box::new(x), t)
            }
            (A::UnaryOperator::Not, x) => N::Not(Box::new(boolean(def, x)?)),
            _ => return None,
        },
        E::BinaryOp { left, op, right } => {
            use A::BinaryOperator as B;
            match op {
                B::And | B::Or => {
                    let and = matches!(op, B::And);
                    // PostgreSQL's grammar merges a chain of one operator on its left side.
                    let mut args = match typed(def, left)? {
                        N::And(v) if and => v,
                        N::Or(v) if !and => v,
                        l if l.ty() == T::Bool => vec![l],
                        _ => return None,
                    };
                    args.push(boolean(def, right)?);
                    if and {
                        N::And(args)
                    } else {
                        N::Or(args)
                    }
                }
                B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq => {
                    let (l, r, _) = unify(typed(def, left)?, typed(def, right)?, false)?;
                    let o = match op {
                        B::Eq => "=",
                        B::NotEq => "<>",
                        B::Lt => "<",
                        B::LtEq => "<=",
                        B::Gt => ">",
                        _ => ">=",
                    };
                    N::Op(o.into(), Box::new(l), Box::new(r), T::Bool)
                }
                B::Plus | B::Minus | B::Multiply | B::Divide => {
                    let (l, r) = (typed(def, left)?, typed(def, right)?);
                    match funcs::datetime_arith(&l, &r, op) {
                        Some(t) => N::Op(op.to_string(), Box::new(l), Box::new(coerce(r, t.1)?), t.0),
                        None => {
                            let (l, r, t) = unify(l, r, true)?;
                            N::Op(op.to_string(), Box::new(l), Box::new(r), t)
                        }
                    }
                }
                B::StringConcat => {
                    let (l, r) = (typed(def, left)?, typed(def, right)?);
                    if !l.ty().is_texty() || !r.ty().is_texty() {
                        return None;
                    }
                    N::Op(
                        "||".into(),
                        Box::new(coerce(l, T::Text)?),
                        Box::new(coerce(r, T::Text)?),
                        T::Text,
                    )
                }
                _ => return None,
            }
        }
        E::IsNull(x) => N::NullTest(Box::new(typed(def, x)?), false),
        E::IsNotNull(x) => N::NullTest(Box::new(typed(def, x)?), true),
        E::Between {
            expr,
            negated,
            low,
            high,
        } => {
            let x = typed(def, expr)?;
            let (lo_op, hi_op) = if *negated { ("<", ">") } else { (">=", "<=") };
            let (a, lo, _) = unify(x.clone(), typed(def, low)?, false)?;
            let (b, hi, _) = unify(x, typed(def, high)?, false)?;
            let lo = N::Op(lo_op.into(), Box::new(a), Box::new(lo), T::Bool);
            let hi = N::Op(hi_op.into(), Box::new(b), Box::new(hi), T::Bool);
            if *negated {
                N::Or(vec![lo, hi])
            } else {
                N::And(vec![lo, hi])
            }
        }
        E::InList { expr, list, negated } => {
            let x = typed(def, expr)?;
            let op = if *negated { "<>" } else { "=" };
            let items = list.iter().map(|i| typed(def, i)).collect::<Option<Vec<_>>>()?;
            if let [one] = items.as_slice() {
                let (l, r, _) = unify(x, one.clone(), false)?;
                return Some(N::Op(op.into(), Box::new(l), Box::new(r), T::Bool));
            }
            // Only lists of one type with the column's (PostgreSQL casts mixed lists as a whole).
            let t = x.ty();
            if matches!(t, T::Varchar(_) | T::Unknown | T::Numeric) {
                return None;
            }
            let items = items
                .into_iter()
                .map(|i| {
                    if i.ty() == t || i.ty() == T::Unknown {
                        coerce(i, t)
                    } else {
                        None
                    }
                })
                .collect::<Option<Vec<_>>>()?;
            N::ArrayOp(op.into(), !*negated, Box::new(x), items)
        }
        E::AnyOp {
            left,
            compare_op,
            right,
            ..
        }
        | E::AllOp {
            left,
            compare_op,
            right,
        } => {
            let E::Array(a) = right.as_ref() else {
                return None;
            };
            let op = match compare_op {
                A::BinaryOperator::Eq => "=",
                A::BinaryOperator::NotEq => "<>",
                _ => return None,
            };
            let x = typed(def, left)?;
            let t = x.ty();
            if matches!(t, T::Varchar(_) | T::Unknown | T::Numeric) {
                return None;
            }
            let items = a
                .elem
                .iter()
                .map(|i| {
                    typed(def, i)
                        .filter(|i| i.ty() == t || i.ty() == T::Unknown)
                        .and_then(|i| coerce(i, t))
                })
                .collect::<Option<Vec<_>>>()?;
            N::ArrayOp(op.into(), matches!(e, E::AnyOp { .. }), Box::new(x), items)
        }
        E::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: None,
        }
        | E::ILike {
            negated,
            any: false,
            expr,
            pattern,
            escape_char: None,
        } => {
            let (l, r) = (typed(def, expr)?, typed(def, pattern)?);
            if !l.ty().is_texty() || !r.ty().is_texty() {
                return None;
            }
            let op = match (matches!(e, E::ILike { .. }), *negated) {
                (false, false) => "~~",
                (false, true) => "!~~",
                (true, false) => "~~*",
                (true, true) => "!~~*",
            };
            N::Op(
                op.into(),
                Box::new(coerce(l, T::Text)?),
                Box::new(coerce(r, T::Text)?),
                T::Bool,
            )
        }
        E::Function(f) if f.over.is_none() && f.filter.is_none() && f.within_group.is_empty() => {
            let name = f.name.to_string().to_lowercase();
            let args = args_of(f)?
                .into_iter()
                .map(|a| typed(def, a))
                .collect::<Option<Vec<_>>>()?;
            let texty = |a: &N| a.ty().is_texty();
            let int = |a: &N| a.ty().int_rank().is_some();
            let text = |a: &N| coerce(a.clone(), T::Text);
            match (name.as_str(), args.as_slice()) {
                ("length" | "char_length", [a]) if texty(a) => N::Func(name, vec![text(a)?], T::Int4),
                ("lower" | "upper" | "btrim" | "ltrim" | "rtrim", [a]) if texty(a) => {
                    N::Func(name, vec![text(a)?], T::Text)
                }
                ("btrim" | "ltrim" | "rtrim", [a, b]) if texty(a) && texty(b) => {
                    N::Func(name, vec![text(a)?, text(b)?], T::Text)
                }
                ("replace", [a, b, c]) if texty(a) && texty(b) && texty(c) => {
                    N::Func(name, vec![text(a)?, text(b)?, text(c)?], T::Text)
                }
                // Keywords, printed quoted (ruleutils' quote_identifier).
                ("left" | "right", [a, n]) if texty(a) && int(n) => N::Func(
                    format!("\"{name}\""),
                    vec![text(a)?, int_arg(n.clone())?],
                    T::Text,
                ),
                ("abs", [a]) if matches!(a.ty(), T::Int2 | T::Int4 | T::Int8 | T::Float8) => {
                    N::Func(name, args.clone(), a.ty())
                }
                ("now", []) => N::Func(name, vec![], T::TimestampTz),
                // Printed in capitals, as ruleutils prints these expressions.
                ("coalesce" | "greatest" | "least", [_, ..]) => {
                    let t = common(&args)?;
                    if t == T::Array {
                        return None;
                    }
                    let args = args.into_iter().map(|a| coerce(a, t)).collect::<Option<_>>()?;
                    N::Func(name.to_uppercase(), args, t)
                }
                // SQL's value functions, written without parentheses.
                ("current_timestamp" | "current_date" | "localtimestamp", [])
                    if matches!(f.args, A::FunctionArguments::None) =>
                {
                    let t = match name.as_str() {
                        "current_timestamp" => T::TimestampTz,
                        "current_date" => T::Date,
                        _ => T::Timestamp,
                    };
                    N::Var(name.to_uppercase(), t)
                }
                _ => funcs::typed_call(&name, args)?,
            }
        }
        E::Cast {
            kind: A::CastKind::DoubleColon | A::CastKind::Cast,
            expr,
            data_type,
            format: None,
        } => {
            let (dt, _) = parse_type(data_type).ok()?;
            let to = T::of(dt)?;
            let x = typed(def, expr)?;
            match x {
                N::Const(s, T::Unknown) => typed_literal(&s, to)?,
                // An integer constant cast to an integer type is folded.
                N::Const(s, t) if t.int_rank().is_some() && to.int_rank().is_some() => N::Const(s, to),
                x if x.ty() == to && !matches!(to, T::Varchar(_)) => x,
                x => N::Cast(Box::new(x), to),
            }
        }
        _ => return None,
    })
}

/// An integer argument of a function that takes `integer` (an integer constant as it is).
fn int_arg(n: N) -> Option<N> {
    match n.ty() {
        T::Int4 | T::Unknown => coerce(n, T::Int4),
        T::Int2 | T::Int8 => Some(N::Cast(Box::new(n), T::Int4)),
        _ => None,
    }
}

/// The common type of the values of an ARRAY, COALESCE, GREATEST or LEAST (PostgreSQL's
/// select_common_type over these types): untyped literals and NULLs alone are text.
fn common(items: &[N]) -> Option<T> {
    let mut t = T::Unknown;
    for i in items {
        let u = i.ty();
        t = match (t, u) {
            (T::Unknown, u) => u,
            (t, T::Unknown) => t,
            (a, b) if a == b => a,
            (a, b) if a.is_texty() && b.is_texty() => T::Text,
            (a, b) if a.int_rank().is_some() && b.int_rank().is_some() => {
                if a.int_rank() >= b.int_rank() {
                    a
                } else {
                    b
                }
            }
            (a, b)
                if matches!((a, b), (T::Numeric, _) | (_, T::Numeric))
                    && (a.int_rank().is_some() || b.int_rank().is_some()) =>
            {
                T::Numeric
            }
            (a, b)
                if matches!((a, b), (T::Float8, _) | (_, T::Float8))
                    && (a.int_rank().is_some()
                        || b.int_rank().is_some()
                        || a == T::Numeric
                        || b == T::Numeric) =>
            {
                T::Float8
            }
            _ => return None,
        };
    }
    Some(if t == T::Unknown { T::Text } else { t })
}

fn boolean(def: &TableDef, e: &A::Expr) -> Option<N> {
    typed(def, e).filter(|n| n.ty() == T::Bool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ColumnDef;

    fn table() -> TableDef {
        TableDef::new(
            "c",
            vec![
                ColumnDef::new("x", DataType::Int4),
                ColumnDef::new("y", DataType::Int4),
                ColumnDef::new("s", DataType::Text(Some(10))),
                ColumnDef::new("f", DataType::Float8),
                ColumnDef::new("t", DataType::Text(None)),
            ],
            &[],
        )
        .unwrap()
    }

    fn both(expr: &str) -> (String, String) {
        let c = CheckDef {
            name: "k".into(),
            expr: expr.into(),
        };
        (check_def(&table(), &c, false), check_def(&table(), &c, true))
    }

    // Expected texts are PostgreSQL 15's pg_get_constraintdef(oid) and (oid, true) for the
    // same table and conditions.
    #[test]
    fn checks_print_as_postgresql_prints_them() {
        let cases = [
            ("x > 0", "CHECK ((x > 0))", "CHECK (x > 0)"),
            (
                "x < y AND y < 100",
                "CHECK (((x < y) AND (y < 100)))",
                "CHECK (x < y AND y < 100)",
            ),
            (
                "x + y * 2 > -1",
                "CHECK (((x + (y * 2)) > '-1'::integer))",
                "CHECK ((x + y * 2) > '-1'::integer)",
            ),
            ("x = -y", "CHECK ((x = (- y)))", "CHECK (x = (- y))"),
            (
                "s IS NULL OR s = 'q'",
                "CHECK (((s IS NULL) OR ((s)::text = 'q'::text)))",
                "CHECK (s IS NULL OR s::text = 'q'::text)",
            ),
            (
                "f >= 0.5",
                "CHECK ((f >= (0.5)::double precision))",
                "CHECK (f >= 0.5::double precision)",
            ),
            (
                "t IN ('a','b')",
                "CHECK ((t = ANY (ARRAY['a'::text, 'b'::text])))",
                "CHECK (t = ANY (ARRAY['a'::text, 'b'::text]))",
            ),
            ("NOT (x = 3)", "CHECK ((NOT (x = 3)))", "CHECK (NOT x = 3)"),
            (
                "x BETWEEN 1 AND 10",
                "CHECK (((x >= 1) AND (x <= 10)))",
                "CHECK (x >= 1 AND x <= 10)",
            ),
            (
                "x = 5 OR x = 6 OR x = 7",
                "CHECK (((x = 5) OR (x = 6) OR (x = 7)))",
                "CHECK (x = 5 OR x = 6 OR x = 7)",
            ),
            (
                "t = 'x' || 'y'",
                "CHECK ((t = ('x'::text || 'y'::text)))",
                "CHECK (t = ('x'::text || 'y'::text))",
            ),
            (
                "length(t) < 5",
                "CHECK ((length(t) < 5))",
                "CHECK (length(t) < 5)",
            ),
            (
                "t LIKE 'a%'",
                "CHECK ((t ~~ 'a%'::text))",
                "CHECK (t ~~ 'a%'::text)",
            ),
            (
                "x <> ALL (ARRAY[1,2])",
                "CHECK ((x <> ALL (ARRAY[1, 2])))",
                "CHECK (x <> ALL (ARRAY[1, 2]))",
            ),
        ];
        for (src, plain, pretty) in cases {
            assert_eq!(both(src), (plain.to_string(), pretty.to_string()), "{src}");
        }
    }

    #[test]
    fn uncovered_conditions_print_as_written() {
        assert_eq!(both("x > 1e3").1, "CHECK (x > 1e3)");
        let c = CheckDef {
            name: "k".into(),
            expr: "x > y".into(),
        };
        assert_eq!(check_columns(&table(), &c), vec![0, 1]);
    }
}
