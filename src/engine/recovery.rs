//! Opening a database: catalog, counters, and each table's primary index from its last
//! checkpoint plus a replay of the row versions written after it; and writing those checkpoints.
//!
//! An ALEX index is checkpointed as an *image* (`index/<table>-<generation>.alex` beside
//! RocksDB's files: its nodes' arrays as they lie in memory, `index::alex::image`), which open
//! maps and reads in place: work per node, not per key. The B-tree fallback is checkpointed as
//! sorted (key, rowid) chunks in the `idxsnap` column family and bulk-loaded. An image that
//! fails a check (checksum, format, or it is not the one the checkpoint header names) is never
//! used: the index is rebuilt from the rows instead.
//!
//! A table's secondary indexes are checkpointed with it, at the same watermark, in one file
//! beside the image (`secondary_form`); open loads them and applies the versions replay reads.
//! A form that is missing or fails a check is never used: the indexes are rebuilt from the
//! rows.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocksdb::WriteBatch;

use super::catalog::TableDef;
use super::options::ImageCheck;
use super::secondary_form::{self, form_path, Entry};
use super::{Inner, Table};
use crate::error::{Error, Result};
use crate::index::alex::Checks;
use crate::index::keyed::{IndexKind, KeyIndex, TOMBSTONE};
use crate::index::mapped::Mapping;
use crate::store::{idxsnap_key, CF_CATALOG, CF_IDXSNAP, CF_META};
use crate::types::codec::{decode_version, decode_version_header, put_varint};
use crate::types::Key;

const CHUNK_BYTES: usize = 1 << 20;

/// The checkpoint header of a table, in `meta` under `ckpt/<table id>`: which checkpoint is
/// current and the rowid watermark `W` it covers.
struct CkptHeader {
    generation: u64,
    watermark: u64,
    form: CkptForm,
    /// The form of the table's secondary indexes (none: the table had none, or the checkpoint
    /// was written before they were persisted).
    secondary: Option<SecForm>,
}

/// The secondary indexes' file of this generation, `len` bytes, tagged with the checkpoint's
/// random id `nonce`. Appended to either form's header: tag b'S', then 16 bytes.
struct SecForm {
    nonce: u64,
    len: u64,
}

enum CkptForm {
    /// `chunks` sorted (key, rowid) chunks in `idxsnap` holding `count` entries (28 bytes).
    Chunks { count: u64, chunks: u32 },
    /// The image file of this generation, `len` bytes, whose tag carries `nonce` (a random id,
    /// so that an image left from another checkpoint is told apart). 1 + 32 bytes, tag 2.
    Image { nonce: u64, len: u64 },
}

impl CkptHeader {
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(33);
        match self.form {
            CkptForm::Chunks { count, chunks } => {
                v.extend_from_slice(&self.generation.to_be_bytes());
                v.extend_from_slice(&self.watermark.to_be_bytes());
                v.extend_from_slice(&count.to_be_bytes());
                v.extend_from_slice(&chunks.to_be_bytes());
            }
            CkptForm::Image { nonce, len } => {
                v.push(2);
                v.extend_from_slice(&self.generation.to_be_bytes());
                v.extend_from_slice(&self.watermark.to_be_bytes());
                v.extend_from_slice(&nonce.to_be_bytes());
                v.extend_from_slice(&len.to_be_bytes());
            }
        }
        if let Some(s) = &self.secondary {
            v.push(b'S');
            v.extend_from_slice(&s.nonce.to_be_bytes());
            v.extend_from_slice(&s.len.to_be_bytes());
        }
        v
    }
    fn decode(b: &[u8]) -> Result<CkptHeader> {
        let (b, secondary) = match b.len() {
            45 | 50 if b[b.len() - 17] == b'S' => {
                let t = &b[b.len() - 16..];
                let sec = SecForm {
                    nonce: u64::from_be_bytes(t[..8].try_into().expect("8 bytes")),
                    len: u64::from_be_bytes(t[8..].try_into().expect("8 bytes")),
                };
                (&b[..b.len() - 17], Some(sec))
            }
            _ => (b, None),
        };
        let u = |r: std::ops::Range<usize>| u64::from_be_bytes(b[r].try_into().expect("8 bytes"));
        match b.len() {
            28 => Ok(CkptHeader {
                secondary,
                generation: u(0..8),
                watermark: u(8..16),
                form: CkptForm::Chunks {
                    count: u(16..24),
                    chunks: u32::from_be_bytes(b[24..28].try_into().expect("4 bytes")),
                },
            }),
            33 if b[0] == 2 => Ok(CkptHeader {
                secondary,
                generation: u(1..9),
                watermark: u(9..17),
                form: CkptForm::Image {
                    nonce: u(17..25),
                    len: u(25..33),
                },
            }),
            _ => Err(Error::Corrupt("index checkpoint header".into())),
        }
    }
}

