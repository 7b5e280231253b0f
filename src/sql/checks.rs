//! The SQL layer's evaluator of CHECK constraints for the engine's write API
//! (`engine/constraint.rs`): each table's constraints are bound once and kept while the
//! table's definition stays the same. It also evaluates the column defaults a foreign key's
//! SET DEFAULT action writes.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::engine::constraint::CheckEvaluator;
use crate::engine::{Interrupt, TableDef};
use crate::error::Result;
use crate::seam::{AnyTxn, EngineTxn};
use crate::sql::bind::Binder;
use crate::sql::dml::{bind_checks, bind_default, enforce_checks};
use crate::sql::exec::{Clock, Exec};
use crate::sql::expr::{assign, Expr};
use crate::types::now_micros;
use crate::types::Value;

/// A table's CHECK constraints bound: (name, condition) each.
type Bound = Arc<Vec<(String, Expr)>>;

/// Bound CHECK constraints by table name, with the definition they were bound for.
#[derive(Default)]
struct SqlChecks {
    bound: Mutex<HashMap<String, (Arc<TableDef>, Bound)>>,
}

impl SqlChecks {
    fn bound(&self, def: &Arc<TableDef>) -> Result<Bound> {
        if let Some((d, c)) = self.bound.lock().get_mut(&def.name) {
            // The same definition is almost always the same allocation (a table's current
            // one); an equal copy is kept in its place so that the next write compares
            // pointers only.
            if Arc::ptr_eq(d, def) {
                return Ok(c.clone());
            }
            if **d == **def {
                *d = def.clone();
                return Ok(c.clone());
            }
        }
        // Bound outside the lock; a concurrent first use binds the same constraints twice.
        let c = Arc::new(bind_checks(&mut Binder::detached(), def)?);
        self.bound
            .lock()
            .insert(def.name.clone(), (def.clone(), c.clone()));
        Ok(c)
    }
}

/// The times an embedded write's defaults and CHECK constraints read: `now()` (and
/// `transaction_timestamp()`) is the transaction's start, as in a SQL transaction block;
/// `statement_timestamp()` is the time of the write; `clock_timestamp()` the time of each call.
fn clock(tx: &AnyTxn) -> Clock {
    Clock {
        txn: tx.start_micros(),
        stmt: now_micros(),
    }
}

impl CheckEvaluator for SqlChecks {
    fn check(&self, tx: &AnyTxn, def: &Arc<TableDef>, row: &[Value]) -> Result<()> {
        let checks = self.bound(def)?;
        let stop = Interrupt::default();
        let ex = Exec::new(tx, &[], &[], clock(tx), &stop);
        enforce_checks(def, &checks, row, &ex.ctx())
    }

    fn defaults(&self, tx: &AnyTxn, def: &Arc<TableDef>, cols: &[usize]) -> Result<Vec<Value>> {
        let stop = Interrupt::default();
        let ex = Exec::new(tx, &[], &[], clock(tx), &stop);
        let cx = ex.ctx();
        let mut b = Binder::detached();
        cols.iter()
            .map(|&c| {
                let col = &def.columns[c];
                match &col.default {
                    None => Ok(Value::Null),
                    Some(text) => {
                        let v = bind_default(&mut b, text, col.ty, &col.name)?.eval(&[], &cx)?;
                        assign(v, col.ty, &col.name)
                    }
                }
            })
            .collect()
    }
}

/// The evaluator the engine installs on first use.
pub(crate) fn check_evaluator() -> Box<dyn CheckEvaluator> {
    Box::<SqlChecks>::default()
}
