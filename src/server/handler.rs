//! The pgwire handlers: simple and extended query protocol, COPY FROM STDIN, startup and
//! authentication. One [`Conn`] (one [`Session`]) per connection, kept in the connection's
//! session extensions; it is dropped with the connection, which rolls back an open transaction.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::BytesMut;
use futures::sink::{Sink, SinkExt};
use futures::stream;
use parking_lot::Mutex;
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{CopyResponse, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers, PidSecretKeyGenerator, Type,
    DEFAULT_NAME, METADATA_APPLICATION_NAME, METADATA_DATABASE, METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_ERROR, SEVERITY_FATAL, SEVERITY_WARNING};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse};
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::extendedquery::{Execute, Sync as PgSync};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, NoticeResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::startup::Startup;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::buffered::Buffered;
use super::cancel::{KeyGenerator, Registry};
use super::catalog::{self, CatalogResult};
use super::metrics::{Kind, Metrics};
use super::split::split_statements;
use super::values;
use crate::engine::{CancelHandle, Database};
use crate::error::{Error, SqlState};
use crate::sql::{CopyState, Limits, Prepared, Session, StatementResult, TxStatus};
use crate::types::{DataType, Row, Value};

/// The server_version reported to clients: the PostgreSQL release whose catalog queries (psql
/// 15's) the catalog module answers, and Augur's own version.
pub fn server_version() -> String {
    format!("15.0 (Augur {})", env!("CARGO_PKG_VERSION"))
}

/// State shared by every connection.
pub struct Shared {
    pub db: Database,
    /// Set when the server is shutting down: new statements are refused.
    pub shutting_down: AtomicBool,
    /// Statements executing right now (the shutdown waits for them, bounded).
    pub busy: AtomicUsize,
    /// Largest COPY FROM STDIN payload buffered for one statement.
    pub max_copy_bytes: usize,
    /// ParameterStatus values every session starts with (from `Session::reported_settings`).
    base_params: Vec<(String, String)>,
    /// Recorded only with `--metrics`.
    pub metrics: Option<Arc<Metrics>>,
    /// Every session's resource limits.
    pub limits: Limits,
    /// Live connections' process ids and secret keys, for cancel requests.
    pub cancels: Arc<Registry>,
}

impl Shared {
    pub fn new(db: Database, max_copy_bytes: usize, metrics: Option<Arc<Metrics>>, limits: Limits) -> Shared {
        let base_params = Session::new(db.clone()).reported_settings();
        Shared {
            db,
            shutting_down: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            max_copy_bytes,
            base_params,
            metrics,
            limits,
            cancels: Arc::default(),
        }
    }
}

struct BusyGuard<'a>(&'a AtomicUsize);

impl<'a> BusyGuard<'a> {
    fn new(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Ordering::AcqRel);
        BusyGuard(c)
    }
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Simple-query SELECTs up to this size are prepared first to see whether they are point reads.
const SIMPLE_PREPARE_MAX: usize = 4096;

/// Runs blocking engine work without stalling the runtime's other connections.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

struct PendingCopy {
    state: CopyState,
    buf: Vec<u8>,
}

/// One connection's state.
pub struct Conn {
    session: Mutex<Session>,
    copy: Mutex<Option<PendingCopy>>,
    cx: catalog::Ctx,
    /// The session's cancel handle (reachable without its lock, which a running statement holds).
    cancel: CancelHandle,
}

impl Conn {
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Records the BackendKeyData process id (`pg_backend_pid()` returns it).
    pub(super) fn set_backend_pid(&self, pid: i32) {
        self.session.lock().set_backend_pid(pid);
    }

    fn status(&self) -> TransactionStatus {
        wire_status(self.session.lock().status())
    }

    fn tx_status(&self) -> TxStatus {
        self.session.lock().status()
    }
}

impl Conn {
    /// An error outside `Session::execute*` (Parse, Bind) inside a transaction block fails the
    /// block, as in PostgreSQL. `Session` has no call for that, so this runs a statement that
    /// cannot parse: the session marks its open block failed and nothing else happens.
    fn fail_block(&self) {
        let mut s = self.session.lock();
        if s.status() == TxStatus::InTransaction {
            let _ = s.execute(")", &[]);
        }
    }
}

