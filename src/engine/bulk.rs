//! Bulk insert: many rows into one table as one atomic, durable transaction, without buffering
//! them one by one in a transaction's write set.
//!
//! Rows are checked, keyed and sorted; duplicates (among the rows, or against live rows of the
//! table) fail the whole call with 23505 and change nothing. The versions are written as one
//! ingested SST file (atomic and fsynced by RocksDB) and the index is bulk-loaded when the table
//! is empty, or updated key by key otherwise.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rocksdb::WriteBatch;

use super::gc::GcItem;
use super::{Database, Inner};
use crate::error::{Error, Result};
use crate::index::keyed::{KeyIndex, TOMBSTONE};
use crate::store::{row_key, CF_META};
use crate::types::codec::{decode_version, encode_version, set_version_prev};
use crate::types::{Key, Row};

impl Database {
    /// Inserts `rows` into `table` atomically and durably (regardless of `Options::sync_commits`:
    /// the ingested file is fsynced). Returns the number of rows inserted.
    ///
    /// Tables with secondary indexes, CHECK constraints or foreign keys take the ordinary
    /// transactional path: one [`crate::Transaction::insert_batch_in`] of the rows, so the
    /// constraints hold (23514, 23503) and a refused row leaves the table unchanged.
    pub fn bulk_insert(&self, table: &str, rows: impl IntoIterator<Item = Row>) -> Result<u64> {
        let inner = self.core.cur.load_full();
        let t = inner.table(table)?;
        let def = t.def();
        if !def.indexes.is_empty() || !def.checks.is_empty() || !def.foreign_keys.is_empty() {
            let rows: Vec<Row> = rows.into_iter().collect();
            return self.transaction(|tx| {
                tx.set_sync(true);
                tx.insert_batch_in(&t, rows).map_err(|e| e.error)
            });
        }
        let t0 = std::time::Instant::now();
        // Each row is checked, keyed and encoded as it arrives, then freed: the batch is held
        // as one buffer of encoded versions, not as decoded rows (a tenth of the allocations,
        // and freeing a row right after building it is far cheaper than freeing millions
        // of cold ones at the end).
        let rows = rows.into_iter();
        let mut batch = Encoded {
            keyed: Vec::with_capacity(rows.size_hint().0),
            bytes: Vec::new(),
        };
        let mut buf = Vec::with_capacity(128);
        if def.has_primary_key() {
            for r in rows {
                let r = def.check_row(r)?;
                let k = def.key_of(&r)?;
                batch.push(k, &r, &mut buf);
            }
            if !batch.keyed.is_sorted_by(|a, b| a.0 <= b.0) {
                batch.keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            }
            if let Some(w) = batch.keyed.windows(2).find(|w| w[0].0 == w[1].0) {
                // The row is read back from its encoded version for the DETAIL's key values.
                let row = decode_version(&batch.bytes[w[1].1.clone()])?
                    .row
                    .unwrap_or_default();
                return Err(def.unique_violation(&def.pkey_constraint(), &def.primary_key, &row));
            }
        } else {
            let rows: Vec<Row> = rows.map(|r| def.check_row(r)).collect::<Result<_>>()?;
            let start = t.hidden_next.fetch_add(rows.len() as i64, Ordering::Relaxed);
            for (i, r) in rows.into_iter().enumerate() {
                batch.push(Key::Int(start + i as i64), &r, &mut buf);
            }
        }
        if batch.keyed.is_empty() {
            return Ok(0);
        }
        let prepared = t0.elapsed();
        let n = batch.keyed.len();
        let r = bulk_commit(&inner, &t, batch);
        // The index grew by a whole load at once: the caches give up their share now rather
        // than at the maintenance thread's next fit.
        super::memory::fit_caches(&inner);
        tracing::debug!(rows = n, ?prepared, total = ?t0.elapsed(), "bulk insert");
        r
    }
}

/// Encoded row versions (previous-version pointer still 0) and their keys, in key order once
/// sorted; `keyed[i].1` is the byte range of row i's version in `bytes`.
struct Encoded {
    keyed: Vec<(Key, std::ops::Range<usize>)>,
    bytes: Vec<u8>,
}

impl Encoded {
    fn push(&mut self, k: Key, row: &[crate::types::Value], buf: &mut Vec<u8>) {
        encode_version(0, &k, Some(row), buf);
        let at = self.bytes.len();
        self.bytes.extend_from_slice(buf);
        self.keyed.push((k, at..self.bytes.len()));
    }
}

