//! Index images: an `Alex` written as one position-independent byte string (a header, a
//! directory of node records, then every node's arrays as they lie in memory), and an `Alex`
//! opened from a mapping of such a string with its arrays read in place. Opening does work per
//! node, not per key; the checksum pass over the arrays is the caller's choice (`verify`).
//!
//! Layout (little-endian, native `f64`; offsets in bytes from the start):
//! - header (128): magic, version, key size, byte-order mark, key type, node count, root id, key
//!   count, total length, the caller's [`ImageTag`], checksum of the directory, number of chunk
//!   checksums, checksum of the chunk table, checksum of the header (XXH3-64);
//! - directory: one 112-byte record per arena id (free, model or data node), so ids, child
//!   pointers and leaf links are stored as they are;
//! - chunk table: the checksums of every data node's chunks, node after node in arena order (a
//!   data node's record says where its own start). A chunk is [`CHUNK_SLOTS`] slots of the
//!   node's slot array and the bitmap words over them, so that a lookup checks the 64 KiB it
//!   reads rather than the whole node (several MB in a large index);
//! - arrays, each at a 64-byte boundary: a model node's children (under one checksum kept in
//!   its record), a data node's slots and bitmap.

use std::ops::Range;
use std::sync::Arc;

use super::data_node::{DataNode, Layout, Slot};
use super::layout::INIT_DENSITY;
use super::lazy::{Lazy, Rebuild, Unavailable};
use super::model::LinearModel;
use super::model_node::{ModelNode, MAX_FANOUT};
use super::{stats, Alex, AlexKey, Node, NONE};
use crate::index::mapped::{as_bytes, read_plain, Arr, ArrayCutter, Mapping, Plain};

const MAGIC: [u8; 8] = *b"AUGURALX";
/// 2: a checksum per chunk of a data node (1: one per node, never read now: rebuilt).
const VERSION: u32 = 2;
const HEADER: usize = 128;
const RECORD: usize = 112;
const ALIGN: usize = 64;
const BYTE_ORDER: u32 = 0x0102_0304;
const FREE: u32 = 0;
const MODEL: u32 = 1;
const DATA: u32 = 2;

/// What the caller stores in an image's header and gets back when opening it, to tie the image
/// to the state it was taken at (the engine stores table, generation, watermark, a random id).
pub type ImageTag = [u64; 4];

/// Which of an image's arrays `Alex::from_image` checksums (the header and the directory
/// always are).
pub enum Checks<K: AlexKey> {
    /// None (tools and measurements).
    None,
    /// Every array, before the index is returned.
    All,
    /// The model nodes' arrays now; each data node's the first time it is touched, or when
    /// `Alex::check_step` reaches it. A node that fails is never read: the index is rebuilt
    /// with the function given (see `lazy.rs`).
    Lazy(Rebuild<K>),
}

/// Why an image cannot be used. Either way the caller rebuilds the index from its source.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Not an image of this format and key type, or its structure is inconsistent.
    #[error("index image is invalid: {0}")]
    Invalid(String),
    /// A checksum does not match: the bytes changed after they were written.
    #[error("index image checksum mismatch in {0}")]
    Checksum(String),
}

/// The checksum of the header, the directory and each node's arrays: XXH3-64, which runs at
/// several bytes per cycle (the array pass reads the whole image at every open).
pub(super) fn hash(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(b)
}

/// Slots per checksummed chunk of a data node (a multiple of 64, so that a chunk's bitmap
/// words are its own): 64 KiB of 16-byte slots and 512 bytes of bitmap.
pub(super) const CHUNK_SLOTS: usize = 4096;

/// The number of chunks of a data node of `cap` slots.
pub(super) fn chunks(cap: usize) -> usize {
    cap.div_ceil(CHUNK_SLOTS)
}

