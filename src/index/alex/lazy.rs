//! Lazy checking of an index opened from an image: the data nodes' arrays (nearly all of the
//! image's bytes) are checksummed the first time something touches them, or by a background
//! pass, instead of all of them before the open returns. The header, the directory and the
//! model nodes' arrays are still checked at open (`Alex::from_image`), so routing a key to its
//! data node, the node's metadata (its key count, bounds and leaf links) and the index's
//! statistics never read an unchecked byte.
//!
//! The rules, and why they keep every answer right:
//! - The image has a checksum per chunk of a data node ([`CHUNK_SLOTS`] slots and the bitmap
//!   words over them: `image.rs`). Reads reach a data node's arrays only through `Alex::data`
//!   or `Alex::leaf_ref`, which check the whole node first (every chunk), or through
//!   `Alex::get_lazy` (a point lookup), which checks each chunk before it reads a slot of it.
//!   Each check is made once (`OnceLock` per node and per chunk, so concurrent readers of an
//!   unchecked one wait for one check instead of each making it). A node that fails its check
//!   is never read: the accessors hand out an empty stand-in node instead and mark the index
//!   damaged; a point lookup that meets a failed chunk stops and marks it too. A lookup's
//!   answer from a checked chunk stands even if another chunk of its node fails later: it read
//!   only bytes that matched.
//! - Every read the engine makes goes through `Alex::read`, which runs it and, if the index is
//!   damaged afterwards (by this read or any other), throws the result away and runs the read
//!   again on the index rebuilt from its source (the engine's rows). So a result is returned
//!   only if every node it used passed its check, or it comes from the rebuilt index.
//! - Writes (`insert`, `upsert`, `update`, `remove`) check the nodes they touch, before they
//!   change or copy them: the leaf of the key (which an expansion or a split rebuilds from),
//!   and the edge leaves a root expansion moves keys out of (read through `Alex::data`, so
//!   checked on the way). A node a write changes is therefore always one that passed its check,
//!   and is never hashed again (its check is settled). Nodes the write does not touch keep
//!   their image bytes, unchanged, and are checked by a later read or the background pass.
//!   If a node the write touches fails, the write's effect on this index is thrown away and
//!   it runs again on the index rebuilt from the source (`Alex::write`): the rebuilt index,
//!   built from the rows, already holds every write whose rows were stored before it was built.
//! - If the source cannot be read either (a double fault), nothing is answered: a read returns
//!   [`Unavailable`], a write leaves the damaged index as it is (its rows are stored, so the
//!   rebuild, when it succeeds, holds it), and the next read or write tries the rebuild again.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::data_node::DataNode;
use super::image::{chunk_bytes, chunk_hash, chunks, CHUNK_SLOTS};
use super::{Alex, AlexKey, Node};
use crate::index::mapped::prefault;

/// Builds the entries of an index again from its source (sorted by key, unique), when part of
/// its image failed its check. The engine's reads every stored version of the table. `Err`:
/// the source could not be read.
pub type Rebuild<K> = Box<dyn Fn() -> Result<Vec<(K, u64)>, String> + Send + Sync>;

/// A part of the index's image failed its checksum and the index could not be rebuilt from its
/// source (the source's read failed): no answer is known to be right. Nothing is changed; the
/// next read or write tries the rebuild again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an index image failed its checksum and the index cannot be rebuilt from its source: {0}")]
pub struct Unavailable(pub String);

/// The state of an index whose data nodes are not all checked yet (see the module comment).
pub(crate) struct Lazy<K: AlexKey> {
    /// Per arena id: where a data node's chunk checksums start in `sums`.
    pub(super) want: Vec<Option<usize>>,
    /// Every data node's chunk checksums, from the image's chunk table.
    sums: Vec<u64>,
    /// Per chunk (as `sums`): whether it matched, once checked.
    pub(super) chunk_ok: Box<[OnceLock<bool>]>,
    /// Per arena id: whether all of the node's chunks matched, once checked.
    checked: Box<[OnceLock<bool>]>,
    /// Data nodes not yet checked.
    left: AtomicUsize,
    /// Every data node checked and matched: accessors skip the per-node look.
    all_good: AtomicBool,
    /// A node failed its check: results are taken from `replacement`.
    damaged: AtomicBool,
    /// The next arena id the background pass looks at.
    cursor: AtomicUsize,
    /// What accessors hand out for a node that failed: no keys, no leaf links.
    stand_in: DataNode<K>,
    rebuild: Rebuild<K>,
    replacement: OnceLock<Alex<K>>,
    /// Held while the replacement is being built, so that one caller builds it at a time.
    building: Mutex<()>,
    /// When a build of the replacement last failed: the background pass waits
    /// [`RETRY_AFTER`] before trying again (reads and writes try at once).
    failed_at: Mutex<Option<Instant>>,
}

