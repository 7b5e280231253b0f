//! Unit tests of the internals; the property tests against BTreeMap are in tests/alex_props.rs.

use super::*;

#[test]
fn empty_tree() {
    let t: Alex<u64> = Alex::new();
    assert_eq!(t.len(), 0);
    assert_eq!(t.get(5), None);
    assert_eq!(t.iter().count(), 0);
    assert_eq!(t.min(), None);
    t.check_invariants().unwrap();
}

#[test]
fn sequential_inserts_grow_the_root() {
    let mut t: Alex<u64> = Alex::new();
    for i in 0..200_000u64 {
        t.insert(i * 3, i).unwrap();
    }
    t.check_invariants().unwrap();
    for i in 0..200_000u64 {
        assert_eq!(t.get(i * 3), Some(i));
        assert_eq!(t.get(i * 3 + 1), None);
    }
    let s = t.stats();
    assert!(s.max_depth <= 4, "{s:?}");
}

#[test]
fn bulk_load_then_out_of_domain_both_sides() {
    // 1M pseudo-random keys in [0, 2^40): more than one data node holds, so the root is a
    // model node.
    let mut x = 1u64;
    let mut keys: Vec<i64> = (0..1_000_000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 24) as i64
        })
        .collect();
    keys.sort();
    keys.dedup();
    let v: Vec<(i64, u64)> = keys.iter().map(|&k| (k, k as u64)).collect();
    let n0 = v.len();
    let mut t = Alex::bulk_load(&v).unwrap();
    t.check_invariants().unwrap();
    assert!(t.stats().model_nodes > 0, "{:?}", t.stats());
    for i in 1..50_000i64 {
        t.insert((1i64 << 40) + i * 7, 1).unwrap();
        t.insert(-i * 7, 2).unwrap();
    }
    t.check_invariants().unwrap();
    assert!(t.stats().counters.root_expansions > 0, "{:?}", t.stats());
    assert_eq!(t.len(), n0 + 2 * 49_999);
}

#[test]
fn max_key_is_a_key() {
    let mut t: Alex<u64> = Alex::new();
    t.insert(u64::MAX, 1).unwrap();
    t.insert(0, 2).unwrap();
    assert_eq!(t.get(u64::MAX), Some(1));
    assert_eq!(t.insert(u64::MAX, 3), Err(AlexError::DuplicateKey));
    assert_eq!(t.remove(u64::MAX), Some(1));
    assert_eq!(t.get(u64::MAX), None);
    t.check_invariants().unwrap();
}

#[test]
fn f64_keys_reject_nan_and_accept_infinities() {
    let mut t: Alex<f64> = Alex::new();
    assert_eq!(t.insert(f64::NAN, 1), Err(AlexError::InvalidKey));
    for (i, k) in [f64::INFINITY, f64::NEG_INFINITY, 0.5, -3.0, f64::MAX, f64::MIN]
        .iter()
        .enumerate()
    {
        t.insert(*k, i as u64).unwrap();
    }
    for i in 0..1000 {
        t.insert(i as f64 * 0.25 + 1.0, i).unwrap();
    }
    t.check_invariants().unwrap();
    assert_eq!(t.get(f64::INFINITY), Some(0));
    assert_eq!(t.min().unwrap().0, f64::NEG_INFINITY);
    assert_eq!(t.max().unwrap().0, f64::INFINITY);
    assert_eq!(
        Alex::bulk_load(&[(1.0, 1), (f64::NAN, 2)]).unwrap_err(),
        AlexError::InvalidKey
    );
    assert_eq!(
        Alex::bulk_load(&[(1.0, 1), (1.0, 2)]).unwrap_err(),
        AlexError::NotSorted
    );
}

#[test]
fn is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Alex<u64>>();
    check::<Alex<i64>>();
    check::<Alex<f64>>();
}