/// Chunk `c` of a data node of `cap` slots and `words` bitmap words: the indexes of its slots
/// and of its bitmap words.
pub(super) fn chunk_span(cap: usize, words: usize, c: usize) -> (Range<usize>, Range<usize>) {
    let s = c * CHUNK_SLOTS;
    let w = s / 64;
    (
        s..(s + CHUNK_SLOTS).min(cap),
        w..(w + CHUNK_SLOTS / 64).min(words),
    )
}

/// Chunk `c` of a data node's arrays, as bytes: its slots and its bitmap words.
pub(super) fn chunk_bytes<'a, K: AlexKey>(
    slots: &'a [Slot<K>],
    bitmap: &'a [u64],
    c: usize,
) -> (&'a [u8], &'a [u8]) {
    let (s, w) = chunk_span(slots.len(), bitmap.len(), c);
    (as_bytes(&slots[s]), as_bytes(&bitmap[w]))
}

/// The checksum of chunk `c` of a data node's arrays.
pub(super) fn chunk_hash<K: AlexKey>(slots: &[Slot<K>], bitmap: &[u64], c: usize) -> u64 {
    let (s, b) = chunk_bytes(slots, bitmap, c);
    chunk_sum(hash(s), b)
}

/// A chunk's checksum from the hash of its slots' bytes (`hash`) and its bitmap words' bytes:
/// in two steps, so that a reader can hash the slots before the bitmap words have arrived.
pub(super) fn chunk_sum(slots_hash: u64, bitmap: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(bitmap, slots_hash)
}

fn invalid(what: impl Into<String>) -> ImageError {
    ImageError::Invalid(what.into())
}

fn put<T: Plain>(out: &mut [u8], at: usize, v: T) {
    let b = as_bytes(std::slice::from_ref(&v));
    out[at..at + b.len()].copy_from_slice(b);
}

fn get<T: Plain>(b: &[u8], at: usize) -> T {
    // Records and the header are bounds-checked as a whole before their fields are read.
    read_plain(&b[at..]).expect("field inside a checked record")
}

/// Offset of the next array: `at` rounded up to the alignment.
fn align(at: usize) -> usize {
    at.next_multiple_of(ALIGN)
}

enum Rec<K> {
    Free,
    Model {
        a: f64,
        base: K,
        off: i64,
        shift: u32,
        children: (usize, usize),
        hash: u64,
    },
    Data {
        slots: (usize, usize),
        bitmap: (usize, usize),
        model: LinearModel,
        base: K,
        num_keys: usize,
        min_key: K,
        max_key: K,
        prev: u32,
        next: u32,
        exp_iters: f32,
        exp_shifts: f32,
        /// Index of the node's first chunk checksum in the chunk table.
        first_chunk: usize,
    },
}

