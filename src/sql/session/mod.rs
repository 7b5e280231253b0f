//! One client's session: the transaction-block state machine (autocommit, BEGIN ... COMMIT,
//! failed blocks), statement limits and cancellation; runs each statement through bind/exec.

mod alter;
mod alter_sequence;
mod block_alter;
mod block_ddl;
mod constraint_def;
mod copy;
mod copy_to;
mod ddl;
mod discard;
mod lend;
mod plan_cache;
mod prepared;
mod sequence_params;
mod settings;
mod settings_undo;
mod time_zone;
mod view;

pub use prepared::Prepared;
pub use settings::{parse_timeout, Limits};
pub use time_zone::parse_time_zone;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlparser::ast as A;
use sqlparser::tokenizer::TokenWithSpan;

use self::prepared::{exec_planned, explain, result_columns, PlanSlot, Planned, PlannedStmt};
use self::settings::{default_settings, isolation_of_modes, show_timeout};
use super::bind::{ident, Binder};
use super::dml::{bind_delete, bind_insert, bind_update};
use super::exec::PointLend;
use super::expr::Ty;
use super::lexer::{lex, Lexed, Nesting};
use super::parse::{check_depth, parse_tokens, with_stack};
use super::result::{StatementResult, TxStatus};
use crate::engine::table::constraint_stamp;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::seam::{canceled_by_user, CancelHandle, Interrupt, Isolation, Savepoint, SequenceMemory};
use crate::types::zone::Zone;
use crate::types::{now_micros, DataType, Row, Value, ValueRef};

/// One client's session.
pub struct Session {
    db: AnyEngine,
    tx: Option<AnyTxn>,
    /// The open savepoints of the transaction block, by name, innermost last, with where the
    /// block's schema changes stood when each was opened.
    savepoints: Vec<(String, Savepoint, block_ddl::Mark)>,
    /// Old values of the settings the open block changed (`settings_undo.rs`).
    settings_undo: Vec<settings_undo::Undo>,
    /// The schema changes of the open transaction block (`block_ddl.rs`).
    block: block_ddl::BlockDdl,
    /// This session's id as the owner of table locks (`block_alter.rs`).
    owner: u64,
    /// The constraint stamp read when the running statement began, before it was planned
    /// (`Transaction::saw_constraints_at`).
    stmt_stamp: u64,
    /// Set while an ALTER TABLE runs under the block's undo log: rewrites keep the old
    /// incarnation, and constraints are checked against the block's own rows
    /// (`block_alter.rs`).
    alter_undo: bool,
    /// What `currval` reads, shared by this session's transactions.
    seq_mem: SequenceMemory,
    failed: bool,
    /// A `DISCARD ALL` ran ([`Session::take_discarded`]).
    discarded: bool,
    /// The point-read plans of the prepared statements this session ran last
    /// ([`Session::query_prepared_with`]'s path without the plan's lock or a request).
    point_plans: Vec<Arc<PlannedStmt>>,
    settings: BTreeMap<String, String>,
    /// Values `RESET` returns settings to where they differ from the defaults: those the
    /// connection's startup packet set ([`Session::set_reset_value`]).
    reset_values: BTreeMap<String, String>,
    /// `synchronous_commit = off`.
    async_commit: bool,
    limits: Limits,
    /// The current `statement_timeout` (None: 0, no timeout).
    timeout: Option<Duration>,
    /// `default_transaction_isolation`, parsed when set.
    default_isolation: Isolation,
    /// `lock_timeout` (None: 0, no limit), parsed when set.
    lock_timeout: Option<Duration>,
    /// Cancels this session's running statement (see [`Session::cancel_handle`]).
    cancel: CancelHandle,
    /// The server's BackendKeyData process id for this session (`pg_backend_pid()`).
    backend_pid: Option<i32>,
    /// Plans of plain-text statements by shape (`plan_cache.rs`).
    plan_cache: plan_cache::PlanCache,
    /// When the open transaction block began (`now()` inside it); read only while `tx` is Some.
    block_start: i64,
    /// The `TimeZone` setting, parsed when set; in force while a call of this session runs
    /// ([`Session::zone_scope`]).
    zone: Zone,
}

