//! Property tests: ALEX against `std::collections::BTreeMap` for random operation sequences
//! over adversarial key distributions. Every case also checks the structure's invariants
//! (`check_invariants`: slot-array order and gap fills, leaf links in tree order, every key
//! routed to the node that holds it, len).

use std::collections::BTreeMap;
use std::ops::Bound;

use augur::index::alex::{Alex, AlexError};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy)]
enum Dist {
    Dense,
    Uniform,
    LogNormal,
    Clustered,
    Extremes,
    Mixed,
}

fn key_in(dist: Dist) -> BoxedStrategy<i64> {
    let extremes = prop_oneof![
        Just(i64::MIN),
        Just(i64::MIN + 1),
        Just(-1i64),
        Just(0i64),
        Just(1i64),
        Just(i64::MAX - 1),
        Just(i64::MAX),
        (0i64..200).prop_map(|d| i64::MIN + d),
        (0i64..200).prop_map(|d| i64::MAX - d),
        (-100i64..100),
    ];
    match dist {
        Dist::Dense => (0i64..3000).boxed(),
        Dist::Uniform => any::<i64>().boxed(),
        // exp of a uniform: keys from 1 to ~e^43, very skewed toward small values.
        Dist::LogNormal => (0.0f64..43.0).prop_map(|u| u.exp() as i64).boxed(),
        // Dense runs far apart (like OSM cell ids): 12 clusters 2^59 apart, 0..400 wide.
        Dist::Clustered => (0i64..12, 0i64..400)
            .prop_map(|(c, o)| i64::MIN / 2 + c * (1i64 << 59) + o)
            .boxed(),
        Dist::Extremes => extremes.boxed(),
        Dist::Mixed => prop_oneof![
            (0i64..3000),
            any::<i64>(),
            (0i64..12, 0i64..400).prop_map(|(c, o)| c * (1i64 << 58) + o),
            extremes,
        ]
        .boxed(),
    }
}

