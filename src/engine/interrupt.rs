//! Stopping a running statement early: its `statement_timeout` deadline or a cancel request
//! (PostgreSQL's CancelRequest: psql's Ctrl-C, libpq's `PQcancel`, tokio-postgres'
//! `cancel_query`). Nothing is killed: the executor polls the statement's [`Interrupt`] in its
//! row loops (every 256 rows) and a row-lock wait polls it before sleeping (a cancel wakes lock
//! waiters at once), and the statement fails with 57014. What it wrote is then dropped with its
//! transaction (autocommit) or its transaction block fails, as after any error.
//!
//! A cancel applies to the *request* running when it arrives (one client message, or one
//! embedded `Session` call) and to nothing else: each request gets a new id, and a cancel
//! records the id of the request it saw running, so a cancel that arrives while nothing runs, or
//! after its request ended, cannot stop a later one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::Core;
use crate::error::{Error, Result, SqlState};

#[derive(Default)]
struct CancelState {
    /// The request running now; 0: none.
    running: AtomicU64,
    /// The request the last cancel was for.
    canceled: AtomicU64,
    /// The last request id handed out.
    last: AtomicU64,
}

/// Cancels what one session is running. Cheap to clone; may be used from any thread.
#[derive(Clone)]
pub struct CancelHandle {
    state: Arc<CancelState>,
    /// For waking row-lock waiters.
    db: Arc<Core>,
}

impl std::fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelHandle")
            .field("running", &self.state.running.load(Ordering::Relaxed))
            .finish()
    }
}

impl CancelHandle {
    pub(crate) fn new(db: &super::Database) -> CancelHandle {
        CancelHandle {
            state: Arc::default(),
            db: db.core.clone(),
        }
    }

    /// Cancels the request running now, if any: its statement fails with 57014 at its next
    /// check (within 256 rows, or at once if it waits for a row lock). Returns whether a
    /// request was running. A request that begins later is not affected.
    pub fn cancel(&self) -> bool {
        let r = self.state.running.load(Ordering::SeqCst);
        if r == 0 {
            return false;
        }
        self.state.canceled.store(r, Ordering::SeqCst);
        self.db.cur.load().locks.wake_all();
        true
    }

    /// Marks a request running until the returned guard drops. Inside a request already
    /// running, joins it (the guard does nothing): the server marks a whole client message (a
    /// query string of several statements is one request) and `Session` marks each call.
    pub fn begin(&self) -> Request {
        if self.state.running.load(Ordering::SeqCst) != 0 {
            return Request(None);
        }
        let id = self.state.last.fetch_add(1, Ordering::Relaxed) + 1;
        self.state.running.store(id, Ordering::SeqCst);
        Request(Some(self.state.clone()))
    }

    /// Whether the running request was canceled.
    pub fn is_canceled(&self) -> bool {
        let r = self.state.running.load(Ordering::SeqCst);
        r != 0 && self.state.canceled.load(Ordering::SeqCst) == r
    }

    /// What stops a statement of the running request: `deadline` (statement_timeout) or a
    /// cancel of this request. Outside a request only the deadline.
    pub fn interrupt(&self, deadline: Option<Instant>) -> Interrupt {
        let id = self.state.running.load(Ordering::SeqCst);
        Interrupt {
            deadline,
            cancel: (id != 0).then(|| (self.state.clone(), id)),
        }
    }
}

/// A running request (see [`CancelHandle::begin`]); it ends when this drops.
#[must_use = "the request ends when the guard drops"]
pub struct Request(Option<Arc<CancelState>>);

impl Drop for Request {
    fn drop(&mut self) {
        if let Some(s) = &self.0 {
            s.running.store(0, Ordering::SeqCst);
        }
    }
}

/// Why a running statement must stop: its deadline passed, or its request was canceled.
#[derive(Clone, Default)]
pub struct Interrupt {
    /// `statement_timeout`: when the statement must stop.
    pub deadline: Option<Instant>,
    /// The session's cancel state and the request this statement belongs to.
    cancel: Option<(Arc<CancelState>, u64)>,
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupt")
            .field("deadline", &self.deadline)
            .field("request", &self.cancel.as_ref().map(|c| c.1))
            .finish()
    }
}

