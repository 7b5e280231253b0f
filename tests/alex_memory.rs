//! Memory of ALEX under insert-only append patterns (issue 3 soak: 64 interleaved ascending
//! sequences far apart used ~900 bytes/key). Bytes are `Alex::stats().bytes` (counted from the
//! nodes' allocations, allocator-independent).

use augur::index::alex::Alex;

/// `seqs` interleaved ascending sequences: key = ((c + 1) << 40) + n, round-robin over c.
fn interleaved(seqs: i64, n: usize) -> impl Iterator<Item = i64> {
    (0..n as i64).map(move |i| (((i % seqs) + 1) << 40) + i / seqs)
}

fn report(name: &str, t: &Alex<i64>) -> (f64, usize) {
    let s = t.stats();
    let bpk = s.bytes as f64 / s.num_keys.max(1) as f64;
    println!(
        "{name}: keys {} data {} model {} bytes/key {:.1} depth max {} avg_key {:.2} root_fanout {} \
         max_fanout {} density {:.2} {:?}",
        s.num_keys,
        s.data_nodes,
        s.model_nodes,
        bpk,
        s.max_depth,
        s.avg_key_depth,
        s.root_fanout,
        s.max_fanout,
        s.density,
        s.counters
    );
    (bpk, s.max_depth)
}

fn check_all(t: &Alex<i64>, keys: &[i64]) {
    assert_eq!(t.len(), keys.len());
    for &k in keys {
        assert_eq!(t.get(k), Some(k as u64 ^ 0x5555), "key {k} lost");
    }
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    assert!(
        t.iter().map(|e| e.0).eq(sorted.iter().copied()),
        "iteration not sorted/complete"
    );
    t.check_invariants().unwrap();
}

fn run(name: &str, keys: &[i64], preload: &[i64]) -> (f64, usize) {
    let mut pre: Vec<(i64, u64)> = preload.iter().map(|&k| (k, k as u64 ^ 0x5555)).collect();
    pre.sort_unstable();
    let mut t: Alex<i64> = if pre.is_empty() {
        Alex::new()
    } else {
        Alex::bulk_load(&pre).unwrap()
    };
    for (i, &k) in keys.iter().enumerate() {
        t.insert(k, k as u64 ^ 0x5555).unwrap();
        // Memory stays bounded on the way too (before the fix: 894 bytes/key at 20K keys).
        if (i + 1).is_multiple_of(2000) && i + 1 >= 20_000 {
            let s = t.stats();
            let bpk = s.bytes as f64 / s.num_keys as f64;
            assert!(
                bpk <= MAX_BYTES_PER_KEY_ON_THE_WAY,
                "{name}: {bpk:.1} bytes/key at {} keys",
                s.num_keys
            );
        }
    }
    let r = report(name, &t);
    let mut all: Vec<i64> = keys.to_vec();
    all.extend_from_slice(preload);
    check_all(&t, &all);
    r
}

/// Bound on counted bytes per key for insert-only append patterns (bulk load of random keys:
/// ~23; before the fix, 2 interleaved sequences reached 868 bytes/key at 2K keys and 57 at 500K).
const MAX_BYTES_PER_KEY: f64 = 30.0;
const N: usize = 500_000;
/// Bound checked every 2000 inserts from 20K keys on (small indexes pay fixed overheads: the node
/// arena, 16-slot minimum nodes; 1000 sequences of 2 keys each take ~200 bytes/key).
const MAX_BYTES_PER_KEY_ON_THE_WAY: f64 = 60.0;

fn assert_sane(name: &str, keys: &[i64], preload: &[i64]) {
    let (bpk, depth) = run(name, keys, preload);
    assert!(bpk <= MAX_BYTES_PER_KEY, "{name}: {bpk:.1} bytes/key");
    assert!(depth <= 3, "{name}: depth {depth}");
}

#[test]
fn append_only_stays_compact() {
    assert_sane("append", &(0..N as i64).collect::<Vec<_>>(), &[]);
    assert_sane(
        "append_stride7",
        &(0..N as i64).map(|i| 1_000 + i * 7).collect::<Vec<_>>(),
        &[],
    );
}

#[test]
fn interleaved_sequences_stay_compact() {
    for seqs in [2, 8, 64, 1000] {
        let keys: Vec<i64> = interleaved(seqs, N).collect();
        assert_sane(&format!("interleaved{seqs}"), &keys, &[]);
    }
}

#[test]
fn interleaved_sequences_after_bulk_load_stay_compact() {
    let keys: Vec<i64> = interleaved(64, N).collect();
    let pre: Vec<i64> = (0..8).map(|i| -1_000_000 - i).collect();
    assert_sane("interleaved64_after_small_bulk", &keys, &pre);
    // Restart mid-soak: the first part bulk loaded, the rest inserted.
    for (seqs, cut) in [(64, 10_000), (2, 10_000), (8, 50_000)] {
        let keys: Vec<i64> = interleaved(seqs, N).collect();
        assert_sane(
            &format!("interleaved{seqs}_bulk{cut}"),
            &keys[cut..],
            &keys[..cut],
        );
    }
}

#[test]
fn uneven_interleaved_sequences_stay_compact() {
    let n = N;
    // Connections at uneven rates: a random connection appends next.
    let mut next = vec![0i64; 64];
    let mut z = 12345u64;
    let keys: Vec<i64> = (0..n)
        .map(|_| {
            z = z
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let c = (z >> 33) as usize % 64;
            next[c] += 1;
            ((c as i64 + 1) << 40) + next[c] - 1
        })
        .collect();
    assert_sane("random64", &keys, &[]);
    assert_sane("random64_bulk", &keys[20_000..], &keys[..20_000]);
}

#[test]
fn staggered_interleaved_sequences_stay_compact() {
    // Connections open one after another: connection c starts after c * 2000 inserts, so new
    // clusters keep appearing beyond and below the existing ones (before the fix: 241
    // bytes/key at 20K keys).
    let mut next = vec![0i64; 64];
    let mut keys = Vec::with_capacity(N);
    let mut i = 0usize;
    while keys.len() < N {
        let open = (i / 2000 + 1).min(64);
        let c = i % open;
        // Odd connections' clusters sit below the even ones': clusters open on both sides.
        let cluster = if c.is_multiple_of(2) {
            64 + c as i64
        } else {
            64 - c as i64
        };
        keys.push((cluster << 40) + next[c]);
        next[c] += 1;
        i += 1;
    }
    // Memory only: the depth of this shape is an open issue (17 at 500K: clusters opening at the
    // edge of inner model nodes' domains split downward, one level each; see docs/ALEX.md).
    let (bpk, _) = run("staggered64", &keys, &[]);
    assert!(bpk <= MAX_BYTES_PER_KEY, "staggered64: {bpk:.1} bytes/key");
}
