//! Row write locks: a transaction that writes a key holds that key's lock until it commits or
//! rolls back; a second writer of the same key waits for it (as in PostgreSQL) instead of
//! failing at commit. Readers never take locks.
//!
//! The table is sharded by key hash; each shard is a map from (table id, key) to the owning
//! transaction plus a condition variable its waiters sleep on. A waiter records whom it waits for
//! in one wait-for map; before sleeping it follows that map from the holder, and if the chain
//! comes back to itself the wait would never end: it fails with 40P01 (deadlock detected) and
//! the other transactions go on. The edge and the check are made under the one wait-for mutex,
//! so of two transactions closing a cycle at the same moment one always sees the other.
//!
//! Table locks (an ALTER TABLE in a transaction block) are held by sessions, row locks by
//! transactions; both kinds of wait are edges of the one graph, whose nodes are transactions.
//! A session's transaction joins it as its session's on its first row lock
//! ([`LockTable::join`]): a session waiting for a table lock is then an edge from its
//! transaction to the holding session's, so a block that waits for a table lock held by another
//! session's block, which waits for one of the first block's rows, closes a cycle the check
//! sees. A session whose transaction holds no row lock cannot be in a cycle (nobody waits for
//! it) and adds no edge. Transaction ids are never reused, so an edge left by a waiter that
//! has not yet woken names a transaction that has ended, never a session's next one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use super::interrupt::{canceled_by_user, Interrupt};
use crate::error::{Error, Result, SqlState};
use crate::types::Key;

const SHARDS: usize = 64;
/// The wait-for graph: transaction → the transaction it waits for, and the transaction of
/// each session (table-lock owner) that joined.
#[derive(Default)]
struct Graph {
    waits_for: HashMap<u64, u64>,
    txn_of: HashMap<u64, u64>,
}

impl Graph {
    /// Records that transaction `me` waits for transaction `holder`; true (and the edge
    /// removed) if that closes a cycle.
    fn closes_cycle(&mut self, me: u64, holder: u64) -> bool {
        self.waits_for.insert(me, holder);
        let mut at = holder;
        for _ in 0..=self.waits_for.len() {
            match self.waits_for.get(&at) {
                Some(&next) if next == me => {
                    self.waits_for.remove(&me);
                    return true;
                }
                Some(&next) => at = next,
                None => return false,
            }
        }
        false
    }
}

/// Waiters wake at least this often to re-check for deadlocks formed after they slept (the
/// holder they wait for may have changed) and for their deadline.
const RECHECK: Duration = Duration::from_millis(100);

#[derive(Default)]
struct Shard {
    owners: Mutex<HashMap<(u32, Key), u64>>,
    released: Condvar,
}

pub(crate) struct LockTable {
    shards: Vec<Shard>,
    /// Who waits for whom, row and table waits alike.
    graph: Mutex<Graph>,
    /// Table locks (ALTER TABLE inside a transaction block, PostgreSQL's ACCESS EXCLUSIVE):
    /// table id → the owner (a session) holding it until its block ends.
    tables: Mutex<HashMap<u32, u64>>,
    tables_released: Condvar,
    /// How many table locks are held: statements skip the mutex while none is.
    tables_held: AtomicUsize,
}

impl Default for LockTable {
    fn default() -> Self {
        LockTable {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            graph: Mutex::new(Graph::default()),
            tables: Mutex::new(HashMap::new()),
            tables_released: Condvar::new(),
            tables_held: AtomicUsize::new(0),
        }
    }
}

