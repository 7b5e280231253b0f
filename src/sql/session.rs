//! Sessions: one per connection. Transaction state (autocommit, blocks, failed blocks),
//! settings, prepared statements, DDL, COPY.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sqlparser::ast as A;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use super::bind::{ident, object_name, parse_type, Binder};
use super::dml::{
    bind_default, bind_delete, bind_insert, bind_update, exec_delete, exec_insert, exec_update,
};
use super::dml::{DeletePlan, InsertPlan, UpdatePlan};
use super::exec::{run, Exec};
use super::expr::{assign, Ty};
use super::plan::{Access, Column, Plan};
use crate::engine::{
    canceled_by_user, CancelHandle, ColumnDef, Database, IndexDef, Interrupt, Isolation, Table, TableDef,
    Transaction,
};
use crate::error::{Error, Result, SqlState};
use crate::types::{DataType, Row, Value};

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
    /// `COPY ... FROM STDIN`: send the data with [`Session::copy_in`].
    CopyIn(CopyState),
}

impl StatementResult {
    /// The command tag (`SELECT 3`, `INSERT 0 1`, `BEGIN`, ...).
    pub fn tag(&self) -> &str {
        match self {
            StatementResult::Query { tag, .. } | StatementResult::Command { tag } => tag,
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

enum Planned {
    Query { plan: Plan, cols: Vec<Column> },
    Insert(InsertPlan),
    Update(UpdatePlan),
    Delete(DeletePlan),
}

struct PlannedStmt {
    planned: Planned,
    subplans: Vec<Plan>,
    params: Vec<Ty>,
    deps: Vec<(Arc<Table>, Arc<TableDef>)>,
}

impl PlannedStmt {
    fn valid(&self) -> bool {
        self.deps
            .iter()
            .all(|(t, d)| !t.is_dropped() && Arc::ptr_eq(&t.def(), d))
    }
}

/// A parsed (and, for queries and DML, planned) statement, for the extended protocol.
pub struct Prepared {
    pub sql: String,
    stmt: A::Statement,
    planned: Mutex<Option<Arc<PlannedStmt>>>,
    /// Parameter types inferred from the statement ($1 is `param_types[0]`).
    pub param_types: Vec<DataType>,
    /// Result columns (empty for statements that return no rows).
    pub columns: Vec<(String, DataType)>,
    /// [`nesting_estimate`] of the text: the stack executing it may need.
    nesting: usize,
}

impl Prepared {
    /// A statement that does a small, bounded amount of work: BEGIN / COMMIT / ROLLBACK, a
    /// primary-key point read, an UPDATE or DELETE of one primary key, or an INSERT of a few
    /// VALUES rows, without subqueries. It may still wait for a row lock or a WAL fsync; those
    /// waits go through the engine's wait hook ([`crate::store::wait`]), so a server can run
    /// such a statement on its network thread and hand the thread over only if it waits.
    pub fn is_short(&self) -> bool {
        if matches!(
            self.stmt,
            A::Statement::StartTransaction { .. }
                | A::Statement::Commit { .. }
                | A::Statement::Rollback { .. }
        ) {
            return true;
        }
        self.planned.lock().as_ref().is_some_and(|p| {
            p.valid()
                && p.subplans.is_empty()
                && match &p.planned {
                    Planned::Query { plan, .. } => plan.is_point_read(),
                    Planned::Update(u) => matches!(u.scan.access, Access::Point(_)),
                    Planned::Delete(d) => matches!(d.scan.access, Access::Point(_)),
                    Planned::Insert(i) => matches!(&i.source, Plan::Values(rows) if rows.len() <= 16),
                }
        })
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Prepared({:?})", self.sql)
    }
}

pub const VERSION_STRING: &str = "PostgreSQL 15.0 (Augur 0.1.0, ALEX learned index over RocksDB)";

fn default_settings() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("application_name", ""),
        ("client_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("default_transaction_isolation", "read committed"),
        ("extra_float_digits", "1"),
        ("integer_datetimes", "on"),
        ("intervalstyle", "postgres"),
        ("is_superuser", "on"),
        ("lock_timeout", "0"),
        ("lc_collate", "C"),
        ("lc_ctype", "C"),
        ("max_identifier_length", "63"),
        ("search_path", "\"$user\", public"),
        ("server_encoding", "UTF8"),
        ("server_version", "15.0"),
        ("server_version_num", "150000"),
        ("session_authorization", "augur"),
        ("standard_conforming_strings", "on"),
        ("statement_timeout", "0"),
        ("synchronous_commit", "on"),
        ("timezone", "UTC"),
        ("transaction_isolation", "read committed"),
        ("transaction_read_only", "off"),
    ] {
        m.insert(k.to_string(), v.to_string());
    }
    m
}

/// PostgreSQL's isolation level names. READ UNCOMMITTED behaves as READ COMMITTED (as in
/// PostgreSQL); SERIALIZABLE runs as snapshot isolation (PostgreSQL's REPEATABLE READ), which
/// allows write skew: docs/SQL.md says so.
fn isolation_named(v: &str) -> Result<Isolation> {
    match v.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
        "read committed" | "read uncommitted" => Ok(Isolation::ReadCommitted),
        "repeatable read" | "serializable" => Ok(Isolation::Snapshot),
        other => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"transaction_isolation\": \"{other}\""),
        )),
    }
}

fn isolation_name(i: Isolation) -> &'static str {
    match i {
        Isolation::ReadCommitted => "read committed",
        Isolation::Snapshot => "repeatable read",
    }
}

fn isolation_of_modes(modes: &[A::TransactionMode]) -> Option<Isolation> {
    modes.iter().rev().find_map(|m| match m {
        A::TransactionMode::IsolationLevel(l) => Some(match l {
            A::TransactionIsolationLevel::ReadUncommitted | A::TransactionIsolationLevel::ReadCommitted => {
                Isolation::ReadCommitted
            }
            _ => Isolation::Snapshot,
        }),
        _ => None,
    })
}

fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// The deepest expression nesting a statement may have (estimated from its tokens by
/// [`nesting_estimate`]); deeper statements fail with 54001 before they are parsed. The parser,
/// binder, executor and the syntax tree's destructor all recurse over an expression's depth, and
/// a chain like `1+1+...+1` is parsed without recursion into a tree as deep as the chain is long:
/// without this bound, 100000 terms overflow the thread's stack and abort the process.
pub const MAX_NESTING: usize = 1000;

fn too_complex(what: &str) -> Error {
    Error::new(
        SqlState("54001"),
        format!("statement is too complex: {what} (stack depth limit exceeded)"),
    )
}

/// An upper estimate of the expression depth of SQL text, without parsing it: along each path
/// of parentheses, the operators (`+ - * / % ^ < > = ! | & ~ # @ :` runs and the keywords AND,
/// OR, NOT, IS, LIKE, ILIKE, BETWEEN, CASE, WHEN, SELECT) in the enclosing comma-separated
/// segments, plus one per parenthesis. Quoted text and comments are skipped. O(n), no recursion.
pub fn nesting_estimate(sql: &str) -> usize {
    nesting(sql).0
}

