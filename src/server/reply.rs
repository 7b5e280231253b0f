//! What the client sees of a statement: its outcome (rows, a command tag, a COPY to feed),
//! errors with their SQLSTATE, and PostgreSQL's warnings as notices.

use std::fmt::Debug;

use futures::sink::{Sink, SinkExt};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_ERROR, SEVERITY_FATAL, SEVERITY_WARNING};
use pgwire::messages::response::NoticeResponse;
use pgwire::messages::PgWireBackendMessage;

use crate::error::Error;
use crate::sql::{CopyState, StatementResult, TxStatus};
use crate::types::{DataType, Row};

/// An engine error as the client sees it (severity ERROR, the error's SQLSTATE).
pub fn error_info(e: &Error) -> ErrorInfo {
    let msg = match e {
        Error::Sql { message, .. } => message.clone(),
        other => other.to_string(),
    };
    let detail = e.detail().map(str::to_owned);
    let context = e.context().map(str::to_owned);
    // FATAL ends the connection (pgwire closes it after sending): see Error::ends_connection.
    let severity = if e.ends_connection() {
        SEVERITY_FATAL
    } else {
        SEVERITY_ERROR
    };
    let mut info = ErrorInfo::new(severity.to_owned(), e.sqlstate().code().to_owned(), msg);
    info.where_context = context;
    info.detail = detail;
    info
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
    /// COPY TO STDOUT's lines (a header line first when `header`).
    CopyOut {
        tag: String,
        columns: usize,
        header: bool,
        data: Vec<Vec<u8>>,
    },
}

impl From<StatementResult> for Outcome {
    fn from(r: StatementResult) -> Outcome {
        match r {
            StatementResult::Query { tag, columns, rows } => Outcome::Rows { tag, columns, rows },
            StatementResult::Command { tag } => Outcome::Command(tag),
            StatementResult::CopyIn(st) => Outcome::CopyIn(st),
            StatementResult::CopyOut {
                tag,
                columns,
                header,
                data,
            } => Outcome::CopyOut {
                tag,
                columns,
                header,
                data,
            },
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
