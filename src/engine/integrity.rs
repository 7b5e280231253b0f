//! `Database::verify_integrity`: every primary index compared with the persisted rows
//! (invariant 4 of docs/INVARIANTS.md).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::Inner;
use crate::error::{Error, Result};
use crate::index::keyed::TOMBSTONE;
use crate::types::Key;

impl Inner {
    pub(super) fn verify_integrity(&self) -> Result<usize> {
        let _c = self.commit.lock();
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        let mut checked = 0;
        for t in tables {
            // Newest version per key from the persisted rows.
            let mut newest: BTreeMap<Key, (u64, bool)> = BTreeMap::new();
            let mut history: BTreeMap<Key, Vec<(u64, bool, u64)>> = BTreeMap::new();
            self.store.for_each_row(t.id, 0, u64::MAX, |rowid, bytes| {
                let (tomb, prev, key) = crate::types::codec::decode_version_header(bytes)?;
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
                    .entries()
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
                    t.pk.read().get(&k),
                    t.ckpt_watermark.load(Ordering::Acquire),
                    _c.next_rowid
                )));
            }
            checked += from_rows.len();
        }
        Ok(checked)
    }
}
