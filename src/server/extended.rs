//! The extended query protocol: Parse (the session prepares and plans), Bind (parameters
//! decoded in the statement's types), Describe, Execute and Sync, replies buffered until Sync.

use std::fmt::Debug;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::sink::{Sink, SinkExt};
use futures::stream;
use pgwire::api::copy::{send_copy_in_response, send_copy_out_response};
use pgwire::api::portal::{Format, Portal, PortalExecutionState};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{CopyResponse, QueryResponse, Response, Tag};
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use pgwire::messages::data::{DataRow, NoData};
use pgwire::messages::extendedquery::{
    Close, CloseComplete, Execute, Sync as PgSync, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{CommandComplete, ReadyForQuery};
use pgwire::messages::PgWireBackendMessage;

use super::buffered::Buffered;
use super::conn::{blocking, conn, BusyGuard, Conn, PendingCopy};
use super::handler::Backend;
use super::metrics::Kind;
use super::reply::{admin_shutdown, send_notice, tx_warning, user_error, Outcome};
use super::report::end_request;
use super::statement::{AugurParser, Stmt, StmtKind};
use super::values::{self, encode_row, is_binary};
use crate::error::{Error, SqlState};
use crate::sql::CopyState;
use crate::types::session_zone;
use crate::types::zone::Zone;
use crate::types::{DataType, Row, Value};

impl Backend {
    /// Executes an extended-protocol statement.
    pub(super) fn run_extended(&self, conn: &Conn, stmt: &Stmt, params: &[Value]) -> PgWireResult<Outcome> {
        Ok(match &stmt.kind {
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
        conn(&*client, &self.shared).parsed(&name);
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
    /// `MAX_ROWS_PER_EXECUTE` the portal is suspended after that many rows (PortalSuspended);
    /// the client's next Execute continues it, as with any row limit.
    async fn on_execute<C>(&self, client: &mut C, mut message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        message.max_rows = message.max_rows.clamp(0, MAX_ROWS_PER_EXECUTE);
        if let Some(portal) = fresh_portal(&*client, &message) {
            return self.execute_fresh(client, &portal, message).await;
        }
        // The reply waits in the write buffer for Sync (src/server/buffered.rs), except a
        // CopyInResponse: the client sends its data only once it has seen that, before any Sync.
        self._on_execute(&mut Buffered(client), message).await?;
        if matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            client.flush().await?;
        }
        Ok(())
    }

    /// Describe, its reply buffered until Sync/Flush like Bind's and Execute's. A portal's
    /// RowDescription (sent for every execution of a prepared statement by libpq, pgbench -M
    /// prepared included) is built straight from the statement's columns; a statement's
    /// (once per Parse) goes through pgwire, which merges the client's parameter types with
    /// the inferred ones.
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
        if message.target_type == TARGET_TYPE_BYTE_PORTAL {
            let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
            if let Some(Entry::Value(portal)) = client.portal_store().get_portal(name) {
                let columns = &portal.statement.statement.columns;
                let reply = if columns.is_empty() {
                    PgWireBackendMessage::NoData(NoData::new())
                } else {
                    let fmt = &portal.result_column_format;
                    PgWireBackendMessage::RowDescription(values::row_description(columns, |i| {
                        is_binary(fmt, i)
                    }))
                };
                client.feed(reply).await?;
                return Ok(());
            }
        }
        self._on_describe(&mut Buffered(client), message).await
    }

    /// Close, as pgwire's, and the statement's name forgotten for `DISCARD ALL`.
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                conn(&*client, &self.shared).closed(name);
                client.portal_store().rm_statement(name);
            }
            TARGET_TYPE_BYTE_PORTAL => client.portal_store().rm_portal(name),
            _ => {}
        }
        client
            .send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.portal_store().rm_portal(DEFAULT_NAME);
        let conn = conn(&*client, &self.shared);
        end_request(client, &conn).await?;
        let status = conn.status();
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
        // Reached only through pgwire's own execute path, which `on_execute` leaves to portals
        // that already ran; kept whole so that the trait's contract holds.
        let conn = conn(&*client, &self.shared);
        let outcome = self.run_portal(client, &conn, portal).await?;
        respond(outcome, portal, &conn)
    }
}

