//! One SST file of the rows column family, mapped read-only and modelled: for each table whose
//! rows it holds, a learned model from rowid to data block; a point read goes from a rowid to
//! its entry in the mapping without a system call or a copy.
//!
//! A block's checksum is verified the first time a read (or the populate pass) touches it, and
//! its layout (where its restart array starts) recorded beside its place in the run's block
//! table, so no byte is returned from a block that has not passed verification, a block is
//! verified once (twice at most, when a read and the populate pass race to it), and a read
//! touches the block table entry, one restart offset and the entry itself. When a block's
//! entries all have one length (rows of one size), verification records it and a read skips
//! the restart offset; a run also keeps a sparse table of block offsets from which a read
//! guesses the entry's place and prefetches it while the block table entry loads. Once the
//! populate pass has verified a group of blocks and found each exactly where, as large and as
//! full of dense rowids as the group's first says (`Place::confirm`), the guess is exact and a
//! point read there goes to the entry without reading the block table at all.

use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::format::{self, BlockLayout, Footer, Handle, Res, Unsupported, KEY_TRAILER, TYPE_VALUE};
use super::mapping::Mapping;
use super::model::Pla;

/// Bytes of a row key: table id (u32 BE) ‖ rowid (u64 BE).
const USER_KEY: usize = 12;

/// The rows one table has in this file: which blocks, and the model over them.
#[derive(Debug)]
pub(crate) struct Run {
    pub table: u32,
    /// Smallest and largest rowid of the table's entries in the file (bounds, from the blocks'
    /// first and last keys).
    pub lo: u64,
    pub hi: u64,
    /// The run's data blocks in key order.
    blocks: Vec<BlockRef>,
    /// The model from rowid to position in `blocks` (over `BlockRef::bound`).
    model: Pla,
    /// Where in the file the model's prediction puts a row's entry, to start its load before
    /// the block table says exactly.
    place: Place,
}

/// A guess of a row's byte offset, to start loading it before the block table says exactly
/// where it is: every 64th block's first rowid, offset, size and row count, and the blocks
/// after it taken to be like it (rows of one length make them so). A wrong guess costs a
/// wasted prefetch, never a wrong answer.
#[derive(Debug, Default)]
struct Place {
    anchors: Vec<Anchor>,
    /// How many blocks from the run's first on are confirmed and lie exactly as the first
    /// anchor says (one progression over the groups): a read there computes its entry from
    /// the first anchor alone (`Place::uniform_at`), which every read touches, so it stays in
    /// the CPU's cache where the anchors of a large file do not.
    uniform: AtomicU64,
    /// `u64::MAX / rows + 1` of the first anchor: a rowid offset below 2^32 is divided by the
    /// block's row count with a multiplication (`(d * magic) >> 64`, exact there).
    magic: u64,
}

#[derive(Debug)]
struct Anchor {
    first: u64,
    offset: u64,
    /// Rows in the block (rowids `first..first + rows`: dense in a fresh file).
    rows: u32,
    /// Bytes from one block to the next (its contents and the 5-byte trailer).
    stride: u32,
    /// Bytes per entry, when the rows and the restart array fill the block exactly.
    entry: u32,
    /// How many blocks from this anchor's on are confirmed to be exactly like it (0 until the
    /// populate pass has verified them all and checked each: its place, its size, one entry
    /// length, `rows` entries holding rowids `first + k * rows ..` densely). Within them the
    /// guess is no guess: a read goes to the entry without the block table (`Place::exact`).
    confirmed: AtomicU32,
}

const ANCHOR_EVERY: usize = 64;

impl Anchor {
    /// Block `k` after this anchor's (in `bytes`, the file), taken to be exactly like it;
    /// `first_block` is the anchor's own index in the run.
    #[inline]
    fn block<'a>(&self, bytes: &'a [u8], k: u64, first_block: usize) -> Option<BlockAt<'a>> {
        let rows = u64::from(self.rows);
        let start = (self.offset + k * u64::from(self.stride)) as usize;
        Some(BlockAt {
            block: first_block + k as usize,
            b: bytes.get(start..start + self.stride as usize - 5)?,
            l: BlockLayout {
                restarts_at: (rows * u64::from(self.entry)) as usize,
                num_restarts: self.rows as usize,
            },
            stride: self.entry as usize,
            first: self.first + k * rows,
        })
    }
}