#[test]
fn sliding_window_of_appends_and_removals_of_the_oldest() {
    // A queue: append the newest key, remove the oldest, at a constant size. Nodes never
    // reach the density bound, so they are laid out again at the appending edge (inserts) and
    // when the removed keys' run of gaps at the front grows (removals); the contents and the
    // slot invariants must hold throughout.
    for (window, total) in [(20_000u64, 200_000u64), (300, 50_000)] {
        let mut t: Alex<u64> = Alex::new();
        for k in 0..window {
            t.insert(k * 7, k).unwrap();
        }
        for k in window..total {
            t.insert(k * 7, k).unwrap();
            assert_eq!(t.remove((k - window) * 7), Some(k - window));
            if k % 9_973 == 0 {
                t.check_invariants().unwrap();
            }
        }
        t.check_invariants().unwrap();
        assert_eq!(t.len(), window as usize);
        let got: Vec<(u64, u64)> = t.iter().collect();
        let want: Vec<(u64, u64)> = (total - window..total).map(|k| (k * 7, k)).collect();
        assert_eq!(got, want);
        assert_eq!(t.get((total - window - 1) * 7), None);
        assert_eq!(t.get((total - window) * 7 + 1), None);
        // And the reverse: prepend the smallest key, remove the largest.
        let mut t: Alex<u64> = Alex::new();
        let top = total * 7;
        for k in 0..window {
            t.insert(top - k * 7, k).unwrap();
        }
        for k in window..total {
            t.insert(top - k * 7, k).unwrap();
            assert_eq!(t.remove(top - (k - window) * 7), Some(k - window));
        }
        t.check_invariants().unwrap();
        assert_eq!(t.len(), window as usize);
        assert_eq!(t.min(), Some((top - (total - 1) * 7, total - 1)));
    }
}

/// Writes `t` as an image to a file in `dir` and opens it again, mapped.
fn through_image(t: &Alex<i64>, dir: &std::path::Path, keep: impl Fn(u64) -> bool) -> Alex<i64> {
    let path = dir.join("t.alex");
    std::fs::write(&path, t.to_image([1, 2, 3, 4], keep).unwrap()).unwrap();
    let map = crate::index::mapped::Mapping::open(&path).unwrap();
    let (back, tag) = Alex::from_image(map, Checks::All).unwrap();
    assert_eq!(tag, [1, 2, 3, 4]);
    back
}

#[test]
fn an_image_opens_to_the_same_index_and_takes_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let mut x = 7u64;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 1) as i64
    };
    let mut keys: Vec<i64> = (0..300_000).map(|_| next()).collect();
    keys.sort();
    keys.dedup();
    let v: Vec<(i64, u64)> = keys.iter().map(|&k| (k, k as u64 >> 3)).collect();
    let mut t = Alex::bulk_load(&v).unwrap();
    // Some structure changes before the image too (free ids, expanded nodes).
    for _ in 0..50_000 {
        let k = next();
        t.upsert(k, k as u64 >> 3);
    }
    let mut model: std::collections::BTreeMap<i64, u64> = t.iter().collect();
    let mut m = through_image(&t, dir.path(), |_| true);
    m.check_invariants().unwrap();
    assert!(m.stats().mapped_bytes > 0);
    assert_eq!(
        m.stats().image_bytes,
        std::fs::metadata(dir.path().join("t.alex")).unwrap().len() as usize
    );
    assert!(m.iter().eq(model.iter().map(|(&k, &v)| (k, v))));
    // Inserts (expansions and splits move nodes to the heap), updates and removes in place.
    for i in 0..200_000 {
        let k = next();
        match i % 4 {
            0 | 1 => {
                m.upsert(k, 1);
                model.insert(k, 1);
            }
            2 => {
                let (&old, _) = model.range(k..).next().unwrap_or((&k, &0));
                assert_eq!(
                    m.update(old, 2),
                    model.get_mut(&old).map(|v| std::mem::replace(v, 2))
                );
            }
            _ => {
                let (&old, _) = model.range(k..).next().unwrap_or((&k, &0));
                assert_eq!(m.remove(old), model.remove(&old));
            }
        }
    }
    m.check_invariants().unwrap();
    assert!(m.iter().eq(model.iter().map(|(&k, &v)| (k, v))));
    assert!(m.iter().rev().eq(model.iter().rev().map(|(&k, &v)| (k, v))));
    // The image of an index that was itself opened from an image.
    let m2 = through_image(&m, dir.path(), |_| true);
    m2.check_invariants().unwrap();
    assert!(m2.iter().eq(model.iter().map(|(&k, &v)| (k, v))));
}