fn wire_status(s: TxStatus) -> TransactionStatus {
    match s {
        TxStatus::Idle => TransactionStatus::Idle,
        TxStatus::InTransaction => TransactionStatus::Transaction,
        TxStatus::Failed => TransactionStatus::Error,
    }
}

/// The connection's state, created on first use (at startup, by [`KeyGenerator`]).
pub(super) fn conn<C: ClientInfo + ?Sized>(client: &C, shared: &Shared) -> Arc<Conn> {
    client.session_extensions().get_or_insert_with(|| {
        let md = client.metadata();
        let user = md.get(METADATA_USER).cloned().unwrap_or_else(|| "augur".into());
        let database = md.get(METADATA_DATABASE).cloned().unwrap_or_else(|| user.clone());
        let mut session = Session::new(shared.db.clone());
        session.set_limits(shared.limits.clone());
        Conn {
            cancel: session.cancel_handle(),
            session: Mutex::new(session),
            copy: Mutex::new(None),
            cx: catalog::Ctx { user, database },
        }
    })
}

/// An engine error as the client sees it (severity ERROR, the error's SQLSTATE).
pub fn error_info(e: &Error) -> ErrorInfo {
    let msg = match e {
        Error::Sql { message, .. } => message.clone(),
        other => other.to_string(),
    };
    // FATAL ends the connection (pgwire closes it after sending): see Error::ends_connection.
    let severity = if e.ends_connection() {
        SEVERITY_FATAL
    } else {
        SEVERITY_ERROR
    };
    ErrorInfo::new(severity.to_owned(), e.sqlstate().code().to_owned(), msg)
}

fn user_error(e: &Error) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

fn admin_shutdown() -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        SEVERITY_FATAL.to_owned(),
        "57P01".to_owned(),
        "terminating connection due to administrator command".to_owned(),
    )))
}

fn is_binary(f: &Format, i: usize) -> bool {
    match f {
        Format::UnifiedText => false,
        Format::UnifiedBinary => true,
        Format::Individual(v) => v.get(i) == Some(&1),
    }
}

fn row_description(columns: &[(String, DataType)], binary: impl Fn(usize) -> bool) -> RowDescription {
    RowDescription::new(
        columns
            .iter()
            .enumerate()
            .map(|(i, (name, t))| {
                FieldDescription::new(
                    name.clone(),
                    0,
                    0,
                    t.pg_oid(),
                    values::type_size(*t),
                    values::type_modifier(*t),
                    i16::from(binary(i)),
                )
            })
            .collect(),
    )
}

fn encode_row(
    row: &Row,
    columns: &[(String, DataType)],
    binary: impl Fn(usize) -> bool,
) -> Result<DataRow, Error> {
    let mut buf = BytesMut::with_capacity(16 * row.len().max(1));
    for (i, v) in row.iter().enumerate() {
        let t = columns.get(i).map(|c| c.1).unwrap_or(DataType::Text(None));
        if binary(i) {
            values::put_binary(&mut buf, v, t)?;
        } else {
            values::put_text(&mut buf, v);
        }
    }
    Ok(DataRow::new(buf, row.len() as i16))
}

/// The command a statement starts with, upper-cased (`BEGIN`, `COMMIT`, ...).
fn leading_keyword(sql: &str) -> String {
    let mut s = sql.trim_start();
    // Skip leading comments.
    loop {
        if let Some(rest) = s.strip_prefix("--") {
            s = rest.split_once('\n').map_or("", |x| x.1).trim_start();
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = rest.split_once("*/").map_or("", |x| x.1).trim_start();
        } else {
            break;
        }
    }
    s.split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_uppercase()
}

/// Rewrites what clients send that the SQL parser does not take yet: pgbench's
/// `COPY ... WITH (FREEZE ON)` (FREEZE is a no-op in Augur).
fn rewrite(sql: &str) -> std::borrow::Cow<'_, str> {
    // Bytes, not `&str` slicing: the fifth byte may be inside a multi-byte character.
    if sql.len() > 6 && sql.as_bytes()[..4].eq_ignore_ascii_case(b"copy") {
        let lower = sql.to_ascii_lowercase();
        for opt in ["with (freeze on)", "with (freeze true)", "with (freeze)"] {
            if let Some(i) = lower.find(opt) {
                return format!("{}{}", &sql[..i], &sql[i + opt.len()..]).into();
            }
        }
    }
    sql.into()
}

