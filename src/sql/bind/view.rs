//! Views in FROM: the view's stored query text is parsed and bound where the view is named, as a
//! derived table with the columns fixed when the view was created (PostgreSQL expands views at
//! plan time too).

use std::sync::Arc;

use sqlparser::ast as A;

use super::from::derived_scope;
use super::{ident, object_name, Binder, Scope};
use crate::engine::ViewDef;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::expr::{Expr, Ty};
use crate::sql::plan::{Column, Plan};
use crate::types::DataType;

/// Views expanded inside one another deeper than this are refused: only a cycle (made by
/// `CREATE OR REPLACE VIEW`) gets there.
const MAX_VIEW_DEPTH: usize = 64;

/// The query of a view, parsed from its stored text.
pub(crate) fn view_query(v: &ViewDef) -> Result<A::Query> {
    let mut stmts = crate::sql::parse(&v.sql)?;
    match (stmts.pop(), stmts.is_empty()) {
        (Some(A::Statement::Query(q)), true) => Ok(*q),
        _ => Err(Error::Corrupt(format!(
            "the stored query of view \"{}\" is not one query",
            v.name
        ))),
    }
}

impl Binder<'_> {
    /// The view `name` refers to when it names a view (tables and views share one namespace,
    /// tables are looked up first).
    pub(super) fn view_named(&self, name: &A::ObjectName) -> Result<Option<Arc<ViewDef>>> {
        let n = object_name(name)?;
        let db = self.engine()?;
        if db.table(&n).is_ok() {
            return Ok(None);
        }
        db.view(&n)
    }

    /// Binds a view named in FROM: its query on its own (no CTE or outer column of the naming
    /// query is visible inside it), then its columns as created.
    pub(super) fn bind_view(
        &mut self,
        v: &Arc<ViewDef>,
        alias: Option<&A::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        if self.view_depth >= MAX_VIEW_DEPTH {
            return Err(Error::new(
                SqlState("42P17"),
                format!("infinite recursion detected in rules for relation \"{}\"", v.name),
            ));
        }
        let q = view_query(v)?;
        let ctes = std::mem::take(&mut self.ctes);
        let outer = std::mem::take(&mut self.outer);
        let agg = self.agg_sink.take();
        let win = self.win_sink.take();
        self.view_depth += 1;
        let r = self.bind_query(&q);
        self.view_depth -= 1;
        self.ctes = ctes;
        self.outer = outer;
        self.agg_sink = agg;
        self.win_sink = win;
        let (plan, cols) = r?;
        self.views.push(v.clone());
        let n = v.columns.len();
        let fits = cols.len() >= n
            && cols
                .iter()
                .zip(&v.columns)
                // A view stored before varchar was a type of its own has text for a varchar
                // column (and text[] for a varchar[] one); it keeps it. One stored before result columns kept their type
                // modifiers has none; it keeps that too.
                .all(|(c, (_, dt))| {
                    c.ty == Ty::from_dt(*dt)
                        || (c.ty == Ty::Varchar && *dt == DataType::Text(None))
                        || (c.ty == Ty::Array(&Ty::Varchar) && *dt == DataType::Array(&DataType::Text(None)))
                });
        if !fits {
            return Err(Error::new(
                SqlState("55000"),
                format!(
                    "view \"{}\" no longer matches the tables it reads; recreate it",
                    v.name
                ),
            ));
        }
        // A `SELECT *` view keeps the columns it was created with when its table gains one.
        let plan = if cols.len() > n {
            Plan::Project(Box::new(plan), (0..n).map(Expr::Col).collect())
        } else {
            plan
        };
        // Type modifiers as stored (parse analysis reads the view's columns), or as the
        // expanded query gives them (a query's rows carry the planner's, folded through the
        // view's query as PostgreSQL plans it expanded).
        let cols: Vec<Column> = v
            .columns
            .iter()
            .zip(&cols)
            .map(|((name, dt), c)| Column {
                name: name.clone(),
                ty: Ty::from_dt(*dt),
                len: if self.parse_typmods || c.ty != Ty::from_dt(*dt) {
                    dt.typmod_len()
                } else {
                    c.len
                },
            })
            .collect();
        let a = alias.map_or_else(|| v.name.clone(), |a| ident(&a.name));
        Ok((plan, derived_scope(&a, &cols, alias)))
    }
}
