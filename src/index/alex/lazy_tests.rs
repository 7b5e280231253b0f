//! Tests of the image's per-chunk checksums (`image.rs`) and of lookups that check only the
//! chunks they read (`lazy.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::image::{chunks, Checks, ImageError, CHUNK_SLOTS};
use super::lazy::Rebuild;
use super::*;

/// An image of 400,000 evenly spaced keys, the payload of one occupied slot changed in a
/// middle chunk of its largest data node.
struct Damaged {
    a: Alex<i64>,
    rows: Vec<(i64, u64)>,
    /// The largest data node, its chunk count, the damaged chunk.
    leaf: u32,
    chunks: usize,
    bad: usize,
    /// The key whose payload was changed, and (slot, key, payload) of every key of the node.
    key: i64,
    slots: Vec<(usize, i64, u64)>,
    rebuilds: Arc<AtomicUsize>,
}

fn damaged(dir: &std::path::Path) -> Damaged {
    let rows: Vec<(i64, u64)> = (0..400_000i64).map(|k| (k * 7, k as u64)).collect();
    let t = Alex::bulk_load(&rows).unwrap();
    let mut b = t.to_image([0; 4], |_| true).unwrap();
    let (leaf, d) = t
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(id, n)| match n {
            Node::Data(d) => Some((id as u32, d)),
            _ => None,
        })
        .max_by_key(|(_, d)| d.slots.len())
        .unwrap();
    let n_chunks = chunks(d.slots.len());
    assert!(n_chunks >= 4, "a node of {} slots", d.slots.len());
    let bad = n_chunks / 2;
    let s = d.next_set(bad * CHUNK_SLOTS + CHUNK_SLOTS / 2).unwrap();
    assert_eq!(s / CHUNK_SLOTS, bad);
    let key = d.slots[s].key;
    let slots: Vec<(usize, i64, u64)> = (0..d.slots.len())
        .filter(|&i| d.occupied(i))
        .map(|i| (i, d.slots[i].key, d.slots[i].val))
        .collect();
    // The payload of slot `s`, by the directory (record: slots offset at 8).
    let rec = 128 + 112 * leaf as usize;
    let off = u64::from_le_bytes(b[rec + 8..rec + 16].try_into().unwrap()) as usize;
    b[off + 16 * s + 8] ^= 0x10;
    drop(t);
    let path = dir.join("chunk.alex");
    std::fs::write(&path, &b).unwrap();
    let map = crate::index::mapped::Mapping::open(&path).unwrap();
    let rebuilds = Arc::new(AtomicUsize::new(0));
    let (c, source) = (rebuilds.clone(), rows.clone());
    let rebuild: Rebuild<i64> = Box::new(move || {
        c.fetch_add(1, Ordering::SeqCst);
        Ok(source.clone())
    });
    let (a, _) = Alex::<i64>::from_image(map, Checks::Lazy(rebuild)).unwrap();
    Damaged {
        a,
        rows,
        leaf,
        chunks: n_chunks,
        bad,
        key,
        slots,
        rebuilds,
    }
}

/// Lookups of keys in the clean chunks of a node with a damaged chunk answer from the image,
/// each checking only the chunk it reads (the node stays unchecked as a whole, the damaged
/// chunk unread, nothing rebuilt); the first lookup reading the damaged chunk finds it and
/// answers right (the changed payload never comes out), from the index rebuilt from the
/// source.
#[test]
fn a_lookup_checks_only_the_chunks_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let Damaged {
        a,
        rows,
        leaf,
        chunks,
        bad,
        key,
        slots,
        rebuilds,
    } = damaged(dir.path());
    let payload = |k: i64| rows.binary_search_by_key(&k, |e| e.0).ok().map(|i| rows[i].1);
    let l = a.lazy.as_ref().unwrap();
    // Keys well inside the first and the last chunk (away from the damaged one).
    let far = |&&(s, _, _): &&(usize, i64, u64)| {
        let c = s / CHUNK_SLOTS;
        (c == 0 || c == chunks - 1) && s % CHUNK_SLOTS > 64 && s % CHUNK_SLOTS < CHUNK_SLOTS - 64
    };
    let mut asked = 0;
    for &(_, k, p) in slots.iter().filter(far).step_by(37) {
        assert_eq!(a.read(|a| a.get(k)), Ok(Some(p)));
        asked += 1;
    }
    assert!(asked > 20);
    // An absent key between two of them too.
    let (_, k0, _) = *slots.iter().find(far).unwrap();
    assert_eq!(a.read(|a| a.get(k0 + 1)), Ok(None));
    assert_eq!(rebuilds.load(Ordering::SeqCst), 0);
    assert!(!l.damaged());
    assert_eq!(l.settled_node(leaf), None, "the node is not checked whole");
    let first = l.want[leaf as usize].unwrap();
    let checked: Vec<usize> = (0..chunks)
        .filter(|&c| l.chunk_ok[first + c].get().is_some())
        .collect();
    assert_eq!(checked, vec![0, chunks - 1]);
    // The damaged chunk: caught by the lookup that reads it.
    assert_eq!(a.read(|a| a.get(key)), Ok(payload(key)));
    assert_eq!(l.chunk_ok[first + bad].get(), Some(&false));
    assert_eq!(rebuilds.load(Ordering::SeqCst), 1);
    // Every key, right, from the rebuilt index (no second rebuild).
    for &(k, p) in rows.iter().step_by(101) {
        assert_eq!(a.read(|a| a.get(k)), Ok(Some(p)));
    }
    assert_eq!(rebuilds.load(Ordering::SeqCst), 1);
}

