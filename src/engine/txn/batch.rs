//! Many inserts into one table in one call (SQL COPY): the rows are keyed and sorted, their row
//! locks taken a shard at a time, and they join the write set as one ordered merge instead of
//! one search each. The rules are `insert_in`'s, applied to the rows in order.

use super::*;
use crate::engine::{constraint, fk};

/// A failed [`Transaction::insert_batch_in`]: the error, and the position in the batch of the
/// row it is about (`None`: the whole batch, e.g. a dropped table).
#[derive(Debug)]
pub struct BatchError {
    pub row: Option<usize>,
    pub error: Error,
}

/// Keeps the failure of the earliest row: what inserting the rows one by one would report.
fn earliest(err: &mut Option<(usize, Error)>, row: usize, e: impl FnOnce() -> Error) {
    if err.as_ref().is_none_or(|(r, _)| row < *r) {
        *err = Some((row, e()));
    }
}

impl Transaction {
    /// Inserts `rows` into `t` as one INSERT statement of them would (or COPY): each row is
    /// fitted to the columns (23502 and the other row checks) and passes the CHECK constraints
    /// (23514), in order; then the batch goes in (23505 for a primary key or unique value
    /// already present, in the batch or in what this transaction sees); then each row's
    /// parents must exist (23503; their row locks are held until the transaction ends), so
    /// rows of the batch may reference one another. On failure the error names the earliest
    /// failing row of the first of these steps that fails, and none of the batch is written
    /// (row locks taken stay held until the transaction ends, as after a failed `insert_in`).
    pub fn insert_batch_in(
        &mut self,
        t: &Arc<Table>,
        rows: Vec<Row>,
    ) -> std::result::Result<u64, BatchError> {
        let def = t.def();
        if def.checks.is_empty() && def.foreign_keys.is_empty() {
            return self.insert_rows(t, rows);
        }
        let whole = |error| BatchError { row: None, error };
        self.check_active().map_err(whole)?;
        let rows = self
            .as_any(|tx| {
                let mut fitted = Vec::with_capacity(rows.len());
                for (i, r) in rows.into_iter().enumerate() {
                    let r = def.check_row(r).map_err(|e| (i, e));
                    let r = r.and_then(|r| {
                        if !def.checks.is_empty() {
                            constraint::evaluator().check(tx, &def, &r).map_err(|e| (i, e))?;
                        }
                        Ok(r)
                    });
                    match r {
                        Ok(r) => fitted.push(r),
                        Err((i, error)) => return Ok(Err(BatchError { row: Some(i), error })),
                    }
                }
                Ok(Ok(fitted))
            })
            .map_err(whole)??;
        if def.foreign_keys.is_empty() {
            return self.insert_rows(t, rows);
        }
        // The parents are checked once the whole batch is in; a failure undoes it (`nested`).
        let mut failed_row = None;
        let n = rows.len() as u64;
        self.nested(|tx| {
            let check: Vec<Row> = rows.clone();
            tx.insert_rows(t, rows).map_err(|e| {
                failed_row = e.row;
                e.error
            })?;
            let stop = tx.stop.clone();
            for (i, r) in check.iter().enumerate() {
                fk::check_parents(&*tx, &def, r, None, &stop).inspect_err(|_| failed_row = Some(i))?;
            }
            Ok(n)
        })
        .map_err(|error| BatchError {
            row: failed_row,
            error,
        })
    }

