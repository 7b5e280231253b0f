//! The workload: connections, prepared statements, one transfer, and a connection's worker
//! loop.

use super::*;

/// What one worker measured.
pub(crate) struct WorkerResult {
    pub(crate) hist: Vec<Histogram<u64>>,
    pub(crate) ok: [u64; 5],
    pub(crate) retries: u64,
    pub(crate) errors: BTreeMap<String, u64>,
    pub(crate) transfers_committed: u64,
    pub(crate) amount_committed: i64,
    pub(crate) events_inserted: u64,
    /// Rows deleted by --retain (history rows with their amounts, events).
    pub(crate) history_deleted: u64,
    pub(crate) amount_deleted: i64,
    pub(crate) events_deleted: u64,
    pub(crate) wrong_results: Vec<String>,
}

pub(crate) struct Prepared {
    pub(crate) read: Statement,
    pub(crate) debit: Statement,
    pub(crate) credit: Statement,
    pub(crate) history: Statement,
    pub(crate) event: Statement,
    pub(crate) scan: Statement,
    pub(crate) count: Statement,
    pub(crate) history_del: Statement,
    pub(crate) event_del: Statement,
}

pub(crate) async fn connect(addr: &str) -> anyhow::Result<Client> {
    let (host, port) = addr.rsplit_once(':').context("--addr is host:port")?;
    let (client, conn) =
        tokio_postgres::connect(&format!("host={host} port={port} user=augur dbname=augur"), NoTls)
            .await
            .with_context(|| format!("connecting to {addr}"))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

pub(crate) fn code_of(e: &tokio_postgres::Error) -> String {
    match e.code() {
        Some(c) => c.code().to_string(),
        None if e.is_closed() => "connection-closed".into(),
        None => format!("client: {e}"),
    }
}

/// One transfer in an explicit transaction block (deleting the history row `old` too, for
/// --retain); Ok(rows `old` deleted) once committed.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn transfer(
    c: &Client,
    p: &Prepared,
    a: i64,
    b: i64,
    amount: i64,
    hid: i64,
    old: Option<i64>,
    retries: &mut u64,
) -> Result<u64, tokio_postgres::Error> {
    loop {
        let r: Result<u64, tokio_postgres::Error> = async {
            c.batch_execute("BEGIN").await?;
            let n1 = c.execute(&p.debit, &[&amount, &a]).await?;
            let n2 = c.execute(&p.credit, &[&amount, &b]).await?;
            c.execute(&p.history, &[&hid, &a, &b, &amount]).await?;
            debug_assert!(n1 == 1 && n2 == 1);
            let deleted = match old {
                Some(o) => c.execute(&p.history_del, &[&o]).await?,
                None => 0,
            };
            c.batch_execute("COMMIT").await?;
            Ok(deleted)
        }
        .await;
        match r {
            Ok(d) => return Ok(d),
            Err(e) => {
                let _ = c.batch_execute("ROLLBACK").await;
                // Serialization failures and deadlocks (two transfers locking the same two
                // accounts in opposite orders) are retried, as an application would.
                use tokio_postgres::error::SqlState as S;
                if e.code() == Some(&S::T_R_SERIALIZATION_FAILURE)
                    || e.code() == Some(&S::T_R_DEADLOCK_DETECTED)
                {
                    *retries += 1;
                    continue;
                }
                return Err(e);
            }
        }
    }
}