/// A lookup whose search crosses from its predicted chunk into the next checks that one too:
/// every key of the node, looked up in slot order, answers right and never from the damaged
/// chunk; keys next to a chunk boundary included.
#[test]
fn lookups_across_chunk_boundaries_answer_right() {
    let dir = tempfile::tempdir().unwrap();
    let d = damaged(dir.path());
    let l = d.a.lazy.as_ref().unwrap();
    let first = l.want[d.leaf as usize].unwrap();
    for &(s, k, p) in &d.slots {
        // The damaged key's too: its payload as written, not as changed in the image.
        assert_eq!(d.a.read(|a| a.get(k)), Ok(Some(p)), "slot {s}");
        // Before the damaged chunk is reached, the chunk of every answer is checked.
        if d.rebuilds.load(Ordering::SeqCst) == 0 {
            assert_eq!(l.chunk_ok[first + s / CHUNK_SLOTS].get(), Some(&true), "slot {s}");
        }
        // Absent keys between present ones.
        assert_eq!(d.a.read(|a| a.get(k + 3)), Ok(None));
    }
    assert_eq!(d.rebuilds.load(Ordering::SeqCst), 1);
}

/// With no lookup at all, the background pass checks every chunk of every node, finds the
/// damaged one, and the index settles onto the one rebuilt from the source.
#[test]
fn the_background_pass_checks_every_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let Damaged {
        mut a,
        rows,
        rebuilds,
        ..
    } = damaged(dir.path());
    while a.check_step() {}
    assert!(a.lazy_done());
    assert!(a.lazy.as_ref().unwrap().damaged());
    assert_eq!(rebuilds.load(Ordering::SeqCst), 0);
    a.settle();
    assert!(a.lazy.is_none() && a.image.is_none());
    assert_eq!(rebuilds.load(Ordering::SeqCst), 1);
    assert_eq!(a.iter().collect::<Vec<_>>(), rows);
    a.check_invariants().unwrap();
}

/// An image of version 1 (one checksum per node, no chunk table), with a valid header
/// checksum, is refused as another format, whatever checks are asked for.
#[test]
fn an_image_of_the_previous_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(i64, u64)> = (0..50_000i64).map(|k| (k * 3, k as u64)).collect();
    let mut b = Alex::bulk_load(&rows)
        .unwrap()
        .to_image([0; 4], |_| true)
        .unwrap();
    let path = dir.path().join("v.alex");
    let map = |b: &[u8]| {
        std::fs::write(&path, b).unwrap();
        crate::index::mapped::Mapping::open(&path).unwrap()
    };
    assert!(Alex::<i64>::from_image(map(&b), Checks::None).is_ok());
    b[8..12].copy_from_slice(&1u32.to_le_bytes());
    let h = xxhash_rust::xxh3::xxh3_64(&b[..120]);
    b[120..128].copy_from_slice(&h.to_le_bytes());
    for checks in [Checks::None, Checks::All] {
        match Alex::<i64>::from_image(map(&b), checks) {
            Err(ImageError::Invalid(_)) => {}
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}

/// A damaged chunk table (which says what every chunk should hash to) is refused at open.
#[test]
fn a_damaged_chunk_table_is_refused_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(i64, u64)> = (0..50_000i64).map(|k| (k * 3, k as u64)).collect();
    let t = Alex::bulk_load(&rows).unwrap();
    let mut b = t.to_image([0; 4], |_| true).unwrap();
    let table = 128 + 112 * t.nodes.len();
    b[table + 3] ^= 1;
    let path = dir.path().join("t.alex");
    std::fs::write(&path, &b).unwrap();
    let map = crate::index::mapped::Mapping::open(&path).unwrap();
    match Alex::<i64>::from_image(map, Checks::None) {
        Err(ImageError::Checksum(what)) => assert_eq!(what, "the chunk table"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}