/// How long the background pass waits after a failed rebuild before it tries another.
const RETRY_AFTER: Duration = Duration::from_secs(1);

impl<K: AlexKey> Lazy<K> {
    /// The lazy state of an index whose data nodes' chunks should have the checksums `sums`,
    /// a data node's from `want[id]` on (by arena id; `None` for other ids).
    pub(crate) fn new(want: Vec<Option<usize>>, sums: Vec<u64>, rebuild: Rebuild<K>) -> Lazy<K> {
        let left = want.iter().filter(|w| w.is_some()).count();
        Lazy {
            checked: (0..want.len()).map(|_| OnceLock::new()).collect(),
            chunk_ok: (0..sums.len()).map(|_| OnceLock::new()).collect(),
            want,
            sums,
            left: AtomicUsize::new(left),
            all_good: AtomicBool::new(left == 0),
            damaged: AtomicBool::new(false),
            cursor: AtomicUsize::new(0),
            stand_in: DataNode::empty(),
            rebuild,
            replacement: OnceLock::new(),
            building: Mutex::new(()),
            failed_at: Mutex::new(None),
        }
    }

    /// Chunk `c` of image data node `d` (whose chunk checksums start at `sums[first]`) checked,
    /// once: whether it matches its checksum (if not, the index is marked damaged before this
    /// returns).
    fn chunk(&self, first: usize, d: &DataNode<K>, c: usize) -> bool {
        *self.chunk_ok[first + c].get_or_init(|| {
            let (slots, bitmap) = chunk_bytes(&d.slots, &d.bitmap, c);
            prefault(slots);
            prefault(bitmap);
            let ok = chunk_hash(&d.slots, &d.bitmap, c) == self.sums[first + c];
            if !ok {
                self.damaged.store(true, Ordering::Release);
            }
            ok
        })
    }

    /// `Some` once node `id` needs no more checks: `Some(true)` for a node not the image's,
    /// whether it matched for one checked whole; `None` while it is not checked whole.
    pub(super) fn settled_node(&self, id: u32) -> Option<bool> {
        match self.checked.get(id as usize) {
            None => Some(true),
            Some(cell) => cell.get().copied(),
        }
    }

    /// Node `id` (`d`) checked, once: `d` if all its chunks match their checksums, else the
    /// stand-in (and the index is marked damaged before this returns).
    /// Nodes created since the open (ids past the image's arena) are not the image's: they pass.
    fn gate<'a>(&'a self, id: u32, d: &'a DataNode<K>) -> &'a DataNode<K> {
        let Some(cell) = self.checked.get(id as usize) else {
            return d;
        };
        let ok = *cell.get_or_init(|| {
            let Some(first) = self.want[id as usize] else {
                return true;
            };
            // Chunks a point read checked already are not hashed again.
            let ok = (0..chunks(d.slots.len())).all(|c| self.chunk(first, d, c));
            if self.left.fetch_sub(1, Ordering::AcqRel) == 1 && !self.damaged.load(Ordering::Acquire) {
                self.all_good.store(true, Ordering::Release);
            }
            ok
        });
        if ok {
            d
        } else {
            &self.stand_in
        }
    }

    pub(super) fn damaged(&self) -> bool {
        self.damaged.load(Ordering::Acquire)
    }

    /// The index rebuilt from the source (built by one caller; the others wait for it). A
    /// failed build leaves nothing behind: the next caller tries again.
    fn replacement(&self) -> Result<&Alex<K>, Unavailable> {
        if let Some(r) = self.replacement.get() {
            return Ok(r);
        }
        let _one = self.building.lock();
        if let Some(r) = self.replacement.get() {
            return Ok(r);
        }
        let built = rebuilt(&self.rebuild).inspect_err(|_| *self.failed_at.lock() = Some(Instant::now()))?;
        Ok(self.replacement.get_or_init(|| built))
    }