impl<K: AlexKey> Alex<K> {
    /// The index as an image (see the module comment). Entries whose payload fails `keep` are
    /// left out: the data nodes holding any are written as rebuilt copies of the rest (the
    /// engine drops deleted keys this way). The image carries `tag`, returned by
    /// `Alex::from_image`.
    /// `Unavailable`: part of the image this index was opened from failed its check and the
    /// index could not be rebuilt from its source.
    pub fn to_image(&self, tag: ImageTag, keep: impl Fn(u64) -> bool) -> Result<Vec<u8>, Unavailable> {
        // It walks the arena, not the checked accessors.
        let this = self.settled()?;
        if !std::ptr::eq(this, self) {
            return this.to_image(tag, keep);
        }
        let mut rebuilt: std::collections::HashMap<usize, DataNode<K>> = Default::default();
        let mut len = self.len;
        for (id, n) in self.nodes.iter().enumerate() {
            let Node::Data(d) = n else { continue };
            if d.iter_occupied().all(|(_, v)| keep(v)) {
                continue;
            }
            let kept: Vec<(K, u64)> = d.iter_occupied().filter(|e| keep(e.1)).collect();
            len -= d.num_keys - kept.len();
            let mut nd = DataNode::build(&kept, INIT_DENSITY, Layout::Spread);
            nd.prev = d.prev;
            nd.next = d.next;
            rebuilt.insert(id, nd);
        }
        // Offsets of every array, then one buffer of the final size.
        let dir_end = HEADER + RECORD * self.nodes.len();
        let mut sums: Vec<u64> = Vec::new();
        let mut first_chunk = vec![0usize; self.nodes.len()];
        for (id, n) in self.nodes.iter().enumerate() {
            if let Node::Data(d) = n {
                let d = written(&rebuilt, id, d);
                first_chunk[id] = sums.len();
                sums.extend((0..chunks(d.slots.len())).map(|c| chunk_hash(&d.slots, &d.bitmap, c)));
            }
        }
        let sums_end = dir_end + 8 * sums.len();
        let mut at = align(sums_end);
        let mut offsets = Vec::with_capacity(self.nodes.len());
        for (id, n) in self.nodes.iter().enumerate() {
            match n {
                Node::Free => offsets.push((0, 0)),
                Node::Model(m) => {
                    offsets.push((at, 0));
                    at = align(at + std::mem::size_of_val(&*m.children));
                }
                Node::Data(d) => {
                    let d = written(&rebuilt, id, d);
                    let s = at;
                    at = align(at + std::mem::size_of_val(&*d.slots));
                    offsets.push((s, at));
                    at = align(at + std::mem::size_of_val(&*d.bitmap));
                }
            }
        }
        let total = at;
        // Header and directory zeroed, then each node's record filled and its arrays appended
        // in arena order (the order their offsets were given in): every byte is written once.
        let mut out = Vec::with_capacity(total);
        out.resize(dir_end, 0u8);
        out.extend_from_slice(as_bytes(&sums));
        let pad_to = |out: &mut Vec<u8>, off: usize| out.resize(off, 0);
        for (id, n) in self.nodes.iter().enumerate() {
            let r = HEADER + RECORD * id;
            match n {
                Node::Free => put(&mut out, r, FREE),
                Node::Model(m) => {
                    let off = offsets[id].0;
                    let bytes = as_bytes(&m.children);
                    pad_to(&mut out, off);
                    out.extend_from_slice(bytes);
                    put(&mut out, r, MODEL);
                    put(&mut out, r + 8, m.a);
                    put(&mut out, r + 16, m.base);
                    put(&mut out, r + 24, m.off);
                    put(&mut out, r + 32, m.shift);
                    put(&mut out, r + 40, off as u64);
                    put(&mut out, r + 48, m.children.len() as u64);
                    put(&mut out, r + 56, hash(bytes));
                }
                Node::Data(d) => {
                    let d = written(&rebuilt, id, d);
                    let (so, bo) = offsets[id];
                    let sb = as_bytes(&d.slots);
                    let bb = as_bytes(&d.bitmap);
                    pad_to(&mut out, so);
                    out.extend_from_slice(sb);
                    pad_to(&mut out, bo);
                    out.extend_from_slice(bb);
                    put(&mut out, r, DATA);
                    put(&mut out, r + 8, so as u64);
                    put(&mut out, r + 16, d.slots.len() as u64);
                    put(&mut out, r + 24, bo as u64);
                    put(&mut out, r + 32, d.bitmap.len() as u64);
                    put(&mut out, r + 40, d.model.a);
                    put(&mut out, r + 48, d.model.b);
                    put(&mut out, r + 56, d.base);
                    put(&mut out, r + 64, d.num_keys as u64);
                    put(&mut out, r + 72, d.min_key);
                    put(&mut out, r + 80, d.max_key);
                    put(&mut out, r + 88, d.prev);
                    put(&mut out, r + 92, d.next);
                    put(&mut out, r + 96, d.exp_iters);
                    put(&mut out, r + 100, d.exp_shifts);
                    put(&mut out, r + 104, first_chunk[id] as u64);
                }
            }
        }
        pad_to(&mut out, total);
        out[..8].copy_from_slice(&MAGIC);
        put(&mut out, 8, VERSION);
        put(&mut out, 12, std::mem::size_of::<K>() as u32);
        put(&mut out, 16, BYTE_ORDER);
        put(&mut out, 20, K::IMAGE_KIND);
        put(&mut out, 24, self.nodes.len() as u64);
        put(&mut out, 32, self.root as u64);
        put(&mut out, 40, len as u64);
        put(&mut out, 48, total as u64);
        for (i, t) in tag.iter().enumerate() {
            put(&mut out, 56 + 8 * i, *t);
        }
        let dir_hash = hash(&out[HEADER..dir_end]);
        put(&mut out, 88, dir_hash);
        put(&mut out, 96, sums.len() as u64);
        let sums_hash = hash(&out[dir_end..sums_end]);
        put(&mut out, 104, sums_hash);
        let header_hash = hash(&out[..120]);
        put(&mut out, 120, header_hash);
        Ok(out)
    }

