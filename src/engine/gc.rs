//! Garbage collection of row versions no snapshot can see, and the sweep that finds versions
//! orphaned by a crash (both run by the maintenance thread, `maintenance.rs`).
//!
//! Rules (see docs/ARCHITECTURE.md):
//! - A version superseded by a version at position `by` is deleted once every active snapshot
//!   is at or past `by`.
//! - A key whose newest version is a tombstone at `t` leaves the primary index once every
//!   snapshot is at or past `t` (under the commit lock, so no commit can chain onto it meanwhile).
//!   The tombstone row itself stays until an index checkpoint covers `t`: recovery replays
//!   rows after the checkpoint, and without the tombstone it would resurrect the key.
//! - Every version of a key is deleted no later than its tombstone row (else it would be the
//!   key's newest stored version, live): rounds are all or nothing and retried in queue order,
//!   and no tombstone row goes while the sweep after an unclean open is pending.
//! - The sweep visits every stored version at or below the open watermark ([`SweepScan`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rocksdb::WriteBatch;

use super::{Inner, Table};
use crate::error::{Error, Result};
use crate::index::keyed::TOMBSTONE;
use crate::store::{row_key, CF_ROWS};
use crate::types::codec::decode_version_header;
use crate::types::Key;

pub(crate) enum GcKind {
    Superseded,
    Tombstone { key: Key, prev: u64 },
}

pub(crate) struct GcItem {
    table: u32,
    /// The version to delete (for a tombstone item: the tombstone).
    rowid: u64,
    /// Collectable once the oldest snapshot is at or past this position.
    by: u64,
    kind: GcKind,
}

impl GcItem {
    pub fn superseded(table: u32, rowid: u64, by: u64) -> GcItem {
        GcItem {
            table,
            rowid,
            by,
            kind: GcKind::Superseded,
        }
    }
    pub fn tombstone(table: u32, key: Key, rowid: u64, prev: u64) -> GcItem {
        GcItem {
            table,
            rowid,
            by: rowid,
            kind: GcKind::Tombstone { key, prev },
        }
    }
}

#[derive(Default)]
pub(crate) struct GcQueue {
    /// In commit order, so `by` never decreases along the queue: sweep items carry the open
    /// watermark, below every later commit's position, and go to the front (`sweep`), as do
    /// the items of a failed round, in their order (`collect`).
    items: VecDeque<GcItem>,
    /// Tombstone rows waiting for an index checkpoint to cover them: (table, rowid).
    tomb_rows: Vec<(u32, u64)>,
}

impl GcQueue {
    pub fn push(&mut self, items: Vec<GcItem>) {
        self.items.extend(items);
    }

    /// Versions waiting: queued items and tombstone rows waiting for a checkpoint.
    pub fn pending(&self) -> usize {
        self.items.len() + self.tomb_rows.len()
    }

    /// Versions queued for collection (superseded versions and tombstones), not counting the
    /// tombstone rows waiting for a checkpoint.
    pub fn queued(&self) -> usize {
        self.items.len()
    }

    pub fn forget_table(&mut self, id: u32) {
        self.items.retain(|i| i.table != id);
        self.tomb_rows.retain(|(t, _)| *t != id);
    }
}

fn tables_by_id(inner: &Inner) -> HashMap<u32, Arc<Table>> {
    inner.tables.read().values().map(|t| (t.id, t.clone())).collect()
}

/// Collects what no snapshot can see. Returns the number of row versions deleted.
///
/// One round at a time (`Inner::gc_run`), all of its deletions in one write: a round that fails
/// (a read error walking a chain, a write error) deletes nothing and puts everything it took
/// back where it was, to be retried by the next round (or, if the failure stopped the store, by
/// the sweep of the engine instance that replaces this one). A deletion that was never retried
/// would leave its version behind its key's newer versions, and once those were collected it
/// would look like the key's newest version (a deleted key coming back).
pub(crate) fn collect(inner: &Inner) -> Result<usize> {
    let _one = inner.gc_run.lock();
    let min = inner.oldest_snapshot();
    let ready: Vec<GcItem> = {
        let mut q = inner.gc.lock();
        let n = q.items.iter().take_while(|i| i.by <= min).count();
        q.items.drain(..n).collect()
    };
    match collect_ready(inner, &ready) {
        Ok((deleted, deferred, covered)) => {
            let covered: HashSet<(u32, u64)> = covered.into_iter().collect();
            // Rows of a table dropped meanwhile went with the table.
            let live: HashSet<u32> = inner.tables.read().values().map(|t| t.id).collect();
            let mut q = inner.gc.lock();
            q.tomb_rows.extend(deferred);
            q.tomb_rows
                .retain(|e| live.contains(&e.0) && !covered.contains(e));
            drop(q);
            inner.stats.lock().versions_collected += deleted as u64;
            Ok(deleted)
        }
        Err(e) => {
            let mut q = inner.gc.lock();
            for i in ready.into_iter().rev() {
                q.items.push_front(i);
            }
            Err(e)
        }
    }
}