pub(crate) async fn worker(
    id: usize,
    addr: String,
    args: Arc<Args>,
    mix: [u32; 5],
    stop: Arc<AtomicBool>,
    ops_done: Arc<AtomicU64>,
    interval: Arc<Interval>,
) -> anyhow::Result<WorkerResult> {
    let c = connect(&addr).await?;
    let p = Prepared {
        read: c.prepare("SELECT balance FROM accounts WHERE id = $1").await?,
        debit: c
            .prepare("UPDATE accounts SET balance = balance - $1 WHERE id = $2")
            .await?,
        credit: c
            .prepare("UPDATE accounts SET balance = balance + $1 WHERE id = $2")
            .await?,
        history: c
            .prepare("INSERT INTO history (id, src, dst, amount) VALUES ($1, $2, $3, $4)")
            .await?,
        event: c
            .prepare("INSERT INTO events (id, account, kind) VALUES ($1, $2, $3)")
            .await?,
        scan: c
            .prepare("SELECT id, balance FROM accounts WHERE id >= $1 AND id < $2")
            .await?,
        count: c.prepare("SELECT count(*) FROM accounts").await?,
        history_del: c.prepare("DELETE FROM history WHERE id = $1").await?,
        event_del: c.prepare("DELETE FROM events WHERE id = $1").await?,
    };
    // --retain: this worker's history rows (id, amount) and events, oldest first.
    let keep = match args.retain {
        0 => usize::MAX,
        r => (r as usize / args.connections.max(1)).max(1),
    };
    let mut kept_history: std::collections::VecDeque<(i64, i64)> = Default::default();
    let mut kept_events: std::collections::VecDeque<i64> = Default::default();
    let mut rng = StdRng::seed_from_u64(args.seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut res = WorkerResult {
        hist: (0..5).map(|_| new_hist()).collect(),
        ok: [0; 5],
        retries: 0,
        errors: BTreeMap::new(),
        transfers_committed: 0,
        amount_committed: 0,
        events_inserted: 0,
        history_deleted: 0,
        amount_deleted: 0,
        events_deleted: 0,
        wrong_results: vec![],
    };
    // Unique ids per worker: worker id in the high bits.
    let base = (id as i64 + 1) << 40;
    let mut seq = 0i64;
    let total: u32 = mix.iter().sum();
    let n = args.accounts;
    while !stop.load(Ordering::Relaxed) {
        let pick = rng.random_range(0..total);
        let mut op = 0;
        let mut acc = 0;
        for (i, w) in mix.iter().enumerate() {
            acc += w;
            if pick < acc {
                op = i;
                break;
            }
        }
        let t0 = Instant::now();
        let r: Result<(), tokio_postgres::Error> = match op {
            0 => {
                let k = rng.random_range(0..n);
                match c.query_opt(&p.read, &[&k]).await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => {
                        res.wrong_results.push(format!("read: account {k} missing"));
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            1 => {
                let a = rng.random_range(0..n);
                let mut b = rng.random_range(0..n);
                if b == a {
                    b = (a + 1) % n;
                }
                let amount = rng.random_range(1..=100i64);
                seq += 1;
                let old = (kept_history.len() >= keep).then(|| kept_history[0]);
                let r = transfer(
                    &c,
                    &p,
                    a,
                    b,
                    amount,
                    base + seq,
                    old.map(|o| o.0),
                    &mut res.retries,
                )
                .await;
                if let Ok(deleted) = r {
                    res.transfers_committed += 1;
                    res.amount_committed += amount;
                    if let Some((oid, oamount)) = old {
                        kept_history.pop_front();
                        if deleted == 1 {
                            res.history_deleted += 1;
                            res.amount_deleted += oamount;
                        } else {
                            res.wrong_results
                                .push(format!("delete of history row {oid} deleted {deleted} rows"));
                        }
                    }
                    if args.retain > 0 {
                        kept_history.push_back((base + seq, amount));
                    }
                }
                r.map(|_| ())
            }
            2 => {
                seq += 1;
                let k = rng.random_range(0..n);
                let id = base + seq;
                let r = match (kept_events.len() >= keep).then(|| kept_events[0]) {
                    None => c.execute(&p.event, &[&id, &k, &"login"]).await.map(|_| None),
                    Some(old) => {
                        // With --retain: the insert and the delete of the worker's oldest event
                        // in one transaction (no other session writes these keys).
                        let r: Result<u64, tokio_postgres::Error> = async {
                            c.batch_execute("BEGIN").await?;
                            c.execute(&p.event, &[&id, &k, &"login"]).await?;
                            let d = c.execute(&p.event_del, &[&old]).await?;
                            c.batch_execute("COMMIT").await?;
                            Ok(d)
                        }
                        .await;
                        if r.is_err() {
                            let _ = c.batch_execute("ROLLBACK").await;
                        }
                        r.map(|d| Some((old, d)))
                    }
                };
                if let Ok(deleted) = &r {
                    res.events_inserted += 1;
                    if let Some((old, d)) = deleted {
                        kept_events.pop_front();
                        if *d == 1 {
                            res.events_deleted += 1;
                        } else {
                            res.wrong_results
                                .push(format!("delete of event {old} deleted {d} rows"));
                        }
                    }
                    if args.retain > 0 {
                        kept_events.push_back(id);
                    }
                }
                r.map(|_| ())
            }
            3 => {
                let lo = rng.random_range(0..(n - 100).max(1));
                match c.query(&p.scan, &[&lo, &(lo + 100)]).await {
                    Ok(rows) => {
                        let want = (n - lo).min(100) as usize;
                        if rows.len() != want {
                            res.wrong_results
                                .push(format!("scan from {lo}: {} rows, want {want}", rows.len()));
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
            _ => match c.query_one(&p.count, &[]).await {
                Ok(row) => {
                    let got: i64 = row.get(0);
                    if got != n {
                        res.wrong_results.push(format!("count(*) = {got}, want {n}"));
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            },
        };
        let us = t0.elapsed().as_micros().max(1) as u64;
        match r {
            Ok(()) => {
                res.hist[op].saturating_record(us);
                interval.record(op, us);
                res.ok[op] += 1;
                ops_done.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let code = code_of(&e);
                *res.errors.entry(format!("{}: {code}", OPS[op])).or_default() += 1;
                if e.is_closed() {
                    break;
                }
            }
        }
    }
    Ok(res)
}