    /// Opens an index from a mapped image, its arrays read in place (the first write to a page
    /// copies it: see `index::mapped`). Checks the header, the directory's checksum and every
    /// bound, alignment and id; and the arrays `checks` says against their checksums (all of
    /// them reads the whole image, which also maps all of it in). Returns the image's tag.
    pub(crate) fn from_image(map: Arc<Mapping>, checks: Checks<K>) -> Result<(Self, ImageTag), ImageError> {
        let b = map.bytes();
        let p = Parsed::<K>::parse(b, b.len())?;
        if !matches!(checks, Checks::None) {
            p.check_models(b)?;
        }
        let data_now = matches!(checks, Checks::All);
        let lazy = match checks {
            Checks::Lazy(rebuild) => Some(Box::new(Lazy::new(p.want(), p.sums.clone(), rebuild))),
            _ => None,
        };
        let want = p.want();
        let sums = p.sums.clone();
        // `b` is not used past this point (the arrays may be written later).
        let (a, tag) = p.assemble(map, lazy)?;
        if data_now {
            for (id, node) in a.nodes.iter().enumerate() {
                if let (Node::Data(d), Some(first)) = (node, want[id]) {
                    if !(0..chunks(d.slots.len()))
                        .all(|c| chunk_hash(&d.slots, &d.bitmap, c) == sums[first + c])
                    {
                        return Err(ImageError::Checksum(format!("node {id}")));
                    }
                }
            }
        }
        Ok((a, tag))
    }
}

/// Where the chunk table ends, by the header in `b` (its first [`HEADER`] bytes at least):
/// how much of an image [`Parsed::parse`] reads. `None` if the header is short or its counts
/// overflow (`parse` then says why).
pub(super) fn table_end(b: &[u8]) -> Option<usize> {
    if b.len() < HEADER {
        return None;
    }
    let n = usize::try_from(get::<u64>(b, 24)).ok()?;
    let n_sums = usize::try_from(get::<u64>(b, 96)).ok()?;
    n.checked_mul(RECORD)?
        .checked_add(HEADER)?
        .checked_add(n_sums.checked_mul(8)?)
}

/// What an image's header, directory and chunk table say, checked: everything but the arrays.
pub(super) struct Parsed<K> {
    root: u64,
    len: usize,
    tag: ImageTag,
    /// Every data node's chunk checksums, from the chunk table.
    pub(super) sums: Vec<u64>,
    /// One record per arena id.
    recs: Vec<Rec<K>>,
}

/// Where a data node's arrays lie in an image and where its chunk checksums start: the parts
/// of its record the image reader needs to check chunks as they land (`image_read.rs`).
pub(super) struct DataArrays {
    pub(super) id: usize,
    pub(super) slots: (usize, usize),
    pub(super) bitmap: (usize, usize),
    pub(super) first_chunk: usize,
}