impl Place {
    fn fit(blocks: &[BlockRef], lo: u64) -> Place {
        // Every 64th block has its anchor, in place; one that cannot be one (a block that
        // ends the run or is not full of rows) has no rows and is never used.
        let none = || Anchor {
            first: 0,
            offset: 0,
            rows: 0,
            stride: 0,
            entry: 0,
            confirmed: AtomicU32::new(0),
        };
        let anchors = (0..blocks.len())
            .step_by(ANCHOR_EVERY)
            .map(|i| {
                let b = &blocks[i];
                let first = if i == 0 {
                    lo
                } else {
                    blocks[i - 1].bound.saturating_add(1)
                };
                let rows = u32::try_from(b.bound.checked_sub(first)?.checked_add(1)?).ok()?;
                // Entries, then a restart offset per entry and the restart count.
                let body = b.size.checked_sub(rows.checked_mul(4)?.checked_add(4)?)?;
                Some(Anchor {
                    first,
                    offset: b.offset,
                    rows,
                    stride: b.size.checked_add(5)?,
                    entry: body / rows,
                    confirmed: AtomicU32::new(0),
                })
            })
            .map(|a| a.unwrap_or_else(none))
            .collect::<Vec<_>>();
        let magic = match anchors.first() {
            Some(a) if a.rows > 0 => u64::MAX / u64::from(a.rows) + 1,
            _ => 0,
        };
        Place {
            anchors,
            uniform: AtomicU64::new(0),
            magic,
        }
    }

    /// The block of row `rowid` when it lies in the run's uniform prefix (see
    /// [`Place::uniform`]): arithmetic on the first anchor, no other memory read.
    #[inline]
    fn uniform_at<'a>(&self, bytes: &'a [u8], rowid: u64) -> Option<BlockAt<'a>> {
        let a = self.anchors.first()?;
        let d = rowid.wrapping_sub(a.first);
        if d >> 32 != 0 {
            return None;
        }
        // Exact for d < 2^32 and rows < 2^32 (a 64-bit reciprocal of a 32-bit divisor).
        let k = ((u128::from(d) * u128::from(self.magic)) >> 64) as u64;
        if k >= self.uniform.load(Ordering::Acquire) {
            return None;
        }
        a.block(bytes, k, 0)
    }

    /// Extends [`Place::uniform`] over the groups confirmed since, while each is confirmed
    /// whole and continues the first anchor's progression; `blocks` is the run's block count.
    fn extend_uniform(&self, blocks: usize) {
        let Some(a0) = self.anchors.first() else {
            return;
        };
        if a0.rows == 0 {
            return;
        }
        let mut u = self.uniform.load(Ordering::Acquire) as usize;
        while u.is_multiple_of(ANCHOR_EVERY) && u < blocks {
            let g = u / ANCHOR_EVERY;
            let a = &self.anchors[g];
            let group = ANCHOR_EVERY.min(blocks - u);
            let step = (g * ANCHOR_EVERY) as u64;
            let like = a.rows == a0.rows
                && a.stride == a0.stride
                && a.entry == a0.entry
                && a.offset == a0.offset + step * u64::from(a0.stride)
                && a.first == a0.first + step * u64::from(a0.rows);
            let c = a.confirmed.load(Ordering::Acquire) as usize;
            if !like || c == 0 {
                break;
            }
            u += c.min(group);
            if c < group {
                break;
            }
        }
        self.uniform.fetch_max(u as u64, Ordering::AcqRel);
    }

    /// The guessed offset of row `rowid`, which the model placed near block `near`.
    #[inline]
    fn guess(&self, near: usize, rowid: u64) -> Option<usize> {
        let g = (near / ANCHOR_EVERY).min(self.anchors.len().checked_sub(1)?);
        let a = &self.anchors[g];
        if a.rows == 0 {
            return None;
        }
        let d = rowid.checked_sub(a.first)?;
        let (b, j) = (d / u64::from(a.rows), d % u64::from(a.rows));
        usize::try_from(a.offset + b * u64::from(a.stride) + j * u64::from(a.entry)).ok()
    }

    /// The block of row `rowid` (which the model placed near block `near`), when the blocks
    /// around are confirmed: found by arithmetic, without the block table.
    #[inline]
    fn exact<'a>(&self, bytes: &'a [u8], near: usize, rowid: u64) -> Option<BlockAt<'a>> {
        let g = near / ANCHOR_EVERY;
        let a = self.anchors.get(g)?;
        let confirmed = u64::from(a.confirmed.load(Ordering::Acquire));
        if confirmed == 0 {
            // Also every anchor that cannot be one (`rows` 0).
            return None;
        }
        let k = rowid.checked_sub(a.first)? / u64::from(a.rows);
        if k >= confirmed {
            return None;
        }
        a.block(bytes, k, g * ANCHOR_EVERY)
    }

    /// Confirms the anchor of group `g` (see [`Anchor::confirmed`]) if every block of the
    /// group is verified and exactly like the anchor says; `file` reads the blocks.
    fn confirm(&self, file: &SstFile, run: &Run, g: usize) {
        let Some(a) = self.anchors.get(g) else {
            return;
        };
        if a.rows == 0 || a.confirmed.load(Ordering::Relaxed) != 0 {
            return;
        }
        let first_block = g * ANCHOR_EVERY;
        let group = &run.blocks[first_block..(first_block + ANCHOR_EVERY).min(run.blocks.len())];
        let mut ok = 0u32;
        for (k, br) in group.iter().enumerate() {
            let k64 = k as u64;
            let like = br.offset == a.offset + k64 * u64::from(a.stride)
                && u64::from(br.size) + 5 == u64::from(a.stride)
                && br.stride.load(Ordering::Relaxed) == a.entry
                && br.num_restarts.load(Ordering::Relaxed) == a.rows;
            let at = br.restarts_at.load(Ordering::Acquire);
            if !like || at == 0 || at == FAILED || at as u64 != u64::from(a.rows) * u64::from(a.entry) {
                break;
            }
            let Some((b, l)) = file.block(br) else {
                break;
            };
            // One entry length and a restart point per entry (the stride says so), keys
            // ascending: the first and the last key being the dense ones makes every key so.
            let lo = a.first + k64 * u64::from(a.rows);
            let key_of = |j: usize| {
                format::entry(b, j * a.entry as usize, l.restarts_at)
                    .ok()
                    .map(|e| split_key(&b[e.key_at..e.key_at + USER_KEY]))
            };
            if key_of(0) != Some((run.table, lo))
                || key_of(a.rows as usize - 1) != Some((run.table, lo + u64::from(a.rows) - 1))
            {
                break;
            }
            ok += 1;
        }
        if ok > 0 {
            a.confirmed.store(ok, Ordering::Release);
        }
    }
}

