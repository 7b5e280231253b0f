//! The binder: resolves names and types in sqlparser's syntax tree (PostgreSQL's rules) and
//! builds plans. One file per part of a query: expressions, functions, SELECT, FROM.

mod array_ops;
mod catalog;
mod cte;
mod datetime_fn;
mod decorrelate;
mod expr;
mod from;
mod from_fn;
mod func;
mod join_chain;
mod json_fn;
mod ops;
mod regtype;
mod select;
mod set_op;
mod srf;
mod string_fn;
mod subquery;
mod typmod;
mod view;
mod window;

use std::collections::BTreeMap;
use std::sync::Arc;

use sqlparser::ast as A;

use super::expr::{Expr, Ty};
use super::plan::{AggSpec, Plan};
use crate::engine::{TableDef, ViewDef};
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::types::{numeric, DataType};

#[derive(Clone, Debug)]
pub struct ScopeCol {
    pub table: Option<String>,
    pub name: String,
    pub ty: Ty,
    /// Its declared type modifier, as [`Column::len`].
    pub len: Option<u32>,
    /// A stored table's column declared NOT NULL: NULL only in a row an outer join added for
    /// the table's missing side (so `row_to_json(t)` can tell that row apart).
    pub not_null: bool,
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
                    len: c.ty.typmod_len(),
                    not_null: !c.nullable,
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

pub(super) fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("{what} is not supported by Augur"))
}

/// A SQL type name to a column type, with the `len` a cast to it carries: a varchar's length,
/// or `numeric(p, s)`'s modifier ([`crate::sql::expr::numeric_len`]).
pub fn parse_type(dt: &A::DataType) -> Result<(DataType, Option<u32>)> {
    let s = dt.to_string().to_lowercase();
    type_of_name(&s)
}

/// A type name as [`parse_type`] reads it (lower-cased): `int[]`, `numeric(10,2)`, ...
pub fn type_of_name(s: &str) -> Result<(DataType, Option<u32>)> {
    // `int[]`, `int[3]`, `int[][]`: PostgreSQL neither enforces sizes nor dimensions, so every
    // one is the array of the element type (of one dimension in Augur).
    if let Some(i) = s.find('[').filter(|_| s.trim_end().ends_with(']')) {
        // A varchar(n) element's length and a numeric(p, s) element's typmod are kept, and
        // apply to each element.
        let (elem, len) = type_of_name(s[..i].trim_end())?;
        let arr = DataType::array_keeping_typmod(elem).ok_or_else(|| {
            Error::unsupported(format!(
                "arrays of type {} are not supported by Augur",
                elem.sql_name()
            ))
        })?;
        return Ok((
            arr,
            len.filter(|_| {
                matches!(
                    elem,
                    DataType::Numeric(_)
                        | DataType::Varchar(Some(_))
                        | DataType::Bpchar(Some(_))
                        | DataType::Time(Some(_))
                )
            }),
        ));
    }
    if let Some(t) = time_type(s)? {
        return Ok((t, t.typmod_len()));
    }
    let s = s.to_string();
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
    let t = match base.as_str() {
        "real" | "float4" | "float" => DataType::Float8,
        "numeric" | "decimal" | "dec" => {
            let mods: Vec<&str> = args
                .as_deref()
                .map_or(vec![], |a| a.split(',').map(str::trim).collect());
            let num = |s: &str| {
                s.parse::<i64>()
                    .map_err(|_| Error::syntax(format!("invalid NUMERIC type modifier {s}")))
            };
            let typmod = match *mods.as_slice() {
                [] => None,
                [p] => Some(numeric::check_typmod(num(p)?, 0)?),
                [p, s] => Some(numeric::check_typmod(num(p)?, num(s)?)?),
                _ => return Err(Error::syntax("invalid NUMERIC type modifier")),
            };
            let t = DataType::Numeric(typmod);
            return Ok((t, typmod.map(crate::sql::expr::numeric_len)));
        }
        "timestamp without time zone" | "timestamp" => DataType::Timestamp,
        "timestamp with time zone" | "timestamptz" => DataType::TimestampTz,
        "serial" | "serial4" => DataType::Int4,
        "bigserial" | "serial8" => DataType::Int8,
        _ => DataType::from_sql_name(&base, len)?,
    };
    let len = match t {
        DataType::Varchar(n) | DataType::Bpchar(n) => n,
        _ => None,
    };
    Ok((t, len))
}

/// `time`, `time(p)`, `time [(p)] without time zone` (the precision at most 6: more is
/// rounded down to 6 as PostgreSQL warns); `time with time zone` / `timetz` are not supported.
fn time_type(s: &str) -> Result<Option<DataType>> {
    let s = s.trim();
    let Some(rest) = s.strip_prefix("timetz").or_else(|| s.strip_prefix("time")) else {
        return Ok(None);
    };
    let tz = s.starts_with("timetz");
    let rest = rest.trim_start();
    let (p, rest) = match rest.strip_prefix('(') {
        Some(r) => {
            let (p, r) = r
                .split_once(')')
                .ok_or_else(|| Error::syntax("syntax error at or near \"(\""))?;
            let p: i64 = p
                .trim()
                .parse()
                .map_err(|_| Error::syntax(format!("syntax error at or near \"{p}\"")))?;
            if p < 0 {
                return Err(Error::syntax(format!("TIME({p}) precision must not be negative")));
            }
            (Some(p.min(6) as u32), r.trim_start())
        }
        None => (None, rest),
    };
    let tz = match rest {
        "" => tz,
        "without time zone" if !tz => false,
        "with time zone" if !tz => true,
        _ => return Ok(None),
    };
    if tz {
        return Err(Error::unsupported(
            "type time with time zone is not supported by Augur",
        ));
    }
    Ok(Some(DataType::Time(p)))
}

