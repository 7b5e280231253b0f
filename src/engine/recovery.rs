//! Opening a database: catalog, counters, and each table's primary index rebuilt from its last
//! checkpoint plus a replay of the row versions written after it. No random-key write happens on
//! this path: checkpoints are sorted runs written in bulk, and replay only reads.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use rocksdb::WriteBatch;

use super::catalog::TableDef;
use super::{Inner, Table};
use crate::error::{Error, Result};
use crate::index::keyed::{KeyIndex, TOMBSTONE};
use crate::store::{idxsnap_key, CF_CATALOG, CF_IDXSNAP, CF_META};
use crate::types::codec::{decode_version_header, put_varint};
use crate::types::Key;

const CHUNK_BYTES: usize = 1 << 20;

struct CkptHeader {
    generation: u64,
    watermark: u64,
    count: u64,
    chunks: u32,
}

impl CkptHeader {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(28);
        v.extend_from_slice(&self.generation.to_be_bytes());
        v.extend_from_slice(&self.watermark.to_be_bytes());
        v.extend_from_slice(&self.count.to_be_bytes());
        v.extend_from_slice(&self.chunks.to_be_bytes());
        v
    }
    fn decode(b: &[u8]) -> Result<CkptHeader> {
        if b.len() != 28 {
            return Err(Error::Corrupt("index checkpoint header".into()));
        }
        let u = |r: std::ops::Range<usize>| u64::from_be_bytes(b[r].try_into().expect("8 bytes"));
        Ok(CkptHeader {
            generation: u(0..8),
            watermark: u(8..16),
            count: u(16..24),
            chunks: u32::from_be_bytes(b[24..28].try_into().expect("4 bytes")),
        })
    }
}

pub(crate) fn recover(inner: &Arc<Inner>) -> Result<()> {
    let t0 = Instant::now();
    let store = &inner.store;
    // A brand-new database (no counters yet) has nothing to recover.
    let fresh = store.get_meta("next_table_id")?.is_none() && store.get_meta("next_rowid")?.is_none();
    let clean = fresh || store.get_meta("clean_shutdown")?.as_deref() == Some(&[1u8][..]);
    let mut b = WriteBatch::default();
    b.delete_cf(store.db()?.cf(CF_META), b"clean_shutdown");
    store.write_sync(b)?;

    let next_table_id = store.get_meta_u64("next_table_id")?.unwrap_or(1).max(1) as u32;
    let next_rowid = store
        .get_meta_u64("next_rowid")?
        .unwrap_or(1)
        .max(store.max_rowid()? + 1)
        .max(1);

    let mut defs = Vec::new();
    for (_, v) in store.scan_prefix(CF_CATALOG, b"")? {
        let def: TableDef =
            serde_json::from_slice(&v).map_err(|e| Error::Corrupt(format!("catalog entry: {e}")))?;
        defs.push(def);
    }
    let mut max_table_id = 0;
    {
        let mut tables = inner.tables.write();
        for def in defs {
            max_table_id = max_table_id.max(def.id);
            let t = load_table(inner, def)?;
            tables.insert(t.name(), Arc::new(t));
        }
    }
    {
        let mut c = inner.commit.lock();
        c.next_rowid = next_rowid;
        c.next_table_id = next_table_id.max(max_table_id + 1);
    }
    inner.visible.store(next_rowid - 1, Ordering::Release);
    {
        let mut s = inner.stats.lock();
        s.recovery_ms = t0.elapsed().as_millis() as u64;
        s.recovered_unclean = !clean;
    }
    tracing::info!(
        ms = t0.elapsed().as_millis() as u64,
        clean,
        tables = inner.tables.read().len(),
        "database opened"
    );
    if !clean {
        // The maintenance thread sweeps first thing (and is joined on close).
        *inner.pending_sweep.lock() = Some(next_rowid - 1);
    }
    Ok(())
}