/// One data block as a run sees it: what the model searches and what a read needs, together, so
/// a lookup's search of the bounds brings the rest of the entry with it.
#[derive(Debug)]
struct BlockRef {
    /// The largest rowid of the run's table the block may hold.
    bound: u64,
    offset: u64,
    size: u32,
    /// 0 until the block is verified (checksum, uncompressed), then the offset of its restart
    /// array (entries never end at 0); `FAILED` if verification failed.
    restarts_at: AtomicU32,
    num_restarts: AtomicU32,
    /// Set with `restarts_at` when the block is verified: the length of every entry when all
    /// of them have the same length and each is a restart point (rows of one size), so entry
    /// `j` starts at `j * stride`; 0 otherwise.
    stride: AtomicU32,
}

const FAILED: u32 = u32::MAX;

/// What a lookup in one file found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found<'a> {
    /// The row version's bytes, in the mapping.
    Value(&'a [u8]),
    /// This file has no entry for the rowid.
    Absent,
    /// The file has an entry this reader cannot serve (a deletion marker, a compressed block, a
    /// block that failed its checksum): the read must go through RocksDB.
    Fallback,
}

pub(crate) struct SstFile {
    pub number: u64,
    map: Mapping,
    footer: Footer,
    /// Data blocks in the file.
    blocks: usize,
    pub runs: Vec<Run>,
}

#[cfg(test)]
fn row_key(table: u32, rowid: u64) -> [u8; USER_KEY] {
    let mut k = [0u8; USER_KEY];
    k[..4].copy_from_slice(&table.to_be_bytes());
    k[4..].copy_from_slice(&rowid.to_be_bytes());
    k
}

/// The largest 12-byte key that sorts at or below the index separator `sep`, as (table, rowid).
/// A separator may be shortened (any string between the last key of its block and the first of
/// the next): shorter than a key, "key <= sep" means "key < sep padded with zeros".
fn bound_of(sep: &[u8]) -> (u32, u64) {
    let mut k = [0u8; USER_KEY];
    let n = sep.len().min(USER_KEY);
    k[..n].copy_from_slice(&sep[..n]);
    let v = u128::from_be_bytes({
        let mut b = [0u8; 16];
        b[4..].copy_from_slice(&k);
        b
    });
    let v = if sep.len() < USER_KEY {
        v.saturating_sub(1)
    } else {
        v
    };
    ((v >> 64) as u32, v as u64)
}