/// Where the images of primary indexes live: a directory beside RocksDB's files.
pub(crate) fn image_dir(db_path: &Path) -> PathBuf {
    db_path.join("index")
}

fn image_path(db_path: &Path, table: u32, generation: u64) -> PathBuf {
    image_dir(db_path).join(format!("{table}-{generation}.alex"))
}

/// Time spent opening the primary indexes, by phase (summed over tables).
#[derive(Default)]
struct OpenTimes {
    /// Reading checkpoints: mapping images and reading their directories, or reading sorted
    /// chunks and bulk-loading them.
    map: Duration,
    /// Checksumming images.
    verify: Duration,
    /// Reading the versions written after the checkpoints and applying them; rebuilding
    /// indexes whose image was refused.
    replay: Duration,
    /// Secondary indexes: loading their forms and applying the replayed versions, or
    /// rebuilding them from the rows.
    secondary: Duration,
    replayed: u64,
    /// Bytes of images read into memory rather than mapped (for a dense replay).
    copied: u64,
    images_refused: u64,
    /// Tables whose secondary indexes were loaded from their form, rebuilt from the rows, and
    /// (of those rebuilt) whose checkpoint's form was missing or refused.
    secondary_loaded: u64,
    secondary_rebuilt: u64,
    secondary_refused: u64,
    /// The verify time of the table being opened (taken out of its map time).
    verify_last: Duration,
    /// The time the table being opened spent checking the rest of a lazily checked image
    /// before its replay (counted as verify, taken out of its replay time).
    replay_checks: Duration,
}

pub(crate) fn recover(inner: &Arc<Inner>) -> Result<()> {
    let t0 = Instant::now();
    let store = &inner.store;
    // A brand-new database (no counters yet) has nothing to recover.
    let fresh = store.get_meta("next_table_id")?.is_none() && store.get_meta("next_rowid")?.is_none();
    let marked = store.get_meta("clean_shutdown")?.as_deref() == Some(&[1u8][..]);
    let clean = fresh || marked;
    let t_marker = Instant::now();
    if marked {
        // Cleared through the WAL without waiting for its fsync: the first write made durable
        // after the open carries it (docs/INVARIANTS.md, "The clean-shutdown marker never
        // outlives a change"). Absent, there is nothing to clear.
        let mut b = WriteBatch::default();
        b.delete_cf(store.db()?.cf(CF_META), b"clean_shutdown");
        let ticket = store.append(b)?;
        store.sync_before_ingest(ticket);
    }
    let marker = t_marker.elapsed();

    let t_catalog = Instant::now();
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
    let catalog = t_catalog.elapsed();
    let mut max_table_id = 0;
    let mut times = OpenTimes::default();
    let t_tables = Instant::now();
    {
        let mut tables = inner.tables.write();
        for def in defs {
            max_table_id = max_table_id.max(def.id);
            let t = load_table(inner, def, &mut times)?;
            tables.insert(t.name(), Arc::new(t));
        }
    }
    let tables_other = t_tables
        .elapsed()
        .saturating_sub(times.map + times.verify + times.replay + times.secondary);
    let t_rest = Instant::now();
    remove_unused_images(inner);
    if times.images_refused + times.secondary_refused > 0 {
        // The refused images' (or forms') tables were rebuilt from their rows: checkpoint them
        // again soon (the maintenance thread), so that the next open maps a good image.
        inner
            .versions_since_ckpt
            .store(inner.opts.checkpoint_every, Ordering::Relaxed);
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
        s.open_map_us = times.map.as_micros() as u64;
        s.open_verify_us = times.verify.as_micros() as u64;
        s.open_replay_us = times.replay.as_micros() as u64;
        s.open_replayed_versions = times.replayed;
        s.open_copied_image_bytes = times.copied;
        s.index_images_refused = times.images_refused;
        s.open_secondary_us = times.secondary.as_micros() as u64;
        s.secondary_loaded = times.secondary_loaded;
        s.secondary_rebuilt = times.secondary_rebuilt;
        s.secondary_forms_refused = times.secondary_refused;
        s.open_marker_us = marker.as_micros() as u64;
        s.open_catalog_us = catalog.as_micros() as u64;
        s.open_tables_other_us = tables_other.as_micros() as u64;
        s.open_rest_us = t_rest.elapsed().as_micros() as u64;
    }
    tracing::info!(
        ms = t0.elapsed().as_millis() as u64,
        clean,
        tables = inner.tables.read().len(),
        "database opened"
    );
    if !clean {
        // The maintenance thread sweeps once its warm-up is done (and is joined on close).
        *inner.pending_sweep.lock() = Some(next_rowid - 1);
    }
    Ok(())
}

