//! One error type for the whole database. Every error carries a PostgreSQL SQLSTATE so the
//! embedded API, the SQL layer and the wire server report the same code for the same fault.

use std::fmt;

/// A PostgreSQL SQLSTATE code (five characters).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlState(pub &'static str);

impl SqlState {
    pub const SYNTAX_ERROR: SqlState = SqlState("42601");
    pub const UNDEFINED_TABLE: SqlState = SqlState("42P01");
    pub const UNDEFINED_COLUMN: SqlState = SqlState("42703");
    pub const UNDEFINED_OBJECT: SqlState = SqlState("42704");
    pub const UNDEFINED_FUNCTION: SqlState = SqlState("42883");
    pub const DUPLICATE_TABLE: SqlState = SqlState("42P07");
    pub const DUPLICATE_OBJECT: SqlState = SqlState("42710");
    pub const DUPLICATE_COLUMN: SqlState = SqlState("42701");
    pub const AMBIGUOUS_COLUMN: SqlState = SqlState("42702");
    pub const DATATYPE_MISMATCH: SqlState = SqlState("42804");
    pub const GROUPING_ERROR: SqlState = SqlState("42803");
    pub const INVALID_PRIMARY_KEY: SqlState = SqlState("42P16");
    pub const UNIQUE_VIOLATION: SqlState = SqlState("23505");
    pub const NOT_NULL_VIOLATION: SqlState = SqlState("23502");
    pub const INVALID_TEXT_REPRESENTATION: SqlState = SqlState("22P02");
    pub const NUMERIC_OUT_OF_RANGE: SqlState = SqlState("22003");
    pub const DIVISION_BY_ZERO: SqlState = SqlState("22012");
    pub const STRING_DATA_RIGHT_TRUNCATION: SqlState = SqlState("22001");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState("22023");
    pub const DATETIME_FIELD_OVERFLOW: SqlState = SqlState("22008");
    pub const CARDINALITY_VIOLATION: SqlState = SqlState("21000");
    pub const SERIALIZATION_FAILURE: SqlState = SqlState("40001");
    pub const DEADLOCK_DETECTED: SqlState = SqlState("40P01");
    pub const LOCK_NOT_AVAILABLE: SqlState = SqlState("55P03");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState("0A000");
    pub const ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25001");
    pub const NO_ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25P01");
    pub const IN_FAILED_SQL_TRANSACTION: SqlState = SqlState("25P02");
    pub const PROTOCOL_VIOLATION: SqlState = SqlState("08P01");
    pub const PROGRAM_LIMIT_EXCEEDED: SqlState = SqlState("54000");
    pub const QUERY_CANCELED: SqlState = SqlState("57014");
    pub const TOO_MANY_CONNECTIONS: SqlState = SqlState("53300");
    pub const INVALID_PASSWORD: SqlState = SqlState("28P01");
    pub const IO_ERROR: SqlState = SqlState("58030");
    /// `disk_full`: a write found no space left on the device; nothing of it was stored.
    pub const DISK_FULL: SqlState = SqlState("53100");
    /// `transaction_resolution_unknown`: a commit's durability step failed after its record
    /// may have reached the disk, so whether it committed is unknown.
    pub const TRANSACTION_RESOLUTION_UNKNOWN: SqlState = SqlState("08007");
    /// `crash_shutdown`: the storage engine restarted itself (after a write failure) while this
    /// transaction was open; the transaction is over and nothing it wrote was stored.
    pub const CRASH_SHUTDOWN: SqlState = SqlState("57P02");
    /// `cannot_connect_now`: the storage engine is restarting itself ("the database system is
    /// in recovery mode").
    pub const CANNOT_CONNECT_NOW: SqlState = SqlState("57P03");
    pub const DATA_CORRUPTED: SqlState = SqlState("XX001");
    pub const INTERNAL_ERROR: SqlState = SqlState("XX000");

    pub fn code(&self) -> &'static str {
        self.0
    }
}

impl fmt::Debug for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Every fault Augur reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A user-facing SQL-level error with its SQLSTATE.
    #[error("{message}")]
    Sql { state: SqlState, message: String },
    /// Storage failure (RocksDB or the file system) that left the data as it was: a read that
    /// failed, or a write refused before anything of it reached the write-ahead log.
    #[error("storage error: {0}")]
    Storage(String),
    /// A commit (or DDL statement) whose durability step failed after its record may have
    /// reached the disk: it may or may not have happened, and a later read after recovery
    /// tells which. SQLSTATE 08007; the server closes the connection after sending it, as
    /// PostgreSQL does when a WAL flush fails (it PANICs and every connection drops).
    #[error("transaction outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// Persisted bytes that cannot be decoded.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// A SQL error and where in the statement's input it arose (PostgreSQL's CONTEXT field,
    /// such as the line of a COPY's data); see [`Error::with_context`].
    #[error("{error}")]
    Context { error: Box<Error>, context: String },
    /// A SQL error with PostgreSQL's DETAIL (the values a constraint violation is about),
    /// sent as its own field; see [`Error::with_detail`].
    #[error("{error}")]
    Detail { error: Box<Error>, detail: String },
}

