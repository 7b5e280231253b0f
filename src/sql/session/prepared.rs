//! Prepared statements: a statement parsed and planned once, re-planned when a table it reads
//! changes; running a plan (query or DML) in a transaction, and EXPLAIN's text for it.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use sqlparser::ast as A;

use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::seam::{Interrupt, TableDef, ViewDef};
use crate::sql::dml::{exec_delete, exec_insert, exec_update, DeletePlan, InsertPlan, UpdatePlan};
use crate::sql::exec::Clock;
use crate::sql::exec::{lend, lends_in_place, run, Exec, PointLend};
use crate::sql::expr::{Expr, Ty};
use crate::sql::plan::{Access, Column, Plan, Scan};
use crate::sql::result::StatementResult;
use crate::types::{DataType, Row, Value, ValueRef};

pub(super) enum Planned {
    Query { plan: Plan, cols: Vec<Column> },
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
}

pub(super) struct PlannedStmt {
    pub(super) planned: Planned,
    pub(super) subplans: Vec<Plan>,
    pub(super) params: Vec<Ty>,
    pub(super) deps: Vec<(AnyTable, Arc<TableDef>)>,
    /// Reads catalog relations (rows fixed when planned): planned again for every run.
    pub(super) reads_catalog: bool,
    /// The views the plan expanded, and the database to look them up in again.
    pub(super) views: Option<(AnyEngine, Vec<Arc<ViewDef>>)>,
    /// A point read by a bigint parameter, run without the executor (`PointLend`).
    pub(super) point: Option<PointLend>,
    /// Folding a constant CASE / COALESCE arm may have changed a result column's type
    /// modifier ([`crate::sql::bind::Binder::typmods_folded`]).
    pub(super) typmods_folded: bool,
}

/// The result columns of a planned query, or of DML's RETURNING (empty otherwise).
pub(super) fn result_columns(p: &PlannedStmt) -> Vec<(String, DataType)> {
    let cols = match &p.planned {
        Planned::Query { cols, .. } => cols,
        Planned::Insert(InsertPlan {
            returning: Some((_, c)),
            ..
        })
        | Planned::Update(UpdatePlan {
            returning: Some((_, c)),
            ..
        })
        | Planned::Delete(DeletePlan {
            returning: Some((_, c)),
            ..
        }) => c,
        _ => return vec![],
    };
    cols.iter().map(|c| (c.name.clone(), c.dt())).collect()
}

impl PlannedStmt {
    pub(super) fn valid(&self) -> bool {
        !self.reads_catalog
            && self.deps.iter().all(|(t, d)| !t.is_dropped() && t.has_def(d))
            && self.views.as_ref().is_none_or(|(db, vs)| {
                vs.iter().all(|v| {
                    db.view(&v.name)
                        .ok()
                        .flatten()
                        .is_some_and(|now| Arc::ptr_eq(&now, v))
                })
            })
    }
}

/// A parsed (and, for queries and DML, planned) statement, for the extended protocol.
pub struct Prepared {
    pub sql: String,
    pub(super) stmt: A::Statement,
    /// A statement sqlparser does not parse (`stmt` is then a placeholder that is never run).
    pub(super) cut: Option<super::Cut>,
    pub(super) planned: PlanSlot,
    /// Parameter types the client declared (None: inferred), kept for re-planning.
    pub(super) declared: Vec<Option<DataType>>,
    /// Parameter types: declared by the client or inferred from the statement ($1 is
    /// `param_types[0]`).
    pub param_types: Vec<DataType>,
    /// Result columns (empty for statements that return no rows), as its rows carry them.
    pub columns: Vec<(String, DataType)>,
    /// The result columns a Describe of the statement reports where they differ from
    /// `columns`: with the type modifiers of parse analysis, before constant CASE / COALESCE
    /// arms are folded (PostgreSQL's statement Describe; a portal's has the folded ones).
    pub statement_columns: Option<Vec<(String, DataType)>>,
    /// [`crate::sql::nesting_estimate`] of the text: the stack executing it may need.
    pub(super) nesting: usize,
}

