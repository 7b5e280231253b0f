//! criterion benches at 1M keys, ALEX vs BTreeMap: lookup, insert, 100-key range scan, bulk
//! load. Keys are uniformly random u64 (seeded); lookups draw present keys at random.
//! `cargo bench --bench alex`

use std::collections::BTreeMap;
use std::hint::black_box;

use augur::index::alex::Alex;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const N: usize = 1_000_000;

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn data() -> (Vec<u64>, Vec<(u64, u64)>, Vec<u64>) {
    let keys: Vec<u64> = (0..N as u64).map(mix).collect();
    let mut sorted: Vec<(u64, u64)> = keys.iter().map(|&k| (k, !k)).collect();
    sorted.sort_unstable();
    let probes: Vec<u64> = (0..10_000u64)
        .map(|i| keys[(mix(i ^ 77) % N as u64) as usize])
        .collect();
    (keys, sorted, probes)
}

fn lookups(c: &mut Criterion) {
    let (_, sorted, probes) = data();
    let alex = Alex::bulk_load(&sorted).unwrap();
    let btree: BTreeMap<u64, u64> = sorted.iter().copied().collect();
    let mut g = c.benchmark_group("lookup_1M");
    g.throughput(Throughput::Elements(probes.len() as u64));
    g.bench_function("alex", |b| {
        b.iter(|| {
            let mut s = 0u64;
            for &k in &probes {
                s = s.wrapping_add(alex.get(black_box(k)).unwrap());
            }
            s
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| {
            let mut s = 0u64;
            for &k in &probes {
                s = s.wrapping_add(*btree.get(&black_box(k)).unwrap());
            }
            s
        })
    });
    g.finish();
}

fn inserts(c: &mut Criterion) {
    let (keys, _, _) = data();
    let (first, second) = keys.split_at(N / 2);
    let mut half: Vec<(u64, u64)> = first.iter().map(|&k| (k, k)).collect();
    half.sort_unstable();
    let batch = &second[..10_000];
    let mut g = c.benchmark_group("insert_into_500k");
    g.throughput(Throughput::Elements(batch.len() as u64));
    g.bench_function("alex", |b| {
        b.iter_batched(
            || Alex::bulk_load(&half).unwrap(),
            |mut t| {
                for &k in batch {
                    t.insert(k, k).unwrap();
                }
                t
            },
            BatchSize::LargeInput,
        )
    });
    g.bench_function("btreemap", |b| {
        b.iter_batched(
            || half.iter().copied().collect::<BTreeMap<u64, u64>>(),
            |mut t| {
                for &k in batch {
                    t.insert(k, k);
                }
                t
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn scans(c: &mut Criterion) {
    let (_, sorted, probes) = data();
    let alex = Alex::bulk_load(&sorted).unwrap();
    let btree: BTreeMap<u64, u64> = sorted.iter().copied().collect();
    let probes = &probes[..1000];
    let mut g = c.benchmark_group("range_scan_100_1M");
    g.throughput(Throughput::Elements(probes.len() as u64));
    g.bench_function("alex", |b| {
        b.iter(|| {
            let mut s = 0u64;
            for &k in probes {
                s = alex.range(k..).take(100).fold(s, |a, (_, v)| a.wrapping_add(v));
            }
            s
        })
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| {
            let mut s = 0u64;
            for &k in probes {
                s = btree.range(k..).take(100).fold(s, |a, (_, v)| a.wrapping_add(*v));
            }
            s
        })
    });
    g.finish();
}

fn bulk_load(c: &mut Criterion) {
    let (_, sorted, _) = data();
    let mut g = c.benchmark_group("bulk_load_1M");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("alex", |b| {
        b.iter(|| Alex::bulk_load(black_box(&sorted)).unwrap())
    });
    g.bench_function("btreemap", |b| {
        b.iter(|| black_box(&sorted).iter().copied().collect::<BTreeMap<u64, u64>>())
    });
    g.finish();
}

criterion_group!(benches, lookups, inserts, scans, bulk_load);
criterion_main!(benches);
