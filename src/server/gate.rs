//! Admission of explicit transaction blocks, one at a time.
//!
//! Augur's engine runs snapshot isolation with first-committer-wins validation and no row
//! locks: two transaction blocks that read-modify-write the same row (pgbench's TPC-B script
//! updates the one branch row in every transaction) both run, and the second to commit fails
//! with 40001. PostgreSQL instead makes the second UPDATE wait for the first transaction.
//! The server approximates that wait: a `BEGIN` waits until no other connection is inside a
//! transaction block, so blocks do not overlap and do not conflict with each other.
//!
//! Bounded so that one client cannot stall the others: a holder that has been idle (no
//! statement running) for [`IDLE_STEAL`] loses its exclusivity (it goes on optimistically, as
//! without the gate), and a `BEGIN` waits at most [`MAX_WAIT`] before going on optimistically.
//! Autocommit statements never wait.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;

/// A holder idle this long (client think time) is passed over.
pub const IDLE_STEAL: Duration = Duration::from_millis(50);
/// A BEGIN waits at most this long.
pub const MAX_WAIT: Duration = Duration::from_secs(5);

#[derive(Default)]
struct State {
    holder: Option<u64>,
    busy: bool,
    last: Option<Instant>,
}

#[derive(Default)]
pub struct TxGate {
    state: Mutex<State>,
    notify: Notify,
    next_id: AtomicU64,
    /// Acquisitions that timed out or passed over an idle holder (for logs and tests).
    pub overtaken: AtomicU64,
}

impl TxGate {
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Waits until connection `me` may run a transaction block alone (or the bounds expire).
    pub async fn acquire(&self, me: u64) {
        let start = Instant::now();
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wait = {
                let mut s = self.state.lock();
                let idle_for = s.last.map(|t| t.elapsed()).unwrap_or(Duration::ZERO);
                let take = match s.holder {
                    None => true,
                    Some(h) if h == me => true,
                    Some(_) if !s.busy && idle_for >= IDLE_STEAL => {
                        self.overtaken.fetch_add(1, Ordering::Relaxed);
                        true
                    }
                    Some(_) if start.elapsed() >= MAX_WAIT => {
                        self.overtaken.fetch_add(1, Ordering::Relaxed);
                        true
                    }
                    Some(_) => false,
                };
                if take {
                    s.holder = Some(me);
                    s.busy = true;
                    s.last = Some(Instant::now());
                    return;
                }
                if s.busy {
                    MAX_WAIT.saturating_sub(start.elapsed())
                } else {
                    IDLE_STEAL.saturating_sub(idle_for)
                }
            };
            let _ = tokio::time::timeout(wait.max(Duration::from_millis(1)), notified).await;
        }
    }

    /// Marks the holder's activity: `busy` while a statement of its block runs.
    pub fn touch(&self, me: u64, busy: bool) {
        let mut s = self.state.lock();
        if s.holder == Some(me) {
            s.busy = busy;
            s.last = Some(Instant::now());
        }
    }

    /// Ends `me`'s block (no-op if `me` is not the holder).
    pub fn release(&self, me: u64) {
        let mut s = self.state.lock();
        if s.holder == Some(me) {
            s.holder = None;
            s.busy = false;
            drop(s);
            self.notify.notify_waiters();
        }
    }

    pub fn holder(&self) -> Option<u64> {
        self.state.lock().holder
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_at_a_time_and_idle_steal() {
        let g = Arc::new(TxGate::default());
        g.acquire(1).await;
        let g2 = g.clone();
        let t = tokio::spawn(async move {
            let s = Instant::now();
            g2.acquire(2).await;
            s.elapsed()
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        g.touch(1, false);
        g.release(1);
        let waited = t.await.unwrap();
        assert!(waited >= Duration::from_millis(4), "{waited:?}");
        assert_eq!(g.holder(), Some(2));
        // Holder 2 goes idle: 3 gets in after IDLE_STEAL.
        g.touch(2, false);
        let s = Instant::now();
        g.acquire(3).await;
        assert!(s.elapsed() >= IDLE_STEAL - Duration::from_millis(5));
        assert_eq!(g.holder(), Some(3));
        g.release(2); // no-op: 2 no longer holds it
        assert_eq!(g.holder(), Some(3));
    }
}
