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
