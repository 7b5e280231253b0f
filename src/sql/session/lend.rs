//! Rows lent in place by a prepared statement (`Session::query_prepared_with`): a point read
//! by primary key straight from the engine's stored row, a plan the session kept run without
//! the plan's lock, anything else through the executor.

use super::prepared::{check_params, lend_planned, Planned, PlannedStmt, Prepared};
use super::{check_limits, value_bytes, Limits, Session};
use crate::error::Result;
use crate::seam::prelude::*;
use crate::sql::exec::{lend_rows, PointLend};
use crate::types::{Value, ValueRef};

/// How many point-read plans a session keeps ([`Session::query_prepared_with`]).
const POINT_PLANS: usize = 8;

impl Session {
    /// Runs a prepared statement and lends each result row's values to `f`, as rusqlite's
    /// `get_ref` lends SQLite's: a query that reads one table by its primary key (a point
    /// read, a key range with LIMIT) and selects plain columns lends them from the stored row,
    /// with no allocation per row; any other statement runs as [`Session::execute_prepared`]
    /// and its rows (a query's, or DML's RETURNING) are lent from its result. The same rules
    /// hold as for `execute_prepared` (autocommit or the open block, a failed block, cancel,
    /// `statement_timeout`, `max_result_rows` / `max_result_bytes`, checked as rows are lent).
    /// An error from `f` is returned and, in a transaction block, fails the block as a failed
    /// statement does. Returns the number of rows lent.
    pub fn query_prepared_with(
        &mut self,
        p: &Prepared,
        params: &[Value],
        mut f: impl FnMut(&[ValueRef<'_>]) -> Result<()>,
    ) -> Result<u64> {
        let _zone = self.zone_scope();
        // A point read by a plan this session ran before and that is still the statement's
        // and still valid: no plan lock, no plan clone, no request marked (a cancel has
        // nothing to stop in one engine read; it is checked before the read as always).
        if let Some(i) = self.point_plans.iter().position(|pl| p.planned.is(pl)) {
            let pl = self.point_plans.swap_remove(i);
            if pl.valid() && !self.tables_locked(&pl.deps) {
                if let Some((pt, x)) = pl.point.as_ref().and_then(|pt| Some((pt, pt.key_param(params)?))) {
                    let r = self.lend_point(&pl, pt, x, params, &mut f);
                    self.point_plans.push(pl);
                    return r;
                }
            }
        }
        let request = self.cancel.begin();
        let planned = match self.current_plan(p)? {
            // Not a table another session's block altered (run_statement_kind waits for it).
            Some(pl)
                if p.nesting <= 16
                    && matches!(pl.planned, Planned::Query { .. })
                    && !self.tables_locked(&pl.deps) =>
            {
                pl
            }
            _ => {
                drop(request);
                let r = self.execute_prepared(p, params)?;
                return lend_rows(r.rows(), &mut f).map_err(|e| self.fail(e));
            }
        };
        if let Some((pt, x)) = planned
            .point
            .as_ref()
            .and_then(|pt| Some((pt, pt.key_param(params)?)))
        {
            if self.point_plans.len() >= POINT_PLANS {
                self.point_plans.remove(0);
            }
            self.point_plans.push(planned.clone());
            return self.lend_point(&planned, pt, x, params, &mut f);
        }
        let mut lent = limited(self.limits.clone(), &mut f);
        self.under_block_rules(|s| {
            let stop = s.interrupt();
            let clock = s.clock();
            s.with_tx(|tx, _| lend_planned(&planned, tx, params, clock, &stop, &mut lent))
        })
    }

    /// The point read `point` of `planned`, with key `x` from `params`, rows lent to `f`
    /// under the session's result limits.
    fn lend_point(
        &mut self,
        planned: &PlannedStmt,
        point: &PointLend,
        x: i64,
        params: &[Value],
        f: &mut impl FnMut(&[ValueRef<'_>]) -> Result<()>,
    ) -> Result<u64> {
        let mut lent = limited(self.limits.clone(), f);
        // One engine read: no row locks to wait for, no writes to commit, no session setting
        // that a read by key consults, so an autocommit read needs only a snapshot.
        self.under_block_rules(|s| {
            check_params(&planned.params, params)?;
            match &mut s.tx {
                Some(tx) => {
                    tx.begin_statement();
                    point.lend(tx, x, &mut lent)
                }
                None => point.lend_now(&s.db, x, &mut lent),
            }
        })
    }
}

/// `f` under the session's result limits: 54000 past `max_result_rows` rows or
/// `max_result_bytes` bytes, checked as each row is lent.
fn limited<'f>(
    limits: Limits,
    f: &'f mut impl FnMut(&[ValueRef<'_>]) -> Result<()>,
) -> impl FnMut(&[ValueRef<'_>]) -> Result<()> + 'f {
    let count_bytes = limits.max_result_bytes.is_some();
    let (mut rows, mut bytes) = (0u64, 0u64);
    move |vals: &[ValueRef<'_>]| {
        rows += 1;
        if count_bytes {
            bytes += vals.iter().map(|v| value_bytes(*v)).sum::<u64>();
        }
        check_limits(&limits, rows, bytes)?;
        f(vals)
    }
}