/// PostgreSQL's warnings for transaction control that does nothing.
fn tx_warning(keyword: &str, before: TxStatus) -> Option<ErrorInfo> {
    let w = |code: &str, msg: &str| {
        Some(ErrorInfo::new(
            SEVERITY_WARNING.to_owned(),
            code.to_owned(),
            msg.to_owned(),
        ))
    };
    match (keyword, before) {
        ("BEGIN" | "START", TxStatus::InTransaction | TxStatus::Failed) => {
            w("25001", "there is already a transaction in progress")
        }
        ("COMMIT" | "END" | "ROLLBACK" | "ABORT", TxStatus::Idle) => {
            w("25P01", "there is no transaction in progress")
        }
        _ => None,
    }
}

/// What one statement produced, ready to be written.
enum Outcome {
    Rows {
        tag: String,
        columns: Vec<(String, DataType)>,
        rows: Vec<Row>,
    },
    Command(String),
    CopyIn(CopyState),
}

impl From<StatementResult> for Outcome {
    fn from(r: StatementResult) -> Outcome {
        match r {
            StatementResult::Query { tag, columns, rows } => Outcome::Rows { tag, columns, rows },
            StatementResult::Command { tag } => Outcome::Command(tag),
            StatementResult::CopyIn(st) => Outcome::CopyIn(st),
        }
    }
}

impl From<CatalogResult> for Outcome {
    fn from(r: CatalogResult) -> Outcome {
        Outcome::Rows {
            tag: r.tag(),
            columns: r.columns,
            rows: r.rows,
        }
    }
}

/// The query handlers (simple, extended, COPY).
pub struct Backend {
    shared: Arc<Shared>,
    parser: Arc<AugurParser>,
}

impl Backend {
    pub fn new(shared: Arc<Shared>) -> Backend {
        Backend {
            parser: Arc::new(AugurParser {
                shared: shared.clone(),
            }),
            shared,
        }
    }

    /// Executes an extended-protocol statement.
    fn run_extended(&self, conn: &Conn, stmt: &Stmt, params: &[Value]) -> PgWireResult<Outcome> {
        Ok(match &stmt.kind {
            StmtKind::Catalog(sql) => match catalog::answer(sql, &self.shared.db, &conn.cx) {
                Some(r) => r.map_err(|e| user_error(&e))?.into(),
                None => Outcome::Rows {
                    tag: "SELECT 0".into(),
                    columns: stmt.columns.clone(),
                    rows: vec![],
                },
            },
            StmtKind::Sql(p) => {
                let _busy = BusyGuard::new(&self.shared.busy);
                // A short statement (point read or write, BEGIN, COMMIT) runs on this network
                // thread: handing the thread over (block_in_place) costs more than the
                // statement. If it waits (row lock, WAL fsync), the engine's wait hook hands
                // the thread over then (src/store/wait.rs).
                let run = || conn.session.lock().execute_prepared(p, params);
                if p.is_short() { run() } else { blocking(run) }
                    .map_err(|e| user_error(&e))?
                    .into()
            }
        })
    }

    /// PostgreSQL parses a whole simple-query string before running any of it, so a syntax
    /// error in a later statement means no statement runs (`Session::execute` does the same).
    /// Catalog queries, which this module answers rather than the SQL layer, are not checked.
    fn check_syntax(&self, conn: &Conn, stmts: &[&str]) -> Result<(), Error> {
        let session = conn.session.lock();
        for sql in stmts {
            if !catalog::mentions_catalog(sql) {
                session.check_syntax(&rewrite(sql))?;
            }
        }
        Ok(())
    }