impl Backend {
    /// Runs a bound portal's statement: its parameters decoded in the statement's types, the
    /// statement executed (on this thread when short), metrics recorded, and PostgreSQL's
    /// warning for transaction control that does nothing sent as a notice.
    async fn run_portal<C>(
        &self,
        client: &mut C,
        conn: &Conn,
        portal: &Portal<Arc<Stmt>>,
    ) -> PgWireResult<Outcome>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if self.shared.shutting_down.load(Ordering::Acquire) {
            return Err(admin_shutdown());
        }
        let stmt = &portal.statement.statement;
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
            self.run_extended(conn, stmt, &params)
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
        Ok(outcome)
    }

    /// The first Execute of a portal: the statement runs and its reply goes straight into the
    /// connection's write buffer (flushed at Sync). pgwire's execute path would build a
    /// RowDescription schema nobody reads (Describe sent it), box the rows into a stream, move
    /// them into the portal behind an async lock and out again into a 256-row vector, and copy
    /// the command tag three times; for a point read that was most of the work between the
    /// engine and the socket. A result that reaches the client's row limit is left in the portal
    /// for pgwire's path (PortalSuspended, then the next Execute fetches on), and COPY goes
    /// through pgwire's COPY helpers as before.
    async fn execute_fresh<C>(
        &self,
        client: &mut C,
        portal: &Portal<Arc<Stmt>>,
        message: Execute,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Arc<Stmt>>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.set_state(PgWireConnectionState::QueryInProgress);
        let conn = conn(&*client, &self.shared);
        let outcome = self.run_portal(client, &conn, portal).await?;
        let limit = message.max_rows as usize;
        match outcome {
            // As PostgreSQL: a limit the rows reach suspends the portal (it cannot tell there are
            // no more), so only fewer rows than the limit complete here.
            Outcome::Rows { tag, columns, rows } if limit == 0 || rows.len() < limit => {
                let fmt = &portal.result_column_format;
                // Every row encoded before any is sent: an encoding error sends none of them,
                // as on pgwire's path.
                let encoded = session_zone::with(conn.zone(), || {
                    rows.iter()
                        .map(|r| encode_row(r, &columns, |i| is_binary(fmt, i)))
                        .collect::<Result<Vec<DataRow>, Error>>()
                })
                .map_err(|e| user_error(&e))?;
                for row in encoded {
                    client.feed(PgWireBackendMessage::DataRow(row)).await?;
                }
                // The statement's own tag (`SELECT 1`, `INSERT 0 1`, `SHOW`), as the simple
                // protocol and PostgreSQL send it: every row was sent.
                client
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                    .await?;
            }
            Outcome::Command(tag) => {
                client
                    .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(tag)))
                    .await?;
            }
            Outcome::Rows { tag, columns, rows } => {
                // The limit reached: the portal holds the rows, and pgwire's execute path (which
                // fetches from a started portal) sends the first batch and PortalSuspended.
                portal
                    .start(rows_response(&tag, &columns, &rows, portal, conn.zone()))
                    .await;
                client.set_state(PgWireConnectionState::ReadyForQuery);
                return self._on_execute(&mut Buffered(client), message).await;
            }
            Outcome::CopyOut {
                columns,
                header,
                data,
                ..
            } => {
                send_copy_out_response(&mut Buffered(client), copy_out_response(columns, header, data))
                    .await?;
            }
            Outcome::CopyIn(st) => {
                // Sent at once: the client sends its data only once it has seen this, before
                // any Sync.
                client.set_state(PgWireConnectionState::CopyInProgress(true));
                send_copy_in_response(client, copy_in_response(st, &conn)).await?;
                client.flush().await?;
                return Ok(());
            }
        }
        client.set_state(PgWireConnectionState::ReadyForQuery);
        Ok(())
    }
}

