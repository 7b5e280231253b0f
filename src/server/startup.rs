//! Start-up: the startup packet, trust or SCRAM-SHA-256 authentication, ParameterStatus values,
//! and the connection's process id and secret key (BackendKeyData) entered for cancel requests.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::sink::{Sink, SinkExt};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator, METADATA_APPLICATION_NAME, METADATA_USER};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_FATAL};
use pgwire::messages::startup::{SecretKey, Startup};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, ProtocolVersion};

use super::conn::{conn, server_version, Shared};

/// ParameterStatus values sent after authentication.
pub struct Params {
    pub(super) shared: Arc<Shared>,
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
        // The session's zone: the startup packet's TimeZone, if it sent one.
        let zone = conn(client, &self.shared)
            .session
            .lock()
            .setting("timezone")
            .map(str::to_string);
        if let Some(z) = zone {
            m.insert("TimeZone".into(), z);
        }
        m.insert("default_transaction_read_only".into(), "off".into());
        m.insert("in_hot_standby".into(), "off".into());
        Some(m)
    }
}

/// Trust (no password) or SCRAM-SHA-256.
pub struct AugurStartup {
    pub(super) params: Arc<Params>,
    pub(super) sasl: Option<SASLAuthStartupHandler<Params>>,
    /// Process ids and secret keys (BackendKeyData), for both paths.
    pub(super) pids: Arc<KeyGenerator>,
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
                    "startup packet refused",
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
    // A TimeZone PostgreSQL does not know ends the connection (FATAL 22023), as there.
    if let Some(tz) = super::report::time_zone_parameter(s.parameters.iter()) {
        if let Err(e) = crate::sql::parse_time_zone(&tz) {
            let mut info = super::reply::error_info(&e);
            info.severity = SEVERITY_FATAL.to_owned();
            return Err(PgWireError::UserError(Box::new(info)));
        }
    }
    Ok(())
}

/// pgwire calls this once per connection, when authentication succeeded and just before
/// BackendKeyData is sent (trust and SCRAM alike): creates the connection's session, draws its
/// secret (4 random bytes for protocol 3.0, 32 for 3.2, from the thread-local CSPRNG, seeded
/// by the OS) and registers it.
pub struct KeyGenerator {
    pub shared: Arc<Shared>,
}

impl PidSecretKeyGenerator for KeyGenerator {
    fn generate(&self, client: &dyn ClientInfo) -> (i32, SecretKey) {
        let secret = match client.protocol_version() {
            ProtocolVersion::PROTOCOL3_0 => SecretKey::I32(rand::random::<i32>()),
            _ => SecretKey::Bytes(Bytes::from(rand::random::<[u8; 32]>().to_vec())),
        };
        let c = conn(client, &self.shared);
        let registration = self.shared.cancels.register(secret.to_bytes(), c.cancel_handle());
        let pid = registration.pid();
        c.set_backend_pid(pid);
        client.session_extensions().insert(registration);
        (pid, secret)
    }
}
