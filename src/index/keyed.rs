//! The index a table's primary key (or a secondary index) lives in: ALEX for integer keys, an
//! ordered B-tree fallback for every other key, behind one interface.
//!
//! Payloads are row positions (rowids). The top bit of a payload marks a *tombstone*: the key's
//! newest version is a delete that some snapshot may still need to see past.

use std::collections::BTreeMap;
use std::ops::Bound;

use std::sync::Arc;

use super::alex::{Alex, Checks, ImageError, ImageTag, Unavailable};
use super::mapped::{HugePage, Mapping};
use crate::types::Key;

/// Set in a payload when the newest version of the key is a delete.
pub const TOMBSTONE: u64 = 1 << 63;

/// Memory an index holds, for a memory budget. `heap` is allocated by the process (ALEX's
/// arena and the arrays built or rebuilt since open; the B-tree). `mapped` is the length of the
/// index image the index reads in place (file pages: shared with the OS page cache, copied into
/// private memory page by page where the index writes them); `mapped_live` is the part of it
/// that nodes still use (the rest belongs to nodes rebuilt on the heap since open).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexBytes {
    pub heap: usize,
    pub mapped: usize,
    pub mapped_live: usize,
}

/// Which structure answers; EXPLAIN prints this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    Alex,
    BTree,
}

impl IndexKind {
    pub fn name(&self) -> &'static str {
        match self {
            IndexKind::Alex => "ALEX",
            IndexKind::BTree => "ordered fallback (B-tree)",
        }
    }
}

/// A unique map from [`Key`] to a u64 payload, ordered by key.
pub enum KeyIndex {
    Alex(Alex<i64>),
    BTree(BTreeMap<Vec<u8>, u64>),
}

impl KeyIndex {
    pub fn new(kind: IndexKind) -> KeyIndex {
        match kind {
            IndexKind::Alex => KeyIndex::Alex(Alex::new()),
            IndexKind::BTree => KeyIndex::BTree(BTreeMap::new()),
        }
    }

    /// Builds from entries sorted by key with no duplicates.
    pub fn bulk_load(kind: IndexKind, sorted: Vec<(Key, u64)>) -> KeyIndex {
        match kind {
            IndexKind::Alex => {
                let pairs: Vec<(i64, u64)> = sorted
                    .into_iter()
                    .filter_map(|(k, v)| match k {
                        Key::Int(i) => Some((i, v)),
                        Key::Bytes(_) => None,
                    })
                    .collect();
                match Alex::bulk_load(&pairs) {
                    Ok(a) => KeyIndex::Alex(a),
                    // Unsorted input is a caller bug; fall back to inserting one by one.
                    Err(_) => {
                        let mut a = Alex::new();
                        for (k, v) in pairs {
                            a.upsert(k, v);
                        }
                        KeyIndex::Alex(a)
                    }
                }
            }
            IndexKind::BTree => KeyIndex::BTree(
                sorted
                    .into_iter()
                    .filter_map(|(k, v)| match k {
                        Key::Bytes(b) => Some((b, v)),
                        Key::Int(_) => None,
                    })
                    .collect(),
            ),
        }
    }

    pub fn kind(&self) -> IndexKind {
        match self {
            KeyIndex::Alex(_) => IndexKind::Alex,
            KeyIndex::BTree(_) => IndexKind::BTree,
        }
    }

    /// The payload of `key`. `Err` (on every read of an index): an index whose image failed
    /// its check after the open and which could not be rebuilt from the rows (`alex::lazy`).
    pub fn get(&self, key: &Key) -> crate::Result<Option<u64>> {
        Ok(match (self, key) {
            (KeyIndex::Alex(a), Key::Int(i)) => a.read(|a| a.get(*i)).map_err(unavailable)?,
            (KeyIndex::BTree(b), Key::Bytes(k)) => b.get(k).copied(),
            _ => None,
        })
    }

    /// Inserts or replaces; returns the old payload.
    pub fn upsert(&mut self, key: &Key, payload: u64) -> Option<u64> {
        match (self, key) {
            (KeyIndex::Alex(a), Key::Int(i)) => a.upsert(*i, payload),
            (KeyIndex::BTree(b), Key::Bytes(k)) => b.insert(k.clone(), payload),
            _ => None,
        }
    }