/// [`nesting_estimate`], and the part of it that the parser itself recurses over: parentheses
/// and prefix operators (`- - 1`, `NOT NOT x`, `CASE WHEN ... CASE`), where an operand was due.
fn nesting(sql: &str) -> (usize, usize) {
    #[derive(Default)]
    struct Nest {
        /// Per open parenthesis: operators and prefix operators in its current segment.
        ops: Vec<(usize, usize)>,
        cur: usize,
        max: usize,
        rcur: usize,
        rmax: usize,
    }
    impl Nest {
        fn bump(&mut self, prefix: bool) {
            let p = usize::from(prefix);
            if let Some(top) = self.ops.last_mut() {
                top.0 += 1;
                top.1 += p;
            }
            self.cur += 1;
            self.rcur += p;
            self.max = self.max.max(self.cur);
            self.rmax = self.rmax.max(self.rcur);
        }
    }
    let b = sql.as_bytes();
    let mut st = Nest {
        ops: vec![(0, 0)],
        ..Nest::default()
    };
    let mut operand_due = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                // E'...' strings take backslash escapes.
                let escapes = c == b'\'' && i > 0 && (b[i - 1] == b'E' || b[i - 1] == b'e');
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if escapes && b[i] == b'\\' { 2 } else { 1 };
                }
                operand_due = false;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'$' => {
                // A dollar quote ($$...$$ or $tag$...$tag$); `$1` is a parameter.
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' && !b[i + 1].is_ascii_digit() {
                    let tag = &sql[i..=j];
                    i = match sql[j + 1..].find(tag) {
                        Some(k) => j + 1 + k + tag.len() - 1,
                        None => b.len(),
                    };
                } else {
                    i = j - 1;
                }
                operand_due = false;
            }
            b'(' => {
                st.bump(true);
                st.ops.push((0, 0));
                operand_due = true;
            }
            b')' => {
                if st.ops.len() > 1 {
                    let (n, p) = st.ops.pop().unwrap_or((0, 0));
                    // Back to where the parenthesis opened: the group is one operand.
                    if let Some(top) = st.ops.last_mut() {
                        top.0 = top.0.saturating_sub(1);
                        top.1 = top.1.saturating_sub(1);
                    }
                    st.cur = st.cur.saturating_sub(n + 1);
                    st.rcur = st.rcur.saturating_sub(p + 1);
                }
                operand_due = false;
            }
            b',' => {
                if let Some(top) = st.ops.last_mut() {
                    st.cur = st.cur.saturating_sub(top.0);
                    st.rcur = st.rcur.saturating_sub(top.1);
                    *top = (0, 0);
                }
                operand_due = true;
            }
            b';' => {
                st.ops = vec![(0, 0)];
                st.cur = 0;
                st.rcur = 0;
                operand_due = true;
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'<' | b'>' | b'=' | b'!' | b'|' | b'&' | b'~'
            | b'#' | b'@' | b':' => {
                while i + 1 < b.len() && b"+-*/%^<>=!|&~#@:".contains(&b[i + 1]) {
                    i += 1;
                }
                st.bump(operand_due);
                operand_due = true;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                let start = i;
                while i + 1 < b.len()
                    && (b[i + 1].is_ascii_alphanumeric() || b[i + 1] == b'_' || b[i + 1] == b'.')
                {
                    i += 1;
                }
                let w = &sql[start..=i];
                if [
                    "and", "or", "not", "is", "like", "ilike", "between", "case", "when", "select",
                ]
                .iter()
                .any(|k| w.eq_ignore_ascii_case(k))
                {
                    st.bump(operand_due);
                    operand_due = true;
                } else {
                    operand_due = false;
                }
            }
            c if c.is_ascii_whitespace() => {}
            _ => operand_due = false,
        }
        i += 1;
    }
    (st.max, st.rmax)
}

/// Runs `f` (a statement of estimated nesting `n`) with enough stack for the recursion of the
/// binder and executor over its depth: on a fresh stack segment when the current thread has
/// too little left (deep statements only; ordinary ones just check the remaining stack).
fn with_stack<T>(n: usize, f: impl FnOnce() -> T) -> T {
    let need = (256 << 10) + n * (16 << 10);
    stacker::maybe_grow(need, need * 2, f)
}

/// Parses SQL text (PostgreSQL dialect) into statements; syntax errors are 42601, statements
/// nested deeper than [`MAX_NESTING`] (or than the parser's recursion limit) 54001.
pub fn parse(sql: &str) -> Result<Vec<A::Statement>> {
    // Depth can only exceed the limit with at least that many bytes.
    if sql.len() > MAX_NESTING {
        let (n, recursive) = nesting(sql);
        if recursive > MAX_NESTING {
            // PostgreSQL's parser runs out of its stack on these: a syntax error.
            return Err(Error::syntax(format!(
                "syntax error: parentheses or prefix operators nested {recursive} deep (more than {MAX_NESTING})"
            )));
        }
        if n > MAX_NESTING {
            return Err(too_complex(&format!(
                "expression nesting of about {n} exceeds {MAX_NESTING}"
            )));
        }
    }
    let dialect = PostgreSqlDialect {};
    Parser::new(&dialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(|e| {
            if matches!(e, sqlparser::parser::ParserError::RecursionLimitExceeded) {
                return Error::syntax("syntax error: nesting exceeds the parser's recursion limit");
            }
            let msg = e.to_string();
            let msg = msg.strip_prefix("sql parser error: ").unwrap_or(&msg).to_string();
            Error::syntax(format!("syntax error: {msg}"))
        })
}

const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "as",
    "asc",
    "both",
    "case",
    "cast",
    "check",
    "column",
    "constraint",
    "create",
    "default",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "intersect",
    "into",
    "leading",
    "limit",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "primary",
    "references",
    "select",
    "table",
    "then",
    "to",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "when",
    "where",
    "with",
];

pub(crate) fn check_name(i: &A::Ident) -> Result<String> {
    let n = ident(i);
    if i.quote_style.is_none() && RESERVED.contains(&n.as_str()) {
        return Err(Error::syntax(format!("syntax error at or near \"{}\"", i.value)));
    }
    Ok(n)
}

/// Per-session resource limits (the server sets them from its flags; embedded sessions start
/// without any). Exceeding one fails the statement (54000, or 57014 for the timeout); the session
/// stays usable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Largest SQL text `execute`/`prepare` accept (54000 program_limit_exceeded).
    pub max_statement_bytes: Option<usize>,
    /// Most rows one statement may return (54000).
    pub max_result_rows: Option<u64>,
    /// Most bytes of values one statement may return, counted as their text/binary payload
    /// plus 8 per value (54000).
    pub max_result_bytes: Option<u64>,
    /// The default of `statement_timeout` (what `SET statement_timeout = DEFAULT` and
    /// `RESET statement_timeout` restore); None: no timeout.
    pub statement_timeout: Option<Duration>,
}

/// One client's session.
pub struct Session {
    db: Database,
    tx: Option<Transaction>,
    failed: bool,
    settings: BTreeMap<String, String>,
    /// `synchronous_commit = off`.
    async_commit: bool,
    limits: Limits,
    /// The current `statement_timeout` (None: 0, no timeout).
    timeout: Option<Duration>,
    /// `default_transaction_isolation`, parsed when set.
    default_isolation: Isolation,
    /// `lock_timeout` (None: 0, no limit), parsed when set.
    lock_timeout: Option<Duration>,
    /// Cancels this session's running statement (see [`Session::cancel_handle`]).
    cancel: CancelHandle,
    /// The server's BackendKeyData process id for this session (`pg_backend_pid()`).
    backend_pid: Option<i32>,
}

/// Parses a `statement_timeout` value as PostgreSQL does: an integer or decimal number of
/// milliseconds, or a number with a unit (`us`, `ms`, `s`, `min`, `h`, `d`); 0 disables it.
/// Anything else, or a value outside 0..=2147483647 ms, is 22023.
pub fn parse_timeout(v: &str) -> Result<Option<Duration>> {
    parse_time_setting("statement_timeout", v)
}

