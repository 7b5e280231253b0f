//! engine_perf: Augur's embedded engine alone at one size — durable bulk load, reopen (clean and
//! after an unclean stop, split into map / verify / replay, with the page faults and the read
//! latency of the first second after it), warm point lookups of present and absent keys. A
//! quick, single-run check for engine work; the comparison with SQLite is `honest_comparison`.
//!
//! engine_perf --rows 10000000 --dist random
//! engine_perf --rows 10000000 --secondary   (with a secondary index: its share of each open,
//!                                            and an open that rebuilds it from the rows)
//! engine_perf --index-keys 100000000   (the primary index's image alone: write, map, verify)

use std::time::{Duration, Instant};

use augur::{ColumnDef, DataType, Database, IndexDef, Key, Options, TableDef, Value};
use augur_bench::measure::page_faults;
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
    /// Measure only the primary index's image with this many random keys (no rows, no
    /// RocksDB): bulk load, write the image, then open it mapped, with and without the
    /// checksum pass, and time lookups in the first second.
    #[arg(long)]
    index_keys: Option<u64>,
    /// Durable single-row commits measured at the end (each of update, delete and insert), one
    /// writer: latency per commit, and the WAL fsyncs they took.
    #[arg(long, default_value_t = 0)]
    sync_ops: usize,
    /// Give the table a third column, `s` (bigint: a mix of the key, about one value per key),
    /// with a secondary index on it, created after the load. Each reopen then shows the
    /// index's share (`secondary`), and a last reopen, with the index's persisted form
    /// removed, rebuilds it from the rows (a row read per key: how every open built it before
    /// the form existed).
    #[arg(long)]
    secondary: bool,
    /// When reopens checksum the index image's data nodes: `lazy` (on first use and in the
    /// background, the default) or `at-open` (all before open returns).
    #[arg(long, default_value = "lazy")]
    image_check: String,
    /// Before each reopen, drop the page cache (`sync`, then 1 into /proc/sys/vm/drop_caches;
    /// needs root, and empties the cache of the whole machine): the first second after the
    /// open then reads the image and the rows from the disk, as after a boot.
    #[arg(long)]
    drop_caches: bool,
}

/// `--drop-caches`: writes what is dirty, then drops the clean page cache of the machine.
fn drop_caches() -> anyhow::Result<()> {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "1")
        .map_err(|e| anyhow::anyhow!("--drop-caches: /proc/sys/vm/drop_caches: {e}"))?;
    println!("page cache dropped");
    Ok(())
}

/// The secondary column's value for key `k` (`--secondary`), moved by `salt` on updates.
fn s_value(k: i64, salt: u64) -> i64 {
    (augur_bench::keys::mix(k as u64 ^ salt) >> 8) as i64
}

/// A row of the table: key, text, and with `--secondary` the indexed column.
fn row_of(k: i64, text: String, secondary: bool, salt: u64) -> Vec<Value> {
    let mut r = vec![Value::Int(k), Value::Text(text)];
    if secondary {
        r.push(Value::Int(s_value(k, salt)));
    }
    r
}