fn any_dist() -> impl Strategy<Value = Dist> {
    prop_oneof![
        Just(Dist::Dense),
        Just(Dist::Uniform),
        Just(Dist::LogNormal),
        Just(Dist::Clustered),
        Just(Dist::Extremes),
        Just(Dist::Mixed),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Insert(i64, u64),
    Upsert(i64, u64),
    Update(i64, u64),
    Remove(i64),
    /// Removes the n-th present key (so deletes hit whatever the distribution).
    RemoveNth(usize),
    Get(i64),
    Range(i64, i64, u8, bool),
    Lower(i64),
    Upper(i64),
}

fn ops(dist: Dist, max: usize) -> impl Strategy<Value = Vec<Op>> {
    let k = key_in(dist);
    let op = prop_oneof![
        6 => (k.clone(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        1 => (k.clone(), any::<u64>()).prop_map(|(k, v)| Op::Upsert(k, v)),
        1 => (k.clone(), any::<u64>()).prop_map(|(k, v)| Op::Update(k, v)),
        1 => k.clone().prop_map(Op::Remove),
        2 => any::<usize>().prop_map(Op::RemoveNth),
        2 => k.clone().prop_map(Op::Get),
        1 => (k.clone(), k.clone(), 0u8..9, any::<bool>()).prop_map(|(a, b, m, r)| Op::Range(a, b, m, r)),
        1 => k.clone().prop_map(Op::Lower),
        1 => k.prop_map(Op::Upper),
    ];
    prop::collection::vec(op, 0..max)
}

fn bounds(a: i64, b: i64, mode: u8) -> (Bound<i64>, Bound<i64>) {
    let s = match mode % 3 {
        0 => Bound::Included(a),
        1 => Bound::Excluded(a),
        _ => Bound::Unbounded,
    };
    let e = match mode / 3 {
        0 => Bound::Included(b),
        1 => Bound::Excluded(b),
        _ => Bound::Unbounded,
    };
    (s, e)
}

/// BTreeMap::range panics on inverted or empty-excluded ranges; ALEX yields nothing.
fn model_range(m: &BTreeMap<i64, u64>, s: Bound<i64>, e: Bound<i64>) -> Vec<(i64, u64)> {
    let lo = match s {
        Bound::Included(a) => Some((a, false)),
        Bound::Excluded(a) => Some((a, true)),
        Bound::Unbounded => None,
    };
    let hi = match e {
        Bound::Included(b) => Some((b, false)),
        Bound::Excluded(b) => Some((b, true)),
        Bound::Unbounded => None,
    };
    if let (Some((a, ax)), Some((b, bx))) = (lo, hi) {
        if a > b || (a == b && (ax || bx)) {
            return Vec::new();
        }
    }
    m.range((s, e)).map(|(k, v)| (*k, *v)).collect()
}

fn run(initial: Vec<i64>, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mut sorted = initial;
    sorted.sort_unstable();
    sorted.dedup();
    let pairs: Vec<(i64, u64)> = sorted.iter().map(|&k| (k, k as u64 ^ 0x5555)).collect();
    let mut t = Alex::bulk_load(&pairs).map_err(|e| TestCaseError::fail(format!("{e}")))?;
    let mut m: BTreeMap<i64, u64> = pairs.iter().copied().collect();
    prop_assert_eq!(t.check_invariants(), Ok(()));
    for (i, op) in ops.into_iter().enumerate() {
        match op {
            Op::Insert(k, v) => {
                let exp = match m.entry(k) {
                    std::collections::btree_map::Entry::Occupied(_) => Err(AlexError::DuplicateKey),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(v);
                        Ok(())
                    }
                };
                prop_assert_eq!(t.insert(k, v), exp, "insert {}", k);
            }
            Op::Upsert(k, v) => prop_assert_eq!(t.upsert(k, v), m.insert(k, v)),
            Op::Update(k, v) => {
                let exp = m.get_mut(&k).map(|x| std::mem::replace(x, v));
                prop_assert_eq!(t.update(k, v), exp);
            }
            Op::Remove(k) => prop_assert_eq!(t.remove(k), m.remove(&k)),
            Op::RemoveNth(n) => {
                if !m.is_empty() {
                    let k = *m.keys().nth(n % m.len()).unwrap();
                    prop_assert_eq!(t.remove(k), m.remove(&k));
                    prop_assert_eq!(t.get(k), None);
                }
            }
            Op::Get(k) => prop_assert_eq!(t.get(k), m.get(&k).copied()),
            Op::Range(a, b, mode, rev) => {
                let (s, e) = bounds(a, b, mode);
                let mut exp = model_range(&m, s, e);
                let got: Vec<(i64, u64)> = if rev {
                    exp.reverse();
                    t.range((s, e)).rev().collect()
                } else {
                    t.range((s, e)).collect()
                };
                prop_assert_eq!(got, exp);
                // Alternating ends meet in the middle without losing or repeating anything.
                let mut it = t.range((s, e));
                let mut n = 0;
                loop {
                    let x = if n % 2 == 0 { it.next() } else { it.next_back() };
                    if x.is_none() {
                        break;
                    }
                    n += 1;
                }
                prop_assert_eq!(n, model_range(&m, s, e).len());
                // Batches from the front (`front_batch`, as a range scan takes them) of a size
                // the case picks, alternating with `next_back`: every entry once, in order.
                let size = 1 + (a.unsigned_abs() % 7) as usize;
                let mut it = t.range((s, e));
                let (mut front, mut back) = (Vec::new(), Vec::new());
                loop {
                    let before = front.len();
                    let n = it.front_batch(size, |k, v| front.push((k, v)));
                    prop_assert_eq!(n, front.len() - before);
                    match it.next_back() {
                        Some(x) => back.push(x),
                        None => break,
                    }
                }
                prop_assert_eq!(it.front_batch(size, |_, _| ()), 0);
                front.extend(back.into_iter().rev());
                prop_assert_eq!(front, model_range(&m, s, e));
            }
            Op::Lower(k) => prop_assert_eq!(t.lower_bound(k), m.range(k..).next().map(|(a, b)| (*a, *b))),
            Op::Upper(k) => prop_assert_eq!(
                t.upper_bound(k),
                m.range((Bound::Excluded(k), Bound::Unbounded))
                    .next()
                    .map(|(a, b)| (*a, *b))
            ),
        }
        prop_assert_eq!(t.len(), m.len());
        if i % 97 == 0 {
            prop_assert_eq!(t.check_invariants(), Ok(()));
        }
    }
    prop_assert_eq!(t.check_invariants(), Ok(()));
    let all: Vec<(i64, u64)> = t.iter().collect();
    let exp: Vec<(i64, u64)> = m.iter().map(|(k, v)| (*k, *v)).collect();
    prop_assert_eq!(&all, &exp);
    let mut rev: Vec<(i64, u64)> = t.iter().rev().collect();
    rev.reverse();
    prop_assert_eq!(&rev, &exp);
    prop_assert_eq!(t.min(), exp.first().copied());
    prop_assert_eq!(t.max(), exp.last().copied());
    prop_assert_eq!(t.is_empty(), exp.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Random operations from an empty index, one distribution per case.
    #[test]
    fn ops_from_empty(dist in any_dist().prop_flat_map(|d| (Just(d), ops(d, 800)))) {
        run(Vec::new(), dist.1)?;
    }

    /// Bulk load (up to 3000 keys) then random operations.
    #[test]
    fn ops_after_bulk_load(
        (init, ops) in any_dist().prop_flat_map(|d| (prop::collection::vec(key_in(d), 0..3000), ops(d, 600)))
    ) {
        run(init, ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Sequential and reverse-sequential inserts (the out-of-domain path: root expansion), on an
    /// empty or bulk-loaded index, with any stride, then half deleted and re-inserted.
    #[test]
    fn sequential_and_reverse(
        start in prop_oneof![Just(0i64), Just(i64::MIN), Just(i64::MAX - 200_000_000), any::<i32>().prop_map(i64::from)],
        step in prop_oneof![Just(1i64), 1i64..1000],
        n in 1usize..30_000,
        reverse in any::<bool>(),
        preload in 0usize..3000,
    ) {
        let keys: Vec<i64> = (0..n as i64).filter_map(|i| start.checked_add(i.checked_mul(step)?)).collect();
        let (pre, rest) = keys.split_at(preload.min(keys.len()));
        let (pre, rest): (Vec<i64>, Vec<i64>) = if reverse {
            // Preload the top, then insert downward.
            let (lo, hi) = keys.split_at(keys.len() - pre.len());
            (hi.to_vec(), lo.iter().rev().copied().collect())
        } else {
            (pre.to_vec(), rest.to_vec())
        };
        let pairs: Vec<(i64, u64)> = pre.iter().map(|&k| (k, k as u64)).collect();
        let mut t = Alex::bulk_load(&pairs).unwrap();
        for &k in &rest {
            prop_assert_eq!(t.insert(k, k as u64), Ok(()));
        }
        prop_assert_eq!(t.check_invariants(), Ok(()));
        prop_assert_eq!(t.len(), keys.len());
        let got: Vec<i64> = t.iter().map(|e| e.0).collect();
        prop_assert_eq!(&got, &keys);
        // Out-of-domain keys must not degrade the tree into a deep chain.
        prop_assert!(t.stats().max_depth <= 6, "{:?}", t.stats());
        for (i, &k) in keys.iter().enumerate() {
            if i % 2 == 0 {
                prop_assert_eq!(t.remove(k), Some(k as u64));
            }
        }
        prop_assert_eq!(t.check_invariants(), Ok(()));
        for (i, &k) in keys.iter().enumerate() {
            prop_assert_eq!(t.get(k), if i % 2 == 0 { None } else { Some(k as u64) });
            if i % 2 == 0 {
                prop_assert_eq!(t.insert(k, 7), Ok(()));
            }
        }
        prop_assert_eq!(t.check_invariants(), Ok(()));
        prop_assert_eq!(t.len(), keys.len());
    }

    /// Many deletes (down to empty) followed by re-inserts, on a larger random set.
    #[test]
    fn delete_most_then_reinsert(
        keys in prop::collection::vec(any::<i64>(), 1..20_000),
        keep_every in 1usize..50,
        seed in any::<u64>(),
    ) {
        let mut m = BTreeMap::new();
        let mut t = Alex::new();
        for &k in &keys {
            prop_assert_eq!(t.insert(k, seed).is_ok(), m.insert(k, seed).is_none());
        }
        let present: Vec<i64> = m.keys().copied().collect();
        for (i, k) in present.iter().enumerate() {
            if i % keep_every != 0 || keep_every == 1 {
                prop_assert_eq!(t.remove(*k), m.remove(k));
            }
        }
        prop_assert_eq!(t.check_invariants(), Ok(()));
        prop_assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, *v))));
        for k in present.iter().rev() {
            prop_assert_eq!(t.upsert(*k, 1), m.insert(*k, 1));
        }
        prop_assert_eq!(t.check_invariants(), Ok(()));
        prop_assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, *v))));
    }

    /// u64 keys including the extremes.
    #[test]
    fn u64_keys(keys in prop::collection::vec(prop_oneof![any::<u64>(), Just(u64::MAX), Just(0u64), (0u64..500), (0u64..500).prop_map(|d| u64::MAX - d)], 0..5000)) {
        let mut m = BTreeMap::new();
        let mut t: Alex<u64> = Alex::new();
        for (i, &k) in keys.iter().enumerate() {
            if i % 5 == 4 {
                prop_assert_eq!(t.remove(k), m.remove(&k));
            } else {
                prop_assert_eq!(t.insert(k, i as u64).is_ok(), m.insert(k, i as u64).is_none() || { m.insert(k, t.get(k).unwrap()); false });
            }
        }
        prop_assert_eq!(t.check_invariants(), Ok(()));
        prop_assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, *v))));
        prop_assert!(t.iter().rev().eq(m.iter().rev().map(|(k, v)| (*k, *v))));
        let mid = keys.first().copied().unwrap_or(0);
        prop_assert!(t.range(mid..).eq(m.range(mid..).map(|(k, v)| (*k, *v))));
        prop_assert!(t.range(..=mid).rev().eq(m.range(..=mid).rev().map(|(k, v)| (*k, *v))));
    }

    /// f64 keys (total order by bits of non-NaN values; -0.0 is normalized to 0.0 in the model
    /// because ALEX treats them as one key).
    #[test]
    fn f64_keys(keys in prop::collection::vec(prop_oneof![
        any::<f64>(), (-1e6f64..1e6), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(f64::NAN), Just(-0.0f64), Just(0.0f64),
    ], 0..3000)) {
        let norm = |x: f64| if x == 0.0 { 0.0 } else { x };
        let ord = |x: f64| { let b = norm(x).to_bits() as i64; b ^ (((b >> 63) as u64) >> 1) as i64 };
        let mut m: BTreeMap<i64, (f64, u64)> = BTreeMap::new();
        let mut t: Alex<f64> = Alex::new();
        for (i, &k) in keys.iter().enumerate() {
            if k.is_nan() {
                prop_assert_eq!(t.insert(k, 1), Err(AlexError::InvalidKey));
                prop_assert_eq!(t.get(k), None);
                continue;
            }
            if i % 4 == 3 {
                prop_assert_eq!(t.remove(k), m.remove(&ord(k)).map(|e| e.1));
            } else {
                let fresh = !m.contains_key(&ord(k));
                prop_assert_eq!(t.insert(k, i as u64).is_ok(), fresh);
                if fresh {
                    m.insert(ord(k), (k, i as u64));
                }
            }
        }
        prop_assert_eq!(t.check_invariants(), Ok(()));
        let got: Vec<(i64, u64)> = t.iter().map(|(k, v)| (ord(k), v)).collect();
        let exp: Vec<(i64, u64)> = m.iter().map(|(k, v)| (*k, v.1)).collect();
        prop_assert_eq!(got, exp);
        for (_, (k, v)) in m.iter() {
            prop_assert_eq!(t.get(*k), Some(*v));
        }
    }
}