impl Error {
    pub fn new(state: SqlState, message: impl Into<String>) -> Self {
        Error::Sql {
            state,
            message: message.into(),
        }
    }

    /// The SQLSTATE this error is reported with.
    pub fn sqlstate(&self) -> SqlState {
        match self {
            Error::Sql { state, .. } => *state,
            Error::Storage(_) => SqlState::IO_ERROR,
            Error::OutcomeUnknown(_) => SqlState::TRANSACTION_RESOLUTION_UNKNOWN,
            Error::Corrupt(_) => SqlState::DATA_CORRUPTED,
            Error::Context { error, .. } | Error::Detail { error, .. } => error.sqlstate(),
        }
    }

    /// The error with PostgreSQL's DETAIL `detail` (`Key (k)=(1) already exists.`), which
    /// the server sends as the DETAIL field, apart from the message.
    pub fn with_detail(self, detail: impl Into<String>) -> Error {
        Error::Detail {
            error: Box::new(self),
            detail: detail.into(),
        }
    }

    /// The error's DETAIL, if it has one ([`Error::with_detail`]).
    pub fn detail(&self) -> Option<&str> {
        match self {
            Error::Detail { detail, .. } => Some(detail),
            Error::Context { error, .. } => error.detail(),
            _ => None,
        }
    }

    /// A SQL error with `context` saying where it arose (the client sees it as the CONTEXT
    /// field); other errors, and errors that already say where, are returned unchanged.
    pub fn with_context(self, context: impl Into<String>) -> Error {
        match self {
            e @ (Error::Sql { .. } | Error::Detail { .. }) => Error::Context {
                error: Box::new(e),
                context: context.into(),
            },
            e => e,
        }
    }

    /// Where the error arose, if it says ([`Error::with_context`]).
    pub fn context(&self) -> Option<&str> {
        match self {
            Error::Context { context, .. } => Some(context),
            Error::Detail { error, .. } => error.context(),
            _ => None,
        }
    }

    /// The commit this error answers may or may not have happened (SQLSTATE 08007).
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, Error::OutcomeUnknown(_))
    }

    /// Errors after which a server ends the connection (PostgreSQL's FATAL): an unknown commit
    /// outcome, so that a client that ignores the SQLSTATE still sees the same thing as a
    /// PostgreSQL client whose server PANICked mid-commit.
    pub fn ends_connection(&self) -> bool {
        self.is_outcome_unknown()
    }

    /// Serialization failures and deadlocks: running the transaction again may succeed.
    pub fn is_retryable(&self) -> bool {
        let s = self.sqlstate();
        s == SqlState::SERIALIZATION_FAILURE || s == SqlState::DEADLOCK_DETECTED
    }

    pub fn syntax(msg: impl Into<String>) -> Self {
        Self::new(SqlState::SYNTAX_ERROR, msg)
    }
    pub fn unsupported(msg: impl Into<String>) -> Self {
        Self::new(SqlState::FEATURE_NOT_SUPPORTED, msg)
    }
    pub fn undefined_table(name: &str) -> Self {
        Self::new(
            SqlState::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )
    }
    pub fn undefined_column(name: &str) -> Self {
        Self::new(
            SqlState::UNDEFINED_COLUMN,
            format!("column \"{name}\" does not exist"),
        )
    }
    pub fn invalid_text(msg: impl Into<String>) -> Self {
        Self::new(SqlState::INVALID_TEXT_REPRESENTATION, msg)
    }
    pub fn out_of_range(msg: impl Into<String>) -> Self {
        Self::new(SqlState::NUMERIC_OUT_OF_RANGE, msg)
    }
    pub fn mismatch(msg: impl Into<String>) -> Self {
        Self::new(SqlState::DATATYPE_MISMATCH, msg)
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        Self::new(SqlState::INTERNAL_ERROR, msg)
    }
    pub fn serialization() -> Self {
        Self::new(
            SqlState::SERIALIZATION_FAILURE,
            "could not serialize access due to concurrent update",
        )
    }
}

impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Self {
        if e.kind() == rocksdb::ErrorKind::Corruption {
            return Error::Corrupt(e.into_string());
        }
        let msg = e.into_string();
        if is_no_space(&msg) {
            return disk_full(&msg);
        }
        Error::Storage(msg)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        if e.raw_os_error() == Some(libc::ENOSPC) {
            return disk_full(&e.to_string());
        }
        Error::Storage(e.to_string())
    }
}

/// Whether a RocksDB status text reports a full device. RocksDB returns ENOSPC as an IOError
/// with subcode kNoSpace, whose text (`Status::ToString`, the only form the C API passes on)
/// reads "IO error: No space left on device..."; the POSIX file system builds it from
/// strerror(ENOSPC), which reads the same.
pub fn is_no_space(msg: &str) -> bool {
    msg.contains("No space left on device")
}

fn disk_full(msg: &str) -> Error {
    Error::new(
        SqlState::DISK_FULL,
        format!("could not write to the database: disk full ({msg}); writes resume once space is freed"),
    )
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