fn load_table(inner: &Arc<Inner>, def: TableDef, times: &mut OpenTimes) -> Result<Table> {
    let store = &inner.store;
    let image_damaged = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let kind = def.key_kind();
    let header = match store.get_meta(&format!("ckpt/{}", def.id))? {
        Some(h) => Some(CkptHeader::decode(&h)?),
        None => None,
    };
    let generation = header.as_ref().map_or(0, |h| h.generation);
    let t_map = Instant::now();
    // Replay reads every version written after the checkpoint, in position order; with
    // secondary indexes, each version's index values too (its row is read here anyway). For an
    // image it reads them first: how many there are decides how the image is opened.
    let mut since: Option<Since> = None;
    let mut t_since = Duration::ZERO;
    // The checkpoint: the index at `watermark` (deleted keys left out).
    let (mut base, mut watermark) = match &header {
        None => (Base::Sorted(Vec::new()), 0),
        Some(
            h @ CkptHeader {
                form: CkptForm::Chunks { count, chunks },
                ..
            },
        ) => (
            Base::Sorted(read_chunks(inner, &def, h.generation, *count, *chunks)?),
            h.watermark,
        ),
        Some(
            h @ CkptHeader {
                form: CkptForm::Image { nonce, len },
                ..
            },
        ) => {
            let t = Instant::now();
            let s = read_since(inner, &def, h.watermark)?;
            t_since = t.elapsed();
            let dense = dense_replay(s.0.len(), *len);
            since = Some(s);
            match open_image(inner, &def, h, *nonce, *len, dense, &image_damaged, times) {
                Ok(pk) => (Base::Index(pk), h.watermark),
                Err(why) => {
                    // Never trusted: the index is rebuilt from every stored version instead.
                    tracing::warn!(table = %def.name, %why, "index image refused; rebuilding the index from the rows");
                    times.images_refused += 1;
                    since = None;
                    (Base::Sorted(Vec::new()), 0)
                }
            }
        }
    };
    times.map += t_map
        .elapsed()
        .saturating_sub(std::mem::take(&mut times.verify_last) + t_since);

    let t_replay = Instant::now();
    let indexed = !def.indexes.is_empty();
    let (mut newest, mut newest_values, mut versions) = match since {
        Some(s) => s,
        None => read_since(inner, &def, watermark)?,
    };
    // An image opened with lazy checks is checked whole before anything is replayed onto it,
    // or read from it for `stale` below: the rebuild a node failing later would start reads
    // the rows as they are, past the checkpoint. A failed node refuses the image here.
    if let (false, Base::Index(pk)) = (newest.is_empty(), &base) {
        let t = Instant::now();
        let ok = pk.check_all();
        times.verify += t.elapsed();
        times.replay_checks += t.elapsed();
        if !ok {
            tracing::warn!(table = %def.name, "index image refused: a data node failed its checksum; rebuilding the index from the rows");
            times.images_refused += 1;
            base = Base::Sorted(Vec::new());
            watermark = 0;
            (newest, newest_values, versions) = read_since(inner, &def, 0)?;
        }
    }
    times.replayed += versions;
    // For the secondary indexes: the checkpointed versions of the keys written since (their
    // entries in the form are stale), and the entries of those keys' newest versions.
    let mut stale: HashSet<u64> = HashSet::new();
    if indexed && watermark > 0 {
        for (k, _) in &newest {
            if let Some(p) = base.get(k)? {
                if p & TOMBSTONE == 0 {
                    stale.insert(p);
                }
            }
        }
    }
    let delta: Vec<(Key, u64, IndexValues)> = newest
        .iter()
        .zip(newest_values)
        .filter(|((_, p), _)| p & TOMBSTONE == 0)
        .map(|((k, p), values)| (k.clone(), *p, values))
        .collect();
    let pk = match base {
        // A mapped image takes the (usually few) changes in place, in key order; a delta
        // larger than the image itself is merged and bulk-loaded instead (a better-shaped tree
        // than as many inserts, for about the work of reading the image once).
        Base::Index(mut pk) if newest.len() <= pk.len() => {
            for (k, p) in newest {
                if p & TOMBSTONE != 0 {
                    pk.remove(&k);
                } else {
                    pk.upsert(&k, p);
                }
            }
            pk
        }
        Base::Index(pk) => bulk(kind, merge_newest(pk.entries()?, newest)),
        Base::Sorted(entries) if newest.is_empty() => bulk(kind, entries),
        Base::Sorted(entries) => bulk(kind, merge_newest(entries, newest)),
    };
    let mut t = Table::new(def, pk)?;
    t.image_damaged = image_damaged;
    t.ckpt_watermark.store(watermark, Ordering::Release);
    t.ckpt_generation.store(generation, Ordering::Release);
    times.replay += (t_replay.elapsed() + t_since).saturating_sub(std::mem::take(&mut times.replay_checks));
    if indexed {
        let t_sec = Instant::now();
        open_secondary(inner, &t, header.as_ref(), watermark, &stale, delta, times)?;
        times.secondary += t_sec.elapsed();
    }
    Ok(t)
}

