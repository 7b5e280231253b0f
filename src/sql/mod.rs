//! The SQL layer: sqlparser (PostgreSQL dialect) → binder/planner → executor over the engine.
//!
//! - [`Session`]: one per connection (transaction blocks, settings, prepared statements, COPY).
//! - [`Database::execute`] / [`Database::query`]: embedded convenience, one autocommit statement.
//!
//! See `docs/SQL.md` for the supported SQL, the planner's access paths and EXPLAIN output.

mod bind;
pub(crate) mod catalog;
mod checks;
mod dml;
mod exec;
pub mod expr;
pub mod lexer;
mod parse;
mod plan;
mod result;
mod session;
mod set_columns;

pub(crate) use checks::check_evaluator;
pub use lexer::nesting_estimate;
pub use parse::parse;
pub use result::{CopyState, StatementResult, TxStatus};
pub use session::{parse_time_zone, parse_timeout, Limits, Prepared, Session};

/// What `version()` returns: the PostgreSQL release whose behaviour Augur follows, and Augur's.
pub const VERSION_STRING: &str = "PostgreSQL 15.0 (Augur 0.1.0, ALEX learned index over RocksDB)";

use crate::engine::Database;
use crate::error::Result;
use crate::types::{Row, Value};

impl Database {
    /// Runs SQL statements (each in its own transaction) and returns the number of rows the
    /// last one affected (or returned). Parameters are `$1..$n`, bound as typed values.
    ///
    /// ```
    /// use augur::{Database, Options, Value};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = Database::open(dir.path(), Options::default()).unwrap();
    /// db.execute("CREATE TABLE t (id int PRIMARY KEY, name text)", &[]).unwrap();
    /// let n = db.execute("INSERT INTO t VALUES ($1, $2), (2, 'b')", &[Value::Int(1), "a".into()]).unwrap();
    /// assert_eq!(n, 2);
    /// let err = db.execute("INSERT INTO t VALUES (1, 'dup')", &[]).unwrap_err();
    /// assert_eq!(err.sqlstate().code(), "23505");
    /// ```
    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<u64> {
        let mut s = Session::new(self.clone());
        let out = s.execute(sql, params)?;
        Ok(out.last().map_or(0, |r| r.count()))
    }

    /// Runs a query in its own transaction and returns its rows.
    ///
    /// ```
    /// use augur::{Database, Options, Value};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = Database::open(dir.path(), Options::default()).unwrap();
    /// db.execute("CREATE TABLE t (id int PRIMARY KEY, score float8)", &[]).unwrap();
    /// db.execute("INSERT INTO t VALUES (1, 1.5), (2, 2.5), (3, NULL)", &[]).unwrap();
    /// let rows = db.query("SELECT id, score * 2 FROM t WHERE id >= $1 ORDER BY id", &[Value::Int(2)]).unwrap();
    /// assert_eq!(rows, vec![vec![Value::Int(2), Value::Float(5.0)], vec![Value::Int(3), Value::Null]]);
    /// ```
    pub fn query(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        let mut s = Session::new(self.clone());
        let out = s.execute(sql, params)?;
        Ok(out
            .into_iter()
            .last()
            .map(|r| r.rows().to_vec())
            .unwrap_or_default())
    }
}