    /// Runs one statement of a simple query (catalog first, then the SQL layer).
    fn run_simple(&self, conn: &Conn, sql: &str) -> Result<Vec<Outcome>, Error> {
        if let Some(r) = catalog::answer(sql, &self.shared.db, &conn.cx) {
            return Ok(vec![r?.into()]);
        }
        let sql = &*rewrite(sql);
        let _busy = BusyGuard::new(&self.shared.busy);
        // A short statement (a primary-key point read or write, BEGIN, COMMIT: pgbench's
        // scripts) runs on this network thread, as in the extended protocol: handing the worker
        // over (block_in_place) costs more than the statement, and if it has to wait (row lock,
        // WAL fsync) the engine's wait hook hands the thread over then. Anything else, or any
        // error in preparing it, takes the ordinary path (which reports errors exactly as for
        // any simple query). Preparing and then executing a statement is what the extended
        // protocol does with it, so results are the same.
        if sql.len() <= SIMPLE_PREPARE_MAX
            && matches!(
                &*leading_keyword(sql),
                "SELECT" | "UPDATE" | "INSERT" | "DELETE" | "BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK"
            )
        {
            let mut session = conn.session.lock();
            if let Ok(p) = session.prepare(sql) {
                let r = if p.is_short() {
                    session.execute_prepared(&p, &[])
                } else {
                    blocking(|| session.execute_prepared(&p, &[]))
                };
                return Ok(vec![r?.into()]);
            }
        }
        let out = blocking(|| conn.session.lock().execute(sql, &[]))?;
        Ok(out.into_iter().map(Outcome::from).collect())
    }
}

async fn send_notice<C>(client: &mut C, info: ErrorInfo) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    client
        .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(info)))
        .await?;
    Ok(())
}

#[async_trait]
impl SimpleQueryHandler for Backend {
    async fn on_query<C>(
        &self,
        client: &mut C,
        query: pgwire::messages::simplequery::Query,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        if self.shared.shutting_down.load(Ordering::Acquire) {
            return Err(admin_shutdown());
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let conn = conn(&*client, &self.shared);
        // One request for the whole query string: a cancel stops the statement running and,
        // like any error, the statements after it.
        let _request = conn.cancel.begin();
        // The size limit applies to the whole query string, before splitting or catalog
        // matching; an oversized one fails like any statement (and fails an open block).
        let size = conn.session.lock().check_statement_size(&query.query);
        let (mut stmts, oversized) = match size {
            Ok(()) => (split_statements(&query.query), false),
            Err(e) => {
                conn.fail_block();
                client
                    .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                    .await?;
                (vec![], true)
            }
        };
        if stmts.is_empty() && !oversized {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                .await?;
        }
        if stmts.len() > 1 {
            if let Err(e) = self.check_syntax(&conn, &stmts) {
                // Nothing runs; inside a transaction block the error fails the block.
                conn.fail_block();
                client
                    .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                    .await?;
                stmts.clear();
            }
        }
        for sql in stmts {
            let keyword = leading_keyword(sql);
            let before = conn.tx_status();
            let t0 = self.shared.metrics.as_ref().map(|_| Instant::now());
            let result = self.run_simple(&conn, sql);
            if let (Some(m), Some(t0)) = (&self.shared.metrics, t0) {
                let code = result.as_ref().err().map(|e| e.sqlstate().code());
                m.statement(Kind::of(&keyword), before, t0.elapsed(), code);
            }
            let outcomes = match result {
                Ok(o) => o,
                Err(e) if e.ends_connection() => return Err(user_error(&e)),
                Err(e) => {
                    client
                        .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                        .await?;
                    break;
                }
            };
            if let Some(w) = tx_warning(&keyword, before) {
                send_notice(client, w).await?;
            }
            if outcomes.is_empty() {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new()))
                    .await?;
            }
            for o in outcomes {
                match o {
                    Outcome::Rows { tag, columns, rows } => {
                        client
                            .feed(PgWireBackendMessage::RowDescription(row_description(
                                &columns,
                                |_| false,
                            )))
                            .await?;
                        for r in &rows {
                            let dr = encode_row(r, &columns, |_| false).map_err(|e| user_error(&e))?;
                            client.feed(PgWireBackendMessage::DataRow(dr)).await?;
                        }
                        client
                            .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                            .await?;
                    }
                    Outcome::Command(tag) => {
                        client
                            .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                            .await?;
                    }
                    Outcome::CopyIn(st) => {
                        let n = st.columns.len() as i16;
                        *conn.copy.lock() = Some(PendingCopy {
                            state: st,
                            buf: Vec::new(),
                        });
                        client
                            .send(PgWireBackendMessage::CopyInResponse(CopyInResponse::new(
                                0,
                                n,
                                vec![0; n as usize],
                            )))
                            .await?;
                        client.set_state(PgWireConnectionState::CopyInProgress(false));
                        // Statements after COPY in the same query string are not run (the
                        // session stops at COPY too); ReadyForQuery follows CopyDone.
                        return Ok(());
                    }
                }
            }
        }
        let status = conn.status();
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status)))
            .await?;
        Ok(())
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // on_query is overridden and never calls this.
        Ok(vec![])
    }
}

