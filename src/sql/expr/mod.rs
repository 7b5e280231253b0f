//! Bound (type-checked) scalar expressions: static types, the tree the binder builds and the
//! context they run in. Evaluation is in `eval`, operators in `ops`, functions in `func`, casts
//! in `cast`.

mod cast;
mod datetime_fmt;
mod datetime_fn;
mod eval;
mod func;
mod json_out;
mod number_fmt;
mod ops;
mod regex_fold;
mod string_fn;
mod time_fn;

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::Arc;

pub use self::cast::{assign, cast, cast_allowed, numeric_len, text_of};
pub use self::datetime_fn::DtFn;
pub use self::func::{array_items, sequence_name};
pub use self::ops::{arith, div_zero, like};
pub use self::string_fn::{quote_literal, StrFn};
use crate::engine::Interrupt;
use crate::error::Result;
use crate::seam::AnyTxn;
pub use crate::types::format_float;
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
    Date,
    TimestampTz,
    Numeric,
    Uuid,
    Interval,
    Jsonb,
    /// `time` (without time zone).
    Time,
    /// `json`: JSON text as written.
    Json,
    /// An array of one dimension (see [`DataType::Array`]): its values are text in
    /// PostgreSQL's array form; its elements are one of [`Ty::array`]'s types.
    Array(&'static Ty),
    Unknown,
    /// `character(n)` / `bpchar`: text whose trailing blanks do not count; used as text
    /// (functions, `||`, comparisons) it is cast to text, which drops them.
    Bpchar,
    /// `character varying` (`varchar`, `varchar(n)`): text that keeps its declared type as a
    /// column's, a cast's or a CASE / COALESCE / UNION of them (`pg_typeof`, the wire OID
    /// 1043); as an operand of an operator or a function it is text (the binder's
    /// `bind_expr` gives it as text), as PostgreSQL's varchar has text's operators.
    Varchar,
    /// `regtype` (what `pg_typeof` returns): a type, held as its name as PostgreSQL prints
    /// it (`integer`, `character varying`); compared with an OID (`'int4'::regtype`, a
    /// catalog's type column) through the type's OID.
    RegType,
}

/// The types an array's elements may have.
static ARRAY_ELEMENTS: [Ty; 18] = [
    Ty::Int2,
    Ty::Int4,
    Ty::Int8,
    Ty::Float8,
    Ty::Bool,
    Ty::Text,
    Ty::Bytea,
    Ty::Timestamp,
    Ty::Date,
    Ty::TimestampTz,
    Ty::Numeric,
    Ty::Uuid,
    Ty::Interval,
    Ty::Jsonb,
    Ty::Bpchar,
    Ty::Varchar,
    Ty::Time,
    Ty::Json,
];

impl Ty {
    /// The type of an array of `self` values (an untyped literal's: text[]); None for an array
    /// (Augur's arrays have one dimension).
    pub fn array(self) -> Option<Ty> {
        let e = if self == Ty::Unknown { Ty::Text } else { self };
        ARRAY_ELEMENTS.iter().find(|t| **t == e).map(Ty::Array)
    }

    /// An array type's element type (text for any other type).
    pub fn array_elem(self) -> Ty {
        match self {
            Ty::Array(e) => *e,
            _ => Ty::Text,
        }
    }