/// A prepared statement's current plan, and that plan's address, which a session compares
/// with the plans it keeps ([`PlanSlot::is`]) without the lock: a session holding a plan
/// keeps its allocation, so no other plan can have that address meanwhile.
pub(super) struct PlanSlot {
    plan: Mutex<Option<Arc<PlannedStmt>>>,
    at: AtomicPtr<PlannedStmt>,
}

impl PlanSlot {
    pub(super) fn new(plan: Option<Arc<PlannedStmt>>) -> PlanSlot {
        let at = AtomicPtr::new(
            plan.as_ref()
                .map_or(std::ptr::null_mut(), |p| Arc::as_ptr(p).cast_mut()),
        );
        PlanSlot {
            plan: Mutex::new(plan),
            at,
        }
    }

    pub(super) fn get(&self) -> Option<Arc<PlannedStmt>> {
        self.plan.lock().clone()
    }

    /// Whether there is a current plan and `f` holds of it (read under the lock, not cloned).
    pub(super) fn holds(&self, f: impl FnOnce(&PlannedStmt) -> bool) -> bool {
        self.plan.lock().as_deref().is_some_and(f)
    }

    pub(super) fn set(&self, plan: Option<Arc<PlannedStmt>>) {
        let mut slot = self.plan.lock();
        let at = plan
            .as_ref()
            .map_or(std::ptr::null_mut(), |p| Arc::as_ptr(p).cast_mut());
        self.at.store(at, Ordering::Release);
        *slot = plan;
    }

    /// Whether `plan` is the current plan.
    #[inline]
    pub(super) fn is(&self, plan: &Arc<PlannedStmt>) -> bool {
        std::ptr::eq(self.at.load(Ordering::Acquire), Arc::as_ptr(plan))
    }
}

impl Prepared {
    /// A statement that does a small, bounded amount of work: BEGIN / COMMIT / ROLLBACK, a
    /// primary-key point read, an UPDATE or DELETE of one primary key, or an INSERT of a few
    /// VALUES rows, without subqueries. It may still wait for a row lock or a WAL fsync; those
    /// waits go through the engine's wait hook ([`crate::store::wait`]), so a server can run
    /// such a statement on its network thread and hand the thread over only if it waits.
    pub fn is_short(&self) -> bool {
        if self.cut.is_some() {
            return false;
        }
        if matches!(
            self.stmt,
            A::Statement::StartTransaction { .. }
                | A::Statement::Commit { .. }
                | A::Statement::Rollback { .. }
        ) {
            return true;
        }
        self.planned.holds(|p| {
            p.valid()
                && p.subplans.is_empty()
                && match &p.planned {
                    Planned::Query { plan, .. } => plan.is_point_read(),
                    Planned::Update(u) => matches!(u.scan.access, Access::Point(_)),
                    Planned::Delete(d) => matches!(d.scan.access, Access::Point(_)),
                    Planned::Insert(i) => matches!(&i.source, Plan::Values(rows) if rows.len() <= 16),
                }
        })
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Prepared({:?})", self.sql)
    }
}

pub(super) fn exec_planned(
    p: &PlannedStmt,
    tx: &mut AnyTxn,
    params: &[Value],
    clock: Clock,
    stop: &Interrupt,
) -> Result<StatementResult> {
    // Lock waits inside the engine's write calls (an INSERT waiting for another transaction's
    // insert of the same key) are interrupted like the executor's own.
    tx.set_interrupt(stop.clone());
    let r = exec_statement(p, tx, params, clock, stop);
    tx.set_interrupt(Interrupt::default());
    r
}