/// Promotion moves each 2 MiB of a mapped image into an anonymous huge page at the same
/// addresses: every change made before it (in copy-on-write pages) and after it stays, and the
/// index reads the same.
#[test]
fn promoting_an_image_to_huge_pages_keeps_every_entry_and_change() {
    use crate::index::mapped::{HugePage, CHUNK};
    let dir = tempfile::tempdir().unwrap();
    let v: Vec<(i64, u64)> = (0..600_000i64).map(|k| (k * 5, k as u64)).collect();
    let t = Alex::bulk_load(&v).unwrap();
    let mut m = through_image(&t, dir.path(), |_| true);
    let mut model: std::collections::BTreeMap<i64, u64> = v.iter().copied().collect();
    let map = m.image.clone().unwrap();
    let chunks = map.len() / CHUNK;
    assert!(chunks >= 3, "a test image of {} bytes", map.len());
    // Changes in place before promotion (copy-on-write pages of the file mapping).
    for k in (0..600_000i64).step_by(7) {
        m.update(k * 5, 9).unwrap();
        model.insert(k * 5, 9);
    }
    let mut n = 0;
    while map.promotion_pending() {
        assert!(map.promote(HugePage::new().unwrap()).unwrap());
        n += 1;
        // Between chunks the index reads and takes writes as before.
        assert_eq!(m.get(n * 35), model.get(&(n * 35)).copied());
        m.upsert(n * 35 + 1, 7);
        model.insert(n * 35 + 1, 7);
    }
    assert_eq!(n as usize, chunks);
    assert!(!map.promote(HugePage::new().unwrap()).unwrap());
    drop(map);
    for k in (3..600_000i64).step_by(11) {
        m.update(k * 5, 4).unwrap();
        model.insert(k * 5, 4);
    }
    m.check_invariants().unwrap();
    assert!(m.iter().eq(model.iter().map(|(&k, &v)| (k, v))));
}

#[test]
fn an_image_leaves_out_the_entries_the_filter_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let v: Vec<(i64, u64)> = (0..100_000i64).map(|k| (k * 13, k as u64)).collect();
    let t = Alex::bulk_load(&v).unwrap();
    let m = through_image(&t, dir.path(), |p| p % 3 != 0);
    m.check_invariants().unwrap();
    assert!(m.iter().eq(v.iter().copied().filter(|e| e.1 % 3 != 0)));
    assert_eq!(m.len(), v.iter().filter(|e| e.1 % 3 != 0).count());
}

#[test]
fn a_damaged_image_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let v: Vec<(i64, u64)> = (0..200_000i64).map(|k| (k * k, k as u64)).collect();
    let t = Alex::bulk_load(&v).unwrap();
    let good = t.to_image([0; 4], |_| true).unwrap();
    let path = dir.path().join("bad.alex");
    for at in [0, 20, 130, good.len() / 2] {
        let mut b = good.clone();
        b[at] ^= 0x10;
        std::fs::write(&path, &b).unwrap();
        let map = crate::index::mapped::Mapping::open(&path).unwrap();
        assert!(Alex::<i64>::from_image(map, Checks::All).is_err(), "byte {at}");
    }
    // Without the checksum pass a damaged array goes unnoticed: `Checks::All` is what catches it.
    let mut b = good.clone();
    let at = good.len() / 2;
    b[at] ^= 0x10;
    std::fs::write(&path, &b).unwrap();
    let map = crate::index::mapped::Mapping::open(&path).unwrap();
    assert!(Alex::<i64>::from_image(map, Checks::None).is_ok());
    // Another key type.
    std::fs::write(&path, &good).unwrap();
    let map = crate::index::mapped::Mapping::open(&path).unwrap();
    assert!(Alex::<i64>::from_image(map.clone(), Checks::All).is_ok());
    assert!(Alex::<u64>::from_image(map.clone(), Checks::All).is_err());
    assert!(Alex::<f64>::from_image(map, Checks::All).is_err());
}

