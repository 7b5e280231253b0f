//! The row cache: encoded row versions by rowid, bounded by bytes.
//!
//! Row versions never change once written, so a cached version is never stale; garbage
//! collection evicts what it deletes. Encoded bytes (about the size RocksDB stores) rather than
//! decoded values keep two to three times more rows in the same budget.
//!
//! Structure: a 4-way set-associative table, one 128-byte set (two adjacent cache lines) per
//! four ways. A lookup touches one set (one lock, uncontended in practice) and the entry's bytes.
//! Replacement within a set evicts the way used least recently. We measured a general
//! concurrent cache (quick_cache) at about a quarter of the point-lookup time here; rowids are
//! dense integers, so a fixed table does the job with fewer memory accesses.
//!
//! The set of a rowid is the rowid modulo the number of sets, not a hash of it. Positions are
//! handed out densely and in order, so any run of consecutive rowids spreads over the sets
//! exactly evenly: the newest `sets x 4` row versions all fit with no set conflict at all
//! (hashed, a Poisson share of rows finds its set full even when the cache has room: 10% at one
//! row per two ways with two ways, 4% with four), and the rows of a small or freshly loaded
//! table occupy a contiguous stretch of the table that stays in the CPU caches, where hashed
//! rowids touched a random line of the whole table (64 MiB at the default budget) every time.
//! A range scan over rows loaded in key order also walks adjacent sets.
//!
//! The set table costs nothing to create whatever its size: it is an anonymous mapping, which
//! the kernel hands out zero-filled without touching a page, and all-zero bytes are a valid
//! table of empty, unlocked sets (`Line`). A set's page is faulted in (zeroed by the kernel)
//! by its first use; the whole table is charged to the budget from the start all the same.

use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use memmap2::{MmapOptions, MmapRaw};
use parking_lot::lock_api::RawMutex as _;
use parking_lot::RawMutex;

pub(crate) type Bytes = Arc<[u8]>;

const WAYS: usize = 4;

/// Four ways. Every field is one whose all-zero bytes are a valid value, and all-zero is the
/// empty set: integers, and `Option<NonNull<u8>>`, whose `None` the standard library documents
/// as all zeros ("Rust further guarantees that `transmute::<_, Option<T>>([0u8;
/// size_of::<T>()])` is sound and produces `Option::<T>::None`" for `T` = `ptr::NonNull<U>`
/// with `U: Sized`: `core::option`, section "Representation").
struct Set {
    rowid: [u64; WAYS],
    /// Each way's entry, an `Arc<[u8]>` taken apart by `Arc::into_raw`: its data pointer
    /// (`None`: the way is empty) and its length. The way owns that one strong count.
    data: [Option<NonNull<u8>>; WAYS],
    len: [usize; WAYS],
    /// The set's access counter when each way was last used (wrapping; the way furthest
    /// behind `clock` is the least recently used).
    used: [u8; WAYS],
    clock: u8,
}

impl Set {
    fn touch(&mut self, way: usize) {
        self.clock = self.clock.wrapping_add(1);
        self.used[way] = self.clock;
    }

    /// The way holding `rowid`, if cached.
    fn find(&self, rowid: u64) -> Option<usize> {
        (0..WAYS).find(|&w| self.rowid[w] == rowid && self.data[w].is_some())
    }

    fn empty_way(&self) -> Option<usize> {
        (0..WAYS).find(|&w| self.data[w].is_none())
    }

    /// The way holding `rowid`, else an empty way, else the least recently used.
    fn way_for(&self, rowid: u64) -> usize {
        if let Some(w) = self.find(rowid) {
            return w;
        }
        if let Some(w) = self.empty_way() {
            return w;
        }
        (0..WAYS)
            .max_by_key(|&w| self.clock.wrapping_sub(self.used[w]))
            .expect("WAYS > 0")
    }

    /// The length of way `w`'s entry, if it holds one.
    fn entry_len(&self, w: usize) -> Option<usize> {
        self.data[w].map(|_| self.len[w])
    }

    /// A new reference to way `w`'s entry.
    fn entry(&self, w: usize) -> Option<Bytes> {
        let p = self.data[w]?;
        let raw = std::ptr::slice_from_raw_parts(p.as_ptr() as *const u8, self.len[w]);
        // SAFETY: `raw` is what `Arc::into_raw` returned for the entry `put` stored, whose strong
        // count this way still owns (only `take` gives it up, clearing the way), so the
        // allocation is live. `ManuallyDrop` leaves that count to the way; the clone adds one.
        let held = ManuallyDrop::new(unsafe { Arc::from_raw(raw) });
        Some(Arc::clone(&held))
    }