/// Bytes a result takes, for `max_result_bytes`.
fn result_bytes(rows: &[Row]) -> u64 {
    rows.iter().flatten().map(|v| value_bytes(v.as_value_ref())).sum()
}

/// Bytes one returned value counts for `max_result_bytes`: its payload plus 8.
pub(super) fn value_bytes(v: ValueRef<'_>) -> u64 {
    8 + match v {
        ValueRef::Text(s) => s.len() as u64,
        ValueRef::Bytes(b) => b.len() as u64,
        _ => 8,
    }
}

/// 54000 when `rows` rows of `bytes` bytes (see [`value_bytes`]) exceed `limits`.
pub(super) fn check_limits(limits: &Limits, rows: u64, bytes: u64) -> Result<()> {
    if let Some(max) = limits.max_result_rows {
        if rows > max {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("result of {rows} rows exceeds the limit of {max} rows (max_result_rows)"),
            ));
        }
    }
    if let Some(max) = limits.max_result_bytes {
        if bytes > max {
            return Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("result of {bytes} bytes exceeds the limit of {max} bytes (max_result_bytes)"),
            ));
        }
    }
    Ok(())
}

impl Session {
    /// A session on `db`: a [`crate::Database`], or any engine of [`AnyEngine`].
    pub fn new(db: impl Into<AnyEngine>) -> Session {
        let db: AnyEngine = db.into();
        Session {
            cancel: db.cancel_handle(),
            db,
            tx: None,
            savepoints: Vec::new(),
            settings_undo: Vec::new(),
            block: block_ddl::BlockDdl::default(),
            owner: block_alter::new_owner(),
            stmt_stamp: 0,
            alter_undo: false,
            seq_mem: SequenceMemory::default(),
            failed: false,
            discarded: false,
            point_plans: Vec::new(),
            settings: default_settings(),
            reset_values: BTreeMap::new(),
            async_commit: false,
            limits: Limits::default(),
            timeout: None,
            default_isolation: Isolation::ReadCommitted,
            lock_timeout: None,
            backend_pid: None,
            plan_cache: plan_cache::PlanCache::default(),
            block_start: 0,
            zone: Zone::Fixed(0),
        }
    }

