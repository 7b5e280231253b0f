//! One connection's state (its [`Session`], a pending COPY, its cancel handle) and what every
//! connection shares ([`Shared`]); created at startup and kept in pgwire's session extensions.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, DEFAULT_NAME};
use pgwire::messages::response::TransactionStatus;

use super::cancel::Registry;
use super::metrics::Metrics;
use crate::seam::{AnyEngine, CancelHandle};
use crate::sql::{CopyState, Limits, Prepared, Session, TxStatus};
use crate::types::zone::Zone;

/// The server_version reported to clients: the PostgreSQL release whose catalog queries (psql
/// 15's) the SQL layer's pg_catalog answers, and Augur's own version.
pub fn server_version() -> String {
    format!("15.0 (Augur {})", env!("CARGO_PKG_VERSION"))
}

/// State shared by every connection.
pub struct Shared {
    pub db: AnyEngine,
    /// Set when the server is shutting down: new statements are refused.
    pub shutting_down: AtomicBool,
    /// Statements executing right now (the shutdown waits for them, bounded).
    pub busy: AtomicUsize,
    /// Largest COPY FROM STDIN payload buffered for one statement.
    pub max_copy_bytes: usize,
    /// ParameterStatus values every session starts with (from `Session::reported_settings`).
    pub(super) base_params: Vec<(String, String)>,
    /// Recorded only with `--metrics`.
    pub metrics: Option<Arc<Metrics>>,
    /// Every session's resource limits.
    pub limits: Limits,
    /// Live connections' process ids and secret keys, for cancel requests.
    pub cancels: Arc<Registry>,
}

impl Shared {
    pub fn new(
        db: AnyEngine,
        max_copy_bytes: usize,
        metrics: Option<Arc<Metrics>>,
        limits: Limits,
    ) -> Shared {
        let base_params = Session::new(db.clone()).reported_settings();
        Shared {
            db,
            shutting_down: AtomicBool::new(false),
            busy: AtomicUsize::new(0),
            max_copy_bytes,
            base_params,
            metrics,
            limits,
            cancels: Arc::default(),
        }
    }
}

pub(super) struct BusyGuard<'a>(&'a AtomicUsize);

impl<'a> BusyGuard<'a> {
    pub(super) fn new(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Ordering::AcqRel);
        BusyGuard(c)
    }
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs blocking engine work without stalling the runtime's other connections.
pub(super) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

pub(super) struct PendingCopy {
    pub(super) state: CopyState,
    pub(super) buf: Vec<u8>,
}

/// One connection's state.
pub struct Conn {
    pub(super) session: Mutex<Session>,
    pub(super) copy: Mutex<Option<PendingCopy>>,
    /// The session's cancel handle (reachable without its lock, which a running statement holds).
    pub(super) cancel: CancelHandle,
    /// Transaction-control statements of the simple protocol (`BEGIN`, `END`, ...), prepared once
    /// per text: they have no plan that could go stale, and pgbench's TPC-B sends two per
    /// transaction. At most [`TX_CONTROL_TEXTS`] texts.
    tx_control: Mutex<Vec<(String, Arc<Prepared>)>>,
    /// The `TimeZone` the client last saw in a ParameterStatus message (`report.rs`).
    pub(super) reported_zone: Mutex<String>,
    /// The names of the named prepared statements the client parsed and has not closed, for
    /// `DISCARD ALL` to close them all ([`Conn::close_all`]).
    named: Mutex<std::collections::HashSet<String>>,
}

/// How many transaction-control texts a connection keeps prepared.
const TX_CONTROL_TEXTS: usize = 8;

impl Conn {
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Records the BackendKeyData process id (`pg_backend_pid()` returns it).
    pub(super) fn set_backend_pid(&self, pid: i32) {
        self.session.lock().set_backend_pid(pid);
    }

    /// The session's time zone, in which values are encoded as text.
    pub(super) fn zone(&self) -> Zone {
        self.session.lock().time_zone()
    }

    pub(super) fn status(&self) -> TransactionStatus {
        wire_status(self.session.lock().status())
    }

    pub(super) fn tx_status(&self) -> TxStatus {
        self.session.lock().status()
    }

    /// `sql`, a transaction-control statement (`BEGIN`, `COMMIT`, `ROLLBACK TO s`, ...), prepared
    /// by `session` the first time this connection sends its text; None if it does not prepare.
    pub(super) fn prepare_tx_control(&self, session: &mut Session, sql: &str) -> Option<Arc<Prepared>> {
        let mut texts = self.tx_control.lock();
        if let Some((_, p)) = texts.iter().find(|(s, _)| s == sql) {
            return Some(p.clone());
        }
        let p = session.prepare(sql).ok()?;
        if texts.len() >= TX_CONTROL_TEXTS {
            texts.clear();
        }
        texts.push((sql.to_string(), p.clone()));
        Some(p)
    }
}

impl Conn {
    /// An error outside `Session::execute*` (Parse, Bind) inside a transaction block fails the
    /// block, as in PostgreSQL. `Session` has no call for that, so this runs a statement that
    /// cannot parse: the session marks its open block failed and nothing else happens.
    pub(super) fn fail_block(&self) {
        let mut s = self.session.lock();
        if s.status() == TxStatus::InTransaction {
            let _ = s.execute(")", &[]);
        }
    }
}

pub(super) fn wire_status(s: TxStatus) -> TransactionStatus {
    match s {
        TxStatus::Idle => TransactionStatus::Idle,
        TxStatus::InTransaction => TransactionStatus::Transaction,
        TxStatus::Failed => TransactionStatus::Error,
    }
}

/// The connection's state, created on first use (at startup, by `startup::KeyGenerator`).
pub(super) fn conn<C: ClientInfo + ?Sized>(client: &C, shared: &Shared) -> Arc<Conn> {
    client.session_extensions().get_or_insert_with(|| {
        let mut session = Session::new(shared.db.clone());
        session.set_limits(shared.limits.clone());
        // The startup packet's TimeZone (pgjdbc's JVM zone, libpq's PGTZ), checked by
        // `startup::check_startup` before the session exists.
        if let Some(tz) = super::report::startup_time_zone(client) {
            let _ = session.set_reset_value("timezone", &tz);
        }
        let reported_zone = Mutex::new(session.setting("timezone").unwrap_or_default().to_string());
        Conn {
            reported_zone,
            cancel: session.cancel_handle(),
            session: Mutex::new(session),
            copy: Mutex::new(None),
            tx_control: Mutex::new(Vec::new()),
            named: Mutex::default(),
        }
    })
}

impl Conn {
    /// Records a named prepared statement the client parsed.
    pub(super) fn parsed(&self, name: &str) {
        if name != DEFAULT_NAME {
            self.named.lock().insert(name.to_owned());
        }
    }

    /// Forgets a prepared statement the client closed.
    pub(super) fn closed(&self, name: &str) {
        self.named.lock().remove(name);
    }
}

impl Conn {
    /// Closes the connection's named prepared statements and its portals, as PostgreSQL's
    /// `DEALLOCATE ALL` and `CLOSE ALL` after a `DISCARD ALL` (a pooler's next client must
    /// not find the last one's statements).
    pub(super) fn close_all<S: PortalStore>(&self, store: &S) {
        for name in std::mem::take(&mut *self.named.lock()) {
            store.rm_statement(&name);
        }
        store.clear_portals();
    }
}