impl SstFile {
    /// Maps `path` and models it. Fails with [`Unsupported`] for any file this reader does not
    /// understand in full (the caller then leaves it to RocksDB).
    /// `last_key` is the file's largest user key as RocksDB reports it, if known.
    pub(crate) fn open(path: &Path, number: u64, last_key: Option<&[u8]>) -> Res<SstFile> {
        let f = std::fs::File::open(path).map_err(|e| Unsupported(format!("open: {e}")))?;
        // RocksDB never modifies or truncates a live SST file (it writes a new file and deletes
        // the old name); a mapping of an unlinked file keeps its bytes. A failing disk under the
        // mapping raises SIGBUS, which `super::sigbus` turns into a clear abort.
        let map = Mapping::new(&f).map_err(|e| Unsupported(format!("mmap: {e}")))?;
        let bytes = map.bytes();
        let footer = format::footer(bytes)?;
        let (index, props) = format::table_meta(bytes, &footer)?;
        let n = props.num_data_blocks as usize;
        let mut handles = Vec::with_capacity(n);
        let mut bounds: Vec<(u32, u64)> = Vec::with_capacity(n);
        format::for_each_index_entry(bytes, &footer, index, &props, |sep, h: Handle| {
            if u32::try_from(h.size).is_err() {
                return Err(Unsupported("data block over 4 GiB".into()));
            }
            handles.push(h);
            bounds.push(bound_of(sep));
            Ok(())
        })?;
        let mut file = SstFile {
            number,
            map,
            footer,
            blocks: handles.len(),
            runs: Vec::new(),
        };
        let last_key = last_key.filter(|k| k.len() == USER_KEY).map(split_key);
        file.runs = file.model_runs(&handles, &bounds, last_key)?;
        Ok(file)
    }

    /// Splits the blocks into per-table runs and fits each run's model. Block `b` holds the keys
    /// above bound `b-1` up to bound `b`, so a block whose bound and predecessor's bound lie in the
    /// same table holds that table's rows only; the other ("boundary") blocks, where tables
    /// change, and the first block are read to learn which tables they hold and each table's
    /// exact first and last rowid. No other block is touched.
    fn model_runs(
        &self,
        handles: &[Handle],
        bounds: &[(u32, u64)],
        last_key: Option<(u32, u64)>,
    ) -> Res<Vec<Run>> {
        use std::collections::BTreeMap;
        // table -> (smallest, largest) rowid seen in boundary blocks
        let mut seen: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
        for b in 0..bounds.len() {
            if b > 0 && bounds[b - 1].0 == bounds[b].0 {
                continue;
            }
            self.for_each_key(handles[b], |t, r| {
                let e = seen.entry(t).or_insert((r, r));
                e.0 = e.0.min(r);
                e.1 = e.1.max(r);
                true
            })?;
        }
        for &(t, _) in bounds {
            seen.entry(t).or_insert((u64::MAX, 0));
        }
        let mut runs = Vec::new();
        for (&table, &(min_seen, max_seen)) in &seen {
            let first = bounds.partition_point(|&(t, _)| t < table);
            if first == bounds.len() {
                continue;
            }
            // The first block whose bound is past the table ends the run.
            let end = bounds.partition_point(|&(t, _)| t <= table);
            let last = end.min(bounds.len() - 1);
            let blocks: Vec<BlockRef> = (first..=last)
                .map(|b| BlockRef {
                    bound: if bounds[b].0 == table {
                        bounds[b].1
                    } else {
                        u64::MAX
                    },
                    offset: handles[b].offset,
                    size: handles[b].size as u32,
                    restarts_at: AtomicU32::new(0),
                    num_restarts: AtomicU32::new(0),
                    stride: AtomicU32::new(0),
                })
                .collect();
            let hi = match last_key {
                Some((t, r)) if end == bounds.len() && t == table => r,
                _ if end == bounds.len() => bounds[last].1,
                _ => max_seen,
            };
            if min_seen > hi {
                // A bound in the table's key space but no key of it in the block that starts it:
                // the table has no rows here (a separator only).
                continue;
            }
            let model = Pla::fit(blocks.len(), |i| blocks[i].bound);
            let place = Place::fit(&blocks, min_seen);
            runs.push(Run {
                table,
                lo: min_seen,
                hi,
                blocks,
                model,
                place,
            });
        }
        Ok(runs)
    }

    /// Visits the (table, rowid) of each entry of a data block in order while `f` returns true.
    fn for_each_key(&self, h: Handle, mut f: impl FnMut(u32, u64) -> bool) -> Res<()> {
        let (b, l) = self.verify(h)?;
        let mut key = [0u8; USER_KEY + KEY_TRAILER];
        let mut pos = 0;
        while pos < l.restarts_at {
            let e = format::entry(b, pos, l.restarts_at)?;
            if e.shared + e.non_shared != key.len() {
                return Err(Unsupported("row key of unexpected length".into()));
            }
            key[e.shared..].copy_from_slice(&b[e.key_at..e.key_at + e.non_shared]);
            let (t, r) = split_key(&key);
            if !f(t, r) {
                break;
            }
            pos = e.key_at + e.non_shared + e.value_len;
        }
        Ok(())
    }