/// `--sync-ops`: durable single-row update, delete and insert commits, one at a time, on keys
/// drawn from the loaded ones (updates, deletes) or absent ones (inserts); each checked.
fn sync_commits(
    db: &Database,
    keys: &[i64],
    n: usize,
    rng: &mut StdRng,
    secondary: bool,
) -> anyhow::Result<()> {
    let t = db.table("t")?;
    let mut deleted = std::collections::HashSet::new();
    for op in ["update", "delete", "insert"] {
        let s0 = db.stats();
        let mut h = Histogram::<u64>::new(3)?;
        for i in 0..n {
            let k = match op {
                "insert" => rng.random(),
                _ => keys[rng.random_range(0..keys.len())],
            };
            // Deleted keys are not updated or deleted again; a drawn key that exists is not
            // inserted (random 64-bit keys: practically never).
            if deleted.contains(&k) || (op == "insert" && keys.contains(&k)) {
                continue;
            }
            let mut tx = db.begin();
            tx.set_sync(true);
            let s = Instant::now();
            let ok = match op {
                "update" => tx.update_in(&t, &Key::Int(k), row_of(k, format!("s{i}"), secondary, 2))?,
                "delete" => {
                    deleted.insert(k);
                    tx.delete_in(&t, &Key::Int(k))?
                }
                _ => tx.insert_in(&t, row_of(k, format!("i{i}"), secondary, 0)).is_ok(),
            };
            tx.commit()?;
            h.record(s.elapsed().as_nanos() as u64)?;
            anyhow::ensure!(ok, "{op} {i} did not apply");
        }
        let s1 = db.stats();
        println!(
            "durable single-row {op}: {} commits, mean {:.0} us, p50 {:.0} us, p99 {:.0} us; {} WAL fsyncs, mean fsync {:.0} us",
            h.len(),
            h.mean() / 1e3,
            h.value_at_quantile(0.5) as f64 / 1e3,
            h.value_at_quantile(0.99) as f64 / 1e3,
            s1.wal_syncs - s0.wal_syncs,
            (s1.wal_sync_secs - s0.wal_sync_secs) * 1e6 / (s1.wal_syncs - s0.wal_syncs).max(1) as f64
        );
    }
    Ok(())
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

fn since(f0: (u64, u64)) -> String {
    let f = page_faults();
    format!("{} minor + {} major page faults", f.0 - f0.0, f.1 - f0.1)
}

/// How a reopen went: total time, the engine's phases, and the page faults it took.
fn print_open(label: &str, db: &Database, took: Duration, f0: (u64, u64)) {
    let s = db.stats();
    let secondary = if s.secondary_loaded + s.secondary_rebuilt > 0 {
        format!(
            ", secondary {:.1} ms ({} loaded from their form, {} rebuilt from the rows, {} forms refused)",
            s.open_secondary_us as f64 / 1e3,
            s.secondary_loaded,
            s.secondary_rebuilt,
            s.secondary_forms_refused
        )
    } else {
        String::new()
    };
    let ms = |us: u64| us as f64 / 1e3;
    let phases = s.open_store_us
        + s.open_setup_us
        + s.open_marker_us
        + s.open_catalog_us
        + s.open_map_us
        + s.open_verify_us
        + s.open_replay_us
        + s.open_secondary_us
        + s.open_tables_other_us
        + s.open_rest_us;
    println!(
        "reopen {label}: {:.1} ms (RocksDB {:.1} ms, engine state and row cache {:.1} ms, clean-shutdown marker cleared {:.1} ms, counters and catalog {:.1} ms, map {:.1} ms, verify {:.1} ms, replay {:.1} ms of {} versions, {} MiB of image read into memory{secondary}, tables otherwise {:.1} ms, unused images, caches and threads {:.1} ms, outside the engine's phases {:.1} ms; {} index images refused); {}",
        took.as_secs_f64() * 1e3,
        ms(s.open_store_us),
        ms(s.open_setup_us),
        ms(s.open_marker_us),
        ms(s.open_catalog_us),
        ms(s.open_map_us),
        ms(s.open_verify_us),
        ms(s.open_replay_us),
        s.open_replayed_versions,
        s.open_copied_image_bytes >> 20,
        ms(s.open_tables_other_us),
        ms(s.open_rest_us),
        (took.as_micros() as f64 - phases as f64) / 1e3,
        s.index_images_refused,
        since(f0)
    );
}

fn hist_line(h: &Histogram<u64>) -> String {
    format!(
        "mean {:.0} ns, p50 {} ns, p99 {} ns",
        h.mean(),
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.99)
    )
}

/// Reads for one second right after an open, alternating a primary-index lookup alone (a count
/// of one key: no row read) and a point read of another key (index, then row cache or RocksDB,
/// each result checked), both on uniformly drawn present keys.
fn first_second(db: &Database, keys: &[i64], rng: &mut StdRng, what: &str) -> anyhow::Result<()> {
    let t = db.table("t")?;
    let tx = db.begin();
    let f0 = page_faults();
    let (mut idx, mut read) = (Histogram::<u64>::new(3)?, Histogram::<u64>::new(3)?);
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1) {
        let k = keys[rng.random_range(0..keys.len())];
        let one = augur::KeyRange {
            lo: std::ops::Bound::Included(Key::Int(k)),
            hi: std::ops::Bound::Included(Key::Int(k)),
        };
        let s = Instant::now();
        let n = tx.count_in(&t, &one, || Ok(()))?;
        idx.record(s.elapsed().as_nanos() as u64)?;
        anyhow::ensure!(n == 1, "key {k} not counted");
        let k = keys[rng.random_range(0..keys.len())];
        let s = Instant::now();
        let got = tx.get_with(&t, &Key::Int(k), |_| ())?;
        read.record(s.elapsed().as_nanos() as u64)?;
        anyhow::ensure!(got.is_some(), "key {k} missing");
    }
    println!(
        "  {what}: index lookups {} ({} of them); point reads {} ({}); {}",
        hist_line(&idx),
        idx.len(),
        hist_line(&read),
        read.len(),
        since(f0)
    );
    Ok(())
}