    /// Empties way `w`, returning its entry.
    fn take(&mut self, w: usize) -> Option<Bytes> {
        let p = self.data[w].take()?;
        let raw = std::ptr::slice_from_raw_parts(p.as_ptr() as *const u8, self.len[w]);
        // SAFETY: as in `entry`; the way's count moves to the returned `Arc` and the way no
        // longer refers to it (cleared above), so it is released exactly once.
        Some(unsafe { Arc::from_raw(raw) })
    }

    /// Stores `v` in way `w` (releasing what it held).
    fn put(&mut self, w: usize, rowid: u64, v: Bytes) {
        drop(self.take(w));
        self.len[w] = v.len();
        let p = Arc::into_raw(v) as *const u8 as *mut u8;
        self.data[w] = Some(NonNull::new(p).expect("Arc::into_raw is never null"));
        self.rowid[w] = rowid;
    }
}

/// One set and its lock, two cache lines. `repr(C)` with a lock and a set whose all-zero bytes
/// are valid: all-zero is an unlocked empty set (the table is a zero-filled mapping).
#[repr(C, align(128))]
struct Line {
    lock: RawMutex,
    set: UnsafeCell<Set>,
}

// parking_lot's raw mutex is one byte, and its unlocked initial value is the zero byte: so a zero
// byte is an unlocked `RawMutex` (a one-byte type without pointers is its byte). Checked at
// compile time, so a parking_lot that changed either fails the build rather than the table.
const _: () = assert!(std::mem::size_of::<RawMutex>() == 1);
// SAFETY: transmuting a one-byte value of a type without padding to `u8` reads its one
// initialized byte.
const _: () = assert!(unsafe { std::mem::transmute::<RawMutex, u8>(RawMutex::INIT) } == 0);
const _: () = assert!(std::mem::size_of::<Line>() == 128);

// SAFETY: a `Line`'s set is only reached through `Line::lock`, which holds the mutex for as long
// as the reference lives, so shared `Line`s hand out one `&mut Set` at a time. The entries a set
// points to are `Arc<[u8]>`, which are `Send + Sync`.
unsafe impl Sync for Line {}

impl Line {
    fn lock(&self) -> Locked<'_> {
        self.lock.lock();
        Locked(self)
    }
}

/// A locked set; unlocks when dropped.
struct Locked<'a>(&'a Line);

impl Deref for Locked<'_> {
    type Target = Set;
    fn deref(&self) -> &Set {
        // SAFETY: this guard holds the line's mutex (see `Sync for Line`).
        unsafe { &*self.0.set.get() }
    }
}

impl DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut Set {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.0.set.get() }
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard locked the mutex in `Line::lock` and has not unlocked it.
        unsafe { self.0.lock.unlock() }
    }
}

/// The set table: `len` lines in an anonymous mapping of their size.
struct Table {
    map: Option<MmapRaw>,
    len: usize,
}

impl Table {
    /// `len` empty sets. Without the memory for them (the mapping refused), none: a cache that
    /// keeps nothing.
    fn new(len: usize) -> Table {
        if len == 0 {
            return Table { map: None, len: 0 };
        }
        let bytes = len * std::mem::size_of::<Line>();
        match MmapOptions::new().len(bytes).map_anon() {
            Ok(m) => {
                let m = MmapRaw::from(m);
                // With 4 KiB pages nearly every lookup of this tens-of-MiB table also missed
                // the TLB (engine_perf, 100K rows, all cached: 868 -> 707 ns per point read
                // with huge pages). Advice only; fresh pages, so nothing to drop first.
                #[cfg(target_os = "linux")]
                let _ = m.advise(memmap2::Advice::HugePage);
                Table { map: Some(m), len }
            }
            Err(e) => {
                tracing::warn!(
                    error = %e,
                    bytes,
                    "no memory for the row cache's set table: rows are not cached"
                );
                Table { map: None, len: 0 }
            }
        }
    }

