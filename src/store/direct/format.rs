//! RocksDB's block-based table format, read in place from a mapped file: the footer, block
//! handles, the metaindex and properties blocks, the index block, and data-block entries.
//!
//! Only the shape Augur's rows column family writes is accepted (format_version 6 or 7, XXH3
//! block checksums, a binary-search index of one level, uncompressed blocks); anything
//! else is [`Unsupported`] and the caller reads through RocksDB instead. Every offset read from
//! the file is bounds-checked: a damaged file gives an error, never a panic or an out-of-bounds
//! read. The layout is RocksDB's own (`table/format.cc`, `table/block_based/block.cc`,
//! `block_util.h`, `data_block_footer.cc`, `data_block_hash_index.cc` in RocksDB 11.8).

/// Why a file or block cannot be read in place (the read then goes through RocksDB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported(pub String);

pub(crate) type Res<T> = std::result::Result<T, Unsupported>;

fn bad<T>(why: impl Into<String>) -> Res<T> {
    Err(Unsupported(why.into()))
}

/// Every block is followed by a compression-type byte and a 4-byte checksum.
pub(crate) const BLOCK_TRAILER: usize = 5;
const MAGIC_BLOCK_BASED: u64 = 0x88e2_41b7_85f4_cff7;
/// format_version >= 1 footers: checksum type (1) + part 2 (40) + format_version (4) + magic (8).
const FOOTER_LEN: usize = 53;
const EXTENDED_MAGIC: [u8; 4] = [0x3e, 0x00, 0x7a, 0x00];

const CHECKSUM_XXH3: u8 = 4;

/// Internal-key value types that matter here (`db/dbformat.h`).
pub(crate) const TYPE_VALUE: u8 = 0x1;
/// Bytes of the internal-key trailer: sequence number << 8 | value type, little-endian.
pub(crate) const KEY_TRAILER: usize = 8;

/// A block's place in the file (its contents, without the trailer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handle {
    pub offset: u64,
    pub size: u64,
}

/// What the footer says.
#[derive(Debug, Clone)]
pub(crate) struct Footer {
    pub checksum: u8,
    pub format_version: u32,
    pub base_context: u32,
    pub metaindex: Handle,
}

pub(crate) fn read_varint32(b: &[u8], pos: &mut usize) -> Res<u32> {
    let v = read_varint64(b, pos)?;
    u32::try_from(v).or_else(|_| bad("varint32 out of range"))
}

pub(crate) fn read_varint64(b: &[u8], pos: &mut usize) -> Res<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&byte) = b.get(*pos) else {
            return bad("truncated varint");
        };
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    bad("varint longer than 10 bytes")
}

fn read_handle(b: &[u8], pos: &mut usize) -> Res<Handle> {
    Ok(Handle {
        offset: read_varint64(b, pos)?,
        size: read_varint64(b, pos)?,
    })
}

fn fixed32(b: &[u8], at: usize) -> Res<u32> {
    match b.get(at..at + 4) {
        Some(s) => Ok(u32::from_le_bytes(s.try_into().expect("4 bytes"))),
        None => bad("truncated fixed32"),
    }
}

fn fixed64(b: &[u8], at: usize) -> Res<u64> {
    match b.get(at..at + 8) {
        Some(s) => Ok(u64::from_le_bytes(s.try_into().expect("8 bytes"))),
        None => bad("truncated fixed64"),
    }
}

/// RocksDB's `ChecksumModifierForContext`: format_version >= 6 mixes each block's offset into its
/// checksum, so a block misplaced within or between files fails verification.
fn context_modifier(base: u32, offset: u64) -> u32 {
    if base == 0 {
        return 0;
    }
    base ^ (offset as u32).wrapping_add((offset >> 32) as u32)
}

/// RocksDB's `ComputeBuiltinChecksum` over `data` (the block and its compression-type byte).
fn builtin_checksum(kind: u8, data: &[u8]) -> Res<u32> {
    match kind {
        CHECKSUM_XXH3 => {
            let Some((&last, head)) = data.split_last() else {
                return Ok(0);
            };
            let v = xxhash_rust::xxh3::xxh3_64(head) as u32;
            Ok(v ^ u32::from(last).wrapping_mul(0x6b90_83d9))
        }
        other => bad(format!("checksum type {other}")),
    }
}