impl<K: AlexKey> Parsed<K> {
    /// Parses and checks the header, the directory and the chunk table of an image of `total`
    /// bytes whose first bytes are `b` (at least up to the chunk table's end: [`table_end`]).
    /// Every array's range is checked to lie inside the `total` bytes, after the chunk table.
    pub(super) fn parse(b: &[u8], total: usize) -> Result<Parsed<K>, ImageError> {
        if b.len() < HEADER || b[..8] != MAGIC {
            return Err(invalid("not an ALEX index image"));
        }
        if hash(&b[..120]) != get::<u64>(b, 120) {
            return Err(ImageError::Checksum("the header".into()));
        }
        if get::<u32>(b, 8) != VERSION
            || get::<u32>(b, 12) as usize != std::mem::size_of::<K>()
            || get::<u32>(b, 16) != BYTE_ORDER
            || get::<u32>(b, 20) != K::IMAGE_KIND
        {
            return Err(invalid("another format version, key type or byte order"));
        }
        let n = get::<u64>(b, 24);
        let root = get::<u64>(b, 32);
        let len = get::<u64>(b, 40) as usize;
        if get::<u64>(b, 48) != total as u64 {
            return Err(invalid("length differs from the header's"));
        }
        if n == 0 || n >= NONE as u64 || root >= n {
            return Err(invalid("node count or root out of range"));
        }
        let n = n as usize;
        let dir_end = n
            .checked_mul(RECORD)
            .and_then(|d| d.checked_add(HEADER))
            .filter(|&e| e <= b.len())
            .ok_or_else(|| invalid("directory past the end"))?;
        if hash(&b[HEADER..dir_end]) != get::<u64>(b, 88) {
            return Err(ImageError::Checksum("the node directory".into()));
        }
        let n_sums = usize::try_from(get::<u64>(b, 96)).map_err(|_| invalid("chunk count"))?;
        let sums_end = n_sums
            .checked_mul(8)
            .and_then(|l| l.checked_add(dir_end))
            .filter(|&e| e <= b.len())
            .ok_or_else(|| invalid("chunk table past the end"))?;
        if hash(&b[dir_end..sums_end]) != get::<u64>(b, 104) {
            return Err(ImageError::Checksum("the chunk table".into()));
        }
        let sums: Vec<u64> = (0..n_sums).map(|i| get::<u64>(b, dir_end + 8 * i)).collect();
        // Each data node's chunk checksums follow the previous node's.
        let mut next_chunk = 0usize;
        let mut tag = [0u64; 4];
        for (i, t) in tag.iter_mut().enumerate() {
            *t = get(b, 56 + 8 * i);
        }
        let range = |off: u64, count: u64, size: usize| -> Result<(usize, usize), ImageError> {
            let off = usize::try_from(off).map_err(|_| invalid("offset"))?;
            let count = usize::try_from(count).map_err(|_| invalid("length"))?;
            let end = count
                .checked_mul(size)
                .and_then(|l| l.checked_add(off))
                .filter(|&e| e <= total && off >= sums_end)
                .ok_or_else(|| invalid("array past the end"))?;
            Ok((off, end))
        };
        let mut recs: Vec<Rec<K>> = Vec::with_capacity(n);
        for id in 0..n {
            let r = &b[HEADER + RECORD * id..HEADER + RECORD * (id + 1)];
            recs.push(match get::<u32>(r, 0) {
                FREE => Rec::Free,
                MODEL => {
                    let count = get::<u64>(r, 48);
                    if count == 0 || count > MAX_FANOUT as u64 || !count.is_power_of_two() {
                        return Err(invalid(format!("node {id}: fanout {count}")));
                    }
                    let shift = get::<u32>(r, 32);
                    if shift >= 64 {
                        return Err(invalid(format!("node {id}: shift {shift}")));
                    }
                    Rec::Model {
                        a: get(r, 8),
                        base: get(r, 16),
                        off: get(r, 24),
                        shift,
                        children: range(get(r, 40), count, 4)?,
                        hash: get(r, 56),
                    }
                }
                DATA => {
                    let cap = get::<u64>(r, 16);
                    let words = get::<u64>(r, 32);
                    let num_keys = get::<u64>(r, 64);
                    if cap == 0 || words != cap.div_ceil(64) || num_keys >= cap {
                        return Err(invalid(format!("node {id}: capacity {cap}, {num_keys} keys")));
                    }
                    let first_chunk = get::<u64>(r, 104);
                    if first_chunk != next_chunk as u64 || next_chunk + chunks(cap as usize) > n_sums {
                        return Err(invalid(format!("node {id}: chunk checksums")));
                    }
                    next_chunk += chunks(cap as usize);
                    let link = |at: usize| -> Result<u32, ImageError> {
                        let l = get::<u32>(r, at);
                        if l != NONE && l as usize >= n {
                            return Err(invalid(format!("node {id}: leaf link {l}")));
                        }
                        Ok(l)
                    };
                    Rec::Data {
                        slots: range(get(r, 8), cap, std::mem::size_of::<Slot<K>>())?,
                        bitmap: range(get(r, 24), words, 8)?,
                        model: LinearModel {
                            a: get(r, 40),
                            b: get(r, 48),
                        },
                        base: get(r, 56),
                        num_keys: num_keys as usize,
                        min_key: get(r, 72),
                        max_key: get(r, 80),
                        prev: link(88)?,
                        next: link(92)?,
                        exp_iters: get(r, 96),
                        exp_shifts: get(r, 100),
                        first_chunk: first_chunk as usize,
                    }
                }
                k => return Err(invalid(format!("node {id}: kind {k}"))),
            });
        }
        if recs
            .iter()
            .map(|r| {
                if let Rec::Data { num_keys, .. } = r {
                    *num_keys
                } else {
                    0
                }
            })
            .sum::<usize>()
            != len
        {
            return Err(invalid("key count differs from the nodes'"));
        }
        if next_chunk != n_sums {
            return Err(invalid("chunk table longer than the nodes'"));
        }
        Ok(Parsed {
            root,
            len,
            tag,
            sums,
            recs,
        })
    }