/// A statement of the extended protocol.
#[derive(Debug)]
pub struct Stmt {
    kind: StmtKind,
    /// Parameter types the SQL layer inferred.
    params: Vec<DataType>,
    columns: Vec<(String, DataType)>,
    keyword: String,
}

#[derive(Debug)]
enum StmtKind {
    Sql(Arc<Prepared>),
    Catalog(String),
}

/// Parses extended-protocol statements with the connection's session, so Parse reports errors
/// and Describe reports the real parameter and result types.
pub struct AugurParser {
    shared: Arc<Shared>,
}

#[async_trait]
impl QueryParser for AugurParser {
    type Statement = Arc<Stmt>;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Arc<Stmt>>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let conn = conn(client, &self.shared);
        let size = conn.session.lock().check_statement_size(sql);
        size.map_err(|e| {
            conn.fail_block();
            user_error(&e)
        })?;
        if let Some(r) = catalog::answer(sql, &self.shared.db, &conn.cx) {
            let r = r.map_err(|e| user_error(&e))?;
            return Ok(Some(Arc::new(Stmt {
                kind: StmtKind::Catalog(sql.to_string()),
                params: vec![],
                columns: r.columns,
                keyword: "SELECT".into(),
            })));
        }
        let sql = &*rewrite(sql);
        let p = blocking(|| conn.session.lock().prepare(sql)).map_err(|e| {
            if let Some(m) = &self.shared.metrics {
                m.error(e.sqlstate().code());
            }
            conn.fail_block();
            user_error(&e)
        })?;
        Ok(Some(Arc::new(Stmt {
            params: p.param_types.clone(),
            columns: p.columns.clone(),
            keyword: leading_keyword(sql),
            kind: StmtKind::Sql(p),
        })))
    }

    fn get_parameter_types(&self, stmt: &Arc<Stmt>) -> PgWireResult<Vec<Type>> {
        Ok(stmt.params.iter().map(|t| values::pg_type(*t)).collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Arc<Stmt>,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(values::fields(&stmt.columns, |i| {
            column_format.is_some_and(|f| is_binary(f, i))
        }))
    }
}

/// What pgwire does not check in a Bind message (PostgreSQL does): more parameters than the
/// statement takes (08P01), per-parameter format codes that do not match the parameters (08P01)
/// or are neither text nor binary (22023), and result format codes likewise (22023).
fn check_bind(portal: &Portal<Arc<Stmt>>) -> Result<(), Error> {
    let stmt = &portal.statement;
    let takes = stmt.statement.params.len().max(stmt.parameter_types.len());
    let given = portal.parameters.len();
    if given > takes {
        return Err(Error::new(
            SqlState::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {given} parameters, but prepared statement \"{}\" requires {takes}",
                stmt.id
            ),
        ));
    }
    if let Format::Individual(v) = &portal.parameter_format {
        if v.len() != given {
            return Err(Error::new(
                SqlState::PROTOCOL_VIOLATION,
                format!(
                    "bind message has {} parameter formats but {given} parameters",
                    v.len()
                ),
            ));
        }
    }
    for f in [&portal.parameter_format, &portal.result_column_format] {
        if let Format::Individual(v) = f {
            if let Some(c) = v.iter().find(|c| !(0..=1).contains(*c)) {
                return Err(Error::new(
                    SqlState::INVALID_PARAMETER_VALUE,
                    format!("unsupported format code: {c}"),
                ));
            }
        }
    }
    Ok(())
}

