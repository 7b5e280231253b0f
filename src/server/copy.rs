//! COPY FROM STDIN over the wire: CopyData buffered up to `--max-copy-bytes`, loaded by the
//! session at CopyDone; CopyFail abandons it.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::sink::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::ClientInfo;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_ERROR};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;

use super::conn::{blocking, conn, BusyGuard};
use super::handler::Backend;
use super::reply::user_error;
use crate::error::{Error, SqlState};

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