/// What [`read_since`] returns: the newest version per key, their secondary index values, and
/// the number of versions read.
type Since = (Vec<(Key, u64)>, Vec<IndexValues>, u64);

/// The versions of `def`'s table written after `watermark`: the newest per key, in key order
/// (with the top bit for a tombstone), with its secondary index values when the table has
/// secondary indexes; and how many versions there were.
fn read_since(inner: &Inner, def: &TableDef, watermark: u64) -> Result<Since> {
    let indexed = !def.indexes.is_empty();
    let mut tail: Vec<(Key, u64, IndexValues)> = Vec::new();
    inner
        .store
        .for_each_row(def.id, watermark + 1, u64::MAX, |rowid, bytes| {
            if indexed {
                let v = decode_version(bytes)?;
                let (tomb, values) = match &v.row {
                    Some(row) => (
                        false,
                        def.indexes.iter().map(|i| def.index_value(i, row)).collect(),
                    ),
                    None => (true, Vec::new()),
                };
                tail.push((v.key, rowid | if tomb { TOMBSTONE } else { 0 }, values));
            } else {
                let (tomb, _, key) = decode_version_header(bytes)?;
                tail.push((key, rowid | if tomb { TOMBSTONE } else { 0 }, Vec::new()));
            }
            Ok(true)
        })?;
    let versions = tail.len() as u64;
    // Newest version per key wins: a stable sort keeps position order among equal keys.
    tail.sort_by(|a, b| a.0.cmp(&b.0));
    let mut newest: Vec<(Key, u64)> = Vec::with_capacity(tail.len());
    let mut newest_values: Vec<IndexValues> = Vec::new();
    for (k, p, values) in tail {
        match newest.last_mut() {
            Some(last) if last.0 == k => {
                last.1 = p;
                if indexed {
                    *newest_values.last_mut().expect("one per key") = values;
                }
            }
            _ => {
                newest.push((k, p));
                if indexed {
                    newest_values.push(values);
                }
            }
        }
    }
    Ok((newest, newest_values, versions))
}

