//! The persisted form of a table's secondary indexes, written with each checkpoint of its
//! primary index and loaded at open instead of a rebuild that reads the row of every key.
//!
//! `index/<table>-<generation>.sec`, beside the primary index's image, tagged like it (table,
//! generation, watermark, the checkpoint's random id):
//!
//! ```text
//! "AUGSEC1\n"  tag: table, generation, watermark, checkpoint id (4 x u64 LE)  indexes (u32 LE)
//! per index:   definition (u32 LE length, JSON)  entries (u64 LE)  bytes (u64 LE)
//!              entries in (value, key, rowid) order: varint value length, value,
//!              key (1, i64 LE | 2, varint length, bytes), rowid (u64 LE)
//! xxh3-64 of everything before (u64 LE)
//! ```
//!
//! It holds, for each index, the entries of the version of each key that was newest at the
//! watermark (older versions: no snapshot at open can see them). Open drops the entries of keys
//! written after the watermark (by their checkpointed rowid) and adds those of their newest
//! versions, which replay reads anyway: work proportional to the table's entries (a bulk build
//! of each set from sorted input) plus the delta, and no row read.

use std::collections::{BTreeSet, HashSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use super::catalog::IndexDef;
use super::{Inner, Table};
use crate::error::{Error, Result};
use crate::index::keyed::TOMBSTONE;
use crate::types::codec::{put_key, put_varint, Reader};
use crate::types::Key;

const MAGIC: &[u8; 8] = b"AUGSEC1\n";

/// Entries copied per hold of the table's index locks: commits to the table wait meanwhile,
/// so a hold stays short (about a millisecond).
const STEP: usize = 4096;

/// One secondary index entry: (encoded values, primary key, rowid).
pub(crate) type Entry = (Vec<u8>, Key, u64);

/// The file of a table's secondary indexes at a checkpoint generation.
pub(crate) fn form_path(db_path: &Path, table: u32, generation: u64) -> PathBuf {
    super::recovery::image_dir(db_path).join(format!("{table}-{generation}.sec"))
}

/// Encodes the form of `t`'s secondary indexes `defs` at watermark `w`: for each index, the
/// entries of the version of each key that was newest at `w`. Returns the file's bytes and the
/// definitions it holds (an index dropped or replaced while it was copied is left out).
///
/// The caller took `w` under the commit lock while holding `Inner::gc_run`, and holds it until
/// this returns: no entry of a version at or below `w` leaves the sets meanwhile (only
/// collection removes entries), so copying them a step at a time, between commits, sees every
/// one of them; commits meanwhile only add entries past `w`, which are skipped.
pub(crate) fn snapshot(
    inner: &Inner,
    t: &Table,
    w: u64,
    tag: [u64; 4],
    defs: &[IndexDef],
) -> Result<(Vec<u8>, Vec<IndexDef>)> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(MAGIC);
    for x in tag {
        out.extend_from_slice(&x.to_le_bytes());
    }
    let n_at = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut written = Vec::new();
    for d in defs {
        let mark = out.len();
        let json = serde_json::to_vec(d).map_err(|e| Error::internal(format!("index definition: {e}")))?;
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        let counts_at = out.len();
        out.extend_from_slice(&[0u8; 16]);
        match copy_index(inner, t, w, d, &mut out)? {
            Some(count) => {
                let len = (out.len() - counts_at - 16) as u64;
                out[counts_at..counts_at + 8].copy_from_slice(&count.to_le_bytes());
                out[counts_at + 8..counts_at + 16].copy_from_slice(&len.to_le_bytes());
                written.push(d.clone());
            }
            None => out.truncate(mark),
        }
    }
    out[n_at..n_at + 4].copy_from_slice(&(written.len() as u32).to_le_bytes());
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok((out, written))
}

/// Appends the entries of index `d` at `w` to `out`; None if the table no longer has that index.
fn copy_index(inner: &Inner, t: &Table, w: u64, d: &IndexDef, out: &mut Vec<u8>) -> Result<Option<u64>> {
    let mut count = 0u64;
    let mut from: Option<Entry> = None;
    loop {
        // The primary index first, then the sets: the order a commit takes them in.
        let pk = t.pk.read();
        let sec = t.secondary.read();
        let Some(s) = sec.iter().find(|s| s.def == *d) else {
            return Ok(None);
        };
        let lo = match &from {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        };
        let mut last = None;
        let mut n = 0;
        for e in s.entries.range::<Entry, _>((lo, Bound::Unbounded)).take(STEP) {
            n += 1;
            last = Some(e);
            if e.2 > w {
                continue;
            }
            // The key's version at `w`: its entry now, unless a commit since moved it past `w`
            // (then back along its version chain; collection, which could delete those
            // versions, is held off by the caller).
            let at_w = match pk.get(&e.1)? {
                Some(p) if p & !TOMBSTONE <= w => Some(p & !TOMBSTONE),
                Some(p) => super::gc::version_at(inner, t.id, p & !TOMBSTONE, w)?,
                None => None,
            };
            if at_w == Some(e.2) {
                encode(e, out);
                count += 1;
            }
        }
        if n < STEP {
            return Ok(Some(count));
        }
        from = last.cloned();
    }
}