fn decode_params(portal: &Portal<Arc<Stmt>>) -> Result<Vec<Value>, Error> {
    check_bind(portal)?;
    let stmt = &portal.statement;
    portal
        .parameters
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let client_oid = stmt
                .parameter_types
                .get(i)
                .and_then(|t| t.as_ref())
                .map(|t| t.oid())
                .unwrap_or(0);
            values::decode_param(
                p.as_deref(),
                is_binary(&portal.parameter_format, i),
                client_oid,
                stmt.statement.params.get(i).copied(),
            )
        })
        .collect()
}

/// Splits a tag like `INSERT 0 5` into (`INSERT 0`, 5) for pgwire, which appends the row count.
fn split_tag(tag: &str) -> String {
    match tag.rsplit_once(' ') {
        Some((head, n)) if n.parse::<u64>().is_ok() => head.to_string(),
        _ => tag.to_string(),
    }
}

/// Largest row limit of one Execute (see `on_execute`).
pub const MAX_ROWS_PER_EXECUTE: i32 = 65_536;

#[async_trait]
impl ExtendedQueryHandler for Backend {
    type Statement = Arc<Stmt>;
    type QueryParser = AugurParser;

    fn query_parser(&self) -> Arc<Self::QueryParser> {
        self.parser.clone()
    }

    async fn on_parse<C>(
        &self,
        client: &mut C,
        message: pgwire::messages::extendedquery::Parse,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.shared.shutting_down.load(Ordering::Acquire) {
            return Err(admin_shutdown());
        }
        let name = message.name.clone().unwrap_or_else(|| DEFAULT_NAME.to_owned());
        // A named statement must be closed before its name is reused (pgwire would replace it).
        if name != DEFAULT_NAME && client.portal_store().get_statement(&name).is_some() {
            conn(&*client, &self.shared).fail_block();
            return Err(user_error(&Error::new(
                SqlState("42P05"),
                format!("prepared statement \"{name}\" already exists"),
            )));
        }
        match StoredStatement::parse(client, &message, self.query_parser()).await? {
            Some(stmt) => client.portal_store().put_statement(Arc::new(stmt)),
            None => client.portal_store().put_empty_statement(&name),
        }
        // Buffered, not flushed: the client's Sync (or Flush) sends it with the rest, as
        // PostgreSQL does; one write per round trip instead of one per message.
        client
            .feed(PgWireBackendMessage::ParseComplete(
                pgwire::messages::extendedquery::ParseComplete::new(),
            ))
            .await?;
        Ok(())
    }