    /// Per arena id: where a data node's chunk checksums start.
    pub(super) fn want(&self) -> Vec<Option<usize>> {
        self.recs
            .iter()
            .map(|r| match r {
                Rec::Data { first_chunk, .. } => Some(*first_chunk),
                _ => None,
            })
            .collect()
    }

    /// Where each data node's arrays lie, in arena order.
    pub(super) fn data_arrays(&self) -> Vec<DataArrays> {
        self.recs
            .iter()
            .enumerate()
            .filter_map(|(id, r)| match r {
                Rec::Data {
                    slots,
                    bitmap,
                    first_chunk,
                    ..
                } => Some(DataArrays {
                    id,
                    slots: *slots,
                    bitmap: *bitmap,
                    first_chunk: *first_chunk,
                }),
                _ => None,
            })
            .collect()
    }

    /// Checks the model nodes' arrays (in `b`, the whole image) against their checksums.
    pub(super) fn check_models(&self, b: &[u8]) -> Result<(), ImageError> {
        for (id, r) in self.recs.iter().enumerate() {
            if let Rec::Model {
                children, hash: h, ..
            } = r
            {
                if hash(&b[children.0..children.1]) != *h {
                    return Err(ImageError::Checksum(format!("node {id}")));
                }
            }
        }
        Ok(())
    }

