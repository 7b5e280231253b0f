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
use crate::error::{Error, Result, SqlState};
use crate::index::keyed::{KeyIndex, TOMBSTONE};
use crate::store::{row_key, CF_META};
use crate::types::codec::encode_version;
use crate::types::{Key, Row};

impl Database {
    /// Inserts `rows` into `table` atomically and durably (regardless of `Options::sync_commits`:
    /// the ingested file is fsynced). Returns the number of rows inserted.
    ///
    /// Tables with secondary indexes take the ordinary transactional path.
    pub fn bulk_insert(&self, table: &str, rows: Vec<Row>) -> Result<u64> {
        let t = self.inner.table(table)?;
        let def = t.def();
        if !def.indexes.is_empty() {
            let n = rows.len() as u64;
            self.transaction(|tx| {
                for r in rows {
                    tx.insert_in(&t, r)?;
                }
                Ok(())
            })?;
            return Ok(n);
        }
        let n = rows.len();
        if n == 0 {
            return Ok(0);
        }
        let mut keyed: Vec<(Key, Row)> = Vec::with_capacity(n);
        if def.has_primary_key() {
            for r in rows {
                let r = def.check_row(r)?;
                keyed.push((def.key_of(&r)?, r));
            }
            keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            if keyed.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(duplicate(&def.name, def.pkey_name.as_deref()));
            }
        } else {
            let start = t.hidden_next.fetch_add(n as i64, Ordering::Relaxed);
            for (i, r) in rows.into_iter().enumerate() {
                keyed.push((Key::Int(start + i as i64), def.check_row(r)?));
            }
        }
        bulk_commit(&self.inner, &t, keyed)
    }
}

fn duplicate(table: &str, pkey: Option<&str>) -> Error {
    Error::new(
        SqlState::UNIQUE_VIOLATION,
        format!(
            "duplicate key value violates unique constraint \"{}\"",
            pkey.map(str::to_string)
                .unwrap_or_else(|| format!("{table}_pkey"))
        ),
    )
}

fn bulk_commit(db: &Arc<Inner>, t: &Arc<super::Table>, keyed: Vec<(Key, Row)>) -> Result<u64> {
    db.check_open()?;
    let n = keyed.len();
    let mut c = db.commit.lock();
    if t.is_dropped() {
        return Err(Error::undefined_table(&t.name()));
    }
    // Against the committed state (the commit lock keeps other writers out).
    let mut prevs: Vec<u64> = Vec::with_capacity(n);
    let latest = c.next_rowid - 1;
    {
        let pk = t.pk.read();
        let empty = pk.is_empty();
        for (k, _) in &keyed {
            let p = if empty { None } else { pk.get(k) };
            match p {
                None => prevs.push(0),
                Some(p) if p & TOMBSTONE != 0 => prevs.push(p),
                Some(p) => {
                    if db.resolve(t.id, p, latest)?.is_some() {
                        let def = t.def();
                        return Err(duplicate(&def.name, def.pkey_name.as_deref()));
                    }
                    prevs.push(p);
                }
            }
        }
    }
    let first = c.next_rowid;
    let mut end = first;
    db.store.ingest_rows(|put| {
        let mut buf = Vec::with_capacity(128);
        for ((k, row), prev) in keyed.iter().zip(&prevs) {
            encode_version(prev & !TOMBSTONE, k, Some(row), &mut buf);
            put(&row_key(t.id, end), &buf)?;
            end += 1;
        }
        Ok(())
    })?;
    c.next_rowid = end;
    let mut batch = WriteBatch::default();
    batch.put_cf(db.store.cf(CF_META), b"next_rowid", end.to_be_bytes());
    let ticket = db.store.append(batch)?;

    let mut gc_items = Vec::new();
    {
        let mut pk = t.pk.write();
        if pk.is_empty() {
            let entries: Vec<(Key, u64)> = keyed.into_iter().map(|(k, _)| k).zip(first..).collect();
            *pk = KeyIndex::bulk_load(pk.kind(), entries);
        } else {
            for (((k, _), prev), rowid) in keyed.iter().zip(&prevs).zip(first..) {
                pk.upsert(k, rowid);
                if *prev != 0 {
                    gc_items.push(GcItem::superseded(t.id, prev & !TOMBSTONE, rowid));
                }
            }
        }
    }
    db.gc.lock().push(gc_items);
    drop(c);
    db.store.wait_durable(ticket)?;
    db.visible.fetch_max(end - 1, Ordering::AcqRel);
    db.versions_since_ckpt.fetch_add(n as u64, Ordering::Relaxed);
    db.stats.lock().commits += 1;
    Ok(n as u64)
}
