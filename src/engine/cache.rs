//! The row cache: encoded row versions by rowid, bounded by bytes.
//!
//! Row versions never change once written, so a cached version is never stale; garbage
//! collection evicts what it deletes. Encoded bytes (about the size RocksDB stores) rather than
//! decoded values keep two to three times more rows in the same budget.
//!
//! Structure: a 2-way set-associative table, one cache line per set, indexed by a hash of the
//! rowid. A lookup touches one set (one lock, uncontended in practice) and the entry's bytes.
//! Replacement within a set evicts the entry not used most recently. We measured a general
//! concurrent cache (quick_cache) at about a quarter of the point-lookup time here; rowids are
//! dense integers, so a fixed table does the job with fewer memory accesses.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

pub(crate) type Bytes = Arc<[u8]>;

#[derive(Default)]
struct Set {
    rowid: [u64; 2],
    data: [Option<Bytes>; 2],
    /// Which way was used most recently.
    recent: u8,
}

#[repr(align(64))]
#[derive(Default)]
struct Line(Mutex<Set>);

/// Bytes charged per entry beyond its data (slot share, Arc header).
const ENTRY_OVERHEAD: usize = 48;

pub(crate) struct RowCache {
    sets: Box<[Line]>,
    mask: u64,
    budget: usize,
    used: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[inline]
fn hash(rowid: u64) -> u64 {
    // Fibonacci hashing spreads consecutive rowids over all sets.
    rowid.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl RowCache {
    pub fn new(bytes: usize) -> RowCache {
        // Two ways per 64-byte set and one set per 256 budgeted bytes: the table takes a
        // quarter of the budget and has about twice as many ways as entries fit in the rest (a
        // 100-byte row costs ~170 bytes with its overhead), so that two rows rarely compete for
        // one set. With one set per 512 bytes a working set that fits by bytes still missed
        // ~25% of the time on set conflicts (1M rows in a 256 MiB cache).
        let nsets = if bytes == 0 {
            0
        } else {
            (bytes / 256).max(64).next_power_of_two()
        };
        let mut sets: Vec<Line> = Vec::with_capacity(nsets);
        // With 4 KiB pages nearly every lookup of this tens-of-MiB table also missed the TLB
        // (engine_perf, 100K rows, all cached: 868 -> 707 ns per point read with huge pages).
        crate::index::mem::advise_huge_pages(&mut sets);
        sets.extend((0..nsets).map(|_| Line::default()));
        let sets = sets.into_boxed_slice();
        let table_bytes = nsets * std::mem::size_of::<Line>();
        RowCache {
            mask: (nsets as u64).saturating_sub(1),
            budget: bytes.saturating_sub(table_bytes),
            used: AtomicUsize::new(table_bytes),
            sets,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    #[inline]
    fn set(&self, rowid: u64) -> Option<&Mutex<Set>> {
        if self.sets.is_empty() {
            return None;
        }
        Some(&self.sets[((hash(rowid) >> 20) & self.mask) as usize].0)
    }

    pub fn get(&self, rowid: u64) -> Option<Bytes> {
        let r = self.set(rowid).and_then(|s| {
            let mut s = s.lock();
            (0..2)
                .find(|&w| s.rowid[w] == rowid && s.data[w].is_some())
                .map(|w| {
                    s.recent = w as u8;
                    s.data[w].clone().expect("checked")
                })
        });
        if r.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    pub fn insert(&self, rowid: u64, v: Bytes) {
        let Some(set) = self.set(rowid) else { return };
        let add = v.len() + ENTRY_OVERHEAD;
        let mut s = set.lock();
        let way = match (0..2).find(|&w| s.rowid[w] == rowid || s.data[w].is_none()) {
            Some(w) => w,
            None => 1 - s.recent as usize,
        };
        let old = s.data[way].as_ref().map_or(0, |d| d.len() + ENTRY_OVERHEAD);
        if self.used.load(Ordering::Relaxed) + add > self.budget + old + self.table_bytes() {
            return; // over budget: keep what is cached
        }
        self.used.fetch_add(add, Ordering::Relaxed);
        self.used.fetch_sub(old, Ordering::Relaxed);
        s.rowid[way] = rowid;
        s.data[way] = Some(v);
        s.recent = way as u8;
    }

    /// Caches a copy of `v` if the budget has room for it without evicting by size (a set
    /// conflict still replaces its older way); false when the cache is full, so that a caller
    /// filling it in bulk can stop before copying bytes it would not keep.
    pub fn insert_if_room(&self, rowid: u64, v: &[u8]) -> bool {
        if self.sets.is_empty()
            || self.used.load(Ordering::Relaxed) + v.len() + ENTRY_OVERHEAD > self.budget + self.table_bytes()
        {
            return false;
        }
        self.insert(rowid, Arc::from(v));
        true
    }

    pub fn remove(&self, rowid: u64) {
        let Some(set) = self.set(rowid) else { return };
        let mut s = set.lock();
        for w in 0..2 {
            if s.rowid[w] == rowid {
                if let Some(d) = s.data[w].take() {
                    self.used.fetch_sub(d.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
                }
            }
        }
    }

    fn table_bytes(&self) -> usize {
        self.sets.len() * std::mem::size_of::<Line>()
    }

    pub fn hits_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    /// Bytes held: the table plus cached entries.
    pub fn weight(&self) -> u64 {
        self.used.load(Ordering::Relaxed) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_budget_and_finds_what_it_kept() {
        let c = RowCache::new(1 << 20);
        for r in 1..100_000u64 {
            c.insert(r, Arc::from(vec![r as u8; 100].as_slice()));
            assert!(c.weight() as usize <= 1 << 20);
        }
        let mut found = 0;
        for r in 1..100_000u64 {
            if let Some(b) = c.get(r) {
                assert_eq!(b[0], r as u8);
                found += 1;
            }
        }
        assert!(found > 1000, "the cache keeps a useful share: {found}");
        c.remove(99_999);
        assert!(c.get(99_999).is_none());
        // Filling in bulk stops once the budget is used, and never goes past it.
        let c = RowCache::new(1 << 20);
        let mut kept = 0u64;
        while c.insert_if_room(kept + 1, &[7u8; 100]) {
            kept += 1;
            assert!(kept < 100_000, "insert_if_room never refuses");
        }
        assert!(c.weight() as usize <= 1 << 20);
        assert!(
            kept > 1000,
            "a 1 MiB cache takes thousands of 100-byte rows: {kept}"
        );
        assert!(c.get(kept).is_some(), "the last row accepted is cached");
        let empty = RowCache::new(0);
        assert!(!empty.insert_if_room(1, b"x"));
        empty.insert(1, Arc::from(&b"x"[..]));
        assert!(empty.get(1).is_none());
    }
}