/// The shard of a key: any well-spread function does (the shard's own map hashes the key
/// again with its keyed hasher), so a multiply for integer keys and xxh3 for the others, a
/// fraction of SipHash's cost on the path every row write takes.
fn shard_of(table: u32, key: &Key) -> usize {
    let h = match key {
        Key::Int(i) => *i as u64,
        Key::Bytes(b) => xxhash_rust::xxh3::xxh3_64(b),
    };
    let h = (h ^ ((table as u64) << 32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 58) as usize % SHARDS
}

impl LockTable {
    /// Takes the lock on `(table, key)` for transaction `me`, waiting while another holds it.
    /// Returns whether `me` waited. Fails with 40P01 on a deadlock, with 55P03 when
    /// `deadline` passes first, and with 57014 when the statement's request is canceled
    /// (`stop`; its deadline is the caller's business); in every case `me` does not hold
    /// the lock.
    pub fn acquire(
        &self,
        me: u64,
        table: u32,
        key: &Key,
        deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<bool> {
        let shard = &self.shards[shard_of(table, key)];
        let mut owners = shard.owners.lock();
        let mut waited = false;
        let mut edge = false;
        let id = (table, key.clone());
        let result = loop {
            let holder = match owners.get(&id) {
                None => {
                    owners.insert(id, me);
                    break Ok(waited);
                }
                Some(&h) if h == me => break Ok(waited),
                Some(&h) => h,
            };
            edge = true;
            if self.closes_cycle(me, holder) {
                break Err(Error::new(
                    SqlState::DEADLOCK_DETECTED,
                    format!(
                        "deadlock detected: transaction {me} and transaction {holder} wait for each other"
                    ),
                ));
            }
            // Checked under the shard mutex, which `wake_all` takes before notifying: a cancel
            // either is seen here or wakes the wait below.
            if stop.canceled() {
                break Err(canceled_by_user());
            }
            let mut sleep = RECHECK;
            if let Some(d) = deadline {
                let now = Instant::now();
                if now >= d {
                    break Err(Error::new(
                        SqlState::LOCK_NOT_AVAILABLE,
                        "canceling statement due to lock timeout",
                    ));
                }
                sleep = sleep.min(d - now);
            }
            waited = true;
            crate::store::wait::blocking(|| shard.released.wait_for(&mut owners, sleep));
        };
        drop(owners);
        if edge {
            self.graph.lock().waits_for.remove(&me);
        }
        result
    }

    /// Makes transaction `txn` the one of session `owner` (the owner of the session's table
    /// locks) in the wait-for graph, until [`LockTable::leave`]. Call before it takes its
    /// first row lock.
    pub fn join(&self, txn: u64, owner: u64) {
        self.graph.lock().txn_of.insert(owner, txn);
    }

    /// Ends [`LockTable::join`] (after the transaction released its row locks).
    pub fn leave(&self, txn: u64, owner: u64) {
        let mut g = self.graph.lock();
        if g.txn_of.get(&owner) == Some(&txn) {
            g.txn_of.remove(&owner);
        }
    }

    /// Takes, without waiting, the lock on `(table, k)` for every `k` of `keys` that no other
    /// transaction holds, one shard mutex at a time (a batch of inserts pays one lock round-trip
    /// per shard, not per key). Returns the positions in `keys` of those another transaction
    /// holds: `me` holds every other one, and waits for these with [`LockTable::acquire`].
    pub fn try_acquire_many(&self, me: u64, table: u32, keys: &[&Key]) -> Vec<usize> {
        let mut order: Vec<(usize, usize)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (shard_of(table, k), i))
            .collect();
        order.sort_unstable();
        let mut busy = Vec::new();
        for group in order.chunk_by(|a, b| a.0 == b.0) {
            let mut owners = self.shards[group[0].0].owners.lock();
            owners.reserve(group.len());
            for &(_, i) in group {
                match owners.entry((table, keys[i].clone())) {
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(me);
                    }
                    std::collections::hash_map::Entry::Occupied(e) if *e.get() == me => {}
                    std::collections::hash_map::Entry::Occupied(_) => busy.push(i),
                }
            }
        }
        busy.sort_unstable();
        busy
    }

    /// Records that transaction `me` waits for transaction `holder`; true (and the edge
    /// removed) if that closes a cycle.
    fn closes_cycle(&self, me: u64, holder: u64) -> bool {
        self.graph.lock().closes_cycle(me, holder)
    }

    /// Releases every lock `me` holds among `keys` and wakes their waiters.
    pub fn release<'a>(&self, me: u64, keys: impl Iterator<Item = (u32, &'a Key)>) {
        let mut touched = [false; SHARDS];
        for (table, key) in keys {
            let s = shard_of(table, key);
            let mut owners = self.shards[s].owners.lock();
            if let std::collections::hash_map::Entry::Occupied(e) = owners.entry((table, key.clone())) {
                if *e.get() == me {
                    e.remove();
                    touched[s] = true;
                }
            }
        }
        for (s, t) in touched.iter().enumerate() {
            if *t {
                self.shards[s].released.notify_all();
            }
        }
    }

    /// Wakes every waiter so it re-checks its statement's interrupt (a cancel request). Each
    /// shard's mutex is taken first, so a waiter between its check and its sleep cannot miss it.
    pub fn wake_all(&self) {
        for s in &self.shards {
            drop(s.owners.lock());
            s.released.notify_all();
        }
        drop(self.tables.lock());
        self.tables_released.notify_all();
    }

    /// Waits while an owner other than `me` holds the lock of table `table`; then, if `take`,
    /// takes it for `me` (held until [`LockTable::unlock_tables`]). Returns whether it waited.
    /// Fails with 55P03 when `deadline` passes first and with 57014 when `stop` fires
    /// (cancel or statement deadline); `me` then holds nothing new.
    pub fn table_lock(
        &self,
        me: u64,
        table: u32,
        take: bool,
        deadline: Option<Instant>,
        stop: &Interrupt,
    ) -> Result<bool> {
        if !take && self.tables_held.load(Ordering::SeqCst) == 0 {
            return Ok(false);
        }
        let mut owners = self.tables.lock();
        let mut waited = false;
        // The transaction of this session that the wait's edge leaves from, if any.
        let mut edge: Option<u64> = None;
        let result = loop {
            let holder = match owners.get(&table) {
                Some(&h) if h != me => h,
                _ => {
                    if take {
                        owners.insert(table, me);
                        self.tables_held.store(owners.len(), Ordering::SeqCst);
                    }
                    break Ok(waited);
                }
            };
            let closes = {
                let mut g = self.graph.lock();
                match (g.txn_of.get(&me).copied(), g.txn_of.get(&holder).copied()) {
                    (Some(m), Some(h)) => {
                        edge = Some(m);
                        g.closes_cycle(m, h)
                    }
                    _ => false,
                }
            };
            if closes {
                break Err(Error::new(
                    SqlState::DEADLOCK_DETECTED,
                    format!(
                        "deadlock detected: session {me} waits for the lock of a table that session {holder} holds, and that session waits for it"
                    ),
                ));
            }
            // Checked under the mutex, which `wake_all` takes before notifying.
            if let Err(e) = stop.check() {
                break Err(e);
            }
            let mut sleep = RECHECK;
            let mut late = None;
            for d in [deadline, stop.deadline].into_iter().flatten() {
                let now = Instant::now();
                if now >= d {
                    late = Some(match deadline {
                        Some(l) if l <= now => Error::new(
                            SqlState::LOCK_NOT_AVAILABLE,
                            "canceling statement due to lock timeout",
                        ),
                        _ => super::interrupt::statement_timeout(),
                    });
                    break;
                }
                sleep = sleep.min(d - now);
            }
            if let Some(e) = late {
                break Err(e);
            }
            waited = true;
            crate::store::wait::blocking(|| self.tables_released.wait_for(&mut owners, sleep));
        };
        drop(owners);
        if let Some(m) = edge {
            self.graph.lock().waits_for.remove(&m);
        }
        result
    }

    /// The tables whose locks owners other than `me` hold.
    pub fn tables_locked_by_others(&self, me: u64) -> Vec<u32> {
        if self.tables_held.load(Ordering::SeqCst) == 0 {
            return Vec::new();
        }
        let owners = self.tables.lock();
        owners
            .iter()
            .filter(|(_, o)| **o != me)
            .map(|(t, _)| *t)
            .collect()
    }

    /// Releases every table lock `me` holds, waking their waiters; returns their tables.
    pub fn unlock_tables(&self, me: u64) -> Vec<u32> {
        let mut owners = self.tables.lock();
        let mine: Vec<u32> = owners
            .iter()
            .filter(|(_, o)| **o == me)
            .map(|(t, _)| *t)
            .collect();
        if !mine.is_empty() {
            owners.retain(|_, o| *o != me);
            self.tables_held.store(owners.len(), Ordering::SeqCst);
            self.tables_released.notify_all();
        }
        mine
    }

    /// Number of row locks held (for tests and metrics).
    pub fn held(&self) -> usize {
        self.shards.iter().map(|s| s.owners.lock().len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn second_writer_waits_until_release() {
        let lt = Arc::new(LockTable::default());
        let k = Key::Int(7);
        assert!(!lt.acquire(1, 1, &k, None, &Interrupt::default()).unwrap());
        assert!(
            !lt.acquire(1, 1, &k, None, &Interrupt::default()).unwrap(),
            "re-entrant for the holder"
        );
        let lt2 = lt.clone();
        let t = std::thread::spawn(move || {
            lt2.acquire(2, 1, &Key::Int(7), None, &Interrupt::default())
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(30));
        assert!(!t.is_finished());
        lt.release(1, [(1u32, &k)].into_iter());
        assert!(t.join().unwrap(), "waited");
        assert_eq!(lt.held(), 1);
        lt.release(2, [(1u32, &k)].into_iter());
        assert_eq!(lt.held(), 0);
    }

    #[test]
    fn try_acquire_many_takes_free_keys_and_reports_held_ones() {
        let lt = LockTable::default();
        let keys: Vec<Key> = (0..200).map(Key::Int).collect();
        lt.acquire(2, 1, &keys[17], None, &Interrupt::default()).unwrap();
        lt.acquire(1, 1, &keys[40], None, &Interrupt::default()).unwrap();
        let refs: Vec<&Key> = keys.iter().collect();
        assert_eq!(lt.try_acquire_many(1, 1, &refs), vec![17]);
        assert_eq!(lt.held(), 200);
        // The same keys of another table are other locks.
        assert!(lt.try_acquire_many(2, 9, &refs[..3]).is_empty());
        lt.release(1, keys.iter().map(|k| (1u32, k)));
        assert_eq!(
            lt.held(),
            4,
            "transaction 2's lock and its three on table 9 remain"
        );
    }

    #[test]
    fn deadlock_is_detected_and_one_side_goes_on() {
        let lt = Arc::new(LockTable::default());
        let (a, b) = (Key::Int(1), Key::Int(2));
        lt.acquire(1, 1, &a, None, &Interrupt::default()).unwrap();
        lt.acquire(2, 1, &b, None, &Interrupt::default()).unwrap();
        let lt2 = lt.clone();
        let t = std::thread::spawn(move || lt2.acquire(1, 1, &Key::Int(2), None, &Interrupt::default()));
        std::thread::sleep(Duration::from_millis(30));
        let e = lt.acquire(2, 1, &a, None, &Interrupt::default()).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::DEADLOCK_DETECTED);
        lt.release(2, [(1u32, &b)].into_iter());
        assert!(t.join().unwrap().unwrap());
    }

    #[test]
    fn deadline_gives_lock_not_available() {
        let lt = LockTable::default();
        let k = Key::Bytes(b"x".to_vec());
        lt.acquire(1, 3, &k, None, &Interrupt::default()).unwrap();
        let e = lt
            .acquire(
                2,
                3,
                &k,
                Some(Instant::now() + Duration::from_millis(20)),
                &Interrupt::default(),
            )
            .unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::LOCK_NOT_AVAILABLE);
        assert!(lt.graph.lock().waits_for.is_empty());
    }
}