pub struct Binder<'a> {
    /// The engine whose tables and views names resolve to; None when binding an expression
    /// that may name none (a CHECK constraint evaluated for the engine's write API).
    db: Option<&'a AnyEngine>,
    pub settings: Option<&'a BTreeMap<String, String>>,
    /// What `pg_backend_pid()` returns: the connection's BackendKeyData process id (the one a
    /// CancelRequest names); None outside the server (the OS process id then).
    pub backend_pid: Option<i32>,
    pub params: Vec<Ty>,
    pub subplans: Vec<Plan>,
    /// The type modifier of a scalar subquery's column, by its subplan number, when it has one
    /// (`typmod.rs`).
    sub_lens: BTreeMap<usize, u32>,
    pub tables: Vec<AnyTable>,
    /// The views expanded (a plan is re-made when one of them is replaced or dropped).
    pub views: Vec<Arc<ViewDef>>,
    /// Views being expanded inside one another now.
    view_depth: usize,
    agg_sink: Option<Vec<AggSpec>>,
    agg_ctx: &'static str,
    in_agg: bool,
    /// Binding a window function's arguments, PARTITION BY or ORDER BY.
    in_window: bool,
    /// The scopes of the queries enclosing the subquery being bound (innermost last).
    outer: Vec<subquery::OuterFrame>,
    /// The CTEs in scope (WITH clauses being bound, innermost last).
    ctes: Vec<cte::CteEntry>,
    /// Work tables numbered so far (one per recursive CTE).
    work_tables: usize,
    /// Window functions of the select list being bound (None where they are not allowed).
    win_sink: Option<Vec<crate::sql::plan::window::WinSpec>>,
    /// Set-returning functions of the select list being bound (None where they are not
    /// allowed).
    srf_sink: Option<Vec<crate::sql::plan::srf::SrfSpec>>,
    /// The catalog snapshot catalog relations and functions read (None: the statement reads
    /// none, see `catalog.rs`).
    pub catalog: Option<Arc<crate::sql::catalog::Snapshot>>,
    /// The WINDOW clause of the SELECT whose select list is being bound (name, definition with
    /// the windows it names copied in).
    windows: Vec<(String, A::WindowSpec)>,
    /// Set just before binding a set operation's branch: the SELECT it names keeps its
    /// unknown-typed constant outputs for the operation to type (`set_op.rs`).
    set_op_leaf: bool,
    /// The columns of the FROM items left of the function in FROM being bound, which its
    /// arguments may read (`from_fn.rs`).
    lateral: Option<Scope>,
    /// Calls of volatile functions bound so far (see [`crate::sql::expr::SubRef::volatile`]).
    volatile_calls: usize,
    /// Type modifiers as parse analysis gives them, before the planner folds constant CASE
    /// and COALESCE arms (`typmod.rs`): what a view's columns and a prepared statement's
    /// Describe carry. False (the default): as a query's rows carry them.
    pub parse_typmods: bool,
    /// Set when folding a constant CASE or COALESCE arm may have changed a type modifier, so
    /// the statement's parse-analysis modifiers may differ from its rows'.
    pub typmods_folded: std::cell::Cell<bool>,
}

pub(super) enum OrderRef {
    Out(usize),
    /// An expression of the given type over the input rows.
    Pre(Expr, Ty),
}

impl<'a> Binder<'a> {
    pub fn new(db: &'a AnyEngine, settings: Option<&'a BTreeMap<String, String>>) -> Binder<'a> {
        Binder::with(Some(db), settings)
    }

    /// A binder for expressions over one row that name no relation: naming one fails (42P01).
    pub fn detached() -> Binder<'static> {
        Binder::with(None, None)
    }

    /// The engine relation names resolve to.
    pub fn engine(&self) -> Result<&'a AnyEngine> {
        self.db.ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_TABLE,
                "no relation can be named in this expression",
            )
        })
    }

    fn with(db: Option<&'a AnyEngine>, settings: Option<&'a BTreeMap<String, String>>) -> Binder<'a> {
        Binder {
            db,
            settings,
            backend_pid: None,
            params: Vec::new(),
            subplans: Vec::new(),
            sub_lens: BTreeMap::new(),
            tables: Vec::new(),
            views: Vec::new(),
            view_depth: 0,
            agg_sink: None,
            agg_ctx: "WHERE",
            in_agg: false,
            in_window: false,
            outer: Vec::new(),
            ctes: Vec::new(),
            work_tables: 0,
            win_sink: None,
            srf_sink: None,
            catalog: None,
            windows: Vec::new(),
            set_op_leaf: false,
            lateral: None,
            volatile_calls: 0,
            parse_typmods: false,
            typmods_folded: std::cell::Cell::new(false),
        }
    }

    pub fn table(&mut self, name: &A::ObjectName) -> Result<AnyTable> {
        if let Some((schema, rel)) = catalog::catalog_name(name) {
            return Err(crate::sql::catalog::write_error(schema, rel));
        }
        let n = object_name(name)?;
        let db = self.engine()?;
        let t = db.table(&n).map_err(|e| match db.view(&n) {
            Ok(Some(_)) => Error::unsupported(format!(
                "cannot change view \"{n}\": views are read-only in Augur"
            )),
            _ => e,
        })?;
        self.tables.push(t.clone());
        Ok(t)
    }
}