/// One round of [`collect`]: deletes the versions of `ready` and the tombstone rows an index
/// checkpoint now covers, in one write. Returns the number deleted, the tombstone rows that now
/// wait for a checkpoint, and the waiting ones it deleted.
#[allow(clippy::type_complexity)]
fn collect_ready(inner: &Inner, ready: &[GcItem]) -> Result<(usize, Vec<(u32, u64)>, Vec<(u32, u64)>)> {
    let tables = tables_by_id(inner);
    let mut batch = WriteBatch::default();
    let rocks = inner.store.db()?;
    let cf = rocks.cf(CF_ROWS);
    let mut deleted = 0usize;
    let mut deferred = Vec::new();

    for item in ready {
        let Some(t) = tables.get(&item.table) else {
            continue;
        };
        match &item.kind {
            GcKind::Superseded => {
                drop_version(inner, t, item.rowid, &mut batch)?;
                deleted += 1;
            }
            GcKind::Tombstone { key, prev } => {
                {
                    // Under the commit lock: a commit validating against this key either sees the
                    // tombstone (and chains onto it) or sees no key at all. Done again (a no-op)
                    // if this round fails and the item is retried.
                    let _c = inner.commit.lock();
                    let mut pk = t.pk.write();
                    if pk.get(key)? == Some(item.rowid | TOMBSTONE) {
                        pk.remove(key);
                    }
                }
                if *prev != 0 {
                    drop_version(inner, t, *prev, &mut batch)?;
                    deleted += 1;
                }
                deferred.push((item.table, item.rowid));
            }
        }
    }

    // Tombstone rows an index checkpoint now covers. A tombstone row goes together with every
    // older version still reachable from it (normally none are left: every older version was
    // deleted by an earlier round, or is in this one). Not while the sweep after an unclean open
    // is pending: versions whose deletion the crash (or a retired engine instance) lost are not
    // reachable from the tombstone, and would outlive it as the key's newest version.
    let mut covered = Vec::new();
    if inner.pending_sweep.lock().is_none() {
        let q = inner.gc.lock();
        for &(tid, rowid) in q.tomb_rows.iter().chain(&deferred) {
            if let Some(t) = tables.get(&tid) {
                if t.ckpt_watermark.load(Ordering::Acquire) >= rowid {
                    covered.push((tid, rowid));
                }
            }
        }
    }
    for &(tid, rowid) in &covered {
        let mut r = rowid;
        while r != 0 {
            let prev = match inner.store.get_row(tid, r)? {
                Some(b) => decode_version_header(&b)?.1,
                None => 0,
            };
            batch.delete_cf(cf, row_key(tid, r));
            inner.cache.load().remove(r);
            deleted += 1;
            r = prev;
        }
    }
    if !batch.is_empty() {
        // Out of the WAL: a deletion a crash loses is found again by the sweep after the open.
        inner.store.write_unlogged(batch)?;
    }
    Ok((deleted, deferred, covered))
}

/// Deletes one superseded version (and its secondary index entries). A version that cannot be
/// read for its secondary entries fails the round (it is retried), unless it is gone already
/// (queued twice: by a commit and by the sweep after a crash).
fn drop_version(inner: &Inner, t: &Table, rowid: u64, batch: &mut WriteBatch) -> Result<()> {
    if !t.def().indexes.is_empty() {
        match inner.fetch(t.id, rowid) {
            Ok(v) => {
                if let Some(row) = &v.row {
                    t.remove_secondary_entries(row, &v.key, rowid);
                }
            }
            Err(Error::Corrupt(_)) => {}
            Err(e) => return Err(e),
        }
    }
    batch.delete_cf(inner.store.db()?.cf(CF_ROWS), row_key(t.id, rowid));
    inner.cache.load().remove(rowid);
    Ok(())
}

/// After an unclean shutdown: finds row versions at or below the open watermark that are not
/// the version the index held at open (garbage whose collection the crash interrupted, or that
/// a retired engine instance had queued) and queues them, a bounded step at a time
/// ([`SweepScan::step`]) so that the maintenance thread can pace it. Queues nothing until the
/// whole scan is done ([`SweepScan::finish`]).
///
/// Every stored version must be visited, not only those written after the last checkpoint: a
/// version stored before the checkpoint may have been superseded before it and collected after
/// it (the collector waits for snapshots and its rounds are unlogged), and a crash then leaves
/// it stored with no later version pointing at a lost deletion.
pub(crate) struct SweepScan {
    open_watermark: u64,
    /// The tables left to scan (ids, the one being scanned last) and where the scan of the last
    /// one resumes.
    tables: Vec<u32>,
    next: u64,
    items: Vec<GcItem>,
    tombs: Vec<(u32, u64)>,
}