    /// Verifies the block at `h` (checksum, uncompressed) and reads its layout.
    fn verify(&self, h: Handle) -> Res<(&[u8], BlockLayout)> {
        format::verify_block(self.map.bytes(), h, &self.footer)?;
        let (b, kind) = format::block(self.map.bytes(), h)?;
        if kind != 0 {
            return Err(Unsupported(format!("compressed data block (type {kind})")));
        }
        let l = format::layout(b)?;
        Ok((b, l))
    }

    /// The contents and layout of a run's block, verified on first use; None if it fails.
    #[inline]
    fn block(&self, br: &BlockRef) -> Option<(&[u8], BlockLayout)> {
        let mut at = br.restarts_at.load(Ordering::Acquire);
        if at == 0 {
            let h = Handle {
                offset: br.offset,
                size: u64::from(br.size),
            };
            at = match self.verify(h) {
                Ok((b, l)) => {
                    br.num_restarts.store(l.num_restarts as u32, Ordering::Relaxed);
                    br.stride.store(uniform_stride(b, l), Ordering::Relaxed);
                    l.restarts_at as u32
                }
                Err(_) => FAILED,
            };
            br.restarts_at.store(at, Ordering::Release);
        }
        if at == FAILED {
            return None;
        }
        let start = br.offset as usize;
        let l = BlockLayout {
            restarts_at: at as usize,
            num_restarts: br.num_restarts.load(Ordering::Relaxed) as usize,
        };
        Some((&self.map.bytes()[start..start + br.size as usize], l))
    }

    /// Looks `rowid` up in run `run` of this file (a point read: no cursor is kept), in the block
    /// [`SstFile::block_of`] finds.
    #[inline]
    pub(crate) fn get<'a>(&'a self, run: &'a Run, rowid: u64) -> Found<'a> {
        match self.block_of(run, rowid) {
            Ok(at) => find_entry(at.b, at.l, at.stride, (run.table, rowid), at.hint(rowid)),
            Err(f) => f,
        }
    }