    /// The rebuilt index, by value (built now if no read built it yet); `Err` gives the
    /// lazy state back unchanged.
    fn into_replacement(mut self: Box<Self>) -> Result<Alex<K>, (Box<Self>, Unavailable)> {
        if let Some(r) = self.replacement.take() {
            return Ok(r);
        }
        match rebuilt(&self.rebuild) {
            Ok(r) => Ok(r),
            Err(e) => {
                *self.failed_at.lock() = Some(Instant::now());
                Err((self, e))
            }
        }
    }
}

/// An index built from what `rebuild` reads; `Unavailable` if the source cannot be read.
fn rebuilt<K: AlexKey>(rebuild: &Rebuild<K>) -> Result<Alex<K>, Unavailable> {
    let entries = rebuild().map_err(Unavailable)?;
    Ok(Alex::bulk_load(&entries).unwrap_or_else(|_| {
        let mut a = Alex::new();
        for (k, v) in entries {
            a.upsert(k, v);
        }
        a
    }))
}

impl<K: AlexKey> Alex<K> {
    /// Data node `id` (`d`), ready to be read: checked first if the index was opened lazily
    /// and the node is not yet checked; the empty stand-in if it failed.
    #[inline(always)]
    pub(crate) fn usable<'a>(&'a self, id: u32, d: &'a DataNode<K>) -> &'a DataNode<K> {
        match &self.lazy {
            Some(l) if !l.all_good.load(Ordering::Acquire) => l.gate(id, d),
            _ => d,
        }
    }

    /// `Alex::get` on an index opened lazily: on a data node not yet checked whole, only the
    /// chunks the lookup reads are checked (see the module comment); else as `Alex::get`.
    #[inline(never)]
    pub(crate) fn get_lazy(&self, key: K) -> Option<u64> {
        let leaf = self.leaf_for(key);
        let (Some(l), Node::Data(d)) = (&self.lazy, &self.nodes[leaf as usize]) else {
            return self.data(leaf).get(key);
        };
        // `K::MAX` may need the bitmap to the left of its slot (`DataNode::get`): whole node.
        if l.all_good.load(Ordering::Acquire) || l.settled_node(leaf).is_some() || key == K::MAX {
            return self.data(leaf).get(key);
        }
        let Some(first) = l.want[leaf as usize] else {
            return d.get(key);
        };
        // The chunks [lo, hi) are checked; widened until they hold the first slot whose key is
        // `> key` (the key column is non-decreasing: `data_node.rs`), then searched. A slot is
        // read only once its chunk is checked.
        let n = d.slots.len();
        let mut lo = d.predict(key) / CHUNK_SLOTS;
        let mut hi = lo + 1;
        if !l.chunk(first, d, lo) {
            return None;
        }
        loop {
            let (s, e) = (lo * CHUNK_SLOTS, (hi * CHUNK_SLOTS).min(n));
            if s > 0 && d.slots[s].key > key {
                lo -= 1;
                if !l.chunk(first, d, lo) {
                    return None;
                }
            } else if e < n && d.slots[e - 1].key <= key {
                if !l.chunk(first, d, hi) {
                    return None;
                }
                hi += 1;
            } else {
                // Past `s` (or `s` is 0) and at most `e`.
                let ub = s + d.slots[s..e].partition_point(|x| x.key <= key);
                let slot = d.slots[ub.checked_sub(1)?];
                // Not `K::MAX`: the last slot holding `key` is its own occupied slot.
                return (slot.key == key).then_some(slot.val);
            }
        }
    }

    /// Runs the read `f` on this index, or, if a part of its image failed its check (found by
    /// `f` itself or by anything else before `f` returned), on the index rebuilt from its
    /// source. Every read the engine makes of an index goes through this (see the module
    /// comment); `f` may run twice. `Unavailable`: the rebuild failed (a later call retries).
    #[inline]
    pub(crate) fn read<R>(&self, mut f: impl FnMut(&Alex<K>) -> R) -> Result<R, Unavailable> {
        let Some(l) = &self.lazy else {
            return Ok(f(self));
        };
        if !l.damaged() {
            let r = f(self);
            if !l.damaged() {
                return Ok(r);
            }
        }
        Ok(f(l.replacement()?))
    }