    pub fn from_dt(dt: DataType) -> Ty {
        match dt {
            DataType::Int2 => Ty::Int2,
            DataType::Int4 => Ty::Int4,
            DataType::Int8 => Ty::Int8,
            DataType::Float8 => Ty::Float8,
            DataType::Bool => Ty::Bool,
            DataType::Text(Some(_)) | DataType::Varchar(_) => Ty::Varchar,
            DataType::Text(None) => Ty::Text,
            DataType::Bytea => Ty::Bytea,
            DataType::Timestamp => Ty::Timestamp,
            DataType::Date => Ty::Date,
            DataType::TimestampTz => Ty::TimestampTz,
            DataType::Numeric(_) => Ty::Numeric,
            DataType::Uuid => Ty::Uuid,
            DataType::Interval => Ty::Interval,
            DataType::Jsonb => Ty::Jsonb,
            DataType::Time(_) => Ty::Time,
            DataType::Json => Ty::Json,
            DataType::Bpchar(_) => Ty::Bpchar,
            DataType::RegType => Ty::RegType,
            DataType::Array(e) => Ty::from_dt(*e).array().unwrap_or(Ty::Text),
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
            Ty::Date => DataType::Date,
            Ty::TimestampTz => DataType::TimestampTz,
            Ty::Numeric => DataType::Numeric(None),
            Ty::Uuid => DataType::Uuid,
            Ty::Interval => DataType::Interval,
            Ty::Jsonb => DataType::Jsonb,
            Ty::Time => DataType::Time(None),
            Ty::Json => DataType::Json,
            Ty::Bpchar => DataType::Bpchar(None),
            Ty::Varchar => DataType::Varchar(None),
            Ty::RegType => DataType::RegType,
            Ty::Array(e) => DataType::array_of(e.to_dt()).unwrap_or(DataType::Text(None)),
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
            Ty::Date => "date",
            Ty::TimestampTz => "timestamp with time zone",
            Ty::Numeric => "numeric",
            Ty::Uuid => "uuid",
            Ty::Interval => "interval",
            Ty::Jsonb => "jsonb",
            Ty::Time => "time without time zone",
            Ty::Json => "json",
            Ty::Bpchar => "character",
            Ty::Varchar => "character varying",
            Ty::RegType => "regtype",
            Ty::Array(e) => match e {
                Ty::Int2 => "smallint[]",
                Ty::Int4 => "integer[]",
                Ty::Int8 => "bigint[]",
                Ty::Float8 => "double precision[]",
                Ty::Bool => "boolean[]",
                Ty::Bytea => "bytea[]",
                Ty::Timestamp => "timestamp without time zone[]",
                Ty::Date => "date[]",
                Ty::TimestampTz => "timestamp with time zone[]",
                Ty::Numeric => "numeric[]",
                Ty::Uuid => "uuid[]",
                Ty::Interval => "interval[]",
                Ty::Jsonb => "jsonb[]",
                Ty::Time => "time without time zone[]",
                Ty::Json => "json[]",
                Ty::Bpchar => "character[]",
                Ty::Varchar => "character varying[]",
                _ => "text[]",
            },
            Ty::Unknown => "unknown",
        }
    }

    /// The type as an operand of an operator or a function: varchar is text, and an array of
    /// varchar an array of text.
    pub fn operand(self) -> Ty {
        match self {
            Ty::Varchar => Ty::Text,
            Ty::Array(Ty::Varchar) => Ty::Array(&Ty::Text),
            t => t,
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self, Ty::Int2 | Ty::Int4 | Ty::Int8)
    }

    /// The numeric category: integers, numeric, float8.
    pub fn is_num(self) -> bool {
        self.is_int() || matches!(self, Ty::Float8 | Ty::Numeric)
    }

    /// date, timestamp, timestamptz: comparable with each other through PostgreSQL's
    /// implicit casts (date to timestamp to timestamptz).
    pub fn is_datetime(self) -> bool {
        matches!(self, Ty::Date | Ty::Timestamp | Ty::TimestampTz)
    }

    fn datetime_rank(self) -> u8 {
        match self {
            Ty::Date => 1,
            Ty::Timestamp => 2,
            _ => 3,
        }
    }

