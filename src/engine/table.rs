//! A table at run time: its definition, its primary-key index (ALEX or the ordered fallback)
//! and its secondary indexes.

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::catalog::{IndexDef, TableDef};
use crate::index::keyed::{IndexBytes, IndexKind, KeyIndex};
use crate::types::{Key, Value};

/// A secondary index: every (encoded column values, primary key, rowid) of the row versions that
/// are still stored. Readers re-check each candidate against the version their snapshot sees, so
/// an entry is exactly as long-lived as its row version.
pub struct SecondaryIndex {
    pub def: IndexDef,
    pub entries: BTreeSet<(Vec<u8>, Key, u64)>,
}

impl SecondaryIndex {
    /// Primary keys whose entries fall within the encoded-value bounds (may repeat a key).
    pub fn candidates(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Key> {
        let lo_b: Bound<(Vec<u8>, Key, u64)> = match lo {
            Bound::Unbounded => Bound::Unbounded,
            // (v, smallest key, 0) is the first entry with value v; equal values are skipped
            // below for an excluded bound.
            Bound::Included(v) | Bound::Excluded(v) => Bound::Included((v.to_vec(), Key::Int(i64::MIN), 0)),
        };
        let mut out = Vec::new();
        for (v, k, _) in self.entries.range((lo_b, Bound::Unbounded)) {
            let past = match hi {
                Bound::Unbounded => false,
                Bound::Included(h) => v.as_slice() > h,
                Bound::Excluded(h) => v.as_slice() >= h,
            };
            if past {
                break;
            }
            if let Bound::Excluded(l) = lo {
                if v.as_slice() == l {
                    continue;
                }
            }
            out.push(k.clone());
        }
        out
    }
}

pub struct Table {
    /// Stable for the life of this object; TRUNCATE and rebuilds create a new `Table`.
    pub id: u32,
    def: RwLock<Arc<TableDef>>,
    /// The address of the current definition (`Arc::as_ptr` of `def`'s), for
    /// [`Table::has_def`] without the lock: a plan holding a definition keeps its allocation,
    /// so no other definition can have that address while the plan compares it.
    def_at: AtomicPtr<TableDef>,
    /// The current definition's number of columns: a stored row with fewer values was written
    /// before `ALTER TABLE ... ADD COLUMN` and reads [`Table::missing_values`] past its end.
    ncols: AtomicUsize,
    missing: RwLock<Arc<Vec<Value>>>,
    pub(crate) pk: RwLock<KeyIndex>,
    pub(crate) secondary: RwLock<Vec<SecondaryIndex>>,
    /// Next hidden row identity for tables without a primary key.
    pub(crate) hidden_next: AtomicI64,
    /// Rowid up to which the persisted index checkpoint covers this table.
    pub(crate) ckpt_watermark: AtomicU64,
    pub(crate) ckpt_generation: AtomicU64,
    /// The secondary indexes the current checkpoint's form holds (a checkpoint at an unchanged
    /// watermark is still written when they differ from the table's).
    pub(crate) ckpt_secondary: Mutex<Vec<IndexDef>>,
    pub(crate) dropped: AtomicBool,
    /// The owner (a session) holding this table's lock (`LockTable::table_lock`), 0 for none:
    /// what a statement reads to learn, without the lock table's mutex, whether it must take
    /// the path that waits.
    pub(crate) lock_owner: AtomicU64,
    /// Set when a data node of the image this table's index was opened from failed its lazy
    /// check: the next checkpoint is written even at an unchanged watermark, so that the next
    /// open does not map that image again.
    pub(crate) image_damaged: Arc<AtomicBool>,
    /// The [`constraint_stamp`] of the last definition change that changed its NOT NULL
    /// columns, CHECKs or FOREIGN KEYs (0: none since the table was opened or created).
    constraints_at: AtomicU64,
    /// Whether a foreign key references this table, as of a version of the database's
    /// [`super::catalog::Referenced`]: `(version + 1) << 1 | answer`, 0 before the first.
    referenced: AtomicU64,
}

/// Counts the definition changes that changed a table's constraints, in the process.
static CONSTRAINT_STAMP: AtomicU64 = AtomicU64::new(0);

/// The number of constraint changes so far: a transaction (or statement) that reads it before
/// it checks its rows knows, at its commit, which tables' constraints changed since
/// (`Table::constraints_at` above it; `txn/altered.rs`).
pub fn constraint_stamp() -> u64 {
    CONSTRAINT_STAMP.load(Ordering::Acquire)
}

impl Table {
    /// `Err`: the index cannot be read (a damaged image that could not be rebuilt).
    pub(crate) fn new(def: TableDef, pk: KeyIndex) -> crate::Result<Table> {
        // Only without a primary key: `last` reads a data node (and on an image opened lazily,
        // checksums it).
        let hidden_next = match def.has_primary_key() {
            false => match pk.last()? {
                Some((Key::Int(i), _)) => i.saturating_add(1),
                _ => 1,
            },
            true => 1,
        };
        let secondary = def
            .indexes
            .iter()
            .map(|d| SecondaryIndex {
                def: d.clone(),
                entries: BTreeSet::new(),
            })
            .collect();
        let ncols = AtomicUsize::new(def.columns.len());
        let missing = RwLock::new(Arc::new(def.missing_values()));
        let def = Arc::new(def);
        Ok(Table {
            id: def.id,
            def_at: AtomicPtr::new(Arc::as_ptr(&def).cast_mut()),
            def: RwLock::new(def),
            ncols,
            missing,
            pk: RwLock::new(pk),
            secondary: RwLock::new(secondary),
            hidden_next: AtomicI64::new(hidden_next),
            ckpt_watermark: AtomicU64::new(0),
            ckpt_generation: AtomicU64::new(0),
            ckpt_secondary: Mutex::new(Vec::new()),
            dropped: AtomicBool::new(false),
            lock_owner: AtomicU64::new(0),
            constraints_at: AtomicU64::new(0),
            referenced: AtomicU64::new(0),
            image_damaged: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Whether a foreign key references this table, if that was last found out at version
    /// `version` of the referenced set.
    #[inline]
    pub(crate) fn referenced_as_of(&self, version: u64) -> Option<bool> {
        let r = self.referenced.load(Ordering::Acquire);
        (r >> 1 == version.wrapping_add(1)).then_some(r & 1 == 1)
    }

    pub(crate) fn set_referenced(&self, version: u64, referenced: bool) {
        self.referenced.store(
            version.wrapping_add(1) << 1 | referenced as u64,
            Ordering::Release,
        );
    }

    /// The current definition.
    /// The owner holding the table's lock (an ALTER in its open block), 0 for none.
    #[inline]
    pub fn lock_owner(&self) -> u64 {
        self.lock_owner.load(Ordering::Acquire)
    }

    pub fn def(&self) -> Arc<TableDef> {
        self.def.read().clone()
    }

    /// Whether `d` is the current definition (as `Arc::ptr_eq(&def(), d)`, without the clone
    /// or the lock).
    #[inline]
    pub fn has_def(&self, d: &Arc<TableDef>) -> bool {
        std::ptr::eq(self.def_at.load(Ordering::Acquire), Arc::as_ptr(d))
    }

    pub(crate) fn set_def(&self, def: TableDef) {
        // The padding first: a reader that sees the new width finds values for it.
        *self.missing.write() = Arc::new(def.missing_values());
        self.ncols.store(def.columns.len(), Ordering::Release);
        let def = Arc::new(def);
        let mut slot = self.def.write();
        if slot.checks != def.checks
            || slot.foreign_keys != def.foreign_keys
            || !slot
                .columns
                .iter()
                .map(|c| c.nullable)
                .eq(def.columns.iter().map(|c| c.nullable))
        {
            let stamp = CONSTRAINT_STAMP.fetch_add(1, Ordering::AcqRel) + 1;
            self.constraints_at.store(stamp, Ordering::Release);
        }
        self.def_at.store(Arc::as_ptr(&def).cast_mut(), Ordering::Release);
        *slot = def;
    }

    /// The [`constraint_stamp`] of this table's last change of constraints.
    pub(crate) fn constraints_at(&self) -> u64 {
        self.constraints_at.load(Ordering::Acquire)
    }

    /// What each column reads in a stored row written before the column was added.
    pub(crate) fn missing_values(&self) -> Arc<Vec<Value>> {
        self.missing.read().clone()
    }

    /// Whether a row of `len` values is narrower than the current definition (it was stored
    /// before an `ADD COLUMN`).
    #[inline]
    pub(crate) fn is_short(&self, len: usize) -> bool {
        len < self.ncols.load(Ordering::Acquire)
    }

    /// A row completed to the current definition's width (see [`TableDef::complete_row`]).
    pub(crate) fn complete(&self, row: Arc<Vec<Value>>) -> Arc<Vec<Value>> {
        if !self.is_short(row.len()) {
            return row;
        }
        let missing = self.missing_values();
        let mut r = Arc::unwrap_or_clone(row);
        let n = r.len();
        r.extend(missing.iter().skip(n).cloned());
        Arc::new(r)
    }

    /// Whether this is the kept old incarnation of a table a transaction block rebuilt
    /// (`retire.rs`): invisible by name, listed by no catalog.
    pub(crate) fn is_retired(&self) -> bool {
        super::retire::is_retired_name(&self.def.read().name)
    }

    pub fn name(&self) -> String {
        self.def.read().name.clone()
    }

    /// Which structure answers primary-key lookups.
    pub fn key_index_kind(&self) -> IndexKind {
        self.pk.read().kind()
    }

    /// Number of keys in the primary index (including not-yet-collected deletes).
    pub fn index_len(&self) -> usize {
        self.pk.read().len()
    }

    /// Bytes of the primary index in memory: heap plus the mapped image (see
    /// [`Table::index_bytes`] for the two apart).
    pub fn index_heap_bytes(&self) -> usize {
        self.pk.read().heap_bytes()
    }

    /// The primary index's memory, heap and mapped image apart (for a memory budget).
    pub fn index_bytes(&self) -> IndexBytes {
        self.pk.read().bytes()
    }

    /// Whether data nodes of the image the primary index was opened from are still to be
    /// checksummed (lazily: [`super::ImageCheck::Lazy`]), none having failed so far.
    pub fn index_checks_pending(&self) -> bool {
        self.pk.read().checks_pending()
    }

    /// Bytes of the secondary indexes' entries (each entry's value and key bytes, its rowid,
    /// and the B-tree's per-entry overhead).
    pub fn secondary_heap_bytes(&self) -> usize {
        self.secondary
            .read()
            .iter()
            .flat_map(|s| s.entries.iter())
            .map(|(v, k, _)| {
                let key = match k {
                    Key::Bytes(b) => b.capacity(),
                    Key::Int(_) => 0,
                };
                v.capacity() + key + std::mem::size_of::<(Vec<u8>, Key, u64)>() + 16
            })
            .sum()
    }

    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub(crate) fn add_secondary_entries(&self, row: &[Value], key: &Key, rowid: u64) {
        let def = self.def();
        if def.indexes.is_empty() {
            return;
        }
        let mut sec = self.secondary.write();
        for s in sec.iter_mut() {
            if let Some(v) = def.index_value(&s.def, row) {
                s.entries.insert((v, key.clone(), rowid));
            }
        }
    }

    pub(crate) fn remove_secondary_entries(&self, row: &[Value], key: &Key, rowid: u64) {
        let def = self.def();
        if def.indexes.is_empty() {
            return;
        }
        let mut sec = self.secondary.write();
        for s in sec.iter_mut() {
            if let Some(v) = def.index_value(&s.def, row) {
                s.entries.remove(&(v, key.clone(), rowid));
            }
        }
    }
}