    /// [`Transaction::insert_batch_in`] without CHECK or FOREIGN KEY constraints (the SQL
    /// layer's COPY: it runs them), as [`Transaction::insert_row`] would insert the rows one
    /// after the other, in one pass.
    pub(crate) fn insert_rows(
        &mut self,
        t: &Arc<Table>,
        rows: Vec<Row>,
    ) -> std::result::Result<u64, BatchError> {
        let whole = |error| BatchError { row: None, error };
        self.check_active().map_err(whole)?;
        self.check_table(t).map_err(whole)?;
        let n = rows.len();
        if !self.savepoints.is_empty() {
            // Under a savepoint each write is logged for undo: the ordinary path does that.
            for (i, r) in rows.into_iter().enumerate() {
                self.insert_row(t, r)
                    .map_err(|error| BatchError { row: Some(i), error })?;
            }
            return Ok(n as u64);
        }
        let def = t.def();
        let mut err: Option<(usize, Error)> = None;
        // 1. Each row checked and keyed, with its place in the batch; the first bad row ends it.
        let mut keyed: Vec<(Key, usize, Row)> = Vec::with_capacity(n);
        let hidden = !def.has_primary_key();
        let first_hidden = if hidden {
            t.hidden_next.fetch_add(n as i64, Ordering::Relaxed)
        } else {
            0
        };
        for (i, r) in rows.into_iter().enumerate() {
            let r = match def.check_row(r) {
                Ok(r) => r,
                Err(e) => {
                    err = Some((i, e));
                    break;
                }
            };
            let k = if hidden {
                Key::Int(first_hidden + i as i64)
            } else {
                match def.key_of(&r) {
                    Ok(k) => k,
                    Err(e) => {
                        err = Some((i, e));
                        break;
                    }
                }
            };
            keyed.push((k, i, r));
        }
        // 2. A key twice in the batch: its second row is the duplicate.
        if !hidden {
            if !keyed.is_sorted_by(|a, b| a.0 <= b.0) {
                keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
            }
            for w in keyed.windows(2) {
                if w[0].0 == w[1].0 {
                    earliest(&mut err, w[1].1, || Self::duplicate_key(t, &w[1].2));
                }
            }
        }
        // 3. Unique secondary indexes: within the batch, against this transaction's own rows
        //    (collected once per batch), and against the committed rows it sees (looked up by
        //    value): what `check_unique` decides row by row, without a pass over the own
        //    writes for every row.
        let unique: Vec<usize> = (0..def.indexes.len())
            .filter(|&x| def.indexes[x].unique)
            .collect();
        if !unique.is_empty() {
            let own = self.writes.get(&t.id).map(|w| &w.ops);
            let mut mine: Vec<HashMap<Vec<u8>, &Key>> = vec![HashMap::new(); def.indexes.len()];
            for (k, p) in own.into_iter().flatten() {
                if let Pending::Put(r) = p {
                    for &x in &unique {
                        if let Some(v) = def.index_value(&def.indexes[x], r) {
                            mine[x].insert(v, k);
                        }
                    }
                }
            }
            let mut seen: Vec<std::collections::HashSet<Vec<u8>>> =
                vec![Default::default(); def.indexes.len()];
            let mut by_row: Vec<usize> = (0..keyed.len()).collect();
            by_row.sort_unstable_by_key(|&j| keyed[j].1);
            'rows: for j in by_row {
                let (k, i, r) = &keyed[j];
                if err.as_ref().is_some_and(|(e, _)| e < i) {
                    break;
                }
                for &x in &unique {
                    let idx = &def.indexes[x];
                    let Some(v) = def.index_value(idx, r) else {
                        continue;
                    };
                    let mut taken = mine[x].get(&v).is_some_and(|k2| *k2 != k);
                    if !taken {
                        let candidates = t
                            .secondary
                            .read()
                            .get(x)
                            .map(|s| s.candidates(Bound::Included(&v), Bound::Included(&v)))
                            .unwrap_or_default();
                        for k2 in candidates {
                            // A key this transaction wrote is judged by its own row, above.
                            if &k2 == k || own.is_some_and(|o| o.contains_key(&k2)) {
                                continue;
                            }
                            match self.get_in(t, &k2) {
                                Ok(Some(row)) if def.index_value(idx, &row).as_ref() == Some(&v) => {
                                    taken = true;
                                    break;
                                }
                                Ok(_) => {}
                                Err(e) => {
                                    earliest(&mut err, *i, || e);
                                    break 'rows;
                                }
                            }
                        }
                    }
                    if taken || !seen[x].insert(v) {
                        earliest(&mut err, *i, || def.unique_violation(&idx.name, &idx.columns, r));
                        break 'rows;
                    }
                }
            }
        }
        if let Some((row, error)) = err {
            // The rows before the failing one would have been locked one by one; nothing of the
            // batch is written, so their locks are not needed.
            return Err(BatchError {
                row: Some(row),
                error,
            });
        }
        // 4. Against this transaction's own writes (a put is a duplicate, a delete frees the
        //    key) and, holding the key's lock, the newest committed version.
        if !hidden {
            let at = |i: usize| move |error| BatchError { row: Some(i), error };
            let mut to_lock: Vec<usize> = Vec::with_capacity(keyed.len());
            {
                let own = self.writes.get(&t.id).map(|w| &w.ops).filter(|o| !o.is_empty());
                let locks = self.locks.borrow();
                let held = locks.get(&t.id);
                for (j, (k, i, r)) in keyed.iter().enumerate() {
                    match own.and_then(|o| o.get(k)) {
                        Some(Pending::Put(_)) => earliest(&mut err, *i, || Self::duplicate_key(t, r)),
                        Some(Pending::Delete) => {}
                        None if held.is_some_and(|m| m.contains_key(k)) => {
                            if self.committed_live(t, k) {
                                earliest(&mut err, *i, || Self::duplicate_key(t, r));
                            }
                        }
                        None => to_lock.push(j),
                    }
                }
            }
            let refs: Vec<&Key> = to_lock.iter().map(|&j| &keyed[j].0).collect();
            self.join_lock_graph();
            let busy = self.db.locks.try_acquire_many(self.id, t.id, &refs);
            drop(refs);
            {
                let pk = t.pk.read();
                let mut locks = self.locks.borrow_mut();
                let m = locks.entry(t.id).or_default();
                m.reserve(to_lock.len() - busy.len());
                let mut busy_it = busy.iter().peekable();
                for (x, &j) in to_lock.iter().enumerate() {
                    if busy_it.next_if_eq(&&x).is_some() {
                        continue;
                    }
                    let (k, i, r) = &keyed[j];
                    let latest = match pk.get(k) {
                        Ok(p) => p.unwrap_or(0),
                        Err(e) => {
                            earliest(&mut err, *i, || e);
                            0
                        }
                    };
                    if latest != 0 && latest & TOMBSTONE == 0 {
                        earliest(&mut err, *i, || Self::duplicate_key(t, r));
                    }
                    m.insert(k.clone(), latest);
                }
            }
            // Keys another transaction holds: wait for each as `insert_in` would.
            for x in busy {
                let (k, i, r) = &keyed[to_lock[x]];
                if err.as_ref().is_some_and(|(e, _)| e < i) {
                    continue;
                }
                self.acquire(t, k, &self.stop).map_err(at(*i))?;
                if self.committed_live(t, k) {
                    earliest(&mut err, *i, || Self::duplicate_key(t, r));
                }
            }
            if let Some((row, error)) = err {
                return Err(BatchError {
                    row: Some(row),
                    error,
                });
            }
        }
        // 5. Into the write set: built in bulk when it is empty, merged when the batch is a fair
        //    share of it, else inserted key by key.
        let entries = keyed.into_iter().map(|(k, _, r)| (k, Pending::Put(Arc::new(r))));
        let w = self
            .writes
            .entry(t.id)
            .or_insert_with(|| TableWrites::new(t.clone()));
        if w.ops.is_empty() {
            w.ops = entries.collect();
            // Computed again from the new writes by the next index read that needs it.
            *w.own.get_mut() = None;
        } else if w.ops.len() / 16 <= n {
            let mut more: BTreeMap<Key, Pending> = entries.collect();
            w.ops.append(&mut more);
            *w.own.get_mut() = None;
        } else {
            for (k, p) in entries {
                w.set(k, p);
            }
        }
        Ok(n as u64)
    }
}