/// An image with one data node damaged, opened with lazy checks: opening notices nothing;
/// reads through `Alex::read` answer right whether or not they touch the node (those that do
/// are answered from the index the rebuild function builds, called once); the other nodes'
/// answers come from the image until then; a write settles the index onto the rebuilt one.
#[test]
fn a_lazily_checked_image_never_answers_from_a_damaged_node() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // 16 dense runs far apart: model nodes over several data nodes.
    let mut v: Vec<(i64, u64)> = (0..300_000i64)
        .map(|k| (((k % 16) << 58) + (k / 16) * 7, k as u64))
        .collect();
    v.sort_unstable();
    let t = Alex::bulk_load(&v).unwrap();
    let mut b = t.to_image([0; 4], |_| true).unwrap();
    // The last data node in key order, the middle of its slots.
    let last = t.leaf_for(v[v.len() - 1].0);
    let first_of_last = t.data(last).min_key;
    assert!(first_of_last > v[0].0, "more than one data node");
    drop(t);
    // Find that node's slots in the image by the directory (record: slots offset at 8).
    let rec = 128 + 112 * last as usize;
    let off = u64::from_le_bytes(b[rec + 8..rec + 16].try_into().unwrap()) as usize;
    let cap = u64::from_le_bytes(b[rec + 16..rec + 24].try_into().unwrap()) as usize;
    b[off + cap * 16 / 2] ^= 0x10;
    let path = dir.path().join("lazy.alex");
    std::fs::write(&path, &b).unwrap();
    let map = crate::index::mapped::Mapping::open(&path).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let (c, source) = (calls.clone(), v.clone());
    let rebuild: Rebuild<i64> = Box::new(move || {
        c.fetch_add(1, Ordering::SeqCst);
        Ok(source.clone())
    });
    let (mut a, _) = Alex::<i64>::from_image(map, Checks::Lazy(rebuild)).unwrap();
    assert!(a.checks_pending());
    // Keys of the other nodes: from the image, nothing rebuilt.
    for &(k, p) in v.iter().filter(|e| e.0 < first_of_last).step_by(97) {
        assert_eq!(a.read(|a| a.get(k)), Ok(Some(p)));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // The damaged node's keys, and a scan across it: right, from the rebuilt index.
    for &(k, p) in v.iter().filter(|e| e.0 >= first_of_last).step_by(13) {
        assert_eq!(a.read(|a| a.get(k)), Ok(Some(p)));
    }
    let all: Vec<(i64, u64)> = a.read(|a| a.iter().collect()).unwrap();
    assert_eq!(all, v);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(a.lazy_done());
    // A write settles onto the rebuilt index (no second rebuild) and applies to it.
    a.upsert(1, 1);
    assert!(a.lazy.is_none() && a.image.is_none());
    assert_eq!(a.get(1), Some(1));
    assert_eq!(a.len(), v.len() + 1);
    a.check_invariants().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

/// An image of 300,000 keys in 16 dense runs far apart (model nodes over several data nodes)
/// with one byte changed in the slots of the last data node in key order, opened lazily with
/// a source that reads `rows` (and fails while `fail` is set). Returns the index, the first
/// key of the damaged node and the number of rebuilds so far.
#[allow(clippy::type_complexity)]
fn lazy_with_a_damaged_last_node(
    dir: &std::path::Path,
    rows: std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<i64, u64>>>,
    fail: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (Alex<i64>, i64, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let v: Vec<(i64, u64)> = rows.lock().unwrap().iter().map(|(&k, &p)| (k, p)).collect();
    let t = Alex::bulk_load(&v).unwrap();
    let mut b = t.to_image([0; 4], |_| true).unwrap();
    let last = t.leaf_for(v[v.len() - 1].0);
    let first_of_last = t.data(last).min_key;
    assert!(first_of_last > v[0].0, "more than one data node");
    let rec = 128 + 112 * last as usize;
    let off = u64::from_le_bytes(b[rec + 8..rec + 16].try_into().unwrap()) as usize;
    let cap = u64::from_le_bytes(b[rec + 16..rec + 24].try_into().unwrap()) as usize;
    b[off + cap * 16 / 2] ^= 0x10;
    let path = dir.join("lazy.alex");
    std::fs::write(&path, &b).unwrap();
    let map = crate::index::mapped::Mapping::open(&path).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let rebuild: Rebuild<i64> = Box::new(move || {
        c.fetch_add(1, Ordering::SeqCst);
        if fail.load(Ordering::SeqCst) {
            return Err("the source cannot be read".into());
        }
        Ok(rows.lock().unwrap().iter().map(|(&k, &p)| (k, p)).collect())
    });
    let (a, _) = Alex::<i64>::from_image(map, Checks::Lazy(rebuild)).unwrap();
    (a, first_of_last, calls)
}

fn clustered_rows() -> std::collections::BTreeMap<i64, u64> {
    (0..300_000i64)
        .map(|k| (((k % 16) << 58) + (k / 16) * 7, k as u64))
        .collect()
}

/// Writes on a lazily checked image check only the nodes they touch: writes (inserts that
/// expand and split, updates, removes) away from the damaged node leave the other nodes
/// unchecked and build nothing; a write into the damaged node is caught by that write, which
/// lands on the index rebuilt from the source (which holds every write stored before it).
#[test]
fn lazy_writes_check_only_what_they_touch() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let rows = Arc::new(Mutex::new(clustered_rows()));
    let (mut a, first_of_last, calls) =
        lazy_with_a_damaged_last_node(dir.path(), rows.clone(), Arc::new(AtomicBool::new(false)));
    let mut model = rows.lock().unwrap().clone();
    // Writes to the first run only (keys 0, 7, 14, ...: inserts fill its gaps, enough to make
    // its nodes expand or split; every 5th existing key updated, every 11th removed).
    for i in 0..20_000i64 {
        let (k, p) = (i * 7 + 3, 1_000_000 + i as u64);
        rows.lock().unwrap().insert(k, p);
        model.insert(k, p);
        assert_eq!(a.insert(k, p), Ok(()));
        let old = i * 7;
        if i % 5 == 0 && model.contains_key(&old) {
            rows.lock().unwrap().insert(old, p);
            assert_eq!(a.upsert(old, p), model.insert(old, p));
        }
        if i % 11 == 0 {
            rows.lock().unwrap().remove(&(old + 3));
            assert_eq!(a.remove(old + 3), model.remove(&(old + 3)));
        }
    }
    let c = a.stats().counters;
    assert!(c.expansions + c.splits_sideways + c.splits_downward > 0, "{c:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "nothing rebuilt");
    assert!(a.checks_pending(), "the untouched nodes are still unchecked");
    for (&k, &p) in model.range(..first_of_last).step_by(101) {
        assert_eq!(a.read(|a| a.get(k)), Ok(Some(p)));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // A write into the damaged node: caught by it, applied to the rebuilt index.
    let k = *model.range(first_of_last..).next().unwrap().0;
    rows.lock().unwrap().insert(k, 7);
    model.insert(k, 7);
    // The rebuilt index already holds the write's row (stored before the index write): the
    // upsert finds its own payload there.
    assert_eq!(a.upsert(k, 7), Some(7));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(a.lazy.is_none() && a.image.is_none());
    let all: Vec<(i64, u64)> = a.iter().collect();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
    a.check_invariants().unwrap();
}

/// The damaged node found with a source that cannot be read (a double fault): reads say
/// `Unavailable` and writes change nothing (no panic); each later call tries the rebuild again;
/// once the source reads, answers are right.
#[test]
fn a_damaged_node_with_an_unreadable_source_is_unavailable_then_retried() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let rows = Arc::new(Mutex::new(clustered_rows()));
    let fail = Arc::new(AtomicBool::new(true));
    let (mut a, first_of_last, calls) = lazy_with_a_damaged_last_node(dir.path(), rows.clone(), fail.clone());
    let model = rows.lock().unwrap().clone();
    let (&k, &p) = model.range(first_of_last..).next().unwrap();
    // The scan reads the whole damaged node; then any read is answered by the rebuild (a point
    // lookup reads only its chunk of the node, which may be a clean one).
    assert!(a.read(|a| a.iter().count()).is_err());
    assert!(a.read(|a| a.get(k)).is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 2, "each read tried the rebuild");
    // Writes: nothing applied, the index stays damaged (the source holds the write).
    rows.lock().unwrap().insert(5, 5);
    assert_eq!(a.insert(5, 5), Err(AlexError::Unavailable));
    assert_eq!(a.upsert(k, p), None);
    assert!(a.lazy.is_some());
    assert!(a.to_image([0; 4], |_| true).is_err());
    assert!(a.check_invariants().is_err());
    fail.store(false, Ordering::SeqCst);
    assert_eq!(a.read(|a| a.get(k)), Ok(Some(p)));
    assert_eq!(a.read(|a| a.get(5)), Ok(Some(5)));
    let n = a.read(|a| a.iter().count()).unwrap();
    assert_eq!(n, model.len() + 1);
    a.settle();
    assert!(a.lazy.is_none());
    a.check_invariants().unwrap();
}
