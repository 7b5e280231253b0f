//! The pgwire handler set: one `Backend` answers the simple (`simple.rs`) and extended
//! (`extended.rs`) query protocols and COPY (`copy.rs`); start-up is `startup.rs`. Here too:
//! errors, notices and statement outcomes as the client sees them.

use std::fmt::Debug;
use std::sync::Arc;

use futures::sink::{Sink, SinkExt};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::PgWireServerHandlers;
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_ERROR, SEVERITY_FATAL, SEVERITY_WARNING};
use pgwire::messages::response::NoticeResponse;
use pgwire::messages::PgWireBackendMessage;

use super::cancel::Registry;
use super::catalog::CatalogResult;
use super::conn::Shared;
use super::extended::AugurParser;
use super::startup::{AugurStartup, KeyGenerator, Params};
use crate::error::Error;
use crate::sql::{CopyState, StatementResult, TxStatus};
use crate::types::{DataType, Row};

/// An engine error as the client sees it (severity ERROR, the error's SQLSTATE).
pub fn error_info(e: &Error) -> ErrorInfo {
    let msg = match e {
        Error::Sql { message, .. } => message.clone(),
        other => other.to_string(),
    };
    ErrorInfo::new(SEVERITY_ERROR.to_owned(), e.sqlstate().code().to_owned(), msg)
}

pub(super) fn user_error(e: &Error) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

pub(super) fn admin_shutdown() -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        SEVERITY_FATAL.to_owned(),
        "57P01".to_owned(),
        "terminating connection due to administrator command".to_owned(),
    )))
}

/// Rewrites what clients send that the SQL parser does not take yet: pgbench's
/// `COPY ... WITH (FREEZE ON)` (FREEZE is a no-op in Augur).
pub(super) fn rewrite(sql: &str) -> std::borrow::Cow<'_, str> {
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
pub(super) fn tx_warning(keyword: &str, before: TxStatus) -> Option<ErrorInfo> {
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
pub(super) enum Outcome {
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

pub(super) async fn send_notice<C>(client: &mut C, info: ErrorInfo) -> PgWireResult<()>
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