/// Bulk load rejects unsorted, duplicate and NaN input.
#[test]
fn bulk_load_validation() {
    assert_eq!(
        Alex::<i64>::bulk_load(&[(2, 0), (1, 0)]).unwrap_err(),
        AlexError::NotSorted
    );
    assert_eq!(
        Alex::<i64>::bulk_load(&[(1, 0), (1, 0)]).unwrap_err(),
        AlexError::NotSorted
    );
    assert_eq!(
        Alex::<f64>::bulk_load(&[(f64::NAN, 0)]).unwrap_err(),
        AlexError::InvalidKey
    );
    let t = Alex::<i64>::bulk_load(&[]).unwrap();
    assert!(t.is_empty());
}

/// The 100k-key deterministic mixes of the adversarial distributions (bigger than proptest
/// cases): every key found, absent keys absent, order preserved.
#[test]
fn large_adversarial_mixes() {
    let mut x = 0x9E3779B97F4A7C15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let gens: Vec<Box<dyn Fn(u64) -> i64>> = vec![
        Box::new(|r| r as i64),
        Box::new(|r| ((r % 4000) as f64 / 100.0).exp() as i64),
        Box::new(|r| (((r >> 40) % 16) as i64) * (1i64 << 59) + (r % 100_000) as i64 - (1i64 << 62)),
        Box::new(|r| {
            if r % 2 == 0 {
                i64::MAX - (r % 50_000) as i64
            } else {
                i64::MIN + (r % 50_000) as i64
            }
        }),
    ];
    for g in &gens {
        let mut m = BTreeMap::new();
        let mut t = Alex::new();
        for i in 0..100_000u64 {
            let k = g(next());
            assert_eq!(
                t.insert(k, i).is_ok(),
                m.insert(k, i).is_none() || {
                    m.insert(k, t.get(k).unwrap());
                    false
                }
            );
        }
        t.check_invariants().unwrap();
        for (k, v) in &m {
            assert_eq!(t.get(*k), Some(*v));
        }
        for _ in 0..20_000 {
            let k = g(next());
            assert_eq!(t.get(k), m.get(&k).copied());
        }
        assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, *v))));
        let s = t.stats();
        assert!(s.max_depth <= 8, "{s:?}");
    }
}