    #[inline]
    fn lines(&self) -> &[Line] {
        match &self.map {
            // SAFETY: the mapping is `len` lines long, readable and writable, page-aligned (so
            // aligned for `Line`), and lives as long as `self`. It was zero-filled by the kernel
            // (an anonymous mapping), and all-zero bytes are a valid `Line` (unlocked, empty;
            // see `Line`); after that it is changed only through `Line::lock`. The pointer is the
            // mapping's own (`as_mut_ptr`, not derived from a shared reference), so writes
            // through the `UnsafeCell`s are allowed.
            Some(m) => unsafe { std::slice::from_raw_parts(m.as_mut_ptr() as *const Line, self.len) },
            None => &[],
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        let Some(m) = &self.map else { return };
        // SAFETY: as in `lines`; `&mut self` makes this the only reference to the table, so
        // the sets are reached without their locks. (Locking would write every line, making
        // the kernel allocate the pages of sets never used; reading them maps its zero page.)
        let lines = unsafe { std::slice::from_raw_parts_mut(m.as_mut_ptr() as *mut Line, self.len) };
        // Release the entries the sets own (the mapping itself knows nothing of them).
        for line in lines {
            let s = line.set.get_mut();
            for w in 0..WAYS {
                drop(s.take(w));
            }
        }
    }
}

/// Bytes charged per entry beyond its data (slot share, Arc header).
const ENTRY_OVERHEAD: usize = 48;

pub(crate) struct RowCache {
    sets: Table,
    mask: u64,
    budget: usize,
    used: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Asks the CPU to bring the cache line at `p` closer. A hint only: it never faults, whatever
/// the address, and changes no value the program can see.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is part of SSE, which every x86_64 CPU has; the instruction reads
    // nothing into a register and does not fault on any address, mapped or not.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl RowCache {
    pub fn new(bytes: usize) -> RowCache {
        // Four ways per 128-byte set and one set per 512 budgeted bytes: the table takes a
        // quarter of the budget and has about twice as many ways as entries fit in the rest (a
        // 100-byte row costs ~170 bytes with its overhead), so that a working set that fits by
        // bytes also fits by ways when its rowids are not consecutive (rows updated since the
        // load, several tables).
        let nsets = if bytes == 0 {
            0
        } else {
            (bytes / 512).max(64).next_power_of_two()
        };
        let sets = Table::new(nsets);
        let nsets = sets.len;
        let table_bytes = nsets * std::mem::size_of::<Line>();
        RowCache {
            mask: (nsets as u64).saturating_sub(1),
            // No table (none asked for, or no memory for it): nothing is cached.
            budget: if nsets == 0 {
                0
            } else {
                bytes.saturating_sub(table_bytes)
            },
            used: AtomicUsize::new(table_bytes),
            sets,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    #[inline]
    fn set_index(&self, rowid: u64) -> usize {
        (rowid & self.mask) as usize
    }

    #[inline]
    fn set(&self, rowid: u64) -> Option<&Line> {
        self.sets.lines().get(self.set_index(rowid))
    }

    pub fn get(&self, rowid: u64) -> Option<Bytes> {
        let r = self.set(rowid).and_then(|s| {
            let mut s = s.lock();
            let w = s.find(rowid)?;
            s.touch(w);
            s.entry(w)
        });
        if r.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    /// Looks up many rowids at once (a range scan's chunk): pushes `(rowid, bytes)` for each
    /// cached one onto `found` and each other rowid onto `missing`, in the order given.
    ///
    /// One `get` after another would wait for each set's cache line and then each entry's bytes
    /// in turn: every lock and every `Arc` clone is an atomic, and an atomic waits for its line,
    /// so the misses of a cold table queue up (two DRAM round trips per row). Here the set lines
    /// of all rowids are prefetched first, then (under each set's lock, without cloning) the
    /// lines of the entries found, and only then are the entries cloned, by which time both are
    /// in the CPU cache. A prefetch is only a hint: an entry evicted in between is simply
    /// looked up again and reported as missing if it is gone.
    pub fn get_many(&self, rowids: &[u64], found: &mut Vec<(u64, Bytes)>, missing: &mut Vec<u64>) {
        let lines = self.sets.lines();
        if lines.is_empty() {
            missing.extend_from_slice(rowids);
            self.misses.fetch_add(rowids.len() as u64, Ordering::Relaxed);
            return;
        }
        for &r in rowids {
            prefetch(&lines[self.set_index(r)]);
        }
        for &r in rowids {
            let s = lines[self.set_index(r)].lock();
            if let Some(w) = s.find(r) {
                let (d, len) = (s.data[w].expect("found"), s.len[w]);
                // The allocation starts with the Arc's two counters (16 bytes), then the
                // entry's bytes: fetch the lines the clone and the decoder will touch.
                let start = (d.as_ptr() as *const u8).wrapping_sub(16);
                for line in (0..16 + len).step_by(64).take(4) {
                    prefetch(start.wrapping_add(line));
                }
            }
        }
        let before = found.len();
        for &r in rowids {
            let mut s = lines[self.set_index(r)].lock();
            match s.find(r) {
                Some(w) => {
                    s.touch(w);
                    found.push((r, s.entry(w).expect("checked")));
                }
                None => missing.push(r),
            }
        }
        let hits = (found.len() - before) as u64;
        self.hits.fetch_add(hits, Ordering::Relaxed);
        self.misses
            .fetch_add(rowids.len() as u64 - hits, Ordering::Relaxed);
    }

    pub fn insert(&self, rowid: u64, v: Bytes) {
        let Some(set) = self.set(rowid) else { return };
        let add = v.len() + ENTRY_OVERHEAD;
        let mut s = set.lock();
        let way = s.way_for(rowid);
        let old = s.entry_len(way).map_or(0, |len| len + ENTRY_OVERHEAD);
        if self.used.load(Ordering::Relaxed) + add > self.budget + old + self.table_bytes() {
            return; // over budget: keep what is cached
        }
        self.used.fetch_add(add, Ordering::Relaxed);
        self.used.fetch_sub(old, Ordering::Relaxed);
        s.put(way, rowid, v);
        s.touch(way);
    }

    pub fn remove(&self, rowid: u64) {
        let Some(set) = self.set(rowid) else { return };
        let mut s = set.lock();
        for w in 0..WAYS {
            if s.rowid[w] == rowid {
                if let Some(d) = s.take(w) {
                    self.used.fetch_sub(d.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
                }
            }
        }
    }

    fn table_bytes(&self) -> usize {
        self.sets.len * std::mem::size_of::<Line>()
    }

    /// An empty cache that goes on counting from `old`'s hits and misses (a resize).
    pub fn counting_from(self, old: &RowCache) -> RowCache {
        let (h, m) = old.hits_misses();
        self.hits.store(h, Ordering::Relaxed);
        self.misses.store(m, Ordering::Relaxed);
        self
    }

    /// The byte budget, the set table included.
    pub fn capacity(&self) -> usize {
        self.budget + self.table_bytes()
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
        let empty = RowCache::new(0);
        empty.insert(1, Arc::from(&b"x"[..]));
        assert!(empty.get(1).is_none());
    }

    #[test]
    fn a_full_set_evicts_its_least_recently_used_way() {
        let c = RowCache::new(1 << 20);
        // WAYS + 1 rowids that map to one set.
        let target = c.set_index(1);
        let same: Vec<u64> = (1..)
            .filter(|&r| c.set_index(r) == target)
            .take(WAYS + 1)
            .collect();
        let row = |r: u64| -> Bytes { Arc::from(vec![r as u8; 10].as_slice()) };
        for &r in &same[..WAYS] {
            c.insert(r, row(r));
        }
        for &r in &same[..WAYS] {
            assert!(c.get(r).is_some(), "a set keeps {WAYS} rows");
        }
        // Use the first again: the second is now the least recently used.
        assert!(c.get(same[0]).is_some());
        c.insert(same[WAYS], row(same[WAYS]));
        assert!(
            c.get(same[1]).is_none(),
            "the least recently used way was evicted"
        );
        for &r in [same[0], same[2], same[3], same[WAYS]].iter() {
            assert_eq!(c.get(r).expect("kept")[0], r as u8);
        }
        // Re-inserting a cached rowid after another way was emptied does not keep two copies.
        let before = c.weight();
        c.remove(same[2]);
        c.insert(same[3], row(same[3]));
        assert_eq!(c.weight(), before - (10 + ENTRY_OVERHEAD) as u64);
        c.remove(same[3]);
        assert!(c.get(same[3]).is_none(), "no second copy of a rowid");
    }

    #[test]
    fn get_many_matches_get() {
        let c = RowCache::new(1 << 20);
        for r in (1..2000u64).filter(|r| r % 3 != 0) {
            c.insert(r, Arc::from(vec![r as u8; 20 + (r % 7) as usize].as_slice()));
        }
        let ask: Vec<u64> = (1..2000u64).rev().step_by(2).collect();
        let (mut found, mut missing) = (Vec::new(), Vec::new());
        let (h0, m0) = c.hits_misses();
        c.get_many(&ask, &mut found, &mut missing);
        let (h1, m1) = c.hits_misses();
        assert_eq!((h1 - h0, m1 - m0), (found.len() as u64, missing.len() as u64));
        assert_eq!(found.len() + missing.len(), ask.len());
        let mut fi = found.iter();
        let mut mi = missing.iter();
        for &r in &ask {
            match c.get(r) {
                Some(b) => {
                    let (fr, fb) = fi.next().expect("found in order");
                    assert_eq!((*fr, &fb[..]), (r, &b[..]));
                }
                None => assert_eq!(mi.next(), Some(&r)),
            }
        }
        let empty = RowCache::new(0);
        let (mut found, mut missing) = (Vec::new(), Vec::new());
        empty.get_many(&[1, 2], &mut found, &mut missing);
        assert!(found.is_empty());
        assert_eq!(missing, vec![1, 2]);
    }
}