impl Interrupt {
    /// Only a deadline (or nothing, with None).
    pub fn deadline(deadline: Option<Instant>) -> Interrupt {
        Interrupt {
            deadline,
            cancel: None,
        }
    }

    /// Whether anything can interrupt (otherwise checks can be skipped).
    #[inline]
    pub fn is_armed(&self) -> bool {
        self.deadline.is_some() || self.cancel.is_some()
    }

    /// Whether this statement's request was canceled.
    #[inline]
    pub fn canceled(&self) -> bool {
        matches!(&self.cancel, Some((s, id)) if s.canceled.load(Ordering::Relaxed) == *id)
    }

    /// 57014 if the request was canceled or the deadline passed (reads the clock).
    pub fn check(&self) -> Result<()> {
        if self.canceled() {
            return Err(canceled_by_user());
        }
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(statement_timeout()),
            _ => Ok(()),
        }
    }
}

/// PostgreSQL's error for a statement stopped by a cancel request.
pub fn canceled_by_user() -> Error {
    Error::new(
        SqlState::QUERY_CANCELED,
        "canceling statement due to user request",
    )
}

/// PostgreSQL's error for a statement that ran past `statement_timeout`.
pub fn statement_timeout() -> Error {
    Error::new(
        SqlState::QUERY_CANCELED,
        "canceling statement due to statement timeout",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Database, Options};

    #[test]
    fn cancel_reaches_only_the_request_running() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let h = CancelHandle::new(&db);
        // Nothing running: nothing to cancel, and the next request is unaffected.
        assert!(!h.cancel());
        let r1 = h.begin();
        let i1 = h.interrupt(None);
        assert!(i1.is_armed() && !i1.canceled());
        // A nested begin joins the running request.
        let nested = h.begin();
        assert!(h.cancel());
        drop(nested);
        assert!(i1.canceled());
        assert_eq!(
            i1.check().unwrap_err().to_string(),
            canceled_by_user().to_string()
        );
        drop(r1);
        // After the request ended, its cancel does not leak into the next one.
        let _r2 = h.begin();
        let i2 = h.interrupt(None);
        assert!(!i2.canceled());
        assert!(i2.check().is_ok());
        assert!(i1.canceled(), "the old statement stays canceled");
        // Outside any request only a deadline interrupts.
        let none = Interrupt::deadline(None);
        assert!(!none.is_armed() && none.check().is_ok());
        let past = Interrupt::deadline(Some(Instant::now()));
        assert_eq!(past.check().unwrap_err().sqlstate(), SqlState::QUERY_CANCELED);
    }

    #[test]
    fn cancel_stops_a_row_lock_wait() {
        use crate::engine::{ColumnDef, TableDef};
        use crate::types::{DataType, Value};
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), Options::default()).unwrap();
        db.create_table(TableDef::new("t", vec![ColumnDef::new("id", DataType::Int8)], &["id"]).unwrap())
            .unwrap();
        let mut holder = db.begin();
        holder.insert("t", vec![Value::Int(1)]).unwrap();
        let h = CancelHandle::new(&db);
        let (h2, db2) = (h.clone(), db.clone());
        let waiter = std::thread::spawn(move || {
            let _request = h2.begin();
            let mut tx = db2.begin();
            tx.set_interrupt(h2.interrupt(None));
            tx.insert("t", vec![Value::Int(1)])
        });
        // Wait until the insert is blocked on the holder's lock, then cancel it.
        while !h.cancel() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let e = waiter.join().unwrap().unwrap_err();
        assert_eq!(e.to_string(), canceled_by_user().to_string());
        // The holder is unaffected and commits.
        holder.commit().unwrap();
        assert!(db.get("t", &crate::types::Key::Int(1)).unwrap().is_some());
    }
}
