//! `Database::verify_integrity`: every primary and secondary index compared with the persisted
//! rows (invariant 4 of docs/INVARIANTS.md).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::Ordering;

use super::secondary_form::Entry;
use super::{Inner, Table};
use crate::error::{Error, Result};
use crate::index::keyed::TOMBSTONE;
use crate::types::codec::{decode_version, decode_version_header};
use crate::types::Key;

impl Inner {
    pub(super) fn verify_integrity(&self) -> Result<usize> {
        // No collection round half done (its entries removed, its rows not yet deleted).
        let _g = self.gc_run.lock();
        let _c = self.commit.lock();
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        let mut checked = 0;
        for t in tables {
            let def = t.def();
            // Newest version per key from the persisted rows; and, per secondary index, the
            // entries of every stored version.
            let mut newest: BTreeMap<Key, (u64, bool)> = BTreeMap::new();
            let mut history: BTreeMap<Key, Vec<(u64, bool, u64)>> = BTreeMap::new();
            let mut stored: Vec<BTreeSet<Entry>> = vec![BTreeSet::new(); def.indexes.len()];
            self.store.for_each_row(t.id, 0, u64::MAX, |rowid, bytes| {
                let (tomb, prev, key) = decode_version_header(bytes)?;
                if !def.indexes.is_empty() {
                    if let Some(row) = decode_version(bytes)?.row {
                        for (set, idx) in stored.iter_mut().zip(&def.indexes) {
                            if let Some(v) = def.index_value(idx, &row) {
                                set.insert((v, key.clone(), rowid));
                            }
                        }
                    }
                }
                history.entry(key.clone()).or_default().push((rowid, tomb, prev));
                let e = newest.entry(key).or_insert((rowid, tomb));
                if rowid >= e.0 {
                    *e = (rowid, tomb);
                }
                Ok(true)
            })?;
            let from_rows: Vec<(Key, u64)> = newest
                .into_iter()
                .filter(|(_, (_, tomb))| !tomb)
                .map(|(k, (r, _))| (k, r))
                .collect();
            let from_index: Vec<(Key, u64)> =
                t.pk.read()
                    .entries()?
                    .into_iter()
                    .filter(|(_, p)| p & TOMBSTONE == 0)
                    .collect();
            if from_rows != from_index {
                let first_diff = from_rows
                    .iter()
                    .zip(&from_index)
                    .position(|(a, b)| a != b)
                    .unwrap_or(from_rows.len().min(from_index.len()));
                let k = match (from_index.get(first_diff), from_rows.get(first_diff)) {
                    (Some(a), Some(b)) => a.0.clone().min(b.0.clone()),
                    (Some(a), None) | (None, Some(a)) => a.0.clone(),
                    (None, None) => Key::Int(0),
                };
                return Err(Error::Corrupt(format!(
                    "table \"{}\": index has {} live keys, rows say {}; first difference at position {}: index {:?} rows {:?}; versions of {:?} (rowid, tombstone, prev): {:?}; index payload {:?}; checkpoint {}; next rowid {}",
                    t.name(),
                    from_index.len(),
                    from_rows.len(),
                    first_diff,
                    from_index.get(first_diff),
                    from_rows.get(first_diff),
                    k,
                    history.get(&k),
                    t.pk.read().get(&k).ok().flatten(),
                    t.ckpt_watermark.load(Ordering::Acquire),
                    _c.next_rowid
                )));
            }
            if !def.indexes.is_empty() {
                self.verify_secondary(&t, &stored, &from_rows)?;
            }
            checked += from_rows.len();
        }
        Ok(checked)
    }

    /// Each secondary index of `t` holds the entries of the newest live version of every key
    /// (`live`), and otherwise only entries of stored versions that are still to be collected:
    /// none once nothing waits for collection (no sweep pending, no queued version).
    fn verify_secondary(&self, t: &Table, stored: &[BTreeSet<Entry>], live: &[(Key, u64)]) -> Result<()> {
        let newest: HashSet<u64> = live.iter().map(|(_, r)| *r).collect();
        let quiet = self.pending_sweep.lock().is_none() && self.gc.lock().queued() == 0;
        let sec = t.secondary.read();
        for (s, stored) in sec.iter().zip(stored) {
            let bad = |what: &str, e: &Entry| {
                Error::Corrupt(format!(
                    "secondary index \"{}\" of table \"{}\" {what} (value {:?}, key {:?}, rowid {}); it has {} entries; checkpoint {}",
                    s.def.name,
                    t.name(),
                    e.0,
                    e.1,
                    e.2,
                    s.entries.len(),
                    t.ckpt_watermark.load(Ordering::Acquire)
                ))
            };
            for e in stored.iter().filter(|e| newest.contains(&e.2)) {
                if !s.entries.contains(e) {
                    return Err(bad("lacks the entry of a key's newest version", e));
                }
            }
            for e in &s.entries {
                if !stored.contains(e) {
                    return Err(bad("holds an entry no stored version has", e));
                }
                if quiet && !newest.contains(&e.2) {
                    return Err(bad(
                        "holds an entry of a version no longer newest, with nothing left to collect",
                        e,
                    ));
                }
            }
        }
        Ok(())
    }
}