/// The encoded values a row version puts into each secondary index (None: a NULL column, no
/// entry), in the order of the table's index definitions.
type IndexValues = Vec<Option<Vec<u8>>>;

/// Fills `t`'s secondary indexes at open: the checkpoint's form (less the entries of `stale`
/// versions) plus `delta`, the entries of the versions replay found newest. With no checkpoint
/// to start from (none yet, or its image refused) the replay read every version, and the delta
/// alone is the index. A form that is missing or refused is not used: every index is rebuilt
/// from the newest version of each key, a row read per key.
fn open_secondary(
    inner: &Inner,
    t: &Table,
    header: Option<&CkptHeader>,
    watermark: u64,
    stale: &HashSet<u64>,
    delta: Vec<(Key, u64, IndexValues)>,
    times: &mut OpenTimes,
) -> Result<()> {
    let def = t.def();
    let sets: Option<Vec<BTreeSet<Entry>>> = match header {
        Some(h) if watermark > 0 => {
            let loaded = match &h.secondary {
                None => Err("the checkpoint has no form of them".to_string()),
                Some(f) => secondary_form::load(
                    &form_path(inner.store.path(), t.id, h.generation),
                    f.len,
                    image_tag(t.id, h.generation, h.watermark, f.nonce),
                    &def.indexes,
                    stale,
                ),
            };
            match loaded {
                Ok(sets) => {
                    times.secondary_loaded += 1;
                    *t.ckpt_secondary.lock() = def.indexes.clone();
                    Some(sets)
                }
                Err(why) => {
                    tracing::warn!(table = %def.name, %why, "secondary index form refused; rebuilding the indexes from the rows");
                    times.secondary_refused += 1;
                    times.secondary_rebuilt += 1;
                    None
                }
            }
        }
        _ => {
            times.secondary_rebuilt += 1;
            Some(vec![BTreeSet::new(); def.indexes.len()])
        }
    };
    match sets {
        Some(sets) => {
            let mut sec = t.secondary.write();
            for (s, set) in sec.iter_mut().zip(sets) {
                s.entries = set;
            }
            for (k, p, values) in delta {
                for (s, v) in sec.iter_mut().zip(values) {
                    if let Some(v) = v {
                        s.entries.insert((v, k.clone(), p));
                    }
                }
            }
        }
        None => {
            // An index rebuilt from the rows while this reads it (a damaged image node,
            // `rebuild_from_rows`) holds deleted keys too, as tombstones.
            for (k, p) in t.pk.read().entries()? {
                if p & TOMBSTONE != 0 {
                    continue;
                }
                let v = inner.fetch(t.id, p)?;
                if let Some(row) = &v.row {
                    t.add_secondary_entries(row, &k, p);
                }
            }
        }
    }
    Ok(())
}

/// A table's index as its checkpoint gives it: sorted live entries to bulk-load, or an index
/// opened from its image.
enum Base {
    Sorted(Vec<(Key, u64)>),
    Index(KeyIndex),
}

impl Base {
    /// The checkpoint's entry for `k`.
    fn get(&self, k: &Key) -> Result<Option<u64>> {
        match self {
            Base::Sorted(e) => Ok(e.binary_search_by(|(x, _)| x.cmp(k)).ok().map(|i| e[i].1)),
            Base::Index(pk) => pk.get(k),
        }
    }
}

/// A replay of at least one change per this many bytes of the image reads the image into
/// memory rather than mapping it (`dense_replay`).
const DENSE_REPLAY_BYTES: u64 = 16 << 10;

/// Whether `changes` replayed onto an image of `image_len` bytes are dense enough to reach most
/// of its 4 KiB pages: then open reads the image into anonymous memory, checking it as it lands
/// (`KeyIndex::read_image`: one sequential read), instead of mapping it, checking it, and
/// taking a copy-on-write fault for each page the changes reach.
fn dense_replay(changes: usize, image_len: u64) -> bool {
    changes > 0 && (changes as u64).saturating_mul(DENSE_REPLAY_BYTES) >= image_len
}

/// Bulk-loads entries, leaving out tombstoned ones.
fn bulk(kind: IndexKind, merged: Vec<(Key, u64)>) -> KeyIndex {
    let live: Vec<(Key, u64)> = merged.into_iter().filter(|(_, p)| p & TOMBSTONE == 0).collect();
    KeyIndex::bulk_load(kind, live)
}