fn bulk_commit(db: &Arc<Inner>, t: &Arc<super::Table>, batch: Encoded) -> Result<u64> {
    db.check_open()?;
    let Encoded { keyed, bytes } = batch;
    let n = keyed.len();
    let mut c = db.commit.lock();
    if t.is_dropped() {
        return Err(Error::undefined_table(&t.name()));
    }
    // Against the committed state (the commit lock keeps other writers out).
    let mut prevs: Vec<u64> = Vec::with_capacity(n);
    let latest = c.next_rowid - 1;
    let (empty, kind) = {
        let pk = t.pk.read();
        (pk.is_empty(), pk.kind())
    };
    if !empty {
        let pk = t.pk.read();
        for (k, _) in &keyed {
            match pk.get(k)? {
                None => prevs.push(0),
                Some(p) if p & TOMBSTONE != 0 => prevs.push(p),
                Some(p) => {
                    if let Some(row) = db.resolve(t.id, p, latest)? {
                        // The live row holds the same key values the DETAIL shows.
                        let def = t.def();
                        let row = def.complete_row(Arc::unwrap_or_clone(row));
                        return Err(def.unique_violation(&def.pkey_constraint(), &def.primary_key, &row));
                    }
                    prevs.push(p);
                }
            }
        }
    }
    let t0 = std::time::Instant::now();
    let first = c.next_rowid;
    let mut end = first;
    // Into an empty table, the new index is bulk-loaded on a second thread while this one
    // writes the rows' SST; it is published only once the rows are in.
    let (ingested, fresh) = std::thread::scope(|s| {
        let fresh = empty.then(|| {
            s.spawn(|| {
                // Its only way to fail is a panic; the fail point `bulk-index-build` makes one.
                if crate::failpoint::hit("bulk-index-build") {
                    panic!("injected failure building the bulk load's index");
                }
                let entries: Vec<(Key, u64)> = keyed.iter().map(|(k, _)| k.clone()).zip(first..).collect();
                KeyIndex::bulk_load(kind, entries)
            })
        });
        let ingested = db.store.ingest_rows(|put| {
            let mut buf = Vec::with_capacity(128);
            for (i, (_, at)) in keyed.iter().enumerate() {
                let prev = prevs.get(i).copied().unwrap_or(0);
                buf.clear();
                buf.extend_from_slice(&bytes[at.clone()]);
                set_version_prev(&mut buf, prev & !TOMBSTONE);
                put(&row_key(t.id, end), &buf)?;
                end += 1;
            }
            Ok(())
        });
        let fresh = fresh.map(|h| h.join().map_err(|_| Error::internal("bulk index build panicked")));
        (ingested, fresh)
    });
    ingested?;
    // From here on the rows are durable: a failure answers "unknown", never "did not happen".
    let after = |what: &str, e: Error| db.store.failed_after_ingest(what, &e);
    let fresh = fresh
        .transpose()
        .map_err(|e| after("building the bulk load's index", e))?;
    let ingest_time = t0.elapsed();
    c.next_rowid = end;
    let mut batch = WriteBatch::default();
    let meta = db
        .store
        .db()
        .map_err(|e| after("recording the bulk load's positions", e))?;
    batch.put_cf(meta.cf(CF_META), b"next_rowid", end.to_be_bytes());
    drop(meta);
    let ticket = db
        .store
        .append(batch)
        .map_err(|e| after("recording the bulk load's positions", e))?;

    let mut gc_items = Vec::new();
    {
        let mut pk = t.pk.write();
        match fresh {
            // The commit lock kept every other writer out, so the index is still empty.
            Some(idx) if pk.is_empty() => *pk = idx,
            _ => {
                for (i, ((k, _), rowid)) in keyed.iter().zip(first..).enumerate() {
                    pk.upsert(k, rowid);
                    let prev = prevs.get(i).copied().unwrap_or(0);
                    if prev != 0 {
                        gc_items.push(GcItem::superseded(t.id, prev & !TOMBSTONE, rowid));
                    }
                }
            }
        }
    }
    let indexed = t0.elapsed();
    db.gc.lock().push(gc_items);
    drop(c);
    db.store.wait_durable(ticket)?;
    tracing::debug!(rows = n, ingested = ?ingest_time, ?indexed, durable = ?t0.elapsed(), "bulk commit");
    db.visible.fetch_max(end - 1, Ordering::AcqRel);
    db.versions_since_ckpt.fetch_add(n as u64, Ordering::Relaxed);
    db.stats.lock().commits += 1;
    Ok(n as u64)
}
