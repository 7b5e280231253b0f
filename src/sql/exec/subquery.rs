//! Running subqueries for expressions: an uncorrelated subquery runs once per statement, a
//! correlated one once per distinct set of outer values (results cached by those values);
//! and LATERAL subqueries in FROM, run the same way for each row to their left.

use std::collections::HashSet;
use std::sync::Arc;

use super::{run, Exec};
use crate::error::{Error, Result};
use crate::sql::expr::{Ctx, Expr, SubRef, SubResult, SubqueryRunner};
use crate::sql::plan::Plan;
use crate::types::{Row, Value};

/// [`Plan::Lateral`]: each left row joined with the rows the subquery returns for it.
pub(super) fn lateral(
    left: &Plan,
    sub: &SubRef,
    width: usize,
    on: Option<&Expr>,
    outer: bool,
    cx: &Ctx,
) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for l in run(left, cx)? {
        cx.check()?;
        let args = sub
            .args
            .iter()
            .map(|e| e.eval(&l, cx))
            .collect::<Result<Vec<_>>>()?;
        let res = cx.subs.run_subquery(sub.id, args, sub.volatile)?;
        let mut met = false;
        for r in &res.rows {
            let mut row = Vec::with_capacity(l.len() + width);
            row.extend_from_slice(&l);
            row.extend_from_slice(r);
            if match on {
                Some(on) => on.test(&row, cx)?,
                None => true,
            } {
                met = true;
                out.push(row);
            }
        }
        if outer && !met {
            let mut row = l;
            row.resize(row.len() + width, Value::Null);
            out.push(row);
        }
    }
    Ok(out)
}

/// Cached results kept per statement before the cache is emptied (bounds the memory a
/// correlated subquery over many distinct outer values can hold).
const CACHE_LIMIT: usize = 4096;

impl SubqueryRunner for Exec<'_> {
    fn run_subquery(&self, n: usize, args: Vec<Value>, fresh: bool) -> Result<Arc<SubResult>> {
        let fresh = fresh && !args.is_empty();
        let key = (n, args);
        if fresh {
            return Ok(Arc::new(self.run_uncached(n, &key.1)?));
        }
        if let Some(r) = self.cache.borrow().get(&key) {
            return Ok(r.clone());
        }
        let r = Arc::new(self.run_uncached(n, &key.1)?);
        let mut c = self.cache.borrow_mut();
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        c.insert(key, r.clone());
        Ok(r)
    }

    fn work_table(&self, id: usize) -> Arc<Vec<Row>> {
        self.work.borrow().get(&id).cloned().unwrap_or_default()
    }

    fn set_work_table(&self, id: usize, rows: Arc<Vec<Row>>) {
        self.work.borrow_mut().insert(id, rows);
    }
}

impl Exec<'_> {
    /// Runs subquery `n` with the argument values `args`.
    fn run_uncached(&self, n: usize, args: &[Value]) -> Result<SubResult> {
        let plan = self
            .subplans
            .get(n)
            .ok_or_else(|| Error::internal("no such subquery"))?;
        let cx = self.ctx_with(args.to_vec());
        let rows = run(plan, &cx)?;
        let mut set = HashSet::new();
        let mut has_null = false;
        for r in &rows {
            match r.first() {
                Some(Value::Null) | None => has_null = true,
                Some(v) => {
                    set.insert(v.clone());
                }
            }
        }
        Ok(SubResult { rows, set, has_null })
    }
}
