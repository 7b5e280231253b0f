//! CHECK constraints for the engine's own write API: the catalog keeps each constraint (and
//! each column default) as SQL text, and a [`CheckEvaluator`] (the SQL layer's, the one that
//! knows the expression language) tests the rows that [`crate::Transaction`]'s writes store,
//! and evaluates the defaults that a foreign key's SET DEFAULT action writes.

use std::sync::{Arc, OnceLock};

use crate::engine::TableDef;
use crate::error::Result;
use crate::seam::AnyTxn;
use crate::types::Value;

/// Tests a table's CHECK constraints on rows about to be written.
pub trait CheckEvaluator: Send + Sync {
    /// Ok when every CHECK of `def` is true or NULL for `row` (in the table's column order,
    /// already fitted to the column types); else 23502 for a NULL in a NOT NULL column, then
    /// 23514 naming the first false CHECK, as an SQL statement fails. `tx` is the writing
    /// transaction (a CHECK reads no table; a sequence function in one uses it). An error
    /// evaluating the constraint (text that does not bind) refuses the write. `def` is the
    /// table's current definition: the evaluator keeps what it bound while it stays the same.
    fn check(&self, tx: &AnyTxn, def: &Arc<TableDef>, row: &[Value]) -> Result<()>;

    /// The values the DEFAULT expressions of columns `cols` of `def` give now (NULL for a
    /// column without one), fitted to the column types, in the order of `cols`: what `ON
    /// DELETE / ON UPDATE SET DEFAULT` writes. `tx` evaluates them (a `nextval` default takes
    /// a value, as in PostgreSQL).
    fn defaults(&self, tx: &AnyTxn, def: &Arc<TableDef>, cols: &[usize]) -> Result<Vec<Value>>;
}

static EVALUATOR: OnceLock<Box<dyn CheckEvaluator>> = OnceLock::new();

/// The evaluator of CHECK constraints: the SQL layer's (always built with the engine), made on
/// first use. This is the engine's one reference to the SQL layer; the trait keeps the
/// expression language out of the engine.
pub(crate) fn evaluator() -> &'static dyn CheckEvaluator {
    EVALUATOR.get_or_init(crate::sql::check_evaluator).as_ref()
}
