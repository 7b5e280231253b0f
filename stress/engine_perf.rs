//! engine_perf: Augur's embedded engine alone at one size — durable bulk load, reopen (clean and
//! after an unclean stop), warm point lookups of present and absent keys. A quick, single-run
//! check for engine work; the comparison with SQLite is `honest_comparison`.
//!
//! engine_perf --rows 10000000 --dist random

use std::time::{Duration, Instant};

use augur::{ColumnDef, DataType, Database, Key, Options, TableDef, Value};
use clap::Parser;
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Parser)]
#[command(about = "Single-run engine measurements: bulk load, reopen, point lookups")]
struct Args {
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// random | seq
    #[arg(long, default_value = "random")]
    dist: String,
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    #[arg(long, default_value_t = 1_000_000)]
    lookups: u64,
    /// Row cache budget, MiB.
    #[arg(long, default_value_t = 256)]
    row_cache_mib: usize,
    /// RocksDB block cache, MiB.
    #[arg(long, default_value_t = 256)]
    block_cache_mib: usize,
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// How to load: `bulk` (Database::bulk_insert) or `txn` (one transaction of inserts).
    #[arg(long, default_value = "bulk")]
    load: String,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// What the values are made of.
    #[arg(long, value_enum, default_value_t = Values::Repeat)]
    values: Values,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Values {
    /// One repeated letter: LZ4 shrinks the table to a fraction, so at 10M rows the block
    /// cache holds all of it.
    Repeat,
    /// Letters drawn per row, which LZ4 cannot shrink (like honest_comparison's values): the
    /// table is as large as its rows.
    Random,
}

/// A value of `len` letters drawn from 64 symbols by a mix of `k`: nothing for LZ4 to match.
fn random_text(k: i64, len: usize) -> String {
    const SYMBOLS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut x = k as u64 ^ 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            let z = augur_bench::keys::mix(x);
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            SYMBOLS[(z & 63) as usize] as char
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    // RUST_LOG=augur=debug prints the engine's phase timings (bulk insert, recovery).
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    println!(
        "engine_perf: one run, so no spread: figures for engine work, not for quoting \
         (docs/BENCHMARKING.md; the comparison with SQLite is honest_comparison)"
    );
    let tmp = tempfile::tempdir()?;
    let dir = a.dir.clone().unwrap_or_else(|| tmp.path().join("db"));
    let mut opts = Options {
        row_cache_bytes: a.row_cache_mib << 20,
        ..Options::default()
    };
    opts.store.block_cache_bytes = a.block_cache_mib << 20;

    let mut rng = StdRng::seed_from_u64(a.seed);
    let keys: Vec<i64> = match a.dist.as_str() {
        "seq" => (0..a.rows as i64).collect(),
        "random" => {
            let mut set = std::collections::HashSet::with_capacity(a.rows as usize);
            let mut v = Vec::with_capacity(a.rows as usize);
            while v.len() < a.rows as usize {
                let k: i64 = rng.random();
                if set.insert(k) {
                    v.push(k);
                }
            }
            v
        }
        d => anyhow::bail!("unknown --dist {d}"),
    };
    let repeated = "v".repeat(a.value_size);
    let value = |k: i64| -> String {
        match a.values {
            Values::Random => random_text(k, a.value_size),
            Values::Repeat => repeated.clone(),
        }
    };

    let db = Database::open(&dir, opts.clone())?;
    db.create_table(TableDef::new(
        "t",
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Text(None)),
        ],
        &["k"],
    )?)?;
    let t0 = Instant::now();
    let t = db.table("t")?;
    let buffered;
    match a.load.as_str() {
        "txn" => {
            let mut tx = db.begin();
            for &k in &keys {
                tx.insert_in(&t, vec![Value::Int(k), Value::Text(value(k))])?;
            }
            buffered = t0.elapsed();
            tx.commit()?;
        }
        "bulk" => {
            let rows: Vec<_> = keys
                .iter()
                .map(|&k| vec![Value::Int(k), Value::Text(value(k))])
                .collect();
            buffered = t0.elapsed();
            db.bulk_insert("t", rows)?;
        }
        l => anyhow::bail!("unknown --load {l}"),
    }
    let load = t0.elapsed();
    println!(
        "load ({}, one durable transaction): {} rows in {:.2}s = {:.0} rows/s (building rows {:.2}s, commit {:.2}s)",
        a.load,
        a.rows,
        load.as_secs_f64(),
        a.rows as f64 / load.as_secs_f64(),
        buffered.as_secs_f64(),
        (load - buffered).as_secs_f64()
    );
    // Reads right after the load (rows past the row cache come from the loaded file), and
    // again, on other keys, once the maintenance thread has populated that file's mapping
    // (`Stats::direct.unpopulated_bytes`; RocksDB's SST writer drops what it writes from the
    // page cache, so this also reads it back from the disk).
    let mut sample =
        |n: usize| -> Vec<i64> { (0..n).map(|_| keys[rng.random_range(0..keys.len())]).collect() };
    let (first, second) = (sample(20_000), sample(20_000));
    let mean_read_ns = |probe: &[i64]| -> anyhow::Result<f64> {
        let tx = db.begin();
        let t0 = Instant::now();
        for &k in probe {
            anyhow::ensure!(
                tx.get_with(&t, &Key::Int(k), |_| ())?.is_some(),
                "key {k} missing"
            );
        }
        Ok(t0.elapsed().as_nanos() as f64 / probe.len() as f64)
    };
    let right_after = mean_read_ns(&first)?;
    let t1 = Instant::now();
    while db.stats().direct.unpopulated_bytes > 0 && t1.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let populated = t1.elapsed();
    let after_populate = mean_read_ns(&second)?;
    println!(
        "point reads right after the load: mean {right_after:.0} ns; populate of the loaded \
         file's mapping finished {:.2}s later ({} MiB mapped); then (other keys) mean \
         {after_populate:.0} ns",
        populated.as_secs_f64(),
        db.stats().direct.mapped_bytes >> 20
    );
    db.close()?;
    drop(db);
    drop(t);

    let t0 = Instant::now();
    let db = Database::open(&dir, opts.clone())?;
    println!("reopen after clean close: {:.3}s", t0.elapsed().as_secs_f64());
    // Updates after the last checkpoint, then an unclean stop: recovery must replay them.
    let t = db.table("t")?;
    let n_upd = (a.rows / 100).max(1);
    let mut tx = db.begin();
    for &k in keys.iter().take(n_upd as usize) {
        tx.update_in(&t, &Key::Int(k), vec![Value::Int(k), Value::Text("u".into())])?;
    }
    tx.commit()?;
    drop(t);
    db.abandon();
    let t0 = Instant::now();
    let db = Database::open(&dir, opts)?;
    println!(
        "reopen after unclean stop (replaying {} versions): {:.3}s",
        n_upd,
        t0.elapsed().as_secs_f64()
    );
    let t0 = Instant::now();
    db.wait_for_prewarm();
    let st = db.stats();
    println!(
        "warm-up after open: {} files ({} MiB) mapped and populated {} ms after open returned",
        st.direct.files,
        st.direct.mapped_bytes >> 20,
        t0.elapsed().as_millis()
    );
    let t = db.table("t")?;
    println!(
        "index: {} keys, {} ({} bytes counted by the index)",
        t.index_len(),
        t.key_index_kind().name(),
        t.index_heap_bytes()
    );

    // Warm-up, then timed lookups of present keys (each result checked) and absent keys.
    let tx = db.begin();
    let mut hist = Histogram::<u64>::new(3)?;
    // Warm-up: two passes over keys drawn independently of the measured ones. (Until
    // 2026-11-25 the warm-up read the measured keys themselves, so every measured read repeated
    // a key just read and found it in the row cache: a hot working set, not uniform reads.)
    let warm = sample(a.lookups as usize);
    let probes = sample(a.lookups as usize);
    // Each read lends the row in place (`get_with`) and checks its key column.
    let key_of = |row: augur::RowRef<'_>| -> augur::Result<Option<i64>> {
        Ok(match row.get(0)? {
            Some(augur::ValueRef::Int(i)) => Some(i),
            _ => None,
        })
    };
    for _ in 0..2 {
        for &k in &warm {
            tx.get_with(&t, &Key::Int(k), key_of)?;
        }
    }
    let mut hits = 0u64;
    let t0 = Instant::now();
    for &k in &probes {
        let s = Instant::now();
        let r = tx.get_with(&t, &Key::Int(k), key_of)?;
        hist.record(s.elapsed().as_nanos() as u64)?;
        if let Some(got) = r.transpose()?.flatten() {
            if got == k {
                hits += 1;
            }
        }
    }
    let el = t0.elapsed();
    println!(
        "point hits: hits={hits}/{} mean {:.0} ns, p50 {} ns, p95 {} ns, p99 {} ns ({:.0} lookups/s)",
        a.lookups,
        el.as_nanos() as f64 / a.lookups as f64,
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.95),
        hist.value_at_quantile(0.99),
        a.lookups as f64 / el.as_secs_f64()
    );
    let key_set: std::collections::HashSet<i64> = keys.iter().copied().collect();
    let mut misses_checked = 0;
    let mut hist = Histogram::<u64>::new(3)?;
    let mut wrong = 0;
    while misses_checked < a.lookups.min(200_000) {
        let k: i64 = rng.random();
        if key_set.contains(&k) {
            continue;
        }
        let s = Instant::now();
        if tx.get_in(&t, &Key::Int(k))?.is_some() {
            wrong += 1;
        }
        hist.record(s.elapsed().as_nanos() as u64)?;
        misses_checked += 1;
    }
    println!(
        "point misses: found={wrong}/{misses_checked} mean {:.0} ns, p50 {} ns, p99 {} ns",
        hist.mean(),
        hist.value_at_quantile(0.5),
        hist.value_at_quantile(0.99)
    );
    // 100-key range scans from random present keys (results checked against the sorted keys).
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let mut hist = Histogram::<u64>::new(3)?;
    let scans = 20_000.min(a.rows as usize);
    let mut bad_scans = 0;
    for pass in 0..2 {
        for _ in 0..scans {
            let i = rng.random_range(0..sorted.len());
            let range = augur::KeyRange {
                lo: std::ops::Bound::Included(Key::Int(sorted[i])),
                hi: std::ops::Bound::Unbounded,
            };
            let s = Instant::now();
            let mut got = Vec::with_capacity(100);
            tx.scan_in(&t, &range, false, |k, _| {
                got.push(k.clone());
                Ok(got.len() < 100)
            })?;
            if pass == 1 {
                hist.record(s.elapsed().as_nanos() as u64)?;
                let want: Vec<Key> = sorted[i..(i + 100).min(sorted.len())]
                    .iter()
                    .map(|&k| Key::Int(k))
                    .collect();
                if got != want {
                    bad_scans += 1;
                }
            }
        }
    }
    println!(
        "range scans of 100 keys: {scans} (after a warm-up pass), wrong={bad_scans}, mean {:.1} us, p50 {:.1} us, p99 {:.1} us",
        hist.mean() / 1000.0,
        hist.value_at_quantile(0.5) as f64 / 1000.0,
        hist.value_at_quantile(0.99) as f64 / 1000.0
    );
    if bad_scans > 0 {
        anyhow::bail!("range scans returned wrong keys");
    }
    let s = db.stats();
    println!(
        "row cache: {} hits, {} misses, {} MiB; RSS {}; disk {} MiB (each inode once)",
        s.cache_hits,
        s.cache_misses,
        s.row_cache_bytes >> 20,
        augur_bench::measure::Rss::now().describe(),
        augur_bench::measure::disk_bytes(&dir) >> 20
    );
    println!(
        "direct read path: {} reads from mapped files, {} through RocksDB; {} files mapped ({} MiB, \
         {} blocks, models {} KiB in {} segments), {} files left to RocksDB",
        s.direct_reads,
        s.store_reads,
        s.direct.files,
        s.direct.mapped_bytes >> 20,
        s.direct.blocks,
        s.direct.model_bytes >> 10,
        s.direct.model_segments,
        s.direct.unsupported_files
    );
    drop(tx);
    db.close()?;
    std::thread::sleep(Duration::from_millis(10));
    if hits != a.lookups || wrong != 0 {
        anyhow::bail!(
            "correctness failure: hits={hits}/{} false_hits={wrong}",
            a.lookups
        );
    }
    Ok(())
}