    /// PostgreSQL's implicit casts in the numeric category: int2 to int4 to int8 to numeric to
    /// float8 (`1 + 1.5` is numeric, `1.5 + 1.5::float8` float8).
    fn num_rank(self) -> u8 {
        match self {
            Ty::Int2 => 1,
            Ty::Int4 => 2,
            Ty::Int8 => 3,
            Ty::Numeric => 4,
            _ => 5,
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
        // varchar and text convert to each other implicitly: the first one wins, as in
        // PostgreSQL's select_common_type (`v UNION t` is varchar, `t UNION v` text).
        if a.operand() == b.operand() && matches!(a.operand(), Ty::Text | Ty::Array(Ty::Text)) {
            // So do their arrays (`varchar[] UNION text[]` is varchar[]).
            return Some(a);
        }
        // text is the string category's preferred type: character(n) with text is text (and
        // with varchar text here too).
        let stringy = |t: Ty| matches!(t, Ty::Text | Ty::Bpchar | Ty::Varchar);
        if stringy(a) && stringy(b) {
            return Some(Ty::Text);
        }
        // A regtype with an OID: as OIDs (`atttypid IN ('int4'::regtype, 'int8'::regtype)`).
        if matches!((a, b), (Ty::RegType, t) | (t, Ty::RegType) if t.is_int()) {
            return Some(Ty::Int8);
        }
        if a.is_num() && b.is_num() {
            return Some(if a.num_rank() >= b.num_rank() { a } else { b });
        }
        if a.is_datetime() && b.is_datetime() {
            return Some(if a.datetime_rank() >= b.datetime_rank() {
                a
            } else {
                b
            });
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
    pub(crate) fn test(self, o: Ordering) -> bool {
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
    /// `clock_timestamp()`: the time of each call (now() is the statement's start).
    ClockTimestamp,
    StatementTimestamp,
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
    Exp,
    /// `ln(x)`.
    Ln,
    /// `log(x)` (base 10) or `log(b, x)` (numeric only, as in PostgreSQL).
    Log,
    Random,
    /// `gen_random_uuid()`: a version 4 (random) uuid.
    GenRandomUuid,
    /// jsonb `->` (a field by text key, an element by integer index), `->>` (the same as
    /// text), `@>` (containment).
    JsonGet,
    JsonGetText,
    JsonContains,
    /// jsonb `#>` / `#>>` (by a path, `text[]`), `?` (a key), `?|` / `?&` (any / all of a
    /// `text[]` of keys), `||`, `-` (a text key, a `text[]` of keys, an integer index).
    JsonPath,
    JsonPathText,
    JsonHasKey,
    JsonHasAnyKey,
    JsonHasAllKeys,
    JsonConcat,
    JsonDeleteKey,
    JsonDeleteKeys,
    JsonDeleteIndex,
    /// `jsonb_typeof`, `jsonb_array_length`.
    JsonTypeof,
    JsonArrayLength,
    /// `to_jsonb(x)` (an array's element type name as a second argument).
    ToJsonb,
    /// `to_json(x)` as PostgreSQL writes it (an array's element type name as a second
    /// argument); NULL of NULL.
    ToJson,
    /// One field of `json_object_agg`: `"key" : value` of the key's and the value's `to_json`
    /// text; the third argument is true when the key's type cannot be a key (an array,
    /// json), 22023 when a row is aggregated, as a NULL key is.
    JsonObjectField,
    /// `jsonb_build_array(...)` / `jsonb_build_object(k, v, ...)` of `to_jsonb`'d values.
    JsonBuildArray,
    JsonBuildObject,
    /// nextval / currval / setval(name, value[, is_called]) of a sequence.
    NextVal,
    CurrVal,
    SetVal,
    /// `text ~ pattern`, `text ~* pattern` (case-insensitive).
    RegexMatch,
    RegexIMatch,
    /// `a[i]` of an array in PostgreSQL's text form: `{x,y}` (subscripts from 1) or an
    /// `int2vector` such as pg_index.indkey, `1 2` (subscripts from 0); the element as text,
    /// NULL outside the array.
    ArrayElem,
    /// `array_to_string(array, sep [, null_text])` of an array in its text form.
    ArrayToString,
    /// `a || b` of two arrays (a NULL side is empty; both NULL: NULL).
    ArrayCat,
    /// Two arrays of the type the call is bound with, ordered as PostgreSQL's array_cmp
    /// orders them: -1, 0 or 1 (the binder compares it with 0 for `=`, `<`, ...).
    ArrayCmp,
    /// `ARRAY[a, b, ...]`: the elements (already of the element type) as an array.
    ArrayConstruct,
    /// `array_lower(a, dim)`, `array_upper(a, dim)`, `array_length(a, dim)`: of the one
    /// dimension (NULL for another or for an empty array); `cardinality(a)`: the element count.
    ArrayLower,
    ArrayUpper,
    ArrayLength,
    Cardinality,
    /// `array_position(a, x)`: the subscript of the first element not distinct from `x`;
    /// `array_positions(a, x)`: every such subscript, as an `integer[]`. Bound with the
    /// array's type: the elements compare as values of its element type (`1.5` finds `1.50`).
    ArrayPosition,
    ArrayPositions,
    /// The array as the bytes it orders and compares by ([`crate::types::array::sort_key`]),
    /// bound with the array's type: what ORDER BY sorts an array by.
    ArrayKey,
    /// An array cast to another array type (the call's type) element by element: its
    /// arguments are the array, its element type's name and the cast's `len` (NULL for none).
    ArrayCast,
    /// `quote_ident(name)`: the name double-quoted when it is not a plain lower-case one or is a
    /// keyword PostgreSQL quotes.
    QuoteIdent,
    /// Field `i` (from 0) of a record in PostgreSQL's text form `(a,b)`, as text.
    RecordField,
    /// The record of its arguments in PostgreSQL's text form (record_out's quoting); NULL when
    /// every field is (a set-returning function's record past the end of its rows).
    RecordOf,
    /// A date/time function (`datetime_fn`).
    Datetime(DtFn),
    /// A string function of `string_fn` (lpad, format, regexp_replace, ...).
    Str(StrFn),
}

/// A subquery used as an expression: its plan number (the statement's subplans) and, when it is
/// correlated, the expressions over the enclosing row whose values it reads as [`Expr::Outer`].
#[derive(Clone, Debug, PartialEq)]
pub struct SubRef {
    pub id: usize,
    pub args: Vec<Expr>,
    /// The subquery calls a volatile function (random, nextval, clock_timestamp, ...): when
    /// correlated, it runs again for every row that evaluates it, never from the cache by
    /// argument values (PostgreSQL re-runs such a subquery per row; an uncorrelated one still
    /// runs once per statement, as PostgreSQL's InitPlan does).
    pub volatile: bool,
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
    /// `x [NOT] IN (subquery)`.
    InSub(Box<Expr>, SubRef, bool),
    Exists(SubRef, bool),
    ScalarSub(SubRef),
    /// `x op ANY (subquery)` (`all` false) or `x op ALL (subquery)`.
    Quant(CmpOp, Box<Expr>, SubRef, bool),
    /// Inside a correlated subquery: the value of its k-th argument (an expression over the
    /// enclosing query's row, see [`SubRef::args`]), constant for one run of the subquery.
    Outer(usize),
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
    /// A window function's result (only while binding; replaced by a column of the window
    /// step's output).
    Window(usize),
    /// A column of a select-list set-returning function's result (only while binding; replaced
    /// by a column of the ProjectSet step's output, see `plan::srf`).
    Srf(usize),
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
            | Expr::Outer(_)
            | Expr::Window(_)
            | Expr::Srf(_)
            | Expr::Agg(_) => {}
            Expr::Exists(s, _) | Expr::ScalarSub(s) => s.args.iter().for_each(|e| e.walk(f)),
            Expr::InSub(a, s, _) | Expr::Quant(_, a, s, _) => {
                a.walk(f);
                s.args.iter().for_each(|e| e.walk(f));
            }
            Expr::Neg(a, _)
            | Expr::Not(a)
            | Expr::IsNull(a, _)
            | Expr::IsBool(a, _, _)
            | Expr::Cast(a, _, _) => a.walk(f),
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
            Expr::InSub(a, s, n) => Expr::InSub(b(a, f)?, s.map(f)?, n),
            Expr::Quant(o, a, s, all) => Expr::Quant(o, b(a, f)?, s.map(f)?, all),
            Expr::Exists(s, n) => Expr::Exists(s.map(f)?, n),
            Expr::ScalarSub(s) => Expr::ScalarSub(s.map(f)?),
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
            if matches!(e, Expr::Col(_) | Expr::Agg(_) | Expr::Window(_) | Expr::Srf(_)) {
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

impl SubRef {
    fn map(self, f: &mut dyn FnMut(Expr) -> Result<Expr>) -> Result<SubRef> {
        Ok(SubRef {
            id: self.id,
            args: self.args.into_iter().map(f).collect::<Result<_>>()?,
            volatile: self.volatile,
        })
    }
}

/// Whether the expression holds a subquery.
pub fn has_subquery(e: &Expr) -> bool {
    let mut h = false;
    e.walk(&mut |x| {
        h |= matches!(
            x,
            Expr::InSub(..) | Expr::Exists(..) | Expr::ScalarSub(_) | Expr::Quant(..)
        )
    });
    h
}

/// The result of a subquery for one set of argument values (computed once per statement for
/// an uncorrelated one, once per distinct outer values for a correlated one).
pub struct SubResult {
    pub rows: Vec<Row>,
    pub set: HashSet<Value>,
    pub has_null: bool,
}

/// Evaluates subqueries (by number, with their argument values) on demand, caching results;
/// implemented by the executor.
pub trait SubqueryRunner {
    /// Runs subquery `n` for `args`, or reuses its result for the same `args` unless `fresh`
    /// (a correlated subquery that calls a volatile function, [`SubRef::volatile`]).
    fn run_subquery(&self, n: usize, args: Vec<Value>, fresh: bool) -> Result<Arc<SubResult>>;
    /// The rows the current round of recursive CTE `id` reads (see `Plan::Recursive`).
    fn work_table(&self, id: usize) -> Arc<Vec<Row>>;
    fn set_work_table(&self, id: usize, rows: Arc<Vec<Row>>);
}

/// What expressions need at run time besides the row.
pub struct Ctx<'a> {
    pub tx: &'a AnyTxn,
    pub params: &'a [Value],
    pub subs: &'a dyn SubqueryRunner,
    pub now: i64,
    /// The statement's start (`statement_timestamp()`); `now` is the transaction's.
    pub stmt_now: i64,
    /// The argument values of the correlated subquery being run ([`Expr::Outer`]).
    pub outer: Vec<Value>,
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
