//! The pgwire handler set: one `Backend` answers the simple (`simple.rs`) and extended
//! (`extended.rs`, with Parse in `statement.rs`) query protocols and COPY (`copy.rs`);
//! start-up is `startup.rs`, cancel requests `cancel.rs`.

use std::sync::Arc;

use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::PgWireServerHandlers;

use super::cancel::Registry;
use super::conn::Shared;
use super::startup::{AugurStartup, KeyGenerator, Params};
use super::statement::AugurParser;

/// The query handlers (simple, extended, COPY).
pub struct Backend {
    pub(super) shared: Arc<Shared>,
    pub(super) parser: Arc<AugurParser>,
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
}

/// Everything a connection needs; cloned (cheaply) for each one.
#[derive(Clone)]
pub struct Handlers {
    pub(super) backend: Arc<Backend>,
    pub(super) startup: Arc<AugurStartup>,
    pub(super) cancels: Arc<Registry>,
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