fn load_table(inner: &Inner, def: TableDef) -> Result<Table> {
    let store = &inner.store;
    let kind = def.key_kind();
    let header = match store.get_meta(&format!("ckpt/{}", def.id))? {
        Some(h) => Some(CkptHeader::decode(&h)?),
        None => None,
    };
    let (watermark, generation) = header.as_ref().map_or((0, 0), |h| (h.watermark, h.generation));

    // The checkpoint: sorted (key, rowid) of live keys at `watermark`.
    let mut entries: Vec<(Key, u64)> = Vec::with_capacity(header.as_ref().map_or(0, |h| h.count as usize));
    if let Some(h) = &header {
        let prefix = idxsnap_key(def.id, h.generation, 0);
        let chunks = store.scan_prefix(CF_IDXSNAP, &prefix[..12])?;
        if chunks.len() != h.chunks as usize {
            return Err(Error::Corrupt(format!(
                "index checkpoint of table {} has {} chunks, header says {}",
                def.name,
                chunks.len(),
                h.chunks
            )));
        }
        for (_, c) in chunks {
            decode_chunk(&c, &mut entries)?;
        }
        if entries.len() as u64 != h.count {
            return Err(Error::Corrupt(format!(
                "index checkpoint of table {} is short",
                def.name
            )));
        }
    }

    // Replay: every version written after the checkpoint, in position order.
    let mut tail: Vec<(Key, u64)> = Vec::new();
    store.for_each_row(def.id, watermark + 1, u64::MAX, |rowid, bytes| {
        let (tomb, _, key) = decode_version_header(bytes)?;
        tail.push((key, rowid | if tomb { TOMBSTONE } else { 0 }));
        Ok(true)
    })?;
    let merged = if tail.is_empty() {
        entries
    } else {
        // Newest version per key wins: stable sort keeps position order among equal keys.
        tail.sort_by(|a, b| a.0.cmp(&b.0));
        let mut newest: Vec<(Key, u64)> = Vec::with_capacity(tail.len());
        for (k, p) in tail {
            match newest.last_mut() {
                Some(last) if last.0 == k => last.1 = p,
                _ => newest.push((k, p)),
            }
        }
        merge_newest(entries, newest)
    };
    let live: Vec<(Key, u64)> = merged.into_iter().filter(|(_, p)| p & TOMBSTONE == 0).collect();
    let pk = KeyIndex::bulk_load(kind, live);
    let t = Table::new(def, pk);
    t.ckpt_watermark.store(watermark, Ordering::Release);
    t.ckpt_generation.store(generation, Ordering::Release);

    // Secondary indexes are rebuilt from the newest versions.
    if !t.def().indexes.is_empty() {
        for (k, p) in t.pk.read().entries() {
            let v = inner.fetch(t.id, p)?;
            if let Some(row) = &v.row {
                t.add_secondary_entries(row, &k, p);
            }
        }
    }
    Ok(t)
}

/// Merges two key-sorted runs; on equal keys the second (newer) wins.
fn merge_newest(old: Vec<(Key, u64)>, new: Vec<(Key, u64)>) -> Vec<(Key, u64)> {
    let mut out = Vec::with_capacity(old.len() + new.len());
    let mut a = old.into_iter().peekable();
    let mut b = new.into_iter().peekable();
    loop {
        match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => out.push(a.next().expect("peeked")),
                std::cmp::Ordering::Greater => out.push(b.next().expect("peeked")),
                std::cmp::Ordering::Equal => {
                    a.next();
                    out.push(b.next().expect("peeked"));
                }
            },
            (Some(_), None) => out.extend(a.by_ref()),
            (None, Some(_)) => out.extend(b.by_ref()),
            (None, None) => break,
        }
    }
    out
}