/// Runs a planned query, lending its rows to `f` (see `Session::query_prepared_with`).
pub(super) fn lend_planned(
    p: &PlannedStmt,
    tx: &mut AnyTxn,
    params: &[Value],
    clock: Clock,
    stop: &Interrupt,
    f: &mut dyn FnMut(&[ValueRef<'_>]) -> Result<()>,
) -> Result<u64> {
    let Planned::Query { plan, .. } = &p.planned else {
        return Err(Error::internal("only a query's rows are lent"));
    };
    check_params(&p.params, params)?;
    // The engine's row-lock waits end at the transaction's interrupt; a plan that reads stored
    // rows in place waits for none, so it skips setting one (two reference counts a read).
    let waits = !lends_in_place(plan);
    if waits {
        tx.set_interrupt(stop.clone());
    }
    let r = {
        let ex = Exec::new(tx, params, &p.subplans, clock, stop);
        let cx = ex.ctx();
        lend(plan, &cx, f)
    };
    if waits {
        tx.set_interrupt(Interrupt::default());
    }
    r
}

fn exec_statement(
    p: &PlannedStmt,
    tx: &mut AnyTxn,
    params: &[Value],
    now: Clock,
    stop: &Interrupt,
) -> Result<StatementResult> {
    check_params(&p.params, params)?;
    let cols = |c: &[Column]| c.iter().map(|c| (c.name.clone(), c.dt())).collect::<Vec<_>>();
    let dml = |tag: String, ret: &Option<(Vec<Expr>, Vec<Column>)>, rows: Vec<Row>| match ret {
        Some((_, c)) => StatementResult::Query {
            tag,
            columns: cols(c),
            rows,
        },
        None => StatementResult::Command { tag },
    };
    Ok(match &p.planned {
        Planned::Query { plan, cols: c } => {
            let ex = Exec::new(tx, params, &p.subplans, now, stop);
            let cx = ex.ctx();
            let rows = run(plan, &cx)?;
            StatementResult::Query {
                tag: format!("SELECT {}", rows.len()),
                columns: cols(c),
                rows,
            }
        }
        Planned::Insert(ip) => {
            let (n, rows) = exec_insert(ip, tx, params, &p.subplans, now, stop)?;
            dml(format!("INSERT 0 {n}"), &ip.returning, rows)
        }
        Planned::Update(up) => {
            let (n, rows) = exec_update(up, tx, params, &p.subplans, now, stop)?;
            dml(format!("UPDATE {n}"), &up.returning, rows)
        }
        Planned::Delete(dp) => {
            let (n, rows) = exec_delete(dp, tx, params, &p.subplans, now, stop)?;
            dml(format!("DELETE {n}"), &dp.returning, rows)
        }
    })
}

pub(super) fn check_params(types: &[Ty], params: &[Value]) -> Result<()> {
    if params.len() < types.len() {
        return Err(Error::new(
            SqlState::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                types.len()
            ),
        ));
    }
    Ok(())
}

pub(super) fn explain(p: &PlannedStmt) -> Vec<String> {
    let mut out = Vec::new();
    let scan_root = |s: &Scan| Plan::Scan(s.clone());
    match &p.planned {
        Planned::Query { plan, .. } => plan.explain(&mut out, 0),
        Planned::Insert(ip) => {
            out.push(format!(
                "Insert on {}{}",
                ip.def.name,
                if ip.conflict.is_some() {
                    " (ON CONFLICT on primary key: ALEX point lookup per row)"
                } else {
                    ""
                }
            ));
            ip.source.explain(&mut out, 1);
        }
        Planned::Update(up) => {
            out.push(format!("Update on {}", up.scan.def.name));
            scan_root(&up.scan).explain(&mut out, 1);
        }
        Planned::Delete(dp) => {
            out.push(format!("Delete on {}", dp.scan.def.name));
            scan_root(&dp.scan).explain(&mut out, 1);
        }
    }
    for (i, s) in p.subplans.iter().enumerate() {
        // A subquery decorrelated into a semi-join left an empty placeholder.
        if matches!(s, Plan::Values(rows) if rows.is_empty()) {
            continue;
        }
        out.push(format!("Subquery {i}:"));
        s.explain(&mut out, 1);
    }
    out
}
