//! 10M random keys: every key found, every absent probe absent, ordered iteration equals the
//! sorted input. About 8 s in release on the 2-core dev VM, so it runs with the suite:
//! `cargo test --release --test alex_large`.

use augur::index::alex::Alex;

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn ten_million_random_keys() {
    const N: u64 = 10_000_000;
    // mix is a bijection: keys mix(0..N) are distinct, mix(N..2N) are all absent.
    let keys: Vec<u64> = (0..N).map(mix).collect();
    // Half bulk loaded, half inserted in random order.
    let mut first: Vec<(u64, u64)> = keys[..(N / 2) as usize].iter().map(|&k| (k, !k)).collect();
    first.sort_unstable();
    let mut t: Alex<u64> = Alex::bulk_load(&first).unwrap();
    drop(first);
    for &k in &keys[(N / 2) as usize..] {
        t.insert(k, !k).unwrap();
    }
    assert_eq!(t.len(), N as usize);
    for &k in &keys {
        assert_eq!(t.get(k), Some(!k), "key {k} lost");
    }
    for i in N..2 * N {
        assert_eq!(t.get(mix(i)), None);
    }
    let mut sorted = keys;
    sorted.sort_unstable();
    assert!(t.iter().map(|e| e.0).eq(sorted.iter().copied()));
    assert!(t.iter().rev().map(|e| e.0).eq(sorted.iter().rev().copied()));
    t.check_invariants().unwrap();
    let s = t.stats();
    println!("{s:?}");
    assert!(s.max_depth <= 4, "{s:?}");
}