    /// Runs the write `f` on this index. On an index opened lazily, `f` checks what it touches
    /// on its way (`Alex::touch`, `Alex::data`); if a node failed (then or before), what `f` did
    /// here is thrown away and it runs on the index rebuilt from the source instead, which
    /// replaces this one. `None`: the rebuild failed; nothing is applied and the index stays
    /// damaged (a later read or write retries the rebuild).
    pub(crate) fn write<R>(&mut self, mut f: impl FnMut(&mut Alex<K>) -> R) -> Option<R> {
        let Some(l) = &self.lazy else {
            return Some(f(self));
        };
        if !l.damaged() {
            let r = f(self);
            match &self.lazy {
                Some(l) if l.damaged() => {}
                _ => return Some(r),
            }
        }
        if !self.replace_damaged() {
            return None;
        }
        Some(f(self))
    }

    /// On a damaged index: replaces it by the rebuilt one (true), or leaves it as it is if
    /// the rebuild failed (false, logged).
    #[cold]
    #[inline(never)]
    fn replace_damaged(&mut self) -> bool {
        let Some(l) = self.lazy.take() else {
            return true;
        };
        match l.into_replacement() {
            Ok(r) => {
                *self = r;
                true
            }
            Err((l, e)) => {
                tracing::error!(error = %e, "index write not applied: the index stays damaged until it can be rebuilt");
                self.lazy = Some(l);
                false
            }
        }
    }

    /// Before a write changes or copies data node `id`: checks it if it is not yet checked.
    /// False if it failed (the write must stop and leave the rest to `Alex::write`).
    #[inline]
    pub(crate) fn touch(&self, id: u32) -> bool {
        match (&self.lazy, &self.nodes[id as usize]) {
            (Some(l), Node::Data(d)) if !l.all_good.load(Ordering::Acquire) => {
                !std::ptr::eq(l.gate(id, d), &l.stand_in)
            }
            _ => true,
        }
    }

    /// This index with every data node checked (checking those left now), or the rebuilt
    /// index if one failed: for reads that walk the arena rather than the accessors
    /// (`to_image`, `check_invariants`).
    pub(crate) fn settled(&self) -> Result<&Alex<K>, Unavailable> {
        match &self.lazy {
            Some(l) if !self.check_all() => l.replacement(),
            _ => Ok(self),
        }
    }

    /// Checks every data node left now (without rebuilding anything): whether all matched.
    pub(crate) fn check_all(&self) -> bool {
        let Some(l) = &self.lazy else {
            return true;
        };
        for (id, n) in self.nodes.iter().enumerate() {
            if let Node::Data(d) = n {
                l.gate(id as u32, d);
            }
        }
        !l.damaged()
    }

    /// Once the checks are over: checks every data node left, drops the lazy state, and
    /// replaces a damaged index by the rebuilt one (or, if that cannot be built, keeps the
    /// lazy state so that reads keep trying; logged).
    pub(crate) fn settle(&mut self) {
        if self.lazy.is_some() && self.check_all() {
            self.lazy = None;
        } else {
            self.replace_damaged();
        }
    }

    /// The background pass: checks the next data node nobody has checked yet. Returns false
    /// when none is left to start (every node checked or being checked, or one failed).
    pub(crate) fn check_step(&self) -> bool {
        let Some(l) = &self.lazy else {
            return false;
        };
        while !l.damaged() && l.left.load(Ordering::Acquire) > 0 {
            let id = l.cursor.fetch_add(1, Ordering::Relaxed);
            let Some(n) = self.nodes.get(id) else {
                return false;
            };
            if let Node::Data(d) = n {
                if l.checked.get(id).is_some_and(|c| c.get().is_none()) {
                    l.gate(id as u32, d);
                    return true;
                }
            }
        }
        false
    }

    /// Whether the lazy state is over (every data node checked, or one failed) but still
    /// held: [`Alex::settle`] would drop it (and swap in the rebuilt index if damaged). False
    /// for a while after a failed rebuild, so that the background pass does not retry at once.
    pub(crate) fn lazy_done(&self) -> bool {
        self.lazy.as_ref().is_some_and(|l| {
            if l.damaged() {
                l.failed_at.lock().is_none_or(|t| t.elapsed() >= RETRY_AFTER)
            } else {
                l.left.load(Ordering::Acquire) == 0
            }
        })
    }

    /// Whether data nodes of the image are still unchecked (and none failed so far).
    pub fn checks_pending(&self) -> bool {
        self.lazy
            .as_ref()
            .is_some_and(|l| !l.damaged() && l.left.load(Ordering::Acquire) > 0)
    }
}
