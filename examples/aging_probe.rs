//! Does an operation of load_test's bank workload get more expensive as the database ages?
//!
//! One embedded session (the SQL layer the server runs, without the wire) loads load_test's
//! bank (100,000 accounts, empty `history` and `events`), then ages it in steps the way the
//! mixed workload does: random transfers (BEGIN, two UPDATEs, an INSERT into history, COMMIT)
//! and event inserts, 4 events per 3 transfers. After every step it measures each read-side
//! operation by the **CPU time of this thread** (`/proc/thread-self/schedstat`), which other
//! processes on a busy machine do not inflate the way they inflate wall time: `count(*)` of
//! accounts, point reads, 100-row range scans, and the transfers and inserts of the step.
//!
//! `cargo run --release --example aging_probe [steps] [transfers_per_step] [retain]` (default 12
//! steps of 50,000 transfers: 600,000 transfers and 800,000 events, about what 30 minutes of
//! `load_test --connections 64` commits on a 2-core machine). With `retain` > 0, each transfer
//! also deletes the history row `retain` transfers older and each event insert the event
//! `retain` inserts older (in the same transaction), so both tables stay at `retain` rows.
//! Commits are not synced (the probe measures CPU, not fsync).

use std::time::Instant;

use augur::{Database, Options, Session, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// CPU time this thread has run, nanoseconds.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Runs `f` `n` times; returns (CPU µs per call, wall µs per call).
fn measure(n: u64, mut f: impl FnMut(u64) -> augur::Result<()>) -> augur::Result<(f64, f64)> {
    let (c0, t0) = (thread_cpu_ns(), Instant::now());
    for i in 0..n {
        f(i)?;
    }
    Ok((
        (thread_cpu_ns() - c0) as f64 / 1e3 / n as f64,
        t0.elapsed().as_secs_f64() * 1e6 / n as f64,
    ))
}

fn main() -> augur::Result<()> {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let steps = args.first().copied().unwrap_or(12);
    let per_step = args.get(1).copied().unwrap_or(50_000);
    let retain = args.get(2).copied().unwrap_or(0) as i64;
    let n: i64 = 100_000;
    let dir = tempfile::tempdir()?;
    let db = Database::open(
        dir.path(),
        Options {
            sync_commits: false,
            ..Options::default()
        },
    )?;
    let mut s = Session::new(db.clone());
    s.execute(
        "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL);
         CREATE TABLE history (id BIGINT PRIMARY KEY, src BIGINT NOT NULL, dst BIGINT NOT NULL,
                               amount BIGINT NOT NULL);
         CREATE TABLE events (id BIGINT PRIMARY KEY, account BIGINT NOT NULL, kind TEXT NOT NULL);",
        &[],
    )?;
    let mut k = 0;
    while k < n {
        let hi = (k + 1000).min(n);
        let values: Vec<String> = (k..hi).map(|i| format!("({i},1000)")).collect();
        s.execute(&format!("INSERT INTO accounts VALUES {}", values.join(",")), &[])?;
        k = hi;
    }
    let read = s.prepare("SELECT balance FROM accounts WHERE id = $1")?;
    let scan = s.prepare("SELECT id, balance FROM accounts WHERE id >= $1 AND id < $2")?;
    let count = s.prepare("SELECT count(*) FROM accounts")?;
    let debit = s.prepare("UPDATE accounts SET balance = balance - $1 WHERE id = $2")?;
    let credit = s.prepare("UPDATE accounts SET balance = balance + $1 WHERE id = $2")?;
    let hist = s.prepare("INSERT INTO history (id, src, dst, amount) VALUES ($1, $2, $3, $4)")?;
    let event = s.prepare("INSERT INTO events (id, account, kind) VALUES ($1, $2, $3)")?;
    let hist_del = s.prepare("DELETE FROM history WHERE id = $1")?;
    let event_del = s.prepare("DELETE FROM events WHERE id = $1")?;
    let mut rng = StdRng::seed_from_u64(42);
    let (mut hid, mut eid) = (0i64, 0i64);

    println!(
        "| transfers | history rows | count(*) CPU ms | count(*) wall ms | read CPU µs | scan CPU µs | transfer CPU µs | event CPU µs | RSS MiB | row cache MiB | memtables MiB | ALEX MiB | GC pending |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut transfer_us = f64::NAN;
    let mut event_us = f64::NAN;
    for step in 0..=steps {
        if step > 0 {
            let mut t = 0u64;
            let (c0, mut ce) = (thread_cpu_ns(), 0u64);
            while t < per_step {
                let a = rng.random_range(0..n);
                let mut b = rng.random_range(0..n);
                if b == a {
                    b = (a + 1) % n;
                }
                let amount = rng.random_range(1..=100i64);
                hid += 1;
                s.execute("BEGIN", &[])?;
                s.execute_prepared(&debit, &[Value::Int(amount), Value::Int(a)])?;
                s.execute_prepared(&credit, &[Value::Int(amount), Value::Int(b)])?;
                s.execute_prepared(
                    &hist,
                    &[Value::Int(hid), Value::Int(a), Value::Int(b), Value::Int(amount)],
                )?;
                if retain > 0 && hid > retain {
                    let r = s.execute_prepared(&hist_del, &[Value::Int(hid - retain)])?;
                    assert_eq!(r.count(), 1);
                }
                s.execute("COMMIT", &[])?;
                t += 1;
                if !t.is_multiple_of(3) {
                    continue;
                }
                let e0 = thread_cpu_ns();
                for _ in 0..4 {
                    eid += 1;
                    let acc = rng.random_range(0..n);
                    if retain > 0 {
                        s.execute("BEGIN", &[])?;
                    }
                    s.execute_prepared(
                        &event,
                        &[Value::Int(eid), Value::Int(acc), Value::Text("login".into())],
                    )?;
                    if retain > 0 {
                        if eid > retain {
                            let r = s.execute_prepared(&event_del, &[Value::Int(eid - retain)])?;
                            assert_eq!(r.count(), 1);
                        }
                        s.execute("COMMIT", &[])?;
                    }
                }
                ce += thread_cpu_ns() - e0;
            }
            let total = thread_cpu_ns() - c0;
            transfer_us = (total - ce) as f64 / 1e3 / per_step as f64;
            event_us = ce as f64 / 1e3 / (per_step / 3 * 4) as f64;
            // Let garbage collection (every 200 ms) catch up before measuring.
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        let (count_cpu, count_wall) = measure(20, |_| {
            let r = s.execute_prepared(&count, &[])?;
            assert_eq!(r.rows()[0][0], Value::Int(n));
            Ok(())
        })?;
        let mut r2 = StdRng::seed_from_u64(step);
        let (read_cpu, _) = measure(20_000, |_| {
            let k = r2.random_range(0..n);
            let r = s.execute_prepared(&read, &[Value::Int(k)])?;
            assert_eq!(r.rows().len(), 1);
            Ok(())
        })?;
        let (scan_cpu, _) = measure(2_000, |_| {
            let lo = r2.random_range(0..n - 100);
            let r = s.execute_prepared(&scan, &[Value::Int(lo), Value::Int(lo + 100)])?;
            assert_eq!(r.rows().len(), 100);
            Ok(())
        })?;
        let rss = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|st| {
                st.lines()
                    .find(|l| l.starts_with("VmRSS:"))?
                    .split_whitespace()
                    .nth(1)?
                    .parse::<f64>()
                    .ok()
            })
            .unwrap_or(0.0)
            / 1024.0;
        let st = db.stats();
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
            step * per_step,
            if retain > 0 { hid.min(retain) } else { hid },
            count_cpu / 1e3,
            count_wall / 1e3,
            read_cpu,
            scan_cpu,
            transfer_us,
            event_us,
            rss,
            st.row_cache_bytes as f64 / 1048576.0,
            db.rocksdb_property("rocksdb.cur-size-all-mem-tables").unwrap_or(0) as f64 / 1048576.0,
            db.index_stats()
                .iter()
                .filter_map(|i| i.alex.as_ref().map(|a| a.bytes))
                .sum::<usize>() as f64
                / 1048576.0,
            st.gc_pending,
        );
    }
    db.close()
}