/// `--index-keys`: the index image alone.
fn index_only(n: u64, dir: &std::path::Path, seed: u64) -> anyhow::Result<()> {
    use augur::index::alex::Alex;
    use augur::index::keyed::KeyIndex;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys: Vec<i64> = (0..n).map(|_| rng.random()).collect();
    keys.sort_unstable();
    keys.dedup();
    let pairs: Vec<(i64, u64)> = keys.iter().enumerate().map(|(i, &k)| (k, i as u64 + 1)).collect();
    let t0 = Instant::now();
    let idx = KeyIndex::Alex(Alex::bulk_load(&pairs)?);
    println!(
        "bulk load of {} keys: {:.2} s",
        pairs.len(),
        t0.elapsed().as_secs_f64()
    );
    drop(pairs);
    std::fs::create_dir_all(dir)?;
    let path = dir.join("index.alex");
    let t0 = Instant::now();
    let image = idx.to_image([0; 4])?.expect("an ALEX index");
    let ser = t0.elapsed();
    std::fs::write(&path, &image)?;
    std::fs::File::open(&path)?.sync_all()?;
    println!(
        "image: {} MiB ({:.1} bytes/key), serialized in {:.0} ms, written and fsynced in {:.0} ms",
        image.len() >> 20,
        image.len() as f64 / keys.len() as f64,
        ser.as_secs_f64() * 1e3,
        t0.elapsed().saturating_sub(ser).as_secs_f64() * 1e3
    );
    drop(image);
    drop(idx);
    // The alternative of reading the image into heap memory instead of mapping it: the whole
    // file copied into a fresh allocation (what loading the arrays onto the heap would cost at
    // least), once to warm the page cache and then timed.
    drop(std::fs::read(&path)?);
    let f0 = page_faults();
    let t0 = Instant::now();
    let copy = std::fs::read(&path)?;
    println!(
        "alternative, the image read into the heap: {:.1} ms, {}",
        t0.elapsed().as_secs_f64() * 1e3,
        since(f0)
    );
    drop(copy);
    for verify in [false, true] {
        let f0 = page_faults();
        let t0 = Instant::now();
        let (idx, _) = KeyIndex::open_image(&path, verify)?;
        let took = t0.elapsed();
        println!(
            "open mapped ({}): {:.1} ms, {}; {} MiB mapped",
            if verify {
                "map + checksum of every array"
            } else {
                "map + directory checks only"
            },
            took.as_secs_f64() * 1e3,
            since(f0),
            idx.bytes().mapped >> 20
        );
        let f0 = page_faults();
        let mut h = Histogram::<u64>::new(3)?;
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(1) {
            let k = keys[rng.random_range(0..keys.len())];
            let s = Instant::now();
            let got = idx.get(&Key::Int(k))?;
            h.record(s.elapsed().as_nanos() as u64)?;
            anyhow::ensure!(got.is_some(), "key {k} missing");
        }
        let mut warm = Histogram::<u64>::new(3)?;
        for _ in 0..h.len() {
            let k = keys[rng.random_range(0..keys.len())];
            let s = Instant::now();
            let got = idx.get(&Key::Int(k))?;
            warm.record(s.elapsed().as_nanos() as u64)?;
            anyhow::ensure!(got.is_some(), "key {k} missing");
        }
        println!(
            "  lookups in the first second: {} ({} lookups, {}); the next as many: {}",
            hist_line(&h),
            h.len(),
            since(f0),
            hist_line(&warm)
        );
        if verify {
            // The other design: changes since the image kept in a small mutable tier consulted
            // before the image. Its cost on every read, with a tier of 1% of the keys (a
            // BTreeMap of 1% of the keys, the one in 100 that the tier holds answering first),
            // alternated with plain lookups of the same keys.
            let tier: std::collections::BTreeMap<i64, u64> =
                keys.iter().step_by(100).map(|&k| (k, 1)).collect();
            let probe: Vec<i64> = (0..1_000_000)
                .map(|_| keys[rng.random_range(0..keys.len())])
                .collect();
            for round in 0..2 {
                let t0 = Instant::now();
                let mut found = 0usize;
                for &k in &probe {
                    found += idx.get(&Key::Int(k)).ok().flatten().is_some() as usize;
                }
                let plain = t0.elapsed().as_nanos() as f64 / probe.len() as f64;
                let t0 = Instant::now();
                for &k in &probe {
                    found += tier
                        .get(&k)
                        .copied()
                        .or_else(|| idx.get(&Key::Int(k)).ok().flatten())
                        .is_some() as usize;
                }
                let tiered = t0.elapsed().as_nanos() as f64 / probe.len() as f64;
                anyhow::ensure!(found == 2 * probe.len(), "lookups missed");
                println!(
                    "  round {round}: lookups alone {plain:.0} ns; with a {}-key tier consulted first {tiered:.0} ns",
                    tier.len()
                );
            }
        }
    }
    std::fs::remove_file(&path)?;
    Ok(())
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
    if let Some(n) = a.index_keys {
        return index_only(n, &dir, a.seed);
    }
    let mut opts = Options {
        row_cache_bytes: a.row_cache_mib << 20,
        ..Options::default()
    };
    opts.store.block_cache_bytes = a.block_cache_mib << 20;
    opts.image_check = match a.image_check.as_str() {
        "lazy" => augur::ImageCheck::Lazy,
        "at-open" => augur::ImageCheck::AtOpen,
        c => anyhow::bail!("unknown --image-check {c}"),
    };

    let mut rng = StdRng::seed_from_u64(a.seed);
    // The keys read in the first second after each reopen (their own stream, so the other
    // measurements draw the same keys as before).
    let mut open_rng = StdRng::seed_from_u64(a.seed ^ 0x0FE7);
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
    let mut columns = vec![
        ColumnDef::new("k", DataType::Int8),
        ColumnDef::new("v", DataType::Text(None)),
    ];
    if a.secondary {
        columns.push(ColumnDef::new("s", DataType::Int8));
    }
    db.create_table(TableDef::new("t", columns, &["k"])?)?;
    let t0 = Instant::now();
    let t = db.table("t")?;
    let buffered;
    match a.load.as_str() {
        "txn" => {
            let mut tx = db.begin();
            for &k in &keys {
                tx.insert_in(&t, row_of(k, value(k), a.secondary, 0))?;
            }
            buffered = t0.elapsed();
            tx.commit()?;
        }
        "bulk" => {
            // The rows are built as the bulk insert consumes them (it keeps them encoded, not
            // as rows), so 100M rows fit in memory; their building is counted in the commit.
            buffered = std::time::Duration::ZERO;
            db.bulk_insert("t", keys.iter().map(|&k| row_of(k, value(k), a.secondary, 0)))?;
        }
        l => anyhow::bail!("unknown --load {l}"),
    }
    let load = t0.elapsed();
    println!(
        "load ({}, one durable transaction): {} rows in {:.2}s = {:.0} rows/s (rows built before the commit {:.2}s, commit {:.2}s)",
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
    if a.secondary {
        // After the load: a table with a secondary index is loaded row by row, not in bulk.
        let t0 = Instant::now();
        db.create_index(
            "t",
            IndexDef {
                name: "t_s".into(),
                columns: vec![2],
                unique: false,
            },
            false,
        )?;
        println!(
            "secondary index on s: created in {:.2}s, {} MiB counted",
            t0.elapsed().as_secs_f64(),
            t.secondary_heap_bytes() >> 20
        );
    }
    db.close()?;
    drop(db);
    drop(t);

    if a.drop_caches {
        drop_caches()?;
    }
    let f0 = page_faults();
    let t0 = Instant::now();
    let db = Database::open(&dir, opts.clone())?;
    print_open("after clean close", &db, t0.elapsed(), f0);
    first_second(&db, &keys, &mut open_rng, "first second after it")?;
    println!(
        "  index image's data nodes checksummed a second after the open: {}",
        if db.table("t")?.index_checks_pending() {
            "not all"
        } else {
            "all"
        }
    );
    // Updates after the last checkpoint, then an unclean stop: recovery must replay them.
    let t = db.table("t")?;
    let n_upd = (a.rows / 100).max(1);
    let mut tx = db.begin();
    for &k in keys.iter().take(n_upd as usize) {
        tx.update_in(&t, &Key::Int(k), row_of(k, "u".into(), a.secondary, 1))?;
    }
    tx.commit()?;
    drop(t);
    // The superseded versions collected before the stop, as a server that ran on would have
    // (at 100M rows the collector had time to before the stop; at 10M it usually had not).
    let collected = db.collect_garbage()?;
    println!("before the unclean stop: {n_upd} keys updated, {collected} superseded versions collected");
    db.abandon();
    if a.drop_caches {
        drop_caches()?;
    }
    let f0 = page_faults();
    let t0 = Instant::now();
    let db = Database::open(&dir, opts.clone())?;
    print_open("after unclean stop", &db, t0.elapsed(), f0);
    let opened = Instant::now();
    first_second(&db, &keys, &mut open_rng, "first second after it")?;
    db.wait_for_prewarm();
    let st = db.stats();
    println!(
        "warm-up after open: {} files ({} MiB) mapped and populated {} ms after open returned",
        st.direct.files,
        st.direct.mapped_bytes >> 20,
        opened.elapsed().as_millis()
    );
    // The crash sweep runs after the warm-up, paced: the reads of a second while it runs (if it
    // still does), then the warm figures below once it is done.
    if !db.wait_for_sweep(Duration::ZERO) {
        first_second(&db, &keys, &mut open_rng, "a second while the crash sweep runs")?;
    }
    anyhow::ensure!(
        db.wait_for_sweep(Duration::from_secs(3600)),
        "the crash sweep did not finish"
    );
    println!(
        "crash sweep: {} versions found and collected, done {} ms after open returned",
        db.stats().swept_versions,
        opened.elapsed().as_millis()
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
    // The index alone, warm (to compare with the first second after open).
    let mut idx = Histogram::<u64>::new(3)?;
    for &k in probes.iter().take(200_000) {
        let one = augur::KeyRange {
            lo: std::ops::Bound::Included(Key::Int(k)),
            hi: std::ops::Bound::Included(Key::Int(k)),
        };
        let s = Instant::now();
        let n = tx.count_in(&t, &one, || Ok(()))?;
        idx.record(s.elapsed().as_nanos() as u64)?;
        anyhow::ensure!(n == 1, "key {k} not counted");
    }
    println!(
        "index lookups alone (warm): {} ({} of them)",
        hist_line(&idx),
        idx.len()
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
    if a.sync_ops > 0 {
        sync_commits(&db, &keys, a.sync_ops, &mut open_rng, a.secondary)?;
    }
    db.close()?;
    drop(t);
    drop(db);
    if a.secondary {
        // The same open without the secondary index's form: rebuilt from the rows.
        for e in std::fs::read_dir(dir.join("index"))?.flatten() {
            if e.path().extension().is_some_and(|x| x == "sec") {
                std::fs::remove_file(e.path())?;
            }
        }
        let f0 = page_faults();
        let t0 = Instant::now();
        let db = Database::open(
            &dir,
            Options {
                // Nothing written after the refused form while this runs.
                checkpoint_every: u64::MAX,
                ..opts.clone()
            },
        )?;
        print_open(
            "with the secondary index's form removed (rebuilt from the rows)",
            &db,
            t0.elapsed(),
            f0,
        );
        let t = db.table("t")?;
        anyhow::ensure!(
            db.stats().secondary_rebuilt == 1,
            "the secondary index was not rebuilt"
        );
        println!("secondary index: {} MiB counted", t.secondary_heap_bytes() >> 20);
        drop(t);
        db.close()?;
    }
    std::thread::sleep(Duration::from_millis(10));
    if hits != a.lookups || wrong != 0 {
        anyhow::bail!(
            "correctness failure: hits={hits}/{} false_hits={wrong}",
            a.lookups
        );
    }
    Ok(())
}
