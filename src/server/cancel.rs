//! Query cancellation over the wire (PostgreSQL's CancelRequest).
//!
//! At startup every connection gets a process id and a random secret key, sent to the client
//! in BackendKeyData, and is entered in the [`Registry`] with its session's
//! [`CancelHandle`]. To cancel, a client opens a *new* connection and sends a 16-byte
//! CancelRequest (code 80877102, the pid, the secret); pgwire decodes it and calls
//! [`Registry::on_cancel_request`]. When pid and secret match, the statement that connection is
//! running fails with 57014 "canceling statement due to user request" at its next check; a
//! wrong secret or an unknown pid is ignored. Either way the cancel connection is closed
//! without a reply, as PostgreSQL does, so a client learns nothing about other sessions.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;
use tracing::debug;

use crate::engine::CancelHandle;

/// The first process id handed out (below it, ids look like real process ids of this host).
const FIRST_PID: i32 = 10_000;

struct Entry {
    secret: Bytes,
    handle: CancelHandle,
}

/// Live connections by process id: their secret key and their session's cancel handle.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_pid: HashMap<i32, Entry>,
    next_pid: i32,
}

/// What a cancel request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// pid and secret matched and a statement was running: it is being canceled.
    Canceled,
    /// pid and secret matched but nothing was running (nothing happens).
    Idle,
    /// No live connection has that pid, or the secret is wrong (nothing happens).
    NoMatch,
}

impl Registry {
    /// Enters a connection with its secret; its process id (unique among live connections) is
    /// the registration's, and dropping the registration removes the entry.
    pub fn register(self: &Arc<Self>, secret: Bytes, handle: CancelHandle) -> Registration {
        let mut g = self.inner.lock();
        let mut pid = g.next_pid.max(FIRST_PID);
        while g.by_pid.contains_key(&pid) {
            pid = pid.checked_add(1).unwrap_or(FIRST_PID);
        }
        g.next_pid = pid.checked_add(1).unwrap_or(FIRST_PID);
        g.by_pid.insert(pid, Entry { secret, handle });
        Registration {
            pid,
            registry: self.clone(),
        }
    }

    fn unregister(&self, pid: i32) {
        self.inner.lock().by_pid.remove(&pid);
    }

    /// Number of live registered connections.
    pub fn len(&self) -> usize {
        self.inner.lock().by_pid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cancels the statement connection `pid` is running if `secret` is its key.
    pub fn cancel(&self, pid: i32, secret: &[u8]) -> Outcome {
        let handle = {
            let g = self.inner.lock();
            match g.by_pid.get(&pid) {
                Some(e) if same_secret(&e.secret, secret) => e.handle.clone(),
                _ => return Outcome::NoMatch,
            }
        };
        if handle.cancel() {
            Outcome::Canceled
        } else {
            Outcome::Idle
        }
    }
}

/// Compares secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[async_trait]
impl CancelHandler for Registry {
    async fn on_cancel_request(&self, req: CancelRequest) {
        let outcome = self.cancel(req.pid, &req.secret_key.to_bytes());
        debug!(pid = req.pid, ?outcome, "cancel request");
    }
}

/// A connection's entry in the [`Registry`], removed when this is dropped (it is kept in the
/// connection's session extensions, which are dropped with the connection).
pub struct Registration {
    pid: i32,
    registry: Arc<Registry>,
}

impl Registration {
    /// The connection's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.unregister(self.pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Database, Options};
    use crate::sql::Session;

    #[test]
    fn registry_matches_pid_and_secret() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let s = Session::new(db.clone());
        let reg = Arc::new(Registry::default());
        let key = Bytes::from_static(&[1, 2, 3, 4]);
        let r = reg.register(key.clone(), s.cancel_handle());
        let pid = r.pid();
        let o = reg.register(
            Bytes::from_static(&[9, 9, 9, 9]),
            Session::new(db).cancel_handle(),
        );
        let other = o.pid();
        assert_ne!(pid, other);
        assert_eq!(reg.cancel(pid, &[1, 2, 3, 4]), Outcome::Idle, "nothing running");
        let running = s.cancel_handle().begin();
        assert_eq!(reg.cancel(pid, &[1, 2, 3, 5]), Outcome::NoMatch, "wrong secret");
        assert_eq!(reg.cancel(pid, &[1, 2, 3]), Outcome::NoMatch, "short secret");
        assert_eq!(
            reg.cancel(other, &[1, 2, 3, 4]),
            Outcome::NoMatch,
            "another pid's secret"
        );
        assert!(!s.cancel_handle().is_canceled());
        assert_eq!(reg.cancel(pid, &[1, 2, 3, 4]), Outcome::Canceled);
        assert!(s.cancel_handle().is_canceled());
        drop(running);
        assert!(!s.cancel_handle().is_canceled());
        drop(r);
        assert_eq!(reg.cancel(pid, &[1, 2, 3, 4]), Outcome::NoMatch, "unregistered");
        assert_eq!(reg.len(), 1);
    }
}
