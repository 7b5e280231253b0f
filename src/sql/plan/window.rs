//! Window function specifications: the function, its arguments, PARTITION BY, ORDER BY and
//! frame, all over the rows entering the window step (after grouping when there is one).

use super::explain::show_n;
use super::{AggSpec, SortKey};
use crate::sql::expr::Expr;

#[derive(Clone, Debug, PartialEq)]
pub enum WinFunc {
    RowNumber,
    Rank,
    DenseRank,
    /// lag (`true`) / lead: value, offset, default.
    Shift(bool),
    FirstValue,
    LastValue,
    /// An aggregate over the frame (its `arg` is the window's first argument).
    Agg(AggSpec),
}

/// How far a frame edge lies from the current row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Offset {
    /// Rows (ROWS) or peer groups (GROUPS).
    Count(u64),
    /// RANGE over a numeric ORDER BY key: the key's distance.
    Int(i64),
    Float(f64),
    /// RANGE over a date or timestamp key: an interval, as calendar months (added first, as
    /// PostgreSQL adds an interval to a timestamp) and microseconds (its days and time).
    Interval {
        months: i64,
        micros: i64,
    },
}

/// One end of a frame: `None` offset means UNBOUNDED.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FrameEdge {
    Preceding(Option<Offset>),
    CurrentRow,
    Following(Option<Offset>),
}

/// What a frame's offsets count: rows, ORDER BY key values, or peer groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    Rows,
    Range,
    Groups,
}

/// ROWS, RANGE or GROUPS frame; the default is RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT
/// ROW, where CURRENT ROW in RANGE and GROUPS mode includes the row's peers (rows equal in the
/// ORDER BY keys).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub units: Units,
    pub start: FrameEdge,
    pub end: FrameEdge,
}

impl Default for Frame {
    fn default() -> Frame {
        Frame {
            units: Units::Range,
            start: FrameEdge::Preceding(None),
            end: FrameEdge::CurrentRow,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct WinSpec {
    pub func: WinFunc,
    pub args: Vec<Expr>,
    pub partition: Vec<Expr>,
    pub order: Vec<SortKey>,
    pub frame: Frame,
}

impl WinSpec {
    /// Applies `f` to every expression of the spec (for rewriting over grouped rows).
    pub fn map_exprs(
        mut self,
        f: &mut dyn FnMut(Expr) -> crate::error::Result<Expr>,
    ) -> crate::error::Result<WinSpec> {
        self.args = self
            .args
            .into_iter()
            .map(&mut *f)
            .collect::<crate::error::Result<_>>()?;
        self.partition = self
            .partition
            .into_iter()
            .map(&mut *f)
            .collect::<crate::error::Result<_>>()?;
        for k in &mut self.order {
            k.expr = f(std::mem::replace(
                &mut k.expr,
                Expr::Lit(crate::types::Value::Null),
            ))?;
        }
        if let WinFunc::Agg(a) = &mut self.func {
            a.arg = self.args.first().cloned();
            a.filter = a.filter.take().map(&mut *f).transpose()?;
        }
        Ok(self)
    }

    /// EXPLAIN text: `rank() OVER (PARTITION BY ... ORDER BY ...)`.
    pub fn show(&self, names: &[String]) -> String {
        let name = match &self.func {
            WinFunc::RowNumber => "row_number".to_string(),
            WinFunc::Rank => "rank".into(),
            WinFunc::DenseRank => "dense_rank".into(),
            WinFunc::Shift(true) => "lag".into(),
            WinFunc::Shift(false) => "lead".into(),
            WinFunc::FirstValue => "first_value".into(),
            WinFunc::LastValue => "last_value".into(),
            WinFunc::Agg(a) => format!("{:?}", a.func).to_lowercase(),
        };
        let args: Vec<String> = self.args.iter().map(|a| show_n(a, names)).collect();
        let mut over = Vec::new();
        if !self.partition.is_empty() {
            let p: Vec<String> = self.partition.iter().map(|e| show_n(e, names)).collect();
            over.push(format!("PARTITION BY {}", p.join(", ")));
        }
        if !self.order.is_empty() {
            let o: Vec<String> = self
                .order
                .iter()
                .map(|k| format!("{}{}", show_n(&k.expr, names), if k.desc { " DESC" } else { "" }))
                .collect();
            over.push(format!("ORDER BY {}", o.join(", ")));
        }
        format!("{name}({}) OVER ({})", args.join(", "), over.join(" "))
    }
}