    /// Looks `rowid` up in run `run` of this file, and returns with the answer a cursor at the
    /// block the rowid belongs to, from which larger rowids are read without the model.
    #[inline]
    pub(crate) fn seek<'a>(&'a self, run: &'a Run, rowid: u64) -> (Found<'a>, Option<Cursor<'a>>) {
        let at = match self.block_of(run, rowid) {
            Ok(at) => at,
            Err(f) => return (f, None),
        };
        let mut c = Cursor {
            file: self,
            run,
            block: at.block,
            b: at.b,
            l: at.l,
            stride: at.stride,
            first: at.first,
            after: 0,
            last: rowid,
        };
        (c.find(rowid), Some(c))
    }

    /// The verified block of run `run` that would hold `rowid`, or what the lookup ends with
    /// (absent past the run, a fallback for a block that failed verification). In a block the
    /// populate pass confirmed it is computed from the rowid ([`Place::exact`]) and the block
    /// table is not read. Elsewhere the row's guessed place is prefetched first, so that on
    /// rows of one length its load overlaps the block table's: with the arithmetic of
    /// [`find_entry`] inside the block, the two cost one memory round trip together.
    #[inline]
    fn block_of<'a>(&'a self, run: &'a Run, rowid: u64) -> Result<BlockAt<'a>, Found<'a>> {
        if let Some(at) = run.place.uniform_at(self.map.bytes(), rowid) {
            return Ok(at);
        }
        let n = run.blocks.len();
        let guess = run.model.predict(n, rowid);
        if let Some(at) = run.place.exact(self.map.bytes(), guess, rowid) {
            return Ok(at);
        }
        if let Some(at) = run.place.guess(guess, rowid) {
            let bytes = self.map.bytes();
            prefetch(bytes, at);
            prefetch(bytes, at + 64);
            prefetch(bytes, at + 128);
        }
        let i = run
            .model
            .lower_bound_from(n, rowid, guess, |i| run.blocks[i].bound);
        if i == n {
            return Err(Found::Absent);
        }
        let br = &run.blocks[i];
        let Some((b, l)) = self.block(br) else {
            return Err(Found::Fallback);
        };
        Ok(BlockAt {
            block: i,
            b,
            l,
            stride: br.stride.load(Ordering::Relaxed) as usize,
            first: if i == 0 {
                run.lo
            } else {
                run.blocks[i - 1].bound.saturating_add(1)
            },
        })
    }

    /// Bytes of the file (mapped).
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.map.bytes().len()
    }

    /// Heap bytes of the models and block tables.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.runs
            .iter()
            .map(|r| {
                r.blocks.capacity() * std::mem::size_of::<BlockRef>()
                    + r.model.heap_bytes()
                    + r.place.anchors.capacity() * std::mem::size_of::<Anchor>()
                    + std::mem::size_of::<Run>()
            })
            .sum()
    }

    pub(crate) fn segments(&self) -> usize {
        self.runs.iter().map(|r| r.model.segments()).sum()
    }

    pub(crate) fn blocks(&self) -> usize {
        self.blocks
    }

    /// Verifies every block that starts in `[from, to)` and is not verified yet, as its first
    /// read would (and with the same result): the populate pass calls this behind each step,
    /// so that reads after a load or an open find their blocks checked instead of hashing them
    /// (a 4 KiB block's checksum was most of a point read's time in the first second after
    /// an open). A reader verifying the same block meanwhile stores the same layout.
    pub(crate) fn verify_range(&self, from: usize, to: usize) {
        for run in &self.runs {
            // A run's blocks lie in file order (key order is the order they were written in).
            let first = run.blocks.partition_point(|b| (b.offset as usize) < from);
            for br in run.blocks[first..]
                .iter()
                .take_while(|b| (b.offset as usize) < to)
            {
                if br.restarts_at.load(Ordering::Relaxed) == 0 {
                    let _ = self.block(br);
                }
            }
            // Groups whose blocks all start before `to` are verified now (or failed).
            let done = run.blocks.partition_point(|b| (b.offset as usize) < to);
            for g in first / ANCHOR_EVERY..done.div_ceil(ANCHOR_EVERY) {
                if (g + 1) * ANCHOR_EVERY <= done || done == run.blocks.len() {
                    run.place.confirm(self, run, g);
                }
            }
            run.place.extend_uniform(run.blocks.len());
        }
    }

    /// (Verified blocks with a stride, verified blocks), over every run.
    #[cfg(test)]
    pub(crate) fn strided_blocks(&self) -> (usize, usize) {
        let verified = self
            .runs
            .iter()
            .flat_map(|r| &r.blocks)
            .filter(|b| b.restarts_at.load(Ordering::Relaxed) != 0);
        (
            verified
                .clone()
                .filter(|b| b.stride.load(Ordering::Relaxed) != 0)
                .count(),
            verified.count(),
        )
    }

    /// Where [`SstFile::get`] guesses the entry of `rowid` lies in the file.
    #[cfg(test)]
    pub(crate) fn guessed_place(&self, run: &Run, rowid: u64) -> Option<usize> {
        run.place.guess(run.model.predict(run.blocks.len(), rowid), rowid)
    }

    /// Blocks a point read reaches without the block table (confirmed by `verify_range`), and
    /// whether the read of `rowid` in `run` is one of them.
    #[cfg(test)]
    pub(crate) fn confirmed_blocks(&self) -> usize {
        self.runs
            .iter()
            .flat_map(|r| &r.place.anchors)
            .map(|a| a.confirmed.load(Ordering::Relaxed) as usize)
            .sum()
    }

    /// Blocks a point read reaches from the first anchor alone ([`Place::uniform`]), over
    /// every run.
    #[cfg(test)]
    pub(crate) fn uniform_blocks(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.place.uniform.load(Ordering::Relaxed) as usize)
            .sum()
    }

    #[cfg(test)]
    pub(crate) fn is_exact(&self, run: &Run, rowid: u64) -> bool {
        let near = run.model.predict(run.blocks.len(), rowid);
        run.place.exact(self.map.bytes(), near, rowid).is_some()
    }

    /// Blocks not yet verified (nor found failing), over every run.
    #[cfg(test)]
    pub(crate) fn unverified_blocks(&self) -> usize {
        self.runs
            .iter()
            .flat_map(|r| &r.blocks)
            .filter(|b| b.restarts_at.load(Ordering::Relaxed) == 0)
            .count()
    }

    /// Brings `[from, to)` of the mapping into the page tables (see [`Mapping::populate`]).
    pub(crate) fn populate(&self, from: usize, to: usize) -> std::io::Result<()> {
        self.map.populate(from, to)
    }
}

/// A verified block of a run, as a lookup found it.
struct BlockAt<'a> {
    block: usize,
    b: &'a [u8],
    l: BlockLayout,
    /// See [`BlockRef::stride`].
    stride: usize,
    /// The smallest rowid of the run's table the block may hold.
    first: u64,
}

impl BlockAt<'_> {
    /// The likely entry number of `rowid`: its distance from the block's first rowid (exact
    /// when every entry is a restart point and nothing was collected; rowids are dense).
    #[inline]
    fn hint(&self, rowid: u64) -> usize {
        rowid.saturating_sub(self.first) as usize
    }
}