/// The sorted (key, rowid) chunks of a checkpoint written in that form.
fn read_chunks(
    inner: &Inner,
    def: &TableDef,
    generation: u64,
    count: u64,
    n: u32,
) -> Result<Vec<(Key, u64)>> {
    let mut entries: Vec<(Key, u64)> = Vec::with_capacity(count as usize);
    let prefix = idxsnap_key(def.id, generation, 0);
    let chunks = inner.store.scan_prefix(CF_IDXSNAP, &prefix[..12])?;
    if chunks.len() != n as usize {
        return Err(Error::Corrupt(format!(
            "index checkpoint of table {} has {} chunks, header says {}",
            def.name,
            chunks.len(),
            n
        )));
    }
    for (_, c) in chunks {
        decode_chunk(&c, &mut entries)?;
    }
    if entries.len() as u64 != count {
        return Err(Error::Corrupt(format!(
            "index checkpoint of table {} is short",
            def.name
        )));
    }
    Ok(entries)
}

/// The image tag of a table's checkpoint: the table, the generation, the watermark and the
/// checkpoint's random id. An image is used only if its tag equals the one its header implies.
fn image_tag(table: u32, generation: u64, watermark: u64, nonce: u64) -> [u64; 4] {
    [table as u64, generation, watermark, nonce]
}

/// Maps and checks the image a checkpoint header names: its header, directory and model nodes;
/// its data nodes too with [`ImageCheck::AtOpen`] (a pass that also maps the whole image in, so
/// reads after open do not fault), otherwise each on first use or in the background, with the
/// rows to rebuild the index from if one fails ([`rebuild_from_rows`]). With `dense` (a dense
/// replay to come: [`dense_replay`]) the image is read into memory and checked whole instead.
#[allow(clippy::too_many_arguments)]
fn open_image(
    inner: &Arc<Inner>,
    def: &TableDef,
    h: &CkptHeader,
    nonce: u64,
    len: u64,
    dense: bool,
    damaged: &Arc<std::sync::atomic::AtomicBool>,
    times: &mut OpenTimes,
) -> std::result::Result<KeyIndex, String> {
    if def.key_kind() != IndexKind::Alex {
        return Err("an image for a table whose index is not ALEX".into());
    }
    let path = image_path(inner.store.path(), def.id, h.generation);
    if dense {
        let t = Instant::now();
        let r = KeyIndex::read_image(&path);
        times.verify_last = t.elapsed();
        times.verify += times.verify_last;
        let (pk, tag) = r.map_err(|e| format!("{}: {e}", path.display()))?;
        if tag != image_tag(def.id, h.generation, h.watermark, nonce) {
            return Err(format!("{}: written for another checkpoint", path.display()));
        }
        times.copied += len;
        return Ok(pk);
    }
    let map = Mapping::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if map.len() as u64 != len {
        return Err(format!(
            "{}: {} bytes, the checkpoint says {len}",
            path.display(),
            map.len()
        ));
    }
    let checks = match inner.opts.image_check {
        ImageCheck::AtOpen => {
            map.populate();
            Checks::All
        }
        ImageCheck::Lazy | ImageCheck::OnTouchOnly => {
            Checks::Lazy(rebuild_from_rows(inner, def, damaged.clone()))
        }
    };
    let t = Instant::now();
    let r = KeyIndex::from_image(map, checks);
    times.verify_last = t.elapsed();
    times.verify += times.verify_last;
    let (pk, tag) = r.map_err(|e| format!("{}: {e}", path.display()))?;
    if tag != image_tag(def.id, h.generation, h.watermark, nonce) {
        return Err(format!("{}: written for another checkpoint", path.display()));
    }
    Ok(pk)
}