    /// pgwire's Bind, with BindComplete buffered until Sync/Flush instead of flushed at once
    /// (pgbench -M prepared: one fewer write and client wake-up per transaction).
    async fn on_bind<C>(
        &self,
        client: &mut C,
        message: pgwire::messages::extendedquery::Bind,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(statement)) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(user_error(&Error::new(
                        SqlState::PROTOCOL_VIOLATION,
                        format!(
                            "bind message supplies {} parameters, but prepared statement \"{statement_name}\" requires 0",
                            message.parameters.len()
                        ),
                    )));
                }
                client.portal_store().put_empty_portal(portal_name);
            }
            None => return Err(PgWireError::StatementNotFound(statement_name.to_owned())),
        }
        client
            .feed(PgWireBackendMessage::BindComplete(
                pgwire::messages::extendedquery::BindComplete::new(),
            ))
            .await?;
        Ok(())
    }

    /// Execute's row limit as PostgreSQL reads it (zero or negative: every row), bounded:
    /// pgwire 0.42.1 preallocates room for `max_rows` rows before fetching, so a client's
    /// `max_rows` of 2^30 made the server allocate 40 GiB and abort (found by fuzzing). Above
    /// [`MAX_ROWS_PER_EXECUTE`] the portal is suspended after that many rows (PortalSuspended);
    /// the client's next Execute continues it, as with any row limit.
    async fn on_execute<C>(&self, client: &mut C, mut message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        message.max_rows = message.max_rows.clamp(0, MAX_ROWS_PER_EXECUTE);
        // The reply waits in the write buffer for Sync (src/server/buffered.rs), except a
        // CopyInResponse: the client sends its data only once it has seen that, before any Sync.
        self._on_execute(&mut Buffered(client), message).await?;
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.flush().await?;
        }
        Ok(())
    }

    /// pgwire's Describe, its reply buffered until Sync/Flush like Bind's and Execute's.
    async fn on_describe<C>(
        &self,
        client: &mut C,
        message: pgwire::messages::extendedquery::Describe,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self._on_describe(&mut Buffered(client), message).await
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.portal_store().rm_portal(DEFAULT_NAME);
        let status = conn(&*client, &self.shared).status();
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status)))
            .await?;
        client.flush().await?;
        Ok(())
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Arc<Stmt>>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.shared.shutting_down.load(Ordering::Acquire) {
            return Err(admin_shutdown());
        }
        let conn = conn(&*client, &self.shared);
        let stmt = portal.statement.statement.clone();
        let params = decode_params(portal).map_err(|e| {
            if let Some(m) = &self.shared.metrics {
                m.error(e.sqlstate().code());
            }
            conn.fail_block();
            user_error(&e)
        })?;
        let before = conn.tx_status();
        let t0 = self.shared.metrics.as_ref().map(|_| Instant::now());
        let outcome = {
            let _request = conn.cancel.begin();
            self.run_extended(&conn, &stmt, &params)
        };
        if let (Some(m), Some(t0)) = (&self.shared.metrics, t0) {
            let code = match &outcome {
                Err(PgWireError::UserError(info)) => Some(info.code.as_str()),
                Err(_) => Some("XX000"),
                Ok(_) => None,
            };
            m.statement(Kind::of(&stmt.keyword), before, t0.elapsed(), code);
        }
        let outcome = outcome?;
        if let Some(w) = tx_warning(&stmt.keyword, before) {
            send_notice(client, w).await?;
        }
        Ok(match outcome {
            Outcome::Rows { tag, columns, rows } => {
                let fmt = &portal.result_column_format;
                let schema = Arc::new(values::fields(&columns, |i| is_binary(fmt, i)));
                let encoded: Vec<PgWireResult<DataRow>> = rows
                    .iter()
                    .map(|r| encode_row(r, &columns, |i| is_binary(fmt, i)).map_err(|e| user_error(&e)))
                    .collect();
                let mut resp = QueryResponse::new(schema, stream::iter(encoded));
                resp.set_command_tag(&split_tag(&tag));
                Response::Query(resp)
            }
            Outcome::Command(tag) => Response::Execution(Tag::new(&tag)),
            Outcome::CopyIn(st) => {
                let n = st.columns.len();
                *conn.copy.lock() = Some(PendingCopy {
                    state: st,
                    buf: Vec::new(),
                });
                Response::CopyIn(CopyResponse::new(0, n, stream::empty()))
            }
        })
    }
}

#[async_trait]
impl CopyHandler for Backend {
    async fn on_copy_data<C>(&self, client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let conn = conn(&*client, &self.shared);
        let mut g = conn.copy.lock();
        let Some(p) = g.as_mut() else {
            return Ok(());
        };
        if p.buf.len() + copy_data.data.len() > self.shared.max_copy_bytes {
            *g = None;
            return Err(user_error(&Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "COPY data exceeds the server's limit of {} bytes per statement",
                    self.shared.max_copy_bytes
                ),
            )));
        }
        p.buf.extend_from_slice(&copy_data.data);
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let conn = conn(&*client, &self.shared);
        let Some(p) = conn.copy.lock().take() else {
            return Ok(());
        };
        let r = {
            let _busy = BusyGuard::new(&self.shared.busy);
            blocking(|| conn.session.lock().copy_in(&p.state, &p.buf))
        };
        client.set_transaction_status(conn.status());
        let n = r.map_err(|e| user_error(&e))?;
        client
            .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                format!("COPY {n}"),
            )))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let conn = conn(&*client, &self.shared);
        conn.copy.lock().take();
        client.set_transaction_status(conn.status());
        PgWireError::UserError(Box::new(ErrorInfo::new(
            SEVERITY_ERROR.to_owned(),
            "57014".to_owned(),
            format!("COPY from stdin failed: {}", fail.message),
        )))
    }
}

