//! A client whose `flush` waits for the next Sync.
//!
//! pgwire's Describe and Execute handlers `send` their last message (flush included), so a
//! `pgbench -M prepared` transaction (Bind, Describe, Execute, Sync) cost three socket writes:
//! BindComplete + RowDescription, DataRow + CommandComplete, ReadyForQuery, and woke the client
//! three times. PostgreSQL writes once, at Sync. Wrapping the client in [`Buffered`] where those
//! handlers still run (a statement's Describe, a suspended portal's Execute; `extended.rs` writes
//! the rest itself, without flushing) turns their flushes into no-ops; the messages stay in the
//! connection's write buffer until Sync (or a Flush message, or an error reply) flushes it.
//! Large results still stream: the framed writer itself writes out its buffer when it passes
//! its high-water mark, which does not go through this flush.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::sink::Sink;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, ProtocolVersion};
use pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer;

pub(crate) struct Buffered<'a, C>(pub &'a mut C);

impl<C> Sink<PgWireBackendMessage> for Buffered<'_, C>
where
    C: Sink<PgWireBackendMessage> + Unpin,
{
    type Error = C::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut *self.0).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> Result<(), Self::Error> {
        Pin::new(&mut *self.0).start_send(item)
    }

    /// Deferred: the Sync that ends this exchange flushes.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut *self.0).poll_close(cx)
    }
}

impl<C: ClientInfo> ClientInfo for Buffered<'_, C> {
    fn socket_addr(&self) -> SocketAddr {
        self.0.socket_addr()
    }
    fn is_secure(&self) -> bool {
        self.0.is_secure()
    }
    fn protocol_version(&self) -> ProtocolVersion {
        self.0.protocol_version()
    }
    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.0.set_protocol_version(version)
    }
    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.0.pid_and_secret_key()
    }
    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.0.set_pid_and_secret_key(pid, secret_key)
    }
    fn state(&self) -> PgWireConnectionState {
        self.0.state()
    }
    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.0.set_state(new_state)
    }
    fn transaction_status(&self) -> TransactionStatus {
        self.0.transaction_status()
    }
    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.0.set_transaction_status(new_status)
    }
    fn metadata(&self) -> &HashMap<String, String> {
        self.0.metadata()
    }
    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.0.metadata_mut()
    }
    fn session_extensions(&self) -> &pgwire::api::SessionExtensions {
        self.0.session_extensions()
    }
    fn sni_server_name(&self) -> Option<&str> {
        self.0.sni_server_name()
    }
    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        self.0.client_certificates()
    }
}

impl<C: ClientPortalStore> ClientPortalStore for Buffered<'_, C> {
    type PortalStore = C::PortalStore;
    fn portal_store(&self) -> &Self::PortalStore {
        self.0.portal_store()
    }
}