/// Parses and verifies the footer at the end of `file`.
pub(crate) fn footer(file: &[u8]) -> Res<Footer> {
    if file.len() < FOOTER_LEN {
        return bad("file shorter than a footer");
    }
    let at = file.len() - FOOTER_LEN;
    let f = &file[at..];
    if fixed64(f, FOOTER_LEN - 8)? != MAGIC_BLOCK_BASED {
        return bad("not a block-based table");
    }
    let format_version = fixed32(f, FOOTER_LEN - 12)?;
    if !(6..=7).contains(&format_version) {
        return bad(format!("format_version {format_version}"));
    }
    let checksum = f[0];
    if f[1..5] != EXTENDED_MAGIC {
        return bad("bad extended magic");
    }
    let stored = fixed32(f, 5)?;
    let base_context = fixed32(f, 9)?;
    let metaindex_size = u64::from(fixed32(f, 13)?);
    if fixed64(f, 33)? != 0 {
        return bad("footer uses a future feature");
    }
    let mut copy = [0u8; FOOTER_LEN];
    copy.copy_from_slice(f);
    copy[5..9].fill(0);
    let computed = builtin_checksum(checksum, &copy)?.wrapping_add(context_modifier(base_context, at as u64));
    if computed != stored {
        return bad("footer checksum mismatch");
    }
    let end = (at as u64)
        .checked_sub(BLOCK_TRAILER as u64)
        .ok_or_else(|| Unsupported("metaindex before file start".into()))?;
    let offset = end
        .checked_sub(metaindex_size)
        .ok_or_else(|| Unsupported("metaindex before file start".into()))?;
    Ok(Footer {
        checksum,
        format_version,
        base_context,
        metaindex: Handle {
            offset,
            size: metaindex_size,
        },
    })
}

/// The contents of a block and its compression-type byte, bounds-checked.
pub(crate) fn block(file: &[u8], h: Handle) -> Res<(&[u8], u8)> {
    let start = usize::try_from(h.offset).or_else(|_| bad("offset"))?;
    let len = usize::try_from(h.size).or_else(|_| bad("size"))?;
    let end = start
        .checked_add(len)
        .and_then(|e| e.checked_add(BLOCK_TRAILER))
        .ok_or_else(|| Unsupported("block end overflows".into()))?;
    if end > file.len() {
        return bad("block past the end of the file");
    }
    Ok((&file[start..start + len], file[start + len]))
}

/// Verifies the checksum of the block at `h` (contents + type byte against the stored value).
pub(crate) fn verify_block(file: &[u8], h: Handle, ft: &Footer) -> Res<()> {
    let (contents, _) = block(file, h)?;
    let start = h.offset as usize;
    let len = contents.len();
    let stored = fixed32(file, start + len + 1)?;
    let computed = builtin_checksum(ft.checksum, &file[start..start + len + 1])?;
    if computed.wrapping_add(context_modifier(ft.base_context, h.offset)) != stored {
        return bad(format!("block checksum mismatch at offset {}", h.offset));
    }
    Ok(())
}

/// A verified, uncompressed metadata block (metaindex, properties, index).
fn meta_block<'a>(file: &'a [u8], h: Handle, ft: &Footer) -> Res<&'a [u8]> {
    verify_block(file, h, ft)?;
    let (contents, kind) = block(file, h)?;
    if kind != 0 {
        return bad(format!("compressed metadata block (type {kind})"));
    }
    Ok(contents)
}

/// The layout of one block: where its entries end (the restart array starts) and how many
/// restart points it has.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockLayout {
    pub restarts_at: usize,
    pub num_restarts: usize,
}

/// Decodes a block's footer (`DataBlockFooter`): the restart count, an optional hash index to
/// skip, and flags this reader does not support.
pub(crate) fn layout(b: &[u8]) -> Res<BlockLayout> {
    if b.len() < 4 {
        return bad("block too small");
    }
    let packed = fixed32(b, b.len() - 4)?;
    const HASH_INDEX: u32 = 1 << 31;
    const RESERVED: u32 = 1 << 30;
    const UNIFORM: u32 = 1 << 29;
    const SEPARATED_KV: u32 = 1 << 28;
    if packed & (RESERVED | SEPARATED_KV) != 0 {
        return bad("block with separated keys and values or a reserved flag");
    }
    let num_restarts = (packed & !(HASH_INDEX | UNIFORM)) as usize;
    let mut end = b.len() - 4;
    if packed & HASH_INDEX != 0 {
        // [buckets: u8 x n][n: u16] sits between the restart array and the footer.
        if end < 2 {
            return bad("hash index truncated");
        }
        let n = u16::from_le_bytes([b[end - 2], b[end - 1]]) as usize;
        end = end
            .checked_sub(2 + n)
            .ok_or_else(|| Unsupported("hash index larger than its block".into()))?;
    }
    let restarts_at = end
        .checked_sub(4 * num_restarts)
        .ok_or_else(|| Unsupported("restart array larger than its block".into()))?;
    if num_restarts == 0 {
        return bad("block without restart points");
    }
    Ok(BlockLayout {
        restarts_at,
        num_restarts,
    })
}

