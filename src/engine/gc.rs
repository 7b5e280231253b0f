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

use std::collections::{HashMap, VecDeque};
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
    /// In commit order, so `by` never decreases along the queue (sweep items are appended with
    /// the open watermark, which is below every later commit's position... and are pushed before
    /// any commit; see `sweep`).
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

    pub fn forget_table(&mut self, id: u32) {
        self.items.retain(|i| i.table != id);
        self.tomb_rows.retain(|(t, _)| *t != id);
    }
}

fn tables_by_id(inner: &Inner) -> HashMap<u32, Arc<Table>> {
    inner.tables.read().values().map(|t| (t.id, t.clone())).collect()
}

/// Collects what no snapshot can see. Returns the number of row versions deleted.
pub(crate) fn collect(inner: &Inner) -> Result<usize> {
    let min = inner.oldest_snapshot();
    let ready: Vec<GcItem> = {
        let mut q = inner.gc.lock();
        let n = q.items.iter().take_while(|i| i.by <= min).count();
        q.items.drain(..n).collect()
    };
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
        match item.kind {
            GcKind::Superseded => {
                drop_version(inner, t, item.rowid, &mut batch)?;
                deleted += 1;
            }
            GcKind::Tombstone { key, prev } => {
                {
                    // Under the commit lock: a commit validating against this key either sees the
                    // tombstone (and chains onto it) or sees no key at all.
                    let _c = inner.commit.lock();
                    let mut pk = t.pk.write();
                    if pk.get(&key) == Some(item.rowid | TOMBSTONE) {
                        pk.remove(&key);
                    }
                }
                if prev != 0 {
                    drop_version(inner, t, prev, &mut batch)?;
                    deleted += 1;
                }
                deferred.push((item.table, item.rowid));
            }
        }
    }

    // Tombstone rows an index checkpoint now covers. A tombstone row goes together with every
    // older version still reachable from it (normally none are left): without the tombstone,
    // such a version would look like the key's live newest version.
    let mut q = inner.gc.lock();
    q.tomb_rows.extend(deferred);
    let mut covered = Vec::new();
    q.tomb_rows.retain(|&(tid, rowid)| match tables.get(&tid) {
        None => false,
        Some(t) if t.ckpt_watermark.load(Ordering::Acquire) >= rowid => {
            covered.push((tid, rowid));
            false
        }
        Some(_) => true,
    });
    drop(q);
    for (tid, rowid) in covered {
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
        inner.store.write_nosync(batch)?;
    }
    inner.stats.lock().versions_collected += deleted as u64;
    Ok(deleted)
}

/// Deletes one superseded version (and its secondary index entries).
fn drop_version(inner: &Inner, t: &Table, rowid: u64, batch: &mut WriteBatch) -> Result<()> {
    if !t.def().indexes.is_empty() {
        if let Ok(v) = inner.fetch(t.id, rowid) {
            if let Some(row) = &v.row {
                t.remove_secondary_entries(row, &v.key, rowid);
            }
        }
    }
    batch.delete_cf(inner.store.db()?.cf(CF_ROWS), row_key(t.id, rowid));
    inner.cache.load().remove(rowid);
    Ok(())
}

/// After an unclean shutdown: finds row versions below `open_watermark` that are not the version
/// the index held at open (garbage whose collection the crash interrupted) and queues them.
pub(crate) fn sweep(inner: &Inner, open_watermark: u64) -> Result<usize> {
    let tables = tables_by_id(inner);
    let mut found = 0;
    for t in tables.values() {
        let mut items = Vec::new();
        let mut tombs = Vec::new();
        let ckpt = t.ckpt_watermark.load(Ordering::Acquire);
        inner
            .store
            .for_each_row(t.id, 0, open_watermark + 1, |rowid, bytes| {
                if inner.shutdown.load(Ordering::Acquire) {
                    return Ok(false);
                }
                let (tomb, _, key) = decode_version_header(bytes)?;
                let current_at_open = version_at_open(inner, t, &key, open_watermark)?;
                if current_at_open == Some(rowid) {
                    return Ok(true);
                }
                if tomb && rowid > ckpt {
                    // Still needed by replay until a checkpoint covers it.
                    tombs.push((t.id, rowid));
                } else {
                    items.push(GcItem::superseded(t.id, rowid, open_watermark));
                }
                found += 1;
                Ok(true)
            })?;
        // Sweep items carry the open watermark, below every later commit: put them in front.
        // Queued together, after the scan: the versions below a tombstone are queued no later
        // than the tombstone itself.
        let mut q = inner.gc.lock();
        for i in items.into_iter().rev() {
            q.items.push_front(i);
        }
        q.tomb_rows.extend(tombs);
    }
    Ok(found)
}

/// The position the index held for `key` when the database was opened (walking back from the
/// current entry past versions committed since).
fn version_at_open(inner: &Inner, t: &Table, key: &Key, open_watermark: u64) -> Result<Option<u64>> {
    let Some(p) = t.pk.read().get(key) else {
        return Ok(None);
    };
    let mut rowid = p & !TOMBSTONE;
    let files = inner.files();
    while rowid > open_watermark {
        match inner
            .fetch_bytes(&files, t.id, rowid)
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