/// What an index opened lazily from its image is rebuilt from if a data node fails its check
/// after the open (`index::alex::lazy`): every stored version of the table, the newest per key,
/// tombstones kept (with the top bit, as the index holds them: a snapshot may still need to see
/// past one). Read through one RocksDB iterator, so from one consistent state, without taking
/// engine locks: it runs inside a read or write of the index, under its lock; commits whose rows
/// it did not see publish to the index after it is replaced, and the collector's removals of
/// tombstones from it are under the same lock (a tombstone it puts back is an entry no
/// snapshot needs, harmless). Logs the failure, counts it (`Stats::index_images_damaged`) and
/// has the table checkpointed soon, so that the next open maps a good image.
fn rebuild_from_rows(
    inner: &Arc<Inner>,
    def: &TableDef,
    damaged: Arc<std::sync::atomic::AtomicBool>,
) -> crate::index::alex::Rebuild<i64> {
    let weak = Arc::downgrade(inner);
    let (table, name) = (def.id, def.name.clone());
    Box::new(move || {
        let inner = weak.upgrade().ok_or("the database is closed")?;
        // Once per damaged image (this runs again after a failed read of the rows).
        if !damaged.swap(true, Ordering::AcqRel) {
            tracing::error!(table = %name, "index image: a data node failed its checksum after the open; rebuilding the index from the rows");
            inner.stats.lock().index_images_damaged += 1;
        }
        inner
            .versions_since_ckpt
            .store(inner.opts.checkpoint_every, Ordering::Relaxed);
        let mut all: Vec<(i64, u64)> = Vec::new();
        inner
            .store
            .for_each_row(table, 0, u64::MAX, |rowid, bytes| {
                let (tomb, _, key) = decode_version_header(bytes)?;
                if let Key::Int(k) = key {
                    all.push((k, rowid | if tomb { TOMBSTONE } else { 0 }));
                }
                Ok(true)
            })
            .map_err(|e| e.to_string())?;
        // Rowid order within a key survives the stable sort: the last is the newest.
        all.sort_by_key(|e| e.0);
        let mut newest: Vec<(i64, u64)> = Vec::with_capacity(all.len());
        for e in all {
            match newest.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => newest.push(e),
            }
        }
        tracing::info!(table = %name, keys = newest.len(), "index rebuilt from the rows");
        Ok(newest)
    })
}