    /// The index over `map`'s arrays, read in place (`lazy`: the lazy state, if the data nodes
    /// are to be checked on first use); every array in bounds, aligned and disjoint from the
    /// others, every node id referring to a node of the right kind, and the nodes reachable
    /// from the root a tree. Returns the image's tag too.
    pub(super) fn assemble(
        self,
        map: Arc<Mapping>,
        lazy: Option<Box<Lazy<K>>>,
    ) -> Result<(Alex<K>, ImageTag), ImageError> {
        let Parsed {
            root, len, tag, recs, ..
        } = self;
        let n = recs.len();
        let mut cutter = ArrayCutter::new(map.clone());
        let elems = |r: (usize, usize), size: usize| (r.0, (r.1 - r.0) / size);
        let mut nodes: Vec<Node<K>> = Vec::with_capacity(n);
        let mut free = Vec::new();
        for (id, r) in recs.into_iter().enumerate() {
            nodes.push(match r {
                Rec::Free => {
                    free.push(id as u32);
                    Node::Free
                }
                Rec::Model {
                    a,
                    base,
                    off,
                    shift,
                    children,
                    ..
                } => {
                    let (o, c) = elems(children, 4);
                    let children: Arr<u32> =
                        cutter.take(o, c).ok_or_else(|| invalid("misaligned children"))?;
                    Node::Model(ModelNode {
                        a,
                        base,
                        off,
                        shift,
                        children,
                    })
                }
                Rec::Data {
                    slots,
                    bitmap,
                    model,
                    base,
                    num_keys,
                    min_key,
                    max_key,
                    prev,
                    next,
                    exp_iters,
                    exp_shifts,
                    ..
                } => {
                    let (o, c) = elems(slots, std::mem::size_of::<Slot<K>>());
                    let slots = cutter.take(o, c).ok_or_else(|| invalid("misaligned slots"))?;
                    let (o, c) = elems(bitmap, 8);
                    let bitmap = cutter.take(o, c).ok_or_else(|| invalid("misaligned bitmap"))?;
                    Node::Data(DataNode::from_parts(
                        slots, bitmap, model, base, num_keys, min_key, max_key, prev, next, exp_iters,
                        exp_shifts,
                    ))
                }
            });
        }
        if !cutter.finish() {
            return Err(invalid("arrays overlap"));
        }
        // Every id a node refers to names a live node of the kind expected there.
        let is_data = |i: u32| matches!(nodes.get(i as usize), Some(Node::Data(_)));
        let is_live = |i: u32| matches!(nodes.get(i as usize), Some(Node::Data(_) | Node::Model(_)));
        for (id, node) in nodes.iter().enumerate() {
            let ok = match node {
                Node::Free => true,
                Node::Model(m) => m.children.iter().all(|&c| c as usize != id && is_live(c)),
                Node::Data(d) => [d.prev, d.next].iter().all(|&l| l == NONE || is_data(l)),
            };
            if !ok {
                return Err(invalid(format!("node {id} refers to a missing node")));
            }
        }
        if !is_live(root as u32) {
            return Err(invalid("root is not a node"));
        }
        // And the nodes reachable from the root form a tree: a node reached twice (a cycle, or
        // two parents) would make lookups loop or leaves repeat.
        let mut seen = vec![false; n];
        let mut stack = vec![root as u32];
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut seen[id as usize], true) {
                return Err(invalid(format!("node {id} is reached twice")));
            }
            if let Node::Model(m) = &nodes[id as usize] {
                let mut prev = NONE;
                for &c in m.children.iter() {
                    if c != prev {
                        stack.push(c);
                        prev = c;
                    }
                }
            }
        }
        Ok((
            Alex {
                nodes,
                free,
                root: root as u32,
                len,
                ood_left: 0,
                ood_right: 0,
                counters: stats::Counters::default(),
                image: Some(map),
                lazy,
            },
            tag,
        ))
    }
}

/// The data node `to_image` writes for arena id `id`: its rebuilt copy if it has one.
fn written<'a, K: AlexKey>(
    rebuilt: &'a std::collections::HashMap<usize, DataNode<K>>,
    id: usize,
    d: &'a DataNode<K>,
) -> &'a DataNode<K> {
    rebuilt.get(&id).unwrap_or(d)
}