/// ParameterStatus values sent after authentication.
pub struct Params {
    shared: Arc<Shared>,
}

impl ServerParameterProvider for Params {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let md = client.metadata();
        let mut m: HashMap<String, String> = self.shared.base_params.iter().cloned().collect();
        m.insert("server_version".into(), server_version());
        if let Some(u) = md.get(METADATA_USER) {
            m.insert("session_authorization".into(), u.clone());
        }
        if let Some(a) = md.get(METADATA_APPLICATION_NAME) {
            m.insert("application_name".into(), a.clone());
        }
        m.insert("client_encoding".into(), "UTF8".into());
        m.insert("default_transaction_read_only".into(), "off".into());
        m.insert("in_hot_standby".into(), "off".into());
        Some(m)
    }
}

/// Trust (no password) or SCRAM-SHA-256.
pub struct AugurStartup {
    params: Arc<Params>,
    sasl: Option<SASLAuthStartupHandler<Params>>,
    /// Process ids and secret keys (BackendKeyData), for both paths.
    pids: Arc<KeyGenerator>,
}

#[async_trait]
impl StartupHandler for AugurStartup {
    async fn on_startup<C>(&self, client: &mut C, message: PgWireFrontendMessage) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if let PgWireFrontendMessage::Startup(ref s) = message {
            if let Err(e) = check_startup(s) {
                // FATAL: send it and close (pgwire would go on with the connection).
                if let PgWireError::UserError(info) = e {
                    client
                        .send(PgWireBackendMessage::ErrorResponse((*info).into()))
                        .await?;
                }
                let _ = client.close().await;
                return Err(PgWireError::IoError(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "startup packet without a user name",
                )));
            }
        }
        if let Some(sasl) = &self.sasl {
            return sasl.on_startup(client, message).await;
        }
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            let (pid, key) = self.pids.generate(&*client);
            client.set_pid_and_secret_key(pid, key);
            finish_authentication(client, self.params.as_ref()).await?;
        }
        Ok(())
    }
}

fn check_startup(s: &Startup) -> PgWireResult<()> {
    if !s.parameters.contains_key(METADATA_USER) {
        return Err(PgWireError::UserError(Box::new(ErrorInfo::new(
            SEVERITY_FATAL.to_owned(),
            "28000".to_owned(),
            "no PostgreSQL user name specified in startup packet".to_owned(),
        ))));
    }
    Ok(())
}

/// Everything a connection needs; cloned (cheaply) for each one.
#[derive(Clone)]
pub struct Handlers {
    backend: Arc<Backend>,
    startup: Arc<AugurStartup>,
    cancels: Arc<Registry>,
}

impl Handlers {
    /// `scram`: a configured SCRAM-SHA-256 authenticator; None: trust.
    pub fn new(shared: Arc<Shared>, scram: Option<pgwire::api::auth::sasl::scram::ScramAuth>) -> Handlers {
        let params = Arc::new(Params {
            shared: shared.clone(),
        });
        let pids = Arc::new(KeyGenerator {
            shared: shared.clone(),
        });
        let sasl = scram.map(|s| {
            SASLAuthStartupHandler::new(params.clone())
                .with_scram(s)
                .with_pid_secret_key_generator(pids.clone())
        });
        Handlers {
            cancels: shared.cancels.clone(),
            backend: Arc::new(Backend::new(shared)),
            startup: Arc::new(AugurStartup { params, sasl, pids }),
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.backend.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.backend.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.backend.clone()
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.cancels.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_tags() {
        assert_eq!(leading_keyword("  -- c\n begin;"), "BEGIN");
        assert_eq!(leading_keyword("/* x */COMMIT"), "COMMIT");
        assert_eq!(split_tag("INSERT 0 5"), "INSERT 0");
        assert_eq!(split_tag("SELECT 3"), "SELECT");
        assert_eq!(split_tag("SHOW"), "SHOW");
    }
}