/// [`parse_timeout`] for the time setting `name` (`statement_timeout`, `lock_timeout`).
fn parse_time_setting(name: &str, v: &str) -> Result<Option<Duration>> {
    let v = v.trim().trim_matches('\'');
    let bad = || {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": \"{v}\""),
        )
    };
    let t = v.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let ms_per = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!(
                    "invalid value for parameter \"{name}\": \"{v}\"\nHINT: Valid units for \
                     this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\"."
                ),
            ))
        }
    };
    let ms = (n * ms_per).round();
    if !ms.is_finite() || !(0.0..=2147483647.0).contains(&ms) {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("{ms} ms is outside the valid range for parameter \"{name}\" (0 .. 2147483647)"),
        ));
    }
    Ok((ms > 0.0).then(|| Duration::from_millis(ms as u64)))
}

/// How `SHOW statement_timeout` prints a timeout: PostgreSQL's largest exact unit.
fn show_timeout(t: Option<Duration>) -> String {
    let Some(t) = t else { return "0".into() };
    let ms = t.as_millis();
    for (unit, per) in [("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)] {
        if ms % per == 0 {
            return format!("{}{unit}", ms / per);
        }
    }
    format!("{ms}ms")
}

/// Bytes a result takes, for `max_result_bytes`.
fn result_bytes(rows: &[Row]) -> u64 {
    let mut n = 0u64;
    for r in rows {
        for v in r {
            n += 8 + match v {
                Value::Text(s) => s.len() as u64,
                Value::Bytes(b) => b.len() as u64,
                _ => 8,
            };
        }
    }
    n
}

impl Session {
    pub fn new(db: Database) -> Session {
        Session {
            cancel: CancelHandle::new(&db),
            db,
            tx: None,
            failed: false,
            settings: default_settings(),
            async_commit: false,
            limits: Limits::default(),
            timeout: None,
            default_isolation: Isolation::ReadCommitted,
            lock_timeout: None,
            backend_pid: None,
        }
    }

    /// Sets what `pg_backend_pid()` returns (the server's BackendKeyData process id, the one a
    /// CancelRequest for this session names).
    pub fn set_backend_pid(&mut self, pid: i32) {
        self.backend_pid = Some(pid);
    }

    /// Sets the session's resource limits; `statement_timeout` is reset to the new default.
    pub fn set_limits(&mut self, limits: Limits) {
        self.timeout = limits.statement_timeout;
        self.settings
            .insert("statement_timeout".into(), show_timeout(self.timeout));
        self.limits = limits;
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// 54000 if `sql` is longer than `max_statement_bytes`.
    pub fn check_statement_size(&self, sql: &str) -> Result<()> {
        match self.limits.max_statement_bytes {
            Some(max) if sql.len() > max => Err(Error::new(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "statement of {} bytes exceeds the limit of {max} bytes (max_statement_bytes)",
                    sql.len()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// 54000 if a result is larger than `max_result_rows` / `max_result_bytes`.
    fn check_result(&self, r: &StatementResult) -> Result<()> {
        let rows = r.rows();
        if let Some(max) = self.limits.max_result_rows {
            if rows.len() as u64 > max {
                return Err(Error::new(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!(
                        "result of {} rows exceeds the limit of {max} rows (max_result_rows)",
                        rows.len()
                    ),
                ));
            }
        }
        if let Some(max) = self.limits.max_result_bytes {
            let n = result_bytes(rows);
            if n > max {
                return Err(Error::new(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!("result of {n} bytes exceeds the limit of {max} bytes (max_result_bytes)"),
                ));
            }
        }
        Ok(())
    }

    /// What stops a statement starting now: `statement_timeout`, a cancel request.
    fn interrupt(&self) -> Interrupt {
        self.cancel.interrupt(self.timeout.map(|d| Instant::now() + d))
    }

    /// A handle another thread (the server's cancel-request handler) uses to cancel what this
    /// session is running: `execute`, `execute_prepared` or `copy_in`, or a request the caller
    /// marks with [`CancelHandle::begin`]. The statement fails with 57014 "canceling statement
    /// due to user request" and the session stays usable (an open transaction block fails). A
    /// cancel while nothing runs does nothing.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    pub fn status(&self) -> TxStatus {
        match (&self.tx, self.failed) {
            (_, true) => TxStatus::Failed,
            (Some(_), false) => TxStatus::InTransaction,
            (None, false) => TxStatus::Idle,
        }
    }

    /// A setting's current value (`SHOW name`).
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings.get(&name.to_lowercase()).map(String::as_str)
    }

    /// Settings PostgreSQL reports to clients in ParameterStatus messages.
    pub fn reported_settings(&self) -> Vec<(String, String)> {
        [
            "application_name",
            "client_encoding",
            "datestyle",
            "integer_datetimes",
            "intervalstyle",
            "is_superuser",
            "server_encoding",
            "server_version",
            "session_authorization",
            "standard_conforming_strings",
            "timezone",
        ]
        .iter()
        .map(|k| {
            let name = match *k {
                "datestyle" => "DateStyle",
                "timezone" => "TimeZone",
                "intervalstyle" => "IntervalStyle",
                k => k,
            };
            (
                name.to_string(),
                self.settings.get(*k).cloned().unwrap_or_default(),
            )
        })
        .collect()
    }

    /// Executes every statement of `sql` (as psql sends them) with parameters `$1..$n`.
    /// Stops at the first error (earlier statements keep their effects) and after a
    /// `COPY ... FROM STDIN`.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<Vec<StatementResult>> {
        let _request = self.cancel.begin();
        let n = nesting_estimate(sql);
        with_stack(n, || self.execute_inner(sql, params))
    }

    fn execute_inner(&mut self, sql: &str, params: &[Value]) -> Result<Vec<StatementResult>> {
        if let Err(e) = self.check_statement_size(sql) {
            return Err(self.fail(e));
        }
        if let Some(r) = self.maintenance_noop(sql) {
            return Ok(vec![r]);
        }
        let stmts = match parse(sql) {
            Ok(s) => s,
            Err(e) => {
                if self.tx.is_some() {
                    self.failed = true;
                }
                return Err(e);
            }
        };
        let mut out = Vec::with_capacity(stmts.len());
        for st in &stmts {
            let r = self.run_statement(st, params, None)?;
            let stop = matches!(r, StatementResult::CopyIn(_));
            out.push(r);
            if stop {
                break;
            }
        }
        Ok(out)
    }

    /// The syntax error [`Session::execute`] would give for `sql`, without running or planning
    /// anything. The server checks every statement of a multi-statement query string with this
    /// first, because PostgreSQL (and `execute`) parse the whole string before running any of it.
    pub fn check_syntax(&self, sql: &str) -> Result<()> {
        if self.maintenance_noop(sql).is_none() {
            parse(sql)?;
        }
        Ok(())
    }

    /// VACUUM / ANALYZE / CHECKPOINT are accepted as no-ops (pgbench sends them).
    fn maintenance_noop(&self, sql: &str) -> Option<StatementResult> {
        let t = sql.trim_start().to_ascii_lowercase();
        for kw in ["vacuum", "analyze", "analyse", "checkpoint"] {
            if t.starts_with(kw)
                && t[kw.len()..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric() && c != '_')
            {
                let tag = if kw == "analyse" {
                    "ANALYZE".to_string()
                } else {
                    kw.to_uppercase()
                };
                return Some(StatementResult::Command { tag });
            }
        }
        None
    }

    /// Parses and plans one statement for later execution (the extended protocol's Parse).
    pub fn prepare(&mut self, sql: &str) -> Result<Arc<Prepared>> {
        let n = nesting_estimate(sql);
        with_stack(n, || self.prepare_inner(sql, n))
    }

    fn prepare_inner(&mut self, sql: &str, nesting: usize) -> Result<Arc<Prepared>> {
        self.check_statement_size(sql)?;
        let mut stmts = parse(sql)?;
        if stmts.len() > 1 {
            return Err(Error::syntax(
                "cannot insert multiple commands into a prepared statement",
            ));
        }
        let Some(stmt) = stmts.pop() else {
            return Ok(Arc::new(Prepared {
                sql: sql.into(),
                stmt: A::Statement::Commit {
                    chain: false,
                    end: false,
                    modifier: None,
                },
                planned: Mutex::new(None),
                param_types: vec![],
                columns: vec![],
                nesting,
            }));
        };
        let planned = self.plan(&stmt)?;
        let (param_types, columns) = match &planned {
            Some(p) => (
                p.params.iter().map(|t| t.to_dt()).collect(),
                match &p.planned {
                    Planned::Query { cols, .. } => {
                        cols.iter().map(|c| (c.name.clone(), c.ty.to_dt())).collect()
                    }
                    Planned::Insert(InsertPlan {
                        returning: Some((_, c)),
                        ..
                    })
                    | Planned::Update(UpdatePlan {
                        returning: Some((_, c)),
                        ..
                    })
                    | Planned::Delete(DeletePlan {
                        returning: Some((_, c)),
                        ..
                    }) => c.iter().map(|c| (c.name.clone(), c.ty.to_dt())).collect(),
                    _ => vec![],
                },
            ),
            None => (vec![], self.describe_other(&stmt)),
        };
        Ok(Arc::new(Prepared {
            sql: sql.into(),
            stmt,
            planned: Mutex::new(planned.map(Arc::new)),
            param_types,
            columns,
            nesting,
        }))
    }

    fn describe_other(&self, stmt: &A::Statement) -> Vec<(String, DataType)> {
        match stmt {
            A::Statement::ShowVariable { variable } => {
                vec![(
                    variable.iter().map(ident).collect::<Vec<_>>().join("_"),
                    DataType::Text(None),
                )]
            }
            A::Statement::Explain { .. } => vec![("QUERY PLAN".into(), DataType::Text(None))],
            _ => vec![],
        }
    }

    /// Parameter types and result columns of a statement (Parse + Describe).
    #[allow(clippy::type_complexity)]
    pub fn describe(&mut self, sql: &str) -> Result<(Vec<DataType>, Vec<(String, DataType)>)> {
        let p = self.prepare(sql)?;
        Ok((p.param_types.clone(), p.columns.clone()))
    }

    /// Executes a prepared statement (no parsing; replanned only if a table it uses changed).
    pub fn execute_prepared(&mut self, p: &Prepared, params: &[Value]) -> Result<StatementResult> {
        let _request = self.cancel.begin();
        if p.nesting > 16 {
            return with_stack(p.nesting, || self.execute_prepared_inner(p, params));
        }
        self.execute_prepared_inner(p, params)
    }

    fn execute_prepared_inner(&mut self, p: &Prepared, params: &[Value]) -> Result<StatementResult> {
        if p.sql.trim().is_empty() {
            return Ok(StatementResult::Command { tag: "EMPTY".into() });
        }
        let cached = p.planned.lock().clone();
        let planned = match cached {
            Some(pl) if pl.valid() => Some(pl),
            Some(_) => {
                let pl = self.plan(&p.stmt).map_err(|e| self.fail(e))?.map(Arc::new);
                *p.planned.lock() = pl.clone();
                pl
            }
            None => None,
        };
        self.run_statement(&p.stmt, params, planned)
    }

    fn fail(&mut self, e: Error) -> Error {
        if self.tx.is_some() {
            self.failed = true;
        }
        e
    }

    /// Plans queries and DML; None for other statements.
    fn plan(&self, stmt: &A::Statement) -> Result<Option<PlannedStmt>> {
        let mut b = Binder::new(&self.db, Some(&self.settings));
        b.backend_pid = self.backend_pid;
        let planned = match stmt {
            A::Statement::Query(q) => {
                let (plan, cols) = b.bind_query(q)?;
                Planned::Query { plan, cols }
            }
            A::Statement::Insert(i) => Planned::Insert(bind_insert(&mut b, i)?),
            A::Statement::Update(u) => Planned::Update(bind_update(&mut b, u)?),
            A::Statement::Delete(d) => Planned::Delete(bind_delete(&mut b, d)?),
            _ => return Ok(None),
        };
        let deps = b.tables.iter().map(|t| (t.clone(), t.def())).collect();
        Ok(Some(PlannedStmt {
            planned,
            subplans: b.subplans,
            params: b.params,
            deps,
        }))
    }

    fn run_statement(
        &mut self,
        st: &A::Statement,
        params: &[Value],
        planned: Option<Arc<PlannedStmt>>,
    ) -> Result<StatementResult> {
        let cmd = |t: &str| Ok(StatementResult::Command { tag: t.to_string() });
        match st {
            A::Statement::StartTransaction { modes, .. } => {
                if self.tx.is_none() && !self.failed {
                    let mut tx = self.new_tx();
                    if let Some(iso) = isolation_of_modes(modes) {
                        tx.set_isolation(iso);
                    }
                    self.tx = Some(tx);
                }
                return cmd("BEGIN");
            }
            A::Statement::Commit { chain: false, .. } => {
                let failed = std::mem::replace(&mut self.failed, false);
                return match self.tx.take() {
                    Some(tx) if failed => {
                        tx.rollback();
                        cmd("ROLLBACK")
                    }
                    Some(tx) => {
                        tx.commit()?;
                        cmd("COMMIT")
                    }
                    None => cmd("COMMIT"),
                };
            }
            A::Statement::Rollback {
                chain: false,
                savepoint: None,
            } => {
                self.failed = false;
                if let Some(tx) = self.tx.take() {
                    tx.rollback();
                }
                return cmd("ROLLBACK");
            }
            _ => {}
        }
        if self.failed {
            return Err(Error::new(
                SqlState::IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        // A cancel that arrived between the statements of one request stops the next one.
        let r = if self.cancel.is_canceled() {
            Err(canceled_by_user())
        } else {
            self.run_in_tx(st, params, planned)
                .and_then(|r| self.check_result(&r).map(|_| r))
        };
        if r.is_err() && self.tx.is_some() {
            self.failed = true;
        }
        r
    }

    fn run_in_tx(
        &mut self,
        st: &A::Statement,
        params: &[Value],
        planned: Option<Arc<PlannedStmt>>,
    ) -> Result<StatementResult> {
        match st {
            A::Statement::Query(_)
            | A::Statement::Insert(_)
            | A::Statement::Update(_)
            | A::Statement::Delete(_) => {
                let planned = match planned {
                    Some(p) => p,
                    None => Arc::new(
                        self.plan(st)?
                            .ok_or_else(|| Error::internal("statement was not planned"))?,
                    ),
                };
                let stop = self.interrupt();
                self.with_tx(|tx, _| exec_planned(&planned, tx, params, &stop))
            }
            A::Statement::Explain {
                statement, analyze, ..
            } => {
                if *analyze {
                    return Err(Error::unsupported("EXPLAIN ANALYZE is not supported"));
                }
                let p = self
                    .plan(statement)?
                    .ok_or_else(|| Error::unsupported("EXPLAIN of this statement"))?;
                let lines = explain(&p);
                let n = lines.len();
                Ok(StatementResult::Query {
                    tag: format!("EXPLAIN {n}"),
                    columns: vec![("QUERY PLAN".into(), DataType::Text(None))],
                    rows: lines.into_iter().map(|l| vec![Value::Text(l)]).collect(),
                })
            }
            A::Statement::CreateTable(ct) => self.create_table(ct),
            A::Statement::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => self.drop(*object_type, *if_exists, names),
            A::Statement::CreateIndex(ci) => self.create_index(ci),
            A::Statement::AlterTable(at) => self.alter_table(at),
            A::Statement::Truncate(t) => {
                let names: Vec<String> = t
                    .table_names
                    .iter()
                    .map(|n| object_name(&n.name))
                    .collect::<Result<_>>()?;
                for n in &names {
                    self.db.table(n)?;
                }
                for n in &names {
                    self.db.truncate(n)?;
                }
                Ok(StatementResult::Command {
                    tag: "TRUNCATE TABLE".into(),
                })
            }
            A::Statement::Set(s) => self.set(s),
            A::Statement::Reset(r) => self.reset(&r.reset),
            A::Statement::ShowVariable { variable } => {
                let name: Vec<String> = variable.iter().map(ident).collect();
                let name = name.join(" ");
                let key = match name.as_str() {
                    "transaction isolation level" => "transaction_isolation".to_string(),
                    "time zone" => "timezone".to_string(),
                    n => n.replace(' ', "_"),
                };
                if key == "all" {
                    let rows = self
                        .settings
                        .iter()
                        .map(|(k, v)| vec![Value::Text(k.clone()), Value::Text(v.clone())])
                        .collect();
                    return Ok(StatementResult::Query {
                        tag: "SHOW".into(),
                        columns: vec![
                            ("name".into(), DataType::Text(None)),
                            ("setting".into(), DataType::Text(None)),
                        ],
                        rows,
                    });
                }
                let current_isolation = self
                    .tx
                    .as_ref()
                    .map(|t| isolation_name(t.isolation()).to_string());
                let v = match (key.as_str(), current_isolation) {
                    ("transaction_isolation", Some(v)) => Some(v),
                    ("transaction_isolation", None) => {
                        self.settings.get("default_transaction_isolation").cloned()
                    }
                    _ => self.settings.get(&key).cloned(),
                };
                let v = v.ok_or_else(|| {
                    Error::new(
                        SqlState::UNDEFINED_OBJECT,
                        format!("unrecognized configuration parameter \"{name}\""),
                    )
                })?;
                Ok(StatementResult::Query {
                    tag: "SHOW".into(),
                    columns: vec![(key, DataType::Text(None))],
                    rows: vec![vec![Value::Text(v)]],
                })
            }
            A::Statement::Copy {
                source,
                to,
                target,
                options,
                legacy_options,
                values,
            } => self.copy(source, *to, target, options, legacy_options, values),
            A::Statement::Discard { .. } => Ok(StatementResult::Command {
                tag: "DISCARD ALL".into(),
            }),
            A::Statement::Analyze(_) => Ok(StatementResult::Command {
                tag: "ANALYZE".into(),
            }),
            A::Statement::Rollback {
                savepoint: Some(_), ..
            }
            | A::Statement::Savepoint { .. } => Err(Error::unsupported("savepoints are not supported")),
            other => {
                let s = other.to_string();
                let head: String = s.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                Err(Error::unsupported(format!("{head} is not supported by Augur")))
            }
        }
    }

    /// Runs `f` in the session's transaction block, or in its own transaction (autocommit;
    /// a serialization failure is returned, never retried behind the user's back).
    fn with_tx<T>(&mut self, f: impl FnOnce(&mut Transaction, &Database) -> Result<T>) -> Result<T> {
        if let Some(tx) = &mut self.tx {
            tx.begin_statement();
            return f(tx, &self.db);
        }
        let mut tx = self.new_tx();
        let r = f(&mut tx, &self.db)?;
        if tx.has_writes() {
            tx.commit()?;
        }
        Ok(r)
    }

    /// A transaction with the session's settings: isolation (`default_transaction_isolation`),
    /// `lock_timeout`, `synchronous_commit`.
    fn new_tx(&self) -> Transaction {
        let mut tx = self.db.begin();
        if self.async_commit {
            tx.set_sync(false);
        }
        tx.set_isolation(self.default_isolation);
        tx.set_lock_timeout(self.lock_timeout);
        tx
    }

    /// Sets one setting. `statement_timeout`, `lock_timeout` and the isolation settings are
    /// validated (22023) and take effect: on the open transaction, and for later ones.
    fn set_one(&mut self, name: String, mut v: String) -> Result<()> {
        match name.as_str() {
            "statement_timeout" => {
                self.timeout = if v.eq_ignore_ascii_case("default") || v.is_empty() {
                    self.limits.statement_timeout
                } else {
                    parse_timeout(&v)?
                };
                v = show_timeout(self.timeout);
            }
            "lock_timeout" => {
                self.lock_timeout = parse_time_setting("lock_timeout", &v)?;
                if let Some(tx) = &mut self.tx {
                    tx.set_lock_timeout(self.lock_timeout);
                }
            }
            "default_transaction_isolation" => {
                v = v.to_lowercase();
                self.default_isolation = isolation_named(&v)?;
            }
            "transaction_isolation" => {
                v = v.to_lowercase();
                let iso = isolation_named(&v)?;
                if let Some(tx) = &mut self.tx {
                    tx.set_isolation(iso);
                }
            }
            _ => {}
        }
        self.settings.insert(name, v);
        Ok(())
    }

    /// `RESET name` / `RESET ALL`.
    fn reset(&mut self, r: &A::Reset) -> Result<StatementResult> {
        let names: Vec<String> = match r {
            A::Reset::ALL => default_settings().into_keys().collect(),
            A::Reset::SessionAuthorization => vec![],
            A::Reset::ConfigurationParameter(n) => vec![object_name(n)?],
        };
        for n in names {
            let v = if n == "statement_timeout" {
                "default".to_string()
            } else {
                match default_settings().get(&n) {
                    Some(v) => v.clone(),
                    None => {
                        return Err(Error::new(
                            SqlState::UNDEFINED_OBJECT,
                            format!("unrecognized configuration parameter \"{n}\""),
                        ))
                    }
                }
            };
            self.set_one(n, v)?;
        }
        self.apply_synchronous_commit();
        Ok(StatementResult::Command { tag: "RESET".into() })
    }

    fn set(&mut self, s: &A::Set) -> Result<StatementResult> {
        let render = |e: &A::Expr| -> String {
            match e {
                A::Expr::Value(v) => match &v.value {
                    A::Value::SingleQuotedString(s) => s.clone(),
                    A::Value::Number(n, _) => n.clone(),
                    A::Value::Boolean(b) => if *b { "on" } else { "off" }.into(),
                    v => v.to_string(),
                },
                A::Expr::Identifier(i) => i.value.clone(),
                e => e.to_string(),
            }
        };
        match s {
            A::Set::SingleAssignment { variable, values, .. } => {
                let name = object_name(variable).unwrap_or_else(|_| variable.to_string().to_lowercase());
                let v: Vec<String> = values.iter().map(render).collect();
                let mut v = v.join(", ");
                if v.eq_ignore_ascii_case("default") && name != "statement_timeout" {
                    v = default_settings().get(&name).cloned().unwrap_or_default();
                }
                let name = if name == "time_zone" {
                    "timezone".to_string()
                } else {
                    name
                };
                self.set_one(name, v)?;
            }
            A::Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    let name = object_name(&a.name).unwrap_or_default();
                    self.set_one(name, render(&a.value))?;
                }
            }
            A::Set::SetTimeZone { value, .. } => {
                self.settings.insert("timezone".into(), render(value));
            }
            A::Set::SetNames { charset_name, .. } => {
                self.settings
                    .insert("client_encoding".into(), charset_name.value.clone());
            }
            A::Set::SetTransaction { modes, session, .. } => {
                if let Some(iso) = isolation_of_modes(modes) {
                    if *session {
                        self.set_one("default_transaction_isolation".into(), isolation_name(iso).into())?;
                    } else if let Some(tx) = &mut self.tx {
                        tx.set_isolation(iso);
                    }
                }
            }
            A::Set::SetNamesDefault {} => {}
            A::Set::SetSessionParam(_) | A::Set::SetRole { .. } | A::Set::SetSessionAuthorization(_) => {}
            A::Set::ParenthesizedAssignments { .. } => {
                return Err(Error::unsupported("SET (a, b) = ... is not supported"))
            }
        }
        self.apply_synchronous_commit();
        Ok(StatementResult::Command { tag: "SET".into() })
    }

    /// `synchronous_commit = off` makes this session's commits return before the fsync.
    fn apply_synchronous_commit(&mut self) {
        self.async_commit = self
            .settings
            .get("synchronous_commit")
            .is_some_and(|v| v == "off" || v == "false");
        if let Some(tx) = &mut self.tx {
            tx.set_sync(!self.async_commit);
        }
    }

    fn relation_exists(&self, name: &str) -> bool {
        self.db.table(name).is_ok()
            || self
                .db
                .tables()
                .iter()
                .any(|t| t.def().indexes.iter().any(|i| i.name == name))
    }

    fn create_table(&mut self, ct: &A::CreateTable) -> Result<StatementResult> {
        if ct.query.is_some() || ct.like.is_some() || ct.clone.is_some() || ct.partition_of.is_some() {
            return Err(Error::unsupported(
                "CREATE TABLE AS / LIKE / PARTITION OF is not supported",
            ));
        }
        let name = match ct.name.0.last() {
            Some(A::ObjectNamePart::Identifier(i)) => {
                object_name(&ct.name)?;
                check_name(i)?
            }
            _ => return Err(Error::syntax("invalid table name")),
        };
        if self.db.table(&name).is_ok() {
            if ct.if_not_exists {
                return Ok(StatementResult::Command {
                    tag: "CREATE TABLE".into(),
                });
            }
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        if self.relation_exists(&name) {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        let mut cols = Vec::new();
        let mut pk: Vec<String> = Vec::new();
        let mut pk_name = None;
        let mut uniques: Vec<(Option<String>, Vec<String>)> = Vec::new();
        let multiple_pk = || {
            Error::new(
                SqlState::INVALID_PRIMARY_KEY,
                format!("multiple primary keys for table \"{name}\" are not allowed"),
            )
        };
        for c in &ct.columns {
            let cname = check_name(&c.name)?;
            let (ty, _) = parse_type(&c.data_type)?;
            let mut cd = ColumnDef::new(cname.clone(), ty);
            for o in &c.options {
                match &o.option {
                    A::ColumnOption::Null => cd.nullable = true,
                    A::ColumnOption::NotNull => cd.nullable = false,
                    A::ColumnOption::Default(e) => {
                        let text = e.to_string();
                        let mut b = Binder::new(&self.db, None);
                        bind_default(&mut b, &text, ty, &cname)?;
                        cd.default = Some(text);
                    }
                    A::ColumnOption::PrimaryKey(p) => {
                        if !pk.is_empty() {
                            return Err(multiple_pk());
                        }
                        pk.push(cname.clone());
                        pk_name = p.name.as_ref().map(ident);
                    }
                    A::ColumnOption::Unique(u) => {
                        uniques.push((u.name.as_ref().map(ident), vec![cname.clone()]))
                    }
                    other => {
                        return Err(Error::unsupported(format!(
                            "column option {other} is not supported"
                        )))
                    }
                }
            }
            cols.push(cd);
        }
        let index_cols = |cols: &[A::IndexColumn]| -> Result<Vec<String>> {
            cols.iter()
                .map(|c| match &c.column.expr {
                    A::Expr::Identifier(i) => Ok(ident(i)),
                    e => Err(Error::unsupported(format!(
                        "index expression {e} is not supported"
                    ))),
                })
                .collect()
        };
        for c in &ct.constraints {
            match c {
                A::TableConstraint::PrimaryKey(p) => {
                    if !pk.is_empty() {
                        return Err(multiple_pk());
                    }
                    pk = index_cols(&p.columns)?;
                    pk_name = p.name.as_ref().map(ident);
                }
                A::TableConstraint::Unique(u) => {
                    uniques.push((u.name.as_ref().map(ident), index_cols(&u.columns)?))
                }
                other => {
                    return Err(Error::unsupported(format!(
                        "table constraint {other} is not supported"
                    )))
                }
            }
        }
        let pk_refs: Vec<&str> = pk.iter().map(String::as_str).collect();
        let mut def = TableDef::new(name.clone(), cols, &pk_refs).map_err(|e| match e {
            Error::Sql { state, message } if state == SqlState::UNDEFINED_COLUMN => Error::new(
                state,
                format!(
                    "{} in key",
                    message.replace(" does not exist", " named in key does not exist")
                ),
            ),
            e => e,
        })?;
        def.pkey_name = pk_name.or(def.pkey_name);
        if ct.if_not_exists {
            self.db.create_table_if_not_exists(def)?;
        } else {
            self.db.create_table(def)?;
        }
        for (n, cols) in uniques {
            let iname = n.unwrap_or_else(|| format!("{name}_{}_key", cols.join("_")));
            let t = self.db.table(&name)?;
            let d = t.def();
            let columns = cols
                .iter()
                .map(|c| d.column_index(c))
                .collect::<Result<Vec<_>>>()?;
            self.db.create_index(
                &name,
                IndexDef {
                    name: iname,
                    columns,
                    unique: true,
                },
                false,
            )?;
        }
        Ok(StatementResult::Command {
            tag: "CREATE TABLE".into(),
        })
    }

    fn drop(
        &mut self,
        ty: A::ObjectType,
        if_exists: bool,
        names: &[A::ObjectName],
    ) -> Result<StatementResult> {
        let names: Vec<String> = names.iter().map(object_name).collect::<Result<_>>()?;
        match ty {
            A::ObjectType::Table => {
                if !if_exists {
                    for n in &names {
                        self.db.table(n)?;
                    }
                }
                for n in &names {
                    self.db.drop_table(n, if_exists)?;
                }
                Ok(StatementResult::Command {
                    tag: "DROP TABLE".into(),
                })
            }
            A::ObjectType::Index => {
                for n in &names {
                    if !self.db.drop_index(n)? && !if_exists {
                        return Err(Error::new(
                            SqlState::UNDEFINED_OBJECT,
                            format!("index \"{n}\" does not exist"),
                        ));
                    }
                }
                Ok(StatementResult::Command {
                    tag: "DROP INDEX".into(),
                })
            }
            other => Err(Error::unsupported(format!("DROP {other} is not supported"))),
        }
    }

    fn create_index(&mut self, ci: &A::CreateIndex) -> Result<StatementResult> {
        if ci.predicate.is_some() || !ci.include.is_empty() {
            return Err(Error::unsupported(
                "partial indexes and INCLUDE are not supported",
            ));
        }
        let table = object_name(&ci.table_name)?;
        let t = self.db.table(&table)?;
        let def = t.def();
        let mut columns = Vec::new();
        let mut cnames = Vec::new();
        for c in &ci.columns {
            match &c.column.expr {
                A::Expr::Identifier(i) => {
                    let n = ident(i);
                    columns.push(def.column_index(&n)?);
                    cnames.push(n);
                }
                e => {
                    return Err(Error::unsupported(format!(
                        "index expression {e} is not supported"
                    )))
                }
            }
        }
        let name = match &ci.name {
            Some(n) => object_name(n)?,
            None => format!("{table}_{}_idx", cnames.join("_")),
        };
        if self.db.table(&name).is_ok() {
            if ci.if_not_exists {
                return Ok(StatementResult::Command {
                    tag: "CREATE INDEX".into(),
                });
            }
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        self.db.create_index(
            &table,
            IndexDef {
                name,
                columns,
                unique: ci.unique,
            },
            ci.if_not_exists,
        )?;
        Ok(StatementResult::Command {
            tag: "CREATE INDEX".into(),
        })
    }

    fn alter_table(&mut self, at: &A::AlterTable) -> Result<StatementResult> {
        let table = object_name(&at.name)?;
        if self.db.table(&table).is_err() && at.if_exists {
            return Ok(StatementResult::Command {
                tag: "ALTER TABLE".into(),
            });
        }
        self.db.table(&table)?;
        for op in &at.operations {
            match op {
                A::AlterTableOperation::AddConstraint {
                    constraint: A::TableConstraint::PrimaryKey(p),
                    ..
                } => {
                    let cols: Vec<String> = p
                        .columns
                        .iter()
                        .map(|c| match &c.column.expr {
                            A::Expr::Identifier(i) => Ok(ident(i)),
                            e => Err(Error::unsupported(format!("key expression {e}"))),
                        })
                        .collect::<Result<_>>()?;
                    let pname = p.name.as_ref().map(ident);
                    self.db.rebuild_table(&table, |d| {
                        if d.has_primary_key() {
                            return Err(Error::new(
                                SqlState::INVALID_PRIMARY_KEY,
                                format!("multiple primary keys for table \"{}\" are not allowed", d.name),
                            ));
                        }
                        let mut nd = d.clone();
                        nd.primary_key = cols.iter().map(|c| d.column_index(c)).collect::<Result<_>>()?;
                        nd.pkey_name = pname.clone();
                        Ok(nd)
                    })?;
                }
                A::AlterTableOperation::AddConstraint {
                    constraint: A::TableConstraint::Unique(u),
                    ..
                } => {
                    let t = self.db.table(&table)?;
                    let d = t.def();
                    let mut columns = Vec::new();
                    let mut names = Vec::new();
                    for c in &u.columns {
                        let A::Expr::Identifier(i) = &c.column.expr else {
                            return Err(Error::unsupported("unique constraint on an expression"));
                        };
                        names.push(ident(i));
                        columns.push(d.column_index(&ident(i))?);
                    }
                    let name = u
                        .name
                        .as_ref()
                        .map(ident)
                        .unwrap_or_else(|| format!("{table}_{}_key", names.join("_")));
                    self.db.create_index(
                        &table,
                        IndexDef {
                            name,
                            columns,
                            unique: true,
                        },
                        false,
                    )?;
                }
                other => {
                    return Err(Error::unsupported(format!(
                        "ALTER TABLE {other} is not supported"
                    )))
                }
            }
        }
        Ok(StatementResult::Command {
            tag: "ALTER TABLE".into(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn copy(
        &mut self,
        source: &A::CopySource,
        to: bool,
        target: &A::CopyTarget,
        options: &[A::CopyOption],
        legacy: &[A::CopyLegacyOption],
        values: &[Option<String>],
    ) -> Result<StatementResult> {
        let A::CopySource::Table { table_name, columns } = source else {
            return Err(Error::unsupported("COPY (query) is not supported"));
        };
        if to || !matches!(target, A::CopyTarget::Stdin) {
            return Err(Error::unsupported("only COPY ... FROM STDIN is supported"));
        }
        let name = object_name(table_name)?;
        let t = self.db.table(&name)?;
        let def = t.def();
        let cols = if columns.is_empty() {
            (0..def.columns.len()).collect()
        } else {
            columns
                .iter()
                .map(|c| def.column_index(&ident(c)))
                .collect::<Result<Vec<_>>>()?
        };
        let mut st = CopyState {
            table: name,
            columns: cols,
            csv: false,
            header: false,
            delimiter: '\t',
            null: "\\N".into(),
            quote: '"',
            escape: '"',
        };
        let mut delim = None;
        let mut null = None;
        for o in options {
            match o {
                A::CopyOption::Format(f) => st.csv = f.value.eq_ignore_ascii_case("csv"),
                A::CopyOption::Header(h) => st.header = *h,
                A::CopyOption::Delimiter(c) => delim = Some(*c),
                A::CopyOption::Null(n) => null = Some(n.clone()),
                A::CopyOption::Quote(c) => st.quote = *c,
                A::CopyOption::Escape(c) => st.escape = *c,
                A::CopyOption::Freeze(_) | A::CopyOption::Encoding(_) => {}
                other => {
                    return Err(Error::unsupported(format!(
                        "COPY option {other} is not supported"
                    )))
                }
            }
        }
        for o in legacy {
            match o {
                A::CopyLegacyOption::Csv(opts) => {
                    st.csv = true;
                    for c in opts {
                        match c {
                            A::CopyLegacyCsvOption::Header => st.header = true,
                            A::CopyLegacyCsvOption::Quote(q) => st.quote = *q,
                            A::CopyLegacyCsvOption::Escape(e) => st.escape = *e,
                            _ => {}
                        }
                    }
                }
                A::CopyLegacyOption::Header => st.header = true,
                A::CopyLegacyOption::Delimiter(c) => delim = Some(*c),
                A::CopyLegacyOption::Null(n) => null = Some(n.clone()),
                other => {
                    return Err(Error::unsupported(format!(
                        "COPY option {other} is not supported"
                    )))
                }
            }
        }
        st.delimiter = delim.unwrap_or(if st.csv { ',' } else { '\t' });
        st.null = null.unwrap_or_else(|| if st.csv { String::new() } else { "\\N".into() });
        if !values.is_empty() {
            // Data inline after the statement (a script fed to the parser).
            let n = st.columns.len().max(1);
            let rows: Vec<Vec<Option<String>>> = values.chunks(n).map(|c| c.to_vec()).collect();
            let count = self.copy_rows(&st, rows)?;
            return Ok(StatementResult::Command {
                tag: format!("COPY {count}"),
            });
        }
        Ok(StatementResult::CopyIn(st))
    }

    /// Loads the data of a `COPY ... FROM STDIN` (all of it, as the client sent it).
    /// Returns the number of rows inserted.
    pub fn copy_in(&mut self, st: &CopyState, data: &[u8]) -> Result<u64> {
        let _request = self.cancel.begin();
        if self.failed {
            return Err(Error::new(
                SqlState::IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        let text = std::str::from_utf8(data)
            .map_err(|_| Error::new(SqlState("22021"), "invalid byte sequence for encoding \"UTF8\""))?;
        let rows = if st.csv {
            parse_csv(text, st)?
        } else {
            parse_copy_text(text, st)?
        };
        let r = self.copy_rows(st, rows);
        if r.is_err() && self.tx.is_some() {
            self.failed = true;
        }
        r
    }

    fn copy_rows(&mut self, st: &CopyState, rows: Vec<Vec<Option<String>>>) -> Result<u64> {
        let t = self.db.table(&st.table)?;
        let def = t.def();
        let mut b = Binder::new(&self.db, None);
        let mut defaults = Vec::new();
        for c in &def.columns {
            defaults.push(match &c.default {
                Some(d) if !st.columns.contains(&defaults.len()) => {
                    Some(bind_default(&mut b, d, c.ty, &c.name)?)
                }
                _ => None,
            });
        }
        let mut full = Vec::with_capacity(rows.len());
        let stop = self.interrupt();
        {
            let tx = self.db.begin();
            let ex = Exec {
                tx: &tx,
                params: &[],
                subplans: &[],
                now: now_micros(),
                stop: &stop,
            };
            let cx = ex.ctx();
            for (line, r) in rows.into_iter().enumerate() {
                if r.len() != st.columns.len() {
                    return Err(Error::new(
                        SqlState("22P04"),
                        format!(
                            "{} data for line {}: expected {} columns, got {}",
                            if r.len() < st.columns.len() {
                                "missing"
                            } else {
                                "extra"
                            },
                            line + 1,
                            st.columns.len(),
                            r.len()
                        ),
                    ));
                }
                let mut row = vec![Value::Null; def.columns.len()];
                for (i, d) in defaults.iter().enumerate() {
                    if let Some(d) = d {
                        row[i] = d.eval(&[], &cx)?;
                    }
                }
                for (v, &c) in r.into_iter().zip(&st.columns) {
                    let col = &def.columns[c];
                    row[c] = match v {
                        None => Value::Null,
                        Some(s) => assign(Value::Text(s), col.ty, &col.name)?,
                    };
                }
                full.push(row);
            }
        }
        let n = full.len() as u64;
        self.with_tx(|tx, _| {
            tx.set_interrupt(stop);
            let r = full.into_iter().try_for_each(|r| tx.insert_in(&t, r).map(|_| ()));
            tx.set_interrupt(Interrupt::default());
            r
        })?;
        Ok(n)
    }
}

fn parse_copy_text(text: &str, st: &CopyState) -> Result<Vec<Vec<Option<String>>>> {
    let mut rows = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line == "\\." {
            break;
        }
        if line.is_empty() && i > 0 && text[..].ends_with('\n') {
            continue;
        }
        if st.header && i == 0 {
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        for raw in line.split(st.delimiter) {
            if raw == st.null {
                fields.push(None);
                continue;
            }
            let mut out = String::with_capacity(raw.len());
            let mut it = raw.chars().peekable();
            while let Some(c) = it.next() {
                if c != '\\' {
                    out.push(c);
                    continue;
                }
                match it.next() {
                    Some('t') => out.push('\t'),
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('b') => out.push('\u{8}'),
                    Some('f') => out.push('\u{c}'),
                    Some('v') => out.push('\u{b}'),
                    Some(d @ '0'..='7') => {
                        let mut v = d.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            match it.peek().and_then(|c| c.to_digit(8)) {
                                Some(x) => {
                                    v = v * 8 + x;
                                    it.next();
                                }
                                None => break,
                            }
                        }
                        out.push(char::from_u32(v).unwrap_or('?'));
                    }
                    Some('x') => {
                        let mut v = 0;
                        for _ in 0..2 {
                            match it.peek().and_then(|c| c.to_digit(16)) {
                                Some(x) => {
                                    v = v * 16 + x;
                                    it.next();
                                }
                                None => break,
                            }
                        }
                        out.push(char::from_u32(v).unwrap_or('?'));
                    }
                    Some(c) => out.push(c),
                    None => out.push('\\'),
                }
            }
            fields.push(Some(out));
        }
        rows.push(fields);
    }
    Ok(rows)
}

fn parse_csv(text: &str, st: &CopyState) -> Result<Vec<Vec<Option<String>>>> {
    let mut rows = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let mut first = true;
    while i < chars.len() {
        // One record.
        let mut fields = Vec::new();
        let line_start = i;
        loop {
            let mut field = String::new();
            let mut quoted = false;
            if i < chars.len() && chars[i] == st.quote {
                quoted = true;
                i += 1;
                loop {
                    if i >= chars.len() {
                        return Err(Error::new(SqlState("22P04"), "unterminated CSV quoted field"));
                    }
                    let c = chars[i];
                    if c == st.escape && i + 1 < chars.len() && chars[i + 1] == st.quote {
                        field.push(st.quote);
                        i += 2;
                    } else if c == st.quote {
                        i += 1;
                        break;
                    } else {
                        field.push(c);
                        i += 1;
                    }
                }
            }
            while i < chars.len() && chars[i] != st.delimiter && chars[i] != '\n' && chars[i] != '\r' {
                field.push(chars[i]);
                i += 1;
            }
            fields.push(if !quoted && field == st.null {
                None
            } else {
                Some(field)
            });
            if i < chars.len() && chars[i] == st.delimiter {
                i += 1;
                continue;
            }
            break;
        }
        if i < chars.len() && chars[i] == '\r' {
            i += 1;
        }
        if i < chars.len() && chars[i] == '\n' {
            i += 1;
        }
        let raw: String = chars[line_start..i].iter().collect();
        if raw.trim_end() == "\\." {
            break;
        }
        if std::mem::replace(&mut first, false) && st.header {
            continue;
        }
        if raw.trim_end_matches(['\r', '\n']).is_empty() {
            continue;
        }
        rows.push(fields);
    }
    Ok(rows)
}

fn exec_planned(
    p: &PlannedStmt,
    tx: &mut Transaction,
    params: &[Value],
    stop: &Interrupt,
) -> Result<StatementResult> {
    // Lock waits inside the engine's write calls (an INSERT waiting for another transaction's
    // insert of the same key) are interrupted like the executor's own.
    tx.set_interrupt(stop.clone());
    let r = exec_statement(p, tx, params, stop);
    tx.set_interrupt(Interrupt::default());
    r
}

fn exec_statement(
    p: &PlannedStmt,
    tx: &mut Transaction,
    params: &[Value],
    stop: &Interrupt,
) -> Result<StatementResult> {
    check_params(&p.params, params)?;
    let now = now_micros();
    let cols = |c: &[Column]| {
        c.iter()
            .map(|c| (c.name.clone(), c.ty.to_dt()))
            .collect::<Vec<_>>()
    };
    let dml = |tag: String, ret: &Option<(Vec<super::expr::Expr>, Vec<Column>)>, rows: Vec<Row>| match ret {
        Some((_, c)) => StatementResult::Query {
            tag,
            columns: cols(c),
            rows,
        },
        None => StatementResult::Command { tag },
    };
    Ok(match &p.planned {
        Planned::Query { plan, cols: c } => {
            let ex = Exec {
                tx,
                params,
                subplans: &p.subplans,
                now,
                stop,
            };
            let cx = ex.ctx();
            let rows = run(plan, &cx)?;
            StatementResult::Query {
                tag: format!("SELECT {}", rows.len()),
                columns: cols(c),
                rows,
            }
        }
        Planned::Insert(ip) => {
            let (n, rows) = exec_insert(ip, tx, params, &p.subplans, now, stop)?;
            dml(format!("INSERT 0 {n}"), &ip.returning, rows)
        }
        Planned::Update(up) => {
            let (n, rows) = exec_update(up, tx, params, &p.subplans, now, stop)?;
            dml(format!("UPDATE {n}"), &up.returning, rows)
        }
        Planned::Delete(dp) => {
            let (n, rows) = exec_delete(dp, tx, params, &p.subplans, now, stop)?;
            dml(format!("DELETE {n}"), &dp.returning, rows)
        }
    })
}

fn check_params(types: &[Ty], params: &[Value]) -> Result<()> {
    if params.len() < types.len() {
        return Err(Error::new(
            SqlState::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                types.len()
            ),
        ));
    }
    Ok(())
}

fn explain(p: &PlannedStmt) -> Vec<String> {
    let mut out = Vec::new();
    let scan_root = |s: &super::plan::Scan| Plan::Scan(s.clone());
    match &p.planned {
        Planned::Query { plan, .. } => plan.explain(&mut out, 0),
        Planned::Insert(ip) => {
            out.push(format!(
                "Insert on {}{}",
                ip.def.name,
                if ip.conflict.is_some() {
                    " (ON CONFLICT on primary key: ALEX point lookup per row)"
                } else {
                    ""
                }
            ));
            ip.source.explain(&mut out, 1);
        }
        Planned::Update(up) => {
            out.push(format!("Update on {}", up.scan.def.name));
            scan_root(&up.scan).explain(&mut out, 1);
        }
        Planned::Delete(dp) => {
            out.push(format!("Delete on {}", dp.scan.def.name));
            scan_root(&dp.scan).explain(&mut out, 1);
        }
    }
    for (i, s) in p.subplans.iter().enumerate() {
        out.push(format!("Subquery {i}:"));
        s.explain(&mut out, 1);
    }
    out
}