/// The offset of restart point `i` (`i < num_restarts`), checked to lie among the entries.
#[inline]
pub(crate) fn restart(b: &[u8], l: BlockLayout, i: usize) -> Res<usize> {
    let off = fixed32(b, l.restarts_at + 4 * i)? as usize;
    if off >= l.restarts_at {
        return bad("restart point past the entries");
    }
    Ok(off)
}

/// One decoded entry header: bytes shared with the previous key, the key bytes that follow, and
/// the value's length (None in index blocks with delta-encoded values, which carry no length).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub shared: usize,
    pub non_shared: usize,
    pub value_len: usize,
    /// Offset of the non-shared key bytes.
    pub key_at: usize,
}

/// Decodes the entry header at `pos` (`DecodeEntry`), checking that key and value lie before
/// `limit`. The shapes of nearly every data-block entry (three one-byte lengths, or a two-byte
/// value length) are decoded here, small enough to inline into a scan's loop; the rest, and
/// the errors, out of line.
#[inline]
pub(crate) fn entry(b: &[u8], pos: usize, limit: usize) -> Res<Entry> {
    let e = match b.get(pos..pos + 4) {
        Some(&[s, n, v, _]) if (s | n | v) < 128 => Entry {
            shared: s as usize,
            non_shared: n as usize,
            value_len: v as usize,
            key_at: pos + 3,
        },
        // A row of 128 bytes or more: a two-byte value length, the common case for rows.
        Some(&[s, n, v0, v1]) if (s | n | v1) < 128 => Entry {
            shared: s as usize,
            non_shared: n as usize,
            value_len: usize::from(v0 & 0x7f) | usize::from(v1) << 7,
            key_at: pos + 4,
        },
        _ => return entry_varints(b, pos, limit),
    };
    if e.key_at + e.non_shared + e.value_len > limit {
        return entry_past_end();
    }
    Ok(e)
}

/// [`entry`] for headers with longer varints (or cut short by the block's end).
#[inline(never)]
fn entry_varints(b: &[u8], pos: usize, limit: usize) -> Res<Entry> {
    let mut p = pos;
    let shared = read_varint32(b, &mut p)? as usize;
    let non_shared = read_varint32(b, &mut p)? as usize;
    let value_len = read_varint32(b, &mut p)? as usize;
    if p + non_shared + value_len > limit {
        return entry_past_end();
    }
    Ok(Entry {
        shared,
        non_shared,
        value_len,
        key_at: p,
    })
}

#[cold]
fn entry_past_end() -> Res<Entry> {
    bad("entry past the end of its block")
}

/// Decodes an index-block entry header (`DecodeKeyV4`: no value length; the value, a block
/// handle, follows the key).
fn index_entry(b: &[u8], pos: usize, limit: usize) -> Res<(usize, usize, usize)> {
    let mut p = pos;
    let shared = read_varint32(b, &mut p)? as usize;
    let non_shared = read_varint32(b, &mut p)? as usize;
    if p + non_shared > limit {
        return bad("index key past the end of its block");
    }
    Ok((shared, non_shared, p))
}

/// Walks the entries of a block with plain (key, value) entries, reconstructing each key; used
/// for the metaindex and properties blocks. `f(key, value)`.
fn for_each_entry(b: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> Res<()>) -> Res<()> {
    let l = layout(b)?;
    let mut key = Vec::new();
    let mut pos = 0;
    while pos < l.restarts_at {
        let e = entry(b, pos, l.restarts_at)?;
        if e.shared > key.len() {
            return bad("entry shares more bytes than the previous key has");
        }
        key.truncate(e.shared);
        key.extend_from_slice(&b[e.key_at..e.key_at + e.non_shared]);
        let v = e.key_at + e.non_shared;
        f(&key, &b[v..v + e.value_len])?;
        pos = v + e.value_len;
    }
    Ok(())
}

/// What the table properties say about the index, checked against what this reader supports.
#[derive(Debug, Clone)]
pub(crate) struct Props {
    pub index_key_is_user_key: bool,
    pub index_value_is_delta_encoded: bool,
    pub num_data_blocks: u64,
}