    pub fn remove(&mut self, key: &Key) -> Option<u64> {
        match (self, key) {
            (KeyIndex::Alex(a), Key::Int(i)) => a.remove(*i),
            (KeyIndex::BTree(b), Key::Bytes(k)) => b.remove(k),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            KeyIndex::Alex(a) => a.len(),
            KeyIndex::BTree(b) => b.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends up to `limit` entries within the bounds to `out`, in key order (descending when
    /// `reverse`). Returns true when the range may hold more entries than were appended.
    pub fn range_batch(
        &self,
        lo: Bound<&Key>,
        hi: Bound<&Key>,
        reverse: bool,
        limit: usize,
        out: &mut Vec<(Key, u64)>,
    ) -> crate::Result<bool> {
        let start = out.len();
        match self {
            KeyIndex::Alex(a) => {
                let (Some(lo), Some(hi)) = (int_bound(lo), int_bound(hi)) else {
                    return Ok(false);
                };
                if bounds_empty(lo, hi) {
                    return Ok(false);
                }
                if let (Bound::Included(k), Bound::Included(h)) = (lo, hi) {
                    // One key: a point lookup, which on an index opened lazily checks only the
                    // part of the node it reads (`alex::lazy`).
                    if k == h {
                        if limit > 0 {
                            if let Some(v) = a.read(|a| a.get(k)).map_err(unavailable)? {
                                out.push((Key::Int(k), v));
                            }
                        }
                        return Ok(out.len() - start == limit);
                    }
                }
                a.read(|a| {
                    // Again from the start if this runs a second time (`Alex::read`).
                    out.truncate(start);
                    let mut r = a.range((lo, hi));
                    if reverse {
                        out.extend(r.rev().take(limit).map(|(k, v)| (Key::Int(k), v)));
                    } else {
                        r.front_batch(limit, |k, v| out.push((Key::Int(k), v)));
                    }
                })
                .map_err(unavailable)?;
            }
            KeyIndex::BTree(b) => {
                let (Some(lo), Some(hi)) = (bytes_bound(lo), bytes_bound(hi)) else {
                    return Ok(false);
                };
                if bytes_bounds_empty(&lo, &hi) {
                    return Ok(false);
                }
                let r = b.range::<Vec<u8>, _>((lo, hi));
                if reverse {
                    out.extend(r.rev().take(limit).map(|(k, v)| (Key::Bytes(k.clone()), *v)));
                } else {
                    out.extend(r.take(limit).map(|(k, v)| (Key::Bytes(k.clone()), *v)));
                }
            }
        }
        Ok(out.len() - start == limit)
    }

    /// Every entry in key order.
    pub fn entries(&self) -> crate::Result<Vec<(Key, u64)>> {
        let mut out = Vec::with_capacity(self.len());
        match self {
            KeyIndex::Alex(a) => a
                .read(|a| {
                    out.clear();
                    out.extend(a.iter().map(|(k, v)| (Key::Int(k), v)));
                })
                .map_err(unavailable)?,
            KeyIndex::BTree(b) => out.extend(b.iter().map(|(k, v)| (Key::Bytes(k.clone()), *v))),
        }
        Ok(out)
    }

    pub fn first(&self) -> crate::Result<Option<(Key, u64)>> {
        Ok(match self {
            KeyIndex::Alex(a) => a
                .read(|a| a.min())
                .map_err(unavailable)?
                .map(|(k, v)| (Key::Int(k), v)),
            KeyIndex::BTree(b) => b.first_key_value().map(|(k, v)| (Key::Bytes(k.clone()), *v)),
        })
    }

    pub fn last(&self) -> crate::Result<Option<(Key, u64)>> {
        Ok(match self {
            KeyIndex::Alex(a) => a
                .read(|a| a.max())
                .map_err(unavailable)?
                .map(|(k, v)| (Key::Int(k), v)),
            KeyIndex::BTree(b) => b.last_key_value().map(|(k, v)| (Key::Bytes(k.clone()), *v)),
        })
    }

    /// Bytes the structure holds, heap and mapped apart (counted by the structure itself).
    pub fn bytes(&self) -> IndexBytes {
        match self {
            KeyIndex::Alex(a) => {
                let s = a.stats();
                IndexBytes {
                    heap: s.bytes,
                    mapped: s.image_bytes,
                    mapped_live: s.mapped_bytes,
                }
            }
            KeyIndex::BTree(b) => IndexBytes {
                heap: b.keys().map(|k| k.capacity() + 8 + 32).sum(),
                mapped: 0,
                mapped_live: 0,
            },
        }
    }

    /// Heap plus mapped bytes (see [`KeyIndex::bytes`]).
    pub fn heap_bytes(&self) -> usize {
        let b = self.bytes();
        b.heap + b.mapped
    }

    /// The index as an image to map at the next open (ALEX only; `None` for the B-tree):
    /// tombstoned keys are left out, as a checkpoint does.
    pub fn to_image(&self, tag: ImageTag) -> crate::Result<Option<Vec<u8>>> {
        match self {
            KeyIndex::Alex(a) => Ok(Some(
                a.to_image(tag, |p| p & TOMBSTONE == 0).map_err(unavailable)?,
            )),
            KeyIndex::BTree(_) => Ok(None),
        }
    }

    /// Whether part of a mapped image still lies in file pages that [`KeyIndex::promote`]
    /// would move to huge pages.
    pub(crate) fn promotion_pending(&self) -> bool {
        match self {
            KeyIndex::Alex(a) => a.image.as_ref().is_some_and(|m| m.promotion_pending()),
            KeyIndex::BTree(_) => false,
        }
    }

    /// Brings the next 2 MiB that [`KeyIndex::promote`] would move into memory (outside the
    /// write lock that `promote` needs).
    pub(crate) fn prefault_promotion(&self) {
        if let KeyIndex::Alex(a) = self {
            if let Some(m) = &a.image {
                m.prefault_next_chunk();
            }
        }
    }

    /// Moves the next 2 MiB of a mapped image into `page`, an anonymous huge page, at the same
    /// addresses (see `index::mapped::Mapping::promote`). `&mut self` is what makes it safe: no
    /// array of the image can be written meanwhile. Returns false when nothing was left.
    pub(crate) fn promote(&mut self, page: HugePage) -> std::io::Result<bool> {
        match self {
            KeyIndex::Alex(a) => match &a.image {
                Some(m) => m.promote(page),
                None => Ok(false),
            },
            KeyIndex::BTree(_) => Ok(false),
        }
    }

    /// Maps the image file at `path` (written from [`KeyIndex::to_image`]) and opens an ALEX
    /// index from it, read in place; `verify` checks every array's checksum too (and so maps
    /// the whole image in). For tools and benchmarks; the engine opens images in recovery.
    pub fn open_image(path: &std::path::Path, verify: bool) -> Result<(KeyIndex, ImageTag), ImageError> {
        let map = Mapping::open(path).map_err(|e| ImageError::Invalid(format!("{}: {e}", path.display())))?;
        map.populate();
        KeyIndex::from_image(map, if verify { Checks::All } else { Checks::None })
    }

    /// An ALEX index opened from the image file at `path` read into anonymous memory rather
    /// than mapped, every array checked as it is read (`Alex::read_image`): for an open about
    /// to write into most of the image. Returns the image's tag.
    pub(crate) fn read_image(path: &std::path::Path) -> Result<(KeyIndex, ImageTag), ImageError> {
        let (a, tag) = Alex::read_image(path)?;
        Ok((KeyIndex::Alex(a), tag))
    }

    /// An ALEX index read in place from a mapped image written by [`KeyIndex::to_image`],
    /// its arrays checked as `checks` says. Returns the image's tag.
    pub(crate) fn from_image(
        map: Arc<Mapping>,
        checks: Checks<i64>,
    ) -> Result<(KeyIndex, ImageTag), ImageError> {
        let (a, tag) = Alex::from_image(map, checks)?;
        Ok((KeyIndex::Alex(a), tag))
    }

    /// For an index opened with lazy checks: checks the next data node of its image nobody has
    /// checked (`Alex::check_step`). Returns false when none is left to start.
    pub(crate) fn check_step(&self) -> bool {
        match self {
            KeyIndex::Alex(a) => a.check_step(),
            KeyIndex::BTree(_) => false,
        }
    }

    /// Whether the lazy checks are over (all passed, or one failed) and [`KeyIndex::settle`]
    /// would drop their state, swapping in the rebuilt index if one failed.
    pub(crate) fn checks_done(&self) -> bool {
        match self {
            KeyIndex::Alex(a) => a.lazy_done(),
            KeyIndex::BTree(_) => false,
        }
    }

    /// Checks every data node of a lazily checked image that is left, now, without rebuilding
    /// anything: whether all of them matched (true for an index not opened lazily).
    pub(crate) fn check_all(&self) -> bool {
        match self {
            KeyIndex::Alex(a) => a.check_all(),
            KeyIndex::BTree(_) => true,
        }
    }

    /// Whether data nodes of the image are still unchecked (none failed so far).
    pub fn checks_pending(&self) -> bool {
        match self {
            KeyIndex::Alex(a) => a.checks_pending(),
            KeyIndex::BTree(_) => false,
        }
    }

    /// Checks every data node of a lazily checked image that is left, and ends the lazy state
    /// (replacing the index by the one rebuilt from its source if a node failed). Writes do
    /// this themselves; the maintenance thread calls it once the checks are done.
    pub(crate) fn settle(&mut self) {
        if let KeyIndex::Alex(a) = self {
            a.settle();
        }
    }
}

/// An index that cannot answer (a damaged image whose rebuild from the rows failed): SQLSTATE
/// XX001, as for any persisted bytes that cannot be used.
fn unavailable(e: Unavailable) -> crate::Error {
    crate::Error::Corrupt(e.to_string())
}

/// Converts a key bound to an i64 bound. `None` when the bound cannot match any integer key.
fn int_bound(b: Bound<&Key>) -> Option<Bound<i64>> {
    Some(match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(Key::Int(i)) => Bound::Included(*i),
        Bound::Excluded(Key::Int(i)) => Bound::Excluded(*i),
        _ => return None,
    })
}

fn bytes_bound(b: Bound<&Key>) -> Option<Bound<Vec<u8>>> {
    Some(match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(Key::Bytes(k)) => Bound::Included(k.clone()),
        Bound::Excluded(Key::Bytes(k)) => Bound::Excluded(k.clone()),
        _ => return None,
    })
}

/// True when no key can satisfy both bounds (BTreeMap::range panics on such ranges).
fn bounds_empty(lo: Bound<i64>, hi: Bound<i64>) -> bool {
    use Bound::*;
    match (lo, hi) {
        (Included(a), Included(b)) => a > b,
        (Included(a), Excluded(b)) | (Excluded(a), Included(b)) => a >= b,
        (Excluded(a), Excluded(b)) => a >= b || a.checked_add(1) == Some(b),
        _ => false,
    }
}

fn bytes_bounds_empty(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    use Bound::*;
    match (lo, hi) {
        (Included(a), Included(b)) => a > b,
        (Included(a), Excluded(b)) | (Excluded(a), Included(b)) | (Excluded(a), Excluded(b)) => a >= b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range of one key (served as a point lookup) answers as the general range path does:
    /// present, absent, between keys, with a limit of 0, and in reverse.
    #[test]
    fn a_range_of_one_key_is_a_point_lookup() {
        let entries: Vec<(i64, u64)> = (0..10_000i64).map(|k| (k * 5, k as u64 + 1)).collect();
        let idx = KeyIndex::Alex(Alex::bulk_load(&entries).unwrap());
        let one = |k: i64, reverse: bool, limit: usize| {
            let mut out = vec![(Key::Int(-1), 0)];
            let key = Key::Int(k);
            let more = idx
                .range_batch(
                    Bound::Included(&key),
                    Bound::Included(&key),
                    reverse,
                    limit,
                    &mut out,
                )
                .unwrap();
            (out, more)
        };
        for reverse in [false, true] {
            assert_eq!(
                one(50, reverse, 10),
                (vec![(Key::Int(-1), 0), (Key::Int(50), 11)], false)
            );
            assert_eq!(
                one(50, reverse, 1),
                (vec![(Key::Int(-1), 0), (Key::Int(50), 11)], true)
            );
            assert_eq!(one(51, reverse, 10), (vec![(Key::Int(-1), 0)], false));
            assert_eq!(one(-5, reverse, 10), (vec![(Key::Int(-1), 0)], false));
            assert_eq!(one(50, reverse, 0), (vec![(Key::Int(-1), 0)], true));
        }
    }
}