/// Deletes image and secondary index files no table's checkpoint names (left by dropped tables, by checkpoints a
/// crash interrupted, or superseded). At open, and after each round of checkpoints.
pub(crate) fn remove_unused_images(inner: &Inner) {
    let wanted: HashSet<PathBuf> = inner
        .tables
        .read()
        .values()
        .flat_map(|t| {
            let g = t.ckpt_generation.load(Ordering::Acquire);
            [
                image_path(inner.store.path(), t.id, g),
                form_path(inner.store.path(), t.id, g),
            ]
        })
        .collect();
    if let Ok(dir) = std::fs::read_dir(image_dir(inner.store.path())) {
        for e in dir.flatten() {
            if !wanted.contains(&e.path()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
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

/// Writes a new checkpoint of `t`'s primary index at the current position, then its header
/// (fsynced), then drops the previous generation. An ALEX index is written as an image file
/// (serialized under the commit lock, written and fsynced outside it, renamed into place before
/// the header names it); a B-tree as every live (key, rowid) in sorted chunks. The secondary
/// indexes' form at the same position goes into a file written the same way as an image.
pub(crate) fn checkpoint_table(inner: &Inner, t: &Table) -> Result<()> {
    // Not on a store that failed a write: its header write may have failed with an unknown
    // outcome, so the header on disk may name the next generation already, and writing that
    // generation's image again would replace the image it names (refused at the next open).
    inner.store.check_poisoned()?;
    let old_gen = t.ckpt_generation.load(Ordering::Acquire);
    let generation = old_gen + 1;
    let nonce = rand::random::<u64>();
    // Collection is what removes secondary index entries: held off from before the watermark
    // is taken until the entries at it are copied (`secondary_form::snapshot`).
    let mut gc_hold = Some(inner.gc_run.lock());
    let (watermark, snapshot, indexes) = {
        let c = inner.commit.lock();
        let w = c.next_rowid - 1;
        // Under the commit lock, as index definitions change.
        let indexes = t.def().indexes.clone();
        if w == t.ckpt_watermark.load(Ordering::Acquire)
            && *t.ckpt_secondary.lock() == indexes
            && !t.image_damaged.load(Ordering::Acquire)
        {
            return Ok(());
        }
        let pk = t.pk.read();
        let snapshot = match pk.to_image(image_tag(t.id, generation, w, nonce))? {
            Some(image) => Snapshot::Image(image),
            None => Snapshot::Sorted(
                pk.entries()?
                    .into_iter()
                    .filter(|(_, p)| p & TOMBSTONE == 0)
                    .collect(),
            ),
        };
        (w, snapshot, indexes)
    };
    if indexes.is_empty() {
        gc_hold = None;
    }
    let secondary = if indexes.is_empty() {
        None
    } else {
        let tag = image_tag(t.id, generation, watermark, nonce);
        Some(secondary_form::snapshot(inner, t, watermark, tag, &indexes)?)
    };
    drop(gc_hold);
    if t.is_dropped() {
        return Ok(());
    }
    let rocks = inner.store.db()?;
    let cf = rocks.cf(CF_IDXSNAP);
    let mut batch = WriteBatch::default();
    // Leftovers of an earlier attempt at this generation that crashed before its header.
    batch.delete_range_cf(
        cf,
        idxsnap_key(t.id, generation, 0),
        idxsnap_key(t.id, generation + 1, 0),
    );
    let form = match snapshot {
        Snapshot::Image(image) => {
            write_file_durably(&image_path(inner.store.path(), t.id, generation), &image)?;
            CkptForm::Image {
                nonce,
                len: image.len() as u64,
            }
        }
        Snapshot::Sorted(entries) => write_chunks(inner, t, generation, &entries, &mut batch)?,
    };
    let (secondary, in_form) = match secondary {
        Some((bytes, in_form)) => {
            write_file_durably(&form_path(inner.store.path(), t.id, generation), &bytes)?;
            let f = SecForm {
                nonce,
                len: bytes.len() as u64,
            };
            (Some(f), in_form)
        }
        None => (None, Vec::new()),
    };
    let header = CkptHeader {
        generation,
        watermark,
        form,
        secondary,
    };
    batch.put_cf(rocks.cf(CF_META), format!("ckpt/{}", t.id), header.encode());
    inner.store.write_sync(batch)?;
    let mut del = WriteBatch::default();
    del.delete_range_cf(
        cf,
        idxsnap_key(t.id, old_gen, 0),
        idxsnap_key(t.id, generation, 0),
    );
    inner.store.write_nosync(del)?;
    // The previous image (if any); a process that mapped it keeps reading it until it unmaps.
    let _ = std::fs::remove_file(image_path(inner.store.path(), t.id, old_gen));
    let _ = std::fs::remove_file(form_path(inner.store.path(), t.id, old_gen));
    t.ckpt_generation.store(generation, Ordering::Release);
    t.ckpt_watermark.store(watermark, Ordering::Release);
    *t.ckpt_secondary.lock() = in_form;
    t.image_damaged.store(false, Ordering::Release);
    Ok(())
}

/// What a checkpoint writes, taken under the commit lock.
enum Snapshot {
    Image(Vec<u8>),
    Sorted(Vec<(Key, u64)>),
}

/// Writes `bytes` to `path` so that after a crash the file is either absent or whole: a
/// temporary name, fsync, rename, fsync of the directory.
fn write_file_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().expect("an image path has a directory");
    std::fs::create_dir_all(dir)?;
    // The temporary name keeps the final one's extension: an image and a form of one
    // generation differ only by it.
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Adds the sorted chunks of a B-tree checkpoint to `batch` (writing it out when it grows
/// large) and returns their form for the header.
fn write_chunks(
    inner: &Inner,
    t: &Table,
    generation: u64,
    entries: &[(Key, u64)],
    batch: &mut WriteBatch,
) -> Result<CkptForm> {
    let rocks = inner.store.db()?;
    let cf = rocks.cf(CF_IDXSNAP);
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
    for (k, r) in entries {
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
            flush(&mut chunk, batch, &mut chunks)?;
        }
    }
    if !chunk.is_empty() {
        flush(&mut chunk, batch, &mut chunks)?;
    }
    Ok(CkptForm::Chunks {
        count: entries.len() as u64,
        chunks,
    })
}
