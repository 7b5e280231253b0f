//! Augur: a relational database whose primary-key index is an ALEX learned index over rows
//! persisted in RocksDB.
//!
//! Layers (one module each; see `docs/ARCHITECTURE.md`):
//! - [`index`]: ALEX and the ordered fallback index (no I/O).
//! - [`store`]: RocksDB column families, key layout, group commit.
//! - [`engine`]: tables, transactions, recovery, garbage collection.
//! - [`seam`]: what `sql` and `server` call on an engine (traits), and the engine they run on.
//! - [`types`] and [`error`]: values, encodings, SQLSTATE-carrying errors.
//! - [`sql`]: the SQL layer (parse, bind, plan, execute) behind [`Session`].
//! - `server` (cargo feature `server`, on by default): the PostgreSQL wire-protocol server.
//!   Without default features the crate is the embedded engine and SQL layer only.

pub mod engine;
pub mod error;
mod failpoint;
pub mod index;
pub mod seam;
#[cfg(feature = "server")]
pub mod server;
pub mod sql;
pub mod store;
pub mod types;

pub use engine::{
    ColumnDef, Database, ImageCheck, IndexDef, Isolation, KeyRange, Locked, Options, Savepoint, SequenceDef,
    Stats, Table, TableDef, Transaction,
};
pub use error::{Error, Result, SqlState};
pub use sql::{Session, StatementResult, TxStatus};
pub use types::{DataType, Decimal, Interval, Json, Key, Row, RowRef, Uuid, Value, ValueRef};
