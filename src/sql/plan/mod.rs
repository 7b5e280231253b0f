//! Plans: what the executor runs. Built by the binder (`sql/bind/`), with access paths chosen
//! by [`access`]; printed by EXPLAIN ([`explain`]).

pub mod access;
mod explain;
pub mod join;
pub mod join_order;
pub mod srf;
pub mod window;

use std::sync::Arc;

use self::explain::{scan_line, show, show_agg, show_n};
use super::expr::{Expr, SubRef, Ty};
use crate::engine::TableDef;
use crate::seam::AnyTable;
use crate::types::DataType;

/// An output column.
#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub ty: Ty,
    /// The declared type modifier it keeps ([`DataType::typmod_len`]: `varchar(n)`'s n, ...):
    /// a column reference's, a cast's with a length, or one every branch of a CASE, COALESCE
    /// or set operation shares, as PostgreSQL's exprTypmod; None for any other expression.
    pub len: Option<u32>,
}

impl Column {
    /// A column without a type modifier.
    pub fn new(name: String, ty: Ty) -> Column {
        Column { name, ty, len: None }
    }

    /// Its type as the result describes it, with its type modifier.
    pub fn dt(&self) -> DataType {
        self.ty.to_dt().with_len(self.len)
    }
}

/// How a scan reads its table.
#[derive(Clone, Debug)]
pub enum Access {
    /// Every row, in primary-key order.
    Full,
    /// Primary-key equality: one value per key column.
    Point(Vec<Expr>),
    /// `pk IN (...)` on a single-column key.
    In(Vec<Expr>),
    /// A range of a single-column key: (bound, inclusive).
    Range {
        lo: Option<(Expr, bool)>,
        hi: Option<(Expr, bool)>,
    },
    /// Equality on a prefix of a composite key.
    Prefix(Vec<Expr>),
    /// Secondary index `index`: equality on all its columns, or a range on its only column.
    Index {
        index: usize,
        eq: Vec<Expr>,
        lo: Option<(Expr, bool)>,
        hi: Option<(Expr, bool)>,
    },
}

impl Plan {
    /// Reads a bounded handful of rows through primary-key point lookups (no scan, join, sort
    /// or aggregate over many rows): cheap enough for the server to run on its network thread.
    pub fn is_point_read(&self) -> bool {
        match self {
            Plan::Scan(s) => matches!(s.access, Access::Point(_)),
            Plan::Filter(p, _) | Plan::Project(p, _) => p.is_point_read(),
            Plan::Limit { input, .. } => input.is_point_read(),
            _ => false,
        }
    }
}

#[derive(Clone)]
pub struct Scan {
    pub table: AnyTable,
    pub def: Arc<TableDef>,
    pub alias: String,
    pub access: Access,
    /// Residual predicate over the table's row.
    pub filter: Option<Expr>,
    /// Read the primary key in descending order.
    pub reverse: bool,
    /// Stop after (limit + offset) rows pass the filter: the scan order is the query's order.
    pub stop_after: Option<(Option<Expr>, Option<Expr>)>,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&scan_line(self))
    }
}

impl std::fmt::Debug for Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lookup({} by {})", self.alias, show(&self.key))
    }
}

