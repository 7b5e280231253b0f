//! Lazy checking of an index opened from an image: the data nodes' arrays (nearly all of the
//! image's bytes) are checksummed the first time something touches them, or by a background
//! pass, instead of all of them before the open returns. The header, the directory and the
//! model nodes' arrays are still checked at open (`Alex::from_image`), so routing a key to its
//! data node, the node's metadata (its key count, bounds and leaf links) and the index's
//! statistics never read an unchecked byte.
//!
//! The rules, and why they keep every answer right:
//! - Reads reach a data node's arrays only through `Alex::data` or `Alex::leaf_ref`, which
//!   check the node first (once per node: `OnceLock`, so concurrent readers of an unchecked
//!   node wait for one check instead of each making it). A node that fails its check is never
//!   read: those accessors hand out an empty stand-in node instead and mark the index damaged.
//! - Every read the engine makes goes through `Alex::read`, which runs it and, if the index is
//!   damaged afterwards (by this read or any other), throws the result away and runs the read
//!   again on the index rebuilt from its source (the engine's rows). So a result is returned
//!   only if every node it used passed its check, or it comes from the rebuilt index.
//! - Writes (`insert`, `upsert`, `update`, `remove`) first settle the index: every data node
//!   left is checked, then the lazy state is dropped, and a damaged index is replaced by the
//!   rebuilt one before the write is applied to it. A write therefore never changes (and no
//!   later check ever hashes) a byte that was not checked, and the rebuilt index, built from
//!   the rows, already holds every write whose rows were stored before it was built.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::data_node::DataNode;
use super::{Alex, AlexKey, Node};
use crate::index::mapped::{as_bytes, prefault};

/// Builds the entries of an index again from its source (sorted by key, unique), when part of
/// its image failed its check. The engine's reads every stored version of the table. `Err`:
/// the source could not be read.
pub type Rebuild<K> = Box<dyn Fn() -> Result<Vec<(K, u64)>, String> + Send + Sync>;

/// The state of an index whose data nodes are not all checked yet (see the module comment).
pub(crate) struct Lazy<K: AlexKey> {
    /// Per arena id: the checksum of a data node's arrays, from the image's directory.
    want: Vec<Option<u64>>,
    /// Per arena id: whether the node's arrays matched, once checked.
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
}

impl<K: AlexKey> Lazy<K> {
    /// The lazy state of an index whose data nodes' arrays should have the checksums `want`
    /// (by arena id; `None` for other ids).
    pub(crate) fn new(want: Vec<Option<u64>>, rebuild: Rebuild<K>) -> Lazy<K> {
        let left = want.iter().filter(|w| w.is_some()).count();
        Lazy {
            checked: (0..want.len()).map(|_| OnceLock::new()).collect(),
            want,
            left: AtomicUsize::new(left),
            all_good: AtomicBool::new(left == 0),
            damaged: AtomicBool::new(false),
            cursor: AtomicUsize::new(0),
            stand_in: DataNode::empty(),
            rebuild,
            replacement: OnceLock::new(),
        }
    }

    /// Node `id` (`d`) checked, once: `d` if its arrays match their checksum, else the stand-in
    /// (and the index is marked damaged before this returns).
    fn gate<'a>(&'a self, id: u32, d: &'a DataNode<K>) -> &'a DataNode<K> {
        let ok = *self.checked[id as usize].get_or_init(|| {
            let Some(want) = self.want[id as usize] else {
                return true;
            };
            let (slots, bitmap) = (as_bytes(&d.slots), as_bytes(&d.bitmap));
            prefault(slots);
            prefault(bitmap);
            let ok = super::image::hash2(slots, bitmap) == want;
            if !ok {
                self.damaged.store(true, Ordering::Release);
            }
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

    fn damaged(&self) -> bool {
        self.damaged.load(Ordering::Acquire)
    }

    /// The index rebuilt from the source (built by the first caller; the others wait for it).
    fn replacement(&self) -> &Alex<K> {
        self.replacement.get_or_init(|| rebuilt(&self.rebuild))
    }

    fn into_replacement(self) -> Alex<K> {
        let Lazy {
            replacement, rebuild, ..
        } = self;
        replacement.into_inner().unwrap_or_else(|| rebuilt(&rebuild))
    }
}

/// An index built from what `rebuild` reads. If the source cannot be read either, no answer
/// can be given that is known to be right: this panics (the image failed its checksum and the
/// rows cannot be read; the next open tries again).
fn rebuilt<K: AlexKey>(rebuild: &Rebuild<K>) -> Alex<K> {
    let entries = match rebuild() {
        Ok(e) => e,
        Err(e) => {
            panic!("an index image failed its checksum and the index cannot be rebuilt from its source: {e}")
        }
    };
    Alex::bulk_load(&entries).unwrap_or_else(|_| {
        let mut a = Alex::new();
        for (k, v) in entries {
            a.upsert(k, v);
        }
        a
    })
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

    /// Runs the read `f` on this index, or, if a part of its image failed its check (found by
    /// `f` itself or by anything else before `f` returned), on the index rebuilt from its
    /// source. Every read the engine makes of an index goes through this (see the module
    /// comment); `f` may run twice.
    #[inline]
    pub(crate) fn read<R>(&self, mut f: impl FnMut(&Alex<K>) -> R) -> R {
        let Some(l) = &self.lazy else {
            return f(self);
        };
        if !l.damaged() {
            let r = f(self);
            if !l.damaged() {
                return r;
            }
        }
        f(l.replacement())
    }

    /// This index with every data node checked (checking those left now), or the rebuilt
    /// index if one failed: for reads that walk the arena rather than the accessors
    /// (`to_image`, `check_invariants`).
    pub(crate) fn settled(&self) -> &Alex<K> {
        match &self.lazy {
            Some(l) if !self.check_all() => l.replacement(),
            _ => self,
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

    /// Before a write: checks every data node left, drops the lazy state, and replaces a
    /// damaged index by the rebuilt one.
    #[inline]
    pub(crate) fn settle(&mut self) {
        if self.lazy.is_some() {
            self.settle_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn settle_slow(&mut self) {
        let damaged = !std::ptr::eq(self.settled(), self);
        let l = self.lazy.take().expect("checked above");
        if damaged {
            *self = l.into_replacement();
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
                if l.checked[id].get().is_none() {
                    l.gate(id as u32, d);
                    return true;
                }
            }
        }
        false
    }

    /// Whether the lazy state is over (every data node checked, or one failed) but still
    /// held: [`Alex::settle`] would drop it (and swap in the rebuilt index if damaged).
    pub(crate) fn lazy_done(&self) -> bool {
        self.lazy
            .as_ref()
            .is_some_and(|l| l.damaged() || l.left.load(Ordering::Acquire) == 0)
    }

    /// Whether data nodes of the image are still unchecked (and none failed so far).
    pub fn checks_pending(&self) -> bool {
        self.lazy
            .as_ref()
            .is_some_and(|l| !l.damaged() && l.left.load(Ordering::Acquire) > 0)
    }
}
