//! What a statement returns to its caller (the embedded API or the server): rows and a command
//! tag, a COPY to feed, or the data of a COPY TO; and the transaction status ReadyForQuery reports.

use crate::types::{DataType, Row};

/// Transaction state, as the wire protocol's ReadyForQuery reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxStatus {
    /// Not in a transaction block ('I').
    Idle,
    /// In a transaction block ('T').
    InTransaction,
    /// In a failed transaction block ('E'): statements fail with 25P02 until ROLLBACK.
    Failed,
}

/// The result of one statement.
#[derive(Clone, Debug)]
pub enum StatementResult {
    /// A statement that returns rows (SELECT, SHOW, EXPLAIN, ... RETURNING).
    Query {
        tag: String,
        columns: Vec<(String, DataType)>,
        rows: Vec<Row>,
    },
    /// A statement without a result set.
    Command { tag: String },
    /// `COPY ... FROM STDIN`: send the data with [`crate::sql::Session::copy_in`].
    CopyIn(CopyState),
    /// `COPY ... TO STDOUT`: the data, one line (a header, then each row) per chunk, with its
    /// `COPY n` tag.
    CopyOut {
        tag: String,
        columns: usize,
        header: bool,
        data: Vec<Vec<u8>>,
    },
}

impl StatementResult {
    /// The command tag (`SELECT 3`, `INSERT 0 1`, `BEGIN`, ...).
    pub fn tag(&self) -> &str {
        match self {
            StatementResult::Query { tag, .. }
            | StatementResult::Command { tag }
            | StatementResult::CopyOut { tag, .. } => tag,
            StatementResult::CopyIn(_) => "COPY",
        }
    }
    pub fn columns(&self) -> &[(String, DataType)] {
        match self {
            StatementResult::Query { columns, .. } => columns,
            _ => &[],
        }
    }
    pub fn rows(&self) -> &[Row] {
        match self {
            StatementResult::Query { rows, .. } => rows,
            _ => &[],
        }
    }
    /// Rows affected or returned, from the tag.
    pub fn count(&self) -> u64 {
        self.tag()
            .rsplit(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }
}

/// What `COPY ... FROM STDIN` needs to parse the data the client sends.
#[derive(Clone, Debug)]
pub struct CopyState {
    pub table: String,
    /// Table columns, in the order of the data's fields.
    pub columns: Vec<usize>,
    pub csv: bool,
    pub header: bool,
    pub delimiter: char,
    pub null: String,
    pub quote: char,
    pub escape: char,
}