impl Scan {
    pub fn pk_col(&self) -> Option<usize> {
        match self.def.primary_key.as_slice() {
            [c] => Some(*c),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    BoolAnd,
    BoolOr,
    /// `array_agg(x)`: the values (NULLs too) as an array, in the aggregate's ORDER BY order
    /// (else in input order); NULL over no rows.
    ArrayAgg,
    /// `jsonb_agg(x)`: the values as `to_jsonb` converts them (NULLs as JSON null) in a jsonb
    /// array, ordered as `array_agg`'s; NULL over no rows.
    JsonbAgg,
    /// `jsonb_object_agg(key, value)`: a jsonb object of the pairs (the last of a duplicate key
    /// winning, as jsonb keeps objects); its argument is the pair as a two-element jsonb array
    /// `[to_jsonb(key), to_jsonb(value)]`; a NULL key is 22023; NULL over no rows.
    JsonbObjectAgg,
    /// `json_agg(x)`: the values as `to_json` converts them (NULLs as JSON null) in a json
    /// array written as PostgreSQL writes it (`[1, 2]`; an array value after the first on a
    /// line of its own, `arg_ty` then being the array's type), ordered as `array_agg`'s; NULL
    /// over no rows.
    JsonAgg,
    /// `json_object_agg(key, value)`: a json object of the pairs as PostgreSQL writes it
    /// (`{ "a" : 1, "b" : 2 }`, duplicate keys kept); its argument is one field's text, `"a" :
    /// 1` (see [`crate::sql::expr::Func::JsonObjectField`]); NULL over no rows.
    JsonObjectAgg,
}

impl AggFunc {
    /// Whether the aggregate's result depends on its input's order (its own ORDER BY applies).
    pub fn keeps_order(self) -> bool {
        matches!(
            self,
            AggFunc::ArrayAgg
                | AggFunc::JsonbAgg
                | AggFunc::JsonbObjectAgg
                | AggFunc::JsonAgg
                | AggFunc::JsonObjectAgg
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct AggSpec {
    pub func: AggFunc,
    pub arg: Option<Expr>,
    pub distinct: bool,
    /// Type of the argument.
    pub arg_ty: Ty,
    /// The aggregate's own ORDER BY (`array_agg(x ORDER BY y)`), over the input row.
    pub order: Vec<SortKey>,
    /// `FILTER (WHERE cond)`, over the input row: only the rows it is true for are
    /// aggregated.
    pub filter: Option<Expr>,
}

/// The columns of a row that are arrays, with their element types: DISTINCT, GROUP BY and set
/// operations compare them by [`crate::types::array::sort_key`], element by element as the
/// element type compares (`{1.5}` and `{1.50}` are one numeric[] value), not by their text.
pub type ArrayCols = Vec<(usize, Ty)>;

/// The array columns among `types`.
pub fn array_cols(types: impl IntoIterator<Item = Ty>) -> ArrayCols {
    types
        .into_iter()
        .enumerate()
        .filter_map(|(i, t)| matches!(t, Ty::Array(_)).then_some((i, t)))
        .collect()
}

#[derive(Clone, Debug, PartialEq)]
pub struct SortKey {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

/// Index-lookup join: for each left row, evaluate `key` and fetch the right rows by primary
/// key (`index` None) or through the single-column secondary index `index`.
#[derive(Clone)]
pub struct Lookup {
    pub table: AnyTable,
    pub def: Arc<TableDef>,
    pub alias: String,
    pub key: Expr,
    pub index: Option<usize>,
}

/// A set operation between two queries' rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOpKind {
    Union,
    Intersect,
    Except,
}

impl SetOpKind {
    pub fn keyword(self) -> &'static str {
        match self {
            SetOpKind::Union => "UNION",
            SetOpKind::Intersect => "INTERSECT",
            SetOpKind::Except => "EXCEPT",
        }
    }
}

#[derive(Clone, Debug)]
pub enum Plan {
    /// Constant rows (SELECT without FROM, VALUES).
    Values(Vec<Vec<Expr>>),
    Scan(Scan),
    Join {
        left: Box<Plan>,
        right: Box<Plan>,
        left_join: bool,
        on: Option<Expr>,
        lookup: Option<Lookup>,
    },
    /// FULL [OUTER] JOIN: the pairs meeting `on`, then each row of either side that met none,
    /// padded with NULLs (hash join on the condition's equalities, else a nested loop).
    FullJoin {
        left: Box<Plan>,
        right: Box<Plan>,
        on: Option<Expr>,
    },
    /// The left rows that have (`anti`: have no) right row with equal `keys` (left expression,
    /// right expression) meeting `residual` (over the left row followed by the right one): a
    /// decorrelated EXISTS / IN subquery, by hash.
    SemiJoin {
        left: Box<Plan>,
        right: Box<Plan>,
        keys: Vec<(Expr, Expr)>,
        residual: Option<Expr>,
        anti: bool,
    },
    Filter(Box<Plan>, Expr),
    Aggregate {
        input: Box<Plan>,
        groups: Vec<Expr>,
        aggs: Vec<AggSpec>,
        /// The groups that are arrays, told apart by their elements' values.
        array_groups: ArrayCols,
    },
    /// min(pk) / max(pk) read from one end of the index.
    IndexMinMax {
        scan: Scan,
        max: bool,
    },
    /// count(*) counted while walking the primary index (no row is copied).
    IndexCount {
        scan: Scan,
    },
    Project(Box<Plan>, Vec<Expr>),
    /// The rows without duplicates (array columns told apart by their elements' values).
    Distinct(Box<Plan>, ArrayCols),
    Sort(Box<Plan>, Vec<SortKey>),
    Limit {
        input: Box<Plan>,
        limit: Option<Expr>,
        offset: Option<Expr>,
    },
    /// UNION / INTERSECT / EXCEPT, with duplicates kept (`all`) or removed; rows compare
    /// with their array columns told apart by their elements' values.
    SetOp {
        kind: SetOpKind,
        all: bool,
        left: Box<Plan>,
        right: Box<Plan>,
        arrays: ArrayCols,
    },
    /// WITH RECURSIVE: the rows of `base`, then of `step` run over the rows the previous round
    /// added (read by `WorkTable { id }`), until a round adds none; `distinct` for UNION.
    Recursive {
        id: usize,
        base: Box<Plan>,
        step: Box<Plan>,
        distinct: bool,
    },
    /// The rows the current round of recursive CTE `id` reads.
    WorkTable {
        id: usize,
        names: Vec<String>,
    },
    /// Window functions: each input row with one more column per function.
    Window {
        input: Box<Plan>,
        specs: Vec<window::WinSpec>,
    },
    /// Set-returning functions of a select list: each input row followed by the functions'
    /// columns, once per row of their longest result (`srf.rs`).
    ProjectSet {
        input: Box<Plan>,
        srfs: Vec<srf::SrfSpec>,
    },
    /// A LATERAL subquery: each left row followed by each row of the subquery `sub` run with
    /// that row's values (its `args`, correlated as a subquery's are) that meets `on` (over
    /// the joined row); with `outer` (LEFT JOIN LATERAL), a left row no subquery row meets it
    /// for is kept once, followed by NULLs. `names` are the subquery's columns.
    Lateral {
        left: Box<Plan>,
        sub: SubRef,
        names: Vec<String>,
        on: Option<Expr>,
        outer: bool,
    },
}

impl Plan {
    /// Number of columns of the rows this plan produces.
    pub fn width(&self) -> usize {
        match self {
            Plan::Values(rows) => rows.first().map_or(0, |r| r.len()),
            Plan::Scan(s) => s.def.columns.len(),
            Plan::Join {
                left, right, lookup, ..
            } => {
                left.width()
                    + lookup
                        .as_ref()
                        .map_or_else(|| right.width(), |l| l.def.columns.len())
            }
            Plan::FullJoin { left, right, .. } => left.width() + right.width(),
            Plan::SemiJoin { left, .. } => left.width(),
            Plan::Filter(p, _) | Plan::Distinct(p, _) | Plan::Sort(p, _) => p.width(),
            Plan::Limit { input, .. } => input.width(),
            Plan::Aggregate { groups, aggs, .. } => groups.len() + aggs.len(),
            Plan::IndexMinMax { .. } | Plan::IndexCount { .. } => 1,
            Plan::Project(_, e) => e.len(),
            Plan::SetOp { left, .. } => left.width(),
            Plan::Recursive { base, .. } => base.width(),
            Plan::WorkTable { names, .. } => names.len(),
            Plan::Window { input, specs } => input.width() + specs.len(),
            Plan::ProjectSet { input, srfs } => input.width() + srfs.iter().map(|s| s.width()).sum::<usize>(),
            Plan::Lateral { left, names, .. } => left.width() + names.len(),
        }
    }

    /// Display names of the output columns (for EXPLAIN).
    pub fn names(&self) -> Vec<String> {
        match self {
            Plan::Values(rows) => (0..rows.first().map_or(0, |r| r.len()))
                .map(|i| format!("column{}", i + 1))
                .collect(),
            Plan::Scan(s) => s
                .def
                .columns
                .iter()
                .map(|c| format!("{}.{}", s.alias, c.name))
                .collect(),
            Plan::Join {
                left, right, lookup, ..
            } => {
                let mut n = left.names();
                match lookup {
                    Some(l) => n.extend(l.def.columns.iter().map(|c| format!("{}.{}", l.alias, c.name))),
                    None => n.extend(right.names()),
                }
                n
            }
            Plan::FullJoin { left, right, .. } => {
                let mut n = left.names();
                n.extend(right.names());
                n
            }
            Plan::SemiJoin { left, .. } => left.names(),
            Plan::Filter(p, _) | Plan::Distinct(p, _) | Plan::Sort(p, _) => p.names(),
            Plan::Limit { input, .. } => input.names(),
            Plan::Aggregate {
                input, groups, aggs, ..
            } => {
                let n = input.names();
                groups
                    .iter()
                    .map(|g| show_n(g, &n))
                    .chain(aggs.iter().map(|a| show_agg(a, &n)))
                    .collect()
            }
            Plan::IndexMinMax { scan, max } => {
                let pk = scan
                    .def
                    .primary_key
                    .first()
                    .map(|&i| scan.def.columns[i].name.clone())
                    .unwrap_or_default();
                vec![format!("{}({pk})", if *max { "max" } else { "min" })]
            }
            Plan::IndexCount { .. } => vec!["count(*)".into()],
            Plan::Project(p, e) => {
                let n = p.names();
                e.iter().map(|x| show_n(x, &n)).collect()
            }
            Plan::SetOp { left, .. } => left.names(),
            Plan::Recursive { base, .. } => base.names(),
            Plan::WorkTable { names, .. } => names.clone(),
            Plan::Window { input, specs } => {
                let mut n = input.names();
                let w: Vec<String> = specs.iter().map(|s| s.show(&n)).collect();
                n.extend(w);
                n
            }
            Plan::Lateral { left, names, .. } => {
                let mut n = left.names();
                n.extend(names.iter().cloned());
                n
            }
            Plan::ProjectSet { input, srfs } => {
                let mut n = input.names();
                let mut extra = Vec::new();
                for s in srfs {
                    let shown = s.show(&n);
                    extra.extend(std::iter::repeat_n(shown, s.width()));
                }
                n.extend(extra);
                n
            }
        }
    }
}