fn encode(e: &Entry, out: &mut Vec<u8>) {
    put_varint(out, e.0.len() as u64);
    out.extend_from_slice(&e.0);
    put_key(out, &e.1);
    out.extend_from_slice(&e.2.to_le_bytes());
}

/// Reads the form at `path` (`len` bytes, tagged `tag`) and returns the entries of each index
/// of `defs`, in that order, leaving out those whose rowid is in `stale` (the checkpointed
/// versions of keys written since). Any doubt refuses the whole form (the caller rebuilds the
/// indexes from the rows): a length, checksum, tag or format that does not match, or an index
/// of `defs` it does not hold.
pub(crate) fn load(
    path: &Path,
    len: u64,
    tag: [u64; 4],
    defs: &[IndexDef],
    stale: &HashSet<u64>,
) -> std::result::Result<Vec<BTreeSet<Entry>>, String> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |why: &str| format!("{}: {why}", path.display());
    if b.len() as u64 != len {
        return Err(bad(&format!("{} bytes, the checkpoint says {len}", b.len())));
    }
    if b.len() < MAGIC.len() + 32 + 4 + 8 {
        return Err(bad("too short"));
    }
    let (body, sum) = b.split_at(b.len() - 8);
    if xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() != sum {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader::new(body);
    let fmt = |_| bad("malformed");
    if r.take(8).map_err(fmt)? != MAGIC {
        return Err(bad("not a secondary index form"));
    }
    for want in tag {
        if r.u64_le().map_err(fmt)? != want {
            return Err(bad("written for another checkpoint"));
        }
    }
    let n = r.u32_le().map_err(fmt)?;
    let mut sets: Vec<Option<BTreeSet<Entry>>> = vec![None; defs.len()];
    for _ in 0..n {
        let json_len = r.u32_le().map_err(fmt)? as usize;
        let def: IndexDef = serde_json::from_slice(r.take(json_len).map_err(fmt)?)
            .map_err(|e| bad(&format!("index definition: {e}")))?;
        let count = r.u64_le().map_err(fmt)?;
        let bytes = r.u64_le().map_err(fmt)?;
        let section = r
            .take(usize::try_from(bytes).map_err(|_| bad("malformed"))?)
            .map_err(fmt)?;
        let Some(i) = defs.iter().position(|d| *d == def) else {
            continue; // an index dropped since the checkpoint
        };
        if sets[i].is_some() {
            return Err(bad(&format!("index {} twice", def.name)));
        }
        sets[i] = Some(decode_entries(section, count, stale).map_err(|_| bad("malformed entries"))?);
    }
    if r.pos != body.len() {
        return Err(bad("trailing bytes"));
    }
    defs.iter()
        .zip(sets)
        .map(|(d, s)| s.ok_or_else(|| bad(&format!("index {} is not in it", d.name))))
        .collect()
}

/// Decodes one index's entries (`count` of them) into its set: a bulk build from input already
/// in order.
fn decode_entries(section: &[u8], count: u64, stale: &HashSet<u64>) -> Result<BTreeSet<Entry>> {
    let mut r = Reader::new(section);
    // Every entry takes at least 11 bytes: a larger count is corrupt (and must not size an
    // allocation).
    if count > (section.len() / 11) as u64 {
        return Err(Error::Corrupt(
            "secondary index entry count past its section".into(),
        ));
    }
    let mut v: Vec<Entry> = Vec::with_capacity(count as usize);
    let mut seen = 0u64;
    while r.pos < section.len() {
        let vlen = r.varint()? as usize;
        let value = r.take(vlen)?.to_vec();
        let key = r.key()?;
        let rowid = r.u64_le()?;
        seen += 1;
        if stale.is_empty() || !stale.contains(&rowid) {
            v.push((value, key, rowid));
        }
    }
    if seen != count {
        return Err(Error::Corrupt("secondary index entry count mismatch".into()));
    }
    // Sorting input already in order is one pass of comparisons; `from_iter` then builds the
    // tree from the sorted run without a search per entry.
    Ok(BTreeSet::from_iter(v))
}