/// A verified block of one run, for reading rowids in ascending order: a rowid in this block or
/// the next is found without the file set's search or the model (a range scan's rows are
/// mostly adjacent, in one block or the next).
pub(crate) struct Cursor<'a> {
    file: &'a SstFile,
    run: &'a Run,
    block: usize,
    b: &'a [u8],
    l: BlockLayout,
    stride: usize,
    /// The smallest rowid of the run's table the block may hold.
    first: u64,
    /// Where the entry after the last one found starts (0: none found in this block yet), and
    /// that entry's rowid: the next rowid of a scan is usually the very next entry.
    after: usize,
    last: u64,
}

impl<'a> Cursor<'a> {
    /// Looks up `rowid`, at or above the rowids looked up before, in the cursor's block or the
    /// next one (moving there); None when it lies beyond them (the caller seeks afresh).
    #[inline]
    pub(crate) fn next(&mut self, rowid: u64) -> Option<Found<'a>> {
        if rowid < self.first {
            return None;
        }
        let blocks = &self.run.blocks;
        if rowid > blocks[self.block].bound {
            let i = self.block + 1;
            if i >= blocks.len() || rowid > blocks[i].bound {
                return None;
            }
            let (b, l) = self.file.block(&blocks[i])?;
            self.first = blocks[self.block].bound.saturating_add(1);
            self.stride = blocks[i].stride.load(Ordering::Relaxed) as usize;
            (self.block, self.b, self.l, self.after) = (i, b, l, 0);
        }
        if self.after != 0 && rowid == self.last.wrapping_add(1) {
            if let Some(found) = self.next_entry(rowid) {
                return Some(found);
            }
        }
        Some(self.find(rowid))
    }

    /// `rowid` if it is the entry right after the last one found (no restart-array lookup).
    #[inline]
    fn next_entry(&mut self, rowid: u64) -> Option<Found<'a>> {
        let b = self.b;
        let e = format::entry(b, self.after, self.l.restarts_at).ok()?;
        if e.shared != 0
            || e.non_shared != USER_KEY + KEY_TRAILER
            || split_key(&b[e.key_at..e.key_at + USER_KEY]) != (self.run.table, rowid)
        {
            return None;
        }
        (self.after, self.last) = (e.key_at + e.non_shared + e.value_len, rowid);
        Some(whole_entry(b, &e))
    }

    /// `rowid` in the cursor's block, searched; the cursor then stands after its entry.
    #[inline]
    fn find(&mut self, rowid: u64) -> Found<'a> {
        // Rowids are dense, so the rowid's distance from the block's first one is its likely
        // entry number (exact when every entry is a restart point and nothing was collected).
        let hint = rowid.saturating_sub(self.first) as usize;
        let found = find_entry(self.b, self.l, self.stride, (self.run.table, rowid), hint);
        self.after = match found {
            // The offset just past the value, in the block.
            Found::Value(v) => v.as_ptr() as usize - self.b.as_ptr() as usize + v.len(),
            _ => 0,
        };
        self.last = rowid;
        found
    }
}

/// Asks the CPU to start loading the cache line holding `b[at]` (no effect past the end).
#[inline(always)]
fn prefetch(b: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < b.len() {
        // SAFETY: the address lies inside `b`; a prefetch has no other effect.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(b.as_ptr().add(at).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, at);
}

#[inline]
fn split_key(k: &[u8]) -> (u32, u64) {
    (
        u32::from_be_bytes(k[..4].try_into().expect("4 bytes")),
        u64::from_be_bytes(k[4..USER_KEY].try_into().expect("8 bytes")),
    )
}

/// What an entry whose key is stored whole (no bytes shared with the key before) holds: its
/// value, or a fallback for a deletion marker. The key's trailer is (sequence << 8 | type),
/// little-endian: its first byte is the type.
#[inline]
fn whole_entry<'a>(b: &'a [u8], e: &format::Entry) -> Found<'a> {
    let v = e.key_at + e.non_shared;
    if b[e.key_at + USER_KEY] == TYPE_VALUE {
        Found::Value(&b[v..v + e.value_len])
    } else {
        Found::Fallback
    }
}

/// Finds row `target` in a verified block: by arithmetic when the block's entries have one
/// length (`stride`, entry `hint` checked to be the row), else by [`search_block`].
#[inline]
fn find_entry(b: &[u8], l: BlockLayout, stride: usize, target: (u32, u64), hint: usize) -> Found<'_> {
    if stride != 0 && hint < l.num_restarts {
        if let Ok(e) = format::entry(b, hint * stride, l.restarts_at) {
            if e.shared == 0
                && e.non_shared == USER_KEY + KEY_TRAILER
                && split_key(&b[e.key_at..e.key_at + USER_KEY]) == target
            {
                return whole_entry(b, &e);
            }
        }
    }
    search_block(b, l, target, hint).unwrap_or(Found::Fallback)
}