/// What one step of the sweep's scan left.
pub(crate) enum SweepProgress {
    /// More versions to read.
    More,
    /// Every version read: [`SweepScan::finish`] queues what was found.
    Scanned,
    /// Shutdown began; the sweep stays pending.
    Stopped,
}

impl SweepScan {
    pub fn new(inner: &Inner, open_watermark: u64) -> SweepScan {
        let mut tables: Vec<u32> = tables_by_id(inner).into_keys().collect();
        tables.sort_unstable_by(|a, b| b.cmp(a));
        SweepScan {
            open_watermark,
            tables,
            next: 0,
            items: Vec::new(),
            tombs: Vec::new(),
        }
    }

    /// Reads up to `batch` stored versions (at least one), going on from where the last step
    /// stopped. A step that fails (a read error) keeps what earlier steps found: a version that
    /// was not its key's version at open stays garbage, so the step can simply be retried.
    pub fn step(&mut self, inner: &Inner, batch: usize) -> Result<SweepProgress> {
        if super::sweep_fails(inner.store.path()) {
            return Err(Error::Storage(
                "IO error: the crash sweep's scan failed (injected by a test)".into(),
            ));
        }
        let w = self.open_watermark;
        let mut left = batch.max(1);
        while left > 0 {
            let Some(&id) = self.tables.last() else {
                return Ok(SweepProgress::Scanned);
            };
            // A table dropped since the open took its rows with it.
            let Some(t) = inner.tables.read().values().find(|t| t.id == id).cloned() else {
                self.tables.pop();
                self.next = 0;
                continue;
            };
            // Read each step: a checkpoint taken since lets tombstones it covers go at once.
            let ckpt = t.ckpt_watermark.load(Ordering::Acquire);
            let (mut stopped, mut last) = (false, None);
            let (items, tombs) = (&mut self.items, &mut self.tombs);
            inner.store.for_each_row(t.id, self.next, w + 1, |rowid, bytes| {
                if inner.shutdown.load(Ordering::Acquire) {
                    stopped = true;
                    return Ok(false);
                }
                let (tomb, _, key) = decode_version_header(bytes)?;
                let current_at_open = version_at_open(inner, &t, &key, w)?;
                if current_at_open != Some(rowid) {
                    if tomb && rowid > ckpt {
                        // Still needed by replay until a checkpoint covers it.
                        tombs.push((t.id, rowid));
                    } else {
                        items.push(GcItem::superseded(t.id, rowid, w));
                    }
                }
                last = Some(rowid);
                left -= 1;
                Ok(left > 0)
            })?;
            if stopped {
                return Ok(SweepProgress::Stopped);
            }
            match last {
                // The batch ended inside this table: resume after the last version read.
                Some(r) if left == 0 => {
                    self.next = r + 1;
                    return Ok(SweepProgress::More);
                }
                // The table's versions ran out.
                _ => {
                    self.tables.pop();
                    self.next = 0;
                }
            }
        }
        Ok(if self.tables.is_empty() {
            SweepProgress::Scanned
        } else {
            SweepProgress::More
        })
    }

    /// Queues what the scan found; returns how many versions that is.
    pub fn finish(self, inner: &Inner) -> usize {
        // Sweep items carry the open watermark, below every later commit: put them in front.
        // Queued together, after the scan: one collection round takes them all, so the
        // versions below a tombstone go no later than the tombstone itself.
        let found = self.items.len() + self.tombs.len();
        let mut q = inner.gc.lock();
        for i in self.items.into_iter().rev() {
            q.items.push_front(i);
        }
        q.tomb_rows.extend(self.tombs);
        found
    }
}

/// The position the index held for `key` when the database was opened (walking back from the
/// current entry past versions committed since).
fn version_at_open(inner: &Inner, t: &Table, key: &Key, open_watermark: u64) -> Result<Option<u64>> {
    let Some(p) = t.pk.read().get(key)? else {
        return Ok(None);
    };
    version_at(inner, t.id, p & !TOMBSTONE, open_watermark)
}

/// The version of a key at position `w`, walking back from its version at `rowid` (the
/// newest, or any later than `w`) along the chain: the first at or below `w`, None if the key
/// had none. A version missing from the chain (collected) ends it: None.
pub(crate) fn version_at(inner: &Inner, table: u32, mut rowid: u64, w: u64) -> Result<Option<u64>> {
    let files = inner.files();
    while rowid > w {
        match inner
            .fetch_bytes(&files, table, rowid)
            .and_then(|b| decode_version_header(&b))
        {
            Ok((_, prev, _)) => rowid = prev,
            // A version that is not there ends the chain; a read that failed is no answer
            // (taking it for "no version" queued the key's current version as garbage).
            Err(Error::Corrupt(_)) => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    Ok((rowid != 0).then_some(rowid))
}
