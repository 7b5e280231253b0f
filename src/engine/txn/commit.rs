//! Ending a transaction: rollback, and the commit protocol (validate, one WriteBatch or an
//! ingested file, publish, early lock release, group fsync, visibility).

use super::*;

impl Transaction {
    /// Discards every write.
    pub fn rollback(mut self) {
        self.finish();
    }

    /// Ends the transaction: releases its snapshot and its row locks (after a commit: once the
    /// commit is visible, so a waiter that gets a lock sees the version that held it).
    pub(super) fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.db.end_snapshot(self.snapshot);
            self.release_locks();
            if let (true, Some(owner)) = (self.joined.get(), self.party) {
                self.db.locks.leave(self.id, owner);
            }
        }
    }

    pub(super) fn release_locks(&self) {
        // A read-only transaction holds none: no map to swap out and drop.
        if self.locks.borrow().is_empty() {
            return;
        }
        let locks = self.locks.take();
        if !locks.is_empty() {
            let keys = locks.iter().flat_map(|(t, m)| m.keys().map(move |k| (*t, k)));
            self.db.locks.release(self.id, keys);
        }
    }

    /// Commits: validates (every written key still has the version seen when its lock was
    /// taken, else 40001), writes one RocksDB batch, publishes to the indexes, releases the row
    /// locks, waits for the WAL fsync (shared with concurrent commits), then makes the commit
    /// visible. All or nothing.
    pub fn commit(mut self) -> Result<()> {
        if !self.finished && self.db.retired.load(Ordering::Acquire) {
            // Nothing of this transaction reached the WAL (its writes are buffered until
            // commit), so the failure is definite: 40001 tells the client to run it again.
            let e = match self.db.retired_error(self.id) {
                Some(e) if e.sqlstate() == SqlState::CRASH_SHUTDOWN => Error::new(
                    SqlState::SERIALIZATION_FAILURE,
                    "could not serialize access: the storage engine restarted after a write failure while this transaction was open; nothing it wrote was stored, run it again",
                ),
                Some(e) => e,
                None => Error::internal("retired engine instance without an error"),
            };
            self.finish();
            return Err(e);
        }
        self.check_active()?;
        let r = self.commit_inner();
        self.finish();
        r
    }

    pub(super) fn commit_inner(&mut self) -> Result<()> {
        let mut writes = std::mem::take(&mut self.writes);
        // A table whose writes were all rolled back to a savepoint has nothing to commit, and
        // may be gone since (a table the block created after that savepoint).
        writes.retain(|_, w| !w.ops.is_empty());
        let n: usize = writes.values().map(|w| w.ops.len()).sum();
        let db = self.db.clone();
        let sync = self.sync.unwrap_or(db.opts.sync_commits);
        if n == 0 {
            // Nothing written, but a row lock may have shown this transaction a version a
            // commit has not yet made durable (locks are released before the fsync, step 4):
            // what it decided on that must not be acknowledged before that commit is.
            if sync && !self.locks.borrow().is_empty() {
                db.store.wait_durable(db.store.last_ticket())?;
            }
            // On a faulted store a commit answered "outcome unknown" may be stored, invisible to
            // every snapshot here: a delete or update that found no row, and so wrote nothing,
            // may have missed that commit's row. Acknowledging it would tell a client who ran it
            // after that answer that the row is gone, and the reopen may bring it back
            // (fault_test saw an acknowledged delete undone this way). Nothing was written:
            // definite, and worth running again once the engine has reopened.
            if db.store.outcome_pending() {
                return Err(Error::new(
                    SqlState::SERIALIZATION_FAILURE,
                    "could not serialize access: a write whose outcome is unknown may have changed what this transaction read (the storage engine is reopening after a write failure); nothing was written, run it again",
                ));
            }
            return Ok(());
        }
        db.check_open()?;
        let mut c = db.commit.lock();

        // 1. Validate against everything committed so far (including commits not yet synced).
        //    The row locks make this hold by construction; it guards against writers that do
        //    not take row locks (bulk loads, DDL). Keys without a lock (fresh hidden row
        //    identities) must not have changed since the snapshot.
        let mut prevs: Vec<Vec<u64>> = Vec::with_capacity(writes.len());
        let locks = self.locks.borrow();
        for w in writes.values() {
            if w.table.is_dropped() {
                return Err(Error::undefined_table(&w.table.name()));
            }
            let pk = w.table.pk.read();
            let locked = locks.get(&w.table.id);
            let mut p = Vec::with_capacity(w.ops.len());
            for k in w.ops.keys() {
                let cur = pk.get(k)?.unwrap_or(0);
                let changed = match locked.and_then(|m| m.get(k)) {
                    // A tombstone the collector removed from the index meanwhile is no change.
                    Some(&seen) => cur != seen && !(cur == 0 && seen & TOMBSTONE != 0),
                    None => cur & !TOMBSTONE > self.snapshot,
                };
                if changed {
                    db.stats.lock().conflicts += 1;
                    return Err(Error::serialization());
                }
                p.push(cur);
            }
            prevs.push(p);
        }
        drop(locks);
        self.check_altered_meanwhile(&writes)?;
        for w in writes.values() {
            check_unique_committed(&db, &w.table, &w.ops)?;
        }

        // 2. One atomic write: every version appended at fresh positions. Small commits go
        //    through the WAL as one WriteBatch (fsync shared by group commit); large ones are
        //    written as one SST file and ingested (atomic and durable by itself).
        let first = c.next_rowid;
        let bulk = n >= BULK_COMMIT_ROWS;
        // Small commits put their versions in the row cache: they sit in RocksDB's memtable,
        // which the direct read path does not cover, until a flush writes them to a file.
        // Large ones are ingested as a file, which is mapped before the commit returns
        // (`Store::ingest_rows`), so their reads start from the mapping instead.
        let mut cached: Vec<crate::engine::cache::Bytes> = Vec::with_capacity(if bulk { 0 } else { n });
        let mut batch = WriteBatch::default();
        let rocks = db.store.db()?;
        let cf_rows = rocks.cf(CF_ROWS);
        // Tables in id order, keys in key order: with ascending rowids the row keys ascend too.
        let mut order: Vec<usize> = (0..writes.len()).collect();
        let tables: Vec<&TableWrites> = writes.values().collect();
        order.sort_by_key(|&i| tables[i].table.id);
        let emit = |put: &mut PutFn<'_>| -> Result<u64> {
            let mut buf = Vec::with_capacity(128);
            let mut rowid = first;
            for &i in &order {
                let w = tables[i];
                for ((k, op), prev) in w.ops.iter().zip(&prevs[i]) {
                    let row = match op {
                        Pending::Put(r) => Some(r.as_slice()),
                        Pending::Delete => None,
                    };
                    encode_version(prev & !TOMBSTONE, k, row, &mut buf);
                    put(&row_key(w.table.id, rowid), &buf)?;
                    rowid += 1;
                }
            }
            Ok(rowid)
        };
        let rowid = if bulk {
            let mut end = first;
            db.store.ingest_rows(|put| {
                end = emit(put)?;
                Ok(())
            })?;
            end
        } else {
            emit(&mut |k, v| {
                batch.put_cf(cf_rows, k, v);
                cached.push(Arc::from(v));
                Ok(())
            })?
        };
        let last = rowid - 1;
        // A bulk commit's rows are durable once ingested: a failure from here on answers
        // "unknown", never "did not happen" (a small commit's append error is definite).
        let after = |e: Error| {
            if bulk {
                db.store
                    .failed_after_ingest("recording a bulk commit's positions", &e)
            } else {
                e
            }
        };
        let meta_db = db.store.db().map_err(after)?;
        let cf_meta = meta_db.cf(CF_META);
        batch.put_cf(cf_meta, b"next_rowid", rowid.to_be_bytes());
        if let Some(owner) = self.undo_owner {
            let (from, to) = crate::engine::block_undo::owner_range(owner);
            batch.delete_range_cf(cf_meta, from, to);
        }
        c.next_rowid = rowid;
        let ticket = db.store.append(batch).map_err(after)?;

        // 3. Publish to the indexes and the row cache (readers with older snapshots follow the
        //    version chain past these positions, so publishing before the fsync is safe).
        let mut rowid = first;
        let mut gc_items = Vec::new();
        let mut writes: Vec<(TableWrites, Vec<u64>)> = writes.into_values().zip(prevs).collect();
        writes.sort_by_key(|(w, _)| w.table.id);
        for (w, p) in writes {
            let t = &w.table;
            let has_sec = !t.def().indexes.is_empty();
            let mut pk = t.pk.write();
            if pk.is_empty()
                && w.ops.len() >= BULK_COMMIT_ROWS
                && w.ops.values().all(|o| matches!(o, Pending::Put(_)))
            {
                // Loading an empty table: build the index in bulk from the sorted keys.
                let entries: Vec<(Key, u64)> = w.ops.keys().cloned().zip(rowid..).collect();
                *pk = crate::index::keyed::KeyIndex::bulk_load(pk.kind(), entries);
                for (k, op) in w.ops {
                    if let Pending::Put(r) = op {
                        if has_sec {
                            t.add_secondary_entries(&r, &k, rowid);
                        }
                    }
                    rowid += 1;
                }
                continue;
            }
            for ((k, op), prev) in w.ops.into_iter().zip(p) {
                let prev_rowid = prev & !TOMBSTONE;
                match op {
                    Pending::Put(r) => {
                        pk.upsert(&k, rowid);
                        if has_sec {
                            t.add_secondary_entries(&r, &k, rowid);
                        }
                        if prev_rowid != 0 {
                            gc_items.push(GcItem::superseded(t.id, prev_rowid, rowid));
                        }
                    }
                    Pending::Delete => {
                        pk.upsert(&k, rowid | TOMBSTONE);
                        gc_items.push(GcItem::tombstone(t.id, k, rowid, prev_rowid));
                    }
                }
                rowid += 1;
            }
        }
        // The versions of a small commit, at consecutive positions from `first` (replacing
        // older versions in their sets).
        let cache = db.cache.load();
        for (b, rowid) in cached.into_iter().zip(first..) {
            cache.insert(rowid, b);
        }
        db.gc.lock().push(gc_items);
        drop(c);

        // 4. Early lock release: the versions are published and their batch is in the WAL
        //    ahead of any later commit, so the next writer of these rows may go on now instead
        //    of after the fsync. Its own commit is appended after this one and acknowledged
        //    only once durable, and the WAL is sequential: that fsync covers this commit too.
        //    Snapshots do not see this commit until it is durable (step 5), so only writers,
        //    through their row locks, ever see a version that is not yet durable.
        self.release_locks();

        // 5. Durability, then visibility.
        if sync {
            db.store.wait_durable(ticket)?;
        }
        db.visible.fetch_max(last, Ordering::AcqRel);
        db.versions_since_ckpt.fetch_add(n as u64, Ordering::Relaxed);
        db.stats.lock().commits += 1;
        Ok(())
    }
}

