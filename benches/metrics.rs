//! Cost of what `--metrics` adds to every statement: two `Instant::now()` and
//! `Metrics::statement` (a counter increment and a histogram observation, relaxed atomics).
//! Compare with the server's time per point lookup (pgbench -S: tens of microseconds of CPU).
//! `cargo bench --bench metrics`.

use std::hint::black_box;
use std::time::Instant;

use augur::server::metrics::{Kind, Metrics};
use augur::{Database, Options, TxStatus};
use criterion::{criterion_group, criterion_main, Criterion};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), Options::default()).unwrap();
    let m = Metrics::new(db.clone());
    let mut g = c.benchmark_group("metrics");
    g.bench_function("record_statement", |b| {
        b.iter(|| {
            let t0 = Instant::now();
            black_box(&t0);
            m.statement(black_box(Kind::Select), TxStatus::Idle, t0.elapsed(), None)
        })
    });
    g.bench_function("record_commit", |b| {
        b.iter(|| {
            let t0 = Instant::now();
            m.statement(black_box(Kind::Insert), TxStatus::Idle, t0.elapsed(), None)
        })
    });
    g.bench_function("render_scrape", |b| b.iter(|| black_box(m.render().len())));
    g.finish();
    drop(m);
    db.close().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