/// The portal an Execute names if it has not run yet on a connection ready for it: its
/// statement runs in [`Backend::execute_fresh`]. Anything else (no such portal, an empty one,
/// one a row limit suspended, a connection not ready) takes pgwire's execute path, which
/// answers those as before.
fn fresh_portal<C>(client: &C, message: &Execute) -> Option<Arc<Portal<Arc<Stmt>>>>
where
    C: ClientInfo + ClientPortalStore,
    C::PortalStore: PortalStore<Statement = Arc<Stmt>>,
{
    if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
        return None;
    }
    let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
    match client.portal_store().get_portal(name)? {
        Entry::Value(p)
            if p.state
                .try_lock()
                .is_ok_and(|s| matches!(*s, PortalExecutionState::Initial)) =>
        {
            Some(p)
        }
        _ => None,
    }
}

/// An outcome as the Response pgwire's execute path takes.
fn respond(outcome: Outcome, portal: &Portal<Arc<Stmt>>, conn: &Conn) -> PgWireResult<Response> {
    Ok(match outcome {
        Outcome::Rows { tag, columns, rows } => {
            Response::Query(rows_response(&tag, &columns, &rows, portal, conn.zone()))
        }
        Outcome::Command(tag) => Response::Execution(Tag::new(&tag)),
        Outcome::CopyOut {
            columns,
            header,
            data,
            ..
        } => Response::CopyOut(copy_out_response(columns, header, data)),
        Outcome::CopyIn(st) => Response::CopyIn(copy_in_response(st, conn)),
    })
}

/// Rows as pgwire's portals hold them, each encoded in the portal's result formats (an
/// encoding error is met when its row is fetched).
fn rows_response(
    tag: &str,
    columns: &[(String, DataType)],
    rows: &[Row],
    portal: &Portal<Arc<Stmt>>,
    zone: Zone,
) -> QueryResponse {
    let fmt = &portal.result_column_format;
    let schema = Arc::new(values::fields(columns, |i| is_binary(fmt, i)));
    let encoded: Vec<PgWireResult<DataRow>> = session_zone::with(zone, || {
        rows.iter()
            .map(|r| encode_row(r, columns, |i| is_binary(fmt, i)).map_err(|e| user_error(&e)))
            .collect()
    });
    let mut resp = QueryResponse::new(schema, stream::iter(encoded));
    resp.set_command_tag(&split_tag(tag));
    resp
}

/// COPY TO STDOUT's lines as CopyData messages.
fn copy_out_response(columns: usize, header: bool, mut data: Vec<Vec<u8>>) -> CopyResponse {
    // pgwire counts the CopyData messages for the `COPY n` tag: the header line goes with the
    // first row (no message boundary means anything in COPY data).
    if header && data.len() > 1 {
        let first = data.remove(1);
        data[0].extend_from_slice(&first);
    }
    let chunks: Vec<PgWireResult<CopyData>> = data.into_iter().map(|d| Ok(CopyData::new(d.into()))).collect();
    CopyResponse::new(0, columns, stream::iter(chunks))
}

/// COPY FROM STDIN: left pending on the connection until the client's CopyDone.
fn copy_in_response(st: CopyState, conn: &Conn) -> CopyResponse {
    let n = st.columns.len();
    *conn.copy.lock() = Some(PendingCopy {
        state: st,
        buf: Vec::new(),
    });
    CopyResponse::new(0, n, stream::empty())
}

#[cfg(test)]
mod tests {
    use super::split_tag;

    #[test]
    fn tags() {
        assert_eq!(split_tag("INSERT 0 5"), "INSERT 0");
        assert_eq!(split_tag("SELECT 3"), "SELECT");
        assert_eq!(split_tag("SHOW"), "SHOW");
    }
}