/// Under the commit lock: no committed row other than the one being replaced holds a value
/// this transaction puts into a unique index, and the transaction does not put one twice.
fn check_unique_committed(db: &Inner, t: &Table, ops: &BTreeMap<Key, Pending>) -> Result<()> {
    let def = t.def();
    if !def.indexes.iter().any(|i| i.unique) {
        return Ok(());
    }
    let sec = t.secondary.read();
    let pk = t.pk.read();
    for (i, idx) in def.indexes.iter().enumerate() {
        if !idx.unique {
            continue;
        }
        let mut mine: HashMap<Vec<u8>, &Key> = HashMap::new();
        for (k, op) in ops {
            let Pending::Put(row) = op else { continue };
            let Some(v) = def.index_value(idx, row) else {
                continue;
            };
            if mine.insert(v.clone(), k).is_some() {
                return Err(def.unique_violation(&idx.name, &idx.columns, row));
            }
            for k2 in sec[i].candidates(Bound::Included(&v), Bound::Included(&v)) {
                if &k2 == k || ops.contains_key(&k2) {
                    continue; // replaced or deleted by this transaction
                }
                // Does the newest committed version of k2 still hold v?
                if let Some(p) = pk.get(&k2)? {
                    if p & TOMBSTONE == 0 {
                        let ver = db.fetch(t.id, p)?;
                        if ver.row.as_ref().and_then(|r| def.index_value(idx, r)).as_ref() == Some(&v) {
                            return Err(def.unique_violation(&idx.name, &idx.columns, row));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