/// The common length of a verified block's entries when every entry is a whole-key restart
/// point and they all have one length (entry `j` then starts at `j * stride`); 0 otherwise.
fn uniform_stride(b: &[u8], l: BlockLayout) -> u32 {
    let Ok(e) = format::entry(b, 0, l.restarts_at) else {
        return 0;
    };
    let stride = e.key_at + e.non_shared + e.value_len;
    if stride * l.num_restarts != l.restarts_at {
        return 0;
    }
    for j in 0..l.num_restarts {
        let at = j * stride;
        let ok = format::restart(b, l, j) == Ok(at)
            && format::entry(b, at, l.restarts_at).is_ok_and(|e| {
                e.shared == 0
                    && e.non_shared == USER_KEY + KEY_TRAILER
                    && e.key_at + e.non_shared + e.value_len == at + stride
            });
        if !ok {
            return 0;
        }
    }
    u32::try_from(stride).unwrap_or(0)
}

/// Finds row `target` (table, rowid) in a data block: the restart point `hint` first (with one
/// entry per restart point, the rows column family's setting, and dense rowids, it is the entry),
/// else a binary search over the restart points (each holds a whole key), then a walk of at most
/// one restart interval. Keys are compared as integers (table and rowid are big-endian).
#[inline]
fn search_block(b: &[u8], l: BlockLayout, target: (u32, u64), hint: usize) -> Res<Found<'_>> {
    let at_restart = |i: usize| -> Res<((u32, u64), format::Entry)> {
        let e = format::entry(b, format::restart(b, l, i)?, l.restarts_at)?;
        if e.shared != 0 || e.non_shared != USER_KEY + KEY_TRAILER {
            return Err(Unsupported("restart entry of unexpected shape".into()));
        }
        Ok((split_key(&b[e.key_at..e.key_at + USER_KEY]), e))
    };
    // The last restart point whose key is <= target.
    let (mut lo, mut hi) = (0usize, l.num_restarts);
    if hint < l.num_restarts {
        // Rows of similar size put entry `hint` near hint/entries of the way through the block:
        // ask for those lines now, so that their load overlaps the load of the restart offset
        // that says exactly where the entry is (two memory round trips become about one).
        let guess = hint * l.restarts_at / l.num_restarts;
        prefetch(b, guess);
        prefetch(b, guess + 64);
        prefetch(b, guess + 128);
        let (k, e) = at_restart(hint)?;
        match k.cmp(&target) {
            std::cmp::Ordering::Equal => return Ok(whole_entry(b, &e)),
            std::cmp::Ordering::Less => lo = hint,
            std::cmp::Ordering::Greater => hi = hint,
        }
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if at_restart(mid)?.0 <= target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let mut pos = format::restart(b, l, lo)?;
    let mut key = [0u8; USER_KEY + KEY_TRAILER];
    while pos < l.restarts_at {
        let e = format::entry(b, pos, l.restarts_at)?;
        if e.shared + e.non_shared != key.len() {
            return Err(Unsupported("row key of unexpected length".into()));
        }
        key[e.shared..].copy_from_slice(&b[e.key_at..e.key_at + e.non_shared]);
        let v = e.key_at + e.non_shared;
        match split_key(&key).cmp(&target) {
            std::cmp::Ordering::Less => pos = v + e.value_len,
            std::cmp::Ordering::Equal => {
                return Ok(if key[USER_KEY] == TYPE_VALUE {
                    Found::Value(&b[v..v + e.value_len])
                } else {
                    Found::Fallback
                });
            }
            std::cmp::Ordering::Greater => return Ok(Found::Absent),
        }
    }
    Ok(Found::Absent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortened_separators_bound_the_keys_below_them() {
        // A full key bounds itself.
        assert_eq!(bound_of(&row_key(3, 77)), (3, 77));
        // "\0\0\0\x03\0\0\0\0\0\0\x01" (11 bytes) sorts above every key of table 3 up to rowid
        // 0x100 - 1 and below 0x100.
        let mut s = row_key(3, 0x100).to_vec();
        s.pop();
        assert_eq!(bound_of(&s), (3, 0xff));
        // A separator of just the next table id bounds every key of the table before it.
        assert_eq!(bound_of(&4u32.to_be_bytes()), (3, u64::MAX));
    }
}
