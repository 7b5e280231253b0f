//! The simple query protocol: a query string split into statements, each answered by the
//! session, with one result (or error) per statement as PostgreSQL sends them.

use std::fmt::Debug;
use std::sync::atomic::Ordering;
use std::time::Instant;

use async_trait::async_trait;
use futures::sink::{Sink, SinkExt};
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::Response;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse, ReadyForQuery};
use pgwire::messages::PgWireBackendMessage;

use super::conn::{blocking, conn, BusyGuard, Conn, PendingCopy};
use super::handler::Backend;
use super::metrics::Kind;
use super::reply::{admin_shutdown, error_info, send_notice, tx_warning, user_error, Outcome};
use super::report::end_request;
use super::statement::rewrite;
use super::values::{encode_row, row_description};
use crate::error::Error;
use crate::sql::lexer::split_with_keywords;
use crate::types::session_zone;

/// Simple-query SELECTs up to this size are prepared first to see whether they are point reads.
const SIMPLE_PREPARE_MAX: usize = 4096;

impl Backend {
    /// error in a later statement means no statement runs (`Session::execute` does the same).
    pub(super) fn check_syntax(&self, conn: &Conn, stmts: &[&str]) -> Result<(), Error> {
        let session = conn.session.lock();
        for sql in stmts {
            session.check_syntax(&rewrite(sql))?;
        }
        Ok(())
    }

    /// Runs one statement of a simple query through the SQL layer.
    /// `keyword` is the statement's leading keyword (`sql::lexer::leading_keyword`).
    pub(super) fn run_simple(&self, conn: &Conn, sql: &str, keyword: &str) -> Result<Vec<Outcome>, Error> {
        let sql = &*rewrite(sql);
        let _busy = BusyGuard::new(&self.shared.busy);
        // A short statement (a primary-key point read or write, BEGIN, COMMIT: pgbench's
        // scripts) runs on this network thread, as in the extended protocol: handing the worker
        // over (block_in_place) costs more than the statement, and if it has to wait (row lock,
        // WAL fsync) the engine's wait hook hands the thread over then. Anything else, or any
        // error in preparing it, takes the ordinary path (which reports errors exactly as for
        // any simple query). Preparing and then executing a statement is what the extended
        // protocol does with it, so results are the same.
        //
        // SELECT / INSERT / UPDATE / DELETE reuse a plan made for the statement's shape (its
        // comparison literals lifted to parameters: `Session::prepare_cached`); anything else
        // empties that cache, since SET or DDL may change what a statement means. Transaction
        // control is prepared once per text (`Conn::prepare_tx_control`).
        let cacheable = matches!(keyword, "SELECT" | "UPDATE" | "INSERT" | "DELETE");
        if sql.len() <= SIMPLE_PREPARE_MAX
            && (cacheable || matches!(keyword, "BEGIN" | "START" | "COMMIT" | "END" | "ROLLBACK"))
        {
            let mut session = conn.session.lock();
            let prepared = if cacheable {
                session.prepare_cached(sql)
            } else {
                conn.prepare_tx_control(&mut session, sql)
                    .map(|p| (p, Vec::new()))
            };
            if let Some((p, params)) = prepared {
                let r = if p.is_short() {
                    session.execute_prepared(&p, &params)
                } else {
                    blocking(|| session.execute_prepared(&p, &params))
                };
                return Ok(vec![r?.into()]);
            }
        } else if !cacheable {
            conn.session.lock().clear_plan_cache();
        }
        let out = blocking(|| conn.session.lock().execute(sql, &[]))?;
        Ok(out.into_iter().map(Outcome::from).collect())
    }
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
        // The size limit applies to the whole query string, before splitting or
        // matching; an oversized one fails like any statement (and fails an open block).
        let size = conn.session.lock().check_statement_size(&query.query);
        let (mut stmts, oversized) = match size {
            Ok(()) => (split_with_keywords(&query.query), false),
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
            let texts: Vec<&str> = stmts.iter().map(|(s, _)| *s).collect();
            if let Err(e) = self.check_syntax(&conn, &texts) {
                // Nothing runs; inside a transaction block the error fails the block.
                conn.fail_block();
                client
                    .feed(PgWireBackendMessage::ErrorResponse(error_info(&e).into()))
                    .await?;
                stmts.clear();
            }
        }
        for (sql, keyword) in stmts {
            let before = conn.tx_status();
            let t0 = self.shared.metrics.as_ref().map(|_| Instant::now());
            let result = self.run_simple(&conn, sql, &keyword);
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
                        let zone = conn.zone();
                        client
                            .feed(PgWireBackendMessage::RowDescription(row_description(
                                &columns,
                                |_| false,
                            )))
                            .await?;
                        for r in &rows {
                            let dr = session_zone::with(zone, || encode_row(r, &columns, |_| false))
                                .map_err(|e| user_error(&e))?;
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
                    Outcome::CopyOut {
                        tag, columns, data, ..
                    } => {
                        let n = columns as i16;
                        client
                            .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                                0,
                                n,
                                vec![0; columns],
                            )))
                            .await?;
                        for line in data {
                            client
                                .feed(PgWireBackendMessage::CopyData(CopyData::new(line.into())))
                                .await?;
                        }
                        client
                            .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
                            .await?;
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
        end_request(client, &conn).await?;
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