/// Reads the metaindex and properties: the handle of the index block and how to read it. (Data
/// blocks may still be compressed: each block's own type byte says, and is checked when the block
/// is first read.)
pub(crate) fn table_meta(file: &[u8], ft: &Footer) -> Res<(Handle, Props)> {
    let meta = meta_block(file, ft.metaindex, ft)?;
    let (mut index, mut props) = (None, None);
    for_each_entry(meta, |k, v| {
        let mut p = 0;
        match k {
            b"rocksdb.index" => index = Some(read_handle(v, &mut p)?),
            b"rocksdb.properties" => props = Some(read_handle(v, &mut p)?),
            _ => {}
        }
        Ok(())
    })?;
    let (Some(index), Some(props_h)) = (index, props) else {
        return bad("metaindex lacks the index or properties block");
    };
    let pb = meta_block(file, props_h, ft)?;
    let mut out = Props {
        index_key_is_user_key: false,
        index_value_is_delta_encoded: false,
        num_data_blocks: 0,
    };
    let (mut index_type, mut fv) = (None, None);
    for_each_entry(pb, |k, v| {
        let mut p = 0;
        match k {
            b"rocksdb.index.key.is.user.key" => out.index_key_is_user_key = read_varint64(v, &mut p)? != 0,
            b"rocksdb.index.value.is.delta.encoded" => {
                out.index_value_is_delta_encoded = read_varint64(v, &mut p)? != 0
            }
            b"rocksdb.num.data.blocks" => out.num_data_blocks = read_varint64(v, &mut p)?,
            b"rocksdb.index.partitions" if read_varint64(v, &mut p)? != 0 => {
                return bad("partitioned index");
            }
            b"rocksdb.block.based.table.index.type" => index_type = Some(fixed32(v, 0)?),
            b"rocksdb.format.version" => fv = Some(read_varint64(v, &mut p)?),
            _ => {}
        }
        Ok(())
    })?;
    if index_type != Some(0) {
        return bad(format!("index type {index_type:?} (binary search expected)"));
    }
    if fv != Some(u64::from(ft.format_version)) {
        return bad("format version in properties differs from the footer");
    }
    Ok((index, out))
}

/// Walks the index block: for each data block, in order, its separator key (the user key part:
/// every key in the block is <= it, every key in the next block is > it) and its handle.
pub(crate) fn for_each_index_entry(
    file: &[u8],
    ft: &Footer,
    index: Handle,
    p: &Props,
    mut f: impl FnMut(&[u8], Handle) -> Res<()>,
) -> Res<()> {
    let b = meta_block(file, index, ft)?;
    let l = layout(b)?;
    let mut key: Vec<u8> = Vec::new();
    let mut prev: Option<Handle> = None;
    let mut pos = 0;
    while pos < l.restarts_at {
        let (shared, non_shared, at) = if p.index_value_is_delta_encoded {
            index_entry(b, pos, l.restarts_at)?
        } else {
            let e = entry(b, pos, l.restarts_at)?;
            (e.shared, e.non_shared, e.key_at)
        };
        if shared > key.len() {
            return bad("index entry shares more bytes than the previous key has");
        }
        key.truncate(shared);
        key.extend_from_slice(&b[at..at + non_shared]);
        let mut v = at + non_shared;
        let h = match prev {
            Some(ph) if p.index_value_is_delta_encoded && shared != 0 => {
                let raw = read_varint64(&b[..l.restarts_at], &mut v)?;
                let delta = ((raw >> 1) as i64) ^ -((raw & 1) as i64);
                Handle {
                    offset: ph.offset + ph.size + BLOCK_TRAILER as u64,
                    size: ph
                        .size
                        .checked_add_signed(delta)
                        .ok_or_else(|| Unsupported("bad size delta".into()))?,
                }
            }
            _ => read_handle(&b[..l.restarts_at], &mut v)?,
        };
        if !p.index_value_is_delta_encoded {
            // With explicit value lengths, the value is exactly the handle.
            let e = entry(b, pos, l.restarts_at)?;
            v = e.key_at + e.non_shared + e.value_len;
        }
        let user = if p.index_key_is_user_key {
            &key[..]
        } else {
            match key.len().checked_sub(KEY_TRAILER) {
                Some(n) => &key[..n],
                None => return bad("internal key shorter than its trailer"),
            }
        };
        f(user, h)?;
        prev = Some(h);
        pos = v;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry header as RocksDB writes it: three varints, then the key and the value.
    fn encoded(shared: u32, key: &[u8], value_len: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for mut v in [u64::from(shared), key.len() as u64, value_len as u64] {
            while v >= 0x80 {
                b.push(v as u8 | 0x80);
                v >>= 7;
            }
            b.push(v as u8);
        }
        b.extend_from_slice(key);
        b.resize(b.len() + value_len, 0xab);
        b
    }

    #[test]
    fn entry_headers_decode_with_one_two_and_three_byte_value_lengths() {
        for value_len in [0, 1, 127, 128, 129, 300, 16_383, 16_384, 70_000] {
            for shared in [0u32, 5, 200] {
                let b = encoded(shared, &[7u8; 20], value_len);
                let e = entry(&b, 0, b.len()).expect("decodes");
                assert_eq!(
                    (e.shared, e.non_shared, e.value_len),
                    (shared as usize, 20, value_len)
                );
                assert_eq!(&b[e.key_at..e.key_at + 20], &[7u8; 20]);
                assert_eq!(e.key_at + 20 + value_len, b.len());
                // The same entry cut short is refused, never read past its limit.
                assert!(entry(&b, 0, b.len() - 1).is_err());
            }
        }
    }
}