    /// Sets what `pg_backend_pid()` returns (the server's BackendKeyData process id, the one a
    /// CancelRequest for this session names).
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.backend_pid = Some(pid);
    }

    /// Sets the session's resource limits; `statement_timeout` is reset to the new default.
    pub fn set_limits(&mut self, limits: Limits) {
        self.timeout = limits.statement_timeout;
        self.settings
            .insert("statement_timeout".into(), show_timeout(self.timeout));
        self.limits = limits;
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// 54000 if `sql` is longer than `max_statement_bytes`.
    pub fn check_statement_size(&self, sql: &str) -> Result<()> {
        match self.limits.max_statement_bytes {
            Some(max) if sql.len() > max => Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "statement of {} bytes exceeds the limit of {max} bytes (max_statement_bytes)",
                    sql.len()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// 54000 if a result is larger than `max_result_rows` / `max_result_bytes`.
    fn check_result(&self, r: &StatementResult) -> Result<()> {
        let rows = r.rows();
        let bytes = match self.limits.max_result_bytes {
            Some(_) => result_bytes(rows),
            None => 0,
        };
        check_limits(&self.limits, rows.len() as u64, bytes)
    }

    /// What stops a statement starting now: `statement_timeout`, a cancel request.
    fn interrupt(&self) -> Interrupt {
        self.cancel.interrupt(self.timeout.map(|d| Instant::now() + d))
    }

    /// A handle another thread (the server's cancel-request handler) uses to cancel what this
    /// session is running: `execute`, `execute_prepared` or `copy_in`, or a request the caller
    /// marks with [`CancelHandle::begin`]. The statement fails with 57014 "canceling statement
    /// due to user request" and the session stays usable (an open transaction block fails). A
    /// cancel while nothing runs does nothing.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    pub fn database(&self) -> &AnyEngine {
        &self.db
    }

    pub fn status(&self) -> TxStatus {
        match (&self.tx, self.failed) {
            (_, true) => TxStatus::Failed,
            (Some(_), false) => TxStatus::InTransaction,
            (None, false) => TxStatus::Idle,
        }
    }

    /// Executes every statement of `sql` (as psql sends them) with parameters `$1..$n`.
    /// Every statement is parsed before any runs, as in PostgreSQL: a syntax error anywhere
    /// runs nothing. Stops at the first error (earlier statements keep their effects) and after
    /// a `COPY ... FROM STDIN`.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<Vec<StatementResult>> {
        let _request = self.cancel.begin();
        self.stmt_stamp = constraint_stamp();
        let _zone = self.zone_scope();
        if let Err(e) = self.check_statement_size(sql) {
            return Err(self.fail(e));
        }
        let lexed = match lex(sql) {
            Ok(l) => l,
            Err(e) => return Err(self.fail(e)),
        };
        let n = lexed.nesting(0..lexed.tokens.len());
        with_stack(n.depth, || self.execute_inner(lexed, n, params))
    }

    fn execute_inner(&mut self, lexed: Lexed, n: Nesting, params: &[Value]) -> Result<Vec<StatementResult>> {
        let stmts = match check_depth(n).and_then(|_| parse_all(lexed)) {
            Ok(s) => s,
            Err(e) => return Err(self.fail(e)),
        };
        let mut out = Vec::with_capacity(stmts.len());
        for st in &stmts {
            let r = match st {
                Stmt::Parsed(st) => self.run_statement(st, params, None)?,
                Stmt::Cut(c) => self.run_cut(c)?,
            };
            let stop = matches!(r, StatementResult::CopyIn(_));
            out.push(r);
            if stop {
                break;
            }
        }
        Ok(out)
    }

    /// Runs a statement cut out of the token stream ([`Cut`]).
    fn run_cut(&mut self, c: &Cut) -> Result<StatementResult> {
        match c {
            Cut::Noop(tag) => Ok(StatementResult::Command { tag: tag.to_string() }),
            Cut::AlterSequence(a) => self.under_block_rules(|s| s.alter_sequence(a)),
        }
    }

    /// The syntax error [`Session::execute`] would give for `sql`, without running or planning
    /// anything. The server checks every statement of a multi-statement query string with this
    /// first, because PostgreSQL (and `execute`) parse the whole string before running any of it.
    pub fn check_syntax(&self, sql: &str) -> Result<()> {
        let lexed = lex(sql)?;
        let n = lexed.nesting(0..lexed.tokens.len());
        check_depth(n)?;
        with_stack(n.depth, || parse_all(lexed)).map(|_| ())
    }

    /// Parses and plans one statement for later execution (the extended protocol's Parse).
    pub fn prepare(&mut self, sql: &str) -> Result<Arc<Prepared>> {
        self.prepare_typed(sql, &[])
    }

    /// [`Session::prepare`] with the parameter types the client declared (`$1` is `types[0]`;
    /// None, or fewer types than parameters: inferred from the statement), as PostgreSQL takes
    /// them from a Parse message: the statement is bound with those types, and
    /// [`Prepared::param_types`] reports them.
    pub fn prepare_typed(&mut self, sql: &str, types: &[Option<DataType>]) -> Result<Arc<Prepared>> {
        self.check_statement_size(sql)?;
        let _zone = self.zone_scope();
        let lexed = lex(sql)?;
        let n = lexed.nesting(0..lexed.tokens.len());
        check_depth(n)?;
        with_stack(n.depth, || self.prepare_inner(sql, lexed, n.depth, types))
    }

    fn prepare_inner(
        &mut self,
        sql: &str,
        lexed: Lexed,
        nesting: usize,
        types: &[Option<DataType>],
    ) -> Result<Arc<Prepared>> {
        let mut stmts = parse_all(lexed)?;
        if stmts.len() > 1 {
            return Err(Error::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let stmt = match stmts.pop() {
            Some(Stmt::Parsed(st)) => *st,
            // Nothing to run (an empty string), or a statement sqlparser does not parse: no
            // plan, no parameters, no result columns.
            none_or_cut => {
                return Ok(Arc::new(Prepared {
                    sql: sql.into(),
                    stmt: A::Statement::Commit {
                        chain: false,
                        end: false,
                        modifier: None,
                    },
                    cut: match none_or_cut {
                        Some(Stmt::Cut(c)) => Some(c),
                        _ => None,
                    },
                    planned: PlanSlot::new(None),
                    declared: vec![],
                    param_types: vec![],
                    columns: vec![],
                    statement_columns: None,
                    nesting,
                }));
            }
        };
        let planned = self.plan(&stmt, types)?;
        let (param_types, columns) = match &planned {
            Some(p) => (p.params.iter().map(|t| t.to_dt()).collect(), result_columns(p)),
            None => (vec![], self.describe_other(&stmt)),
        };
        // Where folding a constant CASE / COALESCE arm may have changed a type modifier, the
        // statement's Describe reports the unfolded ones, as PostgreSQL's parse analysis does.
        let statement_columns = match &planned {
            Some(p) if p.typmods_folded => self
                .plan_typmods(&stmt, types, true)?
                .map(|p| result_columns(&p))
                .filter(|c| *c != columns),
            _ => None,
        };
        Ok(Arc::new(Prepared {
            sql: sql.into(),
            stmt,
            cut: None,
            planned: PlanSlot::new(planned.map(Arc::new)),
            declared: types.to_vec(),
            param_types,
            columns,
            statement_columns,
            nesting,
        }))
    }

    fn describe_other(&self, stmt: &A::Statement) -> Vec<(String, DataType)> {
        match stmt {
            A::Statement::ShowVariable { variable } => {
                vec![(
                    variable.iter().map(ident).collect::<Vec<_>>().join("_"),
                    DataType::Text(None),
                )]
            }
            A::Statement::Explain { .. } => vec![("QUERY PLAN".into(), DataType::Text(None))],
            _ => vec![],
        }
    }

    /// Parameter types and result columns of a statement (Parse + Describe).
    #[allow(clippy::type_complexity)]
    pub fn describe(&mut self, sql: &str) -> Result<(Vec<DataType>, Vec<(String, DataType)>)> {
        let p = self.prepare(sql)?;
        Ok((p.param_types.clone(), p.columns.clone()))
    }

    /// Executes a prepared statement (no parsing; replanned only if a table it uses changed).
    pub fn execute_prepared(&mut self, p: &Prepared, params: &[Value]) -> Result<StatementResult> {
        let _request = self.cancel.begin();
        self.stmt_stamp = constraint_stamp();
        let _zone = self.zone_scope();
        if p.nesting > 16 {
            return with_stack(p.nesting, || self.execute_prepared_inner(p, params));
        }
        self.execute_prepared_inner(p, params)
    }

    fn execute_prepared_inner(&mut self, p: &Prepared, params: &[Value]) -> Result<StatementResult> {
        if let Some(c) = &p.cut {
            return self.run_cut(c);
        }
        if p.sql.trim().is_empty() {
            return Ok(StatementResult::Command { tag: "EMPTY".into() });
        }
        let planned = self.current_plan(p)?;
        self.run_statement(&p.stmt, params, planned)
    }

    /// The plan of a prepared query or DML statement, planned again if a table or view it
    /// uses changed since; None for other statements.
    fn current_plan(&mut self, p: &Prepared) -> Result<Option<Arc<PlannedStmt>>> {
        let cached = p.planned.get();
        Ok(match cached {
            Some(pl) if pl.valid() => Some(pl),
            Some(old) => {
                // A table another session's block altered: its definition may still be
                // rolled back, so wait for the block before planning against it.
                self.wait_for_tables(&old.deps).map_err(|e| self.fail(e))?;
                let pl = self
                    .plan(&p.stmt, &p.declared)
                    .map_err(|e| self.fail(e))?
                    .map(Arc::new);
                p.planned.set(pl.clone());
                pl
            }
            None => None,
        })
    }

    /// Runs a statement's work (a query, DML, a COPY's data) under the transaction block's
    /// rules: 25P02 in a failed block, 57014 for a cancel that arrived between the statements
    /// of one request, and an error fails an open block.
    pub(super) fn under_block_rules<T>(&mut self, work: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.failed {
            return Err(Error::new(
                SqlState::IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let r = if self.cancel.is_canceled() {
            Err(canceled_by_user())
        } else {
            work(self)
        };
        if r.is_err() && self.tx.is_some() {
            self.failed = true;
        }
        r
    }

    fn fail(&mut self, e: Error) -> Error {
        if self.tx.is_some() {
            self.failed = true;
        }
        e
    }

    /// Plans queries and DML, with the parameter types a client declared (see
    /// [`Session::prepare_typed`]); None for other statements.
    fn plan(&self, stmt: &A::Statement, declared: &[Option<DataType>]) -> Result<Option<PlannedStmt>> {
        self.plan_typmods(stmt, declared, false)
    }

    /// [`Session::plan`], with type modifiers as parse analysis gives them when
    /// `parse_typmods` ([`Binder::parse_typmods`]).
    fn plan_typmods(
        &self,
        stmt: &A::Statement,
        declared: &[Option<DataType>],
        parse_typmods: bool,
    ) -> Result<Option<PlannedStmt>> {
        let mut b = Binder::new(&self.db, Some(&self.settings));
        b.parse_typmods = parse_typmods;
        b.backend_pid = self.backend_pid;
        b.params = declared
            .iter()
            .map(|t| t.map_or(Ty::Unknown, Ty::from_dt))
            .collect();
        let planned = match stmt {
            // WITH ... INSERT / UPDATE / DELETE: the statement bound with the CTEs in scope.
            A::Statement::Query(q) => match q.body.as_ref() {
                A::SetExpr::Insert(A::Statement::Insert(i)) => {
                    Planned::Insert(b.with_ctes(q.with.as_ref(), |b| bind_insert(b, i))?)
                }
                A::SetExpr::Update(A::Statement::Update(u)) => {
                    Planned::Update(b.with_ctes(q.with.as_ref(), |b| bind_update(b, u))?)
                }
                A::SetExpr::Delete(A::Statement::Delete(d)) => {
                    Planned::Delete(b.with_ctes(q.with.as_ref(), |b| bind_delete(b, d))?)
                }
                _ => {
                    let (plan, cols) = b.bind_query(q)?;
                    Planned::Query { plan, cols }
                }
            },
            A::Statement::Insert(i) => Planned::Insert(bind_insert(&mut b, i)?),
            A::Statement::Update(u) => Planned::Update(bind_update(&mut b, u)?),
            A::Statement::Delete(d) => Planned::Delete(bind_delete(&mut b, d)?),
            _ => return Ok(None),
        };
        let deps = b.tables.iter().map(|t| (t.clone(), t.def())).collect();
        let views = (!b.views.is_empty()).then(|| (self.db.clone(), std::mem::take(&mut b.views)));
        let point = match &planned {
            Planned::Query { plan, .. } => PointLend::of(plan, &b.subplans),
            _ => None,
        };
        Ok(Some(PlannedStmt {
            point,
            planned,
            subplans: b.subplans,
            params: b.params,
            deps,
            reads_catalog: b.catalog.is_some(),
            views,
            typmods_folded: b.typmods_folded.get(),
        }))
    }

    /// The times of the statement starting now: its own, and its transaction block's start
    /// (the statement's own outside a block).
    fn clock(&self) -> crate::sql::exec::Clock {
        let stmt = now_micros();
        let txn = if self.tx.is_some() { self.block_start } else { stmt };
        crate::sql::exec::Clock { txn, stmt }
    }

    fn run_statement(
        &mut self,
        st: &A::Statement,
        params: &[Value],
        planned: Option<Arc<PlannedStmt>>,
    ) -> Result<StatementResult> {
        let cmd = |t: &str| Ok(StatementResult::Command { tag: t.to_string() });
        match st {
            A::Statement::StartTransaction { modes, .. } => {
                if self.tx.is_none() && !self.failed {
                    let mut tx = self.new_tx();
                    if let Some(iso) = isolation_of_modes(modes) {
                        tx.set_isolation(iso);
                    }
                    self.tx = Some(tx);
                    self.block_start = now_micros();
                }
                return cmd("BEGIN");
            }
            A::Statement::Commit { chain: false, .. } => {
                let failed = std::mem::replace(&mut self.failed, false);
                self.savepoints.clear();
                let r = match self.tx.take() {
                    Some(tx) if failed => {
                        tx.rollback();
                        self.undo_block_ddl(block_ddl::START)
                            .and_then(|_| cmd("ROLLBACK"))
                    }
                    Some(mut tx) => {
                        // The block's ALTER undo records go in the commit's own write.
                        if !self.block.altered.is_empty() {
                            tx.forget_undo_on_commit(self.owner);
                        }
                        match tx.commit() {
                            // The block is over and its rows are not committed: its schema
                            // changes go too (an error undoing them is the lesser news).
                            Err(e) => {
                                let _ = self.undo_block_ddl(block_ddl::START);
                                Err(e)
                            }
                            Ok(()) => self.finish_block_ddl().and_then(|_| cmd("COMMIT")),
                        }
                    }
                    None => cmd("COMMIT"),
                };
                // A block that ends without committing takes its SETs back.
                if failed || r.is_err() {
                    self.undo_settings(0);
                } else {
                    self.commit_settings();
                }
                // The block's table locks go once its schema changes are final.
                self.unlock_block_tables();
                return r;
            }
            A::Statement::Rollback {
                chain: false,
                savepoint: None,
            } => {
                self.failed = false;
                self.savepoints.clear();
                if let Some(tx) = self.tx.take() {
                    tx.rollback();
                }
                self.undo_settings(0);
                let r = self.undo_block_ddl(block_ddl::START);
                self.unlock_block_tables();
                r?;
                return cmd("ROLLBACK");
            }
            A::Statement::Rollback {
                chain: false,
                savepoint: Some(name),
            } => return self.rollback_to_savepoint(&ident(name)),
            _ => {}
        }
        self.under_block_rules(|s| {
            s.run_in_tx(st, params, planned)
                .and_then(|r| s.check_result(&r).map(|_| r))
        })
    }

    fn run_in_tx(
        &mut self,
        st: &A::Statement,
        params: &[Value],
        planned: Option<Arc<PlannedStmt>>,
    ) -> Result<StatementResult> {
        // DDL waits for the tables another session's block has altered (`block_alter.rs`).
        self.wait_for_ddl_tables(st)?;
        // DDL inside a transaction block is recorded so that a rollback can undo it.
        if let Some(r) = self.ddl_in_block(st) {
            return r;
        }
        self.run_statement_kind(st, params, planned)
    }

    /// Runs a DDL statement as it runs outside a transaction block.
    fn run_ddl(&mut self, st: &A::Statement) -> Result<StatementResult> {
        self.run_statement_kind(st, &[], None)
    }

    fn run_statement_kind(
        &mut self,
        st: &A::Statement,
        params: &[Value],
        planned: Option<Arc<PlannedStmt>>,
    ) -> Result<StatementResult> {
        match st {
            A::Statement::Query(_)
            | A::Statement::Insert(_)
            | A::Statement::Update(_)
            | A::Statement::Delete(_) => {
                let mut planned = match planned {
                    Some(p) => p,
                    None => Arc::new(
                        self.plan_waiting(st)?
                            .ok_or_else(|| Error::internal("statement was not planned"))?,
                    ),
                };
                // A table another session's block altered: wait for the block to end, and
                // plan again if it committed a new definition.
                if self.wait_for_tables(&planned.deps)? && !planned.valid() {
                    planned = Arc::new(
                        self.plan(st, &[])?
                            .ok_or_else(|| Error::internal("statement was not planned"))?,
                    );
                }
                let stop = self.interrupt();
                let clock = self.clock();
                self.with_tx(|tx, _| exec_planned(&planned, tx, params, clock, &stop))
            }
            A::Statement::Explain {
                statement, analyze, ..
            } => {
                if *analyze {
                    return Err(Error::unsupported("EXPLAIN ANALYZE is not supported"));
                }
                let p = self
                    .plan(statement, &[])?
                    .ok_or_else(|| Error::unsupported("EXPLAIN of this statement"))?;
                let lines = explain(&p);
                let n = lines.len();
                Ok(StatementResult::Query {
                    tag: format!("EXPLAIN {n}"),
                    columns: vec![("QUERY PLAN".into(), DataType::Text(None))],
                    rows: lines.into_iter().map(|l| vec![Value::Text(l)]).collect(),
                })
            }
            A::Statement::CreateTable(ct) => self.create_table(ct),
            A::Statement::CreateSequence {
                if_not_exists,
                name,
                data_type,
                sequence_options,
                owned_by: None,
                temporary: false,
            } => self.create_sequence(name, *if_not_exists, data_type.as_ref(), sequence_options),
            A::Statement::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => self.drop(*object_type, *if_exists, names, *cascade),
            A::Statement::CreateView(cv) => self.create_view(cv),
            A::Statement::CreateIndex(ci) => self.create_index(ci),
            A::Statement::AlterTable(at) => self.alter_table(at),
            A::Statement::Truncate(t) => self.truncate(t),
            A::Statement::Set(s) => self.set(s),
            A::Statement::Reset(r) => self.reset(&r.reset),
            A::Statement::ShowVariable { variable } => self.show(variable),
            A::Statement::Copy {
                source,
                to,
                target,
                options,
                legacy_options,
                values,
            } => self.copy(source, *to, target, options, legacy_options, values),
            A::Statement::Discard { object_type } => self.discard(*object_type),
            A::Statement::Analyze(_) => Ok(StatementResult::Command {
                tag: "ANALYZE".into(),
            }),
            A::Statement::Savepoint { name } => self.savepoint(&ident(name)),
            A::Statement::ReleaseSavepoint { name } => self.release_savepoint(&ident(name)),
            other => {
                let s = other.to_string();
                let head: String = s.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                Err(Error::unsupported(format!("{head} is not supported by Augur")))
            }
        }
    }

    /// Runs `f` in the session's transaction block, or in its own transaction (autocommit;
    /// a serialization failure is returned, never retried behind the user's back).
    fn with_tx<T>(&mut self, f: impl FnOnce(&mut AnyTxn, &AnyEngine) -> Result<T>) -> Result<T> {
        if let Some(tx) = &mut self.tx {
            tx.begin_statement();
            tx.saw_constraints_at(self.stmt_stamp);
            return f(tx, &self.db);
        }
        let mut tx = self.new_tx();
        tx.saw_constraints_at(self.stmt_stamp);
        let r = f(&mut tx, &self.db)?;
        if tx.has_writes() {
            tx.commit()?;
        }
        Ok(r)
    }

    /// `SAVEPOINT name` (25P01 outside a transaction block, as in PostgreSQL).
    fn savepoint(&mut self, name: &str) -> Result<StatementResult> {
        let Some(tx) = &mut self.tx else {
            return Err(Error::new(
                SqlState::NO_ACTIVE_SQL_TRANSACTION,
                "SAVEPOINT can only be used in transaction blocks",
            ));
        };
        let sp = tx.savepoint()?;
        let mark = self.block.mark();
        self.savepoints.push((name.to_string(), sp, mark));
        Ok(StatementResult::Command {
            tag: "SAVEPOINT".into(),
        })
    }

    /// The innermost open savepoint called `name` (3B001 if none).
    fn find_savepoint(&self, name: &str) -> Result<usize> {
        self.savepoints
            .iter()
            .rposition(|(n, _, _)| n == name)
            .ok_or_else(|| Error::new(SqlState("3B001"), format!("savepoint \"{name}\" does not exist")))
    }

    /// `RELEASE [SAVEPOINT] name`: closes it and every savepoint opened after it, keeping
    /// their writes.
    fn release_savepoint(&mut self, name: &str) -> Result<StatementResult> {
        if self.tx.is_none() {
            return Err(Error::new(
                SqlState::NO_ACTIVE_SQL_TRANSACTION,
                "RELEASE SAVEPOINT can only be used in transaction blocks",
            ));
        }
        let i = self.find_savepoint(name)?;
        let (_, sp, _) = self.savepoints[i];
        self.savepoints.truncate(i);
        self.release_settings(i);
        if let Some(tx) = &mut self.tx {
            tx.release(sp)?;
        }
        Ok(StatementResult::Command {
            tag: "RELEASE".into(),
        })
    }

    /// `ROLLBACK TO [SAVEPOINT] name`: undoes what the block did after the savepoint (and
    /// releases the row locks taken after it), keeps the savepoint open and, as in
    /// PostgreSQL, ends the failed state of the block.
    fn rollback_to_savepoint(&mut self, name: &str) -> Result<StatementResult> {
        if self.tx.is_none() {
            return Err(Error::new(
                SqlState::NO_ACTIVE_SQL_TRANSACTION,
                "ROLLBACK TO SAVEPOINT can only be used in transaction blocks",
            ));
        }
        let i = match self.find_savepoint(name) {
            Ok(i) => i,
            Err(e) => return Err(self.fail(e)),
        };
        let (_, sp, mark) = self.savepoints[i];
        self.savepoints.truncate(i + 1);
        if let Some(tx) = &mut self.tx {
            if let Err(e) = tx.rollback_to(sp) {
                return Err(self.fail(e));
            }
        }
        // The schema changes made since the savepoint go too, and its SETs.
        if let Err(e) = self.undo_block_ddl(mark) {
            return Err(self.fail(e));
        }
        self.undo_settings(i + 1);
        self.failed = false;
        Ok(StatementResult::Command {
            tag: "ROLLBACK".into(),
        })
    }

    /// A transaction with the session's settings: isolation (`default_transaction_isolation`),
    /// `lock_timeout`, `synchronous_commit`.
    fn new_tx(&self) -> AnyTxn {
        let mut tx = self.db.begin();
        if self.async_commit {
            tx.set_sync(false);
        }
        tx.set_isolation(self.default_isolation);
        tx.set_lock_timeout(self.lock_timeout);
        tx.set_lock_party(self.owner);
        tx.set_sequence_memory(self.seq_mem.clone());
        tx
    }
}

impl Drop for Session {
    /// A session that ends inside a transaction block (a client that disconnects) rolls the
    /// block back, its schema changes included.
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            tx.rollback();
        }
        if self.block.mark() != block_ddl::START {
            let _ = self.undo_block_ddl(block_ddl::START);
        }
        self.unlock_block_tables();
    }
}

/// One statement of a query string: parsed by sqlparser, or cut out of the token stream.
enum Stmt {
    Parsed(Box<A::Statement>),
    Cut(Cut),
}

/// A statement sqlparser does not parse, cut out of the token stream and read by the session
/// ([`parse_all`]); run by [`Session::execute`] and, prepared, by the extended protocol.
enum Cut {
    /// A maintenance command accepted as a no-op, with its command tag.
    Noop(&'static str),
    /// `ALTER SEQUENCE` (`alter_sequence.rs`).
    AlterSequence(alter_sequence::AlterSequence),
}

/// The tag of a statement cut out of the token stream as ALTER SEQUENCE.
const ALTER_SEQUENCE: &str = "ALTER SEQUENCE";

/// VACUUM / ANALYZE / CHECKPOINT are accepted as no-ops (pgbench sends them; sqlparser does not
/// parse all of their PostgreSQL forms): the command tag for a statement starting with `keyword`.
fn maintenance_tag(keyword: &str) -> Option<&'static str> {
    match keyword {
        "VACUUM" => Some("VACUUM"),
        "ANALYZE" | "ANALYSE" => Some("ANALYZE"),
        "CHECKPOINT" => Some("CHECKPOINT"),
        _ => None,
    }
}

/// Every statement of a text, parsed before any runs. Maintenance commands are cut out of the
/// token stream and the runs of tokens between them parsed whole, so everything else parses
/// exactly as the text would alone (`COPY ... FROM STDIN` followed by its data, for example).
fn parse_all(lexed: Lexed) -> Result<Vec<Stmt>> {
    let cuts: Vec<(usize, usize, &'static str)> = lexed
        .statements()
        .into_iter()
        .filter_map(|p| {
            if alter_sequence::is_alter_sequence(&lexed.tokens[p.tokens.clone()]) {
                return Some((p.tokens.start, p.tokens.end, ALTER_SEQUENCE));
            }
            maintenance_tag(&lexed.leading_keyword(p.tokens.clone()))
                .map(|tag| (p.tokens.start, p.tokens.end, tag))
        })
        .collect();
    let mut out = Vec::new();
    let mut tokens = lexed.tokens.into_iter();
    let mut pos = 0;
    for (start, end, tag) in cuts {
        let run: Vec<TokenWithSpan> = tokens.by_ref().take(start - pos).collect();
        out.extend(parse_tokens(run)?.into_iter().map(|s| Stmt::Parsed(Box::new(s))));
        let cut: Vec<TokenWithSpan> = tokens.by_ref().take(end - start).collect();
        out.push(Stmt::Cut(if tag == ALTER_SEQUENCE {
            Cut::AlterSequence(alter_sequence::parse(&cut)?)
        } else {
            Cut::Noop(tag)
        }));
        pos = end;
    }
    out.extend(
        parse_tokens(tokens.collect())?
            .into_iter()
            .map(|s| Stmt::Parsed(Box::new(s))),
    );
    Ok(out)
}
