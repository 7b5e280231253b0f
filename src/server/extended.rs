//! The extended query protocol: Parse (the session prepares and plans), Bind (parameters
//! decoded in the statement's types), Describe, Execute and Sync, replies buffered until Sync.

use std::fmt::Debug;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use futures::sink::{Sink, SinkExt};
use futures::stream;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{CopyResponse, QueryResponse, Response, Tag};
use pgwire::api::stmt::StoredStatement;
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use pgwire::messages::data::DataRow;
use pgwire::messages::extendedquery::{Execute, Sync as PgSync};
use pgwire::messages::response::ReadyForQuery;
use pgwire::messages::PgWireBackendMessage;

use super::buffered::Buffered;
use super::catalog;
use super::conn::{blocking, conn, BusyGuard, Conn, PendingCopy};
use super::handler::Backend;
use super::metrics::Kind;
use super::reply::{admin_shutdown, send_notice, tx_warning, user_error, Outcome};
use super::statement::{AugurParser, Stmt, StmtKind};
use super::values::{self, encode_row, is_binary};
use crate::error::{Error, SqlState};
use crate::types::Value;

impl Backend {
    /// Executes an extended-protocol statement.
    pub(super) fn run_extended(&self, conn: &Conn, stmt: &Stmt, params: &[Value]) -> PgWireResult<Outcome> {
        Ok(match &stmt.kind {
            StmtKind::Catalog(sql) => match catalog::answer(sql, &self.shared.db) {
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
            Outcome::CopyOut {
                columns,
                header,
                mut data,
                ..
            } => {
                // pgwire counts the CopyData messages for the `COPY n` tag: the header line
                // goes with the first row (no message boundary means anything in COPY data).
                if header && data.len() > 1 {
                    let first = data.remove(1);
                    data[0].extend_from_slice(&first);
                }
                let chunks: Vec<PgWireResult<CopyData>> =
                    data.into_iter().map(|d| Ok(CopyData::new(d.into()))).collect();
                Response::CopyOut(CopyResponse::new(0, columns, stream::iter(chunks)))
            }
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