fn decode_chunk(c: &[u8], out: &mut Vec<(Key, u64)>) -> Result<()> {
    let bad = || Error::Corrupt("index checkpoint chunk".into());
    let (&tag, mut rest) = c.split_first().ok_or_else(bad)?;
    match tag {
        1 => {
            if rest.len() % 16 != 0 {
                return Err(bad());
            }
            for e in rest.chunks_exact(16) {
                let k = i64::from_le_bytes(e[..8].try_into().expect("8 bytes"));
                let r = u64::from_le_bytes(e[8..].try_into().expect("8 bytes"));
                out.push((Key::Int(k), r));
            }
        }
        2 => {
            while !rest.is_empty() {
                let mut len: u64 = 0;
                let mut shift = 0;
                loop {
                    let (&b, r) = rest.split_first().ok_or_else(bad)?;
                    rest = r;
                    len |= ((b & 0x7f) as u64) << shift;
                    if b & 0x80 == 0 {
                        break;
                    }
                    shift += 7;
                    if shift > 63 {
                        return Err(bad());
                    }
                }
                let len = len as usize;
                if rest.len() < len + 8 {
                    return Err(bad());
                }
                let k = rest[..len].to_vec();
                let r = u64::from_le_bytes(rest[len..len + 8].try_into().expect("8 bytes"));
                rest = &rest[len + 8..];
                out.push((Key::Bytes(k), r));
            }
        }
        _ => return Err(bad()),
    }
    Ok(())
}

/// Writes a new checkpoint of `t`'s primary index: every live (key, rowid) at the current
/// position, in sorted chunks, then the header (fsynced), then drops the previous generation.
pub(crate) fn checkpoint_table(inner: &Inner, t: &Table) -> Result<()> {
    let (watermark, entries) = {
        let c = inner.commit.lock();
        let w = c.next_rowid - 1;
        if w == t.ckpt_watermark.load(Ordering::Acquire) {
            return Ok(());
        }
        let e: Vec<(Key, u64)> =
            t.pk.read()
                .entries()
                .into_iter()
                .filter(|(_, p)| p & TOMBSTONE == 0)
                .collect();
        (w, e)
    };
    if t.is_dropped() {
        return Ok(());
    }
    let old_gen = t.ckpt_generation.load(Ordering::Acquire);
    let generation = old_gen + 1;
    let rocks = inner.store.db()?;
    let cf = rocks.cf(CF_IDXSNAP);
    let mut batch = WriteBatch::default();
    // Leftovers of an earlier attempt at this generation that crashed before its header.
    batch.delete_range_cf(
        cf,
        idxsnap_key(t.id, generation, 0),
        idxsnap_key(t.id, generation + 1, 0),
    );
    let mut chunk: Vec<u8> = Vec::with_capacity(CHUNK_BYTES + 64);
    let mut chunks: u32 = 0;
    let tag = match entries.first() {
        Some((Key::Bytes(_), _)) => 2u8,
        _ => 1u8,
    };
    let flush = |chunk: &mut Vec<u8>, batch: &mut WriteBatch, chunks: &mut u32| -> Result<()> {
        batch.put_cf(cf, idxsnap_key(t.id, generation, *chunks), &chunk[..]);
        *chunks += 1;
        chunk.clear();
        if batch.size_in_bytes() > 16 * CHUNK_BYTES {
            inner.store.write_nosync(std::mem::take(batch))?;
        }
        Ok(())
    };
    for (k, r) in &entries {
        if chunk.is_empty() {
            chunk.push(tag);
        }
        match k {
            Key::Int(i) => {
                chunk.extend_from_slice(&i.to_le_bytes());
            }
            Key::Bytes(b) => {
                put_varint(&mut chunk, b.len() as u64);
                chunk.extend_from_slice(b);
            }
        }
        chunk.extend_from_slice(&r.to_le_bytes());
        if chunk.len() >= CHUNK_BYTES {
            flush(&mut chunk, &mut batch, &mut chunks)?;
        }
    }
    if !chunk.is_empty() {
        flush(&mut chunk, &mut batch, &mut chunks)?;
    }
    let header = CkptHeader {
        generation,
        watermark,
        count: entries.len() as u64,
        chunks,
    };
    batch.put_cf(
        inner.store.db()?.cf(CF_META),
        format!("ckpt/{}", t.id),
        header.encode(),
    );
    inner.store.write_sync(batch)?;
    let mut del = WriteBatch::default();
    del.delete_range_cf(
        cf,
        idxsnap_key(t.id, old_gen, 0),
        idxsnap_key(t.id, generation, 0),
    );
    inner.store.write_nosync(del)?;
    t.ckpt_generation.store(generation, Ordering::Release);
    t.ckpt_watermark.store(watermark, Ordering::Release);
    Ok(())
}
