//! The SQL layer, embedded: a session, a transaction, a prepared point select, EXPLAIN, and a
//! quick timing of the prepared point-select path next to SQLite's (same machine, same rows).
//!
//! `cargo run --release --example sql [rows] [lookups]`

use std::time::Instant;

use augur::{Database, Options, Session, Value};

fn main() -> augur::Result<()> {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let rows = args.first().copied().unwrap_or(100_000);
    let lookups = args.get(1).copied().unwrap_or(200_000);
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path(), Options::default())?;
    let mut s = Session::new(db.clone());

    s.execute(
        "CREATE TABLE accounts (aid int PRIMARY KEY, bid int NOT NULL, abalance int NOT NULL DEFAULT 0, filler text)",
        &[],
    )?;
    let t = Instant::now();
    let ins = s.prepare("INSERT INTO accounts (aid, bid, filler) VALUES ($1, $2, $3)")?;
    s.execute("BEGIN", &[])?;
    for i in 0..rows as i64 {
        s.execute_prepared(
            &ins,
            &[
                Value::Int(i),
                Value::Int(i / 1000),
                Value::Text(format!("filler-{i}")),
            ],
        )?;
    }
    s.execute("COMMIT", &[])?;
    println!("loaded {rows} rows in {:.2?}", t.elapsed());

    for r in s.execute(
        "BEGIN; UPDATE accounts SET abalance = abalance + 5 WHERE aid = 42; COMMIT",
        &[],
    )? {
        println!("{}", r.tag());
    }
    for sql in [
        "EXPLAIN SELECT abalance FROM accounts WHERE aid = $1",
        "EXPLAIN SELECT aid FROM accounts WHERE aid BETWEEN 10 AND 20 ORDER BY aid DESC LIMIT 3",
    ] {
        println!("{sql}");
        for row in db.query(sql, &[])? {
            println!("  {}", row[0]);
        }
    }

    // Prepared point select: parsed and planned once, then one ALEX lookup per execution.
    let sel = s.prepare("SELECT abalance FROM accounts WHERE aid = $1")?;
    let mut x = 0x9E3779B97F4A7C15u64;
    let mut sum = 0i64;
    for aid in 0..rows as i64 {
        // Warm-up: every row once (both systems get the same treatment).
        s.execute_prepared(&sel, &[Value::Int(aid)])?;
    }
    let t = Instant::now();
    for _ in 0..lookups {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = s.execute_prepared(&sel, &[Value::Int((x % rows) as i64)])?;
        if let Some(Value::Int(v)) = r.rows().first().and_then(|r| r.first()) {
            sum += v;
        }
    }
    let augur_ns = t.elapsed().as_nanos() as f64 / lookups as f64;
    if std::env::var("PROBE").is_ok() {
        let tbl = db.table("accounts")?;
        let t2 = Instant::now();
        let mut y = 0x9E3779B97F4A7C15u64;
        for _ in 0..lookups {
            y ^= y << 13;
            y ^= y >> 7;
            y ^= y << 17;
            let tx = db.begin();
            let r = tx.get_in(&tbl, &augur::Key::Int((y % rows) as i64))?;
            sum += r.map_or(0, |r| r.len() as i64);
        }
        println!(
            "engine begin+get_in: {:.0} ns/op",
            t2.elapsed().as_nanos() as f64 / lookups as f64
        );
        let tx = db.begin();
        let t2 = Instant::now();
        for i in 0..lookups {
            let r = tx.get_in(&tbl, &augur::Key::Int((i % rows) as i64))?;
            sum += r.map_or(0, |r| r.len() as i64);
        }
        println!(
            "engine get_in only: {:.0} ns/op",
            t2.elapsed().as_nanos() as f64 / lookups as f64
        );
    }
    println!("augur  prepared point select: {augur_ns:.0} ns/op (checksum {sum})");
    let augur_sum = sum;

    // SQLite, file-backed, same rows, prepared statement.
    let path = dir.path().join("sqlite.db");
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; CREATE TABLE accounts (aid INTEGER PRIMARY KEY, bid INTEGER, abalance INTEGER, filler TEXT);",
    )
    .expect("sqlite ddl");
    {
        let tx = conn.unchecked_transaction().expect("tx");
        let mut st = tx
            .prepare("INSERT INTO accounts VALUES (?1, ?2, 0, ?3)")
            .expect("prepare");
        for i in 0..rows as i64 {
            st.execute(rusqlite::params![i, i / 1000, format!("filler-{i}")])
                .expect("insert");
        }
        drop(st);
        // The same update as above, so that both tables hold the same rows.
        tx.execute("UPDATE accounts SET abalance = abalance + 5 WHERE aid = 42", [])
            .expect("update");
        tx.commit().expect("commit");
    }
    let mut st = conn
        .prepare("SELECT abalance FROM accounts WHERE aid = ?1")
        .expect("prepare");
    for aid in 0..rows as i64 {
        let _: i64 = st.query_row([aid], |r| r.get(0)).expect("row");
    }
    let t = Instant::now();
    let mut sum = 0i64;
    let mut x = 0x9E3779B97F4A7C15u64; // the same keys as Augur's timed loop
    for _ in 0..lookups {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v: i64 = st.query_row([(x % rows) as i64], |r| r.get(0)).expect("row");
        sum += v;
    }
    let sqlite_ns = t.elapsed().as_nanos() as f64 / lookups as f64;
    println!("sqlite prepared point select: {sqlite_ns:.0} ns/op (checksum {sum})");
    println!("ratio sqlite/augur: {:.2}x", sqlite_ns / augur_ns);
    // Same rows, same keys: the sums of the values read must agree.
    if std::env::var("PROBE").is_err() && augur_sum != sum {
        return Err(augur::Error::internal(format!(
            "checksums differ: augur {augur_sum}, sqlite {sum}"
        )));
    }
    Ok(())
}
